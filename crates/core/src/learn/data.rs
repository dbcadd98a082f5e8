//! Training and test data, generated or loaded partition by partition.
//!
//! The training samples are split into `P` contiguous partitions (mini-batches):
//! partition `p` holds samples `p·N/P .. (p+1)·N/P`. A worker generates or
//! loads only the partitions it stores, so data never passes through the
//! master. Every sample is a pure function of (config, seed, sample index):
//!
//! - synthetic samples come from the random sub-stream of their own index
//!   (`rng::substream(seed, Data, i)`), so any partitioning, any process and any
//!   order of generation sees the same data set;
//! - file samples are split into test and training rows by a seeded permutation
//!   that every process computes alike, and standardised with statistics of the
//!   training rows.

use std::fs::File;
use std::io::BufReader;
use std::ops::Range;
use std::path::Path;

use ndarray::Array2;
use rand::RngExt;
use rand::seq::SliceRandom;
use rand_distr::{Distribution, StandardNormal};

use crate::config::{Config, DataKind, Loss, check_dense_matrix};
use crate::error::InputError;
use crate::rng::{Stream, substream};
use crate::textfile::Lines;

/// Samples of one partition (or of the test set): rows of `x`, labels `y`.
#[derive(Debug, Clone, PartialEq)]
pub struct Partition {
    /// Partition id (`usize::MAX` for the test set).
    pub id: usize,
    /// Samples × features, row-major.
    pub x: Array2<f64>,
    pub y: Vec<f64>,
}

impl Partition {
    /// Number of samples.
    pub fn len(&self) -> usize {
        self.y.len()
    }

    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }
}

/// Sub-stream indices (below 2^56): training samples use their own index,
/// test samples `TEST_BASE + j`; these are reserved.
const TRUE_MODEL: u64 = (1 << 56) - 1;
const MIXTURE_MEANS: u64 = (1 << 56) - 2;
const SPLIT: u64 = (1 << 56) - 3;
const TEST_BASE: u64 = 1 << 50;

/// Where the data comes from, with everything needed to produce any partition.
#[derive(Debug, Clone)]
pub struct DataPlan {
    source: Source,
    loss: Loss,
    features: usize,
    train_samples: usize,
    test_samples: usize,
    partitions: usize,
}

#[derive(Debug, Clone)]
enum Source {
    SyntheticLinear { seed: u64, noise_std: f64 },
    SyntheticLogistic { seed: u64 },
    File(FileSource),
}

#[derive(Debug, Clone)]
struct FileSource {
    kind: DataKind,
    path: String,
    test_path: Option<String>,
    standardize: bool,
    /// Training row j (in partition order) is line-row `train_rows[j]` of `path`.
    train_rows: Vec<usize>,
    /// Test rows of `path` when there is no `test_path`.
    test_rows: Vec<usize>,
}

impl DataPlan {
    /// Plan the data of `config` split into `partitions` partitions. For files
    /// this reads the file(s) once to count and check rows.
    pub fn new(config: &Config, partitions: usize) -> Result<Self, InputError> {
        let d = &config.data;
        let loss = config.model.loss;
        let (source, features, train_samples, test_samples) = match d.kind {
            DataKind::SyntheticLinear => (
                Source::SyntheticLinear {
                    seed: config.seed,
                    noise_std: d.noise_std,
                },
                d.features,
                d.train_samples,
                d.test_samples,
            ),
            DataKind::SyntheticLogistic => (
                Source::SyntheticLogistic { seed: config.seed },
                d.features,
                d.train_samples,
                d.test_samples,
            ),
            DataKind::Libsvm | DataKind::Csv => {
                let path = d
                    .path
                    .clone()
                    .ok_or_else(|| InputError::new("data.path", "is required"))?;
                let scan = scan_file(d.kind, &path, loss)?;
                let mut features = scan.features;
                let (train_rows, test_rows) = match &d.test_path {
                    Some(test_path) => {
                        let test_scan = scan_file(d.kind, test_path, loss)?;
                        if d.kind == DataKind::Csv && test_scan.features != scan.features {
                            return Err(InputError::new(
                                test_path.clone(),
                                format!(
                                    "has {} features, the training file {}",
                                    test_scan.features, scan.features
                                ),
                            ));
                        }
                        features = features.max(test_scan.features);
                        ((0..scan.rows).collect(), (0..test_scan.rows).collect())
                    }
                    None => {
                        let mut order: Vec<usize> = (0..scan.rows).collect();
                        order.shuffle(&mut substream(config.seed, Stream::Data, SPLIT));
                        let test = (d.test_fraction * scan.rows as f64).round() as usize;
                        let (test_rows, train_rows) = order.split_at(test);
                        (train_rows.to_vec(), test_rows.to_vec())
                    }
                };
                let (train, test) = (train_rows.len(), test_rows.len());
                // The largest feature index makes the dense width: refuse before allocating.
                let test_origin = d.test_path.as_deref().unwrap_or(&path);
                check_dense_matrix(&path, "training", train, features, d.max_matrix_mib)?;
                check_dense_matrix(test_origin, "test", test, features, d.max_matrix_mib)?;
                let source = Source::File(FileSource {
                    kind: d.kind,
                    path,
                    test_path: d.test_path.clone(),
                    standardize: d.standardize,
                    train_rows,
                    test_rows,
                });
                (source, features, train, test)
            }
        };
        if let Source::SyntheticLinear { .. } | Source::SyntheticLogistic { .. } = source {
            check_dense_matrix(
                "data.train_samples",
                "training",
                train_samples,
                features,
                d.max_matrix_mib,
            )?;
            check_dense_matrix(
                "data.test_samples",
                "test",
                test_samples,
                features,
                d.max_matrix_mib,
            )?;
        }
        if train_samples < partitions {
            return Err(InputError::value(
                "data.train_samples",
                train_samples,
                format!(
                    "is fewer than the {partitions} partitions (every partition needs a sample)"
                ),
            ));
        }
        Ok(Self {
            source,
            loss,
            features,
            train_samples,
            test_samples,
            partitions,
        })
    }

