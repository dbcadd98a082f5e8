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
//! file's size before it is read (see its module, `backend/hdf5/read/`).

pub use gradcode_core::record::{
    DATASETS, DatasetSpec, ElementType, IterationRecord, Presence, SchemaGroup, TimingEvent,
};

/// The HDF5 seam: the writers, the guarded reader and snapshots with HDF5,
/// refusals without it (the only code that knows which).
pub mod backend;
pub mod compare;

/// The trace files of `compare` read into its runs.
pub mod compare_members;

/// The checks before a trace file is opened, and the error naming it.
pub mod file_check;

/// The per-worker computation times and transfers a training trace measured.
pub mod measured;

/// The models of `advise`'s candidates, fitted to a training trace.
pub mod fit;
pub use backend::{SimTraceWriter, TraceFile, TraceWriter, read_snapshot};

/// What a trace file holds, as the reader gives it back.
mod contents;
pub use contents::{ExtraDataset, ExtraGroup, ModelInfo, RootInfo, SimScheme, TraceKind};

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

mod report;
pub use report::{Report, SchemeReport, TrialReport};

/// Where a trace goes: `--out`, `output.trace` or a name made for the run.
mod naming;
pub use naming::{DEFAULT_TRACE_FOLDER, TracePath, default_trace_name, trace_path};

/// How a run stands, as its trace records it.
mod status;
pub use status::{REASON_CHARS, RunStatus, status_reason};

/// The version of the trace schema, and which traces this gradcode reads.
mod schema;
pub use schema::{TRACE_SCHEMA, check_schema};

/// The snapshot slots of a training trace and what a resume reads from them.
mod snapshot;
pub use snapshot::{NO_SNAPSHOT, SNAPSHOT_COMMITTED, SNAPSHOT_SLOTS, Snapshot};

/// What a writer is given (the root attributes) and how often it flushes.
mod writing;
pub use writing::{FLUSH_INTERVAL, TraceMeta};

/// Failures of trace I/O.
mod error;
pub use error::TraceError;

#[cfg(test)]
mod tests {
    use super::{DATASETS, SchemaGroup};

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
