//! A worker rank: load the stored partitions, then run tasks until told to stop.
//!
//! A task is computed partition by partition in the order the master gave,
//! with one fused pass over each partition's rows; after the `after`-th
//! computation the worker forms that message's codeword and sends it, in
//! emulation not before its sampled due time. Between blocks of rows and while
//! waiting for a due time it probes for control messages: a newer task makes
//! it abandon the current one (a worker that fell behind skips to the newest
//! model), a stop ends the run, so a straggler still busy is woken at once.
//!
//! With `aggregate = reduce` (docs/aggregate.md) a result is its header
//! alone: the worker keeps the coded vectors of its current task. When the
//! master's [`Order`] names it in the decodable set, it sums its share (each
//! kept vector times its decode coefficient) and reduces it with the other
//! members (a binomial tree among them only, [`Comm::tree_sum`]); the
//! lowest rank sends the sum to the master. The order ends the task. A
//! worker outside the set never hears of it: its next task replaces the
//! kept vectors.
//!
//! A worker that catches SIGTERM or SIGINT tells the master and carries on
//! until the master's stop arrives; if none comes within
//! [`interrupt::WORKER_GRACE`] (the master is gone) it aborts the job.

use std::time::{Duration, Instant};

use super::comm::{Backoff, Comm, Received, Wait, WaitMode, instant_after, receive_into};
use super::interrupt;
use super::packing::Packing;
use super::protocol::{self, Order, ResultHeader, Setup, Task};
use crate::config::Config;
use crate::error::InputError;
use crate::learn::{DataPlan, Features, Model, Partition, StepKey, kernel};
use crate::spec::{Aggregation, Batch};

/// Longest sleep between probes of an idle or waiting worker.
const IDLE_CAP: Duration = Duration::from_micros(500);
/// How long a worker that waits for its next task spins (yielding the core)
/// before it sleeps: the master usually answers a result within this.
const SPIN: Duration = Duration::from_micros(200);
/// Bounds of the interval between "still loading" messages during setup.
const HEARTBEAT_MIN: Duration = Duration::from_millis(10);
const HEARTBEAT_MAX: Duration = Duration::from_secs(1);
/// Longest sleep between probes while the data loads.
const LOADING_CAP: Duration = Duration::from_millis(5);
/// Values read per block between clock checks: 512 KiB of dense samples, 768 KiB sparse.
const BLOCK_VALUES: usize = 1 << 16;
/// While computing, a worker probes for a newer task or a stop after a block
/// when this long has passed since its last probe: an MPI probe runs MPI's
/// progress engine (microseconds), a clock read costs nanoseconds, so the
/// probes take a bounded share of the compute whatever the block size, and a
/// newer task or a stop still interrupts a computation within this time.
const POLL_INTERVAL: Duration = Duration::from_micros(200);
/// How long a member of a reduction waits for another member's partial sum
/// (or for it to take its own) before it reports an error: they all sent
/// their results moments ago.
const REDUCE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a worker waits for the model that follows a task (the master
/// posts both sends together) before it reports a protocol error.
const MODEL_TIMEOUT: Duration = Duration::from_secs(60);

/// What interrupted a task.
enum Control {
    Task(Box<Task>),
    /// `aggregate = reduce`: reduce this worker's share of the decoded sum.
    Order(Order),
    /// Drop the task of this iteration or an older one: the master waits
    /// before it sends the next (its evaluations).
    Pause(u64),
    Stop,
}

/// Counts the worker reports in its goodbye.
#[derive(Debug, Default)]
struct Counts {
    tasks: u64,
    abandoned: u64,
}

/// The worker's link to the master: messages, and the signal it may have caught.
struct Link<'a> {
    comm: &'a Comm<'a>,
    dim: usize,
    /// Values of a model message: d, or a packed worker's entries but the loss.
    model_len: usize,
    /// When the worker caught a signal (and told the master).
    signalled: Option<(i32, Instant)>,
    /// The model of the newest task received (swapped in when the task starts).
    incoming: Vec<f64>,
    wait: WaitMode,
}

