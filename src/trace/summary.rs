//! Summaries of traces (`gradcode inspect`): pure functions of the datasets
//! read from a trace, so they build and test without HDF5.
//!
//! Every dataset but `/iteration/duration_s` may be missing from a file (an
//! older or newer writer, a trace cut short): the summary of what it would
//! give is then `None` (`null` in JSON), never a made-up zero.

use serde::Serialize;

use crate::stats::percentile;

/// The `/iteration/` and `/worker/` datasets of one trace, each `None` when
/// the file does not have it: generated from the schema's table (see
/// [`gradcode_core::record`]), with its per-column length check
/// [`TraceColumns::misshapen`].
pub use gradcode_core::record::TraceColumns;

/// Mean and percentiles of the finite values of a series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Distribution {
    /// Finite values summarised (NaN entries, "not measured", are left out).
    pub count: usize,
    pub mean: f64,
    /// Median, linear interpolation between ranks (numpy's default), as `simulate`'s p50.
    pub p50: f64,
    pub p99: f64,
    pub min: f64,
    pub max: f64,
}

impl Distribution {
    /// `None` when no value is finite.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Self> {
        let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        Some(Self {
            count: v.len(),
            mean: v.iter().sum::<f64>() / v.len() as f64,
            p50: percentile(&v, 0.5),
            p99: percentile(&v, 0.99),
            min: v[0],
            max: v[v.len() - 1],
        })
    }
}

/// `/iteration/recovered_fraction`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recovered {
    pub mean: f64,
    pub min: f64,
    /// Share of the iterations that recovered the full gradient (fraction 1).
    pub full_fraction: f64,
}

/// `/iteration/decode_error`: ‖a·B_S − 1‖₂ per iteration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecodeError {
    pub mean: f64,
    pub max: f64,
    /// Share of the iterations whose decode was exact (error at most 1e-9).
    pub exact_fraction: f64,
}

/// `/iteration/stale_dropped`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stale {
    /// Results of older iterations received and dropped during the iterations of the trace.
    pub total: u64,
    /// Iterations that dropped at least one.
    pub iterations: usize,
}

/// `/worker/overrun_s`: emulation that could not keep its sampled times.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Overrun {
    /// Worker-iterations whose real work ran past the emulated due time (overrun > 0).
    pub count: usize,
    /// `count` over every worker-iteration.
    pub fraction: f64,
    pub total_s: f64,
    pub max_s: f64,
}

/// `/worker/straggling`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stragglers {
    pub mean_per_iteration: f64,
    pub max_per_iteration: usize,
    /// Share of the iterations in which each worker straggled, worker 1 first.
    pub per_worker_fraction: Vec<f64>,
}

/// `/worker/cluster`: how the clusters were formed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Clusters {
    /// P: the largest cluster id.
    pub count: usize,
    /// Iterations in which at least one worker was in a cluster.
    pub clustered_iterations: usize,
    /// Iterations whose cluster of some worker differs from the previous
    /// iteration's (the first iteration of a trace never counts).
    pub changes: usize,
}

/// Straggling workers per cluster (`/worker/straggling` by `/worker/cluster`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterStragglers {
    /// Per cluster, cluster 1 first, over the clustered iterations.
    pub per_cluster: Vec<ClusterCount>,
    /// Share of the clustered iterations in which the most stragglers in one
    /// cluster is ceil(S / P), S the stragglers in clusters: the spread is as
    /// even as any split into P clusters allows (whatever the assignment).
    pub even_fraction: f64,
    /// Per iteration, the stragglers in clusters 1..P (`null`: no worker in
    /// a cluster that iteration). `None` in a pooled summary.
    pub series: Option<Vec<Option<Vec<u32>>>>,
}

/// Stragglers in one cluster per iteration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterCount {
    /// 1-based cluster id.
    pub cluster: usize,
    pub mean: f64,
    pub max: u32,
}

/// A loss series (NaN where not evaluated).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Loss {
    /// Iterations with a finite value.
    pub evaluated: usize,
    pub first: f64,
    /// 1-based iteration of `first`.
    pub first_iteration: usize,
    /// The last finite value, at `final_iteration` (1-based).
    #[serde(rename = "final")]
    pub last: f64,
    pub final_iteration: usize,
    pub min: f64,
    /// 1-based iteration of `min` (the first if several).
    pub min_iteration: usize,
}

