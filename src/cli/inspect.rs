//! `gradcode inspect F.h5 [--json] [--target-loss X] [--target-accuracy A]`:
//! a summary of a training trace or of a simulation trace (per scheme,
//! pooled over its trials). The statistics are [`crate::trace::summary`];
//! this file reads the file and prints them.

use std::path::{Path, PathBuf};

use clap::Args;

use super::check_targets;
use crate::error::InputError;
use crate::trace::summary::Targets;

/// The flags of `inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The trace file.
    #[arg(value_name = "F.h5")]
    pub file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Write the per-worker times of one partition computation of this
    /// training trace as a replay CSV (for straggler.model = "trace")
    /// instead of the summary.
    #[arg(long, value_name = "OUT.csv", conflicts_with = "json")]
    pub replay_csv: Option<PathBuf>,
    /// Replace an existing --replay-csv file.
    #[arg(long, requires = "replay_csv")]
    pub force: bool,
    /// Training trace: the first iteration whose recorded train loss is
    /// at most LOSS, the iterations before it and the time up to it.
    #[arg(
        long,
        value_name = "LOSS",
        allow_negative_numbers = true,
        conflicts_with = "replay_csv"
    )]
    pub target_loss: Option<f64>,
    /// Training trace: the first iteration whose recorded test accuracy
    /// (a share, in (0, 1]) is at least A, the iterations before it and
    /// the time up to it.
    #[arg(
        long,
        value_name = "A",
        allow_negative_numbers = true,
        conflicts_with = "replay_csv"
    )]
    pub target_accuracy: Option<f64>,
}

/// `inspect`: the replay CSV when `--replay-csv` is given, else the summary.
pub(super) fn run(flags: &InspectArgs) -> anyhow::Result<()> {
    match &flags.replay_csv {
        Some(out) => export_replay(&flags.file, out, flags.force),
        None => summarize(
            &flags.file,
            flags.json,
            Targets {
                loss: flags.target_loss,
                accuracy: flags.target_accuracy,
            },
        ),
    }
}

fn summarize(path: &Path, json: bool, targets: Targets) -> anyhow::Result<()> {
    check_targets(targets)?;
    // Without HDF5 there is nothing to read.
    crate::trace::backend::check(crate::trace::backend::TraceUse::Read)
        .map_err(|missing| InputError::new(path.display().to_string(), missing))?;
    let report = imp::read(path, targets)?;
    if let Some(flag) = targets
        .flag()
        .filter(|_| report.kind == crate::trace::TraceKind::Simulation)
    {
        return Err(InputError::new(
            flag,
            format!(
                "{} is a simulation trace, which records no losses or accuracies: the flag reads a training trace (train --out)",
                path.display()
            ),
        )
        .into());
    }
    // Values no run writes: said first, on stderr, whatever the format.
    for warning in &report.warnings {
        crate::errln!("warning: {}: {warning}", report.file);
    }
    if json {
        crate::outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        imp::print_text(&report);
    }
    Ok(())
}

/// `inspect F.h5 --replay-csv OUT`: the measured per-worker times of one
/// partition computation of a training trace (see [`crate::trace::measured`]) as a
/// replay CSV, written whole under a temporary name and renamed; an
/// existing OUT only with `force`.
pub(super) fn export_replay(path: &Path, out: &Path, force: bool) -> anyhow::Result<()> {
    use crate::trace::place;
    let shown = out.display().to_string();
    // The trace read is the command's input; a trace being written (the
    // writer's HDF5 lock) is refused by the claim.
    let inputs = [place::Input::new("trace", path)];
    place::check_folder(out)
        .and_then(|()| place::check_output(out, force, &inputs))
        .map_err(|e| InputError::new("--replay-csv", e))?;
    let measured = crate::trace::measured::read(path, &path.display().to_string())?;
    place::write_whole(out, force, measured.to_csv().as_bytes())
        .map_err(|e| anyhow::anyhow!("writing {shown}: {e}"))?;
    let rows = measured.series[0].len();
    // A measured run that records its workers' compute: that, without the network.
    let recorded = measured.recorded == crate::trace::measured::Transfers::Recorded;
    let (time, bound) = if recorded {
        (
            "compute_s",
            "the master's stop less the trace's fastest transfer, about a lower bound",
        )
    } else {
        ("finish_s", "the iteration's end, a lower bound")
    };
    crate::outln!(
        "{shown}: {rows} rows x {} workers of {} (model time of one partition computation: {time} / {} / {} s)",
        measured.series.len(),
        measured.scheme,
        measured.computations,
        measured.time_unit_s
    );
    if measured.censored > 0 {
        crate::errln!(
            "note: {} of {} worker-iterations had no result in time; their value is {bound}",
            measured.censored,
            rows * measured.series.len()
        );
    }
    Ok(())
}

