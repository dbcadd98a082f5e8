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

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use mpi::point_to_point::Message;

use super::comm::{Backoff, Comm, ModelPool, Received, Wait, WaitMode, instant_after};
use super::interrupt;
use super::packing;
use super::protocol::{self, Pace, ResultHeader, Task};
use crate::coding::Arrival;
use crate::engine::{
    Decision, Round, RoundError, RoundReport, RoundStatus, RoundTask, StopRule, Timing,
};
use crate::error::Iteration;
use crate::learn::kernel;

/// How long a worker goes without taking its tasks before the master names
/// it on stderr (seconds).
const SILENT_WARNING_S: f64 = 1.0;
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
    /// `aggregate = reduce`: results are headers, the decodable set reduces.
    reduce: bool,
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
        reduce: bool,
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
            reduce,
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

    /// `aggregate = reduce`: order every worker of the decodable set (its
    /// accepted messages of nonzero weight) to reduce Σ weight · vector, its
    /// terms in `order`'s order, and receive the sum from the set's lowest
    /// rank, waiting at most `train.result_timeout_s`.
    fn reduce_combine(
        &mut self,
        order: &[usize],
        weights: &[f64],
        out: &mut Vec<f64>,
    ) -> Result<(), RoundError> {
        let (t, dim) = (self.iteration, self.dim);
        let mut shares: std::collections::BTreeMap<usize, Vec<(usize, f64)>> = Default::default();
        for &i in order {
            if let Some((Held::AtWorker(message), w)) = self.vectors[i].take()
                && weights[i] != 0.0
            {
                shares.entry(w).or_default().push((message, weights[i]));
            }
        }
        self.discard_vectors()?;
        out.clear();
        out.resize(dim + 1, 0.0);
        if shares.is_empty() {
            return Ok(());
        }
        let members: Vec<i32> = shares.keys().map(|&w| w as i32 + 1).collect();
        for (w, terms) in shares {
            let order = protocol::Order {
                iteration: t,
                members: members.clone(),
                terms,
            };
            order.encode_into(&mut self.order);
            self.comm
                .send(w as i32 + 1, protocol::TAG_ORDER, &self.order);
        }
        let leader = members[0];
        let by = instant_after(Instant::now(), self.result_timeout_s);
        let Some((message, len)) =
            self.comm
                .probe_from(leader, protocol::TAG_REDUCED, &mut self.backoff, by)
        else {
            return Err(format!(
                "{}: the decodable set's reduction (workers {members:?}) delivered no sum within {} s (train.result_timeout_s): one of them is stopped, hung or gone",
                Iteration(t),
                self.result_timeout_s
            )
            .into());
        };
        self.receive_counted(message, leader, len, None)?;
        if len != dim + 3 {
            return Err(format!(
                "worker {leader} sent a reduced vector of {len} values, expected {}",
                dim + 3
            )
            .into());
        }
        out.copy_from_slice(&self.scratch[..=dim]);
        let (share_s, tree_s) = self.reduce_leader_s.unwrap_or((0.0, 0.0));
        self.reduce_leader_s = Some((
            share_s + self.scratch[dim + 1],
            tree_s + self.scratch[dim + 2],
        ));
        if let Some(bad) = out.iter().position(|v| !v.is_finite()) {
            let what = if bad == dim {
                "loss".to_string()
            } else {
                format!("gradient entry {}", bad + 1)
            };
            log::warn!(
                "{}: the reduced sum of workers {members:?} has a non-finite {what}",
                Iteration(t)
            );
        }
        Ok(())
    }

    /// A model buffer for iteration `t`. When all [`MAX_MODELS_IN_FLIGHT`]
    /// are held by sends that workers have not taken, wait for one to
    /// complete, at most `train.result_timeout_s`, then fail naming them.
    fn model_buffer(
        &mut self,
        t: u64,
        eval_point: &[f64],
    ) -> Result<Result<std::rc::Rc<Vec<f64>>, RoundStatus>, RoundError> {
        if let Some(buffer) = self.models.fill(eval_point) {
            return Ok(Ok(buffer));
        }
        let start = Instant::now();
        let give_up = instant_after(start, self.result_timeout_s);
        log::warn!(
            "{}: all {MAX_MODELS_IN_FLIGHT} model buffers are held by sends to workers {:?}; waiting",
            Iteration(t),
            self.comm.pending_ranks()
        );
        loop {
            self.comm.reap();
            if let Some(buffer) = self.models.fill(eval_point) {
                return Ok(Ok(buffer));
            }
            if let Some(signal) = interrupt::received() {
                return Ok(Err(RoundStatus::Interrupted { signal }));
            }
            if give_up.is_some_and(|g| Instant::now() >= g) {
                let ranks: Vec<String> = self
                    .comm
                    .pending_ranks()
                    .iter()
                    .map(|r| r.to_string())
                    .collect();
                return Err(format!(
                    "{}: the {MAX_MODELS_IN_FLIGHT} models in flight are held by sends that workers {} \
                     have not taken for {} s (train.result_timeout_s): they are stopped or hung",
                    Iteration(t),
                    ranks.join(", "),
                    self.result_timeout_s
                )
                .into());
            }
            self.backoff.pause(give_up);
        }
    }

    /// Handle a message that came while the master waits for the results of
    /// `task`: acknowledgements, errors, signals, results of older iterations
    /// (dropped, counted in `report`) and results of this iteration, whose
    /// partition losses are noted and whose vector is matched, not received.
    fn incoming(
        &mut self,
        m: Received,
        task: &RoundTask<'_>,
        report: &mut RoundReport,
    ) -> Result<Incoming, RoundError> {
        let t = task.iteration;
        self.round_bytes += (m.data.len() * size_of::<f64>()) as u64;
        match m.tag {
            protocol::TAG_ACK => {
                let taken = m.data.first().copied().unwrap_or(f64::NAN);
                let w = (m.rank - 1) as usize;
                let queue = &mut self.untaken[w];
                while queue.front().is_some_and(|&i| i as f64 <= taken) {
                    queue.pop_front();
                }
                // Skipped at this round's send for lagging, it caught up: it
                // gets this round's task now (an exact scheme may need it).
                if !self.sent[w]
                    && (self.untaken[w].len() as u64) < protocol::MAX_UNTAKEN_TASKS
                    && let Some((iteration, model)) = &self.round_model
                    && *iteration == t
                {
                    let model = model.clone();
                    self.send_task(w, task, &model);
                }
                return Ok(Incoming::Handled);
            }
            protocol::TAG_SIGNAL => {
                // A worker caught SIGTERM or SIGINT: the job is being stopped.
                return Ok(Incoming::Signal(m.data.first().map_or(15, |&s| s as i32)));
            }
            protocol::TAG_ERROR => {
                return Err(protocol::WorkerError::decode(&m.data).at_rank(m.rank));
            }
            tag if !protocol::is_iteration_tag(tag) => {
                return Err(
                    format!("worker {} sent tag {tag} during {}", m.rank, Iteration(t)).into(),
                );
            }
            _ => {}
        }
        let header = ResultHeader::decode(&m.data)?;
        // Gathering, its vector follows at once (the worker posts both sends
        // together); reducing, the worker keeps it (`aggregate = reduce`).
        let vector = if self.reduce {
            None
        } else {
            let vector_by = instant_after(Instant::now(), self.result_timeout_s);
            let Some(vector) =
                self.comm
                    .probe_from(m.rank, protocol::TAG_VECTOR, &mut self.backoff, vector_by)
            else {
                return Err(format!(
                    "{}: worker {} sent a result header without its vector",
                    Iteration(t),
                    m.rank
                )
                .into());
            };
            Some(vector)
        };
        let expected_len = self.vector_len((m.rank - 1) as usize);
        let bad_len = vector
            .as_ref()
            .map(|&(_, len)| len)
            .filter(|&len| len != expected_len);
        if header.iteration < t || bad_len.is_some() {
            if let Some((vector, len)) = vector {
                self.receive_counted(vector, m.rank, len, None)?;
            }
            let (wall_s, cpu_s) = self.new_compute_s((m.rank - 1) as usize, &header);
            self.unused_compute_s.0 += wall_s;
            self.unused_compute_s.1 += cpu_s;
            if let Some(len) = bad_len {
                return Err(format!(
                    "worker {} sent a vector of {len} values, expected {expected_len}",
                    m.rank
                )
                .into());
            }
            report.stale_dropped += 1;
            return Ok(Incoming::Handled);
        }
        let w = (m.rank - 1) as usize;
        let work = &task.plan.tasks[w];
        let expected = work.messages.get(header.message).map(|msg| msg.codeword.id);
        if header.iteration > t
            || expected != Some(header.codeword)
            || header.computations > work.compute.len()
        {
            if let Some((vector, len)) = vector {
                self.receive_counted(vector, m.rank, len, None)?;
            }
            return Err(format!(
                "worker {} sent a result that {} did not ask for: {header:?}",
                m.rank,
                Iteration(t)
            )
            .into());
        }
        for (&p, &loss) in work.compute.iter().zip(&header.losses) {
            self.partition_loss[p] = loss;
        }
        for (&p, &correct) in work.compute.iter().zip(&header.correct) {
            self.partition_correct[p] = correct;
        }
        Ok(Incoming::Result {
            header,
            vector,
            worker: w,
        })
    }

    fn send_tasks(
        &mut self,
        task: &RoundTask<'_>,
        report: &mut RoundReport,
    ) -> Result<Option<RoundStatus>, RoundError> {
        let t = task.iteration;
        let eval_point = task
            .eval_point
            .expect("a training round has an evaluation point");
        self.comm.reap();
        // What arrived since the last wait first: the acknowledgements say
        // which workers took their tasks. After this process was stopped
        // (SIGSTOP, a suspended job) they wait unread, and a worker would
        // look as if it took none and not be sent this task.
        if self
            .untaken
            .iter()
            .any(|q| q.len() as u64 >= protocol::MAX_UNTAKEN_TASKS)
        {
            while let Some(m) = self.comm.try_receive() {
                match self.incoming(m, task, report)? {
                    Incoming::Handled => {}
                    Incoming::Signal(signal) => {
                        return Ok(Some(RoundStatus::Interrupted { signal }));
                    }
                    Incoming::Result { worker, vector, .. } => {
                        if let Some((vector, len)) = vector {
                            self.receive_counted(vector, worker as i32 + 1, len, None)?;
                        }
                        return Err(format!(
                            "worker {} sent a result of {} before its task was sent",
                            worker + 1,
                            Iteration(t)
                        )
                        .into());
                    }
                }
            }
        }
        // The last round's model buffer goes back to the pool first.
        self.round_model = None;
        let model = match self.model_buffer(t, eval_point)? {
            Ok(model) => model,
            Err(status) => return Ok(Some(status)),
        };
        self.sent.fill(false);
        for w in 0..task.plan.tasks.len() {
            if self.untaken[w].len() as u64 >= protocol::MAX_UNTAKEN_TASKS {
                // It does not take its tasks: stopped, hung or gone. Said
                // once, until it takes one again; a worker that lags a few
                // iterations (ranks sharing cores) is not named.
                let (since, named) = self.silent[w].get_or_insert_with(|| (Instant::now(), false));
                if !*named && since.elapsed().as_secs_f64() >= SILENT_WARNING_S {
                    *named = true;
                    log::warn!(
                        "{}: worker {} has not taken its last {} tasks (stopped, hung or gone): \
                         it is sent none until it does; the iterations go on without it while \
                         the scheme decodes, and the training loss of a partition only it \
                         computes is not recorded",
                        Iteration(t),
                        w + 1,
                        self.untaken[w].len()
                    );
                }
                continue;
            }
            self.send_task(w, task, &model);
        }
        self.round_model = Some((t, model));
        Ok(None)
    }

    /// Send worker `w` its task of this round and the model.
    fn send_task(&mut self, w: usize, task: &RoundTask<'_>, model: &std::rc::Rc<Vec<f64>>) {
        let t = task.iteration;
        if let Some((_, true)) = self.silent[w].take() {
            log::warn!("{}: worker {} takes its tasks again", Iteration(t), w + 1);
        }
        self.untaken[w].push_back(t);
        self.sent[w] = true;
        let pace = Pace {
            emulate: self.emulate,
            unit_time: task.sample.unit_time[w],
            extra_time: task.sample.extra_time[w],
            time_unit_ms: self.time_unit_ms,
            straggling: task.sample.straggling[w],
        };
        let mut header = self.comm.buffer(64);
        Task::encode_into(t, &pace, &task.plan.tasks[w], &mut header);
        let rank = w as i32 + 1;
        self.comm
            .send_owned(rank, protocol::iteration_tag(t), header);
        match self.entries(w) {
            // A packed worker reads θ at its entries alone.
            Some(entries) => {
                let mut packed = self.comm.buffer(entries.len());
                packing::pack_model(model, entries, &mut packed);
                self.comm.send_owned(rank, protocol::TAG_MODEL, packed);
            }
            None => self.comm.send_shared(rank, protocol::TAG_MODEL, model),
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
        let (t, k) = (task.iteration, self.workers);
        let time_unit_s = self.time_unit_ms / 1000.0;
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
        let start = match ahead {
            Some((_, sent)) => sent,
            None => {
                let start = Instant::now();
                if let Some(status) = timing.time("send", || self.send_tasks(task, report))? {
                    return Ok(status);
                }
                start
            }
        };
        let wait_start = Instant::now();
        let mut last_progress = Instant::now();
        let mut suspended = self.comm.suspended();
        let status = loop {
            // Time this process was stopped (SIGSTOP, a suspended job) is not
            // the workers' silence.
            let now_suspended = self.comm.suspended();
            last_progress += now_suspended - suspended;
            suspended = now_suspended;
            // Wait until the pending deadline, if any, and at most the result timeout.
            let give_up = instant_after(last_progress, self.result_timeout_s);
            let deadline = rule
                .wait_until()
                .and_then(|d| instant_after(start, d * time_unit_s));
            let until = match (deadline, give_up) {
                (Some(d), Some(g)) => Some(d.min(g)),
                (d, g) => d.or(g),
            };
            let m = match self.comm.receive_or_signal(&mut self.backoff, until, true) {
                Wait::Message(m) => m,
                Wait::Signal(signal) => break RoundStatus::Interrupted { signal },
                Wait::Timeout => {
                    // Past the deadline's instant the deadline has passed, whatever
                    // the rounding of seconds to model time says.
                    let now = if deadline.is_some_and(|d| Instant::now() >= d) {
                        f64::INFINITY
                    } else {
                        start.elapsed().as_secs_f64() / time_unit_s
                    };
                    if rule.expire(now) {
                        break RoundStatus::Completed; // the deadline, messages in hand
                    }
                    if give_up.is_some_and(|g| Instant::now() < g) {
                        continue;
                    }
                    let silent: Vec<usize> = (0..k)
                        .filter(|&w| !report.arrivals.iter().any(|a| a.worker == w))
                        .collect();
                    // In emulation a silent worker may simply be due later than the timeout.
                    let late: Vec<String> = silent
                        .iter()
                        .filter_map(|&w| {
                            let first = task.plan.tasks[w].messages.first()?;
                            let due_s = (first.after as f64 * task.sample.unit_time[w]
                                + task.sample.extra_time[w])
                                * time_unit_s;
                            (self.emulate && due_s > self.result_timeout_s)
                                .then(|| format!("{} at {due_s:.3e} s", w + 1))
                        })
                        .collect();
                    let names: Vec<String> = silent.iter().map(|w| (w + 1).to_string()).collect();
                    let why = if late.is_empty() {
                        "a worker died or hangs".to_string()
                    } else {
                        format!(
                            "a worker died or hangs, or its emulated time is beyond the timeout (workers {})",
                            late.join(", ")
                        )
                    };
                    return Err(format!(
                        "{}: no result for {} s (train.result_timeout_s) and the scheme cannot decode yet; \
                         no answer from workers {}: {why}",
                        Iteration(t),
                        self.result_timeout_s,
                        names.join(", ")
                    )
                    .into());
                }
            };
            let (header, vector, w) = match self.incoming(m, task, report)? {
                Incoming::Handled => continue,
                Incoming::Signal(signal) => break RoundStatus::Interrupted { signal },
                Incoming::Result {
                    header,
                    vector,
                    worker,
                } => (header, vector, worker),
            };
            let arrived_s = start.elapsed().as_secs_f64();
            last_progress = Instant::now();
            report.overrun_s[w] = report.overrun_s[w].max(header.overrun_s);
            if header.computations > 0 {
                report.per_computation_s[w] = header.compute_s / header.computations as f64;
            }
            let (wall_s, cpu_s) = self.new_compute_s(w, &header);
            if wall_s > 0.0 {
                timing.add("compute (workers)", wall_s);
                timing.add("compute (workers, CPU)", cpu_s);
            }
            let arrival = Arrival {
                worker: w,
                message: header.message,
            };
            let decision = rule.arrive(arrival, arrived_s / time_unit_s);
            if decision == Decision::DecodeWithout {
                if let Some((vector, len)) = vector {
                    self.receive_counted(vector, w as i32 + 1, len, None)?;
                }
                log::debug!(
                    "{}: the result of worker {} came after the deadline; not used",
                    Iteration(t),
                    w + 1
                );
                break RoundStatus::Completed;
            }
            report.accept(arrival, arrived_s);
            // What advise --trace fits the network to (issue 26, item 2):
            // the bytes as sent (header and vector: the header alone when the
            // vector stays at its worker for a reduce), the worker's compute,
            // and when the last byte had arrived.
            let vector_len = vector.as_ref().map_or(0, |&(_, len)| len);
            let bytes = protocol::result_message_bytes(
                header.computations,
                header.per_computation(),
                vector_len,
            );
            report.message_bytes[w] = report.message_bytes[w].max(0.0) + bytes as f64;
            report.compute_s[w] = header.compute_s;
            report.received_s[w] = f64::NAN;
            let held = match vector {
                None => {
                    report.received_s[w] = arrived_s;
                    Held::AtWorker(header.message)
                }
                Some((vector, len))
                    if (self.received_in_use + 1) * len * size_of::<f64>() <= RECEIVED_BYTES =>
                {
                    if self.received.len() == self.received_in_use {
                        self.received.push(Vec::new());
                    }
                    self.receive_counted(vector, w as i32 + 1, len, Some(self.received_in_use))?;
                    report.received_s[w] = start.elapsed().as_secs_f64();
                    self.received_in_use += 1;
                    Held::Received(self.received_in_use - 1)
                }
                Some((vector, len)) => Held::Matched(vector, len),
            };
            self.vectors.push(Some((held, w)));
            if decision == Decision::Decode {
                break RoundStatus::Completed;
            }
        };
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
        if self.reduce {
            return self.reduce_combine(order, weights, out).map(|()| true);
        }
        // Every value of `out` is written by the first term of nonzero
        // weight (0 + weight · v): zeroed first only when there is none.
        let written = order
            .iter()
            .any(|&i| weights[i] != 0.0 && self.vectors[i].is_some());
        // A packed vector is added at its entries alone: into zeros.
        let packed = order
            .iter()
            .any(|&i| matches!(self.vectors[i], Some((_, w)) if self.entries(w).is_some()));
        out.resize(self.dim + 1, 0.0);
        if !written || packed {
            out.fill(0.0);
        }
        // Every vector received as it arrived (the usual case): one pass over
        // `out` in blocks that stay in cache, each block taking the terms in
        // `order`'s order, the same additions as one pass per vector (bit
        // for bit) with a third of the memory traffic of `out`.
        let all_received = order
            .iter()
            .all(|&i| matches!(self.vectors[i], None | Some((Held::Received(_), _))));
        if all_received && !packed {
            let mut terms = Vec::with_capacity(order.len());
            for &i in order {
                if let Some((Held::Received(slot), worker)) = self.vectors[i].take() {
                    terms.push((worker, slot, weights[i]));
                }
            }
            let vectors: Vec<(f64, &[f64])> = terms
                .iter()
                .map(|&(_, slot, weight)| (weight, self.received[slot].as_slice()))
                .collect();
            let finite = combine_checked(out, &vectors);
            for (&(worker, slot, _), finite) in terms.iter().zip(finite) {
                if !finite {
                    warn_non_finite(worker, &self.received[slot], None, self.dim);
                }
            }
            self.discard_vectors()?;
            return Ok(true);
        }
        let mut first = !packed;
        for &i in order {
            let Some((held, worker)) = self.vectors[i].take() else {
                continue;
            };
            let vector = match held {
                Held::Received(slot) => &self.received[slot],
                Held::Matched(message, len) => {
                    self.receive_counted(message, worker as i32 + 1, len, None)?;
                    &self.scratch
                }
                Held::AtWorker(_) => unreachable!("a gathering round holds no vector at a worker"),
            };
            let weight = weights[i];
            let entries = self.entries(worker);
            let finite = match entries {
                _ if weight == 0.0 => kernel::all_finite(vector),
                Some(entries) => packing::scatter_add_checked(out, weight, vector, entries),
                None => {
                    let finite = add_scaled_checked(out, weight, vector, first);
                    first = false;
                    finite
                }
            };
            if !finite {
                warn_non_finite(worker, vector, entries, self.dim);
            }
        }
        self.discard_vectors()?;
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

/// What a message that came during an iteration was.
enum Incoming {
    /// Nothing for the caller: an acknowledgement, a stale result dropped.
    Handled,
    /// A worker caught a signal: the job is being stopped.
    Signal(i32),
    /// A result of this iteration: its header and matched vector (none
    /// with `aggregate = reduce`: the worker keeps it).
    Result {
        header: ResultHeader,
        vector: Option<(Message, usize)>,
        worker: usize,
    },
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

/// Say which value of worker `worker`'s vector (d gradient entries and the
/// loss, or its packed `entries`) is not finite.
fn warn_non_finite(worker: usize, vector: &[f64], entries: Option<&[u32]>, dim: usize) {
    let k = vector.iter().position(|v| !v.is_finite()).unwrap_or(0);
    let bad = entries.map_or(k, |e| e[k] as usize);
    let what = if bad == dim {
        "loss".to_string()
    } else {
        format!("gradient entry {}", bad + 1)
    };
    log::warn!("worker {} sent a non-finite {what}", worker + 1);
}

/// `out = Σ weight · v` over `terms` in their order (a term of weight 0 is
/// only checked), the first written as `0 + weight · v`: per value the same
/// additions in the same order as [`add_scaled_checked`] once per term, bit
/// for bit, but in blocks of [`kernel::COMBINATION_BLOCK`] so `out` is read and written
/// once. Per term, whether all its values are finite.
fn combine_checked(out: &mut [f64], terms: &[(f64, &[f64])]) -> Vec<bool> {
    let mut finite = vec![true; terms.len()];
    let mut start = 0;
    while start < out.len() {
        let end = (start + kernel::COMBINATION_BLOCK).min(out.len());
        let block = &mut out[start..end];
        let mut first = true;
        for (&(weight, v), finite) in terms.iter().zip(finite.iter_mut()) {
            let v = &v[start..end];
            *finite &= if weight == 0.0 {
                kernel::all_finite(v)
            } else {
                let ok = add_scaled_checked(block, weight, v, first);
                first = false;
                ok
            };
        }
        start = end;
    }
    finite
}

/// `out = weight · v` (`overwrite`) or `out += weight · v`, in one pass that
/// also tells whether every value of `v` is finite (`v · 0` is 0 for a
/// finite v and NaN otherwise; eight lanes so the sum vectorises).
fn add_scaled_checked(out: &mut [f64], weight: f64, v: &[f64], overwrite: bool) -> bool {
    const LANES: usize = 8;
    let mut check = [0.0; LANES];
    let mut outs = out.chunks_exact_mut(LANES);
    let mut vs = v.chunks_exact(LANES);
    for (o, v) in (&mut outs).zip(&mut vs) {
        for k in 0..LANES {
            o[k] = if overwrite { 0.0 } else { o[k] } + weight * v[k];
            check[k] += v[k] * 0.0;
        }
    }
    for (o, v) in outs.into_remainder().iter_mut().zip(vs.remainder()) {
        *o = if overwrite { 0.0 } else { *o } + weight * v;
        check[0] += v * 0.0;
    }
    check.iter().sum::<f64>() == 0.0
}

#[cfg(test)]
mod tests {
    use super::{add_scaled_checked, combine_checked};
    use crate::learn::kernel::COMBINATION_BLOCK;

    #[test]
    fn a_checked_addition_equals_the_plain_one_and_finds_non_finite_values() {
        let v: Vec<f64> = (0..21).map(|i| (i as f64 - 7.5) * 0.37).collect();
        let mut plain = vec![0.5; 21];
        for (o, x) in plain.iter_mut().zip(&v) {
            *o += -1.25 * x;
        }
        let mut out = vec![0.5; 21];
        assert!(add_scaled_checked(&mut out, -1.25, &v, false));
        assert_eq!(out, plain);
        let mut fresh = vec![9.0; 21];
        assert!(add_scaled_checked(&mut fresh, 2.0, &v, true));
        assert_eq!(fresh, v.iter().map(|x| 0.0 + 2.0 * x).collect::<Vec<_>>());
        for bad in [0, 7, 16, 20] {
            for value in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                let mut w = v.clone();
                w[bad] = value;
                assert!(
                    !add_scaled_checked(&mut out, 1.0, &w, false),
                    "{bad} {value}"
                );
            }
        }
    }

    /// The blocked combine adds the same terms in the same order as one
    /// pass per vector: equal bit for bit (lengths across block boundaries,
    /// a zero weight first and in the middle), and it names exactly the
    /// non-finite terms, a zero-weight one included.
    #[test]
    fn a_blocked_combine_equals_one_pass_per_vector_bit_for_bit() {
        for len in [
            1,
            7,
            COMBINATION_BLOCK,
            COMBINATION_BLOCK + 3,
            3 * COMBINATION_BLOCK + 17,
        ] {
            let vectors: Vec<Vec<f64>> = (0..4)
                .map(|j| {
                    (0..len)
                        .map(|i| ((i * 31 + j * 7) % 97) as f64 * 0.013 - 0.6 + j as f64 / 3.0)
                        .collect()
                })
                .collect();
            let weights = [0.0, 1.0 / 3.0, -2.5, 0.7];
            let mut plain = vec![f64::NAN; len];
            let mut first = true;
            for (w, v) in weights.iter().zip(&vectors) {
                if *w != 0.0 {
                    assert!(add_scaled_checked(&mut plain, *w, v, first));
                    first = false;
                }
            }
            let terms: Vec<(f64, &[f64])> = weights
                .iter()
                .zip(&vectors)
                .map(|(&w, v)| (w, v.as_slice()))
                .collect();
            let mut blocked = vec![f64::NAN; len];
            assert_eq!(combine_checked(&mut blocked, &terms), vec![true; 4]);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&blocked), bits(&plain), "length {len}");
            let mut bad = vectors.clone();
            bad[0][len - 1] = f64::NAN;
            bad[2][len / 2] = f64::INFINITY;
            let terms: Vec<(f64, &[f64])> = weights
                .iter()
                .zip(&bad)
                .map(|(&w, v)| (w, v.as_slice()))
                .collect();
            assert_eq!(
                combine_checked(&mut blocked, &terms),
                vec![false, true, false, true],
                "length {len}"
            );
        }
    }
}
