//! Walks over a file's groups, each object once and within bounds: the
//! probe's read of every string, and the datasets and groups outside the
//! schema (`inspect`'s extras).

use std::collections::{BTreeMap, HashMap};

use hdf5::types::{TypeDescriptor, VarLenAscii, VarLenUnicode};
use hdf5::{Dataset, LinkType, Location, LocationType};

use super::{Kind, Result, TraceFile, read_string, read_strings, record};
use crate::trace::TraceError;
use crate::trace::contents::{ExtraDataset, ExtraGroup};
use crate::trace::summary::Distribution;
use gradcode_core::record::DATASETS;

/// How deep below a trace group the walk over groups outside the schema goes
/// (`/notes/a/b` is 3 deep); a deeper group makes the file an input error.
pub const MAX_GROUP_DEPTH: usize = 32;

/// A path (relative to a trace group) the schema reads: not an extra.
fn in_schema(rel: &str) -> bool {
    DATASETS.iter().any(|d| d.path == rel)
        || matches!(
            rel,
            "model/theta"
                | "model/previous_theta"
                | "model/snapshot_0"
                | "model/snapshot_1"
                | "timing/event"
                | "timing/total_s"
                | "timing/count"
                // The dimension scales (coordinates) of the iteration and worker dimensions.
                | "iteration/iteration"
                | "worker/iteration"
                | "worker/worker"
        )
}

/// The most groups [`TraceFile::read_every_string`] walks: a simulation
/// trace has a group per scheme and trial, far fewer.
const MAX_GROUPS_WALKED: usize = 100_000;

impl TraceFile {
    /// Read every variable-length string the file holds (the attributes
    /// of every group and dataset, and string datasets): the values that
    /// live in HDF5's global heap, whose damage can make HDF5 loop forever.
    /// Returns how many were read. Run by the trace probe (`probe.rs`) in a
    /// child process with a deadline, before a reader touches the file.
    pub(crate) fn read_every_string(&self) -> Result<usize> {
        let hdf5 = |what: &str, e| TraceError::hdf5(what.to_string(), e);
        let mut read = 0;
        let root = self.group("/")?;
        // Each object once, known by its address: a group linked into
        // itself (or twice) is visited once; links into other files are
        // never followed.
        let mut seen = std::collections::HashSet::new();
        seen.insert(self.object_key(&root, "/")?);
        let mut groups = vec![("/".to_string(), root)];
        while let Some((path, group)) = groups.pop() {
            if seen.len() > MAX_GROUPS_WALKED {
                return Err(record(format!(
                    "more than {MAX_GROUPS_WALKED} objects (a gradcode trace has far fewer)"
                )));
            }
            let mut locations: Vec<(String, Location)> = vec![(path.clone(), (*group).clone())];
            let mut links = Vec::new();
            group
                .iter_visit_default(|name, info| {
                    links.push((name.to_string(), info.link_type));
                    Ok(())
                })
                .map_err(|e| hdf5(&path, e))?;
            for (name, link) in links {
                let child = if path == "/" {
                    format!("/{name}")
                } else {
                    format!("{path}/{name}")
                };
                if link == LinkType::External {
                    continue;
                }
                match group.loc_type_by_name(&name).map_err(|e| hdf5(&child, e))? {
                    LocationType::Group => {
                        let g = group.group(&name).map_err(|e| hdf5(&child, e))?;
                        if seen.insert(self.object_key(&g, &child)?) {
                            groups.push((child, g));
                        }
                    }
                    LocationType::Dataset => {
                        let ds = group.dataset(&name).map_err(|e| hdf5(&child, e))?;
                        if !seen.insert(self.object_key(&ds, &child)?) {
                            continue;
                        }
                        let is_string = ds.dtype().and_then(|t| t.to_descriptor()).is_ok_and(|d| {
                            matches!(
                                d,
                                TypeDescriptor::VarLenUnicode | TypeDescriptor::VarLenAscii
                            )
                        });
                        if is_string {
                            read += read_strings(&ds, &child)?.len();
                        }
                        locations.push((child, (**ds).clone()));
                    }
                    _ => {}
                }
            }
            for (owner, location) in &locations {
                for name in location.attr_names().map_err(|e| hdf5(owner, e))? {
                    let a = location.attr(&name).map_err(|e| hdf5(owner, e))?;
                    let what = format!("attribute {name} of {owner}");
                    let desc = a
                        .dtype()
                        .and_then(|t| t.to_descriptor())
                        .map_err(|e| hdf5(&what, e))?;
                    // Scalars and arrays alike (DIMENSION_LABELS is an array).
                    read += match desc {
                        TypeDescriptor::VarLenUnicode => a
                            .read_raw::<VarLenUnicode>()
                            .map_err(|e| hdf5(&what, e))?
                            .len(),
                        TypeDescriptor::VarLenAscii => a
                            .read_raw::<VarLenAscii>()
                            .map_err(|e| hdf5(&what, e))?
                            .len(),
                        _ => 0,
                    };
                }
            }
        }
        Ok(read)
    }

