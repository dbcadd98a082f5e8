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
//!
//! One idea a file: the node (`topology`), waiting (`waiting`), the send
//! buffers (`pools`) and the raw MPI calls (`ffi`); this file is the
//! communicator that uses them. Their items are re-exported here.

mod ffi;
mod pools;
mod topology;
mod waiting;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use mpi::datatype::Equivalence;
use mpi::point_to_point::{Message, Source, Status};
use mpi::topology::{Communicator, SimpleCommunicator};

use pools::Payload;
pub use pools::{ModelPool, SendPool};
pub use topology::{MASK_WORDS, Node, affinity_mask};
pub use waiting::{Backoff, SUSPENDED_GAP, WaitMode, instant_after, wait_mode};

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
    request: ffi::Request,
    since: Instant,
    /// Its sender was named on stderr already.
    named: bool,
}

impl Receiving {
    /// Post the receive of `message` (`len` values from `rank` with `tag`)
    /// into `data` (resized to `len`).
    fn post(message: Message, rank: i32, tag: i32, len: usize, mut data: Vec<f64>) -> Self {
        data.resize(len, 0.0);
        // SAFETY: `data` holds `len` values; its allocation is neither read
        // nor freed until the request completes (see `Receiving`).
        let request = unsafe { ffi::imrecv(message, &mut data) };
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
        // SAFETY: a live request (or the null request once complete).
        unsafe { ffi::test(&mut self.request) }
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
        // SAFETY: `data` is borrowed, so neither moved nor modified, until
        // the request completes: this function returns only after MPI_Test
        // says so, or, past the deadline, after cancelling it and waiting
        // for the cancellation (MPI_Wait) to complete.
        let mut request = unsafe { ffi::isend(self.world, data, rank, tag) };
        let mut deadline = deadline;
        loop {
            let now = self.look(&mut deadline);
            // SAFETY: one live request.
            if unsafe { ffi::test(&mut request) } {
                backoff.reset();
                return Ok(());
            }
            if deadline.is_some_and(|d| now >= d) {
                // SAFETY: as above: the request is live.
                unsafe { ffi::cancel_and_wait(&mut request) };
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