mod imp {
    use std::path::Path;

    use crate::error::InputError;
    use crate::trace::file_check::{check_file, read_error};
    use crate::trace::summary::{Distribution, Reach, Summary, Targets};
    use crate::trace::{Report, TraceKind};

    /// Read the trace through the guarded reader; every error names the file.
    pub(super) fn read(path: &Path, targets: Targets) -> Result<Report, InputError> {
        check_file(path)?;
        Report::read_with(path, targets).map_err(|e| read_error(path, e))
    }

    /// `x` with `digits` decimals, in scientific notation (as many
    /// significant digits) beyond 1e6 or below 1e-4: a value of 1e300 from
    /// a trace prints as `1.000000e300`, not as 301 digits.
    pub(super) fn number(x: f64, digits: usize) -> String {
        let a = x.abs();
        if !x.is_finite() || a == 0.0 || (1e-4..1e6).contains(&a) {
            format!("{x:.digits$}")
        } else {
            format!("{x:.digits$e}")
        }
    }

    /// Seconds with a unit that fits.
    pub(super) fn secs(x: f64) -> String {
        let a = x.abs();
        if !x.is_finite() {
            format!("{x}")
        } else if a >= 1e6 {
            format!("{x:.3e} s")
        } else if a >= 100.0 {
            format!("{x:.1} s")
        } else if a >= 1.0 {
            format!("{x:.3} s")
        } else if a >= 1e-3 {
            format!("{:.3} ms", x * 1e3)
        } else if a == 0.0 {
            "0 s".to_string()
        } else {
            format!("{:.1} µs", x * 1e6)
        }
    }

    pub(super) fn pct(x: f64) -> String {
        format!("{}%", number(100.0 * x, 1))
    }

    /// A test accuracy (a share) as a percentage with two decimals.
    fn accuracy(x: f64) -> String {
        format!("{}%", number(100.0 * x, 2))
    }

    /// The line of a target: `≤ 0.500000: reached at iteration 12 (after 11
    /// iterations, 1.250 s): 0.481000`, or why not.
    fn reach(r: &Reach, relation: &str, dataset: &str, show: fn(f64) -> String) -> String {
        let target = format!("{relation} {}", show(r.target));
        match (r.iteration, r.value, r.time_s) {
            (Some(i), Some(v), Some(t)) => format!(
                "{target}: reached at iteration {i} (after {} iterations, {} of iteration time, {}): {}",
                i - 1,
                secs(t),
                elapsed(r.elapsed_s),
                show(v)
            ),
            _ if r.evaluated == 0 => {
                format!("{target}: not recorded (no finite /iteration/{dataset})")
            }
            _ => format!("{target}: not reached ({} values recorded)", r.evaluated),
        }
    }

    /// `1.250 s elapsed`, or that the trace does not record it (nothing
    /// is made up from the iteration times, which leave out evaluation waits).
    pub(super) fn elapsed(x: Option<f64>) -> String {
        match x {
            Some(x) => format!("{} elapsed", secs(x)),
            None => "elapsed not recorded".to_string(),
        }
    }

    fn dist(d: &Option<Distribution>) -> String {
        match d {
            None => "not recorded".to_string(),
            Some(d) => format!(
                "mean {}, p50 {}, p99 {} (min {}, max {}; {} values)",
                secs(d.mean),
                secs(d.p50),
                secs(d.p99),
                secs(d.min),
                secs(d.max),
                d.count
            ),
        }
    }

    fn line(label: &str, text: impl AsRef<str>) {
        crate::outln!("{label:<22}{}", text.as_ref());
    }

    /// The lines of a summary (one run, or one scheme `pooled` over trials).
    fn print_summary(s: &Summary, pooled: bool) {
        print_times(s, pooled);
        print_messages(s);
        print_stragglers(s);
        print_learning(s);
    }

