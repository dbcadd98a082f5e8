//! Point-to-point messaging: nonblocking sends tracked to completion,
//! matched-probe receives, and waiting that fits the node.
//!
//! Every send is an `MPI_Isend` from a buffer the [`SendPool`] owns until the
//! send completes: a small message is copied into a recycled buffer, the
//! master's model is one reference-counted buffer shared by the sends of an
//! iteration to all K workers (see [`ModelPool`]). The pool tests its
//! requests without blocking (`MPI_Testsome`) whenever it sends and when a
//! caller asks; [`Comm::drain`] completes them before the rank finalises MPI.
//! No buffer is attached (`MPI_Bsend` is not used).
//!
//! Receives are matched probes (`MPI_Improbe` then `MPI_Mrecv`): nothing is
//! pre-posted, so there is no receive to cancel at shutdown. Large vectors
//! (a model, a coded gradient) are received into a buffer the caller owns.
//!
//! Waiting is a probe followed by a [`Backoff`] pause: with
//! [`WaitMode::Spin`] the pause is a CPU spin hint (a rank per core, the
//! lowest latency); with [`WaitMode::Backoff`] it yields the core for a short
//! spin after each message, then sleeps an interval that grows to a cap, so
//! that an idle rank costs a few thousand cheap wake-ups per second instead
//! of a core: 13 ranks share 2 cores.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use mpi::datatype::Equivalence;
use mpi::ffi;
use mpi::point_to_point::{Message, Source, Status};
use mpi::raw::{AsRaw, AsRawMut};
use mpi::topology::{Communicator, SimpleCommunicator};

use crate::config::RuntimeWait;

/// How a rank waits for messages, resolved from `runtime.wait`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitMode {
    /// Busy-poll: never sleep.
    Spin,
    /// Probe, yield briefly, then sleep a growing interval.
    Backoff,
}

impl WaitMode {
    pub fn name(self) -> &'static str {
        match self {
            Self::Spin => "spin",
            Self::Backoff => "backoff",
        }
    }

    /// `auto` spins when the node's ranks do not outnumber its cores.
    pub fn resolve(requested: RuntimeWait, node_ranks: usize, node_cores: usize) -> Self {
        match requested {
            RuntimeWait::Spin => Self::Spin,
            RuntimeWait::Backoff => Self::Backoff,
            RuntimeWait::Auto if node_ranks <= node_cores => Self::Spin,
            RuntimeWait::Auto => Self::Backoff,
        }
    }
}

/// What a rank knows about its node: its ranks and its cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Node {
    /// Ranks of this job on this node (the ranks whose host is this one's).
    pub ranks: usize,
    /// Cores the node's ranks may run on: the union of their affinity masks.
    pub cores: usize,
    /// Every rank of the job is on this node: the same answer on every
    /// rank (`runtime.aggregate = "auto"` gathers then).
    pub one_node: bool,
}

pub(super) const MASK_WORDS: usize = 16; // 1024 CPUs, glibc's CPU_SETSIZE

/// This process's CPU affinity as a bit set (empty when it cannot be read).
pub(super) fn affinity_mask() -> [u64; MASK_WORDS] {
    let mut mask = [0u64; MASK_WORDS];
    // SAFETY: cpu_set_t is plain data; sched_getaffinity writes at most its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return mask;
        }
        for cpu in 0..(MASK_WORDS * 64).min(libc::CPU_SETSIZE as usize) {
            if libc::CPU_ISSET(cpu, &set) {
                mask[cpu / 64] |= 1 << (cpu % 64);
            }
        }
    }
    mask
}

/// Pauses between probes while nothing arrives.
///
/// In [`WaitMode::Backoff`] a wait first spins for `spin` (probe, yield the
/// core, probe again: a sleep overshoots by 50-100 µs, which the spin
/// avoids for waits that end within a fraction of a millisecond), then
/// sleeps from [`Backoff::MIN`] doubling to `cap`. In [`WaitMode::Spin`] it
/// never sleeps.
#[derive(Debug, Clone)]
pub struct Backoff {
    sleep: Duration,
    cap: Duration,
    spin: Duration,
    busy: bool,
    /// When the current wait started spinning.
    spin_from: Option<Instant>,
}

impl Backoff {
    pub const MIN: Duration = Duration::from_micros(10);

    /// A backoff whose sleeps never exceed `cap`, without a spin.
    pub fn new(cap: Duration) -> Self {
        Self::spinning(cap, Duration::ZERO)
    }

