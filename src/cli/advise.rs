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
//!    the per-worker times of a training trace ([`crate::trace::measured`])
//!    ([`crate::straggler::fit`]: per-worker and pooled shifted-exponential
//!    fits and a two-state slow/fast fit, each with its Kolmogorov-Smirnov
//!    distance; the chosen fit replaces `[straggler]`). A trace of a
//!    measured run that records its workers' compute and transfers
//!    (issue 26, item 2) is fitted on the compute times, and its transfers
//!    give a `[network]` ([`crate::trace::fit::network`]) whose fitted
//!    keys replace the config's: the candidates are simulated with both.
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
//!
//! The search, the variants, the ranking and the fits are [`crate::study`]'s
//! (`search`, `variant`, `rank`, `model`, `sensitivity`), the models fitted
//! to a trace (or a replay CSV, or the config's) and the config they make
//! [`crate::trace::fit`]'s; this file checks the flags, calls them and
//! prints.

use std::path::PathBuf;

use clap::Args;
use serde::Serialize;

use super::ConfigArgs;
use crate::error::InputError;
use crate::straggler::fit;
use crate::study::advise::{
    LossTarget, Rules, Search, SearchError, loss_target, memory_budget, no_candidate,
    scheme_entries,
};
use crate::study::model::{ModelSource, interval_of};
use crate::study::{self, Candidate, SENSITIVITY_CANDIDATES, Skipped, VariantRunner, describe};
use crate::trace::fit::{NetworkSource, fit_models, fitted_base};

/// What `advise` ranks by (`--objective`; [`study::Objective`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Objective {
    /// Mean iteration time.
    #[default]
    Mean,
    /// 99th percentile of the iteration times of a trial, averaged over trials.
    P99,
    /// Model time until the training loss reaches `--target-loss`.
    TimeToLoss,
}

/// The flags of `advise`.
#[derive(Debug, Args)]
pub struct AdviseArgs {
    #[command(flatten)]
    pub args: ConfigArgs,
    /// Fit the straggler model to this replay CSV (rows = rounds, one
    /// column per worker, the model time of one partition computation).
    #[arg(long, value_name = "FILE.csv", conflicts_with = "trace")]
    pub replay: Option<PathBuf>,
    /// Fit the straggler model to the per-worker times measured in this
    /// training trace (`/worker/finish_s` / scheme.load).
    #[arg(long, value_name = "F.h5")]
    pub trace: Option<PathBuf>,
    /// Keep only schemes that store at most M partitions on every worker.
    #[arg(
        long,
        value_name = "M",
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..)
    )]
    pub memory_partitions: Option<usize>,
    /// What to rank by.
    #[arg(long, value_enum, default_value_t = Objective::Mean)]
    pub objective: Objective,
    /// The training loss of `--objective time-to-loss` (default: what
    /// full-batch descent records at iteration train.iterations / 2).
    #[arg(long, value_name = "LOSS", allow_negative_numbers = true)]
    pub target_loss: Option<f64>,
    /// The schemes to consider, comma separated (default: every
    /// registered scheme; those that decode part of the gradient only
    /// with --min-recovered).
    #[arg(long, value_name = "S1,S2,...")]
    pub schemes: Option<String>,
    /// Partial-recovery candidates (ignore-stragglers, is-gc, a gc-dc
    /// deadline) must recover at least this share of the partitions per
    /// iteration, on average (in (0, 1]); needed to rank them by time.
    #[arg(long, value_name = "F")]
    pub min_recovered: Option<f64>,
    /// Values of a key instead of the default search (repeatable, as in sweep).
    #[arg(long, value_name = "KEY=V1,V2,...")]
    pub grid: Vec<String>,
    /// Independent trials per candidate (overrides simulate.trials; at least 2).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(2..))]
    pub trials: Option<u64>,
    /// Iterations per trial (overrides simulate.iterations).
    #[arg(long, value_name = "T", value_parser = clap::value_parser!(u64).range(1..))]
    pub iterations: Option<u64>,
}