impl Loss {
    fn of(values: &[f64]) -> Option<Self> {
        let finite: Vec<(usize, f64)> = values
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, x)| x.is_finite())
            .collect();
        let &(first_i, first) = finite.first()?;
        let &(last_i, last) = finite.last()?;
        let &(min_i, min) = finite
            .iter()
            .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))?;
        Some(Self {
            evaluated: finite.len(),
            first,
            first_iteration: first_i + 1,
            last,
            final_iteration: last_i + 1,
            min,
            min_iteration: min_i + 1,
        })
    }
}

/// `/iteration/test_accuracy` (NaN where not evaluated): the share of the
/// test samples classified correctly.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Accuracy {
    /// Iterations with a finite value.
    pub evaluated: usize,
    pub first: f64,
    /// 1-based iteration of `first`.
    pub first_iteration: usize,
    /// The last finite value, at `final_iteration` (1-based).
    #[serde(rename = "final")]
    pub last: f64,
    pub final_iteration: usize,
    /// The highest value.
    pub best: f64,
    /// 1-based iteration of `best` (the first if several).
    pub best_iteration: usize,
}

impl Accuracy {
    fn of(values: &[f64]) -> Option<Self> {
        let finite: Vec<(usize, f64)> = values
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, x)| x.is_finite())
            .collect();
        let &(first_i, first) = finite.first()?;
        let &(last_i, last) = finite.last()?;
        let &(best_i, best) = finite
            .iter()
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))?;
        Some(Self {
            evaluated: finite.len(),
            first,
            first_iteration: first_i + 1,
            last,
            final_iteration: last_i + 1,
            best,
            best_iteration: best_i + 1,
        })
    }
}

/// The targets of `inspect --target-loss` and `--target-accuracy`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Targets {
    /// A training loss: reached at the first recorded train loss ≤ it.
    pub loss: Option<f64>,
    /// A test accuracy: reached at the first recorded test accuracy ≥ it.
    pub accuracy: Option<f64>,
}

impl Targets {
    /// The flag of the first target set (`--target-loss`, then
    /// `--target-accuracy`), for errors about targets a trace cannot reach;
    /// None when none is set.
    pub fn flag(&self) -> Option<&'static str> {
        if self.loss.is_some() {
            Some("--target-loss")
        } else if self.accuracy.is_some() {
            Some("--target-accuracy")
        } else {
            None
        }
    }
}

/// When a run first reached a target (`inspect --target-loss`, `--target-accuracy`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reach {
    /// The target as given.
    pub target: f64,
    /// Iterations with a finite recorded value (0: the series is not recorded).
    pub evaluated: usize,
    pub reached: bool,
    /// 1-based: the first iteration whose recorded value is at or past the
    /// target (train loss ≤, test accuracy ≥); `None` when none is.
    pub iteration: Option<usize>,
    /// The value recorded at `iteration`.
    pub value: Option<f64>,
    /// The iterations before `iteration` (`iteration` − 1).
    pub iterations_before: Option<usize>,
    /// The sum of the finite `/iteration/duration_s` of iterations 1 to
    /// `iteration`, its own included: the iteration time until the value
    /// was recorded (evaluation waits excluded).
    pub time_s: Option<f64>,
    /// `/iteration/elapsed_s` at `iteration`: the run's elapsed time when
    /// the value was recorded, loss evaluations left out; `None` when not
    /// reached or when the trace does not record it (an older gradcode's).
    pub elapsed_s: Option<f64>,
}

impl Reach {
    /// The first entry of `values` at or below (`at_least` false) or at or
    /// above (`at_least` true) `target`, with the time `durations` take up
    /// to it and the `elapsed` time there. `values` (`elapsed`) `None`: the
    /// dataset is absent.
    pub fn of(
        values: Option<&[f64]>,
        durations: &[f64],
        elapsed: Option<&[f64]>,
        target: f64,
        at_least: bool,
    ) -> Self {
        let values = values.unwrap_or_default();
        let hit = values
            .iter()
            .position(|&x| x.is_finite() && if at_least { x >= target } else { x <= target });
        Reach {
            target,
            evaluated: values.iter().filter(|x| x.is_finite()).count(),
            reached: hit.is_some(),
            iteration: hit.map(|i| i + 1),
            value: hit.map(|i| values[i]),
            iterations_before: hit,
            time_s: hit.map(|i| durations.iter().take(i + 1).filter(|x| x.is_finite()).sum()),
            elapsed_s: hit
                .and_then(|i| elapsed.and_then(|e| e.get(i)).copied())
                .filter(|x| x.is_finite()),
        }
    }
}

