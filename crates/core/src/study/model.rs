//! The straggler model a study simulates: the config's, or one fitted to
//! measured per-worker times ([`crate::straggler::fit`]: per-worker and
//! pooled shifted-exponential fits and a two-state slow/fast fit, each with
//! its Kolmogorov-Smirnov distance; the chosen fit replaces `[straggler]`),
//! with 95% block-bootstrap intervals of the fitted parameters
//! ([`crate::straggler::fit_interval`]), and the advice at each end of
//! them ([`Sensitivity`], computed by
//! [`super::sensitivity::sensitivity`]).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::config::Setting;
use crate::error::InputError;
use crate::straggler::TraceTable;
use crate::straggler::fit::{self, Fits, FittedModel, Value};
use crate::straggler::fit_interval::{self, FitIntervals, Interval};

/// Where the simulated straggler model comes from.
#[derive(Debug, Serialize)]
pub struct ModelSource {
    /// `config`, `replay` or `trace`.
    pub source: &'static str,
    /// The replay CSV or the training trace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The `straggler.model` simulated.
    pub model: String,
    /// The `[straggler]` keys the fit set (empty for the config's model).
    pub set: BTreeMap<String, f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fits: Option<Fits>,
    /// 95% block-bootstrap intervals of the fitted parameters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intervals: Option<FitIntervals>,
    /// The best candidate with each simulated parameter at each end of its
    /// interval (the other parameters as fitted); absent without a fit or
    /// with `time-to-loss`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sensitivity: Vec<Sensitivity>,
    /// `trace` only: worker-iterations without a result in time, whose
    /// value is the iteration's end (a lower bound).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub censored: Option<usize>,
}

impl ModelSource {
    /// The config's own model `model`, nothing fitted.
    pub fn config_default(model: &str) -> Self {
        Self {
            source: "config",
            file: None,
            model: model.to_string(),
            set: BTreeMap::new(),
            fits: None,
            intervals: None,
            sensitivity: Vec::new(),
            censored: None,
        }
    }

    /// The `[straggler]` settings of a fitted model (none for the config's):
    /// `straggler.model`, then each fitted key (`initial_stragglers` a whole
    /// number of workers).
    pub fn settings(&self) -> Vec<Setting> {
        if self.source == "config" {
            return Vec::new();
        }
        let setting = |key: &str, value: toml::Value| {
            Setting::new(&format!("straggler.{key}"), value).expect("straggler keys are not empty")
        };
        let mut out = vec![setting("model", self.model.clone().into())];
        for (k, v) in &self.set {
            let value = if k == "initial_stragglers" {
                toml::Value::Integer(*v as u64 as i64)
            } else {
                toml::Value::Float(*v)
            };
            out.push(setting(k, value));
        }
        out
    }
}

/// The best candidate with one fitted parameter moved to an end of its
/// interval.
#[derive(Debug, Serialize)]
pub struct Sensitivity {
    /// The `[straggler]` key.
    pub parameter: String,
    pub value: f64,
    /// "scheme settings" of the best of the leading candidates re-simulated.
    pub best: String,
    /// The best is the advice's.
    pub same: bool,
}

/// `--replay`'s error: the flag, then the reader's message.
fn replay_error(e: impl std::fmt::Display) -> InputError {
    InputError::new("--replay", e)
}

/// Fit the first `workers` columns of the replay CSV `path`; errors name
/// `--replay`.
pub fn fit_replay(path: &Path, workers: usize) -> Result<ModelSource, InputError> {
    let table = TraceTable::load(path).map_err(replay_error)?;
    let columns = table.select_columns(None, workers).map_err(replay_error)?;
    let series: Vec<Vec<Value>> = columns
        .iter()
        .map(|&c| {
            (0..table.rows())
                .map(|r| (table.value(r, c), false))
                .collect()
        })
        .collect();
    fit_series(&series, workers, "replay", "--replay", path)
}

