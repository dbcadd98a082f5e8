//! Approximate gradient codes: what every family of them shares.
//!
//! The master waits for fewer workers than an exact code needs (the fastest
//! `scheme.wait_for`, or those before `scheme.deadline`) and decodes the best
//! approximation of the sum of every partition's gradient it can: weights
//! `a` over the arrivals S with `a·B_S ≈ 1`. The update steps with `a·B_S·g /
//! N` (N: every training sample), so a partition the arrivals miss counts 0,
//! and the decode error ‖a·B_S − 1‖₂ (`/iteration/decode_error`) says how far
//! the step is from the full gradient's. A family (expander, FRC, BGC, graph)
//! gives the encoding matrix B (K workers × n partitions, worker i sending
//! `Σ_j B_ij g_j`); the decoders are:
//!
//! - `optimal`: `a = argmin ‖a·B_S − 1‖₂`, the least-squares solution on
//!   B's sparse rows, one connected component of the arrivals at a time
//!   (`lsq.rs`: a small component by the dense minimum-norm SVD the exact
//!   MDS decode uses, a large one by CGLS); FRC and the graph codes reach
//!   the same optimum by their structure in linear time (`frc.rs`,
//!   `graph.rs`);
//! - `one-step`: the same weight `K / (|S|·σ)` on every arrival, σ the mean
//!   column sum of B, so that for a uniformly random S the expected
//!   coverage of every partition is 1 (Raviv et al.'s `n/(n − s)` for
//!   `B = A/d`; Charles et al.'s one-step decoder for FRC and BGC).
//!
//! Limits: the weights are real numbers, not an exact decode: `train` uses
//! them as they are (no scheme here claims the exact gradient unless the
//! error is 0), the training loss of an approximate iteration is evaluated
//! as a partial scheme's is, and `Decoding::approximate` is true.

mod bgc;
mod bibd;
mod expander;
mod frc;
mod graph;
mod lsq;
mod margulis;
mod regular;
mod sgc;

pub use bgc::{AGC_BGC, AgcBgcParams, BernoulliCode};
pub use bibd::{AGC_BIBD, AgcBibdParams, BlockDesignCode};
pub use expander::{AGC_EXPANDER, AgcExpanderParams, ExpanderCode, GraphKind};
pub use frc::{
    AGC_FRC, AgcFrcParams, ERASUREHEAD, ErasureHeadParams, FrcCode, expected_error_per_partition,
};
pub use graph::{AGC_GRAPH, AgcGraphParams, GraphCode};
pub use sgc::{SGC, SgcParams, StochasticCode};

use serde::{Deserialize, Serialize};

use super::fixed_plan::FixedPlan;
use super::{
    Arrival, ArrivalTracker, Codeword, CodewordId, CodingError, Decoding, Message, RoundPlan,
    SchemeEntry, WaitPolicy, WorkerTask,
};

/// The most workers or partitions of an approximate code. B is held as
/// sparse rows and the optimal decode solves on them (`lsq.rs`), but a
/// component of the arrivals the CGLS cannot settle falls back to a dense
/// solve, and the decode's cost grows with the arrivals' nonzeros: past
/// 4096 a simulated iteration would be set by the decode, not the workers.
pub const MAX_CODE_SIZE: usize = 4096;

/// How the master turns the arrivals into weights (`scheme.decoder`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DecoderKind {
    /// The least-squares weights: the smallest error any weights reach.
    #[default]
    Optimal,
    /// One fixed weight per arrival, unbiased over uniformly random arrivals.
    OneStep,
}

impl DecoderKind {
    /// The config name.
    pub fn name(self) -> &'static str {
        match self {
            DecoderKind::Optimal => "optimal",
            DecoderKind::OneStep => "one-step",
        }
    }
}

/// An approximate code: its encoding matrix, wait policy and decoder.
#[derive(Debug)]
pub(crate) struct ApproximateCode {
    pub(crate) fixed: FixedPlan,
    /// B: K × n, row i worker i's (partition, coefficient) pairs,
    /// partitions ascending.
    rows: Vec<Vec<(usize, f64)>>,
    /// The largest coefficient of B.
    max_coefficient: f64,
    pub(crate) policy: WaitPolicy,
    pub(crate) decoder: DecoderKind,
    /// σ: the mean column sum of B (the one-step weight's denominator).
    mean_column_sum: f64,
    /// Stop as soon as the arrivals cover every partition (ErasureHead).
    stop_when_covered: bool,
}

