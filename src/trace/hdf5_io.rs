//! The HDF5 writer and reader of the trace schema (see the module above).

use std::path::Path;
use std::str::FromStr;
use std::time::Instant;

use hdf5::types::VarLenUnicode;
use hdf5::{Dataset, Extent, File, Group, H5Type, Location};
use ndarray::ArrayView2;

use super::{
    FLUSH_INTERVAL, IterationRecord, RecordSink, Snapshot, TimingEvent, TraceError, TraceMeta,
};

type Result<T> = std::result::Result<T, TraceError>;

/// Rows per chunk of every dataset.
const CHUNK_ROWS: usize = 256;

fn string_attr(loc: &Location, name: &str, value: &str) -> Result<()> {
    let v = VarLenUnicode::from_str(value)
        .map_err(|e| TraceError::hdf5(format!("attribute {name}"), e))?;
    loc.new_attr::<VarLenUnicode>()
        .create(name)
        .and_then(|a| a.write_scalar(&v))
        .map_err(|e| TraceError::hdf5(format!("attribute {name}"), e))
}

fn scalar_attr<T: H5Type>(loc: &Location, name: &str, value: T) -> Result<()> {
    loc.new_attr::<T>()
        .create(name)
        .and_then(|a| a.write_scalar(&value))
        .map_err(|e| TraceError::hdf5(format!("attribute {name}"), e))
}

fn group(parent: &Group, name: &str) -> Result<Group> {
    if parent.link_exists(name) {
        parent.group(name)
    } else {
        parent.create_group(name)
    }
    .map_err(|e| TraceError::hdf5(format!("group {name}"), e))
}

/// A chunked, resizable dataset with its first dimension growing by iteration.
/// When a run is resumed ([`TraceWriter::resume`]) the existing dataset is
/// reopened and cut to the rows of the iterations before the snapshot.
fn growing<T: H5Type>(
    keep: Option<usize>,
    parent: &Group,
    name: &str,
    workers: Option<usize>,
    unit: &str,
    description: &str,
) -> Result<Dataset> {
    if let (Some(keep), true) = (keep, parent.link_exists(name)) {
        let ds = parent
            .dataset(name)
            .map_err(|e| TraceError::hdf5(format!("dataset {name}"), e))?;
        let shape = ds.shape();
        if shape.first().is_none_or(|&rows| rows < keep)
            || workers.is_some_and(|k| shape.get(1) != Some(&k))
        {
            return Err(TraceError::Record(format!(
                "dataset {name} has shape {shape:?}, cannot continue at row {keep}"
            )));
        }
        let resized = match workers {
            None => ds.resize((keep,)),
            Some(k) => ds.resize((keep, k)),
        };
        resized.map_err(|e| TraceError::hdf5(format!("dataset {name}"), e))?;
        return Ok(ds);
    }
    let builder = parent.new_dataset::<T>();
    let ds = match workers {
        None => builder
            .chunk((CHUNK_ROWS,))
            .shape((Extent::resizable(0),))
            .create(name),
        Some(k) => builder
            .chunk((CHUNK_ROWS.min(64), k))
            .shape((Extent::resizable(0), Extent::fixed(k)))
            .create(name),
    }
    .map_err(|e| TraceError::hdf5(format!("dataset {name}"), e))?;
    string_attr(&ds, "unit", unit)?;
    string_attr(&ds, "description", description)?;
    Ok(ds)
}

/// The `/iteration/` and `/worker/` datasets of one trace, with the rows not yet written.
struct GroupWriter {
    workers: usize,
    written: usize,
    pending: Vec<IterationRecord>,
    duration_s: Dataset,
    decode_s: Dataset,
    recovered_fraction: Dataset,
    messages_used: Dataset,
    messages_received: Dataset,
    stale_dropped: Dataset,
    train_loss: Dataset,
    test_loss: Dataset,
    finish_s: Dataset,
    straggling: Dataset,
    cluster: Dataset,
    used: Dataset,
    overrun_s: Dataset,
}

