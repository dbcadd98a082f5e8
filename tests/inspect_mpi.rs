//! `gradcode inspect` of a real training trace: `mpirun … gradcode train
//! --out` with emulated Gilbert-Elliott stragglers under GC-DC, then inspect's
//! JSON against train's own JSON summary and against the records read back.
//! And `gradcode train --resume` of a hostile trace: refused through the
//! guarded reader, as `inspect` refuses it.
#![cfg(all(feature = "mpi", feature = "hdf5"))]

mod common;

#[path = "fuzz_support/hostile.rs"]
mod hostile;

use std::path::PathBuf;
use std::process::{Command, Output};

/// One test at a time: a child process inherits the HDF5 files another
/// test thread has open, and with them HDF5's lock on the file.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("inspect-mpi");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("run")
}

fn json(o: &Output) -> serde_json::Value {
    assert!(
        o.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&o.stdout)))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

#[test]
fn inspect_summarises_a_real_training_trace_as_train_does() {
    let _serial = serial();
    let trace = scratch("gcdc.h5");
    let mut mpirun = Command::new("mpirun");
    mpirun
        .args([
            "--oversubscribe",
            "-n",
            "13",
            env!("CARGO_BIN_EXE_gradcode"),
        ])
        .args([
            "train",
            "--config",
            "configs/demo.toml",
            "--json",
            "--quiet",
            "--force",
        ])
        .args(["--out", trace.to_str().unwrap()])
        .args(["--set", "train.iterations=30", "--set", "scheme.kind=gc-dc"])
        .args([
            "--set",
            "straggler.model=gilbert-elliott",
            "--set",
            "straggler.mu=1.0",
        ])
        .args([
            "--set",
            "straggler.mu_fast=10",
            "--set",
            "straggler.mu_slow=1",
        ])
        .args(["--set", "straggler.switch_probability=0.1"])
        .args([
            "--set",
            "straggler.initial_stragglers=4",
            "--set",
            "straggler.time_unit_ms=10",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        // OpenMPI refuses to start as root without these (CI runs as root).
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    let train = json(&run(&mut mpirun));
    let v = json(&run(Command::new(env!("CARGO_BIN_EXE_gradcode")).args([
        "inspect",
        trace.to_str().unwrap(),
        "--json",
    ])));
    assert_eq!(v["kind"], "train");
    assert_eq!(v["scheme"], "gc-dc");
    assert_eq!(v["workers"], 12);
    let s = &v["summary"];
    assert_eq!(s["iterations"], 30);
    assert_eq!(train["iterations"], 30);
    let f = |x: &serde_json::Value| x.as_f64().unwrap_or_else(|| panic!("not a number: {x}"));
    assert!(close(
        f(&s["iteration_time_s"]["mean"]),
        f(&train["mean_iteration_s"])
    ));
    // The trace counts stale results per iteration; train's total also
    // counts those drained at shutdown, after the last iteration.
    let stale = s["stale_dropped"]["total"].as_u64().unwrap();
    assert!(stale <= train["stale_dropped"].as_u64().unwrap());
    assert_eq!(s["overrun"]["count"], train["overruns"]);
    assert!(close(
        f(&s["recovered_fraction"]["mean"]),
        f(&train["mean_recovered_fraction"])
    ));
    // The last row's losses are at the model its gradient was computed at;
    // the final model's are in /model's attributes, as train reports them.
    assert_eq!(v["model"]["final_train_loss"], train["final_train_loss"]);
    assert_eq!(v["model"]["final_test_loss"], train["final_test_loss"]);
    assert_ne!(s["train_loss"]["final"], train["final_train_loss"]);
    assert_eq!(s["train_loss"]["final_iteration"], 30);
    assert_eq!(v["timing"], train["timing"]);
    assert_eq!(v["model"]["parameters"], 200, "data.features of the demo");
    assert_eq!(v["model"]["iteration"], 30);
    assert_eq!(v["extra_datasets"], serde_json::json!([]));
    // Stragglers per cluster: the records, counted here.
    let records = gradcode::trace::read_trace(&trace, "/").unwrap().records;
    // Issue 28, item 2: the iteration spans the wait for a decodable set,
    // the decode and the update; train's means are the trace's.
    let timed = |name: &str| {
        train["timing"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["event"] == name)
            .map_or_else(|| panic!("no timing event {name}"), |e| f(&e["total_s"]))
    };
    let mut left_s = 0.0;
    for r in &records {
        assert!(r.decodable_s > 0.0 && r.decode_s > 0.0, "{r:?}");
        assert!(r.duration_s >= r.decodable_s + r.decode_s, "{r:?}");
        left_s += r.duration_s - r.decodable_s - r.decode_s;
    }
    assert!(
        close(left_s, timed("update")),
        "the iterations hold {left_s} s besides the wait and the decode, the update took {}",
        timed("update")
    );
    let mean = |g: fn(&gradcode::trace::IterationRecord) -> f64| {
        records.iter().map(g).sum::<f64>() / records.len() as f64
    };
    assert!(close(mean(|r| r.duration_s), f(&train["mean_iteration_s"])));
    assert!(close(
        mean(|r| r.decodable_s),
        f(&train["mean_decodable_s"])
    ));
    let clusters = s["clusters"]["count"].as_u64().unwrap() as usize;
    assert_eq!(clusters, 4);
    let series: Vec<Vec<u64>> = records
        .iter()
        .map(|r| {
            let mut row = vec![0u64; clusters];
            for w in 0..12 {
                if r.straggling[w] {
                    row[r.cluster[w] as usize - 1] += 1;
                }
            }
            row
        })
        .collect();
    assert!(
        series.iter().flatten().any(|&c| c > 0),
        "emulated stragglers appear in the trace"
    );
    assert_eq!(
        s["stragglers_per_cluster"]["series"],
        serde_json::json!(series)
    );
}

#[test]
fn resuming_a_trace_whose_dataset_claims_more_than_the_file_is_an_input_error() {
    let _serial = serial();
    // A singleton MPI run: the trace is read before the world size is checked.
    let limited = |file: &std::path::Path| {
        Command::new("sh")
            .arg("-c")
            .arg("ulimit -v 4194304 && exec \"$0\" train --resume \"$1\"")
            .arg(env!("CARGO_BIN_EXE_gradcode"))
            .arg(file)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .output()
            .unwrap()
    };
    let file = scratch("hostile-resume.h5");
    hostile::hostile_trace(&file, Some(hostile::EVERY_ROW), hostile::HOSTILE_ROWS);
    let o = limited(&file);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!("error: --resume: {}: ", file.display())),
        "{err}"
    );
    assert!(
        err.contains("dataset /iteration/duration_s claims shape") && err.contains("more than the"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
    // Refused before anything was cut.
    let f = common::h5(&file, common::H5::Read).unwrap();
    assert_eq!(
        f.dataset("iteration/duration_s").unwrap().shape(),
        [hostile::HOSTILE_ROWS]
    );
    drop(f);
    // The control passes the reader and stops only at the world size.
    let control = scratch("hostile-resume-control.h5");
    hostile::hostile_trace(&control, None, 0);
    let o = limited(&control);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("needs 3 MPI ranks"), "{err}");
}

/// `train --resume` of a resumable trace with 4000 zeroed bytes at every
/// 1000-byte offset of its first 16 KB (HDF5 loops forever on some of them): refused (exit 2,
/// naming the file; the undamaged ones at the world size of a singleton
/// run), each within the probe's default deadline plus what refusing the
/// undamaged trace takes (MPI start-up included, so a loaded machine does not
/// fail the test) plus 2 s, the file byte for byte unchanged.
#[test]
fn resuming_a_zeroed_trace_never_hangs_and_changes_nothing() {
    use std::time::{Duration, Instant};
    let _serial = serial();
    let source = scratch("zeroed-resume-source.h5");
    hostile::hostile_trace(&source, None, 0);
    let original = std::fs::read(&source).unwrap();
    let file = scratch("zeroed-resume.h5");
    let resume = |path: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_gradcode"))
            .args(["train", "--resume"])
            .arg(path)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env_remove(gradcode::trace::probe::DEADLINE_ENV)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    // What an undamaged resume takes to be refused (at the world size) on
    // this machine now: the slowest of three.
    let undamaged = (0..3)
        .map(|_| {
            let start = Instant::now();
            let o = resume(&source).wait_with_output().unwrap();
            assert_eq!(o.status.code(), Some(2));
            start.elapsed()
        })
        .max()
        .unwrap();
    let bound = undamaged
        + Duration::from_secs_f64(gradcode::trace::probe::DEFAULT_DEADLINE_S)
        + Duration::from_secs(2);
    let mut probe_refused = 0;
    // The first 16 KB hold the metadata and the global heap (a singleton
    // MPI start-up per offset makes each run cost a second).
    for at in (0..original.len().saturating_sub(4000).min(16_000)).step_by(1000) {
        let mut bytes = original.clone();
        bytes[at..at + 4000].fill(0);
        std::fs::write(&file, &bytes).unwrap();
        let start = Instant::now();
        let mut child = resume(&file);
        while child.try_wait().unwrap().is_none() {
            if start.elapsed() > bound * 2 {
                let _ = child.kill();
                panic!("offset {at}: train --resume hangs");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let took = start.elapsed();
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            took < bound,
            "offset {at}: {took:?} (bound {bound:?}: the undamaged trace took {undamaged:?})"
        );
        assert_eq!(o.status.code(), Some(2), "offset {at}: {err}");
        let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
        assert_eq!(errors.len(), 1, "offset {at}: {err}");
        assert!(
            errors[0].starts_with(&format!("error: --resume: {}: ", file.display()))
                || errors[0].contains("needs 3 MPI ranks"),
            "offset {at}: {err}"
        );
        probe_refused += usize::from(err.contains("did not finish within"));
        assert!(
            std::fs::read(&file).unwrap() == bytes,
            "offset {at}: the file changed"
        );
    }
    assert!(
        probe_refused > 0,
        "no offset reached the damage HDF5 loops on"
    );
}

/// `train --resume` of each crafted file of issue 17 item 6 (as inspect
/// refuses them in tests/inspect.rs): exit 2 with one line naming the file,
/// within a 2 GiB `ulimit -v`, the file byte for byte unchanged.
#[test]
fn resuming_a_crafted_file_is_refused_within_2_gib_and_changes_nothing() {
    use hostile::{Link, Structure, build};
    let _serial = serial();
    let index = |path: &str| {
        gradcode::trace::DATASETS
            .iter()
            .position(|d| d.path == path)
            .unwrap()
    };
    let mut cases: Vec<(&str, Structure, &str)> = Vec::new();
    let mut add = |name, rule, f: &dyn Fn(&mut Structure)| {
        let mut s = Structure::valid(3, 2);
        s.model = true;
        f(&mut s);
        cases.push((name, s, rule));
    };
    add(
        "rows-1e9",
        "dataset /iteration/duration_s claims shape",
        &|s| s.claims = vec![(index("iteration/duration_s"), 1_000_000_000, 1)],
    );
    add(
        "finish-3x2e9",
        "dataset /worker/finish_s claims shape",
        &|s| s.claims = vec![(index("worker/finish_s"), 3, 2_000_000_000)],
    );
    add("extra-1.5e9", "/notes/big", &|s| {
        s.extra = Some((1_500_000_000, 4))
    });
    add("cluster-2^62", "cluster id", &|s| {
        s.cluster_ids = vec![1 << 62]
    });
    add("cluster-1e9", "cluster id", &|s| {
        s.cluster_ids = vec![1_000_000_000]
    });
    add("self-link", "/loop/self", &|s| {
        s.links = vec![Link::SelfHard]
    });
    for (name, s, rule) in &cases {
        let file = scratch(&format!("crafted-resume-{name}.h5"));
        build(&file, s);
        let before = std::fs::read(&file).unwrap();
        let o = Command::new("sh")
            .arg("-c")
            .arg("ulimit -v 2097152; exec \"$0\" train --resume \"$1\"")
            .arg(env!("CARGO_BIN_EXE_gradcode"))
            .arg(&file)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(errors.len(), 1, "{name}: {err}");
        // Refused naming the file and the rule it breaks, or (what resume
        // does not read: the values, the groups outside the schema) only at
        // the world size of a singleton run.
        if !errors[0].contains("needs 3 MPI ranks") {
            assert!(
                errors[0].starts_with(&format!("error: --resume: {}: ", file.display()))
                    && errors[0].contains(rule),
                "{name}: {err}"
            );
        }
        assert_eq!(std::fs::read(&file).unwrap(), before, "{name}: changed");
    }
}

/// `[data]` lines of a small IDX image set written here: 16×16 images of 10
/// classes (class c a bright 4×4 square at a place of its own, plus noise),
/// 240 to train on and 60 to test.
fn idx_images() -> String {
    use gradcode::learn::idx::write_idx;
    let mut state = 7u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as u32
    };
    let mut write = |name: &str, n: usize| -> (PathBuf, PathBuf) {
        let (mut pixels, mut labels) = (Vec::new(), Vec::new());
        for _ in 0..n {
            let class = (next() % 10) as usize;
            let (cy, cx) = (2 + (class / 5) * 6, 1 + (class % 5) * 3);
            for y in 0..16 {
                for x in 0..16 {
                    let inside = (cy..cy + 4).contains(&y) && (cx..cx + 4).contains(&x);
                    pixels.push((if inside { 180 } else { 0 } + next() % 60) as u8);
                }
            }
            labels.push(class as u8);
        }
        let (x, y) = (
            scratch(&format!("{name}-images.idx")),
            scratch(&format!("{name}-labels.idx")),
        );
        write_idx(&x, &[n, 16, 16], &pixels, false).unwrap();
        write_idx(&y, &[n], &labels, false).unwrap();
        (x, y)
    };
    let (train_x, train_y) = write("train", 240);
    let (test_x, test_y) = write("test", 60);
    format!(
        "[data]\nkind = \"idx\"\npath = \"{}\"\nlabels_path = \"{}\"\ntest_path = \"{}\"\n\
         test_labels_path = \"{}\"\ntrain_samples = 240\ntest_samples = 60\n",
        train_x.display(),
        train_y.display(),
        test_x.display(),
        test_y.display()
    )
}

/// A network's run records its test accuracy with its test loss; inspect
/// shows it as `train --json` does, and the targets' iterations and times
/// are those of the records.
#[test]
fn inspect_reads_a_network_runs_test_accuracy_and_the_time_to_targets() {
    let _serial = serial();
    let config = scratch("mlp.toml");
    std::fs::write(
        &config,
        format!(
            "workers = 4\nseed = 3\n[scheme]\nkind = \"gc-cyclic\"\nload = 2\n\
             [straggler]\nmodel = \"none\"\n{}[model]\nkind = \"mlp\"\nhidden = [16]\n\
             [train]\niterations = 12\nlearning_rate = 0.1\nbatch_size = 16\neval_every = 4\n",
            idx_images()
        ),
    )
    .unwrap();
    let trace = scratch("mlp.h5");
    let mut mpirun = Command::new("mpirun");
    mpirun
        .args(["--oversubscribe", "-n", "5", env!("CARGO_BIN_EXE_gradcode")])
        .args(["train", "--config", config.to_str().unwrap()])
        .args([
            "--json",
            "--quiet",
            "--force",
            "--out",
            trace.to_str().unwrap(),
        ])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    let train = json(&run(&mut mpirun));
    let records = gradcode::trace::read_trace(&trace, "/").unwrap().records;
    assert_eq!(records.len(), 12);
    // Recorded exactly where the test loss is, as a share of the 60 test samples.
    for (i, r) in records.iter().enumerate() {
        assert_eq!(
            r.test_accuracy.is_finite(),
            r.test_loss.is_finite(),
            "iteration {}",
            i + 1
        );
        if r.test_accuracy.is_finite() {
            let correct = r.test_accuracy * 60.0;
            assert!(
                (correct - correct.round()).abs() < 1e-9,
                "{}",
                r.test_accuracy
            );
            assert!((0.0..=1.0).contains(&r.test_accuracy));
        }
    }
    let evaluated: Vec<usize> = (1..=12)
        .filter(|&i| records[i - 1].test_accuracy.is_finite())
        .collect();
    assert_eq!(
        evaluated,
        [1, 5, 9, 12],
        "every eval_every-th from the first, and the last"
    );
    let inspect = |extra: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_gradcode"));
        cmd.args(["inspect", trace.to_str().unwrap(), "--json"])
            .args(extra);
        json(&run(&mut cmd))
    };
    let v = inspect(&[]);
    let a = &v["summary"]["test_accuracy"];
    assert_eq!(a["final"], records.last().unwrap().test_accuracy);
    assert_eq!(
        v["model"]["final_test_accuracy"],
        train["final_test_accuracy"]
    );
    assert_eq!(
        (&a["evaluated"], &a["final_iteration"]),
        (&serde_json::json!(4), &serde_json::json!(12))
    );
    let best = a["best"].as_f64().unwrap();
    let first_best = records
        .iter()
        .position(|r| r.test_accuracy >= best)
        .unwrap()
        + 1;
    assert_eq!(a["best_iteration"], first_best);
    // Targets: the first iteration at or past them, the time the records add up to it.
    let final_loss = records.last().unwrap().train_loss;
    let v = inspect(&[
        "--target-accuracy",
        &best.to_string(),
        "--target-loss",
        &final_loss.to_string(),
    ]);
    for (key, hit) in [
        ("target_accuracy", first_best),
        (
            "target_loss",
            records
                .iter()
                .position(|r| r.train_loss <= final_loss)
                .unwrap()
                + 1,
        ),
    ] {
        let t = &v["summary"][key];
        assert_eq!(
            (&t["reached"], &t["iteration"]),
            (&serde_json::json!(true), &serde_json::json!(hit)),
            "{key}"
        );
        let time: f64 = records[..hit].iter().map(|r| r.duration_s).sum();
        assert!(
            close(t["time_s"].as_f64().unwrap(), time),
            "{key}: {t} vs {time}"
        );
    }
}