    /// d: features per sample.
    pub fn features(&self) -> usize {
        self.features
    }

    /// N: training samples over all partitions.
    pub fn train_samples(&self) -> usize {
        self.train_samples
    }

    /// Test samples.
    pub fn test_samples(&self) -> usize {
        self.test_samples
    }

    /// Number of partitions.
    pub fn partitions(&self) -> usize {
        self.partitions
    }

    /// Training sample indices of partition `p`.
    pub fn rows(&self, p: usize) -> Range<usize> {
        let (n, k) = (self.train_samples as u128, self.partitions as u128);
        let at = |p: u128| (p * n / k) as usize;
        at(p as u128)..at(p as u128 + 1)
    }

    /// Generate or load the partitions `ids`.
    pub fn load(&self, ids: &[usize]) -> Result<Vec<Partition>, InputError> {
        match &self.source {
            Source::SyntheticLinear { seed, noise_std } => {
                let theta = true_model(*seed, self.features);
                Ok(ids
                    .iter()
                    .map(|&p| {
                        let rows: Vec<u64> = self.rows(p).map(|i| i as u64).collect();
                        linear_samples(*seed, &rows, &theta, *noise_std, p)
                    })
                    .collect())
            }
            Source::SyntheticLogistic { seed } => {
                let model = LogisticModel::new(*seed, self.features);
                Ok(ids
                    .iter()
                    .map(|&p| {
                        let rows: Vec<u64> = self.rows(p).map(|i| i as u64).collect();
                        model.samples(*seed, &rows, p)
                    })
                    .collect())
            }
            Source::File(f) => {
                let wanted: Vec<Vec<usize>> = ids
                    .iter()
                    .map(|&p| self.rows(p).map(|j| f.train_rows[j]).collect())
                    .collect();
                let mut parts = read_rows(f.kind, &f.path, self.features, self.loss, &wanted)?;
                if f.standardize {
                    let stats = self.train_statistics(f)?;
                    for (x, _) in &mut parts {
                        stats.apply(x);
                    }
                }
                Ok(ids
                    .iter()
                    .zip(parts)
                    .map(|(&id, (x, y))| Partition { id, x, y })
                    .collect())
            }
        }
    }

    /// Generate or load the test set.
    pub fn load_test(&self) -> Result<Partition, InputError> {
        match &self.source {
            Source::SyntheticLinear { seed, noise_std } => {
                let theta = true_model(*seed, self.features);
                let rows: Vec<u64> = (0..self.test_samples as u64)
                    .map(|j| TEST_BASE + j)
                    .collect();
                Ok(linear_samples(*seed, &rows, &theta, *noise_std, usize::MAX))
            }
            Source::SyntheticLogistic { seed } => {
                let rows: Vec<u64> = (0..self.test_samples as u64)
                    .map(|j| TEST_BASE + j)
                    .collect();
                Ok(LogisticModel::new(*seed, self.features).samples(*seed, &rows, usize::MAX))
            }
            Source::File(f) => {
                let (path, rows) = match &f.test_path {
                    Some(p) => (p.as_str(), f.test_rows.clone()),
                    None => (f.path.as_str(), f.test_rows.clone()),
                };
                let (mut x, y) =
                    read_rows(f.kind, path, self.features, self.loss, &[rows])?.remove(0);
                if f.standardize {
                    self.train_statistics(f)?.apply(&mut x);
                }
                Ok(Partition {
                    id: usize::MAX,
                    x,
                    y,
                })
            }
        }
    }

