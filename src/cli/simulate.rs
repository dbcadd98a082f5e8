//! `gradcode simulate`: Monte Carlo comparison of the schemes of `simulate.compare`.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use serde::Serialize;

use super::{ConfigArgs, load, print_warnings};
use crate::config::StateInfo;
use crate::engine::{Checkpoint, EngineError};
use crate::error::QuietExit;
use crate::sim::{SimReport, Simulation};
use crate::trace::{Target, TraceSink};

/// The flags of `simulate`; `--trials`, `--iterations` and `--seed` override
/// their config keys (`simulate.trials`, `simulate.iterations`, `seed`).
#[derive(Debug, Args)]
pub struct SimulateArgs {
    #[command(flatten)]
    pub args: ConfigArgs,
    /// Independent trials (overrides simulate.trials).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub trials: Option<u64>,
    /// Iterations per trial (overrides simulate.iterations).
    #[arg(long, value_name = "T", value_parser = clap::value_parser!(u64).range(1..))]
    pub iterations: Option<u64>,
    /// Master seed (overrides seed).
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Write the per-iteration records to an HDF5 trace (output.trace when no file is given).
    #[arg(long, value_name = "F.h5", num_args = 0..=1)]
    pub out: Option<Option<PathBuf>>,
    /// Overwrite an existing trace.
    #[arg(long, requires = "out")]
    pub force: bool,
}

#[derive(Debug, Serialize)]
struct JsonReport<'a> {
    origin: &'a str,
    seed: u64,
    state_info: StateInfo,
    /// Model time in seconds in the trace (`straggler.time_unit_ms` / 1000).
    model_time_unit_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    trace: Option<String>,
    #[serde(flatten)]
    report: &'a SimReport,
}

pub(super) fn run(flags: &SimulateArgs) -> anyhow::Result<()> {
    let mut args = flags.args.with_run_length(flags.trials, flags.iterations);
    if let Some(s) = flags.seed {
        args.overrides.push(format!("seed={s}"));
    }
    // Every input error comes before the first line of output or warning.
    let loaded = load(&args)?.loaded;
    let config = &loaded.config;
    let mut sim = Simulation::from_config(config)?;
    let mut trace = flags
        .out
        .as_ref()
        .map(|out| {
            let target = Target {
                out: out.as_deref(),
                force: flags.force,
                config_file: args.config.as_deref(),
            };
            TraceSink::for_simulation(config, &sim.names(), target)
        })
        .transpose()?;
    let out_path: Option<PathBuf> = trace.as_ref().map(|t| t.path().to_path_buf());
    print_warnings(&loaded);
    // From here on SIGTERM and SIGINT end the trials before their next
    // round: the trace records them as interrupted.
    crate::signals::install()?;
    let started = Instant::now();
    let result = sim.run_session(
        &mut [],
        trace.as_mut().map(|t| t as &mut dyn Checkpoint),
        Some(crate::signals::received),
    );
    drop(trace);
    let report = settle(result, out_path.as_deref())?;
    let elapsed = started.elapsed().as_secs_f64();
    let worker_iterations =
        (report.trials * report.iterations * report.workers * report.schemes.len()) as f64;
    print_notes(config, &report);
    if args.json {
        let json = JsonReport {
            origin: &loaded.origin,
            seed: config.seed,
            state_info: config.straggler.state_info,
            model_time_unit_s: config.straggler.time_unit_ms / 1000.0,
            trace: out_path.as_ref().map(|p| p.display().to_string()),
            report: &report,
        };
        crate::outln!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        print_text(
            &loaded.origin,
            config.seed,
            config.straggler.state_info,
            super::units::emulated_unit_s(config),
            &report,
        );
        if let Some(p) = &out_path {
            crate::outln!("\ntrace written to {}", p.display());
        }
        crate::errln!(
            "simulated {worker_iterations:.0} worker-iterations in {elapsed:.3} s ({:.2e} per second)",
            worker_iterations / elapsed.max(1e-9)
        );
    }
    Ok(())
}

/// The simulation's report; or, when it was interrupted or failed, what
/// the trace at `out_path` records (said on stderr) and the error (an
/// interruption exits quietly with the signal's status).
fn settle(
    result: Result<SimReport, EngineError>,
    out_path: Option<&std::path::Path>,
) -> anyhow::Result<SimReport> {
    // A trace whose own write failed says nothing more than the error.
    if let (Err(e), Some(p)) = (&result, out_path)
        && !matches!(e, EngineError::Observer(_) | EngineError::Finish(_))
    {
        crate::errln!(
            "the trace {} records the iterations before the {}",
            p.display(),
            if matches!(e, EngineError::Interrupted { .. }) {
                "signal"
            } else {
                "error"
            }
        );
    }
    if let Err(EngineError::Interrupted {
        signal,
        trial,
        iterations,
    }) = &result
    {
        crate::errln!(
            "gradcode: interrupted by {} in trial {} after {iterations} iterations",
            crate::signals::name(*signal),
            trial + 1
        );
        return Err(QuietExit(crate::signals::exit_status(*signal)).into());
    }
    Ok(result?)
}

