//! How a rank waits: the wait mode `runtime.wait` resolves to on a node,
//! the pauses between probes ([`Backoff`]), what counts as this process
//! having been suspended ([`SUSPENDED_GAP`]), and deadlines that may lie
//! beyond any clock ([`instant_after`]).

use std::time::{Duration, Instant};

use super::topology::Node;
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

/// A gap between two looks at the clock of a wait this much longer than
/// its longest sleep means the process did not run: it was stopped
/// (SIGSTOP, Ctrl-Z, Slurm's `scontrol suspend`, gang scheduling) and
/// continued. The time counts as
/// [`Comm::suspended`](super::Comm::suspended), not against others.
pub const SUSPENDED_GAP: Duration = Duration::from_secs(1);

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
    use std::time::{Duration, Instant};

    use super::{RuntimeWait, WaitMode, instant_after};

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
}
