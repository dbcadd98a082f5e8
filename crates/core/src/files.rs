//! What a path names, before anything opens it.
//!
//! Every input (config, data, replay trace, HDF5 trace) is a regular file:
//! opening a FIFO for reading blocks until some process writes to it, and a
//! device such as `/dev/zero` never ends. [`open_input`] looks at the path
//! first (`stat` does not block) and refuses anything else; an output is
//! never written over anything but a regular file either (see the trace's
//! `place` module in the `gradcode` crate).

use std::fs::{File, Metadata};
use std::io;
use std::path::Path;

/// What `meta` describes, in words: "a regular file", "a FIFO", ...
pub fn kind_of(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_file() {
        return "a regular file";
    }
    if t.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}

/// `Ok` when `path` is a regular file (symbolic links followed); else an
/// `InvalidInput` error saying what it is, without opening it.
pub fn check_regular(path: &Path) -> io::Result<Metadata> {
    let meta = std::fs::metadata(path)?;
    if meta.is_file() {
        Ok(meta)
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("is {}, not a regular file", kind_of(&meta)),
        ))
    }
}

/// Open the input file at `path` for reading when it is a regular file;
/// anything else (a FIFO, a device, a folder, a socket) is refused before
/// it is opened (see [`check_regular`]).
pub fn open_input(path: &Path) -> io::Result<File> {
    check_regular(path)?;
    File::open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_open_and_the_refusal_says_what_the_path_is() {
        let dir = std::env::temp_dir().join(format!("gradcode-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("f.txt");
        std::fs::write(&file, b"x").unwrap();
        assert!(open_input(&file).is_ok());
        let e = open_input(&dir).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(e.to_string(), "is a folder, not a regular file");
        #[cfg(unix)]
        {
            let e = open_input(Path::new("/dev/null")).unwrap_err();
            assert_eq!(e.to_string(), "is a character device, not a regular file");
            let fifo = dir.join("fifo");
            let made = std::process::Command::new("mkfifo").arg(&fifo).status();
            assert!(made.unwrap().success(), "mkfifo");
            // Returns at once: a FIFO is refused before it is opened.
            let e = open_input(&fifo).unwrap_err();
            assert_eq!(e.to_string(), "is a FIFO (named pipe), not a regular file");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
