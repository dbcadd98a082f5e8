//! Image data sets: IDX files (`data.kind = "idx"`), MNIST-shaped images
//! and their labels, and the binary version of CIFAR-10 (`data.kind =
//! "cifar10"`, [`super::cifar`]), found by path or by a named set under the
//! data set root (`data.set`).
//!
//! The training samples are `data.train_samples` images of the training
//! file(s), the test samples `data.test_samples` images of the test file
//! (each unset: every image of its files, [`image_counts`], filled in by the
//! loader), each chosen by a seeded permutation that every process computes
//! alike (so the partitions mix the classes whatever order the file has).
//! Pixels are scaled to [0, 1] and, with `data.standardize`, normalised per
//! channel with the mean and standard deviation of the training images'
//! pixels. Those statistics come from exact integer sums, computed in the
//! same pass that reads a process's own images, so every process gets the
//! same numbers without any exchange. Every process reads the whole
//! training file(s) (to check them and for the statistics) but keeps only
//! its own partitions' images. Both formats are the same images to
//! everything above this module: items × channels × height × width, one
//! label byte each.

use std::path::{Path, PathBuf};

use ndarray::Array2;
use rand::seq::SliceRandom;

use super::Shape;
use super::cifar;
use super::idx::{idx_header, read_idx};
use crate::config::{Config, DataConfig, DataKind, check_dense_matrix};
use crate::error::InputError;
use crate::rng::{Stream, substream};

/// The environment variable that moves the root of the named data sets
/// (default `/usr/share/datasets`, where Debian's dataset packages install).
pub const DATASET_ROOT_ENV: &str = "GRADCODE_DATASET_ROOT";

const DEFAULT_DATASET_ROOT: &str = "/usr/share/datasets";

/// A named set (`data.set`): a folder under the data set root.
struct NamedSet {
    name: &'static str,
    folder: &'static str,
    /// The `data.kind` that reads it.
    kind: DataKind,
    /// The Debian package that installs it, when one does.
    package: Option<&'static str>,
    /// Where to get it when no package does: what to put in the folder.
    source: &'static str,
    /// idx: the training images, their labels, the test images, their
    /// labels; cifar10: the five training batches, then the test batch.
    files: &'static [&'static str],
}

/// The file names of MNIST and Fashion-MNIST.
const MNIST_FILES: [&str; 4] = [
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
];

const CIFAR_FILES: [&str; 6] = [
    cifar::TRAIN_FILES[0],
    cifar::TRAIN_FILES[1],
    cifar::TRAIN_FILES[2],
    cifar::TRAIN_FILES[3],
    cifar::TRAIN_FILES[4],
    cifar::TEST_FILE,
];

const NAMED_SETS: &[NamedSet] = &[
    NamedSet {
        name: "fashion-mnist",
        folder: "fashion-mnist",
        kind: DataKind::Idx,
        package: Some("dataset-fashion-mnist"),
        source: "",
        files: &MNIST_FILES,
    },
    NamedSet {
        name: "mnist",
        folder: "mnist",
        kind: DataKind::Idx,
        package: None,
        source: "put the four IDX files from the MNIST page (http://yann.lecun.com/exdb/mnist/)",
        files: &MNIST_FILES,
    },
    NamedSet {
        name: "cifar10",
        folder: "cifar10",
        kind: DataKind::Cifar10,
        package: None,
        source: "download the \"CIFAR-10 binary version\" (cifar-10-binary.tar.gz) from https://www.cs.toronto.edu/~kriz/cifar.html and unpack the files of its cifar-10-batches-bin folder",
        files: &CIFAR_FILES,
    },
];

/// The data set root: [`DATASET_ROOT_ENV`], default `/usr/share/datasets`.
fn dataset_root() -> PathBuf {
    std::env::var_os(DATASET_ROOT_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DATASET_ROOT))
}

/// The files a run of image data `d` reads, each with what it is for a
/// resumed run's data fingerprint, whether or not they exist: a named set's
/// as `data.set/NAME` wherever the data set root puts them, a cifar10
/// folder's as `data.path/NAME`. Empty for other kinds, and for idx paths
/// (the fingerprint names those by their keys).
pub fn image_inputs(d: &DataConfig) -> Vec<(String, PathBuf)> {
    image_inputs_under(d, &dataset_root())
}

fn image_inputs_under(d: &DataConfig, root: &Path) -> Vec<(String, PathBuf)> {
    if !d.kind.is_images() {
        return Vec::new();
    }
    if let Some(set) = &d.set {
        let Some(named) = NAMED_SETS.iter().find(|s| s.name == set) else {
            return Vec::new();
        };
        let dir = root.join(named.folder);
        return named
            .files
            .iter()
            .map(|f| (format!("data.set/{f}"), dir.join(f)))
            .collect();
    }
    match (&d.path, d.kind) {
        (Some(folder), DataKind::Cifar10) => CIFAR_FILES
            .iter()
            .map(|f| (format!("data.path/{f}"), Path::new(folder).join(f)))
            .collect(),
        _ => Vec::new(),
    }
}

