//! `gradcode compare A.h5 B.h5 ... [--baseline A.h5] [--target-loss X]
//! [--target-accuracy A] [--json] [--csv OUT [--force]]`: the traces side
//! by side, with the speedup of each over a baseline.
//!
//! A row is a scheme run once or several times: training traces whose
//! resolved configs differ only in `seed` (and `[output]`) are one row, its
//! runs told apart by seed; a simulation trace gives a row per scheme, its
//! trials the runs (told apart by seed and trial). Per row: the runs, their
//! iterations, the iteration time (mean, p50, p99 over every iteration of
//! every run), the elapsed time (`/iteration/elapsed_s` of the last
//! iteration, mean over the runs), and for `--target-loss` /
//! `--target-accuracy` the iteration and time at which each run first
//! recorded the target ([`crate::trace::summary::Reach`], the same as
//! `inspect`'s), and the speedup over the baseline row:
//!
//! - speedup = baseline time / this time (> 1: faster than the baseline),
//!   for the mean iteration time and for the time to the target;
//! - rows whose runs have the baseline's seeds (two or more, the same set:
//!   repeated seeds, or a simulation's trials on common random numbers)
//!   are paired by seed: the geometric mean of the per-seed ratios, with a
//!   95% Student t interval on their logarithms; other rows get the ratio
//!   of the two rows' mean times, without an interval.
//!
//! The baseline row is `--baseline`'s (a trace given, which is added to the
//! traces if it is not among them, or a row label), else the first row of
//! an uncoded scheme, else the first row. The time to a target is the
//! elapsed time when every trace records it (loss evaluations left out),
//! else the sum of the iteration times up to it, which the output says
//! (with the file that lacks the elapsed time). Traces are opened as
//! `inspect` opens them (the probe child first, [`crate::trace::probe`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;
use serde::Serialize;

use crate::error::InputError;
use crate::study::speedup::{PairKey, Speedup, speedup};
use crate::trace::summary::{Reach, Summary, Targets, TraceColumns, summarize};

/// The flags of `compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The traces (`train --out`, or `simulate --out`; not both kinds).
    #[arg(value_name = "F.h5", required = true)]
    pub files: Vec<PathBuf>,
    /// The baseline: one of the traces (added when not among them) or a
    /// row label (default: the first uncoded row, else the first row).
    #[arg(long, value_name = "F.h5|LABEL")]
    pub baseline: Option<String>,
    /// The time and iterations until each run first recorded a train
    /// loss at most LOSS, and the speedup to it.
    #[arg(long, value_name = "LOSS", allow_negative_numbers = true)]
    pub target_loss: Option<f64>,
    /// The same for a test accuracy (a share, in (0, 1]) at least A.
    #[arg(long, value_name = "A", allow_negative_numbers = true)]
    pub target_accuracy: Option<f64>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also write the table as CSV to OUT.
    #[arg(long, value_name = "OUT.csv")]
    pub csv: Option<PathBuf>,
    /// Replace an existing --csv file.
    #[arg(long, requires = "csv")]
    pub force: bool,
}

/// One run: a training trace, or one trial of a simulated scheme.
#[derive(Debug, Clone)]
pub struct Member {
    pub file: String,
    /// The root attribute `seed`.
    pub seed: Option<u64>,
    /// The trial of a simulated scheme.
    pub trial: Option<usize>,
    /// The scheme kind (`uncoded`, `gc-dc`, ...).
    pub kind: String,
    /// The label of its row before any disambiguation: the kind (a
    /// training run) or the scheme's name in `simulate.compare`.
    pub label: String,
    /// What makes two runs repetitions of one another: the resolved config
    /// without `seed` and `[output]` (`None`: unknown, a row of its own).
    pub key: Option<toml::Table>,
    /// The root attribute `status`.
    pub status: Option<String>,
    pub columns: TraceColumns,
}

/// A row's runs against a target (`--target-loss`, `--target-accuracy`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetRow {
    pub target: f64,
    /// Runs that recorded the series at all (a finite value; a regression
    /// records no accuracy): the others can never reach the target.
    pub recorded: usize,
    /// Runs that recorded a value at or past the target.
    pub reached: usize,
    /// Mean over the runs of the 1-based iteration at which the target was
    /// first recorded (its own included); `None` unless every run reached it.
    pub iterations: Option<f64>,
    /// Mean over the runs of the time until then (see
    /// [`Comparison::time_basis`]); `None` unless every run reached it.
    pub time_s: Option<f64>,
    /// Of `time_s`; `None` when this row or the baseline has a run that did
    /// not reach the target.
    pub speedup: Option<Speedup>,
}

/// One run of a row, as the JSON lists it.
#[derive(Debug, Clone, Serialize)]
pub struct RunOut {
    pub file: String,
    pub seed: Option<u64>,
    /// The trial of a simulated scheme (absent for a training run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trial: Option<usize>,
    pub status: Option<String>,
    pub iterations: usize,
    pub mean_s: Option<f64>,
    pub elapsed_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_loss: Option<Reach>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_accuracy: Option<Reach>,
}

/// One row of the table: one scheme, one or more runs.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub label: String,
    pub scheme: String,
    pub baseline: bool,
    pub runs: Vec<RunOut>,
    /// Mean over the runs.
    pub iterations: f64,
    /// Over every iteration of every run (`None`: no finite iteration time).
    pub mean_s: Option<f64>,
    pub p50_s: Option<f64>,
    pub p99_s: Option<f64>,
    /// Mean over the runs of `/iteration/elapsed_s` at their last iteration
    /// (`None` when a run does not record it).
    pub elapsed_s: Option<f64>,
    /// Mean `/iteration/decode_error` over every iteration of every run
    /// (`None`: not recorded, a trace of an older gradcode).
    pub mean_decode_error: Option<f64>,
    /// Of the mean iteration time.
    pub speedup: Option<Speedup>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_loss: Option<TargetRow>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_accuracy: Option<TargetRow>,
}

