//! The driver: the iteration loop of every run, simulated or on MPI.
//!
//! This file holds what the driver is made of (its lanes, the straggler
//! state, the totals) and what it tells of a run (its end, its summary);
//! `run.rs` is the loop, `iteration.rs` one iteration of one lane in named
//! phases, `waiting.rs` the iterations observed once the losses evaluated
//! beside them are in.

mod iteration;
mod run;
mod waiting;

use std::collections::VecDeque;
use std::time::Instant;

use serde::Serialize;

use super::{Learner, RoundReport, Timing};
use crate::coding::{RoundContext, RoundPlan, Scheme};
use crate::config::StateInfo;
use crate::record::{IterationRecord, TimingEvent};
use crate::straggler::{DelayModel, RoundSample};
use waiting::Waiting;

/// What the master knows when it plans iteration `iteration` (000 §V, §VI):
/// with `perfect` state information the state of this iteration (`current`),
/// with `imperfect` the state of the previous one (`previous`), learned from
/// the workers' feedback; at the first iteration the state S⁰ before it when
/// the straggler model has one (000 Algorithm 1), else nothing (`None`
/// fields). Rates are given only when the state has one for every worker.
pub fn state_context<'a>(
    info: StateInfo,
    iteration: u64,
    current: &'a RoundSample,
    previous: Option<&'a RoundSample>,
) -> RoundContext<'a> {
    let known = match info {
        StateInfo::Perfect => Some(current),
        StateInfo::Imperfect => previous,
    };
    RoundContext {
        iteration,
        straggling: known.map(|s| s.straggling.as_slice()),
        rates: known.and_then(RoundSample::rates),
    }
}

/// Where the straggler state of each iteration comes from.
pub enum Straggling {
    /// Sampled from a delay model, once per iteration in order: the
    /// simulator's delays, and the MPI runtime's emulation (the workers
    /// sleep until their sampled times).
    Model(Box<dyn DelayModel>),
    /// Nothing injected: after each iteration a worker whose measured rate
    /// (1 / model time per computation) is below `rate_threshold`, or that
    /// sent nothing, straggled ([`crate::straggler::infer_from_compute`]).
    Measured { rate_threshold: f64 },
}

/// One scheme the driver runs, with what belongs to it.
pub struct Lane {
    scheme: Box<dyn Scheme>,
    /// The iteration's plan, planned into in place; made once for a scheme
    /// whose plan never changes (`fixed`).
    plan: RoundPlan,
    fixed: bool,
    learner: Option<Learner>,
    record: IterationRecord,
    totals: Totals,
    /// The totals a resumed run starts from (see [`Driver::carry_over`]).
    carried: Totals,
    /// The elapsed time a resumed run starts from (0 for a new run).
    carried_elapsed_s: f64,
    /// Scratch of [`crate::coding::Decoding::error`]: a·B_S over the partitions.
    coverage: Vec<f64>,
    /// Seconds the current run has spent evaluating losses (the test
    /// evaluation, a partial scheme's wait for every partition's loss):
    /// left out of `elapsed_s`, as out of every iteration's duration.
    evaluating_s: f64,
    /// Iterations recorded and not yet observed, in order: the first waits
    /// for losses evaluated beside the iterations after it (see
    /// [`Driver::iterate`]).
    waiting: VecDeque<Waiting>,
}

/// What a resumed run carries over from the iterations before its start
/// (read from its trace), so that its summary, progress and timing count
/// the whole run rather than the resumed part only.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Carried {
    pub iterations: u64,
    /// Sum of the recorded iteration times.
    pub duration_s: f64,
    /// Sum of the recorded times until a decodable set (NaN when the trace
    /// did not record them).
    pub decodable_s: f64,
    pub stale_dropped: u64,
    /// Worker-iterations that ran past their emulated time.
    pub overruns: u64,
    /// Sum of the recovered fractions.
    pub recovered: f64,
    /// `/iteration/elapsed_s` of the last iteration before the resume: the
    /// resumed run's elapsed time continues from it (NaN when the trace did
    /// not record it: the resumed rows' elapsed is then NaN too, unknown).
    pub elapsed_s: f64,
    /// The named timing events saved by the earlier part.
    pub timing: Vec<TimingEvent>,
}

/// Sums over the iterations of a run, for its summary.
#[derive(Debug, Clone, Default)]
struct Totals {
    iterations: u64,
    duration_s: f64,
    decodable_s: f64,
    stale_dropped: u64,
    overruns: u64,
    recovered: f64,
}