impl Link<'_> {
    /// Tell the master about a caught signal, once; abort when the master has
    /// not stopped this worker within the grace period.
    fn watch_signal(&mut self) {
        match self.signalled {
            None => {
                if let Some(signal) = interrupt::received() {
                    self.comm
                        .send(0, protocol::TAG_SIGNAL, &[f64::from(signal)]);
                    self.signalled = Some((signal, Instant::now()));
                }
            }
            Some((signal, at)) => {
                if at.elapsed() >= interrupt::WORKER_GRACE {
                    crate::errln!(
                        "error: worker {}: no stop from the master {} s after {}; aborting",
                        self.comm.rank(),
                        interrupt::WORKER_GRACE.as_secs(),
                        interrupt::name(signal)
                    );
                    self.comm.abort(interrupt::exit_status(signal));
                }
            }
        }
    }

    /// The next message from the master, waiting politely.
    fn next(&mut self, backoff: &mut Backoff) -> Received {
        loop {
            let deadline = self.signalled.map(|(_, at)| at + interrupt::WORKER_GRACE);
            match self
                .comm
                .receive_or_signal(backoff, deadline, self.signalled.is_none())
            {
                Wait::Message(m) => return m,
                Wait::Signal(_) | Wait::Timeout => self.watch_signal(),
            }
        }
    }

    /// Interpret a message from the master.
    fn control(&mut self, m: Received) -> anyhow::Result<Control> {
        match m.tag {
            protocol::TAG_STOP => Ok(Control::Stop),
            protocol::TAG_ORDER => Ok(Control::Order(Order::decode(&m.data)?)),
            protocol::TAG_PAUSE => match m.data[..] {
                [iteration] => Ok(Control::Pause(iteration as u64)),
                _ => anyhow::bail!(
                    "worker {}: a pause of {} values, expected 1",
                    self.comm.rank(),
                    m.data.len()
                ),
            },
            tag if protocol::is_iteration_tag(tag) => {
                let task = Task::decode(&m.data)?;
                // The model follows the task at once.
                let mut backoff = Backoff::for_mode(self.wait, IDLE_CAP, SPIN);
                let by = Instant::now() + MODEL_TIMEOUT;
                let (model, len) = self
                    .comm
                    .probe_from(0, protocol::TAG_MODEL, &mut backoff, Some(by))
                    .ok_or_else(|| {
                        anyhow::anyhow!(
                            "worker {}: no model after the task of iteration {} within {} s",
                            self.comm.rank(),
                            task.iteration,
                            MODEL_TIMEOUT.as_secs()
                        )
                    })?;
                receive_into(model, len, &mut self.incoming);
                if len != self.model_len {
                    anyhow::bail!(
                        "worker {}: a model of {len} values, expected {}",
                        self.comm.rank(),
                        self.model_len
                    );
                }
                // Acknowledged at once: the master bounds what it sends to a worker
                // that does not take its tasks (stopped, hung).
                self.comm
                    .send(0, protocol::TAG_ACK, &[task.iteration as f64]);
                Ok(Control::Task(Box::new(task)))
            }
            tag => anyhow::bail!(
                "worker {}: unexpected message with tag {tag}",
                self.comm.rank()
            ),
        }
    }

    /// Drain every message that has arrived; the newest task or a stop wins.
    /// An order is taken at once: the master sends nothing else to this
    /// worker until the reduction it asks for is done. A pause replaces a
    /// task before it (that task is of its iteration or older: the master
    /// sends a pause after the tasks up to its iteration, before the next).
    fn poll(&mut self) -> anyhow::Result<Option<Control>> {
        self.watch_signal();
        let mut latest = None;
        while let Some(m) = self.comm.try_receive() {
            match self.control(m)? {
                Control::Stop => return Ok(Some(Control::Stop)),
                Control::Order(order) => return Ok(Some(Control::Order(order))),
                newer => latest = Some(newer),
            }
        }
        Ok(latest)
    }

    fn goodbye(&self, counts: &Counts) {
        self.comm.send(
            0,
            protocol::TAG_BYE,
            &[counts.tasks as f64, counts.abandoned as f64],
        );
    }

    /// Report `error` to the master, which prints it with this rank and
    /// stops every worker; wait for the stop, say goodbye, and end this rank
    /// with the run's exit status (2 for an input error, else 1) and no word
    /// of its own: the master's line is the one the user reads.
    fn fail(&mut self, error: &protocol::WorkerError) -> anyhow::Result<()> {
        log::debug!("worker {}: {}", self.comm.rank(), error.text);
        self.comm.send(0, protocol::TAG_ERROR, &error.encode());
        let mut backoff = Backoff::new(IDLE_CAP);
        while self.next(&mut backoff).tag != protocol::TAG_STOP {}
        self.goodbye(&Counts::default());
        Err(crate::error::QuietExit(if error.input { 2 } else { 1 }).into())
    }
}

