//! The synthetic data sets: linear regression (000 §VI), Tandon et al.'s
//! logistic mixture (001 §5) and one-hot categorical data; every sample is
//! drawn from the sub-stream of its own index.

use ndarray::Array2;
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal, Zipf};

use super::Shape;
use crate::config::{Config, check_dense_matrix, check_sparse_matrix};
use crate::error::InputError;
use crate::learn::data::streams::{MIXTURE_MEANS, TRUE_MODEL};
use crate::learn::data::{Storage, choose_storage};
use crate::learn::sparse::{CsrMatrix, Features};
use crate::rng::{Stream, substream};

/// A synthetic data set: the parameters its samples are drawn with.
#[derive(Debug, Clone)]
pub(crate) enum SyntheticSource {
    /// synthetic-linear: y = x·theta* + noise.
    Linear { seed: u64, noise_std: f64 },
    /// synthetic-logistic: the two-component mixture.
    Logistic { seed: u64 },
    /// synthetic-onehot: one-hot categorical columns.
    Onehot(OnehotModel),
}

impl SyntheticSource {
    /// The synthetic-linear data of `config`.
    pub(crate) fn linear(config: &Config) -> Result<(Self, Shape), InputError> {
        let source = Self::Linear {
            seed: config.seed,
            noise_std: config.data.noise_std,
        };
        Self::checked(config, source, 1.0)
    }

    /// The synthetic-logistic data of `config`.
    pub(crate) fn logistic(config: &Config) -> Result<(Self, Shape), InputError> {
        Self::checked(config, Self::Logistic { seed: config.seed }, 1.0)
    }

    /// The synthetic-onehot data of `config` (its parameters validated).
    pub(crate) fn onehot(config: &Config) -> Result<(Self, Shape), InputError> {
        let d = &config.data;
        let model = OnehotModel::new(config.seed, d.features, d.nonzeros_per_row)?;
        let density = d.nonzeros_per_row as f64 / d.features as f64;
        Self::checked(config, Self::Onehot(model), density)
    }

    /// `source` with the shape of `config`'s `[data]`, once its training and
    /// test matrices fit in `data.max_matrix_mib` as they will be stored.
    fn checked(config: &Config, source: Self, density: f64) -> Result<(Self, Shape), InputError> {
        let d = &config.data;
        let shape = Shape {
            features: d.features,
            train_samples: d.train_samples,
            test_samples: d.test_samples,
            density,
        };
        let limit = d.max_matrix_mib;
        let (train, test, features) = (shape.train_samples, shape.test_samples, shape.features);
        if choose_storage(d.format, d.kind, Some(density)) == Storage::Sparse {
            let stored = |rows: usize| rows.saturating_mul(d.nonzeros_per_row);
            let (field, test_field) = ("data.train_samples", "data.test_samples");
            check_sparse_matrix(field, "training", train, stored(train), features, limit)?;
            check_sparse_matrix(test_field, "test", test, stored(test), features, limit)?;
        } else {
            check_dense_matrix("data.train_samples", "training", train, features, limit)?;
            check_dense_matrix("data.test_samples", "test", test, features, limit)?;
        }
        Ok((source, shape))
    }

    /// The samples of each of `row_sets` (sample indices), `features` wide,
    /// stored as `storage` (dense samples are dense whatever it says).
    pub(crate) fn samples(
        &self,
        row_sets: &[Vec<u64>],
        features: usize,
        storage: Storage,
    ) -> Vec<(Features, Vec<f64>)> {
        match self {
            Self::Linear { seed, noise_std } => {
                let theta = true_model(*seed, features);
                row_sets
                    .iter()
                    .map(|rows| {
                        let (x, y) = linear_samples(*seed, rows, &theta, *noise_std);
                        (Features::Dense(x), y)
                    })
                    .collect()
            }
            Self::Logistic { seed } => {
                let model = LogisticModel::new(*seed, features);
                row_sets
                    .iter()
                    .map(|rows| {
                        let (x, y) = model.samples(*seed, rows);
                        (Features::Dense(x), y)
                    })
                    .collect()
            }
            Self::Onehot(model) => row_sets
                .iter()
                .map(|rows| {
                    let (x, y) = model.samples(rows);
                    let x = match storage {
                        Storage::Sparse => Features::Sparse(x),
                        Storage::Dense => Features::Dense(x.to_dense()),
                    };
                    (x, y)
                })
                .collect(),
        }
    }

