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
//!    is fitted through the smallest and the largest size ([`fit_link`]
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
//! Every rank parses the same flags; rank 0 checks them and the world size
//! and sends each worker the verdict before any measurement, so a bad flag
//! or a run on one rank ends every rank with exit status 2 and one `error:`
//! line. There is no collective: every wait of rank 0 for a worker is
//! bounded by `--timeout-s`, after which the silent worker (or pair) is
//! named and the job ends with `MPI_Abort`.

// Without MPI only the flags are used (`probe` is refused); the plan, the
// fits and the report serve the measurement.
#![cfg_attr(not(feature = "mpi"), allow(dead_code))]

use clap::Args;
use serde::Serialize;

use crate::error::InputError;

/// The flags of `probe`, as given (checked by [`ProbeArgs::check`]).
// The numbers are text, checked by rank 0 alone after MPI starts
// (ProbeArgs::check): a bad value is then one line, not one per rank.
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
/// flags are refused): keep equal to the flag's default in `cli`.
pub const DEFAULT_TIMEOUT_S: f64 = 60.0;
/// The factor between consecutive ping-pong sizes.
const SIZE_FACTOR: usize = 4;
/// All-at-once counts as serialised on the master's link when it took more
/// than this many times the slowest worker alone.
const SHARED_FACTOR: f64 = 1.5;

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