/// Images (samples × pixels, normalised) and their labels.
pub type Samples = (Array2<f64>, Vec<f64>);

/// Sub-stream indices of the data stream for the two permutations.
const TRAIN_ORDER: u64 = (1 << 56) - 4;
const TEST_ORDER: u64 = (1 << 56) - 5;

/// The four files of an IDX image data set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageFiles {
    pub train_images: PathBuf,
    pub train_labels: PathBuf,
    pub test_images: PathBuf,
    pub test_labels: PathBuf,
}

/// The images of the training and of the test files of `d`, as their IDX
/// headers declare or the sizes of the CIFAR-10 batches say (read without
/// reading the images); `None` when a file cannot be found or its header
/// or size read: the data checks name it then.
pub fn image_counts(d: &DataConfig) -> Option<(usize, usize)> {
    let files = Files::of(d, &dataset_root()).ok()?;
    let limit = d.max_matrix_mib;
    Some((
        files.count(Split::Train, limit).ok()?,
        files.count(Split::Test, limit).ok()?,
    ))
}

/// The named set `set` of `kind` under `root`, its files checked to be there.
fn named_set(d: &DataConfig, set: &str, root: &Path) -> Result<Vec<PathBuf>, InputError> {
    let known: Vec<String> = NAMED_SETS
        .iter()
        .map(|s| format!("{} ({})", s.name, kind_name(s.kind)))
        .collect();
    let Some(named) = NAMED_SETS.iter().find(|s| s.name == set) else {
        return Err(InputError::value(
            "data.set",
            format!("\"{set}\""),
            format!("is not a named data set (known: {})", known.join(", ")),
        ));
    };
    if named.kind != d.kind {
        return Err(InputError::value(
            "data.set",
            format!("\"{set}\""),
            format!(
                "is read by data.kind = \"{}\", not \"{}\"",
                kind_name(named.kind),
                kind_name(d.kind)
            ),
        ));
    }
    let paths_keys = match d.kind {
        DataKind::Cifar10 => "data.path to the folder of its files",
        _ => {
            "data.path, data.labels_path, data.test_path and data.test_labels_path to the IDX files"
        }
    };
    let dir = root.join(named.folder);
    let paths: Vec<PathBuf> = named.files.iter().map(|f| dir.join(f)).collect();
    for p in &paths {
        let problem = match std::fs::metadata(p) {
            Ok(m) if m.is_file() => continue,
            Ok(m) => format!(
                "{} is {}, not a regular file",
                p.display(),
                crate::files::kind_of(&m)
            ),
            Err(_) => format!("{} is missing", p.display()),
        };
        let what = match named.package {
            Some(package) => {
                format!("Debian: apt-get install {package}; elsewhere set {paths_keys}")
            }
            None => format!(
                "no Debian package provides it: {} in {}, or set {paths_keys}",
                named.source,
                dir.display()
            ),
        };
        return Err(InputError::value(
            "data.set",
            format!("\"{set}\""),
            format!("is not installed: {problem} ({what})"),
        ));
    }
    Ok(paths)
}

fn kind_name(kind: DataKind) -> &'static str {
    match kind {
        DataKind::Cifar10 => "cifar10",
        _ => "idx",
    }
}

impl ImageFiles {
    /// The files of `data` (`data.kind = "idx"`): the named set, or the
    /// four paths.
    pub fn of(d: &DataConfig) -> Result<Self, InputError> {
        Self::under(d, &dataset_root())
    }

    /// [`Self::of`] with the data set root `root`.
    fn under(d: &DataConfig, root: &Path) -> Result<Self, InputError> {
        if let Some(set) = &d.set {
            for (field, value) in [
                ("data.path", &d.path),
                ("data.labels_path", &d.labels_path),
                ("data.test_path", &d.test_path),
                ("data.test_labels_path", &d.test_labels_path),
            ] {
                if value.is_some() {
                    return Err(InputError::new(
                        field,
                        format!("is set together with data.set = \"{set}\", which names the files"),
                    ));
                }
            }
            let paths = named_set(d, set, root)?;
            return Ok(Self {
                train_images: paths[0].clone(),
                train_labels: paths[1].clone(),
                test_images: paths[2].clone(),
                test_labels: paths[3].clone(),
            });
        }
        let need = |field: &str, value: &Option<String>| -> Result<PathBuf, InputError> {
            match value {
                Some(p) if !p.trim().is_empty() => Ok(PathBuf::from(p)),
                Some(_) => Err(InputError::value(field, "\"\"", "must name a file")),
                None => Err(InputError::new(
                    field,
                    "is required when data.kind = \"idx\" and data.set is not given",
                )),
            }
        };
        Ok(Self {
            train_images: need("data.path", &d.path)?,
            train_labels: need("data.labels_path", &d.labels_path)?,
            test_images: need("data.test_path", &d.test_path)?,
            test_labels: need("data.test_labels_path", &d.test_labels_path)?,
        })
    }
}

