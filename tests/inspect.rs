//! `gradcode inspect`: text and JSON summaries of training traces (written
//! here through `TraceWriter`) and of simulation traces (`simulate --out`),
//! checked against the records read back independently; missing optional
//! datasets and datasets outside the schema; bad files → one line naming the
//! file, status 2, nothing on stdout.

mod common;

use common::{gradcode, stderr, stdout};
use std::path::{Path, PathBuf};
use std::process::Output;

fn dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("inspect");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Exit 2, one stderr line naming `file` and containing `rule`, nothing on stdout.
fn assert_rejected(o: &Output, file: &Path, rule: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "status {:?}: {err}", o.status);
    assert_eq!(err.lines().count(), 1, "not one line: {err}");
    assert!(
        err.starts_with(&format!("error: {}: ", file.display())),
        "does not name {}: {err}",
        file.display()
    );
    assert!(err.contains(rule), "does not say `{rule}`: {err}");
    assert!(o.stdout.is_empty(), "wrote to stdout: {}", stdout(o));
}

#[cfg(not(feature = "hdf5"))]
#[test]
fn inspect_needs_hdf5() {
    let file = dir().join("any.h5");
    let o = gradcode(&["inspect", file.to_str().unwrap()]);
    assert_rejected(&o, &file, "HDF5 support");
}

#[cfg(feature = "hdf5")]
#[path = "fuzz_support/hostile.rs"]
mod hostile;

#[cfg(feature = "hdf5")]
mod with_hdf5 {
    use super::common::assert_rejected as assert_flag_rejected;
    use super::hostile::{EVERY_ROW, HOSTILE_ROWS, hostile_trace};
    use super::*;
    use gradcode::trace::{IterationRecord, TimingEvent, TraceMeta, TraceWriter, read_trace};
    use serde_json::Value;

    const K: usize = 6;
    const ITERATIONS: usize = 40;

