//! The per-worker times of one partition computation measured in a
//! training trace (`gradcode train --out`), for `advise --trace` and
//! `inspect --replay-csv`.
//!
//! A worker that computes c partitions before its (single) message arrives
//! at `/worker/finish_s` seconds, so one computation took finish_s / c
//! seconds, or finish_s / c / time_unit_s model time units (the replay
//! format's unit, `straggler.time_unit_ms` of the trace's config). c is the
//! trace's `scheme.load` (1 for a scheme without one). A worker whose result
//! did not arrive in time (finish_s NaN) took longer than the iteration: its
//! value is the time the master stopped waiting, `/iteration/decodable_s`
//! (`duration_s` in a trace without it) / c / time_unit_s, a lower bound, marked censored (the fits of `advise` treat it so; a
//! replay CSV has no such mark and replays the bound). Multi-message schemes
//! (gc-mmc, uc-mmc, gc-partial) are refused: finish_s is then the arrival of
//! some message, not of a known number of computations.

use std::path::Path;

use crate::error::InputError;

/// The measured times, one vector per worker in iteration order.
#[derive(Debug, Clone)]
pub(crate) struct Measured {
    pub series: Vec<Vec<crate::straggler::fit::Value>>,
    /// Worker-iterations without a result in time (a lower bound was used).
    pub censored: usize,
    /// c: computations before a worker's message.
    pub computations: usize,
    pub time_unit_s: f64,
    pub scheme: String,
}

#[cfg(not(feature = "hdf5"))]
pub(crate) fn read(_path: &Path, flag: &str) -> Result<Measured, InputError> {
    Err(InputError::new(
        flag,
        "reading traces needs HDF5 support, which this build does not have (rebuild with the `hdf5` feature)",
    ))
}

#[cfg(feature = "hdf5")]
pub(crate) fn read(path: &Path, flag: &str) -> Result<Measured, InputError> {
    let name = path.display().to_string();
    let fail = |e: &dyn std::fmt::Display| InputError::new(flag, format!("{name}: {e}"));
    super::trace_file::check_file(path).map_err(|e| InputError::new(flag, e))?;
    let file = crate::trace::TraceFile::open(path).map_err(|e| InputError::new(flag, e))?;
    let root = file.root().map_err(|e| InputError::new(flag, e))?;
    // read_trace opens the file again: HDF5 refuses a second lock.
    drop(file);
    if root.kind != crate::trace::TraceKind::Train {
        return Err(fail(
            &"is a simulation trace; measured times come from a training trace (gradcode train --out)",
        ));
    }
    let toml = root
        .config_toml
        .ok_or_else(|| fail(&"has no config_toml attribute, so its scheme's load is unknown"))?;
    let setup =
        crate::setup::parse(&toml, &format!("{name} (config_toml)"), &[]).map_err(|e| fail(&e))?;
    let scheme = setup.entry.name().to_string();
    if ["gc-mmc", "uc-mmc", "gc-partial"].contains(&scheme.as_str()) {
        return Err(fail(&format!(
            "is a trace of {scheme}, whose workers send several messages: /worker/finish_s does not say how many computations a worker made"
        )));
    }
    let computations = setup
        .parameters()
        .get("load")
        .and_then(|v| v.as_integer())
        .map_or(1, |l| l.max(1) as usize);
    let time_unit_s = setup.loaded.config.straggler.time_unit_ms / 1000.0;
    let data = crate::trace::read_trace(path, "/").map_err(|e| InputError::new(flag, e))?;
    let scale = 1.0 / (computations as f64 * time_unit_s);
    let mut series = vec![Vec::with_capacity(data.records.len()); data.workers];
    let mut censored = 0;
    for r in &data.records {
        // The master's stop (older traces: the iteration's end, later).
        let stop_s = if r.decodable_s.is_finite() {
            r.decodable_s
        } else {
            r.duration_s
        };
        if !(stop_s.is_finite() && stop_s >= 0.0) {
            continue; // an iteration without an end: nothing to say about it
        }
        for (w, s) in series.iter_mut().enumerate() {
            let f = r.finish_s[w];
            if f.is_finite() && f >= 0.0 {
                s.push((f * scale, false));
            } else {
                censored += 1;
                s.push((stop_s * scale, true));
            }
        }
    }
    if series.first().is_none_or(Vec::is_empty) {
        return Err(fail(&"has no iteration with a finite duration"));
    }
    Ok(Measured {
        series,
        censored,
        computations,
        time_unit_s,
        scheme,
    })
}

impl Measured {
    /// The replay CSV text: a header `w1,...,wK`, one row per iteration,
    /// each value in Rust's shortest round-trip form.
    pub(crate) fn to_csv(&self) -> String {
        let k = self.series.len();
        let mut text = (1..=k)
            .map(|w| format!("w{w}"))
            .collect::<Vec<_>>()
            .join(",");
        text.push('\n');
        for i in 0..self.series[0].len() {
            let row: Vec<String> = self.series.iter().map(|s| format!("{}", s[i].0)).collect();
            text.push_str(&row.join(","));
            text.push('\n');
        }
        text
    }
}
