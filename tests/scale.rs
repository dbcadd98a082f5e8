//! The runtime at scale on a workstation: 64 emulated workers (65 ranks on
//! 2 cores) follow the full-batch trajectory with vectors above MPI's eager
//! limit; every rank completes all its sends before it finalises MPI; and
//! `runtime.wait` resolves per node and is recorded in the trace.
#![cfg(all(feature = "mpi", feature = "hdf5"))]

mod common;

use std::path::PathBuf;

use gradcode::coding;
use gradcode::config::parse;
use gradcode::trace::read_attr_string;

fn scratch(name: &str) -> PathBuf {
    common::scratch("scale-tests", name)
}

#[test]
fn sixty_four_emulated_workers_on_two_cores_follow_the_full_batch_trajectory() {
    // d = 1000: tasks' models and results are 8 KB, above the shared-memory
    // eager limit, so they take MPI's rendezvous path.
    let text = "workers = 64\nseed = 3\n[scheme]\nkind = \"gc-cyclic\"\nload = 2\n[straggler]\nmodel = \"shifted-exponential\"\nalpha = 0.01\nmu = 2.0\ntime_unit_ms = 2.0\n[data]\nkind = \"synthetic-linear\"\ntrain_samples = 256\ntest_samples = 16\nfeatures = 1000\n[train]\niterations = 8\nlearning_rate = 0.05\nresult_timeout_s = 60.0\n";
    let (out, trace) = common::train_logged("scale-tests", "k64", 65, text, &[]);
    let summary = common::json(&out);
    assert_eq!(summary["iterations"], 8);
    let config = parse(text, "test", &[]).unwrap().config;
    let partitions = coding::build(&config).unwrap().partitions();
    let (theta, _) = common::full_batch(&config, partitions);
    let err = common::relative_error(&common::theta(&summary), &theta);
    assert!(err <= 1e-9, "relative error {err} against the full batch");
    common::assert_no_request_left("k64", &out, 65);
    // 65 ranks on this machine's cores: auto backs off.
    let cores = std::thread::available_parallelism().unwrap().get();
    if cores < 65 {
        assert_eq!(
            read_attr_string(&trace, "/", "runtime_wait").unwrap(),
            "backoff"
        );
        let reason = read_attr_string(&trace, "/", "runtime_wait_reason").unwrap();
        assert!(
            reason.starts_with("runtime.wait = auto; 65 ranks on the master's node"),
            "{reason}"
        );
    }
}

#[test]
fn auto_spins_when_every_rank_has_a_core_and_the_choice_is_recorded() {
    let text = "workers = 1\n[scheme]\nkind = \"uncoded\"\n[straggler]\nmode = \"measured\"\n[data]\ntrain_samples = 100\ntest_samples = 10\nfeatures = 600\n[train]\niterations = 20\n";
    let cores = std::thread::available_parallelism().unwrap().get();
    let cases = [
        ("auto", if cores >= 2 { "spin" } else { "backoff" }),
        ("spin", "spin"),
        ("backoff", "backoff"),
    ];
    for (requested, chosen) in cases {
        let name = format!("wait-{requested}");
        let set = format!("runtime.wait=\"{requested}\"");
        let (out, trace) = common::train_logged("scale-tests", &name, 2, text, &["--set", &set]);
        let summary = common::json(&out);
        assert_eq!(summary["iterations"], 20, "{name}");
        assert_eq!(
            read_attr_string(&trace, "/", "runtime_wait").unwrap(),
            chosen,
            "{name}"
        );
        let err = common::stderr(&out);
        assert!(
            err.contains(&format!(
                "runtime.wait = {requested}: {chosen} (2 ranks on this node"
            )),
            "{name}: the choice is logged: {err}"
        );
        common::assert_no_request_left(&name, &out, 2);
    }
}

#[test]
fn an_unknown_wait_is_refused_naming_the_key() {
    let out = common::gradcode(&["check", "--set", "runtime.wait=\"poll\""]);
    common::assert_rejected("runtime.wait", &out, "runtime.wait");
}

/// The ranks of a running job: (MPI rank, pid) of every `gradcode` process
/// whose environment names `job` (a marker variable set for this run).
fn ranks_of(job: &str) -> Vec<(u32, u32)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        let vars: Vec<String> = environ
            .split(|&b| b == 0)
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .collect();
        if !vars
            .iter()
            .any(|v| v == &format!("GRADCODE_SCALE_JOB={job}"))
        {
            continue;
        }
        if let Some(rank) = common::mpi_rank_in(&environ) {
            found.push((rank as u32, pid));
        }
    }
    found.sort_unstable();
    found
}

