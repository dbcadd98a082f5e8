//! `gradcode train` under mpirun: coding must not change the trajectory, bad
//! world sizes end every rank, oversubscribed runs complete.
#![cfg(feature = "mpi")]

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::Mutex;

use gradcode::config::parse;
use gradcode::learn::train_reference;

/// One mpirun at a time: concurrent jobs oversubscribe 2 cores many times
/// over and make timing-based checks meaningless.
static MPIRUN: Mutex<()> = Mutex::new(());

fn mpirun(ranks: usize, args: &[&str]) -> Output {
    let _one_at_a_time = MPIRUN
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut cmd = Command::new("mpirun");
    cmd.args([
        "--oversubscribe",
        "-n",
        &ranks.to_string(),
        env!("CARGO_BIN_EXE_gradcode"),
    ])
    .args(args);
    // OpenMPI refuses to start as root without these (CI runs as root).
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    cmd.output()
        .expect("mpirun must be installed (scripts/setup.sh installs openmpi-bin)")
}

fn write_config(name: &str, text: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mpi-configs");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

fn summary(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "train failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

fn relative_error(a: &[f64], b: &[f64]) -> f64 {
    let num: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x - y).powi(2))
        .sum::<f64>()
        .sqrt();
    let den: f64 = b.iter().map(|y| y * y).sum::<f64>().sqrt();
    num / den
}

const BASE: &str = "workers = 6\nseed = 11\n[straggler]\nmode = \"measured\"\n[data]\ntrain_samples = 600\ntest_samples = 100\nfeatures = 40\n[train]\niterations = 30\nlearning_rate = 0.2\n";

#[test]
fn exact_schemes_follow_the_full_batch_trajectory() {
    for (name, scheme) in [
        ("uncoded", "[scheme]\nkind = \"uncoded\"\n"),
        ("gc-frac", "[scheme]\nkind = \"gc-frac\"\nload = 3\n"),
        ("gc-cyclic", "[scheme]\nkind = \"gc-cyclic\"\nload = 3\n"),
        (
            "gc-sc",
            "[scheme]\nkind = \"gc-sc\"\nload = 2\nclusters = 2\n",
        ),
        (
            "gc-dc",
            "[scheme]\nkind = \"gc-dc\"\nload = 2\nclusters = 2\nclusters_per_worker = 2\n",
        ),
    ] {
        for optimizer in ["gd", "nesterov"] {
            let text = format!("{BASE}{scheme}");
            let path = write_config(&format!("exact-{name}-{optimizer}"), &text);
            let set = format!("train.optimizer={optimizer}");
            let out = mpirun(
                7,
                &[
                    "train",
                    "--config",
                    path.to_str().unwrap(),
                    "--set",
                    &set,
                    "--json",
                    "--quiet",
                ],
            );
            let s = summary(&out);
            let theta: Vec<f64> = serde_json::from_value(s["theta"].clone()).unwrap();
            let config = parse(&text, "test", &[set]).unwrap().config;
            let reference = train_reference(&config, 6).unwrap();
            let err = relative_error(&theta, &reference.theta);
            assert!(err <= 1e-9, "{name} {optimizer}: relative error {err}");
            assert_eq!(s["mean_recovered_fraction"], 1.0);
            let loss = s["final_train_loss"].as_f64().unwrap();
            let want = *reference.train_loss.last().unwrap();
            assert!(
                (loss - want).abs() <= 1e-9 * want.abs(),
                "{name}: train loss {loss} vs {want}"
            );
        }
    }
}

#[test]
fn logistic_regression_on_a_real_data_set_matches_the_reference() {
    let data = format!(
        "{}/../shared/data/breast_cancer.libsvm",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = format!(
        "workers = 4\n[scheme]\nkind = \"gc-cyclic\"\nload = 2\n[straggler]\nmode = \"measured\"\n[data]\nkind = \"libsvm\"\npath = \"{data}\"\n[model]\nloss = \"logistic\"\n[train]\niterations = 40\nlearning_rate = 0.5\n"
    );
    let path = write_config("logistic-breast-cancer", &text);
    let s = summary(&mpirun(
        5,
        &[
            "train",
            "--config",
            path.to_str().unwrap(),
            "--json",
            "--quiet",
        ],
    ));
    let theta: Vec<f64> = serde_json::from_value(s["theta"].clone()).unwrap();
    let reference = train_reference(&parse(&text, "test", &[]).unwrap().config, 4).unwrap();
    assert!(relative_error(&theta, &reference.theta) <= 1e-9);
    let test_loss = s["final_test_loss"].as_f64().unwrap();
    assert!(
        test_loss < 0.3,
        "standardised breast cancer data is easy: test loss {test_loss}"
    );
}

#[test]
fn wrong_world_size_ends_every_rank_with_one_line() {
    let path = write_config("world-size", BASE);
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
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.lines().filter(|l| l.starts_with("error:")).count(),
        1,
        "{err}"
    );
    assert!(err.contains("scheme.load = 5"), "{err}");
}

#[test]
fn thirteen_ranks_on_two_cores_complete() {
    let text = "workers = 12\n[scheme]\nkind = \"gc-sc\"\nload = 2\nclusters = 4\n[straggler]\nmode = \"measured\"\n[data]\ntrain_samples = 1200\nfeatures = 200\n[train]\niterations = 50\n";
    let path = write_config("thirteen", text);
    let s = summary(&mpirun(
        13,
        &[
            "train",
            "--config",
            path.to_str().unwrap(),
            "--json",
            "--quiet",
        ],
    ));
    assert_eq!(s["iterations"], 50);
    assert_eq!(s["workers"], 12);
}

#[test]
fn data_errors_on_workers_stop_the_run_cleanly() {
    let text = "workers = 2\n[scheme]\nkind = \"uncoded\"\n[straggler]\nmode = \"measured\"\n[data]\nkind = \"csv\"\npath = \"/nonexistent/data.csv\"\n";
    let path = write_config("missing-data", text);
    let out = mpirun(3, &["train", "--config", path.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error: /nonexistent/data.csv: cannot open"),
        "{err}"
    );
}