/// What `compare --json` prints (keys in docs/json.md).
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// `train` or `simulation`: the traces are all of one kind.
    pub kind: crate::trace::TraceKind,
    /// Every time is in seconds.
    pub unit: &'static str,
    /// The label of the baseline row.
    pub baseline: String,
    /// What the time to a target is: `elapsed` (`/iteration/elapsed_s`) or
    /// `iteration time` (the sum of `/iteration/duration_s`, evaluation
    /// waits excluded, when some trace lacks the elapsed time).
    pub time_basis: &'static str,
    /// Why the time basis is `iteration time` (the file without elapsed times).
    pub time_basis_reason: Option<String>,
    pub rows: Vec<Row>,
}

/// The baseline of a comparison (`--baseline`).
#[derive(Debug, Clone, PartialEq)]
pub enum BaselineChoice {
    /// The first uncoded row, else the first row.
    Default,
    /// The row of the run of this file (as given in `Member::file`).
    File(String),
    /// The row with this label.
    Label(String),
}

/// A config as dotted keys and their values, for telling rows apart.
fn flatten(table: &toml::Table, prefix: &str, out: &mut BTreeMap<String, String>) {
    for (k, v) in table {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::Table(t) => flatten(t, &key, out),
            other => {
                out.insert(key, other.to_string());
            }
        }
    }
}

/// The resolved config `text` without what differs between repetitions of
/// one run: `seed` and `[output]`; `None` when it does not parse.
pub fn repetition_key(text: Option<&str>) -> Option<toml::Table> {
    let mut table: toml::Table = toml::from_str(text?).ok()?;
    table.remove("seed");
    table.remove("output");
    Some(table)
}

/// The runs grouped into rows (in the order of their first run), labelled:
/// rows that share a label get the config keys that tell them apart.
fn group(members: &[Member]) -> Vec<(String, Vec<usize>)> {
    let mut rows: Vec<Vec<usize>> = Vec::new();
    for (i, m) in members.iter().enumerate() {
        let same = |r: &Vec<usize>| {
            let first = &members[r[0]];
            first.label == m.label && first.key.is_some() && first.key == m.key
        };
        match rows.iter_mut().find(|r| same(r)) {
            Some(r) => r.push(i),
            None => rows.push(vec![i]),
        }
    }
    let flat: Vec<BTreeMap<String, String>> = rows
        .iter()
        .map(|r| {
            let mut out = BTreeMap::new();
            if let Some(key) = &members[r[0]].key {
                flatten(key, "", &mut out);
            }
            out
        })
        .collect();
    rows.iter()
        .enumerate()
        .map(|(i, r)| {
            let label = &members[r[0]].label;
            let twins: Vec<usize> = (0..rows.len())
                .filter(|&j| j != i && members[rows[j][0]].label == *label)
                .collect();
            if twins.is_empty() {
                return (label.clone(), r.clone());
            }
            // The keys whose values differ from a twin's, `scheme.` first.
            let mut differing: Vec<&String> = flat[i]
                .iter()
                .filter(|(k, v)| twins.iter().any(|&j| flat[j].get(*k) != Some(*v)))
                .map(|(k, _)| k)
                .collect();
            differing.sort_by_key(|k| (!k.starts_with("scheme."), (*k).clone()));
            // Every one of them: rows that differ only past a third key
            // (momentum against Nesterov) must not read the same.
            let shown: Vec<String> = differing
                .iter()
                .map(|k| format!("{k}={}", flat[i][*k]))
                .collect();
            let text = if shown.is_empty() {
                format!("{label} ({})", members[r[0]].file)
            } else {
                format!("{label} ({})", shown.join(", "))
            };
            (text, r.clone())
        })
        .collect()
}

/// The comparison of `members` (see the module); `Err` (in words, for
/// `--baseline`) when the baseline names no row.
pub fn compare(
    kind: crate::trace::TraceKind,
    members: &[Member],
    baseline: &BaselineChoice,
    targets: Targets,
) -> Result<Comparison, String> {
    let rows = group(members);
    let base = baseline_row(&rows, members, baseline)?;
    // Every run's summary with the targets: inspect's.
    let summaries: Vec<Summary> = members
        .iter()
        .map(|m| summarize(&[&m.columns]).with_targets(&m.columns, targets))
        .collect();
    let lacking = members
        .iter()
        .zip(&summaries)
        .find(|(_, s)| s.elapsed_s.is_none() && s.iterations > 0)
        .map(|(m, _)| m.file.clone());
    let elapsed_basis = lacking.is_none();
    let runs = Runs {
        members,
        summaries: &summaries,
        elapsed_basis,
        base_runs: &rows[base].1,
    };
    let base_means = runs.means(runs.base_runs);
    let out_rows = rows
        .iter()
        .enumerate()
        .map(|(r, (label, of_row))| runs.row(label, of_row, r == base, &base_means, targets))
        .collect();
    Ok(Comparison {
        kind,
        unit: "s",
        baseline: rows[base].0.clone(),
        time_basis: if elapsed_basis {
            "elapsed"
        } else {
            "iteration time"
        },
        time_basis_reason: lacking.map(|f| {
            format!("{f} does not record /iteration/elapsed_s (a trace of an older gradcode)")
        }),
        rows: out_rows,
    })
}

