//! `runtime.aggregate = "reduce"` (issue 28, item 3; docs/aggregate.md):
//! the decodable set reduces its weighted vectors among itself and the
//! master receives one vector. Reduce and gather end with the same θ to
//! rounding for every exact scheme and recover the same partitions for the
//! partial ones; the master's inbound bytes per iteration drop from about
//! |S| vectors to one; a stopped worker outside S does not slow a reduce
//! iteration; every rank completes its sends before it finalises MPI.
#![cfg(all(feature = "mpi", feature = "hdf5"))]

mod common;

use std::path::PathBuf;
use std::process::Output;
use std::time::{Duration, Instant};

fn scratch(name: &str) -> PathBuf {
    common::scratch("aggregate-tests", name)
}

/// Train `text` on 7 ranks with `runtime.aggregate = aggregate`: the
/// output (info logs of the runtime on stderr) and the trace.
fn train(name: &str, text: &str, aggregate: &str) -> (Output, PathBuf) {
    let set = format!("runtime.aggregate=\"{aggregate}\"");
    common::train_logged(
        "aggregate-tests",
        &format!("{name}-{aggregate}"),
        7,
        text,
        &["--set", &set],
    )
}

/// 6 workers, emulated stragglers, d = 1500: a vector (d + 1 values with
/// the loss) is 12 KB, so a gathered iteration brings the master
/// several of them and a reduced one a single one.
const EMULATED: &str = "workers = 6\nseed = 11\n[straggler]\nmodel = \"shifted-exponential\"\nalpha = 0.01\nmu = 2.0\ntime_unit_ms = 2.0\n[data]\ntrain_samples = 300\ntest_samples = 30\nfeatures = 1500\n[train]\niterations = 12\nlearning_rate = 0.05\n";

#[test]
fn reduce_and_gather_give_the_same_theta_for_every_exact_scheme() {
    for (name, scheme) in common::EXACT_SCHEMES {
        let text = format!("{EMULATED}[scheme]\n{scheme}\n");
        let (gathered, _) = train(name, &text, "gather");
        let (reduced, _) = train(name, &text, "reduce");
        common::assert_no_request_left(name, &reduced, 7);
        let (g, r) = (common::json(&gathered), common::json(&reduced));
        assert_eq!(g["aggregate"], "gather", "{name}");
        assert_eq!(r["aggregate"], "reduce", "{name}");
        let (theta_g, theta_r) = (common::theta(&g), common::theta(&r));
        let d = theta_g.len();
        assert_eq!(d, 1500, "{name}");
        let err = common::relative_error(&theta_r, &theta_g);
        assert!(err <= 1e-12, "{name}: reduce vs gather, relative {err}");
        assert_eq!(r["mean_recovered_fraction"], 1.0, "{name}");
        // Gather: at least the K − s vectors of a decodable set (s ≤ 3
        // here) per iteration; reduce: one vector and small messages.
        let vector = (8 * (d + 1)) as f64;
        let bytes_g = g["master_inbound_bytes_per_iteration"].as_f64().unwrap();
        let bytes_r = r["master_inbound_bytes_per_iteration"].as_f64().unwrap();
        assert!(bytes_g >= 3.0 * vector, "{name}: gather {bytes_g} B");
        assert!(
            bytes_r >= vector && bytes_r < 2.0 * vector,
            "{name}: reduce {bytes_r} B for a vector of {vector} B"
        );
    }
}

/// Model time units per computation of workers 1..6 (replayed every
/// iteration): the messages' due times are at least 0.3 units (12 ms) apart,
/// so the same workers arrive first in both runs (as tests/bit_reproducible.rs).
const UNIT_TIMES: &str = "2.2,2.5,2.8,3.1,3.5,3.9";

