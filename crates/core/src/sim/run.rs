//! The Monte Carlo run: trials × iterations × compared schemes on common random numbers.

use serde::Serialize;

use super::round::{RoundEngine, WorkerDetail, lower_bound};
use crate::coding::registry::param;
use crate::coding::{self, RoundContext, RoundPlan, Scheme};
use crate::config::{CompareEntry, Config, StateInfo, StragglerModel};
use crate::error::InputError;
use crate::record::{IterationRecord, RecordSink, SinkError};
use crate::stats::{mean_ci95, percentile, reduction_ci95};
use crate::straggler::{DelaySpec, RoundSample, state_context};

/// One compared scheme.
pub struct Contender {
    /// As in `simulate.compare` (`gc` for Tandon's GC over all K workers).
    pub name: String,
    pub scheme: Box<dyn Scheme>,
}

/// Everything a run needs besides the schemes.
#[derive(Debug, Clone)]
pub struct SimSettings {
    pub trials: usize,
    pub iterations: usize,
    pub state_info: StateInfo,
    /// r, for the lower bound.
    pub load: usize,
    /// P(l - r + 1): workers whose whole task the lower bound waits for.
    pub lower_bound_workers: usize,
    /// Index (into the contenders) of the baseline of the improvements.
    pub baseline: usize,
    /// Seconds per model time unit, for the records (`straggler.time_unit_ms` / 1000).
    pub model_time_unit_s: f64,
}

/// Results of one scheme. Times are model time.
#[derive(Debug, Clone, Serialize)]
pub struct SchemeSummary {
    pub name: String,
    /// Mean over trials of the per-trial mean iteration time.
    pub mean_iteration_time: f64,
    /// Half-width of the 95% confidence interval of the mean (t over trials; NaN = null for one trial).
    pub ci95: f64,
    /// Median and 99th percentile over all iterations of all trials.
    pub p50: f64,
    pub p99: f64,
    /// Mean messages received per iteration (the communication load of 003 Fig. 1(b)).
    pub messages_per_iteration: f64,
    /// Mean messages with a non-zero decoding weight per iteration.
    pub messages_used_per_iteration: f64,
    /// Mean share of the partitions recovered per iteration.
    pub recovered_fraction: f64,
    /// Share of iterations whose stopping rule was met and target recovered.
    pub decodable_fraction: f64,
    /// 100 · (1 - mean / mean of the baseline): the reduction of the mean iteration time.
    pub improvement_percent: f64,
    /// Half-width (percentage points) of the 95% confidence interval of
    /// `improvement_percent`, from the paired per-trial means (NaN = null for
    /// one trial; 0 for the baseline).
    pub improvement_ci95: f64,
}

/// Results of the lower bound LB of 000 §VI.
#[derive(Debug, Clone, Serialize)]
pub struct BoundSummary {
    pub mean_iteration_time: f64,
    pub ci95: f64,
    pub p50: f64,
    pub p99: f64,
    /// The P(l - r + 1) of its definition.
    pub workers: usize,
}

/// The outcome of a run.
#[derive(Debug, Clone, Serialize)]
pub struct SimReport {
    pub trials: usize,
    pub iterations: usize,
    pub workers: usize,
    pub straggler_model: &'static str,
    pub baseline: String,
    pub schemes: Vec<SchemeSummary>,
    pub lower_bound: BoundSummary,
}

/// A ready-to-run simulation of a config.
pub struct Simulation {
    pub spec: DelaySpec,
    pub contenders: Vec<Contender>,
    pub settings: SimSettings,
}

impl Simulation {
    /// Build the delay model and every scheme of `simulate.compare` (or
    /// `scheme.kind` alone) from a validated config. All schemes are built
    /// once, so their codes (and GC-DC's cluster assignment) are fixed for
    /// the run, as in 000 §VI; trials differ in their straggler randomness.
    pub fn from_config(config: &Config) -> Result<Self, InputError> {
        if config.straggler.model == StragglerModel::None {
            return Err(InputError::value(
                "straggler.model",
                "\"none\"",
                "injects no delay, so there is nothing to simulate; choose a delay model",
            ));
        }
        let spec = DelaySpec::from_config(config)?;
        let compared = config.compared();
        let mut contenders = Vec::with_capacity(compared.len());
        for entry in &compared {
            contenders.push(Contender {
                name: entry.name().to_string(),
                scheme: build_entry(entry, config)?,
            });
        }
        let baseline_name = config.baseline();
        let baseline = compared
            .iter()
            .position(|e| e.name() == baseline_name)
            .expect("validate checks that the baseline is compared");
        let (clusters, load) = (param(config, "clusters")?, param(config, "load")?);
        let k = config.workers;
        let lower_bound_workers = lower_bound_workers(k, clusters, load)?;
        Ok(Self {
            spec,
            contenders,
            settings: SimSettings {
                trials: config.simulate.trials,
                iterations: config.simulate.iterations,
                state_info: config.straggler.state_info,
                load,
                lower_bound_workers,
                baseline,
                model_time_unit_s: config.straggler.time_unit_ms / 1000.0,
            },
        })
    }