/// The row of the baseline: the first with an uncoded run (default: the
/// first row), the row of a trace file, or the row of a label.
fn baseline_row(
    rows: &[(String, Vec<usize>)],
    members: &[Member],
    baseline: &BaselineChoice,
) -> Result<usize, String> {
    Ok(match baseline {
        BaselineChoice::Default => rows
            .iter()
            .position(|(_, r)| r.iter().any(|&i| members[i].kind == "uncoded"))
            .unwrap_or(0),
        BaselineChoice::File(file) => rows
            .iter()
            .position(|(_, r)| r.iter().any(|&i| members[i].file == *file))
            .ok_or_else(|| format!("{file} is not one of the traces"))?,
        BaselineChoice::Label(label) => {
            rows.iter().position(|(l, _)| l == label).ok_or_else(|| {
                format!(
                    "names neither a trace nor a row (rows: {})",
                    rows.iter()
                        .map(|(l, _)| l.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?
        }
    })
}

/// The runs compared, with their summaries, by index into `members`.
struct Runs<'a> {
    members: &'a [Member],
    summaries: &'a [Summary],
    /// Times to a target are elapsed times (every run records them), else
    /// sums of iteration times.
    elapsed_basis: bool,
    /// The runs of the baseline's row.
    base_runs: &'a [usize],
}

impl Runs<'_> {
    /// The key that pairs run `i` with a run of another row.
    fn pair(&self, i: usize) -> PairKey {
        (self.members[i].seed, self.members[i].trial)
    }

    /// The mean iteration time of run `i`.
    fn mean_of(&self, i: usize) -> Option<f64> {
        self.summaries[i].iteration_time_s.as_ref().map(|d| d.mean)
    }

    /// The mean iteration time of each of `runs`, paired.
    fn means(&self, runs: &[usize]) -> Vec<(PairKey, Option<f64>)> {
        runs.iter()
            .map(|&i| (self.pair(i), self.mean_of(i)))
            .collect()
    }

    /// Run `i`'s reach of the target loss (`loss`) or accuracy.
    fn reach(&self, i: usize, loss: bool) -> Option<&Reach> {
        if loss {
            self.summaries[i].target_loss.as_ref()
        } else {
            self.summaries[i].target_accuracy.as_ref()
        }
    }

    /// The time each of `runs` took to reach the target, paired.
    fn target_times(&self, runs: &[usize], loss: bool) -> Vec<(PairKey, Option<f64>)> {
        let reach_time = |r: &Reach| {
            if self.elapsed_basis {
                r.elapsed_s
            } else {
                r.time_s
            }
        };
        runs.iter()
            .map(|&i| (self.pair(i), self.reach(i, loss).and_then(reach_time)))
            .collect()
    }

    /// How `runs` reach the target loss (`loss`) or accuracy `target`.
    fn target_row(&self, runs: &[usize], loss: bool, target: f64) -> TargetRow {
        let reaches: Vec<&Reach> = runs.iter().filter_map(|&i| self.reach(i, loss)).collect();
        let reached = reaches.iter().filter(|r| r.reached).count();
        let recorded = reaches.iter().filter(|r| r.evaluated > 0).count();
        let all = reached == runs.len() && !runs.is_empty();
        let mean = |v: Vec<f64>| v.iter().sum::<f64>() / v.len() as f64;
        let times = self.target_times(runs, loss);
        TargetRow {
            target,
            recorded,
            reached,
            iterations: all.then(|| {
                mean(
                    reaches
                        .iter()
                        .map(|r| r.iteration.unwrap_or(0) as f64)
                        .collect(),
                )
            }),
            time_s: times
                .iter()
                .map(|(_, t)| *t)
                .collect::<Option<Vec<f64>>>()
                .filter(|t| all && !t.is_empty())
                .map(mean),
            speedup: speedup(&self.target_times(self.base_runs, loss), &times),
        }
    }

    /// Run `i` as the comparison lists it.
    fn run_out(&self, i: usize) -> RunOut {
        let (m, s) = (&self.members[i], &self.summaries[i]);
        RunOut {
            file: m.file.clone(),
            seed: m.seed,
            trial: m.trial,
            status: m.status.clone(),
            iterations: s.iterations,
            mean_s: self.mean_of(i),
            elapsed_s: s.elapsed_s,
            target_loss: s.target_loss.clone(),
            target_accuracy: s.target_accuracy.clone(),
        }
    }

    /// The row `label` of `runs`: their pooled times and speedups over the
    /// baseline.
    fn row(
        &self,
        label: &str,
        runs: &[usize],
        baseline: bool,
        base_means: &[(PairKey, Option<f64>)],
        targets: Targets,
    ) -> Row {
        let parts: Vec<&TraceColumns> = runs.iter().map(|&i| &self.members[i].columns).collect();
        let pooled = summarize(&parts);
        let elapsed: Option<Vec<f64>> = runs.iter().map(|&i| self.summaries[i].elapsed_s).collect();
        let n = runs.len() as f64;
        Row {
            label: label.to_string(),
            scheme: self.members[runs[0]].kind.clone(),
            baseline,
            runs: runs.iter().map(|&i| self.run_out(i)).collect(),
            iterations: runs
                .iter()
                .map(|&i| self.summaries[i].iterations as f64)
                .sum::<f64>()
                / n,
            mean_s: pooled.iteration_time_s.as_ref().map(|d| d.mean),
            p50_s: pooled.iteration_time_s.as_ref().map(|d| d.p50),
            p99_s: pooled.iteration_time_s.as_ref().map(|d| d.p99),
            elapsed_s: elapsed.map(|e| e.iter().sum::<f64>() / n),
            mean_decode_error: pooled.decode_error.as_ref().map(|d| d.mean),
            speedup: speedup(base_means, &self.means(runs)),
            target_loss: targets.loss.map(|x| self.target_row(runs, true, x)),
            target_accuracy: targets.accuracy.map(|a| self.target_row(runs, false, a)),
        }
    }
}

/// A number with 4 significant digits, scientific beyond 1e6 or below 1e-4.
fn sig(x: f64) -> String {
    let a = x.abs();
    if !x.is_finite() {
        format!("{x}")
    } else if a == 0.0 {
        "0".to_string()
    } else if !(1e-4..1e6).contains(&a) {
        format!("{x:.3e}")
    } else {
        let decimals = (3 - a.log10().floor() as i32).max(0) as usize;
        format!("{x:.decimals$}")
    }
}

fn opt(x: Option<f64>) -> String {
    x.map_or("-".to_string(), sig)
}

/// A count, or a mean of counts: whole when it is, else 4 significant digits.
fn count(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        sig(x)
    }
}

fn speedup_text(s: &Option<Speedup>, baseline: bool) -> String {
    match s {
        _ if baseline => "1 (baseline)".to_string(),
        None => "-".to_string(),
        Some(Speedup {
            value,
            ci95: Some([lo, hi]),
            ..
        }) => format!("{} [{}, {}]", sig(*value), sig(*lo), sig(*hi)),
        Some(s) => sig(s.value),
    }
}

/// The text table (units stated) and its notes.
pub fn text(c: &Comparison) -> String {
    let mut out = String::new();
    out += &header_text(c);
    out += &table_text(c);
    out += &targets_text(c);
    out += &runs_text(c);
    out += "\nspeedup = baseline time / this time (> 1: faster than the baseline). Rows with the baseline's \
            seeds (2 or more runs each) are paired by seed: geometric mean of the per-seed ratios [95% \
            Student t interval]; other rows: the ratio of the two rows' mean times.\n";
    out
}

/// The title line (runs, rows, baseline) and what the times are.
fn header_text(c: &Comparison) -> String {
    let mut out = String::new();
    let runs: usize = c.rows.iter().map(|r| r.runs.len()).sum();
    let what = match c.kind {
        crate::trace::TraceKind::Train => "training",
        crate::trace::TraceKind::Simulation => "simulated",
    };
    out += &format!(
        "gradcode compare: {runs} {what} run(s) in {} row(s); baseline {}\n",
        c.rows.len(),
        c.baseline
    );
    out += match c.kind {
        crate::trace::TraceKind::Train => {
            "times in seconds: iteration times as recorded (duration_s); elapsed = the master's wall clock from the start of the first iteration to the end of the last, less its loss evaluations\n"
        }
        crate::trace::TraceKind::Simulation => {
            "times in seconds of model time (model time x straggler.time_unit_ms, not measured); elapsed = the sum of a trial's iteration times\n"
        }
    };
    out += "\n";
    out
}

/// The table of the rows: times, decode error, speedup.
fn table_text(c: &Comparison) -> String {
    let mut out = String::new();
    // The decode error's column where some row's decode is not exact.
    let with_error = c
        .rows
        .iter()
        .any(|r| r.mean_decode_error.is_some_and(|e| e > 1e-9));
    let head = format!(
        "{:<24} {:>5} {:>10} {:>10} {:>10} {:>10} {:>12}{}  {}\n",
        "scheme",
        "runs",
        "iterations",
        "mean (s)",
        "p50 (s)",
        "p99 (s)",
        "elapsed (s)",
        if with_error {
            format!(" {:>12}", "decode err")
        } else {
            String::new()
        },
        "speedup (mean iteration)"
    );
    out += &head;
    for r in &c.rows {
        let label = wrapped_label(&r.label, &mut out);
        out += &format!(
            "{:<24} {:>5} {:>10} {:>10} {:>10} {:>10} {:>12}{}  {}\n",
            label,
            r.runs.len(),
            count(r.iterations),
            opt(r.mean_s),
            opt(r.p50_s),
            opt(r.p99_s),
            r.elapsed_s.map_or("not recorded".to_string(), sig),
            if with_error {
                format!(
                    " {:>12}",
                    r.mean_decode_error
                        .map_or("not recorded".to_string(), |e| format!("{e:.4}"))
                )
            } else {
                String::new()
            },
            speedup_text(&r.speedup, r.baseline)
        );
    }
    out
}

/// One table per target (loss, accuracy): reached, iteration, time, speedup.
fn targets_text(c: &Comparison) -> String {
    let mut out = String::new();
    for (loss, title) in [(true, "train loss ≤"), (false, "test accuracy ≥")] {
        let target = |r: &Row| {
            if loss {
                r.target_loss.clone()
            } else {
                r.target_accuracy.clone()
            }
        };
        let Some(first) = c.rows.first().and_then(target) else {
            continue;
        };
        out += &format!(
            "\ntarget {title} {} (time: {}):\n",
            first.target,
            if c.time_basis == "elapsed" {
                "elapsed"
            } else {
                "sum of iteration times, evaluation waits excluded"
            }
        );
        out += &format!(
            "{:<24} {:>8} {:>10} {:>10}  {}\n",
            "scheme", "reached", "iteration", "time (s)", "speedup (time to target)"
        );
        for r in &c.rows {
            let t = target(r).expect("every row has the target");
            let label = wrapped_label(&r.label, &mut out);
            out += &format!(
                "{:<24} {:>8} {:>10} {:>10}  {}\n",
                label,
                match (t.recorded, r.runs.len()) {
                    (0, _) => "not recorded".to_string(),
                    (recorded, runs) if recorded < runs => {
                        format!("{}/{} ({} not recorded)", t.reached, runs, runs - recorded)
                    }
                    (_, runs) => format!("{}/{runs}", t.reached),
                },
                t.iterations.map_or("-".to_string(), count),
                opt(t.time_s),
                speedup_text(&t.speedup, r.baseline)
            );
        }
    }
    if let Some(why) = &c.time_basis_reason
        && c.rows
            .iter()
            .any(|r| r.target_loss.is_some() || r.target_accuracy.is_some())
    {
        out += &format!("times to targets are iteration times: {why}\n");
    }
    out
}

/// The runs of each row, with their trial, seed, status.
fn runs_text(c: &Comparison) -> String {
    let mut out = String::new();
    out += "\nruns:\n";
    for r in &c.rows {
        let list: Vec<String> = r
            .runs
            .iter()
            .map(|m| {
                let mut s = m.file.clone();
                let mut tags = Vec::new();
                if let Some(t) = m.trial {
                    tags.push(format!("trial {t}"));
                }
                if let Some(seed) = m.seed {
                    tags.push(format!("seed {seed}"));
                }
                if let Some(st) = m.status.as_deref().filter(|s| *s != "completed") {
                    tags.push(format!("status {st}"));
                }
                if m.elapsed_s.is_none() {
                    tags.push("elapsed not recorded".to_string());
                }
                if !tags.is_empty() {
                    s += &format!(" ({})", tags.join(", "));
                }
                s
            })
            .collect();
        out += &format!("  {}: {}\n", r.label, list.join("; "));
    }
    out
}

/// An RFC 4180 cell: quoted when it holds a comma, a quote or a line break.
/// The label for the table's first column (24 characters): as it is when it
/// fits; else written whole on lines of its own into `out` (wrapped after a
/// comma past 72 characters), and the row's numbers follow under an empty
/// label. Never cut.
fn wrapped_label<'a>(label: &'a str, out: &mut String) -> &'a str {
    const COLUMN: usize = 24;
    const LINE: usize = 72;
    if label.chars().count() <= COLUMN {
        return label;
    }
    let mut line = String::new();
    for (i, part) in label.split(", ").enumerate() {
        let piece = if i == 0 {
            part.to_string()
        } else {
            format!(", {part}")
        };
        if !line.is_empty() && line.chars().count() + piece.chars().count() > LINE {
            *out += &format!("{},\n", line.trim_end());
            line = format!("  {}", piece.trim_start_matches(", "));
        } else {
            line += &piece;
        }
    }
    *out += &format!("{line}\n");
    ""
}

