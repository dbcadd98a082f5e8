//! The session: a run around the driver's loop, once for every caller.
//!
//! In the spirit of argmin's executor, a [`Session`] holds what a run is
//! made of besides its rounds: the [`Driver`], the [`Observer`]s and an
//! optional [`Checkpoint`] (a trace that saves snapshots and, for a resumed
//! run, the state to continue from). [`Session::run`] is always the same
//! four steps:
//!
//! 1. **restore**: a checkpoint with a restore point gives lane 0's learner
//!    its iterate and the driver the totals of the iterations before it
//!    ([`Driver::carry_over`]); the loop then starts at its iteration;
//! 2. **start**: every observer's [`Observer::start`], with where the run
//!    starts;
//! 3. **loop**: the driver's iterations, trial after trial, until they are
//!    done, a signal stops them, or something fails;
//! 4. **finish**: every observer's [`Observer::finish`] with the
//!    [`Outcome`] (completed, interrupted, failed), whatever it is.
//!
//! `gradcode train` runs a session of one trial on the MPI round,
//! `gradcode simulate` one of many trials on the simulated round: both
//! traces record their status the same way.

use std::ops::Range;

use super::{
    Carried, Driver, EngineError, Observer, ObserverError, Round, RoundReport, RoundStatus,
    RoundTask, RunEnd, RunSummary, StopRule, Straggling, Timing,
};

/// How a session ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Every iteration of every trial ran.
    Completed,
    /// A signal stopped the run; the iterations before it were observed
    /// (and, with snapshots, saved: the run is resumable).
    Interrupted { signal: i32 },
    /// An error stopped the run; `reason` is its message.
    Failed { reason: String },
}

/// Where a session starts, for [`Observer::start`].
#[derive(Debug, Clone, Copy)]
pub struct Start<'a> {
    /// The first iteration: 0, or a resumed run's restore point.
    pub first: u64,
    /// What the iterations before a resumed run's start add to its totals
    /// (zeros for a new run).
    pub carried: &'a Carried,
    /// θ's tensors (names, shapes, offsets) of lane 0's model; `None`
    /// without a model (a simulation).
    pub model_layout: Option<&'a [crate::learn::TensorLayout]>,
}

/// How a session ended, for [`Observer::finish`].
#[derive(Debug, Clone, Copy)]
pub struct Finish<'a> {
    pub outcome: &'a Outcome,
    /// The last trial the loop ran (0 for a training run).
    pub trial: u64,
    /// Iterations completed in that trial, a resumed run's earlier ones
    /// included (0 when the loop failed before it knew).
    pub completed: u64,
    /// Lane 0's summary, for a session of one trial whose loop did not fail
    /// (a training run; `summary.theta` is the last iterate).
    pub summary: Option<&'a RunSummary>,
}

/// The state a resumed run continues from: the iterate after `iteration`
/// completed iterations, the one before it (Nesterov's momentum), and the
/// totals of those iterations.
#[derive(Debug, Clone, PartialEq)]
pub struct Restore {
    pub iteration: u64,
    pub theta: Vec<f64>,
    pub previous: Vec<f64>,
    pub carried: Carried,
}

/// An observer that saves the run's snapshots (through
/// [`Observer::snapshot`]) and may hold the state a resumed run restores.
pub trait Checkpoint: Observer {
    /// The state to continue from; `None` for a run from the start.
    fn restore_point(&self) -> Option<&Restore>;
}

/// What a session loops over: `trials` trials of the iterations before
/// `iterations` each, with the straggling that `straggling` gives a trial.
pub struct Plan<'p> {
    pub trials: Range<u64>,
    /// The end of every trial's iterations (a resumed run starts at its
    /// restore point, any other at 0).
    pub iterations: u64,
    pub straggling: &'p mut dyn FnMut(u64) -> Straggling,
}

/// How a session's loop ended (the outcome was given to the observers).
#[derive(Debug, Clone, PartialEq)]
pub struct Ended {
    pub outcome: Outcome,
    /// The last trial run.
    pub trial: u64,
    /// The driver's end of the last trial run.
    pub end: RunEnd,
    /// See [`Finish::summary`].
    pub summary: Option<RunSummary>,
}

/// Polls whether a signal asked the run to stop (the signal's number).
pub type SignalCheck = fn() -> Option<i32>;