/// The files of a CIFAR-10 data set (`data.kind = "cifar10"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CifarFiles {
    /// The key that names the folder, for errors: `data.path` or `data.set`.
    pub field: &'static str,
    /// `data_batch_1.bin` … `data_batch_5.bin`.
    pub train: Vec<PathBuf>,
    /// `test_batch.bin`.
    pub test: PathBuf,
}

impl CifarFiles {
    /// The files of `data` (`data.kind = "cifar10"`): the named set, or
    /// the folder `data.path`, which must be a folder (the files in it are
    /// checked when they are read).
    pub fn of(d: &DataConfig) -> Result<Self, InputError> {
        Self::under(d, &dataset_root())
    }

    /// [`Self::of`] with the data set root `root`.
    fn under(d: &DataConfig, root: &Path) -> Result<Self, InputError> {
        let (field, mut paths) = if let Some(set) = &d.set {
            if d.path.is_some() {
                return Err(InputError::new(
                    "data.path",
                    format!("is set together with data.set = \"{set}\", which names the folder"),
                ));
            }
            ("data.set", named_set(d, set, root)?)
        } else {
            let folder = match &d.path {
                Some(p) if !p.trim().is_empty() => PathBuf::from(p),
                Some(_) => {
                    return Err(InputError::value("data.path", "\"\"", "must name a folder"));
                }
                None => {
                    return Err(InputError::new(
                        "data.path",
                        "is required when data.kind = \"cifar10\" and data.set is not given: the folder of the CIFAR-10 binary version (data_batch_1.bin … data_batch_5.bin, test_batch.bin)",
                    ));
                }
            };
            let quoted = format!("\"{}\"", folder.display());
            match std::fs::metadata(&folder) {
                Ok(m) if m.is_dir() => {}
                Ok(m) => {
                    return Err(InputError::value(
                        "data.path",
                        quoted,
                        format!(
                            "is {}, not a folder: data.kind = \"cifar10\" reads the folder where {}",
                            crate::files::kind_of(&m),
                            cifar::LAYOUT
                        ),
                    ));
                }
                Err(e) => {
                    return Err(InputError::value(
                        "data.path",
                        quoted,
                        format!("cannot be read: {e} ({})", cifar::LAYOUT),
                    ));
                }
            }
            (
                "data.path",
                CIFAR_FILES.iter().map(|f| folder.join(f)).collect(),
            )
        };
        let test = paths.pop().expect("six files");
        Ok(Self {
            field,
            train: paths,
            test,
        })
    }
}

/// Where the images are, in which format.
#[derive(Debug, Clone)]
enum Files {
    Idx(ImageFiles),
    Cifar(CifarFiles),
}

/// The training or the test images.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Split {
    Train,
    Test,
}

/// The images of one split a reader kept, in file order, with their labels.
struct Kept {
    item_bytes: usize,
    data: Vec<u8>,
    labels: Vec<u8>,
    kept: Vec<usize>,
}

impl Kept {
    fn item(&self, k: usize) -> &[u8] {
        &self.data[k * self.item_bytes..(k + 1) * self.item_bytes]
    }
}

impl Files {
    /// The files of `d` (idx or cifar10) with the data set root `root`.
    fn of(d: &DataConfig, root: &Path) -> Result<Self, InputError> {
        match d.kind {
            DataKind::Cifar10 => CifarFiles::under(d, root).map(Files::Cifar),
            _ => ImageFiles::under(d, root).map(Files::Idx),
        }
    }

    /// The images of `split`, without reading them (an IDX header, the
    /// batch files' sizes), checked against `data.max_matrix_mib`.
    fn count(&self, split: Split, limit: usize) -> Result<usize, InputError> {
        match (self, split) {
            (Files::Idx(f), Split::Train) => Ok(idx_header(&f.train_images, limit)?[0]),
            (Files::Idx(f), Split::Test) => Ok(idx_header(&f.test_images, limit)?[0]),
            (Files::Cifar(f), Split::Train) => cifar::count(f.field, &f.train, limit),
            (Files::Cifar(f), Split::Test) => {
                cifar::count(f.field, std::slice::from_ref(&f.test), limit)
            }
        }
    }

    /// The image file(s) of `split`, for messages.
    fn describe(&self, split: Split) -> String {
        match (self, split) {
            (Files::Idx(f), Split::Train) => f.train_images.display().to_string(),
            (Files::Idx(f), Split::Test) => f.test_images.display().to_string(),
            (Files::Cifar(f), Split::Train) => format!(
                "{} … {}",
                f.train[0].display(),
                f.train[f.train.len() - 1].display()
            ),
            (Files::Cifar(f), Split::Test) => f.test.display().to_string(),
        }
    }

