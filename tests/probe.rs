//! `gradcode probe` under mpirun (issue 26, item 2): the `[network]` section
//! it prints parses as TOML with the five keys the config reads, positive and
//! finite (four with one worker: no pair to time between workers); `--json`
//! has one fitted link per worker and per pair of neighbours; a run on one rank and bad
//! flags end every rank with exit status 2 and one `error:` line naming the
//! rule or the flag.
#![cfg(feature = "mpi")]

mod common;

use std::process::Output;

fn probe(ranks: usize, args: &[&str]) -> Output {
    let mut full = vec!["probe"];
    full.extend_from_slice(args);
    let _one = common::one_at_a_time();
    common::mpirun_command(ranks, &full)
        .output()
        .expect("mpirun must be installed")
}

/// Small messages and few repetitions: the test checks the output, not the network.
const QUICK: &[&str] = &["--max-bytes", "262144", "--repetitions", "3"];

fn positive(name: &str, x: Option<f64>) -> f64 {
    let x = x.unwrap_or_else(|| panic!("{name} is not a number"));
    assert!(x.is_finite() && x > 0.0, "{name} = {x}");
    x
}

#[test]
fn the_section_parses_as_toml_with_the_five_keys() {
    let out = probe(4, QUICK);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let text = common::stdout(&out);
    let value: toml::Table = text
        .parse()
        .unwrap_or_else(|e| panic!("not TOML ({e}): {text}"));
    let network = value["network"].as_table().expect("a [network] table");
    let mut keys: Vec<&str> = network.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "latency_s",
            "master_bandwidth_bytes_per_s",
            "master_link_shared",
            "peer_bandwidth_bytes_per_s",
            "worker_bandwidth_bytes_per_s"
        ]
    );
    for key in [
        "latency_s",
        "worker_bandwidth_bytes_per_s",
        "master_bandwidth_bytes_per_s",
        "peer_bandwidth_bytes_per_s",
    ] {
        positive(key, network[key].as_float());
    }
    // The pairs' table (comments): 1-2 and 2-3.
    let pairs: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix('#'))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.contains('-') && w.split('-').all(|n| n.parse::<usize>().is_ok()))
        .collect();
    assert_eq!(pairs, ["1-2", "2-3"], "{text}");
    assert!(network["master_link_shared"].as_bool().is_some());
    // The per-worker table (comments): one row per worker, 1..3.
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| {
            l.starts_with('#')
                && l[1..]
                    .split_whitespace()
                    .next()
                    .is_some_and(|w| w.parse::<usize>().is_ok())
        })
        .collect();
    assert_eq!(rows.len(), 3, "{text}");
}

