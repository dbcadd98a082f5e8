//! The iteration engine: one driver, one stop rule, three kinds of round.
//!
//! In the spirit of argmin's executor, the parts of a run are separate:
//!
//! - the **scheme** ([`crate::coding::Scheme`]) plans an iteration and
//!   decodes what arrived; it does no I/O;
//! - the **stop rule** ([`StopRule`]) says when the master stops waiting and
//!   decodes (wait_for, deadline, first decodable prefix, multi-message
//!   arrivals), the same for every caller;
//! - a **round** ([`Round`]) gets the workers' messages of one iteration to
//!   the master in arrival order and feeds them to the stop rule: the
//!   simulated round ([`SimulatedRound`]) from the sampled delays on a
//!   virtual clock, the MPI round (in the `gradcode` crate) from real
//!   workers, and the learning round ([`LearningRound`]) that adds to the
//!   simulated one the vectors the workers would send, computed in process
//!   (a simulation that trains: `advise --objective time-to-loss`); it is
//!   the only part that differs between `simulate` and `train`;
//! - the **driver** ([`Driver`]) owns everything else: straggler sampling,
//!   what the master knows of the straggler state ([`state_context`]),
//!   planning and plan caching, decoding, the iteration record, the
//!   optimiser step ([`Learner`]), timing events, snapshots and the
//!   observers;
//! - **observers** ([`Observer`]) see every iteration: progress display,
//!   traces, the simulator's statistics;
//! - the **session** ([`Session`]) is the run around the loop: it restores
//!   a resumed run from its [`Checkpoint`], starts the observers, runs the
//!   driver's trials and finishes the observers with the [`Outcome`].
//!
//! `gradcode simulate` is the driver with simulated rounds over many trials
//! and schemes on common random numbers (src/sim); `gradcode train` is the
//! driver with the MPI round and a learner, one scheme, one trial.

mod driver;
mod learner;
mod learning;
mod session;
mod simulated;
mod stop;
mod timing;

pub use driver::{Carried, Driver, Lane, RunEnd, RunSummary, Straggling, state_context};
pub use learner::{Learner, StepLosses};
pub use learning::LearningRound;
pub use session::{Checkpoint, Ended, Finish, Outcome, Plan, Restore, Session, SignalCheck, Start};
pub use simulated::SimulatedRound;
pub use stop::{Decision, Stop, StopCause, StopRule, decode_prefix};
pub use timing::Timing;

use crate::coding::{Arrival, RoundPlan};
use crate::record::IterationRecord;
use crate::straggler::RoundSample;

/// What a round needs to run one iteration.
#[derive(Debug, Clone, Copy)]
pub struct RoundTask<'a> {
    /// The lane (scheme) whose round this is: lane 0's starts an iteration.
    pub lane: usize,
    /// 0-based.
    pub iteration: u64,
    pub plan: &'a RoundPlan,
    /// This iteration's straggler state: the delays a simulated round
    /// applies, the pace an emulating MPI round gives its workers.
    pub sample: &'a RoundSample,
    /// Where the workers evaluate the gradient (training runs only).
    pub eval_point: Option<&'a [f64]>,
}

/// What a round reports of one iteration. Reused between iterations: a
/// round starts from [`RoundReport::clear`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RoundReport {
    /// The messages the master accepted, in arrival order.
    pub arrivals: Vec<Arrival>,
    /// Their arrival times, seconds since the iteration started.
    pub arrival_s: Vec<f64>,
    /// Seconds from the start of the iteration to the master's stop, when the
    /// round measures it (NaN: the driver takes the stop rule's model time).
    pub duration_s: f64,
    /// Results of older iterations received and dropped.
    pub stale_dropped: u64,
    /// Per worker: seconds its real work ran past the emulated due time
    /// (empty: not measured).
    pub overrun_s: Vec<f64>,
    /// Per worker: measured seconds per partition computation, NaN when it
    /// sent nothing (empty: not measured).
    pub per_computation_s: Vec<f64>,
    /// Per worker: bytes of the accepted result messages (headers and
    /// vectors) the master received from it, NaN when none (empty: not
    /// measured). Issue 26, item 2: what `advise --trace` fits a network to.
    pub message_bytes: Vec<f64>,
    /// Per worker: the compute seconds the header of its last accepted
    /// message reports (the task's computations so far, wall clock), NaN
    /// when none (empty: not measured).
    pub compute_s: Vec<f64>,
    /// Per worker: seconds since the iteration started when the master had
    /// received the whole of its last accepted message, vector included;
    /// NaN when none, or when the vector still waited at the worker when the
    /// master decoded (empty: not measured). Unlike the arrival time, which
    /// is the header's (and the vector's envelope, before its bytes cross
    /// under MPI's rendezvous protocol).
    pub received_s: Vec<f64>,
}

