//! A simulation killed with SIGKILL leaves a readable trace, or, when the
//! kill damaged HDF5's group structure, one every reader refuses cleanly.
//!
//! Its own test binary: it spawns a process, and a fork while another test
//! thread has an HDF5 file open would hand that file's lock to the child.
#![cfg(feature = "hdf5")]

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use gradcode::trace::read_trace;

/// A simulation killed with SIGKILL leaves a file whose flushed iterations
/// read back, or that `inspect` refuses with one line naming it (exit 2).
#[test]
fn a_killed_simulation_leaves_a_readable_trace() {
    let (mut child, out) = common::spawn_long_simulation("killed", Stdio::null());
    // Let it run through a few flushes (one per second), then SIGKILL it.
    std::thread::sleep(Duration::from_secs(4));
    child.kill().unwrap();
    child.wait().unwrap();
    // HDF5 (without SWMR) can leave a file damaged when the kill falls while
    // it updates the group structure (a new trial's group): then every
    // reader refuses it, one line naming the file, exit 2, never a crash.
    let inspected = Command::new(env!("CARGO_BIN_EXE_gradcode"))
        .arg("inspect")
        .arg(&out)
        .output()
        .unwrap();
    if inspected.status.code() == Some(2) {
        let err = String::from_utf8_lossy(&inspected.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(out.to_str().unwrap()), "{err}");
        return;
    }
    assert_eq!(
        inspected.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&inspected.stderr)
    );
    // Otherwise every trial group that exists reads back with consistent lengths.
    let f = common::h5(&out, common::H5::Read).expect("the killed trace opens");
    let trials = f.group("sim/gc").unwrap().member_names().unwrap();
    drop(f);
    assert!(!trials.is_empty(), "nothing flushed in 4 s");
    let mut flushed = 0usize;
    for trial in &trials {
        for scheme in ["gc", "gc-sc"] {
            let t = match read_trace(&out, &format!("/sim/{scheme}/{trial}")) {
                Ok(t) => t,
                // A group created after the last flush may be incomplete.
                Err(_) => continue,
            };
            assert!(t.records.len() <= 400);
            for r in &t.records {
                assert!(r.duration_s > 0.0 && r.duration_s.is_finite());
            }
            flushed += t.records.len();
        }
    }
    assert!(flushed >= 400, "only {flushed} iterations readable");
}
