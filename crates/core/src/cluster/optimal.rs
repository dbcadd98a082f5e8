//! The optimal dynamic clustering: the policy `optimal`, beyond 000.
//!
//! 000 §VII leaves an optimal clustering policy as future work; the greedy
//! of §V ([`super::GreedyClustering`]) only aims at an even spread of the
//! stragglers. This policy chooses, among **all** clusterings valid for
//! A_cluster (every worker in one of its n clusters, every cluster exactly
//! l workers), one that is best for an objective the master can evaluate
//! from what it knows ([`ClusteringScore`]):
//!
//! - **Straggler flags:** the straggler profile (stragglers per cluster,
//!   sorted decreasingly) is made lexicographically smallest: first the most
//!   stragglers in one cluster, then the number of clusters with that many,
//!   then the next largest count, and so on.
//! - **Estimated rates** (§VI-B): first the *bottleneck rate* is made as
//!   large as possible: the smallest over clusters of the cluster's
//!   (l − r + 1)-th largest rate, the rate of the slowest worker a cluster
//!   must wait for when its fastest l − r + 1 are the ones that report.
//!   Ties are broken by the straggler profile above, a straggler being a
//!   worker whose rate is below tau (`scheme.straggler_threshold`).
//!
//! # Why it is exact
//!
//! A valid clustering is exactly an integral flow of value K in a network
//! source → worker (capacity 1) → a node of each of the worker's clusters →
//! cluster node → sink (capacity l): unit edges out of the source put every
//! worker in one cluster of its column, and K = P·l units through P edges of
//! capacity l fill every cluster to exactly l. Per cluster p the network has
//! a chain of three nodes X_p → Y_p → C_p; a worker enters the chain of each
//! of its clusters at X, Y or C according to its class, so that the edges
//! X_p → Y_p and Y_p → C_p count the members of p of a class (or a union of
//! nested classes).
//!
//! 1. **Bottleneck (rates).** Let need = l − r + 1 and call a worker *slow
//!    at t* when its rate is below t (a NaN rate is −∞). A clustering's
//!    bottleneck is >= t iff every cluster has at least need workers with
//!    rate >= t, iff every cluster has at most r − 1 workers slow at t, iff
//!    the network where the slow workers enter at X_p and X_p → Y_p has
//!    capacity r − 1 has a flow of value K (integral flows are clusterings).
//!    Feasibility is monotone (a smaller t makes fewer workers slow) and the
//!    optimum is one of the K rates, so a binary search over the sorted
//!    distinct rates, from the greedy's bottleneck (feasible) up, with one
//!    maximum flow per step, finds the optimum t* exactly.
//! 2. **Profile.** The count of stragglers in cluster p, s_p, flows through
//!    one chain edge; that edge is split into unit edges of level j = 1, 2,
//!    ..., hi with cost c_j = M^(j−1) − 1, M = P + 1 (convex: increasing in
//!    j), so a least-cost flow pays g(s) = (M^s − 1)/(M − 1) − s for a
//!    cluster with s stragglers. The −s terms add up to −|S| whatever the
//!    clustering; and if profile a is lexicographically smaller than b
//!    (sorted decreasingly, first difference at index i, a_i < b_i = β), the
//!    clusters from index i on cost at most (P − i)·G(β − 1) < M·G(β − 1) <
//!    G(β) under a and at least G(β) under b (G(s) = (M^s − 1)/(M − 1),
//!    G(β) = M·G(β − 1) + 1), while the clusters before i cost the same. So
//!    the least-cost flow has the lexicographically smallest profile. With
//!    rates, the classes "straggler" (rate < tau) and "slow at t*" are
//!    nested (one contains the other, as tau and t* are thresholds on the
//!    same rates), so the smaller enters at X_p, the larger's rest at Y_p,
//!    and the chain carries the r − 1 cap of t* on one edge and the level
//!    edges on the other: the least-cost flow is the smallest profile among
//!    the clusterings that keep the optimal bottleneck.
//!
//! The levels go up to hi, the most stragglers in one cluster of a clustering
//! known to be feasible (the greedy's, or with rates the one found at t*), so
//! every optimum fits. A least-cost flow is found by a zero-cost maximum flow
//! (Dinic) followed by successive shortest paths: the flow stays least-cost
//! for its value after each augmentation.
//!
//! # Limits
//!
//! Those of [`Assignment`] and 1 <= r <= l. The costs are `i128`: the
//! profile tie-break is exact while (P + 1)^(hi − 1) · (K + 3P + 2)^2 fits
//! in it, which at K = 200 holds for every hi <= l when P >= 5, and up to
//! hi = 71 at P = 2 (a unit test checks both). Beyond that only the top levels
//! that fit get weights (the largest count and the clusters at it still come
//! first); the lower ones are left to the flow. The bottleneck, the largest
//! count and validity are exact always.
//!
//! # Cost
//!
//! One greedy run, with rates at most log2(K) + 1 maximum flows (over the
//! rates between the greedy's bottleneck and the smallest over columns of
//! the column's (l − r + 1)-th largest rate, a bound no clustering beats), and one
//! least-cost flow: under 50 µs at K = 20 and under 5 ms at K = 200, for
//! flags and rates (`benches/clustering.rs`; figures in docs/performance.md).