fn cell(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// The columns of the CSV (docs/running.md).
pub const CSV_COLUMNS: [&str; 25] = [
    "label",
    "scheme",
    "baseline",
    "runs",
    "files",
    "seeds",
    "iterations",
    "mean_s",
    "p50_s",
    "p99_s",
    "elapsed_s",
    "speedup",
    "speedup_low",
    "speedup_high",
    "target_loss",
    "loss_reached",
    "loss_iteration",
    "loss_time_s",
    "loss_speedup",
    "target_accuracy",
    "accuracy_reached",
    "accuracy_iteration",
    "accuracy_time_s",
    "accuracy_speedup",
    "mean_decode_error",
];

/// The table as CSV: a header, then a row per row of the comparison; an
/// empty cell is a value that does not exist (not recorded, not reached).
pub fn csv(c: &Comparison) -> String {
    let num = |x: Option<f64>| x.map_or(String::new(), |x| format!("{x}"));
    let mut out = CSV_COLUMNS.join(",") + "\n";
    for r in &c.rows {
        let s = r.speedup.as_ref();
        let mut cells = vec![
            cell(&r.label),
            cell(&r.scheme),
            r.baseline.to_string(),
            r.runs.len().to_string(),
            cell(
                &r.runs
                    .iter()
                    .map(|m| m.file.as_str())
                    .collect::<Vec<_>>()
                    .join(";"),
            ),
            cell(
                &r.runs
                    .iter()
                    .map(|m| m.seed.map_or(String::new(), |s| s.to_string()))
                    .collect::<Vec<_>>()
                    .join(";"),
            ),
            format!("{}", r.iterations),
            num(r.mean_s),
            num(r.p50_s),
            num(r.p99_s),
            num(r.elapsed_s),
            num(s.map(|s| s.value)),
            num(s.and_then(|s| s.ci95).map(|c| c[0])),
            num(s.and_then(|s| s.ci95).map(|c| c[1])),
        ];
        for t in [&r.target_loss, &r.target_accuracy] {
            match t {
                None => cells.extend(std::iter::repeat_n(String::new(), 5)),
                Some(t) => cells.extend([
                    format!("{}", t.target),
                    t.reached.to_string(),
                    num(t.iterations),
                    num(t.time_s),
                    num(t.speedup.as_ref().map(|s| s.value)),
                ]),
            }
        }
        cells.push(num(r.mean_decode_error));
        out += &(cells.join(",") + "\n");
    }
    out
}

/// Run `compare`: every check first (flags, `--csv`, each trace read), then
/// the output.
pub(super) fn run(flags: &CompareArgs) -> anyhow::Result<()> {
    let targets = Targets {
        loss: flags.target_loss,
        accuracy: flags.target_accuracy,
    };
    super::check_targets(targets)?;
    let mut files = flags.files.clone();
    let mut baseline = BaselineChoice::Default;
    if let Some(b) = &flags.baseline {
        let path = PathBuf::from(b);
        let known = files.iter().find(|f| same_file(f, &path)).cloned();
        match known {
            Some(f) => baseline = BaselineChoice::File(f.display().to_string()),
            None if path.exists() => {
                files.insert(0, path.clone());
                baseline = BaselineChoice::File(path.display().to_string());
            }
            None => baseline = BaselineChoice::Label(b.clone()),
        }
    }
    for (i, f) in files.iter().enumerate() {
        if files[..i].iter().any(|g| same_file(g, f)) {
            return Err(InputError::new(
                f.display().to_string(),
                "is given twice: each trace is one run, compared once",
            )
            .into());
        }
    }
    if let Some(out) = &flags.csv {
        let inputs: Vec<crate::trace::place::Input> = files
            .iter()
            .map(|f| crate::trace::place::Input::new("trace", f))
            .collect();
        crate::trace::place::check_folder(out)
            .and_then(|()| crate::trace::place::check_output(out, flags.force, &inputs))
            .map_err(|e| InputError::new("--csv", e))?;
    }
    let (kind, members) = read_all(&files, targets)?;
    let comparison = compare(kind, &members, &baseline, targets)
        .map_err(|e| InputError::value("--baseline", flags.baseline.as_deref().unwrap_or(""), e))?;
    if let Some(out) = &flags.csv {
        crate::trace::place::write_whole(out, flags.force, csv(&comparison).as_bytes())
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", out.display()))?;
    }
    if flags.json {
        crate::outln!("{}", serde_json::to_string_pretty(&comparison)?);
    } else {
        crate::outln!("{}", text(&comparison).trim_end());
        if let Some(out) = &flags.csv {
            crate::outln!("table written to {}", out.display());
        }
    }
    Ok(())
}

/// The same file: equal paths, or one file under two names (a symbolic or
/// a hard link: the same device and inode).
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    a == b
        || matches!(
            (std::fs::metadata(a), std::fs::metadata(b)),
            (Ok(x), Ok(y)) if (x.dev(), x.ino()) == (y.dev(), y.ino())
        )
}

