//! The master rank: set up the workers, run the iteration driver with the
//! MPI round and a learner, shut the workers down.
//!
//! Everything an iteration does besides talking to the workers (straggler
//! sampling, state information, planning, the stop rule, decoding, the
//! optimiser step, records, timing, snapshots, observers) is the engine's
//! driver (`gradcode_core::engine`), the same code `simulate` runs.
//! Straggling comes from the straggler model in emulation (`DelaySpec::model(0)`,
//! the samples `simulate` sees in its trial 0 for the same seed) and from the
//! workers' measured compute times in measured mode.

use std::time::{Duration, Instant};

use super::comm::{Backoff, Comm, Received, Wait, WaitMode, instant_after};
use super::interrupt;
use super::protocol::{self, Setup};
use super::round::MpiRound;
use crate::coding::Scheme;
use crate::config::{Config, StragglerMode};
use crate::engine::{
    Checkpoint, Driver, Ended, Lane, Learner, Observer, Outcome, Plan, RunSummary, Session,
    Straggling,
};
use crate::error::InputError;
use crate::learn::{DataPlan, Model, Partition};
use crate::spec::Aggregation;
use crate::straggler::DelaySpec;

/// How long the master waits for every worker's goodbye before it gives up
/// on a clean shutdown (a worker is gone) and the job is aborted.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(3);

pub use crate::signals::Interrupted;

/// How a run ended: its result, and whether every worker said goodbye (when
/// not, the job must be aborted after the observers are closed).
pub struct RunEnd {
    pub result: anyhow::Result<TrainSummary>,
    pub clean: bool,
}

/// What the training loop returns: the summary and the signal that cut it short.
struct Trained {
    summary: TrainSummary,
    interrupted: Option<i32>,
}

/// The end of a training run (`train --json`).
pub type TrainSummary = RunSummary;

/// A round's error as the run's: an input error (a worker's data does not
/// fit the model) stays one, so that the run exits with status 2.
fn run_error(error: crate::engine::RoundError) -> anyhow::Error {
    match error.downcast::<InputError>() {
        Ok(input) => anyhow::Error::new(*input),
        Err(other) => crate::engine::EngineError::Round(other).into(),
    }
}

/// The workers' progress through the setup: who is ready (and packs its
/// vectors to which entries), and when each was last heard from.
struct Readiness {
    ready: Vec<bool>,
    packed: Vec<Option<Vec<u32>>>,
    heard: Vec<Instant>,
    start: Instant,
}

impl Readiness {
    fn new(workers: usize) -> Self {
        let start = Instant::now();
        Self {
            ready: vec![false; workers],
            packed: vec![None; workers],
            heard: vec![start; workers],
            start,
        }
    }

    /// The workers not ready yet, as "2, 5".
    fn not_ready(&self) -> String {
        let names: Vec<String> = (0..self.ready.len())
            .filter(|&w| !self.ready[w])
            .map(|w| (w + 1).to_string())
            .collect();
        names.join(", ")
    }

    /// The earliest instant a worker still loading has been silent for `timeout_s`.
    fn give_up(&self, timeout_s: f64) -> Option<Instant> {
        (0..self.ready.len())
            .filter(|&w| !self.ready[w])
            .filter_map(|w| instant_after(self.heard[w], timeout_s))
            .min()
    }

    /// The workers still loading that have been silent for `timeout_s` now.
    fn silent(&self, timeout_s: f64) -> Vec<String> {
        let now = Instant::now();
        (0..self.ready.len())
            .filter(|&w| {
                !self.ready[w] && instant_after(self.heard[w], timeout_s).is_some_and(|g| now >= g)
            })
            .map(|w| (w + 1).to_string())
            .collect()
    }

    /// `signal` (on this rank or a worker) stopped the setup.
    fn interrupted(&self, signal: i32) -> anyhow::Error {
        Interrupted {
            signal,
            iterations: 0,
            during_setup: Some(self.not_ready()),
        }
        .into()
    }
}

pub(super) struct Master<'a> {
    pub comm: &'a Comm<'a>,
    pub config: &'a Config,
    /// How this rank waits for results (`runtime.wait` resolved on this node).
    pub wait: WaitMode,
    /// Every rank is on the master's node (`runtime.aggregate = "auto"`
    /// gathers then).
    pub one_node: bool,
    /// The scheme, until the training loop takes it.
    pub scheme: Option<Box<dyn Scheme>>,
    /// K.
    pub workers: usize,
}

