//! Straggler models: how long each worker takes in each iteration.
//!
//! A [`DelayModel`] produces, once per iteration and in iteration order, a
//! [`RoundSample`]: per worker the model time `u` of one partition computation
//! and an extra delay `e`, the worker's straggling state and its rate. A
//! message sent after `c` computations arrives at
//!
//! ```text
//!     time = c · u + e        (RoundSample::message_time)
//! ```
//!
//! so a worker's j-th computation ends at j·u (000 eq. 21 and 003 eq. 5: r
//! computations take r·(alpha + Exp(mu)), one exponential draw per worker
//! and iteration), and `e` is a delay before sending (001 §5, 004 §VIII-B).
//! Every model but `extra-delay` has `e = 0`.
//!
//! The iteration driver ([`crate::engine::Driver`]) calls
//! [`DelayModel::sample`] once per iteration, in order: the Monte Carlo
//! simulator builds one model per trial with [`DelaySpec::model`]`(trial)`,
//! `train` builds `model(0)` to emulate the delays, so `simulate` (trial 0)
//! and `train` see the same samples for the same seed. What the master knows
//! of the state when it plans an iteration is the engine's
//! [`state_context`](crate::engine::state_context).
//!
//! | `straggler.model` | u (per worker) | straggling | paper |
//! |---|---|---|---|
//! | `none` | 0 (nothing injected) | never | |
//! | `shifted-exponential` | alpha + Exp(mu) | never | 000 eq. 21, 003 eq. 5 |
//! | `gilbert-elliott` | alpha + Exp(mu_fast or mu_slow) by a two-state Markov chain | slow state | 000 §VI-A |
//! | `gilbert-elliott-heterogeneous` | alpha + Exp(mu_f,k or mu_f,k / slow_factor), mu_f,k ~ U(0, rate_max] | rate < rate_threshold | 000 §VI-B1 |
//! | `time-varying` | alpha + Exp(mu_k,t), eq. (22) | rate < rate_threshold | 000 §VI-B2 |
//! | `extra-delay` | alpha + Exp(mu), plus e ~ Exp(1/delay_mean) on delayed workers | delayed | 001 §5, 004 §VIII-B |
//! | `trace` | the CSV value of the worker's column, row by row, wrapped | u > trace_threshold · median of the row | AWS Lambda traces |

mod agreement;
pub mod fit;
pub mod fit_interval;
mod long_run;
mod models;
mod replay;

pub use agreement::rate_threshold_disagreements;
pub use long_run::LongRun;
pub use replay::{TraceSummary, TraceTable, looks_like_clock_readings};

use std::sync::Arc;

use crate::config::{Config, StragglerConfig, StragglerModel};
use crate::error::InputError;
use crate::rng::{Stream, substream};

/// One iteration's delays and states, per worker (0-based index).
#[derive(Debug, Clone, PartialEq)]
pub struct RoundSample {
    /// Model time of one partition computation: computation j ends at j · unit_time.
    pub unit_time: Vec<f64>,
    /// Model time added to every message of the worker (a delay before sending); 0 in most models.
    pub extra_time: Vec<f64>,
    /// The worker's straggling state this iteration (the model's definition, see the module table).
    pub straggling: Vec<bool>,
    /// The worker's computation rate this iteration (1 / model time), NaN when the model has none.
    pub rate: Vec<f64>,
}

impl RoundSample {
    /// A sample for `workers` workers: no delay, nobody straggling, no rates.
    pub fn new(workers: usize) -> Self {
        Self {
            unit_time: vec![0.0; workers],
            extra_time: vec![0.0; workers],
            straggling: vec![false; workers],
            rate: vec![f64::NAN; workers],
        }
    }

    /// K.
    pub fn workers(&self) -> usize {
        self.unit_time.len()
    }

    /// Back to no delay, nobody straggling, no rates.
    pub fn clear(&mut self) {
        self.unit_time.fill(0.0);
        self.extra_time.fill(0.0);
        self.straggling.fill(false);
        self.rate.fill(f64::NAN);
    }