    /// The true model of synthetic data (None for files).
    pub fn true_model(&self) -> Option<Vec<f64>> {
        match &self.source {
            Source::SyntheticLinear { seed, .. } => Some(true_model(*seed, self.features)),
            Source::SyntheticLogistic { seed } => {
                Some(LogisticModel::new(*seed, self.features).beta)
            }
            Source::File(_) => None,
        }
    }

    fn train_statistics(&self, f: &FileSource) -> Result<Standardizer, InputError> {
        let (x, _) = read_rows(
            f.kind,
            &f.path,
            self.features,
            self.loss,
            std::slice::from_ref(&f.train_rows),
        )?
        .remove(0);
        Standardizer::fit(&x, f.kind, &f.path)
    }
}

/// theta* of synthetic-linear: N(0, 1) entries.
fn true_model(seed: u64, d: usize) -> Vec<f64> {
    let mut rng = substream(seed, Stream::Data, TRUE_MODEL);
    (0..d).map(|_| StandardNormal.sample(&mut rng)).collect()
}

/// Synthetic linear regression as in 000 §VI: x ~ N(0, I_d), y = x·theta* + noise_std·N(0, 1).
fn linear_samples(seed: u64, rows: &[u64], theta: &[f64], noise_std: f64, id: usize) -> Partition {
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
    Partition { id, x, y }
}

/// Tandon et al.'s synthetic logistic regression (001 §5): x ~ ½N(mu1, I) + ½N(mu2, I),
/// y = +1 with probability 1 / (exp(2·x·beta*) + 1), else -1. The paper leaves the scale
/// of the random means open; here mu1, mu2 and beta* have N(0, 1/d) entries, so |mu| ≈ 1,
/// x·beta* is of order one and the logistic loss has a curvature of order one (with
/// N(0, 1) means |x|² ≈ 2d and any step size above ~1/d diverges).
#[derive(Debug, Clone)]
struct LogisticModel {
    means: [Vec<f64>; 2],
    beta: Vec<f64>,
}

impl LogisticModel {
    fn new(seed: u64, d: usize) -> Self {
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

    fn samples(&self, seed: u64, rows: &[u64], id: usize) -> Partition {
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
            let p_positive = 1.0 / ((2.0 * dot).exp() + 1.0);
            y.push(if rng.random::<f64>() < p_positive {
                1.0
            } else {
                -1.0
            });
        }
        Partition { id, x, y }
    }
}

/// Per-feature mean and standard deviation of training rows.
#[derive(Debug, Clone)]
struct Standardizer {
    mean: Vec<f64>,
    std: Vec<f64>,
}

impl Standardizer {
    /// The mean and standard deviation of every column of the training rows
    /// `x` of the file at `path`; an error naming the first column whose
    /// mean or variance overflows (values near 1e154 and beyond): the data,
    /// not the model, is what cannot be used as it is.
    fn fit(x: &Array2<f64>, kind: DataKind, path: &str) -> Result<Self, InputError> {
        let n = x.nrows().max(1) as f64;
        let d = x.ncols();
        let mut mean = vec![0.0; d];
        for row in x.rows() {
            for (m, v) in mean.iter_mut().zip(row) {
                *m += v;
            }
        }
        mean.iter_mut().for_each(|m| *m /= n);
        let mut var = vec![0.0; d];
        for row in x.rows() {
            for ((s, v), m) in var.iter_mut().zip(row).zip(&mean) {
                *s += (v - m) * (v - m);
            }
        }
        // A constant feature is only centred.
        let std = var
            .iter()
            .map(|s| (s / n).sqrt())
            .map(|s| if s > 0.0 { s } else { 1.0 })
            .collect::<Vec<f64>>();
        if let Some(j) = (0..d).find(|&j| !(mean[j].is_finite() && std[j].is_finite())) {
            let column = match kind {
                DataKind::Csv => format!("column {} (feature {})", j + 2, j + 1),
                _ => format!("feature {}", j + 1),
            };
            let largest = x.column(j).iter().fold(0.0f64, |a, v| a.max(v.abs()));
            return Err(InputError::new(
                path,
                format!(
                    "{column} cannot be standardised: its {} over the training rows overflows \
                     (values up to {largest:.3e}); rescale that column, or set data.standardize = false",
                    if mean[j].is_finite() {
                        "variance"
                    } else {
                        "mean"
                    }
                ),
            ));
        }
        Ok(Self { mean, std })
    }

