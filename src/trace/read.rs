//! Reading traces for inspection: the root attributes, which kind of trace a
//! file is, the datasets of the schema (each optional but
//! `/iteration/duration_s`), the simulated schemes and trials, and whatever
//! else a writer added (datasets and attributes outside the schema).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hdf5::types::VarLenUnicode;
use hdf5::{File, Group, H5Type, LocationType};
use serde::Serialize;

use super::summary::{Distribution, TraceColumns};
use super::{TimingEvent, TraceError};

type Result<T> = std::result::Result<T, TraceError>;

/// The two kinds of file the trace writers make.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
}

/// A dataset outside the schema (`/worker/overrun_s`, `/timing/...`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExtraDataset {
    /// Path in the file.
    pub path: String,
    pub shape: Vec<usize>,
    pub unit: Option<String>,
    pub description: Option<String>,
    /// Over every finite entry; `None` when not numeric or none is finite.
    pub values: Option<Distribution>,
}

/// Scalar attributes of a group outside the schema (`/timing`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExtraGroup {
    pub path: String,
    /// Numbers as numbers, strings as strings; other types left out.
    pub attributes: BTreeMap<String, serde_json::Value>,
}

/// The datasets of the schema under a trace group, by path relative to it.
const SCHEMA: [&str; 16] = [
    "iteration/duration_s",
    "iteration/decode_s",
    "iteration/recovered_fraction",
    "iteration/messages_used",
    "iteration/messages_received",
    "iteration/stale_dropped",
    "iteration/train_loss",
    "iteration/test_loss",
    "worker/finish_s",
    "worker/straggling",
    "worker/cluster",
    "worker/used",
    "worker/overrun_s",
    "timing/event",
    "timing/total_s",
    "timing/count",
];

/// A trace file open for reading.
pub struct TraceFile {
    file: File,
    path: PathBuf,
}

fn record(message: String) -> TraceError {
    TraceError::Record(message)
}

