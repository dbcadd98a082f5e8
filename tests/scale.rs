//! The runtime at scale on a workstation: 64 emulated workers (65 ranks on
//! 2 cores) follow the full-batch trajectory with vectors above MPI's eager
//! limit; every rank completes all its sends before it finalises MPI; and
//! `runtime.wait` resolves per node and is recorded in the trace.
#![cfg(all(feature = "mpi", feature = "hdf5"))]

mod common;

use std::path::PathBuf;
use std::process::Output;

use gradcode::coding;
use gradcode::config::parse;
use gradcode::trace::read_attr_string;

fn scratch(name: &str) -> PathBuf {
    common::scratch("scale-tests", name)
}

/// Train `text` on `ranks` ranks with info logs; the output and the trace.
fn train(name: &str, ranks: usize, text: &str, extra: &[&str]) -> (Output, PathBuf) {
    let config = scratch(&format!("{name}.toml"));
    std::fs::write(&config, text).unwrap();
    let trace = scratch(&format!("{name}.h5"));
    let mut args = vec![
        "train",
        "--config",
        config.to_str().unwrap(),
        "--out",
        trace.to_str().unwrap(),
        "--force",
        "--json",
        "--quiet",
    ];
    args.extend_from_slice(extra);
    let _one = common::one_at_a_time();
    let out = common::mpirun_command(ranks, &args)
        .env("GRADCODE_LOG", "gradcode::runtime=info")
        .output()
        .expect("mpirun must be installed");
    assert!(
        out.status.success(),
        "{name}: train failed: {}",
        common::stderr(&out)
    );
    (out, trace)
}

/// Every one of `ranks` ranks logged that no send request was pending when it finalised MPI.
fn assert_no_request_left(name: &str, out: &Output, ranks: usize) {
    let err = common::stderr(out);
    let mut clean: Vec<i64> = err
        .lines()
        .filter(|l| l.contains("requests pending at shutdown"))
        .filter(|l| l.contains(" completed, 0 requests pending"))
        .map(|l| {
            let at = l.find("[gradcode rank ").expect("the line names its rank") + 15;
            l[at..].split(' ').next().unwrap().parse().unwrap()
        })
        .collect();
    clean.sort_unstable();
    let want: Vec<i64> = (0..ranks as i64).collect();
    assert_eq!(clean, want, "{name}: every rank completes its sends\n{err}");
    // The posted and completed counts agree on every rank.
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

#[test]
fn sixty_four_emulated_workers_on_two_cores_follow_the_full_batch_trajectory() {
    // d = 1000: tasks' models and results are 8 KB, above the shared-memory
    // eager limit, so they take MPI's rendezvous path.
    let text = "workers = 64\nseed = 3\n[scheme]\nkind = \"gc-cyclic\"\nload = 2\n[straggler]\nmodel = \"shifted-exponential\"\nalpha = 0.01\nmu = 2.0\ntime_unit_ms = 2.0\n[data]\nkind = \"synthetic-linear\"\ntrain_samples = 256\ntest_samples = 16\nfeatures = 1000\n[train]\niterations = 8\nlearning_rate = 0.05\nresult_timeout_s = 60.0\n";
    let (out, trace) = train("k64", 65, text, &[]);
    let summary = common::json(&out);
    assert_eq!(summary["iterations"], 8);
    let config = parse(text, "test", &[]).unwrap().config;
    let partitions = coding::build(&config).unwrap().partitions();
    let (theta, _) = common::full_batch(&config, partitions);
    let err = common::relative_error(&common::theta(&summary), &theta);
    assert!(err <= 1e-9, "relative error {err} against the full batch");
    assert_no_request_left("k64", &out, 65);
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
        let (out, trace) = train(&name, 2, text, &["--set", &set]);
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
        assert_no_request_left(&name, &out, 2);
    }
}

#[test]
fn an_unknown_wait_is_refused_naming_the_key() {
    let out = common::gradcode(&["check", "--set", "runtime.wait=\"poll\""]);
    common::assert_rejected("runtime.wait", &out, "runtime.wait");
}