    /// The iterations, their times and decode times, the recovered fraction
    /// and the decode error.
    fn print_times(s: &Summary, pooled: bool) {
        line(
            "iterations",
            format!(
                "{} ({} of iteration time, {})",
                s.iterations,
                secs(s.total_time_s),
                if pooled {
                    "pooled over trials".to_string()
                } else {
                    elapsed(s.elapsed_s)
                }
            ),
        );
        line("iteration time", dist(&s.iteration_time_s));
        line("decode time", dist(&s.decode_time_s));
        line(
            "recovered fraction",
            match &s.recovered_fraction {
                None => "not recorded".to_string(),
                Some(r) => format!(
                    "mean {}, min {}; full gradient in {} of iterations",
                    pct(r.mean),
                    pct(r.min),
                    pct(r.full_fraction)
                ),
            },
        );
        if let Some(e) = &s.decode_error {
            line(
                "decode error",
                format!(
                    "‖a·B_S − 1‖₂ mean {}, max {}; exact in {} of iterations",
                    number(e.mean, 4),
                    number(e.max, 4),
                    pct(e.exact_fraction)
                ),
            );
        }
    }

    /// The messages and workers per iteration, the stale results, the
    /// overruns.
    fn print_messages(s: &Summary) {
        let per = |x: Option<f64>| x.map_or("n/a".to_string(), |x| number(x, 2));
        line(
            "messages/iteration",
            format!(
                "{} received, {} used",
                per(s.messages_received_per_iteration),
                per(s.messages_used_per_iteration)
            ),
        );
        line(
            "workers/iteration",
            format!(
                "{} received in time, {} used",
                per(s.workers_received_per_iteration),
                per(s.workers_used_per_iteration)
            ),
        );
        line(
            "stale results",
            match &s.stale_dropped {
                None => "not recorded".to_string(),
                Some(st) => format!("{} dropped, in {} iterations", st.total, st.iterations),
            },
        );
        line(
            "overruns",
            match &s.overrun {
                None => "not recorded".to_string(),
                Some(o) if o.count == 0 => "none".to_string(),
                Some(o) => format!(
                    "{} worker-iterations ({}) ran past their emulated time: {} in total, max {}",
                    o.count,
                    pct(o.fraction),
                    secs(o.total_s),
                    secs(o.max_s)
                ),
            },
        );
    }

    /// The stragglers, the clusters and the stragglers per cluster.
    fn print_stragglers(s: &Summary) {
        line(
            "stragglers",
            match &s.stragglers {
                None => "not recorded".to_string(),
                Some(st) => {
                    let mut order: Vec<(usize, f64)> =
                        st.per_worker_fraction.iter().copied().enumerate().collect();
                    order.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                    let most: Vec<String> = order
                        .iter()
                        .filter(|(_, f)| *f > 0.0)
                        .take(5)
                        .map(|(k, f)| format!("worker {} ({})", k + 1, pct(*f)))
                        .collect();
                    format!(
                        "mean {:.2}, max {} per iteration; most often: {}",
                        st.mean_per_iteration,
                        st.max_per_iteration,
                        if most.is_empty() {
                            "none".to_string()
                        } else {
                            most.join(", ")
                        }
                    )
                }
            },
        );
        match &s.clusters {
            None => line("clusters", "none (no worker in a cluster)"),
            Some(c) => line(
                "clusters",
                format!(
                    "P = {}, clustered in {} iterations, re-formed in {}",
                    c.count, c.clustered_iterations, c.changes
                ),
            ),
        }
        if let Some(spc) = &s.stragglers_per_cluster {
            crate::outln!("stragglers per cluster (per clustered iteration):");
            crate::outln!("  {:<10}{:>8}{:>6}", "cluster", "mean", "max");
            for c in &spc.per_cluster {
                crate::outln!("  {:<10}{:>8.2}{:>6}", c.cluster, c.mean, c.max);
            }
            crate::outln!(
                "  spread as even as possible (most in one cluster = ceil(stragglers / P)) in {} of clustered iterations",
                pct(spc.even_fraction)
            );
        }
    }

    /// The losses, the accuracies and the targets reached.
    fn print_learning(s: &Summary) {
        for (label, loss) in [
            ("train loss", &s.train_loss),
            ("batch loss", &s.batch_loss),
            ("test loss", &s.test_loss),
        ] {
            if let Some(l) = loss {
                line(
                    label,
                    format!(
                        "{} (iteration {}) → {} (iteration {}); min {} (iteration {}); {} evaluated",
                        number(l.first, 6),
                        l.first_iteration,
                        number(l.last, 6),
                        l.final_iteration,
                        number(l.min, 6),
                        l.min_iteration,
                        l.evaluated
                    ),
                );
            }
        }
        for (label, a) in [
            ("batch accuracy", &s.batch_accuracy),
            ("test accuracy", &s.test_accuracy),
        ] {
            let Some(a) = a else { continue };
            line(
                label,
                format!(
                    "{} (iteration {}) → {} (iteration {}); best {} (iteration {}); {} evaluated",
                    accuracy(a.first),
                    a.first_iteration,
                    accuracy(a.last),
                    a.final_iteration,
                    accuracy(a.best),
                    a.best_iteration,
                    a.evaluated
                ),
            );
        }
        if let Some(r) = &s.target_loss {
            line(
                "target train loss",
                reach(r, "≤", "train_loss", |x| number(x, 6)),
            );
        }
        if let Some(r) = &s.target_accuracy {
            line(
                "target test accuracy",
                reach(r, "≥", "test_accuracy", accuracy),
            );
        }
    }