impl RoundReport {
    /// Empty, for an iteration about to run.
    pub fn clear(&mut self) {
        self.arrivals.clear();
        self.arrival_s.clear();
        self.duration_s = f64::NAN;
        self.stale_dropped = 0;
        self.overrun_s.clear();
        self.per_computation_s.clear();
        self.message_bytes.clear();
        self.compute_s.clear();
        self.received_s.clear();
    }

    /// Accept a message that arrived `seconds` after the iteration started.
    pub fn accept(&mut self, arrival: Arrival, seconds: f64) {
        self.arrivals.push(arrival);
        self.arrival_s.push(seconds);
    }
}

/// How a round ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundStatus {
    /// The stop rule stopped the master; the accepted messages are in the report.
    Completed,
    /// The run was stopped by a signal before the iteration ended (it is abandoned).
    Interrupted { signal: i32 },
}

/// An error of a round (a worker that failed or is gone, a bad message).
pub type RoundError = Box<dyn std::error::Error + Send + Sync>;

/// An error of an observer (a trace that cannot be written).
pub type ObserverError = Box<dyn std::error::Error + Send + Sync>;

/// One iteration of the workers, as the master sees it.
pub trait Round {
    /// Run iteration `task.iteration`: have the workers compute and send
    /// their messages, hand every message that reaches the master to `rule`
    /// in arrival order and stop when it says so; accepted messages go to
    /// `report` ([`RoundReport::accept`]). `timing` takes the round's own
    /// timing events.
    fn run(
        &mut self,
        task: &RoundTask<'_>,
        rule: &mut StopRule<'_>,
        report: &mut RoundReport,
        timing: &mut Timing,
    ) -> Result<RoundStatus, RoundError>;

    /// The weighted sum `Σ weights[i] · message[i]` of the accepted messages'
    /// vectors (gradient sum and loss sum) into `out`, with `weights` aligned
    /// with the accepted messages and the terms added in the order of
    /// `order` (indices of accepted messages); `false` when the round has no
    /// vectors (simulation). An error when the vectors cannot be had (an MPI
    /// round whose workers reduce them, one of which does not answer).
    fn combine(
        &mut self,
        _order: &[usize],
        _weights: &[f64],
        _out: &mut Vec<f64>,
    ) -> Result<bool, RoundError> {
        Ok(false)
    }

    /// Called once a completed iteration is decoded, with its accepted
    /// messages, their decode weights and the stop's model time: the model
    /// time the aggregation of the decodable set adds after the stop (a
    /// simulated reduce: the tree and the sum's way to the master), and the
    /// round's chance to note what still crosses the network after it (a
    /// simulated master link busy into the next iteration). 0 by default,
    /// and for a round that measures its time (its decode counts the
    /// aggregation).
    fn settle(
        &mut self,
        _task: &RoundTask<'_>,
        _arrivals: &[Arrival],
        _weights: &[f64],
        _stop: f64,
    ) -> f64 {
        0.0
    }

    /// Send iteration `task.iteration`'s task ahead: the driver calls this
    /// once the previous iteration has updated θ (`task.eval_point` is the
    /// new one), before that iteration's observers and snapshot, so that
    /// the workers compute while the master records. The next
    /// [`run`](Round::run) of that iteration then only waits, its clock
    /// started at this send. A round may ignore it (the default: a
    /// simulated round, whose time is the model's) and send in `run`.
    fn send_ahead(
        &mut self,
        _task: &RoundTask<'_>,
        _timing: &mut Timing,
    ) -> Result<(), RoundError> {
        Ok(())
    }

