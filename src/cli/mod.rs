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
mod explain_dc;
mod inspect;
mod job;
mod measured;
mod netfit;
#[cfg(feature = "mpi")]
mod probe;
mod simulate;
mod sweep;
mod trace_file;
mod units;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::coding::{Arrival, RoundPlan};
use crate::config::LoadedConfig;
use crate::error::InputError;
use crate::setup::Setup;

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

/// The flags of `explain` besides the config.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ExplainFlags<'a> {
    pub received: Option<&'a str>,
    pub stragglers: Option<&'a str>,
    pub rates: Option<&'a str>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate the config and print the plan: placement, codewords, clusters, tolerance.
    Check {
        #[command(flatten)]
        args: ConfigArgs,
        /// Random minimal arrival sets decoded to measure the worst amplification.
        #[arg(long, default_value_t = 1000, value_name = "N")]
        samples: usize,
        /// Print only the number of MPI ranks a training run needs (workers + 1), for job scripts.
        #[arg(long, conflicts_with = "json")]
        ranks: bool,
    },
    /// Say whether a set of arrivals decodes, and with which coefficients;
    /// for gc-dc, how the clusters are formed for given stragglers.
    Explain {
        #[command(flatten)]
        args: ConfigArgs,
        /// Workers whose results arrived, 1-based, in arrival order (e.g. 1,2,5).
        /// Required except for gc-dc, where it decodes with the clusters formed.
        #[arg(long, value_name = "IDS")]
        received: Option<String>,
        /// gc-dc: the workers the master believes straggle, 1-based (e.g. 3,5,6,7,8).
        #[arg(long, value_name = "IDS")]
        stragglers: Option<String>,
        /// gc-dc: estimated rates of workers 1..K (e.g. 2.5,0.1,...); a worker
        /// with rate < scheme.straggler_threshold straggles; fastest chosen first.
        #[arg(long, value_name = "RATES")]
        rates: Option<String>,
    },
    /// Train under MPI: `mpirun -n K+1 gradcode train` (rank 0 master, ranks 1..K workers).
    Train {
        #[command(flatten)]
        args: ConfigArgs,
        /// No progress output (the summary is still printed).
        #[arg(long)]
        quiet: bool,
        /// HDF5 trace to write (default: output.trace of the config).
        #[arg(long, value_name = "F.h5")]
        out: Option<PathBuf>,
        /// Overwrite an existing trace.
        #[arg(long)]
        force: bool,
        /// Continue the interrupted run of this trace from its last snapshot
        /// (its config; `--set train.iterations=N` trains longer).
        #[arg(long, value_name = "F.h5", conflicts_with_all = ["out", "force"])]
        resume: Option<PathBuf>,
    },
    /// Measure the network under MPI: `mpirun -n K+1 gradcode probe` times
    /// messages between rank 0 and ranks 1..K and prints the `[network]`
    /// section that models them.
    // The numbers are text, checked by rank 0 alone after MPI starts
    // (probe::ProbeFlags::check): a bad value is then one line, not one per rank.
    Probe {
        /// The smallest ping-pong message, bytes.
        #[arg(
            long,
            value_name = "B",
            default_value = "8",
            allow_negative_numbers = true
        )]
        min_bytes: String,
        /// The largest ping-pong message, bytes (sizes grow 4x from --min-bytes);
        /// also what the fastest worker sends when all send at once.
        #[arg(
            long,
            value_name = "B",
            default_value = "8388608",
            allow_negative_numbers = true
        )]
        max_bytes: String,
        /// Timed repetitions per size (the fastest counts).
        #[arg(
            long,
            value_name = "N",
            default_value = "5",
            allow_negative_numbers = true
        )]
        repetitions: String,
        /// How long the master waits for a worker's answer, seconds: a worker
        /// (or a pair of workers) silent for longer is named and the job ends.
        #[arg(
            long,
            value_name = "S",
            default_value = "60",
            allow_negative_numbers = true
        )]
        timeout_s: String,
        /// Print JSON instead of TOML.
        #[arg(long)]
        json: bool,
    },
    /// Monte Carlo comparison of the schemes of `simulate.compare` on common random numbers.
    Simulate {
        #[command(flatten)]
        args: ConfigArgs,
        /// Independent trials (overrides simulate.trials).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        trials: Option<u64>,
        /// Iterations per trial (overrides simulate.iterations).
        #[arg(long, value_name = "T", value_parser = clap::value_parser!(u64).range(1..))]
        iterations: Option<u64>,
        /// Master seed (overrides seed).
        #[arg(long, value_name = "S")]
        seed: Option<u64>,
        /// Write the per-iteration records to an HDF5 trace (output.trace when no file is given).
        #[arg(long, value_name = "F.h5", num_args = 0..=1)]
        out: Option<Option<PathBuf>>,
        /// Overwrite an existing trace.
        #[arg(long, requires = "out")]
        force: bool,
    },
    /// Simulate every combination of a grid of config values for one or more
    /// schemes on common random numbers, skip the invalid ones with the
    /// reason, and rank the rest.
    Sweep {
        #[command(flatten)]
        args: ConfigArgs,
        /// A grid axis, `KEY=V1,V2,...` (repeatable; values are TOML, commas
        /// inside brackets and quotes do not split).
        #[arg(long, value_name = "KEY=V1,V2,...")]
        grid: Vec<String>,
        /// The schemes to sweep, comma separated (default: simulate.compare).
        #[arg(long, value_name = "S1,S2,...")]
        schemes: Option<String>,
        /// Independent trials per variant (overrides simulate.trials).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        trials: Option<u64>,
        /// Iterations per trial (overrides simulate.iterations).
        #[arg(long, value_name = "T", value_parser = clap::value_parser!(u64).range(1..))]
        iterations: Option<u64>,
        /// Write the table to this file (`.json` or `.csv`).
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Replace an existing --out file.
        #[arg(long, requires = "out")]
        force: bool,
    },
    /// Which scheme and parameters for this straggler behaviour and memory
    /// budget: fit the model (the config's, or a replay CSV's), simulate the
    /// candidates on common random numbers, rank them with paired 95%
    /// confidence intervals against the best.
    Advise {
        #[command(flatten)]
        args: ConfigArgs,
        /// Fit the straggler model to this replay CSV (rows = rounds, one
        /// column per worker, the model time of one partition computation).
        #[arg(long, value_name = "FILE.csv", conflicts_with = "trace")]
        replay: Option<PathBuf>,
        /// Fit the straggler model to the per-worker times measured in this
        /// training trace (`/worker/finish_s` / scheme.load).
        #[arg(long, value_name = "F.h5")]
        trace: Option<PathBuf>,
        /// Keep only schemes that store at most M partitions on every worker.
        #[arg(long, value_name = "M", value_parser = clap::value_parser!(u64).range(1..))]
        memory_partitions: Option<u64>,
        /// What to rank by.
        #[arg(long, value_enum, default_value_t = advise::Objective::Mean)]
        objective: advise::Objective,
        /// The training loss of `--objective time-to-loss` (default: what
        /// full-batch descent records at iteration train.iterations / 2).
        #[arg(long, value_name = "LOSS", allow_negative_numbers = true)]
        target_loss: Option<f64>,
        /// The schemes to consider, comma separated (default: every
        /// registered scheme; those that decode part of the gradient only
        /// with --min-recovered).
        #[arg(long, value_name = "S1,S2,...")]
        schemes: Option<String>,
        /// Partial-recovery candidates (ignore-stragglers, is-gc, a gc-dc
        /// deadline) must recover at least this share of the partitions per
        /// iteration, on average (in (0, 1]); needed to rank them by time.
        #[arg(long, value_name = "F")]
        min_recovered: Option<f64>,
        /// Values of a key instead of the default search (repeatable, as in sweep).
        #[arg(long, value_name = "KEY=V1,V2,...")]
        grid: Vec<String>,
        /// Independent trials per candidate (overrides simulate.trials; at least 2).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(2..))]
        trials: Option<u64>,
        /// Iterations per trial (overrides simulate.iterations).
        #[arg(long, value_name = "T", value_parser = clap::value_parser!(u64).range(1..))]
        iterations: Option<u64>,
    },
    /// Summarise an HDF5 trace: a training run (`train --out`) or a simulation (`simulate --out`).
    Inspect {
        /// The trace file.
        #[arg(value_name = "F.h5")]
        file: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Write the per-worker times of one partition computation of this
        /// training trace as a replay CSV (for straggler.model = "trace")
        /// instead of the summary.
        #[arg(long, value_name = "OUT.csv", conflicts_with = "json")]
        replay_csv: Option<PathBuf>,
        /// Replace an existing --replay-csv file.
        #[arg(long, requires = "replay_csv")]
        force: bool,
        /// Training trace: the first iteration whose recorded train loss is
        /// at most LOSS, the iterations before it and the time up to it.
        #[arg(
            long,
            value_name = "LOSS",
            allow_negative_numbers = true,
            conflicts_with = "replay_csv"
        )]
        target_loss: Option<f64>,
        /// Training trace: the first iteration whose recorded test accuracy
        /// (a share, in (0, 1]) is at least A, the iterations before it and
        /// the time up to it.
        #[arg(
            long,
            value_name = "A",
            allow_negative_numbers = true,
            conflicts_with = "replay_csv"
        )]
        target_accuracy: Option<f64>,
    },
    /// Evaluate the model a training trace stores (`/model/theta`) on the
    /// run's test set, its training set, or other data: loss, accuracy,
    /// per-class accuracy and the confusion matrix.
    Evaluate {
        /// The training trace (`train --out`).
        #[arg(value_name = "F.h5")]
        file: PathBuf,
        /// Change a `[data]` key of the trace's config, e.g. `--set
        /// data.test_path="other.idx"` (repeatable; only data.* keys).
        #[arg(long = "set", value_name = "data.KEY=VALUE")]
        overrides: Vec<String>,
        /// Evaluate on the training set (every partition) instead of the test set.
        #[arg(long)]
        train: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Compare training traces (or simulation traces): iteration times,
    /// elapsed time, time and iterations to a target, speedup over a
    /// baseline (paired by seed across repeated runs).
    Compare {
        /// The traces (`train --out`, or `simulate --out`; not both kinds).
        #[arg(value_name = "F.h5", required = true)]
        files: Vec<PathBuf>,
        /// The baseline: one of the traces (added when not among them) or a
        /// row label (default: the first uncoded row, else the first row).
        #[arg(long, value_name = "F.h5|LABEL")]
        baseline: Option<String>,
        /// The time and iterations until each run first recorded a train
        /// loss at most LOSS, and the speedup to it.
        #[arg(long, value_name = "LOSS", allow_negative_numbers = true)]
        target_loss: Option<f64>,
        /// The same for a test accuracy (a share, in (0, 1]) at least A.
        #[arg(long, value_name = "A", allow_negative_numbers = true)]
        target_accuracy: Option<f64>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Also write the table as CSV to OUT.
        #[arg(long, value_name = "OUT.csv")]
        csv: Option<PathBuf>,
        /// Replace an existing --csv file.
        #[arg(long, requires = "csv")]
        force: bool,
    },
    /// For the batch scripts of jobs/: JSON fields and summaries without Python.
    #[command(hide = true)]
    Job {
        #[command(subcommand)]
        action: job::JobAction,
    },
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

/// Run a parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Check {
            args, ranks: true, ..
        } => {
            let setup = load(&args)?;
            // The data files too: jobs/submit.sh asks for the ranks before
            // it submits, and a missing data.path must stop it there.
            crate::learn::data::check_data_files(&setup.loaded.config, setup.scheme.partitions())?;
            print_warnings(&setup.loaded);
            crate::outln!("{}", setup.loaded.config.workers + 1);
            Ok(())
        }
        Command::Check { args, samples, .. } => check::run(&args, samples),
        Command::Explain {
            args,
            received,
            stragglers,
            rates,
        } => explain::run(
            &args,
            ExplainFlags {
                received: received.as_deref(),
                stragglers: stragglers.as_deref(),
                rates: rates.as_deref(),
            },
        ),
        #[cfg(feature = "mpi")]
        Command::Train {
            args,
            quiet,
            out,
            force,
            resume,
        } => crate::runtime::train(&crate::runtime::TrainOptions {
            config: args.config,
            overrides: args.overrides,
            json: args.json,
            quiet,
            out,
            force,
            resume,
        }),
        #[cfg(not(feature = "mpi"))]
        Command::Train { .. } => Err(crate::error::InputError::new(
            "train",
            "this gradcode was built without the `mpi` feature",
        )
        .into()),
        #[cfg(feature = "mpi")]
        Command::Probe {
            min_bytes,
            max_bytes,
            repetitions,
            timeout_s,
            json,
        } => probe::run(&probe::ProbeFlags {
            min_bytes,
            max_bytes,
            repetitions,
            timeout_s,
            json,
        }),
        #[cfg(not(feature = "mpi"))]
        Command::Probe { .. } => Err(crate::error::InputError::new(
            "probe",
            "this gradcode was built without the `mpi` feature",
        )
        .into()),
        Command::Simulate {
            args,
            trials,
            iterations,
            seed,
            out,
            force,
        } => simulate::run(
            &args,
            &simulate::SimulateFlags {
                trials,
                iterations,
                seed,
                out,
                force,
            },
        ),
        Command::Sweep {
            args,
            grid,
            schemes,
            trials,
            iterations,
            out,
            force,
        } => sweep::run(
            &args,
            &sweep::SweepFlags {
                grid,
                schemes,
                trials,
                iterations,
                out,
                force,
            },
        ),
        Command::Advise {
            args,
            trace,
            replay,
            memory_partitions,
            objective,
            target_loss,
            schemes,
            min_recovered,
            grid,
            trials,
            iterations,
        } => advise::run(
            &args,
            &advise::AdviseFlags {
                trace,
                replay,
                memory_partitions: memory_partitions.map(|m| m as usize),
                objective,
                target_loss,
                schemes,
                min_recovered,
                grid,
                trials,
                iterations,
            },
        ),
        Command::Inspect {
            file,
            replay_csv: Some(out),
            force,
            ..
        } => inspect::export_replay(&file, &out, force),
        Command::Inspect {
            file,
            json,
            target_loss,
            target_accuracy,
            ..
        } => inspect::run(
            &file,
            json,
            crate::trace::summary::Targets {
                loss: target_loss,
                accuracy: target_accuracy,
            },
        ),
        Command::Evaluate {
            file,
            overrides,
            train,
            json,
        } => evaluate::run(&evaluate::EvaluateFlags {
            file: &file,
            overrides: &overrides,
            train,
            json,
        }),
        Command::Compare {
            files,
            baseline,
            target_loss,
            target_accuracy,
            json,
            csv,
            force,
        } => compare::run(&compare::CompareFlags {
            files,
            baseline,
            targets: crate::trace::summary::Targets {
                loss: target_loss,
                accuracy: target_accuracy,
            },
            json,
            csv,
            force,
        }),
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
