//! The typed run: what a config's values mean for a run, decided once
//! from the config and then passed on as typed values, never remade from
//! the raw config where they are used (issue 40, item 1).
//!
//! - [`Batch`]: `train.batch_size` as the whole partition or a mini-batch,
//!   checked against the partitions once, with the rows a step of a
//!   partition uses;
//! - [`Aggregation`]: `runtime.aggregate` resolved to gather or reduce;
//! - [`RunSpec`]: what `check` and `train` both build with
//!   [`RunSpec::new`], so `check` refuses what `train` refuses.

mod aggregation;
mod batch;

pub use aggregation::Aggregation;
pub use batch::Batch;

use crate::config::Config;
use crate::error::InputError;

/// The decisions of a run that depend on its data: built once from the
/// config and the number of training samples (known after the data is
/// planned, or from `data.train_samples` when no file must be read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunSpec {
    /// The samples of a partition each step's gradient uses.
    pub batch: Batch,
}

impl RunSpec {
    /// The run of `config` on `train_samples` samples in `partitions`
    /// partitions; refuses a `train.batch_size` larger than the smallest
    /// partition ([`Batch::checked`]).
    pub fn new(
        config: &Config,
        train_samples: usize,
        partitions: usize,
    ) -> Result<Self, InputError> {
        Ok(Self {
            batch: Batch::checked(config.train.batch_size, train_samples, partitions)?,
        })
    }
}
