//! The master rank: plan every iteration, send tasks, stop waiting as soon as
//! the scheme can decode, decode, update the model, record the iteration.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::Serialize;

use super::comm::{Backoff, Comm};
use super::protocol::{self, Pace, ResultHeader, Setup, Task};
use crate::coding::{Arrival, RoundContext, Scheme};
use crate::config::{Config, StragglerMode, StragglerModel};
use crate::error::InputError;
use crate::learn::{DataPlan, Optimizer, Partition, kernel};

/// Longest sleep between probes while the master waits for results: short,
/// because every microsecond here lengthens the iteration.
const WAIT_CAP: Duration = Duration::from_micros(100);

/// What one iteration looked like from the master.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IterationRecord {
    pub iteration: u64,
    /// Wall time from sending the tasks to having enough results.
    pub duration_s: f64,
    /// Wall time of decoding and combining.
    pub decode_s: f64,
    pub recovered_fraction: f64,
    pub messages_used: usize,
    pub messages_received: usize,
    /// Results of earlier iterations received (and dropped) during this one.
    pub stale_dropped: usize,
    pub train_loss: f64,
    /// NaN when not evaluated this iteration.
    pub test_loss: f64,
    /// Per worker: seconds from the start of the iteration to its first result (NaN: none in time).
    pub finish_s: Vec<f64>,
    /// Per worker: emulated straggler state.
    pub straggling: Vec<bool>,
    /// Per worker: 0-based cluster this iteration (-1 when unclustered).
    pub cluster: Vec<i64>,
    /// Per worker: a result of it entered the decoded sum.
    pub used: Vec<bool>,
    /// Per worker: seconds its real work ran past the emulated due time.
    pub overrun_s: Vec<f64>,
}

/// The end of a training run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrainSummary {
    pub scheme: String,
    pub workers: usize,
    pub iterations: usize,
    pub mean_iteration_s: f64,
    pub stale_dropped: usize,
    pub overruns: usize,
    pub final_train_loss: f64,
    pub final_test_loss: f64,
    pub mean_recovered_fraction: f64,
    pub tasks_abandoned: u64,
    pub theta: Vec<f64>,
}

/// Receives records as iterations complete (progress display, trace).
pub trait Observer {
    fn iteration(&mut self, record: &IterationRecord) -> anyhow::Result<()>;
}

pub(super) struct Master<'a> {
    pub comm: &'a Comm<'a>,
    pub universe: &'a mut mpi::environment::Universe,
    pub config: &'a Config,
    pub scheme: Box<dyn Scheme>,
}

/// Per-worker pacing of one iteration. Until the straggler models land only
/// `straggler.model = "none"` can be emulated (zero delay); `mode = "measured"`
/// injects nothing whatever the model.
fn paces(config: &Config, workers: usize) -> Result<Vec<Pace>, InputError> {
    let s = &config.straggler;
    let emulate = s.mode == StragglerMode::Emulate;
    if emulate && s.model != StragglerModel::None {
        return Err(InputError::value(
            "straggler.model",
            "\"shifted-exponential\"",
            "cannot be emulated by train yet; use straggler.mode = \"measured\" or straggler.model = \"none\"",
        ));
    }
    let pace = Pace {
        emulate,
        unit_time: 0.0,
        extra_time: 0.0,
        time_unit_ms: s.time_unit_ms,
        straggling: false,
    };
    Ok(vec![pace; workers])
}