impl Lane {
    /// A lane of `scheme`, with a learner for a training run.
    pub fn new(mut scheme: Box<dyn Scheme>, learner: Option<Learner>) -> Self {
        let fixed = scheme.static_plan();
        let plan = if fixed {
            scheme.plan_round(&RoundContext::default())
        } else {
            RoundPlan::default()
        };
        let record = IterationRecord::new(scheme.workers());
        Self {
            scheme,
            plan,
            fixed,
            learner,
            record,
            totals: Totals::default(),
            carried: Totals::default(),
            carried_elapsed_s: 0.0,
            coverage: Vec::new(),
            evaluating_s: 0.0,
            waiting: VecDeque::new(),
        }
    }

    pub fn scheme(&self) -> &dyn Scheme {
        self.scheme.as_ref()
    }

    pub fn learner(&self) -> Option<&Learner> {
        self.learner.as_ref()
    }

    pub fn learner_mut(&mut self) -> Option<&mut Learner> {
        self.learner.as_mut()
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunEnd {
    /// The first iteration of this run (0, or where a resumed run started).
    pub first: u64,
    /// Iterations completed, counting those before a resumed run's start.
    pub completed: u64,
    /// The signal that stopped the run, if one did.
    pub interrupted: Option<i32>,
    /// Wall time of the loop.
    pub wall_s: f64,
}

/// The end of a run of one lane (`train --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    pub scheme: String,
    pub workers: usize,
    /// Iterations completed, counting those before a resumed run's start.
    pub iterations: usize,
    /// Mean recorded iteration time (`duration_s`: from the send of θ to
    /// the updated θ; a task sent ahead, [`super::Round::send_ahead`], counts the
    /// previous iteration's observers too) over every iteration, a resumed
    /// run's earlier part included.
    pub mean_iteration_s: f64,
    /// Mean time from the send of θ until the master held a decodable set
    /// (`decodable_s`; what `simulate` predicts), NaN when a resumed run's
    /// earlier part did not record it.
    pub mean_decodable_s: f64,
    /// The iteration a resumed run started from (its earlier part is
    /// counted in every total above), absent for a run from the start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resumed_at: Option<u64>,
    /// Wall time of the training loop (setup and shutdown excluded), a
    /// resumed run's earlier part included (as in its timing events).
    pub wall_s: f64,
    pub stale_dropped: u64,
    /// Worker-iterations whose real work ran past the emulated due time.
    pub overruns: u64,
    /// The training objective (over all the training data; with
    /// `train.batch_size`, over one mini-batch of each partition) at the final
    /// θ when `final_at_theta`, else at the last iteration's evaluation point.
    pub final_train_loss: f64,
    pub final_test_loss: f64,
    /// Share of the test samples the final model classifies correctly
    /// (classifiers: `model.kind` a network; NaN otherwise).
    pub final_test_accuracy: f64,
    /// The final losses are at `theta`, the model the run ends with (a run
    /// that completed its iterations evaluates it once more); false when a
    /// signal stopped the run: they are the last iteration's.
    pub final_at_theta: bool,
    pub mean_recovered_fraction: f64,
    /// Tasks the workers abandoned for newer ones (counted at shutdown).
    pub tasks_abandoned: u64,
    /// How the MPI master collected the coded vectors (`runtime.aggregate`
    /// resolved: `gather` or `reduce`); absent outside `train`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aggregate: Option<crate::spec::Aggregation>,
    /// Bytes the MPI master received per iteration, mean over this run's
    /// iterations (result headers, vectors, acknowledgements; the reduced
    /// vector with `aggregate = reduce`); absent outside `train`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub master_inbound_bytes_per_iteration: Option<f64>,
    /// Named timing events (like PETSc's -log_view).
    pub timing: Vec<TimingEvent>,
    /// Where the trace was written, when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    pub theta: Vec<f64>,
}

/// Runs iterations of one or more schemes (lanes) on the same straggler
/// state, through one kind of round, and hands them to the observers.
pub struct Driver {
    lanes: Vec<Lane>,
    state_info: StateInfo,
    /// Seconds per model time unit (`straggler.time_unit_ms` / 1000).
    time_unit_s: f64,
    snapshot_every: Option<u64>,
    timing: Timing,
    current: RoundSample,
    previous: RoundSample,
    /// The next iteration's straggler state, drawn ahead of it when its
    /// task is sent ahead (see [`Driver::run`]).
    next: RoundSample,
    report: RoundReport,
    order: Vec<usize>,
    combined: Vec<f64>,
    /// When the current [`Driver::run`] started: the origin of the
    /// `elapsed_s` of a round that measures wall time.
    started: Instant,
    /// The next iteration's state is in `next` and its plan in the lane's
    /// plan: the iteration before prepared them and sent its task ahead.
    prepared: bool,
}

/// Draw the straggler state of the next iteration into `sample`: the
/// model's next sample, or nothing known yet (measured).
fn draw_state(straggling: &mut Straggling, sample: &mut RoundSample) {
    match straggling {
        Straggling::Model(model) => model.sample(sample),
        Straggling::Measured { .. } => sample.clear(),
    }
}

impl Driver {
    /// A driver of `lanes` (at least one, all of the same worker count).
    /// `timing` measures the named events (a training run) or not (the
    /// simulator); `snapshot_every` asks the observers for a snapshot every
    /// so many iterations (lanes with a learner).
    pub fn new(
        lanes: Vec<Lane>,
        state_info: StateInfo,
        time_unit_s: f64,
        snapshot_every: Option<u64>,
        timing: bool,
    ) -> Self {
        let k = lanes
            .first()
            .expect("a driver needs a lane")
            .scheme
            .workers();
        assert!(
            lanes.iter().all(|l| l.scheme.workers() == k),
            "every lane has the same workers"
        );
        Self {
            lanes,
            state_info,
            time_unit_s,
            snapshot_every: snapshot_every.filter(|&n| n > 0),
            timing: Timing::new(timing),
            current: RoundSample::new(k),
            previous: RoundSample::new(k),
            next: RoundSample::new(k),
            report: RoundReport::default(),
            order: Vec::new(),
            combined: Vec::new(),
            started: Instant::now(),
            prepared: false,
        }
    }

