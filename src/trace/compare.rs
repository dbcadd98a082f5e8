//! The comparison of traces that `gradcode compare` prints (issue 40,
//! item 4): its runs ([`Member`]: a training trace, or one trial of a
//! simulated scheme) grouped into rows by resolved config (repetitions of
//! one run differ only in `seed` and `[output]`), the rows that share a
//! label told apart by the config keys that differ, the baseline row
//! chosen, and each row's times, times to the targets and speedups over the
//! baseline ([`compare`]; the command's module says how each is defined).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::study::speedup::{PairKey, Speedup, speedup};
use crate::trace::summary::{Reach, Summary, Targets, TraceColumns, summarize};

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

/// A training run for tests: iterations of `durations` seconds, each
/// followed by 0.5 s of elapsed time, its loss 1 / elapsed.
#[cfg(test)]
pub(crate) fn test_member(
    file: &str,
    kind: &str,
    seed: u64,
    config: &str,
    durations: &[f64],
) -> Member {
    let records: Vec<crate::trace::IterationRecord> = durations
        .iter()
        .scan(0.0, |clock, &d| {
            *clock += d + 0.5;
            let mut r = crate::trace::IterationRecord::new(2);
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

#[cfg(test)]
mod tests {
    use super::test_member as member;
    use super::*;

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
}
