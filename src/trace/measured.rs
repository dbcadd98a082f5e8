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
//!
//! A trace of a run with `straggler.mode = "measured"` that records the
//! workers' own compute (`/worker/compute_s`, issue 26, item 2) gives more:
//! the computation time is compute_s / c, without the network, and each
//! result's transfer, its bytes (`/worker/message_bytes`) and the seconds
//! from the worker's end of compute to the arrival of its last byte
//! (`/worker/received_s` − compute_s), which `advise --trace` fits a
//! `[network]` to (`gradcode_core::network::fit`). Its censored value is
//! then the master's stop less the fastest transfer of the trace, roughly
//! the latest the worker could have finished computing. An emulating run's
//! workers hold their results until their sampled times, which compute_s
//! does not count: its transfers are not read.

use std::path::Path;

use crate::error::InputError;

/// The measured times, one vector per worker in iteration order.
#[derive(Debug, Clone)]
pub struct Measured {
    pub series: Vec<Vec<crate::straggler::fit::Value>>,
    /// Worker-iterations without a result in time (a lower bound was used).
    pub censored: usize,
    /// c: computations before a worker's message.
    pub computations: usize,
    pub time_unit_s: f64,
    pub scheme: String,
    /// Per received result, `(bytes, seconds)` from the worker's end of
    /// compute to the arrival of its last byte at the master; empty unless
    /// [`Transfers::Recorded`].
    pub transfers: Vec<(f64, f64)>,
    /// Whether the trace records transfers, and why not.
    pub recorded: Transfers,
}

/// Whether a trace says what its messages cost (only a build that reads
/// traces, with `hdf5`, makes the variants other than `Recorded`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transfers {
    /// A measured run with the compute and receive times: the series are
    /// compute times.
    Recorded,
    /// A trace older than `/worker/compute_s` (or with no finite one).
    NotRecorded,
    /// An emulating run: the workers' holds are not in compute_s.
    Emulated,
}

/// The measured times (and transfers) of the training trace `path`; an
/// error is `flag`'s (`--trace`, or the file's name for `inspect
/// --replay-csv`).
pub fn read(path: &Path, flag: &str) -> Result<Measured, InputError> {
    let run = read_run(path, flag)?;
    let data = super::read_trace(path, "/").map_err(|e| InputError::new(flag, e))?;
    let scale = 1.0 / (run.computations as f64 * run.time_unit_s);
    let has_compute = data
        .records
        .iter()
        .any(|r| r.compute_s.iter().any(|c| c.is_finite()));
    let recorded = match (has_compute, run.emulated) {
        (false, _) => Transfers::NotRecorded,
        (true, true) => Transfers::Emulated,
        (true, false) => Transfers::Recorded,
    };
    let transfers = if recorded == Transfers::Recorded {
        transfers_of(&data)
    } else {
        Vec::new()
    };
    let (series, censored) = series_of(&data, recorded, scale, &transfers);
    if series.first().is_none_or(Vec::is_empty) {
        let name = path.display().to_string();
        return Err(InputError::new(
            flag,
            format!("{name}: has no iteration with a finite duration"),
        ));
    }
    Ok(Measured {
        series,
        censored,
        computations: run.computations,
        time_unit_s: run.time_unit_s,
        scheme: run.scheme,
        transfers,
        recorded,
    })
}

/// What a training trace's config says of its run.
struct TraceRun {
    scheme: String,
    /// c: computations before a worker's message.
    computations: usize,
    time_unit_s: f64,
    /// `straggler.mode = "emulate"`.
    emulated: bool,
}

/// The run of the training trace `path` (errors of `flag`): a training
/// trace with its config, of a scheme that sends one message per worker.
fn read_run(path: &Path, flag: &str) -> Result<TraceRun, InputError> {
    super::backend::check(super::backend::TraceUse::Read)
        .map_err(|missing| InputError::new(flag, missing))?;
    let name = path.display().to_string();
    let fail = |e: &dyn std::fmt::Display| InputError::new(flag, format!("{name}: {e}"));
    super::file_check::check_file(path).map_err(|e| InputError::new(flag, e))?;
    let file = super::TraceFile::open(path).map_err(|e| InputError::new(flag, e))?;
    let root = file.root().map_err(|e| InputError::new(flag, e))?;
    // read_trace opens the file again: HDF5 refuses a second lock.
    drop(file);
    if root.kind != super::TraceKind::Train {
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
    let emulated = setup.loaded.config.straggler.mode == crate::config::StragglerMode::Emulate;
    Ok(TraceRun {
        scheme,
        computations,
        time_unit_s,
        emulated,
    })
}

/// Per received result of a measured run, `(bytes, seconds)` from the
/// worker's end of compute to the arrival of its last byte.
fn transfers_of(data: &super::TraceData) -> Vec<(f64, f64)> {
    let mut transfers = Vec::new();
    for r in &data.records {
        for w in 0..data.workers {
            let (b, c, done) = (r.message_bytes[w], r.compute_s[w], r.received_s[w]);
            if b.is_finite() && c.is_finite() && done.is_finite() {
                transfers.push((b, done - c));
            }
        }
    }
    transfers
}

/// One series per worker of its times of one computation (model time
/// units: seconds times `scale`), and how many are censored.
fn series_of(
    data: &super::TraceData,
    recorded: Transfers,
    scale: f64,
    transfers: &[(f64, f64)],
) -> (Vec<Vec<crate::straggler::fit::Value>>, usize) {
    let mut series = vec![Vec::with_capacity(data.records.len()); data.workers];
    let mut censored = 0;
    // A censored worker finished computing by the stop less its transfer,
    // of which the fastest seen is the estimate.
    let fastest_transfer_s = transfers
        .iter()
        .map(|t| t.1)
        .filter(|t| t.is_finite() && *t >= 0.0)
        .fold(f64::INFINITY, f64::min);
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
            if recorded == Transfers::Recorded {
                let c = r.compute_s[w];
                if c.is_finite() && c >= 0.0 {
                    s.push((c * scale, false));
                } else if r.finish_s[w].is_finite() {
                    // A row before a resume of an older trace: no compute.
                    s.push((r.finish_s[w] * scale, false));
                } else {
                    censored += 1;
                    let bound_s = if fastest_transfer_s.is_finite() {
                        (stop_s - fastest_transfer_s).max(0.0)
                    } else {
                        stop_s
                    };
                    s.push((bound_s * scale, true));
                }
                continue;
            }
            let f = r.finish_s[w];
            if f.is_finite() && f >= 0.0 {
                s.push((f * scale, false));
            } else {
                censored += 1;
                s.push((stop_s * scale, true));
            }
        }
    }
    (series, censored)
}

impl Measured {
    /// The replay CSV text: a header `w1,...,wK`, one row per iteration,
    /// each value in Rust's shortest round-trip form.
    pub fn to_csv(&self) -> String {
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
