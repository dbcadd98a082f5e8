//! One iteration of one lane, as named phases over a small context
//! ([`IterationContext`]): plan → round → decode → schedule and evaluate
//! the losses → step (the learner's update) → record → prepare the next
//! iteration → notify the observers.
//!
//! The scheme plans and decodes and the learner steps without I/O; what
//! leaves the driver goes through the round (the tasks, a hold, a task
//! sent ahead) and the observers (the iteration, when it is done and its
//! losses are in).

use std::borrow::Cow;
use std::time::Instant;

use super::waiting::{Waiting, observe, release, waiting_capacity};
use super::{Driver, Straggling, draw_state, state_context};
use crate::coding::{Arrival, Decoding, RoundPlan};
use crate::engine::{
    EngineError, IterationEvent, Learner, Observer, Round, RoundReport, RoundStatus, RoundTask,
    Stop, StopRule,
};
use crate::record::IterationRecord;
use crate::straggler::{RoundSample, infer_from_compute};

/// What one iteration of one lane is, for its phases.
#[derive(Debug, Clone, Copy)]
pub(super) struct IterationContext {
    pub(super) lane: usize,
    pub(super) trial: u64,
    /// 0-based.
    pub(super) iteration: u64,
    /// The straggler state of the iteration before is known (the state
    /// S⁰ before the first, when the model has one).
    pub(super) have_previous: bool,
    /// The last iteration made this one's plan (and drew its state).
    pub(super) planned: bool,
    /// Once θ is updated, draw the next iteration's state, make its plan
    /// and send its task ahead ([`Round::send_ahead`]), before the
    /// observers run.
    pub(super) prepare: bool,
    /// An observer wants the record's per-worker columns.
    pub(super) wants_workers: bool,
}

/// What the round brought and the decode made of it.
struct Decoded {
    stop: Stop,
    decoding: Decoding,
    /// The round measures wall time (MPI) rather than model time.
    measured: bool,
    /// The decoded sum of gradients is in the driver's `combined` (a
    /// training lane).
    has_vectors: bool,
    /// Until the decodable set: measured, or the model's stop time.
    decodable_s: f64,
    decode_s: f64,
    /// A simulated round's aggregation after the stop (model time).
    after_stop: f64,
}

impl Decoded {
    /// The iteration's duration, in seconds and in model time units: from
    /// the send of θ to the updated θ. Measured, the wait for a decodable
    /// set, the decode and the update (`update_s`; the losses' evaluation
    /// is not part of it: elapsed_s counts it); simulated, the model's time
    /// until the decodable set and, reducing, the sum's arrival (nothing
    /// models the decode itself). Simulated, the model time itself is kept:
    /// seconds converted back would differ from it in the last digit.
    fn duration(&self, update_s: f64, time_unit_s: f64) -> (f64, f64) {
        if self.measured {
            let duration_s = self.decodable_s + self.decode_s + update_s;
            (duration_s, duration_s / time_unit_s)
        } else {
            let duration = self.stop.time + self.after_stop;
            (duration * time_unit_s, duration)
        }
    }
}

/// Where an iteration's losses are evaluated and when it is observed.
struct LossSchedule {
    /// The decode recovered part of the data (or approximated all of it):
    /// the training loss over all of it needs every partition's loss.
    partial: bool,
    /// The losses are evaluated beside the iterations that follow.
    beside: bool,
    /// The iteration waits to be observed (see [`Driver::notify`]).
    queue: bool,
    /// How many iterations may stay waiting once it is recorded.
    keep: usize,
}

impl Driver {
    /// One iteration of one lane, phase after phase (see the module). The
    /// round's status: an interrupted round ends the iteration before its
    /// decode.
    pub(super) fn iterate(
        &mut self,
        it: &IterationContext,
        straggling: &mut Straggling,
        round: &mut dyn Round,
        observers: &mut [&mut dyn Observer],
    ) -> Result<RoundStatus, EngineError> {
        self.plan(it);
        let (status, stop) = self.run_round(it, round, observers)?;
        if status != RoundStatus::Completed {
            return Ok(status);
        }
        let decoded = self.decode(it, round, stop)?;
        let schedule = self.schedule_losses(it, &decoded, round)?;
        let full_loss = self.evaluate_in_line(it, &schedule, decoded.measured, round)?;
        self.record_decode(it, &decoded);
        self.step(it, &decoded, full_loss, round)?;
        let duration = self.record(it, &decoded, straggling);
        // Observed in order: after the iterations waiting for their losses
        // (this one waits too, evaluated beside or not, unless nothing may
        // wait past it: a snapshot or the end follows). A wait for those
        // losses (for all of them, or for room, past `waiting_capacity`)
        // comes here, before the next task is sent: never inside an
        // iteration's time.
        release(
            &mut self.lanes[it.lane],
            observers,
            &mut self.timing,
            schedule.keep,
        )?;
        if it.prepare {
            self.prepare_next(it, straggling, round)?;
        }
        self.notify(it, &decoded, &schedule, duration, observers)
    }

