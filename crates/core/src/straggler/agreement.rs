//! Whether a straggler model's flags and a rate threshold name the same
//! workers.
//!
//! Every model records per worker and iteration whether it straggles (the
//! trace's `straggling` flags, the module table above). GC-DC's clustering
//! (000 §VI-B) is given the rates instead whenever the model has a finite
//! rate for every worker, and then calls a worker a straggler when its rate
//! is below `scheme.straggler_threshold` (tau), ignoring the flags. When the
//! two rules can differ, the policy balances other workers than the trace
//! flags: with Gilbert-Elliott and `mu_slow >= tau` nobody straggles to the
//! policy while half the workers are slow in the long run.
//! [`rate_threshold_disagreements`] says when, naming the keys.

use crate::config::{StragglerConfig, StragglerMode, StragglerModel};

/// One line per way in which the flags of `s` and the rule "rate < `tau`"
/// can disagree on some worker in some iteration (empty: they always
/// agree). `tau` is `scheme.straggler_threshold`.
///
/// The rules, by model (rates in 1 / model time):
/// - `none`, `trace`: no rates, the policy reads the flags: never.
/// - `shifted-exponential`: every rate is `mu`, nobody is flagged: when
///   `mu < tau` (the policy then calls everybody a straggler).
/// - `gilbert-elliott`: the slow state is flagged, its rate is `mu_slow`,
///   the fast one's `mu_fast`: unless `mu_slow < tau <= mu_fast`.
/// - `gilbert-elliott-heterogeneous`, `time-varying`: a rate below
///   `rate_threshold` is flagged; they disagree on the rates in
///   [min, max) of `rate_threshold` and tau: when the two differ and the
///   smaller is below the largest rate the model draws (`rate_max`, or
///   `rate_max / slow_factor` with `slow_factor < 1`, or the time-varying
///   model's `rate_threshold` when it exceeds `rate_max`).
/// - `extra-delay`: every rate is `mu`, the delayed workers are flagged:
///   when some worker is delayed and `mu >= tau` (the policy sees none of
///   them), or some is not and `mu < tau` (it sees everybody).
/// - `straggler.mode = measured` (`train`): a measured rate below
///   `rate_threshold` is flagged: when `rate_threshold != tau`.
pub fn rate_threshold_disagreements(s: &StragglerConfig, workers: usize, tau: f64) -> Vec<String> {
    let policy = "gc-dc's clustering, given the rates, calls a worker a straggler when its rate is below scheme.straggler_threshold";
    let mut out = Vec::new();
    match s.model {
        StragglerModel::None | StragglerModel::Trace => {}
        StragglerModel::ShiftedExponential => {
            if s.mu < tau {
                out.push(format!(
                    "straggler.mu = {} < scheme.straggler_threshold = {tau}: {policy}, so it calls every worker a straggler, while straggler.model = shifted-exponential flags none (they agree when straggler.mu >= scheme.straggler_threshold)",
                    s.mu
                ));
            }
        }
        StragglerModel::GilbertElliott => {
            if !(s.mu_slow < tau && tau <= s.mu_fast) {
                let what = if s.mu_slow >= tau {
                    format!(
                        "straggler.mu_slow = {} >= scheme.straggler_threshold = {tau}: {policy}, so no slow worker is one to it",
                        s.mu_slow
                    )
                } else {
                    format!(
                        "straggler.mu_fast = {} < scheme.straggler_threshold = {tau}: {policy}, so every fast worker is one to it too",
                        s.mu_fast
                    )
                };
                out.push(format!(
                    "{what}, while straggler.model = gilbert-elliott flags exactly the slow workers (they agree when straggler.mu_slow < scheme.straggler_threshold <= straggler.mu_fast)"
                ));
            }
        }
        StragglerModel::GilbertElliottHeterogeneous | StragglerModel::TimeVarying => {
            let largest = if s.model == StragglerModel::TimeVarying {
                s.rate_max.max(s.rate_threshold)
            } else {
                s.rate_max / s.slow_factor.min(1.0)
            };
            let (lo, hi) = (s.rate_threshold.min(tau), s.rate_threshold.max(tau));
            if lo < hi && lo < largest {
                out.push(format!(
                    "straggler.rate_threshold = {} differs from scheme.straggler_threshold = {tau}: straggler.model = {} flags a worker whose rate is below straggler.rate_threshold and {policy}, so they disagree on the workers with rates in [{lo}, {hi}) (they agree when the two are equal)",
                    s.rate_threshold,
                    s.model.name()
                ));
            }
        }
        StragglerModel::ExtraDelay => {
            let delayed = if s.delayed_workers.is_empty() {
                s.delayed_count
            } else {
                s.delayed_workers.len()
            };
            if delayed > 0 && s.mu >= tau {
                out.push(format!(
                    "straggler.model = extra-delay flags the delayed workers but gives every worker the rate straggler.mu = {} >= scheme.straggler_threshold = {tau}: {policy}, so it sees none of the delayed workers and cannot spread them",
                    s.mu
                ));
            } else if delayed < workers && s.mu < tau {
                out.push(format!(
                    "straggler.model = extra-delay flags the delayed workers but gives every worker the rate straggler.mu = {} < scheme.straggler_threshold = {tau}: {policy}, so it calls every worker a straggler",
                    s.mu
                ));
            }
        }
    }
    if s.mode == StragglerMode::Measured && s.rate_threshold != tau {
        out.push(format!(
            "straggler.mode = measured: train flags a worker whose measured rate is below straggler.rate_threshold = {} and {policy} = {tau}; they disagree on the rates between the two (they agree when the two are equal)",
            s.rate_threshold
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::straggler::{DelaySpec, RoundSample};

    fn config(model: StragglerModel, set: impl FnOnce(&mut StragglerConfig)) -> StragglerConfig {
        let mut s = StragglerConfig {
            model,
            ..StragglerConfig::default()
        };
        set(&mut s);
        s
    }

    /// Sampled: does any worker of any of 200 iterations have its flag differ
    /// from "rate < tau" (the rule the policy applies to finite rates)?
    /// (The heterogeneous Gilbert-Elliott rates are drawn once per worker:
    /// 40 workers make a rate in a narrow band likely.)
    fn sampled_disagreement(s: &StragglerConfig, workers: usize, tau: f64) -> bool {
        let mut config = crate::config::Config {
            workers,
            ..crate::config::Config::default()
        };
        config.straggler = s.clone();
        let mut model = DelaySpec::from_config(&config).unwrap().model(0);
        let mut sample = RoundSample::new(workers);
        (0..200).any(|_| {
            model.sample(&mut sample);
            sample.rates().is_some()
                && (0..workers).any(|w| sample.straggling[w] != (sample.rate[w] < tau))
        })
    }

    #[test]
    fn the_rule_matches_what_the_models_draw() {
        use StragglerModel::*;
        let cases = [
            config(ShiftedExponential, |_| {}),
            config(ShiftedExponential, |s| s.mu = 0.2),
            config(GilbertElliott, |s| s.switch_probability = 0.3),
            config(GilbertElliott, |s| {
                s.mu_slow = 1.0;
                s.switch_probability = 0.3;
            }),
            config(GilbertElliott, |s| {
                s.mu_fast = 0.4;
                s.mu_slow = 0.1;
                s.switch_probability = 0.3;
            }),
            config(GilbertElliottHeterogeneous, |_| {}),
            config(GilbertElliottHeterogeneous, |s| s.rate_threshold = 1.0),
            config(TimeVarying, |s| s.switch_probability = 0.3),
            config(TimeVarying, |s| {
                s.rate_threshold = 0.2;
                s.switch_probability = 0.3;
            }),
            config(ExtraDelay, |s| s.delayed_count = 2),
            config(ExtraDelay, |_| {}),
            config(ExtraDelay, |s| s.mu = 0.2),
            config(None, |_| {}),
        ];
        let warned: Vec<bool> = cases
            .iter()
            .map(|s| !rate_threshold_disagreements(s, 40, 0.5).is_empty())
            .collect();
        for (s, &warned) in cases.iter().zip(&warned) {
            assert_eq!(
                warned,
                sampled_disagreement(s, 40, 0.5),
                "{} {s:?}",
                s.model.name()
            );
        }
        assert_eq!(
            warned,
            [
                false, true, false, true, true, false, true, false, true, true, false, true, false
            ]
        );
    }

    #[test]
    fn the_warnings_name_the_keys_and_the_rule() {
        let s = config(StragglerModel::GilbertElliott, |s| s.mu_slow = 1.0);
        let w = rate_threshold_disagreements(&s, 12, 0.5);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].starts_with("straggler.mu_slow = 1 >= scheme.straggler_threshold = 0.5: "),
            "{}",
            w[0]
        );
        assert!(
            w[0].ends_with(
                "(they agree when straggler.mu_slow < scheme.straggler_threshold <= straggler.mu_fast)"
            ),
            "{}",
            w[0]
        );
        let measured = config(StragglerModel::None, |s| {
            s.mode = StragglerMode::Measured;
            s.rate_threshold = 0.8;
        });
        let w = rate_threshold_disagreements(&measured, 12, 0.5);
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("straggler.rate_threshold = 0.8"), "{}", w[0]);
        assert!(rate_threshold_disagreements(&measured, 12, 0.8).is_empty());
    }
}