    /// Datasets under `group` outside the schema (and outside `/sim`), and
    /// the groups outside the schema with scalar attributes. Each object is
    /// read once, known by its address in the file: a second link to a
    /// dataset is listed with the first's summary, and a second link to a
    /// group (a group linked into itself, a soft link to a parent) is an
    /// error, as are a link into another file (never followed) and a group
    /// more than `MAX_GROUP_DEPTH` below `group`. The walk keeps its own
    /// stack: no recursion.
    pub fn extras(&self, group: &str) -> Result<(Vec<ExtraDataset>, Vec<ExtraGroup>)> {
        let root = self.group(group)?;
        let mut datasets: Vec<ExtraDataset> = Vec::new();
        let mut groups = Vec::new();
        let base = group.trim_end_matches('/').to_string();
        // Groups seen (file number, address) → their path; datasets seen →
        // the index of the one listed for them.
        let mut seen_groups: HashMap<(u64, String), String> = HashMap::new();
        let mut seen: HashMap<(u64, String), usize> = HashMap::new();
        let here = if base.is_empty() { "/" } else { group };
        seen_groups.insert(self.object_key(&root, here)?, here.to_string());
        // Depth-first, without recursion: (group, path relative to `group`, depth).
        let mut stack = vec![(root, String::new(), 0usize)];
        while let Some((g, rel, depth)) = stack.pop() {
            let here = format!("{base}/{rel}");
            let mut links = Vec::new();
            g.iter_visit_default(|name, info| {
                links.push((name.to_string(), info.link_type));
                Ok(())
            })
            .map_err(|e| TraceError::hdf5(format!("group {here}"), e))?;
            let mut children = Vec::new();
            for (name, link) in links {
                let child_rel = if rel.is_empty() {
                    name.clone()
                } else {
                    format!("{rel}/{name}")
                };
                let child_path = format!("{base}/{child_rel}");
                if depth == 0 && name == "sim" {
                    continue;
                }
                if link == LinkType::External {
                    return Err(record(format!(
                        "{child_path} is a link into another file (a gradcode trace has none; it is not followed)"
                    )));
                }
                let kind = g
                    .loc_type_by_name(&name)
                    .map_err(|e| TraceError::hdf5(format!("object {child_path}"), e))?;
                match kind {
                    LocationType::Group => {
                        let sub = g
                            .group(&name)
                            .map_err(|e| TraceError::hdf5(format!("group {child_path}"), e))?;
                        let key = self.object_key(&sub, &child_path)?;
                        if let Some(first) = seen_groups.insert(key, child_path.clone()) {
                            return Err(record(format!(
                                "group {child_path} is {first} linked again (a group linked into \
                                 itself, or twice: a gradcode trace links every group once)"
                            )));
                        }
                        if depth + 1 > MAX_GROUP_DEPTH {
                            return Err(record(format!(
                                "group {child_path} is nested more than {MAX_GROUP_DEPTH} groups deep \
                                 (a gradcode trace has no such groups)"
                            )));
                        }
                        if depth > 0
                            || !matches!(name.as_str(), "iteration" | "worker" | "model" | "timing")
                        {
                            let attributes = self.scalar_attrs(&sub, &child_path)?;
                            if !attributes.is_empty() {
                                groups.push(ExtraGroup {
                                    path: child_path.clone(),
                                    attributes,
                                });
                            }
                        }
                        children.push((sub, child_rel, depth + 1));
                    }
                    LocationType::Dataset => {
                        if in_schema(&child_rel) {
                            continue;
                        }
                        let ds = g
                            .dataset(&name)
                            .map_err(|e| TraceError::hdf5(format!("dataset {child_path}"), e))?;
                        let key = self.object_key(&ds, &child_path)?;
                        match seen.get(&key) {
                            Some(&first) => {
                                let mut again = datasets[first].clone();
                                again.path = child_path;
                                datasets.push(again);
                            }
                            None => {
                                seen.insert(key, datasets.len());
                                datasets.push(self.extra_dataset(&ds, child_path)?);
                            }
                        }
                    }
                    // Named datatypes: nothing to summarise.
                    _ => {}
                }
            }
            // Visit the children in link order.
            stack.extend(children.into_iter().rev());
        }
        Ok((datasets, groups))
    }