impl ApproximateCode {
    /// The code whose worker `i` stores and sends `rows[i]` ((partition,
    /// coefficient), partitions ascending and distinct, coefficients > 0)
    /// over `partitions` partitions. Every partition must be stored by some
    /// worker (an error names `key`, the family's parameter that made the
    /// placement, otherwise).
    pub(crate) fn new(
        kind: &'static SchemeEntry,
        partitions: usize,
        rows: Vec<Vec<(usize, f64)>>,
        policy: WaitPolicy,
        decoder: DecoderKind,
        key: &str,
    ) -> Result<Self, CodingError> {
        let workers = rows.len();
        if workers.max(partitions) > MAX_CODE_SIZE {
            return Err(CodingError::invalid(
                "workers",
                workers,
                format!(
                    "gives an approximate code of {workers} workers x {partitions} partitions, more than {MAX_CODE_SIZE} (the decode's least squares would set the pace)"
                ),
            ));
        }
        let mut stored_anywhere = vec![false; partitions];
        for &(p, c) in rows.iter().flatten() {
            debug_assert!(
                p < partitions && c > 0.0,
                "a stored partition, a positive weight"
            );
            stored_anywhere[p] = true;
        }
        if let Some(p) = stored_anywhere.iter().position(|&s| !s) {
            return Err(CodingError::invalid(
                key,
                "(the placement)",
                format!("leaves partition {} on no worker", p + 1),
            ));
        }
        let total: f64 = rows.iter().flatten().map(|&(_, c)| c).sum();
        let max_coefficient = rows.iter().flatten().fold(0.0_f64, |m, &(_, c)| m.max(c));
        let stored: Vec<Vec<usize>> = rows
            .iter()
            .map(|row| row.iter().map(|&(p, _)| p).collect())
            .collect();
        let tasks = rows
            .iter()
            .cloned()
            .enumerate()
            .map(|(w, terms)| WorkerTask {
                compute: terms.iter().map(|&(p, _)| p).collect(),
                messages: vec![Message {
                    after: terms.len(),
                    codeword: Codeword {
                        id: CodewordId { group: 0, index: w },
                        terms,
                    },
                }],
            })
            .collect();
        let plan = RoundPlan {
            tasks,
            clusters: Vec::new(),
        };
        Ok(Self {
            fixed: FixedPlan::new(kind, partitions, stored, plan),
            rows,
            max_coefficient,
            policy,
            decoder,
            mean_column_sum: total / partitions as f64,
            stop_when_covered: false,
        })
    }

    /// The code whose master also stops as soon as the arrivals cover every
    /// partition (then the optimal decode is exact).
    pub(crate) fn stopping_when_covered(mut self) -> Self {
        self.stop_when_covered = true;
        self
    }

    /// B as a dense K × n matrix (built on each call: for tests and
    /// spectral bounds, not for decoding).
    pub(crate) fn dense_matrix(&self) -> faer::Mat<f64> {
        let mut b = faer::Mat::<f64>::zeros(self.rows.len(), self.fixed.partitions());
        for (w, row) in self.rows.iter().enumerate() {
            for &(p, c) in row {
                b[(w, p)] = c;
            }
        }
        b
    }

    /// The one-step weight of each of `arrived` distinct workers.
    pub(crate) fn one_step_weight(&self, arrived: usize) -> f64 {
        self.fixed.workers() as f64 / (arrived as f64 * self.mean_column_sum)
    }

    /// The distinct workers of `received` in arrival order, and each
    /// arrival's index among them (`None`: a repeat, weight 0).
    pub(crate) fn distinct(&self, received: &[Arrival]) -> (Vec<usize>, Vec<Option<usize>>) {
        let mut seen = vec![false; self.fixed.workers()];
        let mut workers = Vec::new();
        let slots = received
            .iter()
            .map(|a| {
                assert!(
                    a.worker < self.fixed.workers() && a.message == 0,
                    "arrival {a:?} is not a message of this code"
                );
                (!std::mem::replace(&mut seen[a.worker], true)).then(|| {
                    workers.push(a.worker);
                    workers.len() - 1
                })
            })
            .collect();
        (workers, slots)
    }

    /// The least-squares weights of `workers` (distinct): the minimum-norm
    /// `a` minimising ‖a·B_S − 1‖₂.
    pub(crate) fn least_squares(&self, workers: &[usize]) -> Vec<f64> {
        lsq::least_squares(&self.rows, workers, self.fixed.partitions())
    }

