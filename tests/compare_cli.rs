//! `gradcode compare` on real traces (training runs under mpirun, a
//! simulation): its speedups and times to a target equal those computed
//! here by hand from the traces' columns, read with the hdf5 crate alone;
//! repeated seeds are grouped and paired; bad input exits 2 naming the
//! file or flag, with nothing written.
#![cfg(all(feature = "mpi", feature = "hdf5"))]

mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

const DIR: &str = "compare-cli";

/// A small run of `kind` with `seed`: 4 workers, emulated stragglers.
fn config(kind: &str, seed: u64) -> String {
    let scheme = match kind {
        "uncoded" => "kind = \"uncoded\"".to_string(),
        other => format!("kind = \"{other}\"\nload = 2\nclusters = 2"),
    };
    format!(
        "workers = 4\nseed = {seed}\n[scheme]\n{scheme}\n\
         [straggler]\nmodel = \"shifted-exponential\"\nalpha = 0.01\nmu = 10.0\ntime_unit_ms = 5.0\n\
         [data]\ntrain_samples = 200\ntest_samples = 40\nfeatures = 20\n\
         [train]\niterations = 15\nlearning_rate = 0.1\n"
    )
}

/// The four training traces (uncoded and gc-sc, seeds 1 and 2), trained
/// once for every test of this file, with each run's wall time.
fn traces() -> &'static [(String, u64, PathBuf, f64)] {
    static TRACES: OnceLock<Vec<(String, u64, PathBuf, f64)>> = OnceLock::new();
    TRACES.get_or_init(|| {
        let mut out = Vec::new();
        for kind in ["uncoded", "gc-sc"] {
            for seed in [1, 2] {
                let name = format!("{kind}-{seed}");
                let (mut cmd, trace) =
                    common::train_command(DIR, &name, 5, &config(kind, seed), &[]);
                let _one = common::one_at_a_time();
                let start = std::time::Instant::now();
                let o = cmd.output().unwrap();
                let wall = start.elapsed().as_secs_f64();
                assert!(o.status.success(), "{name}: {}", common::stderr(&o));
                out.push((kind.to_string(), seed, trace, wall));
            }
        }
        out
    })
}