    /// What identifies the object at `loc` in the file: its file number and address.
    fn object_key(&self, loc: &Location, path: &str) -> Result<(u64, String)> {
        let info = loc
            .loc_info()
            .map_err(|e| TraceError::hdf5(format!("object {path}"), e))?;
        Ok((info.fileno, format!("{:?}", info.token)))
    }

    /// A dataset outside the schema: its shape and attributes; its values
    /// summarised when numeric (within the file's size and the read budget,
    /// else an error), not read otherwise.
    fn extra_dataset(&self, ds: &Dataset, path: String) -> Result<ExtraDataset> {
        let hdf5 = |e| TraceError::hdf5(format!("dataset {path}"), e);
        let shape = ds.get_shape().map_err(hdf5)?;
        let dtype = ds.dtype().map_err(hdf5)?;
        let desc = dtype.to_descriptor().ok();
        let numeric = desc.as_ref().and_then(Kind::of) == Some(Kind::Number);
        let values = if numeric {
            self.fits(&path, &shape, dtype.size().max(8))?;
            self.charge(ds, &path, &shape, 8)?;
            Distribution::of(ds.read_raw::<f64>().map_err(hdf5)?)
        } else {
            None
        };
        Ok(ExtraDataset {
            unit: self.lenient_string_attr(ds, &path, "unit")?,
            description: self.lenient_string_attr(ds, &path, "description")?,
            path,
            shape,
            values,
        })
    }

    /// A string attribute of a dataset outside the schema: `None` when
    /// absent or not a scalar variable-length string.
    fn lenient_string_attr(
        &self,
        loc: &Location,
        owner: &str,
        name: &str,
    ) -> Result<Option<String>> {
        match self.attr(loc, owner, name, Kind::String) {
            Ok(Some(a)) => read_string(&a, owner, name),
            Ok(None) | Err(TraceError::Record(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The scalar numeric and variable-length string attributes of a group
    /// outside the schema (other attributes are left out, unread).
    fn scalar_attrs(
        &self,
        loc: &Location,
        owner: &str,
    ) -> Result<BTreeMap<String, serde_json::Value>> {
        let mut out = BTreeMap::new();
        let names = loc
            .attr_names()
            .map_err(|e| TraceError::hdf5(format!("attributes of {owner}"), e))?;
        for name in names {
            let what = || format!("attribute {name} of {owner}");
            let a = loc.attr(&name).map_err(|e| TraceError::hdf5(what(), e))?;
            let shape = a.get_shape().map_err(|e| TraceError::hdf5(what(), e))?;
            if !shape.is_empty() {
                continue;
            }
            let dtype = a.dtype().map_err(|e| TraceError::hdf5(what(), e))?;
            let Ok(desc) = dtype.to_descriptor() else {
                continue;
            };
            let value = match Kind::of(&desc) {
                Some(Kind::Number) => {
                    let x = a
                        .read_scalar::<f64>()
                        .map_err(|e| TraceError::hdf5(what(), e))?;
                    serde_json::Number::from_f64(x).map(serde_json::Value::Number)
                }
                Some(Kind::String) => read_string(&a, owner, &name)?.map(serde_json::Value::String),
                None => None,
            };
            if let Some(v) = value {
                out.insert(name, v);
            }
        }
        Ok(out)
    }
}
