//! The data plan: where the data comes from, which rows each partition
//! holds, and loading them (generated, read from files or images),
//! standardised with statistics of the training rows. Each kind of data has
//! its source in [`super::sources`]; the plan dispatches to it.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use super::checks::check_batch;
use super::partition::Partition;
use super::sources::Shape;
use super::sources::images::ImageSource;
use super::sources::synthetic::SyntheticSource;
use super::sources::text_file::FileSource;
use super::standardize::Standardization;
use super::storage::{Storage, choose_storage};
use super::streams::TEST_BASE;
use crate::config::{Config, DataKind};
use crate::error::InputError;
use crate::learn::model::Input;
use crate::learn::sparse::Features;

/// Where the data comes from, with everything needed to produce any partition.
#[derive(Debug, Clone)]
pub struct DataPlan {
    source: Source,
    features: usize,
    train_samples: usize,
    test_samples: usize,
    partitions: usize,
    storage: Storage,
    /// Stored entries over samples × features (files: of the whole file(s)).
    density: f64,
    /// Standardisation of file data, computed or handed over once.
    standardization: OnceLock<Standardization>,
    /// Sample rows put into matrices so far (training and test).
    materialised: Arc<AtomicUsize>,
}

/// The source of each kind of data.
#[derive(Debug, Clone)]
enum Source {
    Synthetic(SyntheticSource),
    File(FileSource),
    Images(ImageSource),
}

