//! Whole traces and snapshots read back through the guarded reader
//! ([`TraceFile`], backend/hdf5/read/): the records of a run or of a simulation trial
//! ([`read_trace`]) and an attribute ([`read_attr_string`]); the snapshot
//! `train --resume` continues from is backend/hdf5/checkpoint.rs's.

use std::path::Path;

use super::TraceFile;
use super::{IterationRecord, TimingEvent, TraceError};

type Result<T> = std::result::Result<T, TraceError>;

/// One trace read back: its records, `/model/theta` and `/timing/` when present.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceData {
    pub workers: usize,
    pub records: Vec<IterationRecord>,
    pub theta: Option<Vec<f64>>,
    /// The timing summary of a training run (empty when absent).
    pub timing: Vec<TimingEvent>,
}

/// Read the trace whose `/iteration/` and `/worker/` groups are under
/// `group_path` of `path` (`"/"` for a run, `"/sim/gc-sc/trial_0"` for a
/// simulation trial), through the guarded reader ([`TraceFile`]). Every
/// dataset of the schema but the optional ones (`/iteration/test_accuracy`,
/// `/worker/overrun_s`) must be there; records of a trace without one get
/// its default (NaN accuracy, 0 overrun). A file that is not such a trace (truncated, corrupted, of another
/// schema) gives an error, never a panic or an allocation larger than the file.
pub fn read_trace(path: &Path, group_path: &str) -> Result<TraceData> {
    let file = TraceFile::open(path)?;
    let columns = file.columns(group_path, file.group_number_attr("/", "workers")?)?;
    let workers = columns.workers;
    let records = columns
        .into_records()
        .map_err(|e| TraceError::Record(format!("{}: {e}", group_path.trim_end_matches('/'))))?;
    let theta = file.model_vector(group_path, "theta")?.map(|(v, _)| v);
    let timing = file.timing(group_path)?.unwrap_or_default();
    Ok(TraceData {
        workers,
        records,
        theta,
        timing,
    })
}

/// A string attribute of the object at `object` (`"/"` for the root), read
/// through the guarded reader; an error when absent.
pub fn read_attr_string(path: &Path, object: &str, name: &str) -> Result<String> {
    TraceFile::open(path)?
        .group_string_attr(object, name)?
        .ok_or_else(|| TraceError::Record(format!("{object} has no attribute {name}")))
}
