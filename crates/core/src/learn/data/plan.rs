//! The data plan: where the data comes from, which rows each partition
//! holds, and loading them (generated, read from files or images),
//! standardised with statistics of the training rows. Each kind of data has
//! its source in [`super::sources`]; the plan dispatches to it.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

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
use crate::spec::RunSpec;

/// Where the data comes from, with everything needed to produce any partition.
#[derive(Debug, Clone)]
pub struct DataPlan {
    source: Source,
    features: usize,
    train_samples: usize,
    test_samples: usize,
    partitions: usize,
    /// The run's decisions that depend on the samples (the batch, checked
    /// against the partitions), built once here.
    spec: RunSpec,
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
        let spec = RunSpec::new(config, train_samples, partitions)?;
        Ok(Self {
            source,
            features,
            train_samples,
            test_samples,
            partitions,
            spec,
            storage: choose_storage(d.format, d.kind, Some(density)),
            density,
            standardization: OnceLock::new(),
            materialised: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// The run of this data: what [`RunSpec::new`] made of the config and
    /// the training samples.
    pub fn spec(&self) -> RunSpec {
        self.spec
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
    use super::testing::{breast_cancer, config, scratch};
    use super::*;

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
            spec: RunSpec::new(&c, c.data.train_samples, 4).unwrap(),
            storage: Storage::Dense,
            density: 1.0,
            standardization: OnceLock::new(),
            materialised: Arc::default(),
        };
        assert_eq!(plan.rows(3).end, usize::MAX / 2);
        assert_eq!(plan.rows(1).start, plan.rows(0).end);
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
}