/// A run of a driver with its observers and checkpoint (see the module).
///
/// Two simulated trials of five iterations of the default config's scheme,
/// with an observer that counts them:
///
/// ```
/// use gradcode_core::engine::{
///     Driver, IterationEvent, Lane, Observer, ObserverError, Outcome, Plan, Session,
///     SimulatedRound, Straggling,
/// };
/// use gradcode_core::straggler::DelaySpec;
///
/// struct Count(u64);
/// impl Observer for Count {
///     fn iteration(&mut self, _: &IterationEvent<'_>) -> Result<(), ObserverError> {
///         self.0 += 1;
///         Ok(())
///     }
/// }
///
/// let config = gradcode_core::config::Config::default();
/// let time_unit_s = config.straggler.time_unit_ms / 1000.0;
/// let scheme = gradcode_core::coding::build(&config).unwrap();
/// let mut driver = Driver::new(
///     vec![Lane::new(scheme, None)],
///     config.straggler.state_info,
///     time_unit_s,
///     None,  // no snapshots
///     false, // no timing events
/// );
/// let spec = DelaySpec::from_config(&config).unwrap();
/// let mut straggling = |trial| Straggling::Model(spec.model(trial));
/// let mut count = Count(0);
/// let ended = Session::new(&mut driver)
///     .observe(&mut count)
///     .run(
///         &mut SimulatedRound::new(time_unit_s),
///         Plan { trials: 0..2, iterations: 5, straggling: &mut straggling },
///     )
///     .unwrap();
/// assert_eq!(ended.outcome, Outcome::Completed);
/// assert_eq!(count.0, 10);
/// ```
pub struct Session<'a> {
    driver: &'a mut Driver,
    observers: Vec<&'a mut dyn Observer>,
    checkpoint: Option<&'a mut dyn Checkpoint>,
    signal: Option<SignalCheck>,
}

impl<'a> Session<'a> {
    /// A session of `driver`, with no observer yet.
    pub fn new(driver: &'a mut Driver) -> Self {
        Self {
            driver,
            observers: Vec::new(),
            checkpoint: None,
            signal: None,
        }
    }

    /// Add an observer (they see the run in the order they are added, the
    /// checkpoint last).
    pub fn observe(mut self, observer: &'a mut dyn Observer) -> Self {
        self.observers.push(observer);
        self
    }

    /// The checkpoint: it observes the run and may hold a restore point.
    pub fn checkpoint(mut self, checkpoint: &'a mut dyn Checkpoint) -> Self {
        self.checkpoint = Some(checkpoint);
        self
    }

    /// Stop the loop before the next iteration once `signal` reports a
    /// signal (for rounds that do not watch signals themselves: the
    /// simulated ones).
    pub fn watch(mut self, signal: SignalCheck) -> Self {
        self.signal = Some(signal);
        self
    }

    /// Restore, start, loop, finish (see the module). `Ok` whenever the
    /// loop ran to an end, interrupted included; `Err` when it failed (the
    /// observers have then seen [`Outcome::Failed`]), or when an observer
    /// failed to start or finish.
    pub fn run(mut self, round: &mut dyn Round, plan: Plan<'_>) -> Result<Ended, EngineError> {
        let restore = self
            .checkpoint
            .as_ref()
            .and_then(|c| c.restore_point())
            .cloned();
        let mut observers: Vec<&mut dyn Observer> = self.observers;
        if let Some(c) = self.checkpoint.take() {
            observers.push(c);
        }
        let driver = self.driver;
        // A session of one trial (a training run): lane 0's summary is the run's.
        let single = plan.trials.end.saturating_sub(plan.trials.start) == 1;
        let mut watched;
        let round: &mut dyn Round = match self.signal {
            Some(signal) => {
                watched = Watched { round, signal };
                &mut watched
            }
            None => round,
        };
        let looped = start_and_loop(driver, round, plan, restore, &mut observers);
        let (outcome, ended) = outcome_of(&looped);
        let summary = ended
            .filter(|_| single)
            .map(|(_, end)| driver.summary(0, &end));
        let finish = Finish {
            outcome: &outcome,
            trial: ended.map_or(0, |(t, _)| t),
            completed: ended.map_or(0, |(_, e)| e.completed),
            summary: summary.as_ref(),
        };
        let finished = finish_observers(&mut observers, &finish);
        let (trial, end) = looped?;
        finished.map_err(EngineError::Finish)?;
        Ok(Ended {
            outcome,
            trial,
            end,
            summary,
        })
    }
}

