//! How far a fitted straggler model can be trusted: 95% bootstrap intervals
//! of every fitted parameter ([`fit_intervals`]).
//!
//! The rounds of a worker are not independent (a slow/fast chain stays in
//! its state for about 1 / p rounds), so the values are resampled in
//! blocks: each worker's series is cut into blocks of `block_rounds`
//! consecutive rounds, and a replicate draws as many blocks, with
//! replacement, from the blocks of all workers (workers of one campaign
//! are alike in the models fitted here). Each drawn block is fitted as a
//! series of its own, so a switch is only ever counted between two rounds
//! that followed each other in the data, never across the seam of two
//! blocks of four mean runs of a state (4 / p rounds for the fitted switch
//! probability p). The replicates are fitted as the data were
//! ([`super::fit`]) and each parameter's interval is θ̂ ± 1.96 standard
//! deviations of its replicates. The coverage is measured, not assumed: on
//! 100 simulated slow/fast campaigns (10 workers, 1000 rounds, p = 0.05)
//! the switch probability's interval holds the true p 90 times (the test
//! below; percentile and basic bootstrap intervals held it 88 and 89
//! times: block bootstraps cover a little less than they claim).

use rand::RngExt;
use serde::Serialize;

use super::fit::{Value, fit_shifted_exponential, fit_two_state};
use crate::rng::{Stream, substream};

/// A 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
}

impl Interval {
    /// Whether `x` lies in the interval (ends included).
    pub fn contains(&self, x: f64) -> bool {
        self.low <= x && x <= self.high
    }
}

/// The intervals of the pooled shifted exponential and of the two-state fit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FitIntervals {
    /// Bootstrap replicates that could be fitted (of those drawn).
    pub replicates: usize,
    /// Rounds per resampled block.
    pub block_rounds: usize,
    /// Pooled shifted exponential.
    pub alpha: Interval,
    pub mu: Interval,
    /// Two-state fit (its alpha is the pooled one).
    pub mu_fast: Interval,
    pub mu_slow: Interval,
    pub switch_probability: Interval,
    pub slow_fraction: Interval,
}

/// Replicates drawn by [`fit_intervals`].
pub const REPLICATES: usize = 200;

/// Rounds per block: four times the mean run of a state, 1 / p for the
/// fitted switch probability p (a block must hold whole runs, or the
/// replicates vary less than campaigns do), at least 10 rounds and at most
/// a quarter of the `rounds` (at least 4 blocks per worker).
pub fn block_rounds(rounds: usize, switch_probability: f64) -> usize {
    let runs = if switch_probability > 0.0 {
        (4.0 / switch_probability).ceil().min(rounds as f64) as usize
    } else {
        rounds
    };
    runs.max(10).min((rounds / 4).max(1))
}

/// The normal bootstrap interval: `estimate` ± 1.96 standard deviations
/// of the `replicates`' values.
fn normal_interval(estimate: f64, replicates: &[f64]) -> Interval {
    let n = replicates.len() as f64;
    let mean = replicates.iter().sum::<f64>() / n;
    let variance = replicates.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let half = 1.96 * variance.sqrt();
    Interval {
        low: estimate - half,
        high: estimate + half,
    }
}

/// 95% intervals of the fits of `series` (one vector per worker, in round
/// order), from [`REPLICATES`] block-bootstrap replicates drawn from
/// `seed`; `None` when the data fit neither model (as [`super::fit::fit_all`]
/// says) or fewer than half of the replicates could be fitted.
pub fn fit_intervals(series: &[Vec<Value>], seed: u64) -> Option<FitIntervals> {
    let pooled = fit_shifted_exponential(&series.concat())?;
    let two_state = fit_two_state(series)?;
    let rounds = series.iter().map(Vec::len).max()?;
    let block = block_rounds(rounds, two_state.switch_probability);
    let blocks: Vec<&[Value]> = series.iter().flat_map(|s| s.chunks(block)).collect();
    let mut rng = substream(seed, Stream::FitBootstrap, 0);
    let mut values: [Vec<f64>; 6] = Default::default();
    for _ in 0..REPLICATES {
        let drawn: Vec<Vec<Value>> = (0..blocks.len())
            .map(|_| blocks[rng.random_range(0..blocks.len())].to_vec())
            .collect();
        let (Some(p), Some(t)) = (
            fit_shifted_exponential(&drawn.concat()),
            fit_two_state(&drawn),
        ) else {
            continue;
        };
        for (v, x) in values.iter_mut().zip([
            p.alpha,
            p.mu,
            t.mu_fast,
            t.mu_slow,
            t.switch_probability,
            t.slow_fraction,
        ]) {
            v.push(x);
        }
    }
    let fitted = values[0].len();
    if fitted < REPLICATES / 2 {
        return None;
    }
    let [a, m, f, s, p, sf] = &values;
    Some(FitIntervals {
        replicates: fitted,
        block_rounds: block,
        alpha: normal_interval(pooled.alpha, a),
        mu: normal_interval(pooled.mu, m),
        mu_fast: normal_interval(two_state.mu_fast, f),
        mu_slow: normal_interval(two_state.mu_slow, s),
        switch_probability: normal_interval(two_state.switch_probability, p),
        slow_fraction: normal_interval(two_state.slow_fraction, sf),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, StragglerModel};
    use crate::straggler::{DelaySpec, RoundSample};

    /// `rounds` rounds of trial `trial` of a slow/fast chain of 10 workers
    /// (alpha 0.01, fast rate 10, slow rate 0.1, switch probability `p`).
    fn campaign(trial: u64, rounds: usize, p: f64) -> Vec<Vec<Value>> {
        let mut config = Config {
            workers: 10,
            ..Config::default()
        };
        config.straggler.model = StragglerModel::GilbertElliott;
        config.straggler.alpha = 0.01;
        config.straggler.mu_fast = 10.0;
        config.straggler.mu_slow = 0.1;
        config.straggler.switch_probability = p;
        config.straggler.initial_stragglers = 5;
        let spec = DelaySpec::from_config(&config).unwrap();
        let mut model = spec.model(trial);
        let mut sample = RoundSample::new(10);
        let mut series: Vec<Vec<Value>> = (0..10).map(|_| Vec::with_capacity(rounds)).collect();
        for _ in 0..rounds {
            model.sample(&mut sample);
            for (w, s) in series.iter_mut().enumerate() {
                s.push((sample.unit_time[w], false));
            }
        }
        series
    }

    #[test]
    fn the_switch_probability_interval_covers_the_truth_in_90_of_100_campaigns() {
        let p = 0.05;
        let mut covered = 0;
        let mut widths = Vec::new();
        for trial in 0..100 {
            let series = campaign(trial, 1000, p);
            let i = fit_intervals(&series, trial).unwrap();
            covered += usize::from(i.switch_probability.contains(p));
            widths.push(i.switch_probability.high - i.switch_probability.low);
        }
        let mean_width = widths.iter().sum::<f64>() / widths.len() as f64;
        assert!(covered >= 90, "covered {covered} of 100");
        // Not a vacuous interval: narrower than the value itself.
        assert!(mean_width < p, "mean width {mean_width}");
    }
}
