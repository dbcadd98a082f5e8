//! `gradcode advise`: which scheme and parameters, for this K, this
//! straggler behaviour and this memory budget?
//!
//! ```text
//! gradcode advise --config F [--replay times.csv | --trace measured.h5] [--memory-partitions M]
//!     [--objective mean|p99|time-to-loss] [--target-loss L] [--schemes S1,S2] [--grid KEY=V1,V2,...]
//!     [--trials N] [--iterations T] [--json]
//! ```
//!
//! 1. The straggler model: the config's, or fitted to a replay CSV or to
//!    the per-worker times of a training trace (`super::measured`)
//!    ([`crate::straggler::fit`]: per-worker and pooled shifted-exponential
//!    fits and a two-state slow/fast fit, each with its Kolmogorov-Smirnov
//!    distance; the chosen fit replaces `[straggler]`).
//! 2. The candidates: every scheme of `--schemes` (default: every registered
//!    scheme, those with partial recovery skipped unless named; the budget
//!    M by default the most the config's experiment stores on a worker,
//!    none when `--grid` chooses the loads) with every combination of the parameters it reads
//!    among `scheme.load` (1..=min(M, K)), `scheme.clusters` (the divisors of
//!    K) and `scheme.clusters_per_worker` (1..=K), or the values `--grid`
//!    gives for a key. Invalid combinations are skipped with the reason, as
//!    are those whose built scheme stores more than M partitions on some
//!    worker (`scheme.stored(w)`).
//! 3. Each candidate runs exactly what `sweep` runs for it (the same seed,
//!    so every candidate sees the same straggler samples: common random
//!    numbers), and they are ranked by the objective: the mean iteration
//!    time, the 99th percentile of a trial's iteration times, averaged
//!    over trials, or the model time to a training loss
//!    ([`crate::sim::to_loss`]: each trial trains for `train.iterations`
//!    iterations on the same samples; candidates that miss the target in
//!    some trial come after those that reach it in every trial). Each is
//!    compared with the best through the per-trial differences (paired):
//!    when the 95% confidence interval of the difference contains 0, the
//!    two cannot be told apart, and it says so.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use super::ConfigArgs;
use super::sweep::{self, Axis, Outcome, Skipped, VariantRunner};
use crate::error::InputError;
use crate::sim::to_loss::{self, LossRunError, TrialToLoss};
use crate::stats::mean_ci95;
use crate::straggler::TraceTable;
use crate::straggler::fit::{self, Fits, FittedModel, Value};
use crate::straggler::fit_interval::{self, FitIntervals, Interval};

/// What `advise` ranks by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Objective {
    /// Mean iteration time.
    #[default]
    Mean,
    /// 99th percentile of the iteration times of a trial, averaged over trials.
    P99,
    /// Model time until the training loss reaches `--target-loss`.
    TimeToLoss,
}

/// The flags of `advise` besides the config.
#[derive(Debug, Clone, Default)]
pub(crate) struct AdviseFlags {
    pub trace: Option<PathBuf>,
    pub replay: Option<PathBuf>,
    pub memory_partitions: Option<usize>,
    pub objective: Objective,
    pub target_loss: Option<f64>,
    pub schemes: Option<String>,
    pub min_recovered: Option<f64>,
    pub grid: Vec<String>,
    pub trials: Option<u64>,
    pub iterations: Option<u64>,
}

/// The scheme keys advise searches by default (`wait_for` only where
/// partial-recovery candidates are admitted).
const SEARCHED: [&str; 4] = ["load", "clusters", "clusters_per_worker", "wait_for"];

/// Where the simulated straggler model comes from.
#[derive(Debug, Serialize)]
struct ModelSource {
    /// `config`, `replay` or `trace`.
    source: &'static str,
    /// The replay CSV or the training trace.
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<String>,
    /// The `straggler.model` simulated.
    model: String,
    /// The `[straggler]` keys the fit set (empty for the config's model).
    set: BTreeMap<String, f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fits: Option<Fits>,
    /// 95% block-bootstrap intervals of the fitted parameters.
    #[serde(skip_serializing_if = "Option::is_none")]
    intervals: Option<FitIntervals>,
    /// The best candidate with each simulated parameter at each end of its
    /// interval (the other parameters as fitted); absent without a fit or
    /// with `time-to-loss`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    sensitivity: Vec<Sensitivity>,
    /// `trace` only: worker-iterations without a result in time, whose
    /// value is the iteration's end (a lower bound).
    #[serde(skip_serializing_if = "Option::is_none")]
    censored: Option<usize>,
}

#[derive(Debug, Serialize)]
struct Candidate {
    /// 1 = the best by the objective.
    rank: usize,
    scheme: String,
    settings: BTreeMap<String, String>,
    /// The most partitions a worker stores.
    stored_partitions: usize,
    /// The objective: mean over trials.
    objective: f64,
    /// Half-width of its 95% confidence interval over trials.
    ci95: f64,
    /// Mean over trials of (this − the best), paired by trial.
    difference: f64,
    /// Half-width of the 95% confidence interval of `difference` (0 for the best).
    difference_ci95: f64,
    /// The interval of the difference contains 0 (true for the best).
    indistinguishable_from_best: bool,
    mean_iteration_time: f64,
    p99: f64,
    recovered_fraction: f64,
    messages_per_iteration: f64,
    /// time-to-loss: the trials in which it reached the target.
    #[serde(skip_serializing_if = "Option::is_none")]
    reached_trials: Option<usize>,
    /// time-to-loss: iterations before the target, mean over the trials
    /// that reached it (null: none did).
    #[serde(skip_serializing_if = "Option::is_none")]
    iterations_to_target: Option<f64>,
    /// Other variants with the same result in every trial ("scheme
    /// settings"), merged into this row (it stores the least of them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    aliases: Vec<String>,
}