impl From<Objective> for study::Objective {
    fn from(o: Objective) -> Self {
        match o {
            Objective::Mean => study::Objective::Mean,
            Objective::P99 => study::Objective::P99,
            Objective::TimeToLoss => study::Objective::TimeToLoss,
        }
    }
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
    objective: study::Objective,
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<LossTarget>,
    memory_partitions: Option<usize>,
    /// `--min-recovered`: the share of the partitions a partial-recovery
    /// candidate must recover per iteration, on average.
    #[serde(skip_serializing_if = "Option::is_none")]
    min_recovered: Option<f64>,
    straggler: ModelSource,
    /// The `[network]` the candidates are simulated with (issue 26, item 2).
    network: NetworkSource,
    ranking: Vec<Candidate>,
    skipped: Vec<Skipped>,
}

pub(super) fn run(flags: &AdviseArgs) -> anyhow::Result<()> {
    let args = &flags.args;
    // Every input error before any work.
    let grid = study::parse_grid(&flags.grid)?;
    let base = args.with_run_length(flags.trials, flags.iterations);
    let loaded = super::load(&base)?.loaded;
    let config = &loaded.config;
    check_flags(flags, config)?;
    let k = config.workers;
    let entries = scheme_entries(flags.schemes.as_deref())?;
    let (straggler, network) = fit_models(flags.replay.as_deref(), flags.trace.as_deref(), config)?;
    let (plain, fitted) = fitted_base(
        base.config.as_deref(),
        &base.overrides,
        &straggler,
        &network,
    )?;
    let target = match flags.objective {
        Objective::TimeToLoss => {
            Some(loss_target(config, flags.target_loss).map_err(search_error)?)
        }
        Objective::Mean | Objective::P99 => None,
    };
    let memory = memory_budget(flags.memory_partitions, &grid, &fitted)?;
    // The fitted config's unit: a trace's, when its network was fitted.
    let model_time_unit_s = super::units::emulated_unit_s(&fitted.config);
    let objective = study::Objective::from(flags.objective);
    let rules = Rules {
        every_scheme: flags.schemes.is_none(),
        min_recovered: flags.min_recovered,
        objective,
        memory_given: flags.memory_partitions.is_some(),
    };
    let search = Search {
        rules,
        grid: &grid,
        workers: k,
        memory,
        target: target.as_ref(),
    };
    let (ran, skipped) = search
        .run(entries, VariantRunner::new(fitted))
        .map_err(search_error)?;
    if ran.is_empty() {
        return Err(no_candidate(&rules, memory, &skipped).into());
    }
    let ranking = study::rank(ran, objective);
    let skipped = study::merge_skipped(skipped);
    let mut straggler = straggler;
    if flags.objective != Objective::TimeToLoss {
        let leading = &ranking[..ranking.len().min(SENSITIVITY_CANDIDATES)];
        straggler.sensitivity = study::sensitivity(&plain, &straggler, leading, objective)?;
    }
    let report = AdviseReport {
        origin: loaded.origin.clone(),
        model_time_unit_s,
        workers: k,
        seed: config.seed,
        trials: config.simulate.trials,
        iterations: config.simulate.iterations,
        objective,
        target,
        memory_partitions: memory,
        min_recovered: flags.min_recovered,
        straggler,
        network,
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

/// The search's error as it was raised: an input error stays one (its
/// exit status is 2).
fn search_error(e: SearchError) -> anyhow::Error {
    match e {
        SearchError::Input(e) => e.into(),
        other => other.into(),
    }
}

/// The checks of the flags against each other and the loaded config:
/// at least 2 trials, `--target-loss` only with `--objective
/// time-to-loss` (and finite), `--min-recovered` in (0, 1].
fn check_flags(flags: &AdviseArgs, config: &crate::config::Config) -> Result<(), InputError> {
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
        ));
    }
    match (flags.objective, flags.target_loss) {
        (Objective::TimeToLoss, Some(t)) if !t.is_finite() => {
            return Err(InputError::value(
                "--target-loss",
                t,
                "must be a finite number",
            ));
        }
        (Objective::TimeToLoss, None) if config.train.iterations < 2 => {
            return Err(InputError::value(
                "train.iterations",
                config.train.iterations,
                "must be at least 2 for the default --target-loss (the loss of full-batch descent at half of them)",
            ));
        }
        (Objective::Mean | Objective::P99, Some(_)) => {
            return Err(InputError::new(
                "--target-loss",
                "is read only with --objective time-to-loss",
            ));
        }
        _ => {}
    }
    if let Some(f) = flags.min_recovered {
        if !(f > 0.0 && f <= 1.0) {
            return Err(InputError::value("--min-recovered", f, "must be in (0, 1]"));
        }
    }
    Ok(())
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
            print_fits(m, f);
            print_fitted_model(r);
        }
    }
    let trace = r.straggler.file.as_deref().unwrap_or("the trace");
    for line in network_lines(&r.network, trace) {
        crate::outln!("{line}");
    }
    print_objective(r);
    print_ranking(r);
    let best = &r.ranking[0];
    if best.reached_trials.is_some_and(|n| n < r.trials) {
        crate::outln!(
            "\nno candidate reaches the target loss in every trial: raise train.iterations or --target-loss"
        );
        return;
    }
    print_advice(r, best);
    if !r.skipped.is_empty() {
        let variants: usize = r.skipped.iter().map(|s| s.variants).sum();
        crate::outln!(
            "skipped: {variants} variants for {} reasons (invalid, degenerate, over the memory budget, \
             partial recovery not admitted, or repeating another; --json lists each reason once)",
            r.skipped.len()
        );
    }
}

