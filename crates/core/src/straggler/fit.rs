//! Fitting straggler models to measured times of one partition computation
//! (the values of a replay CSV: rows = rounds, columns = workers), with the
//! Kolmogorov-Smirnov distance of each fit to the data it was fitted to.
//!
//! Values may be right-censored: a time measured in a training trace for a
//! worker whose result had not arrived when the master stopped is only a
//! lower bound (the iteration's end). Every estimate below takes censoring
//! into account the maximum-likelihood way for exponentials: a rate is the
//! number of uncensored values divided by the total exposure (the time
//! every value, censored or not, spent past the state's start), and the
//! KS distance is taken to the Kaplan-Meier estimate of the CDF (the
//! empirical CDF when nothing is censored). Otherwise the slow workers,
//! the ones a code lets the master leave behind, would be fitted as fast.
//! The fitted CDFs are statrs' exponential ones; the Kaplan-Meier estimate
//! and the KS distance to it (statrs has neither) are [`kaplan_meier`] and
//! [`ks_distance`].
//!
//! - **Shifted exponential** (000 eq. 21), per worker and pooled: the
//!   maximum-likelihood estimates alpha = the smallest uncensored value,
//!   mu = (uncensored values) / Σ (x − alpha); without censoring
//!   1 / (mean − min).
//! - **Two-state** (a Gilbert-Elliott-like slow/fast chain, 000 §VI-A): the
//!   values are split into fast and slow at a threshold, first Otsu's (the
//!   split of their logarithms with the largest between-class variance),
//!   then moved to where the two fitted states are equally likely until the
//!   classes stop changing (or a move would leave a class under 1% of the
//!   values). alpha is the smallest uncensored value, the fast rate that of
//!   the fast values above alpha, the slow rate that of the slow values
//!   above the threshold (memorylessness), each (uncensored) / exposure.
//!   The slow fraction and the switch probability (the share of a worker's
//!   consecutive rounds whose classes differ) are corrected for the values
//!   the threshold puts in the wrong class under the fitted rates. Its
//!   distribution is the mixture of the two states' shifted exponentials,
//!   weighted by the slow fraction.
//!
//! [`choose`] picks the model to simulate: the shifted exponential when its
//! pooled fit passes the KS test at the 5% level (distance below
//! 1.36 / sqrt(n); conservative, since the parameters were estimated from
//! the same values), else the fit with the smaller distance.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, Exp};

/// A shifted-exponential fit: u = alpha + Exp(mu).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ShiftedExponentialFit {
    pub alpha: f64,
    pub mu: f64,
    /// Values fitted.
    pub samples: usize,
    /// Kolmogorov-Smirnov distance between the values and the fitted CDF.
    pub ks: f64,
}

/// A two-state (slow/fast) fit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TwoStateFit {
    /// A value above it is slow.
    pub threshold: f64,
    pub alpha: f64,
    pub mu_fast: f64,
    pub mu_slow: f64,
    /// Share of consecutive rounds of a worker in different states.
    pub switch_probability: f64,
    /// Share of slow values.
    pub slow_fraction: f64,
    pub samples: usize,
    /// Kolmogorov-Smirnov distance between the values and the mixture CDF.
    pub ks: f64,
}

/// Which fitted model [`choose`] picked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FittedModel {
    ShiftedExponential,
    TwoState,
}

/// Every fit of a table of times.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fits {
    /// One per worker (column), in order.
    pub per_worker: Vec<ShiftedExponentialFit>,
    /// All values together.
    pub pooled: ShiftedExponentialFit,
    pub two_state: TwoStateFit,
    /// The 5% critical KS distance of the pooled values, 1.36 / sqrt(n).
    pub ks_critical: f64,
    pub chosen: FittedModel,
}

/// A measured value: the time, and whether it is censored (only a lower
/// bound of the time: the worker had not finished).
pub type Value = (f64, bool);