    /// The driver is about to evaluate losses in line or wait for those
    /// evaluated beside, after iteration `iteration` was decoded and before
    /// it sends the next task: a round whose workers are still on that iteration's task has
    /// them drop it now, as the next task would have a moment later, so
    /// that a wait does not give a straggler the time to finish a result
    /// that would only be dropped as stale (issue 39: measuring never
    /// changes the run). Nothing by default.
    fn hold(&mut self, _iteration: u64) -> Result<(), RoundError> {
        Ok(())
    }

    /// Whether the round measures wall time (then decode times are measured
    /// and recorded); a simulated round does not.
    fn measures_time(&self) -> bool {
        false
    }

    /// The loss sum of each partition at this iteration's evaluation point
    /// (indexed by partition; NaN where not known) that the iteration's
    /// results carried, called after [`combine`](Round::combine) when the
    /// decode recovered only some partitions and the learner evaluates the
    /// training loss this iteration. Every result carries the uncoded loss of
    /// each partition its worker computed, the late results received before
    /// the decode included; the round waits for nothing more: the learner
    /// computes the partitions still unknown on its own copy of the data
    /// ([`Learner::complete_loss`](crate::engine::Learner::complete_loss)). `None`
    /// for a round without vectors (simulation).
    fn partition_losses(&self) -> Option<&[f64]> {
        None
    }

    /// A classifier's samples predicted correctly in this iteration's
    /// training passes, summed over the partitions `recovered` (each
    /// partition's mini-batch at the evaluation point, under its dropout):
    /// called after [`combine`](Round::combine). Every result of the
    /// iteration carries the count of each partition its worker computed, so
    /// the results the decode used know every recovered partition's. `None`
    /// when a count is not known: a linear model, a round without vectors.
    fn batch_correct(&self, _recovered: &[usize]) -> Option<f64> {
        None
    }
}

/// One completed iteration of one lane, for the observers.
#[derive(Debug, Clone, Copy)]
pub struct IterationEvent<'a> {
    /// Index of the lane (the compared scheme; 0 in a training run).
    pub lane: usize,
    pub trial: u64,
    /// 0-based.
    pub iteration: u64,
    /// The iteration's record; its per-worker fields are filled only when
    /// some observer [`wants_workers`](Observer::wants_workers).
    pub record: &'a IterationRecord,
    /// The iteration's duration in model time.
    pub duration: f64,
    /// The scheme's stopping rule was met and its target recovered.
    pub decodable: bool,
    /// The straggler state of the iteration.
    pub sample: &'a RoundSample,
    /// The iterate after the update (training runs).
    pub theta: Option<&'a [f64]>,
}

/// A resumable state of a training run.
#[derive(Debug, Clone, Copy)]
pub struct SnapshotEvent<'a> {
    /// Completed iterations.
    pub iteration: u64,
    pub theta: &'a [f64],
    /// The iterate before `theta` (Nesterov's momentum).
    pub previous: &'a [f64],
}

