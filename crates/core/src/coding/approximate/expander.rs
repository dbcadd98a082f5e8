//! `agc-expander`: Raviv, Tamo, Tandon and Dimakis, "Gradient coding from
//! cyclic MDS codes and expander graphs" (ICML 2018; arXiv 1707.03858), §V.
//!
//! K workers, n = K partitions; B = A/d for the adjacency matrix A of a
//! d-regular graph on the K vertices: worker i stores the d partitions of its
//! neighbours and sends their mean. The master waits for `wait_for` workers
//! (or a deadline) and decodes with the optimal (least-squares) or the
//! paper's one-step weights, n/((n − s)) on each of the n − s arrivals.
//!
//! The one-step error has the paper's spectral bound: with λ the largest
//! |eigenvalue| of A other than d, ‖a·B_S − 1‖₂² ≤ (λ/d)²·n·s/(n − s) for
//! every set of s stragglers (1_S = ((n − s)/n)·1 + v with v ⟂ 1 and
//! ‖v‖² = s(n − s)/n, and ‖v·A/d‖ ≤ (λ/d)‖v‖); the optimal error is at most
//! the one-step error. [`ExpanderCode::one_step_bound`] gives it and a test
//! checks it on every straggler set of a small code.
//!
//! The graph (`scheme.graph`): a random d-regular simple graph
//! (`random-regular`, the default; 1 <= d < K, K·d even), or the paper's
//! explicit family, the Margulis–Gabber–Galil graph (`margulis`: K = m²
//! workers, d = 8, with the self-loops and parallel edges of a small m kept
//! as weights; second eigenvalue at most 5√2, see [`super::margulis`]).
//! Limits: the other explicit families of the paper are not built.

use serde::{Deserialize, Serialize};

use super::super::registry::{BuildArgs, SchemeEntry};
use super::super::{Arrival, CodingError, Decoding, RoundPlan, Scheme, Tolerance, WaitPolicy};
use super::{ApproximateCode, DecoderKind, approximate_methods, margulis, regular};
use crate::rng::Stream;

/// `agc-expander`.
pub static AGC_EXPANDER: SchemeEntry = SchemeEntry::new::<AgcExpanderParams>(
    "agc-expander",
    "approximate: B = adjacency/d of a d-regular graph (random, or Margulis'), the fastest `wait_for` decoded by least squares or one step n/(n − s) (Raviv et al. §V)",
    build,
);

/// The graph of a graph-based approximate code (`scheme.graph`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GraphKind {
    /// A random d-regular simple graph (pairing with restarts).
    #[default]
    RandomRegular,
    /// The Margulis–Gabber–Galil graph on Z_m × Z_m (8-regular;
    /// `agc-expander` only).
    Margulis,
}

impl std::fmt::Display for GraphKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            GraphKind::RandomRegular => "random-regular",
            GraphKind::Margulis => "margulis",
        })
    }
}

/// The default of `scheme.degree`, in every scheme that reads it.
pub(crate) const DEFAULT_DEGREE: usize = 4;

/// The `[scheme]` keys of `agc-expander`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgcExpanderParams {
    /// d: the graph's degree, partitions per worker.
    pub degree: usize,
    pub graph: GraphKind,
    pub decoder: DecoderKind,
    /// w: the master stops after the fastest w workers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_for: Option<usize>,
    /// Model time after which the master decodes what has arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<f64>,
}

impl Default for AgcExpanderParams {
    fn default() -> Self {
        Self {
            degree: DEFAULT_DEGREE,
            graph: GraphKind::RandomRegular,
            decoder: DecoderKind::Optimal,
            wait_for: None,
            deadline: None,
        }
    }
}

fn build(args: &BuildArgs<'_>) -> Result<Box<dyn Scheme>, CodingError> {
    let p: AgcExpanderParams = args.params()?;
    let policy = WaitPolicy::new(args.workers, p.wait_for, p.deadline, AGC_EXPANDER.name())?;
    let mut rng = args.rng(Stream::Code);
    Ok(Box::new(ExpanderCode::new(
        args.workers,
        p.degree,
        p.graph,
        policy,
        p.decoder,
        &mut rng,
    )?))
}

/// The expander code (see the module docs).
#[derive(Debug)]
pub struct ExpanderCode {
    code: ApproximateCode,
    degree: usize,
    edges: Vec<(usize, usize)>,
}

