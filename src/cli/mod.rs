//! The command line: `check`, `explain`, `simulate`, `sweep`, `advise`, `train`, `probe`,
//! `inspect`, `compare`.
//!
//! Every subcommand but `inspect` and `compare` takes `--config F` (the embedded demo when absent) and
//! any number of `--set section.key=value`. Errors in input are
//! [`InputError`]s: one line on stderr, exit status 2, nothing written.

mod advise;
mod check;
mod compare;
mod decoding;
mod evaluate;
mod explain;
mod inspect;
mod job;
mod probe;
mod simulate;
mod sweep;
mod train;
mod units;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::coding::{Arrival, RoundPlan};
use crate::config::LoadedConfig;
use crate::error::InputError;
use crate::setup::Setup;
use crate::trace::summary::Targets;

/// Straggler-tolerant distributed gradient descent with gradient coding.
#[derive(Debug, Parser)]
#[command(name = "gradcode", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Options every subcommand takes.
#[derive(Debug, Args, Clone)]
pub struct ConfigArgs {
    /// Config file (TOML); the embedded demo config when absent.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Override a config key, e.g. `--set scheme.load=3` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// The subcommands; each one's flags are its `XxxArgs` struct, written once
/// in the command's own module.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate the config and print the plan: placement, codewords, clusters, tolerance.
    Check(check::CheckArgs),
    /// Say whether a set of arrivals decodes, and with which coefficients;
    /// for gc-dc, how the clusters are formed for given stragglers.
    Explain(explain::ExplainArgs),
    /// Train under MPI: `mpirun -n K+1 gradcode train` (rank 0 master, ranks 1..K workers).
    Train(train::TrainArgs),
    /// Measure the network under MPI: `mpirun -n K+1 gradcode probe` times
    /// messages between rank 0 and ranks 1..K and prints the `[network]`
    /// section that models them.
    Probe(probe::ProbeArgs),
    /// Monte Carlo comparison of the schemes of `simulate.compare` on common random numbers.
    Simulate(simulate::SimulateArgs),
    /// Simulate every combination of a grid of config values for one or more
    /// schemes on common random numbers, skip the invalid ones with the
    /// reason, and rank the rest.
    Sweep(sweep::SweepArgs),
    /// Which scheme and parameters for this straggler behaviour and memory
    /// budget: fit the model (the config's, or a replay CSV's), simulate the
    /// candidates on common random numbers, rank them with paired 95%
    /// confidence intervals against the best.
    Advise(advise::AdviseArgs),
    /// Summarise an HDF5 trace: a training run (`train --out`) or a simulation (`simulate --out`).
    Inspect(inspect::InspectArgs),
    /// Evaluate the model a training trace stores (`/model/theta`) on the
    /// run's test set, its training set, or other data: loss, accuracy,
    /// per-class accuracy and the confusion matrix.
    Evaluate(evaluate::EvaluateArgs),
    /// Compare training traces (or simulation traces): iteration times,
    /// elapsed time, time and iterations to a target, speedup over a
    /// baseline (paired by seed across repeated runs).
    Compare(compare::CompareArgs),
    /// For the batch scripts of jobs/: JSON fields and summaries without Python.
    #[command(hide = true)]
    Job {
        #[command(subcommand)]
        action: job::JobAction,
    },
}

impl ConfigArgs {
    /// These arguments with `--trials` and `--iterations` appended as the
    /// overrides `simulate.trials` and `simulate.iterations` (flags win over
    /// `--set` and the file: they come last).
    pub(crate) fn with_run_length(&self, trials: Option<u64>, iterations: Option<u64>) -> Self {
        let mut base = self.clone();
        if let Some(n) = trials {
            base.overrides.push(format!("simulate.trials={n}"));
        }
        if let Some(n) = iterations {
            base.overrides.push(format!("simulate.iterations={n}"));
        }
        base
    }
}

/// Load the config of `args` through the loader ([`crate::setup::load`]: the
/// scheme registry's checks, the defaults, the schemes built): every
/// subcommand but `inspect` starts here. The warnings are not printed, so that
/// a command that checks more input first can print them after
/// ([`print_warnings`]): an error must be the only line on stderr.
pub(crate) fn load(args: &ConfigArgs) -> Result<Setup, InputError> {
    let setup = crate::setup::load(args.config.as_deref(), &args.overrides)?;
    log::info!(
        "config {} loaded ({} keys set explicitly)",
        setup.loaded.origin,
        setup.loaded.explicit.len()
    );
    Ok(setup)
}

/// Print the keys that are set but unused, and the loader's other warnings
/// (gc-dc's straggler threshold against the model's flags), one `warning:`
/// line each.
pub(crate) fn print_warnings(loaded: &LoadedConfig) {
    for warning in loaded.warnings() {
        crate::errln!("warning: {warning}");
    }
}

