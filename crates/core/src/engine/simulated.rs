//! The simulated round: arrival events on a virtual clock.
//!
//! Every message of the plan arrives at `after · unit_time + extra_time`
//! (model time) of its worker's sample ([`RoundSample::message_time`]); the
//! events go to the stop rule sorted by time (ties by worker, then message).
//! Continuous times tie with probability 0, so the messages received are the
//! prefix the rule accepts. With a network ([`SimulatedRound::with_delivery`])
//! that time is when the worker sends the message, and the events carry the
//! time the master has received it ([`crate::network::delivery`]): the stop
//! rule, and so the decode, goes by arrivals.
//!
//! The master's link stays busy past the stop: a message that its worker
//! sends before the next task reaches it (its send time before the end of
//! the iteration: a worker still computing then abandons its task, as
//! `src/runtime/worker.rs` does) crosses the link whether the decode used
//! it or not, and with `master_link_shared = true` the next iteration's
//! first arrival waits for it ([`crate::network::Delivery::deliver_after`]).
//! Each lane carries its link's state from one iteration to the next of the
//! same trial (a lane's iteration `i + 1` follows its iteration `i`; any
//! other starts with the link free). With a reduce
//! ([`SimulatedRound::with_reduce`]) the messages are headers, and the
//! decodable set's tree and sum ([`crate::network::reduce`]) end the
//! iteration after the stop ([`Round::settle`]).
//!
//! [`RoundSample::message_time`]: crate::straggler::RoundSample::message_time

use super::{Decision, Round, RoundError, RoundReport, RoundStatus, RoundTask, StopRule, Timing};
use crate::coding::Arrival;
use crate::network::{Delivery, Reduce};

/// A lane's master link between iterations.
#[derive(Debug, Clone, Copy)]
struct LinkState {
    /// The iteration that left it so.
    iteration: u64,
    /// The last arrival over it, in the next iteration's clock (model time).
    busy_until: f64,
}

/// The simulator's round. Keeps its event buffer between iterations.
#[derive(Debug, Default)]
pub struct SimulatedRound {
    /// Seconds per model time unit, for the arrival times it reports.
    time_unit_s: f64,
    /// The network the messages cross (`None`: they arrive when sent).
    delivery: Option<Delivery>,
    /// `runtime.aggregate = "reduce"`: headers, then the tree and the sum.
    reduce: Option<Reduce>,
    /// The delivery the last iteration's messages crossed.
    used: Option<Delivery>,
    /// Per lane: its master link after its last iteration.
    links: Vec<Option<LinkState>>,
    events: Vec<(f64, Arrival)>,
    /// Scratch for [`Round::settle`].
    sent: Vec<(f64, Arrival)>,
}

impl SimulatedRound {
    /// A round that reports times in seconds, `time_unit_s` per model time unit.
    pub fn new(time_unit_s: f64) -> Self {
        Self {
            time_unit_s,
            ..Self::default()
        }
    }

    /// This round with its messages crossing `delivery` (`None`: no network).
    pub fn with_delivery(mut self, delivery: Option<Delivery>) -> Self {
        self.delivery = delivery;
        self
    }

    /// This round reducing the decodable set's vectors (`runtime.aggregate`
    /// resolved to `reduce`) over the network of `reduce`; `None`: gathering.
    /// Only with a delivery (without a network nothing is timed).
    pub fn with_reduce(mut self, reduce: Option<Reduce>) -> Self {
        self.reduce = reduce;
        self
    }

    /// The events of the last iteration, sorted by arrival time (model time).
    pub fn events(&self) -> &[(f64, Arrival)] {
        &self.events
    }

    /// Where lane `lane`'s master link is busy until at the start of
    /// iteration `iteration` (model time; `-∞`: free).
    fn busy_until(&self, lane: usize, iteration: u64) -> f64 {
        match self.links.get(lane).copied().flatten() {
            Some(l) if l.iteration.checked_add(1) == Some(iteration) => l.busy_until,
            _ => f64::NEG_INFINITY,
        }
    }
}

