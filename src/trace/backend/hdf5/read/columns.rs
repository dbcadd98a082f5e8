//! The trace groups of a file and their columns: the schema's datasets
//! found under a group, guarded, read into a [`TraceColumns`](gradcode_core::record::TraceColumns); the groups of
//! a simulation's schemes and trials.

use hdf5::{Dataset, H5Type};

use super::{Expect, Result, TraceFile, claimed_bytes, full, record};
use crate::trace::TraceError;
use crate::trace::contents::SimScheme;
use gradcode_core::record::{
    ColumnVisitor, DATASETS, DatasetSpec, SchemaGroup, TraceColumns, rows_dataset,
};

/// The datasets of the schema present under one trace group, guarded, in
/// table order ([`DATASETS`]): `None` where absent.
pub(crate) struct SchemaDatasets {
    /// The trace group (`/`, `/sim/gc/trial_0`).
    pub group: String,
    /// K: the columns of the `/worker/` datasets, else the root attribute, else 0.
    pub workers: usize,
    /// Per dataset of the table: the dataset and its shape.
    pub found: Vec<Option<(Dataset, Vec<usize>)>>,
}

impl SchemaDatasets {
    /// The shape of a dataset of the table, `None` when absent.
    pub fn shape(&self, spec: &DatasetSpec) -> Option<&[usize]> {
        self.found[spec.index].as_ref().map(|(_, s)| s.as_slice())
    }
}

/// Every cluster id of `/worker/cluster` is −1 (no cluster) or 1..=K: the
/// summaries size a count per cluster by the largest.
fn check_clusters(columns: &TraceColumns, group: &str) -> Result<()> {
    let Some(ids) = &columns.cluster else {
        return Ok(());
    };
    let k = columns.workers;
    let bad = ids
        .iter()
        .position(|&c| c != -1 && !(1..=k as i64).contains(&c));
    if let Some(i) = bad {
        return Err(record(format!(
            "dataset {} holds cluster id {} at iteration {}, worker {}: a cluster id is 1..={k} \
             (at most one cluster per worker, K = {k}) or -1 (no cluster)",
            full(group, "worker/cluster"),
            ids[i],
            i / k.max(1) + 1,
            i % k.max(1) + 1
        )));
    }
    Ok(())
}

/// Reads the guarded datasets of the schema into [`TraceColumns`].
struct ColumnReader<'a> {
    file: &'a TraceFile,
    datasets: &'a SchemaDatasets,
}

impl ColumnReader<'_> {
    fn read<T: H5Type>(&self, spec: &DatasetSpec) -> Result<Option<Vec<T>>> {
        let Some((ds, shape)) = &self.datasets.found[spec.index] else {
            return Ok(None);
        };
        let path = full(&self.datasets.group, spec.path);
        self.file
            .charge(ds, &path, shape, std::mem::size_of::<T>())?;
        let error = |e| TraceError::hdf5(format!("dataset {path}"), e);
        // The shape to read: all of the dataset, or its first rows.
        if ds.shape().first() == shape.first() {
            return ds.read_raw::<T>().map(Some).map_err(error);
        }
        let values = match shape.len() {
            1 => ds
                .read_slice_1d::<T, _>(0..shape[0])
                .map(|a| a.into_iter().collect()),
            _ => ds
                .read_slice_2d::<T, _>(ndarray::s![0..shape[0], ..])
                .map(|a| a.into_iter().collect()),
        };
        values.map(Some).map_err(error)
    }
}

impl ColumnVisitor for ColumnReader<'_> {
    type Error = TraceError;

    fn f64(&mut self, spec: &'static DatasetSpec, column: &mut Option<Vec<f64>>) -> Result<()> {
        *column = self.read(spec)?;
        Ok(())
    }

    fn u64(&mut self, spec: &'static DatasetSpec, column: &mut Option<Vec<u64>>) -> Result<()> {
        *column = self.read(spec)?;
        Ok(())
    }

    fn i64(&mut self, spec: &'static DatasetSpec, column: &mut Option<Vec<i64>>) -> Result<()> {
        *column = self.read(spec)?;
        Ok(())
    }

    fn flag(&mut self, spec: &'static DatasetSpec, column: &mut Option<Vec<bool>>) -> Result<()> {
        *column = self
            .read::<u8>(spec)?
            .map(|v| v.into_iter().map(|b| b != 0).collect());
        Ok(())
    }
}

