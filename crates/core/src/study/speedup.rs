//! The speedup of one set of runs over a baseline's (`compare`):
//! speedup = baseline time / this time (> 1: faster than the baseline).
//! Runs with the baseline's seeds (two or more, the same set: repeated
//! seeds, or a simulation's trials on common random numbers) are paired by
//! seed: the geometric mean of the per-seed ratios, with a 95% Student t
//! interval on their logarithms; other runs get the ratio of the two mean
//! times, without an interval.

use std::collections::BTreeMap;

use serde::Serialize;

/// The speedup of a row over the baseline row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Speedup {
    /// Baseline time / this time.
    pub value: f64,
    /// The 95% interval of a paired speedup (`None`: not paired).
    pub ci95: Option<[f64; 2]>,
    /// `ratio` (one run each), `ratio of means` (unpaired runs) or
    /// `paired geometric mean` (runs paired by seed).
    pub method: &'static str,
}

/// `(seed, trial)`: what pairs a run with the baseline's.
pub type PairKey = (Option<u64>, Option<usize>);

/// The speedup `baseline / this` of paired or unpaired runs (see the
/// module docs): `None` when a time is missing, not finite or not positive.
pub fn speedup(
    baseline: &[(PairKey, Option<f64>)],
    this: &[(PairKey, Option<f64>)],
) -> Option<Speedup> {
    let times = |runs: &[(PairKey, Option<f64>)]| -> Option<Vec<(PairKey, f64)>> {
        runs.iter()
            .map(|(k, t)| t.filter(|t| t.is_finite() && *t > 0.0).map(|t| (*k, t)))
            .collect()
    };
    let (b, a) = (times(baseline)?, times(this)?);
    if b.is_empty() || a.is_empty() {
        return None;
    }
    if a.len() == 1 && b.len() == 1 {
        return Some(Speedup {
            value: b[0].1 / a[0].1,
            ci95: None,
            method: "ratio",
        });
    }
    let keys = |runs: &[(PairKey, f64)]| -> Option<BTreeMap<(u64, Option<usize>), f64>> {
        let mut map = BTreeMap::new();
        for ((seed, trial), t) in runs {
            if map.insert(((*seed)?, *trial), *t).is_some() {
                return None;
            }
        }
        Some(map)
    };
    let paired = match (keys(&b), keys(&a)) {
        (Some(kb), Some(ka)) if kb.len() >= 2 && kb.keys().eq(ka.keys()) => Some((kb, ka)),
        _ => None,
    };
    match paired {
        Some((kb, ka)) => {
            let logs: Vec<f64> = kb
                .values()
                .zip(ka.values())
                .map(|(tb, ta)| (tb / ta).ln())
                .collect();
            let n = logs.len() as f64;
            let mean = logs.iter().sum::<f64>() / n;
            let var = logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
            let half = crate::stats::student_t_quantile(0.975, n - 1.0) * (var / n).sqrt();
            Some(Speedup {
                value: mean.exp(),
                ci95: Some([(mean - half).exp(), (mean + half).exp()]),
                method: "paired geometric mean",
            })
        }
        None => {
            let mean =
                |runs: &[(PairKey, f64)]| runs.iter().map(|r| r.1).sum::<f64>() / runs.len() as f64;
            Some(Speedup {
                value: mean(&b) / mean(&a),
                ci95: None,
                method: "ratio of means",
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(seed: u64) -> PairKey {
        (Some(seed), None)
    }

    #[test]
    fn one_run_each_is_the_plain_ratio() {
        let s = speedup(&[(k(1), Some(3.0))], &[(k(2), Some(2.0))]).unwrap();
        assert_eq!((s.value, s.ci95, s.method), (1.5, None, "ratio"));
        assert_eq!(speedup(&[(k(1), None)], &[(k(1), Some(2.0))]), None);
        assert_eq!(speedup(&[(k(1), Some(1.0))], &[(k(1), Some(0.0))]), None);
    }

    #[test]
    fn paired_seeds_give_the_geometric_mean_and_a_t_interval_on_the_logs() {
        // Ratios 2 and 8 (by seed, whatever the order given): geometric mean 4.
        let base = [(k(1), Some(4.0)), (k(2), Some(8.0))];
        let this = [(k(2), Some(1.0)), (k(1), Some(2.0))];
        let s = speedup(&base, &this).unwrap();
        assert!((s.value - 4.0).abs() < 1e-12, "{s:?}");
        assert_eq!(s.method, "paired geometric mean");
        // logs ln 2, ln 8: mean ln 4, deviations ± ln 2, sd sqrt 2 · ln 2,
        // half-width t(0.975, 1) · sd / sqrt 2 = 12.7062047 · ln 2.
        let half = 12.706_204_736_174_7 * 2f64.ln();
        let [lo, hi] = s.ci95.unwrap();
        assert!((lo / (4f64.ln() - half).exp() - 1.0).abs() < 1e-9, "{lo}");
        assert!((hi / (4f64.ln() + half).exp() - 1.0).abs() < 1e-9, "{hi}");
        // The baseline against itself: exactly 1, a zero-width interval.
        let own = speedup(&base, &base).unwrap();
        assert_eq!((own.value, own.ci95), (1.0, Some([1.0, 1.0])));
    }

    #[test]
    fn other_seeds_or_counts_give_the_ratio_of_means_without_interval() {
        let base = [(k(1), Some(4.0)), (k(2), Some(8.0))];
        for this in [
            vec![(k(1), Some(2.0)), (k(3), Some(4.0))],
            vec![(k(1), Some(2.0)), (k(2), Some(2.0)), (k(3), Some(5.0))],
            vec![((None, None), Some(2.0)), ((None, None), Some(4.0))],
        ] {
            let s = speedup(&base, &this).unwrap();
            let mean = this.iter().map(|t| t.1.unwrap()).sum::<f64>() / this.len() as f64;
            assert_eq!(
                (s.value, s.ci95, s.method),
                (6.0 / mean, None, "ratio of means")
            );
        }
        // Simulation trials pair by (seed, trial).
        let trials = |seed| {
            [
                ((Some(seed), Some(0)), Some(1.0)),
                ((Some(seed), Some(1)), Some(2.0)),
            ]
        };
        assert_eq!(
            speedup(&trials(5), &trials(5)).unwrap().method,
            "paired geometric mean"
        );
        assert_eq!(
            speedup(&trials(5), &trials(6)).unwrap().method,
            "ratio of means"
        );
    }
}
