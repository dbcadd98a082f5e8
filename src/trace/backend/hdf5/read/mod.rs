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
//! another file, and goes at most [`MAX_GROUP_DEPTH`](walk::MAX_GROUP_DEPTH) groups deep. Values
//! read are checked where a summary would size memory by them: a cluster id
//! is −1 or 1..=K.

use std::cell::Cell;
use std::path::{Path, PathBuf};

use hdf5::types::{TypeDescriptor, VarLenAscii, VarLenUnicode};
use hdf5::{Attribute, Dataset, File, Group, H5Type, Location, LocationType};

use crate::trace::TraceError;
use gradcode_core::record::DatasetSpec;

type Result<T> = std::result::Result<T, TraceError>;

/// The groups of a trace and their columns, guarded.
mod columns;
/// The model, the snapshot slots and what a resume reads of them.
mod model;
/// The timing events of a training trace.
mod timing;
/// Walks over the groups: every string (the probe), the objects outside the schema.
mod walk;

pub(crate) use model::SlotState;

pub use crate::trace::TraceKind;
use crate::trace::contents::RootInfo;

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
}

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