impl Round for SimulatedRound {
    fn run(
        &mut self,
        task: &RoundTask<'_>,
        rule: &mut StopRule<'_>,
        report: &mut RoundReport,
        _timing: &mut Timing,
    ) -> Result<RoundStatus, RoundError> {
        let (plan, sample) = (task.plan, task.sample);
        assert_eq!(
            plan.tasks.len(),
            sample.workers(),
            "the plan and the delay sample have different worker counts"
        );
        self.events.clear();
        for (worker, work) in plan.tasks.iter().enumerate() {
            for (message, m) in work.messages.iter().enumerate() {
                let time = sample.message_time(worker, m.after);
                self.events.push((time, Arrival { worker, message }));
            }
        }
        self.used = match (&self.delivery, &mut self.reduce) {
            (Some(_), Some(reduce)) => {
                let computations = plan
                    .tasks
                    .iter()
                    .flat_map(|t| t.messages.iter().map(|m| m.after))
                    .max()
                    .unwrap_or(0);
                Some(reduce.headers(computations).map_err(|e| e.to_string())?)
            }
            (delivery, _) => *delivery,
        };
        let busy = self.busy_until(task.lane, task.iteration);
        match &self.used {
            // Sorted by arrival time, ties as below.
            Some(delivery) => {
                delivery.deliver_after(&mut self.events, |a| (a.worker, a.message), busy)
            }
            None => self.events.sort_unstable_by(|a, b| {
                a.0.total_cmp(&b.0)
                    .then(a.1.worker.cmp(&b.1.worker))
                    .then(a.1.message.cmp(&b.1.message))
            }),
        }
        for &(time, arrival) in &self.events {
            match rule.arrive(arrival, time) {
                Decision::Wait => report.accept(arrival, time * self.time_unit_s),
                Decision::Decode => {
                    report.accept(arrival, time * self.time_unit_s);
                    break;
                }
                Decision::DecodeWithout => break,
            }
        }
        Ok(RoundStatus::Completed)
    }

    fn settle(
        &mut self,
        task: &RoundTask<'_>,
        arrivals: &[Arrival],
        weights: &[f64],
        stop: f64,
    ) -> f64 {
        let Some(delivery) = self.used else {
            return 0.0;
        };
        // The decodable set: the workers with a message of nonzero weight.
        let after_stop = self.reduce.as_ref().map_or(0.0, |reduce| {
            let mut members: Vec<usize> = arrivals
                .iter()
                .zip(weights)
                .filter(|(_, w)| **w != 0.0)
                .map(|(a, _)| a.worker)
                .collect();
            members.sort_unstable();
            members.dedup();
            reduce.after_stop(members.len())
        });
        if !(delivery.shared() && delivery.master_transfer() > 0.0) {
            return after_stop;
        }
        // The iteration ends (the next task is sent) at `end`: the messages
        // sent before it cross the master's link, the others are abandoned.
        let end = stop + after_stop;
        let busy = self.busy_until(task.lane, task.iteration);
        let (plan, sample) = (task.plan, task.sample);
        let sent_at = |a: &Arrival| {
            sample.message_time(a.worker, plan.tasks[a.worker].messages[a.message].after)
        };
        let last = if self.events.iter().all(|(_, a)| sent_at(a) < end) {
            self.events.last().map_or(f64::NEG_INFINITY, |e| e.0)
        } else {
            // Each worker's messages together and in plan order, as `run`
            // pushes them, without the abandoned ones.
            self.sent.clear();
            for (worker, work) in plan.tasks.iter().enumerate() {
                for (message, m) in work.messages.iter().enumerate() {
                    let time = sample.message_time(worker, m.after);
                    if time < end {
                        self.sent.push((time, Arrival { worker, message }));
                    }
                }
            }
            delivery.deliver_after(&mut self.sent, |a| (a.worker, a.message), busy);
            self.sent.last().map_or(f64::NEG_INFINITY, |e| e.0)
        };
        // The reduced sum arrived at `end` itself.
        let last = if self.reduce.is_some() {
            last.max(end)
        } else {
            last
        };
        let busy_until = if last.is_finite() && end.is_finite() {
            last - end
        } else {
            f64::NEG_INFINITY
        };
        if self.links.len() <= task.lane {
            self.links.resize(task.lane + 1, None);
        }
        self.links[task.lane] = Some(LinkState {
            iteration: task.iteration,
            busy_until,
        });
        after_stop
    }
}