/// The best candidate with one fitted parameter moved to an end of its
/// interval.
#[derive(Debug, Serialize)]
struct Sensitivity {
    /// The `[straggler]` key.
    parameter: String,
    value: f64,
    /// "scheme settings" of the best of the leading candidates re-simulated.
    best: String,
    /// The best is the advice's.
    same: bool,
}

/// Candidates re-simulated at each end of the fitted intervals.
const SENSITIVITY_CANDIDATES: usize = 5;

/// What `--objective time-to-loss` aims at.
#[derive(Debug, Serialize)]
struct LossTarget {
    loss: f64,
    /// `--target-loss`, or `full-batch descent at iteration N`.
    source: String,
    /// Iterations each trial trains (`train.iterations`).
    iterations: usize,
}

#[derive(Debug, Serialize)]
struct AdviseReport {
    origin: String,
    /// Seconds per model time unit in train's emulation (null: measured mode).
    model_time_unit_s: Option<f64>,
    workers: usize,
    seed: u64,
    trials: usize,
    iterations: usize,
    objective: Objective,
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<LossTarget>,
    memory_partitions: Option<usize>,
    /// `--min-recovered`: the share of the partitions a partial-recovery
    /// candidate must recover per iteration, on average.
    #[serde(skip_serializing_if = "Option::is_none")]
    min_recovered: Option<f64>,
    straggler: ModelSource,
    ranking: Vec<Candidate>,
    skipped: Vec<Skipped>,
}

/// The divisors of `k`, ascending.
fn divisors(k: usize) -> Vec<usize> {
    (1..=k).filter(|d| k % d == 0).collect()
}

/// The axes of `scheme`: the user's `--grid` axes it reads (a `scheme.*`
/// key it declares, or any other key), then the default ones of
/// [`SEARCHED`] it declares and `--grid` does not give: `wait_for` (from
/// ⌈K/2⌉ to K − 1) only when `partial` admits partial-recovery candidates
/// and `--grid` sets neither it nor `scheme.deadline`.
fn axes_for(
    entry: &crate::coding::SchemeEntry,
    grid: &[Axis],
    workers: usize,
    memory: Option<usize>,
    partial: bool,
) -> Vec<Axis> {
    let reads = |key: &str| match key.strip_prefix("scheme.") {
        Some(k) => entry.declares(k),
        None => true,
    };
    let mut axes: Vec<Axis> = grid.iter().filter(|a| reads(&a.key)).cloned().collect();
    for key in SEARCHED {
        let full = format!("scheme.{key}");
        if !entry.declares(key) || grid.iter().any(|a| a.key == full) {
            continue;
        }
        let values: Vec<usize> = match key {
            "load" => (1..=memory.unwrap_or(workers).min(workers)).collect(),
            "clusters" => divisors(workers),
            "wait_for" => {
                if !partial || grid.iter().any(|a| a.key == "scheme.deadline") {
                    continue;
                }
                (workers.div_ceil(2)..workers).collect()
            }
            _ => (1..=workers).collect(),
        };
        if values.is_empty() {
            continue;
        }
        axes.push(Axis {
            key: full,
            values: values.iter().map(ToString::to_string).collect(),
        });
    }
    axes
}

/// Whether `combo` has more clusters per worker than clusters, from the
/// default search (`--grid` does not give `scheme.clusters_per_worker`):
/// such a combination is no variant (a worker can join at most every
/// cluster), so it is not run or listed.
fn beyond_clusters(combo: &[(String, String)], grid: &[Axis]) -> bool {
    if grid.iter().any(|a| a.key == "scheme.clusters_per_worker") {
        return false;
    }
    let value = |key: &str| {
        combo
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.parse::<usize>().ok())
    };
    matches!(
        (value("scheme.clusters_per_worker"), value("scheme.clusters")),
        (Some(n), Some(p)) if n > p
    )
}

/// `--replay`'s error: the flag, then the reader's message.
fn replay_error(e: impl std::fmt::Display) -> InputError {
    InputError::new("--replay", e)
}

/// Fit the first `workers` columns of the replay CSV `path`.
fn fit_replay(path: &std::path::Path, workers: usize) -> Result<ModelSource, InputError> {
    let table = TraceTable::load(path).map_err(replay_error)?;
    let columns = table.select_columns(None, workers).map_err(replay_error)?;
    let series: Vec<Vec<Value>> = columns
        .iter()
        .map(|&c| {
            (0..table.rows())
                .map(|r| (table.value(r, c), false))
                .collect()
        })
        .collect();
    fit_series(&series, workers, "replay", "--replay", path)
}

/// Fit the times of the first `workers` workers of the training trace `path`.
fn fit_trace(path: &std::path::Path, workers: usize) -> Result<ModelSource, InputError> {
    let measured = super::measured::read(path, "--trace")?;
    if measured.series.len() < workers {
        return Err(InputError::new(
            "--trace",
            format!(
                "{}: has {} workers, fewer than workers = {workers}",
                path.display(),
                measured.series.len()
            ),
        ));
    }
    let mut source = fit_series(
        &measured.series[..workers],
        workers,
        "trace",
        "--trace",
        path,
    )?;
    source.censored = Some(measured.censored);
    Ok(source)
}

