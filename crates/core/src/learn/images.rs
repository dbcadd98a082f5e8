//! Image data sets in IDX files (`data.kind = "idx"`): MNIST-shaped images
//! and their labels, found by path or by a named set that a package installs.
//!
//! The training samples are `data.train_samples` images of the training
//! file, the test samples `data.test_samples` images of the test file (each
//! unset: every image of its file, [`image_counts`], filled in by the loader), each
//! chosen by a seeded permutation that every process computes alike (so the
//! partitions mix the classes whatever order the file has). Pixels are
//! scaled to [0, 1] and, with `data.standardize`, normalised per channel
//! with the mean and standard deviation of the training images' pixels.
//! Those statistics come from exact integer sums, computed in the same pass
//! that reads a process's own images, so every process gets the same numbers
//! without any exchange. Every process reads the whole training file (to
//! check it and for the statistics) but keeps only its own partitions' images.

use std::path::{Path, PathBuf};

use ndarray::Array2;
use rand::seq::SliceRandom;

use super::idx::{idx_header, read_idx};
use crate::config::{DataConfig, check_dense_matrix};
use crate::error::InputError;
use crate::rng::{Stream, substream};

/// The environment variable that moves the root of the named data sets
/// (default `/usr/share/datasets`, where Debian's dataset packages install).
pub const DATASET_ROOT_ENV: &str = "GRADCODE_DATASET_ROOT";

const DEFAULT_DATASET_ROOT: &str = "/usr/share/datasets";

/// Named sets (`data.set`): folder under the root, the Debian package, and
/// the four file names (training images, labels, test images, labels).
const NAMED_SETS: &[(&str, &str, &str, [&str; 4])] = &[(
    "fashion-mnist",
    "fashion-mnist",
    "dataset-fashion-mnist",
    [
        "train-images-idx3-ubyte.gz",
        "train-labels-idx1-ubyte.gz",
        "t10k-images-idx3-ubyte.gz",
        "t10k-labels-idx1-ubyte.gz",
    ],
)];

/// The four files of `folder` under the data set root
/// ([`DATASET_ROOT_ENV`], default `/usr/share/datasets`).
fn set_paths(folder: &str, files: &[&str; 4]) -> Vec<PathBuf> {
    let root = std::env::var_os(DATASET_ROOT_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DATASET_ROOT));
    let dir = root.join(folder);
    files.iter().map(|f| dir.join(f)).collect()
}

/// The files of the named set `set` (`data.set`) where the data set root
/// puts them, each with its name (`train-images-idx3-ubyte.gz`), whether or
/// not they exist; None for a name that is not a named set. A resumed run's
/// data fingerprint covers them as it covers `data.path` and its kin.
pub fn named_set_files(set: &str) -> Option<Vec<(&'static str, PathBuf)>> {
    let (_, folder, _, files) = NAMED_SETS.iter().find(|s| s.0 == set)?;
    Some(
        files
            .iter()
            .copied()
            .zip(set_paths(folder, files))
            .collect(),
    )
}

/// Images (samples × pixels, normalised) and their labels.
pub type Samples = (Array2<f64>, Vec<f64>);

/// Sub-stream indices of the data stream for the two permutations.
const TRAIN_ORDER: u64 = (1 << 56) - 4;
const TEST_ORDER: u64 = (1 << 56) - 5;

/// The four files of an image data set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageFiles {
    pub train_images: PathBuf,
    pub train_labels: PathBuf,
    pub test_images: PathBuf,
    pub test_labels: PathBuf,
}

/// The images of the training and of the test image file of `d`, as their
/// IDX headers declare (read without reading the images); `None` when a file
/// cannot be found or its header read: the data checks name it then.
pub fn image_counts(d: &DataConfig) -> Option<(usize, usize)> {
    let files = ImageFiles::of(d).ok()?;
    let items = |path: &Path| idx_header(path, d.max_matrix_mib).ok()?.first().copied();
    Some((items(&files.train_images)?, items(&files.test_images)?))
}