#[test]
fn reduce_and_gather_recover_the_same_partitions_for_partial_schemes() {
    let csv = scratch("times.csv");
    std::fs::write(&csv, format!("w1,w2,w3,w4,w5,w6\n{UNIT_TIMES}\n")).unwrap();
    for (name, scheme) in [
        (
            "is-gc",
            "kind = \"is-gc\"\nload = 2\nplacement = \"cr\"\nwait_for = 3",
        ),
        (
            "ignore-stragglers",
            "kind = \"ignore-stragglers\"\nwait_for = 4",
        ),
    ] {
        let text = format!(
            "workers = 6\nseed = 4\n[scheme]\n{scheme}\n[straggler]\nmodel = \"trace\"\ntrace_file = \"{}\"\ntime_unit_ms = 40.0\n[data]\nkind = \"synthetic-logistic\"\ntrain_samples = 600\ntest_samples = 60\nfeatures = 30\n[train]\niterations = 6\nlearning_rate = 0.5\n",
            csv.display()
        );
        // A loaded machine can push a worker past the 12 ms margin: then
        // the runs used different workers, and they are repeated.
        let mut compared = false;
        for attempt in 0..3 {
            let (gathered, trace_g) = train(name, &text, "gather");
            let (reduced, trace_r) = train(name, &text, "reduce");
            let records_g = gradcode::trace::read_trace(&trace_g, "/").unwrap().records;
            let records_r = gradcode::trace::read_trace(&trace_r, "/").unwrap().records;
            let used = |records: &[gradcode::trace::IterationRecord]| -> Vec<Vec<bool>> {
                records.iter().map(|r| r.used.clone()).collect()
            };
            if used(&records_g) != used(&records_r) {
                eprintln!("{name}: attempt {attempt}: the runs used different workers");
                continue;
            }
            let fractions = |records: &[gradcode::trace::IterationRecord]| -> Vec<f64> {
                records.iter().map(|r| r.recovered_fraction).collect()
            };
            assert_eq!(fractions(&records_g), fractions(&records_r), "{name}");
            assert!(
                records_r.iter().all(|r| r.recovered_fraction < 1.0),
                "{name}: every iteration recovers part of the data"
            );
            let (g, r) = (common::json(&gathered), common::json(&reduced));
            let err = common::relative_error(&common::theta(&r), &common::theta(&g));
            assert!(err <= 1e-12, "{name}: reduce vs gather, relative {err}");
            compared = true;
            break;
        }
        assert!(compared, "{name}: no two runs used the same workers");
    }
}