/// Fit `series` (one vector per worker) and the `[straggler]` overrides of
/// the chosen fit; errors name `flag`.
fn fit_series(
    series: &[Vec<Value>],
    workers: usize,
    source: &'static str,
    flag: &str,
    path: &std::path::Path,
) -> Result<ModelSource, InputError> {
    let fits = fit::fit_all(series)
        .map_err(|e| InputError::new(flag, format!("{}: {e}", path.display())))?;
    let intervals = fit_interval::fit_intervals(series, 0);
    let (model, set) = match fits.chosen {
        FittedModel::ShiftedExponential => (
            "shifted-exponential",
            BTreeMap::from([
                ("alpha".to_string(), fits.pooled.alpha),
                ("mu".to_string(), fits.pooled.mu),
            ]),
        ),
        FittedModel::TwoState => {
            let t = &fits.two_state;
            (
                "gilbert-elliott",
                BTreeMap::from([
                    ("alpha".to_string(), t.alpha),
                    ("mu_fast".to_string(), t.mu_fast),
                    ("mu_slow".to_string(), t.mu_slow),
                    ("switch_probability".to_string(), t.switch_probability),
                    (
                        "initial_stragglers".to_string(),
                        (t.slow_fraction * workers as f64).round(),
                    ),
                ]),
            )
        }
    };
    Ok(ModelSource {
        source,
        file: Some(path.display().to_string()),
        model: model.to_string(),
        set,
        fits: Some(fits),
        intervals,
        sensitivity: Vec::new(),
        censored: None,
    })
}

/// The interval of the simulated `[straggler]` key `key`, if it has one.
fn interval_of(intervals: &FitIntervals, model: &str, key: &str) -> Option<Interval> {
    match (model, key) {
        (_, "alpha") => Some(intervals.alpha),
        ("shifted-exponential", "mu") => Some(intervals.mu),
        (_, "mu_fast") => Some(intervals.mu_fast),
        (_, "mu_slow") => Some(intervals.mu_slow),
        (_, "switch_probability") => Some(intervals.switch_probability),
        _ => None,
    }
}

/// The best of the `leading` candidates when the fitted model's parameters
/// move, one at a time, to each end of their intervals (kept valid: a time
/// or rate above 0, a probability in [0, 1]), on the same samples.
fn sensitivity(
    plain: &ConfigArgs,
    model: &ModelSource,
    leading: &[Candidate],
    objective: Objective,
) -> anyhow::Result<Vec<Sensitivity>> {
    let Some(intervals) = &model.intervals else {
        return Ok(Vec::new());
    };
    let label = |scheme: &str, settings: &BTreeMap<String, String>| {
        format!("{scheme} {}", sweep::describe(settings))
            .trim()
            .to_string()
    };
    let advice = label(&leading[0].scheme, &leading[0].settings);
    let mut out = Vec::new();
    for (key, fitted) in &model.set {
        let Some(interval) = interval_of(intervals, &model.model, key) else {
            continue;
        };
        for end in [interval.low, interval.high] {
            let value = match key.as_str() {
                "switch_probability" => end.clamp(0.0, 1.0),
                "alpha" => end.max(0.0),
                _ => end.max(fitted * 1e-3),
            };
            let mut moved = ModelSource {
                set: model.set.clone(),
                ..ModelSource::config_default(&model.model)
            };
            moved.source = model.source;
            moved.set.insert(key.clone(), value);
            let mut base = plain.clone();
            base.overrides.extend(model_overrides(&moved));
            let mut runner = VariantRunner::new(&base);
            let mut best: Option<(f64, String)> = None;
            for c in leading {
                let combo: Vec<(String, String)> = c.settings.clone().into_iter().collect();
                let Outcome::Ran { report, .. } = runner.run(&combo, &c.scheme, |_| Ok(()))? else {
                    continue;
                };
                let s = &report.schemes[0];
                let trials = match objective {
                    Objective::P99 => &s.trial_p99,
                    _ => &s.trial_means,
                };
                let score = trials.iter().sum::<f64>() / trials.len() as f64;
                if best.as_ref().is_none_or(|b| score < b.0) {
                    best = Some((score, label(&c.scheme, &c.settings)));
                }
            }
            if let Some((_, best)) = best {
                out.push(Sensitivity {
                    parameter: key.clone(),
                    value,
                    same: best == advice,
                    best,
                });
            }
        }
    }
    Ok(out)
}

impl ModelSource {
    /// The config's own model `model`, nothing fitted.
    fn config_default(model: &str) -> Self {
        Self {
            source: "config",
            file: None,
            model: model.to_string(),
            set: BTreeMap::new(),
            fits: None,
            intervals: None,
            sensitivity: Vec::new(),
            censored: None,
        }
    }
}

/// The `--set` lines of a fitted model.
fn model_overrides(m: &ModelSource) -> Vec<String> {
    if m.source == "config" {
        return Vec::new();
    }
    let mut out = vec![format!("straggler.model=\"{}\"", m.model)];
    for (k, v) in &m.set {
        if k == "initial_stragglers" {
            out.push(format!("straggler.{k}={}", *v as u64));
        } else {
            out.push(format!("straggler.{k}={v:?}"));
        }
    }
    out
}