impl DataPlan {
    /// Plan the data of `config` split into `partitions` partitions. For files
    /// this reads the file(s) once to count and check rows (no matrix).
    pub fn new(config: &Config, partitions: usize) -> Result<Self, InputError> {
        let d = &config.data;
        let synthetic = |(s, shape)| (Source::Synthetic(s), shape);
        let (source, shape) = match d.kind {
            DataKind::SyntheticLinear => synthetic(SyntheticSource::linear(config)?),
            DataKind::SyntheticLogistic => synthetic(SyntheticSource::logistic(config)?),
            DataKind::SyntheticOnehot => synthetic(SyntheticSource::onehot(config)?),
            DataKind::Idx | DataKind::Cifar10 => {
                let (images, shape) = ImageSource::plan(config)?;
                (Source::Images(images), shape)
            }
            DataKind::Libsvm | DataKind::Csv => {
                let (file, shape) = FileSource::plan(config)?;
                (Source::File(file), shape)
            }
        };
        let Shape {
            features,
            train_samples,
            test_samples,
            density,
        } = shape;
        if train_samples < partitions {
            return Err(InputError::value(
                "data.train_samples",
                train_samples,
                format!(
                    "is fewer than the {partitions} partitions (every partition needs a sample)"
                ),
            ));
        }
        check_batch(config.train.batch_size, train_samples, partitions)?;
        Ok(Self {
            source,
            features,
            train_samples,
            test_samples,
            partitions,
            storage: choose_storage(d.format, d.kind, Some(density)),
            density,
            standardization: OnceLock::new(),
            materialised: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// d: features per sample.
    pub fn features(&self) -> usize {
        self.features
    }

    /// What a model reads from this data: the features, as images for image data.
    pub fn input(&self) -> Input {
        Input {
            features: self.features,
            image: match &self.source {
                Source::Images(images) => Some(images.shape),
                _ => None,
            },
            partition_rows: self.train_samples.div_ceil(self.partitions.max(1)),
        }
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

    /// How partitions store their samples.
    pub fn storage(&self) -> Storage {
        self.storage
    }

    /// Stored entries over samples × features (1 for dense synthetic data).
    pub fn density(&self) -> f64 {
        self.density
    }

    /// Sample rows this plan has put into matrices (training partitions and
    /// test set) so far: what a process holds, not what it read.
    pub fn rows_materialised(&self) -> usize {
        self.materialised.load(Ordering::Relaxed)
    }

    /// Training sample indices of partition `p`.
    pub fn rows(&self, p: usize) -> Range<usize> {
        let (n, k) = (self.train_samples as u128, self.partitions as u128);
        let at = |p: u128| (p * n / k) as usize;
        at(p as u128)..at(p as u128 + 1)
    }

    /// Whether the data is standardised (files with `data.standardize`).
    pub fn standardizes(&self) -> bool {
        matches!(&self.source, Source::File(f) if f.standardizes())
    }

    /// The standardisation the data gets (None: synthetic data or
    /// `data.standardize = false`). The first call on a plan that was not
    /// handed one ([`Self::set_standardization`]) computes it in one streaming
    /// pass over the training rows: O(features) memory, no matrix.
    pub fn standardization(&self) -> Result<Option<&Standardization>, InputError> {
        let Source::File(f) = &self.source else {
            return Ok(None);
        };
        if !f.standardizes() {
            return Ok(None);
        }
        if let Some(s) = self.standardization.get() {
            return Ok(Some(s));
        }
        let computed = f.standardization()?;
        Ok(Some(self.standardization.get_or_init(|| computed)))
    }

    /// Use `s`, computed by another process from the same config, instead of
    /// computing it here. Refused when this plan standardises nothing, when
    /// it has a standardisation already, or when `s` does not fit the data
    /// (width, or centering sparse data).
    pub fn set_standardization(&self, s: Standardization) -> Result<(), InputError> {
        let field = "standardization";
        if !self.standardizes() {
            return Err(InputError::new(
                field,
                "given for data that is not standardised",
            ));
        }
        if s.features() != self.features || s.center.len() != self.features {
            return Err(InputError::new(
                field,
                format!("has {} features, the data {}", s.features(), self.features),
            ));
        }
        if self.storage == Storage::Sparse && s.centers() {
            return Err(InputError::new(field, "centres sparse data"));
        }
        self.standardization
            .set(s)
            .map_err(|_| InputError::new(field, "is set already"))
    }

    /// Generate or load the partitions `ids`.
    pub fn load(&self, ids: &[usize]) -> Result<Vec<Partition>, InputError> {
        let ranges: Vec<Range<usize>> = ids.iter().map(|&p| self.rows(p)).collect();
        let samples = match &self.source {
            Source::Synthetic(s) => {
                let row_sets: Vec<Vec<u64>> = ranges
                    .iter()
                    .map(|rows| rows.clone().map(|i| i as u64).collect())
                    .collect();
                s.samples(&row_sets, self.features, self.storage)
            }
            Source::File(f) => f.load_train(&ranges, self.standardization()?)?,
            Source::Images(images) => images
                .load_train(&ranges)?
                .into_iter()
                .map(|(x, y)| (Features::Dense(x), y))
                .collect(),
        };
        let parts: Vec<Partition> = ids
            .iter()
            .zip(samples)
            .map(|(&id, (x, y))| Partition { id, x, y })
            .collect();
        let rows: usize = parts.iter().map(Partition::len).sum();
        self.materialised.fetch_add(rows, Ordering::Relaxed);
        Ok(parts)
    }

    /// Generate or load the test set.
    pub fn load_test(&self) -> Result<Partition, InputError> {
        let (x, y) = match &self.source {
            Source::Synthetic(s) => {
                let rows: Vec<u64> = (0..self.test_samples as u64)
                    .map(|j| TEST_BASE + j)
                    .collect();
                let mut sets = s.samples(&[rows], self.features, self.storage);
                sets.remove(0)
            }
            Source::File(f) => f.load_test(self.standardization()?)?,
            Source::Images(images) => {
                let (x, y) = images.load_test()?;
                (Features::Dense(x), y)
            }
        };
        self.materialised.fetch_add(y.len(), Ordering::Relaxed);
        Ok(Partition {
            id: usize::MAX,
            x,
            y,
        })
    }

    /// The true model of synthetic data (None for files).
    pub fn true_model(&self) -> Option<Vec<f64>> {
        match &self.source {
            Source::Synthetic(s) => Some(s.true_model(self.features)),
            Source::File(_) | Source::Images(_) => None,
        }
    }
}

#[cfg(test)]
/// Helpers the data tests share (those of the plan and of the sources):
/// configs, the bundled files, scratch files.
pub(super) mod testing {
    use super::DataPlan;
    use crate::config::{Config, parse};
    use crate::error::InputError;

    pub(crate) fn config(extra: &str) -> Config {
        parse(extra, "test", &[]).unwrap().config
    }

    pub(crate) fn shared(name: &str) -> String {
        format!("{}/../../data/{name}", env!("CARGO_MANIFEST_DIR"))
    }

    /// Logistic regression on the bundled breast cancer LIBSVM file with
    /// `workers`, and `data_keys` (lines of `[data]`) besides kind and path.
    pub(crate) fn breast_cancer(workers: usize, data_keys: &str) -> Config {
        let path = shared("breast_cancer.libsvm");
        config(&format!(
            "workers = {workers}\n[data]\nkind = \"libsvm\"\npath = \"{path}\"\n{data_keys}[model]\nloss = \"logistic\"\n"
        ))
    }

    pub(crate) fn bad_file(name: &str, kind: &str, text: &str, loss: &str) -> InputError {
        let dir = scratch();
        let path = write(&dir, name, text);
        let c = config(&format!(
            "workers = 1\n[data]\nkind = \"{kind}\"\npath = \"{}\"\n[model]\nloss = \"{loss}\"\n",
            path.display()
        ));
        DataPlan::new(&c, 1)
            .and_then(|p| p.load(&[0]).map(|_| ()))
            .unwrap_err()
    }

    /// A scratch folder, removed when the test ends (passed or failed).
    pub(crate) fn scratch() -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix("gradcode-data-")
            .tempdir()
            .unwrap()
    }

    /// `text` written to `name` in `dir`.
    pub(crate) fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> std::path::PathBuf {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    pub(crate) fn onehot(extra: &str) -> Config {
        config(&format!(
            "workers = 4\n[data]\nkind = \"synthetic-onehot\"\ntrain_samples = 400\ntest_samples = 50\nfeatures = 5000\nnonzeros_per_row = 10\n{extra}[model]\nloss = \"logistic\"\n"
        ))
    }

    pub(crate) trait WithSeed {
        fn clone_with_seed(&self, seed: u64) -> Config;
    }

    impl WithSeed for Config {
        fn clone_with_seed(&self, seed: u64) -> Config {
            let mut c = self.clone();
            c.seed = seed;
            c
        }
    }
}

#[cfg(test)]
mod tests {

    use std::path::Path;

    use super::super::checks::{CHECK_ROWS, check_data_files};
    use super::testing::{bad_file, breast_cancer, config, scratch, shared, write};
    use super::*;
    use crate::config::DataFormat;

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
    fn partition_bounds_do_not_overflow() {
        // rows(p) multiplies p · N before dividing by the partitions: in u128.
        let mut c = config("workers = 4\n[data]\ntrain_samples = 8\nfeatures = 1\n");
        c.data.train_samples = usize::MAX / 2;
        c.data.max_matrix_mib = crate::config::MAX_MATRIX_MIB_LIMIT;
        let plan = DataPlan {
            source: Source::Synthetic(SyntheticSource::Linear {
                seed: 1,
                noise_std: 0.0,
            }),
            features: 1,
            train_samples: c.data.train_samples,
            test_samples: 1,
            partitions: 4,
            storage: Storage::Dense,
            density: 1.0,
            standardization: OnceLock::new(),
            materialised: Arc::default(),
        };
        assert_eq!(plan.rows(3).end, usize::MAX / 2);
        assert_eq!(plan.rows(1).start, plan.rows(0).end);
    }

    #[test]
    fn libsvm_file_loads_split_and_standardised() {
        let c = breast_cancer(4, "test_fraction = 0.25\n");
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
            let values: Vec<f64> = parts
                .iter()
                .flat_map(|p| p.x.to_dense().column(j).to_vec())
                .collect();
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
        // LIBSVM: feature 4 swings between ±1.7e308 (a constant 1.7e308 is
        // fine: the streaming mean stays finite and the spread is 0).
        let large =
            rows(&|i| format!("{i} 1:0.5 4:{}1.7e308\n", if i % 2 == 0 { "-" } else { "" }));
        let e = bad_file("large.libsvm", "libsvm", &large, "least-squares");
        assert!(
            e.to_string()
                .contains("feature 4 cannot be standardised: its "),
            "{e}"
        );
        // The same file unstandardised loads (the values are finite).
        let dir = scratch();
        let path = write(&dir, "spread.csv", &spread);
        let c = config(&format!(
            "workers = 1\n[data]\nkind = \"csv\"\npath = \"{}\"\nstandardize = false\n",
            path.display()
        ));
        assert!(DataPlan::new(&c, 1).unwrap().load(&[0]).is_ok());
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
        let dir = scratch();
        let path = write(&dir, "limit.libsvm", "1 1048576:1\n2 1:1\n3 2:1\n");
        let text = |mib: usize| {
            format!(
                "workers = 1\n[data]\nkind = \"libsvm\"\nformat = \"dense\"\npath = \"{}\"\ntest_fraction = 0.0\nmax_matrix_mib = {mib}\n",
                path.display()
            )
        };
        // Stored sparse (the automatic choice at this density) it takes bytes, not MiB.
        let sparse = DataPlan::new(&config(&text(16).replace("\"dense\"", "\"auto\"")), 1).unwrap();
        assert_eq!(sparse.storage(), Storage::Sparse);
        assert_eq!(sparse.load(&[0]).unwrap()[0].x.values(), 3);
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
    fn a_process_materialises_only_the_partitions_it_loads() {
        // Standardised data: the statistics come from a streaming pass, not from
        // a matrix of the whole training set.
        for format in ["dense", "sparse"] {
            let c = breast_cancer(4, &format!("format = \"{format}\"\n"));
            let plan = DataPlan::new(&c, 4).unwrap();
            assert_eq!(plan.rows_materialised(), 0, "planning reads, holds nothing");
            let parts = plan.load(&[1]).unwrap();
            assert_eq!(parts[0].len(), plan.rows(1).len());
            assert_eq!(plan.rows_materialised(), plan.rows(1).len(), "{format}");
            plan.load_test().unwrap();
            assert_eq!(
                plan.rows_materialised(),
                plan.rows(1).len() + plan.test_samples(),
                "{format}"
            );
        }
    }

    #[test]
    fn a_handed_over_standardization_gives_the_same_partitions() {
        let c = breast_cancer(3, "");
        let master = DataPlan::new(&c, 3).unwrap();
        let stats = master.standardization().unwrap().unwrap().clone();
        assert!(stats.centers(), "dense data is centred");
        let worker = DataPlan::new(&c, 3).unwrap();
        worker.set_standardization(stats.clone()).unwrap();
        assert_eq!(worker.load(&[2]).unwrap(), master.load(&[2]).unwrap());
        let e = worker.set_standardization(stats.clone()).unwrap_err();
        assert!(e.to_string().contains("is set already"), "{e}");
        let fresh = DataPlan::new(&c, 3).unwrap();
        let narrow = Standardization {
            center: vec![0.0; 2],
            scale: vec![1.0; 2],
        };
        let e = fresh.set_standardization(narrow).unwrap_err();
        assert!(e.to_string().contains("has 2 features, the data 30"), "{e}");
        let sparse = breast_cancer(3, "format = \"sparse\"\n");
        let e = DataPlan::new(&sparse, 3)
            .unwrap()
            .set_standardization(stats)
            .unwrap_err();
        assert!(e.to_string().contains("centres sparse data"), "{e}");
    }

    #[test]
    fn sparse_and_dense_loads_of_a_file_agree() {
        // Unstandardised: the same numbers; standardised: sparse is the dense
        // standardisation without the centre, x / std.
        let load = |format: &str, standardize: bool| {
            let c = breast_cancer(
                2,
                &format!("format = \"{format}\"\nstandardize = {standardize}\n"),
            );
            let plan = DataPlan::new(&c, 2).unwrap();
            (plan.load(&[0, 1]).unwrap(), plan.load_test().unwrap(), plan)
        };
        let (dense, dense_test, _) = load("dense", false);
        let (sparse, sparse_test, plan) = load("sparse", false);
        assert_eq!(plan.storage(), Storage::Sparse);
        for (d, s) in dense.iter().zip(&sparse) {
            assert!(matches!(s.x, Features::Sparse(_)));
            assert_eq!(d.x.to_dense(), s.x.to_dense());
            assert_eq!(d.y, s.y);
        }
        assert_eq!(dense_test.x.to_dense(), sparse_test.x.to_dense());
        let (scaled, _, plan) = load("sparse", true);
        let s = plan.standardization().unwrap().unwrap();
        assert!(!s.centers(), "sparse data is not centred");
        for (d, p) in dense.iter().zip(&scaled) {
            let expected = d.x.to_dense() / ndarray::ArrayView1::from(&s.scale);
            let got = p.x.to_dense();
            assert!((&got - &expected).iter().all(|v| v.abs() <= 1e-12));
        }
    }

    #[test]
    fn a_large_mean_offset_is_standardised_accurately() {
        // Feature 1 = 1e8 + noise in [-1, 1): the old naive pass would lose it.
        let rows: Vec<String> = (0..2000)
            .map(|i| {
                let noise = ((i * 7919 + 13) % 2000) as f64 / 1000.0 - 1.0;
                format!("{} 1:{} 2:{}", i % 2, 1e8 + noise, noise)
            })
            .collect();
        let dir = scratch();
        let path = write(&dir, "offset.libsvm", &(rows.join("\n") + "\n"));
        let c = config(&format!(
            "workers = 2\n[data]\nkind = \"libsvm\"\nformat = \"dense\"\npath = \"{}\"\ntest_fraction = 0.0\n",
            path.display()
        ));
        let plan = DataPlan::new(&c, 2).unwrap();
        let parts = plan.load(&[0, 1]).unwrap();
        for j in 0..2 {
            let values: Vec<f64> = parts
                .iter()
                .flat_map(|p| p.x.to_dense().column(j).to_vec())
                .collect();
            let n = values.len() as f64;
            let mean = values.iter().sum::<f64>() / n;
            let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
            assert!(
                mean.abs() < 1e-6 && (var - 1.0).abs() < 1e-6,
                "{j}: {mean} {var}"
            );
        }
        // Both features are the same noise: standardised, they coincide.
        for p in &parts {
            let x = p.x.to_dense();
            for r in x.rows() {
                assert!((r[0] - r[1]).abs() < 1e-6, "{r}");
            }
        }
    }

    #[test]
    fn the_cheap_data_check_reads_the_first_rows_and_the_plan_the_rest() {
        let scratch = scratch();
        let dir = scratch.path();
        let cfg = |path: &Path| {
            config(&format!(
                "workers = 2\n[data]\nkind = \"libsvm\"\npath = \"{}\"\n",
                path.display()
            ))
        };
        let missing = dir.join("missing.libsvm");
        let e = check_data_files(&cfg(&missing), 1).unwrap_err().to_string();
        assert!(
            e.starts_with("data.path = ") && e.contains("missing.libsvm"),
            "{e}"
        );
        let e = check_data_files(&cfg(dir), 1).unwrap_err().to_string();
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
        let e = check_data_files(&cfg(&early), 1).unwrap_err().to_string();
        assert!(
            e.contains("early.libsvm:2: label `yes` is not a number"),
            "{e}"
        );
        let late = write("late.libsvm", CHECK_ROWS + 500, "1 1:zero");
        check_data_files(&cfg(&late), 1).unwrap();
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
        check_data_files(&cfg(&p), 1).unwrap();
        // Synthetic data has nothing to check.
        let choice = check_data_files(&config("workers = 2\n"), 2).unwrap();
        assert_eq!(choice.storage, Storage::Dense);
        // The format the rows read suggest: 1 entry per row of 3 features.
        let choice = check_data_files(&cfg(&p), 1).unwrap();
        assert_eq!(choice.storage, Storage::Sparse, "{}", choice.reason);
        assert!(
            choice.reason.contains("over the first 1000 rows"),
            "{}",
            choice.reason
        );
        let onehot = config("workers = 2\n[data]\nkind = \"synthetic-onehot\"\n");
        assert_eq!(
            check_data_files(&onehot, 1).unwrap().storage,
            Storage::Sparse
        );
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
            assert!(
                (&p.x.to_dense() - &q.x.to_dense())
                    .iter()
                    .all(|v| v.abs() < 1e-9)
            );
            assert_eq!(p.y, q.y);
        }
        assert_eq!(ta.y, tb.y);
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
    fn auto_format_follows_the_density() {
        let dir = scratch();
        let sparse = write(&dir, "auto-sparse.libsvm", "1 1:1\n-1 9:2\n1 3:1\n1 5:1\n");
        let dense = write(
            &dir,
            "auto-dense.libsvm",
            "1 1:1 2:2\n-1 1:2 2:1\n1 2:1\n1 1:3\n",
        );
        let plan = |path: &Path, format: &str| {
            let c = config(&format!(
                "workers = 1\n[data]\nkind = \"libsvm\"\nformat = \"{format}\"\npath = \"{}\"\n",
                path.display()
            ));
            DataPlan::new(&c, 1).unwrap()
        };
        let p = plan(&sparse, "auto");
        assert!((p.density() - 4.0 / 36.0).abs() < 1e-15);
        assert_eq!(p.storage(), Storage::Sparse);
        let p = plan(&dense, "auto");
        assert!((p.density() - 6.0 / 8.0).abs() < 1e-15);
        assert_eq!(p.storage(), Storage::Dense);
        assert_eq!(plan(&dense, "sparse").storage(), Storage::Sparse);
        assert_eq!(plan(&sparse, "dense").storage(), Storage::Dense);
        assert_eq!(
            choose_storage(DataFormat::Auto, DataKind::Csv, Some(0.01)),
            Storage::Dense,
            "CSV is dense text: dense unless asked"
        );
    }
}