impl GroupWriter {
    fn create(root: &Group, workers: usize) -> Result<Self> {
        Self::open(root, workers, None)
    }

    /// The datasets of a new trace (`keep` = None), or of an existing one
    /// reopened with its first `keep` rows kept (resuming a run).
    fn open(root: &Group, workers: usize, keep: Option<usize>) -> Result<Self> {
        let it = group(root, "iteration")?;
        let wk = group(root, "worker")?;
        let k = Some(workers);
        Ok(Self {
            workers,
            written: keep.unwrap_or(0),
            pending: Vec::new(),
            duration_s: growing::<f64>(
                keep,
                &it,
                "duration_s",
                None,
                "s",
                "time of the iteration",
            )?,
            decode_s: growing::<f64>(
                keep,
                &it,
                "decode_s",
                None,
                "s",
                "time spent decoding; NaN when not measured (simulation)",
            )?,
            recovered_fraction: growing::<f64>(
                keep,
                &it,
                "recovered_fraction",
                None,
                "1",
                "share of the partitions whose gradient sum was recovered",
            )?,
            messages_used: growing::<u64>(
                keep,
                &it,
                "messages_used",
                None,
                "count",
                "messages with a non-zero decoding weight",
            )?,
            messages_received: growing::<u64>(
                keep,
                &it,
                "messages_received",
                None,
                "count",
                "messages received by the end of the iteration",
            )?,
            stale_dropped: growing::<u64>(
                keep,
                &it,
                "stale_dropped",
                None,
                "count",
                "results of older iterations received and dropped",
            )?,
            train_loss: growing::<f64>(
                keep,
                &it,
                "train_loss",
                None,
                "1",
                "training loss; NaN when not evaluated",
            )?,
            test_loss: growing::<f64>(
                keep,
                &it,
                "test_loss",
                None,
                "1",
                "test loss; NaN when not evaluated",
            )?,
            finish_s: growing::<f64>(
                keep,
                &wk,
                "finish_s",
                k,
                "s",
                "column k = worker k+1: arrival of its last message received in time, NaN if none",
            )?,
            straggling: growing::<u8>(
                keep,
                &wk,
                "straggling",
                k,
                "1",
                "column k = worker k+1: 1 when straggling this iteration",
            )?,
            cluster: growing::<i64>(
                keep,
                &wk,
                "cluster",
                k,
                "id",
                "column k = worker k+1: 1-based cluster this iteration, -1 when unclustered",
            )?,
            used: growing::<u8>(
                keep,
                &wk,
                "used",
                k,
                "1",
                "column k = worker k+1: 1 when a message of it has a non-zero decoding weight",
            )?,
            overrun_s: growing::<f64>(
                keep,
                &wk,
                "overrun_s",
                k,
                "s",
                "column k = worker k+1: seconds its real work ran past the emulated due time (0 on time; 0 in simulation)",
            )?,
        })
    }

    fn push(&mut self, record: &IterationRecord) -> Result<()> {
        let k = self.workers;
        let shapes = [
            record.finish_s.len(),
            record.straggling.len(),
            record.cluster.len(),
            record.used.len(),
            record.overrun_s.len(),
        ];
        if shapes.iter().any(|&n| n != k) {
            return Err(TraceError::Record(format!(
                "per-worker fields have lengths {shapes:?}, but the trace has {k} workers"
            )));
        }
        self.pending.push(record.clone());
        Ok(())
    }

