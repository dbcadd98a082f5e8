//! A LIBSVM or CSV file as a data source (`data.kind = "libsvm"` or
//! `"csv"`): planned in one pass that counts and checks the rows (no
//! matrix), split into training and test rows by a seeded permutation that
//! every process computes alike (or a second file, `data.test_path`), read
//! row set by row set and standardised with statistics of the training rows.

use std::ops::Range;

use rand::seq::SliceRandom;

use super::Shape;
use super::read::{Scan, beyond_features, for_each_row, read_rows, scan_file};
use crate::config::{Config, DataKind, Loss, check_dense_matrix, check_sparse_matrix};
use crate::error::InputError;
use crate::learn::data::standardize::{FeatureMoments, Standardization};
use crate::learn::data::streams::SPLIT;
use crate::learn::data::{Storage, choose_storage};
use crate::learn::sparse::Features;
use crate::rng::{Stream, substream};

/// A data file (and its test file), with the rows each split takes.
#[derive(Debug, Clone)]
pub(crate) struct FileSource {
    kind: DataKind,
    path: String,
    test_path: Option<String>,
    standardize: bool,
    loss: Loss,
    /// Features per sample: the widest row of the file(s).
    features: usize,
    storage: Storage,
    /// Data rows of the training file.
    file_rows: usize,
    /// Training row j (in partition order) is line-row `train_rows[j]` of `path`.
    train_rows: Vec<usize>,
    /// Test rows of `path` when there is no `test_path`.
    test_rows: Vec<usize>,
}

impl FileSource {
    /// Plan the file(s) of `config`: read once to count and check the rows,
    /// then the training and test matrices checked against
    /// `data.max_matrix_mib` as they will be stored.
    pub(crate) fn plan(config: &Config) -> Result<(Self, Shape), InputError> {
        let d = &config.data;
        let loss = config.model.loss;
        let path = d
            .path
            .clone()
            .ok_or_else(|| InputError::new("data.path", "is required"))?;
        let scan = scan_file(d.kind, &path, loss)?;
        let mut features = scan.features;
        let mut stored = scan.stored as f64;
        let mut all_rows = scan.rows as f64;
        let mut test_stored = scan.stored;
        let (train_rows, test_rows) = match &d.test_path {
            Some(test_path) => {
                let test_scan = scan_file(d.kind, test_path, loss)?;
                check_test_width(d.kind, test_path, &scan, &test_scan)?;
                features = features.max(test_scan.features);
                stored += test_scan.stored as f64;
                all_rows += test_scan.rows as f64;
                test_stored = test_scan.stored;
                ((0..scan.rows).collect(), (0..test_scan.rows).collect())
            }
            None => split(config.seed, d.test_fraction, scan.rows),
        };
        let shape = Shape {
            features,
            train_samples: train_rows.len(),
            test_samples: test_rows.len(),
            density: stored / (all_rows * features.max(1) as f64),
        };
        let storage = choose_storage(d.format, d.kind, Some(shape.density));
        check_matrices(config, &path, storage, &shape, [scan.stored, test_stored])?;
        let source = Self {
            kind: d.kind,
            path,
            test_path: d.test_path.clone(),
            standardize: d.standardize,
            loss,
            features,
            storage,
            file_rows: scan.rows,
            train_rows,
            test_rows,
        };
        Ok((source, shape))
    }

    /// Whether the data is standardised (`data.standardize`).
    pub(crate) fn standardizes(&self) -> bool {
        self.standardize
    }

    /// The training samples `ranges[k]` (indices in partition order), each
    /// set a matrix, standardised with `standardization`.
    pub(crate) fn load_train(
        &self,
        ranges: &[Range<usize>],
        standardization: Option<&Standardization>,
    ) -> Result<Vec<(Features, Vec<f64>)>, InputError> {
        let wanted: Vec<Vec<usize>> = ranges
            .iter()
            .map(|rows| rows.clone().map(|j| self.train_rows[j]).collect())
            .collect();
        let parts = read_rows(
            self.kind,
            &self.path,
            self.features,
            self.loss,
            &wanted,
            self.storage,
        )?;
        Ok(parts
            .into_iter()
            .map(|(mut x, y)| {
                if let Some(s) = standardization {
                    apply(s, &mut x);
                }
                (x, y)
            })
            .collect())
    }

