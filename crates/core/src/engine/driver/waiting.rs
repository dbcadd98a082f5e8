//! Iterations observed late: a measured training run that sends each next
//! task ahead evaluates an iteration's losses on a thread beside the
//! iterations that follow ([`crate::engine::Learner::evaluate_beside`]), and the driver
//! observes that iteration, in order, once they are in.

use std::time::Instant;

use super::Lane;
use crate::engine::{EngineError, IterationEvent, Observer, RoundStatus, Timing};
use crate::record::IterationRecord;
use crate::straggler::RoundSample;

/// An iteration recorded but not yet observed: its losses, or those of an
/// iteration before it, are evaluated beside the iterations that follow
/// ([`crate::engine::Learner::evaluate_beside`]). What its event needs, kept.
#[derive(Debug, Clone)]
pub(super) struct Waiting {
    pub(super) lane: usize,
    pub(super) trial: u64,
    pub(super) iteration: u64,
    pub(super) duration: f64,
    pub(super) decodable: bool,
    /// Its losses are evaluated beside (`Some(true)`: the training loss
    /// over every partition too).
    pub(super) evaluated: Option<bool>,
    pub(super) record: IterationRecord,
    pub(super) sample: RoundSample,
    /// θ after its update.
    pub(super) theta: Vec<f64>,
}

/// The most iterations a lane keeps waiting for losses evaluated beside:
/// as many as 256 MiB hold (a copy of θ and of the evaluation point each),
/// at least 1, at most 1024. Past it the master waits for the oldest.
pub(super) fn waiting_capacity(dim: usize, workers: usize) -> usize {
    let bytes = 16 * dim + 64 * workers + 512;
    ((256usize << 20) / bytes).clamp(1, 1024)
}

/// Every observer sees `event`.
pub(super) fn observe(
    event: &IterationEvent<'_>,
    observers: &mut [&mut dyn Observer],
    timing: &mut Timing,
) -> Result<RoundStatus, EngineError> {
    let start = timing.enabled().then(Instant::now);
    for o in observers.iter_mut() {
        o.iteration(event).map_err(EngineError::Observer)?;
    }
    if let Some(start) = start {
        timing.add("observe (progress, trace)", start.elapsed().as_secs_f64());
    }
    Ok(RoundStatus::Completed)
}

/// Observe the iterations of `lane` waiting for losses evaluated beside,
/// oldest first, as their losses come in: waiting for them while more than
/// `keep` iterations wait (0: all of them), else as long as they are done.
/// A wait is left out of the elapsed time, as an evaluation is.
pub(super) fn release(
    lane: &mut Lane,
    observers: &mut [&mut dyn Observer],
    timing: &mut Timing,
    keep: usize,
) -> Result<(), EngineError> {
    while let Some(front) = lane.waiting.front() {
        if let Some(train) = front.evaluated {
            let wait = lane.waiting.len() > keep;
            let learner = lane
                .learner
                .as_mut()
                .expect("an evaluation beside has a learner");
            let Some(losses) = learner.take_beside(wait, timing)? else {
                return Ok(());
            };
            lane.evaluating_s += losses.wait_s;
            let front = lane.waiting.front_mut().expect("looked at above");
            debug_assert_eq!(losses.iteration, front.iteration, "in order");
            if train {
                front.record.train_loss = losses.train;
            }
            front.record.test_loss = losses.test;
            front.record.test_accuracy = losses.test_accuracy;
        }
        let w = lane.waiting.pop_front().expect("looked at above");
        let event = IterationEvent {
            lane: w.lane,
            trial: w.trial,
            iteration: w.iteration,
            record: &w.record,
            duration: w.duration,
            decodable: w.decodable,
            sample: &w.sample,
            theta: Some(&w.theta),
        };
        observe(&event, observers, timing)?;
    }
    Ok(())
}
