//! `sweep`'s study (issue 40, item 4): the axes of `--grid` (its
//! `scheme.kind` axis apart: it chooses the schemes, as `--schemes` does),
//! the schemes swept, and every scheme run at every combination of the
//! axes on common random numbers ([`run_variants`]), ranked by mean
//! iteration time ([`rank_rows`]); [`nothing_ran`] when every variant was
//! refused. The command parses its flags, calls these and prints.

use std::collections::BTreeMap;

use serde::Serialize;

use super::grid::{Axis, combinations, describe, parse_grid};
use super::skipped::Skipped;
use super::variant::{Outcome, VariantRunner};
use crate::config::LoadedConfig;
use crate::engine::EngineError;
use crate::error::InputError;

/// One row of the table: a variant that ran.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// 1 = the smallest mean iteration time.
    pub rank: usize,
    pub scheme: String,
    /// The grid values of this variant, by key.
    pub settings: BTreeMap<String, String>,
    pub mean_iteration_time: f64,
    pub ci95: f64,
    pub p50: f64,
    pub p99: f64,
    pub recovered_fraction: f64,
    /// Mean ‖a·B_S − 1‖₂ per iteration (0: an exact scheme).
    pub mean_decode_error: f64,
    pub messages_per_iteration: f64,
    /// The scheme's own lower bound on the same samples (null when none).
    pub lower_bound: Option<f64>,
}

/// The axes of `--grid`, and its `scheme.kind` axis apart (it chooses the
/// schemes, as `--schemes` does).
pub fn grid_axes(grid: &[String]) -> Result<(Vec<Axis>, Option<Axis>), InputError> {
    if grid.is_empty() {
        return Err(InputError::new(
            "--grid",
            "is required (e.g. --grid scheme.load=2,3,4)",
        ));
    }
    let mut axes = parse_grid(grid)?;
    // The sweep sets these for each variant: an axis of them would be overridden.
    for key in ["simulate.compare", "simulate.baseline"] {
        if axes.iter().any(|a| a.key == key) {
            return Err(InputError::new(
                "--grid",
                format!(
                    "{key} is set by sweep for each variant (its scheme): choose the schemes \
                     with --grid scheme.kind=... or --schemes"
                ),
            ));
        }
    }
    // A scheme.kind axis chooses the schemes, as --schemes does.
    let kind_axis = axes
        .iter()
        .position(|a| a.key == "scheme.kind")
        .map(|i| axes.remove(i));
    Ok((axes, kind_axis))
}

/// The schemes of the sweep: `--schemes`, the `scheme.kind` axis, or the
/// config's compared schemes; each a registered scheme.
pub fn chosen_schemes(
    schemes: Option<&str>,
    kind_axis: Option<Axis>,
    loaded: &LoadedConfig,
) -> Result<Vec<String>, InputError> {
    let (schemes, field): (Vec<String>, &str) = match (schemes, kind_axis) {
        (Some(_), Some(_)) => {
            return Err(InputError::new(
                "--grid",
                "scheme.kind and --schemes both choose the schemes: give one",
            ));
        }
        (Some(list), None) => (
            list.split(',').map(|s| s.trim().to_string()).collect(),
            "--schemes",
        ),
        (None, Some(axis)) => (
            axis.values
                .iter()
                .map(|v| v.trim().trim_matches('"').to_string())
                .collect(),
            "--grid",
        ),
        (None, None) => (
            loaded
                .config
                .compared()
                .iter()
                .map(|e| e.name().to_string())
                .collect(),
            "--schemes",
        ),
    };
    for s in &schemes {
        if crate::coding::SCHEMES.get(s).is_none() {
            return Err(InputError::value(
                field,
                s,
                format!(
                    "is not a scheme (one of {})",
                    crate::coding::SCHEMES.names().join(", ")
                ),
            ));
        }
    }
    Ok(schemes)
}

/// Every scheme at every combination of the axes: the rows of those that
/// ran (unranked) and those skipped.
pub fn run_variants(
    axes: &[Axis],
    schemes: &[String],
    mut runner: VariantRunner,
) -> Result<(Vec<Row>, Vec<Skipped>), EngineError> {
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for combo in combinations(axes) {
        for scheme in schemes {
            let (settings, report) = match runner.run(&combo, scheme, |_| Ok(()))? {
                // Only the keys the scheme reads: a table shows no value
                // that did not make the row.
                Outcome::Ran { read, report, .. } => (read, report),
                Outcome::Skipped(s) => {
                    skipped.push(s);
                    continue;
                }
            };
            let s = &report.schemes[0];
            rows.push(Row {
                rank: 0,
                scheme: scheme.clone(),
                settings,
                mean_iteration_time: s.mean_iteration_time,
                ci95: s.ci95,
                p50: s.p50,
                p99: s.p99,
                recovered_fraction: s.recovered_fraction,
                mean_decode_error: s.mean_decode_error,
                messages_per_iteration: s.messages_per_iteration,
                lower_bound: s.lower_bound.as_ref().map(|b| b.mean_iteration_time),
            });
        }
    }
    Ok((rows, skipped))
}

/// Nothing ran: the grid is bad input, said once with the first reason
/// (`--grid scheme.nokey=1,2` exited 0 with every variant skipped).
pub fn nothing_ran(skipped: &[Skipped]) -> InputError {
    let first = skipped.first().map_or(String::new(), |s: &Skipped| {
        format!(
            " (the first: {} {}: {})",
            s.scheme,
            describe(&s.settings),
            s.reason
        )
    });
    InputError::new(
        "--grid",
        format!(
            "every one of its {} variants was refused{first}",
            skipped.len()
        ),
    )
}

/// Rank `rows` by mean iteration time: sorted, 1 the smallest.
pub fn rank_rows(rows: &mut [Row]) {
    rows.sort_by(|a, b| a.mean_iteration_time.total_cmp(&b.mean_iteration_time));
    for (i, r) in rows.iter_mut().enumerate() {
        r.rank = i + 1;
    }
}