fn trace(kind: &str, seed: u64) -> &'static Path {
    &traces()
        .iter()
        .find(|t| t.0 == kind && t.1 == seed)
        .unwrap()
        .2
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A column of `/iteration/` (or of a simulation trial's `group`), read with the hdf5 crate.
fn column(path: &Path, group: &str, name: &str) -> Vec<f64> {
    common::h5(path, common::H5::Read)
        .unwrap()
        .dataset(&format!("{group}iteration/{name}"))
        .unwrap()
        .read_raw::<f64>()
        .unwrap()
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs().max(1e-300)
}

/// The first iteration (0-based) whose train loss is at most `target`.
fn hit(path: &Path, target: f64) -> usize {
    column(path, "", "train_loss")
        .iter()
        .position(|&x| x.is_finite() && x <= target)
        .expect("the target is reached")
}

/// The paired speedup by hand: the geometric mean of the ratios and its
/// 95% Student t interval on the logs (t quantiles from a table).
fn paired(baseline: &[f64], this: &[f64]) -> (f64, f64, f64) {
    let logs: Vec<f64> = baseline
        .iter()
        .zip(this)
        .map(|(b, a)| (b / a).ln())
        .collect();
    let n = logs.len();
    let m = mean(&logs);
    let sd = (logs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
    let t = match n - 1 {
        1 => 12.706_204_736_174_707,
        2 => 4.302_652_729_749_464,
        df => panic!("no table value for {df} degrees of freedom"),
    };
    let half = t * sd / (n as f64).sqrt();
    (m.exp(), (m - half).exp(), (m + half).exp())
}

fn compare(args: &[&str]) -> Value {
    common::json(&common::gradcode(&[&["compare", "--json"], args].concat()))
}

#[test]
fn the_elapsed_time_of_a_training_trace_is_the_masters_wall_clock() {
    for (kind, seed, path, wall) in traces() {
        let elapsed = column(path, "", "elapsed_s");
        let durations = column(path, "", "duration_s");
        assert_eq!(elapsed.len(), 15, "{kind} {seed}");
        assert!(elapsed.windows(2).all(|w| w[0] < w[1]), "{elapsed:?}");
        // Each iteration's time is within the elapsed time, which the
        // mpirun job's wall time bounds.
        let mut sum = 0.0;
        for (e, d) in elapsed.iter().zip(&durations) {
            sum += d;
            assert!(
                *e >= sum,
                "{kind} {seed}: elapsed {e} < the iterations' {sum}"
            );
        }
        assert!(
            elapsed[14] < *wall,
            "{kind} {seed}: {} >= {wall}",
            elapsed[14]
        );
    }
}

#[test]
fn compare_reproduces_a_speedup_and_a_time_to_target_computed_by_hand() {
    let (u, g) = (trace("uncoded", 1), trace("gc-sc", 1));
    let (du, dg) = (column(u, "", "duration_s"), column(g, "", "duration_s"));
    let least = |p: &Path| {
        column(p, "", "train_loss")
            .into_iter()
            .filter(|x| x.is_finite())
            .fold(f64::INFINITY, f64::min)
    };
    // A loss both runs reach.
    let target = least(u).max(least(g));
    let (hu, hg) = (hit(u, target), hit(g, target));
    let (eu, eg) = (
        column(u, "", "elapsed_s")[hu],
        column(g, "", "elapsed_s")[hg],
    );
    // gc-sc given first: the baseline is still the uncoded run.
    let out = common::scratch(DIR, "two.csv");
    let _ = std::fs::remove_file(&out);
    let target_arg = format!("{target:e}");
    let v = compare(&[s(g), s(u), "--target-loss", &target_arg, "--csv", s(&out)]);
    assert_eq!(v["baseline"], "uncoded");
    assert_eq!(v["unit"], "s");
    assert_eq!(v["time_basis"], "elapsed");
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let (rg, ru) = (&rows[0], &rows[1]);
    assert_eq!(
        (&rg["label"], &ru["label"]),
        (&Value::from("gc-sc"), &Value::from("uncoded"))
    );
    assert_eq!(
        (&rg["baseline"], &ru["baseline"]),
        (&Value::Bool(false), &Value::Bool(true))
    );
    // The mean iteration times and their ratio.
    assert!(close(f(&rg["mean_s"]), mean(&dg), 1e-12));
    assert!(close(f(&ru["mean_s"]), mean(&du), 1e-12));
    let speedup = mean(&du) / mean(&dg);
    assert!(
        close(f(&rg["speedup"]["value"]), speedup, 1e-12),
        "{} vs {speedup}",
        rg["speedup"]
    );
    assert_eq!(rg["speedup"]["method"], "ratio");
    assert!(close(f(&ru["speedup"]["value"]), 1.0, 1e-15));
    // The elapsed time, the time and iterations to the target, its speedup.
    assert!(close(
        f(&rg["elapsed_s"]),
        column(g, "", "elapsed_s")[14],
        1e-15
    ));
    let tg = &rg["target_loss"];
    assert_eq!(
        (&tg["reached"], f(&tg["iterations"])),
        (&Value::from(1), (hg + 1) as f64)
    );
    assert!(close(f(&tg["time_s"]), eg, 1e-15));
    assert!(close(f(&ru["target_loss"]["time_s"]), eu, 1e-15));
    assert!(close(f(&tg["speedup"]["value"]), eu / eg, 1e-12), "{tg}");
    // The CSV holds the same numbers, exactly.
    let csv = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    let col = |name: &str| lines[0].iter().position(|c| *c == name).unwrap();
    assert_eq!(lines.len(), 3, "{csv}");
    assert_eq!(lines[1][col("label")], "gc-sc");
    assert_eq!(
        lines[1][col("speedup")].parse::<f64>().unwrap(),
        f(&rg["speedup"]["value"])
    );
    assert_eq!(
        lines[1][col("loss_time_s")].parse::<f64>().unwrap(),
        f(&tg["time_s"])
    );
    assert_eq!(lines[2][col("baseline")], "true");
    // The text states its units and the same speedup.
    let o = common::gradcode(&["compare", s(u), s(g)]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let text = common::stdout(&o);
    assert!(text.contains("times in seconds"), "{text}");
    assert!(
        text.contains("mean (s)") && text.contains("elapsed (s)"),
        "{text}"
    );
    let line = text.lines().find(|l| l.starts_with("gc-sc ")).unwrap();
    let shown: f64 = line.split_whitespace().last().unwrap().parse().unwrap();
    assert!(close(shown, speedup, 5e-4), "{line} vs {speedup}");
    // --baseline: the gc-sc trace; the uncoded run's speedup is the inverse.
    let v = compare(&[s(u), s(g), "--baseline", s(g)]);
    assert_eq!(v["baseline"], "gc-sc");
    assert!(close(
        f(&v["rows"][0]["speedup"]["value"]),
        1.0 / speedup,
        1e-12
    ));
    // One trace alone is its own baseline.
    let v = compare(&[s(g)]);
    assert_eq!(v["rows"][0]["speedup"]["value"], 1.0);
}

#[test]
fn repeated_seeds_are_grouped_and_paired_by_seed() {
    let files: Vec<&str> = ["gc-sc", "uncoded"]
        .iter()
        .flat_map(|k| [2, 1].map(|seed| s(trace(k, seed))))
        .collect();
    let target = ["uncoded", "gc-sc"]
        .iter()
        .flat_map(|k| [1, 2].map(|seed| trace(k, seed)))
        .map(|p| {
            column(p, "", "train_loss")
                .into_iter()
                .filter(|x| x.is_finite())
                .fold(f64::INFINITY, f64::min)
        })
        .fold(f64::NEG_INFINITY, f64::max);
    let target_arg = format!("{target:e}");
    let v = compare(&[&files[..], &["--target-loss", &target_arg]].concat());
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{v}");
    let (g, u) = (&rows[0], &rows[1]);
    assert_eq!(
        (&g["label"], &u["label"]),
        (&Value::from("gc-sc"), &Value::from("uncoded"))
    );
    let seeds = |row: &Value| -> Vec<u64> {
        row["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["seed"].as_u64().unwrap())
            .collect()
    };
    assert_eq!((seeds(g), seeds(u)), (vec![2, 1], vec![2, 1]));
    // The row's iteration times pool both runs'.
    let all: Vec<f64> = [1, 2]
        .iter()
        .flat_map(|&seed| column(trace("gc-sc", seed), "", "duration_s"))
        .collect();
    assert!(close(f(&g["mean_s"]), mean(&all), 1e-12));
    assert_eq!(f(&g["iterations"]), 15.0);
    // Paired by seed: seed 1 with seed 1, 2 with 2.
    let means = |k: &str| -> Vec<f64> {
        [1, 2]
            .iter()
            .map(|&seed| mean(&column(trace(k, seed), "", "duration_s")))
            .collect()
    };
    let (value, lo, hi) = paired(&means("uncoded"), &means("gc-sc"));
    let sp = &g["speedup"];
    assert_eq!(sp["method"], "paired geometric mean");
    assert!(close(f(&sp["value"]), value, 1e-12), "{sp} vs {value}");
    assert!(
        close(f(&sp["ci95"][0]), lo, 1e-9) && close(f(&sp["ci95"][1]), hi, 1e-9),
        "{sp}: {lo} {hi}"
    );
    // The time to the target: each run's elapsed time at its first loss ≤ target.
    let times = |k: &str| -> Vec<f64> {
        [1, 2]
            .iter()
            .map(|&seed| {
                let p = trace(k, seed);
                column(p, "", "elapsed_s")[hit(p, target)]
            })
            .collect()
    };
    let t = &g["target_loss"];
    assert_eq!(t["reached"], 2);
    assert!(close(f(&t["time_s"]), mean(&times("gc-sc")), 1e-12));
    let (value, lo, hi) = paired(&times("uncoded"), &times("gc-sc"));
    assert!(close(f(&t["speedup"]["value"]), value, 1e-12), "{t}");
    assert!(
        close(f(&t["speedup"]["ci95"][0]), lo, 1e-9)
            && close(f(&t["speedup"]["ci95"][1]), hi, 1e-9)
    );
    // Against one uncoded run (seed 1 only): the ratio of the row means, no interval.
    let v = compare(&[files[0], files[1], s(trace("uncoded", 1))]);
    let sp = &v["rows"][0]["speedup"];
    assert_eq!(
        (&sp["method"], &sp["ci95"]),
        (&Value::from("ratio of means"), &Value::Null)
    );
    let want = means("uncoded")[0] / mean(&means("gc-sc"));
    assert!(close(f(&sp["value"]), want, 1e-12), "{sp} vs {want}");
}

#[test]
fn a_trace_without_elapsed_times_says_so_and_times_targets_by_iteration_time() {
    let old = common::scratch(DIR, "old.h5");
    std::fs::copy(trace("uncoded", 1), &old).unwrap();
    common::h5(&old, common::H5::Write)
        .unwrap()
        .unlink("iteration/elapsed_s")
        .unwrap();
    let g = trace("gc-sc", 1);
    let target = column(&old, "", "train_loss")[7];
    let target_arg = format!("{target:e}");
    let v = compare(&[s(&old), s(g), "--target-loss", &target_arg]);
    assert_eq!(v["time_basis"], "iteration time");
    assert!(
        v["time_basis_reason"]
            .as_str()
            .unwrap()
            .contains("old.h5 does not record /iteration/elapsed_s")
    );
    assert!(v["rows"][0]["elapsed_s"].is_null());
    let sum_to = |p: &Path| -> f64 { column(p, "", "duration_s")[..=hit(p, target)].iter().sum() };
    let (tu, tg) = (sum_to(&old), sum_to(g));
    assert!(close(f(&v["rows"][0]["target_loss"]["time_s"]), tu, 1e-12));
    assert!(close(
        f(&v["rows"][1]["target_loss"]["speedup"]["value"]),
        tu / tg,
        1e-12
    ));
    let o = common::gradcode(&["compare", s(&old), s(g), "--target-loss", &target_arg]);
    let text = common::stdout(&o);
    assert!(text.contains("elapsed not recorded"), "{text}");
    assert!(
        text.contains("times to targets are iteration times"),
        "{text}"
    );
    // inspect says it too, and derives nothing.
    let text = common::stdout(&common::gradcode(&["inspect", s(&old)]));
    assert!(
        text.contains("of iteration time, elapsed not recorded)"),
        "{text}"
    );
}

#[test]
fn a_simulation_gives_a_row_per_scheme_paired_by_trial() {
    let cfg = common::scratch(DIR, "sim.toml");
    std::fs::write(
        &cfg,
        "workers = 8\nseed = 3\n[scheme]\nkind = \"gc-sc\"\nload = 2\nclusters = 4\n\
         [straggler]\nmodel = \"gilbert-elliott\"\nalpha = 0.01\nmu_fast = 10.0\nmu_slow = 0.1\n\
         switch_probability = 0.05\ninitial_stragglers = 3\ntime_unit_ms = 10\n\
         [simulate]\ntrials = 3\niterations = 40\ncompare = [\"gc-sc\", \"uncoded\", \"gc-dc\", \
         { name = \"frc\", kind = \"agc-frc\", set = { wait_for = 5 } }]\n",
    )
    .unwrap();
    let sim = common::scratch(DIR, "sim.h5");
    let o = common::gradcode(&["simulate", "--config", s(&cfg), "--out", s(&sim), "--force"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let v = compare(&[s(&sim)]);
    assert_eq!(v["kind"], "simulation");
    assert_eq!(v["baseline"], "uncoded");
    let labels: Vec<&str> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["gc-sc", "uncoded", "gc-dc", "frc"]);
    // The decode error beside the time: the mean over every iteration of
    // every trial, 0 for the exact schemes.
    for (i, name) in [(0, "gc-sc"), (3, "frc")] {
        let all: Vec<f64> = (0..3)
            .flat_map(|k| column(&sim, &format!("sim/{name}/trial_{k}/"), "decode_error"))
            .collect();
        let got = f(&v["rows"][i]["mean_decode_error"]);
        assert!(
            (got - mean(&all)).abs() <= 1e-12,
            "{name}: {got} vs {}",
            mean(&all)
        );
        assert_eq!(got > 0.01, name == "frc", "{name}: {got}");
    }
    let means = |name: &str| -> Vec<f64> {
        (0..3)
            .map(|k| {
                mean(&column(
                    &sim,
                    &format!("sim/{name}/trial_{k}/"),
                    "duration_s",
                ))
            })
            .collect()
    };
    for (i, name) in [(0, "gc-sc"), (2, "gc-dc")] {
        let row = &v["rows"][i];
        assert_eq!(row["runs"].as_array().unwrap().len(), 3);
        let (value, lo, hi) = paired(&means("uncoded"), &means(name));
        let sp = &row["speedup"];
        assert!(
            close(f(&sp["value"]), value, 1e-12),
            "{name}: {sp} vs {value}"
        );
        assert!(
            close(f(&sp["ci95"][0]), lo, 1e-9) && close(f(&sp["ci95"][1]), hi, 1e-9),
            "{name}"
        );
        // A trial's elapsed time is the sum of its iteration times.
        let last: Vec<f64> = (0..3)
            .map(|k| {
                column(&sim, &format!("sim/{name}/trial_{k}/"), "duration_s")
                    .iter()
                    .sum()
            })
            .collect();
        assert!(close(f(&row["elapsed_s"]), mean(&last), 1e-12));
    }
    let text = common::stdout(&common::gradcode(&["compare", s(&sim)]));
    assert!(text.contains("times in seconds of model time"), "{text}");
    assert!(text.contains("decode err"), "{text}");
}

#[test]
fn bad_input_exits_2_naming_the_file_or_flag_and_writes_nothing() {
    let u = s(trace("uncoded", 1));
    let not_trace = common::scratch(DIR, "not-a-trace.toml");
    std::fs::write(&not_trace, config("uncoded", 1)).unwrap();
    let empty_h5 = common::scratch(DIR, "empty.h5");
    let _ = std::fs::remove_file(&empty_h5);
    drop(common::h5(&empty_h5, common::H5::Create).unwrap());
    let missing = common::scratch(DIR, "missing.h5");
    let _ = std::fs::remove_file(&missing);
    let cfg = common::scratch(DIR, "sim-bad.toml");
    std::fs::write(
        &cfg,
        "workers = 4\n[simulate]\ntrials = 1\niterations = 3\n",
    )
    .unwrap();
    let sim = common::scratch(DIR, "sim-bad.h5");
    let o = common::gradcode(&["simulate", "--config", s(&cfg), "--out", s(&sim), "--force"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let existing = common::scratch(DIR, "existing.csv");
    std::fs::write(&existing, "keep me\n").unwrap();
    let fresh = common::scratch(DIR, "fresh.csv");
    let _ = std::fs::remove_file(&fresh);
    let nowhere = common::scratch(DIR, "no-such-folder/out.csv");
    // One run under two names: counted once is the rule, so refused.
    let hard_link = common::scratch(DIR, "hard-link.h5");
    let _ = std::fs::remove_file(&hard_link);
    std::fs::hard_link(u, &hard_link).unwrap();
    let sym_link = common::scratch(DIR, "sym-link.h5");
    let _ = std::fs::remove_file(&sym_link);
    std::os::unix::fs::symlink(u, &sym_link).unwrap();
    let cases: Vec<(&str, Vec<&str>, &str)> = vec![
        ("missing file", vec![u, s(&missing)], s(&missing)),
        ("not HDF5", vec![s(&not_trace), u], s(&not_trace)),
        ("HDF5, not a trace", vec![u, s(&empty_h5)], s(&empty_h5)),
        ("given twice", vec![u, u], u),
        (
            "a hard link to a trace given",
            vec![u, s(&hard_link)],
            s(&hard_link),
        ),
        (
            "a symbolic link to a trace given",
            vec![u, s(&sym_link)],
            s(&sym_link),
        ),
        ("training and simulation", vec![u, s(&sim)], s(&sim)),
        (
            "target loss of a simulation",
            vec![s(&sim), "--target-loss", "0.5"],
            "--target-loss",
        ),
        (
            "target loss not finite",
            vec![u, "--target-loss", "inf"],
            "--target-loss",
        ),
        (
            "accuracy above 1",
            vec![u, "--target-accuracy", "1.5"],
            "--target-accuracy",
        ),
        (
            "unknown baseline",
            vec![u, "--baseline", "gc-dc"],
            "--baseline",
        ),
        ("existing csv", vec![u, "--csv", s(&existing)], "--csv"),
        ("csv in no folder", vec![u, "--csv", s(&nowhere)], "--csv"),
        (
            "csv of a bad trace",
            vec![u, s(&missing), "--csv", s(&fresh)],
            s(&missing),
        ),
        ("csv onto a trace", vec![u, "--csv", u, "--force"], "--csv"),
    ];
    for (name, args, field) in cases {
        let o = common::gradcode(&[&["compare"], &args[..]].concat());
        common::assert_rejected(name, &o, field);
    }
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "keep me\n");
    assert!(
        !fresh.exists(),
        "nothing written before every trace is read"
    );
    assert!(!nowhere.parent().unwrap().exists());
    // --force replaces an existing CSV.
    let o = common::gradcode(&["compare", u, "--csv", s(&existing), "--force"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(
        std::fs::read_to_string(&existing)
            .unwrap()
            .starts_with("label,scheme,")
    );
}

#[test]
fn a_target_accuracy_of_a_regression_is_not_recorded_not_missed() {
    // Linear regression records no accuracy: "not recorded", not "0/1 reached".
    let u = s(trace("uncoded", 1));
    let o = common::gradcode(&[
        "compare",
        u,
        s(trace("gc-sc", 1)),
        "--target-accuracy",
        "0.5",
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let text = common::stdout(&o);
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("target test accuracy"))
        .skip(2)
        .take(2)
        .collect();
    assert_eq!(rows.len(), 2, "{text}");
    for row in rows {
        assert!(row.contains(" not recorded "), "{row}\n{text}");
    }
    let v = compare(&[u, "--target-accuracy", "0.5"]);
    let row = &v["rows"][0]["target_accuracy"];
    assert_eq!(row["recorded"], 0, "{row}");
    assert_eq!(row["reached"], 0, "{row}");
}
