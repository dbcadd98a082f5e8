//! Fitting straggler models to measured times of one partition computation
//! (the values of a replay CSV: rows = rounds, columns = workers), with the
//! Kolmogorov-Smirnov distance of each fit to the data it was fitted to.
//!
//! - **Shifted exponential** (000 eq. 21), per worker and pooled: the
//!   maximum-likelihood estimates alpha = min, mu = 1 / (mean − min).
//! - **Two-state** (a Gilbert-Elliott-like slow/fast chain, 000 §VI-A): the
//!   values are split into fast and slow at a threshold, first Otsu's (the
//!   split of their logarithms with the largest between-class variance),
//!   then moved to where the two fitted states are equally likely until the
//!   classes stop changing (or a move would leave a class under 1% of the
//!   values). alpha is the smallest value, the fast rate
//!   1 / (mean of the fast values − alpha), the slow rate 1 / (mean of the
//!   slow values − threshold) (memorylessness). The slow fraction and the
//!   switch probability (the share of a worker's consecutive rounds whose
//!   classes differ) are corrected for the values the threshold puts in the
//!   wrong class under the fitted rates. Its distribution is the mixture of
//!   the two states' shifted exponentials, weighted by the slow fraction.
//!
//! [`choose`] picks the model to simulate: the shifted exponential when its
//! pooled fit passes the KS test at the 5% level (distance below
//! 1.36 / sqrt(n); conservative, since the parameters were estimated from
//! the same values), else the fit with the smaller distance.

use serde::Serialize;

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

/// Kolmogorov-Smirnov distance sup |F_n − F| between the empirical CDF of
/// `sorted` (ascending) and `cdf`.
pub fn ks_distance(sorted: &[f64], cdf: impl Fn(f64) -> f64) -> f64 {
    let n = sorted.len() as f64;
    sorted
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let f = cdf(x);
            (f - i as f64 / n).max((i + 1) as f64 / n - f)
        })
        .fold(0.0, f64::max)
}

/// CDF of alpha + Exp(mu).
fn shifted_exponential_cdf(x: f64, alpha: f64, mu: f64) -> f64 {
    if x <= alpha {
        0.0
    } else {
        1.0 - (-mu * (x - alpha)).exp()
    }
}

fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v = values.to_vec();
    v.sort_unstable_by(f64::total_cmp);
    v
}

