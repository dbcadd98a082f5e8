//! The HDF5 writers of the trace schema (see the module above), and
//! [`read_trace`], the records of a trace read back through the guarded
//! reader ([`TraceFile`], read.rs). The per-iteration datasets are those of
//! the table ([`DATASETS`]): `GroupWriter` creates one per line, and
//! writes the rows through [`TraceColumns::visit`], so no dataset is named here.

use std::path::Path;
use std::str::FromStr;
use std::time::Instant;

use hdf5::types::VarLenUnicode;
use hdf5::{Dataset, Datatype, Extent, File, Group, H5Type, Location};
use ndarray::ArrayView2;

use super::read::TraceFile;
use crate::engine::{IterationEvent, Observer, ObserverError};

use super::{FLUSH_INTERVAL, IterationRecord, Snapshot, TimingEvent, TraceError, TraceMeta};
use gradcode_core::record::{
    ColumnVisitor, DATASETS, DatasetSpec, ElementType, SchemaGroup, TraceColumns,
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

/// A chunked, resizable dataset of the schema, its first dimension growing
/// by iteration, with its `unit` and `description` attributes. When a run is
/// resumed ([`TraceWriter::resume`]) the existing dataset is reopened and cut
/// to the rows of the iterations before the snapshot.
fn growing(
    keep: Option<usize>,
    parent: &Group,
    spec: &DatasetSpec,
    workers: usize,
) -> Result<Dataset> {
    let name = spec.name;
    let ctx = || format!("dataset {}", spec.path);
    if let (Some(keep), true) = (keep, parent.link_exists(name)) {
        let ds = parent
            .dataset(name)
            .map_err(|e| TraceError::hdf5(ctx(), e))?;
        let shape = ds.shape();
        if shape.first().is_none_or(|&rows| rows < keep)
            || (spec.group == SchemaGroup::Worker && shape.get(1) != Some(&workers))
        {
            return Err(TraceError::Record(format!(
                "dataset {} has shape {shape:?}, cannot continue at row {keep}",
                spec.path
            )));
        }
        let resized = match spec.group {
            SchemaGroup::Iteration => ds.resize((keep,)),
            SchemaGroup::Worker => ds.resize((keep, workers)),
        };
        resized.map_err(|e| TraceError::hdf5(ctx(), e))?;
        return Ok(ds);
    }
    let builder = parent
        .new_dataset_builder()
        .empty_as(&h5_type(spec.element)?);
    let ds = match spec.group {
        SchemaGroup::Iteration => builder
            .chunk((CHUNK_ROWS,))
            .shape((Extent::resizable(0),))
            .create(name),
        SchemaGroup::Worker => builder
            .chunk((CHUNK_ROWS.min(64), workers))
            .shape((Extent::resizable(0), Extent::fixed(workers)))
            .create(name),
    }
    .map_err(|e| TraceError::hdf5(ctx(), e))?;
    string_attr(&ds, "unit", spec.unit)?;
    string_attr(&ds, "description", spec.description)?;
    Ok(ds)
}

/// The HDF5 type a dataset of the schema is stored as.
fn h5_type(element: ElementType) -> Result<Datatype> {
    match element {
        ElementType::F64 => Datatype::from_type::<f64>(),
        ElementType::U64 => Datatype::from_type::<u64>(),
        ElementType::I64 => Datatype::from_type::<i64>(),
        ElementType::Flag => Datatype::from_type::<u8>(),
    }
    .map_err(|e| TraceError::hdf5(format!("type {}", element.name()), e))
}

/// The `/iteration/` and `/worker/` datasets of one trace, with the rows not yet written.
struct GroupWriter {
    workers: usize,
    written: usize,
    pending: Vec<IterationRecord>,
    /// The datasets of the schema, in table order ([`DATASETS`]).
    datasets: Vec<Dataset>,
}

impl GroupWriter {
    fn create(root: &Group, workers: usize) -> Result<Self> {
        Self::open(root, workers, None)
    }

    /// The datasets of a new trace (`keep` = None), or of an existing one
    /// reopened with its first `keep` rows kept (resuming a run).
    fn open(root: &Group, workers: usize, keep: Option<usize>) -> Result<Self> {
        let it = group(root, SchemaGroup::Iteration.name())?;
        let wk = group(root, SchemaGroup::Worker.name())?;
        let datasets = DATASETS
            .iter()
            .map(|spec| {
                let parent = match spec.group {
                    SchemaGroup::Iteration => &it,
                    SchemaGroup::Worker => &wk,
                };
                growing(keep, parent, spec, workers)
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            workers,
            written: keep.unwrap_or(0),
            pending: Vec::new(),
            datasets,
        })
    }

    fn push(&mut self, record: &IterationRecord) -> Result<()> {
        let k = self.workers;
        let columns = TraceColumns::from_records(k, std::slice::from_ref(record));
        let bad: Vec<&str> = columns.misshapen().iter().map(|d| d.name).collect();
        if !bad.is_empty() {
            return Err(TraceError::Record(format!(
                "record fields {} do not have one value per worker: the trace has {k} workers",
                bad.join(", ")
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
        let mut columns = TraceColumns::from_records(self.workers, &self.pending);
        columns.visit(&mut RowWriter {
            datasets: &self.datasets,
            rows: self.written..self.written + m,
            workers: self.workers,
        })?;
        self.written += m;
        self.pending.clear();
        Ok(())
    }
}

/// Appends rows to the datasets of the schema, one column at a time.
struct RowWriter<'a> {
    datasets: &'a [Dataset],
    rows: std::ops::Range<usize>,
    workers: usize,
}

impl RowWriter<'_> {
    fn put<T: H5Type>(&self, spec: &DatasetSpec, values: &[T]) -> Result<()> {
        let ds = &self.datasets[spec.index];
        let ctx = || format!("dataset {}", ds.name());
        let rows = self.rows.clone();
        match spec.group {
            SchemaGroup::Iteration => ds
                .resize((rows.end,))
                .and_then(|_| ds.write_slice(values, rows))
                .map_err(|e| TraceError::hdf5(ctx(), e)),
            SchemaGroup::Worker => {
                let k = self.workers;
                let view = ArrayView2::from_shape((rows.len(), k), values)
                    .map_err(|e| TraceError::Record(format!("{}: {e}", ctx())))?;
                ds.resize((rows.end, k))
                    .and_then(|_| ds.write_slice(view, (rows, ..)))
                    .map_err(|e| TraceError::hdf5(ctx(), e))
            }
        }
    }
}

/// The column of a record's dataset, which `TraceColumns::from_records` always fills.
fn filled<'c, T>(spec: &DatasetSpec, column: &'c Option<Vec<T>>) -> Result<&'c [T]> {
    column
        .as_deref()
        .ok_or_else(|| TraceError::Record(format!("no values for dataset {}", spec.path)))
}

impl ColumnVisitor for RowWriter<'_> {
    type Error = TraceError;

    fn f64(&mut self, spec: &'static DatasetSpec, column: &mut Option<Vec<f64>>) -> Result<()> {
        self.put(spec, filled(spec, column)?)
    }

    fn u64(&mut self, spec: &'static DatasetSpec, column: &mut Option<Vec<u64>>) -> Result<()> {
        self.put(spec, filled(spec, column)?)
    }

    fn i64(&mut self, spec: &'static DatasetSpec, column: &mut Option<Vec<i64>>) -> Result<()> {
        self.put(spec, filled(spec, column)?)
    }

    fn flag(&mut self, spec: &'static DatasetSpec, column: &mut Option<Vec<bool>>) -> Result<()> {
        let bytes: Vec<u8> = filled(spec, column)?.iter().map(|&b| u8::from(b)).collect();
        self.put(spec, &bytes)
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
    /// writes the row of iteration `snapshot.iteration`. The file is read
    /// through the guarded reader ([`TraceFile`]): every dataset of the
    /// schema is checked (shape, type, size against the file) before the
    /// records are cut, and a file that breaks a rule is an error naming the
    /// dataset.
    pub fn resume(path: &Path) -> Result<(Self, Snapshot)> {
        let reader = TraceFile::open_rw(path)?;
        fn required<T>(path: &Path, value: Option<T>, name: &str) -> Result<T> {
            value.ok_or_else(|| {
                TraceError::Record(format!(
                    "{} has no root attribute {name}: not a trace of a run",
                    path.display()
                ))
            })
        }
        let workers: u64 = required(path, reader.group_number_attr("/", "workers")?, "workers")?;
        let seed: u64 = required(path, reader.group_number_attr("/", "seed")?, "seed")?;
        let config_toml = required(
            path,
            reader.group_string_attr("/", "config_toml")?,
            "config_toml",
        )?;
        let no_snapshot = || {
            TraceError::Record(format!(
                "{} has no snapshot (/model/theta) to resume from",
                path.display()
            ))
        };
        let (theta, iteration) = reader.model_vector("/", "theta")?.ok_or_else(no_snapshot)?;
        let iteration = iteration.ok_or_else(|| {
            TraceError::Record(format!(
                "{}: /model/theta has no attribute iteration",
                path.display()
            ))
        })?;
        let previous_theta = match reader.model_vector("/", "previous_theta")? {
            None => theta.clone(),
            Some((p, it)) if it == Some(iteration) && p.len() == theta.len() => p,
            Some((p, it)) => {
                return Err(TraceError::Record(format!(
                    "{}: /model/theta is of iteration {iteration} with {} parameters, \
                     /model/previous_theta of iteration {it:?} with {}",
                    path.display(),
                    theta.len(),
                    p.len()
                )));
            }
        };
        // The guard, on every dataset of the schema, before anything is cut.
        reader.schema_datasets("/", Some(workers))?;
        let keep = usize::try_from(iteration).map_err(|_| {
            TraceError::Record(format!(
                "{}: /model/theta is of iteration {iteration}, too large",
                path.display()
            ))
        })?;
        let workers = usize::try_from(workers).map_err(|_| {
            TraceError::Record(format!(
                "{}: attribute workers of / = {workers} is too large",
                path.display()
            ))
        })?;
        let file = reader.into_file();
        let root = GroupWriter::open(&file, workers, Some(keep))?;
        flush_file(&file)?;
        let snapshot = Snapshot {
            iteration,
            theta,
            previous_theta,
            config_toml,
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

/// The simulation trace sees every iteration of every scheme (lane) and trial.
impl Observer for SimTraceWriter {
    fn iteration(&mut self, event: &IterationEvent<'_>) -> std::result::Result<(), ObserverError> {
        Ok(self.append(event.lane, event.trial as usize, event.record)?)
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

/// Read the trace whose `/iteration/` and `/worker/` groups are under
/// `group_path` of `path` (`"/"` for a run, `"/sim/gc-sc/trial_0"` for a
/// simulation trial), through the guarded reader ([`TraceFile`]). Every
/// dataset of the schema but the optional ones (`/worker/overrun_s`) must be
/// there. A file that is not such a trace (truncated, corrupted, of another
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