/// Restore and start: lane 0's learner and the driver's totals at the
/// restore point, when there is one; then every observer's start; then
/// the loop. The last trial run and its end.
fn start_and_loop(
    driver: &mut Driver,
    round: &mut dyn Round,
    plan: Plan<'_>,
    restore: Option<Restore>,
    observers: &mut [&mut dyn Observer],
) -> Result<(u64, RunEnd), EngineError> {
    let carried = restore
        .as_ref()
        .map(|r| r.carried.clone())
        .unwrap_or_default();
    let mut first = 0;
    if let Some(r) = &restore {
        first = r.iteration;
        restore_into(driver, r)?;
    }
    let layout = driver
        .lanes()
        .first()
        .and_then(|lane| lane.learner())
        .map(|l| l.model().layout());
    let start = Start {
        first,
        carried: &carried,
        model_layout: layout.as_deref(),
    };
    for o in observers.iter_mut() {
        o.start(&start).map_err(EngineError::Start)?;
    }
    run_trials(driver, round, plan, first, observers)
}

/// The outcome of a loop that ended as `looped`, and its last trial and
/// end when it did not fail.
fn outcome_of(looped: &Result<(u64, RunEnd), EngineError>) -> (Outcome, Option<(u64, RunEnd)>) {
    match looped {
        Ok((trial, end)) => {
            let outcome = match end.interrupted {
                Some(signal) => Outcome::Interrupted { signal },
                None => Outcome::Completed,
            };
            (outcome, Some((*trial, *end)))
        }
        Err(e) => (
            Outcome::Failed {
                reason: e.to_string(),
            },
            None,
        ),
    }
}

/// Every observer finishes, whatever the others do: the first error.
fn finish_observers(
    observers: &mut [&mut dyn Observer],
    finish: &Finish<'_>,
) -> Result<(), ObserverError> {
    let mut finished: Result<(), ObserverError> = Ok(());
    for o in observers.iter_mut() {
        let r = o.finish(finish);
        if finished.is_ok() {
            finished = r;
        }
    }
    finished
}

/// Lane 0's learner at the restore point, the driver's totals continuing
/// the iterations before it.
fn restore_into(driver: &mut Driver, r: &Restore) -> Result<(), EngineError> {
    if let Some(learner) = driver.lanes_mut()[0].learner_mut() {
        learner.restore(r.iteration, &r.theta, &r.previous)?;
    }
    driver.carry_over(0, &r.carried);
    Ok(())
}

/// Every trial of `plan`, until one is interrupted: the last trial run and its end.
fn run_trials(
    driver: &mut Driver,
    round: &mut dyn Round,
    plan: Plan<'_>,
    first: u64,
    observers: &mut [&mut dyn Observer],
) -> Result<(u64, RunEnd), EngineError> {
    let Plan {
        trials,
        iterations,
        straggling,
    } = plan;
    let mut last = None;
    for trial in trials {
        let mut s = straggling(trial);
        let end = driver.run(&mut s, round, first..iterations, trial, observers)?;
        last = Some((trial, end));
        if end.interrupted.is_some() {
            break;
        }
    }
    Ok(last.unwrap_or((
        0,
        RunEnd {
            first,
            completed: first,
            interrupted: None,
            wall_s: 0.0,
        },
    )))
}

/// A round that first asks whether a signal stopped the run, at the start
/// of an iteration (lane 0's round): every lane observes the same iterations.
struct Watched<'r> {
    round: &'r mut dyn Round,
    signal: SignalCheck,
}

