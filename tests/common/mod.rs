//! Helpers of the tests that run `gradcode train` under mpirun.
#![allow(dead_code)] // each test binary uses a part

#[path = "../../crates/core/tests/support/mod.rs"]
mod core_support;
#[allow(unused_imports)] // each test binary uses a part
pub use core_support::*;

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

/// One mpirun at a time within a test binary: concurrent jobs oversubscribe
/// 2 cores many times over and make timing-based checks meaningless.
static MPIRUN: Mutex<()> = Mutex::new(());

/// Hold while an mpirun job of this test runs.
pub fn one_at_a_time() -> MutexGuard<'static, ()> {
    MPIRUN
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `mpirun --oversubscribe -n RANKS gradcode ARGS...`, allowed to run as
/// root (OpenMPI refuses otherwise; CI runs as root). With
/// `GRADCODE_TEST_MPIEXEC` set (scripts/test.sh's MPICH run:
/// `mpiexec.mpich`), that launcher with `-n RANKS` instead.
///
/// Every job runs under coreutils' `timeout` (`--foreground`: the process
/// group stays the test's; SIGTERM and SIGINT are passed on to the
/// launcher): a job that outlives [`mpi_job_limit_s`] is ended with SIGTERM,
/// then SIGKILL, and exits 124, so that a hang fails its test instead of
/// holding CI.
pub fn mpirun_command(ranks: usize, args: &[&str]) -> Command {
    let launcher = std::env::var("GRADCODE_TEST_MPIEXEC").unwrap_or_default();
    let mut words = launcher.split_whitespace();
    let mut cmd = Command::new("timeout");
    cmd.args(["--foreground", "--kill-after=10"])
        .arg(mpi_job_limit_s().to_string());
    match words.next() {
        Some(program) => {
            cmd.arg(program).args(words);
        }
        None => {
            cmd.args(["mpirun", "--oversubscribe"]);
        }
    }
    cmd.args(["-n", &ranks.to_string(), env!("CARGO_BIN_EXE_gradcode")])
        .args(args);
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    cmd
}

/// Seconds an MPI job of a test may run: `GRADCODE_TEST_MPI_LIMIT_S`, or
/// 420.
pub fn mpi_job_limit_s() -> u64 {
    std::env::var("GRADCODE_TEST_MPI_LIMIT_S")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(420)
}

