//! `gradcode simulate` end to end: JSON keys, flags overriding the config,
//! determinism by seed, and bad input (flags, straggler keys, trace files)
//! → one line naming the field or file:line, status 2, nothing on stdout.

mod common;

use common::{assert_rejected, gradcode, json, stderr};
use std::path::PathBuf;

fn dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sim-cli");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(name: &str, text: &str) -> String {
    let path = dir().join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

const FIG3: &str = "workers = 12\nseed = 1\n[scheme]\nkind = \"gc-sc\"\nload = 2\nclusters = 4\n[straggler]\nmodel = \"gilbert-elliott\"\ninitial_stragglers = 6\n[simulate]\ntrials = 4\niterations = 50\ncompare = [\"gc\", \"gc-sc\"]\n";

#[test]
fn json_has_the_documented_keys() {
    let cfg = write("fig3.toml", FIG3);
    let v = json(&gradcode(&["simulate", "--config", &cfg, "--json"]));
    let schemes = v["schemes"].as_array().unwrap();
    assert_eq!(schemes.len(), 2);
    assert_eq!(schemes[0]["name"], "gc");
    assert_eq!(schemes[1]["name"], "gc-sc");
    for s in schemes {
        for key in [
            "mean_iteration_time",
            "ci95",
            "p50",
            "p99",
            "messages_per_iteration",
            "recovered_fraction",
            "improvement_percent",
            "improvement_ci95",
        ] {
            assert!(s[key].is_number(), "{key}: {s}");
        }
        assert!(s["p50"].as_f64() <= s["p99"].as_f64());
        assert_eq!(s["recovered_fraction"], 1.0);
    }
    assert!(v["lower_bound"]["mean_iteration_time"].is_number());
    assert_eq!(v["lower_bound"]["workers"], 8);
    assert_eq!(v["lower_bound"]["load"], 2);
    // Each scheme's own bound: gc (P = 1) waits for K - r + 1 = 11, gc-sc is the top-level one.
    assert_eq!(schemes[0]["lower_bound"]["workers"], 11);
    assert_eq!(schemes[1]["lower_bound"], v["lower_bound"]);
    assert_eq!(v["baseline"], "gc");
    assert_eq!(v["trials"], 4);
    assert_eq!(v["iterations"], 50);
    assert_eq!(v["workers"], 12);
    assert_eq!(v["straggler_model"], "gilbert-elliott");
    // The bound is below both schemes (it is below them in every iteration).
    let lb = v["lower_bound"]["mean_iteration_time"].as_f64().unwrap();
    for s in schemes {
        assert!(lb <= s["mean_iteration_time"].as_f64().unwrap());
    }
}

/// `simulate` runs every config `check` accepts: a scheme without a lower
/// bound (is-gc) on the demo's clusters is simulated, its bound null.
#[test]
fn a_config_check_accepts_is_simulated() {
    let set = [
        "--set",
        "scheme.kind=is-gc",
        "--set",
        "scheme.load=4",
        "--set",
        "scheme.wait_for=6",
    ];
    let check = gradcode(&[&["check"][..], &set].concat());
    assert!(check.status.success(), "{}", stderr(&check));
    let args = [
        &["simulate", "--json", "--trials", "2", "--iterations", "20"][..],
        &set,
    ]
    .concat();
    let v = json(&gradcode(&args));
    assert_eq!(v["schemes"][0]["name"], "is-gc");
    assert_eq!(v["schemes"][0]["messages_per_iteration"], 6.0);
    assert!(v["lower_bound"].is_null(), "{}", v["lower_bound"]);
    assert!(v["schemes"][0]["lower_bound"].is_null());
}