    /// Plan: the scheme plans the iteration on what the master knows of
    /// the straggler state. A plan made ahead (by the last iteration) is
    /// this iteration's; a fixed plan was made once.
    fn plan(&mut self, it: &IterationContext) {
        let lane = &mut self.lanes[it.lane];
        if lane.fixed || it.planned {
            return;
        }
        let previous = it.have_previous.then_some(&self.previous);
        let ctx = state_context(self.state_info, it.iteration, &self.current, previous);
        self.timing
            .time("plan", || lane.scheme.plan_round_into(&ctx, &mut lane.plan));
    }

    /// Round: the workers' messages of the iteration until the stop rule
    /// stops the master. The iterations waiting for losses evaluated beside
    /// are observed as soon as those are in; all of them, waiting, when this
    /// round does not complete (the run ends).
    fn run_round(
        &mut self,
        it: &IterationContext,
        round: &mut dyn Round,
        observers: &mut [&mut dyn Observer],
    ) -> Result<(RoundStatus, Stop), EngineError> {
        let Self {
            lanes,
            timing,
            current,
            report,
            ..
        } = self;
        let lane = &mut lanes[it.lane];
        report.clear();
        let (status, stop) = {
            let task = RoundTask {
                lane: it.lane,
                iteration: it.iteration,
                plan: &lane.plan,
                sample: current,
                eval_point: lane.learner.as_ref().map(Learner::eval_point),
            };
            let mut rule = StopRule::new(lane.scheme.as_ref(), &lane.plan);
            let status = round.run(&task, &mut rule, report, timing);
            (status, rule.finish())
        };
        let keep = if matches!(status, Ok(RoundStatus::Completed)) {
            usize::MAX
        } else {
            0
        };
        let observed = release(lane, observers, timing, keep);
        let status = status.map_err(EngineError::Round)?;
        observed?;
        Ok((status, stop))
    }

    /// Decode: the scheme's weights for what the round accepted, the
    /// weighted sum of the vectors (a training lane), and a simulated
    /// round's aggregation after the stop.
    fn decode(
        &mut self,
        it: &IterationContext,
        round: &mut dyn Round,
        stop: Stop,
    ) -> Result<Decoded, EngineError> {
        let Self {
            lanes,
            time_unit_s,
            timing,
            current,
            report,
            order,
            combined,
            ..
        } = self;
        let lane = &mut lanes[it.lane];
        let plan = &lane.plan;
        debug_assert_eq!(stop.accepted, report.arrivals.len(), "accepted messages");
        let measured = round.measures_time();
        let decode_start = measured.then(Instant::now);
        let decoding = lane.scheme.decode(plan, &report.arrivals);
        let has_vectors = lane.learner.is_some() && {
            // Summed in (worker, message) order: the rounding of the sum does
            // not depend on who was fastest.
            order.clear();
            order.extend(0..report.arrivals.len());
            order
                .sort_unstable_by_key(|&i| (report.arrivals[i].worker, report.arrivals[i].message));
            round
                .combine(order, &decoding.weights, combined)
                .map_err(EngineError::Round)?
        };
        let decode_s = decode_start.map_or(f64::NAN, |s| s.elapsed().as_secs_f64());
        timing.add("decode", decode_s);
        let task = RoundTask {
            lane: it.lane,
            iteration: it.iteration,
            plan,
            sample: current,
            eval_point: None,
        };
        let after_stop = round.settle(&task, &report.arrivals, &decoding.weights, stop.time);
        let decodable_s = if measured {
            report.duration_s
        } else {
            stop.time * *time_unit_s
        };
        Ok(Decoded {
            stop,
            decoding,
            measured,
            has_vectors,
            decodable_s,
            decode_s,
            after_stop,
        })
    }

