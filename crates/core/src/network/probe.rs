//! What `gradcode probe` measures, and the `[network]` keys it fits to the
//! measurement (issue 26, item 2): the checked plan of a probe, the line
//! t(b) = latency + b / bandwidth through a link's one-way times
//! ([`fit_link`]), the bytes each worker sends when all send at once
//! ([`simultaneous_bytes`]) and the report that sums them up
//! ([`ProbeReport::summarise`]). The MPI program that measures is the app's
//! `runtime::probe`; the command `probe` parses its flags and prints.

use serde::Serialize;

/// The checked plan of a probe.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbePlan {
    /// Message sizes of the ping-pong, ascending: `min`, 4 `min`, ..., `max`.
    pub sizes_bytes: Vec<usize>,
    /// Timed repetitions per size (one untimed warm-up comes first); the
    /// fastest counts.
    pub repetitions: usize,
    /// How long the master waits for any one answer of a worker (or a pair)
    /// before it names the silent ranks and ends the job.
    pub timeout_s: f64,
    pub json: bool,
}

/// The largest message a probe sends: each rank holds two buffers of it.
pub const MAX_MESSAGE_BYTES: usize = 1 << 30;
/// At most this many timed repetitions per size.
pub const MAX_REPETITIONS: usize = 1000;
/// The longest `--timeout-s`: a week.
pub const MAX_TIMEOUT_S: f64 = 7.0 * 24.0 * 3600.0;
/// `--timeout-s` by default (the wait for the workers' first word when the
/// flags are refused): keep equal to the flag's default in the command `probe`.
pub const DEFAULT_TIMEOUT_S: f64 = 60.0;
/// The factor between consecutive ping-pong sizes.
pub const SIZE_FACTOR: usize = 4;
/// All-at-once counts as serialised on the master's link when it took more
/// than this many times the slowest worker alone.
const SHARED_FACTOR: f64 = 1.5;

/// `min`, `min` x 4, ... while below `max`, then `max`.
pub fn sizes(min: usize, max: usize) -> Vec<usize> {
    let mut out = vec![min];
    let mut next = min * SIZE_FACTOR;
    while next < max {
        out.push(next);
        next *= SIZE_FACTOR;
    }
    out.push(max);
    out
}

/// The link model fitted to one worker's one-way times.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LinkFit {
    /// Seconds a message takes besides its bytes (the intercept).
    pub latency_s: f64,
    /// Bytes per second (1 / the slope).
    pub bandwidth_bytes_per_s: f64,
}

/// Fit t = latency + bytes / bandwidth to `(bytes, seconds)` points: the
/// line through the smallest message's point (where the latency dominates;
/// its time the least of every size but the largest, since a message is
/// never faster than a smaller one on a quiet link) and the largest's
/// (where the bytes do). Not least squares over every
/// size: real links are not linear in between. A `tc tbf` limiter passes a
/// message up to its burst at line rate, and TCP's delayed
/// acknowledgements add tens of milliseconds to mid-size messages: in one
/// run on the test bed's 100 Mbit/s link (`tests/multihost.rs`), 128 KiB
/// took 34 ms one way and 512 KiB 49 ms, and a least-squares line over
/// 8 B..1 MiB weighted by relative residuals put the bandwidth 35x too high,
/// unweighted over the three largest sizes 1.4x. The intermediate sizes are
/// reported (`--json`: `one_way_s`) to show how far the line holds. An
/// intercept at or below zero (a link too fast for the smallest message to
/// show its latency) becomes the smallest message's time, an upper bound.
/// `None` when the largest message is not slower than the smallest (no
/// bandwidth to fit) or a time is not finite and positive.
pub fn fit_link(points: &[(usize, f64)]) -> Option<LinkFit> {
    if points.iter().any(|&(_, t)| !(t.is_finite() && t > 0.0)) {
        return None;
    }
    let &(b0, _) = points.iter().min_by_key(|&&(bytes, _)| bytes)?;
    let &(b1, t1) = points.iter().max_by_key(|&&(bytes, _)| bytes)?;
    // The smallest message's time, from below: no message but the largest
    // took less (a load spike on the smallest one, 2 ms for 8 bytes over a
    // 60 µs link in a loaded test run, would otherwise hide the line).
    let t0 = points
        .iter()
        .filter(|&&(bytes, _)| bytes < b1)
        .map(|&(_, t)| t)
        .fold(f64::INFINITY, f64::min);
    if b1 <= b0 || t1 <= t0 {
        return None;
    }
    let slope = (t1 - t0) / (b1 - b0) as f64;
    let intercept = t0 - b0 as f64 * slope;
    Some(LinkFit {
        latency_s: if intercept > 0.0 { intercept } else { t0 },
        bandwidth_bytes_per_s: 1.0 / slope,
    })
}

