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
    /// The job's rank processes seen while it ran (mpirun's children then;
    /// once mpirun has exited they are no longer its descendants).
    ranks_seen: Vec<u32>,
}

impl Job {
    fn start(ranks: usize, args: &[&str]) -> Job {
        Job::spawn(mpirun(ranks, args))
    }

    /// Start `cmd` (its stdout and stderr piped).
    fn spawn(mut cmd: Command) -> Job {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
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
            ranks_seen: Vec::new(),
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
                        self.note_ranks();
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
    /// Every rank of the job (seen by [`Job::wait_for`] or now) must also be
    /// gone within `RANKS_OUTLIVE_LIMIT` after mpirun: OpenMPI's mpirun may
    /// return while a rank it sent SIGTERM still writes its trace (CI read a
    /// trace still locked by the master). A rank that mpirun has left is no
    /// longer its descendant, hence the ranks seen while the job printed.
    fn wait_exit(mut self, limit: Duration) -> (Option<i32>, String, String) {
        let started = Instant::now();
        self.note_ranks();
        let ranks = std::mem::take(&mut self.ranks_seen);
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
        for pid in ranks {
            assert!(
                wait_gone(pid, RANKS_OUTLIVE_LIMIT),
                "rank process {pid} outlived mpirun by {RANKS_OUTLIVE_LIMIT:?}"
            );
        }
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

/// How long a rank may take to write its trace and exit after mpirun ended.
const RANKS_OUTLIVE_LIMIT: Duration = Duration::from_secs(20);

/// Wait until process `pid` has exited (gone, or a zombie nobody reaped yet),
/// at most `limit`; whether it did.
fn wait_gone(pid: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        match stat_fields(pid) {
            None => return true,
            Some(fields) if matches!(fields[0].as_str(), "Z" | "X") => return true,
            Some(_) if Instant::now() >= deadline => return false,
            Some(_) => thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// The ids of the processes alive now (the numbered entries of /proc).
fn process_ids() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

/// The fields of /proc/`pid`/stat after the command name (state, parent,
/// ...), if the process is still there. The name may hold spaces, so the
/// fields are read after its ')'.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<String> = stat
        .rsplit_once(')')?
        .1
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    (fields.len() > 1).then_some(fields)
}

/// The processes with `path` open: "pid state (name) parent"s.
fn holders_of(path: &std::path::Path) -> Vec<String> {
    let holds = |pid: u32| {
        std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
            fds.flatten()
                .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|t| t == path))
        })
    };
    process_ids()
        .into_iter()
        .filter(|&pid| holds(pid))
        .map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let head: Vec<&str> = stat.split_whitespace().take(4).collect();
            format!("{pid}: {}", head.join(" "))
        })
        .collect()
}

/// The parent of process `pid`, if it is still there.
fn parent_pid(pid: u32) -> Option<u32> {
    stat_fields(pid)?[1].parse().ok()
}

/// Process `pid`'s command line, its arguments separated by NULs (empty
/// when it is gone).
fn command_line(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).into_owned())
        .unwrap_or_default()
}

/// Whether process `pid` descends from process `ancestor`.
fn descends_from(mut pid: u32, ancestor: u32) -> bool {
    while pid > 1 {
        match parent_pid(pid) {
            Some(p) if p == ancestor => return true,
            Some(p) => pid = p,
            None => return false,
        }
    }
    false
}

impl Job {
    /// Add the job's rank processes alive now to those seen.
    fn note_ranks(&mut self) {
        for pid in self.rank_pids() {
            if !self.ranks_seen.contains(&pid) {
                self.ranks_seen.push(pid);
            }
        }
    }

    /// The pids of this job's gradcode processes alive now.
    fn rank_pids(&self) -> Vec<u32> {
        process_ids()
            .into_iter()
            .filter(|&pid| {
                command_line(pid).contains("gradcode\0") && descends_from(pid, self.pid())
            })
            .collect()
    }

