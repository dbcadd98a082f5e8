//! Tandon et al.'s two-stage scheme for α-partial stragglers (001 §4).
//!
//! A straggler is α-partial when it is at most α times slower than any
//! non-straggler. The data is split into n coded partitions and n·q naive
//! ones, q = r/(α − 1) with r = s + 1 = `scheme.load`: worker i stores q naive
//! partitions of its own (disjoint) and r coded partitions placed by cyclic
//! repetition (i, ..., i+r−1 mod n, Tandon's Alg. 2 code). It first computes
//! its naive partitions and sends their plain sum, then its coded ones and
//! sends their codeword: two messages per worker. The master needs the naive
//! sum of every worker and any n − r + 1 codewords; by the choice of q an
//! α-partial straggler has sent its naive sum when a non-straggler has sent
//! both. Example (001 Fig. 4): n = 3, s = 1, α = 2 gives q = 2, 9 partitions,
//! 4 per worker.
//!
//! Limits: n >= 1, 1 <= r <= n, α finite > 1, and r/(α − 1) a positive
//! integer (within 1e-9 relative). The data layer must split the data into
//! `partitions()` = n(1 + q) partitions, not n.

use rand::Rng;

use super::DEFAULT_LOAD;
use super::fixed_plan::{FixedPlan, fixed_plan_methods};
use super::registry::{BuildArgs, SchemeEntry};
use super::{
    Arrival, ArrivalTracker, CodeOptions, CodeParams, Codeword, CodewordId, CodingError, CyclicMds,
    Decoding, GroupDecoder, GroupDecoding, Message, RoundPlan, Scheme, Tolerance, WorkerTask,
};
use crate::rng::Stream;
use serde::{Deserialize, Serialize};

/// `gc-partial`: load, slowdown and the code options.
pub static GC_PARTIAL: SchemeEntry = SchemeEntry::new::<GcPartialParams>(
    "gc-partial",
    "two-stage code for α-partial stragglers: every worker's naive sum, then any K − r + 1 cyclic MDS codewords (Tandon et al. §4)",
    build_gc_partial,
);

/// The `[scheme]` keys of `gc-partial`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GcPartialParams {
    /// r = s + 1: coded partitions per worker.
    pub load: usize,
    /// α: a partial straggler is at most this many times slower (> 1).
    pub slowdown: f64,
    /// The shared code options (`code_draws`, `decode_tolerance`,
    /// `decode_cache_entries`: [`CodeParams`]).
    pub code: CodeParams,
}

impl Default for GcPartialParams {
    fn default() -> Self {
        Self {
            load: DEFAULT_LOAD,
            slowdown: 2.0,
            code: CodeParams::default(),
        }
    }
}

fn build_gc_partial(args: &BuildArgs<'_>) -> Result<Box<dyn Scheme>, CodingError> {
    let p: GcPartialParams = args.params()?;
    let options = p.code.options()?;
    Ok(Box::new(PartialStragglerCode::new(
        args.workers,
        p.load,
        p.slowdown,
        options,
        &mut args.rng(Stream::Code),
    )?))
}

/// Codeword group of the naive sums; the coded component is group [`CODED`].
pub const NAIVE: usize = 0;
/// Codeword group of the coded component.
pub const CODED: usize = 1;

/// The two-stage partial-straggler code (see the module docs).
#[derive(Debug, Clone)]
pub struct PartialStragglerCode {
    /// Entry, K, the naive and coded partitions, what every worker stores, the plan.
    fixed: FixedPlan,
    load: usize,
    naive_per_worker: usize,
    decoder: GroupDecoder,
}

impl PartialStragglerCode {
    /// n workers, load r (= s + 1), slowdown α.
    pub fn new(
        workers: usize,
        load: usize,
        slowdown: f64,
        options: CodeOptions,
        rng: &mut impl Rng,
    ) -> Result<Self, CodingError> {
        let n = workers;
        if n == 0 {
            return Err(CodingError::invalid("workers", 0, "must be at least 1"));
        }
        if load == 0 || load > n {
            return Err(CodingError::invalid(
                "scheme.load",
                load,
                format!("must be between 1 and workers = {n}"),
            ));
        }
        if !(slowdown.is_finite() && slowdown > 1.0) {
            return Err(CodingError::invalid(
                "scheme.slowdown",
                slowdown,
                "must be a finite number > 1",
            ));
        }
        let exact = load as f64 / (slowdown - 1.0);
        let q = exact.round();
        if q < 1.0 || (exact - q).abs() > 1e-9 * exact || q > 1e6 {
            return Err(CodingError::invalid(
                "scheme.slowdown",
                slowdown,
                format!(
                    "gives load / (slowdown - 1) = {exact}, which must be a whole number of naive partitions per worker (1..=1e6)"
                ),
            ));
        }
        let q = q as usize;
        let code = CyclicMds::best_of(n, load, options.draws(), rng)?;
        let naive = |i: usize| (n + i * q..n + (i + 1) * q).collect::<Vec<usize>>();
        let mut stored = Vec::with_capacity(n);
        let mut tasks = Vec::with_capacity(n);
        for i in 0..n {
            let coded = code.row(i);
            let mut compute = naive(i);
            compute.extend(coded.iter().map(|&(p, _)| p));
            let mut mine = compute.clone();
            mine.sort_unstable();
            stored.push(mine);
            tasks.push(WorkerTask {
                compute,
                messages: vec![
                    Message {
                        after: q,
                        codeword: Codeword {
                            id: CodewordId {
                                group: NAIVE,
                                index: i,
                            },
                            terms: naive(i).into_iter().map(|p| (p, 1.0)).collect(),
                        },
                    },
                    Message {
                        after: q + load,
                        codeword: Codeword {
                            id: CodewordId {
                                group: CODED,
                                index: i,
                            },
                            terms: coded,
                        },
                    },
                ],
            });
        }
        let plan = RoundPlan {
            tasks,
            clusters: Vec::new(),
        };
        Ok(Self {
            fixed: FixedPlan::new(&GC_PARTIAL, n * (1 + q), stored, plan),
            load,
            naive_per_worker: q,
            decoder: GroupDecoder::cyclic(code, options),
        })
    }

