//! The one reader of trace files, guarded: `gradcode inspect`, `train
//! --resume` ([`crate::trace::TraceWriter::resume`]) and [`crate::trace::read_trace`] all
//! read through [`TraceFile`].
//!
//! **The guard.** Nothing is read from a file before its shape is checked:
//! a dataset must have the dimensions the schema gives it (`[iterations]`,
//! `[iterations, workers]`, `[parameters]`, `[events]`), values of the kind
//! it should hold (numbers or strings), and claim no more bytes (the product
//! of its dimensions × the larger of the stored and the read element size)
//! than the file has on disk, as traces are not compressed; the schema's
//! datasets of one trace group together claim no more than the file either.
//! An attribute must be a scalar of the kind it should hold. A file that
//! breaks a rule gives a [`TraceError`] naming the dataset (or attribute)
//! and the rule, on one line, before anything is allocated for it: a
//! corrupted or hostile header claiming 2^31 rows is refused, not read.
//! Datasets outside the schema (the `extras` of `inspect`) are read (and
//! summarised) when numeric, under the same size rule.
//!
//! **Memory bounded by the file.** Besides the rule per dataset, everything
//! read through one [`TraceFile`] together (every trial of a simulation,
//! the model, the timing, the extras) claims no more bytes than the file:
//! a trace group of a simulation hard-linked many times is read within
//! that budget, then refused. The walk over the groups outside the schema reads each object
//! once, refuses a group linked twice (into itself, say) and a link into
//! another file, and goes at most [`MAX_GROUP_DEPTH`] groups deep. Values
//! read are checked where a summary would size memory by them: a cluster id
//! is −1 or 1..=K.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use hdf5::types::{TypeDescriptor, VarLenAscii, VarLenUnicode};
use hdf5::{Attribute, Dataset, File, Group, H5Type, LinkType, Location, LocationType};

use crate::trace::summary::Distribution;
use crate::trace::{TimingEvent, TraceError};
use gradcode_core::record::{
    ColumnVisitor, DATASETS, DatasetSpec, SchemaGroup, TraceColumns, rows_dataset,
};

type Result<T> = std::result::Result<T, TraceError>;

pub use crate::trace::TraceKind;
use crate::trace::contents::{ExtraDataset, ExtraGroup, ModelInfo, RootInfo, SimScheme};

/// The snapshot slots of a training trace (`/model/snapshot_0`, `_1` and
/// the attribute `snapshot` of `/model` naming the committed one).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SlotState {
    /// No slot: no snapshot, or a trace written before the slots.
    NoSlots,
    /// Slots, none committed yet (killed while writing the first).
    Uncommitted,
    /// The committed slot: θ and the iterate before it after `iteration`.
    Committed {
        slot: usize,
        iteration: u64,
        theta: Vec<f64>,
        previous: Vec<f64>,
    },
}

/// What the values of a dataset or attribute must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Integers or floats (read with HDF5's conversion to the type asked for).
    Number,
    /// Strings.
    String,
}

impl Kind {
    fn of(desc: &TypeDescriptor) -> Option<Kind> {
        use TypeDescriptor as T;
        match desc {
            T::Integer(_) | T::Unsigned(_) | T::Float(_) => Some(Kind::Number),
            T::VarLenUnicode | T::VarLenAscii | T::FixedAscii(_) | T::FixedUnicode(_) => {
                Some(Kind::String)
            }
            _ => None,
        }
    }

    fn plural(self) -> &'static str {
        match self {
            Kind::Number => "numbers",
            Kind::String => "strings",
        }
    }
}

/// What a dataset must be before it is read.
struct Expect {
    /// Its dimensions, as the schema names them (`[iterations, workers]`).
    dims: &'static str,
    ndim: usize,
    kind: Kind,
    /// Bytes per value of the type it is read as.
    read_size: usize,
}

impl Expect {
    fn schema(spec: &DatasetSpec) -> Self {
        Expect {
            dims: spec.group.shape_name(),
            ndim: spec.group.ndim(),
            kind: Kind::Number,
            read_size: spec.element.size(),
        }
    }

    fn vector<T>(dims: &'static str, kind: Kind) -> Self {
        Expect {
            dims,
            ndim: 1,
            kind,
            read_size: std::mem::size_of::<T>(),
        }
    }
}

/// `group` + `/` + `rel`: the full path of a dataset of a trace group.
fn full(group: &str, rel: &str) -> String {
    format!("{}/{rel}", group.trim_end_matches('/'))
}

/// Bytes of `shape` values of `size` bytes, `None` beyond 2^128.
fn claimed_bytes(shape: &[usize], size: usize) -> Option<u128> {
    shape
        .iter()
        .try_fold(size as u128, |acc, &n| acc.checked_mul(n as u128))
}

fn record(message: String) -> TraceError {
    TraceError::Record(message)
}

/// The datasets of the schema present under one trace group, guarded, in
/// table order ([`DATASETS`]): `None` where absent.
pub(crate) struct SchemaDatasets {
    /// The trace group (`/`, `/sim/gc/trial_0`).
    pub group: String,
    /// K: the columns of the `/worker/` datasets, else the root attribute, else 0.
    pub workers: usize,
    /// Per dataset of the table: the dataset and its shape.
    pub found: Vec<Option<(Dataset, Vec<usize>)>>,
}

impl SchemaDatasets {
    /// The shape of a dataset of the table, `None` when absent.
    pub fn shape(&self, spec: &DatasetSpec) -> Option<&[usize]> {
        self.found[spec.index].as_ref().map(|(_, s)| s.as_slice())
    }
}

/// How deep below a trace group the walk over groups outside the schema goes
/// (`/notes/a/b` is 3 deep); a deeper group makes the file an input error.
pub const MAX_GROUP_DEPTH: usize = 32;

