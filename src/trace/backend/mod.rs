//! The HDF5 seam: the one place that knows whether HDF5 is compiled in.
//!
//! With the `hdf5` feature the backend is `hdf5/` (its writers,
//! the guarded reader [`TraceFile`], snapshots, the library's version, the
//! probe's child); without it, `none`, whose types have the same
//! functions: nothing can be opened or created, every entry point refuses
//! with the words a build without HDF5 has always used ([`Unsupported`](crate::trace::backend::Unsupported)),
//! and no value of its [`TraceFile`] or writers can exist. The rest of
//! `src/` calls what this module re-exports and never asks which backend
//! it has; a command first asks [`check`](crate::trace::backend::check) whether the backend can serve it,
//! so that a build without HDF5 refuses before it reads or checks anything.

#[cfg(feature = "hdf5")]
mod hdf5;
#[cfg(feature = "hdf5")]
use self::hdf5 as chosen;

#[cfg(not(feature = "hdf5"))]
mod none;
#[cfg(not(feature = "hdf5"))]
use self::none as chosen;

pub use chosen::{
    SimTraceWriter, TraceFile, TraceWriter, check, library, probe_child, read_snapshot,
};

/// What a command wants of trace files, which a build without HDF5 refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceUse {
    /// Reading a trace (`inspect`, `compare`, `evaluate`, a measured trace of `advise`).
    Read,
    /// Writing a simulation's trace (`simulate --out`).
    Simulation,
    /// A training run's trace: written by `train`, continued by `train --resume`.
    Run,
}

/// A use of trace files this build cannot serve (it has no HDF5), in the
/// words each command has always said it with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unsupported {
    #[error(
        "reading traces needs HDF5 support, which this build does not have (rebuild with the `hdf5` feature)"
    )]
    Read,
    /// Said after the trace's path (`output.trace = "x.h5"`).
    #[error("needs HDF5 support, which this build does not have (rebuild with the `hdf5` feature)")]
    Simulation,
    #[error("this gradcode was built without the `hdf5` feature")]
    Run,
}

impl Unsupported {
    /// The refusal of `what`.
    pub fn of(what: TraceUse) -> Self {
        match what {
            TraceUse::Read => Unsupported::Read,
            TraceUse::Simulation => Unsupported::Simulation,
            TraceUse::Run => Unsupported::Run,
        }
    }
}