/// Every trace read through the guarded reader after its probe, as runs;
/// an error names the file (or the flag a simulation trace cannot answer).
fn read_all(
    files: &[PathBuf],
    targets: Targets,
) -> Result<(crate::trace::TraceKind, Vec<Member>), InputError> {
    crate::trace::backend::check(crate::trace::backend::TraceUse::Read)
        .map_err(|missing| InputError::new(files[0].display().to_string(), missing))?;
    use crate::trace::{TraceFile, TraceKind};
    let mut kind: Option<(TraceKind, String)> = None;
    let mut members = Vec::new();
    for path in files {
        let name = path.display().to_string();
        super::trace_file::check_file(path)?;
        let err = |e| super::trace_file::read_error(path, e);
        let file = TraceFile::open(path).map_err(err)?;
        let root = file.root().map_err(err)?;
        same_kind(&mut kind, root.kind, &name)?;
        let key = repetition_key(root.config_toml.as_deref());
        match root.kind {
            TraceKind::Train => {
                let columns = file.columns("/", root.workers).map_err(err)?;
                let kind = root.scheme.clone().unwrap_or_else(|| "?".to_string());
                members.push(Member {
                    file: name.clone(),
                    seed: root.seed,
                    trial: None,
                    label: kind.clone(),
                    kind,
                    key,
                    status: root.status.clone(),
                    columns,
                });
            }
            TraceKind::Simulation => {
                sim_members(&file, &root, key, path, targets, &mut members)?;
            }
        }
        if !members.iter().any(|m| m.file == name) {
            return Err(InputError::new(
                &name,
                "holds no run (a simulation trace without trials)",
            ));
        }
    }
    let (kind, _) = kind.expect("at least one file");
    Ok((kind, members))
}