    /// Run every trial; `sink` gets one record per scheme and iteration.
    pub fn run(&mut self, sink: Option<&mut dyn RecordSink>) -> Result<SimReport, SinkError> {
        simulate(&self.spec, &mut self.contenders, &self.settings, sink)
    }

    /// The names of the contenders, in order.
    pub fn names(&self) -> Vec<String> {
        self.contenders.iter().map(|c| c.name.clone()).collect()
    }
}

/// Build the scheme of one `simulate.compare` entry; the errors of a variant
/// name it (`simulate.compare.<name>: scheme.clusters = 5 does not divide ...`).
pub fn build_entry(entry: &CompareEntry, config: &Config) -> Result<Box<dyn Scheme>, InputError> {
    crate::setup::build_entry(&coding::SCHEMES, entry, config)
}

/// P(l - r + 1) = K - P(r - 1), checking that it is a worker count.
fn lower_bound_workers(workers: usize, clusters: usize, load: usize) -> Result<usize, InputError> {
    if clusters == 0 || workers % clusters != 0 {
        return Err(InputError::value(
            "scheme.clusters",
            clusters,
            format!(
                "does not divide workers = {workers}, so the lower bound P(l - r + 1) is undefined"
            ),
        ));
    }
    let size = workers / clusters;
    if load == 0 || load > size {
        return Err(InputError::value(
            "scheme.load",
            load,
            format!(
                "must be between 1 and workers / clusters = {size} for the lower bound P(l - r + 1)"
            ),
        ));
    }
    Ok(clusters * (size - load + 1))
}

/// Accumulators of one scheme.
struct Tally {
    times: Vec<f64>,
    trial_means: Vec<f64>,
    trial_sum: f64,
    received: u64,
    used: u64,
    recovered: f64,
    decodable: u64,
}

impl Tally {
    fn new(capacity: usize, trials: usize) -> Self {
        Self {
            times: Vec::with_capacity(capacity),
            trial_means: Vec::with_capacity(trials),
            trial_sum: 0.0,
            received: 0,
            used: 0,
            recovered: 0.0,
            decodable: 0,
        }
    }

    fn end_trial(&mut self, iterations: usize) {
        self.trial_means.push(self.trial_sum / iterations as f64);
        self.trial_sum = 0.0;
    }

    /// (mean, ci95, p50, p99); sorts `times`.
    fn time_stats(&mut self) -> (f64, f64, f64, f64) {
        let (mean, ci) = mean_ci95(&self.trial_means);
        self.times.sort_unstable_by(f64::total_cmp);
        (
            mean,
            ci,
            percentile(&self.times, 0.5),
            percentile(&self.times, 0.99),
        )
    }
}