/// The maximum-likelihood shifted exponential of `values`: `None` when
/// there are fewer than two values or they are all equal (no rate).
pub fn fit_shifted_exponential(values: &[f64]) -> Option<ShiftedExponentialFit> {
    if values.len() < 2 {
        return None;
    }
    let v = sorted(values);
    let alpha = v[0];
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    if mean.is_nan() || mean <= alpha {
        return None;
    }
    let mu = 1.0 / (mean - alpha);
    Some(ShiftedExponentialFit {
        alpha,
        mu,
        samples: v.len(),
        ks: ks_distance(&v, |x| shifted_exponential_cdf(x, alpha, mu)),
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
/// smallest of ascending `all` are fast: the fast rate 1 / (mean − alpha),
/// the slow one 1 / (mean − threshold) (an exponential is memoryless, so the
/// slow values above the threshold exceed it by Exp(mu_slow)); `None` when
/// a class is empty or has no spread.
fn state_rates(all: &[f64], split: usize, alpha: f64, threshold: f64) -> Option<(f64, f64, f64)> {
    if split == 0 || split >= all.len() {
        return None;
    }
    let (fast, slow) = all.split_at(split);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (mean_fast, mean_slow) = (mean(fast), mean(slow));
    if !(mean_fast > alpha && mean_slow > threshold) {
        return None;
    }
    Some((
        1.0 / (mean_fast - alpha),
        1.0 / (mean_slow - threshold),
        slow.len() as f64 / all.len() as f64,
    ))
}

/// The two-state fit of `series` (one vector per worker, in round order):
/// `None` with fewer than two distinct values above the smallest in either
/// state (nothing to split or no rate for a state).
pub fn fit_two_state(series: &[Vec<f64>]) -> Option<TwoStateFit> {
    let all = sorted(&series.concat());
    let n = all.len();
    if n < 4 {
        return None;
    }
    let alpha = all[0];
    // Logs of the excess over alpha (the exponential part); the smallest
    // value's excess 0 is put at the smallest positive excess.
    let smallest_excess = all
        .iter()
        .map(|x| x - alpha)
        .find(|e| *e > 0.0)
        .unwrap_or(1.0);
    let logs: Vec<f64> = all
        .iter()
        .map(|x| (x - alpha).max(smallest_excess).ln())
        .collect();
    let split = otsu_split(&logs);
    if split == 0 || split >= n {
        return None;
    }
    // Refine Otsu's threshold to where the two fitted states are equally
    // likely, until the classes stop changing.
    let mut threshold = all[split - 1];
    let mut states = None;
    for _ in 0..50 {
        let split = all.partition_point(|&x| x <= threshold);
        let Some(fit) = state_rates(&all, split, alpha, threshold) else {
            break;
        };
        states = Some(fit);
        let (mu_fast, mu_slow, slow) = fit;
        if mu_fast.is_nan() || mu_slow.is_nan() || mu_fast <= mu_slow {
            break;
        }
        let next = alpha + ((1.0 - slow) * mu_fast / (slow * mu_slow)).ln() / (mu_fast - mu_slow);
        let next_split = all.partition_point(|&x| x <= next);
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
            switches += usize::from((w[0] > threshold) != (w[1] > threshold));
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
    let ks = ks_distance(&all, |x| {
        (1.0 - slow_fraction) * shifted_exponential_cdf(x, alpha, mu_fast)
            + slow_fraction * shifted_exponential_cdf(x, alpha, mu_slow)
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

/// Every fit of `series` (one vector of times per worker, in round order),
/// or why there is none: the message names the worker (1-based) whose
/// values cannot be fitted.
pub fn fit_all(series: &[Vec<f64>]) -> Result<Fits, String> {
    let mut per_worker = Vec::with_capacity(series.len());
    for (w, values) in series.iter().enumerate() {
        per_worker.push(fit_shifted_exponential(values).ok_or_else(|| {
            format!(
                "worker {} has {} values, all equal or fewer than two: no shifted exponential fits",
                w + 1,
                values.len()
            )
        })?);
    }
    let pooled = fit_shifted_exponential(&series.concat())
        .ok_or_else(|| "the values are all equal: no shifted exponential fits".to_string())?;
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

    /// `rows` rounds of `config`'s delay model (trial 0), one vector per worker.
    fn sampled(config: &Config, rows: usize) -> Vec<Vec<f64>> {
        let spec = DelaySpec::from_config(config).unwrap();
        let mut model = spec.model(0);
        let k = config.workers;
        let mut sample = RoundSample::new(k);
        let mut series = vec![Vec::with_capacity(rows); k];
        for _ in 0..rows {
            model.sample(&mut sample);
            for (w, s) in series.iter_mut().enumerate() {
                s.push(sample.unit_time[w]);
            }
        }
        series
    }

    fn within(x: f64, truth: f64, rel: f64) -> bool {
        (x - truth).abs() <= rel * truth.abs()
    }

    #[test]
    fn ks_distance_of_known_samples() {
        // Uniform CDF on [0, 1] against {0.5}: the jump at 0.5 is 0.5 away.
        assert!((ks_distance(&[0.5], |x| x) - 0.5).abs() < 1e-15);
        // The quartile midpoints are 1/8 from the steps of the ECDF.
        let d = ks_distance(&[0.125, 0.375, 0.625, 0.875], |x| x);
        assert!((d - 0.125).abs() < 1e-15, "{d}");
    }

    #[test]
    fn shifted_exponential_mle_recovers_the_model() {
        let mut config = Config {
            workers: 4,
            ..Config::default()
        };
        config.straggler.model = StragglerModel::ShiftedExponential;
        config.straggler.alpha = 0.5;
        config.straggler.mu = 3.0;
        let series = sampled(&config, 3000);
        let fits = fit_all(&series).unwrap();
        for f in fits.per_worker.iter().chain([&fits.pooled]) {
            assert!(within(f.alpha, 0.5, 0.01), "{f:?}");
            assert!(within(f.mu, 3.0, 0.08), "{f:?}");
            assert!(f.ks < ks_critical_5(f.samples), "{f:?}");
        }
        assert_eq!(fits.chosen, FittedModel::ShiftedExponential);
        // The exact MLE on a small sample: alpha = 1, mean 2 → mu = 1.
        let f = fit_shifted_exponential(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!((f.alpha, f.mu, f.samples), (1.0, 1.0, 3));
        assert!(fit_shifted_exponential(&[2.0, 2.0]).is_none());
        assert!(fit_shifted_exponential(&[2.0]).is_none());
    }

    #[test]
    fn two_state_fit_recovers_a_gilbert_elliott_chain() {
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
        let series = sampled(&config, 2000);
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
        let e = fit_all(&[vec![1.0, 2.0, 4.0], vec![3.0, 3.0, 3.0]]).unwrap_err();
        assert!(e.starts_with("worker 2 "), "{e}");
    }
}
