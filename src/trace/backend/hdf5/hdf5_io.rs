//! The HDF5 writers of the trace schema (see the module above); reading a
//! trace back is the read side's (load.rs over the guarded reader,
//! read/), and snapshots are checkpoint.rs's. The per-iteration datasets are those of
//! the table ([`DATASETS`]): `GroupWriter` creates one per line, and
//! writes the rows through [`TraceColumns::visit`], so no dataset is named here.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Instant;

use hdf5::types::VarLenUnicode;
use hdf5::{Dataset, Datatype, Extent, File, Group, H5Type, Location};
use ndarray::ArrayView2;

use super::access::{close_on_exec, writer_access};
use crate::engine::{IterationEvent, Observer, ObserverError};

use crate::trace::{
    FLUSH_INTERVAL, IterationRecord, RunStatus, TimingEvent, TraceError, TraceMeta, place,
    status_reason,
};
use gradcode_core::record::{
    ColumnVisitor, DATASETS, DatasetSpec, ElementType, SchemaGroup, TraceColumns,
};

type Result<T> = std::result::Result<T, TraceError>;

/// Rows per chunk of every dataset.
const CHUNK_ROWS: usize = 256;

/// Rows buffered in memory before they are written to the datasets, however
/// fast the iterations come (the file is still flushed at most once per
/// [`FLUSH_INTERVAL`]).
const MAX_PENDING_ROWS: usize = 4096;

pub(super) fn string_attr(loc: &Location, name: &str, value: &str) -> Result<()> {
    let v = VarLenUnicode::from_str(value)
        .map_err(|e| TraceError::hdf5(format!("attribute {name}"), e))?;
    loc.new_attr::<VarLenUnicode>()
        .create(name)
        .and_then(|a| a.write_scalar(&v))
        .map_err(|e| TraceError::hdf5(format!("attribute {name}"), e))
}

pub(super) fn scalar_attr<T: H5Type>(loc: &Location, name: &str, value: T) -> Result<()> {
    loc.new_attr::<T>()
        .create(name)
        .and_then(|a| a.write_scalar(&value))
        .map_err(|e| TraceError::hdf5(format!("attribute {name}"), e))
}

