//! The master rank: plan every iteration, send tasks, stop waiting as soon as
//! the scheme can decode (or its deadline passes), decode, update the model,
//! hand the iteration to the observers (progress, trace).
//!
//! Straggling comes from the straggler model in emulation (`DelaySpec::model(0)`,
//! the samples `simulate` sees in its trial 0 for the same seed) and from the
//! workers' measured compute times in measured mode. Either way the clustering
//! of iteration t sees what [`straggler::state_context`] allows: perfect state
//! information is the state of t, imperfect that of t − 1.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::Serialize;

use super::comm::{Backoff, Comm, Wait};
use super::interrupt;
use super::protocol::{self, Pace, ResultHeader, Setup, Task};
use crate::coding::{Arrival, Scheme};
use crate::config::{Config, StragglerMode};
use crate::error::InputError;
use crate::learn::{DataPlan, Optimizer, Partition, kernel};
use crate::straggler::{DelayModel, DelaySpec, RoundSample, state_context};
use crate::trace::{IterationRecord, Snapshot, TimingEvent};

/// Longest sleep between probes while the master waits for results: short,
/// because every microsecond here lengthens the iteration.
const WAIT_CAP: Duration = Duration::from_micros(100);
/// How long the master spins (yielding the core) after each message before
/// it sleeps between probes (see [`Backoff`]).
const SPIN: Duration = Duration::from_micros(200);
/// How long the master waits for every worker's goodbye before it gives up
/// on a clean shutdown (a worker is gone) and the job is aborted.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(3);

/// The run was stopped by a signal after `iterations` completed iterations;
/// the trace holds them and a snapshot to resume from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "interrupted by {} after {iterations} iterations; the trace holds them and a snapshot: continue with `gradcode train --resume TRACE`",
    interrupt::name(*signal)
)]
pub struct Interrupted {
    pub signal: i32,
    pub iterations: u64,
}

/// How a run ended: its result, and whether every worker said goodbye (when
/// not, the job must be aborted after the observers are closed).
pub struct RunEnd {
    pub result: anyhow::Result<TrainSummary>,
    pub clean: bool,
}

/// What the training loop returns: the summary and the signal that cut it short.
struct Outcome {
    summary: TrainSummary,
    interrupted: Option<i32>,
}

/// The end of a training run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrainSummary {
    pub scheme: String,
    pub workers: usize,
    pub iterations: usize,
    pub mean_iteration_s: f64,
    /// Wall time of the training loop (setup and shutdown excluded).
    pub wall_s: f64,
    pub stale_dropped: u64,
    /// Worker-iterations whose real work ran past the emulated due time.
    pub overruns: u64,
    pub final_train_loss: f64,
    pub final_test_loss: f64,
    pub mean_recovered_fraction: f64,
    pub tasks_abandoned: u64,
    /// The master's named timing events (like PETSc's -log_view).
    pub timing: Vec<TimingEvent>,
    /// Where the trace was written, when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    pub theta: Vec<f64>,
}

/// Receives the run as it happens: progress display, trace.
pub trait Observer {
    /// Iteration `iteration` (0-based) is complete; `theta` is the iterate after its update.
    fn iteration(
        &mut self,
        iteration: u64,
        record: &IterationRecord,
        theta: &[f64],
    ) -> anyhow::Result<()>;
    /// A resumable state after `iteration` completed iterations: `theta`
    /// and the iterate before it (`output.snapshot_every`, at the end, and
    /// when a signal stops the run).
    fn snapshot(
        &mut self,
        _iteration: u64,
        _theta: &[f64],
        _previous: &[f64],
    ) -> anyhow::Result<()> {
        Ok(())
    }
    /// The run ended (normally or by a signal); `summary.theta` is the last iterate.
    fn finish(&mut self, summary: &TrainSummary) -> anyhow::Result<()>;
}

/// Named timing events of the master, summed over the run.
#[derive(Debug, Default)]
struct Timing {
    events: BTreeMap<&'static str, (f64, u64)>,
}

impl Timing {
    fn add(&mut self, event: &'static str, seconds: f64) {
        let e = self.events.entry(event).or_insert((0.0, 0));
        e.0 += seconds;
        e.1 += 1;
    }

