//! Point-to-point messaging without spinning and without requests in flight.
//!
//! Sends are *buffered* (`MPI_Bsend` into a buffer attached at start-up): they
//! complete locally at once, so the master never waits for a straggler to
//! take its next task and no send request outlives the call that made it.
//! Receives are matched probes (`MPI_Improbe` then `MPI_Mrecv`): nothing is
//! pre-posted, so at shutdown there is no receive to cancel. Waiting is a
//! probe followed, for at most a short spin after each message, by a yield
//! of the core, then by a sleep that grows from [`Backoff::MIN`] to a cap, so
//! an idle rank costs a few thousand cheap wake-ups per second instead of a
//! core: 13 ranks share 2 cores.
//!
//! The buffered-send buffer is released (`MPI_Buffer_detach`) only when every
//! buffered message has been received, which the shutdown handshake
//! (stop → bye) guarantees.

use std::time::{Duration, Instant};

use mpi::point_to_point::{Destination, MatchedReceiveVec, Source, Status};
use mpi::topology::{Communicator, SimpleCommunicator};

/// Grows the sleep between probes while nothing arrives, after an optional
/// short spin (probe, yield the core, probe again) at the start of each wait.
///
/// The spin is for waits that usually end within a fraction of a
/// millisecond (a worker's next task, the master's next result): a sleep
/// overshoots by 50-100 µs (timer slack, virtualised timers), which the
/// spin avoids. It yields the core at every turn, so ranks that share a core
/// still run, and it lasts at most `spin` per wait: an idle rank sleeps.
#[derive(Debug, Clone)]
pub struct Backoff {
    sleep: Duration,
    cap: Duration,
    spin: Duration,
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
            spin_from: None,
        }
    }

    /// Yield the core while the spin lasts; then sleep, at most until
    /// `until` when given, and lengthen the next sleep.
    pub fn pause(&mut self, until: Option<Instant>) {
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

/// The world communicator with buffered sends and matched-probe receives.
pub struct Comm<'a> {
    world: &'a SimpleCommunicator,
}

impl<'a> Comm<'a> {
    pub fn new(world: &'a SimpleCommunicator) -> Self {
        Self { world }
    }

    pub fn rank(&self) -> i32 {
        self.world.rank()
    }

    pub fn size(&self) -> i32 {
        self.world.size()
    }

    /// End the whole job now (MPI_Abort): for when a clean shutdown cannot
    /// happen (a rank is gone or does not answer).
    pub fn abort(&self, code: u8) -> ! {
        self.world.abort(i32::from(code))
    }

    /// Buffered send: returns as soon as `data` is copied into the attached buffer.
    pub fn send(&self, rank: i32, tag: i32, data: &[f64]) {
        self.world
            .process_at_rank(rank)
            .buffered_send_with_tag(data, tag);
    }

    /// A message if one has arrived from anyone.
    pub fn try_receive(&self) -> Option<Received> {
        let probed: (_, Status) = self.world.any_process().immediate_matched_probe()?;
        let (rank, tag) = (probed.1.source_rank(), probed.1.tag());
        let (data, _) = probed.matched_receive_vec::<f64>();
        Some(Received { rank, tag, data })
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
        loop {
            if let Some(m) = self.try_receive() {
                backoff.reset();
                return Wait::Message(m);
            }
            if watch_signals {
                if let Some(signal) = super::interrupt::received() {
                    return Wait::Signal(signal);
                }
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Wait::Timeout;
            }
            backoff.pause(deadline);
        }
    }
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

/// Bytes of buffered-send buffer for `messages` messages of `len` f64 each
/// (with the per-message bookkeeping MPI adds, bounded generously).
pub fn buffer_bytes(messages: usize, len: usize) -> usize {
    const PER_MESSAGE_OVERHEAD: usize = 1024;
    messages * (len * std::mem::size_of::<f64>() + PER_MESSAGE_OVERHEAD)
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
}
