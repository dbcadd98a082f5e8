//! Traces: one record per iteration, written to HDF5 with a fixed schema.
//!
//! The record types here are plain data and build without HDF5; the writer
//! and reader ([`TraceWriter`], [`SimTraceWriter`], [`TraceFile`],
//! [`read_trace`]) are the backend's ([`backend`]), which without the
//! `hdf5` feature opens and creates nothing. The per-iteration datasets (the
//! `/iteration/` and `/worker/` lines below) are one table,
//! [`gradcode_core::record::DATASETS`], from which the record, the writer,
//! the reader and the summary's columns are derived; tests check that this
//! list names every dataset of the table with its type and shape, and that
//! the README names them. A new dataset is one line of the table, marked
//! `optional` so that older traces still give records. The schema:
//!
//! ```text
//! /                       attributes scheme, workers, config_toml, gradcode_version, trace_schema, seed, status, status_reason
//! /iteration/duration_s          f64 [iterations]            wall (or emulated) time of the iteration: send of θ to updated θ
//! /iteration/decodable_s         f64 [iterations]            send of θ until a decodable set arrived (simulation: = duration_s; optional)
//! /iteration/decode_s            f64 [iterations]            time spent decoding (NaN: not measured)
//! /iteration/recovered_fraction  f64 [iterations]            share of partitions whose gradient was recovered
//! /iteration/decode_error        f64 [iterations]            ‖a·B_S − 1‖₂: the decoded combination's distance from the full gradient sum (optional)
//! /iteration/messages_used       u64 [iterations]            messages with a non-zero decoding weight
//! /iteration/messages_received   u64 [iterations]            messages received by the end of the iteration
//! /iteration/stale_dropped       u64 [iterations]            results of older iterations received and dropped
//! /iteration/train_loss          f64 [iterations]            objective over all the training data; NaN when not evaluated
//! /iteration/batch_loss          f64 [iterations]            objective over the samples the update used (the recovered partitions' batches), every iteration (optional)
//! /iteration/batch_accuracy      f64 [iterations]            share of those samples the training passes predicted correctly (networks), every iteration (optional)
//! /iteration/test_loss           f64 [iterations]            test objective; NaN when not evaluated
//! /iteration/test_accuracy       f64 [iterations]            share of test samples classified correctly when test_loss is (networks); NaN otherwise (optional)
//! /iteration/elapsed_s           f64 [iterations]            seconds since the run started, at the end of the iteration (simulation: running sum of duration_s; optional)
//! /worker/finish_s               f64 [iterations, workers]   arrival of the worker's last message received in time, NaN if none
//! /worker/straggling             u8  [iterations, workers]   1 = straggling this iteration
//! /worker/cluster                i64 [iterations, workers]   1-based cluster this iteration, -1 when unclustered
//! /worker/used                   u8  [iterations, workers]   1 = a message of the worker has a non-zero decoding weight
//! /worker/overrun_s              f64 [iterations, workers]   emulation: how far the real work ran past the sampled time (0 on time; optional)
//! /worker/message_bytes          f64 [iterations, workers]   train: bytes of the results received from the worker in time (headers and vectors); NaN if none, in simulation (optional)
//! /worker/compute_s              f64 [iterations, workers]   train: compute seconds the header of its last result received in time reports; NaN if none, in simulation (optional)
//! /worker/received_s             f64 [iterations, workers]   train: when that result's vector had arrived whole; NaN if none or not received before the decode, in simulation (optional)
//! /model                         attribute snapshot          train: the committed snapshot slot (0 or 1; 2^64 - 1 before the first)
//! /model/theta                   f64 [d]                     parameters (attribute `iteration`: completed iterations)
//! /model/snapshot_0              f64 [2, d]                  train snapshot slot: θ and the iterate before it (Nesterov), attribute `iteration`
//! /model/snapshot_1              f64 [2, d]                  the other slot, written in turn
//! /model/previous_theta          f64 [d]                     traces of gradcode before the slots: the iterate before theta (read by --resume)
//! /timing/{event,total_s,count}  [events]                    train: named timing events of the master (like PETSc's -log_view)
//! (dimension scales)            u64                         HDF5 dimension scales: /iteration/iteration and /worker/iteration
//!                                                            [iterations] = 1, 2, ... (scale `iteration`, dimension 0 of every
//!                                                            dataset of the two groups), /worker/worker [workers] = 1..K
//!                                                            (scale `worker`, dimension 1 of every /worker/ dataset)
//! ```
//!
//! `status` is `running` from the moment the trace is created (or a run is
//! resumed), then `completed`, `interrupted` (a signal; resumable) or
//! `failed`, with a one-line `status_reason` ([`RunStatus`]); a trace still
//! `running` that no process has open is the trace of a run that died
//! (SIGKILL, a crash, a full disk). A new trace is built under a temporary
//! name in its folder and renamed into place once its root attributes and
//! empty datasets are flushed; an existing file is replaced (`--force`)
//! only when no process holds its HDF5 lock, and is otherwise left
//! untouched ([`place`]).
//!
//! **Snapshots** (`train`, every `output.snapshot_every` iterations, at the
//! end, on a signal) are atomic: the records so far and θ with the iterate
//! before it go into the slot not committed (`/model/snapshot_0` or `_1`,
//! attribute `iteration`), the file is flushed, and only then does the
//! attribute `snapshot` of `/model` name that slot (with `/model/theta`,
//! the last model for readers, rewritten), flushed again. A process killed
//! at any point leaves the committed slot whole: `train --resume` reads
//! that slot (a file without slots: `/model/theta` and
//! `/model/previous_theta`) and continues bit for bit, or refuses a file
//! it cannot read.
//!
//! Column k of a `/worker/` dataset is worker k + 1. Every dataset carries a
//! `unit` attribute (`s`, `1` for fractions and flags, `count`, `id`) and a
//! `description`. A simulation trace (`gradcode simulate --out`) holds one
//! such trace per compared scheme and trial at `/sim/<scheme>/trial_<k>/`
//! (k = 0.., the trial's `/iteration/` and `/worker/` groups, no `/model/`);
//! `/sim/<scheme>` has the attributes scheme, trials, iterations and
//! `model_time_unit_s`: simulated model time is converted to seconds with
//! `straggler.time_unit_ms`, as the MPI runtime's emulation does.
//!
//! Datasets are chunked and resizable, and not compressed. Records are
//! buffered and written, then the file flushed, at the first append at least
//! [`FLUSH_INTERVAL`] after the previous flush (so at most once per
//! iteration and at most once per second), and on `flush` and `close`: a
//! killed job leaves a readable file with every iteration up to the last flush.
//! Faster than that, every 4096 buffered rows are written without a flush. A
//! file being written has HDF5's caches bounded (2 MiB of metadata, 64 KiB of
//! chunks per dataset), so the writer's memory stays flat however many
//! iterations it records (`scripts/bench-soak.sh`).
//!
//! Every read of a trace file (`inspect`, `train --resume`, [`read_trace`])
//! goes through one guarded reader, [`TraceFile`]: a dataset's shape and
//! type are checked against the schema and its claimed size against the
//! file's size before it is read (see its module, `backend/hdf5/read.rs`).