/// The simulator applies `scheme.deadline` as `train` does: an earlier
/// deadline ends iterations earlier with fewer messages.
#[test]
fn the_deadline_changes_what_is_simulated() {
    let run = |d: &str| {
        let v = json(&gradcode(&[
            "simulate",
            "--json",
            "--trials",
            "3",
            "--iterations",
            "50",
            "--set",
            "scheme.kind=is-gc",
            "--set",
            "scheme.load=2",
            "--set",
            &format!("scheme.deadline={d}"),
        ]));
        let s = &v["schemes"][0];
        (
            s["mean_iteration_time"].as_f64().unwrap(),
            s["messages_per_iteration"].as_f64().unwrap(),
            s["recovered_fraction"].as_f64().unwrap(),
        )
    };
    let (early, mid, late) = (run("0.01"), run("0.2"), run("1000"));
    // Before any arrival (alpha = 0.01 per computation, 2 computations): the first one alone.
    assert_eq!(early.1, 1.0);
    assert!((mid.0 - 0.2).abs() < 1e-9, "stops at the deadline: {mid:?}");
    assert!(
        early.1 < mid.1 && mid.1 < late.1,
        "{early:?} {mid:?} {late:?}"
    );
    assert!(early.2 < mid.2 && mid.2 < late.2);
    assert_eq!(late.1, 12.0, "a late deadline waits for all 12");
}

#[test]
fn flags_override_the_config_and_one_trial_has_no_interval() {
    let cfg = write("fig3-flags.toml", FIG3);
    let v = json(&gradcode(&[
        "simulate",
        "--config",
        &cfg,
        "--json",
        "--trials",
        "1",
        "--iterations",
        "7",
        "--seed",
        "9",
    ]));
    assert_eq!(v["trials"], 1);
    assert_eq!(v["iterations"], 7);
    assert_eq!(v["seed"], 9);
    assert!(v["schemes"][0]["ci95"].is_null(), "{}", v["schemes"][0]);
    assert!(
        v["schemes"][1]["improvement_ci95"].is_null(),
        "{}",
        v["schemes"][1]
    );
}