/// Sees a run as it happens: progress display, traces, statistics. A
/// [`Session`] calls [`start`](Observer::start) once before the first
/// iteration and [`finish`](Observer::finish) once at the end, whatever the
/// outcome.
pub trait Observer {
    /// Whether this observer reads the per-worker fields of the records
    /// (the driver fills them only when some observer does).
    fn wants_workers(&self) -> bool {
        true
    }
    /// An iteration of a lane is complete.
    fn iteration(&mut self, event: &IterationEvent<'_>) -> Result<(), ObserverError>;
    /// A resumable state: every `output.snapshot_every` iterations, at the
    /// end, and when a signal stops the run.
    fn snapshot(&mut self, _snapshot: &SnapshotEvent<'_>) -> Result<(), ObserverError> {
        Ok(())
    }
    /// The run starts (a resumed one at `start.first`).
    fn start(&mut self, _start: &Start<'_>) -> Result<(), ObserverError> {
        Ok(())
    }
    /// The run ended: completed, interrupted by a signal, or failed.
    fn finish(&mut self, _finish: &Finish<'_>) -> Result<(), ObserverError> {
        Ok(())
    }
}

/// Why the arrivals of `iteration` did not decode: a tolerance set below
/// the default is named as the cause (a decode's rounding residual is about
/// 1e-16 × its amplification, which a tight tolerance refuses); else the
/// code's conditioning.
fn not_decodable(iteration: u64, tolerance: Option<f64>) -> String {
    let it = crate::error::Iteration(iteration);
    match tolerance {
        Some(t) if t < crate::coding::DEFAULT_DECODE_TOLERANCE => format!(
            "{it}: the arrivals suffice by count but their decode's rounding residual exceeds \
             scheme.decode_tolerance = {t:e}: the tolerance is the cause (a residual of about \
             1e-16 × the amplification is f64 rounding); raise it (default {:e}; `gradcode check` \
             reports the worst residual)",
            crate::coding::DEFAULT_DECODE_TOLERANCE
        ),
        _ => format!(
            "{it}: the arrivals suffice by count but do not decode within scheme.decode_tolerance{}; \
             the code is too ill-conditioned, try a smaller scheme.load or more scheme.code_draws",
            tolerance.map_or(String::new(), |t| format!(" = {t:e}"))
        ),
    }
}

/// Failures of a run.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A round failed (a worker died, hangs, or sent something unexpected).
    #[error("{0}")]
    Round(RoundError),
    /// An observer failed.
    #[error("recording the iteration: {0}")]
    Observer(ObserverError),
    /// An observer failed to start (a trace that cannot be created).
    #[error("{0}")]
    Start(ObserverError),
    /// An observer failed to finish (a trace that cannot be closed).
    #[error("{0}")]
    Finish(ObserverError),
    /// A signal stopped a run whose caller wants every iteration (a
    /// simulation): the observers have seen [`Outcome::Interrupted`].
    #[error("interrupted by signal {signal} in trial {} after {iterations} iterations", .trial + 1)]
    Interrupted {
        signal: i32,
        trial: u64,
        iterations: u64,
    },
    /// An observer failed to write a snapshot.
    #[error("writing a snapshot: {0}")]
    Snapshot(ObserverError),
    /// The snapshot a run resumes from does not fit it.
    #[error("{0}")]
    Resume(String),
    /// Something became non-finite.
    #[error("{}: {what}", crate::error::Iteration(*.iteration))]
    Diverged { iteration: u64, what: String },
    /// The model could not evaluate (a network computation failed).
    #[error("{}: evaluating the model: {what}", crate::error::Iteration(*.iteration))]
    Model { iteration: u64, what: String },
    /// The stop rule was met but the arrivals do not decode: `residual` is
    /// the largest of the groups that decoded, `tolerance` the scheme's
    /// `scheme.decode_tolerance` (`None`: an exact code).
    #[error("{}", not_decodable(*.iteration, *.tolerance))]
    NotDecodable {
        iteration: u64,
        residual: f64,
        tolerance: Option<f64>,
    },
}

#[cfg(test)]
mod not_decodable_tests {
    use super::EngineError;

    #[test]
    fn a_tolerance_below_the_default_is_named_as_the_cause() {
        let tight = EngineError::NotDecodable {
            iteration: 3,
            residual: 0.0,
            tolerance: Some(1e-15),
        }
        .to_string();
        assert!(tight.starts_with("iteration 4: "), "{tight}");
        assert!(
            tight.contains("scheme.decode_tolerance = 1e-15: the tolerance is the cause"),
            "{tight}"
        );
        assert!(!tight.contains("scheme.load"), "{tight}");
        for tolerance in [Some(1e-8), Some(1e-3), None] {
            let loose = EngineError::NotDecodable {
                iteration: 0,
                residual: 0.0,
                tolerance,
            }
            .to_string();
            assert!(
                loose.contains("too ill-conditioned, try a smaller scheme.load"),
                "{loose}"
            );
            assert!(!loose.contains("is the cause"), "{loose}");
        }
    }
}