    /// Write the pending rows.
    fn write(&mut self) -> Result<()> {
        let m = self.pending.len();
        if m == 0 {
            return Ok(());
        }
        let (n, k) = (self.written, self.workers);
        let rows = n..n + m;
        let p = &self.pending;
        fn column<T: H5Type>(ds: &Dataset, rows: std::ops::Range<usize>, v: Vec<T>) -> Result<()> {
            ds.resize((rows.end,))
                .and_then(|_| ds.write_slice(&v, rows))
                .map_err(|e| TraceError::hdf5(format!("dataset {}", ds.name()), e))
        }
        fn matrix<T: H5Type>(
            ds: &Dataset,
            rows: std::ops::Range<usize>,
            k: usize,
            v: Vec<T>,
        ) -> Result<()> {
            let view = ArrayView2::from_shape((rows.len(), k), &v)
                .map_err(|e| TraceError::Record(e.to_string()))?;
            ds.resize((rows.end, k))
                .and_then(|_| ds.write_slice(view, (rows, ..)))
                .map_err(|e| TraceError::hdf5(format!("dataset {}", ds.name()), e))
        }
        column(
            &self.duration_s,
            rows.clone(),
            p.iter().map(|r| r.duration_s).collect(),
        )?;
        column(
            &self.decode_s,
            rows.clone(),
            p.iter().map(|r| r.decode_s).collect(),
        )?;
        column(
            &self.recovered_fraction,
            rows.clone(),
            p.iter().map(|r| r.recovered_fraction).collect(),
        )?;
        column(
            &self.messages_used,
            rows.clone(),
            p.iter().map(|r| r.messages_used).collect(),
        )?;
        column(
            &self.messages_received,
            rows.clone(),
            p.iter().map(|r| r.messages_received).collect(),
        )?;
        column(
            &self.stale_dropped,
            rows.clone(),
            p.iter().map(|r| r.stale_dropped).collect(),
        )?;
        column(
            &self.train_loss,
            rows.clone(),
            p.iter().map(|r| r.train_loss).collect(),
        )?;
        column(
            &self.test_loss,
            rows.clone(),
            p.iter().map(|r| r.test_loss).collect(),
        )?;
        matrix(
            &self.finish_s,
            rows.clone(),
            k,
            p.iter().flat_map(|r| r.finish_s.iter().copied()).collect(),
        )?;
        matrix(
            &self.straggling,
            rows.clone(),
            k,
            p.iter()
                .flat_map(|r| r.straggling.iter().map(|&b| u8::from(b)))
                .collect(),
        )?;
        matrix(
            &self.cluster,
            rows.clone(),
            k,
            p.iter().flat_map(|r| r.cluster.iter().copied()).collect(),
        )?;
        matrix(
            &self.used,
            rows.clone(),
            k,
            p.iter()
                .flat_map(|r| r.used.iter().map(|&b| u8::from(b)))
                .collect(),
        )?;
        matrix(
            &self.overrun_s,
            rows,
            k,
            p.iter().flat_map(|r| r.overrun_s.iter().copied()).collect(),
        )?;
        self.written += m;
        self.pending.clear();
        Ok(())
    }
}

fn create_file(path: &Path, meta: &TraceMeta) -> Result<File> {
    let file = File::create(path)
        .map_err(|e| TraceError::hdf5(format!("cannot create {}", path.display()), e))?;
    string_attr(&file, "scheme", &meta.scheme)?;
    scalar_attr(&file, "workers", meta.workers as u64)?;
    string_attr(&file, "config_toml", &meta.config_toml)?;
    string_attr(&file, "gradcode_version", env!("CARGO_PKG_VERSION"))?;
    scalar_attr(&file, "seed", meta.seed)?;
    Ok(file)
}

fn flush_file(file: &File) -> Result<()> {
    file.flush()
        .map_err(|e| TraceError::hdf5(format!("flush {}", file.filename()), e))
}

/// The trace of one run (`gradcode train`): the root groups of the schema.
///
/// ```no_run
/// # use gradcode::trace::{IterationRecord, TraceMeta, TraceWriter};
/// # fn main() -> Result<(), gradcode::trace::TraceError> {
/// let meta = TraceMeta { scheme: "gc-sc".into(), workers: 12, config_toml: String::new(), seed: 1 };
/// let mut w = TraceWriter::create("run.h5".as_ref(), &meta)?;
/// let mut rec = IterationRecord::new(12);
/// rec.duration_s = 0.25;
/// w.append(&rec)?; // once per iteration
/// w.write_theta(100, &[0.0; 1000])?;
/// w.close()?;
/// # Ok(()) }
/// ```
pub struct TraceWriter {
    file: Option<File>,
    root: GroupWriter,
    last_flush: Instant,
}