/// How loading the stored partitions ended.
enum Loaded {
    /// The model, the partitions and the batch of a partition's step.
    Data(Box<Model>, Vec<Partition>, Batch),
    /// An error (the data, the model), for the master to report.
    Failed(protocol::WorkerError),
    /// The master's stop came first.
    Stopped,
}

/// The model and this worker's stored partitions (`setup.stored`), with
/// the master's standardisation statistics, each partition's labels checked
/// against the model, and the batch of the run's spec (the loading thread's work).
fn load_partitions(
    config: &Config,
    setup: Setup,
) -> Result<(Model, Vec<Partition>, Batch), InputError> {
    let plan = DataPlan::new(config, setup.partitions)?;
    // The master's statistics, computed once: a worker never makes its own.
    match setup.standardization {
        Some(s) => plan.set_standardization(s)?,
        None if plan.standardizes() => {
            return Err(InputError::new(
                "setup",
                "has no standardisation for standardised data",
            ));
        }
        None => {}
    }
    let model = Model::new(config, plan.input())?;
    let data = plan.load(&setup.stored)?;
    for part in &data {
        model
            .check_labels(part)
            .map_err(|e| InputError::new(format!("data: partition {}", part.id + 1), e))?;
    }
    Ok((model, data, plan.spec().batch))
}