    /// The pid of MPI rank `rank` of this job (OpenMPI sets
    /// OMPI_COMM_WORLD_RANK in each rank's environment): only the job's own
    /// processes, never a gradcode of another test or user on the machine.
    fn rank_pid(&self, rank: usize) -> u32 {
        let deadline = Instant::now() + STARTUP;
        let wanted = format!("OMPI_COMM_WORLD_RANK={rank}");
        loop {
            for pid in self.rank_pids() {
                if !command_line(pid).contains("gradcode\0train") {
                    continue;
                }
                let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
                    continue;
                };
                if env.split(|&b| b == 0).any(|v| v == wanted.as_bytes()) {
                    return pid;
                }
            }
            assert!(Instant::now() < deadline, "no rank {rank} found");
            std::thread::sleep(Duration::from_millis(50));
        }
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
    let (code, summary, err) = job.wait_exit(Duration::from_secs(20));
    assert!(
        signalled.elapsed() < Duration::from_secs(5),
        "the job exits within 5 s of SIGTERM"
    );
    // OpenMPI's mpirun (4.1) ends the job itself when it is signalled and
    // then exits 1, whatever the ranks return (docs/reliability.md, "Exit status under a
    // launcher"); jobs/launch.sh maps it (see `launch_sh_exits_128_plus_the_signal`).
    assert_eq!(code, Some(1), "mpirun signalled exits 1: {err}");
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
    // `--json` still writes a summary: the status, the iterations done, the trace.
    let summary: serde_json::Value =
        serde_json::from_str(&summary).unwrap_or_else(|e| panic!("{e}: {summary}"));
    assert_eq!(summary["status"], "interrupted", "{summary}");
    assert_eq!(summary["iterations"], done, "{summary}");
    assert_eq!(summary["signal"], 15, "{summary}");
    assert_eq!(summary["trace"], cut.to_str().unwrap(), "{summary}");
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
    let completed: serde_json::Value = serde_json::from_str(&resumed).unwrap();
    assert_eq!(completed["status"], "completed");
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
    // The summary, the trace and its /timing/ count the whole run, the
    // resumed part marked.
    assert_eq!(completed["iterations"], 160);
    assert_eq!(completed["resumed_at"], done, "{completed}");
    let traced_mean =
        data.records.iter().map(|r| r.duration_s).sum::<f64>() / data.records.len() as f64;
    let summary_mean = completed["mean_iteration_s"].as_f64().unwrap();
    assert!(
        (summary_mean - traced_mean).abs() <= 1e-9 * traced_mean,
        "summary mean {summary_mean} s, trace mean {traced_mean} s"
    );
    let decode = data
        .timing
        .iter()
        .find(|e| e.event == "decode")
        .expect("a decode timing event");
    assert_eq!(decode.count, 160, "/timing/ counts every iteration");
    // Provenance: what ran, where and when, and the resume.
    let inspected = common::json(&common::gradcode(&[
        "inspect",
        cut.to_str().unwrap(),
        "--json",
    ]));
    let p = &inspected["provenance"];
    assert_eq!(p["build_features"], "mpi,hdf5", "{p}");
    assert!(p["mpi_library"].as_str().unwrap().contains("MPI"), "{p}");
    assert!(
        p["hdf5_library"].as_str().unwrap().starts_with("HDF5 1."),
        "{p}"
    );
    assert!(
        p["command_line"]
            .as_str()
            .unwrap()
            .contains(" train --config "),
        "{p}"
    );
    assert!(p["hosts"].as_str().unwrap().ends_with("(ranks 0-6)"), "{p}");
    let (started, ended) = (
        p["started_at"].as_str().unwrap(),
        p["ended_at"].as_str().unwrap(),
    );
    assert!(started.ends_with('Z') && started <= ended, "{p}");
    assert!(
        p["resumed"]
            .as_str()
            .unwrap()
            .contains(&format!("from iteration {done}: ")),
        "{p}"
    );
    let commit = common::git_head();
    assert_eq!(p["git_commit"], commit.as_str(), "{p}");
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
    signal(job.rank_pid(3), "INT");
    let (code, _, err) = job.wait_exit(Duration::from_secs(10));
    // mpirun was not signalled: it returns the ranks' first non-zero status,
    // rank 0's 128 + SIGINT.
    assert_eq!(code, Some(130), "{err}");
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
    signal(job.rank_pid(0), "KILL");
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
    signal(job.rank_pid(4), "KILL");
    let (code, _, _) = job.wait_exit(Duration::from_secs(20));
    assert_ne!(code, Some(0), "OpenMPI ends the job when a rank dies");
    let data = read_trace(&trace, "/").unwrap_or_else(|e| {
        panic!(
            "the trace survives a dead worker: {e:?}; processes holding it: {:?}",
            holders_of(&trace)
        )
    });
    assert!(!data.records.is_empty());
    // mpirun ends the others with SIGTERM: the trace says it came from the
    // launcher, which does so when a rank died (issue 38: it said only
    // "interrupted by SIGTERM", as if the job had been cancelled). Over TCP
    // the master may instead die of the broken connection first (MPI's own
    // abort): the trace is then left as its last flush wrote it.
    let report = gradcode::trace::Report::read(&trace).unwrap();
    if report.status.as_deref() != Some("interrupted") {
        assert!(
            std::env::var("OMPI_MCA_btl").is_ok_and(|b| b.contains("tcp")),
            "over shared memory the master is interrupted: {:?} {:?}",
            report.status,
            report.status_reason
        );
        return;
    }
    let reason = report.status_reason.unwrap_or_default();
    assert!(
        reason.starts_with("interrupted by SIGTERM after ")
            && reason.contains("; SIGTERM came from mpirun (pid ")
            && reason.ends_with("this rank's launcher, which sends it when the job is cancelled or another rank died (its output says which)"),
        "{reason}"
    );
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
    let worker = job.rank_pid(2);
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
    let worker = job.rank_pid(2);
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

/// The `error:` lines of a job's stderr (mpirun adds banners of its own).
fn error_lines(err: &str) -> Vec<&str> {
    err.lines().filter(|l| l.starts_with("error:")).collect()
}

/// Send `sig` to every process of process group `pgid`.
fn signal_group(pgid: u32, sig: &str) {
    assert!(
        Command::new("kill")
            .args([&format!("-{sig}"), "--", &format!("-{pgid}")])
            .status()
            .unwrap()
            .success()
    );
}

/// Resume a stopped process, if it is still there.
fn resume(pid: u32) {
    let _ = Command::new("kill")
        .args(["-CONT", &pid.to_string()])
        .stderr(Stdio::null())
        .status();
}

/// A quick run: 4 workers, gc-cyclic with load 2 (tolerates one straggler), 12 iterations.
const SMALL: &str = "workers = 4\nseed = 3\n[scheme]\nkind = \"gc-cyclic\"\nload = 2\n[straggler]\ntime_unit_ms = 5.0\n[data]\ntrain_samples = 200\ntest_samples = 20\nfeatures = 10\n[train]\niterations = 12\nlearning_rate = 0.05\n";

#[test]
fn huge_times_are_refused_or_mean_never_and_panic_no_rank() {
    let _one = common::one_at_a_time();
    let cfg = config("huge", SMALL);
    let trace = scratch("huge.h5");
    let train = |sets: &[&str]| {
        let mut args = vec![
            "train",
            "--config",
            cfg.to_str().unwrap(),
            "--out",
            trace.to_str().unwrap(),
            "--force",
            "--quiet",
        ];
        for s in sets {
            args.extend(["--set", s]);
        }
        let started = Instant::now();
        let (code, _, err) = Job::start(5, &args).wait_exit(Duration::from_secs(120));
        assert!(!err.contains("panicked"), "{sets:?}: {err}");
        (code, err, started.elapsed())
    };

    // Values that make no sense: refused before any work, exit 2, one line naming the key.
    for (sets, key) in [
        (
            &["straggler.time_unit_ms=1e300"][..],
            "straggler.time_unit_ms = 1e300 must be at most 86400000",
        ),
        (
            &["straggler.time_unit_ms=1e8"][..],
            "straggler.time_unit_ms = 1e8 must be at most 86400000",
        ),
        (
            &["straggler.alpha=1e300"][..],
            "straggler.alpha = 1e300 makes every emulated computation take at least",
        ),
        // alpha = 1e5 model units of 5 ms: 500 s per computation, beyond the 300 s result timeout.
        (
            &["straggler.alpha=1e5"][..],
            "more than train.result_timeout_s = 300",
        ),
    ] {
        let (code, err, _) = train(sets);
        assert_eq!(code, Some(2), "{sets:?}: {err}");
        let errors = error_lines(&err);
        assert_eq!(errors.len(), 1, "{sets:?}: {err}");
        assert!(errors[0].contains(key), "{sets:?}: {err}");
    }

    // Timeouts and deadlines beyond any clock mean never: the runs train to the end.
    for sets in [
        &["train.result_timeout_s=1e30"][..],
        &["train.result_timeout_s=1e19"][..],
        &["scheme.kind=is-gc", "scheme.deadline=1e300"][..],
    ] {
        let (code, err, _) = train(sets);
        assert_eq!(code, Some(0), "{sets:?}: {err}");
        assert_eq!(
            read_trace(&trace, "/").unwrap().records.len(),
            12,
            "{sets:?}"
        );
    }

    // A trace CSV whose worker 2 takes 1e300 model time units in round 2 (of
    // 3, replayed cyclically): that worker never answers those iterations.
    let csv = scratch("huge-trace.csv");
    std::fs::write(
        &csv,
        "w0,w1,w2,w3\n0.1,0.2,0.1,0.15\n0.1,1e300,0.1,0.2\n0.2,0.1,0.1,0.1\n",
    )
    .unwrap();
    let replay = format!("straggler.trace_file={}", csv.display());
    // gc-cyclic decodes without it and trains to the end, well within the 300 s timeout.
    let (code, err, took) = train(&["straggler.model=trace", &replay]);
    assert_eq!(code, Some(0), "{err}");
    assert!(took < Duration::from_secs(100), "{took:?}");
    let records = read_trace(&trace, "/").unwrap().records;
    assert_eq!(records.len(), 12);
    for (i, r) in records.iter().enumerate().filter(|(i, _)| i % 3 == 1) {
        assert!(!r.used[1], "iteration {}: {:?}", i + 1, r.used);
        assert_eq!(r.recovered_fraction, 1.0);
    }
    // Uncoded needs it: the result timeout names it and says why.
    let (code, err, _) = train(&[
        "straggler.model=trace",
        &replay,
        "scheme.kind=uncoded",
        "train.result_timeout_s=2",
    ]);
    assert_eq!(code, Some(1), "{err}");
    let errors = error_lines(&err);
    assert!(
        errors.len() == 1
            && errors[0].contains("no answer from workers 2:")
            && errors[0].contains("emulated time is beyond the timeout (workers 2 at 5.000e297 s)"),
        "{err}"
    );
}

#[test]
fn a_panicking_rank_ends_the_job_at_once_with_its_message() {
    let _one = common::one_at_a_time();
    // Uncoded needs every worker, and the result timeout is the default 300 s:
    // without the abort a dead worker would hold the job that long, a dead
    // master forever (the workers wait for tasks).
    let cfg = config(
        "panic",
        &SLOW
            .replace(
                "kind = \"gc-sc\"\nload = 2\nclusters = 2",
                "kind = \"uncoded\"",
            )
            .replace("iterations = 160", "iterations = 100000"),
    );
    let trace = scratch("panic.h5");
    for (rank, who) in [(2, "rank 2 (worker 2)"), (0, "rank 0 (master)")] {
        let mut cmd = common::mpirun_command(
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
        cmd.env("GRADCODE_TEST_PANIC_RANK", rank.to_string())
            .env("RUST_BACKTRACE", "0");
        let mut job = Job::spawn(cmd);
        job.wait_for("panicked", STARTUP);
        let panicked = Instant::now();
        let (code, _, err) = job.wait_exit(Duration::from_secs(30));
        assert!(
            panicked.elapsed() < Duration::from_secs(15),
            "{who}: the job took {:?} to end after the panic",
            panicked.elapsed()
        );
        assert_eq!(code, Some(1), "{who}: {err}");
        let line = err
            .lines()
            .find(|l| l.contains("panicked"))
            .unwrap_or_else(|| panic!("{err}"));
        assert!(
            line.starts_with(&format!("error: {who} panicked at src/runtime/"))
                && line.contains("GRADCODE_TEST_PANIC_RANK")
                && line.ends_with("on purpose; ending the job (MPI_Abort)"),
            "{line}"
        );
    }
}

/// 2 workers that each generate 30000 × 4000 samples (960 MB): seconds of loading.
const BIG: &str = "workers = 2\nseed = 4\n[scheme]\nkind = \"uncoded\"\n[straggler]\ntime_unit_ms = 5.0\n[data]\ntrain_samples = 60000\ntest_samples = 20\nfeatures = 4000\n[train]\niterations = 5\n";

/// Run BIG (with `extra` appended) and stop worker 2 while it loads its data:
/// at once when the master logs the setup it sent, just before the workers
/// start loading. `act` does the rest and returns the instant the test
/// measures from. Returns the exit code, stderr and the time since that
/// instant. A stop that came after worker 2 had loaded (a race lost to a fast
/// machine) does not count: the run is tried again.
/// OpenMPI 4's mpirun sometimes crashes (SIGSEGV in PMIx_server_finalize)
/// while it ends a job that a rank aborted, after printing the abort's
/// notice (seen over TCP in CI: the job's status was a signal). The rank's
/// status is then the abort's error code, which mpirun printed: that code,
/// when both the notice and the crash are on stderr; `None` otherwise.
fn launcher_crash_after_abort(err: &str) -> Option<i32> {
    if !err.contains("PMIx_server_finalize") {
        return None;
    }
    let notice = err.split("MPI_ABORT was invoked on rank 0").nth(1)?;
    let code = notice.split("with errorcode ").nth(1)?;
    code.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

fn with_worker_2_stopped_while_loading(
    name: &str,
    extra: &str,
    act: impl Fn(&mut Job) -> Instant,
) -> (Option<i32>, String, Duration) {
    let cfg = config(name, &format!("{BIG}{extra}"));
    let trace = scratch(&format!("{name}.h5"));
    for attempt in 1..=3 {
        let mut cmd = common::mpirun_command(
            3,
            &[
                "train",
                "--config",
                cfg.to_str().unwrap(),
                "--out",
                trace.to_str().unwrap(),
                "--force",
            ],
        );
        cmd.env("GRADCODE_LOG", "info");
        let mut job = Job::spawn(cmd);
        // Found before the setup starts, so that the stop follows the master's line at once.
        let worker = job.rank_pid(2);
        job.wait_for("master: uncoded on 2 workers", STARTUP);
        signal(worker, "STOP");
        let from = act(&mut job);
        let (code, _, err) = job.wait_exit(Duration::from_secs(120));
        let code = code.or_else(|| launcher_crash_after_abort(&err));
        let took = from.elapsed();
        resume(worker);
        if err.contains("worker 2: 1 partitions stored") || err.contains("master: worker 2 ready") {
            eprintln!(
                "attempt {attempt}: worker 2 was stopped after it had loaded its data; again"
            );
            continue;
        }
        return (code, err, took);
    }
    panic!(
        "worker 2 was stopped after loading its data 3 times: BIG is too small for this machine"
    );
}

#[test]
fn a_worker_stuck_in_setup_ends_the_job_on_sigterm() {
    let _one = common::one_at_a_time();
    let (code, err, took) = with_worker_2_stopped_while_loading("stuck-sigterm", "", |job| {
        // The master now waits for worker 2 alone (default result timeout: 300 s).
        job.wait_for("master: worker 1 ready", STARTUP);
        let signalled = Instant::now();
        signal(job.rank_pid(0), "TERM");
        signalled
    });
    assert!(
        took < Duration::from_secs(15),
        "the job took {took:?} to end after SIGTERM"
    );
    assert_eq!(code, Some(143), "{err}");
    assert!(
        err.contains(
            "gradcode: interrupted by SIGTERM during setup, before the first iteration; workers not ready: 2"
        ),
        "{err}"
    );
}

#[test]
fn a_worker_stuck_in_setup_times_out_and_is_named() {
    let _one = common::one_at_a_time();
    // Loading takes each worker seconds, longer than the 1 s timeout: a
    // worker that loads says so, only the silent one is named.
    let (code, err, took) =
        with_worker_2_stopped_while_loading("stuck-timeout", "result_timeout_s = 1.0\n", |_| {
            Instant::now()
        });
    assert_eq!(code, Some(1), "{err}");
    let errors = error_lines(&err);
    let line = errors
        .iter()
        .find(|l| l.starts_with("error: setup: "))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        line.starts_with(
            "error: setup: no word from workers 2 for 1 s (train.result_timeout_s) while they load their partitions"
        ),
        "only worker 2 is silent: {line}"
    );
    // Worker 1 may still be loading (then it is not ready, but not silent).
    let not_ready = line.rsplit(": ").next().unwrap();
    assert!(
        not_ready == "2" || not_ready == "1, 2",
        "workers not ready: {line}"
    );
    // The stopped worker is found silent within the timeout (then up to 3 s
    // for the others' goodbyes, and the abort).
    assert!(
        took < Duration::from_secs(30),
        "the job took {took:?} after the worker stopped"
    );
}

#[test]
fn launch_sh_exits_128_plus_the_signal() {
    let _one = common::one_at_a_time();
    let cfg = config(
        "launch",
        &SLOW.replace("iterations = 160", "iterations = 100000"),
    );
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/jobs/launch.sh");
    for (sig, status) in [("TERM", 143), ("INT", 130)] {
        let trace = scratch(&format!("launch-{sig}.h5"));
        // SIGINT and SIGTERM at their defaults, as under Slurm or a
        // terminal: a shell started with a signal ignored (this test run
        // from a background job, `nohup ... &`) cannot trap it.
        let mut cmd = Command::new("env");
        cmd.args([
            "--default-signal=INT,TERM",
            "bash",
            "-c",
            &format!("source {script}; set -e; launch \"$@\" > /dev/null; echo unreachable >&2"),
            "launch",
            env!("CARGO_BIN_EXE_gradcode"),
            "train",
            "--config",
            cfg.to_str().unwrap(),
            "--out",
            trace.to_str().unwrap(),
            "--force",
        ])
        .env("SLURM_NTASKS", "7")
        .env("GRADCODE_LAUNCHER", "mpirun")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut job = Job::spawn(cmd);
        job.wait_for("iteration 10/", STARTUP);
        // As from Ctrl-C on a terminal, or Slurm signalling the batch step:
        // the shell and mpirun (the ranks are in process groups of their own).
        signal_group(job.pid(), sig);
        let (code, _, err) = job.wait_exit(Duration::from_secs(30));
        assert_eq!(code, Some(status), "{sig}: {err}");
        assert!(
            err.contains(&format!(
                "launch: stopped by SIG{sig} (the launcher returned 1): exit {status}"
            )) && !err.contains("unreachable"),
            "{sig}: {err}"
        );
        // mpirun passes SIGINT on to the ranks as SIGTERM; they stop gracefully.
        assert!(
            err.contains("gradcode: interrupted by SIGTERM after"),
            "{sig}: {err}"
        );
        let data = read_trace(&trace, "/").unwrap();
        assert!(!data.records.is_empty() && data.theta.is_some());
    }
}

/// A trace write that fails mid-run (the file-size limit of `ulimit -f`
/// standing in for a full disk) ends the job with the error on one line,
/// said once: rank 0's close of the trace does not repeat it.
#[test]
fn a_failed_trace_write_is_reported_once_on_one_line() {
    let _one = common::one_at_a_time();
    let cfg = config(
        "full-disk",
        "workers = 2\nseed = 3\n[scheme]\nkind = \"uncoded\"\n[data]\ntrain_samples = 200\ntest_samples = 20\nfeatures = 8\n[train]\niterations = 3000\nlearning_rate = 0.05\n[output]\nsnapshot_every = 1\n",
    );
    let out = scratch("full-disk.h5");
    let _ = std::fs::remove_file(&out);
    // OpenMPI's shared-memory transport sizes files too: TCP between ranks.
    let mut cmd = Command::new("mpirun");
    cmd.args([
        "--oversubscribe",
        "--mca",
        "btl",
        "self,tcp",
        "-n",
        "3",
        "sh",
        "-c",
    ])
    .arg("trap '' XFSZ; ulimit -f 60; exec \"$0\" train --config \"$1\" --quiet --out \"$2\"")
    .arg(env!("CARGO_BIN_EXE_gradcode"))
    .arg(&cfg)
    .arg(&out)
    .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
    .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let start = Instant::now();
    let (code, _, err) = finish(cmd.spawn().unwrap());
    assert_ne!(code, Some(0), "{err}");
    assert!(start.elapsed() < Duration::from_secs(120), "{err}");
    let errors = error_lines(&err);
    assert_eq!(errors.len(), 1, "{err}");
    assert!(errors[0].contains("File too large"), "{err}");
    assert_eq!(err.matches("File too large").count(), 1, "said once: {err}");
    // The date inside libhdf5's message no longer starts a line of its own.
    assert!(!err.lines().any(|l| l.starts_with(", filename")), "{err}");
}

/// A decode refused only because `scheme.decode_tolerance` is below f64
/// rounding names the tolerance as the cause, not the code's load.
#[test]
fn a_too_tight_decode_tolerance_is_named_as_the_cause() {
    let _one = common::one_at_a_time();
    // K = 6, r = 4: about 1 in 5 minimal arrival sets has a rounding
    // residual above 1e-15 (`gradcode check`), so 200 iterations meet one.
    let cfg = config(
        "tight-tolerance",
        "workers = 6\nseed = 5\n[scheme]\nkind = \"gc-cyclic\"\nload = 4\ndecode_tolerance = 1e-15\n[data]\ntrain_samples = 120\ntest_samples = 12\nfeatures = 4\n[train]\niterations = 200\nlearning_rate = 0.01\n",
    );
    let out = scratch("tight-tolerance.h5");
    let _ = std::fs::remove_file(&out);
    let (code, _, err) = finish(
        mpirun(
            7,
            &[
                "train",
                "--config",
                cfg.to_str().unwrap(),
                "--quiet",
                "--out",
                out.to_str().unwrap(),
            ],
        )
        .spawn()
        .unwrap(),
    );
    assert_ne!(code, Some(0), "{err}");
    let errors = error_lines(&err);
    assert_eq!(errors.len(), 1, "{err}");
    assert!(
        errors[0].contains("scheme.decode_tolerance = 1e-15: the tolerance is the cause"),
        "{err}"
    );
    assert!(!errors[0].contains("scheme.load"), "{err}");
}

/// A job suspended for longer than `train.result_timeout_s` and continued
/// (SIGSTOP then SIGCONT of the master alone, then of every rank, as Slurm's
/// `scontrol suspend` and gang scheduling do) completes: the time the
/// master did not run is not counted as the workers' silence (issue 27,
/// defect 4: it ended with "no result for 2 s ... no answer from workers").
#[test]
fn a_suspended_master_or_job_completes_when_continued() {
    let _one = common::one_at_a_time();
    let cfg = config(
        "suspended",
        &SLOW
            .replace(
                "learning_rate = 0.05",
                "learning_rate = 0.05\nresult_timeout_s = 2.0",
            )
            .replace("iterations = 160", "iterations = 400"),
    );
    let trace = scratch("suspended.h5");
    let mut job = Job::start(
        7,
        &[
            "train",
            "--config",
            cfg.to_str().unwrap(),
            "--out",
            trace.to_str().unwrap(),
            "--force",
            "--json",
        ],
    );
    job.wait_for("iteration 10/", STARTUP);
    let master = job.rank_pid(0);
    // The master alone, for twice the timeout.
    signal(master, "STOP");
    thread::sleep(Duration::from_secs(4));
    signal(master, "CONT");
    job.wait_for("iteration 60/", Duration::from_secs(60));
    // Every rank, stopped and continued by one signal each, as a suspended
    // job's are (the master first). Continued one by one with pauses, the
    // workers came back later than the timeout after the master on a
    // loaded machine, and the master rightly gave up on them.
    let ranks: Vec<String> = (0..7).map(|r| job.rank_pid(r).to_string()).collect();
    for sig in ["-STOP", "-CONT"] {
        let status = Command::new("kill").arg(sig).args(&ranks).status().unwrap();
        assert!(status.success(), "kill {sig}");
        if sig == "-STOP" {
            thread::sleep(Duration::from_secs(4));
        }
    }
    let (code, stdout, err) = job.wait_exit(Duration::from_secs(120));
    assert_eq!(code, Some(0), "{err}");
    let summary: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(summary["status"], "completed", "{stdout}");
    assert_eq!(summary["iterations"], 400);
}

/// A partial scheme with a stopped worker goes on at its pace (issue 27,
/// defect 5: one iteration per `train.result_timeout_s`, silently): after
/// at most `MAX_UNTAKEN_TASKS` evaluations that wait for the stopped
/// worker's losses, it is sent no tasks, the master names it once on
/// stderr, and the run of 300 iterations ends well within the time 300
/// waits of 2 s would take; continued, it is named as taking tasks again.
#[test]
fn a_stopped_worker_under_a_partial_scheme_is_named_once_and_not_waited_for() {
    let _one = common::one_at_a_time();
    let cfg = config(
        "stopped-partial",
        &SLOW
            .replace(
                "kind = \"gc-sc\"\nload = 2\nclusters = 2",
                "kind = \"ignore-stragglers\"\nwait_for = 4",
            )
            .replace(
                "learning_rate = 0.05",
                "learning_rate = 0.05\nresult_timeout_s = 2.0",
            )
            .replace("iterations = 160", "iterations = 300"),
    );
    let trace = scratch("stopped-partial.h5");
    let mut job = Job::start(
        7,
        &[
            "train",
            "--config",
            cfg.to_str().unwrap(),
            "--out",
            trace.to_str().unwrap(),
            "--force",
            "--json",
        ],
    );
    job.wait_for("iteration 10/", STARTUP);
    let worker = job.rank_pid(3);
    signal(worker, "STOP");
    let stopped = Instant::now();
    job.wait_for(
        "worker 3 has not taken its last 2 tasks",
        Duration::from_secs(30),
    );
    job.wait_for("iteration 200/", Duration::from_secs(60));
    let took = stopped.elapsed();
    signal(worker, "CONT");
    let (code, stdout, err) = job.wait_exit(Duration::from_secs(120));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        took < Duration::from_secs(40),
        "190 iterations without worker 3 took {took:?}: it is waited for"
    );
    assert_eq!(
        err.matches("worker 3 has not taken its last").count(),
        1,
        "named once: {err}"
    );
    let summary: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(summary["status"], "completed");
}

#[test]
fn a_worker_stopped_before_the_setup_is_named_within_the_result_timeout() {
    // Worker 2 stops itself (SIGSTOP) right after MPI starts, before it says
    // hello: the master names it after train.result_timeout_s and ends the
    // job, instead of waiting in a collective for as long as it is stopped.
    let _one = common::one_at_a_time();
    let cfg = config(
        "stopped-before-setup",
        "workers = 3\n[scheme]\nkind = \"uncoded\"\n[train]\niterations = 3\nresult_timeout_s = 2.0\n",
    );
    let trace = scratch("stopped-before-setup.h5");
    let _ = std::fs::remove_file(&trace);
    let mut cmd = common::mpirun_command(
        4,
        &[
            "train",
            "--config",
            cfg.to_str().unwrap(),
            "--out",
            trace.to_str().unwrap(),
        ],
    );
    cmd.env("GRADCODE_TEST_STOP_RANK", "2");
    let started = Instant::now();
    let job = Job::spawn(cmd);
    let (code, _, err) = job.wait_exit(Duration::from_secs(60));
    let took = started.elapsed();
    assert_eq!(code, Some(1), "{err}");
    let errors = error_lines(&err);
    assert!(
        errors.iter().any(|l| l.starts_with(
            "error: setup: no word from worker(s) 2 for 2 s (train.result_timeout_s) after MPI started"
        )),
        "{err}"
    );
    // The timeout, MPI's start and the abort; never the stop's length.
    assert!(took < Duration::from_secs(2 + 5 + 10), "took {took:?}");
    assert!(!trace.exists(), "no trace before the setup ends");
}