    /// Model time at which `worker`'s message sent after `after` computations arrives.
    pub fn message_time(&self, worker: usize, after: usize) -> f64 {
        after as f64 * self.unit_time[worker] + self.extra_time[worker]
    }

    /// The rates, when the model has one for every worker.
    pub fn rates(&self) -> Option<&[f64]> {
        (!self.rate.is_empty() && self.rate.iter().all(|r| r.is_finite()))
            .then_some(self.rate.as_slice())
    }
}

/// A source of per-iteration delays. `sample` is called once per iteration,
/// in iteration order, with a sample of [`DelayModel::workers`] workers; it
/// overwrites every field of `out`.
pub trait DelayModel: Send {
    /// K.
    fn workers(&self) -> usize;
    /// The next iteration's sample.
    fn sample(&mut self, out: &mut RoundSample);
    /// The state S⁰ the master knows before the first iteration (000
    /// Algorithm 1: the clustering of iteration 1 under imperfect state
    /// information uses S⁰): the workers' straggling flags and rates, when
    /// the model has a state that persists from one iteration to the next
    /// (Gilbert-Elliott, time-varying, chosen delayed workers); `false`, and
    /// `out` untouched, for a model without one. Called before the first
    /// `sample`.
    fn initial_state(&self, _out: &mut RoundSample) -> bool {
        false
    }
}

/// Measured straggling: from each worker's measured seconds per partition
/// computation (NaN: it sent nothing this iteration), its rate in model
/// units (1 / model time, `time_unit_s` seconds per unit) and whether it
/// straggles (rate below `rate_threshold`, or no result at all); `out` gets
/// the rates and flags, and no delays. A slice shorter than K counts the
/// missing workers as silent.
pub fn infer_from_compute(
    per_computation_s: &[f64],
    time_unit_s: f64,
    rate_threshold: f64,
    out: &mut RoundSample,
) {
    for w in 0..out.workers() {
        let sec = per_computation_s.get(w).copied().unwrap_or(f64::NAN);
        let unit = sec / time_unit_s;
        out.unit_time[w] = unit;
        out.extra_time[w] = 0.0;
        out.rate[w] = if unit > 0.0 { 1.0 / unit } else { f64::NAN };
        // NaN (no result) straggles too.
        out.straggling[w] = out.rate[w].is_nan() || out.rate[w] < rate_threshold;
    }
}

/// A validated straggler model, ready to build one independent [`DelayModel`]
/// per trial. A trace file is read once, here.
#[derive(Debug, Clone)]
pub struct DelaySpec {
    config: StragglerConfig,
    workers: usize,
    seed: u64,
    trace: Option<Arc<TraceTable>>,
    /// Trace column (0-based) replayed by each worker.
    columns: Vec<usize>,
    /// Rows between the first rows of consecutive trials of a trace
    /// (`simulate.iterations`: trials read disjoint blocks while the trace is
    /// long enough).
    trial_stride: u64,
}

impl DelaySpec {
    /// Check the `[straggler]` section against `workers` and read the trace
    /// file of the `trace` model (errors name `file:line` or the key).
    /// A relative `straggler.trace_file` is relative to the working directory.
    pub fn from_config(config: &Config) -> Result<Self, InputError> {
        let s = &config.straggler;
        let workers = config.workers;
        let (trace, columns) = match s.model {
            StragglerModel::Trace => {
                let path = s.trace_file.as_deref().ok_or_else(|| {
                    InputError::new(
                        "straggler.trace_file",
                        "is required when straggler.model = trace",
                    )
                })?;
                let table = TraceTable::load(std::path::Path::new(path))?;
                let columns = table.select_columns(s.trace_columns.as_deref(), workers)?;
                (Some(Arc::new(table)), columns)
            }
            _ => (None, Vec::new()),
        };
        Ok(Self {
            config: s.clone(),
            workers,
            seed: config.seed,
            trace,
            columns,
            trial_stride: config.simulate.iterations as u64,
        })
    }

    /// The model.
    pub fn kind(&self) -> StragglerModel {
        self.config.model
    }

