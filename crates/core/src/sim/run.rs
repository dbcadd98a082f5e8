//! The Monte Carlo run: trials × iterations × compared schemes on common
//! random numbers, through the iteration driver with simulated rounds.

use serde::Serialize;

use super::lower_bound;
use crate::coding::{self, LowerBound, Scheme};
use crate::config::{Config, NetworkConfig, StragglerModel};
use crate::engine::{
    Checkpoint, Driver, EngineError, Finish, IterationEvent, Lane, Observer, ObserverError,
    Outcome, Plan, Session, SignalCheck, SimulatedRound, Straggling,
};
use crate::error::InputError;
use crate::stats::{mean_ci95, percentile, reduction_ci95};
use crate::straggler::DelaySpec;

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
    /// Mean decode error ‖a·B_S − 1‖₂ per iteration (0 for an exact
    /// scheme; `/iteration/decode_error`).
    pub mean_decode_error: f64,
    /// Share of iterations whose stopping rule was met and target recovered.
    pub decodable_fraction: f64,
    /// 100 · (1 - mean / mean of the baseline): the reduction of the mean iteration time.
    pub improvement_percent: f64,
    /// Half-width (percentage points) of the 95% confidence interval of
    /// `improvement_percent`, from the paired per-trial means (NaN = null for
    /// one trial; 0 for the baseline).
    pub improvement_ci95: f64,
    /// The scheme's own lower bound ([`Scheme::lower_bound`]) on the same
    /// samples; `None` (null) when it defines none.
    pub lower_bound: Option<BoundSummary>,
    /// Per trial, in order: the mean iteration time (not serialized; the
    /// paired comparisons of `advise` use it).
    #[serde(skip)]
    pub trial_means: Vec<f64>,
    /// Per trial, in order: the 99th percentile of its iteration times (not serialized).
    #[serde(skip)]
    pub trial_p99: Vec<f64>,
}

/// Results of a lower bound LB of 000 §VI.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BoundSummary {
    pub mean_iteration_time: f64,
    pub ci95: f64,
    pub p50: f64,
    pub p99: f64,
    /// The P(l - r + 1) of its definition.
    pub workers: usize,
    /// r: computations of the whole task it waits for.
    pub load: usize,
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
    /// The lower bound of `scheme.kind` with the config's parameters, when
    /// that scheme defines one (gc-cyclic, gc-sc, gc-dc).
    pub lower_bound: Option<BoundSummary>,
    /// The `[network]` the messages crossed (absent: none); boxed, as most
    /// reports have none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<Box<NetworkSummary>>,
    /// Trace replay: how many distinct rows the rounds rest on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<crate::straggler::ReplayCoverage>,
}

/// The network of a simulation: its `[network]` section and the size of
/// every message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NetworkSummary {
    #[serde(flatten)]
    pub config: NetworkConfig,
    /// Bytes of one message (8 (d + 1)); null when no bandwidth is limited
    /// (the size does not matter then and is not computed).
    pub message_bytes: Option<f64>,
    /// How the master collects the vectors in the model: "gather" or
    /// "reduce", as `train` resolves `runtime.aggregate` for the config.
    pub aggregate: crate::spec::Aggregation,
}

/// The most memory a simulation's kept iteration times may take (8 bytes
/// each, per trial, iteration, scheme and lower bound): 1 GiB, which a
/// simulation of the papers (30 trials of 400 iterations) is far below.
pub const MAX_SIM_TIMES_BYTES: u64 = 1 << 30;