/// The Kaplan-Meier estimate F̂ of the CDF of `sorted` (ascending by value,
/// uncensored before censored at equal values): one step per uncensored
/// value x, as (x, F̂ just below x, F̂ at x). At an uncensored value with m
/// values at risk (not smaller, censored or not) the survival 1 − F̂ is
/// multiplied by 1 − 1/m; a censored value only leaves the risk set. Equal
/// uncensored values give one step each, whose product is the estimator's
/// 1 − d/m for d deaths at once. Without censoring F̂ is the empirical CDF.
pub fn kaplan_meier(sorted: &[Value]) -> impl Iterator<Item = (f64, f64, f64)> + '_ {
    let n = sorted.len();
    let mut survival = 1.0;
    sorted
        .iter()
        .enumerate()
        .filter(|(_, v)| !v.1)
        .map(move |(i, &(x, _))| {
            let before = 1.0 - survival;
            survival *= 1.0 - 1.0 / (n - i) as f64;
            (x, before, 1.0 - survival)
        })
}

/// Kolmogorov-Smirnov distance sup |F̂ − F| between the Kaplan-Meier
/// estimate F̂ of `sorted` ([`kaplan_meier`]) and a continuous `cdf`: the
/// largest gap at either side of a step of F̂ (between steps F̂ is flat and
/// F rises, so the gaps there are smaller).
pub fn ks_distance(sorted: &[Value], cdf: impl Fn(f64) -> f64) -> f64 {
    kaplan_meier(sorted).fold(0.0, |distance: f64, (x, before, after)| {
        let f = cdf(x);
        distance.max(f - before).max(after - f)
    })
}

/// CDF of alpha + Exp(mu) (statrs' exponential CDF of the excess).
fn shifted_exponential_cdf(alpha: f64, mu: f64) -> impl Fn(f64) -> f64 {
    let exp = Exp::new(mu).expect("a fitted rate is positive and finite");
    move |x| exp.cdf(x - alpha)
}

/// Ascending by value, uncensored before censored at equal values.
fn sorted(values: &[Value]) -> Vec<Value> {
    let mut v = values.to_vec();
    v.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    v
}

/// The maximum-likelihood rate of the exponential excess over `start` of
/// `values`: uncensored values / Σ max(x − start, 0); `None` without an
/// uncensored value or exposure.
fn rate_above(values: &[Value], start: f64) -> Option<f64> {
    let events = values.iter().filter(|v| !v.1).count();
    let exposure: f64 = values.iter().map(|v| (v.0 - start).max(0.0)).sum();
    (events > 0 && exposure > 0.0 && exposure.is_finite()).then(|| events as f64 / exposure)
}

/// The smallest uncensored value.
fn smallest_uncensored(sorted: &[Value]) -> Option<f64> {
    sorted.iter().find(|v| !v.1).map(|v| v.0)
}

/// The maximum-likelihood shifted exponential of `values`: `None` when
/// there are fewer than two values, none uncensored, or no spread (no rate).
pub fn fit_shifted_exponential(values: &[Value]) -> Option<ShiftedExponentialFit> {
    if values.len() < 2 {
        return None;
    }
    let v = sorted(values);
    let alpha = smallest_uncensored(&v)?;
    let mu = rate_above(&v, alpha)?;
    Some(ShiftedExponentialFit {
        alpha,
        mu,
        samples: v.len(),
        ks: ks_distance(&v, shifted_exponential_cdf(alpha, mu)),
    })
}

/// Otsu's split of ascending `logs`: the number of values in the lower
/// class (1..n) with the largest between-class variance.
fn otsu_split(logs: &[f64]) -> usize {
    let n = logs.len();
    let total: f64 = logs.iter().sum();
    let (mut best, mut best_score, mut sum) = (1, f64::NEG_INFINITY, 0.0);
    for i in 1..n {
        sum += logs[i - 1];
        if logs[i] == logs[i - 1] {
            continue; // a split must fall between different values
        }
        let (n0, n1) = (i as f64, (n - i) as f64);
        let d = sum / n0 - (total - sum) / n1;
        let score = n0 * n1 * d * d;
        if score > best_score {
            best_score = score;
            best = i;
        }
    }
    best
}