#[test]
fn stopped_workers_exhaust_the_models_in_flight_and_end_the_run_naming_them() {
    // gc-cyclic with load 7 of K = 8 tolerates 7 stragglers, so the run goes
    // on while workers are stopped; each stopped worker holds the models of
    // the tasks it has not taken (d = 20000: 160 KB, above the eager limit,
    // so the sends stay pending). A worker stopped after it received a model
    // but before it acknowledged the task holds one buffer, any other two:
    // stopping six, one at a time, holds all 6 buffers whatever the timing
    // (three could hold only 5, and the run then went on: CI, stop 34).
    let text = "workers = 8\nseed = 2\n[scheme]\nkind = \"gc-cyclic\"\nload = 7\n[straggler]\nmode = \"measured\"\n[data]\ntrain_samples = 80\ntest_samples = 8\nfeatures = 20000\n[train]\niterations = 1000000\nlearning_rate = 0.001\neval_every = 1000000\nresult_timeout_s = 4.0\n[runtime]\naggregate = \"gather\"\n";
    let config = scratch("stopped.toml");
    std::fs::write(&config, text).unwrap();
    let trace = scratch("stopped.h5");
    let _ = std::fs::remove_file(&trace);
    let _one = common::one_at_a_time();
    let job = format!("stopped-{}", std::process::id());
    let mut child = common::mpirun_command(
        9,
        &[
            "train",
            "--config",
            config.to_str().unwrap(),
            "--out",
            trace.to_str().unwrap(),
            "--force",
            "--quiet",
        ],
    )
    .env("GRADCODE_SCALE_JOB", &job)
    .env("GRADCODE_LOG", "gradcode::runtime::round=warn")
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let started = std::time::Instant::now();
    let mut ranks = Vec::new();
    while ranks.len() < 9 && started.elapsed().as_secs() < 30 {
        std::thread::sleep(std::time::Duration::from_millis(200));
        ranks = ranks_of(&job);
    }
    assert_eq!(ranks.len(), 9, "all ranks started: {ranks:?}");
    // Training has started once the trace exists (created at the first iteration).
    while !trace.exists() && started.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let stopped = &ranks[2..8];
    for &(rank, pid) in stopped {
        assert!((2..=7).contains(&rank));
        unsafe { libc::kill(pid as i32, libc::SIGSTOP) };
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    // Bounded: had the run gone on, it would have taken an hour.
    while child.try_wait().unwrap().is_none() && started.elapsed().as_secs() < 90 {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // Leave no stopped process behind whatever happened.
    for &(_, pid) in &ranks {
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    let out = child.wait_with_output().unwrap();
    let err = common::stderr(&out);
    assert!(
        started.elapsed().as_secs() < 90,
        "it ends within seconds of train.result_timeout_s: {err}"
    );
    assert!(!out.status.success(), "the run cannot go on: {err}");
    // Two endings, each bounded by train.result_timeout_s: the model buffers
    // run out (every transport), or, over TCP, a worker stopped in the middle
    // of sending its vector leaves the master's receive of it unfinished.
    let named: Vec<i32> = if let Some(line) = err
        .lines()
        .find(|l| l.contains("models in flight are held by sends that workers"))
    {
        assert!(
            err.contains("all 6 model buffers are held by sends to workers"),
            "the master waited at the bound: {err}"
        );
        assert!(line.contains("train.result_timeout_s"), "{line}");
        let named = line
            .split("sends that workers ")
            .nth(1)
            .and_then(|rest| rest.split(" have not taken").next())
            .unwrap_or_else(|| panic!("{line}"));
        let named: Vec<i32> = named.split(", ").map(|r| r.parse().unwrap()).collect();
        assert!(named.len() >= 3, "at most two buffers per worker: {line}");
        named
    } else {
        let line = err
            .lines()
            .find(|l| l.starts_with("error: ") && l.contains(" began sending "))
            .unwrap_or_else(|| panic!("the error names the workers: {err}"));
        assert!(
            line.contains(
                "stopped in the middle: the rest did not come within 4 s (train.result_timeout_s)"
            ),
            "{line}"
        );
        let rank = line
            .split(": rank ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or_else(|| panic!("{line}"));
        vec![rank.parse().unwrap()]
    };
    assert!(
        named
            .iter()
            .all(|r| stopped.iter().any(|&(s, _)| s as i32 == *r)),
        "only stopped workers are named: {err}"
    );
}