/// `min`, `min` x 4, ... while below `max`, then `max`.
fn sizes(min: usize, max: usize) -> Vec<usize> {
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
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
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

    /// The section to paste, then the measurements as TOML comments.
    pub fn to_toml(&self) -> String {
        let n = &self.network;
        let mut out = format!(
            "# gradcode probe: {} workers, messages of {}..{} bytes, fastest of {} repetitions\n",
            self.workers.len(),
            self.sizes_bytes[0],
            self.sizes_bytes[self.sizes_bytes.len() - 1],
            self.repetitions
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
        let (lo, hi) = self
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
        out += &format!("# master (rank 0) on {}\n", self.master_host);
        out += &format!(
            "# {:>6}  {:<20} {:>12} {:>22} {:>14} {:>12}\n",
            "worker", "host", "latency_s", "bandwidth_bytes_per_s", "simultaneous_B", "alone_s"
        );
        for w in &self.workers {
            out += &format!(
                "# {:>6}  {:<20} {:>12.4e} {:>22.4e} {:>14} {:>12.4e}\n",
                w.worker,
                w.host,
                w.latency_s,
                w.bandwidth_bytes_per_s,
                w.simultaneous_bytes,
                w.alone_s
            );
        }
        let s = &self.simultaneous;
        out += &format!(
            "# all workers at once: {} bytes in {:.4e} s (slowest alone {:.4e} s)\n",
            s.bytes, s.all_s, s.slowest_alone_s
        );
        if !self.peers.is_empty() {
            out += &format!(
                "# {:>6}  {:<41} {:>12} {:>22}\n",
                "pair", "hosts", "latency_s", "bandwidth_bytes_per_s"
            );
        }
        for p in &self.peers {
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
}

/// The bytes worker i sends all at once: `max` scaled by its bandwidth
/// relative to the fastest, at least `min`.
fn simultaneous_bytes(bandwidths: &[f64], min: usize, max: usize) -> Vec<usize> {
    let fastest = bandwidths.iter().copied().fold(0.0, f64::max);
    bandwidths
        .iter()
        .map(|&b| ((max as f64 * b / fastest).round() as usize).clamp(min, max))
        .collect()
}

#[cfg(feature = "mpi")]
pub use measure::run;

/// Without MPI there is nothing to measure with.
#[cfg(not(feature = "mpi"))]
pub fn run(_flags: &ProbeArgs) -> anyhow::Result<()> {
    Err(InputError::new("probe", "this gradcode was built without the `mpi` feature").into())
}

#[cfg(feature = "mpi")]
mod measure {
    use std::time::{Duration, Instant};

    use mpi::topology::{Process, SimpleCommunicator};
    use mpi::traits::*;

    use super::*;
    use crate::error::QuietExit;
    use crate::runtime::host_name;

    /// The master's commands to a worker: `[kind, bytes, count, peer]`
    /// (`peer`: the rank it exchanges messages with; 0, the master, but in a
    /// pair of workers).
    const TAG_COMMAND: i32 = 1;
    /// Payload messages.
    const TAG_DATA: i32 = 2;
    /// A pair's fastest one-way time, from its first worker to the master.
    const TAG_RESULT: i32 = 3;
    /// Answer `count` messages of `peer` (the master's ping-pong, or the
    /// second worker of a pair).
    const PING_PONG: u64 = 1;
    const SEND: u64 = 2;
    const DONE: u64 = 3;
    /// Time `count` round trips to `peer` and report the fastest half.
    const PEER_PING: u64 = 4;

    /// The fastest one-way time (half a round trip) of `count` round trips
    /// of `bytes` with `other`, the first untimed (a warm-up: it opens the
    /// connection, touches the pages).
    fn fastest_one_way(other: &Process<'_>, buffer: &mut [u8], bytes: usize, count: usize) -> f64 {
        let mut times = Vec::with_capacity(count.saturating_sub(1));
        for rep in 0..count {
            let start = Instant::now();
            other.send_with_tag(&buffer[..bytes], TAG_DATA);
            other.receive_into_with_tag(&mut buffer[..bytes], TAG_DATA);
            if rep > 0 {
                times.push(start.elapsed().as_secs_f64() / 2.0);
            }
        }
        fastest(&times)
    }

    /// How long an idle worker sleeps between probes for the next command
    /// (the ranks of a probe may share few cores: an idle rank must not spin).
    /// It delays the start of an all-at-once round by at most this much
    /// (and the rounds of each worker alone alike).
    const IDLE_SLEEP: Duration = Duration::from_micros(100);

    /// The verdict on the flags, rank 0 → every worker.
    const TAG_VERDICT: i32 = 4;
    /// A worker's host name, worker → rank 0.
    const TAG_HOST: i32 = 5;

    /// `gradcode probe` on every rank.
    ///
    /// No collective: each worker first sends rank 0 its host name (so that
    /// every first contact goes to rank 0, as in train: under MPICH over
    /// UCX/TCP a first message from rank 0 to worker 1 did not arrive while
    /// worker 2 was stopped), then rank 0 sends each the verdict on the
    /// flags; every wait of rank 0 for a
    /// worker is watched ([`Watchdog`]): a worker (or a pair) silent for
    /// `--timeout-s` is named and the job ends.
    pub fn run(flags: &ProbeArgs) -> anyhow::Result<()> {
        let inherited = crate::finalize::InheritedSockets::record();
        // Funneled: the watchdog thread may end the job (MPI_Abort).
        let (universe, _) = mpi::initialize_with_threading(mpi::Threading::Funneled)
            .ok_or_else(|| anyhow::anyhow!("MPI was already initialised"))?;
        let outcome = probe_rank(&universe, flags);
        // MPI_Finalize (dropping the universe) cannot hang the finished job.
        let library = mpi::environment::library_version().unwrap_or_default();
        crate::finalize::FinalizeGuard::arm(&inherited, &library);
        drop(universe);
        outcome
    }

    /// This rank's part of the probe.
    fn probe_rank(universe: &mpi::environment::Universe, flags: &ProbeArgs) -> anyhow::Result<()> {
        let world = universe.world();
        let ranks = world.size() as usize;
        if world.rank() != 0 {
            crate::signals::stop_if_asked(world.rank(), "before it says its host");
            // Its host first (as train's hello): rank 0 hears from every
            // worker before it sends anything.
            let master = world.process_at_rank(0);
            master.send_with_tag(host_name().as_bytes(), TAG_HOST);
            wait_for(&master, TAG_VERDICT);
            let (verdict, _) = master.receive_with_tag::<u8>(TAG_VERDICT);
            if verdict != 0 {
                return Err(QuietExit(2).into());
            }
            worker(&world);
            return Ok(());
        }
        // Rank 0 checks the flags, hears every worker (each waited for at
        // most --timeout-s, its default when the flags are bad), then tells
        // them the verdict before anything is measured.
        let checked = check(flags, ranks);
        let timeout_s = checked
            .as_ref()
            .map_or(DEFAULT_TIMEOUT_S, |plan| plan.timeout_s);
        let watchdog = Watchdog::start(timeout_s);
        let mut hosts = vec![host_name()];
        for w in 1..ranks as i32 {
            let worker = world.process_at_rank(w);
            watchdog.waiting(format!("worker {w} (its host name, at the start)"));
            wait_for(&worker, TAG_HOST);
            let (name, _) = worker.receive_vec_with_tag::<u8>(TAG_HOST);
            hosts.push(String::from_utf8_lossy(&name).into_owned());
        }
        watchdog.idle();
        // Printed before the verdict: the workers exit as soon as they hear,
        // and the launcher may then end rank 0 first.
        if let Err(e) = &checked {
            crate::errln!("error: {e}");
        }
        let verdict = u8::from(checked.is_err());
        for w in 1..ranks as i32 {
            world
                .process_at_rank(w)
                .send_with_tag(&verdict, TAG_VERDICT);
        }
        let Ok(plan) = checked else {
            return Err(QuietExit(2).into());
        };
        let report = master(&world, &plan, hosts, &watchdog);
        for w in 1..ranks as i32 {
            world
                .process_at_rank(w)
                .send_with_tag(&[DONE, 0, 0, 0][..], TAG_COMMAND);
        }
        watchdog.idle();
        let report = report?;
        if plan.json {
            crate::outln!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            crate::outln!("{}", report.to_toml().trim_end());
        }
        Ok(())
    }

    /// Wait without spinning until `from` has sent a message with `tag`.
    fn wait_for(from: &Process<'_>, tag: i32) {
        while from.immediate_probe_with_tag(tag).is_none() {
            std::thread::sleep(IDLE_SLEEP);
        }
    }

    fn check(flags: &ProbeArgs, ranks: usize) -> Result<ProbePlan, InputError> {
        let plan = flags.check()?;
        if ranks < 2 {
            return Err(InputError::value(
                "MPI ranks",
                ranks,
                "is too few: probe measures the links between rank 0 (the master) and ranks 1..K (the workers); run it as mpirun -n K+1 gradcode probe with K >= 1",
            ));
        }
        Ok(plan)
    }

    /// What rank 0 waits for, and since when: a thread ends the job when one
    /// wait lasts longer than `--timeout-s`, naming what it waited for
    /// (rank 0's own MPI calls block, so the bound must come from beside them).
    struct Watchdog {
        waiting: std::sync::Arc<std::sync::Mutex<Option<(Instant, String)>>>,
    }

    impl Watchdog {
        fn start(timeout_s: f64) -> Self {
            let waiting: std::sync::Arc<std::sync::Mutex<Option<(Instant, String)>>> =
                std::sync::Arc::default();
            let watched = std::sync::Arc::clone(&waiting);
            let limit = Duration::from_secs_f64(timeout_s);
            let spawned = std::thread::Builder::new()
                .name("probe-watchdog".to_string())
                .spawn(move || {
                    loop {
                        std::thread::sleep(Duration::from_millis(100).min(limit));
                        let late = watched
                            .lock()
                            .ok()
                            .and_then(|w| w.as_ref().filter(|(since, _)| since.elapsed() >= limit).map(|(_, what)| what.clone()));
                        if let Some(what) = late {
                            crate::errln!(
                                "error: probe: no answer from {what} within {timeout_s} s (--timeout-s): it is stopped, hung or gone; ending the job (MPI_Abort)"
                            );
                            crate::output::drain_to_launcher(Duration::from_secs(1));
                            // SAFETY: MPI is initialised (the watchdog starts
                            // after MPI_Init) and rank 0 finalises only after
                            // it has stopped waiting; MPI_Abort does not return.
                            unsafe {
                                mpi::ffi::MPI_Abort(mpi::ffi::RSMPI_COMM_WORLD, 1);
                            }
                        }
                    }
                });
            if let Err(e) = spawned {
                log::warn!("probe: no watchdog thread ({e}): a silent worker is not timed out");
            }
            Self { waiting }
        }

        /// Rank 0 now waits for `what` (a worker, a pair, the workers).
        fn waiting(&self, what: String) {
            if let Ok(mut w) = self.waiting.lock() {
                *w = Some((Instant::now(), what));
            }
        }

        /// Rank 0 waits for no one.
        fn idle(&self) {
            if let Ok(mut w) = self.waiting.lock() {
                *w = None;
            }
        }
    }

    /// A worker: wait for each command without spinning, carry it out.
    fn worker(world: &SimpleCommunicator) {
        let master = world.process_at_rank(0);
        let mut buffer = Vec::new();
        loop {
            while master.immediate_probe_with_tag(TAG_COMMAND).is_none() {
                std::thread::sleep(IDLE_SLEEP);
            }
            let mut command = [0u64; 4];
            master.receive_into_with_tag(&mut command[..], TAG_COMMAND);
            let [kind, bytes, count, peer] = command;
            let bytes = bytes as usize;
            if buffer.len() < bytes {
                buffer.resize(bytes, 0u8);
            }
            let other = world.process_at_rank(peer as i32);
            match kind {
                PING_PONG => {
                    for _ in 0..count {
                        other.receive_into_with_tag(&mut buffer[..bytes], TAG_DATA);
                        other.send_with_tag(&buffer[..bytes], TAG_DATA);
                    }
                }
                SEND => master.send_with_tag(&buffer[..bytes], TAG_DATA),
                PEER_PING => {
                    let one_way = fastest_one_way(&other, &mut buffer, bytes, count as usize);
                    master.send_with_tag(&[one_way][..], TAG_RESULT);
                }
                _ => return,
            }
        }
    }

    /// The master: both measurements, then the report.
    fn master(
        world: &SimpleCommunicator,
        plan: &ProbePlan,
        hosts: Vec<String>,
        watchdog: &Watchdog,
    ) -> anyhow::Result<ProbeReport> {
        let workers = world.size() as usize - 1;
        let max = *plan.sizes_bytes.last().expect("at least two sizes");
        let min = plan.sizes_bytes[0];
        let mut buffer = vec![0u8; max];
        let mut links = Vec::with_capacity(workers);
        for (w, host) in hosts.iter().enumerate().skip(1) {
            let peer = world.process_at_rank(w as i32);
            let mut one_way_s = Vec::with_capacity(plan.sizes_bytes.len());
            for &bytes in &plan.sizes_bytes {
                // One untimed warm-up, then the timed repetitions.
                let count = plan.repetitions + 1;
                watchdog.waiting(format!("worker {w} (ping-pong of {bytes} bytes)"));
                peer.send_with_tag(&[PING_PONG, bytes as u64, count as u64, 0][..], TAG_COMMAND);
                one_way_s.push(fastest_one_way(&peer, &mut buffer, bytes, count));
            }
            let fit = fit_sizes(plan, &one_way_s, &format!("worker {w}"))?;
            links.push(WorkerLink {
                worker: w,
                host: host.clone(),
                latency_s: fit.latency_s,
                bandwidth_bytes_per_s: fit.bandwidth_bytes_per_s,
                one_way_s,
                simultaneous_bytes: 0,
                alone_s: 0.0,
            });
        }
        let bandwidths: Vec<f64> = links.iter().map(|l| l.bandwidth_bytes_per_s).collect();
        let sends = simultaneous_bytes(&bandwidths, min, max);
        let everyone: Vec<usize> = (1..=workers).collect();
        let total: usize = sends.iter().sum();
        buffer.resize(total.max(max), 0);
        for (link, &bytes) in links.iter_mut().zip(&sends) {
            link.simultaneous_bytes = bytes;
        }
        let mut alone = Vec::with_capacity(workers);
        for w in 1..=workers {
            watchdog.waiting(format!("worker {w} (its message alone)"));
            alone.push(timed_sends(
                world,
                &[w],
                &sends,
                plan.repetitions,
                &mut buffer,
            ));
        }
        for (link, &t) in links.iter_mut().zip(&alone) {
            link.alone_s = t;
        }
        watchdog.waiting(format!("one of workers 1..{workers} (all sending at once)"));
        let all_s = timed_sends(world, &everyone, &sends, plan.repetitions, &mut buffer);
        let simultaneous = Simultaneous {
            bytes: total,
            all_s,
            slowest_alone_s: alone.iter().copied().fold(0.0, f64::max),
        };
        let mut peers = Vec::with_capacity(workers.saturating_sub(1));
        for a in 1..workers {
            watchdog.waiting(format!("workers {a} and {} (their ping-pong)", a + 1));
            peers.push(peer_link(world, plan, [a, a + 1], &hosts)?);
        }
        Ok(ProbeReport::summarise(
            hosts[0].clone(),
            plan,
            links,
            simultaneous,
            peers,
        ))
    }

    /// The line through the fastest one-way times of the plan's sizes, or
    /// an error naming `who` when they did not grow with the size.
    fn fit_sizes(plan: &ProbePlan, one_way_s: &[f64], who: &str) -> anyhow::Result<LinkFit> {
        let points: Vec<(usize, f64)> = plan
            .sizes_bytes
            .iter()
            .copied()
            .zip(one_way_s.iter().copied())
            .collect();
        fit_link(&points).ok_or_else(|| {
            anyhow::anyhow!(
                "{who}: the one-way time did not grow with the message size ({one_way_s:?} s for {:?} bytes): no bandwidth to fit; raise --max-bytes",
                plan.sizes_bytes
            )
        })
    }

    /// Measurement 3 for the workers `pair`: the first pings, the second
    /// answers, the first reports each size's fastest one-way time.
    fn peer_link(
        world: &SimpleCommunicator,
        plan: &ProbePlan,
        pair: [usize; 2],
        hosts: &[String],
    ) -> anyhow::Result<PeerLink> {
        let [a, b] = pair;
        let mut one_way_s = Vec::with_capacity(plan.sizes_bytes.len());
        for &bytes in &plan.sizes_bytes {
            // One untimed warm-up, as measurement 1.
            let count = (plan.repetitions + 1) as u64;
            world
                .process_at_rank(b as i32)
                .send_with_tag(&[PING_PONG, bytes as u64, count, a as u64][..], TAG_COMMAND);
            let first = world.process_at_rank(a as i32);
            first.send_with_tag(&[PEER_PING, bytes as u64, count, b as u64][..], TAG_COMMAND);
            // Waiting without spinning: the pair may share the master's cores.
            while first.immediate_probe_with_tag(TAG_RESULT).is_none() {
                std::thread::sleep(IDLE_SLEEP);
            }
            let mut fastest_s = [0f64];
            first.receive_into_with_tag(&mut fastest_s[..], TAG_RESULT);
            one_way_s.push(fastest_s[0]);
        }
        let fit = fit_sizes(plan, &one_way_s, &format!("workers {a} and {b}"))?;
        Ok(PeerLink {
            workers: pair,
            hosts: [hosts[a].clone(), hosts[b].clone()],
            latency_s: fit.latency_s,
            bandwidth_bytes_per_s: fit.bandwidth_bytes_per_s,
            one_way_s,
        })
    }

    /// The fastest, over a warm-up and `repetitions` timed rounds, of the time
    /// from the master's command to the arrival of the last message when the
    /// workers `who` (1-based) each send their `sends[w - 1]` bytes at once;
    /// `buffer` holds at least their sum.
    fn timed_sends(
        world: &SimpleCommunicator,
        who: &[usize],
        sends: &[usize],
        repetitions: usize,
        buffer: &mut [u8],
    ) -> f64 {
        let mut times = Vec::with_capacity(repetitions);
        for rep in 0..=repetitions {
            // Disjoint parts of the buffer, one per sender, all receiving at once.
            let mut parts = Vec::with_capacity(who.len());
            let mut rest = &mut buffer[..];
            for &w in who {
                let (part, tail) = rest.split_at_mut(sends[w - 1]);
                parts.push(part);
                rest = tail;
            }
            let start = Instant::now();
            mpi::request::scope(|scope| {
                let mut requests = Vec::with_capacity(who.len());
                for (&w, part) in who.iter().zip(parts) {
                    let peer = world.process_at_rank(w as i32);
                    requests.push(peer.immediate_receive_into_with_tag(scope, part, TAG_DATA));
                }
                for &w in who {
                    world
                        .process_at_rank(w as i32)
                        .send_with_tag(&[SEND, sends[w - 1] as u64, 0][..], TAG_COMMAND);
                }
                for request in requests {
                    request.wait();
                }
            });
            if rep > 0 {
                times.push(start.elapsed().as_secs_f64());
            }
        }
        fastest(&times)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let text = r.to_toml();
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
        let alone = report_with_peers(3e-4, 1e-4, &[]).to_toml();
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