/// The smallest of a non-empty list.
pub fn fastest(times: &[f64]) -> f64 {
    times.iter().copied().fold(f64::INFINITY, f64::min)
}

/// The median of a non-empty list (the mean of the middle two when even).
pub fn median(values: &[f64]) -> f64 {
    super::fit::median(&mut values.to_vec())
}

/// The `[network]` keys a probe measured (the names the config reads).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Network {
    pub latency_s: f64,
    pub worker_bandwidth_bytes_per_s: f64,
    pub master_bandwidth_bytes_per_s: f64,
    pub master_link_shared: bool,
    /// `None` with one worker (no pair to measure).
    pub peer_bandwidth_bytes_per_s: Option<f64>,
}

/// One pair of workers' figures (measurement 3).
#[derive(Debug, Clone, Serialize)]
pub struct PeerLink {
    /// 1-based MPI ranks: the first timed the round trips.
    pub workers: [usize; 2],
    pub hosts: [String; 2],
    pub latency_s: f64,
    pub bandwidth_bytes_per_s: f64,
    /// The fastest one-way time of each ping-pong size.
    pub one_way_s: Vec<f64>,
}

/// One worker's figures.
#[derive(Debug, Clone, Serialize)]
pub struct WorkerLink {
    /// 1-based, the MPI rank.
    pub worker: usize,
    pub host: String,
    pub latency_s: f64,
    pub bandwidth_bytes_per_s: f64,
    /// The fastest one-way time of each ping-pong size.
    pub one_way_s: Vec<f64>,
    /// The bytes it sent in the all-at-once measurement.
    pub simultaneous_bytes: usize,
    /// The fastest time its message alone took to reach the master.
    pub alone_s: f64,
}

/// The all-at-once measurement.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Simultaneous {
    /// Σ b_i.
    pub bytes: usize,
    /// The fastest time until the master had every message.
    pub all_s: f64,
    /// The slowest worker's time alone.
    pub slowest_alone_s: f64,
}

/// Everything a probe reports (`--json` prints it as is).
#[derive(Debug, Clone, Serialize)]
pub struct ProbeReport {
    pub network: Network,
    pub master_host: String,
    pub sizes_bytes: Vec<usize>,
    pub repetitions: usize,
    pub workers: Vec<WorkerLink>,
    pub simultaneous: Simultaneous,
    /// Pairs of neighbouring workers (empty with one worker).
    pub peers: Vec<PeerLink>,
}

impl ProbeReport {
    /// The `[network]` keys from the per-worker fits, the all-at-once times
    /// and the pairs' fits.
    pub fn summarise(
        master_host: String,
        plan: &ProbePlan,
        workers: Vec<WorkerLink>,
        simultaneous: Simultaneous,
        peers: Vec<PeerLink>,
    ) -> Self {
        let latencies: Vec<f64> = workers.iter().map(|w| w.latency_s).collect();
        let bandwidths: Vec<f64> = workers.iter().map(|w| w.bandwidth_bytes_per_s).collect();
        let peer_bandwidths: Vec<f64> = peers.iter().map(|p| p.bandwidth_bytes_per_s).collect();
        let network = Network {
            latency_s: median(&latencies),
            worker_bandwidth_bytes_per_s: median(&bandwidths),
            master_bandwidth_bytes_per_s: simultaneous.bytes as f64 / simultaneous.all_s,
            master_link_shared: simultaneous.all_s > SHARED_FACTOR * simultaneous.slowest_alone_s,
            peer_bandwidth_bytes_per_s: (!peers.is_empty()).then(|| median(&peer_bandwidths)),
        };
        Self {
            network,
            master_host,
            sizes_bytes: plan.sizes_bytes.clone(),
            repetitions: plan.repetitions,
            workers,
            simultaneous,
            peers,
        }
    }
}

