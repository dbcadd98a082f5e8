//! A trace open in this process is not passed to a child process it starts:
//! neither the descriptor nor, with it, the file's HDF5 lock.
//!
//! A binary of its own: the test starts a child while it holds a trace open,
//! and a child started by one test thread inherits every descriptor other
//! threads have open at that instant, close-on-exec or not yet (HDF5 opens
//! without `O_CLOEXEC`; `close_on_exec` marks it a moment later). Beside the
//! other trace tests it once held a file another test had just created, and
//! that test's next open found it locked (CI, stop 42).
#![cfg(feature = "hdf5")]

use std::path::PathBuf;

use gradcode::trace::{IterationRecord, TraceFile, TraceMeta, TraceWriter};

fn path(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("traces");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn meta(workers: usize) -> TraceMeta {
    TraceMeta {
        scheme: "gc-sc".into(),
        workers,
        config_toml: "workers = 3\n[scheme]\nkind = \"gc-sc\"\n".into(),
        seed: 42,
    }
}

/// The descriptors a child process started now inherits, as `ls` lists its
/// own: the file each one is open on.
fn files_a_child_inherits() -> String {
    let out = std::process::Command::new("ls")
        .args(["-l", "/proc/self/fd/"])
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_child_process_inherits_no_open_trace_nor_its_lock() {
    // HDF5 opens files without O_CLOEXEC: a process that held a trace open
    // while it started another (sim_cli's tests, concurrently) passed the
    // descriptor and the file's HDF5 lock on, and a writer refused the
    // trace as "open for reading in another process" (CI, stop 35).
    let p = path("cloexec.h5");
    let _ = std::fs::remove_file(&p);
    let mut w = TraceWriter::create(&p, &meta(3)).unwrap();
    let mut r = IterationRecord::new(3);
    r.duration_s = 0.5;
    w.append(&r).unwrap();
    let name = p.file_name().unwrap().to_str().unwrap().to_string();
    let listed = files_a_child_inherits();
    assert!(!listed.contains(&name), "the writer's descriptor: {listed}");
    w.close().unwrap();
    let file = TraceFile::open(&p).unwrap();
    let listed = files_a_child_inherits();
    assert!(!listed.contains(&name), "the reader's descriptor: {listed}");
    drop(file);
}