/// What `inspect` says about a trace, or about several traces pooled (the
/// trials of one simulated scheme). Every field is `None` when the datasets
/// it needs are missing or hold no finite value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub iterations: usize,
    /// Sum of the finite iteration times.
    pub total_time_s: f64,
    /// `/iteration/elapsed_s` of the last iteration: the run's elapsed time
    /// (training: the master's wall clock less its loss evaluations;
    /// simulation: the model time of its iterations in seconds). Only for
    /// one trace; `None` when pooled, when the trace does not record it (an
    /// older gradcode's) or when the last value is not finite.
    pub elapsed_s: Option<f64>,
    /// `/iteration/duration_s`.
    pub iteration_time_s: Option<Distribution>,
    /// `/iteration/decode_s` (NaN, not measured, in a simulation).
    pub decode_time_s: Option<Distribution>,
    pub recovered_fraction: Option<Recovered>,
    /// `/iteration/decode_error` (absent from older traces).
    pub decode_error: Option<DecodeError>,
    pub messages_received_per_iteration: Option<f64>,
    pub messages_used_per_iteration: Option<f64>,
    /// Workers with a result received in time (`/worker/finish_s` finite), per iteration.
    pub workers_received_per_iteration: Option<f64>,
    /// Workers with a non-zero decoding weight (`/worker/used`), per iteration.
    pub workers_used_per_iteration: Option<f64>,
    pub stale_dropped: Option<Stale>,
    /// `/worker/overrun_s` (0 everywhere in a simulation).
    pub overrun: Option<Overrun>,
    pub stragglers: Option<Stragglers>,
    pub clusters: Option<Clusters>,
    pub stragglers_per_cluster: Option<ClusterStragglers>,
    /// Losses: only for one trace (`None` when pooled).
    pub train_loss: Option<Loss>,
    /// `/iteration/batch_loss` (absent from older traces and simulations without a model).
    pub batch_loss: Option<Loss>,
    pub test_loss: Option<Loss>,
    /// `/iteration/test_accuracy`: only for one trace (`None` when pooled,
    /// and for a trace without it: a linear model's, an older gradcode's).
    pub test_accuracy: Option<Accuracy>,
    /// `/iteration/batch_accuracy`: only for one trace (`None` when pooled,
    /// and for a trace without it: a linear model's, an older gradcode's).
    pub batch_accuracy: Option<Accuracy>,
    /// `inspect --target-loss`: when the train loss first reached it (absent without the flag).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_loss: Option<Reach>,
    /// `inspect --target-accuracy`: when the test accuracy first reached it (absent without the flag).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_accuracy: Option<Reach>,
}

impl Summary {
    /// The summary of one trace with the times to `targets` (see [`Reach`]).
    pub fn with_targets(mut self, columns: &TraceColumns, targets: Targets) -> Self {
        let durations = columns.duration_s.as_deref().unwrap_or_default();
        let elapsed = columns.elapsed_s.as_deref();
        self.target_loss = targets
            .loss
            .map(|x| Reach::of(columns.train_loss.as_deref(), durations, elapsed, x, false));
        self.target_accuracy = targets.accuracy.map(|a| {
            Reach::of(
                columns.test_accuracy.as_deref(),
                durations,
                elapsed,
                a,
                true,
            )
        });
        self
    }
}

fn mean_of(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0usize);
    for v in values.into_iter().filter(|x| x.is_finite()) {
        sum += v;
        n += 1;
    }
    (n > 0).then(|| sum / n as f64)
}

