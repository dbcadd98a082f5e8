//! `gradcode evaluate F.h5`: the model a training run stored (`/model/theta`)
//! evaluated on the run's test set, its training set (`--train`) or other
//! data (`--set data.KEY=VALUE`): the objective, and for a classifier the
//! accuracy, each class's accuracy and the confusion matrix. The model is
//! rebuilt from the trace's `config_toml`, so every number is computed as
//! `train` computes its final ones: on the run's own test set the loss and
//! accuracy equal the trace's `final_test_loss` and `final_test_accuracy`.

use std::path::PathBuf;

use clap::Args;

use crate::error::InputError;

/// The flags of `evaluate`.
#[derive(Debug, Args)]
pub struct EvaluateArgs {
    /// The training trace (`train --out`).
    #[arg(value_name = "F.h5")]
    pub file: PathBuf,
    /// Change a `[data]` key of the trace's config, e.g. `--set
    /// data.test_path="other.idx"` (repeatable; only data.* keys).
    #[arg(long = "set", value_name = "data.KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Evaluate on the training set (every partition) instead of the test set.
    #[arg(long)]
    pub train: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Refuse a `--set` whose key is not under `[data]`: the model (its kind,
/// its sizes, its seed) is the trace's; only what it is evaluated on may change.
fn check_overrides(overrides: &[String]) -> Result<(), InputError> {
    for o in overrides {
        let key = o.split_once('=').map_or(o.as_str(), |(k, _)| k).trim();
        if !key.starts_with("data.") {
            return Err(InputError::new(
                key,
                "cannot be changed by --set on evaluate: the model is the trace's (only data.* keys may change)",
            ));
        }
    }
    Ok(())
}

pub(crate) fn run(flags: &EvaluateArgs) -> anyhow::Result<()> {
    check_overrides(&flags.overrides)?;
    crate::trace::backend::check(crate::trace::backend::TraceUse::Read)
        .map_err(|missing| InputError::new(flags.file.display().to_string(), missing))?;
    let result = imp::evaluate(flags)?;
    if flags.json {
        crate::outln!("{}", serde_json::to_string_pretty(&result)?);
    } else {
        imp::print_text(&result);
    }
    Ok(())
}

mod imp {
    use super::*;
    use crate::learn::{DataPlan, Model, Optimizer, Partition};
    use crate::trace::{TraceFile, TraceKind};

    /// The numbers `evaluate` prints.
    #[derive(Debug, serde::Serialize)]
    pub(super) struct Evaluated {
        pub trace: String,
        /// `test` or `train`.
        pub set: &'static str,
        /// Completed iterations of the stored θ (absent in older traces).
        pub iterations: Option<u64>,
        pub parameters: usize,
        pub samples: usize,
        /// The training objective (mean loss, plus the L2 term) at θ over the samples.
        pub loss: f64,
        /// Share of the samples classified correctly (classifiers only).
        pub accuracy: Option<f64>,
        pub correct: Option<usize>,
        /// Per class: the share of its samples predicted as it (null: no sample of the class).
        pub class_accuracy: Option<Vec<Option<f64>>>,
        /// `confusion[t][p]`: samples of class `t` predicted as `p`.
        pub confusion: Option<Vec<Vec<u64>>>,
    }

    pub(super) fn evaluate(flags: &EvaluateArgs) -> anyhow::Result<Evaluated> {
        let name = flags.file.display().to_string();
        let fail = |e: &dyn std::fmt::Display| InputError::new(&name, e.to_string());
        let (toml, theta, iterations) = read_model(&flags.file)?;
        let origin = format!("{name} (config_toml)");
        let setup = crate::setup::parse(&toml, &origin, &flags.overrides)?;
        let config = &setup.loaded.config;
        let partitions = setup.scheme.partitions();
        crate::learn::data::check_data_files(config, partitions)?;
        let plan = DataPlan::new(config, partitions)?;
        let model = Model::new(config, plan.input())?;
        if model.dim() != theta.len() {
            return Err(fail(&format!(
                "/model/theta has {} parameters, the model of its config on this data {} ({}): the data's shape differs from the run's",
                theta.len(),
                model.dim(),
                model.describe()
            ))
            .into());
        }
        let (set, parts): (&'static str, Vec<Partition>) = if flags.train {
            let ids: Vec<usize> = (0..partitions).collect();
            ("train", plan.load(&ids)?)
        } else {
            ("test", vec![plan.load_test()?])
        };
        let field = if flags.train {
            "data.path"
        } else {
            "data.test_path"
        };
        let (loss_sum, samples, confusion) = evaluate_parts(&model, &parts, &theta, field)?;
        if samples == 0 {
            return Err(InputError::new(field, "has no samples to evaluate on").into());
        }
        let optimizer = Optimizer::new(&config.train, config.model.l2, theta.len());
        let loss = optimizer.objective_at(&theta, loss_sum, samples);
        let correct = confusion.as_ref().map(|c| c.correct());
        Ok(Evaluated {
            trace: name.clone(),
            set,
            iterations,
            parameters: theta.len(),
            samples,
            loss,
            accuracy: correct.map(|c| c as f64 / samples as f64),
            correct,
            class_accuracy: confusion.as_ref().map(|c| {
                c.class_accuracy()
                    .into_iter()
                    .map(|a| a.is_finite().then_some(a))
                    .collect()
            }),
            confusion: confusion.map(|c| c.counts),
        })
    }

    /// The config (TOML), θ and its completed iterations stored in the
    /// training trace `path`; θ finite.
    fn read_model(path: &std::path::Path) -> Result<(String, Vec<f64>, Option<u64>), InputError> {
        let name = path.display().to_string();
        let fail = |e: &dyn std::fmt::Display| InputError::new(&name, e.to_string());
        crate::trace::file_check::check_file(path)?;
        let file = TraceFile::open(path).map_err(|e| fail(&e))?;
        let root = file.root().map_err(|e| fail(&e))?;
        if root.kind != TraceKind::Train {
            return Err(fail(
                &"is a simulation trace, which stores no model: evaluate reads a training trace (train --out)",
            ));
        }
        let toml = root.config_toml.ok_or_else(|| {
            fail(&"has no config_toml attribute, so the model it stores cannot be rebuilt")
        })?;
        let (theta, iterations) = file
            .model_vector("/", "theta")
            .map_err(|e| fail(&e))?
            .ok_or_else(|| {
                fail(&"has no /model/theta: the run stopped before it stored a model")
            })?;
        drop(file);
        if let Some(bad) = theta.iter().position(|v| !v.is_finite()) {
            return Err(fail(&format!(
                "/model/theta entry {} is {}: the stored model is not finite",
                bad + 1,
                theta[bad]
            )));
        }
        Ok((toml, theta, iterations))
    }

    /// The loss summed over the samples of `parts`, their number, and the
    /// confusion matrix (classifiers); a label the model cannot take is an
    /// error of `field`.
    fn evaluate_parts(
        model: &Model,
        parts: &[Partition],
        theta: &[f64],
        field: &str,
    ) -> Result<(f64, usize, Option<crate::learn::Confusion>), InputError> {
        let mut loss_sum = 0.0;
        let mut samples = 0;
        let mut confusion: Option<crate::learn::Confusion> = None;
        for part in parts {
            model
                .check_labels(part)
                .map_err(|e| InputError::new(field, e.to_string()))?;
            let (evaluation, c) = model
                .evaluate_confusion(part, theta)
                .map_err(|e| InputError::new(field, e.to_string()))?;
            loss_sum += evaluation.loss_sum;
            samples += part.len();
            match (&mut confusion, c) {
                (Some(total), Some(c)) => total.merge(&c),
                (None, c) => confusion = c,
                (Some(_), None) => {}
            }
        }
        Ok((loss_sum, samples, confusion))
    }

    pub(super) fn print_text(e: &Evaluated) {
        let after = e
            .iterations
            .map_or(String::new(), |i| format!(" after {i} iterations"));
        crate::outln!(
            "{}: the stored model{after} ({} parameters) on the {} set ({} samples)",
            e.trace,
            e.parameters,
            e.set,
            e.samples
        );
        crate::outln!("loss      {:.6}", e.loss);
        let (Some(accuracy), Some(correct), Some(classes), Some(confusion)) =
            (e.accuracy, e.correct, &e.class_accuracy, &e.confusion)
        else {
            return;
        };
        crate::outln!("accuracy  {accuracy:.4} ({correct} of {})", e.samples);
        crate::outln!("class  samples  accuracy");
        for (c, (a, row)) in classes.iter().zip(confusion).enumerate() {
            let a = a.map_or("-".to_string(), |a| format!("{a:.4}"));
            crate::outln!("{c:<5}  {:<7}  {a}", row.iter().sum::<u64>());
        }
        let width = confusion
            .iter()
            .flatten()
            .map(|v| v.to_string().len())
            .max()
            .unwrap_or(1)
            .max(confusion.len().to_string().len());
        crate::outln!("confusion (rows: true class, columns: predicted class)");
        let header: Vec<String> = (0..confusion.len())
            .map(|c| format!("{c:>width$}"))
            .collect();
        crate::outln!("{:>5}  {}", "", header.join(" "));
        for (c, row) in confusion.iter().enumerate() {
            let cells: Vec<String> = row.iter().map(|v| format!("{v:>width$}")).collect();
            crate::outln!("{c:>5}  {}", cells.join(" "));
        }
    }
}