use std::cmp::Ordering;

use super::flow::FlowNetwork;
use super::{
    Assignment, ClusterError, Clustering, ClusteringPolicy, GreedyClustering, How, Placement,
    WorkerStates,
};

/// What a clustering achieves on the optimal policy's objective (see the
/// module docs); [`ClusteringScore::cmp_objective`] orders two of them.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusteringScore {
    /// Stragglers per cluster, largest first.
    pub profile: Vec<usize>,
    /// With rates: the smallest over clusters of the cluster's (l − r + 1)-th
    /// largest rate (NaN as −∞); `None` with straggler flags.
    pub bottleneck_rate: Option<f64>,
}

impl ClusteringScore {
    /// Score the clusters `members` for `states` with load `load` (r).
    ///
    /// # Panics
    ///
    /// When a cluster has fewer than l − r + 1 members or `load` is 0.
    pub fn of(members: &[Vec<usize>], states: &WorkerStates<'_>, load: usize) -> Self {
        let mut profile: Vec<usize> = members
            .iter()
            .map(|m| m.iter().filter(|&&w| states.is_straggler(w)).count())
            .collect();
        profile.sort_unstable_by(|a, b| b.cmp(a));
        let bottleneck_rate = states.rates.map(|_| {
            let mut keys = Vec::new();
            members
                .iter()
                .map(|m| {
                    let need = m.len() + 1 - load;
                    keys.clear();
                    keys.extend(m.iter().map(|&w| states.rate(w).expect("rates are given")));
                    keys.sort_unstable_by(|a, b| b.total_cmp(a));
                    keys[need - 1]
                })
                .fold(f64::INFINITY, f64::min)
        });
        Self {
            profile,
            bottleneck_rate,
        }
    }

    /// The most stragglers in one cluster.
    pub fn max_stragglers(&self) -> usize {
        self.profile.first().copied().unwrap_or(0)
    }

    /// `Less` when `self` is better: a larger bottleneck rate, then a
    /// lexicographically smaller profile.
    pub fn cmp_objective(&self, other: &Self) -> Ordering {
        let by_rate = match (self.bottleneck_rate, other.bottleneck_rate) {
            (Some(a), Some(b)) => b.total_cmp(&a),
            _ => Ordering::Equal,
        };
        by_rate.then_with(|| self.profile.cmp(&other.profile))
    }
}

/// Which class of worker enters a cluster's chain X → Y → C where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    X,
    Y,
    C,
}

/// The policy `optimal` (see the module docs).
#[derive(Debug, Clone)]
pub struct OptimalClustering {
    load: usize,
    greedy: GreedyClustering,
    start: Clustering,
    net: FlowNetwork,
    straggler: Vec<bool>,
    keys: Vec<f64>,
    sorted: Vec<f64>,
    /// (worker, cluster, edge id) of every worker → chain edge.
    worker_edges: Vec<(usize, usize, usize)>,
    members: Vec<Vec<usize>>,
    /// The most stragglers in one cluster of the last feasible clustering at
    /// the bottleneck threshold under test.
    found_max: usize,
}

impl OptimalClustering {
    /// The optimal policy for code load r = `load` (>= 1; at most l, which
    /// [`ClusteringPolicy::cluster`] checks against the assignment).
    pub fn new(load: usize) -> Result<Self, ClusterError> {
        if load == 0 {
            return Err(ClusterError::new("scheme.load", 0, "must be at least 1"));
        }
        Ok(Self {
            load,
            greedy: GreedyClustering::new(),
            start: Clustering::default(),
            net: FlowNetwork::default(),
            straggler: Vec::new(),
            keys: Vec::new(),
            sorted: Vec::new(),
            worker_edges: Vec::new(),
            members: Vec::new(),
            found_max: 0,
        })
    }

    /// r.
    pub fn load(&self) -> usize {
        self.load
    }