/// The first trace's kind, or an error when `name` is of another kind:
/// the times of a simulation are model time, never compared with
/// measured ones.
fn same_kind(
    kind: &mut Option<(crate::trace::TraceKind, String)>,
    this: crate::trace::TraceKind,
    name: &str,
) -> Result<(), InputError> {
    use crate::trace::TraceKind;
    match &*kind {
        None => *kind = Some((this, name.to_string())),
        Some((k, first)) if *k != this => {
            let what = |k: TraceKind| match k {
                TraceKind::Train => "a training trace",
                TraceKind::Simulation => "a simulation trace",
            };
            return Err(InputError::new(
                name,
                format!(
                    "is {} and {first} {}: the times of a simulation are model time, not measured, so the two are not compared",
                    what(this),
                    what(*k)
                ),
            ));
        }
        Some(_) => {}
    }
    Ok(())
}

/// The runs of a simulation trace: one per compared scheme and trial
/// (targets refused: a simulation records no losses or accuracies).
fn sim_members(
    file: &crate::trace::TraceFile,
    root: &crate::trace::RootInfo,
    key: Option<toml::Table>,
    path: &Path,
    targets: Targets,
    members: &mut Vec<Member>,
) -> Result<(), InputError> {
    let name = path.display().to_string();
    let err = |e| super::trace_file::read_error(path, e);
    if targets.any() {
        let flag = if targets.loss.is_some() {
            "--target-loss"
        } else {
            "--target-accuracy"
        };
        return Err(InputError::new(
            flag,
            format!(
                "{name} is a simulation trace, which records no losses or accuracies: the flag reads training traces (train --out)"
            ),
        ));
    }
    for s in file.sim_schemes().map_err(err)? {
        let kind = sim_kind(key.as_ref(), &s.name);
        // The scheme's name is part of what makes runs repetitions.
        let mut scheme_key = key.clone();
        if let Some(k) = scheme_key.as_mut() {
            k.insert("compared_scheme".to_string(), s.name.clone().into());
        }
        for (trial, group) in &s.trial_groups {
            let columns = file.columns(group, root.workers).map_err(err)?;
            members.push(Member {
                file: name.clone(),
                seed: root.seed,
                trial: Some(*trial),
                kind: kind.clone(),
                label: s.name.clone(),
                key: scheme_key.clone(),
                status: root.status.clone(),
                columns,
            });
        }
    }
    Ok(())
}

