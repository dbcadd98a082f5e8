//! `scripts/bench-interference.sh` (issue 26, item 4) slows workers for real
//! by moving them into a cgroup with a CPU quota. Checked here, in seconds
//! and without MPI:
//!
//! - its `--self-test` sets a quota and reads it back, moves a `sleep` into
//!   the group and out, and removes the group after a normal cleanup, after
//!   SIGINT, after SIGTERM and after a failure; this test then checks that
//!   every group the self-test names is gone, also when the script starts
//!   with SIGINT ignored, as under `nohup … &` (a shell cannot trap a signal
//!   ignored at its start: the script resets it for its child). Without root or a writable
//!   cgroup hierarchy the script says "skipped" and why, and so does this
//!   test (on stderr);
//! - the fallback's busy loop (`--method hog`), started by the script's rank
//!   wrapper, is pinned, holds none of the launcher's pipes (mpirun would
//!   wait for it) and ends with its worker (needs `taskset` only);
//! - bad arguments are refused with one line naming the flag and the rule,
//!   exit status 2, before anything is built, made or written.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/bench-interference.sh")
}

fn run(args: &[&str]) -> Output {
    Command::new("bash")
        .arg(script())
        .args(args)
        .output()
        .expect("run bash scripts/bench-interference.sh")
}

#[test]
fn self_test_removes_every_cgroup_it_made() {
    // SIGINT ignored on entry, as a background job of a non-interactive
    // shell has it (exec keeps an ignored signal ignored); the run without
    // is the easier case of the same checks.
    let out = Command::new("bash")
        .arg("-c")
        .arg("trap '' INT; exec bash \"$0\" --self-test")
        .arg(script())
        .output()
        .expect("run bash scripts/bench-interference.sh --self-test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "--self-test failed ({}):\n{stdout}{stderr}",
        out.status
    );
    let hog = stdout
        .lines()
        .find(|l| l.starts_with("hog fallback "))
        .unwrap_or_else(|| panic!("no `hog fallback` line in\n{stdout}"));
    assert!(
        hog.starts_with("hog fallback passed: ") || hog == "hog fallback skipped: no taskset",
        "{hog}"
    );
    if let Some(why) = stdout.strip_prefix("skipped: ") {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED bench_interference::self_test_removes_every_cgroup_it_made (cgroups): {}",
            why.lines().next().unwrap_or_default()
        );
        return;
    }
    assert!(
        stdout.starts_with("self-test passed (cgroup v1 at ")
            || stdout.starts_with("self-test passed (cgroup v2 at "),
        "{stdout}"
    );
    let groups: Vec<&str> = stdout
        .lines()
        .find_map(|l| l.strip_prefix("groups: "))
        .unwrap_or_else(|| panic!("no `groups:` line in\n{stdout}"))
        .split_whitespace()
        .collect();
    // The quota check, then SIGINT, SIGTERM and a failure: four groups.
    assert_eq!(groups.len(), 4, "{stdout}");
    for g in &groups {
        assert!(
            g.starts_with("/sys/fs/cgroup/") && g.contains("/gradcode-selftest-"),
            "{g}"
        );
        assert!(!Path::new(g).exists(), "{g} was left behind:\n{stdout}");
    }
}

#[test]
fn bad_arguments_are_refused_naming_the_flag() {
    for (args, flag, rule) in [
        (
            &["--quota", "0"][..],
            "--quota",
            "must be an integer in 1..100",
        ),
        (
            &["--quota", "25%"][..],
            "--quota",
            "must be an integer in 1..100",
        ),
        (
            &["--workers", "9"][..],
            "--workers",
            "must be an integer in 4..8",
        ),
        (&["--workers", "5"][..], "--workers", "must be even"),
        // The default K = 4 leaves at most 2 to slow.
        (&["--slow", "3"][..], "--slow", "must be an integer in 1..2"),
        (
            &["--workers", "6", "--slow", "5"][..],
            "--slow",
            "must be an integer in 1..4",
        ),
        (
            &["--repeats", "0"][..],
            "--repeats",
            "must be an integer in 1..99",
        ),
        (
            &["--method", "v3"][..],
            "--method",
            "must be auto, v1, v2 or hog",
        ),
        (&["--iterations"][..], "--iterations", "needs a value"),
        (&["--bogus", "1"][..], "--bogus", "unknown argument"),
        (
            &["--self-test", "x"][..],
            "--self-test",
            "takes no other argument",
        ),
    ] {
        let out = run(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.starts_with(&format!("bench-interference.sh: {flag}")) && stderr.contains(rule),
            "{args:?}: {stderr}"
        );
        // Refused before the build and the bench: nothing on stdout.
        assert!(out.stdout.is_empty(), "{args:?}: {:?}", out.stdout);
    }
}
