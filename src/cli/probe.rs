//! `gradcode probe`: measure the network the job runs on and print the
//! `[network]` section that models it (issue 26, item 2).
//!
//! The measurement needs the `mpi` feature; without it `probe` is refused.
//!
//! Under `mpirun -n K+1` rank 0 is the master and ranks 1..K the workers, as
//! in `train`. Two measurements, each repeated and summarised by its
//! fastest repetition (other processes sharing the machine, or a scheduler
//! time slice, only ever add time to a message; under load the median of a
//! few repetitions measured 10 ms for 8 bytes over a link that takes 50 µs):
//!
//! 1. **Ping-pong**, one worker at a time: the master sends a message of b
//!    bytes, the worker sends b bytes back; half the round trip is the
//!    one-way time t(b), over sizes from `--min-bytes` to `--max-bytes`
//!    (each 4 times the previous). The line t(b) = latency + b / bandwidth
//!    is fitted through the smallest and the largest size ([`fit_link`](gradcode_core::network::probe::fit_link)
//!    says why not least squares).
//! 2. **All at once**: every worker sends one message to the master at the
//!    same moment, worker i sending b_i bytes in proportion to its measured
//!    bandwidth (the fastest sends `--max-bytes`), so that alone each would
//!    take about as long; then each worker alone, the same way. The master's
//!    bandwidth is Σ b_i over the time until the last message arrived; its
//!    link is shared (its receives serialised) when all at once took more
//!    than 1.5 times the slowest worker alone.
//! 3. **Between workers** (K >= 2), one pair at a time: workers w and w + 1
//!    for w = 1..K-1 (neighbours in rank order, as a reduce's tree pairs
//!    them first), ping-pong as in 1 with worker w timing the round trips;
//!    each pair's line is fitted the same way.
//!
//! The `[network]` keys printed are those the simulator reads: `latency_s`
//! and `worker_bandwidth_bytes_per_s` are the medians over the workers (the
//! per-worker figures follow as TOML comments, so the whole output pastes
//! into a config), `master_bandwidth_bytes_per_s` and `master_link_shared`
//! come from measurement 2, `peer_bandwidth_bytes_per_s` (a reduce's tree
//! rounds, docs/network.md) is the median over the pairs of measurement 3,
//! left out with one worker.
//!
//! Every rank parses and checks the same flags; rank 0 refuses them or the world size
//! and sends each worker the verdict before any measurement, so a bad flag
//! or a run on one rank ends every rank with exit status 2 and one `error:`
//! line. There is no collective: every wait of rank 0 for a worker is
//! bounded by `--timeout-s`, after which the silent worker (or pair) is
//! named and the job ends with `MPI_Abort`.
//!
//! This file parses the flags and prints the report; the plan, the fits
//! and the report are [`gradcode_core::network::probe`]'s, the MPI program
//! is `runtime::probe`.

// Without MPI only the flags are used (`probe` is refused); the printer
// serves the measurement.
#![cfg_attr(not(feature = "mpi"), allow(dead_code))]

use clap::Args;
use gradcode_core::network::probe::{
    MAX_MESSAGE_BYTES, MAX_REPETITIONS, MAX_TIMEOUT_S, ProbePlan, ProbeReport, SIZE_FACTOR, sizes,
};

use crate::error::InputError;

/// The flags of `probe`, as given (checked by [`ProbeArgs::check`]).
// The numbers are text, checked on every rank (ProbeArgs::check) and
// refused by rank 0 alone after MPI starts: a bad value is then one line,
// not one per rank.
#[derive(Debug, Clone, Args)]
pub struct ProbeArgs {
    /// The smallest ping-pong message, bytes.
    #[arg(
        long,
        value_name = "B",
        default_value = "8",
        allow_negative_numbers = true
    )]
    pub min_bytes: String,
    /// The largest ping-pong message, bytes (sizes grow 4x from --min-bytes);
    /// also what the fastest worker sends when all send at once.
    #[arg(
        long,
        value_name = "B",
        default_value = "8388608",
        allow_negative_numbers = true
    )]
    pub max_bytes: String,
    /// Timed repetitions per size (the fastest counts).
    #[arg(
        long,
        value_name = "N",
        default_value = "5",
        allow_negative_numbers = true
    )]
    pub repetitions: String,
    /// How long the master waits for a worker's answer, seconds: a worker
    /// (or a pair of workers) silent for longer is named and the job ends.
    #[arg(
        long,
        value_name = "S",
        default_value = "60",
        allow_negative_numbers = true
    )]
    pub timeout_s: String,
    /// Print JSON instead of TOML.
    #[arg(long)]
    pub json: bool,
}

fn parse_count(flag: &str, text: &str) -> Result<usize, InputError> {
    text.trim()
        .parse::<usize>()
        .map_err(|_| InputError::value(flag, text, "is not a whole number of at least 1 (e.g. 8)"))
}

