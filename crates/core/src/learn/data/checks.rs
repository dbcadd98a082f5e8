//! The cheap checks made before anything is written: the mini-batch
//! against the partitions, and the data files' first rows.

use super::sources::images::ImageSource;
use super::sources::read::{Scan, scan};
use super::storage::{Storage, choose_storage};
use crate::config::{Config, DataFormat, DataKind, SPARSE_DENSITY_THRESHOLD};
use crate::error::InputError;
use crate::learn::model::memory::NetMemory;
use crate::learn::model::{Input, Model};
use crate::spec::RunSpec;

/// Rows of each data file that [`check_data_files`] reads.
pub const CHECK_ROWS: usize = 1000;

/// The storage `data.format` resolves to, and why, as `check` reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct FormatChoice {
    pub storage: Storage,
    pub reason: String,
    /// The model's one-line description (`Model::describe`), when its input
    /// is known without reading a text file (synthetic and image data).
    pub model: Option<String>,
    /// A network's least memory in one process (the master's and a
    /// worker's floors, [`crate::learn::model::memory`]), when its input is known.
    pub memory: Option<NetMemory>,
    /// The features of a sample, when known without reading a text file.
    pub features: Option<usize>,
}

/// The cheap checks of the data files of `config` (`data.path`,
/// `data.test_path`) and of `train.batch_size` against the partitions
/// ([`RunSpec::new`], as `DataPlan::new` checks it)
/// (when the samples are known without reading a text file), made before
/// anything is written: each file exists, is a
/// file that can be read, and its first [`CHECK_ROWS`] data rows parse
/// (labels, features, the CSV header and width; a shorter file: that it has
/// rows and features). `DataPlan::new` reads the whole files later.
/// Synthetic data has nothing to check. Returns the storage `data.format`
/// gives; with `auto` and a LIBSVM file, as the density of the rows read
/// suggests (train decides on the whole file). `partitions`: the scheme's,
/// for the largest partition a full-batch network's memory check counts.
pub fn check_data_files(config: &Config, partitions: usize) -> Result<FormatChoice, InputError> {
    let d = &config.data;
    let partition_rows = d.train_samples.div_ceil(partitions.max(1));
    // The model must fit the data and the memory: checked here, before
    // anything is written.
    let input = match d.kind {
        DataKind::Idx | DataKind::Cifar10 => {
            let images = ImageSource::new(d, config.seed, config.model.classes)?;
            images.check_files()?;
            Some(Input {
                features: images.features(),
                image: Some(images.shape),
                partition_rows,
            })
        }
        DataKind::SyntheticLinear | DataKind::SyntheticLogistic | DataKind::SyntheticOnehot => {
            Some(Input {
                features: d.features,
                image: None,
                partition_rows,
            })
        }
        DataKind::Libsvm | DataKind::Csv => None,
    };
    // The number of training samples of text files is known when they are
    // read (DataPlan::new builds the run's spec then, with the same check).
    let features = input.map(|i| i.features);
    let (model, memory) = match input {
        Some(input) => {
            let spec = RunSpec::new(config, d.train_samples, partitions)?;
            let model = Model::new(config, input)?;
            let memory = match &model {
                Model::Net(net) => Some(net.memory(spec.batch.memory_rows(partition_rows))),
                Model::Linear { .. } => None,
            };
            (Some(model.describe()), memory)
        }
        None => (None, None),
    };
    let (storage, reason) = match d.kind {
        DataKind::Idx | DataKind::Cifar10 => (Storage::Dense, "images are dense".to_string()),
        _ => check_storage(config)?,
    };
    Ok(FormatChoice {
        storage,
        reason,
        model,
        memory,
        features,
    })
}

fn check_storage(config: &Config) -> Result<(Storage, String), InputError> {
    let d = &config.data;
    let explicit = |storage: Storage| (storage, format!("data.format = \"{}\"", storage.name()));
    if !matches!(d.kind, DataKind::Libsvm | DataKind::Csv) {
        return Ok(match d.format {
            DataFormat::Auto => {
                let storage = choose_storage(d.format, d.kind, None);
                let reason = match storage {
                    Storage::Sparse => "auto: one-hot data is sparse",
                    Storage::Dense => "auto: Gaussian samples are dense",
                };
                (storage, reason.to_string())
            }
            DataFormat::Dense => explicit(Storage::Dense),
            DataFormat::Sparse => explicit(Storage::Sparse),
        });
    }
    let path = d
        .path
        .as_deref()
        .ok_or_else(|| InputError::new("data.path", "is required"))?;
    let mut head: Option<Scan> = None;
    for (field, file) in [
        ("data.path", Some(path)),
        ("data.test_path", d.test_path.as_deref()),
    ] {
        let Some(file) = file else {
            continue;
        };
        check_regular_file(field, file)?;
        let s = scan(d.kind, file, config.model.loss, Some(CHECK_ROWS))?;
        if field == "data.path" {
            head = Some(s);
        }
    }
    let head = head.expect("data.path is scanned");
    Ok(match d.format {
        DataFormat::Auto if d.kind == DataKind::Csv => {
            (Storage::Dense, "auto: CSV data is dense".to_string())
        }
        DataFormat::Auto => {
            let density = head.stored as f64 / (head.rows as f64 * head.features.max(1) as f64);
            let storage = choose_storage(d.format, d.kind, Some(density));
            let (relation, whole) = match storage {
                Storage::Sparse => ("below", head.rows < CHECK_ROWS),
                Storage::Dense => ("not below", head.rows < CHECK_ROWS),
            };
            let rows = if whole {
                "the whole file".to_string()
            } else {
                format!("the first {CHECK_ROWS} rows; train decides on the whole file")
            };
            (
                storage,
                format!(
                    "auto: LIBSVM density {density:.3e} {relation} {SPARSE_DENSITY_THRESHOLD} over {rows}"
                ),
            )
        }
        DataFormat::Dense => explicit(Storage::Dense),
        DataFormat::Sparse => explicit(Storage::Sparse),
    })
}

/// `file`, the value of `field`, is a regular file that can be read.
fn check_regular_file(field: &str, file: &str) -> Result<(), InputError> {
    let quoted = format!("\"{file}\"");
    match std::fs::metadata(file) {
        Err(e) => Err(InputError::value(
            field,
            quoted,
            format!("cannot be read: {e}"),
        )),
        Ok(m) if m.is_dir() => Err(InputError::value(
            field,
            quoted,
            "is a folder, not a data file",
        )),
        Ok(m) if !m.is_file() => Err(InputError::value(
            field,
            quoted,
            format!("is {}, not a regular file", crate::files::kind_of(&m)),
        )),
        Ok(_) => Ok(()),
    }
}