    /// A backoff that first spins for `spin` at each wait, then sleeps at most `cap`.
    pub fn spinning(cap: Duration, spin: Duration) -> Self {
        Self {
            sleep: Self::MIN,
            cap,
            spin,
            busy: false,
            spin_from: None,
        }
    }

    /// As [`spinning`](Self::spinning) in [`WaitMode::Backoff`]; never sleeps in [`WaitMode::Spin`].
    pub fn for_mode(mode: WaitMode, cap: Duration, spin: Duration) -> Self {
        Self {
            busy: mode == WaitMode::Spin,
            ..Self::spinning(cap, spin)
        }
    }

    /// Spin; or yield the core while the spin lasts, then sleep, at most
    /// until `until` when given, and lengthen the next sleep.
    pub fn pause(&mut self, until: Option<Instant>) {
        if self.busy {
            std::hint::spin_loop();
            return;
        }
        if !self.spin.is_zero() {
            let now = Instant::now();
            if now.duration_since(*self.spin_from.get_or_insert(now)) < self.spin {
                std::thread::yield_now();
                return;
            }
        }
        let mut nap = self.sleep;
        if let Some(until) = until {
            nap = nap.min(until.saturating_duration_since(Instant::now()));
        }
        if !nap.is_zero() {
            std::thread::sleep(nap);
        }
        self.sleep = (self.sleep * 2).min(self.cap);
    }

    /// Something arrived: the next wait spins and probes eagerly again.
    pub fn reset(&mut self) {
        self.sleep = Self::MIN;
        self.spin_from = None;
    }
}

/// How a wait ended.
#[derive(Debug)]
pub enum Wait {
    Message(Received),
    Timeout,
    /// SIGTERM or SIGINT was caught (the signal number).
    Signal(i32),
}

/// A received message: source rank, tag, payload.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    pub rank: i32,
    pub tag: i32,
    pub data: Vec<f64>,
}

/// The master's models in flight: at most `max` buffers of one model each,
/// shared by reference count with the sends that read them. A buffer is
/// reused once no send holds it, so its memory is allocated once.
#[derive(Debug)]
pub struct ModelPool {
    buffers: Vec<Rc<Vec<f64>>>,
    max: usize,
}

impl ModelPool {
    pub fn new(max: usize) -> Self {
        Self {
            buffers: Vec::new(),
            max: max.max(1),
        }
    }

    /// A buffer no send holds, filled with `model`; `None` when all `max`
    /// buffers are still held by sends in flight.
    pub fn fill(&mut self, model: &[f64]) -> Option<Rc<Vec<f64>>> {
        let i = match self.buffers.iter().position(|b| Rc::strong_count(b) == 1) {
            Some(i) => i,
            None if self.buffers.len() < self.max => {
                self.buffers.push(Rc::new(Vec::with_capacity(model.len())));
                self.buffers.len() - 1
            }
            None => return None,
        };
        let buffer = Rc::get_mut(&mut self.buffers[i]).expect("no send holds it");
        buffer.clear();
        buffer.extend_from_slice(model);
        Some(Rc::clone(&self.buffers[i]))
    }

    /// Buffers allocated (held or free).
    pub fn allocated(&self) -> usize {
        self.buffers.len()
    }

    /// Buffers some send still holds.
    pub fn held(&self) -> usize {
        self.buffers
            .iter()
            .filter(|b| Rc::strong_count(b) > 1)
            .count()
    }
}

/// What a send reads from: a buffer of its own, or a model shared with the
/// sends of the same iteration to other workers.
#[derive(Debug)]
enum Payload {
    Owned(Vec<f64>),
    Shared(Rc<Vec<f64>>),
}

impl Payload {
    fn data(&self) -> &[f64] {
        match self {
            Self::Owned(v) => v,
            Self::Shared(v) => v,
        }
    }
}

/// A send in flight: its destination and tag beside the buffer it reads.
#[derive(Debug)]
struct Pending {
    rank: i32,
    tag: i32,
    payload: Payload,
}

/// Spare buffers kept for reuse (more are freed): a worker's spares may be
/// vectors of d + 1 values.
const MAX_SPARES: usize = 4;

/// The sends of one rank in flight, each request beside its destination and
/// its buffer; a buffer is released (recycled or, for a shared model, its
/// reference dropped) only when its request has completed.
#[derive(Debug, Default)]
pub struct SendPool {
    /// Parallel to `pending`: the MPI requests, for `MPI_Testsome`.
    requests: Vec<ffi::MPI_Request>,
    pending: Vec<Pending>,
    spares: Vec<Vec<f64>>,
    indices: Vec<i32>,
    posted: u64,
    completed: u64,
}

