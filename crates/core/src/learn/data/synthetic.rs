//! The synthetic data sets: linear regression (000 §VI), Tandon et al.'s
//! logistic mixture (001 §5) and one-hot categorical data; every sample is
//! drawn from the sub-stream of its own index.

use ndarray::Array2;
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal, Zipf};

use super::streams::{MIXTURE_MEANS, TRUE_MODEL};
use crate::error::InputError;
use crate::learn::sparse::CsrMatrix;
use crate::rng::{Stream, substream};

/// theta* of synthetic-linear: N(0, 1) entries.
pub(super) fn true_model(seed: u64, d: usize) -> Vec<f64> {
    let mut rng = substream(seed, Stream::Data, TRUE_MODEL);
    (0..d).map(|_| StandardNormal.sample(&mut rng)).collect()
}

/// Synthetic linear regression as in 000 §VI: x ~ N(0, I_d), y = x·theta* + noise_std·N(0, 1).
pub(super) fn linear_samples(
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
pub(super) struct LogisticModel {
    means: [Vec<f64>; 2],
    pub(super) beta: Vec<f64>,
}

impl LogisticModel {
    pub(super) fn new(seed: u64, d: usize) -> Self {
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

    pub(super) fn samples(&self, seed: u64, rows: &[u64]) -> (Array2<f64>, Vec<f64>) {
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
pub(super) struct OnehotModel {
    seed: u64,
    features: usize,
    first: Vec<usize>,
    levels: Vec<Zipf<f64>>,
    pub(super) beta: Vec<f64>,
}

impl OnehotModel {
    pub(super) fn new(seed: u64, features: usize, columns: usize) -> Result<Self, InputError> {
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
    pub(super) fn samples(&self, rows: &[u64]) -> (CsrMatrix, Vec<f64>) {
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
mod tests {
    use super::super::testing::{WithSeed, config, onehot};
    use crate::config::parse;
    use crate::learn::data::{DataPlan, Partition, Storage};
    use crate::learn::sparse::Features;

    #[test]
    fn synthetic_data_does_not_depend_on_the_partitioning() {
        let c = config("workers = 4\n[data]\ntrain_samples = 12\nfeatures = 5\n");
        let by4 = DataPlan::new(&c, 4).unwrap();
        let by3 = DataPlan::new(&c, 3).unwrap();
        let a = by4.load(&[1]).unwrap().remove(0); // samples 3..6
        let b = by3.load(&[0]).unwrap().remove(0); // samples 0..4
        assert_eq!(a.x.to_dense().row(0), b.x.to_dense().row(3));
        assert_eq!(a.y[0], b.y[3]);
        assert_eq!(
            by4.load(&[2, 1]).unwrap()[1],
            a,
            "same partition, same data, in any request order"
        );
    }

    #[test]
    fn test_samples_differ_from_training_samples() {
        let c =
            config("workers = 2\n[data]\ntrain_samples = 10\ntest_samples = 10\nfeatures = 3\n");
        let plan = DataPlan::new(&c, 2).unwrap();
        let train = plan.load(&[0]).unwrap().remove(0);
        let test = plan.load_test().unwrap();
        for i in 0..5 {
            assert_ne!(train.x.to_dense().row(i), test.x.to_dense().row(i));
        }
    }

    #[test]
    fn synthetic_linear_labels_follow_the_true_model() {
        let c = config("workers = 2\n[data]\ntrain_samples = 50\nfeatures = 8\nnoise_std = 0.0\n");
        let plan = DataPlan::new(&c, 2).unwrap();
        let theta = plan.true_model().unwrap();
        for part in plan.load(&[0, 1]).unwrap() {
            let x = part.x.to_dense();
            for (row, y) in x.rows().into_iter().zip(&part.y) {
                let dot: f64 = row.iter().zip(&theta).map(|(a, b)| a * b).sum();
                assert!((dot - y).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn synthetic_logistic_labels_are_signs() {
        let c = config(
            "workers = 2\n[data]\nkind = \"synthetic-logistic\"\ntrain_samples = 200\nfeatures = 4\n[model]\nloss = \"logistic\"\n",
        );
        let plan = DataPlan::new(&c, 2).unwrap();
        let parts = plan.load(&[0, 1]).unwrap();
        let positives = parts
            .iter()
            .flat_map(|p| &p.y)
            .filter(|&&y| y == 1.0)
            .count();
        assert!(
            parts
                .iter()
                .flat_map(|p| &p.y)
                .all(|&y| y == 1.0 || y == -1.0)
        );
        assert!(
            positives > 20 && positives < 180,
            "both classes occur: {positives}"
        );
    }

    #[test]
    fn synthetic_data_larger_than_the_limit_is_refused_by_validation() {
        let e = parse(
            "workers = 2\n[data]\ntrain_samples = 1000000\nfeatures = 1000000\n",
            "t.toml",
            &[],
        )
        .unwrap_err();
        assert_eq!(e.field, "data.train_samples");
        assert!(
            e.to_string()
                .contains("7629395 MiB, more than data.max_matrix_mib = 4096"),
            "{e}"
        );
        let e = parse(
            &format!(
                "workers = 2\n[data]\ntest_samples = {}\nfeatures = 3\n",
                i64::MAX
            ),
            "t.toml",
            &[],
        )
        .unwrap_err();
        assert_eq!(e.field, "data.test_samples");
        let e = parse("[data]\nmax_matrix_mib = 0\n", "t.toml", &[]).unwrap_err();
        assert_eq!(e.field, "data.max_matrix_mib");
    }

    #[test]
    fn onehot_rows_have_one_level_per_column() {
        let plan = DataPlan::new(&onehot(""), 4).unwrap();
        assert_eq!(plan.storage(), Storage::Sparse);
        let parts = plan.load(&[0, 1, 2, 3]).unwrap();
        let mut levels_seen = std::collections::HashSet::new();
        for p in &parts {
            let Features::Sparse(x) = &p.x else {
                panic!("sparse")
            };
            for i in 0..x.rows() {
                let (indices, values) = x.row(i);
                assert_eq!(indices.len(), 10);
                assert!(values.iter().all(|&v| v == 1.0));
                for (c, &j) in indices.iter().enumerate() {
                    // Column c owns features 500c .. 500(c + 1).
                    assert_eq!(j as usize / 500, c, "row {i}: {indices:?}");
                    levels_seen.insert(j);
                }
            }
            assert!(p.y.iter().all(|&y| y == 1.0 || y == -1.0));
        }
        assert!(
            levels_seen.len() > 400,
            "many levels occur: {}",
            levels_seen.len()
        );
        let positives = parts
            .iter()
            .flat_map(|p| &p.y)
            .filter(|&&y| y == 1.0)
            .count();
        assert!(
            positives > 40 && positives < 360,
            "both classes: {positives}"
        );
        assert_eq!(plan.rows_materialised(), 400);
    }

    #[test]
    fn onehot_data_is_reproducible_and_independent_of_the_partitioning() {
        let by4 = DataPlan::new(&onehot(""), 4).unwrap();
        let by5 = DataPlan::new(&onehot(""), 5).unwrap();
        let whole4: Vec<Partition> = by4.load(&[0, 1, 2, 3]).unwrap();
        let whole5: Vec<Partition> = by5.load(&[4, 3, 2, 1, 0]).unwrap();
        let stack = |parts: &[Partition]| {
            let mut rows: Vec<(Vec<f64>, f64)> = Vec::new();
            for p in parts {
                let x = p.x.to_dense();
                rows.extend(
                    x.rows()
                        .into_iter()
                        .map(|r| r.to_vec())
                        .zip(p.y.iter().copied()),
                );
            }
            rows
        };
        let mut five = whole5.clone();
        five.sort_by_key(|p| p.id);
        assert_eq!(stack(&whole4), stack(&five));
        assert_eq!(
            by4.load(&[2]).unwrap(),
            DataPlan::new(&onehot(""), 4).unwrap().load(&[2]).unwrap()
        );
        let other = DataPlan::new(&onehot("").clone_with_seed(2), 4).unwrap();
        assert_ne!(
            other.load(&[0]).unwrap(),
            by4.load(&[0]).unwrap(),
            "the seed matters"
        );
        // Dense storage of the same data: the same numbers.
        let dense = DataPlan::new(&onehot("format = \"dense\"\n"), 4).unwrap();
        assert_eq!(dense.storage(), Storage::Dense);
        let d = dense.load(&[1]).unwrap().remove(0);
        assert!(matches!(d.x, Features::Dense(_)));
        assert_eq!(d.x.to_dense(), whole4[1].x.to_dense());
        assert_eq!(dense.load_test().unwrap().y, by4.load_test().unwrap().y);
    }

    #[test]
    fn onehot_parameters_are_validated_naming_the_field() {
        let bad = |text: &str| parse(text, "t.toml", &[]).unwrap_err();
        let base = "workers = 2\n[data]\nkind = \"synthetic-onehot\"\n";
        let e = bad(&format!("{base}nonzeros_per_row = 0\n"));
        assert_eq!(e.field, "data.nonzeros_per_row", "{e}");
        let e = bad(&format!("{base}features = 5\nnonzeros_per_row = 6\n"));
        assert_eq!(e.field, "data.nonzeros_per_row", "{e}");
        assert!(e.to_string().contains("exceeds data.features = 5"), "{e}");
        let e = bad(&format!("{base}train_samples = 1\n"));
        assert_eq!(e.field, "data.train_samples", "{e}");
        let e = bad(&format!("{base}features = 0\n"));
        assert_eq!(e.field, "data.features", "{e}");
        let e = bad(&format!(
            "{base}features = 5000000000\nnonzeros_per_row = 1\nmax_matrix_mib = 65536\n"
        ));
        assert_eq!(e.field, "data.features", "{e}");
        assert!(e.to_string().contains("2^32"), "{e}");
        let e = bad(&format!("{base}features = 1000000000\n"));
        assert_eq!(e.field, "data.features", "{e}");
        assert!(
            e.to_string().contains("the model of 1000000000 features"),
            "{e}"
        );
        let e = bad(&format!(
            "{base}train_samples = 100000000\nnonzeros_per_row = 10\nmax_matrix_mib = 100\n"
        ));
        assert_eq!(e.field, "data.train_samples", "{e}");
        assert!(e.to_string().contains("sparse training matrix"), "{e}");
        // Dense storage of one-hot data is checked as dense.
        let e = bad(&format!(
            "{base}format = \"dense\"\ntrain_samples = 26210\nfeatures = 241915\n"
        ));
        assert_eq!(e.field, "data.train_samples", "{e}");
        assert!(e.to_string().contains("dense training matrix"), "{e}");
        let e = bad("workers = 2\n[data]\nformat = \"sparse\"\n");
        assert_eq!(e.field, "data.format", "{e}");
        let e = bad("workers = 2\n[data]\nformat = \"thin\"\n");
        assert!(e.to_string().contains("data.format"), "{e}");
    }
}
