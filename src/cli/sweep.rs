//! `gradcode sweep`: simulate every combination of a grid of config values
//! for one or more schemes, on common random numbers (the same seed, so the
//! same straggler samples wherever K is the same), skip the invalid
//! combinations with their reason, and rank what ran.
//!
//! ```text
//! gradcode sweep --config F --grid 'scheme.load=2,3,4' --grid 'scheme.clusters=1,2,4' \
//!     [--schemes gc-sc,gc-dc,is-gc] [--trials N] [--iterations T] [--out table.csv|table.json [--force]] [--json]
//! ```
//!
//! A variant is one value per grid key plus one scheme. Each runs exactly
//! what `gradcode simulate --set KEY=VALUE ... --set scheme.kind=S --set
//! simulate.compare=["S"]` runs (so its numbers are that command's), with
//! its own lower bound (000 §VI) where the scheme defines one. A grid key
//! that the scheme does not read would repeat a variant: it is listed as a
//! duplicate of the first, not run again. The grid and the variants are
//! [`crate::study`]'s; this file checks the flags and prints the table.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;
use serde::Serialize;

use super::ConfigArgs;
use crate::error::InputError;
use crate::study::sweep::{Row, chosen_schemes, grid_axes, nothing_ran, rank_rows, run_variants};
use crate::study::{self, Skipped, VariantRunner, describe_skipped};
use crate::trace::place::{self, Input};

/// The flags of `sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub args: ConfigArgs,
    /// A grid axis, `KEY=V1,V2,...` (repeatable; values are TOML, commas
    /// inside brackets and quotes do not split).
    #[arg(long, value_name = "KEY=V1,V2,...")]
    pub grid: Vec<String>,
    /// The schemes to sweep, comma separated (default: simulate.compare).
    #[arg(long, value_name = "S1,S2,...")]
    pub schemes: Option<String>,
    /// Independent trials per variant (overrides simulate.trials).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub trials: Option<u64>,
    /// Iterations per trial (overrides simulate.iterations).
    #[arg(long, value_name = "T", value_parser = clap::value_parser!(u64).range(1..))]
    pub iterations: Option<u64>,
    /// Write the table to this file (`.json` or `.csv`).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Replace an existing --out file.
    #[arg(long, requires = "out")]
    pub force: bool,
}

#[derive(Debug, Serialize)]
struct SweepReport {
    origin: String,
    seed: u64,
    /// Seconds per model time unit in train's emulation (null: measured mode).
    model_time_unit_s: Option<f64>,
    trials: usize,
    iterations: usize,
    grid: BTreeMap<String, Vec<String>>,
    rows: Vec<Row>,
    skipped: Vec<Skipped>,
}

pub(super) fn run(flags: &SweepArgs) -> anyhow::Result<()> {
    // Every input error before any work: the grid, the schemes, the base config, the output path.
    let (axes, kind_axis) = grid_axes(&flags.grid)?;
    let base = flags.args.with_run_length(flags.trials, flags.iterations);
    let loaded = super::load(&base)?.loaded;
    // The variants' typed base: the config as parsed, before the loader
    // resolves its `[scheme]` (read again: the loader consumes it).
    let plain = crate::config::load(base.config.as_deref(), &base.overrides)?;
    let schemes = chosen_schemes(flags.schemes.as_deref(), kind_axis, &loaded)?;
    if let Some(out) = &flags.out {
        let inputs = place::inputs_of(&loaded.config, flags.args.config.as_deref());
        check_out(out, flags.force, &inputs)?;
    }

    let (mut rows, skipped) = run_variants(&axes, &schemes, VariantRunner::new(plain))?;
    if rows.is_empty() {
        return Err(nothing_ran(&skipped).into());
    }
    let skipped = study::merge_skipped(skipped);
    rank_rows(&mut rows);
    let report = SweepReport {
        origin: loaded.origin.clone(),
        seed: loaded.config.seed,
        model_time_unit_s: super::units::emulated_unit_s(&loaded.config),
        trials: loaded.config.simulate.trials,
        iterations: loaded.config.simulate.iterations,
        grid: axes
            .iter()
            .map(|a| (a.key.clone(), a.values.clone()))
            .collect(),
        rows,
        skipped,
    };
    if let Some(out) = &flags.out {
        write_table(out, &report, flags.force)?;
    }
    if flags.args.json {
        crate::outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_text(&report);
        if let Some(out) = &flags.out {
            crate::outln!("\ntable written to {}", out.display());
        }
    }
    Ok(())
}

