//! What a trace file holds, as the reader gives it back: its kind, the root
//! attributes, the simulated schemes, the model, and what lies outside the
//! schema. Plain data, the same with or without HDF5 (the backend's
//! [`TraceFile`](crate::trace::TraceFile) fills them).

use std::collections::BTreeMap;

use serde::Serialize;

use super::summary::Distribution;

/// The two kinds of file the trace writers make (plain data: `compare`
/// names them without HDF5 too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceKind {
    /// One run (`gradcode train --out`): `/iteration/`, `/worker/`, `/model/` at the root.
    Train,
    /// `gradcode simulate --out`: `/sim/<scheme>/trial_<k>/`.
    Simulation,
}

/// The root attributes (each `None` when absent) and the kind of trace.
#[derive(Debug, Clone, PartialEq)]
pub struct RootInfo {
    pub kind: TraceKind,
    pub gradcode_version: String,
    pub scheme: Option<String>,
    pub workers: Option<u64>,
    pub seed: Option<u64>,
    pub config_toml: Option<String>,
    /// `status` (running, completed, interrupted, failed) and `status_reason`.
    pub status: Option<String>,
    pub status_reason: Option<String>,
}

/// One simulated scheme: `/sim/<name>` and its trial groups.
#[derive(Debug, Clone, PartialEq)]
pub struct SimScheme {
    pub name: String,
    /// Attributes of `/sim/<name>` (`None` when absent).
    pub trials: Option<u64>,
    pub iterations: Option<u64>,
    pub model_time_unit_s: Option<f64>,
    /// (k, group path) of every `trial_<k>` present, k ascending.
    pub trial_groups: Vec<(usize, String)>,
}

/// `/model/theta`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelInfo {
    pub parameters: usize,
    /// Its `iteration` attribute: the iteration after which it was written.
    pub iteration: Option<u64>,
    /// Euclidean norm (NaN entries left out).
    pub norm: f64,
    /// Entries that are not finite.
    pub non_finite: usize,
    /// `/model`'s attributes `final_train_loss`, `final_test_loss`,
    /// `final_test_accuracy`: the losses at this θ (a run that completed its
    /// iterations; absent otherwise, null in JSON when NaN).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_train_loss: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_test_loss: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_test_accuracy: Option<f64>,
}

/// A dataset outside the schema (`/worker/queue_s`, ...).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExtraDataset {
    /// Path in the file.
    pub path: String,
    pub shape: Vec<usize>,
    pub unit: Option<String>,
    pub description: Option<String>,
    /// Over every finite entry; `None` when not numeric (then not read) or
    /// when none is finite. A numeric one that claims more bytes than the
    /// file holds, alone or with what was read before it, is an error.
    pub values: Option<Distribution>,
}

/// Scalar attributes of a group outside the schema.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExtraGroup {
    pub path: String,
    /// Numbers as numbers, variable-length strings as strings; other types left out.
    pub attributes: BTreeMap<String, serde_json::Value>,
}
