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
//! [`RoundSample::message_time`]: crate::straggler::RoundSample::message_time

use super::{Decision, Round, RoundError, RoundReport, RoundStatus, RoundTask, StopRule, Timing};
use crate::coding::Arrival;
use crate::network::Delivery;

/// The simulator's round. Keeps its event buffer between iterations.
#[derive(Debug, Default)]
pub struct SimulatedRound {
    /// Seconds per model time unit, for the arrival times it reports.
    time_unit_s: f64,
    /// The network the messages cross (`None`: they arrive when sent).
    delivery: Option<Delivery>,
    events: Vec<(f64, Arrival)>,
}

impl SimulatedRound {
    /// A round that reports times in seconds, `time_unit_s` per model time unit.
    pub fn new(time_unit_s: f64) -> Self {
        Self {
            time_unit_s,
            delivery: None,
            events: Vec::new(),
        }
    }

    /// This round with its messages crossing `delivery` (`None`: no network).
    pub fn with_delivery(mut self, delivery: Option<Delivery>) -> Self {
        self.delivery = delivery;
        self
    }

    /// The events of the last iteration, sorted by arrival time (model time).
    pub fn events(&self) -> &[(f64, Arrival)] {
        &self.events
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
        match &self.delivery {
            // Sorted by arrival time, ties as below.
            Some(delivery) => delivery.deliver(&mut self.events, |a| (a.worker, a.message)),
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
}