pub(super) fn run(args: &ConfigArgs, flags: &AdviseFlags) -> anyhow::Result<()> {
    // Every input error before any work.
    let grid = sweep::parse_grid(&flags.grid)?;
    let mut base = sweep::with_run_length(args, flags.trials, flags.iterations);
    let loaded = super::load(&base)?.loaded;
    let config = &loaded.config;
    if config.simulate.trials < 2 {
        let field = if flags.trials.is_some() {
            "--trials"
        } else {
            "simulate.trials"
        };
        return Err(InputError::value(
            field,
            config.simulate.trials,
            "must be at least 2: advise compares candidates by confidence intervals over trials",
        )
        .into());
    }
    let k = config.workers;
    match (flags.objective, flags.target_loss) {
        (Objective::TimeToLoss, Some(t)) if !t.is_finite() => {
            return Err(InputError::value("--target-loss", t, "must be a finite number").into());
        }
        (Objective::TimeToLoss, None) if config.train.iterations < 2 => {
            return Err(InputError::value(
                "train.iterations",
                config.train.iterations,
                "must be at least 2 for the default --target-loss (the loss of full-batch descent at half of them)",
            )
            .into());
        }
        (Objective::Mean | Objective::P99, Some(_)) => {
            return Err(InputError::new(
                "--target-loss",
                "is read only with --objective time-to-loss",
            )
            .into());
        }
        _ => {}
    }
    if let Some(f) = flags.min_recovered {
        if !(f > 0.0 && f <= 1.0) {
            return Err(InputError::value("--min-recovered", f, "must be in (0, 1]").into());
        }
    }
    // The candidates: --schemes, or every registered scheme (those whose
    // decode is partial only with --min-recovered: ranked on time alone
    // they would look faster for what they lose).
    let every_scheme = flags.schemes.is_none();
    let partial_admitted = !every_scheme || flags.min_recovered.is_some();
    let partial_rule = |every_scheme: bool| -> Option<String> {
        if every_scheme && flags.min_recovered.is_none() {
            return Some(
                "decodes part of the gradient: a candidate only when named in --schemes or with --min-recovered"
                    .to_string(),
            );
        }
        if flags.objective != Objective::TimeToLoss && flags.min_recovered.is_none() {
            return Some(
                "decodes part of the gradient: ranked by time only with --min-recovered F, the share it must \
                 recover (or by --objective time-to-loss, which counts what it loses)"
                    .to_string(),
            );
        }
        None
    };
    let schemes: Vec<String> = match &flags.schemes {
        Some(list) => list.split(',').map(|s| s.trim().to_string()).collect(),
        None => crate::coding::SCHEMES
            .names()
            .into_iter()
            .map(str::to_string)
            .collect(),
    };
    let mut entries = Vec::with_capacity(schemes.len());
    for s in &schemes {
        entries.push(crate::coding::SCHEMES.get(s).ok_or_else(|| {
            InputError::value(
                "--schemes",
                s,
                format!(
                    "is not a scheme (one of {})",
                    crate::coding::SCHEMES.names().join(", ")
                ),
            )
        })?);
    }
    let straggler = match (&flags.replay, &flags.trace) {
        (Some(path), _) => fit_replay(path, k)?,
        (None, Some(path)) => fit_trace(path, k)?,
        (None, None) => ModelSource::config_default(config.straggler.model.name()),
    };
    let plain = base.clone();
    base.overrides.extend(model_overrides(&straggler));
    // The fitted model must make a valid config (it does for every fit; an
    // error here names the key).
    super::load(&base)?;
    let target = match flags.objective {
        Objective::TimeToLoss => Some(loss_target(config, flags.target_loss)?),
        Objective::Mean | Objective::P99 => None,
    };

    // The budget: --memory-partitions; else, unless --grid chooses the
    // loads, the most the config's experiment stores on a worker (its
    // scheme and the schemes simulate.compare compares): an unlimited one
    // ranks full replication first.
    let memory = match flags.memory_partitions {
        Some(m) => Some(m),
        None if grid.iter().any(|a| a.key == "scheme.load") => None,
        None => Some(experiment_memory(&base, config)?),
    };
    let over_budget = |stored: usize| match (memory, flags.memory_partitions) {
        (Some(m), Some(_)) if stored > m => Some(format!(
            "stores {stored} partitions on a worker, more than --memory-partitions {m}"
        )),
        (Some(m), None) if stored > m => Some(format!(
            "stores {stored} partitions on a worker, more than the {m} the config's schemes \
             store at most (--memory-partitions sets another budget)"
        )),
        _ => None,
    };
    let mut runner = VariantRunner::new(&base);
    let mut ran: Vec<Ran> = Vec::new();
    let mut skipped = Vec::new();
    for entry in entries {
        // A scheme with a wait policy (ignore-stragglers, is-gc) always
        // decodes part of the gradient: said once, not per variant.
        if !partial_admitted && entry.declares("wait_for") {
            if let Some(reason) = partial_rule(every_scheme) {
                skipped.push(Skipped {
                    scheme: entry.name().to_string(),
                    settings: BTreeMap::new(),
                    reason,
                    variants: 1,
                });
                continue;
            }
        }
        let axes = axes_for(entry, &grid, k, memory, partial_admitted);
        for combo in sweep::combinations(&axes) {
            if beyond_clusters(&combo, &grid) {
                continue;
            }
            let outcome = runner.run(&combo, entry.name(), |setup| {
                if let Some(reason) = over_budget(max_stored(setup)) {
                    return Err(reason);
                }
                if let Some(why) = setup.scheme.degenerate() {
                    return Err(format!("degenerate: {why}"));
                }
                if setup.scheme.partial_recovery() {
                    if let Some(reason) = partial_rule(every_scheme) {
                        return Err(reason);
                    }
                }
                Ok(())
            })?;
            match outcome {
                Outcome::Ran {
                    settings,
                    setup,
                    report,
                    ..
                } => {
                    let recovered = report.schemes[0].recovered_fraction;
                    if let Some(f) = flags.min_recovered.filter(|&f| recovered < f) {
                        skipped.push(Skipped {
                            scheme: entry.name().to_string(),
                            settings,
                            reason: format!(
                                "recovers {recovered:.4} of the partitions per iteration on average, \
                                 less than --min-recovered {f}"
                            ),
                            variants: 1,
                        });
                        continue;
                    }
                    let stored = max_stored(&setup);
                    let crate::setup::Setup { loaded, scheme, .. } = *setup;
                    let to_loss = match &target {
                        None => Vec::new(),
                        Some(t) => match to_loss::time_to_loss(&loaded.config, scheme, t.loss) {
                            Ok(trials) => trials,
                            Err(LossRunError::Engine(e)) => {
                                skipped.push(Skipped {
                                    scheme: entry.name().to_string(),
                                    settings,
                                    reason: format!("training to the target loss failed: {e}"),
                                    variants: 1,
                                });
                                continue;
                            }
                            Err(LossRunError::Input(e)) => return Err(e.into()),
                        },
                    };
                    ran.push(Ran {
                        scheme: entry.name().to_string(),
                        settings,
                        stored,
                        report,
                        to_loss,
                    });
                }
                Outcome::Skipped(s) => skipped.push(s),
            }
        }
    }
    if ran.is_empty() {
        // The first reason, so that the one line says why.
        let example = skipped.first().map_or(String::new(), |s| {
            let settings = sweep::describe(&s.settings);
            let space = if settings.is_empty() { "" } else { " " };
            format!("; {}{space}{settings}: {}", s.scheme, s.reason)
        });
        let rule = match memory {
            Some(m) => format!(
                "leaves no candidate that runs (the budget is {m} partitions per worker){example}"
            ),
            None => format!("leaves no candidate that runs{example}"),
        };
        return Err(InputError::new(
            if flags.memory_partitions.is_some() {
                "--memory-partitions"
            } else {
                "--schemes"
            },
            rule,
        )
        .into());
    }
    let ranking = rank(ran, flags.objective);
    let skipped = sweep::merge_skipped(skipped);
    let mut straggler = straggler;
    if flags.objective != Objective::TimeToLoss {
        let leading = &ranking[..ranking.len().min(SENSITIVITY_CANDIDATES)];
        straggler.sensitivity = sensitivity(&plain, &straggler, leading, flags.objective)?;
    }
    let report = AdviseReport {
        origin: loaded.origin.clone(),
        model_time_unit_s: super::units::emulated_unit_s(config),
        workers: k,
        seed: config.seed,
        trials: config.simulate.trials,
        iterations: config.simulate.iterations,
        objective: flags.objective,
        target,
        memory_partitions: memory,
        min_recovered: flags.min_recovered,
        straggler,
        ranking,
        skipped,
    };
    if args.json {
        crate::outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_text(&report);
    }
    Ok(())
}