    /// Read the images of `split` whole, keeping those for which
    /// `keep(i, item)` is true, with their labels (for CIFAR-10 checked
    /// against `classes` as they are read; IDX labels were checked by
    /// [`ImageSource::new`]).
    fn read(
        &self,
        split: Split,
        limit: usize,
        classes: usize,
        keep: impl FnMut(usize, &[u8]) -> bool,
    ) -> Result<Kept, InputError> {
        match self {
            Files::Idx(f) => {
                let (images, labels) = match split {
                    Split::Train => (&f.train_images, &f.train_labels),
                    Split::Test => (&f.test_images, &f.test_labels),
                };
                let array = read_idx(images, limit, keep)?;
                let mut is_kept = vec![false; array.items()];
                for &i in &array.kept {
                    is_kept[i] = true;
                }
                let labels = read_idx(labels, limit, |i, _| is_kept.get(i) == Some(&true))?;
                Ok(Kept {
                    item_bytes: array.item_bytes,
                    labels: labels.data,
                    data: array.data,
                    kept: array.kept,
                })
            }
            Files::Cifar(f) => {
                let files = match split {
                    Split::Train => &f.train[..],
                    Split::Test => std::slice::from_ref(&f.test),
                };
                let array = cifar::read_cifar(f.field, files, classes, keep)?;
                Ok(Kept {
                    item_bytes: cifar::IMAGE_BYTES,
                    data: array.data,
                    labels: array.labels,
                    kept: array.kept,
                })
            }
        }
    }
}

/// An image data set planned: which file items are the training and test samples.
#[derive(Debug, Clone)]
pub struct ImageSource {
    files: Files,
    /// (channels, height, width) of every image.
    pub shape: [usize; 3],
    /// Training sample j (in partition order) is item `train_items[j]` of the training file(s).
    train_items: Vec<usize>,
    test_items: Vec<usize>,
    standardize: bool,
    /// `data.max_matrix_mib`: what an IDX header may declare ([`read_idx`]),
    /// what the CIFAR-10 batches' sizes may say ([`cifar::count`]).
    max_matrix_mib: usize,
    /// `model.classes`: CIFAR-10's labels are checked as they are read.
    classes: usize,
}

/// Per-channel normalisation: pixel / 255, minus the mean, over the standard deviation.
#[derive(Debug, Clone, Copy, PartialEq)]
struct ChannelStats {
    /// Σ pixel and Σ pixel² per channel over the training images, exact in integers.
    sum: [u64; MAX_CHANNELS],
    sum_sq: [u64; MAX_CHANNELS],
    pixels_per_channel: u64,
}

const MAX_CHANNELS: usize = 4;

impl ImageSource {
    /// Plan the images of `config` (`data.kind = "idx"` or `"cifar10"`), its
    /// matrices checked against `data.max_matrix_mib`.
    pub(crate) fn plan(config: &Config) -> Result<(Self, Shape), InputError> {
        let d = &config.data;
        let images = Self::new(d, config.seed, config.model.classes)?;
        let shape = Shape {
            features: images.features(),
            train_samples: d.train_samples,
            test_samples: d.test_samples,
            density: 1.0,
        };
        Ok((images, shape))
    }

    /// Plan the set of `d` with `classes` classes. IDX: reads the headers
    /// and the label files (small), checks they agree and every label is a
    /// class. CIFAR-10: the images come from the batch files' sizes (each a
    /// whole number of records), the labels are checked when the files are
    /// read ([`Self::check_files`], the loads). Then that the training and
    /// test matrices fit in `data.max_matrix_mib`. Every header or file
    /// size is checked against its file and `data.max_matrix_mib` first, so
    /// nothing is allocated in proportion to what it declares before it is
    /// known to be within the limit.
    pub fn new(d: &DataConfig, seed: u64, classes: usize) -> Result<Self, InputError> {
        Self::under(d, seed, classes, &dataset_root())
    }

    /// [`Self::new`] with the data set root `root`.
    fn under(d: &DataConfig, seed: u64, classes: usize, root: &Path) -> Result<Self, InputError> {
        let files = Files::of(d, root)?;
        let limit = d.max_matrix_mib;
        let (shape, train_n, test_n) = match &files {
            Files::Idx(f) => idx_counts(f, classes, limit)?,
            Files::Cifar(_) => (
                cifar::SHAPE,
                files.count(Split::Train, limit)?,
                files.count(Split::Test, limit)?,
            ),
        };
        for (field, wanted, available, split) in [
            ("data.train_samples", d.train_samples, train_n, Split::Train),
            ("data.test_samples", d.test_samples, test_n, Split::Test),
        ] {
            if wanted == 0 || wanted > available {
                return Err(InputError::value(
                    field,
                    wanted,
                    format!(
                        "must be in 1..={available} (the images of {})",
                        files.describe(split)
                    ),
                ));
            }
        }
        let features: usize = shape.iter().product();
        check_dense_matrix(
            "data.train_samples",
            "training",
            d.train_samples,
            features,
            limit,
        )?;
        check_dense_matrix("data.test_samples", "test", d.test_samples, features, limit)?;
        Ok(Self {
            train_items: item_order(&files, seed, train_n, d.train_samples, Split::Train)?,
            test_items: item_order(&files, seed, test_n, d.test_samples, Split::Test)?,
            files,
            shape,
            standardize: d.standardize,
            max_matrix_mib: limit,
            classes,
        })
    }