/// Fit `series` (one vector per worker, read from `path`) and the
/// `[straggler]` keys of the chosen fit; errors name `flag`.
pub fn fit_series(
    series: &[Vec<Value>],
    workers: usize,
    source: &'static str,
    flag: &str,
    path: &Path,
) -> Result<ModelSource, InputError> {
    let fits = fit::fit_all(series)
        .map_err(|e| InputError::new(flag, format!("{}: {e}", path.display())))?;
    let intervals = fit_interval::fit_intervals(series, 0);
    let (model, set) = match fits.chosen {
        FittedModel::ShiftedExponential => (
            "shifted-exponential",
            BTreeMap::from([
                ("alpha".to_string(), fits.pooled.alpha),
                ("mu".to_string(), fits.pooled.mu),
            ]),
        ),
        FittedModel::TwoState => {
            let t = &fits.two_state;
            (
                "gilbert-elliott",
                BTreeMap::from([
                    ("alpha".to_string(), t.alpha),
                    ("mu_fast".to_string(), t.mu_fast),
                    ("mu_slow".to_string(), t.mu_slow),
                    ("switch_probability".to_string(), t.switch_probability),
                    (
                        "initial_stragglers".to_string(),
                        (t.slow_fraction * workers as f64).round(),
                    ),
                ]),
            )
        }
    };
    Ok(ModelSource {
        source,
        file: Some(path.display().to_string()),
        model: model.to_string(),
        set,
        fits: Some(fits),
        intervals,
        sensitivity: Vec::new(),
        censored: None,
    })
}

/// The interval of the simulated `[straggler]` key `key`, if it has one.
pub fn interval_of(intervals: &FitIntervals, model: &str, key: &str) -> Option<Interval> {
    match (model, key) {
        (_, "alpha") => Some(intervals.alpha),
        ("shifted-exponential", "mu") => Some(intervals.mu),
        (_, "mu_fast") => Some(intervals.mu_fast),
        (_, "mu_slow") => Some(intervals.mu_slow),
        (_, "switch_probability") => Some(intervals.switch_probability),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fitted_models_become_straggler_settings() {
        let m = ModelSource {
            source: "replay",
            model: "gilbert-elliott".into(),
            set: BTreeMap::from([
                ("alpha".to_string(), 0.01),
                ("initial_stragglers".to_string(), 10.0),
            ]),
            ..ModelSource::config_default("none")
        };
        let text: Vec<String> = m.settings().iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "straggler.model=\"gilbert-elliott\"",
                "straggler.alpha=0.01",
                "straggler.initial_stragglers=10"
            ]
        );
        assert!(
            ModelSource::config_default("gilbert-elliott")
                .settings()
                .is_empty()
        );
    }

    /// A fit's settings give the config that the same values as `--set`
    /// text give (what advise appended before they were typed).
    #[test]
    fn fitted_settings_equal_their_text_on_a_config() {
        let m = ModelSource {
            source: "replay",
            model: "gilbert-elliott".into(),
            set: BTreeMap::from([
                ("alpha".to_string(), 0.1 + 0.2),
                ("mu_fast".to_string(), 1.0 / 3.0),
                ("mu_slow".to_string(), 0.05),
                ("switch_probability".to_string(), 0.125),
                ("initial_stragglers".to_string(), 3.0),
            ]),
            ..ModelSource::config_default("none")
        };
        let base = crate::config::parse(crate::config::DEMO_TOML, "demo", &[]).unwrap();
        let typed = base.with_settings(&m.settings()).unwrap();
        let mut text = vec!["straggler.model=\"gilbert-elliott\"".to_string()];
        for (k, v) in &m.set {
            if k == "initial_stragglers" {
                text.push(format!("straggler.{k}={}", *v as u64));
            } else {
                text.push(format!("straggler.{k}={v:?}"));
            }
        }
        let reloaded = crate::config::parse(crate::config::DEMO_TOML, "demo", &text).unwrap();
        assert_eq!(typed.config, reloaded.config);
        assert_eq!(typed.explicit, reloaded.explicit);
    }
}