/// A ready-to-run simulation of a config.
pub struct Simulation {
    spec: DelaySpec,
    names: Vec<String>,
    driver: Driver,
    trials: usize,
    iterations: usize,
    /// Index of the baseline of the improvements.
    baseline: usize,
    /// The lower bound reported at the top level (that of `scheme.kind`).
    bound: Option<LowerBound>,
    /// Seconds per model time unit (`straggler.time_unit_ms` / 1000), for the records.
    time_unit_s: f64,
    /// The messages' way to the master (`None`: no `[network]`).
    delivery: Option<crate::network::Delivery>,
    /// `runtime.aggregate = "reduce"` in the model (`None`: gathering).
    reduce: Option<crate::network::Reduce>,
    network: Option<NetworkSummary>,
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
        // Every iteration time is kept (per scheme and per lower bound: at
        // most one bound per scheme and the top one) for the percentiles.
        let times = (config.simulate.trials as u128)
            * (config.simulate.iterations as u128)
            * (2 * compared.len() as u128 + 1);
        if times * 8 > MAX_SIM_TIMES_BYTES as u128 {
            return Err(InputError::value(
                "simulate.iterations",
                config.simulate.iterations,
                format!(
                    "with simulate.trials = {} and {} compared schemes keeps {times} iteration times                      ({:.1} GiB), more than the {} GiB a simulation may hold: fewer trials or iterations",
                    config.simulate.trials,
                    compared.len(),
                    (times * 8) as f64 / (1u64 << 30) as f64,
                    MAX_SIM_TIMES_BYTES >> 30
                ),
            ));
        }
        let mut lanes = Vec::with_capacity(compared.len());
        let mut names = Vec::with_capacity(compared.len());
        for entry in &compared {
            names.push(entry.name().to_string());
            lanes.push(Lane::new(
                crate::setup::build_entry(&coding::SCHEMES, entry, config)?,
                None,
            ));
        }
        let baseline_name = config.baseline();
        let baseline = names
            .iter()
            .position(|n| *n == baseline_name)
            .expect("validate checks that the baseline is compared");
        let bound = coding::build(config)?.lower_bound();
        let time_unit_s = config.straggler.time_unit_ms / 1000.0;
        let network = super::delivery::from_config(config)?;
        let summary = network.as_ref().map(|n| NetworkSummary {
            config: config
                .network
                .clone()
                .expect("a delivery comes from [network]"),
            message_bytes: n.message_bytes,
            aggregate: n.aggregate(),
        });
        Ok(Self {
            spec,
            names,
            driver: Driver::new(lanes, config.straggler.state_info, time_unit_s, None, false),
            trials: config.simulate.trials,
            iterations: config.simulate.iterations,
            baseline,
            bound,
            time_unit_s,
            delivery: network.as_ref().map(|n| n.delivery),
            reduce: network.and_then(|n| n.reduce),
            network: summary,
        })
    }

    /// The names of the compared schemes, in order.
    pub fn names(&self) -> Vec<String> {
        self.names.clone()
    }

    /// The compared schemes, in order.
    pub fn schemes(&self) -> impl Iterator<Item = &dyn Scheme> {
        self.driver.lanes().iter().map(Lane::scheme)
    }

    /// Run every trial; `observers` see every iteration of every scheme
    /// (lane = index in `simulate.compare` order), e.g. a trace writer. In
    /// every iteration the delay model of the trial is sampled once and every
    /// scheme plans, runs and decodes on that same sample (common random
    /// numbers: differences between schemes are paired), and the lower
    /// bounds are taken on it too.
    pub fn run(&mut self, observers: &mut [&mut dyn Observer]) -> Result<SimReport, EngineError> {
        self.run_session(observers, None, None)
    }

    /// [`Simulation::run`] as a [`Session`]: the observers, then `sink`
    /// (a trace: it sees the run's start and its finish with the outcome);
    /// with `signal`, a signal stops the trials before the next round
    /// ([`EngineError::Interrupted`], the observers told so).
    pub fn run_session(
        &mut self,
        observers: &mut [&mut dyn Observer],
        sink: Option<&mut dyn Checkpoint>,
        signal: Option<SignalCheck>,
    ) -> Result<SimReport, EngineError> {
        let k = self.spec.workers();
        let lanes = self.driver.lanes().len();
        let mut bounds: Vec<LowerBound> = Vec::new();
        let mut lane_bound = Vec::with_capacity(lanes);
        for spec in self
            .driver
            .lanes()
            .iter()
            .map(|l| l.scheme().lower_bound())
            .chain(std::iter::once(self.bound))
        {
            lane_bound.push(spec.map(|b| {
                bounds.iter().position(|x| *x == b).unwrap_or_else(|| {
                    bounds.push(b);
                    bounds.len() - 1
                })
            }));
        }
        let top_bound = lane_bound.pop().expect("the top-level bound was chained");
        let mut tallies = Tallies::new(lanes, bounds, self.trials, self.iterations, k);
        let mut round = SimulatedRound::new(self.time_unit_s)
            .with_delivery(self.delivery)
            .with_reduce(self.reduce.clone());
        let spec = &self.spec;
        let mut straggling = |trial: u64| Straggling::Model(spec.model(trial));
        let mut session = Session::new(&mut self.driver).observe(&mut tallies);
        for o in observers.iter_mut() {
            session = session.observe(&mut **o);
        }
        if let Some(sink) = sink {
            session = session.checkpoint(sink);
        }
        if let Some(signal) = signal {
            session = session.watch(signal);
        }
        let ended = session.run(
            &mut round,
            Plan {
                trials: 0..self.trials as u64,
                iterations: self.iterations as u64,
                straggling: &mut straggling,
            },
        )?;
        if let Outcome::Interrupted { signal } = ended.outcome {
            return Err(EngineError::Interrupted {
                signal,
                trial: ended.trial,
                iterations: ended.end.completed,
            });
        }
        Ok(tallies.report(self, &lane_bound, top_bound))
    }
}

