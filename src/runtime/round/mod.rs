//! The MPI round: one iteration with real workers, as an engine round.
//!
//! It sends every worker its task and the model (nonblocking sends: the
//! master never waits for a straggler to take its task; the model is one
//! buffer shared by the K sends, see [`ModelPool`], but for a worker that
//! packs its vectors, which is sent θ at its entries in a buffer of its
//! own, see `packing`), then receives until the engine's stop
//! rule says to decode: every result of this iteration goes to the rule with
//! its arrival time in model time (wall seconds since the iteration started
//! over `straggler.time_unit_ms`), and when a deadline is pending the wait
//! ends there. Results of older iterations are received, dropped and
//! counted, never decoded into a newer one; a worker's acknowledgements keep
//! count of the tasks it has not taken, so a stopped worker is sent at most
//! [`protocol::MAX_UNTAKEN_TASKS`]. A worker's error, a caught signal, or silence for
//! `train.result_timeout_s` while the rule still waits end the round.
//!
//! A result is a header and then its coded vector. The master reads the
//! header at once and matches the vector (`MPI_Improbe`); an accepted vector
//! is received as it arrives, while the other workers still compute, into a
//! buffer kept across iterations, as long as the accepted vectors held fit in
//! [`RECEIVED_BYTES`]. Beyond that it is received only when the master decodes
//! ([`Round::combine`]), one at a time into one buffer: until then the data
//! waits at the worker (MPI's rendezvous protocol for messages above the
//! eager limit), so the master holds at most `RECEIVED_BYTES` plus O(d) for
//! results whatever K is. Stale vectors and those the rule does not use are
//! received at once and dropped. A packed vector (sparse features, see
//! `packing`) holds the values at its worker's entries alone and is added
//! into the sum there.
//!
//! With `aggregate = reduce` (docs/aggregate.md) a result is its header
//! alone and the worker keeps its vector. At the decode the master sends
//! each worker of the decodable set S (the accepted messages of nonzero
//! decode weight) an [`Order`](protocol::Order) with its coefficients; S
//! reduces Σ a·v among itself (a binomial tree of S only, so the stragglers
//! outside it never take part) and its lowest rank sends the sum: the master
//! receives one vector of d + 1 values, whatever |S| is. The master counts
//! every byte it receives ([`MpiRound::inbound_bytes_per_iteration`]).

//!
//! The round's phases, one a file: sending the tasks (`send`), handling a
//! message that comes meanwhile (`incoming`), waiting for the results and
//! accepting them (`wait`), and the decode's sum (`combine`).

mod combine;
mod incoming;
mod send;
mod wait;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use mpi::point_to_point::Message;

use super::comm::{Backoff, Comm, ModelPool, WaitMode, instant_after};
use super::interrupt;
use super::protocol::{self, ResultHeader};
use crate::engine::{Round, RoundError, RoundReport, RoundStatus, RoundTask, StopRule, Timing};
use crate::error::Iteration;
use crate::spec::Aggregation;

/// Longest sleep between probes while the master waits for results: short,
/// because every microsecond here lengthens the iteration.
const WAIT_CAP: Duration = Duration::from_micros(100);
/// How long the master spins (yielding the core) after each message before
/// it sleeps between probes (see [`Backoff`]).
const SPIN: Duration = Duration::from_micros(200);
/// Models in flight at most: buffers of d values the sends of past iterations
/// may still hold. A worker is sent at most [`protocol::MAX_UNTAKEN_TASKS`]
/// models it has not taken, so two stopped workers hold at most four, and
/// the current iteration and the one before need two more.
pub(super) const MAX_MODELS_IN_FLIGHT: usize = 6;
/// Bytes of accepted result vectors the master receives as they arrive (and
/// keeps for the next iterations): 8 vectors of a model with a million
/// parameters, whatever K is. Vectors beyond it wait at their workers until
/// the decode. (At 512 MiB the master held every accepted vector of K = 12
/// workers at d = 2·10^6, and its peak grew with K past issue 10's bound.)
pub(super) const RECEIVED_BYTES: usize = 64 << 20;

/// An accepted result's vector: received into one of the round's buffers,
/// or matched and waiting at its worker.
enum Held {
    Received(usize),
    Matched(Message, usize),
    /// `aggregate = reduce`: kept at its worker (the message's index in its task).
    AtWorker(usize),
}