/// `mpirun ... gradcode train` of the config `text`, written to the scratch
/// folder `dir` as NAME.toml, into a fresh trace NAME.h5 there (`--force
/// --json --quiet`, then `extra`): the command, not run, and the trace path.
pub fn train_command(
    dir: &str,
    name: &str,
    ranks: usize,
    text: &str,
    extra: &[&str],
) -> (Command, PathBuf) {
    let config = scratch(dir, &format!("{name}.toml"));
    std::fs::write(&config, text).unwrap();
    let trace = scratch(dir, &format!("{name}.h5"));
    let mut args = train_args(&config, &trace);
    args.extend(extra.iter().map(|a| a.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    (mpirun_command(ranks, &args), trace)
}

/// [`train_command`] run with the runtime's info logs on stderr (one mpirun
/// at a time); it must succeed. The output and the trace path.
pub fn train_logged(
    dir: &str,
    name: &str,
    ranks: usize,
    text: &str,
    extra: &[&str],
) -> (Output, PathBuf) {
    let (mut command, trace) = train_command(dir, name, ranks, text, extra);
    let _one = one_at_a_time();
    let out = command
        .env("GRADCODE_LOG", "gradcode::runtime=info")
        .output()
        .expect("mpirun must be installed");
    assert!(
        out.status.success(),
        "{name}: train failed: {}",
        stderr(&out)
    );
    (out, trace)
}

/// Every one of `ranks` ranks of a [`train_logged`] run logged that no send
/// request was pending when it finalised MPI, and posted as many sends as
/// completed (at least one).
pub fn assert_no_request_left(name: &str, out: &Output, ranks: usize) {
    let err = stderr(out);
    let mut clean: Vec<i64> = err
        .lines()
        .filter(|l| l.contains(" completed, 0 requests pending at shutdown"))
        .map(|l| {
            let at = l.find("[gradcode rank ").expect("the line names its rank") + 15;
            l[at..].split(' ').next().unwrap().parse().unwrap()
        })
        .collect();
    clean.sort_unstable();
    let want: Vec<i64> = (0..ranks as i64).collect();
    assert_eq!(clean, want, "{name}: every rank completes its sends\n{err}");
    for line in err.lines().filter(|l| l.contains("sends posted")) {
        let message = line.split("] ").nth(1).unwrap_or("");
        let numbers: Vec<u64> = message
            .split_whitespace()
            .filter_map(|w| w.trim_end_matches(',').parse().ok())
            .collect();
        assert!(
            numbers.len() >= 3 && numbers[0] == numbers[1] && numbers[0] > 0,
            "{name}: {line}"
        );
    }
}

/// `train --config CONFIG --out TRACE --force --json --quiet`, the
/// arguments of every training run these tests start.
pub fn train_args(config: &std::path::Path, trace: &std::path::Path) -> Vec<String> {
    let mut args = vec!["train".to_string(), "--config".to_string()];
    args.push(config.to_str().unwrap().to_string());
    args.push("--out".to_string());
    args.push(trace.to_str().unwrap().to_string());
    args.extend(["--force", "--json", "--quiet"].map(String::from));
    args
}

/// A path under the test's scratch folder `dir`.
pub fn scratch(dir: &str, name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// How a test opens an HDF5 file itself: without HDF5's file lock.
///
/// A test binary runs its tests on threads of one process, and other threads
/// start child processes (gradcode, mpirun, sh) at any moment. HDF5 opens
/// its file without `O_CLOEXEC`, so a child started while a test holds a
/// file inherits the descriptor and with it the `flock` lock, which then
/// outlives the test's own handle: the test's next open of that file fails
/// with "unable to lock file, errno = 11" for as long as the child runs.
/// Without the lock there is nothing to inherit. gradcode itself, run as a
/// child, still takes its locks.
#[cfg(feature = "hdf5")]
pub enum H5 {
    Read,
    Write,
    Create,
}

/// `path` opened as `mode` says, with HDF5's file lock off (see [`H5`]).
#[cfg(feature = "hdf5")]
pub fn h5(path: impl AsRef<std::path::Path>, mode: H5) -> hdf5::Result<hdf5::File> {
    let mut options = hdf5::File::with_options();
    options.with_fapl(|fapl| fapl.file_locking(false));
    match mode {
        H5::Read => options.open(path),
        H5::Write => options.open_rw(path),
        H5::Create => options.create(path),
    }
}

/// |a − b| / |b| in the Euclidean norm.
pub fn relative_error(a: &[f64], b: &[f64]) -> f64 {
    let num: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x - y).powi(2))
        .sum::<f64>()
        .sqrt();
    num / b.iter().map(|y| y * y).sum::<f64>().sqrt()
}

/// θ of a `train --json` summary.
pub fn theta(summary: &serde_json::Value) -> Vec<f64> {
    serde_json::from_value(summary["theta"].clone()).expect("the summary has theta")
}

/// `gradcode ARGS...` run to the end.
pub fn gradcode(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gradcode"))
        .args(args)
        .output()
        .expect("run gradcode")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The JSON a successful run printed on stdout.
pub fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "failed: {}", stderr(o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(o)))
}

/// Bad input as the project promises to report it: status 2, one line on
/// stderr that contains `field`, no panic or backtrace, nothing on stdout.
pub fn assert_rejected(name: &str, output: &Output, field: &str) {
    let err = stderr(output);
    assert_eq!(
        output.status.code(),
        Some(2),
        "{name}: status {:?}, stderr: {err}",
        output.status
    );
    assert_eq!(
        err.lines().count(),
        1,
        "{name}: stderr is not one line: {err}"
    );
    assert!(
        err.contains(field),
        "{name}: stderr does not name `{field}`: {err}"
    );
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{name}: {err}"
    );
    assert!(
        output.stdout.is_empty(),
        "{name}: wrote to stdout: {}",
        stdout(output)
    );
}