/// All parts have the column: their values in order.
fn pooled<'a, T: Copy + 'a>(
    parts: &[&'a TraceColumns],
    get: impl Fn(&'a TraceColumns) -> Option<&'a Vec<T>>,
) -> Option<Vec<T>> {
    let mut out = Vec::new();
    for p in parts {
        out.extend_from_slice(get(p)?);
    }
    Some(out)
}

/// Per-worker rows of every part (`None` when a part lacks the column).
fn rows<'a, T: 'a>(
    parts: &[&'a TraceColumns],
    get: impl Fn(&'a TraceColumns) -> Option<&'a Vec<T>>,
) -> Option<Vec<Vec<&'a [T]>>> {
    parts
        .iter()
        .map(|p| {
            let v = get(p)?;
            Some(if p.workers == 0 {
                vec![&v[..0]; p.iterations]
            } else {
                v.chunks(p.workers).collect()
            })
        })
        .collect()
}

/// Summarise one trace (`parts = [trace]`, with the per-iteration series)
/// or pool several of the same scheme (the trials of a simulation: values
/// pooled over every iteration of every trial, no series, no losses).
/// Every part must have [`TraceColumns::misshapen`] empty.
pub fn summarize(parts: &[&TraceColumns]) -> Summary {
    let single = parts.len() == 1;
    let iterations: usize = parts.iter().map(|p| p.iterations).sum();
    let durations = pooled(parts, |p| p.duration_s.as_ref()).unwrap_or_default();
    let recovered_fraction = pooled(parts, |p| p.recovered_fraction.as_ref()).and_then(|v| {
        let finite: Vec<f64> = v.into_iter().filter(|x| x.is_finite()).collect();
        let n = finite.len();
        (n > 0).then(|| Recovered {
            mean: finite.iter().sum::<f64>() / n as f64,
            min: finite.iter().copied().fold(f64::INFINITY, f64::min),
            full_fraction: finite.iter().filter(|&&x| x >= 1.0 - 1e-12).count() as f64 / n as f64,
        })
    });
    let decode_error = pooled(parts, |p| p.decode_error.as_ref()).and_then(|v| {
        let finite: Vec<f64> = v.into_iter().filter(|x| x.is_finite()).collect();
        let n = finite.len();
        (n > 0).then(|| DecodeError {
            mean: finite.iter().sum::<f64>() / n as f64,
            max: finite.iter().copied().fold(0.0, f64::max),
            exact_fraction: finite.iter().filter(|&&x| x <= 1e-9).count() as f64 / n as f64,
        })
    });
    let per_iteration_mean =
        |v: Option<Vec<u64>>| v.and_then(|v| mean_of(v.into_iter().map(|x| x as f64)));
    let stale_dropped = pooled(parts, |p| p.stale_dropped.as_ref()).map(|v| Stale {
        total: v.iter().fold(0u64, |sum, &x| sum.saturating_add(x)),
        iterations: v.iter().filter(|&&x| x > 0).count(),
    });
    let overrun = pooled(parts, |p| p.overrun_s.as_ref()).and_then(|v| {
        let finite: Vec<f64> = v.into_iter().filter(|x| x.is_finite()).collect();
        (!finite.is_empty()).then(|| {
            let count = finite.iter().filter(|&&x| x > 0.0).count();
            Overrun {
                count,
                fraction: count as f64 / finite.len() as f64,
                total_s: finite.iter().filter(|&&x| x > 0.0).sum(),
                max_s: finite.iter().copied().fold(0.0, f64::max),
            }
        })
    });
    let finish = rows(parts, |p| p.finish_s.as_ref());
    let workers_received_per_iteration = finish.and_then(|r| {
        mean_of(
            r.iter()
                .flatten()
                .map(|row| row.iter().filter(|x| x.is_finite()).count() as f64),
        )
    });
    let workers_used_per_iteration = rows(parts, |p| p.used.as_ref()).and_then(|r| {
        mean_of(
            r.iter()
                .flatten()
                .map(|row| row.iter().filter(|&&u| u).count() as f64),
        )
    });
    let straggling = rows(parts, |p| p.straggling.as_ref());
    let cluster = rows(parts, |p| p.cluster.as_ref());
    let workers = parts.iter().map(|p| p.workers).max().unwrap_or(0);
    let stragglers = straggling
        .as_ref()
        .and_then(|r| straggler_stats(r, workers));
    let clusters = cluster.as_ref().and_then(|r| cluster_stats(r, workers));
    let stragglers_per_cluster = match (&straggling, &cluster, &clusters) {
        (Some(s), Some(c), Some(info)) => Some(cluster_stragglers(s, c, info.count, single)),
        _ => None,
    };
    let loss = |get: fn(&TraceColumns) -> Option<&Vec<f64>>| {
        if single {
            get(parts[0]).and_then(|v| Loss::of(v))
        } else {
            None
        }
    };
    Summary {
        iterations,
        total_time_s: durations.iter().filter(|x| x.is_finite()).sum(),
        elapsed_s: if single {
            parts[0]
                .elapsed_s
                .as_deref()
                .and_then(|e| e.last())
                .copied()
                .filter(|x| x.is_finite())
        } else {
            None
        },
        iteration_time_s: Distribution::of(durations.iter().copied()),
        decode_time_s: pooled(parts, |p| p.decode_s.as_ref()).and_then(Distribution::of),
        recovered_fraction,
        decode_error,
        messages_received_per_iteration: per_iteration_mean(pooled(parts, |p| {
            p.messages_received.as_ref()
        })),
        messages_used_per_iteration: per_iteration_mean(pooled(parts, |p| {
            p.messages_used.as_ref()
        })),
        workers_received_per_iteration,
        workers_used_per_iteration,
        stale_dropped,
        overrun,
        stragglers,
        clusters,
        stragglers_per_cluster,
        train_loss: loss(|p| p.train_loss.as_ref()),
        batch_loss: loss(|p| p.batch_loss.as_ref()),
        test_loss: loss(|p| p.test_loss.as_ref()),
        test_accuracy: if single {
            parts[0].test_accuracy.as_deref().and_then(Accuracy::of)
        } else {
            None
        },
        batch_accuracy: if single {
            parts[0].batch_accuracy.as_deref().and_then(Accuracy::of)
        } else {
            None
        },
        target_loss: None,
        target_accuracy: None,
    }
}

fn straggler_stats(parts: &[Vec<&[bool]>], workers: usize) -> Option<Stragglers> {
    let all: Vec<&[bool]> = parts.iter().flatten().copied().collect();
    if all.is_empty() {
        return None;
    }
    let counts: Vec<usize> = all
        .iter()
        .map(|row| row.iter().filter(|&&s| s).count())
        .collect();
    let mut per_worker = vec![0usize; workers];
    for row in &all {
        for (k, &s) in row.iter().enumerate() {
            per_worker[k] += usize::from(s);
        }
    }
    let n = all.len() as f64;
    Some(Stragglers {
        mean_per_iteration: counts.iter().sum::<usize>() as f64 / n,
        max_per_iteration: counts.iter().copied().max().unwrap_or(0),
        per_worker_fraction: per_worker.iter().map(|&c| c as f64 / n).collect(),
    })
}

/// A cluster id of a trace of `workers` workers: 1..=workers (the reader
/// refuses any other but −1; a summary never sizes memory by a larger one).
fn cluster_id(id: i64, workers: usize) -> Option<usize> {
    usize::try_from(id)
        .ok()
        .filter(|&c| (1..=workers).contains(&c))
}

fn cluster_stats(parts: &[Vec<&[i64]>], workers: usize) -> Option<Clusters> {
    let count = parts
        .iter()
        .flatten()
        .flat_map(|row| row.iter())
        .filter_map(|&c| cluster_id(c, workers))
        .max()?;
    let clustered_iterations = parts
        .iter()
        .flatten()
        .filter(|row| row.iter().any(|&c| cluster_id(c, workers).is_some()))
        .count();
    let changes = parts
        .iter()
        .map(|rows| rows.windows(2).filter(|w| w[0] != w[1]).count())
        .sum();
    Some(Clusters {
        count,
        clustered_iterations,
        changes,
    })
}

fn cluster_stragglers(
    straggling: &[Vec<&[bool]>],
    cluster: &[Vec<&[i64]>],
    count: usize,
    with_series: bool,
) -> ClusterStragglers {
    let mut series = Vec::new();
    for (s_rows, c_rows) in straggling.iter().zip(cluster) {
        for (s, c) in s_rows.iter().zip(c_rows) {
            if !c.iter().any(|&id| cluster_id(id, count).is_some()) {
                series.push(None);
                continue;
            }
            let mut row = vec![0u32; count];
            for (&straggles, &id) in s.iter().zip(c.iter()) {
                if let (true, Some(id)) = (straggles, cluster_id(id, count)) {
                    row[id - 1] += 1;
                }
            }
            series.push(Some(row));
        }
    }
    let clustered: Vec<&Vec<u32>> = series.iter().flatten().collect();
    let n = clustered.len().max(1) as f64;
    let per_cluster = (0..count)
        .map(|p| ClusterCount {
            cluster: p + 1,
            mean: clustered.iter().map(|r| f64::from(r[p])).sum::<f64>() / n,
            max: clustered.iter().map(|r| r[p]).max().unwrap_or(0),
        })
        .collect();
    let even = clustered
        .iter()
        .filter(|r| {
            let total: u32 = r.iter().sum();
            r.iter().copied().max().unwrap_or(0) == total.div_ceil(count as u32)
        })
        .count();
    ClusterStragglers {
        per_cluster,
        even_fraction: even as f64 / n,
        series: with_series.then_some(series),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::IterationRecord;

    /// Three workers, four iterations, clusters {1, 2} and {3} then re-formed.
    fn columns() -> TraceColumns {
        let mut records = Vec::new();
        let straggling = [
            [true, false, false],
            [true, true, false],
            [false, false, false],
            [false, true, true],
        ];
        let cluster = [[1, 1, 2], [1, 1, 2], [-1, -1, -1], [1, 2, 1]];
        for i in 0..4 {
            let mut r = IterationRecord::new(3);
            r.duration_s = (i + 1) as f64;
            // The durations' running sum (1, 3, 6, 10) and waits of 0.5 each.
            r.elapsed_s = [1.5, 4.0, 7.5, 12.0][i];
            r.decode_s = f64::NAN;
            r.recovered_fraction = if i == 1 { 0.5 } else { 1.0 };
            r.messages_received = 3;
            r.messages_used = 2;
            r.stale_dropped = if i == 3 { 2 } else { 0 };
            r.train_loss = if i % 2 == 0 {
                10.0 - i as f64
            } else {
                f64::NAN
            };
            r.straggling = straggling[i].to_vec();
            r.cluster = cluster[i].to_vec();
            r.finish_s = vec![1.0, f64::NAN, 2.0];
            r.used = vec![true, false, i == 0];
            r.overrun_s = vec![0.0, if i == 2 { 0.25 } else { 0.0 }, 0.0];
            records.push(r);
        }
        TraceColumns::from_records(3, &records)
    }

    #[test]
    fn a_trace_summary_counts_what_the_records_say() {
        let c = columns();
        assert!(c.misshapen().is_empty());
        let s = summarize(&[&c]);
        assert_eq!(s.iterations, 4);
        assert_eq!(s.total_time_s, 10.0);
        assert_eq!(s.elapsed_s, Some(12.0), "the last iteration's elapsed time");
        let t = s.iteration_time_s.unwrap();
        assert_eq!(
            (t.count, t.mean, t.p50, t.min, t.max),
            (4, 2.5, 2.5, 1.0, 4.0)
        );
        assert!((t.p99 - 3.97).abs() < 1e-12);
        assert_eq!(s.decode_time_s, None, "all NaN: not measured");
        let r = s.recovered_fraction.unwrap();
        assert_eq!((r.mean, r.min, r.full_fraction), (0.875, 0.5, 0.75));
        assert_eq!(s.messages_received_per_iteration, Some(3.0));
        assert_eq!(s.messages_used_per_iteration, Some(2.0));
        assert_eq!(s.workers_received_per_iteration, Some(2.0));
        assert_eq!(s.workers_used_per_iteration, Some(1.25));
        assert_eq!(
            s.stale_dropped,
            Some(Stale {
                total: 2,
                iterations: 1
            })
        );
        let st = s.stragglers.unwrap();
        assert_eq!((st.mean_per_iteration, st.max_per_iteration), (1.25, 2));
        assert_eq!(st.per_worker_fraction, vec![0.5, 0.5, 0.25]);
        let cl = s.clusters.unwrap();
        // Iteration 3 is unclustered: 2 → 3 and 3 → 4 both change.
        assert_eq!((cl.count, cl.clustered_iterations, cl.changes), (2, 3, 2));
        let spc = s.stragglers_per_cluster.unwrap();
        assert_eq!(
            spc.series.unwrap(),
            vec![Some(vec![1, 0]), Some(vec![2, 0]), None, Some(vec![1, 1])]
        );
        assert_eq!(spc.per_cluster[0].mean, 4.0 / 3.0);
        assert_eq!(spc.per_cluster[0].max, 2);
        assert_eq!(spc.per_cluster[1].mean, 1.0 / 3.0);
        // [1, 0]: max 1 = ceil(1/2); [2, 0]: 2 > ceil(2/2); [1, 1]: even.
        assert_eq!(spc.even_fraction, 2.0 / 3.0);
        let loss = s.train_loss.unwrap();
        assert_eq!(
            (loss.evaluated, loss.first, loss.last, loss.final_iteration),
            (2, 10.0, 8.0, 3)
        );
        assert_eq!((loss.min, loss.min_iteration), (8.0, 3));
        assert_eq!(s.test_loss, None, "never evaluated");
    }

    #[test]
    fn test_accuracy_gives_first_final_and_best_with_their_iterations() {
        let mut c = columns();
        assert_eq!(
            summarize(&[&c]).test_accuracy,
            None,
            "all NaN: not evaluated"
        );
        c.test_accuracy = Some(vec![0.5, f64::NAN, 0.75, 0.75]);
        let a = summarize(&[&c]).test_accuracy.unwrap();
        assert_eq!(
            (
                a.evaluated,
                a.first,
                a.first_iteration,
                a.last,
                a.final_iteration
            ),
            (3, 0.5, 1, 0.75, 4)
        );
        assert_eq!(
            (a.best, a.best_iteration),
            (0.75, 3),
            "the first of equal bests"
        );
        assert_eq!(summarize(&[&c, &c]).test_accuracy, None, "pooled: none");
        c.test_accuracy = None;
        assert_eq!(summarize(&[&c]).test_accuracy, None, "absent: none");
    }

    #[test]
    fn targets_are_reached_at_the_first_recorded_value_past_them() {
        // Durations 1, 2, 3, 4; train loss 10, NaN, 8, NaN.
        let mut c = columns();
        c.test_accuracy = Some(vec![f64::NAN, 0.6, f64::NAN, 0.9]);
        let targets = |loss, accuracy| Targets {
            loss: Some(loss),
            accuracy: Some(accuracy),
        };
        let s = summarize(&[&c]).with_targets(&c, targets(9.0, 0.6));
        let l = s.target_loss.unwrap();
        assert_eq!(
            (l.reached, l.iteration, l.iterations_before, l.value),
            (true, Some(3), Some(2), Some(8.0))
        );
        assert_eq!((l.time_s, l.evaluated, l.target), (Some(6.0), 2, 9.0));
        assert_eq!(l.elapsed_s, Some(7.5), "the elapsed time at iteration 3");
        let a = s.target_accuracy.unwrap();
        assert_eq!(
            (a.iteration, a.iterations_before, a.value, a.time_s),
            (Some(2), Some(1), Some(0.6), Some(3.0)),
            "at the target counts as reached"
        );
        assert_eq!(a.elapsed_s, Some(4.0));
        // Equal to the loss target counts; beyond every value does not.
        let s = summarize(&[&c]).with_targets(&c, targets(10.0, 0.95));
        assert_eq!(s.target_loss.unwrap().iteration, Some(1));
        let a = s.target_accuracy.unwrap();
        assert_eq!(
            (a.reached, a.iteration, a.time_s, a.evaluated, a.elapsed_s),
            (false, None, None, 2, None)
        );
        // Without /iteration/elapsed_s (an older trace): no elapsed time, the
        // iteration time unchanged.
        let mut old = c.clone();
        old.elapsed_s = None;
        let s = summarize(&[&old]).with_targets(&old, targets(9.0, 0.6));
        let l = s.target_loss.unwrap();
        assert_eq!((l.time_s, l.elapsed_s), (Some(6.0), None));
        assert_eq!(s.elapsed_s, None);
        // A NaN duration is left out of the time, as of total_time_s.
        c.duration_s = Some(vec![1.0, f64::NAN, 3.0, 4.0]);
        let l = summarize(&[&c])
            .with_targets(&c, targets(9.0, 0.5))
            .target_loss;
        assert_eq!(l.unwrap().time_s, Some(4.0));
        // Absent series: evaluated 0, not reached.
        c.test_accuracy = None;
        let a = summarize(&[&c])
            .with_targets(&c, targets(9.0, 0.5))
            .target_accuracy;
        let a = a.unwrap();
        assert_eq!((a.reached, a.evaluated, a.iteration), (false, 0, None));
        // No flag, no key.
        let s = summarize(&[&c]).with_targets(&c, Targets::default());
        assert_eq!((&s.target_loss, &s.target_accuracy), (&None, &None));
        let v = serde_json::to_value(&s).unwrap();
        assert!(v.get("target_loss").is_none() && v.get("test_accuracy").is_some());
    }

    #[test]
    fn pooled_summaries_pool_values_and_drop_series_and_losses() {
        let c = columns();
        let s = summarize(&[&c, &c]);
        assert_eq!(s.iterations, 8);
        assert_eq!(s.total_time_s, 20.0);
        assert_eq!(s.elapsed_s, None, "pooled: per trial only");
        assert_eq!(s.iteration_time_s.unwrap().count, 8);
        assert_eq!(
            s.stale_dropped,
            Some(Stale {
                total: 4,
                iterations: 2
            })
        );
        // Trial boundaries are not changes.
        assert_eq!(s.clusters.unwrap().changes, 4);
        let spc = s.stragglers_per_cluster.unwrap();
        assert_eq!(spc.series, None);
        assert_eq!(spc.even_fraction, 2.0 / 3.0);
        assert_eq!(s.train_loss, None);
    }

    #[test]
    fn missing_datasets_give_none_not_zero() {
        let mut c = columns();
        c.stale_dropped = None;
        c.straggling = None;
        c.recovered_fraction = None;
        c.overrun_s = None;
        let s = summarize(&[&c]);
        assert_eq!(s.overrun, None);
        assert_eq!(s.stale_dropped, None);
        assert_eq!(s.stragglers, None);
        assert_eq!(s.stragglers_per_cluster, None);
        assert_eq!(s.recovered_fraction, None);
        assert!(
            s.clusters.is_some(),
            "the clusters need only /worker/cluster"
        );
        // One missing part makes the pooled column missing.
        let full = columns();
        assert_eq!(summarize(&[&full, &c]).stale_dropped, None);
    }

    #[test]
    fn misshapen_columns_are_named() {
        let mut c = columns();
        c.test_loss = Some(vec![1.0]);
        c.cluster = Some(vec![1; 5]);
        let bad: Vec<&str> = c.misshapen().iter().map(|d| d.path).collect();
        assert_eq!(bad, ["iteration/test_loss", "worker/cluster"]);
    }

    #[test]
    fn unclustered_traces_have_no_cluster_statistics() {
        let mut c = columns();
        c.cluster = Some(vec![-1; 12]);
        let s = summarize(&[&c]);
        assert_eq!(s.clusters, None);
        assert_eq!(s.stragglers_per_cluster, None);
    }

    #[test]
    fn cluster_ids_beyond_the_workers_size_nothing() {
        // The reader refuses such ids; the summary alone still never sizes
        // memory by them (2^62 would be a capacity overflow, 1e9 24 GB).
        for huge in [1i64 << 62, 1_000_000_000, i64::MAX] {
            let mut c = columns();
            let mut ids = c.cluster.clone().unwrap();
            ids[0] = huge;
            c.cluster = Some(ids);
            let s = summarize(&[&c]);
            let cl = s.clusters.unwrap();
            assert_eq!(cl.count, 2, "{huge}: P from the ids within 1..=K");
            assert_eq!(s.stragglers_per_cluster.unwrap().per_cluster.len(), 2);
        }
        let mut c = columns();
        c.stale_dropped = Some(vec![u64::MAX, 1, 0, 0]);
        assert_eq!(summarize(&[&c]).stale_dropped.unwrap().total, u64::MAX);
    }

    #[test]
    fn empty_traces_summarise_to_nothing() {
        let c = TraceColumns::from_records(3, &[]);
        let s = summarize(&[&c]);
        assert_eq!(s.iterations, 0);
        assert_eq!(s.iteration_time_s, None);
        assert_eq!(s.stragglers, None);
        assert_eq!(s.clusters, None);
        assert_eq!(s.train_loss, None);
    }
}