/// The bytes worker i sends all at once: `max` scaled by its bandwidth
/// relative to the fastest, at least `min`.
pub fn simultaneous_bytes(bandwidths: &[f64], min: usize, max: usize) -> Vec<usize> {
    let fastest = bandwidths.iter().copied().fold(0.0, f64::max);
    bandwidths
        .iter()
        .map(|&b| ((max as f64 * b / fastest).round() as usize).clamp(min, max))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fit_recovers_a_line_exactly() {
        let (latency, bandwidth) = (3e-5, 1.25e7);
        let points: Vec<(usize, f64)> = sizes(8, 1 << 20)
            .into_iter()
            .map(|b| (b, latency + b as f64 / bandwidth))
            .collect();
        let fit = fit_link(&points).unwrap();
        assert!((fit.latency_s / latency - 1.0).abs() < 1e-9, "{fit:?}");
        assert!(
            (fit.bandwidth_bytes_per_s / bandwidth - 1.0).abs() < 1e-9,
            "{fit:?}"
        );
    }

    #[test]
    fn a_negative_intercept_falls_back_to_the_smallest_time() {
        // Times proportional to size (1 ns per byte), the smallest below the line.
        let points = vec![(8, 4e-9), (1024, 1.024e-6), (1 << 20, 1.048576e-3)];
        let fit = fit_link(&points).unwrap();
        assert_eq!(fit.latency_s, 4e-9, "{fit:?}");
    }

    #[test]
    fn a_slow_smallest_message_does_not_hide_the_line() {
        // A loaded run: 8 bytes took 2 ms; every other size is on the line.
        let (latency, bandwidth) = (5e-5, 1e9);
        let mut points: Vec<(usize, f64)> = sizes(8, 1 << 20)
            .into_iter()
            .map(|b| (b, latency + b as f64 / bandwidth))
            .collect();
        points[0].1 = 2e-3;
        let fit = fit_link(&points).unwrap();
        // The line through the fastest small message (32 bytes) and the largest.
        let t0 = latency + 32.0 / bandwidth;
        let t1 = latency + (1 << 20) as f64 / bandwidth;
        let slope = (t1 - t0) / ((1 << 20) - 8) as f64;
        assert!(
            (fit.bandwidth_bytes_per_s * slope - 1.0).abs() < 1e-12,
            "{fit:?}"
        );
        assert!(
            (fit.bandwidth_bytes_per_s / bandwidth - 1.0).abs() < 1e-4,
            "{fit:?}"
        );
        assert!((fit.latency_s / latency - 1.0).abs() < 1e-3, "{fit:?}");
    }

    #[test]
    fn times_that_do_not_grow_have_no_bandwidth() {
        assert_eq!(fit_link(&[(8, 1e-3), (1 << 20, 1e-3)]), None);
        assert_eq!(fit_link(&[(8, 2e-3), (1 << 20, 1e-3)]), None);
        assert_eq!(fit_link(&[(8, 0.0), (1 << 20, 1e-3)]), None);
        assert_eq!(fit_link(&[(8, 1e-3)]), None);
    }

    #[test]
    fn medians_of_odd_and_even_lists() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn simultaneous_sends_scale_with_bandwidth() {
        assert_eq!(
            simultaneous_bytes(&[1e9, 5e8, 1e3], 8, 1000),
            vec![1000, 500, 8]
        );
    }
}