impl Round for Watched<'_> {
    fn run(
        &mut self,
        task: &RoundTask<'_>,
        rule: &mut StopRule<'_>,
        report: &mut RoundReport,
        timing: &mut Timing,
    ) -> Result<RoundStatus, super::RoundError> {
        if task.lane == 0
            && let Some(signal) = (self.signal)()
        {
            return Ok(RoundStatus::Interrupted { signal });
        }
        self.round.run(task, rule, report, timing)
    }

    fn settle(
        &mut self,
        task: &RoundTask<'_>,
        arrivals: &[crate::coding::Arrival],
        weights: &[f64],
        stop: f64,
    ) -> f64 {
        self.round.settle(task, arrivals, weights, stop)
    }

    fn combine(
        &mut self,
        order: &[usize],
        weights: &[f64],
        out: &mut Vec<f64>,
    ) -> Result<bool, super::RoundError> {
        self.round.combine(order, weights, out)
    }

    fn send_ahead(
        &mut self,
        task: &RoundTask<'_>,
        timing: &mut Timing,
    ) -> Result<(), super::RoundError> {
        self.round.send_ahead(task, timing)
    }

    fn measures_time(&self) -> bool {
        self.round.measures_time()
    }

    fn partition_losses(&self) -> Option<&[f64]> {
        self.round.partition_losses()
    }

    fn batch_correct(&self, recovered: &[usize]) -> Option<f64> {
        self.round.batch_correct(recovered)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;
    use crate::config::Config;
    use crate::engine::{IterationEvent, Lane, SimulatedRound};
    use crate::straggler::DelaySpec;

    /// What an observer saw: starts, (trial, iteration) of every event, finishes.
    #[derive(Default)]
    struct Seen {
        starts: Vec<u64>,
        events: Vec<(u64, u64)>,
        finishes: Vec<(Outcome, u64, u64, bool)>,
    }

    impl Observer for Seen {
        fn start(&mut self, start: &Start<'_>) -> Result<(), ObserverError> {
            self.starts.push(start.first);
            Ok(())
        }
        fn iteration(&mut self, e: &IterationEvent<'_>) -> Result<(), ObserverError> {
            self.events.push((e.trial, e.iteration));
            Ok(())
        }
        fn finish(&mut self, f: &Finish<'_>) -> Result<(), ObserverError> {
            self.finishes
                .push((f.outcome.clone(), f.trial, f.completed, f.summary.is_some()));
            Ok(())
        }
    }

    fn run(config: &Config, trials: u64, signal: Option<SignalCheck>) -> (Seen, Ended) {
        let spec = DelaySpec::from_config(config).unwrap();
        let mut driver = Driver::new(
            vec![Lane::new(crate::coding::build(config).unwrap(), None)],
            config.straggler.state_info,
            1e-3,
            None,
            false,
        );
        let mut seen = Seen::default();
        let mut session = Session::new(&mut driver).observe(&mut seen);
        if let Some(signal) = signal {
            session = session.watch(signal);
        }
        let ended = session
            .run(
                &mut SimulatedRound::new(1e-3),
                Plan {
                    trials: 0..trials,
                    iterations: 5,
                    straggling: &mut |t| Straggling::Model(spec.model(t)),
                },
            )
            .unwrap();
        (seen, ended)
    }

    #[test]
    fn observers_see_one_start_every_iteration_of_every_trial_and_one_finish() {
        let (seen, ended) = run(&Config::default(), 3, None);
        assert_eq!(seen.starts, [0]);
        let expected: Vec<(u64, u64)> = (0..3).flat_map(|t| (0..5).map(move |i| (t, i))).collect();
        assert_eq!(seen.events, expected);
        // Several trials: no run summary; one trial: lane 0's.
        assert_eq!(seen.finishes, [(Outcome::Completed, 2, 5, false)]);
        assert_eq!((ended.outcome, ended.trial), (Outcome::Completed, 2));
        let (seen, ended) = run(&Config::default(), 1, None);
        assert_eq!(seen.finishes, [(Outcome::Completed, 0, 5, true)]);
        assert_eq!(ended.summary.unwrap().iterations, 5);
    }

    static ROUNDS: AtomicU64 = AtomicU64::new(0);

    /// SIGTERM (15) from the eighth round on.
    fn term_at_eighth_round() -> Option<i32> {
        (ROUNDS.fetch_add(1, Ordering::SeqCst) >= 7).then_some(15)
    }

    #[test]
    fn a_signal_stops_the_trials_before_the_next_round_and_the_observers_finish_interrupted() {
        let (seen, ended) = run(&Config::default(), 3, Some(term_at_eighth_round));
        // Trial 0's five rounds, then two of trial 1.
        let expected: Vec<(u64, u64)> = (0..5).map(|i| (0, i)).chain([(1, 0), (1, 1)]).collect();
        assert_eq!(seen.events, expected);
        let interrupted = Outcome::Interrupted { signal: 15 };
        assert_eq!(seen.finishes, [(interrupted.clone(), 1, 2, false)]);
        assert_eq!((ended.outcome, ended.trial), (interrupted, 1));
        assert_eq!(ended.end.completed, 2);
    }
}