impl SendPool {
    /// Sends in flight.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Sends posted and completed since the start.
    pub fn counts(&self) -> (u64, u64) {
        (self.posted, self.completed)
    }

    /// Destinations of the sends in flight, ascending, without repeats.
    pub fn pending_ranks(&self) -> Vec<i32> {
        let mut ranks: Vec<i32> = self.pending.iter().map(|p| p.rank).collect();
        ranks.sort_unstable();
        ranks.dedup();
        ranks
    }

    /// An empty buffer with room for `len` values: a spare when one is large enough.
    fn spare(&mut self, len: usize) -> Vec<f64> {
        match self.spares.iter().position(|v| v.capacity() >= len) {
            Some(i) => {
                let mut v = self.spares.swap_remove(i);
                v.clear();
                v
            }
            None => Vec::with_capacity(len),
        }
    }

    fn post(&mut self, world: &SimpleCommunicator, rank: i32, tag: i32, payload: Payload) {
        let data = payload.data();
        let count = i32::try_from(data.len()).expect("a message of fewer than 2^31 values");
        // SAFETY: the buffer stays alive and unmodified until the request
        // completes: `pending` owns it (or a reference to the shared model,
        // which is never mutated while referenced) and releases it only in
        // `reap` after MPI_Testsome reported the request complete. Moving the
        // `Vec` or `Rc` handle does not move the heap data MPI reads.
        let request = unsafe {
            let mut request = ffi::RSMPI_REQUEST_NULL;
            ffi::MPI_Isend(
                data.as_ptr().cast(),
                count,
                f64::equivalent_datatype().as_raw(),
                rank,
                tag,
                world.as_raw(),
                &mut request,
            );
            request
        };
        self.requests.push(request);
        self.pending.push(Pending { rank, tag, payload });
        self.posted += 1;
    }

    /// Test every request without blocking and release the buffers of those
    /// complete; returns how many completed.
    pub fn reap(&mut self) -> usize {
        if self.requests.is_empty() {
            return 0;
        }
        let n = self.requests.len();
        self.indices.resize(n, 0);
        let mut done: i32 = 0;
        // SAFETY: the arrays have n entries; completed requests are set to MPI_REQUEST_NULL.
        unsafe {
            ffi::MPI_Testsome(
                n as i32,
                self.requests.as_mut_ptr(),
                &mut done,
                self.indices.as_mut_ptr(),
                ffi::RSMPI_STATUSES_IGNORE,
            );
        }
        if done <= 0 {
            // 0, or MPI_UNDEFINED when no request is active (cannot happen: all are).
            return 0;
        }
        let null = unsafe { ffi::RSMPI_REQUEST_NULL };
        let mut keep = 0;
        for i in 0..n {
            if self.requests[i] == null {
                continue;
            }
            self.requests.swap(keep, i);
            self.pending.swap(keep, i);
            keep += 1;
        }
        self.requests.truncate(keep);
        for p in self.pending.drain(keep..) {
            if let Payload::Owned(v) = p.payload {
                if self.spares.len() < MAX_SPARES {
                    self.spares.push(v);
                }
            }
        }
        self.completed += done as u64;
        done as usize
    }
}

impl Drop for SendPool {
    fn drop(&mut self) {
        if !self.pending.is_empty() {
            // Only on a path that ends the job with MPI_Abort (a rank is gone):
            // MPI may still read the buffers, so they are not freed.
            let sends: Vec<String> = self
                .pending
                .iter()
                .map(|p| format!("{}:{}", p.rank, p.tag))
                .collect();
            log::warn!(
                "{} sends still in flight at exit (rank:tag {}); their buffers are kept",
                sends.len(),
                sends.join(" ")
            );
            std::mem::forget(std::mem::take(&mut self.pending));
        }
    }
}

/// A gap between two looks at the clock of a wait this much longer than
/// its longest sleep means the process did not run: it was stopped
/// (SIGSTOP, Ctrl-Z, Slurm's `scontrol suspend`, gang scheduling) and
/// continued. The time counts as [`Comm::suspended`], not against others.
pub const SUSPENDED_GAP: Duration = Duration::from_secs(1);

/// The world communicator with tracked nonblocking sends and matched-probe receives.
pub struct Comm<'a> {
    world: &'a SimpleCommunicator,
    sends: RefCell<SendPool>,
    /// Time this process was found suspended inside its waits, in all.
    suspended: std::cell::Cell<Duration>,
    /// When this process last looked for messages in a wait.
    last_look: std::cell::Cell<Instant>,
    /// Messages [`Comm::try_receive`] matched whose rest has not come yet.
    receiving: RefCell<Vec<Receiving>>,
    /// After how long a message in [`Comm::receiving`] is named on stderr.
    rest_limit_s: std::cell::Cell<f64>,
}

