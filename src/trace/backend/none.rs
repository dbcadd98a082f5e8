//! The backend of a build without HDF5: every entry point refuses with an
//! [`Unsupported`], and the reader and writers are types no value of which
//! can exist (their only field is of an empty enum), so their other
//! functions are never called and have no body to get wrong.

use std::path::Path;

use super::{TraceUse, Unsupported};
use crate::trace::contents::{ExtraDataset, ExtraGroup, ModelInfo, RootInfo, SimScheme};
use crate::trace::summary::TraceColumns;
use crate::trace::{IterationRecord, RunStatus, Snapshot, TimingEvent, TraceError, TraceMeta};

type Result<T> = std::result::Result<T, TraceError>;

/// No value: the types below hold one, so none of them is ever made.
#[derive(Debug)]
enum Never {}

/// Whether this build can serve `what`: never.
pub fn check(what: TraceUse) -> std::result::Result<(), Unsupported> {
    Err(Unsupported::of(what))
}

/// The HDF5 library's version: `none`.
pub fn library() -> String {
    "none".to_string()
}

/// The trace probe's child is not part of this build: never this process.
pub fn probe_child() -> Option<std::process::ExitCode> {
    None
}

/// Refused: no snapshot can be read.
pub fn read_snapshot(path: &Path) -> Result<Snapshot> {
    let _ = path;
    Err(Unsupported::Run.into())
}

/// The guarded reader, which cannot open anything here.
#[derive(Debug)]
pub struct TraceFile {
    never: Never,
}

impl TraceFile {
    /// Refused: no trace can be read.
    pub fn open(path: &Path) -> Result<Self> {
        let _ = path;
        Err(Unsupported::Read.into())
    }

    pub fn path(&self) -> &Path {
        match self.never {}
    }

    pub fn file_bytes(&self) -> u64 {
        match self.never {}
    }

    pub(crate) fn read_every_string(&self) -> Result<usize> {
        match self.never {}
    }

    pub fn group_string_attr(&self, _object: &str, _name: &str) -> Result<Option<String>> {
        match self.never {}
    }

    pub fn group_number_attr<T>(&self, _object: &str, _name: &str) -> Result<Option<T>> {
        match self.never {}
    }

    pub fn root(&self) -> Result<RootInfo> {
        match self.never {}
    }

    pub fn columns(&self, _group: &str, _workers: Option<u64>) -> Result<TraceColumns> {
        match self.never {}
    }

    pub fn columns_upto(
        &self,
        _group: &str,
        _workers: Option<u64>,
        _rows: usize,
    ) -> Result<TraceColumns> {
        match self.never {}
    }

    pub fn sim_schemes(&self) -> Result<Vec<SimScheme>> {
        match self.never {}
    }

    pub fn model_vector(
        &self,
        _group: &str,
        _name: &str,
    ) -> Result<Option<(Vec<f64>, Option<u64>)>> {
        match self.never {}
    }

    pub fn snapshot_iteration(&self, _group: &str) -> Result<Option<u64>> {
        match self.never {}
    }

    pub fn model(&self, _group: &str) -> Result<Option<ModelInfo>> {
        match self.never {}
    }

    pub fn timing(&self, _group: &str) -> Result<Option<Vec<TimingEvent>>> {
        match self.never {}
    }

    pub fn extras(&self, _group: &str) -> Result<(Vec<ExtraDataset>, Vec<ExtraGroup>)> {
        match self.never {}
    }
}

/// As the HDF5 reader's, whose drop closes the file and releases its lock
/// (a caller drops it before the file is opened again).
impl Drop for TraceFile {
    fn drop(&mut self) {
        match self.never {}
    }
}

/// The writer of a training run's trace, which cannot create anything here.
#[derive(Debug)]
pub struct TraceWriter {
    never: Never,
}

impl TraceWriter {
    /// Refused: no trace can be written.
    pub fn create_with(path: &Path, meta: &TraceMeta, overwrite: bool) -> Result<Self> {
        let _ = (path, meta, overwrite);
        Err(Unsupported::Run.into())
    }

    /// Refused: no trace can be reopened.
    pub fn resume(path: &Path) -> Result<(Self, Snapshot)> {
        let _ = path;
        Err(Unsupported::Run.into())
    }

    pub fn append(&mut self, _record: &IterationRecord) -> Result<()> {
        match self.never {}
    }

    pub fn write_snapshot(
        &mut self,
        _iteration: u64,
        _theta: &[f64],
        _previous: &[f64],
    ) -> Result<()> {
        match self.never {}
    }

    pub fn write_final_losses(&mut self, _train: f64, _test: f64, _accuracy: f64) -> Result<()> {
        match self.never {}
    }

    pub fn write_timing(&mut self, _events: &[TimingEvent]) -> Result<()> {
        match self.never {}
    }

    pub fn set_root_attr(&mut self, _name: &str, _value: &str) -> Result<()> {
        match self.never {}
    }

    pub fn finish(self, _status: RunStatus, _reason: &str) -> Result<()> {
        match self.never {}
    }
}

/// The writer of a simulation's trace, which cannot create anything here.
#[derive(Debug)]
pub struct SimTraceWriter {
    never: Never,
}

impl SimTraceWriter {
    /// Refused: no trace can be written.
    pub fn create_with(
        path: &Path,
        meta: &TraceMeta,
        schemes: &[String],
        trials: usize,
        iterations: usize,
        model_time_unit_s: f64,
        overwrite: bool,
    ) -> Result<Self> {
        let _ = (
            path,
            meta,
            schemes,
            trials,
            iterations,
            model_time_unit_s,
            overwrite,
        );
        Err(Unsupported::Simulation.into())
    }

    pub fn append(
        &mut self,
        _scheme: usize,
        _trial: usize,
        _record: &IterationRecord,
    ) -> Result<()> {
        match self.never {}
    }

    pub fn finish(self, _status: RunStatus, _reason: &str) -> Result<()> {
        match self.never {}
    }
}