    /// Build the chain network: `entry(w)` says where worker w enters,
    /// `xy` and `yc` are the chain edges' (capacity, levels?) per cluster:
    /// a `Some(hi)` edge is split into `hi` unit level edges with the
    /// lexicographic costs, `None` is one edge of the given capacity.
    fn build(
        &mut self,
        a: &Assignment,
        entry: impl Fn(usize) -> Entry,
        xy: (usize, Option<usize>),
        yc: (usize, Option<usize>),
    ) -> (usize, usize) {
        let (k, p, l) = (a.workers(), a.clusters(), a.size());
        let (source, sink) = (0, 1 + k + 3 * p);
        let x = |c: usize| 1 + k + 3 * c;
        let nodes = sink + 1;
        self.net.reset(nodes);
        self.worker_edges.clear();
        for w in 0..k {
            self.net.add(source, 1 + w, 1, 0);
            let at = entry(w);
            for &c in a.clusters_of(w) {
                let node = x(c)
                    + match at {
                        Entry::X => 0,
                        Entry::Y => 1,
                        Entry::C => 2,
                    };
                let e = self.net.add(1 + w, node, 1, 0);
                self.worker_edges.push((w, c, e));
            }
        }
        let weights = level_costs(p, nodes, xy.1.or(yc.1).unwrap_or(0));
        for c in 0..p {
            for (from, (capacity, levels)) in [(x(c), xy), (x(c) + 1, yc)] {
                match levels {
                    Some(hi) => {
                        for cost in &weights[..hi] {
                            self.net.add(from, from + 1, 1, *cost);
                        }
                    }
                    None => {
                        self.net.add(from, from + 1, capacity, 0);
                    }
                }
            }
            self.net.add(x(c) + 2, sink, l, 0);
        }
        (source, sink)
    }

    /// Read the clustering off the flow into `self.members`.
    fn read_members(&mut self, p: usize) {
        self.members.resize_with(p, Vec::new);
        self.members.iter_mut().for_each(Vec::clear);
        for &(w, c, e) in &self.worker_edges {
            if self.net.flow(e) == 1 {
                self.members[c].push(w);
            }
        }
    }

    /// Whether some valid clustering has bottleneck >= t; if so it is left
    /// in `self.members` and its most stragglers in one cluster in `found_max`.
    fn feasible_at(&mut self, a: &Assignment, t: f64) -> bool {
        let (k, p, l) = (a.workers(), a.clusters(), a.size());
        let keys = std::mem::take(&mut self.keys);
        let (source, sink) = self.build(
            a,
            |w| if keys[w] < t { Entry::X } else { Entry::C },
            (self.load - 1, None),
            (l, None),
        );
        self.keys = keys;
        if self.net.max_flow_at_zero_cost(source, sink) != k {
            return false;
        }
        self.read_members(p);
        self.found_max = self
            .members
            .iter()
            .map(|m| m.iter().filter(|&&w| self.straggler[w]).count())
            .max()
            .unwrap_or(0);
        true
    }
}

/// c_j = M^(j−1) − 1 for levels j = 1..=hi, M = P + 1; only the top levels
/// whose costs keep every path cost of the network within `i128` get
/// weights (see the module docs' limits), the lower ones cost 0.
fn level_costs(p: usize, nodes: usize, hi: usize) -> Vec<i128> {
    if hi == 0 {
        return Vec::new();
    }
    let m = (p + 1) as i128;
    // A path cost sums at most `nodes` edges, a flow cost at most K·nodes
    // level costs; nodes² bounds both.
    let room = i128::MAX / (nodes as i128 * nodes as i128).max(1);
    let (mut top, mut power) = (0u32, 1i128); // the largest exponent that fits, M^top
    while top + 1 < hi as u32 && power.checked_mul(m).is_some_and(|v| v <= room) {
        top += 1;
        power *= m;
    }
    let shift = (hi as u32).saturating_sub(1).saturating_sub(top);
    (1..=hi as u32)
        .map(|j| {
            let exp = (j - 1).saturating_sub(shift);
            if j - 1 < shift { 0 } else { m.pow(exp) - 1 }
        })
        .collect()
}

