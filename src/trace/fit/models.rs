//! The straggler model and the network `advise` simulates its candidates
//! with: fitted to `--replay` (a replay CSV,
//! [`crate::study::model::fit_replay`]) or to `--trace` (a training trace:
//! its compute times through [`crate::study::model::fit_series`], its
//! transfers through [`crate::trace::fit::network::fit_network`]), or the
//! config's; and the config of the candidates, the loaded one with the
//! fitted keys.

use std::path::Path;

use super::network::{NetworkSource, fit_network};
use crate::config::{Config, LoadedConfig, NetworkConfig};
use crate::error::InputError;
use crate::study::model::{ModelSource, fit_replay, fit_series};

/// Fit the times of the first `workers` workers of the training trace
/// `path`, and its transfers to a network over the config's `network`
/// (errors are `--trace`'s).
pub fn fit_trace(
    path: &Path,
    workers: usize,
    network: Option<&NetworkConfig>,
) -> Result<(ModelSource, NetworkSource), InputError> {
    let measured = crate::trace::measured::read(path, "--trace")?;
    if measured.series.len() < workers {
        return Err(InputError::new(
            "--trace",
            format!(
                "{}: has {} workers, fewer than workers = {workers}",
                path.display(),
                measured.series.len()
            ),
        ));
    }
    let mut source = fit_series(
        &measured.series[..workers],
        workers,
        "trace",
        "--trace",
        path,
    )?;
    source.censored = Some(measured.censored);
    Ok((source, fit_network(&measured, network)))
}

/// The straggler model and the network of the candidates: fitted to the
/// replay CSV `replay` (which wins when both are given) or the training
/// trace `trace`, or the config's.
pub fn fit_models(
    replay: Option<&Path>,
    trace: Option<&Path>,
    config: &Config,
) -> Result<(ModelSource, NetworkSource), InputError> {
    let k = config.workers;
    let from_config = || NetworkSource::from_config(config.network.as_ref());
    Ok(match (replay, trace) {
        (Some(path), _) => (fit_replay(path, k)?, from_config()),
        (None, Some(path)) => fit_trace(path, k, config.network.as_ref())?,
        (None, None) => (
            ModelSource::config_default(config.straggler.model.name()),
            from_config(),
        ),
    })
}

/// The typed base of the candidates: the config (`config`, the embedded
/// demo when `None`, with `overrides`) as parsed (its `[scheme]` not
/// resolved by the loader), and it with the fitted model's `[straggler]`
/// and the fitted network's keys.
pub fn fitted_base(
    config: Option<&Path>,
    overrides: &[String],
    straggler: &ModelSource,
    network: &NetworkSource,
) -> Result<(LoadedConfig, LoadedConfig), InputError> {
    let plain = crate::config::load(config, overrides)?;
    let mut settings = straggler.settings();
    settings.extend(network.settings()?);
    let fitted = plain.with_settings(&settings)?;
    // The fitted model must make a valid config (it does for every fit; an
    // error here names the key).
    crate::setup::from_parsed(&crate::coding::SCHEMES, fitted.clone())?;
    Ok((plain, fitted))
}
