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

use super::comm::{Backoff, Comm};
use super::protocol::{self, Pace, ResultHeader, Setup, Task};
use crate::coding::{Arrival, Scheme};
use crate::config::{Config, StragglerMode};
use crate::error::InputError;
use crate::learn::{DataPlan, Optimizer, Partition, kernel};
use crate::straggler::{DelayModel, DelaySpec, RoundSample, state_context};
use crate::trace::{IterationRecord, TimingEvent};

/// Longest sleep between probes while the master waits for results: short,
/// because every microsecond here lengthens the iteration.
const WAIT_CAP: Duration = Duration::from_micros(100);

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
    /// The run ended (normally); `summary.theta` is final.
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
}

impl Master<'_> {
    /// Send every worker `tag` with `data`.
    fn broadcast(&self, tag: i32, data: &[f64]) {
        for w in 0..self.scheme.workers() {
            self.comm.send(w as i32 + 1, tag, data);
        }
    }

    /// Stop every worker and wait for each goodbye; returns stale results seen and tasks abandoned.
    fn shutdown(&self) -> (u64, u64) {
        self.broadcast(protocol::TAG_STOP, &[]);
        let mut backoff = Backoff::new(Duration::from_millis(1));
        let mut remaining = self.scheme.workers();
        let (mut stale, mut abandoned) = (0, 0);
        while remaining > 0 {
            let m = self.comm.receive(&mut backoff, None).expect("no deadline");
            match m.tag {
                protocol::TAG_BYE => {
                    remaining -= 1;
                    abandoned += m.data.get(1).copied().unwrap_or(0.0) as u64;
                }
                tag if protocol::is_iteration_tag(tag) => stale += 1,
                _ => {} // a late error or ready from a worker that is stopping anyway
            }
        }
        (stale, abandoned)
    }

    /// Set up the workers, train, shut down. Errors found on the way (data
    /// files, a worker that cannot load its partitions, divergence) stop
    /// every worker before they are returned.
    pub fn run(&mut self, observers: &mut [&mut dyn Observer]) -> anyhow::Result<TrainSummary> {
        let (data, test) = match self.prepare() {
            Ok(x) => x,
            Err(e) => {
                self.shutdown();
                return Err(e.into());
            }
        };
        let result = self.train(&data, &test, observers);
        let (stale, abandoned) = self.shutdown();
        let mut summary = result?;
        summary.stale_dropped += stale;
        summary.tasks_abandoned = abandoned;
        for o in observers.iter_mut() {
            o.finish(&summary)?;
        }
        Ok(summary)
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
    ) -> anyhow::Result<TrainSummary> {
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
        let mut measured = RoundSample::new(k);
        let mut task_buf = Vec::new();
        let mut arrivals: Vec<Arrival> = Vec::new();
        let mut vectors: Vec<Vec<f64>> = Vec::new();
        let mut backoff = Backoff::new(WAIT_CAP);
        let (mut total_s, mut stale_total, mut overruns, mut recovered_total) =
            (0.0, 0u64, 0u64, 0.0);
        let (mut train_loss, mut test_loss) = (f64::NAN, f64::NAN);
        let deadline_s = self.scheme.deadline().map(|d| d * time_unit_s);
        let static_plan = self.scheme.static_plan();
        let mut plan = None;
        let run_start = Instant::now();
        for t in 0..config.train.iterations as u64 {
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
                loop {
                    // Past the deadline with something to decode: stop. With nothing
                    // yet, wait for the first arrival (the scheme recovers partially),
                    // as `coding::decode_with_deadline` does in the simulator.
                    let until = if arrivals.is_empty() { None } else { deadline };
                    let Some(m) = self.comm.receive(&mut backoff, until) else {
                        break; // the deadline passed with arrivals in hand
                    };
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
            let trace_start = Instant::now();
            for o in observers.iter_mut() {
                o.iteration(t, &record, opt.theta())
                    .context("recording the iteration")?;
            }
            timing.add(
                "observe (progress, trace)",
                trace_start.elapsed().as_secs_f64(),
            );
        }
        let iterations = config.train.iterations;
        Ok(TrainSummary {
            scheme: self.scheme.kind().name().to_string(),
            workers: k,
            iterations,
            mean_iteration_s: total_s / iterations as f64,
            wall_s: run_start.elapsed().as_secs_f64(),
            stale_dropped: stale_total,
            overruns,
            final_train_loss: train_loss,
            final_test_loss: test_loss,
            mean_recovered_fraction: recovered_total / iterations as f64,
            tasks_abandoned: 0,
            timing: timing.summary(),
            trace: None,
            theta: opt.theta().to_vec(),
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