    /// Read both image files to their end (keeping nothing): a truncated or
    /// corrupted file, or a CIFAR-10 label that is not a class, is refused
    /// here, before anything is written, rather than when a worker loads
    /// its partitions. IDX label files were read whole by [`Self::new`].
    pub fn check_files(&self) -> Result<(), InputError> {
        for split in [Split::Train, Split::Test] {
            self.files
                .read(split, self.max_matrix_mib, self.classes, |_, _| false)?;
        }
        Ok(())
    }

    /// Features per sample: channels × height × width.
    pub fn features(&self) -> usize {
        self.shape.iter().product()
    }

    /// The training samples `rows` (indices in partition order) of each
    /// partition in `wanted`, as (pixels, labels), reading the training
    /// file(s) once.
    pub fn load_train(
        &self,
        wanted: &[std::ops::Range<usize>],
    ) -> Result<Vec<Samples>, InputError> {
        let items: Vec<Vec<usize>> = wanted
            .iter()
            .map(|rows| rows.clone().map(|j| self.train_items[j]).collect())
            .collect();
        self.load(Split::Train, &items)
    }

    /// The test samples as (pixels, labels).
    pub fn load_test(&self) -> Result<Samples, InputError> {
        let mut parts = self.load(Split::Test, std::slice::from_ref(&self.test_items))?;
        Ok(parts.remove(0))
    }

    /// Read the images of `split`, keeping the items of each list of
    /// `items` (in that order), normalised; the statistics come from the
    /// training images, in the same pass when `split` is the training set.
    fn load(&self, split: Split, items: &[Vec<usize>]) -> Result<Vec<Samples>, InputError> {
        let channels = self.shape[0];
        let per_channel = self.shape[1] * self.shape[2];
        let limit = self.max_matrix_mib;
        let mut training = vec![false; 0];
        let mut stats = ChannelStats {
            sum: [0; MAX_CHANNELS],
            sum_sq: [0; MAX_CHANNELS],
            pixels_per_channel: 0,
        };
        let add = |stats: &mut ChannelStats, item: &[u8]| {
            for c in 0..channels {
                for &v in &item[c * per_channel..(c + 1) * per_channel] {
                    stats.sum[c] += v as u64;
                    stats.sum_sq[c] += (v as u64) * (v as u64);
                }
            }
            stats.pixels_per_channel += per_channel as u64;
        };
        let is_train = split == Split::Train;
        // The files were planned with their sizes then; one that holds
        // fewer items now is refused rather than indexed past its end.
        let marks = |split: Split, lists: &[&[usize]]| -> Result<Vec<bool>, InputError> {
            let n = self.files.count(split, limit)?;
            let mut marked = vec![false; n];
            for &i in lists.iter().copied().flatten() {
                *marked.get_mut(i).ok_or_else(|| {
                    InputError::new(
                        self.files.describe(split),
                        format!("holds {n} images, fewer than when the data was planned (the files changed)"),
                    )
                })? = true;
            }
            Ok(marked)
        };
        if self.standardize {
            training = marks(Split::Train, &[&self.train_items])?;
            if !is_train {
                self.files
                    .read(Split::Train, limit, self.classes, |i, item| {
                        if training.get(i) == Some(&true) {
                            add(&mut stats, item);
                        }
                        false
                    })?;
            }
        }
        let lists: Vec<&[usize]> = items.iter().map(Vec::as_slice).collect();
        let wanted = marks(split, &lists)?;
        let array = self.files.read(split, limit, self.classes, |i, item| {
            if is_train && self.standardize && training.get(i) == Some(&true) {
                add(&mut stats, item);
            }
            wanted.get(i) == Some(&true)
        })?;
        let (mean, inv_std) = self.normalisation(&stats);
        self.samples_of(split, items, &array, &mean, &inv_std)
    }

    /// The samples of each list of `items` from the images `array` kept
    /// of `split`, each pixel / 255 normalised per channel with `mean` and
    /// `inv_std`.
    fn samples_of(
        &self,
        split: Split,
        items: &[Vec<usize>],
        array: &Kept,
        mean: &[f64],
        inv_std: &[f64],
    ) -> Result<Vec<Samples>, InputError> {
        let per_channel = self.shape[1] * self.shape[2];
        let position: std::collections::HashMap<usize, usize> = array
            .kept
            .iter()
            .enumerate()
            .map(|(k, &i)| (i, k))
            .collect();
        let width = self.features();
        items
            .iter()
            .map(|list| {
                let mut x = Array2::<f64>::zeros((list.len(), width));
                let mut y = Vec::with_capacity(list.len());
                for (r, &i) in list.iter().enumerate() {
                    let k = *position.get(&i).ok_or_else(|| {
                        InputError::new(
                            self.files.describe(split),
                            format!("image {} was not read (the files changed)", i + 1),
                        )
                    })?;
                    let pixels = array.item(k);
                    let row = x.row_mut(r).into_slice().expect("rows are contiguous");
                    for (j, (out, &v)) in row.iter_mut().zip(pixels).enumerate() {
                        let c = j / per_channel;
                        *out = (v as f64 / 255.0 - mean[c]) * inv_std[c];
                    }
                    y.push(array.labels[k] as f64);
                }
                Ok((x, y))
            })
            .collect()
    }