    fn apply(&self, x: &mut Array2<f64>) {
        for mut row in x.rows_mut() {
            for ((v, m), s) in row.iter_mut().zip(&self.mean).zip(&self.std) {
                *v = (*v - m) / s;
            }
        }
    }
}

struct Scan {
    rows: usize,
    features: usize,
}

fn open(path: &str) -> Result<BufReader<File>, InputError> {
    let file = File::open(Path::new(path))
        .map_err(|e| InputError::new(path, format!("cannot open: {e}")))?;
    Ok(BufReader::new(file))
}

/// A parsed data line: label and (0-based feature, value) pairs.
type Row = (f64, Vec<(usize, f64)>);

/// Dense samples and labels read from a file.
type Samples = (Array2<f64>, Vec<f64>);

/// Parse one line; `None` for blank and comment lines.
fn parse_line(kind: DataKind, line: &str, loss: Loss) -> Result<Option<Row>, String> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let (label, features) = match kind {
        DataKind::Libsvm => {
            let mut tokens = line.split_whitespace();
            let label = tokens.next().expect("non-empty line has a token");
            let label =
                parse_number(label).map_err(|_| format!("label `{label}` is not a number"))?;
            let mut features = Vec::new();
            let mut last = 0usize;
            for token in tokens {
                if token.starts_with('#') {
                    break; // trailing comment
                }
                let (index, value) = token
                    .split_once(':')
                    .ok_or_else(|| format!("`{token}` is not of the form index:value"))?;
                let index: usize = index
                    .parse()
                    .map_err(|_| format!("feature index `{index}` is not an integer"))?;
                if index == 0 {
                    return Err("feature indices are 1-based; found 0".to_string());
                }
                if index <= last {
                    return Err(format!(
                        "feature index {index} does not increase (after {last})"
                    ));
                }
                last = index;
                let value = parse_number(value)
                    .map_err(|_| format!("value `{value}` of feature {index} is not a number"))?;
                features.push((index - 1, value));
            }
            (label, features)
        }
        DataKind::Csv => {
            let mut cells = line.split(',').map(str::trim);
            let label = cells.next().expect("split yields a cell");
            let label =
                parse_number(label).map_err(|_| format!("target `{label}` is not a number"))?;
            let mut features = Vec::new();
            for (j, cell) in cells.enumerate() {
                let value = parse_number(cell)
                    .map_err(|_| format!("cell {} `{cell}` is not a number", j + 2))?;
                features.push((j, value));
            }
            (label, features)
        }
        DataKind::SyntheticLinear | DataKind::SyntheticLogistic => unreachable!("files only"),
    };
    let label = match loss {
        Loss::LeastSquares => label,
        Loss::Logistic => {
            if label == 1.0 {
                1.0
            } else if label == -1.0 || label == 0.0 {
                -1.0
            } else {
                return Err(format!(
                    "label {label} is not binary (logistic loss needs -1/+1 or 0/1)"
                ));
            }
        }
    };
    Ok(Some((label, features)))
}

fn parse_number(text: &str) -> Result<f64, ()> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(()),
    }
}

/// Read the data lines of a file, calling `each(row_index, line_number, row)`;
/// with `limit`, stop after that many rows.
fn for_each_row(
    kind: DataKind,
    path: &str,
    loss: Loss,
    limit: Option<usize>,
    mut each: impl FnMut(usize, usize, Row) -> Result<(), String>,
) -> Result<usize, InputError> {
    let mut rows = 0;
    let mut header_seen = false;
    for item in Lines::new(open(path)?, path) {
        if limit.is_some_and(|n| rows >= n) {
            break;
        }
        let (line_no, line) = item?;
        let at = || format!("{path}:{line_no}");
        if kind == DataKind::Csv && !header_seen {
            if !line.trim().is_empty() {
                header_seen = true; // the first non-empty line is the header
            }
            continue;
        }
        match parse_line(kind, &line, loss) {
            Ok(Some(row)) => {
                each(rows, line_no, row).map_err(|why| InputError::new(at(), why))?;
                rows += 1;
            }
            Ok(None) => {}
            Err(why) => return Err(InputError::new(at(), why)),
        }
    }
    Ok(rows)
}