/// The master's side of the iterations.
pub(super) struct MpiRound<'c> {
    comm: &'c Comm<'c>,
    workers: usize,
    /// d: the model's parameters.
    dim: usize,
    /// Emulate the sampled delays (the workers sleep until their due times).
    emulate: bool,
    time_unit_ms: f64,
    /// Give up when no result arrives for this long while the rule waits.
    result_timeout_s: f64,
    /// Per worker: iterations of the tasks sent that it has not taken yet.
    untaken: Vec<VecDeque<u64>>,
    /// Per worker: whether this iteration's task was sent to it (not, when
    /// it had too many tasks untaken).
    sent: Vec<bool>,
    /// Per worker, while it is not sent tasks because it has not taken its
    /// last ones: since when, and whether it was named on stderr (after
    /// [`SILENT_WARNING_S`] of it).
    silent: Vec<Option<(Instant, bool)>>,
    backoff: Backoff,
    models: ModelPool,
    /// This round's iteration and model, while it runs: a worker skipped
    /// for its untaken tasks that takes them meanwhile is sent the task late.
    round_model: Option<(u64, std::rc::Rc<Vec<f64>>)>,
    /// The accepted messages' vectors (gradient sum and loss sum) of this
    /// iteration and their workers, in arrival order.
    vectors: Vec<Option<(Held, usize)>>,
    /// Buffers of the vectors received as they arrived (see
    /// [`RECEIVED_BYTES`]), kept across iterations; the first
    /// `received_in_use` hold this iteration's.
    received: Vec<Vec<f64>>,
    received_in_use: usize,
    /// Where vectors are received, one at a time.
    scratch: Vec<f64>,
    /// Partitions of the training data.
    partitions: usize,
    /// The loss sum of each partition at this iteration's model, from the
    /// headers of its results (NaN: not known yet).
    partition_loss: Vec<f64>,
    /// Per partition: a classifier's correct predictions of its batch this
    /// iteration, from the result headers received (NaN until one comes).
    partition_correct: Vec<f64>,
    /// A worker's signal that came while [`Round::send_ahead`] sent: the
    /// next iteration is interrupted.
    pending_signal: Option<i32>,
    /// Per worker: the iteration of the task whose compute seconds (wall
    /// clock, CPU) were last added to the timing events, and how many. A
    /// result header carries the task's compute so far, so a multi-message
    /// task adds only what its newer message adds.
    counted_compute_s: Vec<(u64, f64, f64)>,
    /// Compute (wall clock, CPU) reported by results received but not used
    /// (stale, or after the decode): work the workers did, added to the
    /// timing events at the end of the round so the compute events hold
    /// every computation the workers reported, used or not.
    unused_compute_s: (f64, f64),
    /// How results reach the master (with `Reduce`, results are headers
    /// and the decodable set reduces its vectors).
    aggregation: Aggregation,
    /// Per worker: the entries of the d + 1 its packed vectors hold, in
    /// their order (`None`: it sends all d + 1 values; see `packing`).
    packed: Vec<Option<Vec<u32>>>,
    /// The iteration of the running round (the orders name it).
    iteration: u64,
    /// Bytes received by the master in the decoded iterations before this
    /// round, and how many; the bytes of this round so far, and whether it
    /// decoded (a round that does not, the final model's evaluation or one
    /// a signal stopped, is not an iteration and is not counted).
    inbound_bytes: u64,
    iterations_decoded: u64,
    round_bytes: u64,
    round_decoded: bool,
    /// The leaders' seconds forming their own shares and in the reduction
    /// tree, not yet added to the timing events (the next round adds them).
    reduce_leader_s: Option<(f64, f64)>,
    order: Vec<f64>,
    /// The iteration whose tasks were sent ahead ([`Round::send_ahead`]),
    /// and when: its round's clock starts there.
    ahead: Option<(u64, Instant)>,
    /// What the master received while sending ahead (stale results
    /// dropped), for that iteration's report.
    ahead_report: RoundReport,
}