impl TraceFile {
    /// The schema's datasets present under `group`, each guarded (nothing
    /// read): the dimensions of its group, numbers, no more bytes than the
    /// file, `/worker/` datasets with one number of columns. `workers` (the
    /// root attribute) is K when no `/worker/` dataset says it.
    pub(crate) fn schema_datasets(
        &self,
        group: &str,
        workers: Option<u64>,
    ) -> Result<SchemaDatasets> {
        let g = self.group(group)?;
        let mut found = Vec::with_capacity(DATASETS.len());
        let mut k: Option<(usize, String)> = None;
        let mut total = 0u128;
        for spec in DATASETS {
            let path = full(group, spec.path);
            if !g.link_exists(spec.path) {
                found.push(None);
                continue;
            }
            let ds = g
                .dataset(spec.path)
                .map_err(|e| TraceError::hdf5(format!("dataset {path}"), e))?;
            let expect = Expect::schema(spec);
            let shape = self.guard(&ds, &path, &expect)?;
            if spec.group == SchemaGroup::Worker {
                match &k {
                    None => k = Some((shape[1], path.clone())),
                    Some((k, first)) if *k != shape[1] => {
                        return Err(record(format!(
                            "dataset {path} has {} columns, {first} {k}: one per worker",
                            shape[1]
                        )));
                    }
                    Some(_) => {}
                }
            }
            total += claimed_bytes(&shape, expect.read_size).unwrap_or(u128::MAX);
            if total > u128::from(self.file_bytes) {
                return Err(record(format!(
                    "the datasets of {} up to {path} claim {total} bytes together, more than the \
                     {}-byte file holds (traces are not compressed: the file is corrupt)",
                    full(group, "{iteration,worker}"),
                    self.file_bytes
                )));
            }
            found.push(Some((ds, shape)));
        }
        let workers = match k {
            Some((k, _)) => k,
            None => match workers {
                Some(w) => usize::try_from(w)
                    .map_err(|_| record(format!("attribute workers of / = {w} is too large")))?,
                None => 0,
            },
        };
        Ok(SchemaDatasets {
            group: group.to_string(),
            workers,
            found,
        })
    }

    /// The schema's datasets under `group` (`"/"` for a run), guarded, then
    /// read: every one but the rows dataset (`iteration/duration_s`) may be
    /// missing, every one present has one value per iteration (and worker).
    /// `workers` is used when no `/worker/` dataset says K. Errors name the
    /// dataset and the rule.
    pub fn columns(&self, group: &str, workers: Option<u64>) -> Result<TraceColumns> {
        self.read_columns(group, workers, None)
    }

    /// The first `rows` iterations of [`Self::columns`]: every dataset
    /// present holds at least that many rows, and only those are read. A
    /// resume reads the iterations up to its snapshot so, whatever a kill
    /// during a later flush left beyond them (datasets extended unequally).
    pub fn columns_upto(
        &self,
        group: &str,
        workers: Option<u64>,
        rows: usize,
    ) -> Result<TraceColumns> {
        self.read_columns(group, workers, Some(rows))
    }

