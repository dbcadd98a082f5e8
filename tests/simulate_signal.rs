//! SIGTERM ends a long `simulate --out` as it ends `train`: the session
//! stops the trials before their next round, the trace records the status
//! `interrupted` with every iteration before it, and the process exits with
//! 143 (issue 24).
//!
//! Its own test binary: it spawns a process, and a fork while another test
//! thread has an HDF5 file open would hand that file's lock to the child.
#![cfg(feature = "hdf5")]

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use gradcode::trace::{read_attr_string, read_trace};

#[test]
fn sigterm_ends_a_simulation_with_143_and_a_trace_that_says_interrupted() {
    let (child, out) = common::spawn_long_simulation("signalled", Stdio::piped());
    // Let it write for a while (its trials take far longer than this).
    std::thread::sleep(Duration::from_secs(3));
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let start = Instant::now();
    let output = child.wait_with_output().unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "the simulation took {:?} to stop",
        start.elapsed()
    );
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(143), "{err}");
    assert!(err.contains("interrupted by SIGTERM in trial "), "{err}");

    assert_eq!(
        read_attr_string(&out, "/", "status").unwrap(),
        "interrupted"
    );
    let reason = read_attr_string(&out, "/", "status_reason").unwrap();
    // "interrupted by SIGTERM in trial T after N iterations; ...": the
    // trace holds the T - 1 trials before, complete, and N iterations of trial T.
    let words: Vec<&str> = reason.split_whitespace().collect();
    assert_eq!(
        &words[..5],
        ["interrupted", "by", "SIGTERM", "in", "trial"],
        "{reason}"
    );
    let trial: usize = words[5].parse().unwrap();
    let iterations: usize = words[7].parse().unwrap();
    assert!(trial >= 1 && iterations < 400, "{reason}");
    assert!(
        (trial - 1) * 400 + iterations > 0,
        "nothing simulated in 3 s: {reason}"
    );
    for scheme in ["gc", "gc-sc"] {
        for t in 0..trial - 1 {
            let rows = read_trace(&out, &format!("/sim/{scheme}/trial_{t}"))
                .unwrap()
                .records
                .len();
            assert_eq!(rows, 400, "{scheme} trial {t}");
        }
        let last = read_trace(&out, &format!("/sim/{scheme}/trial_{}", trial - 1));
        match last {
            Ok(t) => assert_eq!(t.records.len(), iterations, "{scheme}: {reason}"),
            // Interrupted before the trial's first iteration: no group yet.
            Err(e) => assert_eq!(iterations, 0, "{scheme}: {e}"),
        }
        assert!(
            read_trace(&out, &format!("/sim/{scheme}/trial_{trial}")).is_err(),
            "{scheme}: a trial after the interrupted one"
        );
    }
}