/// The most partitions a worker stores in the config's experiment: its
/// scheme and each scheme `simulate.compare` compares (with a variant's keys).
fn experiment_memory(
    base: &ConfigArgs,
    config: &crate::config::Config,
) -> Result<usize, InputError> {
    use crate::config::CompareEntry;
    let mut most = max_stored(&super::load(base)?);
    for entry in config.compared() {
        let mut overrides = base.overrides.clone();
        overrides.push(format!("scheme.kind=\"{}\"", entry.kind()));
        if let CompareEntry::Variant(v) = &entry {
            overrides.extend(v.set.iter().map(|(k, value)| format!("scheme.{k}={value}")));
        }
        let setup = crate::setup::load(base.config.as_deref(), &overrides)?;
        most = most.max(max_stored(&setup));
    }
    Ok(most)
}

/// The most partitions a worker of the setup's scheme stores.
fn max_stored(setup: &crate::setup::Setup) -> usize {
    let s = &setup.scheme;
    (0..s.workers())
        .map(|w| s.stored(w).len())
        .max()
        .unwrap_or(0)
}

/// The target of `--objective time-to-loss`: `--target-loss`, or the
/// default of [`to_loss::default_target`] on the base config's data.
fn loss_target(config: &crate::config::Config, given: Option<f64>) -> anyhow::Result<LossTarget> {
    let iterations = config.train.iterations;
    if let Some(loss) = given {
        return Ok(LossTarget {
            loss,
            source: "--target-loss".to_string(),
            iterations,
        });
    }
    let losses = to_loss::exact_losses(config).map_err(|e| match e {
        LossRunError::Input(e) => anyhow::Error::from(e),
        LossRunError::Engine(e) => anyhow::anyhow!(
            "the default --target-loss: full-batch descent on the config's data failed: {e}"
        ),
    })?;
    let loss = to_loss::default_target(&losses)
        .ok_or_else(|| InputError::value("train.iterations", iterations, "must be at least 2"))?;
    Ok(LossTarget {
        loss,
        source: format!("full-batch descent at iteration {}", iterations / 2),
        iterations,
    })
}

