//! The timing events of a training trace (`/timing/`).

use hdf5::types::VarLenUnicode;

use super::{Expect, Kind, Result, TraceFile, full, read_strings, record};
use crate::trace::{TimingEvent, TraceError};

impl TraceFile {
    /// `<group>/timing/` (event names, total seconds, counts), guarded; `None`
    /// when the group or one of its datasets is absent.
    pub fn timing(&self, group: &str) -> Result<Option<Vec<TimingEvent>>> {
        let g = self.group(group)?;
        if !self.has_group(&g, group, "timing")? {
            return Ok(None);
        }
        let mut found = Vec::new();
        for (name, kind, size) in [
            ("event", Kind::String, std::mem::size_of::<VarLenUnicode>()),
            ("total_s", Kind::Number, 8),
            ("count", Kind::Number, 8),
        ] {
            let rel = format!("timing/{name}");
            if !g.link_exists(&rel) {
                return Ok(None);
            }
            let path = full(group, &rel);
            let ds = g
                .dataset(&rel)
                .map_err(|e| TraceError::hdf5(format!("dataset {path}"), e))?;
            let expect = Expect {
                dims: "[events]",
                ndim: 1,
                kind,
                read_size: size,
            };
            let shape = self.guard(&ds, &path, &expect)?;
            self.charge(&ds, &path, &shape, size)?;
            found.push((ds, shape, path));
        }
        if found.iter().any(|(_, shape, _)| *shape != found[0].1) {
            return Err(record(format!(
                "datasets {} have different lengths",
                full(group, "timing/{event,total_s,count}")
            )));
        }
        let hdf5 = |path: &str, e| TraceError::hdf5(format!("dataset {path}"), e);
        let names = read_strings(&found[0].0, &found[0].2)?;
        let totals = found[1]
            .0
            .read_raw::<f64>()
            .map_err(|e| hdf5(&found[1].2, e))?;
        let counts = found[2]
            .0
            .read_raw::<u64>()
            .map_err(|e| hdf5(&found[2].2, e))?;
        Ok(Some(
            names
                .into_iter()
                .zip(totals)
                .zip(counts)
                .map(|((event, total_s), count)| TimingEvent {
                    event,
                    total_s,
                    count,
                })
                .collect(),
        ))
    }
}