impl ExpanderCode {
    /// Limits: those of the graph (random regular: 1 <= d < K, K·d even;
    /// Margulis: K = m² with m >= 2, d = 8) and of the wait policy.
    pub fn new(
        workers: usize,
        degree: usize,
        graph: GraphKind,
        policy: WaitPolicy,
        decoder: DecoderKind,
        rng: &mut impl rand::Rng,
    ) -> Result<Self, CodingError> {
        let weight = 1.0 / degree as f64;
        let (edges, rows) = match graph {
            GraphKind::RandomRegular => {
                let edges = regular::random_regular(workers, degree, rng, "scheme.degree")?;
                let mut rows = vec![Vec::new(); workers];
                for &(u, v) in &edges {
                    rows[u].push((v, weight));
                    rows[v].push((u, weight));
                }
                for row in &mut rows {
                    row.sort_by_key(|&(p, _)| p);
                }
                (edges, rows)
            }
            GraphKind::Margulis => {
                let Some(m) = margulis::square_side(workers) else {
                    return Err(CodingError::invalid(
                        "workers",
                        workers,
                        "is not a square m² with m >= 2: graph = \"margulis\" has a worker per point of Z_m × Z_m (4, 9, 16, 25, …)",
                    ));
                };
                if degree != 8 {
                    return Err(CodingError::invalid(
                        "scheme.degree",
                        degree,
                        "is not 8: graph = \"margulis\" is 8-regular (set degree = 8)",
                    ));
                }
                let neighbours = margulis::margulis_neighbours(m);
                let mut edges = Vec::new();
                for (v, row) in neighbours.iter().enumerate() {
                    for &(u, count) in row {
                        // A self-loop counts 2 in the row: one loop.
                        let times = if u == v { count / 2 } else { count };
                        if v <= u {
                            edges.extend(std::iter::repeat_n((v, u), times));
                        }
                    }
                }
                let rows = neighbours
                    .into_iter()
                    .map(|row| {
                        row.into_iter()
                            .map(|(u, count)| (u, count as f64 * weight))
                            .collect()
                    })
                    .collect();
                (edges, rows)
            }
        };
        let code = ApproximateCode::new(
            &AGC_EXPANDER,
            workers,
            rows,
            policy,
            decoder,
            "scheme.degree",
        )?;
        Ok(Self {
            code,
            degree,
            edges,
        })
    }

    /// The graph's edges (u < v; u = v: a self-loop), sorted, a parallel
    /// edge as often as it is there.
    pub fn edges(&self) -> &[(usize, usize)] {
        &self.edges
    }

    /// The paper's bound on the squared one-step error with `stragglers`
    /// of the n workers: (λ/d)²·n·s/(n − s), λ the largest |eigenvalue| of
    /// the adjacency matrix besides d (computed here).
    pub fn one_step_bound(&self, stragglers: usize) -> f64 {
        let n = self.code.fixed.workers();
        if stragglers >= n {
            return f64::INFINITY;
        }
        let b = self.code.dense_matrix();
        let a = faer::Mat::<f64>::from_fn(n, n, |i, j| b[(i, j)] * self.degree as f64);
        let eigenvalues = a
            .self_adjoint_eigenvalues(faer::Side::Lower)
            .unwrap_or_default();
        let mut sorted: Vec<f64> = eigenvalues.iter().map(|x| x.abs()).collect();
        sorted.sort_by(|x, y| y.total_cmp(x));
        // The largest is d (the all-ones eigenvector); the next one is λ.
        let lambda = sorted.get(1).copied().unwrap_or(0.0);
        let d = self.degree as f64;
        let (n, s) = (n as f64, stragglers as f64);
        (lambda / d).powi(2) * n * s / (n - s)
    }
}

impl Scheme for ExpanderCode {
    approximate_methods!(code);

    fn decode(&mut self, _plan: &RoundPlan, received: &[Arrival]) -> Decoding {
        self.code.decode_with_decoder(received)
    }