impl TraceWriter {
    /// Create (truncate) `path` and write the root attributes.
    pub fn create(path: &Path, meta: &TraceMeta) -> Result<Self> {
        let file = create_file(path, meta)?;
        let root = GroupWriter::create(&file, meta.workers)?;
        flush_file(&file)?;
        Ok(Self {
            file: Some(file),
            root,
            last_flush: Instant::now(),
        })
    }

    /// Append one iteration. Written to the file, and the file flushed, when
    /// [`FLUSH_INTERVAL`] has passed since the last flush.
    pub fn append(&mut self, record: &IterationRecord) -> Result<()> {
        self.root.push(record)?;
        if self.last_flush.elapsed() >= FLUSH_INTERVAL {
            self.flush()?;
        }
        Ok(())
    }

    /// Iterations appended so far.
    pub fn iterations(&self) -> usize {
        self.root.written + self.root.pending.len()
    }

    /// Write the model parameters to `/model/theta` (replacing an earlier
    /// snapshot; its length may not change), with attribute `iteration`, and flush.
    pub fn write_theta(&mut self, iteration: u64, theta: &[f64]) -> Result<()> {
        self.write_model_vector("theta", "model parameters", iteration, theta)?;
        self.flush()
    }

    /// A resumable snapshot after `iteration` completed iterations: the
    /// iterate (`/model/theta`), the one before it (`/model/previous_theta`,
    /// for Nesterov's momentum), the records so far; flushed.
    pub fn write_snapshot(
        &mut self,
        iteration: u64,
        theta: &[f64],
        previous_theta: &[f64],
    ) -> Result<()> {
        // Records first: a snapshot never refers to iterations the file lacks.
        self.root.write()?;
        self.write_model_vector("theta", "model parameters", iteration, theta)?;
        self.write_model_vector(
            "previous_theta",
            "the iterate before theta (momentum)",
            iteration,
            previous_theta,
        )?;
        self.flush()
    }

    fn write_model_vector(
        &mut self,
        name: &str,
        description: &str,
        iteration: u64,
        values: &[f64],
    ) -> Result<()> {
        let file = self.file.as_ref().expect("open until close");
        let model = group(file, "model")?;
        let ctx = || format!("dataset /model/{name}");
        let ds = if model.link_exists(name) {
            let ds = model
                .dataset(name)
                .map_err(|e| TraceError::hdf5(ctx(), e))?;
            if ds.shape() != [values.len()] {
                return Err(TraceError::Record(format!(
                    "{name} has {} entries, the trace's /model/{name} {:?}",
                    values.len(),
                    ds.shape()
                )));
            }
            ds
        } else {
            let ds = model
                .new_dataset::<f64>()
                .shape((values.len(),))
                .create(name)
                .map_err(|e| TraceError::hdf5(ctx(), e))?;
            string_attr(&ds, "unit", "1")?;
            string_attr(&ds, "description", description)?;
            scalar_attr(&ds, "iteration", 0u64)?;
            ds
        };
        ds.write(values).map_err(|e| TraceError::hdf5(ctx(), e))?;
        ds.attr("iteration")
            .and_then(|a| a.write_scalar(&iteration))
            .map_err(|e| TraceError::hdf5(ctx(), e))
    }