/// A trace file open for reading, through the guard (see the module doc).
pub struct TraceFile {
    file: File,
    path: PathBuf,
    /// The file's size on disk, which no dataset may claim to exceed.
    file_bytes: u64,
    /// Bytes the reads through this file may still claim, all together.
    budget: Cell<u128>,
}

impl TraceFile {
    /// Open `path` (read only).
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_as(path, false)
    }

    /// Open `path` for reading and writing (resuming a run).
    pub(crate) fn open_rw(path: &Path) -> Result<Self> {
        Self::open_as(path, true)
    }

    fn open_as(path: &Path, write: bool) -> Result<Self> {
        // A FIFO or a device is refused before HDF5 opens it (it would block).
        let file_bytes = crate::files::check_regular(path)
            .map_err(|e| record(format!("cannot read {}: {e}", path.display())))?
            .len();
        let file = if write {
            File::with_options()
                .with_fapl(|fapl| {
                    super::access::writer_access(fapl);
                    fapl
                })
                .open_rw(path)
        } else {
            File::open(path)
        }
        .map_err(|e| {
            TraceError::hdf5(
                format!(
                    "cannot open {}{}",
                    path.display(),
                    if write { " for writing" } else { "" }
                ),
                e,
            )
        })?;
        super::access::close_on_exec(&file);
        Ok(Self {
            file,
            path: path.to_path_buf(),
            file_bytes,
            budget: Cell::new(u128::from(file_bytes)),
        })
    }

    /// Take `bytes` from the read budget (see the module doc); `false`, with
    /// nothing taken, when less is left.
    fn take_budget(&self, bytes: u128) -> bool {
        let left = self.budget.get();
        if bytes > left {
            return false;
        }
        self.budget.set(left - bytes);
        true
    }

    /// Take the bytes `ds` (at `path`, of `shape`) claims read as `read_size`-byte
    /// values from the read budget, or refuse it naming the rule.
    fn charge(&self, ds: &Dataset, path: &str, shape: &[usize], read_size: usize) -> Result<()> {
        let size = ds
            .dtype()
            .map_err(|e| TraceError::hdf5(format!("dataset {path}"), e))?
            .size()
            .max(read_size);
        let bytes = claimed_bytes(shape, size).unwrap_or(u128::MAX);
        if !self.take_budget(bytes) {
            return Err(record(format!(
                "dataset {path} claims {bytes} bytes, which with the datasets read before it is \
                 more than the {}-byte file holds (a dataset or group linked more than once?)",
                self.file_bytes
            )));
        }
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's size on disk when opened: the bound of every dataset.
    pub fn file_bytes(&self) -> u64 {
        self.file_bytes
    }

    /// The open file, for the writer that resumes it.
    pub(crate) fn into_file(self) -> File {
        self.file
    }

    fn group(&self, path: &str) -> Result<Group> {
        self.file
            .group(path)
            .map_err(|e| TraceError::hdf5(format!("group {path}"), e))
    }

    /// `name` is a group in `group` (`false` when there is no such link).
    fn has_group(&self, group: &Group, owner: &str, name: &str) -> Result<bool> {
        if !group.link_exists(name) {
            return Ok(false);
        }
        group
            .loc_type_by_name(name)
            .map(|t| t == LocationType::Group)
            .map_err(|e| TraceError::hdf5(format!("object {}", full(owner, name)), e))
    }

    /// Check `ds` (at `path`) against what it must be and against the file
    /// size (see the module doc); its shape.
    fn guard(&self, ds: &Dataset, path: &str, expect: &Expect) -> Result<Vec<usize>> {
        let hdf5 = |e| TraceError::hdf5(format!("dataset {path}"), e);
        let shape = ds.get_shape().map_err(hdf5)?;
        if shape.len() != expect.ndim {
            return Err(record(format!(
                "dataset {path} has shape {shape:?}, not {}",
                expect.dims
            )));
        }
        let dtype = ds.dtype().map_err(hdf5)?;
        let desc = dtype.to_descriptor().map_err(hdf5)?;
        if Kind::of(&desc) != Some(expect.kind) {
            return Err(record(format!(
                "dataset {path} holds {desc}, not {}",
                expect.kind.plural()
            )));
        }
        self.fits(path, &shape, dtype.size().max(expect.read_size))?;
        Ok(shape)
    }

    /// The size rule: `shape` values of `size` bytes fit in the file.
    fn fits(&self, path: &str, shape: &[usize], size: usize) -> Result<()> {
        let bytes = claimed_bytes(shape, size);
        if bytes.is_none_or(|b| b > u128::from(self.file_bytes)) {
            return Err(record(format!(
                "dataset {path} claims shape {shape:?} of {size}-byte values, {} bytes, \
                 more than the {}-byte file holds (traces are not compressed: the file is corrupt)",
                bytes.map_or("over 2^128".to_string(), |b| b.to_string()),
                self.file_bytes
            )));
        }
        Ok(())
    }

    /// Attribute `name` of `loc` (at `owner`), when present, checked: a
    /// scalar of `kind` whose value fits in the file.
    fn attr(
        &self,
        loc: &Location,
        owner: &str,
        name: &str,
        kind: Kind,
    ) -> Result<Option<Attribute>> {
        let what = || format!("attribute {name} of {owner}");
        let names = loc
            .attr_names()
            .map_err(|e| TraceError::hdf5(format!("attributes of {owner}"), e))?;
        if !names.iter().any(|n| n == name) {
            return Ok(None);
        }
        let a = loc.attr(name).map_err(|e| TraceError::hdf5(what(), e))?;
        let shape = a.get_shape().map_err(|e| TraceError::hdf5(what(), e))?;
        if !shape.is_empty() {
            return Err(record(format!(
                "{} has shape {shape:?}, not a scalar",
                what()
            )));
        }
        let dtype = a.dtype().map_err(|e| TraceError::hdf5(what(), e))?;
        let desc = dtype
            .to_descriptor()
            .map_err(|e| TraceError::hdf5(what(), e))?;
        if Kind::of(&desc) != Some(kind) {
            return Err(record(format!(
                "{} holds {desc}, not {}",
                what(),
                kind.plural()
            )));
        }
        if dtype.size() as u64 > self.file_bytes {
            return Err(record(format!(
                "{} claims {}-byte values, more than the {}-byte file holds",
                what(),
                dtype.size(),
                self.file_bytes
            )));
        }
        Ok(Some(a))
    }

    /// A string attribute, `None` when absent; an error when it is not a
    /// scalar variable-length string.
    fn string_attr(&self, loc: &Location, owner: &str, name: &str) -> Result<Option<String>> {
        let Some(a) = self.attr(loc, owner, name, Kind::String)? else {
            return Ok(None);
        };
        read_string(&a, owner, name)?
            .ok_or_else(|| {
                record(format!(
                    "attribute {name} of {owner} is not a variable-length string"
                ))
            })
            .map(Some)
    }

    /// Read every variable-length string the file holds (the attributes
    /// of every group and dataset, and string datasets): the values that
    /// live in HDF5's global heap, whose damage can make HDF5 loop forever.
    /// Returns how many were read. Run by the trace probe (`probe.rs`) in a
    /// child process with a deadline, before a reader touches the file.
    pub(crate) fn read_every_string(&self) -> Result<usize> {
        let hdf5 = |what: &str, e| TraceError::hdf5(what.to_string(), e);
        let mut read = 0;
        let root = self.group("/")?;
        // Each object once, known by its address: a group linked into
        // itself (or twice) is visited once; links into other files are
        // never followed.
        let mut seen = std::collections::HashSet::new();
        seen.insert(self.object_key(&root, "/")?);
        let mut groups = vec![("/".to_string(), root)];
        while let Some((path, group)) = groups.pop() {
            if seen.len() > MAX_GROUPS_WALKED {
                return Err(record(format!(
                    "more than {MAX_GROUPS_WALKED} objects (a gradcode trace has far fewer)"
                )));
            }
            let mut locations: Vec<(String, Location)> = vec![(path.clone(), (*group).clone())];
            let mut links = Vec::new();
            group
                .iter_visit_default(|name, info| {
                    links.push((name.to_string(), info.link_type));
                    Ok(())
                })
                .map_err(|e| hdf5(&path, e))?;
            for (name, link) in links {
                let child = if path == "/" {
                    format!("/{name}")
                } else {
                    format!("{path}/{name}")
                };
                if link == LinkType::External {
                    continue;
                }
                match group.loc_type_by_name(&name).map_err(|e| hdf5(&child, e))? {
                    LocationType::Group => {
                        let g = group.group(&name).map_err(|e| hdf5(&child, e))?;
                        if seen.insert(self.object_key(&g, &child)?) {
                            groups.push((child, g));
                        }
                    }
                    LocationType::Dataset => {
                        let ds = group.dataset(&name).map_err(|e| hdf5(&child, e))?;
                        if !seen.insert(self.object_key(&ds, &child)?) {
                            continue;
                        }
                        let is_string = ds.dtype().and_then(|t| t.to_descriptor()).is_ok_and(|d| {
                            matches!(
                                d,
                                TypeDescriptor::VarLenUnicode | TypeDescriptor::VarLenAscii
                            )
                        });
                        if is_string {
                            read += read_strings(&ds, &child)?.len();
                        }
                        locations.push((child, (**ds).clone()));
                    }
                    _ => {}
                }
            }
            for (owner, location) in &locations {
                for name in location.attr_names().map_err(|e| hdf5(owner, e))? {
                    let a = location.attr(&name).map_err(|e| hdf5(owner, e))?;
                    let what = format!("attribute {name} of {owner}");
                    let desc = a
                        .dtype()
                        .and_then(|t| t.to_descriptor())
                        .map_err(|e| hdf5(&what, e))?;
                    // Scalars and arrays alike (DIMENSION_LABELS is an array).
                    read += match desc {
                        TypeDescriptor::VarLenUnicode => a
                            .read_raw::<VarLenUnicode>()
                            .map_err(|e| hdf5(&what, e))?
                            .len(),
                        TypeDescriptor::VarLenAscii => a
                            .read_raw::<VarLenAscii>()
                            .map_err(|e| hdf5(&what, e))?
                            .len(),
                        _ => 0,
                    };
                }
            }
        }
        Ok(read)
    }

    /// A numeric scalar attribute, `None` when absent.
    fn number_attr<T: H5Type>(&self, loc: &Location, owner: &str, name: &str) -> Result<Option<T>> {
        let Some(a) = self.attr(loc, owner, name, Kind::Number)? else {
            return Ok(None);
        };
        a.read_scalar::<T>()
            .map(Some)
            .map_err(|e| TraceError::hdf5(format!("attribute {name} of {owner}"), e))
    }

    /// A string attribute of the group at `object` (`"/"` for the root), `None` when absent.
    pub fn group_string_attr(&self, object: &str, name: &str) -> Result<Option<String>> {
        let g = self.group(object)?;
        self.string_attr(&g, object, name)
    }

    /// A numeric attribute of the group at `object`, `None` when absent.
    pub fn group_number_attr<T: H5Type>(&self, object: &str, name: &str) -> Result<Option<T>> {
        let g = self.group(object)?;
        self.number_attr(&g, object, name)
    }

    /// The root attributes; an error when the file is not a gradcode trace
    /// (no `gradcode_version`, or neither `/iteration` nor `/sim`).
    pub fn root(&self) -> Result<RootInfo> {
        let root: &Group = &self.file;
        let gradcode_version = self
            .string_attr(root, "/", "gradcode_version")?
            .ok_or_else(|| {
                record("not a gradcode trace (no root attribute gradcode_version)".into())
            })?;
        let trace_schema = self.number_attr::<u64>(root, "/", "trace_schema")?;
        crate::trace::check_schema(trace_schema, &gradcode_version).map_err(record)?;
        let kind = if self.has_group(root, "/", "sim")? {
            TraceKind::Simulation
        } else if self.has_group(root, "/", "iteration")? {
            TraceKind::Train
        } else {
            return Err(record(
                "not a gradcode trace (neither an /iteration nor a /sim group)".into(),
            ));
        };
        Ok(RootInfo {
            kind,
            gradcode_version,
            scheme: self.string_attr(root, "/", "scheme")?,
            workers: self.number_attr::<u64>(root, "/", "workers")?,
            seed: self.number_attr::<u64>(root, "/", "seed")?,
            config_toml: self.string_attr(root, "/", "config_toml")?,
            status: self.string_attr(root, "/", "status")?,
            status_reason: self.string_attr(root, "/", "status_reason")?,
        })
    }

    /// The schema's datasets present under `group`, each guarded (nothing
    /// read): the dimensions of its group, numbers, no more bytes than the
    /// file, `/worker/` datasets with one number of columns. `workers` (the
    /// root attribute) is K when no `/worker/` dataset says it.
    pub(crate) fn schema_datasets(
        &self,
        group: &str,
        workers: Option<u64>,
    ) -> Result<SchemaDatasets> {
        let g = self.group(group)?;
        let mut found = Vec::with_capacity(DATASETS.len());
        let mut k: Option<(usize, String)> = None;
        let mut total = 0u128;
        for spec in DATASETS {
            let path = full(group, spec.path);
            if !g.link_exists(spec.path) {
                found.push(None);
                continue;
            }
            let ds = g
                .dataset(spec.path)
                .map_err(|e| TraceError::hdf5(format!("dataset {path}"), e))?;
            let expect = Expect::schema(spec);
            let shape = self.guard(&ds, &path, &expect)?;
            if spec.group == SchemaGroup::Worker {
                match &k {
                    None => k = Some((shape[1], path.clone())),
                    Some((k, first)) if *k != shape[1] => {
                        return Err(record(format!(
                            "dataset {path} has {} columns, {first} {k}: one per worker",
                            shape[1]
                        )));
                    }
                    Some(_) => {}
                }
            }
            total += claimed_bytes(&shape, expect.read_size).unwrap_or(u128::MAX);
            if total > u128::from(self.file_bytes) {
                return Err(record(format!(
                    "the datasets of {} up to {path} claim {total} bytes together, more than the \
                     {}-byte file holds (traces are not compressed: the file is corrupt)",
                    full(group, "{iteration,worker}"),
                    self.file_bytes
                )));
            }
            found.push(Some((ds, shape)));
        }
        let workers = match k {
            Some((k, _)) => k,
            None => match workers {
                Some(w) => usize::try_from(w)
                    .map_err(|_| record(format!("attribute workers of / = {w} is too large")))?,
                None => 0,
            },
        };
        Ok(SchemaDatasets {
            group: group.to_string(),
            workers,
            found,
        })
    }

    /// The schema's datasets under `group` (`"/"` for a run), guarded, then
    /// read: every one but the rows dataset (`iteration/duration_s`) may be
    /// missing, every one present has one value per iteration (and worker).
    /// `workers` is used when no `/worker/` dataset says K. Errors name the
    /// dataset and the rule.
    pub fn columns(&self, group: &str, workers: Option<u64>) -> Result<TraceColumns> {
        self.read_columns(group, workers, None)
    }

    /// The first `rows` iterations of [`Self::columns`]: every dataset
    /// present holds at least that many rows, and only those are read. A
    /// resume reads the iterations up to its snapshot so, whatever a kill
    /// during a later flush left beyond them (datasets extended unequally).
    pub fn columns_upto(
        &self,
        group: &str,
        workers: Option<u64>,
        rows: usize,
    ) -> Result<TraceColumns> {
        self.read_columns(group, workers, Some(rows))
    }

    fn read_columns(
        &self,
        group: &str,
        workers: Option<u64>,
        upto: Option<usize>,
    ) -> Result<TraceColumns> {
        let mut datasets = self.schema_datasets(group, workers)?;
        let rows = rows_dataset();
        let rows_path = full(group, rows.path);
        let stored = datasets
            .shape(rows)
            .map(|s| s[0])
            .ok_or_else(|| record(format!("not a gradcode trace (no dataset {rows_path})")))?;
        let n = match upto {
            None => stored,
            Some(upto) => {
                for (spec, found) in DATASETS.iter().zip(datasets.found.iter_mut()) {
                    if let Some((_, shape)) = found {
                        if shape[0] < upto {
                            return Err(record(format!(
                                "dataset {} has {} rows, fewer than the {upto} iterations read",
                                full(group, spec.path),
                                shape[0]
                            )));
                        }
                        // Read (and charge to the file's budget) only these rows.
                        shape[0] = upto;
                    }
                }
                upto
            }
        };
        let k = datasets.workers;
        let misshapen = |spec: &DatasetSpec| {
            record(format!(
                "dataset {} does not have one entry per iteration ({n} iterations in {rows_path}){}",
                full(group, spec.path),
                if spec.group == SchemaGroup::Worker {
                    format!(" and worker ({k} workers)")
                } else {
                    String::new()
                }
            ))
        };
        for spec in DATASETS {
            if datasets
                .shape(spec)
                .is_some_and(|s| s != spec.group.shape(n, k))
            {
                return Err(misshapen(spec));
            }
        }
        let mut columns = TraceColumns::empty(k, n);
        columns.visit(&mut ColumnReader {
            file: self,
            datasets: &datasets,
        })?;
        if let Some(spec) = columns.misshapen().first() {
            return Err(misshapen(spec));
        }
        check_clusters(&columns, group)?;
        self.check_numbered(group, n)?;
        Ok(columns)
    }

    /// The dimension scale `<group>/iteration/iteration`, when present,
    /// numbers the first `n` rows 1, 2, ..., n: a row it does not number was
    /// not written whole (a write that failed part way, e.g. on a full
    /// disk), and is named.
    fn check_numbered(&self, group: &str, n: usize) -> Result<()> {
        let parent = full(group, "iteration");
        if !self.has_group(&self.group(group)?, group, "iteration")? {
            return Ok(());
        }
        let g = self.group(&parent)?;
        if !g.link_exists("iteration") {
            return Ok(());
        }
        let path = full(group, "iteration/iteration");
        let hdf5 = |e| TraceError::hdf5(format!("dataset {path}"), e);
        let ds = g.dataset("iteration").map_err(hdf5)?;
        let stored = ds.shape();
        if stored.len() != 1 || stored[0] < n {
            return Err(record(format!(
                "dataset {path} has shape {stored:?}, not one number per iteration ({n} iterations)"
            )));
        }
        self.charge(&ds, &path, &[n], std::mem::size_of::<u64>())?;
        let numbers = ds.read_slice_1d::<u64, _>(0..n).map_err(hdf5)?;
        if let Some((row, number)) = numbers
            .iter()
            .enumerate()
            .find(|(row, number)| **number != *row as u64 + 1)
        {
            return Err(record(format!(
                "row {} of {path} is numbered {number}, not {}: the row was not written whole (a write that failed part way)",
                row + 1,
                row + 1
            )));
        }
        Ok(())
    }

    /// The schemes under `/sim`, in the order of the root attribute `scheme`
    /// (the `simulate.compare` order), then any other by name.
    pub fn sim_schemes(&self) -> Result<Vec<SimScheme>> {
        let sim = self.group("/sim")?;
        let mut names = sim
            .member_names()
            .map_err(|e| TraceError::hdf5("group /sim", e))?;
        let order: Vec<String> = self
            .string_attr(&self.file, "/", "scheme")?
            .map(|s| s.split(',').map(|n| n.trim().to_string()).collect())
            .unwrap_or_default();
        names.sort_by_key(|n| {
            (
                order.iter().position(|o| o == n).unwrap_or(usize::MAX),
                n.clone(),
            )
        });
        let mut out = Vec::new();
        for name in names {
            if !self.has_group(&sim, "/sim", &name)? {
                continue;
            }
            let path = format!("/sim/{name}");
            let g = self.group(&path)?;
            let mut trial_groups = Vec::new();
            for m in g
                .member_names()
                .map_err(|e| TraceError::hdf5(format!("group {path}"), e))?
            {
                let Some(k) = m
                    .strip_prefix("trial_")
                    .and_then(|k| k.parse::<usize>().ok())
                else {
                    continue;
                };
                if self.has_group(&g, &path, &m)? {
                    trial_groups.push((k, format!("{path}/{m}")));
                }
            }
            trial_groups.sort();
            out.push(SimScheme {
                name,
                trials: self.number_attr::<u64>(&g, &path, "trials")?,
                iterations: self.number_attr::<u64>(&g, &path, "iterations")?,
                model_time_unit_s: self.number_attr::<f64>(&g, &path, "model_time_unit_s")?,
                trial_groups,
            });
        }
        Ok(out)
    }

    /// `<group>/model/<name>` (`theta`, `previous_theta`), guarded, and its
    /// `iteration` attribute; `None` when absent.
    pub fn model_vector(&self, group: &str, name: &str) -> Result<Option<(Vec<f64>, Option<u64>)>> {
        let g = self.group(group)?;
        if !self.has_group(&g, group, "model")? {
            return Ok(None);
        }
        let rel = format!("model/{name}");
        if !g.link_exists(&rel) {
            return Ok(None);
        }
        let path = full(group, &rel);
        let ds = g
            .dataset(&rel)
            .map_err(|e| TraceError::hdf5(format!("dataset {path}"), e))?;
        let shape = self.guard(
            &ds,
            &path,
            &Expect::vector::<f64>("[parameters]", Kind::Number),
        )?;
        self.charge(&ds, &path, &shape, 8)?;
        let values = ds
            .read_raw::<f64>()
            .map_err(|e| TraceError::hdf5(format!("dataset {path}"), e))?;
        let iteration = self.number_attr::<u64>(&ds, &path, "iteration")?;
        Ok(Some((values, iteration)))
    }

    /// The snapshot slots under `<group>/model`, the committed one read
    /// (guarded: `[2, parameters]` numbers within the file's size, with its
    /// attribute `iteration`).
    pub(crate) fn snapshot_slot(&self, group: &str) -> Result<SlotState> {
        use crate::trace::{NO_SNAPSHOT, SNAPSHOT_COMMITTED, SNAPSHOT_SLOTS};
        let g = self.group(group)?;
        if !self.has_group(&g, group, "model")? {
            return Ok(SlotState::NoSlots);
        }
        let model_path = full(group, "model");
        let model = self.group(&model_path)?;
        let present: Vec<bool> = SNAPSHOT_SLOTS
            .iter()
            .map(|s| model.link_exists(s))
            .collect();
        if !present.iter().any(|&p| p) {
            return Ok(SlotState::NoSlots);
        }
        let committed = match self.number_attr::<u64>(&model, &model_path, SNAPSHOT_COMMITTED)? {
            None | Some(NO_SNAPSHOT) => return Ok(SlotState::Uncommitted),
            Some(c) => c,
        };
        let slot = usize::try_from(committed)
            .ok()
            .filter(|&c| c < SNAPSHOT_SLOTS.len() && present[c])
            .ok_or_else(|| {
                record(format!(
                    "attribute {SNAPSHOT_COMMITTED} of {model_path} = {committed} names no snapshot slot ({})",
                    SNAPSHOT_SLOTS.join(", ")
                ))
            })?;
        let path = full(&model_path, SNAPSHOT_SLOTS[slot]);
        let ds = model
            .dataset(SNAPSHOT_SLOTS[slot])
            .map_err(|e| TraceError::hdf5(format!("dataset {path}"), e))?;
        let expect = Expect {
            dims: "[2, parameters]",
            ndim: 2,
            kind: Kind::Number,
            read_size: 8,
        };
        let shape = self.guard(&ds, &path, &expect)?;
        self.charge(&ds, &path, &shape, 8)?;
        if shape[0] != 2 {
            return Err(record(format!(
                "dataset {path} has shape {shape:?}, not [2, parameters]"
            )));
        }
        let iteration = self
            .number_attr::<u64>(&ds, &path, "iteration")?
            .ok_or_else(|| record(format!("dataset {path} has no attribute iteration")))?;
        let mut theta = ds
            .read_raw::<f64>()
            .map_err(|e| TraceError::hdf5(format!("dataset {path}"), e))?;
        let previous = theta.split_off(shape[1]);
        Ok(SlotState::Committed {
            slot,
            iteration,
            theta,
            previous,
        })
    }

    /// The iteration of the committed snapshot under `<group>/model`, the
    /// one `train --resume` continues from: the committed slot's, or in a
    /// trace without slots `/model/theta`'s; `None` when there is none.
    pub fn snapshot_iteration(&self, group: &str) -> Result<Option<u64>> {
        match self.snapshot_slot(group)? {
            SlotState::Committed { iteration, .. } => Ok(Some(iteration)),
            SlotState::Uncommitted => Ok(None),
            SlotState::NoSlots => Ok(self.model_vector(group, "theta")?.and_then(|(_, it)| it)),
        }
    }

    /// `<group>/model/theta`, when present.
    pub fn model(&self, group: &str) -> Result<Option<ModelInfo>> {
        let Some((theta, iteration)) = self.model_vector(group, "theta")? else {
            return Ok(None);
        };
        let model_path = full(group, "model");
        let model = self.group(&model_path)?;
        let loss = |name| self.number_attr::<f64>(&model, &model_path, name);
        Ok(Some(ModelInfo {
            parameters: theta.len(),
            iteration,
            norm: norm(&theta),
            non_finite: theta.iter().filter(|x| !x.is_finite()).count(),
            final_train_loss: loss("final_train_loss")?,
            final_test_loss: loss("final_test_loss")?,
            final_test_accuracy: loss("final_test_accuracy")?,
        }))
    }

    /// `<group>/timing/` (event names, total seconds, counts), guarded; `None`
    /// when the group or one of its datasets is absent.
    pub fn timing(&self, group: &str) -> Result<Option<Vec<TimingEvent>>> {
        let g = self.group(group)?;
        if !self.has_group(&g, group, "timing")? {
            return Ok(None);
        }
        let mut found = Vec::new();
        for (name, kind, size) in [
            ("event", Kind::String, std::mem::size_of::<VarLenUnicode>()),
            ("total_s", Kind::Number, 8),
            ("count", Kind::Number, 8),
        ] {
            let rel = format!("timing/{name}");
            if !g.link_exists(&rel) {
                return Ok(None);
            }
            let path = full(group, &rel);
            let ds = g
                .dataset(&rel)
                .map_err(|e| TraceError::hdf5(format!("dataset {path}"), e))?;
            let expect = Expect {
                dims: "[events]",
                ndim: 1,
                kind,
                read_size: size,
            };
            let shape = self.guard(&ds, &path, &expect)?;
            self.charge(&ds, &path, &shape, size)?;
            found.push((ds, shape, path));
        }
        if found.iter().any(|(_, shape, _)| *shape != found[0].1) {
            return Err(record(format!(
                "datasets {} have different lengths",
                full(group, "timing/{event,total_s,count}")
            )));
        }
        let hdf5 = |path: &str, e| TraceError::hdf5(format!("dataset {path}"), e);
        let names = read_strings(&found[0].0, &found[0].2)?;
        let totals = found[1]
            .0
            .read_raw::<f64>()
            .map_err(|e| hdf5(&found[1].2, e))?;
        let counts = found[2]
            .0
            .read_raw::<u64>()
            .map_err(|e| hdf5(&found[2].2, e))?;
        Ok(Some(
            names
                .into_iter()
                .zip(totals)
                .zip(counts)
                .map(|((event, total_s), count)| TimingEvent {
                    event,
                    total_s,
                    count,
                })
                .collect(),
        ))
    }

    /// Datasets under `group` outside the schema (and outside `/sim`), and
    /// the groups outside the schema with scalar attributes. Each object is
    /// read once, known by its address in the file: a second link to a
    /// dataset is listed with the first's summary, and a second link to a
    /// group (a group linked into itself, a soft link to a parent) is an
    /// error, as are a link into another file (never followed) and a group
    /// more than `MAX_GROUP_DEPTH` below `group`. The walk keeps its own
    /// stack: no recursion.
    pub fn extras(&self, group: &str) -> Result<(Vec<ExtraDataset>, Vec<ExtraGroup>)> {
        let root = self.group(group)?;
        let mut datasets: Vec<ExtraDataset> = Vec::new();
        let mut groups = Vec::new();
        let base = group.trim_end_matches('/').to_string();
        // Groups seen (file number, address) → their path; datasets seen →
        // the index of the one listed for them.
        let mut seen_groups: HashMap<(u64, String), String> = HashMap::new();
        let mut seen: HashMap<(u64, String), usize> = HashMap::new();
        let here = if base.is_empty() { "/" } else { group };
        seen_groups.insert(self.object_key(&root, here)?, here.to_string());
        // Depth-first, without recursion: (group, path relative to `group`, depth).
        let mut stack = vec![(root, String::new(), 0usize)];
        while let Some((g, rel, depth)) = stack.pop() {
            let here = format!("{base}/{rel}");
            let mut links = Vec::new();
            g.iter_visit_default(|name, info| {
                links.push((name.to_string(), info.link_type));
                Ok(())
            })
            .map_err(|e| TraceError::hdf5(format!("group {here}"), e))?;
            let mut children = Vec::new();
            for (name, link) in links {
                let child_rel = if rel.is_empty() {
                    name.clone()
                } else {
                    format!("{rel}/{name}")
                };
                let child_path = format!("{base}/{child_rel}");
                if depth == 0 && name == "sim" {
                    continue;
                }
                if link == LinkType::External {
                    return Err(record(format!(
                        "{child_path} is a link into another file (a gradcode trace has none; it is not followed)"
                    )));
                }
                let kind = g
                    .loc_type_by_name(&name)
                    .map_err(|e| TraceError::hdf5(format!("object {child_path}"), e))?;
                match kind {
                    LocationType::Group => {
                        let sub = g
                            .group(&name)
                            .map_err(|e| TraceError::hdf5(format!("group {child_path}"), e))?;
                        let key = self.object_key(&sub, &child_path)?;
                        if let Some(first) = seen_groups.insert(key, child_path.clone()) {
                            return Err(record(format!(
                                "group {child_path} is {first} linked again (a group linked into \
                                 itself, or twice: a gradcode trace links every group once)"
                            )));
                        }
                        if depth + 1 > MAX_GROUP_DEPTH {
                            return Err(record(format!(
                                "group {child_path} is nested more than {MAX_GROUP_DEPTH} groups deep \
                                 (a gradcode trace has no such groups)"
                            )));
                        }
                        if depth > 0
                            || !matches!(name.as_str(), "iteration" | "worker" | "model" | "timing")
                        {
                            let attributes = self.scalar_attrs(&sub, &child_path)?;
                            if !attributes.is_empty() {
                                groups.push(ExtraGroup {
                                    path: child_path.clone(),
                                    attributes,
                                });
                            }
                        }
                        children.push((sub, child_rel, depth + 1));
                    }
                    LocationType::Dataset => {
                        if in_schema(&child_rel) {
                            continue;
                        }
                        let ds = g
                            .dataset(&name)
                            .map_err(|e| TraceError::hdf5(format!("dataset {child_path}"), e))?;
                        let key = self.object_key(&ds, &child_path)?;
                        match seen.get(&key) {
                            Some(&first) => {
                                let mut again = datasets[first].clone();
                                again.path = child_path;
                                datasets.push(again);
                            }
                            None => {
                                seen.insert(key, datasets.len());
                                datasets.push(self.extra_dataset(&ds, child_path)?);
                            }
                        }
                    }
                    // Named datatypes: nothing to summarise.
                    _ => {}
                }
            }
            // Visit the children in link order.
            stack.extend(children.into_iter().rev());
        }
        Ok((datasets, groups))
    }

    /// What identifies the object at `loc` in the file: its file number and address.
    fn object_key(&self, loc: &Location, path: &str) -> Result<(u64, String)> {
        let info = loc
            .loc_info()
            .map_err(|e| TraceError::hdf5(format!("object {path}"), e))?;
        Ok((info.fileno, format!("{:?}", info.token)))
    }

    /// A dataset outside the schema: its shape and attributes; its values
    /// summarised when numeric (within the file's size and the read budget,
    /// else an error), not read otherwise.
    fn extra_dataset(&self, ds: &Dataset, path: String) -> Result<ExtraDataset> {
        let hdf5 = |e| TraceError::hdf5(format!("dataset {path}"), e);
        let shape = ds.get_shape().map_err(hdf5)?;
        let dtype = ds.dtype().map_err(hdf5)?;
        let desc = dtype.to_descriptor().ok();
        let numeric = desc.as_ref().and_then(Kind::of) == Some(Kind::Number);
        let values = if numeric {
            self.fits(&path, &shape, dtype.size().max(8))?;
            self.charge(ds, &path, &shape, 8)?;
            Distribution::of(ds.read_raw::<f64>().map_err(hdf5)?)
        } else {
            None
        };
        Ok(ExtraDataset {
            unit: self.lenient_string_attr(ds, &path, "unit")?,
            description: self.lenient_string_attr(ds, &path, "description")?,
            path,
            shape,
            values,
        })
    }

    /// A string attribute of a dataset outside the schema: `None` when
    /// absent or not a scalar variable-length string.
    fn lenient_string_attr(
        &self,
        loc: &Location,
        owner: &str,
        name: &str,
    ) -> Result<Option<String>> {
        match self.attr(loc, owner, name, Kind::String) {
            Ok(Some(a)) => read_string(&a, owner, name),
            Ok(None) | Err(TraceError::Record(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The scalar numeric and variable-length string attributes of a group
    /// outside the schema (other attributes are left out, unread).
    fn scalar_attrs(
        &self,
        loc: &Location,
        owner: &str,
    ) -> Result<BTreeMap<String, serde_json::Value>> {
        let mut out = BTreeMap::new();
        let names = loc
            .attr_names()
            .map_err(|e| TraceError::hdf5(format!("attributes of {owner}"), e))?;
        for name in names {
            let what = || format!("attribute {name} of {owner}");
            let a = loc.attr(&name).map_err(|e| TraceError::hdf5(what(), e))?;
            let shape = a.get_shape().map_err(|e| TraceError::hdf5(what(), e))?;
            if !shape.is_empty() {
                continue;
            }
            let dtype = a.dtype().map_err(|e| TraceError::hdf5(what(), e))?;
            let Ok(desc) = dtype.to_descriptor() else {
                continue;
            };
            let value = match Kind::of(&desc) {
                Some(Kind::Number) => {
                    let x = a
                        .read_scalar::<f64>()
                        .map_err(|e| TraceError::hdf5(what(), e))?;
                    serde_json::Number::from_f64(x).map(serde_json::Value::Number)
                }
                Some(Kind::String) => read_string(&a, owner, &name)?.map(serde_json::Value::String),
                None => None,
            };
            if let Some(v) = value {
                out.insert(name, v);
            }
        }
        Ok(out)
    }
}

/// The Euclidean norm of the finite entries of `v`, scaled by the largest
/// so that entries near 1e300 give their norm, not an overflow.
fn norm(v: &[f64]) -> f64 {
    let largest = v
        .iter()
        .filter(|x| x.is_finite())
        .fold(0.0f64, |m, x| m.max(x.abs()));
    if largest == 0.0 {
        return 0.0;
    }
    largest
        * v.iter()
            .filter(|x| x.is_finite())
            .map(|x| (x / largest) * (x / largest))
            .sum::<f64>()
            .sqrt()
}

/// A path (relative to a trace group) the schema reads: not an extra.
fn in_schema(rel: &str) -> bool {
    DATASETS.iter().any(|d| d.path == rel)
        || matches!(
            rel,
            "model/theta"
                | "model/previous_theta"
                | "model/snapshot_0"
                | "model/snapshot_1"
                | "timing/event"
                | "timing/total_s"
                | "timing/count"
                // The dimension scales (coordinates) of the iteration and worker dimensions.
                | "iteration/iteration"
                | "worker/iteration"
                | "worker/worker"
        )
}

/// The most groups [`TraceFile::read_every_string`] walks: a simulation
/// trace has a group per scheme and trial, far fewer.
const MAX_GROUPS_WALKED: usize = 100_000;

/// A scalar string attribute already checked to hold a string: its value,
/// `None` for fixed-length strings (not read).
fn read_string(a: &Attribute, owner: &str, name: &str) -> Result<Option<String>> {
    let what = || format!("attribute {name} of {owner}");
    let desc = a
        .dtype()
        .and_then(|t| t.to_descriptor())
        .map_err(|e| TraceError::hdf5(what(), e))?;
    match desc {
        TypeDescriptor::VarLenUnicode => a
            .read_scalar::<VarLenUnicode>()
            .map(|s| Some(s.as_str().to_string()))
            .map_err(|e| TraceError::hdf5(what(), e)),
        TypeDescriptor::VarLenAscii => a
            .read_scalar::<VarLenAscii>()
            .map(|s| Some(s.as_str().to_string()))
            .map_err(|e| TraceError::hdf5(what(), e)),
        _ => Ok(None),
    }
}

/// The values of a guarded one-dimensional string dataset.
fn read_strings(ds: &Dataset, path: &str) -> Result<Vec<String>> {
    let hdf5 = |e| TraceError::hdf5(format!("dataset {path}"), e);
    let desc = ds.dtype().and_then(|t| t.to_descriptor()).map_err(hdf5)?;
    match desc {
        TypeDescriptor::VarLenUnicode => Ok(ds
            .read_raw::<VarLenUnicode>()
            .map_err(hdf5)?
            .iter()
            .map(|s| s.as_str().to_string())
            .collect()),
        TypeDescriptor::VarLenAscii => Ok(ds
            .read_raw::<VarLenAscii>()
            .map_err(hdf5)?
            .iter()
            .map(|s| s.as_str().to_string())
            .collect()),
        other => Err(record(format!(
            "dataset {path} holds {other}, not variable-length strings"
        ))),
    }
}

/// Every cluster id of `/worker/cluster` is −1 (no cluster) or 1..=K: the
/// summaries size a count per cluster by the largest.
fn check_clusters(columns: &TraceColumns, group: &str) -> Result<()> {
    let Some(ids) = &columns.cluster else {
        return Ok(());
    };
    let k = columns.workers;
    let bad = ids
        .iter()
        .position(|&c| c != -1 && !(1..=k as i64).contains(&c));
    if let Some(i) = bad {
        return Err(record(format!(
            "dataset {} holds cluster id {} at iteration {}, worker {}: a cluster id is 1..={k} \
             (at most one cluster per worker, K = {k}) or -1 (no cluster)",
            full(group, "worker/cluster"),
            ids[i],
            i / k.max(1) + 1,
            i % k.max(1) + 1
        )));
    }
    Ok(())
}

/// Reads the guarded datasets of the schema into [`TraceColumns`].
struct ColumnReader<'a> {
    file: &'a TraceFile,
    datasets: &'a SchemaDatasets,
}

impl ColumnReader<'_> {
    fn read<T: H5Type>(&self, spec: &DatasetSpec) -> Result<Option<Vec<T>>> {
        let Some((ds, shape)) = &self.datasets.found[spec.index] else {
            return Ok(None);
        };
        let path = full(&self.datasets.group, spec.path);
        self.file
            .charge(ds, &path, shape, std::mem::size_of::<T>())?;
        let error = |e| TraceError::hdf5(format!("dataset {path}"), e);
        // The shape to read: all of the dataset, or its first rows.
        if ds.shape().first() == shape.first() {
            return ds.read_raw::<T>().map(Some).map_err(error);
        }
        let values = match shape.len() {
            1 => ds
                .read_slice_1d::<T, _>(0..shape[0])
                .map(|a| a.into_iter().collect()),
            _ => ds
                .read_slice_2d::<T, _>(ndarray::s![0..shape[0], ..])
                .map(|a| a.into_iter().collect()),
        };
        values.map(Some).map_err(error)
    }
}

impl ColumnVisitor for ColumnReader<'_> {
    type Error = TraceError;

    fn f64(&mut self, spec: &'static DatasetSpec, column: &mut Option<Vec<f64>>) -> Result<()> {
        *column = self.read(spec)?;
        Ok(())
    }

    fn u64(&mut self, spec: &'static DatasetSpec, column: &mut Option<Vec<u64>>) -> Result<()> {
        *column = self.read(spec)?;
        Ok(())
    }

    fn i64(&mut self, spec: &'static DatasetSpec, column: &mut Option<Vec<i64>>) -> Result<()> {
        *column = self.read(spec)?;
        Ok(())
    }

    fn flag(&mut self, spec: &'static DatasetSpec, column: &mut Option<Vec<bool>>) -> Result<()> {
        *column = self
            .read::<u8>(spec)?
            .map(|v| v.into_iter().map(|b| b != 0).collect());
        Ok(())
    }
}