    /// No straggler set is decoded exactly by construction.
    fn tolerance(&self) -> Tolerance {
        Tolerance { worst: 0, best: 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coding::RoundPlan;
    use crate::rng::stream;

    fn code(n: usize, d: usize, decoder: DecoderKind) -> ExpanderCode {
        let policy = WaitPolicy::new(n, Some(n - 2), None, "agc-expander").unwrap();
        ExpanderCode::new(
            n,
            d,
            GraphKind::RandomRegular,
            policy,
            decoder,
            &mut stream(7, Stream::Code),
        )
        .unwrap()
    }

    fn error(code: &mut ExpanderCode, plan: &RoundPlan, alive: &[usize]) -> f64 {
        let arrivals: Vec<Arrival> = alive.iter().map(|&w| Arrival::only(w)).collect();
        let decoding = code.decode(plan, &arrivals);
        let mut scratch = Vec::new();
        decoding.error(plan, &arrivals, code.partitions(), &mut scratch)
    }

    /// Every set of up to `most` stragglers of the code's workers: the
    /// one-step error (`one`) within the paper's spectral bound, the optimal
    /// one (`opt`, the same graph) at most it; no straggler, no error.
    fn within_the_bound(
        one: &mut ExpanderCode,
        opt: &mut ExpanderCode,
        plan: &RoundPlan,
        most: usize,
    ) {
        let n = one.workers();
        for mask in 0u32..(1 << n) {
            let stragglers = mask.count_ones() as usize;
            if stragglers > most {
                continue;
            }
            let alive: Vec<usize> = (0..n).filter(|w| mask & (1 << w) == 0).collect();
            let e1 = error(one, plan, &alive);
            let e2 = error(opt, plan, &alive);
            let bound = one.one_step_bound(stragglers);
            assert!(e1 * e1 <= bound + 1e-9, "{alive:?}: {e1}² > {bound}");
            assert!(e2 <= e1 + 1e-9, "{alive:?}: optimal {e2} > one-step {e1}");
            if stragglers == 0 {
                assert!(e1 <= 1e-12 && e2 <= 1e-9, "{e1} {e2}");
            }
        }
    }

    /// Every worker stores its d neighbours with weight 1/d; every straggler
    /// set of up to 3 of 10 has a one-step error within the paper's bound,
    /// and an optimal error at most the one-step error; no straggler, no
    /// error (B's rows of a regular graph sum to the all-ones vector).
    #[test]
    fn the_one_step_error_is_within_the_spectral_bound_and_optimal_is_smaller() {
        let n = 10;
        let mut one = code(n, 3, DecoderKind::OneStep);
        let mut opt = code(n, 3, DecoderKind::Optimal);
        assert_eq!(one.edges(), opt.edges(), "the same seed, the same graph");
        let plan = one.plan_round(&Default::default());
        for w in 0..n {
            assert_eq!(one.stored(w).len(), 3);
            assert!(
                plan.tasks[w].messages[0]
                    .codeword
                    .terms
                    .iter()
                    .all(|&(_, c)| c == 1.0 / 3.0)
            );
        }
        within_the_bound(&mut one, &mut opt, &plan, 3);
    }

    /// The Margulis graph on 16 workers: every worker's weights sum to 1
    /// (B's rows of an 8-regular graph), so no straggler, no error; every set
    /// of up to 2 stragglers keeps the one-step error within the spectral
    /// bound and the optimal error below it. K not a square, or a degree
    /// other than 8, is refused naming the key.
    #[test]
    fn the_margulis_graph_decodes_within_its_spectral_bound() {
        let n = 16;
        let build = |decoder| {
            let policy = WaitPolicy::new(n, Some(n - 2), None, "agc-expander").unwrap();
            ExpanderCode::new(
                n,
                8,
                GraphKind::Margulis,
                policy,
                decoder,
                &mut stream(7, Stream::Code),
            )
            .unwrap()
        };
        let mut one = build(DecoderKind::OneStep);
        let mut opt = build(DecoderKind::Optimal);
        let plan = one.plan_round(&Default::default());
        for w in 0..n {
            let sum: f64 = plan.tasks[w].messages[0]
                .codeword
                .terms
                .iter()
                .map(|&(_, c)| c)
                .sum();
            assert!((sum - 1.0).abs() < 1e-12, "worker {w}: {sum}");
        }
        let loops = one.edges().iter().filter(|(u, v)| u == v).count();
        assert_eq!(one.edges().len(), n * 8 / 2, "{loops} self-loops");
        within_the_bound(&mut one, &mut opt, &plan, 2);
        let refused = |workers: usize, degree: usize| {
            let policy = WaitPolicy::new(workers, Some(workers - 1), None, "agc-expander").unwrap();
            ExpanderCode::new(
                workers,
                degree,
                GraphKind::Margulis,
                policy,
                DecoderKind::Optimal,
                &mut stream(7, Stream::Code),
            )
            .unwrap_err()
            .to_string()
        };
        let e = refused(15, 8);
        assert!(e.contains("workers") && e.contains("square"), "{e}");
        let e = refused(16, 4);
        assert!(
            e.contains("scheme.degree") && e.contains("8-regular"),
            "{e}"
        );
    }

    #[test]
    fn a_decode_is_approximate_over_every_partition() {
        let mut c = code(8, 4, DecoderKind::Optimal);
        let plan = c.plan_round(&Default::default());
        let arrivals: Vec<Arrival> = [0, 2, 3, 5, 6, 7, 0]
            .into_iter()
            .map(Arrival::only)
            .collect();
        let d = c.decode(&plan, &arrivals);
        assert!(d.approximate && d.decodable);
        assert_eq!(d.recovered, (0..8).collect::<Vec<_>>());
        assert_eq!(d.weights[6], 0.0, "a repeat gets weight 0");
    }
}