    /// One test at a time: a child process inherits the HDF5 files another
    /// test thread has open, and with them HDF5's lock on the file.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn serial() -> std::sync::MutexGuard<'static, ()> {
        SERIAL.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn json(o: &Output) -> Value {
        assert!(o.status.success(), "failed: {}", stderr(o));
        serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(o)))
    }

    /// Iteration i of a synthetic gc-dc run: K = 6 in P = 2 clusters of 3,
    /// re-formed every 10 iterations, iteration 7 unclustered; workers
    /// straggle in a fixed pattern; train loss every iteration, test every 5th.
    fn record(i: usize) -> IterationRecord {
        let mut r = IterationRecord::new(K);
        r.duration_s = 0.01 * (1 + i % 7) as f64;
        r.decode_s = 1e-4 * (1 + i % 3) as f64;
        r.recovered_fraction = if i % 8 == 3 { 0.5 } else { 1.0 };
        r.messages_received = 5 + (i % 2) as u64;
        r.messages_used = 4;
        r.stale_dropped = u64::from(i % 9 == 0);
        r.train_loss = 1.0 / (1 + i) as f64;
        r.test_loss = if i % 5 == 4 {
            2.0 / (1 + i) as f64
        } else {
            f64::NAN
        };
        for w in 0..K {
            r.straggling[w] = (w * 7 + i * 3) % 5 < 2;
            r.cluster[w] = if i == 7 {
                -1
            } else {
                ((w + i / 10) % 2) as i64 + 1
            };
            r.finish_s[w] = if r.straggling[w] {
                f64::NAN
            } else {
                0.001 * w as f64
            };
            r.used[w] = !r.straggling[w] && w % 2 == 0;
            r.overrun_s[w] = if (i + w) % 16 == 0 { 0.002 } else { 0.0 };
        }
        r
    }

    fn records() -> Vec<IterationRecord> {
        (0..ITERATIONS).map(record).collect()
    }

    fn write_run(name: &str) -> PathBuf {
        let path = dir().join(name);
        let meta = TraceMeta {
            scheme: "gc-dc".into(),
            workers: K,
            config_toml: "workers = 6\n[scheme]\nkind = \"gc-dc\"\n".into(),
            seed: 7,
        };
        let mut w = TraceWriter::create(&path, &meta).unwrap();
        for r in records() {
            w.append(&r).unwrap();
        }
        w.write_theta(ITERATIONS as u64, &[3.0, 4.0]).unwrap();
        w.write_timing(&[
            TimingEvent {
                event: "decode".into(),
                total_s: 0.5,
                count: ITERATIONS as u64,
            },
            TimingEvent {
                event: "wait".into(),
                total_s: 1.25,
                count: 0,
            },
        ])
        .unwrap();
        w.close().unwrap();
        path
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0)
    }

    fn f(v: &Value) -> f64 {
        v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
    }

    /// The series by hand: stragglers per cluster, null when unclustered.
    fn series_of(records: &[IterationRecord], clusters: usize) -> Vec<Option<Vec<u64>>> {
        records
            .iter()
            .map(|r| {
                if r.cluster.iter().all(|&c| c < 1) {
                    return None;
                }
                let mut row = vec![0u64; clusters];
                for w in 0..r.workers() {
                    if r.straggling[w] && r.cluster[w] >= 1 {
                        row[r.cluster[w] as usize - 1] += 1;
                    }
                }
                Some(row)
            })
            .collect()
    }

    fn series_in(v: &Value) -> Vec<Option<Vec<u64>>> {
        v.as_array()
            .expect("series is a list")
            .iter()
            .map(|row| {
                row.as_array()
                    .map(|r| r.iter().map(|x| x.as_u64().unwrap()).collect())
            })
            .collect()
    }

    #[test]
    fn a_training_trace_summary_matches_its_records() {
        let _serial = serial();
        let path = write_run("run.h5");
        let recs = records();
        let v = json(&gradcode(&["inspect", path.to_str().unwrap(), "--json"]));
        assert_eq!(v["kind"], "train");
        assert_eq!(v["scheme"], "gc-dc");
        assert_eq!(v["workers"], K as u64);
        assert_eq!(v["seed"], 7);
        assert_eq!(v["gradcode_version"], env!("CARGO_PKG_VERSION"));
        let s = &v["summary"];
        assert_eq!(s["iterations"], ITERATIONS as u64);
        let mut durations: Vec<f64> = recs.iter().map(|r| r.duration_s).collect();
        let total: f64 = durations.iter().sum();
        assert!(close(f(&s["total_time_s"]), total));
        assert!(close(
            f(&s["iteration_time_s"]["mean"]),
            total / ITERATIONS as f64
        ));
        durations.sort_by(f64::total_cmp);
        // 40 values: p50 between ranks 19 and 20, p99 at 38.61.
        assert!(close(
            f(&s["iteration_time_s"]["p50"]),
            (durations[19] + durations[20]) / 2.0
        ));
        let p99 = durations[38] + 0.61 * (durations[39] - durations[38]);
        assert!(close(f(&s["iteration_time_s"]["p99"]), p99));
        assert_eq!(f(&s["iteration_time_s"]["max"]), 0.07);
        assert_eq!(s["decode_time_s"]["count"], ITERATIONS as u64);
        let partial = recs.iter().filter(|r| r.recovered_fraction < 1.0).count();
        assert!(close(
            f(&s["recovered_fraction"]["full_fraction"]),
            1.0 - partial as f64 / ITERATIONS as f64
        ));
        assert_eq!(f(&s["recovered_fraction"]["min"]), 0.5);
        assert_eq!(f(&s["messages_received_per_iteration"]), 5.5);
        assert_eq!(f(&s["messages_used_per_iteration"]), 4.0);
        let stale: u64 = recs.iter().map(|r| r.stale_dropped).sum();
        assert_eq!(s["stale_dropped"]["total"], stale);
        assert_eq!(s["stale_dropped"]["iterations"], stale);
        let overruns: Vec<f64> = recs
            .iter()
            .flat_map(|r| r.overrun_s.iter().copied())
            .filter(|&x| x > 0.0)
            .collect();
        assert!(!overruns.is_empty());
        assert_eq!(s["overrun"]["count"], overruns.len() as u64);
        assert!(close(
            f(&s["overrun"]["total_s"]),
            overruns.iter().sum::<f64>()
        ));
        assert_eq!(f(&s["overrun"]["max_s"]), 0.002);
        assert_eq!(
            v["timing"],
            serde_json::json!([
                {"event": "decode", "total_s": 0.5, "count": 40},
                {"event": "wait", "total_s": 1.25, "count": 0}
            ])
        );
        // Stragglers: per worker share, per iteration mean.
        let per_worker: Vec<f64> = (0..K)
            .map(|w| recs.iter().filter(|r| r.straggling[w]).count() as f64 / ITERATIONS as f64)
            .collect();
        let got: Vec<f64> = s["stragglers"]["per_worker_fraction"]
            .as_array()
            .unwrap()
            .iter()
            .map(f)
            .collect();
        assert_eq!(got, per_worker);
        // Clusters: P = 2; iteration 7 unclustered; re-formed at 10, 20, 30
        // (labels swap) and around 7 (into and out of "unclustered").
        assert_eq!(s["clusters"]["count"], 2);
        assert_eq!(s["clusters"]["clustered_iterations"], ITERATIONS as u64 - 1);
        assert_eq!(s["clusters"]["changes"], 5);
        let spc = &s["stragglers_per_cluster"];
        let want = series_of(&recs, 2);
        assert_eq!(series_in(&spc["series"]), want);
        let clustered: Vec<&Vec<u64>> = want.iter().flatten().collect();
        for p in 0..2 {
            let mean = clustered.iter().map(|r| r[p] as f64).sum::<f64>() / clustered.len() as f64;
            assert!(close(f(&spc["per_cluster"][p]["mean"]), mean));
            assert_eq!(spc["per_cluster"][p]["cluster"], p as u64 + 1);
            assert_eq!(
                spc["per_cluster"][p]["max"],
                clustered.iter().map(|r| r[p]).max().unwrap()
            );
        }
        let even = clustered
            .iter()
            .filter(|r| r[0].abs_diff(r[1]) <= 1)
            .count() as f64
            / clustered.len() as f64;
        assert!(close(f(&spc["even_fraction"]), even));
        // Losses: final values and where.
        assert_eq!(s["train_loss"]["final_iteration"], ITERATIONS as u64);
        assert!(close(f(&s["train_loss"]["final"]), 1.0 / ITERATIONS as f64));
        assert_eq!(s["train_loss"]["first"], 1.0);
        assert_eq!(s["test_loss"]["evaluated"], 8);
        assert_eq!(s["test_loss"]["final_iteration"], 40);
        assert_eq!(s["test_loss"]["first_iteration"], 5);
        // The model.
        assert_eq!(v["model"]["parameters"], 2);
        assert_eq!(v["model"]["iteration"], ITERATIONS as u64);
        assert_eq!(f(&v["model"]["norm"]), 5.0);
        assert_eq!(v["extra_datasets"], serde_json::json!([]));
        assert_eq!(v["extra_groups"], serde_json::json!([]));
        assert!(v.get("schemes").is_none());

        let o = gradcode(&["inspect", path.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(o.stderr.is_empty(), "{}", stderr(&o));
        let text = stdout(&o);
        for needle in [
            "training trace (gradcode 0.1.0): scheme gc-dc, K = 6 workers, seed 7",
            "iterations            40 (",
            "iteration time        mean 38.750 ms, p50",
            "stale results         5 dropped, in 5 iterations",
            "clusters              P = 2, clustered in 39 iterations, re-formed in 5",
            "stragglers per cluster",
            "train loss            1.000000 (iteration 1) → 0.025000 (iteration 40)",
            "model                 /model/theta: 2 parameters after iteration 40, norm 5.000000",
            "overruns              13 worker-iterations (5.4%) ran past their emulated time: 26.000 ms in total, max 2.000 ms",
            "  decode                        500.000 ms        40   12.500 ms",
            "  wait                             1.250 s         0           -",
        ] {
            assert!(text.contains(needle), "no `{needle}` in:\n{text}");
        }
    }

    #[test]
    fn optional_datasets_may_be_missing_and_extra_ones_are_listed() {
        let _serial = serial();
        let path = write_run("run-extras.h5");
        {
            let file = common::h5(&path, common::H5::Write).unwrap();
            file.unlink("iteration/stale_dropped").unwrap();
            file.unlink("iteration/test_loss").unwrap();
            file.unlink("iteration/test_accuracy").unwrap();
            file.unlink("worker/cluster").unwrap();
            file.unlink("model").unwrap();
            file.unlink("timing").unwrap();
            file.unlink("worker/overrun_s").unwrap();
            // A trace older than the measured transfers (issue 26, item 2).
            for name in ["message_bytes", "compute_s", "received_s"] {
                file.unlink(&format!("worker/{name}")).unwrap();
            }
            let overrun: Vec<f64> = (0..ITERATIONS * K)
                .map(|i| if i % 10 == 0 { 0.5 } else { 0.0 })
                .collect();
            let ds = file
                .group("worker")
                .unwrap()
                .new_dataset::<f64>()
                .shape((ITERATIONS, K))
                .create("queue_s")
                .unwrap();
            ds.write_raw(&overrun).unwrap();
            let unit: hdf5::types::VarLenUnicode = "s".parse().unwrap();
            ds.new_attr::<hdf5::types::VarLenUnicode>()
                .create("unit")
                .unwrap()
                .write_scalar(&unit)
                .unwrap();
            let notes = file.create_group("notes").unwrap();
            notes
                .new_attr::<f64>()
                .create("compute_s")
                .unwrap()
                .write_scalar(&1.25)
                .unwrap();
        }
        let v = json(&gradcode(&["inspect", path.to_str().unwrap(), "--json"]));
        let s = &v["summary"];
        assert_eq!(s["iterations"], ITERATIONS as u64);
        for gone in [
            "stale_dropped",
            "test_loss",
            "test_accuracy",
            "clusters",
            "stragglers_per_cluster",
        ] {
            assert!(s[gone].is_null(), "{gone}: {}", s[gone]);
        }
        assert!(s["stragglers"].is_object(), "straggling is still there");
        assert!(v["model"].is_null());
        assert!(v["timing"].is_null());
        let extra = &v["extra_datasets"];
        assert_eq!(extra.as_array().unwrap().len(), 1, "{extra}");
        assert_eq!(extra[0]["path"], "/worker/queue_s");
        assert_eq!(extra[0]["shape"], serde_json::json!([ITERATIONS, K]));
        assert_eq!(extra[0]["unit"], "s");
        assert_eq!(f(&extra[0]["values"]["max"]), 0.5);
        assert!(close(f(&extra[0]["values"]["mean"]), 0.05));
        assert_eq!(v["extra_groups"][0]["path"], "/notes");
        assert_eq!(v["extra_groups"][0]["attributes"]["compute_s"], 1.25);

        let o = gradcode(&["inspect", path.to_str().unwrap()]);
        let text = stdout(&o);
        assert!(o.status.success(), "{}", stderr(&o));
        for needle in [
            "stale results         not recorded",
            "clusters              none",
            "model                 no /model/theta",
            "overruns              not recorded",
            "other dataset         /worker/queue_s [40, 6] s: mean 50.000 ms, max 500.000 ms",
            "other attributes      /notes: compute_s = 1.25",
        ] {
            assert!(text.contains(needle), "no `{needle}` in:\n{text}");
        }
    }

    const SIM: &str = "workers = 12\nseed = 3\n\
        [scheme]\nkind = \"gc-sc\"\nload = 2\nclusters = 4\n\
        [straggler]\nmodel = \"gilbert-elliott\"\nalpha = 0.01\nmu_fast = 10.0\nmu_slow = 0.1\n\
        switch_probability = 0.05\ninitial_stragglers = 6\nstate_info = \"imperfect\"\ntime_unit_ms = 20\n\
        [simulate]\ntrials = 3\niterations = 60\ncompare = [\"gc\", \"gc-sc\", \"gc-dc\"]\n";

    /// The simulation trace `NAME.h5` of [`SIM`] (`simulate --out`), made anew.
    fn simulated(name: &str) -> PathBuf {
        let cfg = dir().join(format!("{name}.toml"));
        std::fs::write(&cfg, SIM).unwrap();
        let sim = dir().join(format!("{name}.h5"));
        let _ = std::fs::remove_file(&sim);
        let (c, out) = (cfg.to_str().unwrap(), sim.to_str().unwrap());
        let o = gradcode(&["simulate", "--config", c, "--out", out]);
        assert!(o.status.success(), "{}", stderr(&o));
        sim
    }

    /// `evaluate` needs a training trace whose θ fits its config's model:
    /// a simulation trace, and a θ of another size, are one line naming
    /// the file, status 2, nothing on stdout.
    #[test]
    fn evaluate_refuses_a_simulation_trace_and_a_model_of_another_size() {
        let _serial = serial();
        let sim = simulated("eval-sim");
        let o = gradcode(&["evaluate", sim.to_str().unwrap()]);
        assert_rejected(&o, &sim, "is a simulation trace, which stores no model");
        let run = write_run("eval-run.h5");
        let o = gradcode(&["evaluate", run.to_str().unwrap()]);
        assert_rejected(
            &o,
            &run,
            "/model/theta has 2 parameters, the model of its config",
        );
        let missing = dir().join("eval-missing.h5");
        let o = gradcode(&["evaluate", missing.to_str().unwrap()]);
        assert_rejected(&o, &missing, "no such file");
    }

    /// A simulation trace records no losses or accuracies: a target flag
    /// with one is refused by `inspect` and by `compare`, naming the flag
    /// (the first set, loss before accuracy) and the file.
    #[test]
    fn targets_on_a_simulation_trace_are_refused_naming_the_flag() {
        let _serial = serial();
        let sim = simulated("target-sim");
        let twin = dir().join("target-sim-twin.h5");
        std::fs::copy(&sim, &twin).unwrap();
        let (s, t) = (sim.to_str().unwrap(), twin.to_str().unwrap());
        for (flags, flag) in [
            (&["--target-loss", "0.5"][..], "--target-loss"),
            (&["--target-accuracy", "0.5"][..], "--target-accuracy"),
            (
                &["--target-accuracy", "0.5", "--target-loss", "0.5"][..],
                "--target-loss",
            ),
        ] {
            let rule = format!("{s} is a simulation trace, which records no losses or accuracies");
            let o = gradcode(&[&["inspect", s][..], flags].concat());
            assert_flag_rejected(&format!("inspect {flags:?}"), &o, flag);
            assert!(stderr(&o).contains(&rule), "{}", stderr(&o));
            let o = gradcode(&[&["compare", s, t][..], flags].concat());
            assert_flag_rejected(&format!("compare {flags:?}"), &o, flag);
            assert!(stderr(&o).contains(&rule), "{}", stderr(&o));
        }
    }

    #[test]
    fn a_simulation_trace_summary_matches_simulate_and_the_records() {
        let _serial = serial();
        let cfg = dir().join("sim.toml");
        std::fs::write(&cfg, SIM).unwrap();
        let out = dir().join("sim.h5");
        let _ = std::fs::remove_file(&out);
        let sim = json(&gradcode(&[
            "simulate",
            "--config",
            cfg.to_str().unwrap(),
            "--json",
            "--out",
            out.to_str().unwrap(),
        ]));
        let v = json(&gradcode(&["inspect", out.to_str().unwrap(), "--json"]));
        assert_eq!(v["kind"], "simulation");
        assert_eq!(v["workers"], 12);
        assert_eq!(v["seed"], 3);
        assert!(v.get("summary").is_none() && v.get("model").is_none());
        let schemes = v["schemes"].as_array().unwrap();
        let names: Vec<&str> = schemes
            .iter()
            .map(|s| s["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["gc", "gc-sc", "gc-dc"], "simulate.compare order");
        let unit = 0.02;
        for (i, s) in schemes.iter().enumerate() {
            let name = names[i];
            let want = &sim["schemes"][i];
            assert_eq!(want["name"], name);
            assert_eq!(s["trials"], 3);
            assert_eq!(s["trials_planned"], 3);
            assert_eq!(s["iterations_planned"], 60);
            assert_eq!(f(&s["model_time_unit_s"]), unit);
            let sum = &s["summary"];
            assert_eq!(sum["iterations"], 180);
            // simulate reports model time: the trace holds seconds.
            for (key, sim_key) in [
                ("mean", "mean_iteration_time"),
                ("p50", "p50"),
                ("p99", "p99"),
            ] {
                let got = f(&sum["iteration_time_s"][key]) / unit;
                let want = f(&want[sim_key]);
                assert!(
                    (got - want).abs() <= 1e-9 * want,
                    "{name} {key}: {got} vs {want}"
                );
            }
            assert!(
                (f(&sum["messages_received_per_iteration"]) - f(&want["messages_per_iteration"]))
                    .abs()
                    < 1e-9
            );
            assert!(
                (f(&sum["recovered_fraction"]["mean"]) - f(&want["recovered_fraction"])).abs()
                    < 1e-12
            );
            assert!(
                sum["decode_time_s"].is_null(),
                "not measured in a simulation"
            );
            assert!(sum["train_loss"].is_null());
            assert!(sum["test_accuracy"].is_null());
            assert!(
                sum["stragglers_per_cluster"].is_null()
                    || sum["stragglers_per_cluster"]["series"].is_null()
            );
            let trials = s["per_trial"].as_array().unwrap();
            assert_eq!(trials.len(), 3);
            for (k, t) in trials.iter().enumerate() {
                assert_eq!(t["trial"], k as u64);
                assert_eq!(t["summary"]["iterations"], 60);
                let recs = read_trace(&out, &format!("/sim/{name}/trial_{k}"))
                    .unwrap()
                    .records;
                // A simulation's elapsed time is the running sum of its
                // iterations' (model) times, from 0 in every trial.
                let mut clock = 0.0;
                for (i, r) in recs.iter().enumerate() {
                    clock += r.duration_s;
                    assert_eq!(r.elapsed_s, clock, "{name} trial {k} iteration {}", i + 1);
                }
                assert_eq!(f(&t["summary"]["elapsed_s"]), clock, "{name} trial {k}");
                let spc = &t["summary"]["stragglers_per_cluster"];
                if name == "gc" {
                    assert!(t["summary"]["clusters"].is_null(), "gc has no clusters");
                    assert!(spc.is_null());
                } else {
                    assert_eq!(t["summary"]["clusters"]["count"], 4);
                    assert_eq!(
                        series_in(&spc["series"]),
                        series_of(&recs, 4),
                        "{name} trial {k}"
                    );
                }
            }
            let changes = s["summary"]["clusters"]["changes"].as_u64();
            match name {
                "gc" => assert_eq!(changes, None),
                "gc-sc" => assert_eq!(changes, Some(0), "static clusters"),
                _ => assert!(changes.unwrap() > 0, "gc-dc re-forms its clusters"),
            }
        }

        let o = gradcode(&["inspect", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        let text = stdout(&o);
        for needle in [
            "simulation trace (gradcode 0.1.0): 3 scheme(s), K = 12 workers, seed 3",
            "one model time unit = 20.000 ms",
            "== gc-dc",
            "stragglers per cluster",
        ] {
            assert!(text.contains(needle), "no `{needle}` in:\n{text}");
        }
        let row = text
            .lines()
            .find(|l| l.starts_with("gc-sc "))
            .expect("a table row for gc-sc");
        assert!(row.contains("3 x 60"), "{row}");
        // A simulation records no losses: the target flags are refused, naming the flag.
        let sim = out.to_str().unwrap();
        for (flags, flag) in [
            (&["--target-loss", "1"][..], "--target-loss"),
            (
                &["--target-accuracy", "0.5", "--json"][..],
                "--target-accuracy",
            ),
        ] {
            let mut args = vec!["inspect", sim];
            args.extend_from_slice(flags);
            let o = gradcode(&args);
            assert_flag_rejected(&flags.join(" "), &o, flag);
            assert!(stderr(&o).contains("simulation trace"), "{}", stderr(&o));
        }
    }

    /// The test accuracy of iteration i (0-based) of the network run: every
    /// 5th iteration from the 5th (with the test loss), 0.44 rising by 0.05
    /// to 0.69, then 0.90 at iteration 35 and 0.79 at 40 (best ≠ final).
    fn accuracy(i: usize) -> f64 {
        match i {
            34 => 0.9,
            _ if i % 5 == 4 => 0.4 + 0.01 * i as f64,
            _ => f64::NAN,
        }
    }

    /// [`write_run`] with a classifier's test accuracy ([`accuracy`]).
    fn write_network_run(name: &str) -> PathBuf {
        let path = dir().join(name);
        let meta = TraceMeta {
            scheme: "gc-cyclic".into(),
            workers: K,
            config_toml: String::new(),
            seed: 5,
        };
        let mut w = TraceWriter::create(&path, &meta).unwrap();
        for (i, mut r) in records().into_iter().enumerate() {
            r.test_accuracy = accuracy(i);
            w.append(&r).unwrap();
        }
        w.close().unwrap();
        path
    }

    /// The time up to and including iteration `n` (1-based), by hand.
    fn time_to(n: usize) -> f64 {
        records()[..n].iter().map(|r| r.duration_s).sum()
    }

    #[test]
    fn the_test_accuracy_shows_first_final_and_best_beside_the_losses() {
        let _serial = serial();
        let path = write_network_run("network.h5");
        let p = path.to_str().unwrap();
        let v = json(&gradcode(&["inspect", p, "--json"]));
        let s = &v["summary"];
        assert_eq!(
            s["test_accuracy"],
            serde_json::json!({
                "evaluated": 8, "first": 0.44, "first_iteration": 5,
                "final": accuracy(39), "final_iteration": 40,
                "best": 0.9, "best_iteration": 35
            })
        );
        assert_eq!(
            s["test_loss"]["evaluated"], 8,
            "evaluated with the test loss"
        );
        assert!(s.get("target_loss").is_none() && s.get("target_accuracy").is_none());
        let o = gradcode(&["inspect", p]);
        assert!(o.status.success(), "{}", stderr(&o));
        let text = stdout(&o);
        let lines: Vec<&str> = text.lines().collect();
        let at = |start: &str| lines.iter().position(|l| l.starts_with(start));
        assert_eq!(
            lines[at("test accuracy").expect("an accuracy line")],
            "test accuracy         44.00% (iteration 5) → 79.00% (iteration 40); best 90.00% (iteration 35); 8 evaluated"
        );
        assert_eq!(
            at("test accuracy"),
            at("test loss").map(|i| i + 1),
            "beside the losses"
        );
        assert!(!lines.iter().any(|l| l.starts_with("target ")), "{text}");
        // A run without accuracy (a linear model's: NaN throughout) has none.
        let linear = write_run("linear.h5");
        let v = json(&gradcode(&["inspect", linear.to_str().unwrap(), "--json"]));
        assert!(v["summary"]["test_accuracy"].is_null(), "{}", v["summary"]);
        let text = stdout(&gradcode(&["inspect", linear.to_str().unwrap()]));
        assert!(
            text.contains("test loss") && !text.contains("test accuracy"),
            "{text}"
        );
    }

    #[test]
    fn targets_give_the_first_iteration_past_them_and_the_time_to_it() {
        let _serial = serial();
        let path = write_network_run("network-targets.h5");
        let p = path.to_str().unwrap();
        // Train loss 1 / (1 + i): 0.1 first at iteration 10; accuracy 0.64 ≥ 0.6 at 25.
        let v = json(&gradcode(&[
            "inspect",
            p,
            "--json",
            "--target-loss",
            "0.1",
            "--target-accuracy",
            "0.6",
        ]));
        let s = &v["summary"];
        let l = &s["target_loss"];
        assert_eq!(
            (
                &l["target"],
                &l["reached"],
                &l["iteration"],
                &l["iterations_before"]
            ),
            (
                &serde_json::json!(0.1),
                &Value::Bool(true),
                &serde_json::json!(10),
                &serde_json::json!(9)
            )
        );
        assert_eq!(
            (f(&l["value"]), &l["evaluated"]),
            (0.1, &serde_json::json!(40))
        );
        assert!(close(f(&l["time_s"]), time_to(10)), "{l}");
        let a = &s["target_accuracy"];
        assert_eq!(
            (&a["iteration"], &a["iterations_before"]),
            (&serde_json::json!(25), &serde_json::json!(24))
        );
        assert!(
            close(f(&a["value"]), 0.64) && close(f(&a["time_s"]), time_to(25)),
            "{a}"
        );
        assert_eq!(a["evaluated"], 8);
        // At the target is reached; past every value is not.
        let v = json(&gradcode(&[
            "inspect",
            p,
            "--json",
            "--target-loss",
            "0.001",
            "--target-accuracy",
            "0.9",
        ]));
        let (l, a) = (
            &v["summary"]["target_loss"],
            &v["summary"]["target_accuracy"],
        );
        assert_eq!(
            (&l["reached"], &l["iteration"], &l["time_s"]),
            (&Value::Bool(false), &Value::Null, &Value::Null)
        );
        assert_eq!(
            (&a["reached"], &a["iteration"]),
            (&Value::Bool(true), &serde_json::json!(35))
        );
        let o = gradcode(&[
            "inspect",
            p,
            "--target-loss",
            "0.001",
            "--target-accuracy",
            "0.6",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let text = stdout(&o);
        for needle in [
            "target train loss     ≤ 0.001000: not reached (40 values recorded)",
            &format!(
                "target test accuracy  ≥ 60.00%: reached at iteration 25 (after 24 iterations, {:.3} ms of iteration time, elapsed not recorded): 64.00%",
                time_to(25) * 1e3
            ),
        ] {
            assert!(text.contains(needle), "no `{needle}` in:\n{text}");
        }
        // A trace without accuracy: not recorded (JSON: evaluated 0).
        let linear = write_run("linear-targets.h5");
        let args = [
            "inspect",
            linear.to_str().unwrap(),
            "--target-accuracy",
            "0.5",
        ];
        let text = stdout(&gradcode(&args));
        assert!(
            text.contains(
                "target test accuracy  ≥ 50.00%: not recorded (no finite /iteration/test_accuracy)"
            ),
            "{text}"
        );
        let v = json(&gradcode(&[&args[..], &["--json"]].concat()));
        let a = &v["summary"]["target_accuracy"];
        assert_eq!(
            (&a["evaluated"], &a["reached"]),
            (&serde_json::json!(0), &Value::Bool(false))
        );
    }

    #[test]
    fn impossible_stored_values_are_named_in_a_warning() {
        // A trace gradcode never writes: a negative duration, an accuracy of
        // 500%, a negative loss. inspect still reads it, and says so.
        let _serial = serial();
        let path = dir().join("impossible.h5");
        let meta = TraceMeta {
            scheme: "gc-dc".into(),
            workers: K,
            config_toml: "workers = 6\n".into(),
            seed: 7,
        };
        let mut w = TraceWriter::create(&path, &meta).unwrap();
        for i in 0..ITERATIONS {
            let mut r = record(i);
            if i == 4 {
                r.duration_s = -3.0;
            }
            if i >= 6 {
                r.test_accuracy = 5.0;
            }
            if i == 9 {
                r.train_loss = -1.0;
            }
            w.append(&r).unwrap();
        }
        w.close().unwrap();
        let o = gradcode(&["inspect", path.to_str().unwrap(), "--json"]);
        let v = json(&o);
        let warnings: Vec<&str> = v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap())
            .collect();
        let err = stderr(&o);
        for expected in [
            "/iteration/duration_s holds 1 value(s) below 0 (the first -3 at iteration 5)",
            "/iteration/train_loss holds 1 value(s) below 0 (the first -1 at iteration 10)",
            &format!(
                "/iteration/test_accuracy holds {} value(s) outside [0, 1] (the first 5 at iteration 7)",
                ITERATIONS - 6
            ),
        ] {
            assert!(
                warnings.iter().any(|w| w.starts_with(expected)),
                "{expected}: {warnings:?}"
            );
            assert!(
                err.lines()
                    .any(|l| l.starts_with("warning: ") && l.contains(expected)),
                "{expected}: {err}"
            );
        }
        // A sound trace has none.
        let o = gradcode(&["inspect", write_run("sound.h5").to_str().unwrap(), "--json"]);
        assert_eq!(json(&o)["warnings"], serde_json::json!([]));
        assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    }

    #[test]
    fn a_bad_probe_deadline_is_refused_naming_the_variable() {
        let _serial = serial();
        let path = write_run("probe-deadline.h5");
        for bad in ["abc", "-1", "nan", "0", "inf"] {
            let o = std::process::Command::new(env!("CARGO_BIN_EXE_gradcode"))
                .args(["inspect", path.to_str().unwrap()])
                .env("GRADCODE_TRACE_PROBE_S", bad)
                .output()
                .unwrap();
            assert_rejected(&o, &path, "GRADCODE_TRACE_PROBE_S");
            assert!(
                stderr(&o).contains("must be a positive number of seconds"),
                "{bad}: {}",
                stderr(&o)
            );
        }
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_gradcode"))
            .args(["inspect", path.to_str().unwrap()])
            .env("GRADCODE_TRACE_PROBE_S", "5")
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }

    #[test]
    fn bad_target_flags_are_refused_naming_the_flag_before_the_file_is_read() {
        let _serial = serial();
        let path = write_network_run("network-flags.h5");
        let missing = dir().join("no-such-trace.h5");
        for file in [path.to_str().unwrap(), missing.to_str().unwrap()] {
            for (flag, value, rule) in [
                ("--target-loss", "nan", "must be a finite number"),
                ("--target-loss", "inf", "must be a finite number"),
                ("--target-loss", "-inf", "must be a finite number"),
                ("--target-accuracy", "0", "must be in (0, 1]"),
                ("--target-accuracy", "-0.5", "must be in (0, 1]"),
                ("--target-accuracy", "1.5", "must be in (0, 1]"),
                ("--target-accuracy", "90", "must be in (0, 1]"),
                ("--target-accuracy", "nan", "must be in (0, 1]"),
                ("--target-loss", "x", "invalid value 'x'"),
            ] {
                // `--flag=value`: clap reads `-inf` after a space as a flag of its own.
                let o = gradcode(&["inspect", file, &format!("{flag}={value}"), "--json"]);
                assert_flag_rejected(&format!("{flag} {value}"), &o, flag);
                assert!(stderr(&o).contains(rule), "{flag} {value}: {}", stderr(&o));
            }
        }
        // The bounds themselves, and any finite loss, are targets.
        let p = path.to_str().unwrap();
        let v = json(&gradcode(&[
            "inspect",
            p,
            "--json",
            "--target-accuracy",
            "1",
            "--target-loss",
            "-1",
        ]));
        assert_eq!(v["summary"]["target_accuracy"]["reached"], false);
        assert_eq!(v["summary"]["target_loss"]["evaluated"], 40);
        // They summarise; --replay-csv writes a CSV instead.
        let o = gradcode(&["inspect", p, "--target-loss", "1", "--replay-csv", "x.csv"]);
        assert_flag_rejected("with --replay-csv", &o, "--target-loss");
    }

    #[test]
    fn files_that_are_not_traces_are_rejected_naming_the_file() {
        let _serial = serial();
        let missing = dir().join("missing.h5");
        assert_rejected(
            &gradcode(&["inspect", missing.to_str().unwrap()]),
            &missing,
            "no such file",
        );
        let d = dir();
        assert_rejected(
            &gradcode(&["inspect", d.to_str().unwrap()]),
            &d,
            "directory",
        );
        let text = dir().join("text.h5");
        std::fs::write(&text, "workers = 12\n").unwrap();
        assert_rejected(
            &gradcode(&["inspect", text.to_str().unwrap(), "--json"]),
            &text,
            "not an HDF5 file",
        );
        // HDF5, but not written by gradcode.
        let other = dir().join("other.h5");
        {
            let file = common::h5(&other, common::H5::Create).unwrap();
            file.new_dataset::<f64>().shape(3).create("x").unwrap();
        }
        assert_rejected(
            &gradcode(&["inspect", other.to_str().unwrap()]),
            &other,
            "not a gradcode trace",
        );
        // A gradcode trace without its iteration times.
        let cut = write_run("no-duration.h5");
        common::h5(&cut, common::H5::Write)
            .unwrap()
            .unlink("iteration/duration_s")
            .unwrap();
        assert_rejected(
            &gradcode(&["inspect", cut.to_str().unwrap()]),
            &cut,
            "/iteration/duration_s",
        );
        // A dataset of the wrong length is named.
        let bad = write_run("misshapen.h5");
        {
            let file = common::h5(&bad, common::H5::Write).unwrap();
            file.unlink("iteration/train_loss").unwrap();
            file.group("iteration")
                .unwrap()
                .new_dataset::<f64>()
                .shape(3)
                .create("train_loss")
                .unwrap();
        }
        assert_rejected(
            &gradcode(&["inspect", bad.to_str().unwrap()]),
            &bad,
            "/iteration/train_loss does not have one entry per iteration",
        );
    }

    #[test]
    fn a_trace_being_written_is_locked_and_readable_without_locking() {
        let _serial = serial();
        let path = dir().join("live.h5");
        let meta = TraceMeta {
            scheme: "gc-sc".into(),
            workers: K,
            config_toml: String::new(),
            seed: 1,
        };
        let mut w = TraceWriter::create(&path, &meta).unwrap();
        for r in records().iter().take(12) {
            w.append(r).unwrap();
        }
        w.flush().unwrap();
        w.append(&record(12)).unwrap(); // pending, not yet in the file
        let o = gradcode(&["inspect", path.to_str().unwrap()]);
        assert_rejected(&o, &path, "HDF5_USE_FILE_LOCKING=FALSE");
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_gradcode"))
            .args(["inspect", path.to_str().unwrap(), "--json"])
            .env("HDF5_USE_FILE_LOCKING", "FALSE")
            .output()
            .unwrap();
        let v = json(&o);
        assert_eq!(v["summary"]["iterations"], 12, "the flushed iterations");
        w.close().unwrap();
        let v = json(&gradcode(&["inspect", path.to_str().unwrap(), "--json"]));
        assert_eq!(v["summary"]["iterations"], 13);
    }

    /// `gradcode inspect ARGS` with at most 4 GiB of address space, so that
    /// reading a dataset of 2^31 f64 values (16 GiB) could not pass unseen.
    fn inspect_limited(args: &[&str]) -> Output {
        std::process::Command::new("sh")
            .arg("-c")
            .arg("ulimit -v 4194304 && exec \"$0\" inspect \"$@\"")
            .arg(env!("CARGO_BIN_EXE_gradcode"))
            .args(args)
            .output()
            .unwrap()
    }

    #[test]
    fn a_dataset_claiming_more_than_the_file_holds_is_an_input_error_not_a_read() {
        let _serial = serial();
        // The control: the same file with no claim is a trace inspect reads
        // under the same memory limit.
        let control = dir().join("hostile-control.h5");
        hostile_trace(&control, None, HOSTILE_ROWS);
        let o = inspect_limited(&[control.to_str().unwrap(), "--json"]);
        let v = json(&o);
        assert_eq!(v["summary"]["iterations"], 0);
        assert_eq!(v["model"]["parameters"], 2);
        assert_eq!(v["timing"][0]["event"], "decode");
        // (blown-up dataset, the dataset refused): with every dataset of the
        // table blown up alike the shapes agree, only the size rule is broken.
        for (target, refused) in [
            ("iteration/duration_s", "iteration/duration_s"),
            (EVERY_ROW, "iteration/duration_s"),
            ("worker/finish_s", "worker/finish_s"),
            ("model/theta", "model/theta"),
            ("timing/total_s", "timing/total_s"),
        ] {
            let name = if target == EVERY_ROW { "every" } else { target };
            let file = dir().join(format!("hostile-{}.h5", name.replace('/', "-")));
            hostile_trace(&file, Some(target), HOSTILE_ROWS);
            let bytes = std::fs::metadata(&file).unwrap().len();
            assert!(bytes < 64 * 1024, "{target}: a small file, {bytes} bytes");
            for json_flag in [false, true] {
                let mut args = vec![file.to_str().unwrap()];
                if json_flag {
                    args.push("--json");
                }
                let start = std::time::Instant::now();
                let o = inspect_limited(&args);
                assert_rejected(&o, &file, &format!("dataset /{refused} claims shape"));
                assert!(
                    stderr(&o).contains("more than the"),
                    "states the rule: {}",
                    stderr(&o)
                );
                assert!(
                    start.elapsed() < std::time::Duration::from_secs(20),
                    "{target}: took {:?}",
                    start.elapsed()
                );
            }
        }
    }

    /// `gradcode inspect FILE` under a 2 GiB `ulimit -v`: an allocation
    /// sized by a claim of the file (8 GB and more below) aborts the
    /// process instead of passing unseen.
    fn inspect_2gib(file: &Path) -> Output {
        std::process::Command::new("sh")
            .arg("-c")
            .arg("ulimit -v 2097152; exec \"$0\" inspect \"$1\"")
            .arg(env!("CARGO_BIN_EXE_gradcode"))
            .arg(file)
            .output()
            .unwrap()
    }

    /// The crafted files of issue 17 item 6, each a few kilobytes: inspect
    /// refuses every one (exit 2, one line naming the file and the rule)
    /// within 2 GiB of address space, where reading any of them as it claims
    /// would need 8 GB to 2^65 bytes, or recurse forever.
    #[test]
    fn crafted_files_are_refused_with_memory_bounded_by_the_file() {
        use super::hostile::{Link, Structure, build};
        use gradcode::trace::DATASETS;
        let _serial = serial();
        let index = |path: &str| DATASETS.iter().position(|d| d.path == path).unwrap();
        let with = |f: &dyn Fn(&mut Structure)| {
            let mut s = Structure::valid(3, 2);
            f(&mut s);
            s
        };
        let cases: Vec<(&str, Structure, &str)> = vec![
            (
                "rows-1e9",
                with(&|s| s.claims = vec![(index("iteration/duration_s"), 1_000_000_000, 1)]),
                "dataset /iteration/duration_s claims shape [1000000000]",
            ),
            (
                "finish-3x2e9",
                with(&|s| s.claims = vec![(index("worker/finish_s"), 3, 2_000_000_000)]),
                "dataset /worker/finish_s claims shape [3, 2000000000]",
            ),
            (
                "extra-1.5e9",
                with(&|s| s.extra = Some((1_500_000_000, 4))),
                "dataset /notes/big claims shape [1500000000]",
            ),
            (
                "cluster-2^62",
                with(&|s| s.cluster_ids = vec![1, 1 << 62]),
                "holds cluster id 4611686018427387904 at iteration 1, worker 2: a cluster id is 1..=2",
            ),
            (
                "cluster-1e9",
                with(&|s| s.cluster_ids = vec![1_000_000_000]),
                "holds cluster id 1000000000 at iteration 1, worker 1",
            ),
            (
                "cluster-negative",
                with(&|s| s.cluster_ids = vec![i64::MIN]),
                "holds cluster id -9223372036854775808",
            ),
            (
                "self-link",
                with(&|s| s.links = vec![Link::SelfHard]),
                "group /loop/self is /loop linked again",
            ),
            (
                "root-link",
                with(&|s| s.links = vec![Link::RootHard]),
                "group /loop/root is / linked again",
            ),
            (
                "soft-root-link",
                with(&|s| s.links = vec![Link::RootSoft]),
                "group /loop/up is / linked again",
            ),
            (
                "external-link",
                with(&|s| s.links = vec![Link::External]),
                "/loop/ext is a link into another file",
            ),
            (
                "deep-groups",
                with(&|s| s.depth = 600),
                "nested more than 32 groups deep",
            ),
        ];
        for (name, s, rule) in &cases {
            let file = dir().join(format!("crafted-{name}.h5"));
            build(&file, s);
            let bytes = std::fs::metadata(&file).unwrap().len();
            assert!(bytes < 1 << 20, "{name}: a small file, {bytes} bytes");
            let o = inspect_2gib(&file);
            assert_rejected(&o, &file, rule);
        }
        // Every table dataset blown up alike to 10^9 never-written rows.
        let every = dir().join("crafted-every-1e9.h5");
        hostile_trace(&every, Some(EVERY_ROW), 1_000_000_000);
        assert_rejected(
            &inspect_2gib(&every),
            &every,
            "dataset /iteration/duration_s claims shape [1000000000]",
        );
        // The controls: the same structures without the hostile part, and
        // a dataset hard-linked 8 times (listed 9 times, read once), pass.
        for s in [
            Structure::valid(3, 2),
            with(&|s| s.extra = Some((4, 4))),
            with(&|s| s.links = vec![Link::DatasetCopies]),
            with(&|s| s.depth = 32),
            with(&|s| s.simulation = Some((4, true))),
        ] {
            let file = dir().join("crafted-control.h5");
            build(&file, &s);
            let o = inspect_2gib(&file);
            assert!(o.status.success(), "{s:?}: {}", stderr(&o));
        }
    }

    /// `gradcode ARGS` killed (and the test failed) when it runs 10 s.
    fn within_10_s(args: &[&std::ffi::OsStr]) -> (Output, std::time::Duration) {
        use std::process::Stdio;
        let start = std::time::Instant::now();
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_gradcode"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        while child.try_wait().unwrap().is_none() {
            if start.elapsed() > std::time::Duration::from_secs(10) {
                let _ = child.kill();
                panic!("gradcode {args:?} hangs");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        (child.wait_with_output().unwrap(), start.elapsed())
    }

    /// 4000 zeroed bytes at every multiple of 500 bytes of a trace (the
    /// damage that made HDF5 spin forever in its global heap read at offset
    /// 3000 of a training trace; here 9 offsets of 190 do): `inspect` (and
    /// at every 1500 bytes `inspect --json` and `inspect --replay-csv`)
    /// reads the file or refuses it (exit 2, one line naming it) within 5 s;
    /// the hanging offsets are refused by the probe.
    #[test]
    fn zeroed_runs_of_4000_bytes_never_hang_a_reader() {
        let _serial = serial();
        let original = std::fs::read(write_run("zeroed-source.h5")).unwrap();
        let file = dir().join("zeroed.h5");
        let csv = dir().join("zeroed-replay.csv");
        let mut probe_refused = 0;
        for at in (0..original.len().saturating_sub(4000)).step_by(500) {
            let mut bytes = original.clone();
            bytes[at..at + 4000].fill(0);
            std::fs::write(&file, &bytes).unwrap();
            let _ = std::fs::remove_file(&csv);
            // The three readers at every 1500 bytes, `inspect` alone between.
            let all: [&[&str]; 3] = [&[], &["--json"], &["--replay-csv", csv.to_str().unwrap()]];
            let readers = if at % 1500 == 0 { &all[..] } else { &all[..1] };
            for &extra in readers {
                let mut args: Vec<&std::ffi::OsStr> = vec!["inspect".as_ref(), file.as_os_str()];
                args.extend(extra.iter().map(|a| std::ffi::OsStr::new(*a)));
                let (o, took) = within_10_s(&args);
                let err = stderr(&o);
                assert!(
                    took < std::time::Duration::from_secs(5),
                    "offset {at} {extra:?}: {took:?}"
                );
                match o.status.code() {
                    Some(0) => {}
                    Some(2) => {
                        assert_eq!(err.lines().count(), 1, "offset {at} {extra:?}: {err}");
                        assert!(
                            err.starts_with(&format!("error: {}: ", file.display()))
                                || err.contains(&file.display().to_string()),
                            "offset {at} {extra:?}: {err}"
                        );
                        probe_refused += usize::from(err.contains("did not finish within"));
                    }
                    other => panic!("offset {at} {extra:?}: {other:?} {err}"),
                }
            }
        }
        assert!(
            probe_refused > 0,
            "no offset reached the damage HDF5 loops on: not a test of the probe"
        );
    }

    /// Random 200-byte corruptions of a real trace: inspect reads each as a
    /// trace (exit 0) or refuses it (exit 2, one line naming the file),
    /// within 2 GiB of address space; never a crash, an abort or a hang.
    #[test]
    fn random_200_byte_corruptions_exit_0_or_2() {
        let _serial = serial();
        let original = std::fs::read(write_run("corrupt-source.h5")).unwrap();
        let file = dir().join("corrupt-200.h5");
        // xorshift64*: a fixed sequence, so a failure reproduces.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            state.wrapping_mul(0x2545_f491_4f6c_dd1d)
        };
        let mut refused = 0;
        const CASES: usize = 60;
        for case in 0..CASES {
            let mut bytes = original.clone();
            let at = (next() as usize) % (bytes.len() - 200);
            for b in &mut bytes[at..at + 200] {
                *b = next() as u8;
            }
            std::fs::write(&file, &bytes).unwrap();
            let start = std::time::Instant::now();
            let o = inspect_2gib(&file);
            let err = stderr(&o);
            match o.status.code() {
                Some(0) => {}
                Some(2) => {
                    refused += 1;
                    assert_eq!(err.lines().count(), 1, "case {case} at {at}: {err}");
                    assert!(
                        err.starts_with(&format!("error: {}: ", file.display())),
                        "case {case} at {at}: {err}"
                    );
                }
                _ => panic!(
                    "case {case}, bytes {at}..{}: {:?} {err}",
                    at + 200,
                    o.status
                ),
            }
            assert!(
                start.elapsed() < std::time::Duration::from_secs(30),
                "case {case} at {at}: {:?}",
                start.elapsed()
            );
        }
        assert!(refused > 0, "no corruption was refused: not a test");
    }

    /// Huge and tiny values print compactly: 1e300 as `1.000000e300`,
    /// never as 301 digits.
    #[test]
    fn huge_values_print_in_scientific_notation() {
        let _serial = serial();
        let path = dir().join("huge-values.h5");
        let meta = TraceMeta {
            scheme: "gc".into(),
            workers: K,
            config_toml: String::new(),
            seed: 1,
        };
        let mut w = TraceWriter::create(&path, &meta).unwrap();
        for i in 0..4 {
            let mut r = record(i);
            r.duration_s = 1e300;
            r.decode_s = 1e-300;
            r.train_loss = if i == 0 { 1e300 } else { 1e-300 };
            r.test_loss = -1e300;
            r.recovered_fraction = 1e298;
            r.messages_received = u64::MAX;
            w.append(&r).unwrap();
        }
        w.write_theta(4, &[1e300, 1e300]).unwrap();
        w.close().unwrap();
        {
            let f = common::h5(&path, common::H5::Write).unwrap();
            f.create_group("notes")
                .unwrap()
                .new_dataset_builder()
                .with_data(&[1e300f64, -1e300, 1e-300])
                .create("huge")
                .unwrap();
        }
        let o = gradcode(&["inspect", path.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        let text = stdout(&o);
        for l in text.lines() {
            assert!(l.len() < 200, "a long line: {l}");
            assert!(!l.contains("0000000000"), "digits spelled out: {l}");
        }
        for expected in [
            "train loss            1.000000e300 (iteration 1) → 1.000000e-300 (iteration 4); min 1.000000e-300",
            "test loss             -1.000000e300 (iteration 1)",
            "mean 1.000e300 s",
            "norm 1.414214e300",
            "/notes/huge [3] : mean",
            "max 1.000000e300",
        ] {
            assert!(text.contains(expected), "no `{expected}` in\n{text}");
        }
        // Ordinary values keep their fixed notation.
        let o = gradcode(&["inspect", write_run("ordinary.h5").to_str().unwrap()]);
        assert!(stdout(&o).contains("1.000000 (iteration 1) → 0.025000 (iteration 40)"));
    }

    #[test]
    fn attributes_of_the_wrong_shape_or_kind_are_named() {
        let _serial = serial();
        type Damage = fn(&hdf5::File);
        let cases: [(&str, &str, Damage); 2] = [
            (
                "workers",
                "attribute workers of / has shape [3], not a scalar",
                |f| {
                    f.new_attr::<u64>()
                        .shape(3)
                        .create("workers")
                        .unwrap()
                        .write_raw(&[1u64, 2, 3])
                        .unwrap();
                },
            ),
            (
                "scheme",
                "attribute scheme of / holds float64, not strings",
                |f| {
                    f.new_attr::<f64>()
                        .create("scheme")
                        .unwrap()
                        .write_scalar(&1.5)
                        .unwrap();
                },
            ),
        ];
        for (name, rule, damage) in cases {
            let file = dir().join(format!("bad-attribute-{name}.h5"));
            hostile_trace(&file, None, 0);
            {
                let f = common::h5(&file, common::H5::Write).unwrap();
                f.delete_attr(name).unwrap();
                damage(&f);
            }
            assert_rejected(&gradcode(&["inspect", file.to_str().unwrap()]), &file, rule);
        }
    }
}