#[test]
fn same_seed_same_output_other_seed_other_output() {
    let cfg = write("fig3-seed.toml", FIG3);
    let run = |seed: &str, json: bool| {
        let mut args = vec!["simulate", "--config", &cfg, "--seed", seed];
        if json {
            args.push("--json");
        }
        let o = gradcode(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        o.stdout
    };
    assert_eq!(run("5", true), run("5", true));
    assert_eq!(run("5", false), run("5", false));
    assert_ne!(run("5", true), run("6", true));
}

#[test]
fn text_output_is_a_table_per_scheme() {
    let cfg = write("fig3-text.toml", FIG3);
    let o = gradcode(&["simulate", "--config", &cfg]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("gc ") || l.starts_with("gc-sc ") || l.starts_with("LB "))
        .collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert!(text.contains("vs gc"), "{text}");
}

#[test]
fn bad_simulate_input_exits_2_naming_the_field() {
    let fig3 = write("fig3-bad.toml", FIG3);
    let trace = write("bad-trace.csv", "w0,w1,w2\n1,2,3\n4,x,6\n");
    let trace_file = format!("straggler.trace_file=\"{trace}\"");
    let cases: Vec<(&str, String, Vec<&str>, &str)> = vec![
        (
            "trials-zero",
            fig3.clone(),
            vec!["--trials", "0"],
            "--trials",
        ),
        (
            "iterations-text",
            fig3.clone(),
            vec!["--iterations", "many"],
            "--iterations",
        ),
        (
            "baseline-not-compared",
            fig3.clone(),
            vec!["--set", "simulate.baseline=uncoded"],
            "simulate.baseline",
        ),
        (
            "compare-twice",
            fig3.clone(),
            vec!["--set", "simulate.compare=[\"gc\", \"gc\"]"],
            "simulate.compare",
        ),
        (
            "compare-unknown",
            fig3.clone(),
            vec!["--set", "simulate.compare=[\"gcc\"]"],
            "expected `gc` or one of",
        ),
        (
            "variant-unknown-key",
            fig3.clone(),
            vec![
                "--set",
                "simulate.compare=[{ name = \"x\", kind = \"gc-sc\", set = { clusterz = 2 } }]",
            ],
            "simulate.compare.x.set.clusterz: unknown key",
        ),
        (
            "variant-invalid-value",
            fig3.clone(),
            vec![
                "--set",
                "simulate.compare=[\"gc\", { name = \"x\", kind = \"gc-sc\", set = { clusters = 5 } }]",
            ],
            "simulate.compare.x: scheme.clusters = 5 does not divide workers = 12",
        ),
        (
            "variant-kind-in-set",
            fig3.clone(),
            vec![
                "--set",
                "simulate.compare=[{ name = \"x\", kind = \"gc-sc\", set = { kind = \"gc-frac\" } }]",
            ],
            "simulate.compare.x.set.kind",
        ),
        (
            "variant-bad-name",
            fig3.clone(),
            vec![
                "--set",
                "simulate.compare=[{ name = \"a/b\", kind = \"gc-sc\" }]",
            ],
            "simulate.compare",
        ),
        (
            "variant-name-clash",
            fig3.clone(),
            vec![
                "--set",
                "simulate.compare=[\"gc-sc\", { name = \"gc-sc\", kind = \"gc-sc\" }]",
            ],
            "lists gc-sc twice",
        ),
        (
            "model-none",
            fig3.clone(),
            vec!["--set", "straggler.model=none"],
            "straggler.model",
        ),
        (
            "mu-slow-above-fast",
            fig3.clone(),
            vec!["--set", "straggler.mu_slow=20"],
            "straggler.mu_slow",
        ),
        (
            "switch-probability",
            fig3.clone(),
            vec!["--set", "straggler.switch_probability=1.5"],
            "straggler.switch_probability",
        ),
        (
            "initial-stragglers",
            fig3.clone(),
            vec!["--set", "straggler.initial_stragglers=13"],
            "straggler.initial_stragglers",
        ),
        (
            "slow-factor",
            fig3.clone(),
            vec!["--set", "straggler.slow_factor=0.5"],
            "straggler.slow_factor",
        ),
        (
            "time-varying-threshold",
            fig3.clone(),
            vec![
                "--set",
                "straggler.model=time-varying",
                "--set",
                "straggler.rate_threshold=6",
            ],
            "straggler.rate_threshold",
        ),
        (
            "extra-delay-neither",
            fig3.clone(),
            vec!["--set", "straggler.model=extra-delay"],
            "straggler.delayed_workers",
        ),
        (
            "extra-delay-both",
            fig3.clone(),
            vec![
                "--set",
                "straggler.model=extra-delay",
                "--set",
                "straggler.delayed_workers=[1]",
                "--set",
                "straggler.delayed_count=2",
            ],
            "straggler.delayed_count",
        ),
        (
            "delayed-worker-range",
            fig3.clone(),
            vec!["--set", "straggler.delayed_workers=[0]"],
            "straggler.delayed_workers",
        ),
        (
            "delay-mean",
            fig3.clone(),
            vec!["--set", "straggler.delay_mean=0"],
            "straggler.delay_mean",
        ),
        (
            "trace-without-file",
            fig3.clone(),
            vec!["--set", "straggler.model=trace"],
            "straggler.trace_file",
        ),
        (
            "trace-columns-count",
            fig3.clone(),
            vec!["--set", "straggler.trace_columns=[1, 2]"],
            "straggler.trace_columns",
        ),
        (
            "trace-cell",
            fig3.clone(),
            vec![
                "--set",
                "workers=3",
                "--set",
                "scheme.clusters=1",
                "--set",
                "straggler.initial_stragglers=0",
                "--set",
                "straggler.model=trace",
                "--set",
                &trace_file,
            ],
            "bad-trace.csv:3: column 2 (w1) is `x`, not a number",
        ),
    ];
    for (name, cfg, extra, expected) in &cases {
        let mut args = vec!["simulate", "--config", cfg.as_str(), "--json"];
        args.extend(extra.iter().copied());
        assert_rejected(name, &gradcode(&args), expected);
    }
}

#[test]
fn unused_straggler_keys_are_warned_about() {
    let cfg = write("fig3-unused.toml", &format!("{FIG3}delay_mean = 2.0\n"));
    // `delay_mean` landed in [simulate]: an unknown key there.
    let o = gradcode(&["simulate", "--config", &cfg]);
    assert_rejected("misplaced", &o, "simulate.delay_mean");
    let o = gradcode(&[
        "check",
        "--config",
        &write("fig3-unused2.toml", FIG3),
        "--set",
        "straggler.delay_mean=2.0",
    ]);
    assert!(o.status.success());
    assert!(
        stderr(&o).contains(
            "straggler.delay_mean is set but not used by straggler.model = gilbert-elliott"
        ),
        "{}",
        stderr(&o)
    );
}

#[cfg(feature = "hdf5")]
#[test]
fn out_writes_a_trace_that_matches_the_report() {
    let cfg = write("fig3-out.toml", FIG3);
    let out = dir().join("fig3.h5");
    let _ = std::fs::remove_file(&out);
    let o = gradcode(&[
        "simulate",
        "--config",
        &cfg,
        "--json",
        "--out",
        out.to_str().unwrap(),
        "--set",
        "straggler.time_unit_ms=250",
    ]);
    let v = json(&o);
    for (i, name) in ["gc", "gc-sc"].iter().enumerate() {
        let mut sum = 0.0;
        let mut n = 0;
        for trial in 0..4 {
            let t =
                gradcode::trace::read_trace(&out, &format!("/sim/{name}/trial_{trial}")).unwrap();
            assert_eq!(t.records.len(), 50);
            for r in &t.records {
                sum += r.duration_s / 0.25; // back to model time
                n += 1;
            }
        }
        let mean = v["schemes"][i]["mean_iteration_time"].as_f64().unwrap();
        assert!((sum / n as f64 - mean).abs() < 1e-9 * mean, "{name}");
    }
    let toml = gradcode::trace::read_attr_string(&out, "/", "config_toml").unwrap();
    assert!(toml.contains("time_unit_ms = 250.0"), "{toml}");
    // An unwritable path is bad input, and nothing is printed (/proc is
    // unwritable even for root).
    let o = gradcode(&["simulate", "--config", &cfg, "--out", "/proc/gradcode/x.h5"]);
    assert_rejected("out-unwritable", &o, "--out");

    // An existing trace is kept without --force, and replaced with it.
    let before = std::fs::read(&out).unwrap();
    let o = gradcode(&["simulate", "--config", &cfg, "--out", out.to_str().unwrap()]);
    assert_rejected("out-exists", &o, "--out");
    assert!(stderr(&o).contains("exists; use --force to overwrite it"));
    assert_eq!(
        std::fs::read(&out).unwrap(),
        before,
        "the trace is untouched"
    );
    let o = gradcode(&[
        "simulate",
        "--config",
        &cfg,
        "--out",
        out.to_str().unwrap(),
        "--force",
        "--iterations",
        "7",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = gradcode::trace::read_trace(&out, "/sim/gc/trial_0").unwrap();
    assert_eq!(t.records.len(), 7, "--force replaced the trace");
}

#[cfg(not(feature = "hdf5"))]
#[test]
fn out_needs_hdf5() {
    let cfg = write("fig3-nohdf5.toml", FIG3);
    let o = gradcode(&["simulate", "--config", &cfg, "--out", "x.h5"]);
    assert_rejected("no-hdf5", &o, "--out");
    assert!(stderr(&o).contains("HDF5"));
}

#[test]
fn a_variant_is_the_scheme_with_its_keys_changed() {
    let cfg = write("fig3-variant.toml", FIG3);
    let variant = gradcode(&[
        "simulate",
        "--config",
        &cfg,
        "--json",
        "--set",
        "simulate.compare=[\"gc-sc\", { name = \"gc-sc-p2\", kind = \"gc-sc\", set = { clusters = 2 } }]",
        "--set",
        "simulate.baseline=gc-sc-p2",
    ]);
    let v = json(&variant);
    assert_eq!(v["baseline"], "gc-sc-p2");
    assert_eq!(v["schemes"][1]["name"], "gc-sc-p2");
    assert_eq!(v["schemes"][1]["improvement_percent"], 0.0);
    // The same scheme configured directly: same code (same seed), same delays.
    let direct = json(&gradcode(&[
        "simulate",
        "--config",
        &cfg,
        "--json",
        "--set",
        "scheme.clusters=2",
        "--set",
        "simulate.compare=[\"gc-sc\"]",
    ]));
    assert_eq!(
        v["schemes"][1]["mean_iteration_time"],
        direct["schemes"][0]["mean_iteration_time"]
    );
    assert_eq!(v["schemes"][1]["p99"], direct["schemes"][0]["p99"]);
    assert_ne!(
        v["schemes"][0]["mean_iteration_time"],
        v["schemes"][1]["mean_iteration_time"]
    );
}

#[test]
fn check_reads_the_trace_file_train_would_replay() {
    fn args(v: &[String]) -> Vec<&str> {
        v.iter().map(String::as_str).collect()
    }
    let fig3 = write("fig3-check-trace.toml", FIG3);
    let bad = write("check-bad-trace.csv", "w0,w1,w2\n1,2,3\n4,x,6\n");
    let replay = |file: &str| {
        vec![
            "check".to_string(),
            "--config".to_string(),
            fig3.clone(),
            "--set".to_string(),
            "workers=3".to_string(),
            "--set".to_string(),
            "scheme.clusters=1".to_string(),
            "--set".to_string(),
            "straggler.initial_stragglers=0".to_string(),
            "--set".to_string(),
            "straggler.model=trace".to_string(),
            "--set".to_string(),
            format!("straggler.trace_file=\"{file}\""),
        ]
    };
    let missing = replay(&dir().join("no-such-trace.csv").display().to_string());
    assert_rejected(
        "missing trace",
        &gradcode(&args(&missing)),
        "straggler.trace_file",
    );
    assert_rejected(
        "bad trace cell",
        &gradcode(&args(&replay(&bad))),
        "check-bad-trace.csv:3: column 2 (w1) is `x`, not a number",
    );

    // Column 1: durations in no order; 2: their running sum (time stamps);
    // 3: durations on top of seconds since boot.
    let durations = [1.2, 0.9, 3.5, 1.1, 1.0, 0.95, 7.2, 1.3, 1.05, 0.99];
    let mut text = String::from("w0,w1,w2\n");
    let mut clock = 0.0;
    for d in durations {
        clock += d;
        text.push_str(&format!("{d},{clock},{}\n", 6e5 + d));
    }
    let clocks = write("check-clock-trace.csv", &text);
    let mut json_args = replay(&clocks);
    json_args.push("--json".to_string());
    let out = gradcode(&args(&json_args));
    let v = json(&out);
    let t = &v["straggler_trace"];
    assert_eq!(t["rows"], 10);
    assert_eq!(t["columns"], 3);
    assert_eq!(t["replayed"], serde_json::json!([1, 2, 3]));
    assert_eq!(t["clock_like"], serde_json::json!([2, 3]));
    assert_eq!(t["min"], 0.9);
    assert_eq!(t["max"], 6e5 + 7.2);
    let warned = stderr(&out);
    assert!(
        warned.contains("check-clock-trace.csv: columns 2, 3 look like clock readings"),
        "{warned}"
    );
    assert!(
        v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("look like clock readings")),
        "{v}"
    );

    // The text report names the file, its rows and the replayed values' spread.
    let text_out = gradcode(&args(&replay(&clocks)));
    let printed = String::from_utf8_lossy(&text_out.stdout);
    assert!(
        printed.contains("check-clock-trace.csv: 10 rows x 3 columns, replaying columns 1-3"),
        "{printed}"
    );
}

/// The AWS Lambda traces shipped in data/ are durations: none of their
/// columns looks like clock readings.
#[test]
fn the_shipped_traces_hold_durations() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/traces/aws-lambda");
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "csv") {
            continue;
        }
        let table = gradcode::straggler::TraceTable::load(&path).unwrap();
        let all: Vec<usize> = (0..table.columns()).collect();
        let summary = table.summary(&all);
        assert!(
            summary.clock_like.is_empty(),
            "{}: columns {:?}",
            path.display(),
            summary.clock_like
        );
        files += 1;
    }
    assert!(files >= 40, "{files} trace files in {}", dir.display());
}

