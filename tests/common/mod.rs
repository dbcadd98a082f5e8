//! Helpers of the tests that run `gradcode train` under mpirun.
#![allow(dead_code)] // each test binary uses a part

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, MutexGuard};

/// One mpirun at a time within a test binary: concurrent jobs oversubscribe
/// 2 cores many times over and make timing-based checks meaningless.
static MPIRUN: Mutex<()> = Mutex::new(());

/// Hold while an mpirun job of this test runs.
pub fn one_at_a_time() -> MutexGuard<'static, ()> {
    MPIRUN
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `mpirun --oversubscribe -n RANKS gradcode ARGS...`, allowed to run as
/// root (OpenMPI refuses otherwise; CI runs as root).
pub fn mpirun_command(ranks: usize, args: &[&str]) -> Command {
    let mut cmd = Command::new("mpirun");
    cmd.args([
        "--oversubscribe",
        "-n",
        &ranks.to_string(),
        env!("CARGO_BIN_EXE_gradcode"),
    ])
    .args(args);
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    cmd
}

/// A path under the test's scratch folder `dir`.
pub fn scratch(dir: &str, name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// |a − b| / |b| in the Euclidean norm.
pub fn relative_error(a: &[f64], b: &[f64]) -> f64 {
    let num: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x - y).powi(2))
        .sum::<f64>()
        .sqrt();
    num / b.iter().map(|y| y * y).sum::<f64>().sqrt()
}

/// θ of a `train --json` summary.
pub fn theta(summary: &serde_json::Value) -> Vec<f64> {
    serde_json::from_value(summary["theta"].clone()).expect("the summary has theta")
}
