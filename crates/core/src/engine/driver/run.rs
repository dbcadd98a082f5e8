//! A run of the driver: the straggler process replayed to the first
//! iteration, the iterations (each one [`Driver::iterate`], lane after
//! lane, with the snapshots between them), and the run's end (the
//! iterations still waiting for their losses observed, the final model
//! evaluated, the last snapshot).

use std::ops::Range;
use std::time::Instant;

use super::iteration::IterationContext;
use super::waiting::release;
use super::{Driver, RunEnd, Straggling, draw_state};
use crate::engine::{
    EngineError, Observer, Round, RoundStatus, RoundTask, SnapshotEvent, StopRule,
};

impl Driver {
    /// Run iterations `iterations` of trial `trial`. A range that starts
    /// after 0 continues a run: the straggler process is replayed to its
    /// start (its samples are a function of the seed), the learners are
    /// expected to be restored already. Stops early, with the signal, when
    /// the round is interrupted.
    pub fn run(
        &mut self,
        straggling: &mut Straggling,
        round: &mut dyn Round,
        iterations: Range<u64>,
        trial: u64,
        observers: &mut [&mut dyn Observer],
    ) -> Result<RunEnd, EngineError> {
        assert!(
            self.lanes.len() == 1 || matches!(straggling, Straggling::Model(_)),
            "measured straggling infers the state of one lane's workers"
        );
        let started = Instant::now();
        self.started = started;
        for lane in &mut self.lanes {
            lane.totals = lane.carried.clone();
            lane.evaluating_s = 0.0;
        }
        let (completed, interrupted) =
            self.iterations(straggling, round, iterations.clone(), trial, observers)?;
        let interrupted = self.finish(round, &iterations, completed, interrupted, observers)?;
        Ok(RunEnd {
            first: iterations.start,
            completed,
            interrupted,
            wall_s: started.elapsed().as_secs_f64(),
        })
    }

    /// The straggler model's state before iteration `first`: the state
    /// before the first iteration (000 Algorithm 1's S⁰), when the model
    /// has one; a resumed run replays to its start. Whether a state before
    /// `first` is known.
    fn replay(&mut self, straggling: &mut Straggling, first: u64) -> bool {
        let Straggling::Model(model) = straggling else {
            return false;
        };
        let mut have_previous = model.initial_state(&mut self.previous);
        for _ in 0..first {
            model.sample(&mut self.current);
            std::mem::swap(&mut self.current, &mut self.previous);
            have_previous = true;
        }
        have_previous
    }

    /// The iterations, each lane's in turn on the same straggler state,
    /// with a snapshot every `snapshot_every`: the iterations completed and
    /// the signal that interrupted one, if one did.
    fn iterations(
        &mut self,
        straggling: &mut Straggling,
        round: &mut dyn Round,
        iterations: Range<u64>,
        trial: u64,
        observers: &mut [&mut dyn Observer],
    ) -> Result<(u64, Option<i32>), EngineError> {
        let mut have_previous = self.replay(straggling, iterations.start);
        let wants_workers = observers.iter().any(|o| o.wants_workers());
        let mut completed = iterations.start;
        let last = iterations.end;
        // A training run of one lane prepares each next iteration (its
        // straggler state and plan) right after the update and hands its
        // task to the round ([`Round::send_ahead`]) before the observers
        // and any snapshot run: the workers compute meanwhile. Every draw
        // comes in the same order as without it, so results are the same.
        let ahead = self.lanes.len() == 1 && self.lanes[0].learner.is_some();
        self.prepared = false;
        for t in iterations {
            let planned = std::mem::take(&mut self.prepared);
            if planned {
                std::mem::swap(&mut self.current, &mut self.next);
            } else {
                draw_state(straggling, &mut self.current);
            }
            for lane in 0..self.lanes.len() {
                let it = IterationContext {
                    lane,
                    trial,
                    iteration: t,
                    have_previous,
                    planned,
                    prepare: ahead && t + 1 < last,
                    wants_workers,
                };
                let status = self.iterate(&it, straggling, round, observers)?;
                if let RoundStatus::Interrupted { signal } = status {
                    return Ok((completed, Some(signal)));
                }
            }
            std::mem::swap(&mut self.current, &mut self.previous);
            have_previous = true;
            completed = t + 1;
            if self.snapshot_every.is_some_and(|n| completed % n == 0) {
                let start = self.timing.enabled().then(Instant::now);
                self.snapshot(completed, observers)?;
                if let Some(start) = start {
                    self.timing
                        .add("observe (progress, trace)", start.elapsed().as_secs_f64());
                }
            }
        }
        Ok((completed, None))
    }