/// Trial k replays rows k·iterations onward: with trials × iterations = rows
/// every row is replayed exactly once; more rounds than rows are reported.
#[test]
fn replay_trials_read_disjoint_rows_and_reuse_is_reported() {
    // Row r holds r + 1 for every worker: an uncoded iteration of row r takes r + 1.
    let mut text = String::from("w0,w1,w2\n");
    for r in 0..10 {
        let v = (r + 1) as f64;
        text.push_str(&format!("{v},{v},{v}\n"));
    }
    let csv = write("rows.csv", &text);
    let base = [
        "simulate",
        "--json",
        "--set",
        "workers=3",
        "--set",
        "scheme.kind=\"uncoded\"",
        "--set",
        "straggler.model=trace",
        "--set",
        "straggler.initial_stragglers=0",
    ];
    let file = format!("straggler.trace_file=\"{csv}\"");
    let run = |trials: &str, iterations: &str| {
        let mut args = base.to_vec();
        args.extend([
            "--set",
            &file,
            "--trials",
            trials,
            "--iterations",
            iterations,
        ]);
        gradcode(&args)
    };
    let out = run("5", "2");
    let v = json(&out);
    let mean = v["schemes"][0]["mean_iteration_time"].as_f64().unwrap();
    assert!(
        (mean - 5.5).abs() < 1e-12,
        "every row once: mean of 1..10 is 5.5, not {mean}"
    );
    assert_eq!(v["replay"]["independent_rows"], 10);
    assert_eq!(v["replay"]["rows_reused"], false);
    assert!(
        !stderr(&out).contains("note: trace replay"),
        "{}",
        stderr(&out)
    );

    let out = run("5", "4");
    let v = json(&out);
    assert_eq!(v["replay"]["rounds"], 20);
    assert_eq!(v["replay"]["independent_rows"], 10);
    assert_eq!(v["replay"]["rows_reused"], true);
    let note = stderr(&out);
    assert!(
        note.contains("20 rounds replay the 10 rows")
            && note.contains("only 10 rounds are independent"),
        "{note}"
    );
}