/// Accumulators of one scheme or bound.
struct Tally {
    times: Vec<f64>,
    trial_means: Vec<f64>,
    trial_p99: Vec<f64>,
    trial_sum: f64,
    /// Scratch for the per-trial percentile.
    trial_sorted: Vec<f64>,
    received: u64,
    used: u64,
    recovered: f64,
    decode_error: f64,
    decodable: u64,
}

impl Tally {
    fn new(capacity: usize, trials: usize) -> Self {
        Self {
            times: Vec::with_capacity(capacity),
            trial_means: Vec::with_capacity(trials),
            trial_p99: Vec::with_capacity(trials),
            trial_sum: 0.0,
            trial_sorted: Vec::new(),
            received: 0,
            used: 0,
            recovered: 0.0,
            decode_error: 0.0,
            decodable: 0,
        }
    }

    fn push_time(&mut self, time: f64) {
        self.times.push(time);
        self.trial_sum += time;
    }

    fn end_trial(&mut self, iterations: usize) {
        self.trial_means.push(self.trial_sum / iterations as f64);
        self.trial_sum = 0.0;
        let trial = &self.times[self.times.len().saturating_sub(iterations)..];
        self.trial_sorted.clear();
        self.trial_sorted.extend_from_slice(trial);
        self.trial_sorted.sort_unstable_by(f64::total_cmp);
        self.trial_p99.push(percentile(&self.trial_sorted, 0.99));
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

/// The simulator's statistics as an observer: per scheme its times,
/// messages and recovery, and the lower bounds on the same samples.
struct Tallies {
    lanes: Vec<Tally>,
    bounds: Vec<(LowerBound, Tally)>,
    iterations: usize,
    scratch: Vec<f64>,
    /// The trial of the iterations being tallied (its end is seen at the
    /// next trial's first iteration, or at the finish).
    trial: Option<u64>,
}

impl Tallies {
    fn new(
        lanes: usize,
        bounds: Vec<LowerBound>,
        trials: usize,
        iterations: usize,
        workers: usize,
    ) -> Self {
        // Reserve at most 2^20 times up front: trials × iterations may be huge
        // (a run meant to be stopped) or even overflow; the times grow as they come.
        let reserve = trials.saturating_mul(iterations).min(1 << 20);
        let trials = trials.min(1 << 20);
        Self {
            lanes: (0..lanes).map(|_| Tally::new(reserve, trials)).collect(),
            bounds: bounds
                .into_iter()
                .map(|b| (b, Tally::new(reserve, trials)))
                .collect(),
            iterations,
            scratch: Vec::with_capacity(workers),
            trial: None,
        }
    }

    fn end_trial(&mut self) {
        let tallies = self
            .lanes
            .iter_mut()
            .chain(self.bounds.iter_mut().map(|b| &mut b.1));
        for tally in tallies {
            tally.end_trial(self.iterations);
        }
    }

    fn report(
        mut self,
        sim: &Simulation,
        lane_bound: &[Option<usize>],
        top_bound: Option<usize>,
    ) -> SimReport {
        let bounds: Vec<BoundSummary> = self
            .bounds
            .iter_mut()
            .map(|(b, tally)| {
                let (mean, ci95, p50, p99) = tally.time_stats();
                BoundSummary {
                    mean_iteration_time: mean,
                    ci95,
                    p50,
                    p99,
                    workers: b.workers,
                    load: b.load,
                }
            })
            .collect();
        let n = (sim.trials * sim.iterations) as f64;
        let mut schemes: Vec<SchemeSummary> = sim
            .names
            .iter()
            .zip(self.lanes.iter_mut())
            .zip(lane_bound)
            .map(|((name, tally), bound)| {
                let (mean, ci95, p50, p99) = tally.time_stats();
                SchemeSummary {
                    name: name.clone(),
                    mean_iteration_time: mean,
                    ci95,
                    p50,
                    p99,
                    messages_per_iteration: tally.received as f64 / n,
                    messages_used_per_iteration: tally.used as f64 / n,
                    recovered_fraction: tally.recovered / n,
                    mean_decode_error: tally.decode_error / n,
                    decodable_fraction: tally.decodable as f64 / n,
                    improvement_percent: f64::NAN,
                    improvement_ci95: f64::NAN,
                    lower_bound: bound.map(|i| bounds[i].clone()),
                    trial_means: tally.trial_means.clone(),
                    trial_p99: tally.trial_p99.clone(),
                }
            })
            .collect();
        let base = schemes[sim.baseline].mean_iteration_time;
        for (s, tally) in schemes.iter_mut().zip(&self.lanes) {
            s.improvement_percent = 100.0 * (1.0 - s.mean_iteration_time / base);
            s.improvement_ci95 =
                reduction_ci95(&tally.trial_means, &self.lanes[sim.baseline].trial_means);
        }
        SimReport {
            trials: sim.trials,
            iterations: sim.iterations,
            workers: sim.spec.workers(),
            straggler_model: sim.spec.kind().name(),
            baseline: sim.names[sim.baseline].clone(),
            schemes,
            lower_bound: top_bound.map(|i| bounds[i].clone()),
            network: sim.network.clone().map(Box::new),
            replay: sim.spec.replay_coverage(sim.trials, sim.iterations),
        }
    }
}

impl Observer for Tallies {
    fn wants_workers(&self) -> bool {
        false
    }

    fn finish(&mut self, _finish: &Finish<'_>) -> Result<(), ObserverError> {
        if self.trial.take().is_some() {
            self.end_trial();
        }
        Ok(())
    }

    fn iteration(&mut self, event: &IterationEvent<'_>) -> Result<(), ObserverError> {
        if self.trial != Some(event.trial) {
            if self.trial.is_some() {
                self.end_trial();
            }
            self.trial = Some(event.trial);
        }
        let r = event.record;
        let tally = &mut self.lanes[event.lane];
        tally.push_time(event.duration);
        tally.received += r.messages_received;
        tally.used += r.messages_used;
        tally.recovered += r.recovered_fraction;
        tally.decode_error += r.decode_error;
        tally.decodable += u64::from(event.decodable);
        if event.lane == 0 {
            // Once per iteration, on the sample every scheme saw.
            for (b, tally) in &mut self.bounds {
                tally.push_time(lower_bound(
                    event.sample,
                    b.load,
                    b.workers,
                    &mut self.scratch,
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StragglerModel;

    /// Every iteration time, by lane and trial.
    struct Times(Vec<Vec<Vec<f64>>>);

    impl Observer for Times {
        fn wants_workers(&self) -> bool {
            false
        }

        fn iteration(&mut self, event: &IterationEvent<'_>) -> Result<(), ObserverError> {
            let lane = &mut self.0[event.lane];
            if lane.len() <= event.trial as usize {
                lane.resize(event.trial as usize + 1, Vec::new());
            }
            lane[event.trial as usize].push(event.duration);
            Ok(())
        }
    }

    #[test]
    fn per_trial_values_are_each_trials_mean_and_p99() {
        let mut config = Config {
            workers: 8,
            ..Config::default()
        };
        config.straggler.model = StragglerModel::ShiftedExponential;
        config.simulate.trials = 3;
        config.simulate.iterations = 40;
        let mut sim = Simulation::from_config(&config).unwrap();
        let lanes = sim.names().len();
        let mut times = Times(vec![Vec::new(); lanes]);
        let report = sim.run(&mut [&mut times]).unwrap();
        for (s, trials) in report.schemes.iter().zip(&times.0) {
            assert_eq!(s.trial_means.len(), 3);
            assert_eq!(s.trial_p99.len(), 3);
            for (t, values) in trials.iter().enumerate() {
                let mean = values.iter().sum::<f64>() / values.len() as f64;
                assert!((s.trial_means[t] - mean).abs() < 1e-12 * mean);
                let mut sorted = values.clone();
                sorted.sort_unstable_by(f64::total_cmp);
                assert_eq!(s.trial_p99[t], percentile(&sorted, 0.99));
            }
            let overall = s.trial_means.iter().sum::<f64>() / 3.0;
            assert!((overall - s.mean_iteration_time).abs() < 1e-12 * overall);
        }
    }
}
