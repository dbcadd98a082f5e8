//! The master's stop rule: when it stops waiting for messages and decodes.
//!
//! One implementation for every caller: the simulated round hands it the
//! arrivals in time order, the MPI round asks it after every message (and
//! whenever a wait times out) whether to decode now or until when to wait,
//! and `explain` and `check` feed it arrivals without times. The rule:
//!
//! 1. the master stops at the first arrival after which the scheme's
//!    tracker calls the arrivals sufficient (wait_for workers, l − r + 1 per
//!    cluster, enough distinct codewords, ...);
//! 2. with a deadline d (`Scheme::deadline`, model time), it stops at d and
//!    decodes the messages that arrived at times ≤ d, whichever of 1 and 2
//!    comes first, once they recover at least one partition
//!    (`ArrivalTracker::recoverable`: any message of is-gc or
//!    ignore-stragglers; l − r + 1 codewords of one cluster of gc-sc or
//!    gc-dc); a message that arrives after d is then not used;
//! 3. when nothing recoverable has arrived by d, a partial-recovery scheme
//!    decodes as soon as an arrival makes something recoverable (other
//!    schemes wait for their tracker);
//! 4. when every message has arrived and none of the above stopped the
//!    master, it stops at the deadline if there is one, else at the last
//!    arrival (a non-decodable iteration, in the simulator).
//!
//! Times are model time (the papers' unitless time), non-decreasing.

use crate::coding::{Arrival, ArrivalTracker, Decoding, RoundPlan, Scheme};

/// The stop rule applied to arrivals without times (`explain --received`,
/// `check`'s sampled sets, tests): the first prefix the master decodes
/// ([`StopRule::prefix`]) and its decoding.
pub fn decode_prefix(
    scheme: &mut dyn Scheme,
    plan: &RoundPlan,
    arrivals: &[Arrival],
) -> (Decoding, usize) {
    let used = StopRule::prefix(scheme, plan, arrivals);
    (scheme.decode(plan, &arrivals[..used]), used)
}

/// Why the master stopped waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopCause {
    /// The tracker called the arrivals sufficient.
    Sufficient,
    /// The deadline passed with messages in hand.
    Deadline,
    /// Nothing recoverable had arrived by the deadline: the first arrival
    /// that recovers something decides (partial-recovery schemes).
    FirstAfterDeadline,
    /// Every message arrived and none of the rules stopped the master earlier.
    Exhausted,
}

/// Where and why the master stopped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stop {
    pub cause: StopCause,
    /// Model time at which the master stopped waiting.
    pub time: f64,
    /// Messages accepted: the first `accepted` arrivals are decoded.
    pub accepted: usize,
}

/// What the master does after an arrival.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Keep the message and wait for more (see [`StopRule::wait_until`]).
    Wait,
    /// Keep the message and decode now.
    Decode,
    /// The message came after the deadline: decode the messages before it,
    /// without it.
    DecodeWithout,
}

/// The stop rule of one iteration (see the module documentation).
pub struct StopRule<'a> {
    tracker: Box<dyn ArrivalTracker + 'a>,
    deadline: f64,
    partial: bool,
    accepted: usize,
    last_time: f64,
    stop: Option<Stop>,
}

impl<'a> StopRule<'a> {
    /// The rule of `scheme` for an iteration planned as `plan`, with the
    /// scheme's deadline.
    pub fn new(scheme: &'a dyn Scheme, plan: &'a RoundPlan) -> Self {
        Self::with_deadline(scheme, plan, scheme.deadline())
    }

    /// The rule without a deadline: the tracker alone decides. For arrivals
    /// that come without times (`explain --received`, `check`'s samples).
    pub fn untimed(scheme: &'a dyn Scheme, plan: &'a RoundPlan) -> Self {
        Self::with_deadline(scheme, plan, None)
    }

    fn with_deadline(scheme: &'a dyn Scheme, plan: &'a RoundPlan, deadline: Option<f64>) -> Self {
        Self {
            tracker: scheme.tracker(plan),
            deadline: deadline.unwrap_or(f64::INFINITY),
            partial: scheme.partial_recovery(),
            accepted: 0,
            last_time: 0.0,
            stop: None,
        }
    }

    /// The first prefix of `arrivals` (in arrival order, without times) that
    /// the master decodes: its length; all of them when no prefix suffices.
    pub fn prefix(scheme: &dyn Scheme, plan: &RoundPlan, arrivals: &[Arrival]) -> usize {
        let mut rule = StopRule::untimed(scheme, plan);
        for (i, &a) in arrivals.iter().enumerate() {
            if rule.arrive(a, i as f64) != Decision::Wait {
                break;
            }
        }
        rule.finish().accepted
    }

    /// Model time until which the master waits for the next message before
    /// it stops and decodes what it has: the deadline, once the messages in
    /// hand recover something. `None`: wait for the next message however
    /// long it takes.
    pub fn wait_until(&self) -> Option<f64> {
        (self.accepted > 0 && self.deadline.is_finite() && self.tracker.recoverable())
            .then_some(self.deadline)
    }

    /// A message arrives at model time `time` (not before the previous one).
    pub fn arrive(&mut self, arrival: Arrival, time: f64) -> Decision {
        debug_assert!(self.stop.is_none(), "an arrival after the master stopped");
        debug_assert!(
            time >= self.last_time || time.is_nan(),
            "arrivals in time order"
        );
        if time > self.deadline && self.accepted > 0 && self.tracker.recoverable() {
            self.stop_at(StopCause::Deadline, self.deadline);
            return Decision::DecodeWithout;
        }
        self.accepted += 1;
        self.last_time = time;
        if self.tracker.arrive(arrival) {
            self.stop_at(StopCause::Sufficient, time);
            Decision::Decode
        } else if self.partial && time > self.deadline && self.tracker.recoverable() {
            self.stop_at(StopCause::FirstAfterDeadline, time);
            Decision::Decode
        } else {
            Decision::Wait
        }
    }

    /// No message arrived up to model time `now`: whether the master stops
    /// (the deadline has passed with messages in hand).
    pub fn expire(&mut self, now: f64) -> bool {
        if self.stop.is_some() {
            return true;
        }
        match self.wait_until() {
            Some(deadline) if now >= deadline => {
                self.stop_at(StopCause::Deadline, deadline);
                true
            }
            _ => false,
        }
    }

    /// Messages accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted
    }

    /// Where the master stopped, once it has.
    pub fn stop(&self) -> Option<Stop> {
        self.stop
    }

    /// Every message has arrived (or no more will be fed): where the master
    /// stops. Without an earlier stop that is the deadline when one is
    /// pending, else the last arrival (time 0 when nothing arrived).
    pub fn finish(mut self) -> Stop {
        if self.stop.is_none() && !self.expire(f64::INFINITY) {
            self.stop_at(StopCause::Exhausted, self.last_time);
        }
        self.stop.expect("set above")
    }

    fn stop_at(&mut self, cause: StopCause, time: f64) {
        self.stop = Some(Stop {
            cause,
            time,
            accepted: self.accepted,
        });
    }
}
