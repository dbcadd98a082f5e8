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
//!
//! This file parses the flags, calls the library and prints: the traces
//! are read into runs by [`crate::trace::compare_members`], the rows, the
//! baseline and the speedups are [`crate::trace::compare`]'s.

use std::path::PathBuf;

use clap::Args;

use crate::error::InputError;
use crate::study::speedup::Speedup;
use crate::trace::compare::{BaselineChoice, Comparison, Row, compare};
use crate::trace::compare_members::{read_all, same_file};
use crate::trace::summary::Targets;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::compare::{Member, test_member as member};

    /// [`compare`] of training traces, which must succeed.
    fn compare_train(
        members: &[Member],
        baseline: &BaselineChoice,
        targets: Targets,
    ) -> Comparison {
        compare(crate::trace::TraceKind::Train, members, baseline, targets).unwrap()
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
        let c = compare_train(&members, &BaselineChoice::Default, Targets::default());
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
        let c = compare_train(&members, &BaselineChoice::Default, Targets::default());
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