    /// Decode `received` with the per-distinct-worker weights `weights`
    /// (aligned with `workers` of [`ApproximateCode::distinct`]).
    pub(crate) fn decoding(
        &self,
        received: &[Arrival],
        slots: &[Option<usize>],
        workers: &[usize],
        weights: &[f64],
    ) -> Decoding {
        let n = self.fixed.partitions();
        let mut coverage = vec![0.0; n];
        for (&w, &a) in workers.iter().zip(weights) {
            for &(p, c) in &self.rows[w] {
                coverage[p] += a * c;
            }
        }
        let residual = coverage
            .iter()
            .map(|c| (c - 1.0).abs())
            .fold(0.0_f64, f64::max);
        let max_a = weights.iter().fold(0.0_f64, |m, a| m.max(a.abs()));
        let max_b = self.max_coefficient;
        Decoding {
            decodable: !received.is_empty(),
            weights: slots
                .iter()
                .map(|slot| slot.map_or(0.0, |i| weights[i]))
                .collect(),
            recovered: if received.is_empty() {
                Vec::new()
            } else {
                (0..n).collect()
            },
            residual,
            amplification: max_a * max_b,
            groups: Vec::new(),
            approximate: true,
        }
    }

    /// Decode with the code's decoder (`optimal`: least squares; `one-step`).
    pub(crate) fn decode_with_decoder(&self, received: &[Arrival]) -> Decoding {
        let (workers, slots) = self.distinct(received);
        let weights = match self.decoder {
            DecoderKind::Optimal => self.least_squares(&workers),
            DecoderKind::OneStep => vec![self.one_step_weight(workers.len()); workers.len()],
        };
        self.decoding(received, &slots, &workers, &weights)
    }

    /// A tracker that stops at `wait_for` distinct workers, at all K, or
    /// (when the code says so) once every partition is covered.
    pub(crate) fn tracker(&self) -> Box<dyn ArrivalTracker + '_> {
        Box::new(DistinctTracker {
            code: self,
            seen: vec![false; self.fixed.workers()],
            distinct: 0,
            covered: vec![false; self.fixed.partitions()],
            uncovered: self.fixed.partitions(),
        })
    }
}

/// Sufficient at `wait_for` distinct workers, when every worker arrived, or
/// (`stop_when_covered`) when the arrivals store every partition.
struct DistinctTracker<'a> {
    code: &'a ApproximateCode,
    seen: Vec<bool>,
    distinct: usize,
    covered: Vec<bool>,
    uncovered: usize,
}

impl ArrivalTracker for DistinctTracker<'_> {
    fn arrive(&mut self, arrival: Arrival) -> bool {
        if !std::mem::replace(&mut self.seen[arrival.worker], true) {
            self.distinct += 1;
            for &p in self.code.fixed.stored(arrival.worker) {
                if !std::mem::replace(&mut self.covered[p], true) {
                    self.uncovered -= 1;
                }
            }
        }
        self.code
            .policy
            .wait_for()
            .is_some_and(|w| self.distinct >= w)
            || self.distinct == self.seen.len()
            || (self.code.stop_when_covered && self.uncovered == 0)
    }
}

/// The methods of [`Scheme`](super::Scheme) every approximate code answers
/// alike from its `ApproximateCode` field `$field`: the fixed plan's, the
/// tracker, the deadline, partial recovery and the static plan.
macro_rules! approximate_methods {
    ($field:ident) => {
        fn kind(&self) -> &'static $crate::coding::SchemeEntry {
            self.$field.fixed.kind()
        }

        fn workers(&self) -> usize {
            self.$field.fixed.workers()
        }

        fn partitions(&self) -> usize {
            self.$field.fixed.partitions()
        }

        fn stored(&self, worker: usize) -> &[usize] {
            self.$field.fixed.stored(worker)
        }

        fn plan_round(
            &mut self,
            _ctx: &$crate::coding::RoundContext<'_>,
        ) -> $crate::coding::RoundPlan {
            self.$field.fixed.plan().clone()
        }

        fn tracker<'a>(
            &'a self,
            _plan: &'a $crate::coding::RoundPlan,
        ) -> Box<dyn $crate::coding::ArrivalTracker + 'a> {
            self.$field.tracker()
        }

        fn deadline(&self) -> Option<f64> {
            self.$field.policy.deadline()
        }

        fn partial_recovery(&self) -> bool {
            true
        }

        fn static_plan(&self) -> bool {
            true
        }
    };
}
pub(crate) use approximate_methods;
