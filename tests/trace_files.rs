//! What `train` and `simulate` do to files: nothing before the input is
//! valid, nothing to a trace another process has open, nothing to a trace a
//! refused resume names; and every trace records how its run ended.
//!
//! Its own test binary, one test at a time: the tests spawn processes, and
//! a child inherits the HDF5 files a test has open, with their locks.
#![cfg(feature = "hdf5")]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{assert_rejected, gradcode, stderr};

fn scratch(name: &str) -> PathBuf {
    common::scratch("trace-files", name)
}

/// A fresh scratch folder.
fn folder(name: &str) -> PathBuf {
    let d = scratch(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn inspect_json(path: &Path) -> serde_json::Value {
    common::json(&gradcode(&["inspect", path.to_str().unwrap(), "--json"]))
}

/// A simulation long enough to be caught running (seconds), writing `out`.
fn start_simulation(out: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_gradcode"))
        .args(["simulate", "--trials", "50000", "--iterations", "400"])
        .args(["--out", out.to_str().unwrap(), "--force"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn wait_for_file(p: &Path, job: &mut Child) {
    let started = Instant::now();
    while !p.exists() {
        assert!(
            job.try_wait().unwrap().is_none(),
            "the job ended before creating {}",
            p.display()
        );
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no {} after 60 s",
            p.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn stop(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Refused as bad input under mpirun: status 2, one `error:` line (the
/// launcher may add its own lines), containing `needle`.
fn assert_refused(name: &str, output: &Output, needle: &str) {
    let err = stderr(output);
    assert_eq!(output.status.code(), Some(2), "{name}: {err}");
    let ours: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(ours.len(), 1, "{name}: {err}");
    assert!(ours[0].contains(needle), "{name}: {err}");
    assert!(!err.contains("panicked"), "{name}: {err}");
}

/// `output` is the refusal of `--force` against `trace`: status 2, one line naming it.
fn refused_naming(name: &str, output: &Output, trace: &Path) {
    if name.starts_with("simulate") {
        // Not under mpirun: nothing but the one line.
        assert_rejected(name, output, trace.to_str().unwrap());
    }
    assert_refused(name, output, trace.to_str().unwrap());
    let err = stderr(output);
    assert!(err.contains("another process"), "{name}: {err}");
}

/// `simulate --force` against a trace a reader has open (here, this test
/// through HDF5) and against one a running simulation writes: refused
/// naming the file, which stays byte for byte as it was, no temporary file
/// left behind.
#[test]
fn force_never_touches_a_trace_another_process_has_open() {
    let _one = common::one_at_a_time();
    let dir = folder("force-sim");
    let trace = dir.join("run.h5");
    let o = gradcode(&[
        "simulate",
        "--trials",
        "2",
        "--iterations",
        "20",
        "--out",
        trace.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let before = std::fs::read(&trace).unwrap();
    let force = || {
        gradcode(&[
            "simulate",
            "--trials",
            "1",
            "--iterations",
            "5",
            "--out",
            trace.to_str().unwrap(),
            "--force",
        ])
    };
    {
        // A reader holds HDF5's shared lock.
        let reader = hdf5::File::open(&trace).unwrap();
        refused_naming("simulate --force, a reader", &force(), &trace);
        drop(reader);
    }
    assert_eq!(std::fs::read(&trace).unwrap(), before, "the file changed");
    assert_eq!(listing(&dir), ["run.h5"], "something was left behind");
    // Nobody has it open now: --force replaces it.
    assert!(force().status.success());
    assert_ne!(std::fs::read(&trace).unwrap(), before);

    // A running simulation holds HDF5's exclusive lock; stopped, it writes nothing.
    let live = dir.join("live.h5");
    let mut writer = start_simulation(&live);
    wait_for_file(&live, &mut writer);
    assert!(common::send_signal(writer.id(), "STOP"));
    let before = std::fs::read(&live).unwrap();
    let o = gradcode(&[
        "simulate",
        "--out",
        live.to_str().unwrap(),
        "--force",
        "--trials",
        "1",
    ]);
    let same = std::fs::read(&live).unwrap() == before;
    assert!(common::send_signal(writer.id(), "CONT"));
    stop(&mut writer);
    refused_naming("simulate --force, a running simulation", &o, &live);
    assert!(same, "the running simulation's trace changed");
}

/// Without `--force` an existing file is refused and kept; a new file
/// appears only whole (its temporary name is gone once it is in place).
#[test]
fn without_force_an_existing_trace_is_kept_and_a_new_one_appears_whole() {
    let _one = common::one_at_a_time();
    let dir = folder("no-force");
    let trace = dir.join("run.h5");
    std::fs::write(&trace, b"not a trace").unwrap();
    let o = gradcode(&["simulate", "--out", trace.to_str().unwrap()]);
    assert_rejected("simulate over a file", &o, "use --force");
    assert_eq!(std::fs::read(&trace).unwrap(), b"not a trace");
    let new = dir.join("sub/new.h5");
    let o = gradcode(&[
        "simulate",
        "--trials",
        "1",
        "--iterations",
        "5",
        "--out",
        new.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(listing(&dir.join("sub")), ["new.h5"]);
    let r = inspect_json(&new);
    assert_eq!(r["status"], "completed");
    assert_eq!(r["status_reason"], serde_json::Value::Null);
}

/// A path that cannot be written is refused before anything runs, and
/// nothing is created on the way (not even the missing folders).
#[test]
fn an_unwritable_trace_path_is_refused_and_nothing_is_created() {
    let _one = common::one_at_a_time();
    let dir = folder("unwritable");
    std::fs::write(dir.join("file"), b"x").unwrap();
    let bad = dir.join("file/run.h5");
    let o = gradcode(&["simulate", "--out", bad.to_str().unwrap()]);
    assert_rejected("simulate into a file", &o, "is not a folder");
    let o = gradcode(&["simulate", "--out", dir.to_str().unwrap(), "--force"]);
    assert_rejected("simulate onto a folder", &o, "is a folder");
    assert_eq!(listing(&dir), ["file"]);
}

/// Where the idle child writer writes (set by the parent), and which kind.
const CHILD_ENV: &str = "GRADCODE_TEST_IDLE_WRITER";

/// The child: creates a trace (`sim:PATH` a simulation's, `run:PATH` a
/// run's), writes and flushes three iterations, says `ready`, and waits to
/// be killed. Does nothing unless the parent test set [`CHILD_ENV`].
#[test]
#[ignore = "the child process of a_trace_whose_writer_died_is_reported_as_such"]
fn idle_writer_child() {
    use gradcode::trace::{IterationRecord, SimTraceWriter, TraceMeta, TraceWriter};
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (kind, path) = spec.split_once(':').unwrap();
    let meta = TraceMeta {
        scheme: "uncoded".into(),
        workers: 2,
        config_toml: "workers = 2\n".into(),
        seed: 1,
    };
    let mut record = IterationRecord::new(2);
    record.duration_s = 0.5;
    let _writer: Box<dyn std::any::Any> = if kind == "sim" {
        let names = vec!["uncoded".to_string()];
        let mut w = SimTraceWriter::create(Path::new(path), &meta, &names, 1, 3, 0.001).unwrap();
        for _ in 0..3 {
            w.append(0, 0, &record).unwrap();
        }
        w.flush().unwrap();
        Box::new(w)
    } else {
        let mut w = TraceWriter::create(Path::new(path), &meta).unwrap();
        for _ in 0..3 {
            w.append(&record).unwrap();
        }
        w.write_snapshot(3, &[1.0, 2.0], &[1.0, 2.0]).unwrap();
        Box::new(w)
    };
    println!("ready");
    std::thread::sleep(Duration::from_secs(120));
}

/// A trace whose writer died (SIGKILL) says `running` and, with no process
/// holding it, `inspect` reports the run as died; while the writer lives,
/// `writer_open` says so (read without HDF5's locking).
#[test]
fn a_trace_whose_writer_died_is_reported_as_such() {
    use std::io::BufRead;
    let _one = common::one_at_a_time();
    for kind in ["sim", "run"] {
        let trace = scratch(&format!("died-{kind}.h5"));
        let _ = std::fs::remove_file(&trace);
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "idle_writer_child", "--ignored", "--nocapture"])
            .args(["--test-threads", "1"])
            .env(CHILD_ENV, format!("{kind}:{}", trace.display()))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        assert!(
            lines.any(|l| l.is_ok_and(|l| l.contains("ready"))),
            "the child writer did not start"
        );
        let o = Command::new(env!("CARGO_BIN_EXE_gradcode"))
            .args(["inspect", trace.to_str().unwrap(), "--json"])
            .env("HDF5_USE_FILE_LOCKING", "FALSE")
            .output()
            .unwrap();
        let live = common::json(&o);
        stop(&mut child);
        assert_eq!(
            (&live["status"], &live["writer_open"]),
            (&"running".into(), &true.into()),
            "{kind}"
        );
        let r = inspect_json(&trace);
        assert_eq!(
            (&r["status"], &r["writer_open"]),
            (&"running".into(), &false.into()),
            "{kind}"
        );
        let text = common::stdout(&gradcode(&["inspect", trace.to_str().unwrap()]));
        let line = text
            .lines()
            .find(|l| l.starts_with("status"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(line.contains("the run died"), "{kind}: {line}");
    }
}

/// `check` refuses a data file that does not exist or whose first rows do
/// not parse, naming it.
#[test]
fn check_refuses_data_files_that_train_could_not_read() {
    let dir = folder("check-data");
    let missing = dir.join("missing.libsvm");
    let o = gradcode(&[
        "check",
        "--set",
        "data.kind=\"libsvm\"",
        "--set",
        &format!("data.path=\"{}\"", missing.display()),
    ]);
    assert_rejected("check, a missing data file", &o, "data.path");
    assert!(stderr(&o).contains("missing.libsvm"), "{}", stderr(&o));
    let bad = dir.join("bad.libsvm");
    std::fs::write(&bad, "1 1:0.5\nyes 1:0.25\n").unwrap();
    let o = gradcode(&[
        "check",
        "--set",
        "data.kind=\"libsvm\"",
        "--set",
        &format!("data.path=\"{}\"", bad.display()),
    ]);
    assert_rejected("check, a bad label", &o, &format!("{}:2", bad.display()));
    let o = gradcode(&[
        "check",
        "--set",
        "data.kind=\"csv\"",
        "--set",
        &format!("data.path=\"{}\"", dir.display()),
    ]);
    assert_rejected("check, a folder", &o, "is a folder");
}

#[cfg(feature = "mpi")]
mod under_mpi {
    use super::*;

    /// Uncoded, K = 2, about 3 s of training; a snapshot every 5 iterations.
    const SLOW: &str = "workers = 2\nseed = 9\n[scheme]\nkind = \"uncoded\"\n[straggler]\nmodel = \"shifted-exponential\"\nmu = 2.0\ntime_unit_ms = 20.0\n[data]\ntrain_samples = 200\ntest_samples = 20\nfeatures = 30\n[train]\niterations = 150\nlearning_rate = 0.05\n[output]\nsnapshot_every = 5\n";

    fn config(name: &str, text: &str) -> String {
        let p = scratch(&format!("{name}.toml"));
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    }

    fn mpirun(ranks: usize, args: &[&str]) -> Command {
        let mut cmd = common::mpirun_command(ranks, args);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd
    }

    fn train(args: &[&str]) -> Output {
        let mut a = vec!["train"];
        a.extend_from_slice(args);
        mpirun(3, &a).output().unwrap()
    }

    /// A training job writing `out` (with `extra` arguments), started.
    fn start_training(cfg: &str, out: &Path, extra: &[&str]) -> Child {
        let mut a = vec!["train", "--config", cfg, "--out", out.to_str().unwrap()];
        a.extend_from_slice(extra);
        let mut cmd = common::mpirun_command(3, &a);
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        cmd.spawn().unwrap()
    }

    fn rank0(out: &Path) -> u32 {
        let started = Instant::now();
        loop {
            if let Some(pid) = common::rank_pid_of(out.to_str().unwrap(), 0) {
                return pid;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "no rank 0");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn wait_exit(mut job: Child, limit: Duration) -> (Option<i32>, String) {
        let started = Instant::now();
        loop {
            if job.try_wait().unwrap().is_some() {
                let out = job.wait_with_output().unwrap();
                return (out.status.code(), stderr(&out));
            }
            if started.elapsed() > limit {
                let ps = std::process::Command::new("ps")
                    .args(["-eo", "pid,ppid,stat,etime,args"])
                    .output()
                    .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                    .unwrap_or_default();
                let ranks: Vec<&str> = ps.lines().filter(|l| l.contains("gradcode")).collect();
                stop(&mut job);
                panic!("the job did not end within {limit:?}; gradcode processes then: {ranks:#?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The case: `--force` (simulate, and train) against the trace
    /// of a running training job: refused naming it, the trace byte for
    /// byte as it was (rank 0 stopped meanwhile, so it writes nothing), and
    /// the job goes on to a complete trace.
    #[test]
    fn force_against_a_running_training_trace_is_refused_and_the_run_completes() {
        let _one = common::one_at_a_time();
        let cfg = config("force-live", SLOW);
        let dir = folder("force-train");
        let trace = dir.join("run.h5");
        let mut job = start_training(&cfg, &trace, &[]);
        wait_for_file(&trace, &mut job);
        let master = rank0(&trace);
        assert!(common::send_signal(master, "STOP"));
        let before = std::fs::read(&trace).unwrap();
        let sim = gradcode(&[
            "simulate",
            "--trials",
            "1",
            "--out",
            trace.to_str().unwrap(),
            "--force",
        ]);
        let rival = train(&[
            "--config",
            &cfg,
            "--out",
            trace.to_str().unwrap(),
            "--force",
        ]);
        let resume = train(&["--resume", trace.to_str().unwrap()]);
        // Read while the job is still stopped: it writes nothing meanwhile.
        let seen = HDF5Free::read(&trace);
        let after = std::fs::read(&trace).unwrap();
        assert!(common::send_signal(master, "CONT"));
        let (code, err) = wait_exit(job, Duration::from_secs(60));
        refused_naming("simulate --force, a training job", &sim, &trace);
        refused_naming("train --force, a training job", &rival, &trace);
        refused_naming("train --resume, a training job", &resume, &trace);
        assert!(after == before, "the running job's trace changed");
        assert_eq!(seen["status"], "running");
        assert_eq!(seen["writer_open"], true);
        assert_eq!(code, Some(0), "{err}");
        let r = inspect_json(&trace);
        assert_eq!(r["status"], "completed");
        assert_eq!(r["summary"]["iterations"], 150);
        assert_eq!(listing(&dir), ["run.h5"]);
    }

    /// inspect of a file another process has open for writing, read without HDF5's locking.
    struct HDF5Free;

    impl HDF5Free {
        fn read(p: &Path) -> serde_json::Value {
            let o = Command::new(env!("CARGO_BIN_EXE_gradcode"))
                .args(["inspect", p.to_str().unwrap(), "--json"])
                .env("HDF5_USE_FILE_LOCKING", "FALSE")
                .output()
                .unwrap();
            common::json(&o)
        }
    }

    /// Bad data (a bad label on line 2, found up front; another on line
    /// 1500, found when the data is planned) creates no trace: the
    /// corrected rerun needs no --force; a missing folder is not created.
    #[test]
    fn bad_data_files_create_no_trace_and_no_folder() {
        let _one = common::one_at_a_time();
        let dir = folder("bad-data");
        let out = dir.join("results/sub/out.h5");
        let data = dir.join("train.libsvm");
        let good: String = (0..2000)
            .map(|i| format!("{} 1:{} 2:{}\n", i % 7, i % 5, i % 3))
            .collect();
        let set_data = format!("data.path=\"{}\"", data.display());
        let args = [
            "--set",
            "workers=2",
            "--set",
            "scheme.kind=\"uncoded\"",
            "--set",
            "data.kind=\"libsvm\"",
            "--set",
            &set_data,
            "--set",
            "train.iterations=5",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ];
        for (line, text) in [
            (2, good.replacen("1 1:1 2:1", "yes 1:1 2:1", 1)),
            (1500, {
                let mut lines: Vec<&str> = good.lines().collect();
                lines[1499] = "3 1:zero";
                lines.join("\n") + "\n"
            }),
        ] {
            std::fs::write(&data, &text).unwrap();
            let o = train(&args);
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "line {line}: {err}");
            assert!(
                err.contains(&format!("{}:{line}", data.display())),
                "line {line}: {err}"
            );
            assert_eq!(
                listing(&dir),
                ["train.libsvm"],
                "line {line}: a bad data file left something: {err}"
            );
        }
        std::fs::write(&data, &good).unwrap();
        let o = train(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(inspect_json(&out)["status"], "completed");
    }

    /// `train --resume` refused (without mpirun: the world size; with the
    /// iterations already reached; with --config) leaves the trace byte for
    /// byte as it was.
    #[test]
    fn a_refused_resume_leaves_the_trace_unchanged() {
        let _one = common::one_at_a_time();
        let cfg = config(
            "refused-resume",
            &SLOW.replace("time_unit_ms = 20.0", "time_unit_ms = 0.5"),
        );
        let trace = scratch("refused-resume.h5");
        let o = train(&[
            "--config",
            &cfg,
            "--out",
            trace.to_str().unwrap(),
            "--force",
            "--quiet",
            "--set",
            "train.iterations=42",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let before = std::fs::read(&trace).unwrap();
        let t = trace.to_str().unwrap();
        // Without mpirun: a world of one.
        let o = gradcode(&["train", "--resume", t, "--set", "train.iterations=60"]);
        assert_refused("resume without mpirun", &o, "needs 3 MPI ranks");
        let o = train(&["--resume", t]);
        assert_refused(
            "resume, iterations reached",
            &o,
            "train.iterations = 42 is already reached",
        );
        let o = train(&["--resume", t, "--set", "train.iterations=30"]);
        assert_refused(
            "resume, fewer iterations",
            &o,
            "train.iterations = 30 is already reached",
        );
        let o = train(&["--resume", t, "--config", &cfg]);
        assert_refused("resume with --config", &o, "--config");
        assert_eq!(
            std::fs::read(&trace).unwrap(),
            before,
            "a refused resume changed the trace"
        );
        // The resumed run then continues from iteration 42.
        let o = train(&["--resume", t, "--set", "train.iterations=50", "--quiet"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let r = inspect_json(&trace);
        assert_eq!(
            (&r["status"], &r["summary"]["iterations"]),
            (&"completed".into(), &50.into())
        );
    }

    /// The status of a run in its trace: completed, interrupted (SIGTERM),
    /// failed (divergence), and `running` with no writer after SIGKILL.
    #[test]
    fn every_trace_records_how_its_run_ended() {
        let _one = common::one_at_a_time();
        let cfg = config("status", SLOW);

        let interrupted = scratch("status-interrupted.h5");
        let job = start_training(&cfg, &interrupted, &["--force"]);
        let mut job = job;
        wait_for_file(&interrupted, &mut job);
        std::thread::sleep(Duration::from_millis(500));
        assert!(common::send_signal(job.id(), "TERM"));
        let (code, err) = wait_exit(job, Duration::from_secs(30));
        assert_ne!(code, Some(0), "{err}");
        let r = inspect_json(&interrupted);
        assert_eq!(r["status"], "interrupted", "{err}");
        let reason = r["status_reason"].as_str().unwrap();
        assert!(
            reason.contains("SIGTERM") && reason.contains("--resume"),
            "{reason}"
        );

        let died = scratch("status-died.h5");
        let mut job = start_training(&cfg, &died, &["--force"]);
        wait_for_file(&died, &mut job);
        std::thread::sleep(Duration::from_millis(500));
        assert!(common::send_signal(rank0(&died), "KILL"));
        let (code, _) = wait_exit(job, Duration::from_secs(30));
        assert_ne!(code, Some(0));
        let r = inspect_json(&died);
        assert_eq!(
            (&r["status"], &r["writer_open"]),
            (&"running".into(), &false.into())
        );
        let text = common::stdout(&gradcode(&["inspect", died.to_str().unwrap()]));
        assert!(text.contains("the run died"), "{text}");

        let failed = scratch("status-failed.h5");
        let o = train(&[
            "--config",
            &cfg,
            "--out",
            failed.to_str().unwrap(),
            "--force",
            "--quiet",
            "--set",
            "train.learning_rate=1e150",
            "--set",
            "straggler.time_unit_ms=0.5",
        ]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let r = inspect_json(&failed);
        assert_eq!(r["status"], "failed");
        let reason = r["status_reason"].as_str().unwrap();
        assert!(reason.contains("iteration"), "{reason}");
        assert!(
            stderr(&o).contains(reason.split(':').next().unwrap()),
            "{reason}"
        );

        let done = scratch("status-completed.h5");
        let o = train(&[
            "--config",
            &cfg,
            "--out",
            done.to_str().unwrap(),
            "--force",
            "--quiet",
            "--set",
            "straggler.time_unit_ms=0.5",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let r = inspect_json(&done);
        assert_eq!(
            (
                &r["status"],
                &r["status_reason"],
                &r["writer_open"],
                &r["snapshot_iteration"]
            ),
            (
                &"completed".into(),
                &serde_json::Value::Null,
                &false.into(),
                &150.into()
            )
        );
        // The snapshot slots and the status are the schema's, not foreign.
        assert_eq!(r["extra_datasets"], serde_json::json!([]));
        assert_eq!(r["extra_groups"], serde_json::json!([]));
    }
}
