//! `agc-graph`: graph assignment codes with optimal decoding in linear time
//! (Glasgow and Wootters, "Approximate gradient coding with optimal
//! decoding", Definition II.2 and §III).
//!
//! The partitions are the vertices of a d-regular graph on n = 2K/d
//! vertices and the K workers its edges: each worker stores the two
//! partitions of its edge and sends their plain sum. The optimal weights of
//! the arrivals S (the least-squares optimum) follow from the connected
//! components of the graph the arrived edges form:
//!
//! - a component with an odd cycle (not bipartite) is recovered exactly
//!   (every vertex's coverage 1);
//! - a bipartite component with sides of L ≥ R vertices gets coverage
//!   1 − (L − R)/(L + R) on the L side and 1 + (L − R)/(L + R) on the R side
//!   (the closest to 1 that keeps the two sides' sums equal, which every
//!   edge weight does);
//! - a partition no arrived edge touches gets 0.
//!
//! The edge weights that give those coverages are found along a spanning
//! tree of each component, leaves first; in a component with an odd cycle
//! one edge closing it carries the weight that balances the tree's root.
//! Every step visits each vertex and edge a constant number of times: linear
//! in n + |S|. A test checks the result against the least-squares decode on
//! random straggler sets. The one-step decoder is also offered.
//!
//! Limits: `scheme.degree` = d with d | 2K and 1 <= d < n (a simple
//! d-regular graph on n = 2K/d vertices); the graph is drawn at random
//! (`graph = "random-regular"`).

use serde::{Deserialize, Serialize};

use super::super::registry::{BuildArgs, SchemeEntry};
use super::super::{Arrival, CodingError, Decoding, RoundPlan, Scheme, Tolerance, WaitPolicy};
use super::expander::{DEFAULT_DEGREE, GraphKind};
use super::{ApproximateCode, DecoderKind, approximate_methods, regular};
use crate::rng::Stream;

/// `agc-graph`.
pub static AGC_GRAPH: SchemeEntry = SchemeEntry::new::<AgcGraphParams>(
    "agc-graph",
    "approximate: each worker stores the two partitions of an edge of a d-regular graph; the optimal decode by connected components in linear time (Glasgow & Wootters §III)",
    build,
);

/// The `[scheme]` keys of `agc-graph`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgcGraphParams {
    /// d: the graph's degree, the copies of each partition; d | 2K.
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

impl Default for AgcGraphParams {
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
    let p: AgcGraphParams = args.params()?;
    if p.graph != GraphKind::RandomRegular {
        return Err(CodingError::invalid(
            "scheme.graph",
            format!("\"{}\"", p.graph),
            "is not for agc-graph: its workers hold the two ends of an edge of a simple graph (graph = \"random-regular\")",
        ));
    }
    let policy = WaitPolicy::new(args.workers, p.wait_for, p.deadline, AGC_GRAPH.name())?;
    let mut rng = args.rng(Stream::Code);
    Ok(Box::new(GraphCode::new(
        args.workers,
        p.degree,
        policy,
        p.decoder,
        &mut rng,
    )?))
}

/// A graph assignment code (see the module docs).
#[derive(Debug)]
pub struct GraphCode {
    code: ApproximateCode,
    /// Worker w's edge (u < v): the partitions it stores.
    edges: Vec<(usize, usize)>,
}

impl GraphCode {
    /// Limits: d | 2K, 1 <= d < 2K/d; those of the wait policy.
    pub fn new(
        workers: usize,
        degree: usize,
        policy: WaitPolicy,
        decoder: DecoderKind,
        rng: &mut impl rand::Rng,
    ) -> Result<Self, CodingError> {
        if degree == 0 || (2 * workers) % degree != 0 {
            return Err(CodingError::invalid(
                "scheme.degree",
                degree,
                format!(
                    "must divide 2 x workers = {} (n = 2K/d partitions, each on d of the K workers)",
                    2 * workers
                ),
            ));
        }
        let n = 2 * workers / degree;
        let edges = regular::random_regular(n, degree, rng, "scheme.degree")?;
        debug_assert_eq!(edges.len(), workers);
        let rows = edges
            .iter()
            .map(|&(u, v)| vec![(u, 1.0), (v, 1.0)])
            .collect();
        let code = ApproximateCode::new(&AGC_GRAPH, n, rows, policy, decoder, "scheme.degree")?;
        Ok(Self { code, edges })
    }