    /// Schedule the losses: in line, beside the iterations that follow, or
    /// not at all this iteration; and hold the workers when the master is
    /// about to evaluate or wait.
    ///
    /// The training loss over all the data when the decode recovered only
    /// part of it: the partitions' losses the results carried, the others
    /// computed by the learner on its own copy of the data (nothing waits
    /// for a worker; not counted in the iteration's duration, which ended
    /// at the stop, nor in the elapsed time).
    /// A measured run that sends the next task ahead evaluates the losses
    /// (this one, the test set's) on a thread beside the iterations that
    /// follow instead, and observes this iteration once they are in: the
    /// master sends and waits as it would without an evaluation, so which
    /// results arrive in time or stale depends on `train.eval_every` only
    /// through the CPU the thread takes (issue 39). Not when a snapshot
    /// follows this iteration: it would have to wait for them.
    fn schedule_losses(
        &mut self,
        it: &IterationContext,
        decoded: &Decoded,
        round: &mut dyn Round,
    ) -> Result<LossSchedule, EngineError> {
        let t = it.iteration;
        let lane = &self.lanes[it.lane];
        let decoding = &decoded.decoding;
        let partial = decoded.has_vectors
            && lane
                .learner
                .as_ref()
                .is_some_and(|l| decoding.approximate || decoding.recovered.len() < l.partitions());
        // Whether something may wait past this iteration: no snapshot and
        // no end follows it.
        let may_wait =
            decoded.measured && it.prepare && self.snapshot_every.is_none_or(|n| (t + 1) % n != 0);
        let evaluates = lane.learner.as_ref().is_some_and(|l| l.evaluates(t));
        let beside = may_wait && evaluates;
        // Whether this iteration waits for losses evaluated beside (see the
        // observation in `notify`), and how many iterations may stay waiting.
        let queue = may_wait && (beside || !lane.waiting.is_empty());
        let keep = match &lane.learner {
            Some(learner) if queue => {
                waiting_capacity(learner.dim(), lane.record.finish_s.len()) - 1
            }
            _ => 0,
        };
        // The master evaluates in line or waits for evaluations before it
        // sends the next task: the workers still on this iteration drop it
        // first, as that task would have made them.
        let in_line = !beside && evaluates;
        let waits = lane.waiting.len() > keep && lane.waiting.iter().any(|w| w.evaluated.is_some());
        if decoded.measured && it.prepare && (in_line || waits) {
            round.hold(t).map_err(EngineError::Round)?;
        }
        Ok(LossSchedule {
            partial,
            beside,
            queue,
            keep,
        })
    }

    /// Evaluate: start the evaluation beside, or complete the training loss
    /// over all the data in line (`Some`, for the step) when the decode was
    /// partial and the iteration evaluates.
    fn evaluate_in_line(
        &mut self,
        it: &IterationContext,
        schedule: &LossSchedule,
        measured: bool,
        round: &mut dyn Round,
    ) -> Result<Option<f64>, EngineError> {
        let t = it.iteration;
        let lane = &mut self.lanes[it.lane];
        Ok(match &mut lane.learner {
            Some(learner) if schedule.beside => {
                learner.evaluate_beside(t, round.partition_losses(), schedule.partial)?;
                None
            }
            Some(learner) if schedule.partial && learner.evaluates(t) => {
                let start = Instant::now();
                let loss = learner.complete_loss(t, false, round.partition_losses())?;
                let evaluate_s = start.elapsed().as_secs_f64();
                if measured {
                    self.timing.add("evaluate train loss", evaluate_s);
                    lane.evaluating_s += evaluate_s;
                }
                Some(loss)
            }
            _ => None,
        })
    }

    /// The record's columns of the decode; the losses NaN until the step.
    fn record_decode(&mut self, it: &IterationContext, decoded: &Decoded) {
        let Self { lanes, report, .. } = self;
        let lane = &mut lanes[it.lane];
        let decoding = &decoded.decoding;
        let partitions = lane.scheme.partitions();
        let record = &mut lane.record;
        record.decodable_s = decoded.decodable_s;
        record.decode_s = decoded.decode_s;
        record.recovered_fraction = decoding.recovered_fraction(partitions);
        record.decode_error =
            decoding.error(&lane.plan, &report.arrivals, partitions, &mut lane.coverage);
        record.messages_received = report.arrivals.len() as u64;
        record.messages_used = decoding.messages_used() as u64;
        record.stale_dropped = report.stale_dropped;
        record.train_loss = f64::NAN;
        record.batch_loss = f64::NAN;
        record.batch_accuracy = f64::NAN;
        record.test_loss = f64::NAN;
        record.test_accuracy = f64::NAN;
    }