    /// Per channel: the mean and 1 / standard deviation of pixel / 255 over
    /// the training images; 0 and 1 without standardisation (or for a
    /// constant channel, whose deviation is 0).
    fn normalisation(&self, s: &ChannelStats) -> (Vec<f64>, Vec<f64>) {
        let channels = self.shape[0];
        if !self.standardize || s.pixels_per_channel == 0 {
            return (vec![0.0; channels], vec![1.0; channels]);
        }
        let n = s.pixels_per_channel as f64;
        (0..channels)
            .map(|c| {
                let mean = s.sum[c] as f64 / n;
                let var = (s.sum_sq[c] as f64 / n - mean * mean).max(0.0);
                let std = var.sqrt() / 255.0;
                (mean / 255.0, if std > 0.0 { 1.0 / std } else { 1.0 })
            })
            .unzip()
    }
}

/// The shape of the images of IDX files `f` and the number of training
/// and test images, the shapes agreeing and every label a class.
fn idx_counts(
    f: &ImageFiles,
    classes: usize,
    limit: usize,
) -> Result<([usize; 3], usize, usize), InputError> {
    let shape = image_shape(&f.train_images, limit)?;
    let test_shape = image_shape(&f.test_images, limit)?;
    if test_shape != shape {
        return Err(InputError::new(
            f.test_images.display().to_string(),
            format!(
                "holds images of {}x{}x{}, the training file {}x{}x{}",
                test_shape[0], test_shape[1], test_shape[2], shape[0], shape[1], shape[2]
            ),
        ));
    }
    let train_n = check_labels(&f.train_labels, &f.train_images, classes, limit)?;
    let test_n = check_labels(&f.test_labels, &f.test_images, classes, limit)?;
    Ok((shape, train_n, test_n))
}

/// The first `take` of the `n` items of `split` in a seeded order (the
/// sub-stream of the split). n indices of 8 bytes: within
/// data.max_matrix_mib (the header's check), and refused in words where the
/// memory is not there.
fn item_order(
    files: &Files,
    seed: u64,
    n: usize,
    take: usize,
    split: Split,
) -> Result<Vec<usize>, InputError> {
    let index = match split {
        Split::Train => TRAIN_ORDER,
        Split::Test => TEST_ORDER,
    };
    let mut items: Vec<usize> = Vec::new();
    items.try_reserve_exact(n).map_err(|_| {
        InputError::new(
            files.describe(split),
            format!(
                "cannot allocate the order of its {n} items ({} MiB)",
                (n as u128 * 8).div_ceil(1 << 20)
            ),
        )
    })?;
    items.extend(0..n);
    items.shuffle(&mut substream(seed, Stream::Data, index));
    items.truncate(take);
    Ok(items)
}

/// (channels, height, width) of the images of an IDX file: items ×
/// height × width (one channel) or items × channels × height × width.
fn image_shape(path: &Path, max_matrix_mib: usize) -> Result<[usize; 3], InputError> {
    let dims = idx_header(path, max_matrix_mib)?;
    let shape = match dims.as_slice() {
        [_, h, w] => [1, *h, *w],
        [_, c, h, w] if *c <= MAX_CHANNELS => [*c, *h, *w],
        _ => {
            return Err(InputError::new(
                path.display().to_string(),
                format!(
                    "holds an IDX array of sizes {dims:?}; images are items x height x width or items x channels (at most {MAX_CHANNELS}) x height x width"
                ),
            ));
        }
    };
    Ok(shape)
}

