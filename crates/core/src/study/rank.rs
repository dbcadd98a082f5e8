//! Ranking candidates that ran on common random numbers (`advise`): by the
//! mean over trials of an objective, each compared with the best through the
//! per-trial differences (paired): when the 95% confidence interval of the
//! difference contains 0, the two cannot be told apart.

use std::collections::BTreeMap;

use serde::Serialize;

use super::grid::label;
use crate::sim::{SimReport, TrialToLoss};
use crate::stats::mean_ci95;

/// What candidates are ranked by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Objective {
    /// Mean iteration time.
    #[default]
    Mean,
    /// 99th percentile of the iteration times of a trial, averaged over trials.
    P99,
    /// Model time until the training loss reaches a target.
    TimeToLoss,
}

/// A candidate that ran: its scheme and settings, the most partitions a
/// worker stores, its simulation, and (time-to-loss) how each trial
/// reached the target.
pub struct Ran {
    pub scheme: String,
    pub settings: BTreeMap<String, String>,
    pub stored: usize,
    pub report: SimReport,
    pub to_loss: Vec<TrialToLoss>,
}

impl Ran {
    /// Per trial, the objective (infinite: the target loss not reached).
    pub fn per_trial(&self, objective: Objective) -> Vec<f64> {
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

/// A row of the ranking.
#[derive(Debug, Serialize)]
pub struct Candidate {
    /// 1 = the best by the objective.
    pub rank: usize,
    pub scheme: String,
    pub settings: BTreeMap<String, String>,
    /// The most partitions a worker stores.
    pub stored_partitions: usize,
    /// The objective: mean over trials.
    pub objective: f64,
    /// Half-width of its 95% confidence interval over trials.
    pub ci95: f64,
    /// Mean over trials of (this − the best), paired by trial.
    pub difference: f64,
    /// Half-width of the 95% confidence interval of `difference` (0 for the best).
    pub difference_ci95: f64,
    /// The interval of the difference contains 0 (true for the best).
    pub indistinguishable_from_best: bool,
    pub mean_iteration_time: f64,
    pub p99: f64,
    pub recovered_fraction: f64,
    pub messages_per_iteration: f64,
    /// time-to-loss: the trials in which it reached the target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reached_trials: Option<usize>,
    /// time-to-loss: iterations before the target, mean over the trials
    /// that reached it (null: none did).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iterations_to_target: Option<f64>,
    /// Other variants with the same result in every trial ("scheme
    /// settings"), merged into this row (it stores the least of them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
}

/// Trials that missed the objective, and the mean over the others: the
/// ranking key (fewest misses, then the smallest mean).
pub fn ranking_key(per_trial: &[f64]) -> (usize, f64) {
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
/// Candidates with the same numbers in every trial are one row (the one
/// storing least), the others its aliases. `ran` must not be empty.
pub fn rank(ran: Vec<Ran>, objective: Objective) -> Vec<Candidate> {
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
        let alias = |r: &Ran| label(&r.scheme, &r.settings);
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
}
