//! What `gradcode inspect` reports about a trace file, read through the
//! guarded reader ([`TraceFile`]): the root attributes, the summary of a
//! run (or per simulated scheme, pooled over its trials, and per trial),
//! `/model/theta`, `/timing/`, and whatever lies outside the schema.

use std::path::Path;

use serde::Serialize;

use super::summary::{Summary, Targets, TraceColumns, summarize};
use super::{ExtraDataset, ExtraGroup, ModelInfo, TraceFile, TraceKind};
use super::{TimingEvent, TraceError};

/// What `inspect --json` prints (keys documented in docs/json.md).
#[derive(Debug, Serialize)]
pub struct Report {
    pub file: String,
    pub kind: TraceKind,
    pub gradcode_version: String,
    pub scheme: Option<String>,
    pub workers: Option<u64>,
    pub seed: Option<u64>,
    /// Root attribute `status`: `running`, `completed`, `interrupted` or
    /// `failed` (null in a trace written before gradcode recorded it).
    pub status: Option<String>,
    /// Root attribute `status_reason`: one line (null when absent or empty).
    pub status_reason: Option<String>,
    /// Whether a process has the file open for writing now (holds its HDF5
    /// lock exclusively); null when that cannot be found out. A trace whose
    /// `status` is `running` with `writer_open` false is the trace of a run
    /// that died (killed, crashed, disk full).
    pub writer_open: Option<bool>,
    /// What ran, where and when (root attributes, see
    /// [`crate::provenance::TRACE_KEYS`]); the ones present.
    pub provenance: std::collections::BTreeMap<String, String>,
    /// Training trace: the iteration of the committed snapshot `train
    /// --resume` continues from (null when there is none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot_iteration: Option<Option<u64>>,
    /// Training trace: the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<Summary>,
    /// Training trace: `/model/theta` (null when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<Option<ModelInfo>>,
    /// Training trace: `/timing/` (null when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timing: Option<Option<Vec<TimingEvent>>>,
    /// Simulation trace: per scheme.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schemes: Option<Vec<SchemeReport>>,
    pub extra_datasets: Vec<ExtraDataset>,
    pub extra_groups: Vec<ExtraGroup>,
    /// Stored values no run of gradcode writes (a negative duration, an
    /// accuracy above 1, more workers than a run may have, an unknown
    /// status), one line each: the file was altered or damaged.
    pub warnings: Vec<String>,
}

/// One simulated scheme.
#[derive(Debug, Serialize)]
pub struct SchemeReport {
    pub name: String,
    /// Trials found in the file (`trials_planned`: the attribute).
    pub trials: usize,
    pub trials_planned: Option<u64>,
    pub iterations_planned: Option<u64>,
    pub model_time_unit_s: Option<f64>,
    /// Pooled over every iteration of every trial.
    pub summary: Summary,
    pub per_trial: Vec<TrialReport>,
}

/// One trial of a simulated scheme.
#[derive(Debug, Serialize)]
pub struct TrialReport {
    pub trial: usize,
    pub summary: Summary,
}

impl Report {
    /// Read and summarise the trace at `path`: every read goes through the
    /// guard of [`TraceFile`], so a corrupt file is an error naming the
    /// dataset or attribute and the rule it breaks.
    pub fn read(path: &Path) -> Result<Report, TraceError> {
        Self::read_with(path, Targets::default())
    }