    fn print_extras(r: &Report) {
        for d in &r.extra_datasets {
            let unit = d.unit.as_deref().unwrap_or("");
            let values = match &d.values {
                None => String::new(),
                Some(v) if unit == "s" => format!(": mean {}, max {}", secs(v.mean), secs(v.max)),
                Some(v) => format!(
                    ": mean {}, min {}, max {}",
                    number(v.mean, 6),
                    number(v.min, 6),
                    number(v.max, 6)
                ),
            };
            line(
                "other dataset",
                format!("{} {:?} {unit}{values}", d.path, d.shape),
            );
        }
        for g in &r.extra_groups {
            let attrs: Vec<String> = g
                .attributes
                .iter()
                .map(|(k, v)| format!("{k} = {v}"))
                .collect();
            line(
                "other attributes",
                format!("{}: {}", g.path, attrs.join(", ")),
            );
        }
    }

    /// The run's status, in words: as recorded, and whether the writer is gone.
    pub(super) fn status_text(r: &Report) -> String {
        let reason = r
            .status_reason
            .as_deref()
            .map_or(String::new(), |why| format!(": {why}"));
        match (r.status.as_deref(), r.writer_open) {
            (None, _) => "not recorded (a trace of an older gradcode)".to_string(),
            (Some("running"), Some(false)) => format!(
                "running, but no process has the file open: the run died without closing its trace (killed, crashed, or out of disk){reason}; it holds the iterations flushed before"
            ),
            (Some("running"), Some(true)) => {
                format!("running (a process has the file open for writing){reason}")
            }
            (Some(status), _) => format!("{status}{reason}"),
        }
    }

    /// What ran, where and when, in the order of `provenance::TRACE_KEYS`.
    fn print_provenance(r: &Report) {
        for key in crate::provenance::TRACE_KEYS {
            let Some(value) = r.provenance.get(key).filter(|v| !v.is_empty()) else {
                continue;
            };
            let mut lines = value.lines();
            line(key, lines.next().unwrap_or(""));
            for more in lines {
                line("", more);
            }
        }
    }

    pub(super) fn print_text(r: &Report) {
        crate::outln!(
            "gradcode inspect: {}: {}",
            r.file,
            r.status.as_deref().unwrap_or("status not recorded")
        );
        match r.kind {
            TraceKind::Train => print_train(r),
            TraceKind::Simulation => print_simulation(r),
        }
    }

    /// A value, or `?` when not recorded.
    fn or_unknown(x: &Option<String>) -> String {
        x.clone().unwrap_or_else(|| "?".to_string())
    }

    /// A count, or `?` when not recorded.
    fn count_or_unknown(x: Option<u64>) -> String {
        x.map_or("?".to_string(), |x| x.to_string())
    }

    /// A training trace: its header, summary, model, timing and extras.
    fn print_train(r: &Report) {
        crate::outln!(
            "training trace (gradcode {}): scheme {}, K = {} workers, seed {}",
            r.gradcode_version,
            or_unknown(&r.scheme),
            count_or_unknown(r.workers),
            count_or_unknown(r.seed)
        );
        line("status", status_text(r));
        print_provenance(r);
        if let Some(snapshot) = r.snapshot_iteration {
            line(
                "snapshot",
                match snapshot {
                    Some(i) => {
                        format!("after iteration {i} (train --resume continues from it)")
                    }
                    None => "none".to_string(),
                },
            );
        }
        crate::outln!();
        if let Some(s) = &r.summary {
            print_summary(s, false);
        }
        print_model(r);
        print_timing(r);
        print_extras(r);
    }

