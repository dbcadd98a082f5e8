//! What a straggler model does in the long run ([`LongRun`]): the share of
//! worker-iterations that straggle and the time of one partition
//! computation, measured over many iterations of trial 0, beside the
//! Gilbert-Elliott chain's exact long-run slow share. `check` prints it, so
//! that a configured `initial_stragglers` is not mistaken for what the
//! chain settles to (000's symmetric chain is slow half of the time).

use serde::Serialize;

use super::{DelaySpec, RoundSample};
use crate::config::StragglerModel;

/// Iterations [`LongRun::measure`] samples.
pub const ITERATIONS: usize = 20_000;

/// A straggler model's long-run behaviour.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LongRun {
    /// Iterations sampled (trial 0).
    pub iterations: usize,
    /// Share of worker-iterations flagged straggling.
    pub straggler_share: f64,
    /// Mean and median time of one partition computation (model time).
    pub mean_unit_time: f64,
    pub median_unit_time: f64,
    /// Gilbert-Elliott: p_fs / (p_fs + p_sf), the chain's exact long-run
    /// slow share (null for the other models, or when no transition can happen).
    pub stationary_slow_share: Option<f64>,
    /// Gilbert-Elliott: initial_stragglers / K, the slow share of the first iteration.
    pub initial_slow_share: Option<f64>,
}

impl LongRun {
    /// Sample `ITERATIONS` iterations of trial 0 of `spec` (a replayed
    /// trace wraps around its rows).
    pub fn measure(spec: &DelaySpec) -> Self {
        let k = spec.workers();
        let mut model = spec.model(0);
        let mut sample = RoundSample::new(k);
        let mut times = Vec::with_capacity(ITERATIONS * k);
        let mut straggling = 0usize;
        for _ in 0..ITERATIONS {
            model.sample(&mut sample);
            times.extend_from_slice(&sample.unit_time);
            straggling += sample.straggling.iter().filter(|s| **s).count();
        }
        let n = times.len().max(1);
        let mean_unit_time = times.iter().sum::<f64>() / n as f64;
        times.sort_unstable_by(f64::total_cmp);
        let median_unit_time = times.get(times.len() / 2).copied().unwrap_or(0.0);
        let s = &spec.config;
        let chain = matches!(
            s.model,
            StragglerModel::GilbertElliott | StragglerModel::GilbertElliottHeterogeneous
        );
        Self {
            iterations: ITERATIONS,
            straggler_share: straggling as f64 / n as f64,
            mean_unit_time,
            median_unit_time,
            stationary_slow_share: s.stationary_slow_share().filter(|_| chain),
            initial_slow_share: chain.then(|| s.initial_stragglers as f64 / k as f64),
        }
    }

    /// A warning when the chain's long-run slow share is far (more than 10
    /// points) from the share `initial_stragglers` starts with: the runs
    /// show the long-run one after about 1 / (p_fs + p_sf) iterations.
    pub fn warning(&self) -> Option<String> {
        let (stationary, initial) = (self.stationary_slow_share?, self.initial_slow_share?);
        ((stationary - initial).abs() > 0.1).then(|| {
            format!(
                "straggler.initial_stragglers starts {:.1}% of the workers slow, but the chain is slow {:.1}% of the time in the long run \
                 (p_fast_to_slow / (p_fast_to_slow + p_slow_to_fast); switch_probability alone gives 50%): \
                 set straggler.p_fast_to_slow and straggler.p_slow_to_fast for another long-run share",
                100.0 * initial,
                100.0 * stationary
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn gilbert_elliott(p: Option<(f64, f64)>) -> Config {
        let mut c = Config {
            workers: 20,
            ..Config::default()
        };
        c.straggler.model = StragglerModel::GilbertElliott;
        c.straggler.initial_stragglers = 2;
        c.straggler.switch_probability = 0.2;
        if let Some((fs, sf)) = p {
            c.straggler.p_fast_to_slow = Some(fs);
            c.straggler.p_slow_to_fast = Some(sf);
        }
        c
    }

    /// Issue 25: configured 2 of 20, the symmetric chain made half of the
    /// workers slow (59.6% of worker-iterations straggling were seen over
    /// 30 x 400); the measured share is the chain's 1/2, and an asymmetric
    /// chain settles where p_fs / (p_fs + p_sf) says.
    #[test]
    fn the_measured_share_is_the_chains_stationary_one() {
        let symmetric = LongRun::measure(&DelaySpec::from_config(&gilbert_elliott(None)).unwrap());
        assert_eq!(symmetric.stationary_slow_share, Some(0.5));
        assert!(
            (symmetric.straggler_share - 0.5).abs() < 0.01,
            "{symmetric:?}"
        );
        assert!(symmetric.warning().unwrap().contains("50.0%"));

        let asymmetric = LongRun::measure(
            &DelaySpec::from_config(&gilbert_elliott(Some((0.02, 0.18)))).unwrap(),
        );
        assert!((asymmetric.stationary_slow_share.unwrap() - 0.1).abs() < 1e-12);
        assert!(
            (asymmetric.straggler_share - 0.1).abs() < 0.01,
            "{asymmetric:?}"
        );
        assert_eq!(asymmetric.warning(), None);
        // Mean of alpha + Exp(rate of the state): 0.9 of 1/10 and 0.1 of 1/0.1.
        let expected = 0.01 + 0.9 / 10.0 + 0.1 / 0.1;
        assert!(
            (asymmetric.mean_unit_time - expected).abs() < 0.05 * expected,
            "{asymmetric:?}"
        );
    }

    #[test]
    fn the_symmetric_chain_is_the_asymmetric_one_with_equal_probabilities() {
        let a = DelaySpec::from_config(&gilbert_elliott(None)).unwrap();
        let b = DelaySpec::from_config(&gilbert_elliott(Some((0.2, 0.2)))).unwrap();
        let (mut ma, mut mb) = (a.model(3), b.model(3));
        let (mut sa, mut sb) = (RoundSample::new(20), RoundSample::new(20));
        for _ in 0..200 {
            ma.sample(&mut sa);
            mb.sample(&mut sb);
            assert_eq!(sa.unit_time, sb.unit_time);
            assert_eq!(sa.straggling, sb.straggling);
        }
    }
}
