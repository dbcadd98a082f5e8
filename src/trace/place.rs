//! Putting a trace file in place without harming another one.
//!
//! HDF5 locks a file it has open (`flock`: exclusive for writing, shared
//! for reading; HDF5 1.10 and later, unless `HDF5_USE_FILE_LOCKING=FALSE`).
//! A new trace is never written over an existing file: it is built under a
//! temporary name in the same folder (`.NAME.tmp-PID-N`), flushed with its
//! root attributes and empty datasets, and only then renamed to its name,
//! so that a reader of the path sees either the old file or a complete new
//! trace, never an empty or half-created one. Replacing an existing file
//! (`--force`) first takes its lock, exclusively and without waiting: a file
//! some process has open (a running job writing it, a reader) is refused,
//! untouched. Without `--force` the rename does not replace a file that
//! appeared meanwhile.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// Who holds the lock of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holder {
    /// Nobody: no process has the file open with HDF5's lock.
    Nobody,
    /// A process holds it exclusively: HDF5 has the file open for writing.
    Writer,
    /// Processes share it: HDF5 has the file open for reading.
    Readers,
}

/// An exclusive lock on an existing file, held until dropped.
#[derive(Debug)]
pub(crate) struct Lock {
    _file: File,
}

#[cfg(unix)]
fn flock(file: &File, operation: libc::c_int) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: flock on a descriptor this `File` owns, with constant flags.
        let r = unsafe { libc::flock(file.as_raw_fd(), operation | libc::LOCK_NB) };
        if r == 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) => return Ok(false),
            _ => return Err(e),
        }
    }
}

impl Lock {
    /// Lock the existing file at `path` exclusively, without waiting:
    /// `Ok(None)` when another process holds its lock.
    pub(crate) fn exclusive(path: &Path) -> io::Result<Option<Lock>> {
        let file = File::open(path)?;
        #[cfg(unix)]
        if !flock(&file, libc::LOCK_EX)? {
            return Ok(None);
        }
        Ok(Some(Lock { _file: file }))
    }
}

/// Who holds the lock of the existing file at `path` now (probed without
/// waiting, released at once).
pub(crate) fn holder(path: &Path) -> io::Result<Holder> {
    let file = File::open(path)?;
    #[cfg(unix)]
    {
        // Shared first: a probe that succeeds never stands in a writer's way.
        if !flock(&file, libc::LOCK_SH)? {
            return Ok(Holder::Writer);
        }
        if flock(&file, libc::LOCK_EX)? {
            return Ok(Holder::Nobody);
        }
        Ok(Holder::Readers)
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        Ok(Holder::Nobody)
    }
}

/// Why an existing file may not be replaced now, in words; `None` when
/// nobody holds it.
pub(crate) fn in_use(path: &Path) -> io::Result<Option<String>> {
    Ok(match holder(path)? {
        Holder::Nobody => None,
        Holder::Writer => Some(format!(
            "{} is open for writing in another process (it holds the file's HDF5 lock: a running job?); it was not touched",
            path.display()
        )),
        Holder::Readers => Some(format!(
            "{} is open for reading in another process (it holds the file's HDF5 lock); it was not touched",
            path.display()
        )),
    })
}

/// The folder `path` goes in (`.` for a bare name).
pub(crate) fn folder(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// A name in `path`'s folder that nothing uses yet: `.NAME.WHAT-PID-N`.
pub(crate) fn sibling(path: &Path, what: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map_or_else(|| "trace".into(), |n| n.to_string_lossy().into_owned());
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    folder(path).join(format!(".{name}.{what}-{}-{n}", std::process::id()))
}

/// Whether a file can be created in `path`'s folder, found without leaving
/// anything behind: a probe file is created and removed in the folder, or,
/// when the folder does not exist yet, in the nearest existing folder above
/// it (where the missing folders would be created).
pub(crate) fn check_writable(path: &Path) -> Result<(), String> {
    let mut dir = folder(path).to_path_buf();
    loop {
        match std::fs::metadata(&dir) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => {
                return Err(format!(
                    "cannot create {}: {} is not a folder",
                    path.display(),
                    dir.display()
                ));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => match dir.parent() {
                Some(up) if !up.as_os_str().is_empty() => dir = up.to_path_buf(),
                _ => {
                    dir = PathBuf::from(".");
                    break;
                }
            },
            Err(e) => {
                return Err(format!(
                    "cannot create {}: {}: {e}",
                    path.display(),
                    dir.display()
                ));
            }
        }
    }
    let probe = sibling(&dir.join("probe"), "gradcode-probe");
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(f) => {
            drop(f);
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(format!(
            "cannot create {}: cannot write in the folder {}: {e}",
            path.display(),
            dir.display()
        )),
    }
}

// Without HDF5 no trace is written: only the checks of its path are used.
/// Rename `from` to `to` unless `to` exists (then `AlreadyExists`),
/// atomically where the file system can.
pub(crate) fn rename_new(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let c = |p: &Path| {
            CString::new(p.as_os_str().as_bytes())
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in the path"))
        };
        let (a, b) = (c(from)?, c(to)?);
        // SAFETY: two NUL-terminated paths that live across the call.
        let r = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                a.as_ptr(),
                libc::AT_FDCWD,
                b.as_ptr(),
                libc::RENAME_NOREPLACE,
            )
        };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EEXIST) => return Err(io::ErrorKind::AlreadyExists.into()),
            // A file system without RENAME_NOREPLACE: a hard link, then the rename.
            Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP) => {}
            _ => return Err(e),
        }
    }
    // link(2) fails when `to` exists; the link is then replaced by the rename.
    match std::fs::hard_link(from, to) {
        Ok(()) => std::fs::remove_file(from),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(e),
        // No hard links here either: check, then rename (a small window).
        Err(_) if to.exists() => Err(io::ErrorKind::AlreadyExists.into()),
        Err(_) => std::fs::rename(from, to),
    }
}