/// How long a matched message's rest may take before its sender is named,
/// until [`Comm::set_rest_limit_s`] says otherwise.
const DEFAULT_REST_LIMIT_S: f64 = 10.0;

/// A matched message being received (`MPI_Imrecv`): over TCP its rest comes
/// only from its sender, which may be stopped in the middle of it. Its
/// buffer's memory is MPI's until the request completes (the `Vec` may
/// move, its heap allocation does not).
struct Receiving {
    rank: i32,
    tag: i32,
    data: Vec<f64>,
    request: ffi::MPI_Request,
    since: Instant,
    /// Its sender was named on stderr already.
    named: bool,
}

impl Receiving {
    /// Post the receive of `message` (`len` values from `rank` with `tag`)
    /// into `data` (resized to `len`).
    fn post(message: Message, rank: i32, tag: i32, len: usize, mut data: Vec<f64>) -> Self {
        let mut message = message;
        data.resize(len, 0.0);
        let count = i32::try_from(len).expect("a probed count fits an MPI count");
        let mut request = unsafe { ffi::RSMPI_REQUEST_NULL };
        // SAFETY: `data` holds `len` values; its allocation is neither read
        // nor freed until the request completes (see `Receiving`).
        unsafe {
            ffi::MPI_Imrecv(
                data.as_mut_ptr().cast(),
                count,
                f64::equivalent_datatype().as_raw(),
                message.as_raw_mut(),
                &mut request,
            );
        }
        Self {
            rank,
            tag,
            data,
            request,
            since: Instant::now(),
            named: false,
        }
    }

    fn into_received(self) -> Received {
        Received {
            rank: self.rank,
            tag: self.tag,
            data: self.data,
        }
    }

    /// Whether the whole message is here (again true once it was).
    fn test(&mut self) -> bool {
        let mut done: i32 = 0;
        // SAFETY: a live request (or the null request once complete).
        unsafe { ffi::MPI_Test(&mut self.request, &mut done, ffi::RSMPI_STATUS_IGNORE) };
        done != 0
    }
}

impl<'a> Comm<'a> {
    /// Not a collective: a rank that is stopped or gone holds up no other.
    pub fn new(world: &'a SimpleCommunicator) -> Self {
        Self {
            world,
            sends: RefCell::default(),
            suspended: std::cell::Cell::new(Duration::ZERO),
            last_look: std::cell::Cell::new(Instant::now()),
            receiving: RefCell::default(),
            rest_limit_s: std::cell::Cell::new(DEFAULT_REST_LIMIT_S),
        }
    }

    /// From now on a message [`Comm::try_receive`] matched whose rest has
    /// not come after `seconds` names its sender on stderr (the master:
    /// `train.result_timeout_s`).
    pub fn set_rest_limit_s(&self, seconds: f64) {
        self.rest_limit_s.set(seconds);
    }

    /// The clocks of a new wait start now: time since the last look (work
    /// between waits) is not taken for a suspension.
    pub fn awake(&self) {
        self.last_look.set(Instant::now());
    }

    /// A look for messages in a wait: when more than [`SUSPENDED_GAP`]
    /// passed since the last look (in this wait or an earlier one), this
    /// process did not run meanwhile (stopped, or busy elsewhere): that time
    /// is added to [`Comm::suspended`] and `deadline` moves by it, so that
    /// other ranks get their time after it.
    ///
    /// Returns the time of the look: a wait decides that its deadline
    /// passed by that time, never by the clock after it, so that a stop
    /// between the look and the decision is not taken for a timeout.
    fn look(&self, deadline: &mut Option<Instant>) -> Instant {
        let now = Instant::now();
        let gap = now.duration_since(self.last_look.get());
        if gap > SUSPENDED_GAP {
            self.suspended.set(self.suspended.get() + gap);
            *deadline = deadline.and_then(|d| d.checked_add(gap));
        }
        self.last_look.set(now);
        now
    }

    /// How long this process was suspended inside its waits, in all (see
    /// [`SUSPENDED_GAP`]): a timeout that measures another rank's silence
    /// leaves this time out.
    pub fn suspended(&self) -> Duration {
        self.suspended.get()
    }

    pub fn rank(&self) -> i32 {
        self.world.rank()
    }

    pub fn size(&self) -> i32 {
        self.world.size()
    }