    /// Reopen the trace of an interrupted run to continue it from its last
    /// snapshot: the records after the snapshot are cut, the next `append`
    /// writes the row of iteration `snapshot.iteration`.
    pub fn resume(path: &Path) -> Result<(Self, Snapshot)> {
        let file = File::open_rw(path).map_err(|e| {
            TraceError::hdf5(format!("cannot open {} for writing", path.display()), e)
        })?;
        let attr = |name: &str| {
            file.attr(name)
                .map_err(|e| TraceError::hdf5(format!("attribute {name}"), e))
        };
        let workers: u64 = attr("workers")?
            .read_scalar()
            .map_err(|e| TraceError::hdf5("attribute workers", e))?;
        let seed: u64 = attr("seed")?
            .read_scalar()
            .map_err(|e| TraceError::hdf5("attribute seed", e))?;
        let config_toml: VarLenUnicode = attr("config_toml")?
            .read_scalar()
            .map_err(|e| TraceError::hdf5("attribute config_toml", e))?;
        let no_snapshot = || {
            TraceError::Record(format!(
                "{} has no snapshot (/model/theta) to resume from",
                path.display()
            ))
        };
        if !file.link_exists("model") {
            return Err(no_snapshot());
        }
        let model = file
            .group("model")
            .map_err(|e| TraceError::hdf5("group /model", e))?;
        if !model.link_exists("theta") {
            return Err(no_snapshot());
        }
        let read = |name: &str| -> Result<(Vec<f64>, u64)> {
            let ds = model
                .dataset(name)
                .map_err(|e| TraceError::hdf5(format!("dataset /model/{name}"), e))?;
            let v = ds
                .read_raw::<f64>()
                .map_err(|e| TraceError::hdf5(format!("dataset /model/{name}"), e))?;
            let it: u64 = ds
                .attr("iteration")
                .and_then(|a| a.read_scalar())
                .map_err(|e| TraceError::hdf5(format!("dataset /model/{name}"), e))?;
            Ok((v, it))
        };
        let (theta, iteration) = read("theta")?;
        let previous_theta = if model.link_exists("previous_theta") {
            let (p, it) = read("previous_theta")?;
            if it != iteration {
                return Err(TraceError::Record(format!(
                    "{}: /model/theta is of iteration {iteration}, /model/previous_theta of {it}",
                    path.display()
                )));
            }
            p
        } else {
            theta.clone()
        };
        let root = GroupWriter::open(&file, workers as usize, Some(iteration as usize))?;
        flush_file(&file)?;
        let snapshot = Snapshot {
            iteration,
            theta,
            previous_theta,
            config_toml: config_toml.as_str().to_string(),
            seed,
        };
        Ok((
            Self {
                file: Some(file),
                root,
                last_flush: Instant::now(),
            },
            snapshot,
        ))
    }

    /// Write the run's timing summary to `/timing/` (event names, total
    /// seconds, counts; replacing an earlier summary) and flush.
    pub fn write_timing(&mut self, events: &[TimingEvent]) -> Result<()> {
        let file = self.file.as_ref().expect("open until close");
        if file.link_exists("timing") {
            file.unlink("timing")
                .map_err(|e| TraceError::hdf5("group /timing", e))?;
        }
        let timing = group(file, "timing")?;
        let names: Vec<VarLenUnicode> = events
            .iter()
            .map(|e| {
                VarLenUnicode::from_str(&e.event)
                    .map_err(|err| TraceError::hdf5("timing event name", err))
            })
            .collect::<Result<_>>()?;
        let totals: Vec<f64> = events.iter().map(|e| e.total_s).collect();
        let counts: Vec<u64> = events.iter().map(|e| e.count).collect();
        let ctx = |name: &str| format!("dataset /timing/{name}");
        let event = timing
            .new_dataset_builder()
            .with_data(&names)
            .create("event")
            .map_err(|e| TraceError::hdf5(ctx("event"), e))?;
        string_attr(&event, "description", "named timing events of the master")?;
        let total = timing
            .new_dataset_builder()
            .with_data(&totals)
            .create("total_s")
            .map_err(|e| TraceError::hdf5(ctx("total_s"), e))?;
        string_attr(&total, "unit", "s")?;
        string_attr(
            &total,
            "description",
            "total time in the event over the run",
        )?;
        let count = timing
            .new_dataset_builder()
            .with_data(&counts)
            .create("count")
            .map_err(|e| TraceError::hdf5(ctx("count"), e))?;
        string_attr(&count, "unit", "count")?;
        string_attr(&count, "description", "how often the event ran")?;
        self.flush()
    }