    /// [`Report::read`], with the times to `targets` (`inspect
    /// --target-loss`, `--target-accuracy`) in the summary of a training
    /// trace (a simulation trace records no losses: nothing is added).
    pub fn read_with(path: &Path, targets: Targets) -> Result<Report, TraceError> {
        let file = TraceFile::open(path)?;
        let root = file.root()?;
        let mut report = Report {
            file: path.display().to_string(),
            kind: root.kind,
            gradcode_version: root.gradcode_version.clone(),
            scheme: root.scheme.clone(),
            workers: root.workers,
            seed: root.seed,
            status: root.status.clone(),
            status_reason: root.status_reason.clone().filter(|r| !r.is_empty()),
            writer_open: match super::place::holder(path) {
                Ok(holder) => Some(holder == super::place::Holder::Writer),
                Err(_) => None,
            },
            provenance: crate::provenance::TRACE_KEYS
                .iter()
                .filter_map(|&key| match file.group_string_attr("/", key) {
                    Ok(Some(value)) => Some(Ok((key.to_string(), value))),
                    Ok(None) => None,
                    Err(e) => Some(Err(e)),
                })
                .collect::<Result<_, _>>()?,
            snapshot_iteration: None,
            summary: None,
            model: None,
            timing: None,
            schemes: None,
            extra_datasets: Vec::new(),
            extra_groups: Vec::new(),
            warnings: root_warnings(root.workers, root.status.as_deref()),
        };
        match root.kind {
            TraceKind::Train => {
                let columns = file.columns("/", root.workers)?;
                report.warnings.extend(column_warnings(&columns, ""));
                report.summary = Some(summarize(&[&columns]).with_targets(&columns, targets));
                report.model = Some(file.model("/")?);
                report.snapshot_iteration = Some(file.snapshot_iteration("/")?);
                report.timing = Some(file.timing("/")?);
            }
            TraceKind::Simulation => {
                let mut schemes = Vec::new();
                for s in file.sim_schemes()? {
                    let trials: Vec<(usize, TraceColumns)> = s
                        .trial_groups
                        .iter()
                        .map(|(k, g)| Ok((*k, file.columns(g, root.workers)?)))
                        .collect::<Result<_, TraceError>>()?;
                    for (k, c) in &trials {
                        let place = format!("{} trial {k}: ", s.name);
                        report.warnings.extend(column_warnings(c, &place));
                    }
                    let parts: Vec<&TraceColumns> = trials.iter().map(|(_, c)| c).collect();
                    schemes.push(SchemeReport {
                        name: s.name.clone(),
                        trials: trials.len(),
                        trials_planned: s.trials,
                        iterations_planned: s.iterations,
                        model_time_unit_s: s.model_time_unit_s,
                        summary: summarize(&parts),
                        per_trial: trials
                            .iter()
                            .map(|(k, c)| TrialReport {
                                trial: *k,
                                summary: summarize(&[c]),
                            })
                            .collect(),
                    });
                }
                report.schemes = Some(schemes);
            }
        }
        // Last: the extras are summarised with what the read budget has left.
        (report.extra_datasets, report.extra_groups) = file.extras("/")?;
        Ok(report)
    }
}

/// The statuses a run records (`running` until it ends).
const STATUSES: [&str; 4] = ["running", "completed", "interrupted", "failed"];

/// [`Report::warnings`] of the root attributes.
fn root_warnings(workers: Option<u64>, status: Option<&str>) -> Vec<String> {
    let max = crate::config::MAX_WORKERS as u64;
    let mut warnings = Vec::new();
    if let Some(k) = workers.filter(|&k| k == 0 || k > max) {
        warnings.push(format!(
            "workers = {k}: a run has 1 to {max} workers; the file was altered or damaged"
        ));
    }
    if let Some(status) = status.filter(|s| !STATUSES.contains(s)) {
        warnings.push(format!(
            "status = {status:?} is none of {}; the file was altered or damaged",
            STATUSES.join(", ")
        ));
    }
    warnings
}

/// [`Report::warnings`] of one group's datasets: times, losses and counts
/// below 0, fractions outside [0, 1] (NaN: not recorded, never a warning).
/// `place` starts each line (a simulation's scheme and trial).
pub fn column_warnings(c: &TraceColumns, place: &str) -> Vec<String> {
    let non_negative = [
        ("duration_s", &c.duration_s),
        ("decodable_s", &c.decodable_s),
        ("decode_s", &c.decode_s),
        ("elapsed_s", &c.elapsed_s),
        ("train_loss", &c.train_loss),
        ("batch_loss", &c.batch_loss),
        ("decode_error", &c.decode_error),
        ("test_loss", &c.test_loss),
    ];
    let fractions = [
        ("test_accuracy", &c.test_accuracy),
        ("batch_accuracy", &c.batch_accuracy),
        ("recovered_fraction", &c.recovered_fraction),
    ];
    let mut warnings = Vec::new();
    let mut first_bad = |name: &str, values: &Option<Vec<f64>>, ok: fn(f64) -> bool, rule: &str| {
        let Some(values) = values else { return };
        let bad: Vec<(usize, f64)> = values
            .iter()
            .copied()
            .enumerate()
            .filter(|&(_, v)| !v.is_nan() && !ok(v))
            .collect();
        if let Some(&(i, v)) = bad.first() {
            warnings.push(format!(
                "{place}/iteration/{name} holds {} value(s) {rule} (the first {v} at iteration {}); the file was altered or damaged",
                bad.len(),
                i + 1
            ));
        }
    };
    for (name, values) in non_negative {
        first_bad(name, values, |v| v >= 0.0, "below 0");
    }
    for (name, values) in fractions {
        first_bad(name, values, |v| (0.0..=1.0).contains(&v), "outside [0, 1]");
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_values_no_run_writes_are_named() {
        assert!(root_warnings(Some(4), Some("completed")).is_empty());
        assert!(root_warnings(None, None).is_empty());
        for status in STATUSES {
            assert!(root_warnings(Some(1), Some(status)).is_empty(), "{status}");
        }
        let w = root_warnings(Some(1 << 62), Some("exploded"));
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].starts_with("workers = 4611686018427387904: a run has 1 to 4096 workers"));
        assert!(w[1].starts_with("status = \"exploded\" is none of running, completed"));
        assert_eq!(root_warnings(Some(0), None).len(), 1);
    }
}