/// Run a parsed command line: each subcommand's module parses nothing more
/// and runs it.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Check(args) => check::run(&args),
        Command::Explain(args) => explain::run(&args),
        Command::Train(args) => train::run(args),
        Command::Probe(args) => probe::run(&args),
        Command::Simulate(args) => simulate::run(&args),
        Command::Sweep(args) => sweep::run(&args),
        Command::Advise(args) => advise::run(&args),
        Command::Inspect(args) => inspect::run(&args),
        Command::Evaluate(args) => evaluate::run(&args),
        Command::Compare(args) => compare::run(&args),
        Command::Job { action } => job::run(&action),
    }
}

/// One 1-based worker id `item` of the list `text` given to `flag`, 0-based.
fn parse_worker_id(
    flag: &str,
    text: &str,
    item: &str,
    workers: usize,
) -> Result<usize, InputError> {
    let id: usize = item.parse().map_err(|_| {
        InputError::value(
            flag,
            text,
            format!("has `{item}`, which is not a worker id"),
        )
    })?;
    if id == 0 || id > workers {
        return Err(InputError::value(
            flag,
            text,
            format!("names worker {id}, outside 1..={workers}"),
        ));
    }
    Ok(id - 1)
}

/// Parse a list of 1-based worker ids (`1,2,5`) into 0-based ids.
pub(crate) fn parse_workers(
    flag: &str,
    text: &str,
    workers: usize,
) -> Result<Vec<usize>, InputError> {
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let w = parse_worker_id(flag, text, item, workers)?;
        if out.contains(&w) {
            return Err(InputError::value(
                flag,
                text,
                format!("names worker {} twice", w + 1),
            ));
        }
        out.push(w);
    }
    Ok(out)
}

/// Parse one number per worker (`2.5,0.1,...`) for `flag`: K finite values >= 0.
pub(crate) fn parse_rates(flag: &str, text: &str, workers: usize) -> Result<Vec<f64>, InputError> {
    let items: Vec<&str> = text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if items.len() != workers {
        return Err(InputError::value(
            flag,
            text,
            format!(
                "has {} values, not one per worker (workers = {workers})",
                items.len()
            ),
        ));
    }
    items
        .iter()
        .map(|item| match item.parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
            _ => Err(InputError::value(
                flag,
                text,
                format!("has `{item}`, which is not a finite number >= 0"),
            )),
        })
        .collect()
}

/// Parse the arrivals of a multi-message scheme: 1-based worker ids in
/// arrival order, each mention of a worker being its next message
/// (`1,1,2` = worker 1's first and second message, then worker 2's first).
pub(crate) fn parse_messages(
    flag: &str,
    text: &str,
    plan: &RoundPlan,
) -> Result<Vec<Arrival>, InputError> {
    let workers = plan.tasks.len();
    let mut sent = vec![0usize; workers];
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let w = parse_worker_id(flag, text, item, workers)?;
        let messages = plan.tasks[w].messages.len();
        if sent[w] == messages {
            return Err(InputError::value(
                flag,
                text,
                format!(
                    "names worker {} more often than the {messages} messages it sends",
                    w + 1
                ),
            ));
        }
        out.push(Arrival {
            worker: w,
            message: sent[w],
        });
        sent[w] += 1;
    }
    Ok(out)
}

/// The flags `--target-loss` (finite) and `--target-accuracy` (in (0, 1]),
/// checked before a trace is read (`inspect`, `compare`).
pub(crate) fn check_targets(targets: Targets) -> Result<(), InputError> {
    if let Some(x) = targets.loss.filter(|x| !x.is_finite()) {
        return Err(InputError::value(
            "--target-loss",
            x,
            "must be a finite number",
        ));
    }
    if let Some(a) = targets
        .accuracy
        .filter(|a| !(a.is_finite() && *a > 0.0 && *a <= 1.0))
    {
        return Err(InputError::value(
            "--target-accuracy",
            a,
            "must be in (0, 1]: the share of the test samples classified correctly",
        ));
    }
    Ok(())
}

/// 1-based ids for people.
pub(crate) fn one_based(ids: &[usize]) -> Vec<usize> {
    ids.iter().map(|&i| i + 1).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_lists_are_one_based_and_checked() {
        assert_eq!(
            parse_workers("--received", "1, 2,5", 5).unwrap(),
            vec![0, 1, 4]
        );
        assert_eq!(
            parse_workers("--received", "", 5).unwrap(),
            Vec::<usize>::new()
        );
        for bad in ["0", "6", "1,1", "x"] {
            let e = parse_workers("--received", bad, 5).unwrap_err();
            assert_eq!(e.field, "--received", "{bad}");
        }
    }
}