    /// The model the labels were drawn with, `features` wide.
    pub(crate) fn true_model(&self, features: usize) -> Vec<f64> {
        match self {
            Self::Linear { seed, .. } => true_model(*seed, features),
            Self::Logistic { seed } => LogisticModel::new(*seed, features).beta,
            Self::Onehot(model) => model.beta.clone(),
        }
    }
}

/// theta* of synthetic-linear: N(0, 1) entries.
pub(crate) fn true_model(seed: u64, d: usize) -> Vec<f64> {
    let mut rng = substream(seed, Stream::Data, TRUE_MODEL);
    (0..d).map(|_| StandardNormal.sample(&mut rng)).collect()
}

/// Synthetic linear regression as in 000 §VI: x ~ N(0, I_d), y = x·theta* + noise_std·N(0, 1).
pub(crate) fn linear_samples(
    seed: u64,
    rows: &[u64],
    theta: &[f64],
    noise_std: f64,
) -> (Array2<f64>, Vec<f64>) {
    let d = theta.len();
    let mut x = Array2::<f64>::zeros((rows.len(), d));
    let mut y = Vec::with_capacity(rows.len());
    for (r, &i) in rows.iter().enumerate() {
        let mut rng = substream(seed, Stream::Data, i);
        let mut row = x.row_mut(r);
        for v in row.iter_mut() {
            *v = StandardNormal.sample(&mut rng);
        }
        let noise: f64 = StandardNormal.sample(&mut rng);
        let dot: f64 = row.iter().zip(theta).map(|(a, b)| a * b).sum();
        y.push(dot + noise_std * noise);
    }
    (x, y)
}

/// Tandon et al.'s synthetic logistic regression (001 §5): x ~ ½N(mu1, I) + ½N(mu2, I),
/// y = +1 with probability 1 / (exp(2·x·beta*) + 1), else -1. The paper leaves the scale
/// of the random means open; here mu1, mu2 and beta* have N(0, 1/d) entries, so |mu| ≈ 1,
/// x·beta* is of order one and the logistic loss has a curvature of order one (with
/// N(0, 1) means |x|² ≈ 2d and any step size above ~1/d diverges).
#[derive(Debug, Clone)]
pub(crate) struct LogisticModel {
    means: [Vec<f64>; 2],
    pub(crate) beta: Vec<f64>,
}

impl LogisticModel {
    pub(crate) fn new(seed: u64, d: usize) -> Self {
        let mut rng = substream(seed, Stream::Data, MIXTURE_MEANS);
        let mut draw = |scale: f64| -> Vec<f64> {
            (0..d)
                .map(|_| {
                    let z: f64 = StandardNormal.sample(&mut rng);
                    scale * z
                })
                .collect()
        };
        let scale = 1.0 / (d as f64).sqrt();
        let means = [draw(scale), draw(scale)];
        let beta = draw(scale);
        Self { means, beta }
    }

    pub(crate) fn samples(&self, seed: u64, rows: &[u64]) -> (Array2<f64>, Vec<f64>) {
        let d = self.beta.len();
        let mut x = Array2::<f64>::zeros((rows.len(), d));
        let mut y = Vec::with_capacity(rows.len());
        for (r, &i) in rows.iter().enumerate() {
            let mut rng = substream(seed, Stream::Data, i);
            let component = usize::from(rng.random::<bool>());
            let mut row = x.row_mut(r);
            for (v, m) in row.iter_mut().zip(&self.means[component]) {
                let z: f64 = StandardNormal.sample(&mut rng);
                *v = m + z;
            }
            let dot: f64 = row.iter().zip(&self.beta).map(|(a, b)| a * b).sum();
            y.push(sign_label(&mut rng, dot));
        }
        (x, y)
    }
}