/// The number of labels in `labels`, checked: one per image of `images`,
/// each below `classes`.
fn check_labels(
    labels: &Path,
    images: &Path,
    classes: usize,
    max_matrix_mib: usize,
) -> Result<usize, InputError> {
    let name = labels.display().to_string();
    let mut bad: Option<(usize, u8)> = None;
    let array = read_idx(labels, max_matrix_mib, |i, item| {
        if bad.is_none() && item.first().is_some_and(|&l| l as usize >= classes) {
            bad = Some((i, item[0]));
        }
        false
    })?;
    if array.dims.len() != 1 {
        return Err(InputError::new(
            &name,
            format!(
                "holds an IDX array of sizes {:?}; labels are one byte per item",
                array.dims
            ),
        ));
    }
    if let Some((i, l)) = bad {
        return Err(InputError::new(
            &name,
            format!(
                "label {l} of item {} is not below model.classes = {classes}",
                i + 1
            ),
        ));
    }
    let n = idx_header(images, max_matrix_mib)?[0];
    if array.dims[0] != n {
        return Err(InputError::new(
            &name,
            format!(
                "holds {} labels, {} holds {n} images",
                array.dims[0],
                images.display()
            ),
        ));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::cifar::testing::{TEST_IDS, label, pixel, write_folder};
    use crate::learn::idx::write_idx;

    fn data(text: &str) -> DataConfig {
        crate::config::parse(text, "test", &[]).unwrap().config.data
    }

    /// A cifar10 config of the folder `dir`, with `[data]` lines `extra`.
    fn cifar(dir: &Path, extra: &str) -> DataConfig {
        data(&format!(
            "workers = 2\n[data]\nkind = \"cifar10\"\npath = \"{}\"\n{extra}",
            dir.display()
        ))
    }

    /// Every pixel (c, y, x) of a CIFAR-10 record lands at feature
    /// 1024c + 32y + x, scaled to [0, 1], with its label; the images of a
    /// process are those of its rows, from any batch file.
    #[test]
    fn cifar_pixels_and_labels_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        // Batches of 3, 1, 2, 4 and 2 records (any whole number), 5 test records.
        write_folder(dir.path(), [3, 1, 2, 4, 2, 5]);
        let d = cifar(
            dir.path(),
            "train_samples = 12\ntest_samples = 5\nstandardize = false\n",
        );
        let source = ImageSource::new(&d, 7, 10).unwrap();
        assert_eq!(source.shape, [3, 32, 32]);
        assert_eq!(source.features(), 3072);
        let check = |x: &Array2<f64>, y: &[f64]| -> Vec<usize> {
            let mut ids = Vec::new();
            for (row, &label_read) in x.rows().into_iter().zip(y) {
                let id = (row[0] * 255.0).round() as usize;
                assert_eq!(label_read, label(id) as f64, "record {id}");
                for (c, yy, xx) in [(0, 0, 1), (1, 2, 3), (2, 31, 5), (2, 31, 31), (1, 0, 0)] {
                    let j = c * 1024 + yy * 32 + xx;
                    assert_eq!(
                        row[j],
                        pixel(id, c, yy, xx) as f64 / 255.0,
                        "record {id}, pixel ({c}, {yy}, {xx}) at feature {j}"
                    );
                }
                for (j, &v) in row.iter().enumerate() {
                    let (c, yy, xx) = (j / 1024, j % 1024 / 32, j % 32);
                    assert_eq!(v, pixel(id, c, yy, xx) as f64 / 255.0);
                }
                ids.push(id);
            }
            ids
        };
        let parts = source.load_train(&[0..5, 5..12]).unwrap();
        let mut ids: Vec<usize> = parts.iter().flat_map(|(x, y)| check(x, y)).collect();
        ids.sort();
        assert_eq!(
            ids,
            (0..12).collect::<Vec<_>>(),
            "every training record once"
        );
        // Only the rows asked for: the second partition alone.
        let second = source.load_train(std::slice::from_ref(&(5..12))).unwrap();
        assert_eq!(second[0].0, parts[1].0);
        let (x, y) = source.load_test().unwrap();
        let mut ids = check(&x, &y);
        ids.sort();
        assert_eq!(ids, (TEST_IDS..TEST_IDS + 5).collect::<Vec<_>>());
        // A seeded choice of 4 of the 12.
        let some = ImageSource::new(
            &cifar(dir.path(), "train_samples = 4\ntest_samples = 2\n"),
            7,
            10,
        )
        .unwrap();
        assert_eq!(
            some.load_train(std::slice::from_ref(&(0..4))).unwrap()[0]
                .0
                .nrows(),
            4
        );
        assert_eq!(image_counts(&d), Some((12, 5)));
    }

    #[test]
    fn named_sets_not_installed_say_what_to_do() {
        let root = tempfile::tempdir().unwrap();
        let err = |text: &str| {
            let d = data(text);
            let e = ImageSource::under(&d, 1, 10, root.path()).unwrap_err();
            assert_eq!(e.field, "data.set", "{e}");
            e.to_string()
        };
        let idx = "workers = 2\n[data]\nkind = \"idx\"\nset = ";
        let e = err(&format!("{idx}\"mnist\"\n"));
        assert!(
            e.starts_with("data.set = \"mnist\" is not installed: ")
                && e.contains(&format!(
                    "{} is missing",
                    root.path()
                        .join("mnist/train-images-idx3-ubyte.gz")
                        .display()
                ))
                && e.contains("no Debian package provides it")
                && e.contains("the four IDX files from the MNIST page")
                && e.contains(&format!("in {},", root.path().join("mnist").display()))
                && e.contains(
                    "or set data.path, data.labels_path, data.test_path and data.test_labels_path"
                ),
            "{e}"
        );
        assert!(!e.contains("apt-get"), "{e}");
        let e = err(&format!("{idx}\"fashion-mnist\"\n"));
        assert!(e.contains("apt-get install dataset-fashion-mnist"), "{e}");
        let e = err("workers = 2\n[data]\nkind = \"cifar10\"\nset = \"cifar10\"\n");
        assert!(
            e.contains("cifar10/data_batch_1.bin is missing")
                && e.contains("\"CIFAR-10 binary version\"")
                && e.contains("https://www.cs.toronto.edu/~kriz/cifar.html")
                && e.contains("or set data.path to the folder of its files"),
            "{e}"
        );
        assert!(!e.contains("apt-get"), "{e}");
        let e = err(&format!("{idx}\"cifar10\"\n"));
        assert!(
            e.contains("is read by data.kind = \"cifar10\", not \"idx\""),
            "{e}"
        );
        let e = err(&format!("{idx}\"cifar\"\n"));
        assert!(
            e.contains("known: fashion-mnist (idx), mnist (idx), cifar10 (cifar10)"),
            "{e}"
        );
        // A batch that is a folder is named for what it is.
        write_folder(&root.path().join("cifar10"), [1, 1, 1, 1, 1, 1]);
        std::fs::remove_file(root.path().join("cifar10/test_batch.bin")).unwrap();
        std::fs::create_dir(root.path().join("cifar10/test_batch.bin")).unwrap();
        let e = err("workers = 2\n[data]\nkind = \"cifar10\"\nset = \"cifar10\"\n");
        assert!(
            e.contains("test_batch.bin is a folder, not a regular file"),
            "{e}"
        );
    }

    /// `data.set = "mnist"` and `"cifar10"` read their folders under the root.
    #[test]
    fn installed_named_sets_are_read_from_the_root() {
        let root = tempfile::tempdir().unwrap();
        let mnist = root.path().join("mnist");
        std::fs::create_dir(&mnist).unwrap();
        for (i, file) in MNIST_FILES.iter().enumerate() {
            let n = if i < 2 { 6 } else { 3 };
            if i % 2 == 0 {
                let pixels: Vec<u8> = (0..n * 256).map(|k| (k % 251) as u8).collect();
                write_idx(&mnist.join(file), &[n, 16, 16], &pixels, true).unwrap();
            } else {
                let labels: Vec<u8> = (0..n).map(|k| (k % 10) as u8).collect();
                write_idx(&mnist.join(file), &[n], &labels, true).unwrap();
            }
        }
        let d = data(
            "workers = 2\n[data]\nkind = \"idx\"\nset = \"mnist\"\ntrain_samples = 6\ntest_samples = 3\n",
        );
        let source = ImageSource::under(&d, 1, 10, root.path()).unwrap();
        assert_eq!(source.shape, [1, 16, 16]);
        write_folder(&root.path().join("cifar10"), [2, 2, 2, 2, 2, 3]);
        let d = data(
            "workers = 2\n[data]\nkind = \"cifar10\"\nset = \"cifar10\"\ntrain_samples = 10\ntest_samples = 3\n",
        );
        let source = ImageSource::under(&d, 1, 10, root.path()).unwrap();
        assert_eq!(source.shape, [3, 32, 32]);
        source.check_files().unwrap();
        // A set and a folder together are refused.
        let both = data(&format!(
            "workers = 2\n[data]\nkind = \"cifar10\"\nset = \"cifar10\"\npath = \"{}\"\n",
            root.path().display()
        ));
        let e = ImageSource::under(&both, 1, 10, root.path()).unwrap_err();
        assert_eq!(e.field, "data.path", "{e}");
    }

    /// What a resumed run fingerprints: a cifar10 folder's six files, by
    /// `data.path/NAME`; a named set's, by `data.set/NAME` under the root.
    #[test]
    fn the_image_inputs_name_every_file_a_run_reads() {
        let root = Path::new("/datasets");
        let d = cifar(Path::new("/data/cifar"), "");
        let inputs = image_inputs_under(&d, root);
        assert_eq!(inputs.len(), 6);
        assert_eq!(
            inputs[2],
            (
                "data.path/data_batch_3.bin".to_string(),
                PathBuf::from("/data/cifar/data_batch_3.bin")
            )
        );
        assert_eq!(inputs[5].0, "data.path/test_batch.bin");
        let d = data("workers = 2\n[data]\nkind = \"cifar10\"\nset = \"cifar10\"\n");
        let inputs = image_inputs_under(&d, root);
        assert_eq!(
            inputs[0],
            (
                "data.set/data_batch_1.bin".to_string(),
                PathBuf::from("/datasets/cifar10/data_batch_1.bin")
            )
        );
        let d = data("workers = 2\n[data]\nkind = \"idx\"\nset = \"mnist\"\n");
        let inputs = image_inputs_under(&d, root);
        assert_eq!(inputs.len(), 4);
        assert_eq!(
            inputs[3].1,
            PathBuf::from("/datasets/mnist/t10k-labels-idx1-ubyte.gz")
        );
        assert!(image_inputs_under(&data("workers = 2\n"), root).is_empty());
    }
}
