//! Rules for every section except the structure of `[scheme]`, which the
//! scheme constructors check (`coding::build`), so that each rule lives once.

use super::schema::*;
use crate::error::InputError;

type Result = std::result::Result<(), InputError>;

fn at_least(field: &str, value: usize, min: usize) -> Result {
    if value < min {
        return Err(InputError::value(
            field,
            value,
            format!("must be at least {min}"),
        ));
    }
    Ok(())
}

fn positive(field: &str, value: f64) -> Result {
    if !(value.is_finite() && value > 0.0) {
        return Err(InputError::value(
            field,
            value,
            "must be a finite number > 0",
        ));
    }
    Ok(())
}

fn non_negative(field: &str, value: f64) -> Result {
    if !(value.is_finite() && value >= 0.0) {
        return Err(InputError::value(
            field,
            value,
            "must be a finite number >= 0",
        ));
    }
    Ok(())
}

/// Check every rule that does not belong to a scheme constructor.
pub fn validate(config: &Config) -> Result {
    at_least("workers", config.workers, 1)?;
    validate_straggler(&config.straggler)?;
    validate_data(&config.data, config.workers)?;
    validate_model(&config.model, &config.data)?;
    validate_train(&config.train)?;
    validate_output(&config.output)?;
    validate_simulate(&config.simulate)?;
    Ok(())
}

fn validate_straggler(s: &StragglerConfig) -> Result {
    non_negative("straggler.alpha", s.alpha)?;
    positive("straggler.mu", s.mu)?;
    positive("straggler.time_unit_ms", s.time_unit_ms)?;
    Ok(())
}

fn validate_data(d: &DataConfig, workers: usize) -> Result {
    match d.kind {
        DataKind::SyntheticLinear | DataKind::SyntheticLogistic => {
            if d.train_samples < workers {
                return Err(InputError::value(
                    "data.train_samples",
                    d.train_samples,
                    format!("is fewer than workers = {workers} (every partition needs a sample)"),
                ));
            }
            at_least("data.test_samples", d.test_samples, 1)?;
            at_least("data.features", d.features, 1)?;
            non_negative("data.noise_std", d.noise_std)?;
            for (field, value) in [("data.path", &d.path), ("data.test_path", &d.test_path)] {
                if value.is_some() {
                    return Err(InputError::new(
                        field,
                        format!(
                            "is set but data.kind = {} generates its data",
                            kind_name(d.kind)
                        ),
                    ));
                }
            }
        }
        DataKind::Libsvm | DataKind::Csv => {
            match &d.path {
                None => {
                    return Err(InputError::new(
                        "data.path",
                        format!("is required when data.kind = {}", kind_name(d.kind)),
                    ));
                }
                Some(p) if p.trim().is_empty() => {
                    return Err(InputError::value("data.path", "\"\"", "must name a file"));
                }
                Some(_) => {}
            }
            if !(d.test_fraction.is_finite() && (0.0..1.0).contains(&d.test_fraction)) {
                return Err(InputError::value(
                    "data.test_fraction",
                    d.test_fraction,
                    "must be in [0, 1)",
                ));
            }
        }
    }
    Ok(())
}

fn kind_name(kind: DataKind) -> &'static str {
    match kind {
        DataKind::SyntheticLinear => "synthetic-linear",
        DataKind::SyntheticLogistic => "synthetic-logistic",
        DataKind::Libsvm => "libsvm",
        DataKind::Csv => "csv",
    }
}

fn validate_model(m: &ModelConfig, d: &DataConfig) -> Result {
    non_negative("model.l2", m.l2)?;
    if m.loss == Loss::Logistic && d.kind == DataKind::SyntheticLinear {
        return Err(InputError::value(
            "model.loss",
            "\"logistic\"",
            "needs binary labels, but data.kind = synthetic-linear generates real-valued ones",
        ));
    }
    Ok(())
}

fn validate_train(t: &TrainConfig) -> Result {
    at_least("train.iterations", t.iterations, 1)?;
    positive("train.learning_rate", t.learning_rate)?;
    positive("train.decay_iterations", t.decay_iterations)?;
    at_least("train.eval_every", t.eval_every, 1)?;
    Ok(())
}

fn validate_output(o: &OutputConfig) -> Result {
    if o.trace.trim().is_empty() {
        return Err(InputError::value(
            "output.trace",
            "\"\"",
            "must name a file",
        ));
    }
    at_least("output.progress_every", o.progress_every, 1)?;
    Ok(())
}

fn validate_simulate(s: &SimulateConfig) -> Result {
    at_least("simulate.trials", s.trials, 1)?;
    at_least("simulate.iterations", s.iterations, 1)?;
    Ok(())
}