    /// Write every pending record and flush the file.
    pub fn flush(&mut self) -> Result<()> {
        self.root.write()?;
        flush_file(self.file.as_ref().expect("open until close"))?;
        self.last_flush = Instant::now();
        Ok(())
    }

    /// Flush and close the file.
    pub fn close(mut self) -> Result<()> {
        self.flush()?;
        let file = self.file.take().expect("open until close");
        file.close()
            .map_err(|e| TraceError::hdf5("close".to_string(), e))
    }
}

impl Drop for TraceWriter {
    /// A writer dropped without `close` (an error path) still writes what it has.
    fn drop(&mut self) {
        if self.file.is_some() {
            if let Err(e) = self.flush() {
                eprintln!("warning: trace not fully written: {e}");
            }
        }
    }
}

/// The trace of a simulation: one trace per compared scheme and trial at
/// `/sim/<scheme>/trial_<k>/`.
pub struct SimTraceWriter {
    file: Option<File>,
    schemes: Vec<String>,
    workers: usize,
    /// (scheme, trial) → writer, created at its first record.
    groups: Vec<Vec<Option<GroupWriter>>>,
    sim: Group,
    last_flush: Instant,
}

impl SimTraceWriter {
    /// Create (truncate) `path`; `schemes` in `simulate.compare` order;
    /// `model_time_unit_s` converts model time to the seconds of the records.
    pub fn create(
        path: &Path,
        meta: &TraceMeta,
        schemes: &[String],
        trials: usize,
        iterations: usize,
        model_time_unit_s: f64,
    ) -> Result<Self> {
        let file = create_file(path, meta)?;
        let sim = group(&file, "sim")?;
        for name in schemes {
            let g = group(&sim, name)?;
            string_attr(&g, "scheme", name)?;
            scalar_attr(&g, "trials", trials as u64)?;
            scalar_attr(&g, "iterations", iterations as u64)?;
            scalar_attr(&g, "model_time_unit_s", model_time_unit_s)?;
        }
        flush_file(&file)?;
        Ok(Self {
            file: Some(file),
            schemes: schemes.to_vec(),
            workers: meta.workers,
            groups: schemes.iter().map(|_| Vec::new()).collect(),
            sim,
            last_flush: Instant::now(),
        })
    }

    /// Append one iteration of `scheme` (index into the schemes) in `trial`.
    pub fn append(&mut self, scheme: usize, trial: usize, record: &IterationRecord) -> Result<()> {
        let name = self
            .schemes
            .get(scheme)
            .ok_or_else(|| TraceError::Record(format!("scheme index {scheme} out of range")))?;
        let slots = &mut self.groups[scheme];
        if slots.len() <= trial {
            slots.resize_with(trial + 1, || None);
        }
        if slots[trial].is_none() {
            let g = group(&group(&self.sim, name)?, &format!("trial_{trial}"))?;
            scalar_attr(&g, "trial", trial as u64)?;
            slots[trial] = Some(GroupWriter::create(&g, self.workers)?);
        }
        slots[trial].as_mut().expect("created above").push(record)?;
        if self.last_flush.elapsed() >= FLUSH_INTERVAL {
            self.flush()?;
        }
        Ok(())
    }

    /// Write every pending record and flush the file.
    pub fn flush(&mut self) -> Result<()> {
        for g in self.groups.iter_mut().flatten().flatten() {
            g.write()?;
        }
        flush_file(self.file.as_ref().expect("open until close"))?;
        self.last_flush = Instant::now();
        Ok(())
    }

    /// Flush and close the file.
    pub fn close(mut self) -> Result<()> {
        self.flush()?;
        let file = self.file.take().expect("open until close");
        file.close()
            .map_err(|e| TraceError::hdf5("close".to_string(), e))
    }
}