#[test]
fn json_has_a_fitted_link_per_worker_and_the_same_keys() {
    let out = probe(3, &[QUICK, &["--json"]].concat());
    let v = common::json(&out);
    for key in [
        "latency_s",
        "worker_bandwidth_bytes_per_s",
        "master_bandwidth_bytes_per_s",
    ] {
        positive(key, v["network"][key].as_f64());
    }
    assert!(v["network"]["master_link_shared"].is_boolean());
    let sizes: Vec<u64> = serde_json::from_value(v["sizes_bytes"].clone()).unwrap();
    assert_eq!(sizes, [8, 32, 128, 512, 2048, 8192, 32768, 131072, 262144]);
    let workers = v["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 2);
    let mut latencies = Vec::new();
    let mut bandwidths = Vec::new();
    for (i, w) in workers.iter().enumerate() {
        assert_eq!(w["worker"], i + 1);
        latencies.push(positive("latency_s", w["latency_s"].as_f64()));
        bandwidths.push(positive(
            "bandwidth_bytes_per_s",
            w["bandwidth_bytes_per_s"].as_f64(),
        ));
        let one_way = w["one_way_s"].as_array().unwrap();
        assert_eq!(one_way.len(), sizes.len());
        // The largest message takes longer than the fastest smaller one: a
        // load spike can slow any one message, or several (8 bytes took
        // 18.8 µs, 262,144 bytes 14.7 µs, under the full suite; under MPICH
        // over TCP on a loaded machine 8 to 512 bytes each took 2-4 ms and
        // 2,048 bytes 7.6 µs), but none can make 256 KiB cross faster than
        // its bytes.
        let least_small = one_way[..sizes.len() - 1]
            .iter()
            .map(|t| t.as_f64().unwrap())
            .fold(f64::INFINITY, f64::min);
        assert!(
            one_way[sizes.len() - 1].as_f64().unwrap() > least_small,
            "{w}"
        );
    }
    // Two workers: the keys are the medians, the means of the two.
    let mean = |x: &[f64]| (x[0] + x[1]) / 2.0;
    let n = &v["network"];
    assert_eq!(n["latency_s"].as_f64().unwrap(), mean(&latencies));
    assert_eq!(
        n["worker_bandwidth_bytes_per_s"].as_f64().unwrap(),
        mean(&bandwidths)
    );
    let s = &v["simultaneous"];
    assert_eq!(
        n["master_bandwidth_bytes_per_s"].as_f64().unwrap(),
        s["bytes"].as_f64().unwrap() / s["all_s"].as_f64().unwrap()
    );
    // One pair, 1-2: the key is its fit.
    let peers = v["peers"].as_array().unwrap();
    assert_eq!(peers.len(), 1, "{v}");
    assert_eq!(peers[0]["workers"], serde_json::json!([1, 2]));
    assert_eq!(peers[0]["one_way_s"].as_array().unwrap().len(), sizes.len());
    assert_eq!(
        n["peer_bandwidth_bytes_per_s"].as_f64().unwrap(),
        positive("pair bandwidth", peers[0]["bandwidth_bytes_per_s"].as_f64())
    );
}

#[test]
fn one_worker_has_no_pair_and_no_peer_key() {
    let out = probe(2, QUICK);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let text = common::stdout(&out);
    let value: toml::Table = text.parse().unwrap();
    let network = value["network"].as_table().unwrap();
    assert_eq!(network.len(), 4, "{text}");
    assert!(
        !network.contains_key("peer_bandwidth_bytes_per_s"),
        "{text}"
    );
    let v = common::json(&probe(2, &[QUICK, &["--json"]].concat()));
    assert_eq!(v["peers"], serde_json::json!([]));
    assert!(v["network"]["peer_bandwidth_bytes_per_s"].is_null(), "{v}");
}

/// Exactly one line of ours on stderr (mpirun may add its own after it).
fn our_error(out: &Output) -> String {
    let err = common::stderr(out);
    let ours: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(ours.len(), 1, "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(out.stdout.is_empty(), "{}", common::stdout(out));
    ours[0].to_string()
}

#[test]
fn one_rank_is_refused_in_one_line() {
    let out = probe(1, QUICK);
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));
    let line = our_error(&out);
    assert!(
        line.contains("MPI ranks = 1") && line.contains("mpirun -n K+1"),
        "{line}"
    );
}

#[test]
fn bad_flags_end_every_rank_naming_the_flag() {
    for (args, flag) in [
        (&["--repetitions", "0"][..], "--repetitions"),
        (&["--min-bytes", "x"][..], "--min-bytes"),
        (&["--max-bytes", "16"][..], "--max-bytes"),
        (&["--max-bytes", "-5"][..], "--max-bytes"),
    ] {
        let out = probe(3, args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            common::stderr(&out)
        );
        let line = our_error(&out);
        assert!(line.starts_with(&format!("error: {flag} = ")), "{line}");
    }
}

#[test]
fn a_stopped_worker_is_named_within_the_timeout_and_the_job_ends() {
    // Worker 2 stops itself (SIGSTOP) before it says its host: rank 0 waits
    // for it at most --timeout-s, names it and ends the job.
    let _one = common::one_at_a_time();
    let started = std::time::Instant::now();
    let out = common::mpirun_command(4, &["probe", "--timeout-s", "2", "--max-bytes", "4096"])
        .env("GRADCODE_TEST_STOP_RANK", "2")
        .output()
        .expect("mpirun must be installed");
    let took = started.elapsed();
    let err = common::stderr(&out);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(
        err.lines().any(|l| l
            == "error: probe: no answer from worker 2 (its host name, at the start) within 2 s (--timeout-s): it is stopped, hung or gone; ending the job (MPI_Abort)"),
        "{err}"
    );
    assert!(
        took < std::time::Duration::from_secs(2 + 5 + 10),
        "took {took:?}"
    );
}