impl ProbeArgs {
    /// The plan, or the first bad flag named with its rule.
    pub fn check(&self) -> Result<ProbePlan, InputError> {
        let min = parse_count("--min-bytes", &self.min_bytes)?;
        let max = parse_count("--max-bytes", &self.max_bytes)?;
        let repetitions = parse_count("--repetitions", &self.repetitions)?;
        if min == 0 {
            return Err(InputError::value(
                "--min-bytes",
                min,
                "must be at least 1: an empty message has no size to fit a bandwidth to",
            ));
        }
        if max > MAX_MESSAGE_BYTES {
            return Err(InputError::value(
                "--max-bytes",
                max,
                format!("exceeds {MAX_MESSAGE_BYTES} (1 GiB), the largest message a probe sends"),
            ));
        }
        if max < SIZE_FACTOR.saturating_mul(min) {
            return Err(InputError::value(
                "--max-bytes",
                max,
                format!(
                    "must be at least {SIZE_FACTOR} x --min-bytes = {}: the fit needs messages of at least two sizes",
                    SIZE_FACTOR.saturating_mul(min)
                ),
            ));
        }
        if !(1..=MAX_REPETITIONS).contains(&repetitions) {
            return Err(InputError::value(
                "--repetitions",
                repetitions,
                format!("must be in 1..={MAX_REPETITIONS}"),
            ));
        }
        let timeout_s = self
            .timeout_s
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|t| t.is_finite() && *t > 0.0 && *t <= MAX_TIMEOUT_S)
            .ok_or_else(|| {
                InputError::value(
                    "--timeout-s",
                    &self.timeout_s,
                    format!("must be a number of seconds in (0, {MAX_TIMEOUT_S}]"),
                )
            })?;
        Ok(ProbePlan {
            sizes_bytes: sizes(min, max),
            repetitions,
            timeout_s,
            json: self.json,
        })
    }
}

/// The section to paste, then the measurements as TOML comments.
fn to_toml(report: &ProbeReport) -> String {
    let n = &report.network;
    let mut out = format!(
        "# gradcode probe: {} workers, messages of {}..{} bytes, fastest of {} repetitions\n",
        report.workers.len(),
        report.sizes_bytes[0],
        report.sizes_bytes[report.sizes_bytes.len() - 1],
        report.repetitions
    );
    out += "[network]\n";
    out += &format!("latency_s = {:.4e}\n", n.latency_s);
    out += &format!(
        "worker_bandwidth_bytes_per_s = {:.4e}\n",
        n.worker_bandwidth_bytes_per_s
    );
    out += &format!(
        "master_bandwidth_bytes_per_s = {:.4e}\n",
        n.master_bandwidth_bytes_per_s
    );
    out += &format!("master_link_shared = {}\n", n.master_link_shared);
    if let Some(b) = n.peer_bandwidth_bytes_per_s {
        out += &format!("peer_bandwidth_bytes_per_s = {b:.4e}\n");
    }
    let (lo, hi) = report
        .workers
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), w| {
            (
                lo.min(w.bandwidth_bytes_per_s),
                hi.max(w.bandwidth_bytes_per_s),
            )
        });
    if hi > 2.0 * lo {
        out += &format!(
            "# the workers' bandwidths differ more than 2x ({lo:.3e}..{hi:.3e}): the keys above are medians\n"
        );
    }
    out += &format!("# master (rank 0) on {}\n", report.master_host);
    out += &format!(
        "# {:>6}  {:<20} {:>12} {:>22} {:>14} {:>12}\n",
        "worker", "host", "latency_s", "bandwidth_bytes_per_s", "simultaneous_B", "alone_s"
    );
    for w in &report.workers {
        out += &format!(
            "# {:>6}  {:<20} {:>12.4e} {:>22.4e} {:>14} {:>12.4e}\n",
            w.worker, w.host, w.latency_s, w.bandwidth_bytes_per_s, w.simultaneous_bytes, w.alone_s
        );
    }
    let s = &report.simultaneous;
    out += &format!(
        "# all workers at once: {} bytes in {:.4e} s (slowest alone {:.4e} s)\n",
        s.bytes, s.all_s, s.slowest_alone_s
    );
    if !report.peers.is_empty() {
        out += &format!(
            "# {:>6}  {:<41} {:>12} {:>22}\n",
            "pair", "hosts", "latency_s", "bandwidth_bytes_per_s"
        );
    }
    for p in &report.peers {
        out += &format!(
            "# {:>6}  {:<41} {:>12.4e} {:>22.4e}\n",
            format!("{}-{}", p.workers[0], p.workers[1]),
            format!("{} {}", p.hosts[0], p.hosts[1]),
            p.latency_s,
            p.bandwidth_bytes_per_s
        );
    }
    out
}

/// `gradcode probe`: the MPI program measures, rank 0 prints.
#[cfg(feature = "mpi")]
pub fn run(flags: &ProbeArgs) -> anyhow::Result<()> {
    crate::runtime::probe::run(flags.check(), |report, plan| {
        if plan.json {
            crate::outln!("{}", serde_json::to_string_pretty(report)?);
        } else {
            crate::outln!("{}", to_toml(report).trim_end());
        }
        Ok(())
    })
}

