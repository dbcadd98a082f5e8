//! Faults injected into `gradcode train` under mpirun: SIGTERM and SIGINT on
//! the job or on one rank, SIGKILL, a worker that stops answering. Nothing is
//! lost (the trace holds every iteration up to the last flush and a snapshot
//! to resume from), nothing hangs (every run ends within seconds).
#![cfg(all(feature = "mpi", feature = "hdf5"))]

mod common;

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use gradcode::trace::read_trace;

fn scratch(name: &str) -> PathBuf {
    common::scratch("reliability", name)
}

fn mpirun(ranks: usize, args: &[&str]) -> Command {
    let mut cmd = common::mpirun_command(ranks, args);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

/// Run to the end; (exit code, stdout, stderr).
fn finish(child: Child) -> (Option<i32>, String, String) {
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// An mpirun job whose stderr is read line by line as it comes, so a test
/// can act once training is under way (mpirun alone may take seconds to
/// start the ranks; a fixed sleep would race with it).
struct Job {
    child: Child,
    stderr_lines: mpsc::Receiver<String>,
    stderr_seen: Vec<String>,
    stdout_reader: Option<thread::JoinHandle<String>>,
}

impl Job {
    fn start(ranks: usize, args: &[&str]) -> Job {
        let mut child = mpirun(ranks, args).spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let (tx, stderr_lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdout_reader = thread::spawn(move || {
            let mut text = String::new();
            let _ = stdout.read_to_string(&mut text);
            text
        });
        Job {
            child,
            stderr_lines,
            stderr_seen: Vec::new(),
            stdout_reader: Some(stdout_reader),
        }
    }

    /// Block until the job prints a stderr line containing `needle`; panics
    /// (with what it printed) when `limit` passes or the job ends first.
    fn wait_for(&mut self, needle: &str, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr_lines.recv_timeout(left) {
                Ok(line) => {
                    let hit = line.contains(needle);
                    self.stderr_seen.push(line);
                    if hit {
                        return;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => panic!(
                    "no line with {needle:?} within {limit:?}:\n{}",
                    self.stderr_seen.join("\n")
                ),
                Err(mpsc::RecvTimeoutError::Disconnected) => panic!(
                    "the job ended before printing {needle:?}:\n{}",
                    self.stderr_seen.join("\n")
                ),
            }
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Wait until mpirun exits, at most `limit` (panics when it hangs);
    /// (exit code, stdout, all of stderr).
    fn wait_exit(mut self, limit: Duration) -> (Option<i32>, String, String) {
        let started = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > limit {
                panic!(
                    "mpirun {} did not exit within {limit:?}:\n{}",
                    self.child.id(),
                    self.stderr_seen.join("\n")
                );
            }
            thread::sleep(Duration::from_millis(20));
        };
        // The reader thread ends at end of file: collect the rest of stderr.
        self.stderr_seen.extend(self.stderr_lines.iter());
        let stdout = self.stdout_reader.take().unwrap().join().unwrap();
        (status.code(), stdout, self.stderr_seen.join("\n"))
    }
}

impl Drop for Job {
    /// A failed test leaves no job behind.
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The pid of MPI rank `rank` among the gradcode processes (OpenMPI sets
/// OMPI_COMM_WORLD_RANK in each rank's environment).
fn rank_pid(rank: usize) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
                continue;
            };
            if !String::from_utf8_lossy(&cmdline).contains("gradcode\0train") {
                continue;
            }
            let Ok(env) = std::fs::read(entry.path().join("environ")) else {
                continue;
            };
            if env
                .split(|&b| b == 0)
                .any(|v| v == format!("OMPI_COMM_WORLD_RANK={rank}").as_bytes())
            {
                return pid;
            }
        }
        assert!(Instant::now() < deadline, "no rank {rank} found");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn signal(pid: u32, sig: &str) {
    assert!(
        Command::new("kill")
            .args([&format!("-{sig}"), &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
}

/// How long mpirun may take to start the ranks and the first iterations
/// (seconds on a loaded or slow machine).
const STARTUP: Duration = Duration::from_secs(60);

/// A slow enough run (about 25 ms per iteration) to be interrupted mid-way.
const SLOW: &str = "workers = 6\nseed = 9\n[scheme]\nkind = \"gc-sc\"\nload = 2\nclusters = 2\n[straggler]\nmodel = \"shifted-exponential\"\nmu = 2.0\ntime_unit_ms = 20.0\n[data]\ntrain_samples = 600\ntest_samples = 60\nfeatures = 30\n[train]\niterations = 160\nlearning_rate = 0.05\n[output]\nsnapshot_every = 7\n";

fn config(name: &str, text: &str) -> PathBuf {
    let path = scratch(&format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

fn theta_of(stdout: &str) -> Vec<f64> {
    let v: serde_json::Value =
        serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    serde_json::from_value(v["theta"].clone()).unwrap()
}

#[test]
fn sigterm_then_resume_ends_where_an_uninterrupted_run_ends() {
    let _one = common::one_at_a_time();
    let cfg = config("resume", SLOW);
    let whole = scratch("whole.h5");
    let args = [
        "train",
        "--config",
        cfg.to_str().unwrap(),
        "--force",
        "--json",
    ];
    let mut a = args.to_vec();
    a.extend(["--quiet", "--out", whole.to_str().unwrap()]);
    let (code, uninterrupted, err) = finish(mpirun(7, &a).spawn().unwrap());
    assert_eq!(code, Some(0), "{err}");

    let cut = scratch("cut.h5");
    let mut a = args.to_vec();
    a.extend(["--out", cut.to_str().unwrap()]);
    let mut job = Job::start(7, &a);
    job.wait_for("iteration 10/", STARTUP);
    let signalled = Instant::now();
    signal(job.pid(), "TERM");
    let (code, _, err) = job.wait_exit(Duration::from_secs(20));
    assert!(
        signalled.elapsed() < Duration::from_secs(5),
        "the job exits within 5 s of SIGTERM"
    );
    assert_ne!(code, Some(0), "an interrupted run does not claim success");
    let line = err
        .lines()
        .find(|l| l.contains("interrupted by SIGTERM after"))
        .unwrap_or_else(|| panic!("{err}"));
    let done: usize = line
        .split("after ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(done > 0 && done < 160, "{line}");
    let records = read_trace(&cut, "/")
        .expect("the interrupted trace is readable")
        .records
        .len();
    assert_eq!(records, done, "the trace holds every completed iteration");

    let (code, resumed, err) = finish(
        mpirun(
            7,
            &[
                "train",
                "--resume",
                cut.to_str().unwrap(),
                "--quiet",
                "--json",
            ],
        )
        .spawn()
        .unwrap(),
    );
    assert_eq!(code, Some(0), "{err}");
    let err = common::relative_error(&theta_of(&resumed), &theta_of(&uninterrupted));
    assert!(
        err <= 1e-9,
        "resumed θ differs from the uninterrupted one by {err}"
    );
    let data = read_trace(&cut, "/").unwrap();
    assert_eq!(
        data.records.len(),
        160,
        "the resumed trace continues where the snapshot left it"
    );
}

#[test]
fn sigint_on_one_worker_stops_the_whole_job_gracefully() {
    let _one = common::one_at_a_time();
    let cfg = config(
        "sigint",
        &SLOW.replace("iterations = 160", "iterations = 100000"),
    );
    let trace = scratch("sigint.h5");
    let mut job = Job::start(
        7,
        &[
            "train",
            "--config",
            cfg.to_str().unwrap(),
            "--out",
            trace.to_str().unwrap(),
            "--force",
        ],
    );
    job.wait_for("iteration 10/", STARTUP);
    signal(rank_pid(3), "INT");
    let (code, _, err) = job.wait_exit(Duration::from_secs(10));
    assert_ne!(code, Some(0));
    assert!(err.contains("interrupted by SIGINT after"), "{err}");
    let data = read_trace(&trace, "/").unwrap();
    assert!(!data.records.is_empty() && data.theta.is_some());
}

#[test]
fn sigkill_leaves_a_readable_trace_that_resumes() {
    let _one = common::one_at_a_time();
    let cfg = config(
        "sigkill",
        &SLOW.replace("iterations = 160", "iterations = 400"),
    );
    let trace = scratch("sigkill.h5");
    let mut job = Job::start(
        7,
        &[
            "train",
            "--config",
            cfg.to_str().unwrap(),
            "--out",
            trace.to_str().unwrap(),
            "--force",
        ],
    );
    job.wait_for("iteration 80/", STARTUP);
    signal(rank_pid(0), "KILL");
    let (code, _, _) = job.wait_exit(Duration::from_secs(20));
    assert_ne!(code, Some(0));
    let data = read_trace(&trace, "/").expect("a killed run leaves a readable trace");
    assert!(
        data.records.len() >= 7,
        "iterations up to the last flush survive: {}",
        data.records.len()
    );
    assert!(
        data.records
            .iter()
            .all(|r| r.duration_s > 0.0 && r.recovered_fraction == 1.0)
    );
    let (code, out, err) = finish(
        mpirun(
            7,
            &[
                "train",
                "--resume",
                trace.to_str().unwrap(),
                "--set",
                "train.iterations=60",
                "--quiet",
                "--json",
            ],
        )
        .spawn()
        .unwrap(),
    );
    // The snapshot may already be past 60 iterations: then the resume says so, as an input error.
    if code == Some(0) {
        assert_eq!(theta_of(&out).len(), 30);
    } else {
        assert!(
            err.contains("train.iterations = 60 is already reached"),
            "{err}"
        );
    }
}

#[test]
fn a_killed_worker_ends_the_job_and_the_trace_survives() {
    let _one = common::one_at_a_time();
    let cfg = config(
        "dead-worker",
        &SLOW.replace("iterations = 160", "iterations = 100000"),
    );
    let trace = scratch("dead-worker.h5");
    let mut job = Job::start(
        7,
        &[
            "train",
            "--config",
            cfg.to_str().unwrap(),
            "--out",
            trace.to_str().unwrap(),
            "--force",
        ],
    );
    job.wait_for("iteration 80/", STARTUP);
    signal(rank_pid(4), "KILL");
    let (code, _, _) = job.wait_exit(Duration::from_secs(20));
    assert_ne!(code, Some(0), "OpenMPI ends the job when a rank dies");
    let data = read_trace(&trace, "/").expect("the trace survives a dead worker");
    assert!(!data.records.is_empty());
}

#[test]
fn a_stopped_worker_times_out_an_intolerant_scheme_and_not_a_tolerant_one() {
    let _one = common::one_at_a_time();
    // Uncoded needs every worker: with worker 2 stopped it gives up after the timeout.
    let cfg = config(
        "stopped-uncoded",
        &SLOW
            .replace(
                "kind = \"gc-sc\"\nload = 2\nclusters = 2",
                "kind = \"uncoded\"",
            )
            .replace(
                "learning_rate = 0.05",
                "learning_rate = 0.05\nresult_timeout_s = 2.0",
            )
            .replace("iterations = 160", "iterations = 100000"),
    );
    let trace = scratch("stopped-uncoded.h5");
    let mut job = Job::start(
        7,
        &[
            "train",
            "--config",
            cfg.to_str().unwrap(),
            "--out",
            trace.to_str().unwrap(),
            "--force",
        ],
    );
    // Stop it once training runs (stopped during MPI_Init, everyone would wait in MPI_Init).
    job.wait_for("iteration 10/", STARTUP);
    let worker = rank_pid(2);
    signal(worker, "STOP");
    let (code, _, err) = job.wait_exit(Duration::from_secs(30));
    signal(worker, "CONT");
    assert_ne!(code, Some(0));
    assert!(
        err.contains("no result for 2 s (train.result_timeout_s)") && err.contains("workers 2"),
        "{err}"
    );
    assert!(
        !read_trace(&trace, "/").unwrap().records.is_empty(),
        "the trace keeps what came before"
    );

    // gc-cyclic tolerates one straggler: training goes on and finishes.
    let cfg = config(
        "stopped-cyclic",
        &SLOW
            .replace(
                "kind = \"gc-sc\"\nload = 2\nclusters = 2",
                "kind = \"gc-cyclic\"\nload = 2",
            )
            .replace(
                "learning_rate = 0.05",
                "learning_rate = 0.05\nresult_timeout_s = 2.0",
            )
            .replace("iterations = 160", "iterations = 200"),
    );
    let trace = scratch("stopped-cyclic.h5");
    let mut job = Job::start(
        7,
        &[
            "train",
            "--config",
            cfg.to_str().unwrap(),
            "--out",
            trace.to_str().unwrap(),
            "--force",
        ],
    );
    job.wait_for("iteration 10/", STARTUP);
    let worker = rank_pid(2);
    signal(worker, "STOP");
    let (_, _, err) = job.wait_exit(Duration::from_secs(40));
    signal(worker, "CONT");
    let data = read_trace(&trace, "/").unwrap();
    assert_eq!(
        data.records.len(),
        200,
        "a tolerant scheme trains to the end: {err}"
    );
    let late = &data.records[150..];
    assert!(
        late.iter().all(|r| !r.used[1]),
        "the stopped worker is recorded as never used"
    );
}