impl Master<'_> {
    /// Send every worker `tag` with `data`.
    fn broadcast(&self, tag: i32, data: &[f64]) {
        for w in 0..self.workers {
            self.comm.send(w as i32 + 1, tag, data);
        }
    }

    /// Stop every worker and wait for each goodbye; returns stale results
    /// seen and tasks abandoned, or `None` when some worker did not answer
    /// within [`SHUTDOWN_TIMEOUT`].
    fn shutdown(&self) -> Option<(u64, u64)> {
        self.broadcast(protocol::TAG_STOP, &[]);
        let mut backoff = Backoff::new(Duration::from_millis(1));
        let mut remaining = self.workers;
        let (mut stale, mut abandoned) = (0, 0);
        let deadline = Instant::now() + SHUTDOWN_TIMEOUT;
        while remaining > 0 {
            let Some(m) = self.comm.receive(&mut backoff, Some(deadline)) else {
                crate::errln!(
                    "error: {remaining} worker(s) did not acknowledge the stop within {} s",
                    SHUTDOWN_TIMEOUT.as_secs()
                );
                return None;
            };
            match m.tag {
                protocol::TAG_BYE => {
                    remaining -= 1;
                    abandoned += m.data.get(1).copied().unwrap_or(0.0) as u64;
                }
                tag if protocol::is_iteration_tag(tag) => stale += 1,
                _ => {} // a late error, ready or signal from a worker that is stopping anyway
            }
        }
        log::info!(
            "master: every worker stopped ({stale} stale results drained, {abandoned} tasks abandoned)"
        );
        Some((stale, abandoned))
    }

    /// Set up the workers, train (a session of the driver with the
    /// observers and the checkpoint, which may hold the state a resumed run
    /// continues from), shut down. Errors found on the way (data files, a
    /// worker that cannot load its partitions, divergence) and signals stop
    /// every worker before the run returns.
    pub fn run(
        &mut self,
        observers: &mut [&mut dyn Observer],
        checkpoint: Option<&mut dyn Checkpoint>,
    ) -> RunEnd {
        let prepared = match self.prepare() {
            Ok(x) => x,
            Err(e) => {
                let clean = self.shutdown().is_some();
                return RunEnd {
                    result: Err(e),
                    clean,
                };
            }
        };
        let trained = self.train(prepared, observers, checkpoint);
        let shutdown = self.shutdown();
        let result = trained.and_then(
            |Trained {
                 mut summary,
                 interrupted,
             }| {
                if let Some((stale, abandoned)) = shutdown {
                    summary.stale_dropped += stale;
                    summary.tasks_abandoned = abandoned;
                }
                match interrupted {
                    Some(signal) => Err(Interrupted {
                        signal,
                        iterations: summary.iterations as u64,
                        during_setup: None,
                    }
                    .into()),
                    None => Ok(summary),
                }
            },
        );
        RunEnd {
            result,
            clean: shutdown.is_some(),
        }
    }

    /// Decide the aggregation, send the setups and wait for every worker's
    /// ready message.
    fn prepare(&mut self) -> anyhow::Result<Prepared> {
        let k = self.workers;
        let scheme = self.scheme.as_deref().expect("prepared before training");
        let data = DataPlan::new(self.config, scheme.partitions())?;
        // Standardisation statistics: one streaming pass here, sent with the setup.
        let standardization = data.standardization()?.cloned();
        let test = data.load_test()?;
        // Decided here, once, for the model's d and the node answer; the
        // workers receive it with their setup.
        let dim = Model::sized(self.config, data.input())?.dim();
        let aggregation = Aggregation::resolve(self.config.runtime.aggregate, dim, self.one_node);
        for w in 0..k {
            let setup = Setup {
                aggregation,
                partitions: scheme.partitions(),
                stored: scheme.stored(w).to_vec(),
                standardization: standardization.clone(),
            };
            self.comm
                .send(w as i32 + 1, protocol::TAG_SETUP, &setup.encode());
        }
        log::info!(
            "master: {} on {k} workers, {} partitions of {} samples x {} features",
            scheme.kind(),
            scheme.partitions(),
            data.train_samples(),
            data.features()
        );
        let packed = self.await_ready()?;
        Ok(Prepared {
            data,
            test,
            packed,
            aggregation,
        })
    }

    /// Wait until every worker has loaded its partitions. A worker tells it
    /// is still loading a few times per `train.result_timeout_s`; one silent
    /// for that long (stopped, hung, gone) ends the setup with an error that
    /// names the workers not ready, and so do a data error on a worker and
    /// SIGTERM or SIGINT (on this rank or a worker). Returns each worker's
    /// packing (see [`protocol::Ready`]).
    fn await_ready(&self) -> anyhow::Result<Vec<Option<Vec<u32>>>> {
        let timeout_s = self.config.train.result_timeout_s;
        let mut setup = Readiness::new(self.workers);
        let mut backoff = Backoff::new(Duration::from_millis(1));
        while setup.ready.iter().any(|r| !r) {
            let give_up = setup.give_up(timeout_s);
            match self.comm.receive_or_signal(&mut backoff, give_up, true) {
                Wait::Message(m) => self.take_setup_message(m, &mut setup)?,
                Wait::Signal(signal) => return Err(setup.interrupted(signal)),
                Wait::Timeout => {
                    let silent = setup.silent(timeout_s);
                    if silent.is_empty() {
                        continue;
                    }
                    anyhow::bail!(
                        "setup: no word from workers {} for {} s (train.result_timeout_s) while they load their partitions: \
                         a worker died or hangs; workers not ready after {:.1} s: {}",
                        silent.join(", "),
                        timeout_s,
                        setup.start.elapsed().as_secs_f64(),
                        setup.not_ready()
                    );
                }
            }
        }
        log::info!(
            "master: every worker ready after {:.3} s",
            setup.start.elapsed().as_secs_f64()
        );
        Ok(setup.packed)
    }

    /// A worker's message during the setup: ready (with its packing),
    /// still loading, a signal or an error.
    fn take_setup_message(&self, m: Received, setup: &mut Readiness) -> anyhow::Result<()> {
        let w = (m.rank - 1) as usize;
        match m.tag {
            protocol::TAG_READY => {
                setup.packed[w] = protocol::Ready::decode(&m.data)?.packed;
                setup.ready[w] = true;
                log::info!(
                    "master: worker {} ready after {:.3} s",
                    m.rank,
                    setup.start.elapsed().as_secs_f64()
                );
            }
            protocol::TAG_LOADING => setup.heard[w] = Instant::now(),
            protocol::TAG_SIGNAL => {
                let signal = m.data.first().map_or(15, |&s| s as i32);
                return Err(setup.interrupted(signal));
            }
            protocol::TAG_ERROR => {
                let error = protocol::WorkerError::decode(&m.data).at_rank(m.rank);
                return Err(run_error(error));
            }
            tag => anyhow::bail!("worker {} sent tag {tag} during setup", m.rank),
        }
        Ok(())
    }

    fn train(
        &mut self,
        prepared: Prepared,
        observers: &mut [&mut dyn Observer],
        checkpoint: Option<&mut dyn Checkpoint>,
    ) -> anyhow::Result<Trained> {
        let config = self.config;
        let s = &config.straggler;
        let straggling = match s.mode {
            StragglerMode::Emulate => Straggling::Model(DelaySpec::from_config(config)?.model(0)),
            StragglerMode::Measured => Straggling::Measured {
                rate_threshold: s.rate_threshold,
            },
        };
        let Prepared {
            data,
            test,
            packed,
            aggregation,
        } = prepared;
        let data = &data;
        let learner = Learner::new(config, data, test)?;
        let dim = learner.dim();
        check_packing(&packed, dim, aggregation)?;
        self.log_aggregation(&packed, dim, aggregation);
        let scheme = self.scheme.take().expect("the scheme is trained once");
        let mut driver = Driver::new(
            vec![Lane::new(scheme, Some(learner))],
            s.state_info,
            s.time_unit_ms / 1000.0,
            Some(config.output.snapshot_every as u64),
            true,
        );
        let mut round = MpiRound::new(
            self.comm,
            self.workers,
            dim,
            data.partitions(),
            s.mode == StragglerMode::Emulate,
            s.time_unit_ms,
            config.train.result_timeout_s,
            self.wait,
            aggregation,
            packed,
        );
        interrupt::panic_if_asked(0, "before the first iteration");
        let iterations = config.train.iterations as u64;
        let ended = run_session(
            &mut driver,
            &mut round,
            observers,
            checkpoint,
            straggling,
            iterations,
        )?;
        let mut summary = ended.summary.expect("a session of one trial sums it up");
        summary.aggregate = Some(aggregation);
        summary.master_inbound_bytes_per_iteration = round.inbound_bytes_per_iteration();
        Ok(Trained {
            summary,
            interrupted: match ended.outcome {
                Outcome::Interrupted { signal } => Some(signal),
                _ => None,
            },
        })
    }

    /// Say how many workers pack their vectors and how results are aggregated.
    fn log_aggregation(&self, packed: &[Option<Vec<u32>>], dim: usize, aggregation: Aggregation) {
        let packed_workers = packed.iter().filter(|p| p.is_some()).count();
        if packed_workers > 0 {
            log::info!(
                "master: {packed_workers} of {} workers send packed vectors (sparse features: the entries their partitions can make non-zero)",
                self.workers
            );
        }
        log::info!(
            "runtime.aggregate = {}: {} (d = {dim}, {})",
            self.config.runtime.aggregate.name(),
            aggregation.name(),
            if self.one_node {
                "every rank on the master's node"
            } else {
                "ranks on several nodes"
            }
        );
    }
}