    fn read_columns(
        &self,
        group: &str,
        workers: Option<u64>,
        upto: Option<usize>,
    ) -> Result<TraceColumns> {
        let mut datasets = self.schema_datasets(group, workers)?;
        let rows = rows_dataset();
        let rows_path = full(group, rows.path);
        let stored = datasets
            .shape(rows)
            .map(|s| s[0])
            .ok_or_else(|| record(format!("not a gradcode trace (no dataset {rows_path})")))?;
        let n = match upto {
            None => stored,
            Some(upto) => {
                for (spec, found) in DATASETS.iter().zip(datasets.found.iter_mut()) {
                    if let Some((_, shape)) = found {
                        if shape[0] < upto {
                            return Err(record(format!(
                                "dataset {} has {} rows, fewer than the {upto} iterations read",
                                full(group, spec.path),
                                shape[0]
                            )));
                        }
                        // Read (and charge to the file's budget) only these rows.
                        shape[0] = upto;
                    }
                }
                upto
            }
        };
        let k = datasets.workers;
        let misshapen = |spec: &DatasetSpec| {
            record(format!(
                "dataset {} does not have one entry per iteration ({n} iterations in {rows_path}){}",
                full(group, spec.path),
                if spec.group == SchemaGroup::Worker {
                    format!(" and worker ({k} workers)")
                } else {
                    String::new()
                }
            ))
        };
        for spec in DATASETS {
            if datasets
                .shape(spec)
                .is_some_and(|s| s != spec.group.shape(n, k))
            {
                return Err(misshapen(spec));
            }
        }
        let mut columns = TraceColumns::empty(k, n);
        columns.visit(&mut ColumnReader {
            file: self,
            datasets: &datasets,
        })?;
        if let Some(spec) = columns.misshapen().first() {
            return Err(misshapen(spec));
        }
        check_clusters(&columns, group)?;
        self.check_numbered(group, n)?;
        Ok(columns)
    }

    /// The dimension scale `<group>/iteration/iteration`, when present,
    /// numbers the first `n` rows 1, 2, ..., n: a row it does not number was
    /// not written whole (a write that failed part way, e.g. on a full
    /// disk), and is named.
    fn check_numbered(&self, group: &str, n: usize) -> Result<()> {
        let parent = full(group, "iteration");
        if !self.has_group(&self.group(group)?, group, "iteration")? {
            return Ok(());
        }
        let g = self.group(&parent)?;
        if !g.link_exists("iteration") {
            return Ok(());
        }
        let path = full(group, "iteration/iteration");
        let hdf5 = |e| TraceError::hdf5(format!("dataset {path}"), e);
        let ds = g.dataset("iteration").map_err(hdf5)?;
        let stored = ds.shape();
        if stored.len() != 1 || stored[0] < n {
            return Err(record(format!(
                "dataset {path} has shape {stored:?}, not one number per iteration ({n} iterations)"
            )));
        }
        self.charge(&ds, &path, &[n], std::mem::size_of::<u64>())?;
        let numbers = ds.read_slice_1d::<u64, _>(0..n).map_err(hdf5)?;
        if let Some((row, number)) = numbers
            .iter()
            .enumerate()
            .find(|(row, number)| **number != *row as u64 + 1)
        {
            return Err(record(format!(
                "row {} of {path} is numbered {number}, not {}: the row was not written whole (a write that failed part way)",
                row + 1,
                row + 1
            )));
        }
        Ok(())
    }

    /// The schemes under `/sim`, in the order of the root attribute `scheme`
    /// (the `simulate.compare` order), then any other by name.
    pub fn sim_schemes(&self) -> Result<Vec<SimScheme>> {
        let sim = self.group("/sim")?;
        let mut names = sim
            .member_names()
            .map_err(|e| TraceError::hdf5("group /sim", e))?;
        let order: Vec<String> = self
            .string_attr(&self.file, "/", "scheme")?
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
            if !self.has_group(&sim, "/sim", &name)? {
                continue;
            }
            let path = format!("/sim/{name}");
            let g = self.group(&path)?;
            let mut trial_groups = Vec::new();
            for m in g
                .member_names()
                .map_err(|e| TraceError::hdf5(format!("group {path}"), e))?
            {
                let Some(k) = m
                    .strip_prefix("trial_")
                    .and_then(|k| k.parse::<usize>().ok())
                else {
                    continue;
                };
                if self.has_group(&g, &path, &m)? {
                    trial_groups.push((k, format!("{path}/{m}")));
                }
            }
            trial_groups.sort();
            out.push(SimScheme {
                name,
                trials: self.number_attr::<u64>(&g, &path, "trials")?,
                iterations: self.number_attr::<u64>(&g, &path, "iterations")?,
                model_time_unit_s: self.number_attr::<f64>(&g, &path, "model_time_unit_s")?,
                trial_groups,
            });
        }
        Ok(out)
    }
}