/// The lines of the network of the candidates: its source, then the
/// section as TOML to paste.
fn network_lines(network: &NetworkSource, trace: &str) -> Vec<String> {
    let mut out = match (network.source, network.transfers, network.sizes) {
        ("trace", Some(t), Some(s)) => vec![format!(
            "network: fitted to {trace} ({t} transfers, {s} message size{}; lower decile per size, Theil-Sen line)",
            if s == 1 { "" } else { "s" }
        )],
        ("config", ..) => vec!["network: from the config".to_string()],
        _ => vec!["network: none (messages cost nothing)".to_string()],
    };
    for note in &network.notes {
        out.push(format!("  note: {note}"));
    }
    if let Some(n) = &network.network {
        out.push("  [network]".to_string());
        out.push(format!("  latency_s = {:.4e}", n.latency_s));
        if let Some(b) = n.worker_bandwidth_bytes_per_s {
            out.push(format!("  worker_bandwidth_bytes_per_s = {b:.4e}"));
        }
        if let Some(b) = n.master_bandwidth_bytes_per_s {
            out.push(format!("  master_bandwidth_bytes_per_s = {b:.4e}"));
        }
        out.push(format!("  master_link_shared = {}", n.master_link_shared));
    }
    out
}

/// The fits of the straggler model: per worker, pooled, two-state.
fn print_fits(m: &ModelSource, f: &fit::Fits) {
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
}

/// The fitted model the candidates are simulated with: its parameters
/// (with their intervals), how the intervals were drawn, the censored
/// values.
fn print_fitted_model(r: &AdviseReport) {
    let m = &r.straggler;
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
        let value = if r.network.source == "trace" {
            "the master's stop less the trace's fastest transfer, about a lower bound of the compute"
        } else {
            "the iteration's end, a lower bound"
        };
        crate::outln!(
            "  note: {c} worker-iterations had no result in time; their value is {value}, fitted as censored"
        );
    }
}

/// The objective line (with the budget and `--min-recovered`) and the
/// model time unit.
fn print_objective(r: &AdviseReport) {
    let what = match (r.objective, &r.target) {
        (study::Objective::Mean, _) => "mean iteration time (model time units)".to_string(),
        (study::Objective::P99, _) => {
            "p99 iteration time (model time units, mean over trials)".to_string()
        }
        (study::Objective::TimeToLoss, Some(t)) => format!(
            "model time to training loss {:.6e} ({}), training {} iterations per trial",
            t.loss, t.source, t.iterations
        ),
        (study::Objective::TimeToLoss, None) => "model time to the training loss".to_string(),
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
}

/// The table of the ranked candidates.
fn print_ranking(r: &AdviseReport) {
    let width = r
        .ranking
        .iter()
        .map(|c| describe(&c.settings).len())
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
            describe(&c.settings),
            c.stored_partitions,
            c.recovered_fraction,
            c.messages_per_iteration,
            versus
        );
        if !c.aliases.is_empty() {
            crate::outln!("{:>4}  same in every trial: {}", "", c.aliases.join("; "));
        }
    }
}

/// The advice: the best candidate, whether it stays the best within the
/// fitted intervals, and those that cannot be told apart from it.
fn print_advice(r: &AdviseReport, best: &Candidate) {
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
        describe(&best.settings),
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
        .map(|c| format!("{} {}", c.scheme, describe(&c.settings)))
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
}