    /// K.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// How much independent data `trials` × `iterations` rounds of trace
    /// replay rest on (the `trace` model only).
    pub fn replay_coverage(&self, trials: usize, iterations: usize) -> Option<ReplayCoverage> {
        let table = self.trace.as_ref()?;
        let rounds = trials.saturating_mul(iterations);
        Some(ReplayCoverage {
            rows: table.rows(),
            rounds,
            independent_rows: rounds.min(table.rows()),
            rows_reused: rounds > table.rows(),
        })
    }

    /// Rows, median and range of the replayed trace columns, and those that
    /// look like clock readings (the `trace` model only).
    pub fn trace_summary(&self) -> Option<TraceSummary> {
        Some(self.trace.as_ref()?.summary(&self.columns))
    }

    /// The delay model of trial `trial`, on its own random stream
    /// (`rng::substream(seed, Straggler, trial)`). Trial 0 is what the MPI
    /// runtime replays. Trial k of a trace starts at row k ·
    /// `simulate.iterations` (mod the rows), so trials replay disjoint
    /// blocks of rows while the trace has trials × iterations rows; see
    /// [`DelaySpec::replay_coverage`] for what a shorter trace means.
    pub fn model(&self, trial: u64) -> Box<dyn DelayModel> {
        let rng = substream(self.seed, Stream::Straggler, trial);
        let s = &self.config;
        let k = self.workers;
        match s.model {
            StragglerModel::None => Box::new(models::NoDelay { workers: k }),
            StragglerModel::ShiftedExponential => {
                Box::new(models::ShiftedExponential::new(k, s.alpha, s.mu, rng))
            }
            StragglerModel::GilbertElliott => Box::new(models::GilbertElliott::homogeneous(
                k,
                s.alpha,
                s.mu_fast,
                s.mu_slow,
                s.transition_probabilities(),
                s.initial_stragglers,
                rng,
            )),
            StragglerModel::GilbertElliottHeterogeneous => {
                Box::new(models::GilbertElliott::heterogeneous(
                    k,
                    s.alpha,
                    s.rate_max,
                    s.slow_factor,
                    s.rate_threshold,
                    s.transition_probabilities(),
                    s.initial_stragglers,
                    rng,
                ))
            }
            StragglerModel::TimeVarying => Box::new(models::TimeVarying::new(
                k,
                s.alpha,
                s.rate_max,
                s.rate_threshold,
                s.switch_probability,
                s.initial_stragglers,
                rng,
            )),
            StragglerModel::ExtraDelay => {
                let delayed = if s.delayed_workers.is_empty() {
                    models::Delayed::Random(s.delayed_count)
                } else {
                    models::Delayed::Chosen(s.delayed_workers.iter().map(|w| w - 1).collect())
                };
                Box::new(models::ExtraDelay::new(
                    k,
                    s.alpha,
                    s.mu,
                    delayed,
                    s.delay_mean,
                    rng,
                ))
            }
            StragglerModel::Trace => Box::new(replay::TraceReplay::new(
                Arc::clone(self.trace.as_ref().expect("trace loaded by from_config")),
                self.columns.clone(),
                trial.wrapping_mul(self.trial_stride),
                s.trace_threshold,
                s.trace_compute_share,
            )),
        }
    }
}

/// How many rows of a replayed trace a simulation rests on. When trials ×
/// iterations exceed the rows, rounds reuse rows: the trials are not
/// independent, so their spread (the ci95 of a simulation) understates the
/// uncertainty; nothing is widened to make up for it, the report says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ReplayCoverage {
    /// Rows of the trace file.
    pub rows: usize,
    /// Rounds simulated per scheme: trials × iterations.
    pub rounds: usize,
    /// Distinct rows those rounds replay.
    pub independent_rows: usize,
    /// Whether rounds reuse rows (rounds > rows).
    pub rows_reused: bool,
}

/// The delay model of `trial` for `config` (reads the trace file, if any).
pub fn build(config: &Config, trial: u64) -> Result<Box<dyn DelayModel>, InputError> {
    Ok(DelaySpec::from_config(config)?.model(trial))
}