impl ClusteringPolicy for OptimalClustering {
    fn name(&self) -> &'static str {
        "optimal"
    }

    fn cluster(&mut self, a: &Assignment, states: &WorkerStates<'_>, out: &mut Clustering) {
        let (k, p, l) = (a.workers(), a.clusters(), a.size());
        assert!(
            self.load <= l,
            "scheme.load = {} exceeds the cluster size {l}",
            self.load
        );
        states.check_len(k);
        self.straggler.clear();
        self.straggler
            .extend((0..k).map(|w| states.is_straggler(w)));
        self.greedy.cluster(a, states, &mut self.start);
        let mut hi = self.start.max_stragglers();

        // With rates: the largest feasible bottleneck t*, from the greedy's up.
        let mut threshold = None;
        if states.rates.is_some() {
            self.keys.clear();
            self.keys
                .extend((0..k).map(|w| states.rate(w).expect("rates are given")));
            let start = ClusteringScore::of(&self.start.members, states, self.load)
                .bottleneck_rate
                .expect("rates are given");
            // No clustering beats the need-th largest rate of a column.
            let need = l + 1 - self.load;
            let mut ceiling = f64::INFINITY;
            for c in 0..p {
                self.sorted.clear();
                self.sorted
                    .extend(a.column(c).iter().map(|&w| self.keys[w]));
                self.sorted.sort_unstable_by(|x, y| y.total_cmp(x));
                ceiling = ceiling.min(self.sorted[need - 1]);
            }
            self.sorted.clear();
            self.sorted.extend(
                self.keys
                    .iter()
                    .copied()
                    .filter(|&x| x >= start && x <= ceiling),
            );
            self.sorted.sort_unstable_by(f64::total_cmp);
            self.sorted.dedup();
            let sorted = std::mem::take(&mut self.sorted);
            // sorted[0] == start is feasible (the greedy reaches it).
            let (mut lo, mut up) = (0, sorted.len() - 1);
            while lo < up {
                let mid = (lo + up).div_ceil(2);
                if self.feasible_at(a, sorted[mid]) {
                    lo = mid;
                    hi = self.found_max;
                } else {
                    up = mid - 1;
                }
            }
            threshold = Some(sorted[lo]);
            self.sorted = sorted;
        }

        // The least-cost flow: the smallest profile (at the bottleneck t*).
        let straggler = std::mem::take(&mut self.straggler);
        let keys = std::mem::take(&mut self.keys);
        let (source, sink) = match threshold {
            None => self.build(
                a,
                |w| if straggler[w] { Entry::X } else { Entry::C },
                (0, Some(hi)),
                (l, None),
            ),
            Some(t) if states.threshold <= t => {
                // Stragglers ⊆ slow: stragglers at X, the other slow at Y.
                self.build(
                    a,
                    |w| {
                        if straggler[w] {
                            Entry::X
                        } else if keys[w] < t {
                            Entry::Y
                        } else {
                            Entry::C
                        }
                    },
                    (0, Some(hi)),
                    (self.load - 1, None),
                )
            }
            Some(t) => {
                // Slow ⊆ stragglers: slow at X, the other stragglers at Y.
                self.build(
                    a,
                    |w| {
                        if keys[w] < t {
                            Entry::X
                        } else if straggler[w] {
                            Entry::Y
                        } else {
                            Entry::C
                        }
                    },
                    (self.load - 1, None),
                    (0, Some(hi)),
                )
            }
        };
        self.straggler = straggler;
        self.keys = keys;
        let zero = self.net.max_flow_at_zero_cost(source, sink);
        let flow = zero + self.net.augment_cheapest(source, sink, k - zero);
        assert_eq!(
            flow, k,
            "a clustering with at most {hi} stragglers per cluster exists"
        );
        self.read_members(p);

        out.members.resize_with(p, Vec::new);
        out.members.truncate(p);
        for (dst, src) in out.members.iter_mut().zip(&self.members) {
            dst.clone_from(src);
            dst.sort_unstable();
        }
        out.cluster_of.clear();
        out.cluster_of.resize(k, usize::MAX);
        for (c, m) in out.members.iter().enumerate() {
            for &w in m {
                out.cluster_of[w] = c;
            }
        }
        out.placements.clear();
        out.placements.extend((0..k).map(|w| Placement {
            cluster: out.cluster_of[w],
            straggler: self.straggler[w],
            phase_one: None,
            how: How::Optimal,
        }));
        out.conflicts.clear();
        out.phases.clear();
        debug_assert_eq!(out.validate(a), Ok(()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_costs_are_convex_and_capped_to_fit() {
        assert_eq!(level_costs(4, 30, 4), vec![0, 4, 24, 124]);
        // P = 2, 100 levels: 3^99 does not fit, the lowest levels cost 0 and
        // the top ones keep their ratios.
        let c = level_costs(2, 500, 100);
        assert_eq!(c.len(), 100);
        assert!(c.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(c[0], 0);
        assert!(c[99] > 0 && c[99] <= i128::MAX / (500 * 500));
        assert_eq!(c[99] + 1, 3 * (c[98] + 1));
    }

    #[test]
    fn the_profile_weights_are_exact_where_the_docs_say() {
        // K = 200: nodes = K + 3P + 2; every level 1..=l gets a distinct weight.
        for p in [5, 8, 10, 20, 25, 40, 50, 100, 200] {
            let l = 200 / p;
            let c = level_costs(p, 200 + 3 * p + 2, l);
            assert!(c[1..].iter().all(|&x| x > 0), "P = {p}");
        }
        let c = level_costs(2, 208, 71);
        assert!(c[1..].iter().all(|&x| x > 0));
        let c = level_costs(2, 208, 72);
        assert_eq!(c[1], 0, "P = 2: level 72 no longer fits");
    }

    #[test]
    fn a_load_of_zero_is_refused_naming_the_key() {
        let e = OptimalClustering::new(0).unwrap_err();
        assert_eq!(e.to_string(), "scheme.load = 0 must be at least 1");
    }
}