/// The notes on stderr: a trace replay whose trials share rows, a horizon
/// not train's.
fn print_notes(config: &crate::config::Config, report: &SimReport) {
    if let Some(c) = report.replay.filter(|c| c.rows_reused) {
        crate::errln!(
            "note: trace replay: {} trials x {} iterations = {} rounds replay the {} rows of {}: only {} rounds are independent, so the trials share rows and their ci95 understates the uncertainty (nothing is widened)",
            report.trials,
            report.iterations,
            c.rounds,
            c.rows,
            config
                .straggler
                .trace_file
                .as_deref()
                .unwrap_or("the trace"),
            c.independent_rows
        );
    }
    if let Some(note) = horizon_note(config) {
        crate::errln!("note: {note}");
    }
}

/// When a trial's horizon is not train's and the straggler model has a
/// state that starts from `initial_stragglers`, the two runs average over
/// different parts of the chain's way to its long-run share (issue 25: the
/// default 30 x 400 gave gc-dc +36.9% over uncoded, a 100-iteration run
/// +18%); said, with how to match them.
fn horizon_note(config: &crate::config::Config) -> Option<String> {
    use crate::config::StragglerModel;
    let chain = matches!(
        config.straggler.model,
        StragglerModel::GilbertElliott
            | StragglerModel::GilbertElliottHeterogeneous
            | StragglerModel::TimeVarying
    );
    let (simulated, trained) = (config.simulate.iterations, config.train.iterations);
    (chain && simulated != trained).then(|| {
        format!(
            "each trial simulates {simulated} iterations and train runs train.iterations = {trained}: \
             the straggler chain starts from initial_stragglers, so the two horizons can show different \
             gains (--iterations {trained} simulates train's)"
        )
    })
}

fn print_text(origin: &str, seed: u64, info: StateInfo, unit_s: Option<f64>, r: &SimReport) {
    crate::outln!("gradcode simulate: {origin}");
    crate::outln!(
        "K = {} workers, straggler model {}, state information {}",
        r.workers,
        r.straggler_model,
        match info {
            StateInfo::Perfect => "perfect",
            StateInfo::Imperfect => "imperfect",
        }
    );
    crate::outln!(
        "{} trials x {} iterations, seed {seed}; model time units{}; 95% CI over trials; common random numbers",
        r.trials,
        r.iterations,
        super::units::unit_note(unit_s)
    );
    if let Some(n) = &r.network {
        crate::outln!(
            "network: {}{}; aggregate {}; times are arrivals at the master{}",
            crate::sim::communication::links(&n.config),
            n.message_bytes
                .map(|b| format!(", messages of {b} bytes"))
                .unwrap_or_default(),
            n.aggregate.name(),
            if n.aggregate.reduces() {
                " (the headers), then of the decodable set's reduced sum"
            } else {
                ""
            }
        );
    }
    // The decode error's column where some scheme's decode is not exact
    // (partial and approximate schemes): time and error side by side.
    let with_error = r.schemes.iter().any(|s| s.mean_decode_error > 1e-9);
    print_table(r, unit_s, with_error);
    crate::outln!(
        "\n`vs {}`: reduction of the mean iteration time (positive = faster).",
        r.baseline
    );
    if with_error {
        crate::outln!(
            "`decode err`: mean ‖a·B_S − 1‖₂ per iteration, in partition gradients (0: the exact sum; an approximate code's `recovered` is 100%: it approximates every partition)."
        );
    }
}

/// The table of the schemes: its head, one row per scheme, the lower
/// bound; with the decode error's column (`with_error`) and seconds
/// (`unit_s`).
fn print_table(r: &SimReport, unit_s: Option<f64>, with_error: bool) {
    crate::outln!();
    let vs = format!("vs {}", r.baseline);
    crate::outln!(
        "{:<18} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9}{}{}",
        "scheme",
        "mean",
        "± ci95",
        "p50",
        "p99",
        "messages",
        "recovered",
        vs,
        if with_error {
            format!(" {:>10}", "decode err")
        } else {
            String::new()
        },
        if unit_s.is_some() {
            format!(" {:>10}", "mean s")
        } else {
            String::new()
        }
    );
    print_rows(r, unit_s, with_error);
}

/// One row per scheme, and the lower bound's.
fn print_rows(r: &SimReport, unit_s: Option<f64>, with_error: bool) {
    let seconds = |x: f64| unit_s.map_or(String::new(), |u| format!(" {:>10.4}", x * u));
    let error = |x: f64| {
        if with_error {
            format!(" {x:>10.4}")
        } else {
            String::new()
        }
    };
    let ci = |x: f64| {
        if x.is_finite() {
            format!("{x:.4}")
        } else {
            "n/a".to_string()
        }
    };
    for s in &r.schemes {
        crate::outln!(
            "{:<18} {:>10.4} {:>10} {:>10.4} {:>10.4} {:>9.2} {:>8.1}% {:>+8.1}%{}{}",
            s.name,
            s.mean_iteration_time,
            ci(s.ci95),
            s.p50,
            s.p99,
            s.messages_per_iteration,
            100.0 * s.recovered_fraction,
            s.improvement_percent,
            error(s.mean_decode_error),
            seconds(s.mean_iteration_time),
        )
    }
    if let Some(lb) = &r.lower_bound {
        crate::outln!(
            "{:<18} {:>10.4} {:>10} {:>10.4} {:>10.4}",
            format!("LB ({} fastest)", lb.workers),
            lb.mean_iteration_time,
            ci(lb.ci95),
            lb.p50,
            lb.p99
        );
    }
}