impl<'c> MpiRound<'c> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        comm: &'c Comm<'c>,
        workers: usize,
        dim: usize,
        partitions: usize,
        emulate: bool,
        time_unit_ms: f64,
        result_timeout_s: f64,
        wait: WaitMode,
        aggregation: Aggregation,
        packed: Vec<Option<Vec<u32>>>,
    ) -> Self {
        Self {
            comm,
            workers,
            dim,
            emulate,
            time_unit_ms,
            result_timeout_s,
            untaken: vec![VecDeque::new(); workers],
            sent: vec![false; workers],
            silent: vec![None; workers],
            backoff: Backoff::for_mode(wait, WAIT_CAP, SPIN),
            models: ModelPool::new(MAX_MODELS_IN_FLIGHT),
            round_model: None,
            vectors: Vec::new(),
            scratch: Vec::new(),
            received: Vec::new(),
            received_in_use: 0,
            partitions,
            partition_loss: Vec::new(),
            partition_correct: Vec::new(),
            pending_signal: None,
            counted_compute_s: Vec::new(),
            unused_compute_s: (0.0, 0.0),
            aggregation,
            packed,
            iteration: 0,
            inbound_bytes: 0,
            iterations_decoded: 0,
            round_bytes: 0,
            round_decoded: false,
            reduce_leader_s: None,
            order: Vec::new(),
            ahead: None,
            ahead_report: RoundReport::default(),
        }
    }

    /// Mean bytes the master received per decoded iteration: every message
    /// from the send of θ to the decode (late results of an iteration
    /// that come during the next are counted in the next); `None` before
    /// the first decode.
    pub fn inbound_bytes_per_iteration(&self) -> Option<f64> {
        let (bytes, n) = if self.round_decoded {
            (
                self.inbound_bytes + self.round_bytes,
                self.iterations_decoded + 1,
            )
        } else {
            (self.inbound_bytes, self.iterations_decoded)
        };
        (n > 0).then(|| bytes as f64 / n as f64)
    }

    /// The last round's bytes go to the totals when it decoded.
    fn settle_round(&mut self) {
        if std::mem::take(&mut self.round_decoded) {
            self.inbound_bytes += self.round_bytes;
            self.iterations_decoded += 1;
        }
        self.round_bytes = 0;
    }

    /// The start of iteration `t`'s round, before its tasks are sent: the
    /// last round's vectors are dropped and its bytes settled.
    fn begin(&mut self, t: u64, timing: &mut Timing) -> Result<(), RoundError> {
        self.discard_vectors()?;
        self.iteration = t;
        self.settle_round();
        if let Some((share_s, tree_s)) = self.reduce_leader_s.take() {
            timing.add("reduce: own share (leader)", share_s);
            timing.add("reduce: tree (leader)", tree_s);
        }
        self.partition_loss.clear();
        self.partition_loss.resize(self.partitions, f64::NAN);
        self.partition_correct.clear();
        self.partition_correct.resize(self.partitions, f64::NAN);
        Ok(())
    }

    /// The entries worker `w` packs its vectors to; `None`: it sends all d + 1 values.
    fn entries(&self, w: usize) -> Option<&[u32]> {
        self.packed.get(w).and_then(Option::as_deref)
    }

    /// The values of worker `w`'s vectors: d + 1, or its packed entries.
    fn vector_len(&self, w: usize) -> usize {
        self.entries(w).map_or(self.dim + 1, <[u32]>::len)
    }

    /// Receive worker `rank`'s matched vector of `len` values into received
    /// buffer `slot` (`None`: the scratch buffer), counting its bytes, and
    /// waiting at most `train.result_timeout_s` for the rest of it.
    fn receive_counted(
        &mut self,
        message: Message,
        rank: i32,
        len: usize,
        slot: Option<usize>,
    ) -> Result<(), RoundError> {
        self.round_bytes += (len * size_of::<f64>()) as u64;
        let buffer = match slot {
            Some(i) => &mut self.received[i],
            None => &mut self.scratch,
        };
        let by = instant_after(Instant::now(), self.result_timeout_s);
        self.comm
            .receive_matched(message, rank, len, buffer, &mut self.backoff, by)
            .map_err(|e| {
                format!(
                    "{}: {e}: the rest did not come within {} s (train.result_timeout_s); it is stopped or hung",
                    Iteration(self.iteration),
                    self.result_timeout_s
                )
                .into()
            })
    }

    /// The compute (wall clock, CPU) that `header` of worker `w` reports
    /// beyond what its earlier results of the same task reported.
    fn new_compute_s(&mut self, w: usize, header: &ResultHeader) -> (f64, f64) {
        if self.counted_compute_s.len() <= w {
            self.counted_compute_s.resize(w + 1, (u64::MAX, 0.0, 0.0));
        }
        let (iteration, wall_s, cpu_s) = &mut self.counted_compute_s[w];
        if *iteration != header.iteration {
            (*iteration, *wall_s, *cpu_s) = (header.iteration, 0.0, 0.0);
        }
        if header.computations == 0 || header.compute_s <= *wall_s {
            return (0.0, 0.0);
        }
        let new = (header.compute_s - *wall_s, header.compute_cpu_s - *cpu_s);
        (*wall_s, *cpu_s) = (header.compute_s, header.compute_cpu_s);
        new
    }

    /// Receive every matched vector not received yet, dropping it; the
    /// first that does not arrive in time is the error, once all were tried.
    fn discard_vectors(&mut self) -> Result<(), RoundError> {
        let vectors = std::mem::take(&mut self.vectors);
        let mut first_error = None;
        for (held, w) in vectors.into_iter().flatten() {
            if let Held::Matched(message, len) = held
                && let Err(e) = self.receive_counted(message, w as i32 + 1, len, None)
            {
                first_error.get_or_insert(e);
            }
        }
        self.received_in_use = 0;
        first_error.map_or(Ok(()), Err)
    }

    /// The start of `task`'s round: the tasks sent, unless they were sent
    /// ahead; when they were sent (the round's clock starts there), or the
    /// status a signal ends the round with first.
    fn start(
        &mut self,
        task: &RoundTask<'_>,
        report: &mut RoundReport,
        timing: &mut Timing,
    ) -> Result<Result<Instant, RoundStatus>, RoundError> {
        let (t, k) = (task.iteration, self.workers);
        // Sent ahead: what came meanwhile was counted in the round's own report.
        let ahead = self.ahead.take().filter(|&(i, _)| i == t);
        if ahead.is_none() {
            self.begin(t, timing)?;
        }
        report.stale_dropped += std::mem::take(&mut self.ahead_report.stale_dropped);
        report.overrun_s.resize(k, 0.0);
        report.per_computation_s.resize(k, f64::NAN);
        report.message_bytes.resize(k, f64::NAN);
        report.compute_s.resize(k, f64::NAN);
        report.received_s.resize(k, f64::NAN);
        self.comm.awake();
        if let Some((_, sent)) = ahead {
            return Ok(Ok(sent));
        }
        let start = Instant::now();
        match timing.time("send", || self.send_tasks(task, report))? {
            Some(status) => Ok(Err(status)),
            None => Ok(Ok(start)),
        }
    }
}