/// The output file: `.json` or `.csv`, not present unless `force`.
fn check_out(out: &Path, force: bool, inputs: &[Input]) -> Result<(), InputError> {
    let name = out.display().to_string();
    match out.extension().and_then(|e| e.to_str()) {
        Some("json" | "csv") => {}
        _ => {
            return Err(InputError::value(
                "--out",
                &name,
                "must end in .json or .csv (the table's format)",
            ));
        }
    }
    place::check_folder(out)
        .and_then(|()| place::check_output(out, force, inputs))
        .map_err(|e| InputError::new("--out", e))
}

/// A CSV cell: quoted when it holds a comma, a quote or a newline.
pub(super) fn csv_cell(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// The table at `out` (checked before the sweep ran), written whole.
fn write_table(out: &Path, report: &SweepReport, force: bool) -> anyhow::Result<()> {
    let text = if out.extension().is_some_and(|e| e == "csv") {
        let keys: Vec<&String> = report.grid.keys().collect();
        let mut lines = vec![
            ["rank", "scheme"]
                .into_iter()
                .map(String::from)
                .chain(keys.iter().map(|k| csv_cell(k)))
                .chain(
                    [
                        "mean_iteration_time",
                        "ci95",
                        "p50",
                        "p99",
                        "recovered_fraction",
                        "mean_decode_error",
                        "messages_per_iteration",
                        "lower_bound",
                    ]
                    .into_iter()
                    .map(String::from),
                )
                .collect::<Vec<_>>()
                .join(","),
        ];
        let number = |x: f64| {
            if x.is_finite() {
                x.to_string()
            } else {
                String::new()
            }
        };
        for r in &report.rows {
            let mut cells = vec![r.rank.to_string(), csv_cell(&r.scheme)];
            cells.extend(
                keys.iter()
                    .map(|k| csv_cell(r.settings.get(*k).map_or("", String::as_str))),
            );
            cells.extend(
                [
                    r.mean_iteration_time,
                    r.ci95,
                    r.p50,
                    r.p99,
                    r.recovered_fraction,
                    r.mean_decode_error,
                    r.messages_per_iteration,
                ]
                .map(number),
            );
            cells.push(r.lower_bound.map_or(String::new(), number));
            lines.push(cells.join(","));
        }
        lines.join("\n") + "\n"
    } else {
        serde_json::to_string_pretty(report)? + "\n"
    };
    // Written whole under a temporary name, then renamed: never half a table.
    place::write_whole(out, force, text.as_bytes())
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", out.display()))
}

fn print_text(r: &SweepReport) {
    crate::outln!(
        "gradcode sweep: {} ({} trials x {} iterations, seed {}; times in model time units{}; common random numbers)",
        r.origin,
        r.trials,
        r.iterations,
        r.seed,
        super::units::unit_note(r.model_time_unit_s)
    );
    let keys: Vec<&String> = r.grid.keys().collect();
    let mut header = format!("{:>4}  {:<18}", "rank", "scheme");
    for k in &keys {
        header.push_str(&format!("  {k:>16}"));
    }
    header.push_str("        mean ± ci95        p99  recovered  decode err  messages        LB");
    if r.model_time_unit_s.is_some() {
        header.push_str("     mean s");
    }
    crate::outln!("{header}");
    for row in &r.rows {
        let mut line = format!("{:>4}  {:<18}", row.rank, row.scheme);
        for k in &keys {
            line.push_str(&format!(
                "  {:>16}",
                row.settings.get(*k).map_or("-", String::as_str)
            ));
        }
        line.push_str(&format!(
            "  {:>9.4} ± {:<7.4} {:>9.4}  {:>9.3}  {:>10.4}  {:>8.2}  {:>8}",
            row.mean_iteration_time,
            row.ci95,
            row.p99,
            row.recovered_fraction,
            row.mean_decode_error,
            row.messages_per_iteration,
            row.lower_bound
                .map_or("-".to_string(), |b| format!("{b:.4}"))
        ));
        if let Some(u) = r.model_time_unit_s {
            line.push_str(&format!("  {:>9.4}", row.mean_iteration_time * u));
        }
        crate::outln!("{line}");
    }
    if !r.skipped.is_empty() {
        let variants: usize = r.skipped.iter().map(|s| s.variants).sum();
        crate::outln!("\nskipped ({variants} variants):");
        for s in &r.skipped {
            crate::outln!("  {}", describe_skipped(s));
        }
    }
}
