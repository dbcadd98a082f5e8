//! Failures of trace I/O.

use super::backend;

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