/// Load the stored partitions on a second thread while this one tells the
/// master the worker is alive ([`protocol::TAG_LOADING`], four times per
/// `train.result_timeout_s`, at least once a second), watches for signals and
/// takes the master's stop at once. A large data set takes as long as it
/// takes; a worker stopped or hung while loading falls silent, and the
/// master names it after `train.result_timeout_s`.
fn load(link: &mut Link<'_>, config: &Config, setup: &Setup) -> Loaded {
    let (own, setup_copy) = (config.clone(), setup.clone());
    let spawned = std::thread::Builder::new()
        .name("load".to_string())
        .spawn(move || load_partitions(&own, setup_copy));
    let loader = match spawned {
        Ok(handle) => handle,
        Err(e) => {
            return Loaded::Failed(protocol::WorkerError {
                input: false,
                text: format!("cannot start a thread to load the data: {e}"),
            });
        }
    };
    let every = Duration::try_from_secs_f64(config.train.result_timeout_s / 4.0)
        .unwrap_or(HEARTBEAT_MAX)
        .clamp(HEARTBEAT_MIN, HEARTBEAT_MAX);
    let mut next_beat = Instant::now() + every;
    let mut backoff = Backoff::new(LOADING_CAP);
    while !loader.is_finished() {
        link.watch_signal();
        if let Some(m) = link.comm.try_receive() {
            if m.tag == protocol::TAG_STOP {
                return Loaded::Stopped;
            }
            log::warn!(
                "worker {}: tag {} while loading, ignored",
                link.comm.rank(),
                m.tag
            );
            continue;
        }
        let now = Instant::now();
        if now >= next_beat {
            link.comm.send(0, protocol::TAG_LOADING, &[]);
            next_beat = now + every;
        }
        backoff.pause(Some(next_beat));
    }
    match loader.join() {
        Ok(Ok((model, data, batch))) => Loaded::Data(Box::new(model), data, batch),
        Ok(Err(e)) => Loaded::Failed(protocol::WorkerError {
            input: true,
            text: e.to_string(),
        }),
        // The panic hook has ended the job already (see `interrupt::abort_on_panic`).
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

struct Worker<'a> {
    link: Link<'a>,
    model: Box<Model>,
    /// The batch of a partition's step and the seed of the batches and dropout masks.
    batch: Batch,
    seed: u64,
    /// Stored partitions and, per partition id, its index in `data`.
    data: Vec<Partition>,
    index: Vec<usize>,
    /// The model of the current task.
    theta: Vec<f64>,
    /// Per computation slot of a task: gradient sum and loss sum (dim + 1).
    slots: Vec<Vec<f64>>,
    /// Per computation slot: a classifier's count of the batch's samples
    /// its training pass predicted correctly (sent in the result header).
    slot_correct: Vec<f64>,
    /// Per stored partition, for a linear model's full-batch gradient on
    /// sparse features: the entries it can make non-zero (the columns its
    /// rows store, then the loss at d), when they are at most a quarter of
    /// d + 1; None otherwise.
    supports: Vec<Option<Vec<u32>>>,
    /// Per slot: the stored partition whose support holds every non-zero
    /// value of the slot (zeroed and formed over that support alone), if any.
    slot_holds: Vec<Option<usize>>,
    /// Gathering on sparse features: the entries its vectors are packed to.
    packing: Option<Packing>,
    /// Partition id → slot of the current task.
    slot_of: Vec<usize>,
    header: Vec<f64>,
    counts: Counts,
    /// How results reach the master (with `Reduce`, the coded vectors are
    /// kept, not sent).
    aggregation: Aggregation,
    /// With `reduce`: the iteration of the kept vectors, and per message of
    /// its task the vector (d + 1 values) once formed.
    kept_iteration: Option<u64>,
    kept: Vec<Vec<f64>>,
    kept_ready: Vec<bool>,
    /// With `reduce`: this worker's share of the sum, and where partial
    /// sums of the tree are received (d + 1 values each, kept across
    /// iterations).
    share: Vec<f64>,
    partial: Vec<f64>,
}

/// Run worker rank `comm.rank()` with the `config` the master sent.
pub(super) fn run(comm: &Comm<'_>, config: &Config, wait: WaitMode) -> anyhow::Result<()> {
    let mut backoff = Backoff::for_mode(wait, IDLE_CAP, SPIN);
    let mut link = Link {
        comm,
        dim: 0,
        model_len: 0,
        signalled: None,
        incoming: Vec::new(),
        wait,
    };
    let Some(setup) = await_setup(&mut link, &mut backoff)? else {
        return Ok(());
    };
    let (model, data, batch) = match load(&mut link, config, &setup) {
        Loaded::Data(model, data, batch) => (model, data, batch),
        Loaded::Failed(error) => return link.fail(&error),
        Loaded::Stopped => {
            // The master gave up on the setup (another worker failed, a signal).
            link.goodbye(&Counts::default());
            return Ok(());
        }
    };
    let mut worker = Worker::new(link, config, &setup, model, data, batch);
    worker.say_ready();
    match worker.serve(&mut backoff) {
        Ok(()) => {
            worker.link.goodbye(&worker.counts);
            Ok(())
        }
        // The master prints it, naming this rank, and stops the run.
        Err(e) => worker.link.fail(&protocol::WorkerError::from_error(&e)),
    }
}

/// The master's first message: the setup, or `None` when it is a stop
/// (said goodbye to).
fn await_setup(link: &mut Link<'_>, backoff: &mut Backoff) -> anyhow::Result<Option<Setup>> {
    let m = link.next(backoff);
    match m.tag {
        protocol::TAG_SETUP => Ok(Some(Setup::decode(&m.data)?)),
        protocol::TAG_STOP => {
            link.goodbye(&Counts::default());
            Ok(None)
        }
        tag => anyhow::bail!(
            "worker {}: unexpected message with tag {tag} before setup",
            link.comm.rank()
        ),
    }
}

impl<'a> Worker<'a> {
    /// The worker of the loaded `model` and stored partitions `data`: its
    /// gradient supports, its packing (gathering on sparse features with
    /// `runtime.pack_sparse`), and whether it reduces (as the master
    /// decided, `setup.aggregation`).
    fn new(
        mut link: Link<'a>,
        config: &Config,
        setup: &Setup,
        model: Box<Model>,
        data: Vec<Partition>,
        batch: Batch,
    ) -> Self {
        let dim = model.dim();
        link.dim = dim;
        let aggregation = setup.aggregation;
        let mut index = vec![usize::MAX; setup.partitions];
        for (i, p) in data.iter().enumerate() {
            index[p.id] = i;
        }
        let supports = gradient_supports(&model, batch, &data, dim);
        let packing = (!aggregation.reduces() && config.runtime.pack_sparse)
            .then(|| Packing::new(&supports, dim + 1))
            .flatten();
        link.model_len = packing.as_ref().map_or(dim, Packing::model_len);
        Worker {
            link,
            model,
            batch,
            seed: config.seed,
            data,
            index,
            theta: vec![0.0; dim],
            slots: Vec::new(),
            slot_correct: Vec::new(),
            supports,
            slot_holds: Vec::new(),
            packing,
            slot_of: vec![usize::MAX; setup.partitions],
            header: Vec::new(),
            counts: Counts::default(),
            aggregation,
            kept_iteration: None,
            kept: Vec::new(),
            kept_ready: Vec::new(),
            share: Vec::new(),
            partial: Vec::new(),
        }
    }

    /// Log what this worker holds and tell the master it is ready.
    fn say_ready(&self) {
        let (comm, dim) = (self.link.comm, self.link.dim);
        let samples: usize = self.data.iter().map(Partition::len).sum();
        log::info!(
            "worker {}: {} partitions stored, {samples} samples x {dim} features{}",
            comm.rank(),
            self.data.len(),
            self.packing.as_ref().map_or(String::new(), |p| format!(
                "; vectors packed to {} of {} entries",
                p.entries().len(),
                dim + 1
            ))
        );
        let ready = protocol::Ready {
            samples,
            features: dim,
            packed: self.packing.as_ref().map(|p| p.entries().to_vec()),
        };
        comm.send(0, protocol::TAG_READY, &ready.encode());
    }
}

impl Worker<'_> {
    /// Run tasks and orders until the master's stop.
    fn serve(&mut self, backoff: &mut Backoff) -> anyhow::Result<()> {
        let worker = self;
        let comm = worker.link.comm;
        let mut next: Option<Control> = None;
        loop {
            let control = match next.take() {
                Some(c) => c,
                None => {
                    let m = worker.link.next(backoff);
                    worker.link.control(m)?
                }
            };
            match control {
                Control::Stop => break,
                Control::Order(order) => worker.reduce(&order)?,
                // Idle: nothing to drop.
                Control::Pause(iteration) => log::debug!(
                    "worker {}: a pause after {} while idle",
                    comm.rank(),
                    crate::error::Iteration(iteration)
                ),
                Control::Task(task) => {
                    if worker.counts.tasks == 0 {
                        interrupt::panic_if_asked(comm.rank(), "at the first task");
                    }
                    if worker.counts.tasks == 5 {
                        interrupt::fail_if_asked(comm.rank(), "at its sixth task")?;
                    }
                    worker.counts.tasks += 1;
                    match &worker.packing {
                        Some(packing) => {
                            packing.unpack_model(&worker.link.incoming, &mut worker.theta)
                        }
                        None => std::mem::swap(&mut worker.theta, &mut worker.link.incoming),
                    }
                    log::debug!(
                        "worker {}: task of {}",
                        comm.rank(),
                        crate::error::Iteration(task.iteration)
                    );
                    next = worker.execute(&task)?;
                    // An order ends the task (the iteration is decoded) without abandoning it.
                    if matches!(
                        next,
                        Some(Control::Task(_) | Control::Stop | Control::Pause(_))
                    ) {
                        worker.counts.abandoned += 1;
                        log::debug!(
                            "worker {}: abandoned {} for a newer task, a pause or a stop",
                            comm.rank(),
                            crate::error::Iteration(task.iteration)
                        );
                    }
                }
            }
        }
        Ok(())
    }
}