/// The kind of the scheme `name` of a simulation's `simulate.compare` (a
/// name, or a table with `name` and `kind`); the name when not found.
fn sim_kind(config: Option<&toml::Table>, name: &str) -> String {
    let entries = config
        .and_then(|c| c.get("simulate"))
        .and_then(|s| s.get("compare"))
        .and_then(|c| c.as_array());
    for e in entries.into_iter().flatten() {
        if let Some(t) = e.as_table()
            && t.get("name").and_then(|n| n.as_str()) == Some(name)
            && let Some(kind) = t.get("kind").and_then(|k| k.as_str())
        {
            return kind.to_string();
        }
    }
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::IterationRecord;

    fn member(file: &str, kind: &str, seed: u64, config: &str, durations: &[f64]) -> Member {
        let records: Vec<IterationRecord> = durations
            .iter()
            .scan(0.0, |clock, &d| {
                *clock += d + 0.5;
                let mut r = IterationRecord::new(2);
                r.duration_s = d;
                r.elapsed_s = *clock;
                r.train_loss = 1.0 / *clock;
                Some(r)
            })
            .collect();
        Member {
            file: file.into(),
            seed: Some(seed),
            trial: None,
            kind: kind.into(),
            label: kind.into(),
            key: repetition_key(Some(&format!("seed = {seed}\n{config}"))),
            status: Some("completed".into()),
            columns: TraceColumns::from_records(2, &records),
        }
    }

    #[test]
    fn repetitions_group_by_config_without_seed_and_twins_are_told_apart() {
        let a = "[scheme]\nkind = \"gc-dc\"\nclusters = 2\n[output]\ntrace = \"x.h5\"\n";
        let b = "[scheme]\nkind = \"gc-dc\"\nclusters = 4\n";
        let members = [
            member(
                "u1.h5",
                "uncoded",
                1,
                "[scheme]\nkind = \"uncoded\"\n",
                &[2.0, 2.0],
            ),
            member("a1.h5", "gc-dc", 1, a, &[1.0, 1.0]),
            member("b1.h5", "gc-dc", 1, b, &[1.5, 1.5]),
            member("a2.h5", "gc-dc", 2, &a.replace("x.h5", "y.h5"), &[1.0, 3.0]),
        ];
        let c = compare(
            crate::trace::TraceKind::Train,
            &members,
            &BaselineChoice::Default,
            Targets::default(),
        )
        .unwrap();
        let labels: Vec<&str> = c.rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "uncoded",
                "gc-dc (scheme.clusters=2)",
                "gc-dc (scheme.clusters=4)"
            ]
        );
        assert_eq!(c.rows[1].runs.len(), 2, "seeds 1 and 2, outputs apart");
        assert_eq!(c.baseline, "uncoded");
        assert!(c.rows[0].baseline);
        // Pooled over both runs' iterations: 1, 1, 1, 3.
        assert_eq!(c.rows[1].mean_s, Some(1.5));
        // Runs of 2 and 3 iteration-seconds, elapsed 3 and 5: mean 4.
        assert_eq!(c.rows[1].elapsed_s, Some(4.0));
        // Unpaired (the baseline has one seed): 2 / mean(1, 2).
        let s = c.rows[1].speedup.as_ref().unwrap();
        assert_eq!((s.value, s.method), (2.0 / 1.5, "ratio of means"));
        assert_eq!(c.time_basis, "elapsed");
        // The baseline by label and by file.
        for choice in [
            BaselineChoice::Label("gc-dc (scheme.clusters=4)".into()),
            BaselineChoice::File("b1.h5".into()),
        ] {
            let c = compare(
                crate::trace::TraceKind::Train,
                &members,
                &choice,
                Targets::default(),
            )
            .unwrap();
            assert!(c.rows[2].baseline && !c.rows[0].baseline);
            assert_eq!(c.rows[0].speedup.as_ref().unwrap().value, 1.5 / 2.0);
        }
        let e = compare(
            crate::trace::TraceKind::Train,
            &members,
            &BaselineChoice::Label("gc".into()),
            Targets::default(),
        )
        .unwrap_err();
        assert!(
            e.contains("rows: uncoded, gc-dc (scheme.clusters=2)"),
            "{e}"
        );
    }

    /// Twins that differ in more than three keys are told apart by every
    /// one of them (issue 39: momentum and Nesterov rows read the same behind
    /// "..."), and the text table shows each label whole, wrapped.
    #[test]
    fn twins_are_labelled_by_every_differing_key_and_never_cut() {
        let base = "[scheme]\nkind = \"gc-cyclic\"\n[train]\nlearning_rate = 0.1\nbatch_size = 8\nmomentum = 0.5\n";
        let nesterov = base
            .replace(
                "momentum = 0.5",
                "momentum = 0.9\nnesterov = true\nbatch_size2 = 1",
            )
            .replace("learning_rate = 0.1", "learning_rate = 0.2")
            .replace("batch_size = 8", "batch_size = 16");
        let members = [
            member("m.h5", "gc-cyclic", 1, base, &[1.0]),
            member("n.h5", "gc-cyclic", 1, &nesterov, &[1.0]),
        ];
        let c = compare(
            crate::trace::TraceKind::Train,
            &members,
            &BaselineChoice::Default,
            Targets::default(),
        )
        .unwrap();
        let labels: Vec<&str> = c.rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "gc-cyclic (train.batch_size=8, train.learning_rate=0.1, train.momentum=0.5)",
                "gc-cyclic (train.batch_size=16, train.batch_size2=1, train.learning_rate=0.2, train.momentum=0.9, train.nesterov=true)"
            ]
        );
        let table = text(&c);
        assert!(!table.contains("..."), "{table}");
        for key in [
            "train.momentum=0.5)",
            "train.batch_size2=1",
            "train.momentum=0.9",
            "train.nesterov=true)",
        ] {
            assert!(table.contains(key), "{key}: {table}");
        }
        // The table's label lines wrap at 72 characters (and a comma).
        let label_lines: Vec<&str> = table
            .lines()
            .filter(|l| l.starts_with("gc-cyclic (") || l.starts_with("  train."))
            .collect();
        assert_eq!(label_lines.len(), 4, "{table}");
        assert!(
            label_lines.iter().all(|l| l.chars().count() <= 73),
            "{table}"
        );
    }

    /// [`compare`] of training traces, which must succeed.
    fn compare_train(
        members: &[Member],
        baseline: &BaselineChoice,
        targets: Targets,
    ) -> Comparison {
        compare(crate::trace::TraceKind::Train, members, baseline, targets).unwrap()
    }

    #[test]
    fn time_to_target_is_elapsed_unless_a_trace_lacks_it() {
        // Elapsed (duration + 0.5 each): uncoded 2.5, 5.0; gc-dc 1.5, 3.0.
        // Train loss 1 / elapsed: ≤ 0.35 at elapsed 5.0 and 3.0.
        let mut members = vec![
            member(
                "u.h5",
                "uncoded",
                1,
                "[scheme]\nkind = \"uncoded\"\n",
                &[2.0, 2.0],
            ),
            member(
                "g.h5",
                "gc-dc",
                1,
                "[scheme]\nkind = \"gc-dc\"\n",
                &[1.0, 1.0],
            ),
        ];
        let targets = Targets {
            loss: Some(0.35),
            accuracy: None,
        };
        let c = compare_train(&members, &BaselineChoice::Default, targets);
        let t = c.rows[1].target_loss.as_ref().unwrap();
        assert_eq!(
            (t.reached, t.iterations, t.time_s),
            (1, Some(2.0), Some(3.0))
        );
        assert_eq!(t.speedup.as_ref().unwrap().value, 5.0 / 3.0);
        // Without the elapsed times of one trace: the iteration times (4 and 2).
        members[0].columns.elapsed_s = None;
        let c = compare_train(&members, &BaselineChoice::Default, targets);
        assert_eq!(c.time_basis, "iteration time");
        assert!(
            c.time_basis_reason
                .as_deref()
                .unwrap()
                .starts_with("u.h5 does not record")
        );
        let t = c.rows[1].target_loss.as_ref().unwrap();
        assert_eq!(t.time_s, Some(2.0));
        assert_eq!(t.speedup.as_ref().unwrap().value, 2.0);
        assert_eq!(c.rows[0].elapsed_s, None);
        assert!(text(&c).contains("elapsed not recorded"), "{}", text(&c));
        // ≤ 0.25: reached by uncoded (0.2 at iteration 2), not by gc-dc
        // (1 / 3 at best): no time, no speedup, whichever is the baseline.
        let low = Targets {
            loss: Some(0.25),
            accuracy: None,
        };
        for baseline in [
            BaselineChoice::Default,
            BaselineChoice::Label("gc-dc".into()),
        ] {
            let c = compare_train(&members, &baseline, low);
            let (tu, tg) = (
                c.rows[0].target_loss.as_ref().unwrap(),
                c.rows[1].target_loss.as_ref().unwrap(),
            );
            assert_eq!(
                (tu.reached, tu.time_s, tg.reached, tg.time_s),
                (1, Some(4.0), 0, None)
            );
            assert_eq!(tg.speedup, None, "{baseline:?}");
            let own = (baseline == BaselineChoice::Default).then_some(1.0);
            assert_eq!(tu.speedup.as_ref().map(|s| s.value), own, "{baseline:?}");
        }
    }

    #[test]
    fn csv_has_a_header_and_a_row_per_row_with_quoted_cells() {
        let members = [
            member(
                "u,1.h5",
                "uncoded",
                1,
                "[scheme]\nkind = \"uncoded\"\n",
                &[2.0],
            ),
            member("g.h5", "gc-dc", 1, "[scheme]\nkind = \"gc-dc\"\n", &[1.0]),
        ];
        let c = compare(
            crate::trace::TraceKind::Train,
            &members,
            &BaselineChoice::Default,
            Targets::default(),
        )
        .unwrap();
        let text = csv(&c);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], CSV_COLUMNS.join(","));
        assert!(
            lines[1].starts_with("uncoded,uncoded,true,1,\"u,1.h5\",1,1,2,2,2,2.5,1,,,"),
            "{}",
            lines[1]
        );
        assert!(
            lines[2].starts_with("gc-dc,gc-dc,false,1,g.h5,1,1,1,1,1,1.5,2,,,"),
            "{}",
            lines[2]
        );
        assert_eq!(lines.len(), 3);
    }

    #[test]
    fn numbers_keep_four_significant_digits() {
        assert_eq!(sig(0.0123456), "0.01235");
        assert_eq!(sig(12.3456), "12.35");
        assert_eq!(sig(1234.56), "1235");
        assert_eq!(sig(1e-7), "1.000e-7");
        assert_eq!(sig(0.0), "0");
    }
}