/// A trace that cannot be written (the file-size limit of `ulimit -f`
/// standing in for a full disk: the same `write` failure inside libhdf5, whose
/// message carries a `ctime` date and its newline): one error line, the
/// cause said once, exit 1.
#[cfg(feature = "hdf5")]
#[test]
fn a_failed_trace_write_is_one_line_said_once() {
    let cfg = write("fig3-full.toml", FIG3);
    let out = dir().join("full.h5");
    let _ = std::fs::remove_file(&out);
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 40; exec \"$0\" simulate --config \"$1\" --trials 3 --iterations 400 --out \"$2\"")
        .arg(env!("CARGO_BIN_EXE_gradcode"))
        .arg(&cfg)
        .arg(&out)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: "), "{err}");
    assert_eq!(err.matches("File too large").count(), 1, "{err}");
    assert_eq!(err.matches("file write failed").count(), 1, "{err}");
}

/// Sizes beyond what a simulation may hold are refused before any work
/// (issue 27: `--iterations 100000000` grew 12 MB/s until it aborted): the
/// kept iteration times of every trial, iteration, scheme and bound are
/// counted against 1 GiB; the same run at a hundredth of the length runs.
#[test]
fn a_simulation_too_large_to_hold_is_refused_up_front() {
    let o = gradcode(&["simulate", "--trials", "1", "--iterations", "100000000"]);
    assert_rejected("10^8 iterations", &o, "simulate.iterations");
    assert!(stderr(&o).contains("more than the 1 GiB"), "{}", stderr(&o));
    let o = gradcode(&["simulate", "--trials", "3000", "--iterations", "100000"]);
    assert_rejected("3000 x 10^5", &o, "simulate.iterations");
    let o = gradcode(&[
        "simulate",
        "--trials",
        "1",
        "--iterations",
        "20000",
        "--json",
    ]);
    assert_eq!(json(&o)["iterations"], 20000);
}