pub(super) fn group(parent: &Group, name: &str) -> Result<Group> {
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

/// HDF5 dimension scales (the high-level library's H5DS, libhdf5_hl, which
/// hdf5-metno has no API for), so that netCDF tools and xarray see the
/// dimensions `iteration` and `worker` of a trace by name: each trace group
/// has `iteration/iteration`, `worker/iteration` (1, 2, ..., one row per
/// iteration) and `worker/worker` (1..K), marked as scales and attached to
/// dimension 0 (and 1) of every `/iteration/` and `/worker/` dataset.
mod dimension_scales {
    use std::ffi::{CString, c_char, c_uint};

    use hdf5::Dataset;
    use hdf5_sys::h5::herr_t;
    use hdf5_sys::h5i::hid_t;

    use super::{Result, TraceError};

    // The H5DS functions of libhdf5_hl (hdf5-metno-sys links it with its `hl` feature).
    unsafe extern "C" {
        fn H5DSset_scale(dsid: hid_t, dimname: *const c_char) -> herr_t;
        fn H5DSattach_scale(did: hid_t, dsid: hid_t, idx: c_uint) -> herr_t;
        fn H5DSset_label(did: hid_t, idx: c_uint, label: *const c_char) -> herr_t;
    }

    fn check(status: herr_t, what: impl FnOnce() -> String) -> Result<()> {
        if status < 0 {
            Err(TraceError::hdf5(
                what(),
                "the HDF5 dimension-scale call failed",
            ))
        } else {
            Ok(())
        }
    }

    /// Make `ds` the dimension scale called `name`.
    pub(super) fn set_scale(ds: &Dataset, name: &str) -> Result<()> {
        let c = CString::new(name).map_err(|e| TraceError::Record(e.to_string()))?;
        // SAFETY: `ds` is an open dataset and `c` a NUL-terminated string that outlives the call;
        // HDF5 calls are serialised by hdf5-metno's lock.
        let status = hdf5::sync::sync(|| unsafe { H5DSset_scale(ds.id(), c.as_ptr()) });
        check(status, || format!("dimension scale {}", ds.name()))
    }

    /// Attach the scale to dimension `dim` of `ds`, and label that dimension with the scale's name.
    pub(super) fn attach(ds: &Dataset, scale: &Dataset, dim: usize, name: &str) -> Result<()> {
        let c = CString::new(name).map_err(|e| TraceError::Record(e.to_string()))?;
        let idx = c_uint::try_from(dim).map_err(|e| TraceError::Record(e.to_string()))?;
        // SAFETY: both datasets are open, `dim` is one of the dataset's dimensions (0 or 1),
        // `c` outlives the call; HDF5 calls are serialised by hdf5-metno's lock.
        let status = hdf5::sync::sync(|| unsafe {
            let attached = H5DSattach_scale(ds.id(), scale.id(), idx);
            if attached < 0 {
                attached
            } else {
                H5DSset_label(ds.id(), idx, c.as_ptr())
            }
        });
        check(status, || {
            format!("dimension scale {} of dataset {}", scale.name(), ds.name())
        })
    }
}

/// The scales of a new trace group (see [`dimension_scales`]), attached to
/// its datasets; returns the two iteration scales, which grow with the rows.
fn new_scales(
    it: &Group,
    wk: &Group,
    workers: usize,
    datasets: &[Dataset],
) -> Result<Vec<Dataset>> {
    let counter = |g: &Group| -> Result<Dataset> {
        let ctx = || format!("dataset {}/iteration", g.name());
        let ds = g
            .new_dataset::<u64>()
            .chunk((CHUNK_ROWS,))
            .shape((Extent::resizable(0),))
            .create("iteration")
            .map_err(|e| TraceError::hdf5(ctx(), e))?;
        string_attr(&ds, "unit", "id")?;
        string_attr(
            &ds,
            "description",
            "the iteration, 1-based: the dimension scale of dimension 0",
        )?;
        dimension_scales::set_scale(&ds, "iteration")?;
        Ok(ds)
    };
    let (it_scale, wk_scale) = (counter(it)?, counter(wk)?);
    let ids: Vec<u64> = (1..=workers as u64).collect();
    let worker_scale = wk
        .new_dataset_builder()
        .with_data(&ids)
        .create("worker")
        .map_err(|e| TraceError::hdf5("dataset /worker/worker", e))?;
    string_attr(&worker_scale, "unit", "id")?;
    string_attr(
        &worker_scale,
        "description",
        "the worker, 1-based: the dimension scale of dimension 1",
    )?;
    dimension_scales::set_scale(&worker_scale, "worker")?;
    for (spec, ds) in DATASETS.iter().zip(datasets) {
        attach_scales(spec, ds, [&it_scale, &wk_scale, &worker_scale])?;
    }
    Ok(vec![it_scale, wk_scale])
}

/// Attach the scales `[iteration/iteration, worker/iteration, worker/worker]`
/// of its trace group to the dataset `ds` of the table line `spec`.
fn attach_scales(spec: &DatasetSpec, ds: &Dataset, scales: [&Dataset; 3]) -> Result<()> {
    let [it_scale, wk_scale, worker_scale] = scales;
    match spec.group {
        SchemaGroup::Iteration => dimension_scales::attach(ds, it_scale, 0, "iteration"),
        SchemaGroup::Worker => {
            dimension_scales::attach(ds, wk_scale, 0, "iteration")?;
            dimension_scales::attach(ds, worker_scale, 1, "worker")
        }
    }
}

/// A trace being resumed that lacks datasets of the table (an optional one
/// newer than the gradcode that wrote it, say `/iteration/test_accuracy`):
/// `growing` created them empty; their first `keep` rows get the default of
/// [`IterationRecord::new`] (NaN for a value not measured, never HDF5's
/// fill value 0, which would read as a measured 0), written a chunk at a
/// time, and they get the trace group's dimension scales when it has them.
fn fill_added(
    it: &Group,
    wk: &Group,
    workers: usize,
    keep: usize,
    datasets: &[Dataset],
    added: &[bool],
) -> Result<()> {
    let mut start = 0;
    while start < keep {
        let end = keep.min(start + CHUNK_ROWS);
        let defaults = vec![IterationRecord::new(workers); end - start];
        TraceColumns::from_records(workers, &defaults).visit(&mut RowWriter {
            datasets,
            rows: start..end,
            workers,
            only: Some(added),
        })?;
        start = end;
    }
    let names = [(it, "iteration"), (wk, "iteration"), (wk, "worker")];
    if names.iter().all(|(g, name)| g.link_exists(name)) {
        let scales = names
            .iter()
            .map(|(g, name)| {
                g.dataset(name)
                    .map_err(|e| TraceError::hdf5(format!("dataset {}/{name}", g.name()), e))
            })
            .collect::<Result<Vec<_>>>()?;
        for (spec, ds) in DATASETS.iter().zip(datasets) {
            if added[spec.index] {
                attach_scales(spec, ds, [&scales[0], &scales[1], &scales[2]])?;
            }
        }
    }
    Ok(())
}

/// The iteration scales of a trace being resumed, cut to `keep` rows (none
/// in a trace of a gradcode without scales).
fn kept_scales(it: &Group, wk: &Group, keep: usize) -> Result<Vec<Dataset>> {
    let mut out = Vec::new();
    for g in [it, wk] {
        if !g.link_exists("iteration") {
            continue;
        }
        let ctx = || format!("dataset {}/iteration", g.name());
        let ds = g
            .dataset("iteration")
            .map_err(|e| TraceError::hdf5(ctx(), e))?;
        ds.resize((keep,)).map_err(|e| TraceError::hdf5(ctx(), e))?;
        out.push(ds);
    }
    Ok(out)
}

/// The `/iteration/` and `/worker/` datasets of one trace, with the rows not yet written.
pub(super) struct GroupWriter {
    workers: usize,
    written: usize,
    pending: Vec<IterationRecord>,
    /// The datasets of the schema, in table order ([`DATASETS`]).
    datasets: Vec<Dataset>,
    /// The iteration dimension scales (`iteration/iteration`, `worker/iteration`), one row per iteration.
    scales: Vec<Dataset>,
}

impl GroupWriter {
    fn create(root: &Group, workers: usize) -> Result<Self> {
        Self::open(root, workers, None)
    }

    /// The datasets of a new trace (`keep` = None), or of an existing one
    /// reopened with its first `keep` rows kept (resuming a run).
    pub(super) fn open(root: &Group, workers: usize, keep: Option<usize>) -> Result<Self> {
        let it = group(root, SchemaGroup::Iteration.name())?;
        let wk = group(root, SchemaGroup::Worker.name())?;
        // Resuming: the datasets of the table the trace does not have yet.
        let mut added = vec![false; DATASETS.len()];
        let datasets = DATASETS
            .iter()
            .map(|spec| {
                let parent = match spec.group {
                    SchemaGroup::Iteration => &it,
                    SchemaGroup::Worker => &wk,
                };
                added[spec.index] = keep.is_some() && !parent.link_exists(spec.name);
                growing(keep, parent, spec, workers)
            })
            .collect::<Result<Vec<_>>>()?;
        let scales = match keep {
            None => new_scales(&it, &wk, workers, &datasets)?,
            Some(keep) => {
                if added.contains(&true) {
                    fill_added(&it, &wk, workers, keep, &datasets, &added)?;
                }
                kept_scales(&it, &wk, keep)?
            }
        };
        Ok(Self {
            workers,
            written: keep.unwrap_or(0),
            pending: Vec::new(),
            datasets,
            scales,
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
    pub(super) fn write(&mut self) -> Result<()> {
        let m = self.pending.len();
        if m == 0 {
            return Ok(());
        }
        let mut columns = TraceColumns::from_records(self.workers, &self.pending);
        columns.visit(&mut RowWriter {
            datasets: &self.datasets,
            rows: self.written..self.written + m,
            workers: self.workers,
            only: None,
        })?;
        let rows = self.written..self.written + m;
        let numbers: Vec<u64> = (rows.start as u64 + 1..=rows.end as u64).collect();
        for scale in &self.scales {
            scale
                .resize((rows.end,))
                .and_then(|_| scale.write_slice(&numbers, rows.clone()))
                .map_err(|e| TraceError::hdf5(format!("dataset {}", scale.name()), e))?;
        }
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
    /// Per dataset of the table, whether to write it (`None`: every one).
    only: Option<&'a [bool]>,
}

impl RowWriter<'_> {
    fn put<T: H5Type>(&self, spec: &DatasetSpec, values: &[T]) -> Result<()> {
        if self.only.is_some_and(|only| !only[spec.index]) {
            return Ok(());
        }
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

/// The root attributes of a new trace; its status `running`.
fn write_meta(file: &File, meta: &TraceMeta) -> Result<()> {
    string_attr(file, "scheme", &meta.scheme)?;
    scalar_attr(file, "workers", meta.workers as u64)?;
    string_attr(file, "config_toml", &meta.config_toml)?;
    string_attr(file, "gradcode_version", env!("CARGO_PKG_VERSION"))?;
    scalar_attr(file, "trace_schema", crate::trace::TRACE_SCHEMA)?;
    scalar_attr(file, "seed", meta.seed)?;
    for (name, value) in crate::provenance::trace_attributes() {
        string_attr(file, name, &value)?;
    }
    string_attr(file, "status", RunStatus::Running.name())?;
    string_attr(file, "status_reason", "")
}

/// The end of a writer: after a successful flush, record how the run ended;
/// close the file either way (the flush's error first).
fn close_with_status(
    file: File,
    path: &Path,
    flushed: Result<()>,
    status: RunStatus,
    reason: &str,
) -> Result<()> {
    flushed.and_then(|()| write_status(&file, status, reason))?;
    file.close()
        .map_err(|e| TraceError::hdf5(format!("close {}", path.display()), e))
}

/// Set the string attribute `name` of `loc`, creating it when absent.
pub(super) fn set_string_attr(loc: &Location, name: &str, value: &str) -> Result<()> {
    let names = loc
        .attr_names()
        .map_err(|e| TraceError::hdf5(format!("attribute {name}"), e))?;
    if names.iter().any(|n| n == name) {
        let v = VarLenUnicode::from_str(value)
            .map_err(|e| TraceError::hdf5(format!("attribute {name}"), e))?;
        let written = loc.attr(name).and_then(|a| {
            let is_vlen = a
                .dtype()
                .and_then(|t| t.to_descriptor())
                .is_ok_and(|d| d == hdf5::types::TypeDescriptor::VarLenUnicode);
            if is_vlen {
                a.write_scalar(&v).map(|_| true)
            } else {
                Ok(false)
            }
        });
        match written {
            Ok(true) => return Ok(()),
            // Another type (a file of another writer): replaced.
            Ok(false) => loc
                .delete_attr(name)
                .map_err(|e| TraceError::hdf5(format!("attribute {name}"), e))?,
            Err(e) => return Err(TraceError::hdf5(format!("attribute {name}"), e)),
        }
    }
    string_attr(loc, name, value)
}

/// Set the scalar attribute `name` of `loc`, creating it when absent.
pub(super) fn set_scalar_attr<T: H5Type>(loc: &Location, name: &str, value: T) -> Result<()> {
    let names = loc
        .attr_names()
        .map_err(|e| TraceError::hdf5(format!("attribute {name}"), e))?;
    if names.iter().any(|n| n == name) {
        loc.attr(name)
            .and_then(|a| a.write_scalar(&value))
            .map_err(|e| TraceError::hdf5(format!("attribute {name}"), e))
    } else {
        scalar_attr(loc, name, value)
    }
}

/// Record the run's status and its one-line reason in the root attributes.
pub(super) fn write_status(file: &File, status: RunStatus, reason: &str) -> Result<()> {
    if status != RunStatus::Running {
        set_string_attr(file, "ended_at", &crate::provenance::now_utc())?;
    }
    set_string_attr(file, "status", status.name())?;
    set_string_attr(file, "status_reason", &status_reason(reason))
}

/// Create the trace at `path` as [`place`] describes: the file is made under
/// a temporary name in the same folder (root attributes, then `build`),
/// flushed, and renamed into place. `overwrite`: an existing file may be
/// replaced, when no process holds its lock; otherwise it is left untouched
/// and the error names it. A missing folder is created.
fn create_placed<T>(
    path: &Path,
    meta: &TraceMeta,
    overwrite: bool,
    build: impl FnOnce(&File) -> Result<T>,
) -> Result<(File, T)> {
    let existing = place::claim(path, overwrite).map_err(TraceError::Place)?;
    let folder = place::folder(path);
    std::fs::create_dir_all(folder).map_err(|e| {
        TraceError::Place(format!(
            "cannot create the folder {} of {}: {e}",
            folder.display(),
            path.display()
        ))
    })?;
    let temp = place::sibling(path, "tmp");
    let made = File::with_options()
        .with_fapl(|fapl| {
            writer_access(fapl);
            fapl
        })
        .create_excl(&temp)
        .map_err(|e| TraceError::hdf5(format!("cannot create {}", temp.display()), e))
        .and_then(|file| {
            close_on_exec(&file);
            write_meta(&file, meta)?;
            let built = build(&file)?;
            flush_file(&file, path)?;
            Ok((file, built))
        });
    let (file, built) = match made {
        Ok(x) => x,
        Err(e) => {
            let _ = std::fs::remove_file(&temp);
            return Err(e);
        }
    };
    if let Err(e) = place::install(&temp, path, existing, overwrite) {
        drop(built);
        let _ = file.close();
        let _ = std::fs::remove_file(&temp);
        return Err(TraceError::Place(e));
    }
    Ok((file, built))
}

pub(super) fn flush_file(file: &File, path: &Path) -> Result<()> {
    file.flush()
        .map_err(|e| TraceError::hdf5(format!("flush {}", path.display()), e))
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
/// w.close()?; // status `completed`
/// # Ok(()) }
/// ```
pub struct TraceWriter {
    pub(super) file: Option<File>,
    pub(super) path: PathBuf,
    pub(super) root: GroupWriter,
    pub(super) last_flush: Instant,
    /// The committed snapshot slot (index into [`SNAPSHOT_SLOTS`](crate::trace::SNAPSHOT_SLOTS)), `None`
    /// before the first snapshot (or in a trace without slots).
    pub(super) committed: Option<usize>,
}

impl TraceWriter {
    /// Create `path`, replacing a file there that no process has open (see
    /// [`TraceWriter::create_with`]).
    pub fn create(path: &Path, meta: &TraceMeta) -> Result<Self> {
        Self::create_with(path, meta, true)
    }

    /// Create the trace at `path` with the root attributes of `meta` and
    /// status `running`: built under a temporary name in the same folder
    /// and renamed into place when flushed, so a reader never sees it half
    /// made. An existing file is replaced only with `overwrite`, and only
    /// when no process holds its lock (a running job writing it, a reader);
    /// otherwise it is left as it is and the error names it.
    pub fn create_with(path: &Path, meta: &TraceMeta, overwrite: bool) -> Result<Self> {
        let (file, root) = create_placed(path, meta, overwrite, |file| {
            GroupWriter::create(file, meta.workers)
        })?;
        Ok(Self {
            file: Some(file),
            path: path.to_path_buf(),
            root,
            last_flush: Instant::now(),
            committed: None,
        })
    }

    /// The file as created or resumed.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append one iteration. Written to the file, and the file flushed, when
    /// [`FLUSH_INTERVAL`] has passed since the last flush.
    pub fn append(&mut self, record: &IterationRecord) -> Result<()> {
        self.root.push(record)?;
        if self.last_flush.elapsed() >= FLUSH_INTERVAL {
            self.flush()?;
        } else if self.root.pending.len() >= MAX_PENDING_ROWS {
            self.root.write()?;
        }
        Ok(())
    }

    /// Iterations appended so far.
    pub fn iterations(&self) -> usize {
        self.root.written + self.root.pending.len()
    }

    /// The losses at the final θ, as attributes of `/model` (`final_train_loss`,
    /// `final_test_loss`, `final_test_accuracy`; NaN when not known), and
    /// flush.
    pub fn write_final_losses(&mut self, train: f64, test: f64, test_accuracy: f64) -> Result<()> {
        let file = self.file.as_ref().expect("open until close");
        let model = group(file, "model")?;
        set_scalar_attr(&model, "final_train_loss", train)?;
        set_scalar_attr(&model, "final_test_loss", test)?;
        set_scalar_attr(&model, "final_test_accuracy", test_accuracy)?;
        self.flush()
    }

    /// Write the model parameters to `/model/theta` (replacing an earlier
    /// snapshot; its length may not change), with attribute `iteration`, and flush.
    pub fn write_theta(&mut self, iteration: u64, theta: &[f64]) -> Result<()> {
        self.write_model_vector("theta", "model parameters", iteration, theta)?;
        self.flush()
    }

    pub(super) fn write_model_vector(
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

    /// Set the root string attribute `name` (created or replaced).
    pub fn set_root_attr(&mut self, name: &str, value: &str) -> Result<()> {
        set_string_attr(self.file.as_ref().expect("open until close"), name, value)
    }

    /// Write every pending record and flush the file.
    pub fn flush(&mut self) -> Result<()> {
        self.root.write()?;
        flush_file(self.file.as_ref().expect("open until close"), &self.path)?;
        self.last_flush = Instant::now();
        Ok(())
    }

    /// Flush and close the file, its status `completed`.
    pub fn close(self) -> Result<()> {
        self.finish(RunStatus::Completed, "")
    }

    /// Record how the run ended (`status`, with a one-line `reason`), flush
    /// and close the file.
    pub fn finish(mut self, status: RunStatus, reason: &str) -> Result<()> {
        let flushed = self.flush();
        let file = self.file.take().expect("open until close");
        close_with_status(file, &self.path, flushed, status, reason)
    }
}

impl Drop for TraceWriter {
    /// A writer dropped without `close` (an error path) still writes what it
    /// has, its status `failed`.
    fn drop(&mut self) {
        if let Some(file) = &self.file {
            let written = self.root.write().and_then(|()| {
                write_status(
                    file,
                    RunStatus::Failed,
                    "the program writing the trace stopped with an error before closing it",
                )
            });
            if let Err(e) = written.and_then(|()| flush_file(file, &self.path)) {
                crate::errln!("warning: trace not fully written: {e}");
            }
        }
    }
}

/// The trace of a simulation: one trace per compared scheme and trial at
/// `/sim/<scheme>/trial_<k>/`.
pub struct SimTraceWriter {
    file: Option<File>,
    path: PathBuf,
    schemes: Vec<String>,
    workers: usize,
    /// (scheme, trial) → writer, created at its first record.
    groups: Vec<Vec<Option<GroupWriter>>>,
    sim: Group,
    last_flush: Instant,
}

impl SimTraceWriter {
    /// Create `path`, replacing a file there that no process has open (see
    /// [`SimTraceWriter::create_with`]).
    pub fn create(
        path: &Path,
        meta: &TraceMeta,
        schemes: &[String],
        trials: usize,
        iterations: usize,
        model_time_unit_s: f64,
    ) -> Result<Self> {
        Self::create_with(
            path,
            meta,
            schemes,
            trials,
            iterations,
            model_time_unit_s,
            true,
        )
    }

    /// Create the trace at `path` (status `running`), as
    /// [`TraceWriter::create_with`] does: renamed into place when flushed,
    /// an existing file replaced only with `overwrite` and when no process
    /// has it open. `schemes` in `simulate.compare` order;
    /// `model_time_unit_s` converts model time to the seconds of the records.
    pub fn create_with(
        path: &Path,
        meta: &TraceMeta,
        schemes: &[String],
        trials: usize,
        iterations: usize,
        model_time_unit_s: f64,
        overwrite: bool,
    ) -> Result<Self> {
        let (file, sim) = create_placed(path, meta, overwrite, |file| {
            let sim = group(file, "sim")?;
            for name in schemes {
                let g = group(&sim, name)?;
                string_attr(&g, "scheme", name)?;
                scalar_attr(&g, "trials", trials as u64)?;
                scalar_attr(&g, "iterations", iterations as u64)?;
                scalar_attr(&g, "model_time_unit_s", model_time_unit_s)?;
            }
            Ok(sim)
        })?;
        Ok(Self {
            file: Some(file),
            path: path.to_path_buf(),
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
        let rows = slots[trial].as_mut().expect("created above");
        rows.push(record)?;
        if self.last_flush.elapsed() >= FLUSH_INTERVAL {
            self.flush()?;
        } else if rows.pending.len() >= MAX_PENDING_ROWS {
            rows.write()?;
        }
        Ok(())
    }

    /// Write every pending record and flush the file.
    pub fn flush(&mut self) -> Result<()> {
        for g in self.groups.iter_mut().flatten().flatten() {
            g.write()?;
        }
        flush_file(self.file.as_ref().expect("open until close"), &self.path)?;
        self.last_flush = Instant::now();
        Ok(())
    }

    /// Flush and close the file, its status `completed`.
    pub fn close(self) -> Result<()> {
        self.finish(RunStatus::Completed, "")
    }

    /// Record how the simulation ended (`status`, a one-line `reason`),
    /// flush and close the file.
    pub fn finish(mut self, status: RunStatus, reason: &str) -> Result<()> {
        let flushed = self.flush();
        let file = self.file.take().expect("open until close");
        close_with_status(file, &self.path, flushed, status, reason)
    }
}

/// The simulation trace sees every iteration of every scheme (lane) and trial.
impl Observer for SimTraceWriter {
    fn iteration(&mut self, event: &IterationEvent<'_>) -> std::result::Result<(), ObserverError> {
        Ok(self.append(event.lane, event.trial as usize, event.record)?)
    }
}

impl Drop for SimTraceWriter {
    /// A writer dropped without `close` (an error path) still writes what it
    /// has, its status `failed`.
    fn drop(&mut self) {
        if self.file.is_some() {
            let written = self.flush().and_then(|()| {
                write_status(
                    self.file.as_ref().expect("checked"),
                    RunStatus::Failed,
                    "the simulation stopped with an error before closing its trace",
                )
            });
            if let Err(e) =
                written.and_then(|()| flush_file(self.file.as_ref().expect("checked"), &self.path))
            {
                crate::errln!("warning: simulation trace not fully written: {e}");
            }
        }
    }
}