    /// End the whole job now (MPI_Abort): for when a clean shutdown cannot
    /// happen (a rank is gone or does not answer).
    ///
    /// The launcher is first given (at most a second) to read what this
    /// rank printed, the error that says why.
    pub fn abort(&self, code: u8) -> ! {
        crate::output::drain_to_launcher(std::time::Duration::from_secs(1));
        self.world.abort(i32::from(code))
    }

    /// Send a copy of `data` (a recycled buffer); returns at once.
    pub fn send(&self, rank: i32, tag: i32, data: &[f64]) {
        let mut sends = self.sends.borrow_mut();
        sends.reap();
        let mut buffer = sends.spare(data.len());
        buffer.extend_from_slice(data);
        sends.post(self.world, rank, tag, Payload::Owned(buffer));
    }

    /// A recycled buffer (empty, room for `len` values) to fill and pass to
    /// [`send_owned`](Self::send_owned).
    pub fn buffer(&self, len: usize) -> Vec<f64> {
        let mut sends = self.sends.borrow_mut();
        sends.reap();
        sends.spare(len)
    }

    /// Send `data` without copying; the pool keeps it until the send completes.
    pub fn send_owned(&self, rank: i32, tag: i32, data: Vec<f64>) {
        let mut sends = self.sends.borrow_mut();
        sends.reap();
        sends.post(self.world, rank, tag, Payload::Owned(data));
    }

    /// Send a model shared with other sends; the pool holds a reference until this send completes.
    pub fn send_shared(&self, rank: i32, tag: i32, data: &Rc<Vec<f64>>) {
        self.sends
            .borrow_mut()
            .post(self.world, rank, tag, Payload::Shared(Rc::clone(data)));
    }

    /// Release the buffers of the sends complete (without blocking).
    pub fn reap(&self) {
        self.sends.borrow_mut().reap();
    }

    /// Destination ranks of the sends in flight.
    pub fn pending_ranks(&self) -> Vec<i32> {
        self.sends.borrow().pending_ranks()
    }

    /// Complete every send, testing until `deadline`; returns how many are
    /// still in flight then (0 on a clean shutdown: each destination has
    /// received every message before its goodbye or stop).
    pub fn drain(&self, deadline: Instant) -> usize {
        let mut backoff = Backoff::new(Duration::from_millis(1));
        loop {
            let left = {
                let mut sends = self.sends.borrow_mut();
                sends.reap();
                sends.pending()
            };
            if left == 0 || Instant::now() >= deadline {
                let (posted, completed) = self.sends.borrow().counts();
                log::info!(
                    "{posted} sends posted, {completed} completed, {left} requests pending at shutdown"
                );
                return left;
            }
            backoff.pause(Some(deadline));
        }
    }

    /// Sum `sum` over `members` (world ranks, ascending, this rank among
    /// them) into `members[0]`'s `sum`, by a binomial tree of point-to-point
    /// messages: in round r = 0, 1, ... the
    /// member at position i with i mod 2^(r+1) = 2^r sends its partial sum
    /// to position i − 2^r and is done; ceil(log2 |members|) rounds. No
    /// other rank takes part. The partial sums never meet a worker's probes
    /// for the master's messages, which match rank 0 alone
    /// ([`Comm::try_receive`]). Every wait is a probe or a test and a
    /// [`Backoff`] pause, so the members that wait sleep instead of
    /// spinning in MPI (an `MPI_Reduce` on a communicator of the members,
    /// made with `MPI_Comm_create_group`, busy-polls in every member: at
    /// d = 10^7 on 17 ranks over 2 cores it took 7.4 s per iteration, see
    /// docs/aggregate.md). `partial` is where partial sums are received.
    /// `Err` names the member that sent nothing by `deadline`.
    pub fn tree_sum(
        &self,
        members: &[i32],
        sum: &mut [f64],
        partial: &mut Vec<f64>,
        backoff: &mut Backoff,
        deadline: Option<Instant>,
    ) -> Result<(), String> {
        let me = members
            .iter()
            .position(|&r| r == self.rank())
            .ok_or_else(|| format!("rank {} is not among {members:?}", self.rank()))?;
        let tag = super::protocol::TAG_PARTIAL_SUM;
        let mut step = 1;
        while step < members.len() {
            if me % (2 * step) == step {
                return self.send_and_wait(members[me - step], tag, sum, backoff, deadline);
            }
            if me + step < members.len() {
                let from = members[me + step];
                let source = self.world.process_at_rank(from);
                let mut deadline = deadline;
                let (message, status) = loop {
                    let now = self.look(&mut deadline);
                    if let Some(found) = source.immediate_matched_probe_with_tag(tag) {
                        break found;
                    }
                    if deadline.is_some_and(|d| now >= d) {
                        return Err(format!("no partial sum from worker {from}"));
                    }
                    backoff.pause(deadline);
                };
                backoff.reset();
                let len = count_f64(&status);
                receive_into(message, len, partial);
                if len != sum.len() {
                    return Err(format!(
                        "worker {from} sent a partial sum of {len} values, expected {}",
                        sum.len()
                    ));
                }
                for (s, p) in sum.iter_mut().zip(partial.iter()) {
                    *s += p;
                }
            }
            step *= 2;
        }
        Ok(())
    }

