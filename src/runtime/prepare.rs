//! Rank 0's preparation of `train`, before any MPI work and without
//! creating or changing a file: the config, the scheme, the world size,
//! what makes the run trainable, the data files (cheap checks), and the
//! trace (a new run's path checked, or a resumed run's trace read).

use std::path::Path;

use super::{TrainOptions, resume};
use crate::coding::Scheme;
use crate::config::{Config, StateInfo, StragglerMode};
use crate::error::InputError;
use crate::trace::{Target, TraceSink};

/// Rank 0's preparation, before any MPI work and without creating or
/// changing a file: config, scheme, world size, trainability, data files
/// (cheap checks; the workers load them later), the trace's path, and the
/// snapshot a resumed run continues from (read only).
pub(super) struct Prepared {
    pub loaded: crate::config::LoadedConfig,
    pub scheme: Box<dyn Scheme>,
    /// The trace: its path checked, or the resumed one read (its restore point).
    pub trace: Option<TraceSink>,
}

pub(super) fn prepare(options: &TrainOptions, world_size: usize) -> Result<Prepared, InputError> {
    if let Some(path) = &options.resume {
        return prepare_resume(options, path, world_size);
    }
    let setup = crate::setup::load(options.config.as_deref(), &options.overrides)?;
    warn_unused(&setup.loaded);
    let crate::setup::Setup { loaded, scheme, .. } = setup;
    check_world(&loaded.config, world_size)?;
    check_trainable(&loaded.config, scheme.as_ref())?;
    crate::learn::data::check_data_files(&loaded.config, scheme.partitions())?;
    // Last: the path is checked, the file created when training starts,
    // with the data files' fingerprint a resume checks.
    let mut trace = TraceSink::for_run(&loaded.config, scheme.as_ref(), target(options))?;
    if let Some(trace) = trace.as_mut() {
        trace.set_data_fingerprint(resume::data_fingerprint(&loaded.config)?);
    }
    Ok(Prepared {
        loaded,
        scheme,
        trace,
    })
}

/// `--resume F.h5`: the config stored in the trace (with any `--set`), the
/// trace reopened at its last snapshot.
fn prepare_resume(
    options: &TrainOptions,
    path: &Path,
    world_size: usize,
) -> Result<Prepared, InputError> {
    for (flag, given) in [
        ("--config", options.config.is_some()),
        ("--out", options.out.is_some()),
    ] {
        if given {
            return Err(InputError::new(
                flag,
                "cannot be given with --resume: the run continues the trace and its config",
            ));
        }
    }
    // Only what cannot make it another run may change.
    resume::check_overrides(&options.overrides)?;
    // Read only: a refused resume leaves the file as it was.
    let (trace, snapshot) = TraceSink::resume(path)?;
    let origin = format!("{} (config_toml)", path.display());
    let setup = crate::setup::parse(&snapshot.config_toml, &origin, &options.overrides)?;
    // The stored config is the resolved one, every key set: its unused keys
    // were reported when the run started.
    let crate::setup::Setup { loaded, scheme, .. } = setup;
    check_world(&loaded.config, world_size)?;
    check_trainable(&loaded.config, scheme.as_ref())?;
    if snapshot.iteration >= loaded.config.train.iterations as u64 {
        return Err(InputError::value(
            "train.iterations",
            loaded.config.train.iterations,
            format!(
                "is already reached: the trace has {} iterations (raise it with --set train.iterations=N to train longer)",
                snapshot.iteration
            ),
        ));
    }
    crate::learn::data::check_data_files(&loaded.config, scheme.partitions())?;
    if !resume::check_data(trace.stored_data_fingerprint(), &loaded.config)? {
        crate::errln!(
            "warning: {} has no fingerprint of the data files, or none of the named set's (written by an older gradcode): those files are not checked",
            path.display()
        );
    }
    Ok(Prepared {
        loaded,
        scheme,
        trace: Some(trace),
    })
}

/// Print the keys that are set but unused, and the loader's other warnings
/// (gc-dc's straggler threshold against the model's flags), one `warning:`
/// line each.
fn warn_unused(loaded: &crate::config::LoadedConfig) {
    for warning in loaded.warnings() {
        crate::errln!("warning: {warning}");
    }
}

fn check_world(config: &Config, world_size: usize) -> Result<(), InputError> {
    let k = config.workers;
    if world_size != k + 1 {
        return Err(InputError::value(
            "workers",
            k,
            format!(
                "needs {} MPI ranks (1 master + {k} workers) but this run has {world_size}: use mpirun -n {}",
                k + 1,
                k + 1
            ),
        ));
    }
    Ok(())
}

/// Where `--out`, `--force` and `--config` put the trace.
fn target(options: &TrainOptions) -> Target<'_> {
    Target {
        out: options.out.as_deref(),
        force: options.force,
        config_file: options.config.as_deref(),
    }
}

/// Checks a training run needs beyond the config's own rules, made on rank 0
/// before any MPI work starts.
pub fn check_trainable(config: &Config, scheme: &dyn Scheme) -> Result<(), InputError> {
    if !scheme.exact_decoding() {
        return Err(InputError::value(
            "scheme.kind",
            scheme.kind().name(),
            "does not decode exactly in f64 at this size (see `gradcode check`): train refuses it; simulate works",
        ));
    }
    let s = &config.straggler;
    if s.mode == StragglerMode::Measured && s.state_info == StateInfo::Perfect {
        return Err(InputError::value(
            "straggler.state_info",
            "\"perfect\"",
            "needs straggler.mode = \"emulate\": measured speeds are known only after the iteration",
        ));
    }
    if s.mode == StragglerMode::Emulate {
        // Every computation takes at least alpha model time units: beyond the
        // result timeout no result could ever arrive in time.
        let floor_s = s.alpha * s.time_unit_ms / 1000.0;
        let timeout_s = config.train.result_timeout_s;
        if s.model.keys().contains(&"alpha") && floor_s > timeout_s {
            return Err(InputError::value(
                "straggler.alpha",
                short(s.alpha),
                format!(
                    "makes every emulated computation take at least {floor_s:.3e} s (alpha x straggler.time_unit_ms), more than train.result_timeout_s = {}: no result would arrive in time",
                    short(timeout_s)
                ),
            ));
        }
        crate::straggler::DelaySpec::from_config(config)?;
    }
    Ok(())
}

/// A number for a message: plain when short, in exponent form when plain
/// would print hundreds of digits.
fn short(x: f64) -> String {
    if x == 0.0 || (1e-4..1e15).contains(&x.abs()) {
        x.to_string()
    } else {
        format!("{x:e}")
    }
}