    /// The test samples, standardised with `standardization`.
    pub(crate) fn load_test(
        &self,
        standardization: Option<&Standardization>,
    ) -> Result<(Features, Vec<f64>), InputError> {
        let path = self.test_path.as_deref().unwrap_or(&self.path);
        let (mut x, y) = read_rows(
            self.kind,
            path,
            self.features,
            self.loss,
            std::slice::from_ref(&self.test_rows),
            self.storage,
        )?
        .remove(0);
        if let Some(s) = standardization {
            apply(s, &mut x);
        }
        Ok((x, y))
    }

    /// The standardisation of the training rows, in one streaming pass
    /// (O(features) memory, no matrix); sparse data is only scaled.
    pub(crate) fn standardization(&self) -> Result<Standardization, InputError> {
        let moments = self.train_moments()?;
        moments
            .standardization(self.storage == Storage::Dense)
            .map_err(|o| {
                let column = match self.kind {
                    DataKind::Csv => format!("column {} (feature {})", o.feature + 2, o.feature + 1),
                    _ => format!("feature {}", o.feature + 1),
                };
                InputError::new(
                    &self.path,
                    format!(
                        "{column} cannot be standardised: its {} over the training rows overflows \
                         (values up to {:.3e}); rescale that column, or set data.standardize = false",
                        o.statistic, o.largest
                    ),
                )
            })
    }

    /// Moments of the training rows, streamed: one row in memory at a time.
    fn train_moments(&self) -> Result<FeatureMoments, InputError> {
        let mut training = vec![false; self.file_rows];
        for &r in &self.train_rows {
            training[r] = true;
        }
        let mut moments = FeatureMoments::new(self.features);
        let features = self.features;
        for_each_row(
            self.kind,
            &self.path,
            self.loss,
            None,
            |row, _, (_, entries)| {
                if training.get(row).copied().unwrap_or(false) {
                    if let Some(&(j, _)) = entries.iter().find(|&&(j, _)| j >= features) {
                        return Err(beyond_features(j, features));
                    }
                    moments.add_row(entries);
                }
                Ok(())
            },
        )?;
        Ok(moments)
    }
}

/// A CSV test file has the training file's columns.
fn check_test_width(
    kind: DataKind,
    test_path: &str,
    scan: &Scan,
    test_scan: &Scan,
) -> Result<(), InputError> {
    if kind == DataKind::Csv && test_scan.features != scan.features {
        return Err(InputError::new(
            test_path.to_string(),
            format!(
                "has {} features, the training file {}",
                test_scan.features, scan.features
            ),
        ));
    }
    Ok(())
}

/// The `rows` of one file split into (training, test) rows: a seeded
/// permutation, its first `test_fraction` the test rows.
fn split(seed: u64, test_fraction: f64, rows: usize) -> (Vec<usize>, Vec<usize>) {
    let mut order: Vec<usize> = (0..rows).collect();
    order.shuffle(&mut substream(seed, Stream::Data, SPLIT));
    let test = (test_fraction * rows as f64).round() as usize;
    let (test_rows, train_rows) = order.split_at(test);
    (train_rows.to_vec(), test_rows.to_vec())
}

/// The training and test matrices of `shape` fit in `data.max_matrix_mib`
/// stored as `storage` (`stored`: the entries of the training and the test
/// file, which bound those of their rows). The largest feature index makes
/// the width: this refuses before anything is allocated.
fn check_matrices(
    config: &Config,
    path: &str,
    storage: Storage,
    shape: &Shape,
    stored: [usize; 2],
) -> Result<(), InputError> {
    let d = &config.data;
    let test_origin = d.test_path.as_deref().unwrap_or(path);
    let (train, test, features) = (shape.train_samples, shape.test_samples, shape.features);
    let limit = d.max_matrix_mib;
    match storage {
        Storage::Dense => {
            check_dense_matrix(path, "training", train, features, limit)?;
            check_dense_matrix(test_origin, "test", test, features, limit)
        }
        Storage::Sparse => {
            check_sparse_matrix(path, "training", train, stored[0], features, limit)?;
            check_sparse_matrix(test_origin, "test", test, stored[1], features, limit)
        }
    }
}

/// Standardise `x` in place: sparse data is only scaled (its standardisation
/// has no centre, see [`DataPlan::set_standardization`](crate::learn::DataPlan::set_standardization)).
fn apply(s: &Standardization, x: &mut Features) {
    match x {
        Features::Dense(x) => {
            for mut row in x.rows_mut() {
                for ((v, m), sd) in row.iter_mut().zip(&s.center).zip(&s.scale) {
                    *v = (*v - m) / sd;
                }
            }
        }
        Features::Sparse(x) => x.scale_columns(&s.scale),
    }
}

#[cfg(test)]
mod text_files;