/// Without MPI there is nothing to measure with.
#[cfg(not(feature = "mpi"))]
pub fn run(_flags: &ProbeArgs) -> anyhow::Result<()> {
    Err(InputError::new("probe", "this gradcode was built without the `mpi` feature").into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use gradcode_core::network::probe::{PeerLink, Simultaneous, WorkerLink, sizes};

    fn flags(min: &str, max: &str, reps: &str) -> ProbeArgs {
        ProbeArgs {
            min_bytes: min.into(),
            max_bytes: max.into(),
            repetitions: reps.into(),
            timeout_s: "60".into(),
            json: false,
        }
    }

    #[test]
    fn sizes_grow_by_four_and_end_at_the_maximum() {
        let plan = flags("8", "8388608", "5").check().unwrap();
        assert_eq!(plan.sizes_bytes[0], 8);
        assert_eq!(*plan.sizes_bytes.last().unwrap(), 8388608);
        assert_eq!(plan.sizes_bytes.len(), 11);
        assert!(plan.sizes_bytes.windows(2).all(|w| w[1] == 4 * w[0]));
        assert_eq!(sizes(8, 100), vec![8, 32, 100]);
    }

    #[test]
    fn bad_flags_name_the_flag() {
        for (f, field) in [
            (flags("0", "64", "3"), "--min-bytes"),
            (flags("x", "64", "3"), "--min-bytes"),
            (flags("8", "16", "3"), "--max-bytes"),
            (flags("8", "-1", "3"), "--max-bytes"),
            (flags("8", "2000000000", "3"), "--max-bytes"),
            (flags("8", "64", "0"), "--repetitions"),
            (flags("8", "64", "1001"), "--repetitions"),
            (flags("8", "64", "2.5"), "--repetitions"),
        ] {
            let e = f.check().unwrap_err();
            assert_eq!(e.field, field, "{e}");
        }
        for timeout in ["0", "-1", "nan", "inf", "1e300", "abc", ""] {
            let f = ProbeArgs {
                timeout_s: timeout.into(),
                ..flags("8", "64", "3")
            };
            let e = f.check().unwrap_err();
            assert_eq!(e.field, "--timeout-s", "{timeout}: {e}");
        }
        let f = ProbeArgs {
            timeout_s: "2.5".into(),
            ..flags("8", "64", "3")
        };
        assert_eq!(f.check().unwrap().timeout_s, 2.5);
    }

    fn report(all_s: f64, slowest_alone_s: f64) -> ProbeReport {
        report_with_peers(all_s, slowest_alone_s, &[3e8, 1e8, 2e9])
    }

    fn report_with_peers(all_s: f64, slowest_alone_s: f64, peers: &[f64]) -> ProbeReport {
        let plan = flags("8", "1024", "3").check().unwrap();
        let link = |worker, bw| WorkerLink {
            worker,
            host: format!("h{worker}"),
            latency_s: 1e-5 * worker as f64,
            bandwidth_bytes_per_s: bw,
            one_way_s: vec![1e-5; plan.sizes_bytes.len()],
            simultaneous_bytes: 1024,
            alone_s: 1e-4,
        };
        ProbeReport::summarise(
            "h0".into(),
            &plan,
            vec![link(1, 1e9), link(2, 2e9), link(3, 1e7)],
            Simultaneous {
                bytes: 3072,
                all_s,
                slowest_alone_s,
            },
            peers
                .iter()
                .enumerate()
                .map(|(i, &bw)| PeerLink {
                    workers: [i + 1, i + 2],
                    hosts: [format!("h{}", i + 1), format!("h{}", i + 2)],
                    latency_s: 1e-5,
                    bandwidth_bytes_per_s: bw,
                    one_way_s: vec![1e-5; plan.sizes_bytes.len()],
                })
                .collect(),
        )
    }

    #[test]
    fn the_section_is_toml_with_the_medians() {
        let r = report(3e-4, 1e-4);
        let text = to_toml(&r);
        let value: toml::Table = text.parse().unwrap();
        let n = value["network"].as_table().unwrap();
        assert_eq!(n["latency_s"].as_float().unwrap(), 2e-5);
        assert_eq!(n["worker_bandwidth_bytes_per_s"].as_float().unwrap(), 1e9);
        assert_eq!(
            n["master_bandwidth_bytes_per_s"].as_float().unwrap(),
            1.024e7
        );
        assert_eq!(n["master_link_shared"].as_bool(), Some(true));
        // The median of the pairs' 3e8, 1e8 and 2e9.
        assert_eq!(n["peer_bandwidth_bytes_per_s"].as_float().unwrap(), 3e8);
        assert!(text.contains("differ more than 2x"), "{text}");
        assert!(text.contains("#    2-3  h2 h3"), "{text}");
        assert!(!report(1.2e-4, 1e-4).network.master_link_shared);
        // No pair (one worker): no key, no pair table.
        let alone = to_toml(&report_with_peers(3e-4, 1e-4, &[]));
        let value: toml::Table = alone.parse().unwrap();
        assert!(
            !value["network"]
                .as_table()
                .unwrap()
                .contains_key("peer_bandwidth_bytes_per_s")
        );
        assert!(!alone.contains("pair"), "{alone}");
    }
}