pub use gradcode_core::record::{
    DATASETS, DatasetSpec, ElementType, IterationRecord, Presence, SchemaGroup, TimingEvent,
};

/// The HDF5 seam: the writers, the guarded reader and snapshots with HDF5,
/// refusals without it (the only code that knows which).
pub mod backend;
pub use backend::{SimTraceWriter, TraceFile, TraceWriter, read_snapshot};

/// What a trace file holds, as the reader gives it back.
mod contents;
pub use contents::{ExtraDataset, ExtraGroup, ModelInfo, RootInfo, SimScheme};

mod load;
pub use load::{TraceData, read_attr_string, read_trace};

/// Creating a trace file without harming another (locks, temporary name, rename).
pub mod place;

/// The one factory of a run's trace: an observer and a checkpoint.
pub mod sink;
pub use sink::{Target, TraceSink};

/// Summaries of traces for `gradcode inspect` (pure, no HDF5).
pub mod summary;

/// Reading an untrusted trace in a child process with a deadline.
pub mod probe;

/// When this process is the trace probe's child (`gradcode
/// <probe::SUBCOMMAND> FILE`, not a command a user runs), its exit status
/// (never without HDF5).
pub fn probe_child() -> Option<std::process::ExitCode> {
    backend::probe_child()
}

/// The HDF5 library's version, or "none" without the `hdf5` feature.
pub fn hdf5_library() -> String {
    backend::library()
}

