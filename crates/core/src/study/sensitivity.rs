//! How the advice depends on a fitted straggler model: the leading
//! candidates re-simulated with one fitted parameter moved to each end of
//! its 95% interval, the others as fitted, on the same samples.

use super::grid::label;
use super::model::{ModelSource, Sensitivity, interval_of};
use super::rank::{Candidate, Objective};
use super::variant::{Outcome, VariantRunner};
use crate::config::{LoadedConfig, Setting};
use crate::engine::EngineError;

/// Candidates re-simulated at each end of the fitted intervals.
pub const SENSITIVITY_CANDIDATES: usize = 5;

/// The best of the `leading` candidates (the advice first) when the fitted
/// model's parameters move, one at a time, to each end of their intervals
/// (kept valid: a time or rate above 0, a probability in [0, 1]), on the
/// same samples; `plain` is the base config without the fitted model. An
/// end whose model makes no valid config, or at which no candidate runs,
/// has no entry.
pub fn sensitivity(
    plain: &LoadedConfig,
    model: &ModelSource,
    leading: &[Candidate],
    objective: Objective,
) -> Result<Vec<Sensitivity>, EngineError> {
    let Some(intervals) = &model.intervals else {
        return Ok(Vec::new());
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
            let settings: Vec<Setting> = moved.settings();
            let Ok(base) = plain.with_settings(&settings) else {
                continue;
            };
            let mut runner = VariantRunner::new(base);
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