/// The fast and slow rates and the share of slow values when the `split`
/// smallest of ascending `all` are fast: the fast rate of the excess over
/// alpha, the slow one of the excess over the threshold (an exponential is
/// memoryless, so the slow values above the threshold exceed it by
/// Exp(mu_slow)), each by [`rate_above`]; `None` when a class is empty or
/// has no rate.
fn state_rates(all: &[Value], split: usize, alpha: f64, threshold: f64) -> Option<(f64, f64, f64)> {
    if split == 0 || split >= all.len() {
        return None;
    }
    let (fast, slow) = all.split_at(split);
    Some((
        rate_above(fast, alpha)?,
        rate_above(slow, threshold)?,
        slow.len() as f64 / all.len() as f64,
    ))
}

/// The two-state fit of `series` (one vector per worker, in round order):
/// `None` with fewer than two distinct values above the smallest in either
/// state (nothing to split or no rate for a state).
pub fn fit_two_state(series: &[Vec<Value>]) -> Option<TwoStateFit> {
    let all = sorted(&series.concat());
    let n = all.len();
    if n < 4 {
        return None;
    }
    let alpha = smallest_uncensored(&all)?;
    // Logs of the excess over alpha (the exponential part); an excess of 0
    // or less is put at the smallest positive excess.
    let smallest_excess = all
        .iter()
        .map(|x| x.0 - alpha)
        .find(|e| *e > 0.0)
        .unwrap_or(1.0);
    let logs: Vec<f64> = all
        .iter()
        .map(|x| (x.0 - alpha).max(smallest_excess).ln())
        .collect();
    let split = otsu_split(&logs);
    if split == 0 || split >= n {
        return None;
    }
    // Refine Otsu's threshold to where the two fitted states are equally
    // likely, until the classes stop changing.
    let mut threshold = all[split - 1].0;
    let mut states = None;
    for _ in 0..50 {
        let split = all.partition_point(|x| x.0 <= threshold);
        let Some(fit) = state_rates(&all, split, alpha, threshold) else {
            break;
        };
        states = Some(fit);
        let (mu_fast, mu_slow, slow) = fit;
        if mu_fast.is_nan() || mu_slow.is_nan() || mu_fast <= mu_slow {
            break;
        }
        let next = alpha + ((1.0 - slow) * mu_fast / (slow * mu_slow)).ln() / (mu_fast - mu_slow);
        let next_split = all.partition_point(|x| x.0 <= next);
        // A move that leaves a class under 1% of the values finds no second state.
        let smallest = n.div_ceil(100);
        if next.is_nan()
            || next <= alpha
            || next_split == split
            || next_split < smallest
            || n - next_split < smallest
        {
            break;
        }
        threshold = next;
    }
    let (mu_fast, mu_slow, observed_slow) = states?;
    // Misclassification rates of the fitted states: a fast value above
    // the threshold, a slow one below it.
    let e_fast = (-mu_fast * (threshold - alpha)).exp();
    let e_slow = 1.0 - (-mu_slow * (threshold - alpha)).exp();
    let kept = 1.0 - e_fast - e_slow;
    let slow_fraction = if kept > 0.0 {
        ((observed_slow - e_fast) / kept).clamp(0.0, 1.0)
    } else {
        observed_slow
    };
    let (mut pairs, mut switches) = (0usize, 0usize);
    for worker in series {
        for w in worker.windows(2) {
            pairs += 1;
            switches += usize::from((w[0].0 > threshold) != (w[1].0 > threshold));
        }
    }
    let observed_switches = if pairs == 0 {
        0.0
    } else {
        switches as f64 / pairs as f64
    };
    // Labels of consecutive rounds differ, when the state stays, with
    // probability `same`, when it switches with `differ`: solve
    // observed = (1 − p)·same + p·differ for p.
    let same = (1.0 - slow_fraction) * 2.0 * e_fast * (1.0 - e_fast)
        + slow_fraction * 2.0 * e_slow * (1.0 - e_slow);
    let differ = (1.0 - e_fast) * (1.0 - e_slow) + e_fast * e_slow;
    let switch_probability = if differ > same {
        ((observed_switches - same) / (differ - same)).clamp(0.0, 1.0)
    } else {
        observed_switches
    };
    let (fast_cdf, slow_cdf) = (
        shifted_exponential_cdf(alpha, mu_fast),
        shifted_exponential_cdf(alpha, mu_slow),
    );
    let ks = ks_distance(&all, |x| {
        (1.0 - slow_fraction) * fast_cdf(x) + slow_fraction * slow_cdf(x)
    });
    Some(TwoStateFit {
        threshold,
        alpha,
        mu_fast,
        mu_slow,
        switch_probability,
        slow_fraction,
        samples: n,
        ks,
    })
}