    /// Send `data` to `rank` and wait (probe, pause) until the send completes.
    fn send_and_wait(
        &self,
        rank: i32,
        tag: i32,
        data: &[f64],
        backoff: &mut Backoff,
        deadline: Option<Instant>,
    ) -> Result<(), String> {
        let count = i32::try_from(data.len()).expect("a message of fewer than 2^31 values");
        let mut request = unsafe { ffi::RSMPI_REQUEST_NULL };
        // SAFETY: `data` is borrowed, so neither moved nor modified, until
        // the request completes: this function returns only after MPI_Test
        // says so, or, past the deadline, after cancelling it and waiting
        // for the cancellation (MPI_Wait) to complete.
        unsafe {
            ffi::MPI_Isend(
                data.as_ptr().cast(),
                count,
                f64::equivalent_datatype().as_raw(),
                rank,
                tag,
                self.world.as_raw(),
                &mut request,
            );
        }
        let mut deadline = deadline;
        loop {
            let now = self.look(&mut deadline);
            let mut done: i32 = 0;
            // SAFETY: one live request; a status is not asked for.
            unsafe { ffi::MPI_Test(&mut request, &mut done, ffi::RSMPI_STATUS_IGNORE) };
            if done != 0 {
                backoff.reset();
                return Ok(());
            }
            if deadline.is_some_and(|d| now >= d) {
                // SAFETY: as above; MPI_Wait completes the cancelled request.
                unsafe {
                    ffi::MPI_Cancel(&mut request);
                    ffi::MPI_Wait(&mut request, ffi::RSMPI_STATUS_IGNORE);
                }
                return Err(format!("worker {rank} did not take a partial sum"));
            }
            backoff.pause(deadline);
        }
    }

    /// A message if one has arrived whole: on the master from anyone, on a
    /// worker from the master (the partial sums workers send each other are
    /// received by [`Comm::tree_sum`] alone). Never waits: a message whose
    /// rest has not come (its sender stopped in the middle of it, over TCP)
    /// stays posted and is tested at the next call, other senders' messages
    /// are taken meanwhile, and after the rest limit its sender is named on
    /// stderr once.
    ///
    /// Each sender's messages come in the order they were sent: one that
    /// completed behind an unfinished one from the same sender waits for it.
    pub fn try_receive(&self) -> Option<Received> {
        let mut receiving = self.receiving.borrow_mut();
        for i in 0..receiving.len() {
            let rank = receiving[i].rank;
            if receiving[i].test() && !receiving[..i].iter().any(|r| r.rank == rank) {
                return Some(receiving.remove(i).into_received());
            }
            let r = &mut receiving[i];
            let limit_s = self.rest_limit_s.get();
            if !r.named && r.since.elapsed().as_secs_f64() >= limit_s {
                r.named = true;
                crate::errln!(
                    "warning: rank {}: rank {} began sending {} values (tag {}) and stopped in the middle: the rest did not come within {limit_s} s; it is stopped or hung",
                    self.rank(),
                    r.rank,
                    r.data.len(),
                    r.tag
                );
            }
        }
        let (message, status) = if self.rank() == 0 {
            self.world.any_process().immediate_matched_probe()?
        } else {
            self.world.process_at_rank(0).immediate_matched_probe()?
        };
        let mut r = Receiving::post(
            message,
            status.source_rank(),
            status.tag(),
            count_f64(&status),
            Vec::new(),
        );
        if r.test() && !receiving.iter().any(|e| e.rank == r.rank) {
            return Some(r.into_received());
        }
        receiving.push(r);
        None
    }

    /// Messages matched whose rest never came, left posted for good (their
    /// buffers leaked: MPI may still write into them); their senders.
    pub fn abandon_receives(&self) -> Vec<i32> {
        let mut receiving = self.receiving.borrow_mut();
        receiving.retain_mut(|r| !r.test());
        let ranks = receiving.iter().map(|r| r.rank).collect();
        for r in receiving.drain(..) {
            std::mem::forget(r.data);
        }
        ranks
    }