/// Run `settings.trials` trials of `settings.iterations` iterations. In every
/// iteration the delay model of the trial is sampled once and every
/// contender plans, runs and decodes on that same sample (common random
/// numbers: differences between schemes are paired), and the lower bound is
/// taken on it too.
pub fn simulate(
    spec: &DelaySpec,
    contenders: &mut [Contender],
    settings: &SimSettings,
    mut sink: Option<&mut dyn RecordSink>,
) -> Result<SimReport, SinkError> {
    let k = spec.workers();
    let (trials, iterations) = (settings.trials, settings.iterations);
    // Reserve at most 2^20 times up front: trials × iterations may be huge (a
    // run meant to be stopped) or even overflow, and the times grow as they come.
    let total = trials.saturating_mul(iterations);
    let reserve = total.min(1 << 20);
    let mut tallies: Vec<Tally> = contenders
        .iter()
        .map(|_| Tally::new(reserve, trials.min(1 << 20)))
        .collect();
    let mut bound = Tally::new(reserve, trials.min(1 << 20));
    let mut engine = RoundEngine::new();
    let mut detail = WorkerDetail::default();
    let mut record = IterationRecord::new(k);
    let mut scratch = Vec::with_capacity(k);
    let mut current = RoundSample::new(k);
    let mut previous = RoundSample::new(k);
    // Plans of the schemes that plan the same round every iteration.
    let fixed_plans: Vec<Option<RoundPlan>> = contenders
        .iter_mut()
        .map(|c| {
            c.scheme
                .static_plan()
                .then(|| c.scheme.plan_round(&RoundContext::default()))
        })
        .collect();
    for trial in 0..trials {
        let mut model = spec.model(trial as u64);
        for t in 0..iterations {
            model.sample(&mut current);
            for (i, c) in contenders.iter_mut().enumerate() {
                let ctx = state_context(
                    settings.state_info,
                    t as u64,
                    &current,
                    (t > 0).then_some(&previous),
                );
                let planned;
                let plan = match &fixed_plans[i] {
                    Some(plan) => plan,
                    None => {
                        planned = c.scheme.plan_round(&ctx);
                        &planned
                    }
                };
                let out = if sink.is_some() {
                    engine.run_detailed(c.scheme.as_mut(), plan, &current, &mut detail)
                } else {
                    engine.run(c.scheme.as_mut(), plan, &current)
                };
                let tally = &mut tallies[i];
                tally.times.push(out.time);
                tally.trial_sum += out.time;
                tally.received += out.messages_received as u64;
                tally.used += out.messages_used as u64;
                tally.recovered += out.recovered_fraction;
                tally.decodable += u64::from(out.decodable);
                if let Some(sink) = sink.as_deref_mut() {
                    let unit = settings.model_time_unit_s;
                    record.duration_s = out.time * unit;
                    record.decode_s = f64::NAN;
                    record.recovered_fraction = out.recovered_fraction;
                    record.messages_used = out.messages_used as u64;
                    record.messages_received = out.messages_received as u64;
                    record.stale_dropped = 0;
                    for w in 0..k {
                        record.finish_s[w] = detail.finish[w] * unit;
                        record.used[w] = detail.used[w];
                    }
                    record.straggling.copy_from_slice(&current.straggling);
                    record.cluster.fill(-1);
                    for (p, members) in plan.clusters.iter().enumerate() {
                        for &w in members {
                            record.cluster[w] = p as i64 + 1;
                        }
                    }
                    sink.record(i, trial, &record)?;
                }
            }
            let lb = lower_bound(
                &current,
                settings.load,
                settings.lower_bound_workers,
                &mut scratch,
            );
            bound.times.push(lb);
            bound.trial_sum += lb;
            std::mem::swap(&mut current, &mut previous);
        }
        for tally in tallies.iter_mut().chain(std::iter::once(&mut bound)) {
            tally.end_trial(iterations);
        }
    }
    let mut schemes: Vec<SchemeSummary> = contenders
        .iter()
        .zip(tallies.iter_mut())
        .map(|(c, tally)| {
            let (mean, ci95, p50, p99) = tally.time_stats();
            let n = total as f64;
            SchemeSummary {
                name: c.name.clone(),
                mean_iteration_time: mean,
                ci95,
                p50,
                p99,
                messages_per_iteration: tally.received as f64 / n,
                messages_used_per_iteration: tally.used as f64 / n,
                recovered_fraction: tally.recovered / n,
                decodable_fraction: tally.decodable as f64 / n,
                improvement_percent: f64::NAN,
                improvement_ci95: f64::NAN,
            }
        })
        .collect();
    let base = schemes[settings.baseline].mean_iteration_time;
    for (s, tally) in schemes.iter_mut().zip(&tallies) {
        s.improvement_percent = 100.0 * (1.0 - s.mean_iteration_time / base);
        s.improvement_ci95 =
            reduction_ci95(&tally.trial_means, &tallies[settings.baseline].trial_means);
    }
    let (mean, ci95, p50, p99) = bound.time_stats();
    Ok(SimReport {
        trials,
        iterations,
        workers: k,
        straggler_model: spec.kind().name(),
        baseline: contenders[settings.baseline].name.clone(),
        schemes,
        lower_bound: BoundSummary {
            mean_iteration_time: mean,
            ci95,
            p50,
            p99,
            workers: settings.lower_bound_workers,
        },
    })
}
