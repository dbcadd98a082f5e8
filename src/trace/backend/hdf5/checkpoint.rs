//! Checkpointing, in one file: a run's snapshot written atomically into its
//! trace ([`TraceWriter::write_snapshot`]), read back without changing the
//! file ([`read_snapshot`]), and the trace reopened to continue the run
//! from it ([`TraceWriter::resume`]). The session decides when (the
//! [`Checkpoint`](crate::engine::Checkpoint) of [`TraceSink`](crate::trace::TraceSink));
//! this file decides how.
//!
//! Two slots (`SNAPSHOT_SLOTS`) alternate: a snapshot is written into the
//! slot not committed, flushed, and only then named by `/model`'s attribute
//! `snapshot`, so a kill at any point leaves a whole committed snapshot
//! (tests/snapshot_kill.rs).

use std::path::Path;
use std::time::Instant;

use hdf5::types::VarLenUnicode;
use ndarray::ArrayView2;

use super::hdf5_io::{
    GroupWriter, TraceWriter, flush_file, group, scalar_attr, set_scalar_attr, set_string_attr,
    string_attr, write_status,
};
use super::read::{SlotState, TraceFile};
use crate::trace::{
    NO_SNAPSHOT, RunStatus, SNAPSHOT_COMMITTED, SNAPSHOT_SLOTS, Snapshot, TraceError,
};
use gradcode_core::record::{DATASETS, SchemaGroup};

type Result<T> = std::result::Result<T, TraceError>;

impl TraceWriter {
    /// A resumable snapshot after `iteration` completed iterations, written
    /// atomically (see the module doc): the records so far and the slot not
    /// committed (θ, the iterate before it for Nesterov's momentum, the
    /// attribute `iteration`) are written and flushed; then `/model`'s
    /// attribute `snapshot` names that slot and `/model/theta` is rewritten,
    /// flushed again. Killed at any point, the file keeps a whole committed
    /// snapshot (or, before the first commit, none).
    pub fn write_snapshot(
        &mut self,
        iteration: u64,
        theta: &[f64],
        previous_theta: &[f64],
    ) -> Result<()> {
        let d = theta.len();
        if previous_theta.len() != d {
            return Err(TraceError::Record(format!(
                "a snapshot with {d} parameters and a previous iterate of {}",
                previous_theta.len()
            )));
        }
        // Records first: a snapshot never refers to iterations the file lacks.
        self.root.write()?;
        let file = self.file.as_ref().expect("open until close");
        let model = group(file, "model")?;
        let next = self.committed.map_or(0, |c| 1 - c);
        let first = !SNAPSHOT_SLOTS.iter().all(|s| model.link_exists(s));
        if first {
            // Everything a commit touches is created now, before any commit:
            // later snapshots only write values in place.
            for slot in SNAPSHOT_SLOTS {
                if !model.link_exists(slot) {
                    let ds = model
                        .new_dataset::<f64>()
                        .shape((2, d))
                        .create(slot)
                        .map_err(|e| TraceError::hdf5(format!("dataset /model/{slot}"), e))?;
                    string_attr(&ds, "unit", "1")?;
                    string_attr(
                        &ds,
                        "description",
                        "snapshot slot: row 0 θ, row 1 the iterate before it (Nesterov); /model@snapshot names the committed slot",
                    )?;
                    scalar_attr(&ds, "iteration", 0u64)?;
                }
            }
            set_scalar_attr(
                &model,
                SNAPSHOT_COMMITTED,
                self.committed.map_or(NO_SNAPSHOT, |c| c as u64),
            )?;
        }
        let name = SNAPSHOT_SLOTS[next];
        let ctx = || format!("dataset /model/{name}");
        let ds = model
            .dataset(name)
            .map_err(|e| TraceError::hdf5(ctx(), e))?;
        if ds.shape() != [2, d] {
            return Err(TraceError::Record(format!(
                "a snapshot of {d} parameters does not fit /model/{name} of shape {:?}",
                ds.shape()
            )));
        }
        let rows: Vec<f64> = theta.iter().chain(previous_theta).copied().collect();
        let view = ArrayView2::from_shape((2, d), &rows)
            .map_err(|e| TraceError::Record(format!("{}: {e}", ctx())))?;
        ds.write(view).map_err(|e| TraceError::hdf5(ctx(), e))?;
        if let Some(pause) = snapshot_pause() {
            std::thread::sleep(pause);
        }
        ds.attr("iteration")
            .and_then(|a| a.write_scalar(&iteration))
            .map_err(|e| TraceError::hdf5(ctx(), e))?;
        if first && !model.link_exists("theta") {
            self.write_model_vector("theta", "model parameters", iteration, theta)?;
        }
        // The slot is whole on disk before anything names it.
        self.flush()?;
        let file = self.file.as_ref().expect("open until close");
        let model = group(file, "model")?;
        set_scalar_attr(&model, SNAPSHOT_COMMITTED, next as u64)?;
        self.committed = Some(next);
        self.write_model_vector("theta", "model parameters", iteration, theta)?;
        self.flush()
    }

