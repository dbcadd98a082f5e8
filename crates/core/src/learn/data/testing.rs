//! Helpers the data tests share: configs, the bundled files, scratch files.

use crate::config::{Config, parse};
use crate::error::InputError;
use crate::learn::data::DataPlan;

pub(super) fn config(extra: &str) -> Config {
    parse(extra, "test", &[]).unwrap().config
}

pub(super) fn shared(name: &str) -> String {
    format!("{}/../../data/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Logistic regression on the bundled breast cancer LIBSVM file with
/// `workers`, and `data_keys` (lines of `[data]`) besides kind and path.
pub(super) fn breast_cancer(workers: usize, data_keys: &str) -> Config {
    let path = shared("breast_cancer.libsvm");
    config(&format!(
        "workers = {workers}\n[data]\nkind = \"libsvm\"\npath = \"{path}\"\n{data_keys}[model]\nloss = \"logistic\"\n"
    ))
}

pub(super) fn bad_file(name: &str, kind: &str, text: &str, loss: &str) -> InputError {
    let dir = scratch();
    let path = write(&dir, name, text);
    let c = config(&format!(
        "workers = 1\n[data]\nkind = \"{kind}\"\npath = \"{}\"\n[model]\nloss = \"{loss}\"\n",
        path.display()
    ));
    DataPlan::new(&c, 1)
        .and_then(|p| p.load(&[0]).map(|_| ()))
        .unwrap_err()
}

/// A scratch folder, removed when the test ends (passed or failed).
pub(super) fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("gradcode-data-")
        .tempdir()
        .unwrap()
}

/// `text` written to `name` in `dir`.
pub(super) fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path
}

pub(super) fn onehot(extra: &str) -> Config {
    config(&format!(
        "workers = 4\n[data]\nkind = \"synthetic-onehot\"\ntrain_samples = 400\ntest_samples = 50\nfeatures = 5000\nnonzeros_per_row = 10\n{extra}[model]\nloss = \"logistic\"\n"
    ))
}

pub(super) trait WithSeed {
    fn clone_with_seed(&self, seed: u64) -> Config;
}

impl WithSeed for Config {
    fn clone_with_seed(&self, seed: u64) -> Config {
        let mut c = self.clone();
        c.seed = seed;
        c
    }
}