    /// A matched message from `rank` with `tag`, waiting up to `deadline`;
    /// the caller receives it ([`receive_into`]) when it needs the data.
    pub fn probe_from(
        &self,
        rank: i32,
        tag: i32,
        backoff: &mut Backoff,
        deadline: Option<Instant>,
    ) -> Option<(Message, usize)> {
        let source = self.world.process_at_rank(rank);
        let mut deadline = deadline;
        loop {
            let now = self.look(&mut deadline);
            if let Some((message, status)) = source.immediate_matched_probe_with_tag(tag) {
                backoff.reset();
                return Some((message, count_f64(&status)));
            }
            if deadline.is_some_and(|d| now >= d) {
                return None;
            }
            backoff.pause(deadline);
        }
    }

    /// Receive the matched `message` of `len` values from `rank` into
    /// `buffer` (resized to `len`), testing until `deadline` at most (`None`:
    /// for ever), pausing with `backoff` between tests. Over TCP the rest of
    /// a matched message comes only from its sender, and a blocking
    /// `MPI_Mrecv` waits for as long as a sender stopped in the middle of
    /// its send stays stopped. Past the deadline the receive stays posted
    /// (a matched receive cannot be cancelled): its memory is taken out of
    /// `buffer` and leaked, for MPI may still write into it, and the error
    /// names the sender.
    pub fn receive_matched(
        &self,
        message: Message,
        rank: i32,
        len: usize,
        buffer: &mut Vec<f64>,
        backoff: &mut Backoff,
        deadline: Option<Instant>,
    ) -> Result<(), String> {
        let mut r = Receiving::post(message, rank, 0, len, std::mem::take(buffer));
        let mut deadline = deadline;
        loop {
            let now = self.look(&mut deadline);
            if r.test() {
                backoff.reset();
                *buffer = r.data;
                return Ok(());
            }
            if deadline.is_some_and(|d| now >= d) {
                std::mem::forget(r.data);
                return Err(format!(
                    "rank {rank} began sending {len} values and stopped in the middle"
                ));
            }
            backoff.pause(deadline);
        }
    }

    /// A message with `tag` from anyone, waiting up to `deadline`: its
    /// source rank and its data.
    pub fn probe_any(
        &self,
        tag: i32,
        backoff: &mut Backoff,
        deadline: Option<Instant>,
    ) -> Option<(i32, Vec<f64>)> {
        let mut deadline = deadline;
        loop {
            let now = self.look(&mut deadline);
            if let Some((message, status)) = self
                .world
                .any_process()
                .immediate_matched_probe_with_tag(tag)
            {
                backoff.reset();
                let mut data = Vec::new();
                let (rank, len) = (status.source_rank(), count_f64(&status));
                let by = instant_after(Instant::now(), self.rest_limit_s.get());
                if let Err(e) = self.receive_matched(message, rank, len, &mut data, backoff, by) {
                    crate::errln!("warning: rank {}: {e} (tag {tag})", self.rank());
                    return None;
                }
                return Some((rank, data));
            }
            if deadline.is_some_and(|d| now >= d) {
                return None;
            }
            backoff.pause(deadline);
        }
    }

    /// Wait for a message, politely, until `deadline` (forever when `None`).
    pub fn receive(&self, backoff: &mut Backoff, deadline: Option<Instant>) -> Option<Received> {
        match self.receive_or_signal(backoff, deadline, false) {
            Wait::Message(m) => Some(m),
            Wait::Timeout => None,
            Wait::Signal(_) => unreachable!("signals are not watched"),
        }
    }

    /// Wait for a message until `deadline`, returning early with
    /// [`Wait::Signal`] when `watch_signals` and SIGTERM or SIGINT was caught.
    pub fn receive_or_signal(
        &self,
        backoff: &mut Backoff,
        deadline: Option<Instant>,
        watch_signals: bool,
    ) -> Wait {
        let mut deadline = deadline;
        loop {
            // Stopped and continued (here or since the last wait): what
            // arrived meanwhile is received first, and the deadline moves
            // by the time this process was not running.
            let now = self.look(&mut deadline);
            if let Some(m) = self.try_receive() {
                backoff.reset();
                return Wait::Message(m);
            }
            if watch_signals {
                if let Some(signal) = super::interrupt::received() {
                    return Wait::Signal(signal);
                }
            }
            if deadline.is_some_and(|d| now >= d) {
                return Wait::Timeout;
            }
            backoff.pause(deadline);
        }
    }
}