/// +1 with probability 1 / (exp(2·dot) + 1), else −1 (the labels of 001 §5).
fn sign_label(rng: &mut impl rand::Rng, dot: f64) -> f64 {
    let p_positive = 1.0 / ((2.0 * dot).exp() + 1.0);
    if rng.random::<f64>() < p_positive {
        1.0
    } else {
        -1.0
    }
}

/// Zipf exponent of the levels of a synthetic-onehot column: a few levels are
/// common and most are rare.
const ONEHOT_ZIPF_EXPONENT: f64 = 1.0;

/// Synthetic-onehot: `m` categorical columns; column `c` owns the one-hot
/// features `first[c] .. first[c] + levels[c]` (the `features` split as
/// evenly as possible). A sample takes one level per column (Zipf-distributed,
/// [`ONEHOT_ZIPF_EXPONENT`]), so it has exactly `m` entries equal to 1, and
/// its label is drawn as in synthetic-logistic from the planted model
/// beta* (N(0, 1/m) entries, so x·beta* is of order one).
#[derive(Debug, Clone)]
pub(crate) struct OnehotModel {
    seed: u64,
    features: usize,
    first: Vec<usize>,
    levels: Vec<Zipf<f64>>,
    pub(crate) beta: Vec<f64>,
}

impl OnehotModel {
    pub(crate) fn new(seed: u64, features: usize, columns: usize) -> Result<Self, InputError> {
        if columns == 0 || columns > features {
            return Err(InputError::value(
                "data.nonzeros_per_row",
                columns,
                format!("must be in 1..=data.features = {features}"),
            ));
        }
        let (base, extra) = (features / columns, features % columns);
        let mut first = Vec::with_capacity(columns);
        let mut levels = Vec::with_capacity(columns);
        let mut next = 0;
        for c in 0..columns {
            let n = base + usize::from(c < extra);
            first.push(next);
            next += n;
            let zipf = Zipf::new(n as f64, ONEHOT_ZIPF_EXPONENT)
                .expect("at least one level and a positive exponent");
            levels.push(zipf);
        }
        let mut rng = substream(seed, Stream::Data, TRUE_MODEL);
        let scale = 1.0 / (columns as f64).sqrt();
        let beta = (0..features)
            .map(|_| {
                let z: f64 = StandardNormal.sample(&mut rng);
                scale * z
            })
            .collect();
        Ok(Self {
            seed,
            features,
            first,
            levels,
            beta,
        })
    }

    /// The samples of sub-stream indices `rows`, one CSR row each.
    pub(crate) fn samples(&self, rows: &[u64]) -> (CsrMatrix, Vec<f64>) {
        let mut x = CsrMatrix::new(self.features).expect("validated: features fit u32 indices");
        let mut y = Vec::with_capacity(rows.len());
        let mut entries = Vec::with_capacity(self.first.len());
        for &i in rows {
            let mut rng = substream(self.seed, Stream::Data, i);
            entries.clear();
            let mut dot = 0.0;
            for (first, zipf) in self.first.iter().zip(&self.levels) {
                // Zipf draws 1..=levels.
                let level = zipf.sample(&mut rng) as usize - 1;
                let j = first + level;
                dot += self.beta[j];
                entries.push((j, 1.0));
            }
            x.push_row(&entries)
                .expect("columns increase and stay below the features");
            y.push(sign_label(&mut rng, dot));
        }
        (x, y)
    }
}

#[cfg(test)]
mod synthetic_data;
