//! One iteration of one scheme under one sampled set of delays.
//!
//! The arrival events are (worker, message, time = after · unit_time +
//! extra_time) for every message of the plan, sorted by time (ties by worker,
//! then message). The master's rule is [`decode_prefix`]: it stops at the
//! first prefix that suffices and decodes it. So the iteration ends at the
//! arrival that completes that prefix; the messages received are that prefix
//! (continuous times tie with probability 0); the messages used are those
//! with a non-zero decoding weight. Only the [`Scheme`] interface is used,
//! so every scheme, static or dynamic, single- or multi-message, runs here
//! unchanged.

use crate::coding::{Arrival, RoundPlan, Scheme, decode_prefix};
use crate::straggler::RoundSample;

/// What one iteration of one scheme gives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoundOutcome {
    /// Model time at which the master stops waiting (the last arrival when nothing suffices).
    pub time: f64,
    /// The scheme's stopping rule was met and its target recovered.
    pub decodable: bool,
    /// Messages received up to and including the one that completed the prefix.
    pub messages_received: usize,
    /// Messages with a non-zero decoding weight.
    pub messages_used: usize,
    /// Share of the partitions whose gradient sum was recovered.
    pub recovered_fraction: f64,
}

/// Per-worker details of the last iteration run by [`RoundEngine::run_detailed`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WorkerDetail {
    /// Model time of the worker's last message among those received, NaN if none.
    pub finish: Vec<f64>,
    /// A message of the worker has a non-zero decoding weight.
    pub used: Vec<bool>,
}

/// The simulated master of one iteration. Keeps its buffers between
/// iterations, so a run allocates only what the scheme itself allocates.
#[derive(Debug, Default)]
pub struct RoundEngine {
    events: Vec<(f64, Arrival)>,
    arrivals: Vec<Arrival>,
}

impl RoundEngine {
    pub fn new() -> Self {
        Self::default()
    }

    /// Run the iteration planned as `plan` with the delays of `sample`.
    pub fn run(
        &mut self,
        scheme: &mut dyn Scheme,
        plan: &RoundPlan,
        sample: &RoundSample,
    ) -> RoundOutcome {
        self.run_inner(scheme, plan, sample, None)
    }

    /// As [`run`](Self::run), also filling `detail` (resized to K).
    pub fn run_detailed(
        &mut self,
        scheme: &mut dyn Scheme,
        plan: &RoundPlan,
        sample: &RoundSample,
        detail: &mut WorkerDetail,
    ) -> RoundOutcome {
        self.run_inner(scheme, plan, sample, Some(detail))
    }

    /// The events of the last iteration, sorted by arrival time.
    pub fn events(&self) -> &[(f64, Arrival)] {
        &self.events
    }

    fn run_inner(
        &mut self,
        scheme: &mut dyn Scheme,
        plan: &RoundPlan,
        sample: &RoundSample,
        detail: Option<&mut WorkerDetail>,
    ) -> RoundOutcome {
        assert_eq!(
            plan.tasks.len(),
            sample.workers(),
            "the plan and the delay sample have different worker counts"
        );
        self.events.clear();
        for (worker, task) in plan.tasks.iter().enumerate() {
            for (message, m) in task.messages.iter().enumerate() {
                let time = sample.message_time(worker, m.after);
                self.events.push((time, Arrival { worker, message }));
            }
        }
        self.events.sort_unstable_by(|a, b| {
            a.0.total_cmp(&b.0)
                .then(a.1.worker.cmp(&b.1.worker))
                .then(a.1.message.cmp(&b.1.message))
        });
        self.arrivals.clear();
        self.arrivals.extend(self.events.iter().map(|&(_, a)| a));
        let (decoding, used) = decode_prefix(scheme, plan, &self.arrivals);
        let time = if used == 0 {
            0.0
        } else {
            self.events[used - 1].0
        };
        let messages_used = decoding.weights.iter().filter(|&&w| w != 0.0).count();
        if let Some(d) = detail {
            let k = plan.tasks.len();
            d.finish.clear();
            d.finish.resize(k, f64::NAN);
            d.used.clear();
            d.used.resize(k, false);
            for (i, &(t, a)) in self.events[..used].iter().enumerate() {
                d.finish[a.worker] = t;
                if decoding.weights[i] != 0.0 {
                    d.used[a.worker] = true;
                }
            }
        }
        RoundOutcome {
            time,
            decodable: decoding.decodable,
            messages_received: used,
            messages_used,
            recovered_fraction: decoding.recovered_fraction(scheme.partitions()),
        }
    }
}

/// The lower bound of 000 §VI: the iteration ends as soon as the `needed`-th
/// fastest of all K workers finishes its whole task of `load` computations
/// (the full gradient recovered from any P(l - r + 1) workers, whatever the
/// code). `scratch` is reused between calls.
pub fn lower_bound(
    sample: &RoundSample,
    load: usize,
    needed: usize,
    scratch: &mut Vec<f64>,
) -> f64 {
    let k = sample.workers();
    assert!(
        (1..=k).contains(&needed),
        "lower bound needs between 1 and {k} workers, not {needed}"
    );
    scratch.clear();
    scratch.extend((0..k).map(|w| sample.message_time(w, load)));
    let (_, &mut t, _) = scratch.select_nth_unstable_by(needed - 1, f64::total_cmp);
    t
}