/// The MPI rank a process's environment (`/proc/PID/environ`) gives it:
/// OpenMPI sets OMPI_COMM_WORLD_RANK in each rank's environment, MPICH's
/// Hydra PMI_RANK; `None` for a process that is no rank (the launcher).
pub fn mpi_rank_in(environ: &[u8]) -> Option<usize> {
    environ.split(|&b| b == 0).find_map(|v| {
        let v = std::str::from_utf8(v).ok()?;
        v.strip_prefix("OMPI_COMM_WORLD_RANK=")
            .or_else(|| v.strip_prefix("PMI_RANK="))?
            .parse()
            .ok()
    })
}

/// The pid of MPI rank `rank` of the `gradcode train` job whose command line
/// names `needle` (its trace, say), when it runs ([`mpi_rank_in`]).
pub fn rank_pid_of(needle: &str, rank: usize) -> Option<u32> {
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline);
        if !cmdline.contains("gradcode\0train") || !cmdline.contains(needle) {
            continue;
        }
        let Ok(env) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if mpi_rank_in(&env) == Some(rank) {
            return Some(pid);
        }
    }
    None
}

/// Send `signal` (`KILL`, `STOP`, ...) to `pid`; whether it was delivered.
pub fn send_signal(pid: u32, signal: &str) -> bool {
    Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success())
}

/// The commit of this checkout as `gradcode --version` and the traces name
/// it: `git rev-parse HEAD`, or "unknown" outside a checkout.
pub fn git_head() -> String {
    Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map_or("unknown".to_string(), |o| {
            String::from_utf8_lossy(&o.stdout).trim().to_string()
        })
}

/// Every exact scheme of the registry with the parameters the MPI tests
/// train it with on 6 workers (`tests/mpi.rs`, `tests/nn.rs`).
pub const EXACT_SCHEMES: &[(&str, &str)] = &[
    ("uncoded", "kind = \"uncoded\""),
    ("gc-frac", "kind = \"gc-frac\"\nload = 3"),
    ("gc-cyclic", "kind = \"gc-cyclic\"\nload = 3"),
    ("gc-sc", "kind = \"gc-sc\"\nload = 2\nclusters = 2"),
    (
        "gc-dc",
        "kind = \"gc-dc\"\nload = 2\nclusters = 2\nclusters_per_worker = 2",
    ),
    (
        "gc-mmc",
        "kind = \"gc-mmc\"\nload = 3\ndesign = \"correlated\"\norder = 2",
    ),
    ("uc-mmc", "kind = \"uc-mmc\"\nload = 3"),
    (
        "gc-partial",
        "kind = \"gc-partial\"\nload = 2\nslowdown = 2.0",
    ),
];

/// `gradcode simulate --out` of a simulation far longer than any test waits
/// (50,000 trials of 400 iterations of gc and gc-sc, K = 12), its config
/// NAME.toml and fresh trace NAME.h5 in the scratch folder `traces`,
/// started with stdout discarded and `stderr` as given: the child and the
/// trace path (for the tests that stop it with a signal).
pub fn spawn_long_simulation(
    name: &str,
    stderr: std::process::Stdio,
) -> (std::process::Child, PathBuf) {
    let cfg = scratch("traces", &format!("{name}.toml"));
    std::fs::write(
        &cfg,
        "workers = 12\n[scheme]\nkind = \"gc-sc\"\nclusters = 4\n[straggler]\nmodel = \"gilbert-elliott\"\ninitial_stragglers = 6\n[simulate]\ncompare = [\"gc\", \"gc-sc\"]\n",
    )
    .unwrap();
    let out = scratch("traces", &format!("{name}.h5"));
    let _ = std::fs::remove_file(&out);
    let child = Command::new(env!("CARGO_BIN_EXE_gradcode"))
        .args(["simulate", "--config", cfg.to_str().unwrap()])
        .args(["--trials", "50000", "--iterations", "400", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap();
    (child, out)
}