/// The 5% critical value of the KS distance for `n` values (large-n
/// approximation 1.36 / sqrt(n)).
pub fn ks_critical_5(n: usize) -> f64 {
    1.36 / (n as f64).sqrt()
}

/// The model to simulate (see the module docs).
pub fn choose(pooled: &ShiftedExponentialFit, two_state: &TwoStateFit) -> FittedModel {
    if pooled.ks < ks_critical_5(pooled.samples) || pooled.ks <= two_state.ks {
        FittedModel::ShiftedExponential
    } else {
        FittedModel::TwoState
    }
}

/// Every fit of `series` (one vector of times per worker, in round order,
/// each with whether it is censored), or why there is none: the message
/// names the worker (1-based) whose values cannot be fitted.
pub fn fit_all(series: &[Vec<Value>]) -> Result<Fits, String> {
    let mut per_worker = Vec::with_capacity(series.len());
    for (w, values) in series.iter().enumerate() {
        per_worker.push(fit_shifted_exponential(values).ok_or_else(|| {
            format!(
                "worker {} has {} values, fewer than two, none uncensored, or all equal: no shifted exponential fits",
                w + 1,
                values.len()
            )
        })?);
    }
    let pooled = fit_shifted_exponential(&series.concat()).ok_or_else(|| {
        "the values are all equal or all censored: no shifted exponential fits".to_string()
    })?;
    let two_state = fit_two_state(series)
        .ok_or_else(|| "the values do not split into a slow and a fast state".to_string())?;
    Ok(Fits {
        ks_critical: ks_critical_5(pooled.samples),
        chosen: choose(&pooled, &two_state),
        per_worker,
        pooled,
        two_state,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, StragglerModel};
    use crate::straggler::{DelaySpec, RoundSample};

    /// `rows` rounds of `config`'s delay model (trial 0), one vector per
    /// worker, every value uncensored.
    fn sampled(config: &Config, rows: usize) -> Vec<Vec<Value>> {
        let spec = DelaySpec::from_config(config).unwrap();
        let mut model = spec.model(0);
        let k = config.workers;
        let mut sample = RoundSample::new(k);
        let mut series = vec![Vec::with_capacity(rows); k];
        for _ in 0..rows {
            model.sample(&mut sample);
            for (w, s) in series.iter_mut().enumerate() {
                s.push((sample.unit_time[w], false));
            }
        }
        series
    }

    /// 3000 rounds of 4 workers of 0.5 + Exp(3).
    fn shifted_exponential_series() -> Vec<Vec<Value>> {
        let mut config = Config {
            workers: 4,
            ..Config::default()
        };
        config.straggler.model = StragglerModel::ShiftedExponential;
        config.straggler.alpha = 0.5;
        config.straggler.mu = 3.0;
        sampled(&config, 3000)
    }

    /// Every fit of [`shifted_exponential_series`] (per worker and pooled)
    /// gives its parameters back and passes the KS test.
    fn assert_recovers_shifted_exponential(fits: &Fits) {
        for f in fits.per_worker.iter().chain([&fits.pooled]) {
            assert!(within(f.alpha, 0.5, 0.01), "{f:?}");
            assert!(within(f.mu, 3.0, 0.08), "{f:?}");
            assert!(f.ks < ks_critical_5(f.samples), "{f:?}");
        }
    }

    /// 2000 rounds of a slow/fast chain of 10 workers: alpha 0.01, fast
    /// rate 10, slow rate 0.1, switch probability 0.05, 5 slow at first.
    fn gilbert_elliott_series() -> Vec<Vec<Value>> {
        let mut config = Config {
            workers: 10,
            ..Config::default()
        };
        config.straggler.model = StragglerModel::GilbertElliott;
        config.straggler.alpha = 0.01;
        config.straggler.mu_fast = 10.0;
        config.straggler.mu_slow = 0.1;
        config.straggler.switch_probability = 0.05;
        config.straggler.initial_stragglers = 5;
        sampled(&config, 2000)
    }

    fn within(x: f64, truth: f64, rel: f64) -> bool {
        (x - truth).abs() <= rel * truth.abs()
    }

    #[test]
    fn kaplan_meier_of_the_6mp_leukaemia_data() {
        // Remission times in weeks of the 6-MP group of Freireich et al.
        // (1963), + censored, the textbook example of Kaplan-Meier:
        // 6 6 6 6+ 7 9+ 10 10+ 11+ 13 16 17+ 19+ 20+ 22 23 25+ 32+ 32+ 34+ 35+.
        let times = [
            (6.0, false),
            (6.0, false),
            (6.0, false),
            (6.0, true),
            (7.0, false),
            (9.0, true),
            (10.0, false),
            (10.0, true),
            (11.0, true),
            (13.0, false),
            (16.0, false),
            (17.0, true),
            (19.0, true),
            (20.0, true),
            (22.0, false),
            (23.0, false),
            (25.0, true),
            (32.0, true),
            (32.0, true),
            (34.0, true),
            (35.0, true),
        ];
        // The survival after each death time: the product of (m − d) / m
        // with m at risk and d deaths, and its published 4-decimal value.
        let expected = [
            (6.0, 18.0 / 21.0, 0.8571),
            (7.0, 16.0 / 17.0, 0.8067),
            (10.0, 14.0 / 15.0, 0.7529),
            (13.0, 11.0 / 12.0, 0.6902),
            (16.0, 10.0 / 11.0, 0.6275),
            (22.0, 6.0 / 7.0, 0.5378),
            (23.0, 5.0 / 6.0, 0.4482),
        ];
        // The last step at each time (tied deaths give one step each).
        let mut steps: Vec<(f64, f64, f64)> = Vec::new();
        for step in kaplan_meier(&sorted(&times)) {
            match steps.last_mut() {
                Some(last) if last.0 == step.0 => last.2 = step.2,
                _ => steps.push(step),
            }
        }
        assert_eq!(steps.len(), expected.len(), "{steps:?}");
        let mut survival = 1.0;
        for (&(x, before, after), &(t, factor, published)) in steps.iter().zip(&expected) {
            assert_eq!(x, t);
            assert!((before - (1.0 - survival)).abs() < 1e-15, "{x}: {before}");
            survival *= factor;
            assert!((after - (1.0 - survival)).abs() < 1e-15, "{x}: {after}");
            assert!((1.0 - after - published).abs() < 5e-5, "{x}: {after}");
        }
    }

    /// sup |F̂ − F| by brute force: F̂ counted afresh (the values not above t
    /// over all, no censoring) at every value and just below it.
    fn ks_brute_force(values: &[f64], cdf: impl Fn(f64) -> f64) -> f64 {
        let n = values.len() as f64;
        let ecdf = |t: f64| values.iter().filter(|&&v| v <= t).count() as f64 / n;
        let below = |t: f64| values.iter().filter(|&&v| v < t).count() as f64 / n;
        values
            .iter()
            .map(|&x| (ecdf(x) - cdf(x)).abs().max((below(x) - cdf(x)).abs()))
            .fold(0.0, f64::max)
    }

    #[test]
    fn ks_distance_equals_brute_force_without_censoring() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(25);
        let cdf = shifted_exponential_cdf(0.5, 2.0);
        for n in [1, 2, 5, 40, 300] {
            // Values rounded to 0.05: ties in every sample of 40 or more.
            let values: Vec<f64> = (0..n)
                .map(|_| (20.0 * (0.4 + 2.0 * rng.random::<f64>())).round() / 20.0)
                .collect();
            let v: Vec<Value> = values.iter().map(|&x| (x, false)).collect();
            let d = ks_distance(&sorted(&v), &cdf);
            let brute = ks_brute_force(&values, &cdf);
            assert!((d - brute).abs() < 1e-12, "n = {n}: {d} vs {brute}");
        }
    }

    #[test]
    fn the_shifted_exponential_cdf_is_statrs_exponential_shifted() {
        let cdf = shifted_exponential_cdf(0.5, 3.0);
        assert_eq!(cdf(0.2), 0.0);
        assert_eq!(cdf(0.5), 0.0);
        for x in [0.6_f64, 1.0, 2.5] {
            let closed = 1.0 - (-3.0 * (x - 0.5)).exp();
            assert!((cdf(x) - closed).abs() < 1e-15, "{x}");
        }
    }

    #[test]
    fn ks_distance_of_known_samples() {
        // Uniform CDF on [0, 1] against {0.5}: the jump at 0.5 is 0.5 away.
        assert!((ks_distance(&[(0.5, false)], |x| x) - 0.5).abs() < 1e-15);
        // The quartile midpoints are 1/8 from the steps of the ECDF.
        let quartiles = [0.125, 0.375, 0.625, 0.875].map(|x| (x, false));
        let d = ks_distance(&quartiles, |x| x);
        assert!((d - 0.125).abs() < 1e-15, "{d}");
        // Kaplan-Meier: {0.25, 0.5+ (censored), 0.75}: F̂ jumps to 1/3 at
        // 0.25 and stays there past the censored value (the ECDF would
        // reach 2/3), then, with one value at risk, jumps to 1 at 0.75.
        // Against the uniform CDF the largest gap is just below 0.75:
        // 0.75 − 1/3.
        let km = [(0.25, false), (0.5, true), (0.75, false)];
        let d = ks_distance(&km, |x| x);
        assert!((d - (0.75 - 1.0 / 3.0)).abs() < 1e-15, "{d}");
        // Against F = 0 it is F̂'s largest value, 1; censored values alone give 0.
        assert!((ks_distance(&km, |_| 0.0) - 1.0).abs() < 1e-15);
        assert_eq!(ks_distance(&[(0.5, true)], |x| x), 0.0);
    }

    /// `series` with every value above `cutoff` replaced by the cutoff and
    /// marked censored, as a trace records a worker the master left behind.
    fn censor(series: &[Vec<Value>], cutoff: f64) -> (Vec<Vec<Value>>, usize) {
        let mut count = 0;
        let out = series
            .iter()
            .map(|s| {
                s.iter()
                    .map(|&(x, _)| {
                        if x > cutoff {
                            count += 1;
                            (cutoff, true)
                        } else {
                            (x, false)
                        }
                    })
                    .collect()
            })
            .collect();
        (out, count)
    }

    #[test]
    fn censored_values_are_fitted_as_lower_bounds() {
        // P(x > 0.8) = exp(−3 · 0.3) ≈ 41% censored.
        let (series, count) = censor(&shifted_exponential_series(), 0.8);
        assert!(count > 4000, "{count}");
        let fits = fit_all(&series).unwrap();
        assert_recovers_shifted_exponential(&fits);
        // Read as finished times, the bounds make the workers look faster.
        let naive: Vec<Vec<Value>> = series
            .iter()
            .map(|s| s.iter().map(|&(x, _)| (x, false)).collect())
            .collect();
        let naive = fit_all(&naive).unwrap();
        assert!(naive.pooled.mu > 1.5 * 3.0, "{:?}", naive.pooled);
        // Nothing uncensored: no fit, and the worker is named.
        let e = fit_all(&[
            vec![(1.0, false), (2.0, false)],
            vec![(1.0, true), (2.0, true)],
        ])
        .unwrap_err();
        assert!(e.starts_with("worker 2 "), "{e}");
    }

    #[test]
    fn a_two_state_chain_whose_slow_values_are_censored_is_fitted() {
        // Slow values are ~10 on average: about 3/4 of them end past 3.
        let (series, count) = censor(&gilbert_elliott_series(), 3.0);
        assert!(count > 5000, "{count}");
        let t = fit_all(&series).unwrap().two_state;
        assert!(within(t.mu_fast, 10.0, 0.1), "{t:?}");
        assert!(within(t.mu_slow, 0.1, 0.15), "{t:?}");
        assert!(within(t.switch_probability, 0.05, 0.2), "{t:?}");
        assert!(within(t.slow_fraction, 0.5, 0.2), "{t:?}");
    }

    #[test]
    fn shifted_exponential_mle_recovers_the_model() {
        let series = shifted_exponential_series();
        let fits = fit_all(&series).unwrap();
        assert_recovers_shifted_exponential(&fits);
        assert_eq!(fits.chosen, FittedModel::ShiftedExponential);
        // The exact MLE on a small sample: alpha = 1, mean 2 → mu = 1.
        let f = fit_shifted_exponential(&[(1.0, false), (2.0, false), (3.0, false)]).unwrap();
        assert_eq!((f.alpha, f.mu, f.samples), (1.0, 1.0, 3));
        // Censored at 3: two events over the same exposure 0 + 1 + 2.
        let f = fit_shifted_exponential(&[(1.0, false), (2.0, false), (3.0, true)]).unwrap();
        assert_eq!((f.alpha, f.mu), (1.0, 2.0 / 3.0));
        assert!(fit_shifted_exponential(&[(2.0, false), (2.0, false)]).is_none());
        assert!(fit_shifted_exponential(&[(2.0, false)]).is_none());
    }

    #[test]
    fn two_state_fit_recovers_a_gilbert_elliott_chain() {
        let series = gilbert_elliott_series();
        let fits = fit_all(&series).unwrap();
        let t = fits.two_state;
        // Fast values are ~0.11, slow ones ~10: the split misclassifies
        // only the tails, so the rates and the switch rate come back.
        assert!(within(t.mu_fast, 10.0, 0.1), "{t:?}");
        assert!(within(t.mu_slow, 0.1, 0.1), "{t:?}");
        assert!(within(t.switch_probability, 0.05, 0.2), "{t:?}");
        assert!(within(t.slow_fraction, 0.5, 0.2), "{t:?}");
        // One exponential cannot fit a 100-fold mixture; the two states can.
        assert!(fits.pooled.ks > fits.ks_critical, "{fits:?}");
        assert!(t.ks < fits.pooled.ks / 2.0, "{fits:?}");
        assert_eq!(fits.chosen, FittedModel::TwoState);
    }

    #[test]
    fn unfittable_workers_are_named() {
        let uncensored = |v: &[f64]| v.iter().map(|&x| (x, false)).collect::<Vec<_>>();
        let e = fit_all(&[uncensored(&[1.0, 2.0, 4.0]), uncensored(&[3.0, 3.0, 3.0])]).unwrap_err();
        assert!(e.starts_with("worker 2 "), "{e}");
    }
}