/// A worker that packs its vectors must pack them to entries that end at
/// the loss (d), and only when results are gathered.
fn check_packing(
    packed: &[Option<Vec<u32>>],
    dim: usize,
    aggregation: Aggregation,
) -> anyhow::Result<()> {
    let reduce = aggregation.reduces();
    for (w, entries) in packed.iter().enumerate() {
        if let Some(entries) = entries
            && (reduce || entries.last() != Some(&(dim as u32)))
        {
            anyhow::bail!(
                "worker {}: packs its vectors to entries ending at {:?}, but the model has d = {dim} and results are {}",
                w + 1,
                entries.last(),
                if reduce { "reduced" } else { "gathered" }
            );
        }
    }
    Ok(())
}

/// What [`Master::prepare`] leaves for the training: the data plan, the
/// test partition, per worker the entries of its packed vectors (`None`:
/// dense), and the aggregation the workers were sent.
struct Prepared {
    data: DataPlan,
    test: Partition,
    packed: Vec<Option<Vec<u32>>>,
    aggregation: Aggregation,
}

/// Run the training session: the driver with the MPI round, the observers
/// and the checkpoint, over one trial of `iterations` with `straggling`. Resume: the session restores the learner from the
/// checkpoint; the driver replays the straggler process to the same point
/// (its samples are a function of the seed).
fn run_session(
    driver: &mut Driver,
    round: &mut MpiRound<'_>,
    observers: &mut [&mut dyn Observer],
    checkpoint: Option<&mut dyn Checkpoint>,
    straggling: Straggling,
    iterations: u64,
) -> anyhow::Result<Ended> {
    let mut session = Session::new(driver);
    for o in observers.iter_mut() {
        session = session.observe(&mut **o);
    }
    if let Some(c) = checkpoint {
        session = session.checkpoint(c);
    }
    let mut straggling = Some(straggling);
    let mut take = |_trial: u64| straggling.take().expect("one trial");
    session
        .run(
            round,
            Plan {
                trials: 0..1,
                iterations,
                straggling: &mut take,
            },
        )
        .map_err(|e| match e {
            // An input error found when the trace is created (another run
            // took its path meanwhile): exit 2, as at the start.
            crate::engine::EngineError::Observer(inner) => {
                match inner.downcast::<crate::error::InputError>() {
                    Ok(input) => anyhow::Error::new(*input),
                    Err(other) => crate::engine::EngineError::Observer(other).into(),
                }
            }
            // A worker's error about the input (its data does not fit the
            // model): exit 2 too.
            crate::engine::EngineError::Round(inner) => run_error(inner),
            e => e.into(),
        })
}