    /// The model at /model/theta and its final losses.
    fn print_model(r: &Report) {
        match &r.model {
            Some(Some(m)) => line(
                "model",
                format!(
                    "/model/theta: {} parameters{}, norm {}{}",
                    m.parameters,
                    m.iteration
                        .map_or(String::new(), |i| format!(" after iteration {i}")),
                    number(m.norm, 6),
                    if m.non_finite > 0 {
                        format!(", {} not finite", m.non_finite)
                    } else {
                        String::new()
                    }
                ),
            ),
            _ => line("model", "no /model/theta"),
        }
        if let Some(Some(m)) = &r.model
            && let Some(train) = m.final_train_loss
        {
            let mut text = format!("train loss {}", number(train, 6));
            if let Some(test) = m.final_test_loss {
                text += &format!(", test loss {}", number(test, 6));
            }
            if let Some(a) = m.final_test_accuracy.filter(|a| !a.is_nan()) {
                text += &format!(", test accuracy {}", number(a, 4));
            }
            line("final model", text + " (at /model/theta)");
        }
    }

    /// The timing of the master's events (/timing).
    fn print_timing(r: &Report) {
        if let Some(Some(events)) = &r.timing {
            crate::outln!("timing of the master (/timing):");
            crate::outln!(
                "  {:<28}{:>12}{:>10}{:>12}",
                "event",
                "total",
                "count",
                "mean"
            );
            for e in events {
                let mean = if e.count > 0 {
                    secs(e.total_s / e.count as f64)
                } else {
                    "-".to_string()
                };
                crate::outln!(
                    "  {:<28}{:>12}{:>10}{:>12}",
                    e.event,
                    secs(e.total_s),
                    e.count,
                    mean
                );
            }
        }
    }

    /// A simulation trace: its header, one row per scheme, each scheme's summary.
    fn print_simulation(r: &Report) {
        let schemes = r.schemes.as_deref().unwrap_or_default();
        crate::outln!(
            "simulation trace (gradcode {}): {} scheme(s), K = {} workers, seed {}",
            r.gradcode_version,
            schemes.len(),
            count_or_unknown(r.workers),
            count_or_unknown(r.seed)
        );
        line("status", status_text(r));
        print_provenance(r);
        if let Some(unit) = schemes.iter().find_map(|s| s.model_time_unit_s) {
            crate::outln!(
                "times in seconds: one model time unit = {} (straggler.time_unit_ms); pooled over trials",
                secs(unit)
            );
        }
        crate::outln!();
        print_scheme_table(schemes);
        crate::outln!(
            "\n`stragglers`: mean per iteration; `even`: share of clustered iterations whose most stragglers in one cluster is ceil(stragglers / P)."
        );
        for s in schemes {
            crate::outln!("\n== {}", s.name);
            print_summary(&s.summary, true);
        }
        print_extras(r);
    }

    /// One row per scheme: iteration times, recovered share, messages,
    /// stragglers.
    fn print_scheme_table(schemes: &[crate::trace::SchemeReport]) {
        crate::outln!(
            "{:<18}{:>12}{:>12}{:>12}{:>12}{:>10}{:>9}{:>11}{:>8}",
            "scheme",
            "trials x it",
            "mean",
            "p50",
            "p99",
            "recovered",
            "messages",
            "stragglers",
            "even"
        );
        for s in schemes {
            let t = &s.summary.iteration_time_s;
            let f = |g: fn(&Distribution) -> f64| t.as_ref().map_or("n/a".into(), |d| secs(g(d)));
            let lengths: Vec<usize> = s.per_trial.iter().map(|t| t.summary.iterations).collect();
            let shape = match lengths.first() {
                Some(&n) if lengths.iter().all(|&l| l == n) => {
                    format!("{} x {n}", s.trials)
                }
                _ => format!("{}: {} it", s.trials, s.summary.iterations),
            };
            crate::outln!(
                "{:<18}{:>12}{:>12}{:>12}{:>12}{:>10}{:>9}{:>11}{:>8}",
                s.name,
                shape,
                f(|d| d.mean),
                f(|d| d.p50),
                f(|d| d.p99),
                s.summary
                    .recovered_fraction
                    .as_ref()
                    .map_or("n/a".into(), |r| pct(r.mean)),
                s.summary
                    .messages_received_per_iteration
                    .map_or("n/a".into(), |m| format!("{m:.2}")),
                s.summary
                    .stragglers
                    .as_ref()
                    .map_or("n/a".into(), |st| format!("{:.2}", st.mean_per_iteration)),
                s.summary
                    .stragglers_per_cluster
                    .as_ref()
                    .map_or("-".into(), |c| pct(c.even_fraction)),
            );
        }
    }
}
