//! Whole traces and snapshots read back through the guarded reader
//! ([`TraceFile`], read.rs): the records of a run or of a simulation trial
//! ([`read_trace`]), an attribute ([`read_attr_string`]), and the snapshot
//! `train --resume` continues from ([`read_snapshot`]).

use std::path::Path;

use super::read::{SlotState, TraceFile};
use super::{IterationRecord, Snapshot, TimingEvent, TraceError};
use gradcode_core::record::{DATASETS, SchemaGroup};

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

/// The snapshot `train --resume` continues from, read without changing the
/// file (opened read only): the committed slot (or, in a trace without
/// slots, `/model/theta` and `/model/previous_theta`), the run's config and
/// seed, every dataset of the schema guarded and holding the rows up to the
/// snapshot. A file that cannot give one is an error naming the rule.
pub fn read_snapshot(path: &Path) -> Result<Snapshot> {
    Ok(snapshot_of(&TraceFile::open(path)?)?.0)
}

/// The snapshot of an open trace, the committed slot (`None` for a trace
/// without slots) and K.
pub(crate) fn snapshot_of(reader: &TraceFile) -> Result<(Snapshot, Option<usize>, usize)> {
    let path = reader.path().to_path_buf();
    let at = || path.display().to_string();
    fn required<T>(at: String, value: Option<T>, name: &str) -> Result<T> {
        value.ok_or_else(|| {
            TraceError::Record(format!(
                "{at} has no root attribute {name}: not a trace of a run"
            ))
        })
    }
    // The version first: a trace of another schema is not read further.
    reader.root()?;
    let workers: u64 = required(at(), reader.group_number_attr("/", "workers")?, "workers")?;
    let seed: u64 = required(at(), reader.group_number_attr("/", "seed")?, "seed")?;
    let config_toml = required(
        at(),
        reader.group_string_attr("/", "config_toml")?,
        "config_toml",
    )?;
    let (committed, iteration, theta, previous_theta) = match reader.snapshot_slot("/")? {
        SlotState::Committed {
            slot,
            iteration,
            theta,
            previous,
        } => (Some(slot), iteration, theta, previous),
        SlotState::Uncommitted => {
            return Err(TraceError::Record(format!(
                "{} has no committed snapshot to resume from (the run was killed while writing its first)",
                at()
            )));
        }
        SlotState::NoSlots => {
            let (theta, iteration) = reader.model_vector("/", "theta")?.ok_or_else(|| {
                TraceError::Record(format!(
                    "{} has no snapshot (/model/theta) to resume from",
                    at()
                ))
            })?;
            let iteration = iteration.ok_or_else(|| {
                TraceError::Record(format!("{}: /model/theta has no attribute iteration", at()))
            })?;
            let previous = match reader.model_vector("/", "previous_theta")? {
                None => theta.clone(),
                Some((p, it)) if it == Some(iteration) && p.len() == theta.len() => p,
                Some((p, it)) => {
                    return Err(TraceError::Record(format!(
                        "{}: /model/theta is of iteration {iteration} with {} parameters, \
                         /model/previous_theta of iteration {it:?} with {}",
                        at(),
                        theta.len(),
                        p.len()
                    )));
                }
            };
            (None, iteration, theta, previous)
        }
    };
    // A snapshot is of a model that was finite (a run stops when it is not).
    for (name, values) in [("theta", &theta), ("previous_theta", &previous_theta)] {
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(TraceError::Record(format!(
                "{}: the snapshot's {name} holds {} at entry {}: not a model a run saves",
                at(),
                values[i],
                i + 1
            )));
        }
    }
    // The guard, on every dataset of the schema; and the rows a resume keeps.
    let found = reader.schema_datasets("/", Some(workers))?;
    let workers = usize::try_from(workers).map_err(|_| {
        TraceError::Record(format!(
            "{}: attribute workers of / = {workers} is too large",
            at()
        ))
    })?;
    for spec in DATASETS {
        let Some(shape) = found.shape(spec) else {
            continue;
        };
        if spec.group == SchemaGroup::Worker && shape.get(1) != Some(&workers) {
            return Err(TraceError::Record(format!(
                "{}: dataset /{} has shape {shape:?}, not one column per worker of the run's {workers}",
                at(),
                spec.path
            )));
        }
        if shape.first().is_none_or(|&rows| (rows as u64) < iteration) {
            return Err(TraceError::Record(format!(
                "{}: dataset /{} has shape {shape:?}, fewer rows than the snapshot's {iteration} iterations",
                at(),
                spec.path
            )));
        }
    }
    Ok((
        Snapshot {
            iteration,
            theta,
            previous_theta,
            config_toml,
            seed,
        },
        committed,
        workers,
    ))
}