impl RecordSink for SimTraceWriter {
    fn record(
        &mut self,
        scheme: usize,
        trial: usize,
        record: &IterationRecord,
    ) -> std::result::Result<(), super::SinkError> {
        Ok(self.append(scheme, trial, record)?)
    }
}

impl Drop for SimTraceWriter {
    fn drop(&mut self) {
        if self.file.is_some() {
            if let Err(e) = self.flush() {
                eprintln!("warning: simulation trace not fully written: {e}");
            }
        }
    }
}

/// One trace read back: its records, `/model/theta` and `/timing/` when present.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceData {
    pub workers: usize,
    pub records: Vec<IterationRecord>,
    pub theta: Option<Vec<f64>>,
    /// The timing summary of a training run (empty when absent).
    pub timing: Vec<TimingEvent>,
}

/// Read dataset `name` of `g`, which must have `ndim` dimensions and, as
/// the traces are not compressed, no more bytes than the file (`file_bytes`):
/// a corrupted header claiming more is refused before anything is allocated.
fn read_vec<T: H5Type>(
    g: &Group,
    name: &str,
    ndim: usize,
    file_bytes: u64,
) -> Result<(Vec<T>, Vec<usize>)> {
    let ds = g
        .dataset(name)
        .map_err(|e| TraceError::hdf5(format!("dataset {name}"), e))?;
    let shape = ds.shape();
    if shape.len() != ndim {
        return Err(TraceError::Record(format!(
            "dataset {} has shape {shape:?}, not {ndim} dimension(s)",
            ds.name()
        )));
    }
    let bytes = shape
        .iter()
        .try_fold(std::mem::size_of::<T>() as u128, |acc, &n| {
            acc.checked_mul(n as u128)
        });
    if bytes.is_none_or(|b| b > u128::from(file_bytes)) {
        return Err(TraceError::Record(format!(
            "dataset {} claims shape {shape:?}, more data than the {file_bytes}-byte file holds (corrupt file?)",
            ds.name()
        )));
    }
    let v = ds
        .read_raw::<T>()
        .map_err(|e| TraceError::hdf5(format!("dataset {name}"), e))?;
    if v.len() != shape.iter().product::<usize>() {
        return Err(TraceError::Record(format!(
            "dataset {} read {} values for shape {shape:?}",
            ds.name(),
            v.len()
        )));
    }
    Ok((v, shape))
}