    fn time<R>(&mut self, event: &'static str, f: impl FnOnce() -> R) -> R {
        let start = Instant::now();
        let r = f();
        self.add(event, start.elapsed().as_secs_f64());
        r
    }

    fn summary(&self) -> Vec<TimingEvent> {
        self.events
            .iter()
            .map(|(&event, &(total_s, count))| TimingEvent {
                event: event.to_string(),
                total_s,
                count,
            })
            .collect()
    }
}

/// Where straggling comes from.
enum Straggling {
    /// The straggler model's samples; the workers sleep until their sampled times.
    Emulate(Box<dyn DelayModel>),
    /// Nothing injected: straggling inferred from the workers' reported compute times.
    Measured { rate_threshold: f64 },
}

pub(super) struct Master<'a> {
    pub comm: &'a Comm<'a>,
    pub universe: &'a mut mpi::environment::Universe,
    pub config: &'a Config,
    pub scheme: Box<dyn Scheme>,
    /// Continue from this snapshot of an interrupted run.
    pub resume: Option<Snapshot>,
}

impl Master<'_> {
    /// Send every worker `tag` with `data`.
    fn broadcast(&self, tag: i32, data: &[f64]) {
        for w in 0..self.scheme.workers() {
            self.comm.send(w as i32 + 1, tag, data);
        }
    }

    /// Stop every worker and wait for each goodbye; returns stale results
    /// seen and tasks abandoned, or `None` when some worker did not answer
    /// within [`SHUTDOWN_TIMEOUT`].
    fn shutdown(&self) -> Option<(u64, u64)> {
        self.broadcast(protocol::TAG_STOP, &[]);
        let mut backoff = Backoff::new(Duration::from_millis(1));
        let mut remaining = self.scheme.workers();
        let (mut stale, mut abandoned) = (0, 0);
        let deadline = Instant::now() + SHUTDOWN_TIMEOUT;
        while remaining > 0 {
            let Some(m) = self.comm.receive(&mut backoff, Some(deadline)) else {
                eprintln!(
                    "error: {remaining} worker(s) did not acknowledge the stop within {} s",
                    SHUTDOWN_TIMEOUT.as_secs()
                );
                return None;
            };
            match m.tag {
                protocol::TAG_BYE => {
                    remaining -= 1;
                    abandoned += m.data.get(1).copied().unwrap_or(0.0) as u64;
                }
                tag if protocol::is_iteration_tag(tag) => stale += 1,
                _ => {} // a late error, ready or signal from a worker that is stopping anyway
            }
        }
        log::info!(
            "master: every worker stopped ({stale} stale results drained, {abandoned} tasks abandoned)"
        );
        Some((stale, abandoned))
    }

    /// Set up the workers, train, shut down. Errors found on the way (data
    /// files, a worker that cannot load its partitions, divergence) and
    /// signals stop every worker before the run returns.
    pub fn run(&mut self, observers: &mut [&mut dyn Observer]) -> RunEnd {
        let (data, test) = match self.prepare() {
            Ok(x) => x,
            Err(e) => {
                let clean = self.shutdown().is_some();
                return RunEnd {
                    result: Err(e.into()),
                    clean,
                };
            }
        };
        let trained = self.train(&data, &test, observers);
        let shutdown = self.shutdown();
        let result = trained.and_then(
            |Outcome {
                 mut summary,
                 interrupted,
             }| {
                if let Some((stale, abandoned)) = shutdown {
                    summary.stale_dropped += stale;
                    summary.tasks_abandoned = abandoned;
                }
                for o in observers.iter_mut() {
                    o.finish(&summary)?;
                }
                match interrupted {
                    Some(signal) => Err(Interrupted {
                        signal,
                        iterations: summary.iterations as u64,
                    }
                    .into()),
                    None => Ok(summary),
                }
            },
        );
        RunEnd {
            result,
            clean: shutdown.is_some(),
        }
    }

    fn prepare(&mut self) -> Result<(DataPlan, Partition), InputError> {
        let k = self.scheme.workers();
        let data = DataPlan::new(self.config, self.scheme.partitions())?;
        let test = data.load_test()?;
        // Buffered sends: a backlog of 4 tasks per worker, plus setup and stop.
        let stored = (0..k)
            .map(|w| self.scheme.stored(w).len())
            .max()
            .unwrap_or(1);
        let task_len = 16 + stored * (6 + 2 * stored) + data.features();
        self.universe
            .set_buffer_size(super::comm::buffer_bytes(6 * k + 8, task_len));
        for w in 0..k {
            let setup = Setup {
                partitions: self.scheme.partitions(),
                stored: self.scheme.stored(w).to_vec(),
            };
            self.comm
                .send(w as i32 + 1, protocol::TAG_SETUP, &setup.encode());
        }
        log::info!(
            "master: {} on {k} workers, {} partitions of {} samples x {} features",
            self.scheme.kind(),
            self.scheme.partitions(),
            data.train_samples(),
            data.features()
        );
        let mut backoff = Backoff::new(Duration::from_millis(1));
        let mut ready = 0;
        while ready < k {
            let m = self.comm.receive(&mut backoff, None).expect("no deadline");
            match m.tag {
                protocol::TAG_READY => ready += 1,
                protocol::TAG_ERROR => {
                    let text = protocol::decode_text(&m.data);
                    return Err(InputError::new(format!("worker {}", m.rank), text));
                }
                tag => {
                    return Err(InputError::new(
                        format!("worker {}", m.rank),
                        format!("sent tag {tag} during setup"),
                    ));
                }
            }
        }
        Ok((data, test))
    }

    fn train(
        &mut self,
        data: &DataPlan,
        test: &Partition,
        observers: &mut [&mut dyn Observer],
    ) -> anyhow::Result<Outcome> {
        let config = self.config;
        let s = &config.straggler;
        let k = self.scheme.workers();
        let dim = data.features();
        let time_unit_s = s.time_unit_ms / 1000.0;
        let mut straggling = match s.mode {
            StragglerMode::Emulate => Straggling::Emulate(DelaySpec::from_config(config)?.model(0)),
            StragglerMode::Measured => Straggling::Measured {
                rate_threshold: s.rate_threshold,
            },
        };
        let mut opt = Optimizer::new(&config.train, config.model.l2, dim);
        let mut timing = Timing::default();
        let mut current = RoundSample::new(k);
        let mut previous: Option<RoundSample> = None;
        // Resume: the optimiser from the snapshot, the straggler process
        // replayed to the same point (its samples are a function of the seed).
        let first = match &self.resume {
            Some(snap) => {
                if snap.theta.len() != dim {
                    bail!(
                        "the snapshot has {} parameters, the data {dim} features",
                        snap.theta.len()
                    );
                }
                opt.restore(snap.iteration, &snap.theta, &snap.previous_theta);
                if let Straggling::Emulate(model) = &mut straggling {
                    for _ in 0..snap.iteration {
                        model.sample(&mut current);
                        match &mut previous {
                            Some(p) => std::mem::swap(p, &mut current),
                            None => {
                                previous =
                                    Some(std::mem::replace(&mut current, RoundSample::new(k)))
                            }
                        }
                    }
                }
                snap.iteration
            }
            None => 0,
        };
        let result_timeout = Duration::from_secs_f64(config.train.result_timeout_s);
        // Per worker: iterations of the tasks sent that it has not taken yet.
        let mut untaken: Vec<std::collections::VecDeque<u64>> = vec![Default::default(); k];
        let mut interrupted: Option<i32> = None;
        let mut measured = RoundSample::new(k);
        let mut task_buf = Vec::new();
        let mut arrivals: Vec<Arrival> = Vec::new();
        let mut vectors: Vec<Vec<f64>> = Vec::new();
        let mut backoff = Backoff::spinning(WAIT_CAP, SPIN);
        let (mut total_s, mut stale_total, mut overruns, mut recovered_total) =
            (0.0, 0u64, 0u64, 0.0);
        let (mut train_loss, mut test_loss) = (f64::NAN, f64::NAN);
        let deadline_s = self.scheme.deadline().map(|d| d * time_unit_s);
        let static_plan = self.scheme.static_plan();
        let mut plan = None;
        let run_start = Instant::now();
        let mut completed = first;
        'iterations: for t in first..config.train.iterations as u64 {
            if let Some(signal) = interrupt::received() {
                interrupted = Some(signal);
                break;
            }
            // The straggler state of this iteration, and what the master may know of it.
            match &mut straggling {
                Straggling::Emulate(model) => model.sample(&mut current),
                Straggling::Measured { .. } => current = RoundSample::new(k),
            }
            let this_plan = timing.time("plan", || {
                let ctx = state_context(s.state_info, t, &current, previous.as_ref());
                match (&plan, static_plan) {
                    (Some(p), true) => Clone::clone(p),
                    _ => self.scheme.plan_round(&ctx),
                }
            });
            let plan = plan.insert(this_plan);
            let start = Instant::now();
            timing.time("send", || {
                for (w, task) in plan.tasks.iter().enumerate() {
                    if untaken[w].len() as u64 >= protocol::MAX_UNTAKEN_TASKS {
                        // It does not take its tasks: stopped, hung or gone.
                        log::debug!(
                            "iteration {t}: worker {} has {} tasks untaken, none sent",
                            w + 1,
                            untaken[w].len()
                        );
                        continue;
                    }
                    untaken[w].push_back(t);
                    let pace = Pace {
                        emulate: matches!(straggling, Straggling::Emulate(_)),
                        unit_time: current.unit_time[w],
                        extra_time: current.extra_time[w],
                        time_unit_ms: s.time_unit_ms,
                        straggling: current.straggling[w],
                    };
                    Task::encode_into(t, &pace, task, opt.eval_point(), &mut task_buf);
                    self.comm
                        .send(w as i32 + 1, protocol::iteration_tag(t), &task_buf);
                }
            });
            let mut record = IterationRecord::new(k);
            for (c, members) in plan.clusters.iter().enumerate() {
                for &w in members {
                    record.cluster[w] = c as i64 + 1;
                }
            }
            arrivals.clear();
            vectors.clear();
            // Seconds per computation each worker reported this iteration (measured mode).
            let mut per_computation_s = vec![f64::NAN; k];
            let wait_start = Instant::now();
            {
                let mut tracker = self.scheme.tracker(plan);
                let deadline = deadline_s.map(|d| start + Duration::from_secs_f64(d));
                let mut last_progress = Instant::now();
                loop {
                    // Past the deadline with something to decode: stop. With nothing
                    // yet, wait for the first arrival (the scheme recovers partially),
                    // as `coding::decode_with_deadline` does in the simulator.
                    let give_up = last_progress + result_timeout;
                    let until = match (arrivals.is_empty(), deadline) {
                        (false, Some(d)) => d.min(give_up),
                        _ => give_up,
                    };
                    let m = match self.comm.receive_or_signal(&mut backoff, Some(until), true) {
                        Wait::Message(m) => m,
                        Wait::Signal(signal) => {
                            interrupted = Some(signal);
                            break 'iterations;
                        }
                        Wait::Timeout if Instant::now() < give_up => break, // the deadline, arrivals in hand
                        Wait::Timeout => {
                            let silent: Vec<String> = (0..k)
                                .filter(|&w| record.finish_s[w].is_nan())
                                .map(|w| (w + 1).to_string())
                                .collect();
                            bail!(
                                "iteration {t}: no result for {} s (train.result_timeout_s) and the scheme cannot decode yet; \
                                 no answer from workers {}: a worker died or hangs",
                                config.train.result_timeout_s,
                                silent.join(", ")
                            );
                        }
                    };
                    if m.tag == protocol::TAG_ACK {
                        let taken = m.data.first().copied().unwrap_or(f64::NAN);
                        let queue = &mut untaken[(m.rank - 1) as usize];
                        while queue.front().is_some_and(|&i| i as f64 <= taken) {
                            queue.pop_front();
                        }
                        continue;
                    }
                    if m.tag == protocol::TAG_SIGNAL {
                        // A worker caught SIGTERM or SIGINT: the job is being stopped.
                        interrupted = Some(m.data.first().map_or(15, |&s| s as i32));
                        break 'iterations;
                    }
                    if m.tag == protocol::TAG_ERROR {
                        bail!("worker {}: {}", m.rank, protocol::decode_text(&m.data));
                    }
                    if !protocol::is_iteration_tag(m.tag) {
                        bail!("worker {} sent tag {} during iteration {t}", m.rank, m.tag);
                    }
                    let (header, vector) = ResultHeader::decode(&m.data, dim)?;
                    if header.iteration < t {
                        record.stale_dropped += 1;
                        continue;
                    }
                    let w = (m.rank - 1) as usize;
                    let expected = plan.tasks[w]
                        .messages
                        .get(header.message)
                        .map(|msg| msg.codeword.id);
                    if header.iteration > t || expected != Some(header.codeword) {
                        bail!(
                            "worker {} sent a result that iteration {t} did not ask for: {header:?}",
                            m.rank
                        );
                    }
                    if let Some(bad) = vector.iter().position(|v| !v.is_finite()) {
                        let what = if bad == dim {
                            "loss".to_string()
                        } else {
                            format!("gradient entry {}", bad + 1)
                        };
                        bail!(
                            "iteration {t}: worker {} sent a non-finite {what} (the model diverged)",
                            m.rank
                        );
                    }
                    record.finish_s[w] = start.elapsed().as_secs_f64();
                    record.overrun_s[w] = record.overrun_s[w].max(header.overrun_s);
                    if header.computations > 0 {
                        per_computation_s[w] = header.compute_s / header.computations as f64;
                        timing.add("compute (workers)", header.compute_s);
                    }
                    last_progress = Instant::now();
                    let arrival = Arrival {
                        worker: w,
                        message: header.message,
                    };
                    arrivals.push(arrival);
                    vectors.push(vector.to_vec());
                    if tracker.arrive(arrival) {
                        break;
                    }
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        break;
                    }
                }
            }
            timing.add("wait", wait_start.elapsed().as_secs_f64());
            record.duration_s = start.elapsed().as_secs_f64();
            record.messages_received = arrivals.len() as u64;
            let decode_start = Instant::now();
            // Decode in (worker, message) order, not arrival order, so that the
            // rounding of the sum does not depend on who was fastest.
            let mut order: Vec<usize> = (0..arrivals.len()).collect();
            order.sort_unstable_by_key(|&i| (arrivals[i].worker, arrivals[i].message));
            let sorted_arrivals: Vec<Arrival> = order.iter().map(|&i| arrivals[i]).collect();
            let sorted_vectors: Vec<Vec<f64>> = order
                .iter()
                .map(|&i| std::mem::take(&mut vectors[i]))
                .collect();
            let decoding = self.scheme.decode(plan, &sorted_arrivals);
            if !decoding.decodable || decoding.recovered.is_empty() {
                bail!(
                    "iteration {t}: the arrivals suffice by count but do not decode (residual {:.2e}); \
                     the code is too ill-conditioned, try a smaller scheme.load or more scheme.code_draws",
                    decoding.residual
                );
            }
            let refs: Vec<&[f64]> = sorted_vectors.iter().map(Vec::as_slice).collect();
            let combined = decoding.combine(&refs);
            record.decode_s = decode_start.elapsed().as_secs_f64();
            timing.add("decode", record.decode_s);
            for (a, &weight) in sorted_arrivals.iter().zip(&decoding.weights) {
                if weight != 0.0 {
                    record.used[a.worker] = true;
                    record.messages_used += 1;
                }
            }
            let samples: usize = decoding.recovered.iter().map(|&p| data.rows(p).len()).sum();
            record.recovered_fraction = decoding.recovered_fraction(self.scheme.partitions());
            if combined.iter().any(|v| !v.is_finite()) {
                bail!("iteration {t}: the decoded gradient is not finite (the model diverged)");
            }
            train_loss = opt.objective(combined[dim], samples);
            record.train_loss = train_loss;
            if t % config.train.eval_every as u64 == 0 || t + 1 == config.train.iterations as u64 {
                test_loss = timing.time("evaluate", || {
                    let sum = kernel::loss_sum(
                        config.model.loss,
                        test.x.view(),
                        &test.y,
                        opt.eval_point(),
                    );
                    opt.objective(sum, test.len())
                });
                record.test_loss = test_loss;
            }
            timing.time("update", || opt.step(&combined[..dim], samples));
            if opt.theta().iter().any(|v| !v.is_finite()) {
                bail!("iteration {t}: the model is not finite after the update (it diverged)");
            }
            // The straggler state this iteration recorded, and kept for the next plan.
            match straggling {
                Straggling::Emulate(_) => record.straggling.clone_from(&current.straggling),
                Straggling::Measured { rate_threshold } => {
                    infer_straggling(
                        &per_computation_s,
                        time_unit_s,
                        rate_threshold,
                        &mut measured,
                    );
                    record.straggling.clone_from(&measured.straggling);
                    current.clone_from(&measured);
                }
            }
            match &mut previous {
                Some(p) => std::mem::swap(p, &mut current),
                None => previous = Some(std::mem::replace(&mut current, RoundSample::new(k))),
            }
            total_s += record.duration_s;
            stale_total += record.stale_dropped;
            overruns += record.overrun_s.iter().filter(|&&o| o > 0.0).count() as u64;
            recovered_total += record.recovered_fraction;
            completed = t + 1;
            log::debug!(
                "iteration {t}: {:.6} s, {} messages received, {} used, {} stale dropped, recovered {:.3}, train loss {:.6e}",
                record.duration_s,
                record.messages_received,
                record.messages_used,
                record.stale_dropped,
                record.recovered_fraction,
                record.train_loss
            );
            let trace_start = Instant::now();
            for o in observers.iter_mut() {
                o.iteration(t, &record, opt.theta())
                    .context("recording the iteration")?;
                if completed % config.output.snapshot_every as u64 == 0 {
                    o.snapshot(completed, opt.theta(), opt.previous())
                        .context("writing a snapshot")?;
                }
            }
            timing.add(
                "observe (progress, trace)",
                trace_start.elapsed().as_secs_f64(),
            );
        }
        // The state after the last completed iteration, resumable (an
        // interrupted iteration is abandoned: it did not update the model).
        if completed % config.output.snapshot_every as u64 != 0 || completed == first {
            for o in observers.iter_mut() {
                o.snapshot(completed, opt.theta(), opt.previous())
                    .context("writing a snapshot")?;
            }
        }
        let run_iterations = (completed - first).max(1) as f64;
        let summary = TrainSummary {
            scheme: self.scheme.kind().name().to_string(),
            workers: k,
            iterations: completed as usize,
            mean_iteration_s: total_s / run_iterations,
            wall_s: run_start.elapsed().as_secs_f64(),
            stale_dropped: stale_total,
            overruns,
            final_train_loss: train_loss,
            final_test_loss: test_loss,
            mean_recovered_fraction: recovered_total / run_iterations,
            tasks_abandoned: 0,
            timing: timing.summary(),
            trace: None,
            theta: opt.theta().to_vec(),
        };
        Ok(Outcome {
            summary,
            interrupted,
        })
    }
}