/// A candidate that ran: its scheme and settings, the most partitions a
/// worker stores, its simulation, and (time-to-loss) how each trial
/// reached the target.
struct Ran {
    scheme: String,
    settings: BTreeMap<String, String>,
    stored: usize,
    report: crate::sim::SimReport,
    to_loss: Vec<TrialToLoss>,
}

impl Ran {
    /// Per trial, the objective (infinite: the target loss not reached).
    fn per_trial(&self, objective: Objective) -> Vec<f64> {
        let s = &self.report.schemes[0];
        match objective {
            Objective::Mean => s.trial_means.clone(),
            Objective::P99 => s.trial_p99.clone(),
            Objective::TimeToLoss => self
                .to_loss
                .iter()
                .map(|t| t.time.unwrap_or(f64::INFINITY))
                .collect(),
        }
    }
}

/// Trials that missed the objective, and the mean over the others: the
/// ranking key (fewest misses, then the smallest mean).
fn ranking_key(per_trial: &[f64]) -> (usize, f64) {
    let reached: Vec<f64> = per_trial
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .collect();
    let mean = reached.iter().sum::<f64>() / reached.len() as f64;
    (per_trial.len() - reached.len(), mean)
}

/// Rank the candidates by the mean over trials of the objective (those
/// that missed a time-to-loss target in some trial after those that never
/// did, fewest misses first), and compare each with the best on the paired
/// per-trial differences (undefined, NaN, where either missed a trial).
fn rank(ran: Vec<Ran>, objective: Objective) -> Vec<Candidate> {
    let mut scored: Vec<((usize, f64), Vec<f64>, Ran)> = ran
        .into_iter()
        .map(|r| {
            let values = r.per_trial(objective);
            (ranking_key(&values), values, r)
        })
        .collect();
    scored.sort_by(|(a, ..), (b, ..)| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    // Variants whose every trial gives the same numbers (load-1 variants of
    // every scheme are uncoded) are one row: the one storing least, with
    // the others as its aliases.
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    // (ranking key, per-trial values, the representative, its aliases)
    type Merged = ((usize, f64), Vec<f64>, Ran, Vec<String>);
    let mut merged: Vec<Merged> = Vec::new();
    for (key, values, r) in scored {
        let alias = |r: &Ran| {
            format!("{} {}", r.scheme, sweep::describe(&r.settings))
                .trim()
                .to_string()
        };
        if let Some(m) = merged.iter_mut().find(|m| {
            bits(&m.1) == bits(&values)
                && m.2.report.schemes[0].recovered_fraction.to_bits()
                    == r.report.schemes[0].recovered_fraction.to_bits()
        }) {
            if r.stored < m.2.stored {
                let old = std::mem::replace(&mut m.2, r);
                m.3.push(alias(&old));
            } else {
                m.3.push(alias(&r));
            }
            continue;
        }
        merged.push((key, values, r, Vec::new()));
    }
    let best = merged[0].1.clone();
    let complete = |v: &[f64]| v.iter().all(|x| x.is_finite());
    merged
        .into_iter()
        .enumerate()
        .map(|(i, (_, values, r, aliases))| {
            let (mean, ci) = if complete(&values) {
                mean_ci95(&values)
            } else {
                (f64::NAN, f64::NAN)
            };
            let (difference, difference_ci95) = if i == 0 {
                (0.0, 0.0)
            } else if complete(&values) && complete(&best) {
                let diffs: Vec<f64> = values.iter().zip(&best).map(|(x, b)| x - b).collect();
                mean_ci95(&diffs)
            } else {
                (f64::NAN, f64::NAN)
            };
            let (reached_trials, iterations_to_target) = match objective {
                Objective::TimeToLoss => {
                    let its: Vec<f64> = r
                        .to_loss
                        .iter()
                        .filter_map(|t| t.iterations.map(|n| n as f64))
                        .collect();
                    let mean = its.iter().sum::<f64>() / its.len() as f64;
                    (Some(its.len()), Some(mean))
                }
                Objective::Mean | Objective::P99 => (None, None),
            };
            let s = &r.report.schemes[0];
            Candidate {
                rank: i + 1,
                scheme: r.scheme,
                settings: r.settings,
                stored_partitions: r.stored,
                objective: mean,
                ci95: ci,
                difference,
                difference_ci95,
                indistinguishable_from_best: difference - difference_ci95 <= 0.0,
                mean_iteration_time: s.mean_iteration_time,
                p99: s.p99,
                recovered_fraction: s.recovered_fraction,
                messages_per_iteration: s.messages_per_iteration,
                reached_trials,
                iterations_to_target,
                aliases,
            }
        })
        .collect()
}

fn print_text(r: &AdviseReport) {
    crate::outln!(
        "gradcode advise: {} (K = {}, {} trials x {} iterations, seed {}; common random numbers)",
        r.origin,
        r.workers,
        r.trials,
        r.iterations,
        r.seed
    );
    let m = &r.straggler;
    match &m.fits {
        None => crate::outln!("straggler model: {} (from the config)", m.model),
        Some(f) => {
            crate::outln!(
                "straggler model: fitted to {} ({} values; KS = Kolmogorov-Smirnov distance, 5% critical: {:.4} per worker, {:.4} pooled)",
                m.file.as_deref().unwrap_or("?"),
                f.pooled.samples,
                fit::ks_critical_5(f.per_worker[0].samples),
                f.ks_critical
            );
            crate::outln!(
                "  {:>8}  {:>10}  {:>10}  {:>7}",
                "worker",
                "alpha",
                "mu",
                "KS"
            );
            for (w, p) in f.per_worker.iter().enumerate() {
                crate::outln!(
                    "  {:>8}  {:>10.4}  {:>10.4}  {:>7.4}",
                    w + 1,
                    p.alpha,
                    p.mu,
                    p.ks
                );
            }
            crate::outln!(
                "  {:>8}  {:>10.4}  {:>10.4}  {:>7.4}  shifted exponential",
                "pooled",
                f.pooled.alpha,
                f.pooled.mu,
                f.pooled.ks
            );
            let t = &f.two_state;
            crate::outln!(
                "  two-state: threshold {:.4}, alpha {:.4}, mu_fast {:.4}, mu_slow {:.4}, switch probability {:.4}, slow {:.1}%, KS {:.4}",
                t.threshold,
                t.alpha,
                t.mu_fast,
                t.mu_slow,
                t.switch_probability,
                100.0 * t.slow_fraction,
                t.ks
            );
            let set: Vec<String> = m
                .set
                .iter()
                .map(|(k, v)| {
                    match m
                        .intervals
                        .as_ref()
                        .and_then(|i| interval_of(i, &m.model, k))
                    {
                        Some(i) => format!("{k} = {v:.6} [95%: {:.6}, {:.6}]", i.low, i.high),
                        None => format!("{k} = {v:.6}"),
                    }
                })
                .collect();
            crate::outln!("  simulated: {} ({})", m.model, set.join(", "));
            if let Some(i) = &m.intervals {
                crate::outln!(
                    "  intervals: block bootstrap ({} replicates, blocks of {} rounds)",
                    i.replicates,
                    i.block_rounds
                );
            }
            if let Some(c) = m.censored.filter(|c| *c > 0) {
                crate::outln!(
                    "  note: {c} worker-iterations had no result in time; their value is the iteration's end, a lower bound, fitted as censored"
                );
            }
        }
    }
    let what = match (r.objective, &r.target) {
        (Objective::Mean, _) => "mean iteration time (model time units)".to_string(),
        (Objective::P99, _) => {
            "p99 iteration time (model time units, mean over trials)".to_string()
        }
        (Objective::TimeToLoss, Some(t)) => format!(
            "model time to training loss {:.6e} ({}), training {} iterations per trial",
            t.loss, t.source, t.iterations
        ),
        (Objective::TimeToLoss, None) => "model time to the training loss".to_string(),
    };
    let budget = match r.memory_partitions {
        Some(mp) => format!("memory budget: {mp} partitions per worker"),
        None => "no memory budget".to_string(),
    };
    match r.min_recovered {
        Some(f) => crate::outln!(
            "objective: {what}; {budget}; partial-recovery candidates recover at least {f} of the partitions per iteration"
        ),
        None => crate::outln!("objective: {what}; {budget}"),
    }
    if let Some(u) = r.model_time_unit_s {
        crate::outln!(
            "{}",
            super::units::unit_note(Some(u))
                .trim()
                .trim_matches(['(', ')'])
        );
    }
    let width = r
        .ranking
        .iter()
        .map(|c| sweep::describe(&c.settings).len())
        .max()
        .unwrap_or(0)
        .max(8);
    crate::outln!(
        "\n{:>4}  {:<18}  {:<width$}  {:>6}  {:>9}  {:>8}  {:>20}  {:>22}",
        "rank",
        "scheme",
        "settings",
        "stored",
        "recovered",
        "msgs/it",
        "objective ± ci95",
        "vs best (paired ci95)"
    );
    for c in &r.ranking {
        let missed = c.reached_trials.filter(|&n| n < r.trials);
        let versus = if let Some(n) = missed {
            format!("reached in {n} of {} trials", r.trials)
        } else if c.rank == 1 {
            "best".to_string()
        } else {
            format!(
                "+{:.4} ± {:.4}{}",
                c.difference,
                c.difference_ci95,
                if c.indistinguishable_from_best {
                    " ~"
                } else {
                    ""
                }
            )
        };
        let objective = if missed.is_some() {
            format!("{:>20}", "-")
        } else {
            format!("{:>9.4} ± {:<8.4}", c.objective, c.ci95)
        };
        crate::outln!(
            "{:>4}  {:<18}  {:<width$}  {:>6}  {:>9.4}  {:>8.2}  {objective}  {:>22}",
            c.rank,
            c.scheme,
            sweep::describe(&c.settings),
            c.stored_partitions,
            c.recovered_fraction,
            c.messages_per_iteration,
            versus
        );
        if !c.aliases.is_empty() {
            crate::outln!("{:>4}  same in every trial: {}", "", c.aliases.join("; "));
        }
    }
    let best = &r.ranking[0];
    if best.reached_trials.is_some_and(|n| n < r.trials) {
        crate::outln!(
            "\nno candidate reaches the target loss in every trial: raise train.iterations or --target-loss"
        );
        return;
    }
    let seconds = r.model_time_unit_s.map_or(String::new(), |u| {
        format!(
            "; objective {:.4} units = {:.4} s",
            best.objective,
            best.objective * u
        )
    });
    crate::outln!(
        "\nadvice: {} {} ({} partitions per worker{seconds})",
        best.scheme,
        sweep::describe(&best.settings),
        best.stored_partitions
    );
    let s = &r.straggler.sensitivity;
    if !s.is_empty() {
        let changed: Vec<String> = s
            .iter()
            .filter(|x| !x.same)
            .map(|x| format!("{} = {:.6}: {}", x.parameter, x.value, x.best))
            .collect();
        if changed.is_empty() {
            crate::outln!(
                "within the fitted parameters' 95% intervals (each end, one at a time) the advice stays the best of the leading {} candidates",
                SENSITIVITY_CANDIDATES.min(r.ranking.len())
            );
        } else {
            crate::outln!(
                "the advice changes within the fitted parameters' 95% intervals: {}",
                changed.join("; ")
            );
        }
    }
    let ties: Vec<String> = r.ranking[1..]
        .iter()
        .filter(|c| c.indistinguishable_from_best)
        .map(|c| format!("{} {}", c.scheme, sweep::describe(&c.settings)))
        .collect();
    if ties.is_empty() {
        crate::outln!(
            "every other candidate is slower than it (the paired 95% interval of the difference excludes 0)"
        );
    } else {
        crate::outln!(
            "cannot be told apart from it (~: the paired 95% interval of the difference contains 0; more --trials may separate them): {}",
            ties.join("; ")
        );
    }
    if !r.skipped.is_empty() {
        let variants: usize = r.skipped.iter().map(|s| s.variants).sum();
        crate::outln!(
            "skipped: {variants} variants for {} reasons (invalid, degenerate, over the memory budget, \
             partial recovery not admitted, or repeating another; --json lists each reason once)",
            r.skipped.len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_that_miss_a_trial_rank_after_those_that_never_do() {
        let always = ranking_key(&[3.0, 5.0]);
        let once_missed = ranking_key(&[0.5, f64::INFINITY]);
        let never = ranking_key(&[f64::INFINITY, f64::INFINITY]);
        assert_eq!(always, (0, 4.0));
        assert_eq!(once_missed, (1, 0.5));
        assert_eq!(never.0, 2);
        assert!(always < once_missed && once_missed.0 < never.0);
    }

    #[test]
    fn divisors_of_twenty() {
        assert_eq!(divisors(20), [1, 2, 4, 5, 10, 20]);
        assert_eq!(divisors(1), [1]);
    }

    #[test]
    fn axes_search_only_the_keys_a_scheme_reads() {
        let gc_sc = crate::coding::SCHEMES.get("gc-sc").unwrap();
        let uncoded = crate::coding::SCHEMES.get("uncoded").unwrap();
        let grid = [
            sweep::parse_axis("scheme.clusters=2,4").unwrap(),
            sweep::parse_axis("scheme.wait_for=3").unwrap(),
        ];
        let axes = axes_for(gc_sc, &grid, 12, Some(3), true);
        let keys: Vec<&str> = axes.iter().map(|a| a.key.as_str()).collect();
        // wait_for is not a gc-sc key; clusters comes from --grid; load
        // from the default range capped by the budget.
        assert_eq!(keys, ["scheme.clusters", "scheme.load"]);
        assert_eq!(axes[0].values, ["2", "4"]);
        assert_eq!(axes[1].values, ["1", "2", "3"]);
        assert!(axes_for(uncoded, &[], 12, None, true).is_empty());
    }

    #[test]
    fn wait_for_is_searched_only_where_partial_candidates_are_admitted() {
        let is_gc = crate::coding::SCHEMES.get("is-gc").unwrap();
        let keys = |axes: &[Axis]| axes.iter().map(|a| a.key.clone()).collect::<Vec<_>>();
        let admitted = axes_for(is_gc, &[], 8, Some(2), true);
        let wait_for = admitted
            .iter()
            .find(|a| a.key == "scheme.wait_for")
            .unwrap();
        assert_eq!(wait_for.values, ["4", "5", "6", "7"]);
        assert!(
            !keys(&axes_for(is_gc, &[], 8, Some(2), false)).contains(&"scheme.wait_for".into())
        );
        // A deadline on the grid is the wait policy the user chose.
        let deadline = [sweep::parse_axis("scheme.deadline=1.5").unwrap()];
        assert!(
            !keys(&axes_for(is_gc, &deadline, 8, Some(2), true))
                .contains(&"scheme.wait_for".into())
        );
    }

    #[test]
    fn fitted_models_become_straggler_overrides() {
        let m = ModelSource {
            source: "replay",
            file: None,
            model: "gilbert-elliott".into(),
            set: BTreeMap::from([
                ("alpha".to_string(), 0.01),
                ("initial_stragglers".to_string(), 10.0),
            ]),
            fits: None,
            intervals: None,
            sensitivity: Vec::new(),
            censored: None,
        };
        assert_eq!(
            model_overrides(&m),
            [
                "straggler.model=\"gilbert-elliott\"",
                "straggler.alpha=0.01",
                "straggler.initial_stragglers=10"
            ]
        );
    }
}
