//! The HDF5 backend: the writers of the trace schema (`hdf5_io.rs`), the
//! guarded reader (`read/`), snapshots (`checkpoint.rs`), the caches of a
//! file being written (`access.rs`), and what the library says (its
//! version, its errors on one line).

mod access;
/// Snapshots: written atomically, read back, a trace reopened to resume.
mod checkpoint;
mod hdf5_io;
mod read;

pub use checkpoint::read_snapshot;
pub use hdf5_io::{SimTraceWriter, TraceWriter};
pub use read::TraceFile;

use super::{TraceUse, Unsupported};
use crate::trace::{TraceError, probe};

/// Whether this build can serve `what`: always.
pub fn check(what: TraceUse) -> Result<(), Unsupported> {
    let _ = what;
    Ok(())
}

/// The HDF5 library's version (`HDF5 1.10.10`).
pub fn library() -> String {
    let (major, minor, release) = ::hdf5::library_version();
    format!("HDF5 {major}.{minor}.{release}")
}

/// When this process is the trace probe's child (`gradcode
/// <probe::SUBCOMMAND> FILE`), its exit status.
pub fn probe_child() -> Option<std::process::ExitCode> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.len() == 3 && args[1] == probe::SUBCOMMAND {
        return Some(probe::child(std::path::Path::new(&args[2])));
    }
    None
}

impl TraceError {
    pub(crate) fn hdf5(context: impl Into<String>, e: impl std::fmt::Display) -> Self {
        TraceError::Hdf5 {
            context: context.into(),
            message: one_line(&e.to_string()),
        }
    }
}

/// An HDF5 message on one line, said once: libhdf5 puts a `ctime` date
/// (ending in a newline) inside its write errors, and the error stack's
/// outermost and innermost descriptions are often the same words
/// (`file write failed: file write failed: ...`).
pub(crate) fn one_line(message: &str) -> String {
    let joined = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
        .replace(" ,", ",");
    let mut parts: Vec<&str> = Vec::new();
    for part in joined.split(": ") {
        if parts.last() != Some(&part) {
            parts.push(part);
        }
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn hdf5_messages_are_one_line_said_once() {
        // As libhdf5 1.10 words a write to a full disk (ctime's newline included).
        let raw = "H5F__accum_write(): file write failed: file write failed: time = Tue Nov 24 \
                   01:25:14 2026\n, filename = './.tr.h5.tmp-1-1', file descriptor = 19, errno = 28, \
                   error message = 'No space left on device', offset = 0";
        assert_eq!(
            super::one_line(raw),
            "H5F__accum_write(): file write failed: time = Tue Nov 24 01:25:14 2026, filename = \
             './.tr.h5.tmp-1-1', file descriptor = 19, errno = 28, error message = 'No space left \
             on device', offset = 0"
        );
        let e = crate::trace::TraceError::hdf5("flush x.h5", raw);
        assert_eq!(e.to_string().lines().count(), 1);
        assert_eq!(e.to_string().matches("file write failed").count(), 1);
        // Different descriptions stay.
        assert_eq!(
            super::one_line("H5Fopen(): unable to open file: truncated file"),
            "H5Fopen(): unable to open file: truncated file"
        );
    }
}