/// Measured mode: from each worker's reported seconds per partition computation
/// (NaN: no result this iteration), its rate in model units (1 / model time)
/// and whether it straggles (rate below `rate_threshold`, or no result at all).
fn infer_straggling(
    per_computation_s: &[f64],
    time_unit_s: f64,
    rate_threshold: f64,
    out: &mut RoundSample,
) {
    for (w, &sec) in per_computation_s.iter().enumerate() {
        let unit = sec / time_unit_s;
        out.unit_time[w] = unit;
        out.extra_time[w] = 0.0;
        out.rate[w] = if unit > 0.0 { 1.0 / unit } else { f64::NAN };
        // NaN (no result) straggles too.
        out.straggling[w] = out.rate[w].is_nan() || out.rate[w] < rate_threshold;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measured_straggling_is_a_slow_or_silent_worker() {
        let mut out = RoundSample::new(3);
        // 10 ms per model time unit; 1 ms and 50 ms per computation; worker 3 silent.
        infer_straggling(&[0.001, 0.05, f64::NAN], 0.01, 0.5, &mut out);
        assert_eq!(out.rate[0], 10.0);
        assert!((out.rate[1] - 0.2).abs() < 1e-12);
        assert!(out.rate[2].is_nan());
        assert_eq!(out.straggling, vec![false, true, true]);
    }
}