/// Receive a matched message of `len` values into `buffer` (resized to `len`).
pub fn receive_into(message: Message, len: usize, buffer: &mut Vec<f64>) {
    buffer.resize(len, 0.0);
    message.matched_receive_into(&mut buffer[..]);
}

fn count_f64(status: &Status) -> usize {
    usize::try_from(status.count(f64::equivalent_datatype())).unwrap_or(0)
}

/// `start + seconds`, or `None` when that is beyond any clock: a time too
/// large for a `Duration` or an `Instant` (such as `train.result_timeout_s =
/// 1e30`, or an emulated delay of 10^300 model time units) means "never".
/// Negative seconds and NaN mean `start`.
pub fn instant_after(start: Instant, seconds: f64) -> Option<Instant> {
    Duration::try_from_secs_f64(seconds.max(0.0))
        .ok()
        .and_then(|d| start.checked_add(d))
}

/// `runtime.wait` resolved on this node, logged by rank 0.
pub fn wait_mode(config: &crate::config::Config, node: Node, rank: i32) -> WaitMode {
    let mode = WaitMode::resolve(config.runtime.wait, node.ranks, node.cores);
    let text = format!(
        "runtime.wait = {}: {} ({} ranks on this node, {} cores)",
        config.runtime.wait.name(),
        mode.name(),
        node.ranks,
        node.cores
    );
    if rank == 0 {
        log::info!("{text}");
    } else {
        log::debug!("{text}");
    }
    mode
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_beyond_any_clock_are_never() {
        let now = Instant::now();
        assert_eq!(
            instant_after(now, 1.5),
            Some(now + Duration::from_millis(1500))
        );
        for never in [1e19, 1e30, 1e300, f64::MAX, f64::INFINITY] {
            assert_eq!(instant_after(now, never), None, "{never}");
        }
        // Negative and NaN: at once.
        for at_once in [0.0, -1.0, -1e300, f64::NAN] {
            assert_eq!(instant_after(now, at_once), Some(now), "{at_once}");
        }
    }

    #[test]
    fn auto_spins_only_when_every_rank_has_a_core() {
        use RuntimeWait::*;
        assert_eq!(WaitMode::resolve(Auto, 2, 2), WaitMode::Spin);
        assert_eq!(WaitMode::resolve(Auto, 1, 64), WaitMode::Spin);
        assert_eq!(WaitMode::resolve(Auto, 3, 2), WaitMode::Backoff);
        assert_eq!(WaitMode::resolve(Auto, 13, 2), WaitMode::Backoff);
        assert_eq!(WaitMode::resolve(Spin, 13, 2), WaitMode::Spin);
        assert_eq!(WaitMode::resolve(Backoff, 1, 64), WaitMode::Backoff);
    }

    #[test]
    fn the_affinity_mask_counts_the_cores_this_process_may_use() {
        let cores: usize = affinity_mask()
            .iter()
            .map(|w| w.count_ones() as usize)
            .sum();
        let parallelism = std::thread::available_parallelism().unwrap().get();
        assert_eq!(cores, parallelism);
    }

    #[test]
    fn the_model_pool_reuses_free_buffers_and_stops_at_its_bound() {
        let mut pool = ModelPool::new(2);
        let a = pool.fill(&[1.0, 2.0]).unwrap();
        let a_ptr = a.as_ptr();
        // Two sends hold the first model.
        let sends_a = [Rc::clone(&a), Rc::clone(&a)];
        drop(a);
        let b = pool.fill(&[3.0, 4.0]).unwrap();
        assert_ne!(b.as_ptr(), a_ptr, "a held buffer is not overwritten");
        assert_eq!(*sends_a[0], vec![1.0, 2.0]);
        assert_eq!((pool.allocated(), pool.held()), (2, 2));
        // Both buffers held: the bound is reached.
        assert!(pool.fill(&[5.0, 6.0]).is_none());
        assert_eq!(pool.allocated(), 2);
        // One send completes: still held by the other.
        let [first, second] = sends_a;
        drop(first);
        assert!(pool.fill(&[5.0, 6.0]).is_none());
        // The last completes: the buffer is reused, not reallocated.
        drop(second);
        let c = pool.fill(&[5.0, 6.0]).unwrap();
        assert_eq!(c.as_ptr(), a_ptr);
        assert_eq!(*c, vec![5.0, 6.0]);
        assert_eq!(*b, vec![3.0, 4.0]);
        assert_eq!(pool.allocated(), 2);
    }
}
