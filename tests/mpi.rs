//! `gradcode train` under mpirun: coding must not change the trajectory (with
//! emulated stragglers), partial schemes converge, a worker that never answers
//! does not hang a tolerant scheme, stale results are counted and never used,
//! bad world sizes and bad output paths end every rank, traces hold the run.
#![cfg(feature = "mpi")]

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use gradcode::coding;
use gradcode::config::parse;

fn mpirun(ranks: usize, args: &[&str]) -> Output {
    let _one = common::one_at_a_time();
    common::mpirun_command(ranks, args)
        .output()
        .expect("mpirun must be installed (scripts/setup.sh installs openmpi-bin)")
}

fn scratch(name: &str) -> PathBuf {
    common::scratch("mpi-tests", name)
}

fn write_config(name: &str, text: &str) -> PathBuf {
    let path = scratch(&format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// Train `text` on `ranks` ranks into a fresh trace; the JSON summary and the trace path.
fn train(name: &str, ranks: usize, text: &str, extra: &[&str]) -> (serde_json::Value, PathBuf) {
    let (summary, trace, _) = train_logged(name, ranks, text, extra);
    (summary, trace)
}

/// As [`train`], with the run's stderr.
fn train_logged(
    name: &str,
    ranks: usize,
    text: &str,
    extra: &[&str],
) -> (serde_json::Value, PathBuf, String) {
    let (mut command, trace) = common::train_command("mpi-tests", name, ranks, text, extra);
    // The round's debug lines say when an evaluation could not be recorded.
    command.env("GRADCODE_LOG", "warn,gradcode::runtime::round=debug");
    let out = {
        let _one = common::one_at_a_time();
        command.output().expect("mpirun must be installed")
    };
    assert!(
        out.status.success(),
        "{name}: train failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    let summary = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{name}: not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (
        summary,
        trace,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn read(trace: &Path) -> gradcode::trace::TraceData {
    gradcode::trace::read_trace(trace, "/").expect("readable trace")
}

/// Linear regression, 6 workers; stragglers emulated at 2 ms per model time unit.
const EMULATED: &str = "workers = 6\nseed = 11\n[straggler]\nmodel = \"shifted-exponential\"\nalpha = 0.01\nmu = 2.0\ntime_unit_ms = 2.0\n[data]\ntrain_samples = 600\ntest_samples = 100\nfeatures = 40\n[train]\niterations = 30\nlearning_rate = 0.2\n";

/// Coding must not change the trajectory: every exact scheme ends where
/// single-process full-batch descent on the same data and seed ends.
fn assert_follows_reference(name: &str, text: &str, summary: &serde_json::Value) {
    let config = parse(text, "test", &[]).unwrap().config;
    let partitions = coding::build(&config).unwrap().partitions();
    let (theta, _) = common::full_batch(&config, partitions);
    let err = common::relative_error(&common::theta(summary), &theta);
    assert!(err <= 1e-9, "{name}: relative error {err}");
    assert_eq!(summary["mean_recovered_fraction"], 1.0, "{name}");
    assert_final_loss_at_theta(name, &config, partitions, summary);
}

/// `final_train_loss` is the full-data objective at the θ the run ends with
/// (issue 25, item 4), to 1e-12.
fn assert_final_loss_at_theta(
    name: &str,
    config: &gradcode::config::Config,
    partitions: usize,
    summary: &serde_json::Value,
) {
    let want = common::objective_at(config, partitions, &common::theta(summary));
    let loss = summary["final_train_loss"].as_f64().unwrap();
    assert!(
        (loss - want).abs() <= 1e-12 * want.abs(),
        "{name}: final train loss {loss} vs {want} at the final θ"
    );
    assert_eq!(summary["final_at_theta"], true, "{name}");
}

#[test]
fn exact_schemes_follow_the_full_batch_trajectory_with_emulated_stragglers() {
    for (name, scheme) in common::EXACT_SCHEMES {
        let text = format!("{EMULATED}[scheme]\n{scheme}\n");
        let (summary, trace) = train(&format!("exact-{name}"), 7, &text, &[]);
        assert_follows_reference(name, &text, &summary);
        let data = read(&trace);
        assert_eq!(data.records.len(), 30, "{name}");
        assert_eq!(
            data.theta.as_deref(),
            Some(common::theta(&summary).as_slice()),
            "{name}: /model/theta is the final θ"
        );
        assert!(
            data.records.iter().all(|r| r.recovered_fraction == 1.0),
            "{name}"
        );
    }
}

#[test]
fn nesterov_follows_the_reference_too() {
    let text = format!("{EMULATED}[scheme]\nkind = \"gc-sc\"\nload = 2\nclusters = 2\n");
    let (summary, _) = train("nesterov", 7, &text, &["--set", "train.optimizer=nesterov"]);
    let config = parse(&text, "test", &["train.optimizer=nesterov".to_string()])
        .unwrap()
        .config;
    let (theta, _) = common::full_batch(&config, 6);
    assert!(common::relative_error(&common::theta(&summary), &theta) <= 1e-9);
}

#[test]
fn stale_results_are_counted_and_never_used() {
    // Measured mode on 13 ranks over 2 cores: results of iteration t keep
    // arriving while the master is already in t + 1. The trajectory is still
    // exactly the full-batch one, so no stale result entered a later decode.
    let text = "workers = 12\nseed = 4\n[scheme]\nkind = \"gc-sc\"\nload = 2\nclusters = 4\n[straggler]\nmode = \"measured\"\n[data]\ntrain_samples = 2400\ntest_samples = 100\nfeatures = 300\n[train]\niterations = 60\nlearning_rate = 0.2\n";
    let (summary, trace) = train("stale", 13, text, &[]);
    assert_follows_reference("stale", text, &summary);
    let in_iterations: u64 = read(&trace).records.iter().map(|r| r.stale_dropped).sum();
    let total = summary["stale_dropped"].as_u64().unwrap();
    assert!(
        total > 0,
        "an oversubscribed measured run drops stale results"
    );
    assert!(
        in_iterations <= total,
        "the trace counts those dropped during iterations"
    );
}

#[test]
fn partial_schemes_record_recovered_fractions_and_converge() {
    for (name, scheme) in [
        (
            "is-gc",
            "kind = \"is-gc\"\nload = 2\nplacement = \"cr\"\nwait_for = 3",
        ),
        (
            "ignore-stragglers",
            "kind = \"ignore-stragglers\"\nwait_for = 4",
        ),
        (
            "is-gc-deadline",
            "kind = \"is-gc\"\nload = 2\nplacement = \"cr\"\ndeadline = 0.3",
        ),
    ] {
        let text = format!(
            "{EMULATED}[scheme]\n{scheme}\n[train]\niterations = 80\nlearning_rate = 0.2\n"
        )
        .replace("[train]\niterations = 30\nlearning_rate = 0.2\n", "");
        let (summary, trace) = train(name, 7, &text, &[]);
        let records = read(&trace).records;
        assert!(
            records
                .iter()
                .all(|r| (0.0..=1.0).contains(&r.recovered_fraction) && r.recovered_fraction > 0.0)
        );
        assert!(
            records.iter().any(|r| r.recovered_fraction < 1.0),
            "{name}: some iterations recover partially"
        );
        let first = records[0].train_loss;
        let last = summary["final_train_loss"].as_f64().unwrap();
        assert!(
            last < 0.05 * first,
            "{name}: loss {first} → {last} does not converge"
        );
    }
}

#[test]
fn progress_lines_show_the_batch_loss_the_rate_and_the_time_to_go() {
    // A partial scheme: its training loss is recorded only at evaluations,
    // and a progress line used to say "train loss NaN" in between.
    let text = format!(
        "{EMULATED}[scheme]\nkind = \"ignore-stragglers\"\nwait_for = 4\n[output]\nprogress_every = 5\n"
    )
    .replace("iterations = 30", "iterations = 20\neval_every = 1000");
    let config = write_config("progress", &text);
    let trace = scratch("progress.h5");
    let out = mpirun(
        7,
        &[
            "train",
            "--config",
            config.to_str().unwrap(),
            "--out",
            trace.to_str().unwrap(),
            "--force",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("iteration "))
        .collect();
    let numbers: Vec<&str> = lines.iter().map(|l| l.split(':').next().unwrap()).collect();
    assert_eq!(
        numbers,
        [
            "iteration 5/20",
            "iteration 10/20",
            "iteration 15/20",
            "iteration 20/20"
        ],
        "{err}"
    );
    for line in &lines {
        let batch: f64 = line
            .split(": batch loss ")
            .nth(1)
            .and_then(|rest| rest.split([',', ' ']).next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("a batch loss: {line}"));
        assert!(batch.is_finite() && batch > 0.0, "{line}");
        assert!(!line.contains("NaN"), "{line}");
        assert!(
            line.contains(" iterations/s, ") && line.contains(" s to go), recovered "),
            "{line}"
        );
    }
    // Evaluated at the last iteration only: the train loss is shown there.
    assert!(lines[3].contains(", train loss "), "{}", lines[3]);
    assert!(!lines[0].contains("train loss"), "{}", lines[0]);
}

#[test]
fn a_worker_that_never_answers_does_not_hang_a_tolerant_scheme() {
    // Worker 3 sleeps ~10^6 model time units (hours) before every send.
    let text = format!(
        "{}[scheme]\nkind = \"gc-cyclic\"\nload = 2\n",
        EMULATED.replace(
            "model = \"shifted-exponential\"",
            "model = \"extra-delay\"\ndelayed_workers = [3]\ndelay_mean = 1000000.0"
        )
    );
    let started = std::time::Instant::now();
    let (summary, trace) = train("silent-worker", 7, &text, &[]);
    assert!(started.elapsed().as_secs() < 60, "the run finished");
    assert_follows_reference("silent-worker", &text, &summary);
    let records = read(&trace).records;
    assert!(
        records.iter().all(|r| !r.used[2] && r.finish_s[2].is_nan()),
        "worker 3 never answered"
    );
}

#[test]
fn logistic_regression_on_a_real_data_set_matches_the_reference() {
    let data = format!("{}/data/breast_cancer.libsvm", env!("CARGO_MANIFEST_DIR"));
    let text = format!(
        "workers = 4\n[scheme]\nkind = \"gc-cyclic\"\nload = 2\n[straggler]\nmode = \"measured\"\n[data]\nkind = \"libsvm\"\npath = \"{data}\"\n[model]\nloss = \"logistic\"\n[train]\niterations = 40\nlearning_rate = 0.5\n"
    );
    let (summary, trace) = train("logistic-breast-cancer", 5, &text, &[]);
    let (theta, _) = common::full_batch(&parse(&text, "test", &[]).unwrap().config, 4);
    assert!(common::relative_error(&common::theta(&summary), &theta) <= 1e-9);
    // What advise --trace fits a network to (issue 26, item 2): per worker
    // received in time, the bytes as the protocol sends them (a header of 8
    // values and one loss per computation, load 2; a vector of d + 1), its
    // compute, and its vector's last byte after its header.
    let d = theta.len();
    let mut received = 0;
    for r in &read(&trace).records {
        for w in 0..4 {
            if r.finish_s[w].is_finite() {
                received += 1;
                assert_eq!(r.message_bytes[w], (8 * (8 + 2 + d + 1)) as f64);
                assert!(
                    r.compute_s[w] > 0.0 && r.compute_s[w] <= r.finish_s[w],
                    "{r:?}"
                );
                assert!(r.received_s[w] >= r.finish_s[w], "{r:?}");
            } else {
                assert!(
                    r.message_bytes[w].is_nan() && r.compute_s[w].is_nan(),
                    "{r:?}"
                );
                assert!(r.received_s[w].is_nan(), "{r:?}");
            }
        }
    }
    assert!(received >= 3 * 40, "{received} results received");
    let test_loss = summary["final_test_loss"].as_f64().unwrap();
    assert!(
        test_loss < 0.3,
        "standardised breast cancer data is easy: test loss {test_loss}"
    );
}

#[test]
fn sparse_data_trains_to_the_full_batch_reference() {
    // Synthetic one-hot (sparse automatically) and a LIBSVM file stored sparse
    // and standardised by scaling (statistics from the master, in the setup).
    let data = format!("{}/data/breast_cancer.libsvm", env!("CARGO_MANIFEST_DIR"));
    let cases = [
        (
            "sparse-onehot",
            "[data]\nkind = \"synthetic-onehot\"\ntrain_samples = 2000\ntest_samples = 200\nfeatures = 20000\nnonzeros_per_row = 10\n".to_string(),
        ),
        (
            "sparse-libsvm",
            format!("[data]\nkind = \"libsvm\"\nformat = \"sparse\"\npath = \"{data}\"\n"),
        ),
    ];
    for (name, data) in cases {
        let text = format!(
            "workers = 4\n[scheme]\nkind = \"gc-cyclic\"\nload = 2\n[straggler]\nmode = \"measured\"\n{data}[model]\nloss = \"logistic\"\n[train]\niterations = 25\nlearning_rate = 0.5\noptimizer = \"nesterov\"\n"
        );
        let (summary, _) = train(name, 5, &text, &[]);
        let config = parse(&text, "test", &[]).unwrap().config;
        let plan = gradcode::learn::DataPlan::new(&config, 4).unwrap();
        assert_eq!(
            plan.storage(),
            gradcode::learn::data::Storage::Sparse,
            "{name}"
        );
        let (theta, _) = common::full_batch(&config, 4);
        let err = common::relative_error(&common::theta(&summary), &theta);
        assert!(err <= 1e-9, "{name}: relative error {err}");
        assert!(theta.iter().any(|&v| v != 0.0), "{name}: the model moved");
    }
}

/// Issue 28: on one-hot features a worker's vectors are non-zero at the
/// columns its partitions store alone, so it sends the values there
/// (packed) and is sent θ there; the master adds them in at those entries.
/// The gathered decode equals the reduction's (whose vectors stay dense),
/// and each result carries fewer than half the d + 1 values.
#[test]
fn sparse_results_are_packed_and_decode_as_the_dense_reduction() {
    let d = 100_000;
    for scheme in ["kind = \"gc-cyclic\"\nload = 2", "kind = \"uncoded\""] {
        let text = format!(
            "workers = 4\n[scheme]\n{scheme}\n[straggler]\nmode = \"measured\"\n[data]\nkind = \"synthetic-onehot\"\ntrain_samples = 2000\ntest_samples = 200\nfeatures = {d}\nnonzeros_per_row = 10\n[model]\nloss = \"logistic\"\n[train]\niterations = 12\nlearning_rate = 0.5\noptimizer = \"nesterov\"\n"
        );
        let name = if scheme.contains("cyclic") {
            "packed-cyclic"
        } else {
            "packed-uncoded"
        };
        let (packed, trace) = train(name, 5, &text, &["--set", "runtime.aggregate=\"gather\""]);
        let (dense, _) = train(
            &format!("{name}-reduce"),
            5,
            &text,
            &["--set", "runtime.aggregate=\"reduce\""],
        );
        let err = common::relative_error(&common::theta(&packed), &common::theta(&dense));
        assert!(
            err <= 1e-12,
            "{name}: gathered packed vs reduced dense: {err}"
        );
        let (reference, _) = common::full_batch(&parse(&text, "test", &[]).unwrap().config, 4);
        let err = common::relative_error(&common::theta(&packed), &reference);
        assert!(
            err <= 1e-9,
            "{name}: against the full-batch reference: {err}"
        );
        // Each worker's results have one size, under half of a dense one's.
        let mut sizes = vec![Vec::new(); 4];
        for r in &read(&trace).records {
            for (w, &bytes) in r.message_bytes.iter().enumerate() {
                if bytes.is_finite() {
                    sizes[w].push(bytes);
                }
            }
        }
        for (w, s) in sizes.iter().enumerate() {
            assert!(!s.is_empty(), "{name}: worker {} sent results", w + 1);
            assert!(
                s.iter().all(|&b| b == s[0]),
                "{name}: worker {}: {s:?}",
                w + 1
            );
            assert!(
                s[0] < (8 * (d + 1) / 2) as f64,
                "{name}: worker {}: {} bytes",
                w + 1,
                s[0]
            );
        }
        let inbound = packed["master_inbound_bytes_per_iteration"]
            .as_f64()
            .unwrap();
        assert!(
            inbound < (4 * 8 * (d + 1) / 2) as f64,
            "{name}: {inbound} bytes in"
        );
    }
}

#[test]
fn thirteen_ranks_on_two_cores_complete_at_the_emulated_speed() {
    let text = "workers = 12\n[scheme]\nkind = \"gc-dc\"\nload = 2\nclusters = 4\nclusters_per_worker = 2\n[straggler]\nmodel = \"gilbert-elliott\"\nmu_fast = 10.0\nmu_slow = 0.1\nswitch_probability = 0.05\ninitial_stragglers = 6\ntime_unit_ms = 5.0\n[data]\ntrain_samples = 1200\nfeatures = 50\n[train]\niterations = 40\n";
    let (summary, trace) = train("thirteen", 13, text, &[]);
    assert_eq!(summary["iterations"], 40);
    let data = read(&trace);
    let clustered = data
        .records
        .iter()
        .all(|r| r.cluster.iter().all(|&c| (1..=4).contains(&c)));
    assert!(clustered, "every worker is in a cluster every iteration");
    let event = |name: &str| {
        data.timing
            .iter()
            .find(|e| e.event == name)
            .unwrap_or_else(|| panic!("timing event {name:?} in {:?}", data.timing))
    };
    // 12 workers on 2 cores: each measures its compute in wall-clock time and
    // in its thread's CPU time, which leaves out the waits for a core.
    let (wall, cpu) = (event("compute (workers)"), event("compute (workers, CPU)"));
    assert_eq!(wall.count, cpu.count, "one CPU figure per wall-clock one");
    assert!(
        cpu.total_s > 0.0 && cpu.total_s <= wall.total_s * 1.001 + 1e-6,
        "CPU {} s within wall clock {} s",
        cpu.total_s,
        wall.total_s
    );
}

#[test]
fn an_existing_trace_is_not_overwritten_and_a_bad_path_fails_first() {
    let config = write_config(
        "existing",
        &format!("{EMULATED}[scheme]\nkind = \"uncoded\"\n"),
    );
    let trace = scratch("existing.h5");
    std::fs::write(&trace, b"precious").unwrap();
    let out = mpirun(
        7,
        &[
            "train",
            "--config",
            config.to_str().unwrap(),
            "--out",
            trace.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("exists; use --force"));
    assert_eq!(std::fs::read(&trace).unwrap(), b"precious", "nothing lost");
    let out = mpirun(
        7,
        &[
            "train",
            "--config",
            config.to_str().unwrap(),
            "--out",
            "/proc/gradcode/trace.h5",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("error: --out"));
}

#[test]
fn wrong_world_size_ends_every_rank_with_one_line() {
    let path = write_config(
        "world-size",
        &format!("{EMULATED}[scheme]\nkind = \"uncoded\"\n"),
    );
    let out = mpirun(3, &["train", "--config", path.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let ours: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(
        ours,
        vec![
            "error: workers = 6 needs 7 MPI ranks (1 master + 6 workers) but this run has 3: use mpirun -n 7"
        ]
    );
}

#[test]
fn invalid_config_under_mpi_exits_2_on_every_rank() {
    let out = mpirun(
        3,
        &[
            "train",
            "--set",
            "workers=2",
            "--set",
            "scheme.kind=gc-cyclic",
            "--set",
            "scheme.load=5",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.lines().filter(|l| l.starts_with("error:")).count(),
        1,
        "{err}"
    );
    assert!(err.contains("scheme.load = 5"), "{err}");
}

#[test]
fn data_errors_on_workers_stop_the_run_cleanly() {
    let text = "workers = 2\n[scheme]\nkind = \"uncoded\"\n[straggler]\nmode = \"measured\"\n[data]\nkind = \"csv\"\npath = \"/nonexistent/data.csv\"\n";
    let path = write_config("missing-data", text);
    let trace = scratch("missing-data.h5");
    let _ = std::fs::remove_file(&trace);
    let out = mpirun(
        3,
        &[
            "train",
            "--config",
            path.to_str().unwrap(),
            "--out",
            trace.to_str().unwrap(),
            "--force",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Rank 0 checks the data files before any MPI work: nothing is written.
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("error: data.path = \"/nonexistent/data.csv\" cannot be read"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!trace.exists(), "a run refused for its data wrote a trace");
}

#[test]
fn divergence_stops_the_run_naming_the_iteration_and_keeps_the_trace() {
    let text = format!("{EMULATED}[scheme]\nkind = \"gc-cyclic\"\nload = 2\n[train]\niterations = 400\nlearning_rate = 60.0\n")
        .replace("[train]\niterations = 30\nlearning_rate = 0.2\n", "");
    let config = write_config("diverge", &text);
    let trace = scratch("diverge.h5");
    let out = mpirun(
        7,
        &[
            "train",
            "--config",
            config.to_str().unwrap(),
            "--out",
            trace.to_str().unwrap(),
            "--force",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    // The summary `--json` writes says the run failed, and why.
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(summary["status"], "failed", "{summary}");
    assert!(
        summary["error"].as_str().unwrap().contains("not finite")
            || summary["error"].as_str().unwrap().contains("non-finite"),
        "{summary}"
    );
    let line = err
        .lines()
        .find(|l| l.starts_with("error: iteration"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        line.contains("non-finite") || line.contains("not finite"),
        "{line}"
    );
    let iteration: usize = line["error: iteration ".len()..]
        .split(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    // Iterations are numbered from 1 in errors as in inspect: the failing
    // iteration N leaves N - 1 in the trace, and its status says the same.
    assert!(iteration >= 1, "{line}");
    let recorded = read(&trace).records.len();
    assert_eq!(
        recorded,
        iteration - 1,
        "every iteration before the failure is in the trace"
    );
    let o = common::gradcode(&["inspect", trace.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["summary"]["iterations"], recorded);
    assert_eq!(v["status"], "failed");
    let reason = v["status_reason"].as_str().unwrap();
    assert!(
        reason.starts_with(&format!("iteration {iteration}:")),
        "{reason}"
    );
}

/// `simulate --out` of `config` (trial 0 only): the records of `scheme.kind`.
fn simulate_trial_0(
    name: &str,
    config: &Path,
    iterations: usize,
) -> Vec<gradcode::trace::IterationRecord> {
    let out = scratch(&format!("{name}-sim.h5"));
    let result = common::gradcode(&[
        "simulate",
        "--config",
        config.to_str().unwrap(),
        "--trials",
        "1",
        "--iterations",
        &iterations.to_string(),
        "--out",
        out.to_str().unwrap(),
        "--force",
    ]);
    assert!(
        result.status.success(),
        "{name}: simulate failed: {}",
        String::from_utf8_lossy(&result.stderr)
    );
    let kind = parse(&std::fs::read_to_string(config).unwrap(), "test", &[])
        .unwrap()
        .config
        .scheme
        .kind
        .to_string();
    gradcode::trace::read_trace(&out, &format!("/sim/{kind}/trial_0"))
        .unwrap()
        .records
}

/// The engine makes `train` (emulated stragglers) and `simulate` the same
/// iteration loop: for the same seed they see the same straggler samples,
/// form the same clusters (gc-dc, with and without a deadline) and, wherever
/// the wall clock cannot reorder what
/// the model says (no message within `margin` of the deadline or of the
/// iteration's end), accept, use and recover the same.
#[test]
fn train_agrees_with_simulate_iteration_by_iteration() {
    const ITERATIONS: usize = 20;
    // Model time units; at 200 ms per unit, 20 ms of scheduling jitter (5 ms
    // was exceeded on two busy cores: a worker due 8 ms before a deadline came
    // after it; 10 ms once in a full test run, where other test binaries share
    // the cores).
    let margin = 0.1;
    let base = "workers = 6\nseed = 5\n[straggler]\ntime_unit_ms = 200.0\n[data]\ntrain_samples = 120\ntest_samples = 12\nfeatures = 8\n[train]\niterations = 20\nlearning_rate = 0.1\n";
    let cases = [
        (
            "agree-is-gc",
            "[scheme]\nkind = \"is-gc\"\nload = 2\nplacement = \"cr\"\ndeadline = 0.6\n",
            "model = \"shifted-exponential\"\nalpha = 0.01\nmu = 2.0\n",
        ),
        (
            "agree-ignore-stragglers",
            "[scheme]\nkind = \"ignore-stragglers\"\ndeadline = 1.0\n",
            "model = \"shifted-exponential\"\nalpha = 0.01\nmu = 0.5\n",
        ),
        (
            "agree-gc-dc",
            "[scheme]\nkind = \"gc-dc\"\nload = 2\nclusters = 2\nclusters_per_worker = 2\n",
            "model = \"gilbert-elliott\"\nmu_fast = 2.0\nmu_slow = 0.2\nswitch_probability = 0.1\ninitial_stragglers = 2\n",
        ),
        (
            "agree-gc-dc-optimal",
            "[scheme]\nkind = \"gc-dc\"\nload = 2\nclusters = 3\nclusters_per_worker = 2\nclustering = \"optimal\"\n",
            "model = \"gilbert-elliott\"\nmu_fast = 2.0\nmu_slow = 0.2\nswitch_probability = 0.1\ninitial_stragglers = 2\n",
        ),
        (
            "agree-gc-dc-deadline",
            "[scheme]\nkind = \"gc-dc\"\nload = 2\nclusters = 2\nclusters_per_worker = 2\ndeadline = 1.0\n",
            "model = \"gilbert-elliott\"\nmu_fast = 2.0\nmu_slow = 0.2\nswitch_probability = 0.1\ninitial_stragglers = 2\n",
        ),
    ];
    for (name, scheme, model) in cases {
        let text = format!(
            "{}{scheme}",
            base.replace("[straggler]\n", &format!("[straggler]\n{model}"))
        );
        let (_, trace) = train(name, 7, &text, &[]);
        let trained = read(&trace).records;
        let path = write_config(name, &text);
        let simulated = simulate_trial_0(name, &path, ITERATIONS);
        assert_eq!(
            (trained.len(), simulated.len()),
            (ITERATIONS, ITERATIONS),
            "{name}"
        );
        // Every message's model time, from the straggler samples of trial 0.
        let config = parse(&text, "test", &[]).unwrap().config;
        let mut scheme = coding::build(&config).unwrap();
        let after: Vec<usize> = scheme
            .plan_round(&Default::default())
            .tasks
            .iter()
            .map(|t| t.messages[0].after)
            .collect();
        let deadline = scheme.deadline();
        let mut model = gradcode::straggler::DelaySpec::from_config(&config)
            .unwrap()
            .model(0);
        let mut sample = gradcode::straggler::RoundSample::new(6);
        let unit_s = 0.2;
        let mut clear = 0;
        for (t, (a, b)) in trained.iter().zip(&simulated).enumerate() {
            model.sample(&mut sample);
            assert_eq!(
                a.straggling, b.straggling,
                "{name}: iteration {t}: same samples"
            );
            assert_eq!(a.cluster, b.cluster, "{name}: iteration {t}: same clusters");
            let end = b.duration_s / unit_s;
            let near = (0..6).any(|w| {
                let m = sample.message_time(w, after[w]);
                (m - end).abs() < margin && m != end
                    || deadline.is_some_and(|d| (m - d).abs() < margin)
            });
            if near {
                continue;
            }
            clear += 1;
            let model_times: Vec<f64> = (0..6).map(|w| sample.message_time(w, after[w])).collect();
            assert_eq!(
                (a.messages_received, a.messages_used, a.recovered_fraction),
                (b.messages_received, b.messages_used, b.recovered_fraction),
                "{name}: iteration {t}: trained finish {:?}, simulated finish {:?}, model times {model_times:?}, end {end}",
                a.finish_s,
                b.finish_s
            );
            let received = |r: &gradcode::trace::IterationRecord| -> Vec<bool> {
                r.finish_s.iter().map(|f| f.is_finite()).collect()
            };
            assert_eq!(
                received(a),
                received(b),
                "{name}: iteration {t}: the same workers"
            );
        }
        eprintln!("{name}: {clear} of {ITERATIONS} iterations compared");
        assert!(
            clear >= ITERATIONS / 3,
            "{name}: only {clear} of {ITERATIONS} iterations clear of the margin"
        );
    }
}

/// The objective over all the training data at `point`: every partition's
/// loss summed in partition order (as the oracle `common::full_batch` does).
fn full_data_objective(
    parts: &[gradcode::learn::Partition],
    config: &gradcode::config::Config,
    opt: &gradcode::learn::Optimizer,
    samples: usize,
) -> f64 {
    let mut scratch = vec![0.0; opt.eval_point().len()];
    let loss: f64 = parts
        .iter()
        .map(|part| {
            part.accumulate(
                config.model.loss,
                0..part.len(),
                opt.eval_point(),
                &mut scratch,
            )
        })
        .sum();
    opt.objective(loss, samples)
}

/// A partial scheme records the training loss over all the data, never over
/// the recovered partitions alone. The test replays the run independently:
/// from the trace's `used` workers it rebuilds each iteration's recovered
/// partitions (the union of the used workers' codewords, which IS-GC and
/// ignore-stragglers keep disjoint) and takes the same partial-mean step;
/// the replay ends at the run's θ, and at every iteration the recorded
/// `train_loss` is either the full-data objective at the replayed model (to
/// 1e-12 relative) or NaN: recorded exactly at the fully recovered iterations
/// and every `train.eval_every` iterations (and the last), never missing
/// there (the master computes the losses the results did not bring on its
/// own copy of the data, so a lagging worker cannot leave one unknown), and
/// the master never waits for a partition's loss (no such timing event).
#[test]
fn partial_schemes_record_the_full_data_train_loss_where_evaluated() {
    use gradcode::learn::{DataPlan, Optimizer};
    for (name, scheme, eval_every) in [
        (
            "full-loss-ignore-stragglers",
            "kind = \"ignore-stragglers\"\nwait_for = 4",
            1,
        ),
        (
            "full-loss-is-gc-deadline",
            "kind = \"is-gc\"\nload = 2\nplacement = \"cr\"\ndeadline = 0.3",
            4,
        ),
    ] {
        let text = format!("{EMULATED}eval_every = {eval_every}\n[scheme]\n{scheme}\n");
        let (summary, trace, stderr) = train_logged(name, 7, &text, &[]);
        let records = read(&trace).records;
        let config = parse(&text, "test", &[]).unwrap().config;
        let iterations = config.train.iterations;
        assert_eq!(records.len(), iterations, "{name}");
        let mut built = coding::build(&config).unwrap();
        // Both schemes plan every iteration alike (is-gc's plan is its code).
        let plan = built.plan_round(&Default::default());
        let partitions = built.partitions();
        let data = DataPlan::new(&config, partitions).unwrap();
        let ids: Vec<usize> = (0..partitions).collect();
        let parts = data.load(&ids).unwrap();
        let samples = data.train_samples();
        let d = data.features();
        let mut opt = Optimizer::new(&config.train, config.model.l2, d);
        let (mut partial_recorded, mut skipped) = (0, 0);
        for (t, r) in records.iter().enumerate() {
            let want = full_data_objective(&parts, &config, &opt, samples);
            let evaluated = t % eval_every == 0 || t + 1 == iterations;
            if r.recovered_fraction == 1.0 || evaluated {
                let err = (r.train_loss - want).abs() / want.abs();
                assert!(
                    err <= 1e-12,
                    "{name}: iteration {t}: recorded train loss {} vs the full-data {want} (relative {err:e}), recovered {}",
                    r.train_loss,
                    r.recovered_fraction
                );
                if r.recovered_fraction < 1.0 {
                    partial_recorded += 1;
                }
            } else {
                assert!(
                    r.train_loss.is_nan(),
                    "{name}: iteration {t} is not evaluated but records {}",
                    r.train_loss
                );
                skipped += 1;
            }
            // The step the master took: the mean gradient over the recovered partitions.
            let mut recovered = vec![false; partitions];
            for w in (0..r.used.len()).filter(|&w| r.used[w]) {
                for &(p, c) in &plan.tasks[w].messages[0].codeword.terms {
                    assert_eq!(c, 1.0, "{name}: an uncoded sum");
                    assert!(!recovered[p], "{name}: iteration {t}: disjoint codewords");
                    recovered[p] = true;
                }
            }
            let count = recovered.iter().filter(|&&x| x).count();
            assert_eq!(
                count as f64 / partitions as f64,
                r.recovered_fraction,
                "{name}: iteration {t}"
            );
            let mut gradient = vec![0.0; d];
            let mut used_samples = 0;
            for p in (0..partitions).filter(|&p| recovered[p]) {
                let part = &parts[p];
                part.accumulate(
                    config.model.loss,
                    0..part.len(),
                    opt.eval_point(),
                    &mut gradient,
                );
                used_samples += part.len();
            }
            opt.step(&gradient, used_samples);
        }
        let err = common::relative_error(&common::theta(&summary), opt.theta());
        assert!(err <= 1e-10, "{name}: the replay ends elsewhere ({err:e})");
        assert!(
            partial_recorded > 0,
            "{name}: some partially recovered iteration has its full-data loss"
        );
        assert!(
            !stderr.contains("training loss not recorded"),
            "{name}: every evaluated loss is known: {stderr}"
        );
        assert!(
            summary["timing"]
                .as_array()
                .unwrap()
                .iter()
                .all(|e| { !e["event"].as_str().unwrap().contains("(wait)") }),
            "{name}: nothing waits for a partition's loss: {}",
            summary["timing"]
        );
        if eval_every > 1 {
            assert!(
                skipped > 0,
                "{name}: iterations between evaluations are NaN"
            );
        }
        let losses = gradcode::trace::read_attr_string(&trace, "/", "losses").unwrap();
        assert!(
            losses.contains("over all the training data")
                && losses.contains(&format!("train.eval_every = {eval_every}")),
            "{name}: the trace says what train_loss is: {losses}"
        );
        assert_final_loss_at_theta(name, &config, partitions, &summary);
    }
}

/// A worker that never answers (an emulated delay of 1e300 model time units)
/// holds the only copy of its partition under ignore-stragglers: its loss
/// never comes, so the master computes it on its own copy of the data, and
/// the full-data training loss is recorded at every iteration (`eval_every`
/// is 1 here) without waiting `train.result_timeout_s` (300 s) for it.
#[test]
fn a_partition_no_message_covers_in_time_has_its_loss_computed_by_the_master() {
    let text = format!(
        "{}[scheme]\nkind = \"ignore-stragglers\"\nwait_for = 4\n",
        EMULATED.replace(
            "model = \"shifted-exponential\"",
            "model = \"extra-delay\"\ndelayed_workers = [3]\ndelay_mean = 1e300"
        )
    );
    let started = std::time::Instant::now();
    let (summary, trace) = train("full-loss-silent-worker", 7, &text, &[]);
    assert!(started.elapsed().as_secs() < 60, "the run did not wait");
    let records = read(&trace).records;
    assert_eq!(records.len(), 30);
    assert!(
        records
            .iter()
            .all(|r| !r.used[2] && r.recovered_fraction < 1.0 && r.train_loss.is_finite()),
        "worker 3 never answered, and every iteration knows the full-data loss"
    );
    // The final model's evaluation emulates no delay: worker 3 answers it.
    let config = parse(&text, "test", &[]).unwrap().config;
    assert_final_loss_at_theta("silent worker", &config, 6, &summary);
    assert!(
        summary["final_test_loss"]
            .as_f64()
            .is_some_and(f64::is_finite)
    );
}

/// A rank that ends the job with MPI_Abort has its last line, the error that
/// says why, reach the user every time: the launcher could act on the abort
/// before forwarding that line (MPICH's Hydra dropped it in 11 of 60 aborts
/// on this machine, and one CI run lost a run's whole reason so), so the
/// rank first waits for its output to be read. Forty aborts in a row under
/// MPICH (0.2 s each; without the wait, two of three such runs failed), five
/// under OpenMPI (3.6 s each).
#[test]
fn the_error_before_an_abort_always_reaches_the_user() {
    let path = write_config(
        "abort-line",
        "workers = 2\nseed = 1\n[scheme]\nkind = \"uncoded\"\n[data]\ntrain_samples = 20\ntest_samples = 4\nfeatures = 3\n[train]\niterations = 5\n",
    );
    let trace = scratch("abort-line.h5");
    let mpich = std::env::var("GRADCODE_TEST_MPIEXEC").is_ok_and(|m| m.contains("mpich"));
    let args = common::train_args(&path, &trace);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    for attempt in 1..=if mpich { 40 } else { 5 } {
        let out = {
            let _one = common::one_at_a_time();
            common::mpirun_command(3, &args)
                .env("GRADCODE_TEST_PANIC_RANK", "0")
                .env("RUST_BACKTRACE", "0")
                .output()
                .expect("mpirun must be installed")
        };
        let err = common::stderr(&out);
        assert!(!out.status.success(), "abort {attempt}: {err}");
        assert!(
            err.lines()
                .any(|l| l.starts_with("error: rank 0 (master) panicked")
                    && l.ends_with("ending the job (MPI_Abort)")),
            "abort {attempt}: the error line was lost: {err}"
        );
    }
}

/// `gradcode ARGS` in one process: (exit code, stderr).
fn gradcode(args: &[&str]) -> (Option<i32>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gradcode"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_network_on_labels_that_are_not_classes_is_refused_by_check_and_by_train_naming_the_worker() {
    // A network on synthetic data (±1 or real labels): refused by the config's
    // validation, in check and in train alike.
    for kind in ["synthetic-linear", "synthetic-logistic", "synthetic-onehot"] {
        let set = format!("data.kind=\"{kind}\"");
        let (code, err) = gradcode(&["check", "--set", "model.kind=\"mlp\"", "--set", &set]);
        assert_eq!(code, Some(2), "{kind}: {err}");
        assert!(
            err.starts_with("error: model.kind = \"mlp\" needs class labels 0..model.classes")
                && err.lines().count() == 1,
            "{kind}: {err}"
        );
    }
    // A CSV file whose labels are real values (diabetes progression): check
    // reads the data and refuses it; train's workers find it when they load
    // their partitions, and the run ends at once naming the worker, exit 2.
    let data = format!("{}/data/diabetes.csv", env!("CARGO_MANIFEST_DIR"));
    let text = format!(
        "workers = 2\n[scheme]\nkind = \"uncoded\"\n[model]\nkind = \"mlp\"\nhidden = [4]\nclasses = 2\n\
         [data]\nkind = \"csv\"\npath = \"{data}\"\n[train]\niterations = 3\nlearning_rate = 0.01\n"
    );
    let path = write_config("mlp-on-real-labels", &text);
    let (code, err) = gradcode(&["check", "--config", path.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("is not a class in 0..2"), "{err}");
    let trace = scratch("mlp-on-real-labels.h5");
    let _ = std::fs::remove_file(&trace);
    let started = std::time::Instant::now();
    let out = mpirun(
        3,
        &[
            "train",
            "--config",
            path.to_str().unwrap(),
            "--out",
            trace.to_str().unwrap(),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert!(
        errors.len() == 1
            && errors[0].starts_with("error: worker ")
            && errors[0].contains(": data: partition ")
            && errors[0].contains(" is not a class in 0..2"),
        "{err}"
    );
}

#[test]
fn a_worker_failing_during_training_ends_the_run_naming_it_and_the_trace_says_failed() {
    let trace = scratch("worker-fails.h5");
    let text = EMULATED.replace("iterations = 30", "iterations = 100000");
    let path = write_config("worker-fails", &text);
    let out = {
        let _one = common::one_at_a_time();
        common::mpirun_command(
            7,
            &[
                "train",
                "--config",
                path.to_str().unwrap(),
                "--out",
                trace.to_str().unwrap(),
                "--force",
                "--json",
                "--quiet",
            ],
        )
        .env("GRADCODE_TEST_FAIL_RANK", "3")
        .output()
        .unwrap()
    };
    let err = String::from_utf8_lossy(&out.stderr);
    // Not an input error: exit 1, the worker's own line, named by its rank.
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.lines().any(|l| l.starts_with("error: ")
            && l.contains("worker 3: ")
            && l.contains("GRADCODE_TEST_FAIL_RANK=3: failed at its sixth task, on purpose")),
        "{err}"
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["status"], "failed", "{summary}");
    assert_eq!(summary["trace"], trace.to_str().unwrap(), "{summary}");
    let report = gradcode::trace::Report::read(&trace).unwrap();
    assert_eq!(report.status.as_deref(), Some("failed"));
    assert!(
        report
            .status_reason
            .as_deref()
            .is_some_and(|r| r.contains("worker 3")),
        "{:?}",
        report.status_reason
    );
    assert_eq!(
        summary["iterations"].as_u64(),
        Some(read(&trace).records.len() as u64),
        "the JSON counts the iterations the trace holds"
    );
}

#[test]
fn a_finished_run_exits_within_ten_seconds_of_its_summary() {
    // Whatever the transport (the CI runs this binary under OpenMPI and MPICH,
    // over shared memory and over TCP): the job ends soon after it printed its
    // JSON summary (MPICH before 4.2 over UCX/TCP could hang in MPI_Finalize).
    use std::io::BufRead;
    let _one = common::one_at_a_time();
    for (name, ranks, text) in [
        (
            "exit-uncoded",
            3,
            "workers = 2\n[scheme]\nkind = \"uncoded\"\n[train]\niterations = 5\n",
        ),
        (
            "exit-cyclic",
            5,
            "workers = 4\n[scheme]\nkind = \"gc-cyclic\"\nload = 2\n[train]\niterations = 5\n",
        ),
    ] {
        for attempt in 0..3 {
            let (mut command, _) = common::train_command("mpi-tests", name, ranks, text, &[]);
            let mut child = command
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
            let mut summary_at = None;
            for line in stdout.lines() {
                if line.unwrap() == "}" {
                    summary_at = Some(std::time::Instant::now());
                }
            }
            let summary_at = summary_at.unwrap_or_else(|| panic!("{name}: no JSON summary"));
            let status = loop {
                if let Some(status) = child.try_wait().unwrap() {
                    break status;
                }
                if summary_at.elapsed() > std::time::Duration::from_secs(10) {
                    let _ = child.kill();
                    panic!("{name} (attempt {attempt}): the job still runs 10 s after its summary");
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            };
            assert!(status.success(), "{name}: {status}");
        }
    }
}

#[test]
fn a_bad_flag_under_mpirun_is_one_line_from_rank_0() {
    // Every rank parses the command line; only rank 0 says what is wrong
    // (before, each rank printed it, run together on one line).
    let out = mpirun(4, &["train", "--no-such-flag"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("--no-such-flag"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with("error: unexpected argument '--no-such-flag'")
            && lines[0].matches("error:").count() == 1,
        "{err}"
    );
}

/// Every approximate code (agc-frc, agc-graph, agc-expander, agc-bgc,
/// agc-bibd, sgc, erasurehead) trains with its decoded approximation: the
/// test replays each run in one process from its trace alone. The accepted
/// arrivals are the workers with a finish time, in the order of those times;
/// the scheme (rebuilt from the config, so the same graph) decodes them
/// into weights; the step is Σ a_i·(worker i's codeword of the partitions'
/// full gradients) over every training sample. The replay ends at the run's
/// θ, its decode error equals the recorded one at every iteration, and the
/// training loss recorded at the evaluated iterations is the full-data
/// objective (never the approximate loss sum).
#[test]
fn approximate_codes_step_with_their_decoded_approximation() {
    use gradcode::coding::{Arrival, RoundContext};
    use gradcode::learn::{DataPlan, Optimizer};
    for (name, workers, scheme) in [
        (
            "agc-frc-replay",
            6,
            "kind = \"agc-frc\"\nload = 2\nwait_for = 3",
        ),
        (
            "agc-graph-replay",
            6,
            // n = 4 partitions (K4's 6 edges), the fastest 3: a triangle
            // misses a partition, a star is bipartite 1 against 3.
            "kind = \"agc-graph\"\ndegree = 3\nwait_for = 3",
        ),
        (
            "agc-expander-replay",
            6,
            "kind = \"agc-expander\"\ndegree = 2\nwait_for = 4\ndecoder = \"one-step\"",
        ),
        // The least-squares decode of a random placement.
        (
            "agc-bgc-replay",
            6,
            "kind = \"agc-bgc\"\nload = 2\nwait_for = 3",
        ),
        // The Fano plane: 7 workers, the fastest 5.
        ("agc-bibd-replay", 7, "kind = \"agc-bibd\"\nwait_for = 5"),
        // Unbiased weights for the workers that arrived.
        (
            "sgc-replay",
            6,
            "kind = \"sgc\"\nload = 2\nstraggle_probability = 0.3\nwait_for = 4",
        ),
        // 3 blocks of 2, stopped at 2 results: some block is always missed
        // (with more results it would stop once every block came, exactly).
        (
            "erasurehead-replay",
            6,
            "kind = \"erasurehead\"\nload = 2\nwait_for = 2",
        ),
    ] {
        let emulated = EMULATED.replace("workers = 6", &format!("workers = {workers}"));
        let text = format!("{emulated}eval_every = 3\n[scheme]\n{scheme}\n");
        let (summary, trace) = train(name, workers + 1, &text, &[]);
        let records = read(&trace).records;
        let config = parse(&text, "test", &[]).unwrap().config;
        let mut built = coding::build(&config).unwrap();
        let plan = built.plan_round(&RoundContext::default());
        let partitions = built.partitions();
        let data = DataPlan::new(&config, partitions).unwrap();
        let parts = data.load(&(0..partitions).collect::<Vec<_>>()).unwrap();
        let samples = data.train_samples();
        let d = data.features();
        let mut opt = Optimizer::new(&config.train, config.model.l2, d);
        let mut evaluated = 0;
        for (t, r) in records.iter().enumerate() {
            let mut order: Vec<usize> = (0..r.finish_s.len())
                .filter(|&w| r.finish_s[w].is_finite())
                .collect();
            order.sort_by(|&a, &b| r.finish_s[a].total_cmp(&r.finish_s[b]).then(a.cmp(&b)));
            let arrivals: Vec<Arrival> = order.iter().map(|&w| Arrival::only(w)).collect();
            let decoding = built.decode(&plan, &arrivals);
            assert!(decoding.approximate, "{name}");
            let error = decoding.error(&plan, &arrivals, partitions, &mut Vec::new());
            assert!(
                (error - r.decode_error).abs() <= 1e-9,
                "{name}: iteration {t}: decode error {} recorded, {error} replayed",
                r.decode_error
            );
            if t % 3 == 0 || t + 1 == records.len() {
                let want = full_data_objective(&parts, &config, &opt, samples);
                let err = (r.train_loss - want).abs() / want.abs();
                assert!(
                    err <= 1e-12,
                    "{name}: iteration {t}: train loss {} vs {want}",
                    r.train_loss
                );
                evaluated += 1;
            } else {
                assert!(
                    r.train_loss.is_nan(),
                    "{name}: iteration {t}: {}",
                    r.train_loss
                );
            }
            let gradients: Vec<Vec<f64>> = parts
                .iter()
                .map(|part| {
                    let mut g = vec![0.0; d];
                    part.accumulate(config.model.loss, 0..part.len(), opt.eval_point(), &mut g);
                    g
                })
                .collect();
            let mut step = vec![0.0; d];
            for (a, &w) in arrivals.iter().zip(&decoding.weights) {
                let coded = plan.tasks[a.worker].messages[0].codeword.encode(&gradients);
                for (s, c) in step.iter_mut().zip(coded) {
                    *s += w * c;
                }
            }
            opt.step(&step, samples);
        }
        assert!(evaluated >= 10, "{name}");
        let err = common::relative_error(&common::theta(&summary), opt.theta());
        assert!(err <= 1e-10, "{name}: the replay ends elsewhere ({err:e})");
        let mean: f64 = records.iter().map(|r| r.decode_error).sum::<f64>() / records.len() as f64;
        assert!(mean > 0.0, "{name}: some iteration's decode is approximate");
    }
}
