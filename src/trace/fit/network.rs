//! The `[network]` that `advise --trace` fits to a training trace (issue 26,
//! item 2): the transfers of [`crate::trace::measured`] through
//! [`gradcode_core::network::fit`], as the keys `advise` simulates with.
//!
//! A fit gives `latency_s` and, with two message sizes or more,
//! `worker_bandwidth_bytes_per_s`; the master's keys stay the config's (a
//! training trace times each result alone, not the master's link under
//! several: `gradcode probe` measures that). With one message size, every
//! message of uncoded or gc-cyclic, the time of that message becomes
//! `latency_s` and no bandwidth is set: a message of that size then takes as
//! long as measured, and nothing is said about other sizes. The fitted
//! values are effective ones: a transfer is timed from the worker's end of
//! compute, so it holds the worker's sending and the master's receiving, and
//! also any wait for the master; they reproduce what the run's messages took,
//! not the wire alone. The candidates then take the trace's
//! `straggler.time_unit_ms`: the fitted computation times are in its units,
//! and the network's seconds must become the same units.

use serde::Serialize;

use crate::config::{NetworkConfig, Setting};
use crate::error::InputError;
use crate::trace::measured::{Measured, Transfers};
use gradcode_core::network::fit::{self, LinkFit};

/// The `[network]` of the candidates and where it came from.
#[derive(Debug, Clone, Serialize)]
pub struct NetworkSource {
    /// `trace` (fitted), `config` (the config's section) or `none`.
    pub source: &'static str,
    /// The section simulated (null: none, messages are free).
    pub network: Option<NetworkConfig>,
    /// Transfers the fit used, and their distinct message sizes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfers: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sizes: Option<usize>,
    /// What the fit could not say, or why there was none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// `trace` only: the trace's `straggler.time_unit_ms`, which the
    /// candidates take: the fitted computation times are in its units, and
    /// the network's seconds must become the same units.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_unit_ms: Option<f64>,
}

impl NetworkSource {
    /// The config's section, unfitted.
    pub fn from_config(network: Option<&NetworkConfig>) -> Self {
        Self {
            source: if network.is_some() { "config" } else { "none" },
            network: network.cloned(),
            transfers: None,
            sizes: None,
            notes: Vec::new(),
            time_unit_ms: None,
        }
    }

    /// The settings that put the fitted keys into a config (none unless fitted).
    pub fn settings(&self) -> Result<Vec<Setting>, InputError> {
        let Some(n) = self.network.as_ref().filter(|_| self.source == "trace") else {
            return Ok(Vec::new());
        };
        let mut out = vec![Setting::new("network.latency_s", n.latency_s)?];
        if let Some(unit) = self.time_unit_ms {
            out.push(Setting::new("straggler.time_unit_ms", unit)?);
        }
        if let Some(b) = n.worker_bandwidth_bytes_per_s {
            out.push(Setting::new("network.worker_bandwidth_bytes_per_s", b)?);
        }
        Ok(out)
    }
}

/// The network of `measured` over the config's `base` section (the keys
/// not fitted are its), or the config's with the reason it was not fitted.
pub fn fit_network(measured: &Measured, base: Option<&NetworkConfig>) -> NetworkSource {
    let mut unfitted = NetworkSource::from_config(base);
    let why = match measured.recorded {
        Transfers::NotRecorded => {
            "the trace records no message sizes and compute times (a gradcode before /worker/compute_s): the network is not fitted"
        }
        Transfers::Emulated => {
            "the trace emulates its stragglers (a worker holds its result until its sampled time, which compute_s does not count): the network is not fitted; run train with straggler.mode = \"measured\" to fit it"
        }
        Transfers::Recorded => "",
    };
    if !why.is_empty() {
        unfitted.notes.push(why.to_string());
        return unfitted;
    }
    let mut network = base.cloned().unwrap_or_default();
    let mut notes = Vec::new();
    let (transfers, sizes) = match fit::fit_transfers(&measured.transfers) {
        Err(e) => {
            unfitted
                .notes
                .push(format!("no network fitted to the trace: {e}"));
            return unfitted;
        }
        Ok(LinkFit::OneSize {
            bytes,
            seconds,
            transfers,
        }) => {
            network.latency_s = seconds;
            network.worker_bandwidth_bytes_per_s = None;
            notes.push(format!(
                "every message has one size ({bytes} bytes): the bandwidth cannot be separated from the latency; \
                 latency_s is the whole time of such a message and no bandwidth is set (messages of another size are not predicted)"
            ));
            (transfers, 1)
        }
        Ok(LinkFit::Line {
            latency_s,
            bandwidth_bytes_per_s,
            latency_clamped,
            sizes,
            transfers,
        }) => {
            network.latency_s = latency_s;
            network.worker_bandwidth_bytes_per_s = Some(bandwidth_bytes_per_s);
            if latency_clamped {
                notes.push(
                    "the line's intercept was below 0: latency_s is 0 (too small to see)"
                        .to_string(),
                );
            }
            (transfers, sizes)
        }
    };
    notes.push(match base.and_then(|b| b.master_bandwidth_bytes_per_s) {
        Some(_) => "master_bandwidth_bytes_per_s and master_link_shared are the config's: a trace does not separate the master's link (gradcode probe measures it)".to_string(),
        None => "the master's link is not fitted (a trace does not separate it; gradcode probe measures it): unlimited, as the config has no master_bandwidth_bytes_per_s".to_string(),
    });
    NetworkSource {
        source: "trace",
        network: Some(network),
        transfers: Some(transfers),
        sizes: Some(sizes),
        notes,
        time_unit_ms: Some(measured.time_unit_s * 1000.0),
    }
}