fn scan_file(kind: DataKind, path: &str, loss: Loss) -> Result<Scan, InputError> {
    scan(kind, path, loss, None)
}

/// Rows of each data file that [`check_data_files`] reads.
pub const CHECK_ROWS: usize = 1000;

/// The cheap checks of the data files of `config` (`data.path`,
/// `data.test_path`), made before anything is written: each exists, is a
/// file that can be read, and its first [`CHECK_ROWS`] data rows parse
/// (labels, features, the CSV header and width; a shorter file: that it has
/// rows and features). [`DataPlan::new`] reads the whole files later.
/// Synthetic data has nothing to check.
pub fn check_data_files(config: &Config) -> Result<(), InputError> {
    let d = &config.data;
    if !matches!(d.kind, DataKind::Libsvm | DataKind::Csv) {
        return Ok(());
    }
    let path = d
        .path
        .as_deref()
        .ok_or_else(|| InputError::new("data.path", "is required"))?;
    for (field, file) in [
        ("data.path", Some(path)),
        ("data.test_path", d.test_path.as_deref()),
    ] {
        let Some(file) = file else {
            continue;
        };
        let quoted = format!("\"{file}\"");
        match std::fs::metadata(file) {
            Err(e) => {
                return Err(InputError::value(
                    field,
                    quoted,
                    format!("cannot be read: {e}"),
                ));
            }
            Ok(m) if m.is_dir() => {
                return Err(InputError::value(
                    field,
                    quoted,
                    "is a folder, not a data file",
                ));
            }
            Ok(_) => {}
        }
        scan(d.kind, file, config.model.loss, Some(CHECK_ROWS))?;
    }
    Ok(())
}

/// Count and check the rows of a file (with `limit`, the first so many).
fn scan(kind: DataKind, path: &str, loss: Loss, limit: Option<usize>) -> Result<Scan, InputError> {
    let mut features = 0usize;
    let mut csv_width: Option<usize> = None;
    let rows = for_each_row(kind, path, loss, limit, |_, _, (_, feats)| {
        match kind {
            DataKind::Csv => match csv_width {
                None => csv_width = Some(feats.len()),
                Some(w) if w != feats.len() => {
                    return Err(format!(
                        "has {} feature cells, earlier rows {w}",
                        feats.len()
                    ));
                }
                Some(_) => {}
            },
            _ => {
                if let Some(&(last, _)) = feats.last() {
                    features = features.max(last + 1);
                }
            }
        }
        Ok(())
    })?;
    if rows == 0 {
        return Err(InputError::new(path, "has no data rows"));
    }
    if kind == DataKind::Csv {
        features = csv_width.unwrap_or(0);
    }
    // Sparse rows: the features may come after the rows read.
    if features == 0 && limit.is_none_or(|n| rows < n) {
        return Err(InputError::new(path, "has no features"));
    }
    Ok(Scan { rows, features })
}