impl Round for MpiRound<'_> {
    fn run(
        &mut self,
        task: &RoundTask<'_>,
        rule: &mut StopRule<'_>,
        report: &mut RoundReport,
        timing: &mut Timing,
    ) -> Result<RoundStatus, RoundError> {
        if let Some(signal) = interrupt::received().or(self.pending_signal.take()) {
            return Ok(RoundStatus::Interrupted { signal });
        }
        let start = match self.start(task, report, timing)? {
            Ok(start) => start,
            Err(status) => return Ok(status),
        };
        let wait_start = Instant::now();
        let status = self.await_results(task, rule, report, timing, start)?;
        timing.add("wait", wait_start.elapsed().as_secs_f64());
        let (wall_s, cpu_s) = std::mem::take(&mut self.unused_compute_s);
        if wall_s > 0.0 {
            timing.add("compute (workers)", wall_s);
            timing.add("compute (workers, CPU)", cpu_s);
        }
        report.duration_s = start.elapsed().as_secs_f64();
        Ok(status)
    }

    fn send_ahead(&mut self, task: &RoundTask<'_>, timing: &mut Timing) -> Result<(), RoundError> {
        // A signal stops the run at the next `run`: nothing is sent.
        if interrupt::received().is_some() || self.pending_signal.is_some() {
            return Ok(());
        }
        let t = task.iteration;
        self.begin(t, timing)?;
        let mut report = std::mem::take(&mut self.ahead_report);
        let start = Instant::now();
        let sent = timing.time("send", || self.send_tasks(task, &mut report));
        self.ahead_report = report;
        match sent? {
            None => self.ahead = Some((t, start)),
            // A worker's signal: the next `run` reports it.
            Some(RoundStatus::Interrupted { signal }) => self.pending_signal = Some(signal),
            Some(RoundStatus::Completed) => {}
        }
        Ok(())
    }

    fn hold(&mut self, iteration: u64) -> Result<(), RoundError> {
        for w in 0..self.workers {
            self.comm
                .send(w as i32 + 1, protocol::TAG_PAUSE, &[iteration as f64]);
        }
        Ok(())
    }

    fn combine(
        &mut self,
        order: &[usize],
        weights: &[f64],
        out: &mut Vec<f64>,
    ) -> Result<bool, RoundError> {
        self.round_decoded = true;
        if self.aggregation.reduces() {
            self.reduce_combine(order, weights, out)?;
        } else {
            self.gather_combine(order, weights, out)?;
        }
        Ok(true)
    }

    fn measures_time(&self) -> bool {
        true
    }

    fn batch_correct(&self, recovered: &[usize]) -> Option<f64> {
        let sum: f64 = recovered.iter().map(|&p| self.partition_correct[p]).sum();
        sum.is_finite().then_some(sum)
    }

    fn partition_losses(&self) -> Option<&[f64]> {
        Some(&self.partition_loss)
    }
}

impl Drop for MpiRound<'_> {
    /// No matched vector is left unreceived (a round that ended early).
    fn drop(&mut self) {
        if let Err(e) = self.discard_vectors() {
            log::warn!("master: at the end of the run: {e}");
        }
        log::info!(
            "master: {} model buffers allocated (at most {MAX_MODELS_IN_FLIGHT}), {} still held by sends",
            self.models.allocated(),
            self.models.held()
        );
    }
}