/// A file a command reads, which no output of it may replace: what it is
/// (`"config"`, `"data.path"`, `"trace"`, ...) and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    pub what: String,
    pub path: PathBuf,
}

impl Input {
    pub fn new(what: impl Into<String>, path: impl Into<PathBuf>) -> Self {
        Self {
            what: what.into(),
            path: path.into(),
        }
    }
}

/// The files a run of `config` reads: the config file itself (when it was
/// read from one), the data and label files and the straggler trace file it
/// names, the files of a named image set (`data.set`), and those of a
/// CIFAR-10 folder (`data.path` of `data.kind = "cifar10"`, a folder).
pub fn inputs_of(config: &crate::config::Config, config_file: Option<&Path>) -> Vec<Input> {
    let d = &config.data;
    let mut inputs: Vec<Input> = config_file
        .map(|p| Input::new("config", p))
        .into_iter()
        .collect();
    for (what, path) in [
        ("data.path", &d.path),
        ("data.test_path", &d.test_path),
        ("data.labels_path", &d.labels_path),
        ("data.test_labels_path", &d.test_labels_path),
        ("straggler.trace_file", &config.straggler.trace_file),
    ] {
        // A CIFAR-10 folder is no file: its files follow, one by one.
        let folder = what == "data.path" && d.kind == crate::config::DataKind::Cifar10;
        if let Some(path) = path.as_ref().filter(|_| !folder) {
            inputs.push(Input::new(what, path));
        }
    }
    // A named image set's files, named by the set and the file
    // (`data.set/t10k-labels-idx1-ubyte.gz`) wherever the root puts them,
    // and a CIFAR-10 folder's (`data.path/data_batch_1.bin`).
    for (what, path) in crate::learn::images::image_inputs(d) {
        inputs.push(Input::new(what, path));
    }
    inputs
}

/// Refuse, in words, an output path whose target must not be replaced:
/// anything but a regular file (a FIFO, a device such as `/dev/null`, a
/// socket; a folder is named by `claim`) or one of `inputs` (the same
/// file: device and inode, so another name or a link to it counts too).
/// A path where nothing is yet passes.
pub fn check_target(path: &Path, inputs: &[Input]) -> Result<(), String> {
    let Ok(target) = std::fs::metadata(path) else {
        return Ok(());
    };
    if target.is_dir() {
        return Ok(());
    }
    if !target.is_file() {
        return Err(format!(
            "{} is {}: an output is written only over a regular file; it was not touched",
            path.display(),
            crate::files::kind_of(&target)
        ));
    }
    for input in inputs {
        if std::fs::metadata(&input.path).is_ok_and(|m| same_file(&m, &target)) {
            return Err(format!(
                "{} is this command's {} ({}): an output never replaces an input; it was not touched",
                path.display(),
                input.what,
                input.path.display()
            ));
        }
    }
    Ok(())
}

fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        a.dev() == b.dev() && a.ino() == b.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        false
    }
}

/// Every check an output path gets before any work starts, nothing created
/// or changed: [`check_target`], then `claim` (an existing file only with
/// `overwrite`, and only when no process holds its lock), then
/// `check_writable`.
pub fn check_output(path: &Path, overwrite: bool, inputs: &[Input]) -> Result<(), String> {
    check_target(path, inputs)?;
    drop(claim(path, overwrite)?);
    check_writable(path)
}

/// Refuse, in words, a path whose folder does not exist (for the outputs
/// that do not create folders: `sweep --out`, `inspect --replay-csv`).
pub fn check_folder(path: &Path) -> Result<(), String> {
    let dir = folder(path);
    if dir.is_dir() {
        Ok(())
    } else {
        Err(format!(
            "cannot create {}: the folder {} does not exist (it is not created)",
            path.display(),
            dir.display()
        ))
    }
}

/// Write `bytes` to `path` whole: under a temporary name in its folder,
/// then renamed into place (`claim` and `install`: an existing file only
/// with `overwrite` and when no process holds its lock). The temporary file
/// is removed when anything fails.
pub fn write_whole(path: &Path, overwrite: bool, bytes: &[u8]) -> Result<(), String> {
    check_folder(path)?;
    let existing = claim(path, overwrite)?;
    let temp = sibling(path, "tmp");
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)
        .and_then(|mut f| {
            use std::io::Write;
            f.write_all(bytes)?;
            f.sync_all()
        })
        .map_err(|e| format!("cannot write {}: {e}", temp.display()))
        .and_then(|()| install(&temp, path, existing, overwrite));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

