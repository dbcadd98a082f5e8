//! Before a trace is opened: the checks that the file given is a readable
//! HDF5 file (not a directory, a device or another format) whose metadata
//! can be read, and the error that names the file when the reader fails.
//! Shared by `inspect`, `compare`, `evaluate`, `advise --trace` and
//! `inspect --replay-csv` ([`crate::trace::measured`]).

use std::path::Path;

use crate::error::InputError;

/// The bytes an HDF5 file starts with (at offset 0, or 512, 1024, ... after a user block).
const HDF5_SIGNATURE: [u8; 8] = [0x89, b'H', b'D', b'F', b'\r', b'\n', 0x1a, b'\n'];

/// A file that exists, can be read and is HDF5, whose metadata a child
/// process reads within the probe's deadline ([`crate::trace::probe`]);
/// the error names the file.
pub fn check_file(path: &Path) -> Result<(), InputError> {
    use std::io::{Read, Seek, SeekFrom};
    let name = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => InputError::new(&name, "no such file"),
        _ => InputError::new(&name, format!("cannot be read: {e}")),
    })?;
    if meta.is_dir() {
        return Err(InputError::new(&name, "is a directory, not a trace file"));
    }
    if !meta.is_file() {
        return Err(InputError::new(
            &name,
            format!(
                "is {}, not a regular file, so not a trace file",
                crate::files::kind_of(&meta)
            ),
        ));
    }
    let mut file = std::fs::File::open(path)
        .map_err(|e| InputError::new(&name, format!("cannot be read: {e}")))?;
    let mut offset = 0u64;
    loop {
        if offset + 8 > meta.len() {
            return Err(InputError::new(
                &name,
                "is not an HDF5 file (no HDF5 signature), so not a gradcode trace",
            ));
        }
        let mut head = [0u8; 8];
        file.seek(SeekFrom::Start(offset))
            .and_then(|_| file.read_exact(&mut head))
            .map_err(|e| InputError::new(&name, format!("cannot be read: {e}")))?;
        if head == HDF5_SIGNATURE {
            // An HDF5 file: read its metadata in a child with a deadline
            // first (HDF5 may loop forever on a damaged one).
            super::probe::check(path).map_err(|e| InputError::new(&name, e))?;
            return Ok(());
        }
        offset = if offset == 0 { 512 } else { offset * 2 };
    }
}

/// An error reading the trace at `path`, naming the file (a file a
/// running job holds open for writing says so).
pub fn read_error(path: &Path, e: super::TraceError) -> InputError {
    if e.to_string().contains("unable to lock file") {
        InputError::new(
            path.display().to_string(),
            "is locked by a process that has it open for writing (a running job?): \
             inspect it when that ends, or read it as it is with HDF5_USE_FILE_LOCKING=FALSE \
             in the environment",
        )
    } else {
        InputError::new(path.display().to_string(), e)
    }
}