    /// The end of a run that completed `completed` of `iterations` (or was
    /// `interrupted`): the signal that stopped it, if one did.
    fn finish(
        &mut self,
        round: &mut dyn Round,
        iterations: &Range<u64>,
        completed: u64,
        mut interrupted: Option<i32>,
        observers: &mut [&mut dyn Observer],
    ) -> Result<Option<i32>, EngineError> {
        // An iteration still waiting for its losses (none after a
        // completed iteration: the round after it observed it).
        for lane in 0..self.lanes.len() {
            release(&mut self.lanes[lane], observers, &mut self.timing, 0)?;
        }
        // The losses at the model the run ends with: one more round at θ.
        if interrupted.is_none() && completed == iterations.end {
            for lane in 0..self.lanes.len() {
                if let Some(signal) = self.evaluate_final(lane, completed, round)? {
                    interrupted = Some(signal);
                    break;
                }
            }
        }
        // The state after the last completed iteration, resumable (an
        // interrupted iteration is abandoned: it did not update the model).
        if let Some(n) = self.snapshot_every
            && (completed % n != 0 || completed == iterations.start)
        {
            self.snapshot(completed, observers)?;
        }
        Ok(interrupted)
    }

    /// Every observer saves a snapshot of each training lane after
    /// `completed` iterations.
    fn snapshot(
        &mut self,
        completed: u64,
        observers: &mut [&mut dyn Observer],
    ) -> Result<(), EngineError> {
        for lane in &self.lanes {
            let Some(learner) = &lane.learner else {
                continue;
            };
            let snapshot = SnapshotEvent {
                iteration: completed,
                theta: learner.theta(),
                previous: learner.previous(),
            };
            for o in observers.iter_mut() {
                o.snapshot(&snapshot).map_err(EngineError::Snapshot)?;
            }
        }
        Ok(())
    }

    /// The losses of lane `lane`'s learner at its final θ (after the last
    /// update, the model a trace stores): one more round, numbered
    /// `completed`, with the last plan, no emulated delay and θ itself as
    /// the evaluation point, whose results carry each partition's loss at θ
    /// ([`Round::partition_losses`]; the learner computes those the
    /// stopped round did not bring, [`Learner::complete_loss`]); nothing is decoded or updated,
    /// and nothing recorded as an iteration. `Some(signal)` when a signal
    /// stopped it (the final training loss is then NaN).
    fn evaluate_final(
        &mut self,
        lane: usize,
        completed: u64,
        round: &mut dyn Round,
    ) -> Result<Option<i32>, EngineError> {
        let Self {
            lanes,
            timing,
            current,
            report,
            ..
        } = self;
        let index = lane;
        let lane = &mut lanes[index];
        let Some(learner) = &mut lane.learner else {
            return Ok(None);
        };
        current.clear();
        report.clear();
        let task = RoundTask {
            lane: index,
            iteration: completed,
            plan: &lane.plan,
            sample: current,
            eval_point: Some(learner.theta()),
        };
        let start = round.measures_time().then(Instant::now);
        let mut rule = StopRule::new(lane.scheme.as_ref(), &lane.plan);
        let (signal, loss_sum) = match round
            .run(&task, &mut rule, report, timing)
            .map_err(EngineError::Round)?
        {
            RoundStatus::Interrupted { signal } => (Some(signal), None),
            _ => {
                let known = round.partition_losses();
                let sum = match known {
                    Some(_) => Some(learner.complete_loss(completed, true, known)?),
                    None => None,
                };
                (None, sum)
            }
        };
        if let Some(start) = start {
            timing.add(
                "evaluate final model (round)",
                start.elapsed().as_secs_f64(),
            );
        }
        if loss_sum.is_none() {
            // `train` says so to the user.
            log::debug!(
                "the training loss at the final model is not known{}: final_train_loss is NaN",
                if signal.is_some() {
                    " (a signal stopped its evaluation)"
                } else {
                    ""
                }
            );
        }
        learner.evaluate_final(loss_sum, timing)?;
        Ok(signal)
    }
}