#[test]
fn a_stopped_worker_outside_the_decodable_set_does_not_slow_a_reduce_iteration() {
    // gc-cyclic with load 3 tolerates 2 stragglers. Worker 6 is the fastest
    // (replayed unit time 1.0; the others 1.5-1.9), so every iteration of an
    // undisturbed run uses it; stopped, it is outside every decodable set
    // and the iterations decode from workers 1-4 (model time 3 · 1.8 = 5.4
    // units against 3 · 1.7 = 5.1). A stop that lands after its header
    // came and before the reduction is inside S: that iteration waits for
    // it (as it must). It is a wide window (from 30 ms to the decodable
    // set's 51 ms of each iteration; 3 of 4 stops landed in it at one
    // offset), so the worker is stopped four times at four offsets.
    let csv = scratch("fast-sixth.csv");
    std::fs::write(&csv, "w1,w2,w3,w4,w5,w6\n1.5,1.6,1.7,1.8,1.9,1.0\n").unwrap();
    let text = format!(
        "workers = 6\nseed = 5\n[scheme]\nkind = \"gc-cyclic\"\nload = 3\n[straggler]\nmodel = \"trace\"\ntrace_file = \"{}\"\ntime_unit_ms = 10.0\n[data]\ntrain_samples = 600\ntest_samples = 60\nfeatures = 30\n[train]\niterations = 200\nlearning_rate = 0.05\nresult_timeout_s = 20.0\n[runtime]\naggregate = \"reduce\"\n",
        csv.display()
    );
    let (baseline, trace) = train("stopped-baseline", &text, "reduce");
    let baseline_records = gradcode::trace::read_trace(&trace, "/").unwrap().records;
    assert!(common::json(&baseline)["aggregate"] == "reduce");
    let undisturbed: Vec<f64> = baseline_records
        .iter()
        .filter(|r| r.used[5])
        .map(|r| r.duration_s)
        .collect();
    assert!(
        undisturbed.len() >= 100,
        "the fastest worker is used in an undisturbed run"
    );

    let (command, trace) =
        common::train_command("aggregate-tests", "stopped-reduce", 7, &text, &[]);
    let _ = std::fs::remove_file(&trace);
    let mut command = command;
    let _one = common::one_at_a_time();
    let child = command
        .env("GRADCODE_LOG", "gradcode::runtime=info")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    // Training runs once the trace exists (created at the first iteration).
    while !trace.exists() && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let needle = trace.to_str().unwrap();
    let worker = common::rank_pid_of(needle, 6).expect("rank 6 runs");
    for offset_ms in [0, 17, 34, 51] {
        std::thread::sleep(Duration::from_millis(offset_ms));
        assert!(common::send_signal(worker, "STOP"));
        std::thread::sleep(Duration::from_millis(1200));
        assert!(common::send_signal(worker, "CONT"));
        std::thread::sleep(Duration::from_millis(500));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the run completes: {}",
        common::stderr(&out)
    );
    common::assert_no_request_left("stopped", &out, 7);
    let records = gradcode::trace::read_trace(&trace, "/").unwrap().records;
    assert_eq!(records.len(), 200);
    let stopped: Vec<f64> = records
        .iter()
        .filter(|r| !r.used[5])
        .map(|r| r.duration_s)
        .collect();
    assert!(
        stopped.len() >= 15,
        "iterations ran without worker 6 while it was stopped: {}",
        stopped.len()
    );
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (with, without) = (mean(&undisturbed), mean(&stopped));
    // A shared machine: loosely, against a model difference of 6%.
    assert!(
        without <= 1.5 * with + 0.010,
        "iterations without the stopped worker take {without:.4} s, undisturbed ones {with:.4} s"
    );
}

#[test]
fn an_unknown_aggregate_is_refused_naming_the_key() {
    let out = common::gradcode(&["check", "--set", "runtime.aggregate=\"tree\""]);
    common::assert_rejected("runtime.aggregate", &out, "runtime.aggregate");
}

#[test]
fn auto_reduces_from_its_threshold_and_check_says_what_each_value_does() {
    use gradcode::config::RuntimeAggregate;
    // 8 (d + 1) bytes against the threshold.
    let edge = RuntimeAggregate::AUTO_REDUCE_BYTES / 8 - 1;
    assert!(RuntimeAggregate::Auto.reduces(edge, false));
    assert!(!RuntimeAggregate::Auto.reduces(edge - 1, false));
    // Every rank on the master's node: auto gathers whatever d is.
    assert!(!RuntimeAggregate::Auto.reduces(usize::MAX / 16, true));
    assert!(RuntimeAggregate::Reduce.reduces(1, true));
    assert!(!RuntimeAggregate::Gather.reduces(usize::MAX / 16, false));

    let check = |set: &[&str]| -> String {
        let mut args = vec!["check", "--json"];
        for s in set {
            args.extend(["--set", s]);
        }
        common::json(&common::gradcode(&args))["aggregate"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(check(&[]).starts_with("gather:"));
    let reduce = check(&["runtime.aggregate=\"reduce\""]);
    assert!(reduce.starts_with("reduce:"), "{reduce}");
    assert!(!reduce.contains("per message"), "{reduce}");
    // gc-mmc sends several messages per worker: reduced per message.
    let mmc = check(&[
        "runtime.aggregate=\"reduce\"",
        "scheme.kind=\"gc-mmc\"",
        "scheme.load=3",
        "scheme.design=\"correlated\"",
        "scheme.order=2",
    ]);
    assert!(mmc.contains("reduced per message"), "{mmc}");
    let auto = check(&["runtime.aggregate=\"auto\""]);
    assert!(
        auto.contains(&format!("d ≥ {edge}")) && auto.contains("several nodes"),
        "{auto} names the threshold and the nodes"
    );
}