    /// Reopen the trace of an interrupted run to continue it from its last
    /// committed snapshot ([`read_snapshot`]): the records after the
    /// snapshot are cut, the status set back to `running`, and the next
    /// `append` writes the row of iteration `snapshot.iteration`. Everything
    /// is read and checked through the guarded reader ([`TraceFile`])
    /// before anything is cut; a file that breaks a rule is an error naming
    /// the dataset, and is left unchanged. A dataset of the table the file
    /// lacks (an optional one newer than its writer) is added, its rows
    /// before the snapshot the record's default (NaN: not measured).
    pub fn resume(path: &Path) -> Result<(Self, Snapshot)> {
        let reader = TraceFile::open_rw(path)?;
        let (snapshot, committed, workers) = snapshot_of(&reader)?;
        let keep = usize::try_from(snapshot.iteration).map_err(|_| {
            TraceError::Record(format!(
                "{}: the snapshot is of iteration {}, too large",
                path.display(),
                snapshot.iteration
            ))
        })?;
        let file = reader.into_file();
        let root = GroupWriter::open(&file, workers, Some(keep))?;
        // Provenance of this part: a line per resume (the creation's stays).
        let earlier = file
            .attr("resumed")
            .and_then(|a| a.read_scalar::<VarLenUnicode>())
            .map(|v| v.as_str().to_string())
            .unwrap_or_default();
        let line = crate::provenance::resume_line(snapshot.iteration);
        let resumed = if earlier.is_empty() {
            line
        } else {
            format!("{earlier}\n{line}")
        };
        set_string_attr(&file, "resumed", &resumed)?;
        write_status(&file, RunStatus::Running, "")?;
        flush_file(&file, path)?;
        Ok((
            Self {
                file: Some(file),
                path: path.to_path_buf(),
                root,
                last_flush: Instant::now(),
                committed,
            },
            snapshot,
        ))
    }
}

/// Fault injection for tests: `GRADCODE_TEST_SNAPSHOT_PAUSE_MS` (read once)
/// makes every snapshot pause that long between writing a slot's values
/// and its attribute, so that a test's SIGKILL lands inside a snapshot
/// often (tests/snapshot_kill.rs). Unset: no pause.
fn snapshot_pause() -> Option<std::time::Duration> {
    static PAUSE: std::sync::OnceLock<Option<std::time::Duration>> = std::sync::OnceLock::new();
    *PAUSE.get_or_init(|| {
        std::env::var("GRADCODE_TEST_SNAPSHOT_PAUSE_MS")
            .ok()
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|ms| ms.is_finite() && *ms > 0.0 && *ms <= 10_000.0)
            .map(|ms| std::time::Duration::from_secs_f64(ms / 1000.0))
    })
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