/// The two kinds of file the trace writers make (plain data: `compare`
/// names them without HDF5 too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceKind {
    /// One run (`gradcode train --out`): `/iteration/`, `/worker/`, `/model/` at the root.
    Train,
    /// `gradcode simulate --out`: `/sim/<scheme>/trial_<k>/`.
    Simulation,
}

mod report;
pub use report::{Report, SchemeReport, TrialReport};

/// Where a trace goes: `--out` (the flag), else `output.trace`, else a
/// new name ([`default_trace_name`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracePath {
    pub path: std::path::PathBuf,
    /// `--out` or `output.trace`: what an error names.
    pub field: &'static str,
    /// `--force`: an existing file may be replaced (when no process has it open).
    pub force: bool,
    /// The name was made for this run (neither `--out` nor `output.trace`
    /// given): when another run takes it first, the next free one is taken.
    pub generated: bool,
}

/// The folder of the traces named by [`default_trace_name`].
pub const DEFAULT_TRACE_FOLDER: &str = "results";

/// A new trace name for a run of `stem` (the scheme kind of a training run,
/// `simulate` for a simulation) at `time`: `results/<stem>-<UTC time
/// stamp>.h5` (`results/gc-dc-20261126T190312Z.h5`), with `-2`, `-3`, ...
/// before `.h5` when that name is taken (a file, a folder, anything) or
/// `taken` (names another writer of this process claimed).
pub fn default_trace_name(
    stem: &str,
    time: std::time::SystemTime,
    taken: &[std::path::PathBuf],
) -> std::path::PathBuf {
    // RFC 3339 `2026-11-26T19:03:12Z` without its separators.
    let stamp: String = humantime::format_rfc3339_seconds(time)
        .to_string()
        .chars()
        .filter(|c| !matches!(c, '-' | ':'))
        .collect();
    let stem: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let folder = std::path::Path::new(DEFAULT_TRACE_FOLDER);
    (1u64..)
        .map(|n| match n {
            1 => folder.join(format!("{stem}-{stamp}.h5")),
            n => folder.join(format!("{stem}-{stamp}-{n}.h5")),
        })
        .find(|p| std::fs::symlink_metadata(p).is_err() && !taken.contains(p))
        .expect("some suffix is free")
}

/// The trace path of a run (`train`) or simulation (`simulate --out`),
/// checked before any work starts, with nothing created or changed: `out`
/// (the `--out` flag), else `output.trace`, else a new name from
/// `default_stem` and the time ([`default_trace_name`]); never anything but a
/// regular file, nor one of the command's `inputs` ([`place::check_target`]);
/// an existing file only with `force`, and only when no process has it open
/// (HDF5's lock); a folder in which a file can be created (probed with a
/// file created and removed at once; a missing folder is created with the
/// trace, see [`place`]).
pub fn trace_path(
    config: &crate::config::Config,
    out: Option<&std::path::Path>,
    force: bool,
    inputs: &[place::Input],
    default_stem: &str,
) -> Result<TracePath, crate::error::InputError> {
    use crate::error::InputError;
    use std::path::PathBuf;
    let (field, path, generated) = match (out, &config.output.trace) {
        (Some(p), _) => ("--out", p.to_path_buf(), false),
        (None, Some(t)) => ("output.trace", PathBuf::from(t), false),
        (None, None) => (
            "output.trace",
            default_trace_name(default_stem, std::time::SystemTime::now(), &[]),
            true,
        ),
    };
    // The lock is only probed here; it is taken when the trace is created.
    place::check_output(&path, force, inputs).map_err(|e| InputError::new(field, e))?;
    Ok(TracePath {
        path,
        field,
        force,
        generated,
    })
}