impl ImageFiles {
    /// The files of `data`: the named set, or the four paths.
    pub fn of(d: &DataConfig) -> Result<Self, InputError> {
        if let Some(set) = &d.set {
            let names: Vec<&str> = NAMED_SETS.iter().map(|s| s.0).collect();
            let Some((_, folder, package, files)) = NAMED_SETS.iter().find(|s| s.0 == set) else {
                return Err(InputError::value(
                    "data.set",
                    format!("\"{set}\""),
                    format!("is not a named data set (known: {})", names.join(", ")),
                ));
            };
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
            let paths = set_paths(folder, files);
            if let Some(missing) = paths.iter().find(|p| !p.is_file()) {
                return Err(InputError::value(
                    "data.set",
                    format!("\"{set}\""),
                    format!(
                        "is not installed: {} is missing (Debian: apt-get install {package}; elsewhere set data.path, data.labels_path, data.test_path and data.test_labels_path to the IDX files)",
                        missing.display()
                    ),
                ));
            }
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

/// An image data set planned: which file items are the training and test samples.
#[derive(Debug, Clone)]
pub struct ImageSource {
    files: ImageFiles,
    /// (channels, height, width) of every image.
    pub shape: [usize; 3],
    /// Training sample j (in partition order) is item `train_items[j]` of the training file.
    train_items: Vec<usize>,
    test_items: Vec<usize>,
    standardize: bool,
    /// `data.max_matrix_mib`: what an IDX header may declare ([`read_idx`]).
    max_matrix_mib: usize,
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
    /// Plan the set of `d` with `classes` classes: reads the headers and the
    /// label files (small), checks they agree and every label is a class,
    /// and that the training and test matrices fit in `data.max_matrix_mib`.
    /// Every header is checked against its file and `data.max_matrix_mib`
    /// first, so nothing is allocated in proportion to what a header
    /// declares before it is known to be within the limit.
    pub fn new(d: &DataConfig, seed: u64, classes: usize) -> Result<Self, InputError> {
        let files = ImageFiles::of(d)?;
        let limit = d.max_matrix_mib;
        let shape = image_shape(&files.train_images, limit)?;
        let test_shape = image_shape(&files.test_images, limit)?;
        if test_shape != shape {
            return Err(InputError::new(
                files.test_images.display().to_string(),
                format!(
                    "holds images of {}x{}x{}, the training file {}x{}x{}",
                    test_shape[0], test_shape[1], test_shape[2], shape[0], shape[1], shape[2]
                ),
            ));
        }
        let train_n = check_labels(&files.train_labels, &files.train_images, classes, limit)?;
        let test_n = check_labels(&files.test_labels, &files.test_images, classes, limit)?;
        for (field, wanted, available, file) in [
            (
                "data.train_samples",
                d.train_samples,
                train_n,
                &files.train_images,
            ),
            (
                "data.test_samples",
                d.test_samples,
                test_n,
                &files.test_images,
            ),
        ] {
            if wanted == 0 || wanted > available {
                return Err(InputError::value(
                    field,
                    wanted,
                    format!(
                        "must be in 1..={available} (the images of {})",
                        file.display()
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
        // n indices of 8 bytes: within data.max_matrix_mib (the header's
        // check), and refused in words where the memory is not there.
        let order = |n: usize, index: u64, take: usize, file: &Path| {
            let mut items: Vec<usize> = Vec::new();
            items.try_reserve_exact(n).map_err(|_| {
                InputError::new(
                    file.display().to_string(),
                    format!(
                        "cannot allocate the order of its {n} items ({} MiB)",
                        (n as u128 * 8).div_ceil(1 << 20)
                    ),
                )
            })?;
            items.extend(0..n);
            items.shuffle(&mut substream(seed, Stream::Data, index));
            items.truncate(take);
            Ok::<_, InputError>(items)
        };
        Ok(Self {
            train_items: order(train_n, TRAIN_ORDER, d.train_samples, &files.train_images)?,
            test_items: order(test_n, TEST_ORDER, d.test_samples, &files.test_images)?,
            files,
            shape,
            standardize: d.standardize,
            max_matrix_mib: limit,
        })
    }

    /// Read both image files to their end (keeping nothing): a truncated or
    /// corrupted file is refused here, before anything is written, rather
    /// than when a worker loads its partitions. The label files were read
    /// whole by [`Self::new`].
    pub fn check_files(&self) -> Result<(), InputError> {
        read_idx(&self.files.train_images, self.max_matrix_mib, |_, _| false)?;
        read_idx(&self.files.test_images, self.max_matrix_mib, |_, _| false)?;
        Ok(())
    }

    /// Features per sample: channels × height × width.
    pub fn features(&self) -> usize {
        self.shape.iter().product()
    }

    /// The training samples `rows` (indices in partition order) of each
    /// partition in `wanted`, as (pixels, labels), reading the training
    /// file once.
    pub fn load_train(
        &self,
        wanted: &[std::ops::Range<usize>],
    ) -> Result<Vec<Samples>, InputError> {
        let items: Vec<Vec<usize>> = wanted
            .iter()
            .map(|rows| rows.clone().map(|j| self.train_items[j]).collect())
            .collect();
        self.load(&self.files.train_images, &self.files.train_labels, &items)
    }

    /// The test samples as (pixels, labels).
    pub fn load_test(&self) -> Result<Samples, InputError> {
        let mut parts = self.load(
            &self.files.test_images,
            &self.files.test_labels,
            std::slice::from_ref(&self.test_items),
        )?;
        Ok(parts.remove(0))
    }

    /// Read `images`, keeping the items of each list of `items` (in that
    /// order), normalised; the statistics come from the training images, in
    /// the same pass when `images` is the training file.
    fn load(
        &self,
        images: &Path,
        labels: &Path,
        items: &[Vec<usize>],
    ) -> Result<Vec<Samples>, InputError> {
        let channels = self.shape[0];
        let per_channel = self.shape[1] * self.shape[2];
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
        let is_train_file = images == self.files.train_images;
        if self.standardize {
            let n = idx_header(&self.files.train_images, self.max_matrix_mib)?[0];
            training = vec![false; n];
            for &i in &self.train_items {
                training[i] = true;
            }
            if !is_train_file {
                read_idx(&self.files.train_images, self.max_matrix_mib, |i, item| {
                    if training[i] {
                        add(&mut stats, item);
                    }
                    false
                })?;
            }
        }
        let mut wanted = vec![false; idx_header(images, self.max_matrix_mib)?[0]];
        for list in items {
            for &i in list {
                wanted[i] = true;
            }
        }
        let array = read_idx(images, self.max_matrix_mib, |i, item| {
            if is_train_file && self.standardize && training[i] {
                add(&mut stats, item);
            }
            wanted[i]
        })?;
        let label_bytes = read_idx(labels, self.max_matrix_mib, |i, _| wanted[i])?;
        let (mean, inv_std) = self.normalisation(&stats);
        let position: std::collections::HashMap<usize, usize> = array
            .kept
            .iter()
            .enumerate()
            .map(|(k, &i)| (i, k))
            .collect();
        let width = self.features();
        Ok(items
            .iter()
            .map(|list| {
                let mut x = Array2::<f64>::zeros((list.len(), width));
                let mut y = Vec::with_capacity(list.len());
                for (r, &i) in list.iter().enumerate() {
                    let k = position[&i];
                    let pixels = array.item(k);
                    let row = x.row_mut(r).into_slice().expect("rows are contiguous");
                    for (j, (out, &v)) in row.iter_mut().zip(pixels).enumerate() {
                        let c = j / per_channel;
                        *out = (v as f64 / 255.0 - mean[c]) * inv_std[c];
                    }
                    y.push(label_bytes.item(k)[0] as f64);
                }
                (x, y)
            })
            .collect())
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