// Without HDF5 no trace is written: only the checks of its path are used.
/// How a new trace at `path` replaces what is there.
#[derive(Debug)]
pub(crate) enum Existing {
    /// Nothing is there (yet).
    Nothing,
    /// A file is there, locked by us until it is replaced.
    Locked(Lock),
}

/// The state of `path` before a trace replaces it: an error (in words,
/// naming the path) when a file is there and `overwrite` is false, when it
/// is a folder, or when another process holds its lock.
pub(crate) fn claim(path: &Path, overwrite: bool) -> Result<Existing, String> {
    match std::fs::metadata(path) {
        // Nothing there (a missing folder, or a file where a folder should
        // be: `check_writable` names that).
        Err(e)
            if e.kind() == io::ErrorKind::NotFound || e.kind() == io::ErrorKind::NotADirectory =>
        {
            Ok(Existing::Nothing)
        }
        Err(e) => Err(format!("cannot check {}: {e}", path.display())),
        Ok(m) if m.is_dir() => Err(format!("{} is a folder, not a trace file", path.display())),
        Ok(_) if !overwrite => Err(format!(
            "{} exists; use --force to overwrite it",
            path.display()
        )),
        Ok(_) => match Lock::exclusive(path) {
            Ok(Some(lock)) => Ok(Existing::Locked(lock)),
            Ok(None) => Err(in_use(path)
                .ok()
                .flatten()
                .unwrap_or_else(|| format!("{} is in use by another process", path.display()))),
            Err(e) => Err(format!(
                "cannot open {} to check that no process uses it: {e}",
                path.display()
            )),
        },
    }
}

// Without HDF5 no trace is written: only the checks of its path are used.
/// Put the complete temporary file `temp` at `path`: over the file `claim`
/// locked, or where nothing is (a file that appeared meanwhile is replaced
/// only with `overwrite`, and only when nobody holds its lock).
pub(crate) fn install(
    temp: &Path,
    path: &Path,
    existing: Existing,
    overwrite: bool,
) -> Result<(), String> {
    let failed = |e: io::Error| {
        format!(
            "cannot rename {} to {}: {e}",
            temp.display(),
            path.display()
        )
    };
    match existing {
        Existing::Locked(lock) => {
            let r = std::fs::rename(temp, path).map_err(failed);
            drop(lock);
            r
        }
        Existing::Nothing => match rename_new(temp, path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => match claim(path, overwrite)? {
                Existing::Nothing => rename_new(temp, path).map_err(failed),
                locked => install(temp, path, locked, overwrite),
            },
            Err(e) => Err(failed(e)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch folder, removed when the test ends (passed or failed).
    fn scratch() -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix("gradcode-place-")
            .tempdir()
            .unwrap()
    }

    #[test]
    fn a_locked_file_is_refused_untouched_and_a_free_one_replaced() {
        let scratch = scratch();
        let d = scratch.path();
        let p = d.join("run.h5");
        std::fs::write(&p, b"old").unwrap();
        let held = Lock::exclusive(&p).unwrap().expect("free");
        assert_eq!(holder(&p).unwrap(), Holder::Writer);
        let e = claim(&p, true).unwrap_err();
        assert!(e.contains("run.h5") && e.contains("not touched"), "{e}");
        assert_eq!(std::fs::read(&p).unwrap(), b"old");
        drop(held);
        assert_eq!(holder(&p).unwrap(), Holder::Nobody);
        assert!(claim(&p, false).unwrap_err().contains("use --force"));
        let existing = claim(&p, true).unwrap();
        let t = sibling(&p, "tmp");
        std::fs::write(&t, b"new").unwrap();
        install(&t, &p, existing, true).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert!(!t.exists());
    }

    #[test]
    fn a_new_file_never_replaces_one_that_appeared_without_overwrite() {
        let scratch = scratch();
        let d = scratch.path();
        let p = d.join("run.h5");
        let existing = claim(&p, false).unwrap();
        std::fs::write(&p, b"theirs").unwrap();
        let t = sibling(&p, "tmp");
        std::fs::write(&t, b"ours").unwrap();
        let e = install(&t, &p, existing, false).unwrap_err();
        assert!(e.contains("exists"), "{e}");
        assert_eq!(std::fs::read(&p).unwrap(), b"theirs");
        rename_new(&t, &d.join("other.h5")).unwrap();
        assert_eq!(std::fs::read(d.join("other.h5")).unwrap(), b"ours");
    }

    #[test]
    fn writability_is_probed_without_leaving_a_file() {
        let scratch = scratch();
        let d = scratch.path();
        check_writable(&d.join("a/b/run.h5")).unwrap();
        assert!(!d.join("a").exists());
        assert_eq!(std::fs::read_dir(d).unwrap().count(), 0);
        std::fs::write(d.join("file"), b"x").unwrap();
        let e = check_writable(&d.join("file/run.h5")).unwrap_err();
        assert!(e.contains("is not a folder"), "{e}");
    }
}