/// How a run stands, as its trace records it (root attributes `status` and
/// `status_reason`): `running` from the moment the trace is created (or a
/// run resumed) until the writer ends it. A trace whose writer died (SIGKILL,
/// a crash, a full disk) keeps `running` after no process has it open, which
/// `inspect` reports as such.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    Running,
    Completed,
    /// Stopped by a signal (SIGTERM, SIGINT); resumable from its snapshot.
    Interrupted,
    /// Stopped by an error (the reason says which).
    Failed,
}

impl RunStatus {
    /// The value of the attribute `status`.
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Completed => "completed",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => "failed",
        }
    }
}

/// The one-line reason stored with a status: whitespace runs joined into
/// single spaces, at most [`REASON_CHARS`] characters.
pub fn status_reason(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(REASON_CHARS) {
        Some((cut, _)) => format!("{}...", &line[..cut]),
        None => line,
    }
}

/// The version of the trace schema this gradcode writes and reads (root
/// attribute `trace_schema`). A trace without one was written by gradcode
/// 0.1 before the attribute existed, and is schema 1 when its
/// `gradcode_version` is 0.1.x; any other trace (a newer schema, another
/// version, garbage) is refused by every reader and by resume.
pub const TRACE_SCHEMA: u64 = 1;

/// Whether a trace with these root attributes is one this gradcode reads:
/// `Err` (in words) when not.
pub fn check_schema(trace_schema: Option<u64>, gradcode_version: &str) -> Result<(), String> {
    match trace_schema {
        Some(TRACE_SCHEMA) => Ok(()),
        Some(other) => Err(format!(
            "trace schema {other} (written by gradcode {gradcode_version}); this gradcode {} reads schema {TRACE_SCHEMA}",
            env!("CARGO_PKG_VERSION")
        )),
        None if gradcode_version.split('.').take(2).eq(["0", "1"])
            && gradcode_version.split('.').count() == 3
            && gradcode_version
                .split('.')
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())) =>
        {
            Ok(())
        }
        None => Err(format!(
            "written by gradcode {:?} without a trace_schema attribute: not a trace this gradcode {} reads",
            status_reason(gradcode_version),
            env!("CARGO_PKG_VERSION")
        )),
    }
}

/// The longest reason stored with a status, in characters.
pub const REASON_CHARS: usize = 400;

/// `/model/snapshot_0`, `/model/snapshot_1`: the two snapshot slots, written
/// in turn; the attribute [`SNAPSHOT_COMMITTED`] of `/model` names the one
/// a resume reads.
pub const SNAPSHOT_SLOTS: [&str; 2] = ["snapshot_0", "snapshot_1"];

/// The attribute of `/model` naming the committed snapshot slot (0 or 1;
/// [`NO_SNAPSHOT`] before the first commit).
pub const SNAPSHOT_COMMITTED: &str = "snapshot";

/// The value of [`SNAPSHOT_COMMITTED`] before a snapshot is committed.
pub const NO_SNAPSHOT: u64 = u64::MAX;

/// Records are written and the file flushed at most this often (and at most once per iteration).
pub const FLUSH_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// What an interrupted run needs to continue: the iterate after `iteration`
/// completed iterations, the one before it, and the run's resolved config.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub iteration: u64,
    pub theta: Vec<f64>,
    pub previous_theta: Vec<f64>,
    pub config_toml: String,
    pub seed: u64,
}

/// The root attributes of a trace (`gradcode_version` is added by the writer).
#[derive(Debug, Clone, PartialEq)]
pub struct TraceMeta {
    /// `scheme.kind` (a simulation trace: the compared schemes, comma separated).
    pub scheme: String,
    pub workers: usize,
    /// The resolved config (`Config::to_toml`).
    pub config_toml: String,
    pub seed: u64,
}

