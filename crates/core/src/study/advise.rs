//! `advise`'s search (issue 40, item 4): the candidate schemes
//! ([`scheme_entries`]), the memory budget ([`memory_budget`]), the target
//! of `--objective time-to-loss` ([`loss_target`]), and the [`Search`] over
//! every variant of every scheme with the rules each candidate passes (the
//! budget, degenerate codes, partial and approximate decodes, the target
//! loss), those it skips named with the reason ([`no_candidate`] when none
//! ran). The command parses the flags into [`Rules`], calls these and
//! prints the ranking.

use std::collections::BTreeMap;

use serde::Serialize;

use super::grid::{Axis, combinations, describe};
use super::rank::{Objective, Ran};
use super::search::{axes_for, beyond_clusters, experiment_memory, max_stored};
use super::skipped::Skipped;
use super::variant::{Outcome, VariantRunner};
use crate::coding::SchemeEntry;
use crate::config::{Config, LoadedConfig};
use crate::engine::EngineError;
use crate::error::InputError;
use crate::setup::Setup;
use crate::sim::SimReport;
use crate::sim::to_loss::{self, LossRunError};

/// Why the search stopped: a bad input, or the engine failed.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// Full-batch descent for the default `--target-loss` failed.
    #[error("the default --target-loss: full-batch descent on the config's data failed: {0}")]
    TargetLoss(EngineError),
}

/// The flags that decide which variants are candidates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rules {
    /// No `--schemes`: every registered scheme is a candidate.
    pub every_scheme: bool,
    /// `--min-recovered`.
    pub min_recovered: Option<f64>,
    /// `--objective`.
    pub objective: Objective,
    /// `--memory-partitions` was given (the budget is not the config's).
    pub memory_given: bool,
}

/// What `--objective time-to-loss` aims at.
#[derive(Debug, Serialize)]
pub struct LossTarget {
    pub loss: f64,
    /// `--target-loss`, or `full-batch descent at iteration N`.
    pub source: String,
    /// Iterations each trial trains (`train.iterations`).
    pub iterations: usize,
}

/// The registered schemes `--schemes` names (default: every registered
/// scheme), in its order.
pub fn scheme_entries(schemes: Option<&str>) -> Result<Vec<&'static SchemeEntry>, InputError> {
    let names: Vec<String> = match schemes {
        Some(list) => list.split(',').map(|s| s.trim().to_string()).collect(),
        None => crate::coding::SCHEMES
            .names()
            .into_iter()
            .map(str::to_string)
            .collect(),
    };
    let mut entries = Vec::with_capacity(names.len());
    for s in &names {
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
    Ok(entries)
}

/// The budget: --memory-partitions; else, unless --grid chooses the
/// loads, the most the config's experiment stores on a worker (its
/// scheme and the schemes simulate.compare compares): an unlimited one
/// ranks full replication first.
pub fn memory_budget(
    given: Option<usize>,
    grid: &[Axis],
    fitted: &LoadedConfig,
) -> Result<Option<usize>, InputError> {
    Ok(match given {
        Some(m) => Some(m),
        None if grid.iter().any(|a| a.key == "scheme.load") => None,
        None => Some(experiment_memory(fitted)?),
    })
}

/// The error when no candidate ran: the budget, and the first reason, so
/// that the one line says why.
pub fn no_candidate(rules: &Rules, memory: Option<usize>, skipped: &[Skipped]) -> InputError {
    let example = skipped.first().map_or(String::new(), |s| {
        let settings = describe(&s.settings);
        let space = if settings.is_empty() { "" } else { " " };
        format!("; {}{space}{settings}: {}", s.scheme, s.reason)
    });
    let rule = match memory {
        Some(m) => format!(
            "leaves no candidate that runs (the budget is {m} partitions per worker){example}"
        ),
        None => format!("leaves no candidate that runs{example}"),
    };
    InputError::new(
        if rules.memory_given {
            "--memory-partitions"
        } else {
            "--schemes"
        },
        rule,
    )
}

/// The search over the candidates: the rules each passes (the flags, the
/// grid, the memory budget, the target loss).
pub struct Search<'a> {
    pub rules: Rules,
    pub grid: &'a [Axis],
    pub workers: usize,
    /// Partitions a worker may store (`None`: no budget).
    pub memory: Option<usize>,
    pub target: Option<&'a LossTarget>,
}