    /// Step: a training lane's learner updates θ with the decoded sum (an
    /// iteration that decoded nothing is an error), and the record takes
    /// the losses the step evaluated.
    fn step(
        &mut self,
        it: &IterationContext,
        decoded: &Decoded,
        full_loss: Option<f64>,
        round: &mut dyn Round,
    ) -> Result<(), EngineError> {
        let Self {
            lanes,
            timing,
            report,
            combined,
            ..
        } = self;
        let lane = &mut lanes[it.lane];
        let Some(learner) = &mut lane.learner else {
            return Ok(());
        };
        let decoding = &decoded.decoding;
        assert!(
            decoded.has_vectors,
            "a training lane runs on a round with vectors"
        );
        if !decoding.decodable || decoding.recovered.is_empty() {
            return Err(EngineError::NotDecodable {
                iteration: it.iteration,
                residual: decoding.residual,
                tolerance: lane.scheme.decode_tolerance(),
            });
        }
        let losses = learner.step(
            it.iteration,
            combined,
            &decoding.recovered,
            decoding.approximate,
            full_loss,
            timing,
        )?;
        lane.evaluating_s += learner.last_evaluate_s();
        let record = &mut lane.record;
        record.train_loss = losses.train;
        record.batch_loss = learner.last_batch_loss();
        let counted = counted_partitions(decoding, &report.arrivals, &lane.plan);
        record.batch_accuracy = round
            .batch_correct(&counted)
            .map_or(f64::NAN, |c| c / learner.samples_of(&counted) as f64);
        record.test_loss = losses.test;
        record.test_accuracy = losses.test_accuracy;
        Ok(())
    }

    /// Record: the iteration's duration, the straggler state it recorded
    /// (inferred from the measured rates, and kept for the next plan), the
    /// per-worker columns when an observer wants them, the totals and the
    /// elapsed time. The duration in model time units.
    fn record(&mut self, it: &IterationContext, decoded: &Decoded, straggling: &Straggling) -> f64 {
        let Self {
            lanes,
            time_unit_s,
            current,
            report,
            started,
            ..
        } = self;
        let lane = &mut lanes[it.lane];
        let update_s = lane.learner.as_ref().map_or(0.0, Learner::last_update_s);
        let (duration_s, duration) = decoded.duration(update_s, *time_unit_s);
        let record = &mut lane.record;
        record.duration_s = duration_s;
        if let Straggling::Measured { rate_threshold } = straggling {
            infer_from_compute(
                &report.per_computation_s,
                *time_unit_s,
                *rate_threshold,
                current,
            );
        }
        let overruns = report.overrun_s.iter().filter(|&&o| o > 0.0).count() as u64;
        if it.wants_workers {
            record_workers(record, report, &decoded.decoding, current, &lane.plan);
        }
        let totals = &mut lane.totals;
        totals.iterations += 1;
        totals.duration_s += duration_s;
        totals.decodable_s += decoded.decodable_s;
        totals.stale_dropped += report.stale_dropped;
        totals.overruns += overruns;
        totals.recovered += record.recovered_fraction;
        // The end of the iteration: the master's clock since the run started
        // less the time it spent evaluating losses (the test evaluation, a
        // partial scheme's wait for every partition's loss: measuring is not
        // training), continuing a resumed run's; in simulation the model time
        // of the iterations so far (in seconds), a trial's clock starting at 0.
        record.elapsed_s = if decoded.measured {
            lane.carried_elapsed_s + started.elapsed().as_secs_f64() - lane.evaluating_s
        } else {
            totals.duration_s
        };
        log::debug!(
            "{}: {:.6} s, {} messages received, {} used, {} stale dropped, recovered {:.3}, train loss {:.6e}",
            crate::error::Iteration(it.iteration),
            record.duration_s,
            record.messages_received,
            record.messages_used,
            record.stale_dropped,
            record.recovered_fraction,
            record.train_loss
        );
        duration
    }