/// Failures of trace I/O.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The HDF5 library failed; `context` says on what.
    #[error("HDF5 trace {context}: {message}")]
    Hdf5 { context: String, message: String },
    /// A record does not fit the trace (e.g. its worker count).
    #[error("trace record: {0}")]
    Record(String),
    /// The trace file cannot be put in place (it exists, is in use, its
    /// folder cannot be written); the message names the file.
    #[error("{0}")]
    Place(String),
    /// This build cannot read or write traces (it has no HDF5).
    #[error("{0}")]
    Unsupported(#[from] backend::Unsupported),
}

#[cfg(test)]
mod tests {
    use super::{DATASETS, SchemaGroup};

    #[test]
    fn default_trace_names_have_the_scheme_and_a_utc_stamp_and_avoid_taken_ones() {
        use std::path::PathBuf;
        use std::time::{Duration, UNIX_EPOCH};
        // 2026-11-26T19:03:12Z.
        let t = UNIX_EPOCH + Duration::from_secs(1_795_719_792);
        let first = super::default_trace_name("gc-dc", t, &[]);
        assert_eq!(first, PathBuf::from("results/gc-dc-20261126T190312Z.h5"));
        let second = super::default_trace_name("gc-dc", t, std::slice::from_ref(&first));
        assert_eq!(second, PathBuf::from("results/gc-dc-20261126T190312Z-2.h5"));
        let third = super::default_trace_name("gc-dc", t, &[first, second]);
        assert_eq!(third, PathBuf::from("results/gc-dc-20261126T190312Z-3.h5"));
        // Nothing but letters, digits, `-` and `_` from the stem.
        let odd = super::default_trace_name("a/b c", t, &[]);
        assert_eq!(odd, PathBuf::from("results/a_b_c-20261126T190312Z.h5"));
    }

    /// The lines of the schema block of this module's doc.
    fn doc_schema_lines() -> Vec<String> {
        let source = include_str!("mod.rs");
        source
            .lines()
            .filter_map(|l| l.strip_prefix("//! "))
            .skip_while(|l| *l != "```text")
            .skip(1)
            .take_while(|l| *l != "```")
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn the_module_doc_lists_every_dataset_of_the_table_with_its_type_and_shape() {
        let lines = doc_schema_lines();
        assert!(lines.len() > DATASETS.len(), "{lines:?}");
        for d in DATASETS {
            let path = format!("/{}", d.path);
            let line = lines
                .iter()
                .find(|l| l.split_whitespace().next() == Some(path.as_str()))
                .unwrap_or_else(|| panic!("the schema doc does not list {path}"));
            let rest: Vec<&str> = line.split_whitespace().skip(1).collect();
            let shape = d.group.shape_name();
            let shape_words = shape.split_whitespace().count();
            assert_eq!(rest[0], d.element.name(), "type of {path}: {line}");
            assert_eq!(
                rest[1..=shape_words].join(" "),
                shape,
                "shape of {path}: {line}"
            );
        }
        // And nothing else under /iteration/ and /worker/.
        for l in &lines {
            let first = l.split_whitespace().next().unwrap_or("");
            if first.starts_with("/iteration/") || first.starts_with("/worker/") {
                assert!(
                    DATASETS.iter().any(|d| first == format!("/{}", d.path)),
                    "the schema doc lists {first}, which is not in the table"
                );
            }
        }
    }

    #[test]
    fn the_schema_in_the_docs_lists_every_dataset_of_the_table() {
        let readme = include_str!("../../docs/traces.md");
        for group in [SchemaGroup::Iteration, SchemaGroup::Worker] {
            let open = format!("/{}/{{", group.name());
            let start = readme
                .find(&open)
                .unwrap_or_else(|| panic!("docs/traces.md has no {open}...}}"))
                + open.len();
            let end = start + readme[start..].find('}').expect("closing brace");
            let mut listed: Vec<&str> = readme[start..end].split(',').map(str::trim).collect();
            let mut table: Vec<&str> = DATASETS
                .iter()
                .filter(|d| d.group == group)
                .map(|d| d.name)
                .collect();
            listed.sort_unstable();
            table.sort_unstable();
            assert_eq!(
                listed,
                table,
                "docs/traces.md's /{}/ datasets",
                group.name()
            );
        }
    }
}