/// Read the trace whose `/iteration/` and `/worker/` groups are under
/// `group_path` of `path` (`"/"` for a run, `"/sim/gc-sc/trial_0"` for a
/// simulation trial). A file that is not such a trace (truncated, corrupted,
/// of another schema) gives an error, never a panic or an allocation larger
/// than the file.
pub fn read_trace(path: &Path, group_path: &str) -> Result<TraceData> {
    let file_bytes = std::fs::metadata(path)
        .map_err(|e| TraceError::hdf5(format!("cannot open {}", path.display()), e))?
        .len();
    let file = File::open(path)
        .map_err(|e| TraceError::hdf5(format!("cannot open {}", path.display()), e))?;
    let root = file
        .group(group_path)
        .map_err(|e| TraceError::hdf5(format!("group {group_path}"), e))?;
    let it = root
        .group("iteration")
        .map_err(|e| TraceError::hdf5(format!("group {group_path}/iteration"), e))?;
    let wk = root
        .group("worker")
        .map_err(|e| TraceError::hdf5(format!("group {group_path}/worker"), e))?;
    let (duration, shape) = read_vec::<f64>(&it, "duration_s", 1, file_bytes)?;
    let n = shape[0];
    let (decode, _) = read_vec::<f64>(&it, "decode_s", 1, file_bytes)?;
    let (recovered, _) = read_vec::<f64>(&it, "recovered_fraction", 1, file_bytes)?;
    let (used_count, _) = read_vec::<u64>(&it, "messages_used", 1, file_bytes)?;
    let (received, _) = read_vec::<u64>(&it, "messages_received", 1, file_bytes)?;
    let (stale, _) = read_vec::<u64>(&it, "stale_dropped", 1, file_bytes)?;
    let (train, _) = read_vec::<f64>(&it, "train_loss", 1, file_bytes)?;
    let (test, _) = read_vec::<f64>(&it, "test_loss", 1, file_bytes)?;
    let (finish, wshape) = read_vec::<f64>(&wk, "finish_s", 2, file_bytes)?;
    let k = wshape[1];
    if wshape[0] != n {
        return Err(TraceError::Record(format!(
            "{group_path}: /worker/finish_s has {} rows, /iteration/duration_s {n}",
            wshape[0]
        )));
    }
    let (straggling, _) = read_vec::<u8>(&wk, "straggling", 2, file_bytes)?;
    let (cluster, _) = read_vec::<i64>(&wk, "cluster", 2, file_bytes)?;
    let (used, _) = read_vec::<u8>(&wk, "used", 2, file_bytes)?;
    // Optional: traces of simulations and of older versions have no overruns.
    let overrun = if wk.link_exists("overrun_s") {
        read_vec::<f64>(&wk, "overrun_s", 2, file_bytes)?.0
    } else {
        vec![0.0; n * k]
    };
    let lengths = [
        decode.len(),
        recovered.len(),
        used_count.len(),
        received.len(),
        stale.len(),
        train.len(),
        test.len(),
    ];
    if lengths.iter().any(|&l| l != n)
        || [
            finish.len(),
            straggling.len(),
            cluster.len(),
            used.len(),
            overrun.len(),
        ]
        .iter()
        .any(|&l| l != n * k)
    {
        return Err(TraceError::Record(format!(
            "{group_path}: datasets of different lengths"
        )));
    }
    let records = (0..n)
        .map(|i| {
            let row = i * k..(i + 1) * k;
            IterationRecord {
                duration_s: duration[i],
                decode_s: decode[i],
                recovered_fraction: recovered[i],
                messages_used: used_count[i],
                messages_received: received[i],
                stale_dropped: stale[i],
                train_loss: train[i],
                test_loss: test[i],
                finish_s: finish[row.clone()].to_vec(),
                straggling: straggling[row.clone()].iter().map(|&b| b != 0).collect(),
                cluster: cluster[row.clone()].to_vec(),
                used: used[row.clone()].iter().map(|&b| b != 0).collect(),
                overrun_s: overrun[row].to_vec(),
            }
        })
        .collect();
    let theta = if root.link_exists("model") {
        let model = root
            .group("model")
            .map_err(|e| TraceError::hdf5("group model", e))?;
        Some(read_vec::<f64>(&model, "theta", 1, file_bytes)?.0)
    } else {
        None
    };
    let timing = if root.link_exists("timing") {
        let t = root
            .group("timing")
            .map_err(|e| TraceError::hdf5("group timing", e))?;
        let (names, _) = read_vec::<VarLenUnicode>(&t, "event", 1, file_bytes)?;
        let (totals, _) = read_vec::<f64>(&t, "total_s", 1, file_bytes)?;
        let (counts, _) = read_vec::<u64>(&t, "count", 1, file_bytes)?;
        names
            .iter()
            .zip(totals)
            .zip(counts)
            .map(|((name, total_s), count)| TimingEvent {
                event: name.as_str().to_string(),
                total_s,
                count,
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok(TraceData {
        workers: k,
        records,
        theta,
        timing,
    })
}

/// A string attribute of the object at `object` (`"/"` for the root).
pub fn read_attr_string(path: &Path, object: &str, name: &str) -> Result<String> {
    let file = File::open(path)
        .map_err(|e| TraceError::hdf5(format!("cannot open {}", path.display()), e))?;
    let loc = file
        .group(object)
        .map_err(|e| TraceError::hdf5(format!("group {object}"), e))?;
    let v: VarLenUnicode = loc
        .attr(name)
        .and_then(|a| a.read_scalar())
        .map_err(|e| TraceError::hdf5(format!("attribute {object}@{name}"), e))?;
    Ok(v.as_str().to_string())
}
