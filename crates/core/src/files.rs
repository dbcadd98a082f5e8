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

/// What identifies an input file's content: its size and the CRC-32 of its
/// bytes (read through once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint {
    pub bytes: u64,
    pub crc32: u32,
}

impl std::fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "bytes={} crc32={:08x}", self.bytes, self.crc32)
    }
}

/// The [`Fingerprint`] of the regular file at `path`.
pub fn fingerprint(path: &Path) -> io::Result<Fingerprint> {
    use std::io::Read;
    let mut file = open_input(path)?;
    let mut hasher = crc32fast::Hasher::new();
    let mut buffer = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    loop {
        let n = match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buffer[..n]);
        bytes += n as u64;
    }
    Ok(Fingerprint {
        bytes,
        crc32: hasher.finalize(),
    })
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

    #[test]
    fn a_fingerprint_changes_with_any_byte_and_the_size() {
        let dir = std::env::temp_dir().join(format!("gradcode-print-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("data.csv");
        let text: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&file, &text).unwrap();
        let first = fingerprint(&file).unwrap();
        assert_eq!(first.bytes, 3_000_000);
        // The CRC-32 of the bytes, as crc32fast computes it in one call.
        assert_eq!(first.crc32, crc32fast::hash(&text));
        let mut flipped = text.clone();
        flipped[2_500_000] ^= 1;
        std::fs::write(&file, &flipped).unwrap();
        assert_ne!(fingerprint(&file).unwrap(), first);
        std::fs::write(&file, &text[..2_999_999]).unwrap();
        assert_ne!(fingerprint(&file).unwrap().bytes, first.bytes);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