impl TraceFile {
    /// Open `path` (read only).
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|e| TraceError::hdf5("open", e))?;
        Ok(Self {
            file,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn has_group(&self, group: &Group, name: &str) -> bool {
        group.link_exists(name) && matches!(group.loc_type_by_name(name), Ok(LocationType::Group))
    }

    /// The root attributes; an error when the file is not a gradcode trace
    /// (no `gradcode_version`, or neither `/iteration` nor `/sim`).
    pub fn root(&self) -> Result<RootInfo> {
        let root: &Group = &self.file;
        let gradcode_version = string_attr(root, "gradcode_version")?.ok_or_else(|| {
            record("not a gradcode trace (no root attribute gradcode_version)".into())
        })?;
        let kind = if self.has_group(root, "sim") {
            TraceKind::Simulation
        } else if self.has_group(root, "iteration") {
            TraceKind::Train
        } else {
            return Err(record(
                "not a gradcode trace (neither an /iteration nor a /sim group)".into(),
            ));
        };
        Ok(RootInfo {
            kind,
            gradcode_version,
            scheme: string_attr(root, "scheme")?,
            workers: number_attr::<u64>(root, "workers")?,
            seed: number_attr::<u64>(root, "seed")?,
            config_toml: string_attr(root, "config_toml")?,
        })
    }

    fn group(&self, path: &str) -> Result<Group> {
        self.file
            .group(path)
            .map_err(|e| TraceError::hdf5(format!("group {path}"), e))
    }

    /// The schema's datasets under `group` (`"/"` for a run): every one but
    /// `iteration/duration_s` may be missing. `workers` is used when no
    /// `/worker/` dataset says it. Errors name a dataset that cannot be read
    /// or whose shape does not fit.
    pub fn columns(&self, group: &str, workers: Option<u64>) -> Result<TraceColumns> {
        let g = self.group(group)?;
        let full = |rel: &str| format!("{}/{rel}", group.trim_end_matches('/'));
        let duration_s = read_1d::<f64>(&g, "iteration/duration_s", &full)?.ok_or_else(|| {
            record(format!(
                "not a gradcode trace (no dataset {})",
                full("iteration/duration_s")
            ))
        })?;
        // K from the first /worker/ dataset present, else the root attribute.
        let mut k = None;
        for name in &SCHEMA[8..13] {
            if g.link_exists(name) {
                let ds = g
                    .dataset(name)
                    .map_err(|e| TraceError::hdf5(format!("dataset {}", full(name)), e))?;
                let shape = ds.shape();
                if shape.len() != 2 {
                    return Err(record(format!(
                        "dataset {} has shape {shape:?}, not [iterations, workers]",
                        full(name)
                    )));
                }
                match k {
                    None => k = Some(shape[1]),
                    Some(k) if k != shape[1] => {
                        return Err(record(format!(
                            "dataset {} has {} columns, other /worker/ datasets {k}",
                            full(name),
                            shape[1]
                        )));
                    }
                    Some(_) => {}
                }
            }
        }
        let workers = k.or(workers.map(|w| w as usize)).unwrap_or(0);
        let flags = |name: &str| -> Result<Option<Vec<bool>>> {
            Ok(read_raw::<u8>(&g, name, &full)?.map(|v| v.into_iter().map(|b| b != 0).collect()))
        };
        let columns = TraceColumns {
            workers,
            duration_s,
            decode_s: read_1d(&g, "iteration/decode_s", &full)?,
            recovered_fraction: read_1d(&g, "iteration/recovered_fraction", &full)?,
            messages_used: read_1d(&g, "iteration/messages_used", &full)?,
            messages_received: read_1d(&g, "iteration/messages_received", &full)?,
            stale_dropped: read_1d(&g, "iteration/stale_dropped", &full)?,
            train_loss: read_1d(&g, "iteration/train_loss", &full)?,
            test_loss: read_1d(&g, "iteration/test_loss", &full)?,
            finish_s: read_raw(&g, "worker/finish_s", &full)?,
            straggling: flags("worker/straggling")?,
            cluster: read_raw(&g, "worker/cluster", &full)?,
            used: flags("worker/used")?,
            overrun_s: read_raw(&g, "worker/overrun_s", &full)?,
        };
        let bad = columns.misshapen();
        if let Some(name) = bad.first() {
            return Err(record(format!(
                "dataset {} does not have one entry per iteration ({} iterations in {}){}",
                full(name),
                columns.iterations(),
                full("iteration/duration_s"),
                if name.starts_with("worker/") {
                    format!(" and worker ({workers} workers)")
                } else {
                    String::new()
                }
            )));
        }
        Ok(columns)
    }

    /// The schemes under `/sim`, in the order of the root attribute `scheme`
    /// (the `simulate.compare` order), then any other by name.
    pub fn sim_schemes(&self) -> Result<Vec<SimScheme>> {
        let sim = self.group("/sim")?;
        let mut names = sim
            .member_names()
            .map_err(|e| TraceError::hdf5("group /sim", e))?;
        let order: Vec<String> = string_attr(&self.file, "scheme")?
            .map(|s| s.split(',').map(|n| n.trim().to_string()).collect())
            .unwrap_or_default();
        names.sort_by_key(|n| {
            (
                order.iter().position(|o| o == n).unwrap_or(usize::MAX),
                n.clone(),
            )
        });
        let mut out = Vec::new();
        for name in names {
            if !self.has_group(&sim, &name) {
                continue;
            }
            let path = format!("/sim/{name}");
            let g = self.group(&path)?;
            let mut trial_groups: Vec<(usize, String)> = g
                .member_names()
                .map_err(|e| TraceError::hdf5(format!("group {path}"), e))?
                .into_iter()
                .filter(|m| self.has_group(&g, m))
                .filter_map(|m| {
                    let k = m.strip_prefix("trial_")?.parse::<usize>().ok()?;
                    Some((k, format!("{path}/{m}")))
                })
                .collect();
            trial_groups.sort();
            out.push(SimScheme {
                name,
                trials: number_attr::<u64>(&g, "trials")?,
                iterations: number_attr::<u64>(&g, "iterations")?,
                model_time_unit_s: number_attr::<f64>(&g, "model_time_unit_s")?,
                trial_groups,
            });
        }
        Ok(out)
    }

    /// `<group>/model/theta`, when present.
    pub fn model(&self, group: &str) -> Result<Option<ModelInfo>> {
        let g = self.group(group)?;
        if !g.link_exists("model") || !self.has_group(&g, "model") {
            return Ok(None);
        }
        let model = g
            .group("model")
            .map_err(|e| TraceError::hdf5("group model", e))?;
        let full = |rel: &str| format!("{}/model/{rel}", group.trim_end_matches('/'));
        let Some(theta) = read_raw::<f64>(&model, "theta", &full)? else {
            return Ok(None);
        };
        let ds = model
            .dataset("theta")
            .map_err(|e| TraceError::hdf5(format!("dataset {}", full("theta")), e))?;
        let iteration = number_attr::<u64>(&ds, "iteration")?;
        Ok(Some(ModelInfo {
            parameters: theta.len(),
            iteration,
            norm: theta
                .iter()
                .filter(|x| x.is_finite())
                .map(|x| x * x)
                .sum::<f64>()
                .sqrt(),
            non_finite: theta.iter().filter(|x| !x.is_finite()).count(),
        }))
    }

    /// `<group>/timing/` (event names, total seconds, counts), when present.
    pub fn timing(&self, group: &str) -> Result<Option<Vec<TimingEvent>>> {
        let g = self.group(group)?;
        if !self.has_group(&g, "timing") {
            return Ok(None);
        }
        let full = |rel: &str| format!("{}/{rel}", group.trim_end_matches('/'));
        let names = match read_raw::<VarLenUnicode>(&g, "timing/event", &full)? {
            Some(n) => n,
            None => return Ok(None),
        };
        let totals = read_raw::<f64>(&g, "timing/total_s", &full)?;
        let counts = read_raw::<u64>(&g, "timing/count", &full)?;
        let (Some(totals), Some(counts)) = (totals, counts) else {
            return Ok(None);
        };
        if totals.len() != names.len() || counts.len() != names.len() {
            return Err(record(format!(
                "datasets {} have different lengths",
                full("timing/{event,total_s,count}")
            )));
        }
        Ok(Some(
            names
                .iter()
                .zip(totals)
                .zip(counts)
                .map(|((n, total_s), count)| TimingEvent {
                    event: n.as_str().to_string(),
                    total_s,
                    count,
                })
                .collect(),
        ))
    }

    /// Datasets under `group` outside the schema (and outside `/sim`), and
    /// the groups outside the schema with scalar attributes.
    pub fn extras(&self, group: &str) -> Result<(Vec<ExtraDataset>, Vec<ExtraGroup>)> {
        let g = self.group(group)?;
        let mut datasets = Vec::new();
        let mut groups = Vec::new();
        let base = group.trim_end_matches('/').to_string();
        self.walk(&g, &base, "", &mut datasets, &mut groups)?;
        Ok((datasets, groups))
    }

    fn walk(
        &self,
        g: &Group,
        base: &str,
        rel: &str,
        datasets: &mut Vec<ExtraDataset>,
        groups: &mut Vec<ExtraGroup>,
    ) -> Result<()> {
        let here = format!("{base}/{rel}");
        let members = g
            .member_names()
            .map_err(|e| TraceError::hdf5(format!("group {here}"), e))?;
        for name in members {
            let child_rel = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            let child_path = format!("{base}/{child_rel}");
            match g.loc_type_by_name(&name) {
                Ok(LocationType::Group) => {
                    if child_rel == "sim" {
                        continue;
                    }
                    let sub = g
                        .group(&name)
                        .map_err(|e| TraceError::hdf5(format!("group {child_path}"), e))?;
                    if !matches!(
                        child_rel.as_str(),
                        "iteration" | "worker" | "model" | "timing"
                    ) {
                        let attributes = scalar_attrs(&sub)?;
                        if !attributes.is_empty() {
                            groups.push(ExtraGroup {
                                path: child_path.clone(),
                                attributes,
                            });
                        }
                    }
                    self.walk(&sub, base, &child_rel, datasets, groups)?;
                }
                Ok(LocationType::Dataset) => {
                    if SCHEMA.contains(&child_rel.as_str())
                        || child_rel == "model/theta"
                        || child_rel == "model/previous_theta"
                    {
                        continue;
                    }
                    let ds = g
                        .dataset(&name)
                        .map_err(|e| TraceError::hdf5(format!("dataset {child_path}"), e))?;
                    let values = ds.read_raw::<f64>().ok().and_then(Distribution::of);
                    datasets.push(ExtraDataset {
                        path: child_path,
                        shape: ds.shape(),
                        unit: string_attr(&ds, "unit").ok().flatten(),
                        description: string_attr(&ds, "description").ok().flatten(),
                        values,
                    });
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// A string attribute, `None` when absent; an error when it is not a string.
fn string_attr(loc: &hdf5::Location, name: &str) -> Result<Option<String>> {
    if !loc.attr_names().is_ok_and(|n| n.iter().any(|a| a == name)) {
        return Ok(None);
    }
    let v: VarLenUnicode = loc
        .attr(name)
        .and_then(|a| a.read_scalar())
        .map_err(|e| TraceError::hdf5(format!("attribute {name}"), e))?;
    Ok(Some(v.as_str().to_string()))
}

/// A numeric scalar attribute, `None` when absent.
fn number_attr<T: H5Type>(loc: &hdf5::Location, name: &str) -> Result<Option<T>> {
    if !loc.attr_names().is_ok_and(|n| n.iter().any(|a| a == name)) {
        return Ok(None);
    }
    loc.attr(name)
        .and_then(|a| a.read_scalar::<T>())
        .map(Some)
        .map_err(|e| TraceError::hdf5(format!("attribute {name}"), e))
}

/// The scalar numeric and string attributes of a group.
fn scalar_attrs(loc: &hdf5::Location) -> Result<BTreeMap<String, serde_json::Value>> {
    let mut out = BTreeMap::new();
    let names = loc
        .attr_names()
        .map_err(|e| TraceError::hdf5(format!("attributes of {}", loc.name()), e))?;
    for name in names {
        let Ok(a) = loc.attr(&name) else { continue };
        if a.ndim() != 0 {
            continue;
        }
        let value = if let Ok(x) = a.read_scalar::<f64>() {
            serde_json::Number::from_f64(x).map(serde_json::Value::Number)
        } else if let Ok(s) = a.read_scalar::<VarLenUnicode>() {
            Some(serde_json::Value::String(s.as_str().to_string()))
        } else {
            None
        };
        if let Some(v) = value {
            out.insert(name, v);
        }
    }
    Ok(out)
}

/// A dataset's values (any shape, row-major), `None` when absent.
fn read_raw<T: H5Type>(
    g: &Group,
    rel: &str,
    full: &dyn Fn(&str) -> String,
) -> Result<Option<Vec<T>>> {
    if !g.link_exists(rel) {
        return Ok(None);
    }
    g.dataset(rel)
        .and_then(|ds| ds.read_raw::<T>())
        .map(Some)
        .map_err(|e| TraceError::hdf5(format!("dataset {}", full(rel)), e))
}

/// A one-dimensional dataset, `None` when absent.
fn read_1d<T: H5Type>(
    g: &Group,
    rel: &str,
    full: &dyn Fn(&str) -> String,
) -> Result<Option<Vec<T>>> {
    if g.link_exists(rel) {
        let ds = g
            .dataset(rel)
            .map_err(|e| TraceError::hdf5(format!("dataset {}", full(rel)), e))?;
        if ds.ndim() != 1 {
            return Err(record(format!(
                "dataset {} has shape {:?}, not [iterations]",
                full(rel),
                ds.shape()
            )));
        }
    }
    read_raw(g, rel, full)
}