    /// The optimal weights of the distinct arrived `workers` (edges), by
    /// connected components (see the module docs).
    fn component_weights(&self, workers: &[usize]) -> Vec<f64> {
        let n = self.code.fixed.partitions();
        // Adjacency of the arrived edges: (neighbour, index into `workers`).
        let mut start = vec![0usize; n + 1];
        for &w in workers {
            let (u, v) = self.edges[w];
            start[u + 1] += 1;
            start[v + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut adjacent = vec![(0usize, 0usize); 2 * workers.len()];
        for (i, &w) in workers.iter().enumerate() {
            let (u, v) = self.edges[w];
            adjacent[fill[u]] = (v, i);
            fill[u] += 1;
            adjacent[fill[v]] = (u, i);
            fill[v] += 1;
        }
        let mut weights = vec![0.0; workers.len()];
        let mut depth = vec![usize::MAX; n];
        let mut parent_edge = vec![usize::MAX; n];
        let mut parent = vec![usize::MAX; n];
        let mut order = Vec::with_capacity(n);
        let mut target = vec![0.0; n];
        let mut acc = vec![0.0; n];
        for root in 0..n {
            if depth[root] != usize::MAX || start[root] == start[root + 1] {
                continue; // visited, or isolated (coverage 0)
            }
            // Breadth-first: the tree, the sides, an edge closing an odd cycle.
            order.clear();
            depth[root] = 0;
            order.push(root);
            let mut odd_edge = None;
            let mut head = 0;
            while head < order.len() {
                let x = order[head];
                head += 1;
                for &(y, e) in &adjacent[start[x]..start[x + 1]] {
                    if depth[y] == usize::MAX {
                        depth[y] = depth[x] + 1;
                        parent[y] = x;
                        parent_edge[y] = e;
                        order.push(y);
                    } else if e != parent_edge[x] && depth[y] % 2 == depth[x] % 2 {
                        odd_edge.get_or_insert(e);
                    }
                }
            }
            let even = order.iter().filter(|&&x| depth[x] % 2 == 0).count();
            let odd = order.len() - even;
            for &x in &order {
                target[x] = match odd_edge {
                    Some(_) => 1.0,
                    None => {
                        let (l, r) = (even.max(odd) as f64, even.min(odd) as f64);
                        let shift = (l - r) / (l + r);
                        let larger_side = (depth[x] % 2 == 0) == (even >= odd);
                        if larger_side {
                            1.0 - shift
                        } else {
                            1.0 + shift
                        }
                    }
                };
            }
            // The root's imbalance after the leaves-first pass with weight t
            // on the odd edge; linear in t, so two passes give t.
            let mut pass = |t: f64, weights: &mut [f64]| -> f64 {
                for &x in &order {
                    acc[x] = 0.0;
                }
                if let Some(e) = odd_edge {
                    let (u, v) = self.edges[workers[e]];
                    weights[e] = t;
                    acc[u] += t;
                    acc[v] += t;
                }
                for &x in order.iter().skip(1).rev() {
                    let e = parent_edge[x];
                    let a = target[x] - acc[x];
                    weights[e] = a;
                    acc[x] += a;
                    acc[parent[x]] += a;
                }
                target[root] - acc[root]
            };
            let r0 = pass(0.0, &mut weights);
            if odd_edge.is_some() {
                let r1 = pass(1.0, &mut weights);
                let t = r0 / (r0 - r1);
                let rest = pass(t, &mut weights);
                debug_assert!(rest.abs() <= 1e-9 * order.len() as f64, "balanced: {rest}");
            } else {
                debug_assert!(
                    r0.abs() <= 1e-9 * order.len() as f64,
                    "balanced sides: {r0}"
                );
            }
        }
        weights
    }
}

impl Scheme for GraphCode {
    approximate_methods!(code);

    fn decode(&mut self, _plan: &RoundPlan, received: &[Arrival]) -> Decoding {
        let (workers, slots) = self.code.distinct(received);
        let weights = match self.code.decoder {
            DecoderKind::Optimal => self.component_weights(&workers),
            DecoderKind::OneStep => {
                vec![self.code.one_step_weight(workers.len()); workers.len()]
            }
        };
        self.code.decoding(received, &slots, &workers, &weights)
    }

    /// No straggler set is decoded exactly by construction.
    fn tolerance(&self) -> Tolerance {
        Tolerance { worst: 0, best: 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;
    use rand::RngExt;

    fn code(k: usize, d: usize, seed: u64) -> GraphCode {
        let policy = WaitPolicy::new(k, Some(k / 2), None, "agc-graph").unwrap();
        GraphCode::new(
            k,
            d,
            policy,
            DecoderKind::Optimal,
            &mut stream(seed, Stream::Code),
        )
        .unwrap()
    }

    /// The component rule's error equals the least-squares optimum's on
    /// 400 random straggler sets of several codes, and its coverage is
    /// exactly 1, 1 ∓ (L − R)/(L + R) or 0 per component.
    #[test]
    fn the_component_decode_is_the_least_squares_optimum() {
        let mut rng = stream(3, Stream::CheckSampling);
        for (k, d, seed) in [(12, 4, 1), (12, 3, 2), (15, 3, 3), (20, 4, 4), (9, 2, 5)] {
            let mut c = code(k, d, seed);
            let plan = c.plan_round(&Default::default());
            for _ in 0..80 {
                let p = rng.random_range(0.1..0.8);
                let alive: Vec<usize> = (0..k).filter(|_| rng.random::<f64>() >= p).collect();
                let arrivals: Vec<Arrival> = alive.iter().map(|&w| Arrival::only(w)).collect();
                let fast = c.decode(&plan, &arrivals);
                let e_fast = fast.error(&plan, &arrivals, c.partitions(), &mut Vec::new());
                let mut slow = fast.clone();
                slow.weights = c.code.least_squares(&alive);
                let e_slow = slow.error(&plan, &arrivals, c.partitions(), &mut Vec::new());
                assert!(
                    (e_fast - e_slow).abs() <= 1e-8,
                    "K = {k}, d = {d}, alive {alive:?}: components {e_fast}, least squares {e_slow}"
                );
            }
        }
    }

    /// A path of three partitions (two edges) is bipartite with sides 2 and
    /// 1: coverages 2/3 on the ends, 4/3 in the middle; a triangle is exact.
    #[test]
    fn a_path_and_a_triangle_get_the_papers_coverages() {
        let policy = WaitPolicy::new(3, Some(2), None, "agc-graph").unwrap();
        // 2-regular on n = 3: the triangle (0,1), (0,2), (1,2).
        let mut c = GraphCode::new(
            3,
            2,
            policy,
            DecoderKind::Optimal,
            &mut stream(1, Stream::Code),
        )
        .unwrap();
        assert_eq!(c.edges, vec![(0, 1), (0, 2), (1, 2)]);
        let plan = c.plan_round(&Default::default());
        let mut coverage = Vec::new();
        let path: Vec<Arrival> = [0, 2].into_iter().map(Arrival::only).collect();
        let d = c.decode(&plan, &path);
        d.error(&plan, &path, 3, &mut coverage);
        // Edges (0,1) and (1,2): the path 0 - 1 - 2, its middle is 1.
        assert!((coverage[0] - 2.0 / 3.0).abs() < 1e-12, "{coverage:?}");
        assert!((coverage[1] - 4.0 / 3.0).abs() < 1e-12, "{coverage:?}");
        assert!((coverage[2] - 2.0 / 3.0).abs() < 1e-12, "{coverage:?}");
        let all: Vec<Arrival> = (0..3).map(Arrival::only).collect();
        let d = c.decode(&plan, &all);
        let e = d.error(&plan, &all, 3, &mut coverage);
        assert!(e <= 1e-12, "a triangle is exact: {coverage:?}");
    }
}