/// Read the rows `wanted[k]` (row indices of the file, in the wanted order) into dense matrices.
fn read_rows(
    kind: DataKind,
    path: &str,
    features: usize,
    loss: Loss,
    wanted: &[Vec<usize>],
) -> Result<Vec<Samples>, InputError> {
    // row index → (set, position): only the wanted rows are kept in memory.
    let mut slot = std::collections::HashMap::new();
    for (k, rows) in wanted.iter().enumerate() {
        for (pos, &r) in rows.iter().enumerate() {
            slot.insert(r, (k, pos));
        }
    }
    let mut out: Vec<Samples> = wanted
        .iter()
        .map(|rows| (Array2::zeros((rows.len(), features)), vec![0.0; rows.len()]))
        .collect();
    for_each_row(kind, path, loss, None, |row, _, (label, feats)| {
        if let Some(&(k, pos)) = slot.get(&row) {
            let (x, y) = &mut out[k];
            y[pos] = label;
            for (j, v) in feats {
                if j >= features {
                    return Err(format!(
                        "feature {} exceeds the {features} features of the training data",
                        j + 1
                    ));
                }
                x[(pos, j)] = v;
            }
        }
        Ok(())
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse;

    fn config(extra: &str) -> Config {
        parse(extra, "test", &[]).unwrap().config
    }

    fn shared(name: &str) -> String {
        format!("{}/../../data/{name}", env!("CARGO_MANIFEST_DIR"))
    }

    #[test]
    fn synthetic_data_does_not_depend_on_the_partitioning() {
        let c = config("workers = 4\n[data]\ntrain_samples = 12\nfeatures = 5\n");
        let by4 = DataPlan::new(&c, 4).unwrap();
        let by3 = DataPlan::new(&c, 3).unwrap();
        let a = by4.load(&[1]).unwrap().remove(0); // samples 3..6
        let b = by3.load(&[0]).unwrap().remove(0); // samples 0..4
        assert_eq!(a.x.row(0), b.x.row(3));
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
            assert_ne!(train.x.row(i), test.x.row(i));
        }
    }

    #[test]
    fn partitions_cover_every_sample_once() {
        let c = config("workers = 7\n[data]\ntrain_samples = 100\nfeatures = 2\n");
        let plan = DataPlan::new(&c, 7).unwrap();
        let mut next = 0;
        for p in 0..7 {
            let r = plan.rows(p);
            assert_eq!(r.start, next);
            next = r.end;
            assert!(r.len() == 14 || r.len() == 15);
        }
        assert_eq!(next, 100);
    }

    #[test]
    fn synthetic_linear_labels_follow_the_true_model() {
        let c = config("workers = 2\n[data]\ntrain_samples = 50\nfeatures = 8\nnoise_std = 0.0\n");
        let plan = DataPlan::new(&c, 2).unwrap();
        let theta = plan.true_model().unwrap();
        for part in plan.load(&[0, 1]).unwrap() {
            for (row, y) in part.x.rows().into_iter().zip(&part.y) {
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
    fn libsvm_file_loads_split_and_standardised() {
        let path = shared("breast_cancer.libsvm");
        let c = config(&format!(
            "workers = 4\n[data]\nkind = \"libsvm\"\npath = \"{path}\"\ntest_fraction = 0.25\n[model]\nloss = \"logistic\"\n"
        ));
        let plan = DataPlan::new(&c, 4).unwrap();
        assert_eq!(plan.features(), 30);
        assert_eq!(plan.train_samples() + plan.test_samples(), 569);
        assert_eq!(plan.test_samples(), 142);
        let parts = plan.load(&[0, 1, 2, 3]).unwrap();
        assert_eq!(
            parts.iter().map(Partition::len).sum::<usize>(),
            plan.train_samples()
        );
        // Standardised over the training rows: every feature has mean 0, std 1.
        for j in 0..30 {
            let values: Vec<f64> = parts.iter().flat_map(|p| p.x.column(j).to_vec()).collect();
            let n = values.len() as f64;
            let mean = values.iter().sum::<f64>() / n;
            let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
            assert!(
                mean.abs() < 1e-9 && (var - 1.0).abs() < 1e-9,
                "feature {j}: {mean} {var}"
            );
        }
        let test = plan.load_test().unwrap();
        assert_eq!(test.len(), 142);
    }

    #[test]
    fn csv_and_libsvm_of_the_same_data_agree() {
        let (csv, svm) = (shared("diabetes.csv"), shared("diabetes.libsvm"));
        let load = |kind: &str, path: &str| {
            let c = config(&format!(
                "workers = 2\n[data]\nkind = \"{kind}\"\npath = \"{path}\"\nstandardize = false\n"
            ));
            let plan = DataPlan::new(&c, 2).unwrap();
            (
                plan.features(),
                plan.load(&[0, 1]).unwrap(),
                plan.load_test().unwrap(),
            )
        };
        let (fa, a, ta) = load("csv", &csv);
        let (fb, b, tb) = load("libsvm", &svm);
        assert_eq!(fa, 10);
        assert_eq!(fa, fb);
        for (p, q) in a.iter().zip(&b) {
            assert!((&p.x - &q.x).iter().all(|v| v.abs() < 1e-9));
            assert_eq!(p.y, q.y);
        }
        assert_eq!(ta.y, tb.y);
    }

    fn bad_file(name: &str, kind: &str, text: &str, loss: &str) -> InputError {
        let dir = std::env::temp_dir().join("gradcode-data-tests");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let c = config(&format!(
            "workers = 1\n[data]\nkind = \"{kind}\"\npath = \"{}\"\n[model]\nloss = \"{loss}\"\n",
            path.display()
        ));
        DataPlan::new(&c, 1)
            .and_then(|p| p.load(&[0]).map(|_| ()))
            .unwrap_err()
    }

    #[test]
    fn a_column_whose_statistics_overflow_is_named_as_the_cause() {
        let rows = |f: &dyn Fn(usize) -> String| (0..40).map(f).collect::<String>();
        // CSV: the variance of column 3 overflows (its mean is 0).
        let spread = rows(&|i| format!("{i},0.5,{}1e200\n", if i % 2 == 0 { "-" } else { "" }));
        let e = bad_file("spread.csv", "csv", &spread, "least-squares");
        assert!(e.field.ends_with("spread.csv"), "{e}");
        let text = e.to_string();
        assert!(
            text.contains("column 3 (feature 2) cannot be standardised: its variance"),
            "{e}"
        );
        assert!(text.contains("values up to 1.000e200"), "{e}");
        assert!(text.contains("data.standardize = false"), "{e}");
        assert!(!text.contains("diverged"), "{e}");
        // LIBSVM: the mean of feature 4 overflows.
        let large = rows(&|i| format!("{i} 1:0.5 4:1.7e308\n"));
        let e = bad_file("large.libsvm", "libsvm", &large, "least-squares");
        assert!(
            e.to_string()
                .contains("feature 4 cannot be standardised: its mean"),
            "{e}"
        );
        // The same file unstandardised loads (the values are finite).
        let dir = std::env::temp_dir().join("gradcode-data-tests");
        let path = dir.join("spread.csv");
        let c = config(&format!(
            "workers = 1\n[data]\nkind = \"csv\"\npath = \"{}\"\nstandardize = false\n",
            path.display()
        ));
        assert!(DataPlan::new(&c, 1).unwrap().load(&[0]).is_ok());
    }

    #[test]
    fn malformed_lines_are_reported_as_file_and_line() {
        let e = bad_file(
            "a.libsvm",
            "libsvm",
            "1 1:0.5 2:1\n-1 1:x\n",
            "least-squares",
        );
        assert!(e.field.ends_with("a.libsvm:2"), "{e}");
        assert!(e.to_string().contains("value `x`"), "{e}");
        let e = bad_file(
            "b.libsvm",
            "libsvm",
            "1 1:0.5\n1 3:1 2:4\n",
            "least-squares",
        );
        assert!(
            e.to_string()
                .contains(":2: feature index 2 does not increase"),
            "{e}"
        );
        let e = bad_file("c.libsvm", "libsvm", "# c\n2 1:1\n", "logistic");
        assert!(e.to_string().contains(":2: label 2 is not binary"), "{e}");
        let e = bad_file("d.csv", "csv", "y,a,b\n1,2,3\n1,2\n", "least-squares");
        assert!(
            e.to_string().contains("d.csv:3: has 1 feature cells"),
            "{e}"
        );
        let e = bad_file("e.csv", "csv", "y,a\n1,nan\n", "least-squares");
        assert!(
            e.to_string()
                .contains("e.csv:2: cell 2 `nan` is not a number"),
            "{e}"
        );
        let e = bad_file("f.libsvm", "libsvm", "1 0:3\n", "least-squares");
        assert!(e.to_string().contains("1-based"), "{e}");
        let e = bad_file("g.csv", "csv", "y,a\n", "least-squares");
        assert!(e.to_string().contains("has no data rows"), "{e}");
    }

    #[test]
    fn files_that_end_mid_line_are_read_or_refused_at_that_line() {
        // A last line without a newline is a line; one cut inside a pair or a number is refused.
        let e = bad_file("t1.libsvm", "libsvm", "1 1:0.5\n-1 2:", "least-squares");
        assert!(
            e.to_string()
                .contains("t1.libsvm:2: value `` of feature 2 is not a number"),
            "{e}"
        );
        let e = bad_file("t2.libsvm", "libsvm", "1 1:0.5\n-1 2", "least-squares");
        assert!(
            e.to_string()
                .contains("t2.libsvm:2: `2` is not of the form"),
            "{e}"
        );
        let e = bad_file("t3.csv", "csv", "y,a\n1,2\n1,2e", "least-squares");
        assert!(e.to_string().contains("t3.csv:3: cell 2 `2e`"), "{e}");
        let e = bad_file("t4.csv", "csv", "y,a\n1,2\n1", "least-squares");
        assert!(
            e.to_string().contains("t4.csv:3: has 0 feature cells"),
            "{e}"
        );
    }

    #[test]
    fn a_huge_feature_index_is_refused_before_the_matrix_is_allocated() {
        // Two tiny lines ask for a dense 2 × 10^12 matrix (16 TB): refused, naming the file.
        let e = bad_file(
            "wide.libsvm",
            "libsvm",
            "1 1:1\n-1 1000000000000:1\n",
            "least-squares",
        );
        assert!(e.field.ends_with("wide.libsvm"), "{e}");
        assert!(e.to_string().contains("1000000000000 features"), "{e}");
        assert!(e.to_string().contains("data.max_matrix_mib = 4096"), "{e}");
        // The largest index usize holds: the size computation does not overflow.
        let e = bad_file(
            "widest.libsvm",
            "libsvm",
            &format!("1 {}:1\n", usize::MAX),
            "least-squares",
        );
        assert!(
            e.to_string().contains("more than data.max_matrix_mib"),
            "{e}"
        );
    }

    #[test]
    fn the_matrix_limit_counts_samples_times_features() {
        // 3 training rows × 2^20 features × 8 bytes = 24 MiB: over a 16 MiB limit, under 32.
        let dir = std::env::temp_dir().join("gradcode-data-tests");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("limit.libsvm");
        std::fs::write(&path, "1 1048576:1\n2 1:1\n3 2:1\n").unwrap();
        let text = |mib: usize| {
            format!(
                "workers = 1\n[data]\nkind = \"libsvm\"\npath = \"{}\"\ntest_fraction = 0.0\nmax_matrix_mib = {mib}\n",
                path.display()
            )
        };
        let e = DataPlan::new(&config(&text(16)), 1).unwrap_err();
        assert!(
            e.to_string()
                .contains("training matrix of 3 samples × 1048576 features"),
            "{e}"
        );
        assert!(e.to_string().contains("takes 24 MiB"), "{e}");
        let plan = DataPlan::new(&config(&text(32)), 1).unwrap();
        assert_eq!(plan.features(), 1 << 20);
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
    fn partition_bounds_do_not_overflow() {
        // rows(p) multiplies p · N before dividing by the partitions: in u128.
        let mut c = config("workers = 4\n[data]\ntrain_samples = 8\nfeatures = 1\n");
        c.data.train_samples = usize::MAX / 2;
        c.data.max_matrix_mib = crate::config::MAX_MATRIX_MIB_LIMIT;
        let plan = DataPlan {
            source: Source::SyntheticLinear {
                seed: 1,
                noise_std: 0.0,
            },
            loss: Loss::LeastSquares,
            features: 1,
            train_samples: c.data.train_samples,
            test_samples: 1,
            partitions: 4,
        };
        assert_eq!(plan.rows(3).end, usize::MAX / 2);
        assert_eq!(plan.rows(1).start, plan.rows(0).end);
    }

    #[test]
    fn the_cheap_data_check_reads_the_first_rows_and_the_plan_the_rest() {
        let dir = std::env::temp_dir().join(format!("gradcode-check-data-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cfg = |path: &Path| {
            config(&format!(
                "workers = 2\n[data]\nkind = \"libsvm\"\npath = \"{}\"\n",
                path.display()
            ))
        };
        let missing = dir.join("missing.libsvm");
        let e = check_data_files(&cfg(&missing)).unwrap_err().to_string();
        assert!(
            e.starts_with("data.path = ") && e.contains("missing.libsvm"),
            "{e}"
        );
        let e = check_data_files(&cfg(&dir)).unwrap_err().to_string();
        assert!(e.contains("is a folder"), "{e}");
        let rows: Vec<String> = (0..2 * CHECK_ROWS)
            .map(|i| format!("{} 1:{i}", i % 3))
            .collect();
        let write = |name: &str, bad_line: usize, bad: &str| {
            let mut lines = rows.clone();
            lines[bad_line - 1] = bad.to_string();
            let p = dir.join(name);
            std::fs::write(&p, lines.join("\n") + "\n").unwrap();
            p
        };
        let early = write("early.libsvm", 2, "yes 1:1");
        let e = check_data_files(&cfg(&early)).unwrap_err().to_string();
        assert!(
            e.contains("early.libsvm:2: label `yes` is not a number"),
            "{e}"
        );
        let late = write("late.libsvm", CHECK_ROWS + 500, "1 1:zero");
        check_data_files(&cfg(&late)).unwrap();
        let e = DataPlan::new(&cfg(&late), 2).unwrap_err().to_string();
        assert!(
            e.contains(&format!("late.libsvm:{}", CHECK_ROWS + 500)),
            "{e}"
        );
        // Sparse rows without features at the head are not refused for it.
        let mut sparse: Vec<String> = (0..CHECK_ROWS).map(|_| "1".to_string()).collect();
        sparse.push("1 3:1".to_string());
        let p = dir.join("sparse.libsvm");
        std::fs::write(&p, sparse.join("\n") + "\n").unwrap();
        check_data_files(&cfg(&p)).unwrap();
        // Synthetic data has nothing to check.
        check_data_files(&config("workers = 2\n")).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