impl Master<'_> {
    /// Send every worker `tag` with `data`.
    fn broadcast(&self, tag: i32, data: &[f64]) {
        for w in 0..self.scheme.workers() {
            self.comm.send(w as i32 + 1, tag, data);
        }
    }

    /// Stop every worker and wait for each goodbye; returns stale results seen and tasks abandoned.
    fn shutdown(&self) -> (usize, u64) {
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

    /// Set up the workers, train, shut down. Input errors found on the way
    /// (data files, a worker that cannot load its partitions) stop every
    /// worker before they are returned.
    pub fn run(&mut self, observer: &mut dyn Observer) -> anyhow::Result<TrainSummary> {
        let prepared = self.prepare();
        let (data, test) = match prepared {
            Ok(x) => x,
            Err(e) => {
                self.shutdown();
                return Err(e.into());
            }
        };
        match self.train(&data, &test, observer) {
            Ok(mut summary) => {
                let (stale, abandoned) = self.shutdown();
                summary.stale_dropped += stale;
                summary.tasks_abandoned = abandoned;
                Ok(summary)
            }
            Err(e) => {
                self.shutdown();
                Err(e)
            }
        }
    }

    fn prepare(&mut self) -> Result<(DataPlan, Partition), InputError> {
        let k = self.scheme.workers();
        paces(self.config, k)?;
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
        observer: &mut dyn Observer,
    ) -> anyhow::Result<TrainSummary> {
        let config = self.config;
        let k = self.scheme.workers();
        let dim = data.features();
        let paces = paces(config, k)?;
        let mut opt = Optimizer::new(&config.train, config.model.l2, dim);
        let mut task_buf = Vec::new();
        let mut arrivals: Vec<Arrival> = Vec::new();
        let mut vectors: Vec<Vec<f64>> = Vec::new();
        let mut backoff = Backoff::new(WAIT_CAP);
        let (mut total_s, mut stale_total, mut overruns, mut recovered_total) = (0.0, 0, 0, 0.0);
        let (mut train_loss, mut test_loss) = (f64::NAN, f64::NAN);
        for t in 0..config.train.iterations as u64 {
            let ctx = RoundContext {
                iteration: t,
                straggling: None,
                rates: None,
            };
            let plan = self.scheme.plan_round(&ctx);
            let start = Instant::now();
            for (w, (task, pace)) in plan.tasks.iter().zip(&paces).enumerate() {
                Task::encode_into(t, pace, task, opt.eval_point(), &mut task_buf);
                self.comm
                    .send(w as i32 + 1, protocol::iteration_tag(t), &task_buf);
            }
            let mut record = IterationRecord {
                iteration: t,
                duration_s: 0.0,
                decode_s: 0.0,
                recovered_fraction: 0.0,
                messages_used: 0,
                messages_received: 0,
                stale_dropped: 0,
                train_loss: f64::NAN,
                test_loss: f64::NAN,
                finish_s: vec![f64::NAN; k],
                straggling: paces.iter().map(|p| p.straggling).collect(),
                cluster: vec![-1; k],
                used: vec![false; k],
                overrun_s: vec![0.0; k],
            };
            for (c, members) in plan.clusters.iter().enumerate() {
                for &w in members {
                    record.cluster[w] = c as i64;
                }
            }
            arrivals.clear();
            vectors.clear();
            {
                let mut tracker = self.scheme.tracker(&plan);
                loop {
                    let m = self.comm.receive(&mut backoff, None).expect("no deadline");
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
                    if record.finish_s[w].is_nan() {
                        record.finish_s[w] = start.elapsed().as_secs_f64();
                    }
                    if header.overrun_s > 0.0 {
                        record.overrun_s[w] = record.overrun_s[w].max(header.overrun_s);
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
                }
            }
            record.duration_s = start.elapsed().as_secs_f64();
            record.messages_received = arrivals.len();
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
            arrivals = sorted_arrivals;
            vectors = sorted_vectors;
            let decoding = self.scheme.decode(&plan, &arrivals);
            if !decoding.decodable || decoding.recovered.is_empty() {
                bail!(
                    "iteration {t}: the arrivals suffice by count but do not decode (residual {:.2e}); \
                     the code is too ill-conditioned, try a smaller scheme.load or more scheme.code_draws",
                    decoding.residual
                );
            }
            let refs: Vec<&[f64]> = vectors.iter().map(Vec::as_slice).collect();
            let combined = decoding.combine(&refs);
            record.decode_s = decode_start.elapsed().as_secs_f64();
            for (a, &weight) in arrivals.iter().zip(&decoding.weights) {
                if weight != 0.0 {
                    record.used[a.worker] = true;
                    record.messages_used += 1;
                }
            }
            let samples: usize = decoding.recovered.iter().map(|&p| data.rows(p).len()).sum();
            record.recovered_fraction = decoding.recovered_fraction(self.scheme.partitions());
            if combined.iter().any(|v| !v.is_finite()) {
                bail!("iteration {t}: the decoded gradient is not finite (diverged)");
            }
            train_loss = opt.objective(combined[dim], samples);
            record.train_loss = train_loss;
            if t % config.train.eval_every as u64 == 0 || t + 1 == config.train.iterations as u64 {
                let sum =
                    kernel::loss_sum(config.model.loss, test.x.view(), &test.y, opt.eval_point());
                test_loss = opt.objective(sum, test.len());
                record.test_loss = test_loss;
            }
            opt.step(&combined[..dim], samples);
            total_s += record.duration_s;
            stale_total += record.stale_dropped;
            overruns += record.overrun_s.iter().filter(|&&o| o > 0.0).count();
            recovered_total += record.recovered_fraction;
            observer
                .iteration(&record)
                .context("recording the iteration")?;
        }
        let iterations = config.train.iterations;
        Ok(TrainSummary {
            scheme: self.scheme.kind().name().to_string(),
            workers: k,
            iterations,
            mean_iteration_s: total_s / iterations as f64,
            stale_dropped: stale_total,
            overruns,
            final_train_loss: train_loss,
            final_test_loss: test_loss,
            mean_recovered_fraction: recovered_total / iterations as f64,
            tasks_abandoned: 0,
            theta: opt.theta().to_vec(),
        })
    }
}