    pub fn lanes(&self) -> &[Lane] {
        &self.lanes
    }

    pub fn lanes_mut(&mut self) -> &mut [Lane] {
        &mut self.lanes
    }

    /// K.
    pub fn workers(&self) -> usize {
        self.current.workers()
    }

    /// A resumed run: lane `lane` starts its totals from `carried`, and the
    /// timing events from the earlier part's, so the summary of the run
    /// counts every iteration.
    pub fn carry_over(&mut self, lane: usize, carried: &Carried) {
        self.lanes[lane].carried = Totals {
            iterations: carried.iterations,
            duration_s: carried.duration_s,
            decodable_s: carried.decodable_s,
            stale_dropped: carried.stale_dropped,
            overruns: carried.overruns,
            recovered: carried.recovered,
        };
        self.lanes[lane].carried_elapsed_s = carried.elapsed_s;
        self.timing.merge(&carried.timing);
    }

    /// The summary of lane `lane` after a run that ended as `end`.
    pub fn summary(&self, lane: usize, end: &RunEnd) -> RunSummary {
        let l = &self.lanes[lane];
        let n = l.totals.iterations.max(1) as f64;
        let losses = l.learner.as_ref().map(Learner::last_losses);
        RunSummary {
            scheme: l.scheme.kind().to_string(),
            workers: l.scheme.workers(),
            iterations: end.completed as usize,
            mean_iteration_s: l.totals.duration_s / n,
            mean_decodable_s: l.totals.decodable_s / n,
            resumed_at: (end.first > 0).then_some(end.first),
            // The timing events hold the earlier part's too: so does the wall.
            wall_s: end.wall_s + l.carried_elapsed_s.max(0.0),
            stale_dropped: l.totals.stale_dropped,
            overruns: l.totals.overruns,
            final_train_loss: losses.map_or(f64::NAN, |x| x.train),
            final_test_loss: losses.map_or(f64::NAN, |x| x.test),
            final_test_accuracy: losses.map_or(f64::NAN, |x| x.test_accuracy),
            final_at_theta: l.learner.as_ref().is_some_and(Learner::final_evaluated),
            mean_recovered_fraction: l.totals.recovered / n,
            tasks_abandoned: 0,
            aggregate: None,
            master_inbound_bytes_per_iteration: None,
            timing: self.timing.summary(),
            trace: None,
            theta: l
                .learner
                .as_ref()
                .map_or_else(Vec::new, |x| x.theta().to_vec()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::engine::{
        IterationEvent, Observer, ObserverError, Round, RoundError, RoundStatus, RoundTask,
        SimulatedRound, StopRule,
    };
    use crate::straggler::DelaySpec;
    use std::time::Duration;

    /// A simulated round (with or without vectors) as a round that measures
    /// wall time: each iteration sleeps 2 ms and records 1 ms until its
    /// decodable set (less than the wall clock, as a master's recorded wait
    /// is).
    struct Clocked<R>(R);

    thread_local! {
        /// Rounds a [`Clocked`] round ran on this thread.
        static ROUNDS_RUN: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
        /// The iterations a [`Clocked`] round was told to hold after.
        static HOLDS: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    impl<R: Round> Round for Clocked<R> {
        fn run(
            &mut self,
            task: &RoundTask<'_>,
            rule: &mut StopRule<'_>,
            report: &mut RoundReport,
            timing: &mut Timing,
        ) -> Result<RoundStatus, RoundError> {
            std::thread::sleep(Duration::from_millis(2));
            ROUNDS_RUN.with(|n| n.set(n.get() + 1));
            let status = self.0.run(task, rule, report, timing)?;
            report.duration_s = 1e-3;
            Ok(status)
        }

        fn combine(
            &mut self,
            order: &[usize],
            weights: &[f64],
            out: &mut Vec<f64>,
        ) -> Result<bool, RoundError> {
            self.0.combine(order, weights, out)
        }

        fn partition_losses(&self) -> Option<&[f64]> {
            self.0.partition_losses()
        }

        fn batch_correct(&self, recovered: &[usize]) -> Option<f64> {
            self.0.batch_correct(recovered)
        }

        fn send_ahead(
            &mut self,
            task: &RoundTask<'_>,
            timing: &mut Timing,
        ) -> Result<(), RoundError> {
            self.0.send_ahead(task, timing)
        }

        fn hold(&mut self, iteration: u64) -> Result<(), RoundError> {
            HOLDS.with(|h| h.borrow_mut().push(iteration));
            self.0.hold(iteration)
        }

        fn measures_time(&self) -> bool {
            true
        }
    }

    /// (trial, duration_s, elapsed_s) of every iteration, and (decodable_s,
    /// decode_s).
    #[derive(Default)]
    struct Clock(Vec<(u64, f64, f64)>, Vec<(f64, f64)>);

    impl Observer for Clock {
        fn iteration(&mut self, e: &IterationEvent<'_>) -> Result<(), ObserverError> {
            self.0
                .push((e.trial, e.record.duration_s, e.record.elapsed_s));
            self.1.push((e.record.decodable_s, e.record.decode_s));
            Ok(())
        }
    }

    /// A training run of `text` in one process: the driver of one lane with
    /// its learner (`timed`: it keeps the timing events), the round that
    /// computes the partitions' gradients (1 ms a model time unit), and the
    /// config's straggler model.
    fn learning_run(text: &str, timed: bool) -> (Driver, crate::engine::LearningRound, Straggling) {
        let config = crate::config::parse(text, "test", &[]).unwrap().config;
        let scheme = crate::coding::build(&config).unwrap();
        let partitions = scheme.partitions();
        let data = crate::learn::DataPlan::new(&config, partitions).unwrap();
        let learner = Learner::new(&config, &data, data.load_test().unwrap()).unwrap();
        let ids: Vec<usize> = (0..partitions).collect();
        let round = crate::engine::LearningRound::new(
            SimulatedRound::new(1e-3),
            learner.model().clone(),
            crate::spec::Batch::Full,
            config.seed,
            data.load(&ids).unwrap(),
        );
        let driver = Driver::new(
            vec![Lane::new(scheme, Some(learner))],
            config.straggler.state_info,
            1e-3,
            None,
            timed,
        );
        let spec = DelaySpec::from_config(&config).unwrap();
        (driver, round, Straggling::Model(spec.model(0)))
    }

    /// Issue 28, item 2: a measured iteration spans from the send of θ to
    /// the updated θ: the wait for a decodable set (`decodable_s`), the
    /// decode and the update, and nothing else (the update's share is
    /// exactly the timing table's `update`); a simulated one is the model's
    /// time until the decodable set.
    #[test]
    fn a_measured_iteration_is_the_wait_the_decode_and_the_update() {
        let text = "workers = 4\n[scheme]\nkind = \"gc-cyclic\"\nload = 2\n[data]\ntrain_samples = 400\ntest_samples = 40\nfeatures = 30\n[train]\niterations = 6\neval_every = 1\n";
        let (mut d, round, mut straggling) = learning_run(text, true);
        let mut round = Clocked(round);
        let mut clock = Clock::default();
        let end = d
            .run(&mut straggling, &mut round, 0..6, 0, &mut [&mut clock])
            .unwrap();
        let summary = d.summary(0, &end);
        let event = |name: &str| {
            summary
                .timing
                .iter()
                .find(|e| e.event == name)
                .unwrap_or_else(|| panic!("no timing event {name}"))
                .total_s
        };
        let mut updates_s = 0.0;
        for (&(_, duration_s, _), &(decodable_s, decode_s)) in clock.0.iter().zip(&clock.1) {
            assert_eq!(decodable_s, 1e-3);
            assert!(decode_s > 0.0, "the decode is measured");
            let update_s = duration_s - decodable_s - decode_s;
            assert!(update_s >= 0.0, "{duration_s} < {decodable_s} + {decode_s}");
            updates_s += update_s;
        }
        assert_eq!(clock.0.len(), 6);
        let decodes_s: f64 = clock.1.iter().map(|x| x.1).sum();
        assert!((decodes_s - event("decode")).abs() <= 1e-12, "{decodes_s}");
        assert!(
            (updates_s - event("update")).abs() <= 1e-9 * event("update").max(1e-9),
            "the iterations hold {updates_s} s of update, the timing table {}",
            event("update")
        );
        // The evaluation of the losses (every iteration here) is not in them.
        assert!(event("evaluate") > 0.0);
        let mean = |v: &mut dyn Iterator<Item = f64>| v.sum::<f64>() / 6.0;
        assert_eq!(summary.mean_decodable_s, 1e-3);
        assert!((summary.mean_iteration_s - mean(&mut clock.0.iter().map(|x| x.1))).abs() <= 1e-15);
    }

    /// One iteration's losses as the observers saw them: (iteration,
    /// train, test, test accuracy, batch loss), and the rounds run on this
    /// thread when it was observed.
    type Seen = (u64, f64, f64, f64, f64, u64);

    #[derive(Default)]
    struct Losses(Vec<Seen>);

    impl Observer for Losses {
        fn iteration(&mut self, e: &IterationEvent<'_>) -> Result<(), ObserverError> {
            let r = e.record;
            self.0.push((
                e.iteration,
                r.train_loss,
                r.test_loss,
                r.test_accuracy,
                r.batch_loss,
                ROUNDS_RUN.with(std::cell::Cell::get),
            ));
            Ok(())
        }
    }

    /// The losses of every iteration of `text`'s run over a round that
    /// measures time (`clocked`: the losses evaluated on a thread beside
    /// the next iteration) or a simulated one (evaluated in line).
    /// And the count of timing event `evaluate (beside)`.
    fn losses_of(text: &str, clocked: bool) -> (Vec<Seen>, u64) {
        ROUNDS_RUN.with(|n| n.set(0));
        let iterations = crate::config::parse(text, "test", &[])
            .unwrap()
            .config
            .train
            .iterations as u64;
        let (mut d, inner, mut straggling) = learning_run(text, clocked);
        let mut seen = Losses::default();
        let end = if clocked {
            let mut round = Clocked(inner);
            d.run(
                &mut straggling,
                &mut round,
                0..iterations,
                0,
                &mut [&mut seen],
            )
        } else {
            let mut round = inner;
            d.run(
                &mut straggling,
                &mut round,
                0..iterations,
                0,
                &mut [&mut seen],
            )
        }
        .unwrap();
        let beside = d
            .summary(0, &end)
            .timing
            .iter()
            .find(|e| e.event == "evaluate (beside)")
            .map_or(0, |e| e.count);
        (seen.0, beside)
    }

    /// A partial scheme trained for 9 iterations, evaluated every 3.
    const PARTIAL_RUN: &str = "workers = 4\nseed = 5\n[scheme]\nkind = \"ignore-stragglers\"\nwait_for = 2\n[straggler]\nmodel = \"shifted-exponential\"\n[data]\nkind = \"synthetic-logistic\"\ntrain_samples = 400\ntest_samples = 40\nfeatures = 12\n[train]\niterations = 9\neval_every = 3\n";

    /// `seen` observed the 9 iterations of [`PARTIAL_RUN`] in order, each
    /// with the losses an evaluation in line gives (`in_line`), bit for bit.
    fn assert_same_losses(seen: &[Seen], in_line: &[Seen], how: &str) {
        assert_eq!(seen.len(), 9, "{how}");
        for (t, (b, l)) in seen.iter().zip(in_line).enumerate() {
            assert_eq!(b.0, t as u64, "{how}: observed in order");
            let same = |x: f64, y: f64| x.to_bits() == y.to_bits();
            assert!(
                same(b.1, l.1) && same(b.2, l.2) && same(b.3, l.3) && same(b.4, l.4),
                "iteration {t}: {how} {b:?}, in line {l:?}"
            );
        }
    }

    /// Issue 39: a measured run evaluates an iteration's losses beside the
    /// next iteration and observes it once they are in: the observers see
    /// every iteration once, in order, with the losses an evaluation in
    /// line gives, bit for bit (the training loss a partial decode leaves
    /// to the master's own copy of the data, the test loss; a linear
    /// model has no accuracy), at the evaluated iterations only, and the
    /// batch loss at all.
    #[test]
    fn losses_evaluated_beside_the_next_iteration_are_those_evaluated_in_line() {
        let text = PARTIAL_RUN;
        let (beside, threads) = losses_of(text, true);
        let (in_line, none) = losses_of(text, false);
        // Iterations 0, 3 and 6 beside; the last (8) in line: nothing follows it.
        assert_eq!((threads, none), (3, 0));
        assert_same_losses(&beside, &in_line, "beside");
        for (t, b) in beside.iter().enumerate() {
            let evaluated = t % 3 == 0 || t == 8;
            assert_eq!(b.2.is_finite(), evaluated, "iteration {t}: {b:?}");
            assert_eq!(b.1.is_finite(), evaluated, "iteration {t}: {b:?}");
            assert!(b.4.is_finite(), "iteration {t}: {b:?}");
        }
    }

    /// `train.evaluation = "deferred"`: the same losses, bit for bit, and
    /// no evaluation runs beside an iteration: with no snapshot and room
    /// for every iteration, each one is observed after the last round ran.
    #[test]
    fn deferred_evaluations_wait_for_the_end_and_give_the_same_losses() {
        let text = PARTIAL_RUN;
        let deferred_text = format!("{text}evaluation = \"deferred\"\n");
        let (deferred, threads) = losses_of(&deferred_text, true);
        let (in_line, _) = losses_of(text, false);
        assert_eq!(threads, 3);
        assert_same_losses(&deferred, &in_line, "deferred");
        for (t, b) in deferred.iter().enumerate() {
            assert_eq!(b.5, 9, "iteration {t} observed after round {} of 9", b.5);
        }
    }

    /// Issue 39: the workers are told to drop the task in hand exactly when
    /// the master evaluates in line or waits for evaluations before it
    /// sends the next task. 9 iterations, evaluated every 3, a snapshot
    /// every 4: iteration 3 is evaluated in line (a snapshot follows it),
    /// iteration 7 waits for 6's evaluation (a snapshot follows it; beside,
    /// unless it is already in), and the last sends nothing after it.
    #[test]
    fn the_workers_drop_their_task_before_the_master_evaluates_or_waits() {
        let text = PARTIAL_RUN;
        for evaluation in ["beside", "deferred"] {
            let text = format!("{text}evaluation = \"{evaluation}\"\n");
            let (mut d, inner, mut straggling) = learning_run(&text, true);
            d.snapshot_every = Some(4);
            HOLDS.with(|h| h.borrow_mut().clear());
            let mut round = Clocked(inner);
            d.run(&mut straggling, &mut round, 0..9, 0, &mut [])
                .unwrap();
            let holds = HOLDS.with(|h| h.borrow().clone());
            if evaluation == "deferred" {
                assert_eq!(holds, vec![3, 7]);
            } else {
                // Beside, iteration 6's evaluation may be in before 7 ends:
                // then nothing waits there.
                assert!(holds == [3] || holds == [3, 7], "{holds:?}");
            }
        }
    }

    fn driver(config: &Config) -> Driver {
        let scheme = crate::coding::build(config).unwrap();
        Driver::new(
            vec![Lane::new(scheme, None)],
            config.straggler.state_info,
            config.straggler.time_unit_ms / 1000.0,
            None,
            false,
        )
    }

    #[test]
    fn a_simulations_elapsed_time_is_the_running_sum_of_its_iterations_per_trial() {
        let config = Config::default();
        let spec = DelaySpec::from_config(&config).unwrap();
        let mut d = driver(&config);
        let mut round = SimulatedRound::new(config.straggler.time_unit_ms / 1000.0);
        let mut clock = Clock::default();
        for trial in 0..2 {
            let mut straggling = Straggling::Model(spec.model(trial));
            d.run(&mut straggling, &mut round, 0..7, trial, &mut [&mut clock])
                .unwrap();
        }
        assert_eq!(clock.0.len(), 14);
        for trial in 0..2 {
            let mut sum = 0.0;
            for (&(_, duration, elapsed), &(decodable, _)) in
                clock.0.iter().zip(&clock.1).filter(|r| r.0.0 == trial)
            {
                assert!(duration > 0.0);
                assert_eq!(duration, decodable, "nothing models the decode");
                sum += duration;
                assert_eq!(elapsed, sum, "trial {trial}");
            }
        }
    }

    #[test]
    fn a_measured_runs_elapsed_time_is_the_wall_clock_and_continues_a_resumed_ones() {
        let config = Config::default();
        let spec = DelaySpec::from_config(&config).unwrap();
        for carried in [0.0, 100.0] {
            let mut d = driver(&config);
            d.carry_over(
                0,
                &Carried {
                    elapsed_s: carried,
                    ..Default::default()
                },
            );
            let mut clock = Clock::default();
            let start = Instant::now();
            let mut straggling = Straggling::Model(spec.model(0));
            d.run(
                &mut straggling,
                &mut Clocked(SimulatedRound::new(1e-3)),
                3..9,
                0,
                &mut [&mut clock],
            )
            .unwrap();
            let wall = start.elapsed().as_secs_f64();
            assert_eq!(clock.0.len(), 6);
            let mut before = carried;
            for (i, &(_, duration, elapsed)) in clock.0.iter().enumerate() {
                // No learner: the wait until the decodable set and the decode.
                let (decodable, decode) = clock.1[i];
                assert_eq!(decodable, 1e-3);
                assert_eq!(duration, decodable + decode);
                // At least the 2 ms slept per iteration so far, at most the wall clock.
                assert!(elapsed - carried >= 2e-3 * (i + 1) as f64, "{elapsed}");
                assert!(elapsed - carried <= wall, "{elapsed} > {wall}");
                assert!(elapsed > before);
                before = elapsed;
            }
        }
        // A resumed trace without elapsed times: NaN, never a clock from 0.
        let mut d = driver(&config);
        d.carry_over(
            0,
            &Carried {
                elapsed_s: f64::NAN,
                ..Default::default()
            },
        );
        let mut clock = Clock::default();
        let mut straggling = Straggling::Model(spec.model(0));
        d.run(
            &mut straggling,
            &mut Clocked(SimulatedRound::new(1e-3)),
            3..5,
            0,
            &mut [&mut clock],
        )
        .unwrap();
        assert!(clock.0.iter().all(|r| r.2.is_nan()));
    }

    /// What a round and an observer saw, in order: `run t` with the plan
    /// and sample the round was given, `ahead t` for a task sent ahead,
    /// `observe t` for an iteration event.
    type Log = std::rc::Rc<std::cell::RefCell<Vec<String>>>;

    struct Recording<R>(R, Log);

    impl<R: Round> Round for Recording<R> {
        fn run(
            &mut self,
            task: &RoundTask<'_>,
            rule: &mut StopRule<'_>,
            report: &mut RoundReport,
            timing: &mut Timing,
        ) -> Result<RoundStatus, RoundError> {
            self.1.borrow_mut().push(format!(
                "run {} {:?} {:?}",
                task.iteration, task.plan, task.sample
            ));
            self.0.run(task, rule, report, timing)
        }

        fn combine(
            &mut self,
            order: &[usize],
            weights: &[f64],
            out: &mut Vec<f64>,
        ) -> Result<bool, RoundError> {
            self.0.combine(order, weights, out)
        }

        fn send_ahead(
            &mut self,
            task: &RoundTask<'_>,
            _timing: &mut Timing,
        ) -> Result<(), RoundError> {
            self.1.borrow_mut().push(format!(
                "ahead {} {:?} {:?} {:?}",
                task.iteration,
                task.plan,
                task.sample,
                task.eval_point.map(|e| e.to_vec())
            ));
            Ok(())
        }
    }

    struct Logged(Log);

    impl Observer for Logged {
        fn iteration(&mut self, e: &IterationEvent<'_>) -> Result<(), ObserverError> {
            self.0.borrow_mut().push(format!(
                "observe {} {:?} {:?}",
                e.iteration,
                e.sample,
                e.theta.map(|t| t.to_vec())
            ));
            Ok(())
        }
    }

    /// The log of an 8-iteration run of gc-dc on `config`: with a learner
    /// (tasks prepared ahead) or without (plans and samples only).
    fn logged_run(config: &Config, spec: &DelaySpec, learning: bool) -> Vec<String> {
        let log = Log::default();
        let scheme = crate::coding::build(config).unwrap();
        assert!(!scheme.static_plan(), "the plans depend on the state");
        let partitions = scheme.partitions();
        let data = crate::learn::DataPlan::new(config, partitions).unwrap();
        let learner =
            learning.then(|| Learner::new(config, &data, data.load_test().unwrap()).unwrap());
        let mut d = Driver::new(
            vec![Lane::new(scheme, learner)],
            config.straggler.state_info,
            1e-3,
            None,
            false,
        );
        let mut straggling = Straggling::Model(spec.model(0));
        let mut observer = Logged(log.clone());
        if learning {
            let ids: Vec<usize> = (0..partitions).collect();
            let learner = d.lanes()[0].learner().unwrap();
            let mut round = Recording(
                crate::engine::LearningRound::new(
                    SimulatedRound::new(1e-3),
                    learner.model().clone(),
                    crate::spec::Batch::Full,
                    config.seed,
                    data.load(&ids).unwrap(),
                ),
                log.clone(),
            );
            d.run(&mut straggling, &mut round, 0..8, 0, &mut [&mut observer])
                .unwrap();
        } else {
            let mut round = Recording(SimulatedRound::new(1e-3), log.clone());
            d.run(&mut straggling, &mut round, 0..8, 0, &mut [&mut observer])
                .unwrap();
        }
        log.take()
    }

    /// Issue 23: a training lane prepares each next iteration after its
    /// update and hands the task to the round before the observers run
    /// (never past the last iteration), with θ after the update; the plans
    /// and straggler samples of every iteration are those of a lane that
    /// prepares nothing (no learner), draw for draw: a state-dependent
    /// scheme (gc-dc, imperfect state information) on a Markov model.
    #[test]
    fn a_task_sent_ahead_has_the_plan_and_state_its_iteration_would_have_had() {
        let text = "workers = 9\nseed = 3\n[scheme]\nkind = \"gc-dc\"\nload = 3\nclusters = 3\nclusters_per_worker = 3\nstraggler_threshold = 0.5\n[straggler]\nmodel = \"gilbert-elliott\"\nalpha = 0.01\nmu_fast = 10.0\nmu_slow = 0.1\nswitch_probability = 0.3\ninitial_stragglers = 2\nstate_info = \"imperfect\"\n[data]\ntrain_samples = 240\ntest_samples = 24\nfeatures = 5\n[train]\niterations = 8\neval_every = 1\n";
        let config = crate::config::parse(text, "test", &[]).unwrap().config;
        let spec = DelaySpec::from_config(&config).unwrap();
        let run = |learning: bool| logged_run(&config, &spec, learning);
        let ahead = run(true);
        let plain = run(false);
        let runs = |log: &[String]| -> Vec<String> {
            log.iter()
                .filter(|l| l.starts_with("run "))
                .cloned()
                .collect()
        };
        // The final model's evaluation is a ninth round of the training lane.
        assert_eq!(runs(&ahead)[..8], runs(&plain)[..], "plans and samples");
        let plans: std::collections::BTreeSet<String> = runs(&plain)
            .iter()
            .map(|l| {
                l.split(" RoundSample")
                    .next()
                    .unwrap()
                    .split_once(' ')
                    .unwrap()
                    .1
                    .split_once(' ')
                    .unwrap()
                    .1
                    .to_string()
            })
            .collect();
        assert!(plans.len() > 1, "the state changed the plan");
        assert!(plain.iter().all(|l| !l.starts_with("ahead")));
        let kind = |l: &String| l.split(' ').take(2).collect::<Vec<_>>().join(" ");
        let mut expected = vec!["run 0".to_string()];
        for t in 0..8 {
            if t + 1 < 8 {
                expected.push(format!("ahead {}", t + 1));
            }
            expected.push(format!("observe {t}"));
            expected.push(format!("run {}", t + 1));
        }
        assert_eq!(ahead.iter().map(kind).collect::<Vec<_>>(), expected);
        // Each task sent ahead is the next run's, with the θ its iteration's
        // observers then see (gradient descent: the evaluation point is θ).
        for (i, line) in ahead.iter().enumerate() {
            if let Some(rest) = line.strip_prefix("ahead ") {
                let (task, theta) = rest.rsplit_once(" Some(").unwrap();
                assert!(ahead[i + 2].starts_with(&format!("run {task}")), "{line}");
                assert!(ahead[i + 1].ends_with(&format!("Some({theta}")), "{line}");
            }
        }
    }
}
