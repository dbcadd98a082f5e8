//! What `gradcode inspect` reports about a trace file, read through the
//! guarded reader ([`TraceFile`]): the root attributes, the summary of a
//! run (or per simulated scheme, pooled over its trials, and per trial),
//! `/model/theta`, `/timing/`, and whatever lies outside the schema.

use std::path::Path;

use serde::Serialize;

use super::read::{ExtraDataset, ExtraGroup, ModelInfo, TraceFile, TraceKind};
use super::summary::{Summary, Targets, TraceColumns, summarize};
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
        };
        match root.kind {
            TraceKind::Train => {
                let columns = file.columns("/", root.workers)?;
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