impl Search<'_> {
    /// No `--schemes`: every registered scheme is a candidate.
    fn every_scheme(&self) -> bool {
        self.rules.every_scheme
    }

    /// Schemes whose decode is partial are candidates only when named in
    /// `--schemes` or with `--min-recovered` (ranked on time alone they
    /// would look faster for what they lose).
    fn partial_admitted(&self) -> bool {
        !self.every_scheme() || self.rules.min_recovered.is_some()
    }

    /// Why a scheme whose decode is partial is not ranked, if it is not.
    fn partial_rule(&self) -> Option<String> {
        if self.every_scheme() && self.rules.min_recovered.is_none() {
            return Some(
                "decodes part of the gradient: a candidate only when named in --schemes or with --min-recovered"
                    .to_string(),
            );
        }
        if self.rules.objective != Objective::TimeToLoss && self.rules.min_recovered.is_none() {
            return Some(
                "decodes part of the gradient: ranked by time only with --min-recovered F, the share it must \
                 recover (or by --objective time-to-loss, which counts what it loses)"
                    .to_string(),
            );
        }
        None
    }

    /// Why a candidate storing `stored` partitions on a worker is over the
    /// budget, if it is.
    fn over_budget(&self, stored: usize) -> Option<String> {
        match (self.memory, self.rules.memory_given) {
            (Some(m), true) if stored > m => Some(format!(
                "stores {stored} partitions on a worker, more than --memory-partitions {m}"
            )),
            (Some(m), false) if stored > m => Some(format!(
                "stores {stored} partitions on a worker, more than the {m} the config's schemes \
                 store at most (--memory-partitions sets another budget)"
            )),
            _ => None,
        }
    }

    /// Whether a built candidate runs: within the budget, not degenerate,
    /// its partial decode admitted.
    fn admit(&self, setup: &Setup) -> Result<(), String> {
        if let Some(reason) = self.over_budget(max_stored(setup)) {
            return Err(reason);
        }
        if let Some(why) = setup.scheme.degenerate() {
            return Err(format!("degenerate: {why}"));
        }
        if setup.scheme.partial_recovery() {
            if let Some(reason) = self.partial_rule() {
                return Err(reason);
            }
        }
        Ok(())
    }

    /// Every variant of every scheme of `entries`: those that ran and
    /// those skipped, with the reason.
    pub fn run(
        &self,
        entries: Vec<&'static SchemeEntry>,
        mut runner: VariantRunner,
    ) -> Result<(Vec<Ran>, Vec<Skipped>), SearchError> {
        let mut ran: Vec<Ran> = Vec::new();
        let mut skipped = Vec::new();
        for entry in entries {
            // A scheme with a wait policy (ignore-stragglers, is-gc) always
            // decodes part of the gradient: said once, not per variant.
            if !self.partial_admitted() && entry.declares("wait_for") {
                if let Some(reason) = self.partial_rule() {
                    skipped.push(skip(entry.name(), BTreeMap::new(), reason));
                    continue;
                }
            }
            let axes = axes_for(
                entry,
                self.grid,
                self.workers,
                self.memory,
                self.partial_admitted(),
            );
            for combo in combinations(&axes) {
                if beyond_clusters(&combo, self.grid) {
                    continue;
                }
                let outcome = runner.run(&combo, entry.name(), |setup| self.admit(setup))?;
                match outcome {
                    Outcome::Ran {
                        settings,
                        setup,
                        report,
                        ..
                    } => match self.judge(entry.name(), settings, *setup, report)? {
                        Ok(candidate) => ran.push(candidate),
                        Err(s) => skipped.push(s),
                    },
                    Outcome::Skipped(s) => skipped.push(s),
                }
            }
        }
        Ok((ran, skipped))
    }

    /// A variant that ran: a candidate (with its times to the target
    /// loss), or skipped (too little recovered, an approximation ranked by
    /// time, or its training failed).
    fn judge(
        &self,
        scheme: &str,
        settings: BTreeMap<String, String>,
        setup: Setup,
        report: SimReport,
    ) -> Result<Result<Ran, Skipped>, SearchError> {
        let recovered = report.schemes[0].recovered_fraction;
        if let Some(f) = self.rules.min_recovered.filter(|&f| recovered < f) {
            let reason = format!(
                "recovers {recovered:.4} of the partitions per iteration on average, \
                 less than --min-recovered {f}"
            );
            return Ok(Err(skip(scheme, settings, reason)));
        }
        // An approximate code recovers every partition only approximately:
        // its recovered share says nothing of what it loses, so only the
        // loss can rank it.
        let decode_error = report.schemes[0].mean_decode_error;
        if self.rules.objective != Objective::TimeToLoss && recovered >= 1.0 && decode_error > 1e-9
        {
            let reason = format!(
                "decodes an approximation (mean decode error {decode_error:.4}): ranked only by \
                 --objective time-to-loss, which trains through its error"
            );
            return Ok(Err(skip(scheme, settings, reason)));
        }
        let stored = max_stored(&setup);
        let Setup {
            loaded,
            scheme: built,
            ..
        } = setup;
        let to_loss = match self.target {
            None => Vec::new(),
            Some(t) => match to_loss::time_to_loss(&loaded.config, built, t.loss) {
                Ok(trials) => trials,
                Err(LossRunError::Engine(e)) => {
                    let reason = format!("training to the target loss failed: {e}");
                    return Ok(Err(skip(scheme, settings, reason)));
                }
                Err(LossRunError::Input(e)) => return Err(e.into()),
            },
        };
        Ok(Ok(Ran {
            scheme: scheme.to_string(),
            settings,
            stored,
            report,
            to_loss,
        }))
    }
}

/// One skipped variant of `scheme`.
fn skip(scheme: &str, settings: BTreeMap<String, String>, reason: String) -> Skipped {
    Skipped {
        scheme: scheme.to_string(),
        settings,
        reason,
        variants: 1,
    }
}

/// The target of `--objective time-to-loss`: `--target-loss`, or the
/// default of [`to_loss::default_target`] on the base config's data.
pub fn loss_target(config: &Config, given: Option<f64>) -> Result<LossTarget, SearchError> {
    let iterations = config.train.iterations;
    if let Some(loss) = given {
        return Ok(LossTarget {
            loss,
            source: "--target-loss".to_string(),
            iterations,
        });
    }
    let losses = to_loss::exact_losses(config).map_err(|e| match e {
        LossRunError::Input(e) => SearchError::Input(e),
        LossRunError::Engine(e) => SearchError::TargetLoss(e),
    })?;
    let loss = to_loss::default_target(&losses)
        .ok_or_else(|| InputError::value("train.iterations", iterations, "must be at least 2"))?;
    Ok(LossTarget {
        loss,
        source: format!("full-batch descent at iteration {}", iterations / 2),
        iterations,
    })
}