    /// Prepare the next iteration, ahead of the observers: its state (the
    /// one draw of the straggler model it would make at its start), its
    /// plan (on what the master knows then: this iteration's state is known
    /// now, after the inference in `record`) and its task, sent to the
    /// workers. A training lane's only.
    fn prepare_next(
        &mut self,
        it: &IterationContext,
        straggling: &mut Straggling,
        round: &mut dyn Round,
    ) -> Result<(), EngineError> {
        let Self {
            lanes,
            state_info,
            timing,
            current,
            next,
            prepared,
            ..
        } = self;
        let lane = &mut lanes[it.lane];
        let Some(learner) = &lane.learner else {
            return Ok(());
        };
        draw_state(straggling, next);
        if !lane.fixed {
            let ctx = state_context(*state_info, it.iteration + 1, next, Some(&*current));
            timing.time("plan", || lane.scheme.plan_round_into(&ctx, &mut lane.plan));
        }
        *prepared = true;
        let task = RoundTask {
            lane: it.lane,
            iteration: it.iteration + 1,
            plan: &lane.plan,
            sample: next,
            eval_point: Some(learner.eval_point()),
        };
        round.send_ahead(&task, timing).map_err(EngineError::Round)
    }

    /// Notify: the observers see the iteration now, or, when it waits for
    /// losses evaluated beside (or behind iterations that do), once those
    /// are in, in order.
    fn notify(
        &mut self,
        it: &IterationContext,
        decoded: &Decoded,
        schedule: &LossSchedule,
        duration: f64,
        observers: &mut [&mut dyn Observer],
    ) -> Result<RoundStatus, EngineError> {
        let Self {
            lanes,
            timing,
            current,
            ..
        } = self;
        let lane = &mut lanes[it.lane];
        if schedule.queue
            && let Some(learner) = &lane.learner
        {
            lane.waiting.push_back(Waiting {
                lane: it.lane,
                trial: it.trial,
                iteration: it.iteration,
                duration,
                decodable: decoded.decoding.decodable,
                evaluated: schedule.beside.then_some(schedule.partial),
                record: lane.record.clone(),
                sample: current.clone(),
                theta: learner.theta().to_vec(),
            });
            release(lane, observers, timing, usize::MAX)?;
            return Ok(RoundStatus::Completed);
        }
        let event = IterationEvent {
            lane: it.lane,
            trial: it.trial,
            iteration: it.iteration,
            record: &lane.record,
            duration,
            decodable: decoded.decoding.decodable,
            sample: current,
            theta: lane.learner.as_ref().map(Learner::theta),
        };
        observe(&event, observers, timing)
    }
}

/// The partitions an iteration's batch accuracy counts: the recovered
/// ones; an approximate decode's, those its weighted arrivals computed.
fn counted_partitions<'d>(
    decoding: &'d Decoding,
    arrivals: &[Arrival],
    plan: &RoundPlan,
) -> Cow<'d, [usize]> {
    if !decoding.approximate {
        return Cow::Borrowed(&decoding.recovered);
    }
    let mut partitions: Vec<usize> = arrivals
        .iter()
        .zip(&decoding.weights)
        .filter(|&(_, &w)| w != 0.0)
        .flat_map(|(a, _)| {
            plan.tasks[a.worker].messages[a.message]
                .codeword
                .terms
                .iter()
                .map(|&(p, _)| p)
        })
        .collect();
    partitions.sort_unstable();
    partitions.dedup();
    Cow::Owned(partitions)
}

/// The record's per-worker columns: each worker's arrival time and whether
/// the decode used it, its straggler state and cluster, and what an MPI
/// round measured of it.
fn record_workers(
    record: &mut IterationRecord,
    report: &RoundReport,
    decoding: &Decoding,
    current: &RoundSample,
    plan: &RoundPlan,
) {
    record.finish_s.fill(f64::NAN);
    record.used.fill(false);
    for (i, a) in report.arrivals.iter().enumerate() {
        record.finish_s[a.worker] = report.arrival_s[i];
        if decoding.weights[i] != 0.0 {
            record.used[a.worker] = true;
        }
    }
    record.straggling.copy_from_slice(&current.straggling);
    record.cluster.fill(-1);
    for (c, members) in plan.clusters.iter().enumerate() {
        for &w in members {
            record.cluster[w] = c as i64 + 1;
        }
    }
    if report.overrun_s.len() == record.overrun_s.len() {
        record.overrun_s.copy_from_slice(&report.overrun_s);
    } else {
        record.overrun_s.fill(0.0);
    }
    // Measured by an MPI round (issue 26, item 2); NaN otherwise.
    for (column, measured) in [
        (&mut record.message_bytes, &report.message_bytes),
        (&mut record.compute_s, &report.compute_s),
        (&mut record.received_s, &report.received_s),
    ] {
        if measured.len() == column.len() {
            column.copy_from_slice(measured);
        } else {
            column.fill(f64::NAN);
        }
    }
}