/// Seconds a task's computations took so far.
#[derive(Debug, Clone, Copy, Default)]
struct ComputeTime {
    /// Wall clock: includes the time the worker waits for a core.
    wall_s: f64,
    /// CPU time of the worker's thread: the work itself.
    cpu_s: f64,
}

/// [`Worker::supports`]: for a linear model's full-batch gradient, per
/// stored partition on sparse features, the columns its rows store and the
/// loss entry (d), when they are at most a quarter of the d + 1 values.
fn gradient_supports(
    model: &Model,
    batch: Batch,
    data: &[Partition],
    dim: usize,
) -> Vec<Option<Vec<u32>>> {
    data.iter()
        .map(|part| match (&part.x, model.linear_loss(), batch) {
            (Features::Sparse(x), Some(_), Batch::Full) if dim < u32::MAX as usize => {
                let mut support = x.column_support();
                support.push(dim as u32);
                (support.len() * 4 <= dim + 1).then_some(support)
            }
            _ => None,
        })
        .collect()
}

/// CPU seconds the calling thread has used (CLOCK_THREAD_CPUTIME_ID; the
/// gradient kernel runs on the worker's one thread).
fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to the pointer it is given,
    // which points to a live, writable local.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    // Linux always has this clock; were it missing, NaN says "not measured"
    // in the timing summary rather than a made-up zero.
    if rc != 0 {
        return f64::NAN;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

impl Worker<'_> {
    /// A computation slot per computation of `task` (d + 1 values each,
    /// kept across tasks) and, reducing, a kept vector per message.
    fn prepare_slots(&mut self, task: &Task) {
        let dim = self.link.dim;
        let work = &task.work;
        while self.slots.len() < work.compute.len() {
            self.slots.push(vec![0.0; dim + 1]);
            self.slot_holds.push(None);
            self.slot_correct.push(f64::NAN);
        }
        if self.aggregation.reduces() {
            self.kept_iteration = Some(task.iteration);
            self.kept_ready.clear();
            self.kept_ready.resize(work.messages.len(), false);
            while self.kept.len() < work.messages.len() {
                self.kept.push(Vec::with_capacity(dim + 1));
            }
        }
    }

    /// Run one task; returns the control message that interrupted it, if any.
    fn execute(&mut self, task: &Task) -> anyhow::Result<Option<Control>> {
        let start = Instant::now();
        let work = &task.work;
        self.prepare_slots(task);
        let mut compute = ComputeTime::default();
        let mut next_message = 0;
        let mut last_poll = start;
        for (slot, &p) in work.compute.iter().enumerate() {
            self.slot_of[p] = slot;
            let busy = Instant::now();
            let busy_cpu_s = thread_cpu_s();
            if let Some(c) = self.compute_slot(task, slot, p, &mut last_poll)? {
                return Ok(Some(c));
            }
            compute.wall_s += busy.elapsed().as_secs_f64();
            compute.cpu_s += thread_cpu_s() - busy_cpu_s;
            let done = slot + 1;
            while next_message < work.messages.len() && work.messages[next_message].after == done {
                if let Some(c) = self.send(task, next_message, start, compute)? {
                    return Ok(Some(c));
                }
                next_message += 1;
            }
        }
        Ok(None)
    }

    /// Computation `slot` of `task`: partition `p`'s gradient and loss sums
    /// into the slot; the fused kernel in blocks for a full-batch linear
    /// model, probing for control messages every [`POLL_INTERVAL`] (since
    /// `last_poll`), returned when one interrupts it.
    fn compute_slot(
        &mut self,
        task: &Task,
        slot: usize,
        p: usize,
        last_poll: &mut Instant,
    ) -> anyhow::Result<Option<Control>> {
        let dim = self.link.dim;
        let part = &self.data[self.index[p]];
        let block_rows = part.x.rows_per_block(BLOCK_VALUES);
        let g = &mut self.slots[slot];
        match (self.model.linear_loss(), self.batch) {
            // Full-batch linear models: the fused kernel in blocks, with
            // a probe for a newer task between them.
            (Some(linear), Batch::Full) => {
                // Zeroed where the slot can hold non-zeros: all of it,
                // or the support of the partition it was formed for.
                match self.slot_holds[slot].and_then(|q| self.supports[q].as_deref()) {
                    Some(support) => support.iter().for_each(|&j| g[j as usize] = 0.0),
                    None => g.iter_mut().for_each(|v| *v = 0.0),
                }
                let q = self.index[p];
                self.slot_holds[slot] = self.supports[q].is_some().then_some(q);
                let (grad, loss) = g.split_at_mut(dim);
                let mut row = 0;
                while row < part.len() {
                    let end = (row + block_rows).min(part.len());
                    loss[0] += part.accumulate(linear, row..end, &self.theta, grad);
                    row = end;
                    if row < part.len() && last_poll.elapsed() >= POLL_INTERVAL {
                        if let Some(c) = self.link.poll()? {
                            return Ok(Some(c));
                        }
                        *last_poll = Instant::now();
                    }
                }
            }
            // A mini-batch (or a network): one pass over the batch.
            _ => {
                self.slot_holds[slot] = None;
                let key = StepKey {
                    seed: self.seed,
                    partition: p,
                    iteration: task.iteration,
                };
                let correct = self
                    .model
                    .partition_gradient(part, self.batch, key, &self.theta, g)
                    .map_err(|e| anyhow::anyhow!("partition {}: {e}", p + 1))?;
                self.slot_correct[slot] = correct.map_or(f64::NAN, |c| c as f64);
            }
        }
        Ok(None)
    }

    /// Form message `m`'s codeword, hold it until its due time when emulating, send it.
    fn send(
        &mut self,
        task: &Task,
        m: usize,
        start: Instant,
        compute: ComputeTime,
    ) -> anyhow::Result<Option<Control>> {
        let vector = self.codeword(task, m)?;
        let overrun_s = match self.await_due(task, m, start)? {
            Ok(overrun_s) => overrun_s,
            Err(c) => {
                if self.aggregation.reduces() {
                    self.kept[m] = vector; // its buffer, for the next task
                }
                return Ok(Some(c));
            }
        };
        self.post_result(task, m, compute, overrun_s, vector);
        Ok(None)
    }

    /// Message `m`'s codeword Σ c·g, in a buffer the send will own until
    /// the master receives it (a reducing worker keeps it until an order or
    /// its next task).
    fn codeword(&mut self, task: &Task, m: usize) -> anyhow::Result<Vec<f64>> {
        let message = &task.work.messages[m];
        let dim = self.link.dim;
        let mut vector = if self.aggregation.reduces() {
            std::mem::take(&mut self.kept[m])
        } else {
            let len = self.packing.as_ref().map_or(dim + 1, |p| p.entries().len());
            self.link.comm.buffer(len)
        };
        // Σ c·g (what adding the terms to zeros gives, bit for bit): over
        // the terms' supports when every slot holds one (sparse features),
        // packed to the worker's entries when it packs its vectors, else in
        // one blocked pass, without zeroing the buffer first. Each term with
        // the stored partition whose support holds its non-zeros.
        let held: Option<Vec<(f64, &[f64], usize)>> = message
            .codeword
            .terms
            .iter()
            .map(|&(p, c)| {
                let slot = self.slot_of[p];
                Some((c, self.slots[slot].as_slice(), self.slot_holds[slot]?))
            })
            .collect();
        match (held, &self.packing) {
            (Some(terms), Some(packing)) => packing.combination_into(&mut vector, &terms),
            (None, Some(_)) => anyhow::bail!(
                "worker {}: message {} of {} combines a slot without a support, but the worker packs its vectors",
                self.link.comm.rank(),
                m + 1,
                crate::error::Iteration(task.iteration)
            ),
            (Some(terms), None) => {
                // A slot holds a partition only when it has a support.
                let sparse: Vec<kernel::SparseTerm<'_>> = terms
                    .iter()
                    .filter_map(|&(c, g, q)| Some((c, g, self.supports[q].as_deref()?)))
                    .collect();
                kernel::sparse_combination_into(&mut vector, &sparse, dim + 1);
            }
            (None, None) => {
                let terms: Vec<(f64, &[f64])> = message
                    .codeword
                    .terms
                    .iter()
                    .map(|&(p, c)| (c, self.slots[self.slot_of[p]].as_slice()))
                    .collect();
                kernel::combination_into(&mut vector, &terms, dim + 1);
            }
        }
        Ok(vector)
    }

    /// In emulation, wait for message `m`'s due time (the task started at
    /// `start`), probing for control messages; `Ok` with the seconds it is
    /// past due (0 when it waited, or without emulation), `Err` with the
    /// control message that interrupted the wait.
    fn await_due(
        &mut self,
        task: &Task,
        m: usize,
        start: Instant,
    ) -> anyhow::Result<Result<f64, Control>> {
        if !task.pace.emulate {
            return Ok(Ok(0.0));
        }
        // A due time beyond any clock (an emulated delay of 1e300 model
        // time units) is never: the message is held until a newer task or
        // the stop replaces it, as from a worker that straggles forever.
        let due = instant_after(start, task.pace.due_s(task.work.messages[m].after));
        let now = Instant::now();
        if let Some(due) = due
            && now > due
        {
            return Ok(Ok((now - due).as_secs_f64()));
        }
        if due.is_none() {
            log::debug!(
                "worker {}: message {} of {} is due beyond any clock; held until replaced",
                self.link.comm.rank(),
                m + 1,
                crate::error::Iteration(task.iteration)
            );
        }
        let mut backoff = Backoff::for_mode(self.link.wait, IDLE_CAP, Duration::ZERO);
        while due.is_none_or(|due| Instant::now() < due) {
            if let Some(c) = self.link.poll()? {
                return Ok(Err(c));
            }
            backoff.pause(due);
        }
        Ok(Ok(0.0))
    }

    /// Send message `m`'s result header and, gathering, its `vector`; a
    /// reducing worker keeps the vector for an order.
    fn post_result(
        &mut self,
        task: &Task,
        m: usize,
        compute: ComputeTime,
        overrun_s: f64,
        vector: Vec<f64>,
    ) {
        let message = &task.work.messages[m];
        let dim = self.link.dim;
        let header = ResultHeader {
            iteration: task.iteration,
            message: m,
            codeword: message.codeword.id,
            computations: message.after,
            compute_s: compute.wall_s,
            compute_cpu_s: compute.cpu_s,
            overrun_s,
            // The loss sum of each partition computed so far, uncoded.
            losses: self.slots[..message.after]
                .iter()
                .map(|slot| slot[dim])
                .collect(),
            // A classifier's correct predictions of each computation's batch.
            correct: if self.model.classifies() {
                self.slot_correct[..message.after].to_vec()
            } else {
                Vec::new()
            },
        };
        header.encode_into(&mut self.header);
        let comm = self.link.comm;
        comm.send(0, protocol::iteration_tag(task.iteration), &self.header);
        if self.aggregation.reduces() {
            self.kept[m] = vector;
            self.kept_ready[m] = true;
        } else {
            comm.send_owned(0, protocol::TAG_VECTOR, vector);
        }
    }

    /// `aggregate = reduce`: this worker's share of the decoded sum (its kept
    /// vectors times their coefficients, in the order's order), summed over
    /// the decodable set by a binomial tree; the lowest rank sends the sum
    /// to the master, followed by the seconds it spent forming its share and
    /// in the tree.
    fn reduce(&mut self, order: &Order) -> anyhow::Result<()> {
        let comm = self.link.comm;
        let rank = comm.rank();
        if !self.aggregation.reduces() || self.kept_iteration != Some(order.iteration) {
            anyhow::bail!(
                "worker {rank}: an order for {} while its kept vectors are of {:?}",
                crate::error::Iteration(order.iteration),
                self.kept_iteration
            );
        }
        if order.members.binary_search(&rank).is_err() {
            anyhow::bail!(
                "worker {rank}: an order whose members {:?} leave it out",
                order.members
            );
        }
        let start = Instant::now();
        let dim = self.link.dim;
        if let Some(&(m, _)) = order
            .terms
            .iter()
            .find(|&&(m, _)| !self.kept_ready.get(m).copied().unwrap_or(false))
        {
            anyhow::bail!(
                "worker {rank}: an order uses message {} of {}, which it has not sent",
                m + 1,
                crate::error::Iteration(order.iteration)
            );
        }
        // As the gather's combine: 0 + a·v for the first term.
        let terms: Vec<(f64, &[f64])> = order
            .terms
            .iter()
            .map(|&(m, a)| (a, self.kept[m].as_slice()))
            .collect();
        kernel::combination_into(&mut self.share, &terms, dim + 1);
        let share_s = start.elapsed().as_secs_f64();
        let mut backoff = Backoff::for_mode(self.link.wait, IDLE_CAP, SPIN);
        let by = Instant::now() + REDUCE_TIMEOUT;
        comm.tree_sum(
            &order.members,
            &mut self.share,
            &mut self.partial,
            &mut backoff,
            Some(by),
        )
        .map_err(|e| {
            anyhow::anyhow!(
                "worker {rank}: the reduction of {} within {} s: {e}",
                crate::error::Iteration(order.iteration),
                REDUCE_TIMEOUT.as_secs()
            )
        })?;
        if order.members[0] == rank {
            let mut sum = comm.buffer(dim + 3);
            sum.extend_from_slice(&self.share);
            sum.extend([share_s, start.elapsed().as_secs_f64() - share_s]);
            comm.send_owned(0, protocol::TAG_REDUCED, sum);
        }
        self.kept_iteration = None;
        Ok(())
    }
}