    /// q: naive partitions per worker.
    pub fn naive_per_worker(&self) -> usize {
        self.naive_per_worker
    }
}

struct PartialTracker {
    seen: Vec<bool>,
    naive: usize,
    coded: usize,
    needed: usize,
}

impl ArrivalTracker for PartialTracker {
    fn arrive(&mut self, a: Arrival) -> bool {
        let n = self.seen.len() / 2;
        assert!(
            a.message < 2 && a.worker < n,
            "arrival {a:?}: not a gc-partial message"
        );
        if !std::mem::replace(&mut self.seen[a.message * n + a.worker], true) {
            if a.message == NAIVE {
                self.naive += 1;
            } else {
                self.coded += 1;
            }
        }
        self.naive == n && self.coded >= self.needed
    }
}

impl Scheme for PartialStragglerCode {
    fn decode_tolerance(&self) -> Option<f64> {
        Some(self.decoder.tolerance())
    }

    fixed_plan_methods!(fixed);

    fn tracker<'a>(&'a self, _plan: &'a RoundPlan) -> Box<dyn ArrivalTracker + 'a> {
        Box::new(PartialTracker {
            seen: vec![false; 2 * self.fixed.workers()],
            naive: 0,
            coded: 0,
            needed: self.decoder.needed(),
        })
    }

    fn decode(&mut self, _plan: &RoundPlan, received: &[Arrival]) -> Decoding {
        let n = self.fixed.workers();
        let q = self.naive_per_worker;
        let mut first: Vec<Option<usize>> = vec![None; 2 * n];
        for (idx, a) in received.iter().enumerate() {
            assert!(
                a.message < 2 && a.worker < n,
                "arrival {a:?}: not a gc-partial message"
            );
            first[a.message * n + a.worker].get_or_insert(idx);
        }
        let mut weights = vec![0.0; received.len()];
        let mut recovered = Vec::new();
        // Naive sums: each recovers its worker's own partitions.
        let naive: Vec<(usize, usize)> = (0..n)
            .filter_map(|w| first[w].map(|idx| (w, idx)))
            .collect();
        for &(w, idx) in &naive {
            weights[idx] = 1.0;
            recovered.extend(n + w * q..n + (w + 1) * q);
        }
        let naive_group = GroupDecoding {
            group: NAIVE,
            positions: naive.iter().map(|&(w, _)| w).collect(),
            workers: naive.iter().map(|&(w, _)| w).collect(),
            needed: n,
            decodable: naive.len() == n,
            coefficients: vec![1.0; naive.len()],
            residual: 0.0,
            amplification: 1.0,
        };
        // Coded component: any n - r + 1 codewords.
        let coded: Vec<(usize, usize)> = (0..n)
            .filter_map(|w| first[n + w].map(|idx| (w, idx)))
            .collect();
        let positions: Vec<usize> = coded.iter().map(|&(w, _)| w).collect();
        let solution = if coded.len() >= self.decoder.needed() {
            self.decoder.solve(&positions)
        } else {
            None
        };
        let mut coded_group = GroupDecoding {
            group: CODED,
            positions: positions.clone(),
            workers: positions,
            needed: self.decoder.needed(),
            decodable: solution.is_some(),
            coefficients: Vec::new(),
            residual: f64::NAN,
            amplification: f64::NAN,
        };
        let (mut residual, mut amplification) = (0.0, if naive.is_empty() { 0.0 } else { 1.0 });
        if let Some(s) = solution {
            for (&(_, idx), &c) in coded.iter().zip(&s.coefficients) {
                weights[idx] = c;
            }
            recovered.extend(0..n);
            residual = s.residual;
            amplification = f64::max(amplification, s.amplification);
            coded_group.coefficients = s.coefficients.clone();
            coded_group.residual = s.residual;
            coded_group.amplification = s.amplification;
        }
        recovered.sort_unstable();
        Decoding {
            decodable: naive_group.decodable && coded_group.decodable,
            weights,
            recovered,
            residual,
            amplification,
            groups: vec![naive_group, coded_group],
            approximate: false,
        }
    }

    /// α-partial stragglers tolerated: s = r − 1 (every worker still sends its
    /// naive sum; no full straggler is tolerated).
    fn tolerance(&self) -> Tolerance {
        Tolerance {
            worst: self.load - 1,
            best: self.load - 1,
        }
    }
}
