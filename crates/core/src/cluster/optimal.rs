//! The optimal dynamic clustering: the policy `optimal`, beyond 000.
//!
//! 000 §VII leaves an optimal clustering policy as future work; the greedy
//! of §V ([`super::GreedyClustering`]) only aims at an even spread of the
//! stragglers. This policy chooses, among **all** clusterings valid for
//! A_cluster (every worker in one of its n clusters, every cluster exactly
//! l workers), one that is best for an objective the master can evaluate
//! from what it knows ([`ClusteringScore`]). A *profile* of a class of
//! workers is its count per cluster, sorted decreasingly; a smaller one
//! (lexicographically) has first the fewest of the class in one cluster,
//! then the fewest clusters with that many, then the next largest count, ...
//!
//! - **Straggler flags:** the straggler profile is made smallest.
//! - **Estimated rates** (§VI-B), in this order:
//!   1. the *bottleneck rate* t is made as large as possible: the smallest
//!      over clusters of the cluster's (l − r + 1)-th largest rate, the rate
//!      of the slowest worker a cluster must wait for when its fastest
//!      l − r + 1 are the ones that report;
//!   2. the straggler profile is made smallest, a straggler being a worker
//!      whose rate is below tau (`scheme.straggler_threshold`);
//!   3. then the profile of the workers whose rate is below t;
//!   4. then the profile of the workers whose rate is at most t.
//!
//! Levels 3 and 4 spread the slow workers when the bottleneck ties and tau
//! does not tell them apart. Two rates, 5 slow workers over 4 clusters of
//! 3 at r = 2: some cluster must hold 2 slow workers, so t is the slow rate
//! for every clustering; with the slow rate >= tau nobody straggles, and
//! without level 4 a cluster with 3 slow workers was as good as 2-1-1-1.
//! With rates that take two values (a Gilbert-Elliott state), levels 1-4
//! give the smallest profile of the slow workers whatever tau is
//! (`crates/core/tests/optimal.rs`).
//!
//! Not used: the sorted vector of per-cluster bottleneck rates (the worst
//! cluster's, then the second-worst's, ...). It leaves that example tied
//! (a cluster with 3 slow workers and one with 2 both have the slow rate as
//! their bottleneck; `crates/core/tests/optimal.rs`), and maximising it is NP-hard: at
//! r = 1, l = 3, n = 2, with one slow and one fast worker per edge of a
//! cubic graph whose vertices are the clusters (a worker may join the two
//! clusters at its edge's ends), the clusters holding a slow worker form a
//! vertex cover, and any vertex cover holds them for some clustering (put
//! each slow worker at an end in the cover, each fast worker at the other
//! end of its edge: 3 per cluster), so the most clusters at the fast rate
//! is P minus a minimum vertex cover. Counts per cluster with convex
//! costs, as below, are what a least-cost flow minimises exactly.
//!
//! # Why it is exact
//!
//! A valid clustering is exactly an integral flow of value K in a network
//! source → worker (capacity 1) → a node of each of the worker's clusters →
//! cluster node → sink (capacity l): unit edges out of the source put every
//! worker in one cluster of its column, and K = P·l units through P edges of
//! capacity l fill every cluster to exactly l. Per cluster p the network has
//! a chain of nodes ending at its cluster node; for nested classes of
//! workers (each contained in the next), a worker enters the chain of each
//! of its clusters at the node after the links of the classes it is not in,
//! so that link i counts the members of p in class i.
//!
//! 1. **Bottleneck (rates).** Let need = l − r + 1 and call a worker *slow
//!    at t* when its rate is below t (a NaN rate is −∞). A clustering's
//!    bottleneck is >= t iff every cluster has at least need workers with
//!    rate >= t, iff every cluster has at most r − 1 workers slow at t, iff
//!    the network where the slow workers enter first and that link has
//!    capacity r − 1 has a flow of value K (integral flows are clusterings).
//!    Feasibility is monotone (a smaller t makes fewer workers slow) and the
//!    optimum is one of the K rates, so a binary search over the sorted
//!    distinct rates, from the greedy's bottleneck (feasible) up, with one
//!    maximum flow per step, finds the optimum t* exactly.
//! 2. **Profile.** The count of a class in cluster p, s_p, flows through
//!    one chain link; that link is split into unit edges of level j = 1, 2,
//!    ..., hi with cost c_j = M^(j−1) − 1, M = P + 1 (convex: increasing in
//!    j), so a least-cost flow pays g(s) = (M^s − 1)/(M − 1) − s for a
//!    cluster with s of the class. The −s terms add up to minus the class
//!    size whatever the clustering; and if profile a is lexicographically
//!    smaller than b (sorted decreasingly, first difference at index i,
//!    a_i < b_i = β), the clusters from index i on cost at most
//!    (P − i)·G(β − 1) < M·G(β − 1) < G(β) under a and at least G(β) under
//!    b (G(s) = (M^s − 1)/(M − 1), G(β) = M·G(β − 1) + 1), while the
//!    clusters before i cost the same. So the cost orders clusterings as the
//!    profile does, and the least-cost flow has the smallest profile.
//! 3. **Several profiles (rates).** The classes of levels 2-4 (rate below
//!    tau, below t*, at most t*) are nested, being thresholds on the same
//!    rates, so they share one chain, sorted by inclusion; the link of
//!    "below t*" has r − 1 units (level 1's cap), so every flow keeps the
//!    bottleneck t*. Each class's levels cost in its own component of a
//!    cost vector compared lexicographically, straggler component first;
//!    successive shortest paths is exact for such costs too (it only adds,
//!    negates and compares them; `crates/core/src/cluster/flow.rs`). So the
//!    least-cost flow minimises the straggler cost, then the cost below t*
//!    among those, then the cost at most t*: by 2., the profiles in that
//!    order, among the clusterings with bottleneck t*. A class equal to an
//!    earlier one, empty, or of every worker ties for all clusterings and
//!    gets no costs.
//!
//! The levels of a class go up to hi, a bound on its count in one cluster
//! for every clustering that can win: for stragglers, the most in one
//! cluster of a clustering known to be feasible (the greedy's, or with
//! rates the one found at t*), for "below t*" r − 1, for "at most t*"
//! r − 1 plus the workers whose rate is t*. A least-cost flow is found by a
//! zero-cost maximum flow (Dinic) followed by successive shortest paths:
//! the flow stays least-cost for its value after each augmentation. The
//! three components are folded into one `i128` when they fit (a
//! component's total is below K·c_hi + 1, so weights that are products of
//! the later components' bounds keep the order; with the straggler costs
//! alone the weight is 1, the network of before levels 3-4), else compared
//! as a vector; a unit test checks that both reach the same optimum.
//!
//! # Limits
//!
//! Those of [`Assignment`] and 1 <= r <= l. The costs are `i128` (with
//! rates, a vector of three): a profile is exact while (P + 1)^(hi − 1) ·
//! (K + 4P + 2)^2 fits in one, which at K = 200 holds for every hi <= l
//! when P >= 5, and up to hi = 71 at P = 2 (a unit test checks both).
//! Beyond that only the top levels that fit get weights (the largest count
//! and the clusters at it still come first); the lower ones are left to the
//! flow. The bottleneck, the largest counts and validity are exact always.
//!
//! # Cost
//!
//! One greedy run, with rates at most log2(K) + 1 maximum flows (over the
//! rates between the greedy's bottleneck and the smallest over columns of
//! the column's (l − r + 1)-th largest rate, a bound no clustering beats),
//! and one least-cost flow: under 50 µs at K = 20 and under 5 ms at K = 200,
//! for flags and rates (`benches/clustering.rs`; figures in
//! docs/performance.md).

use std::cmp::Ordering;

use super::flow::{FlowCost, FlowNetwork, Lex};
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
    /// With rates: workers whose rate is below the bottleneck rate, per
    /// cluster, largest first; `None` with straggler flags.
    pub below_bottleneck: Option<Vec<usize>>,
    /// With rates: workers whose rate is at most the bottleneck rate, per
    /// cluster, largest first; `None` with straggler flags.
    pub at_or_below_bottleneck: Option<Vec<usize>>,
}

/// Members of each cluster for which `class` holds, largest count first.
fn class_profile(members: &[Vec<usize>], class: impl Fn(usize) -> bool) -> Vec<usize> {
    let mut profile: Vec<usize> = members
        .iter()
        .map(|m| m.iter().filter(|&&w| class(w)).count())
        .collect();
    profile.sort_unstable_by(|a, b| b.cmp(a));
    profile
}

impl ClusteringScore {
    /// Score the clusters `members` for `states` with load `load` (r).
    ///
    /// # Panics
    ///
    /// When a cluster has fewer than l − r + 1 members or `load` is 0.
    pub fn of(members: &[Vec<usize>], states: &WorkerStates<'_>, load: usize) -> Self {
        let profile = class_profile(members, |w| states.is_straggler(w));
        let key = |w: usize| states.rate(w).expect("rates are given");
        let bottleneck_rate = states.rates.map(|_| {
            let mut keys = Vec::new();
            members
                .iter()
                .map(|m| {
                    let need = m.len() + 1 - load;
                    keys.clear();
                    keys.extend(m.iter().map(|&w| key(w)));
                    keys.sort_unstable_by(|a, b| b.total_cmp(a));
                    keys[need - 1]
                })
                .fold(f64::INFINITY, f64::min)
        });
        let below_bottleneck = bottleneck_rate.map(|b| class_profile(members, |w| key(w) < b));
        let at_or_below_bottleneck =
            bottleneck_rate.map(|b| class_profile(members, |w| key(w) <= b));
        Self {
            profile,
            bottleneck_rate,
            below_bottleneck,
            at_or_below_bottleneck,
        }
    }

    /// The most stragglers in one cluster.
    pub fn max_stragglers(&self) -> usize {
        self.profile.first().copied().unwrap_or(0)
    }

    /// `Less` when `self` is better: a larger bottleneck rate, then a
    /// lexicographically smaller straggler profile, then (with rates, at
    /// equal bottleneck) a lexicographically smaller profile of the workers
    /// below the bottleneck rate, then of those at or below it.
    pub fn cmp_objective(&self, other: &Self) -> Ordering {
        let by_rate = match (self.bottleneck_rate, other.bottleneck_rate) {
            (Some(a), Some(b)) => b.total_cmp(&a),
            _ => Ordering::Equal,
        };
        by_rate
            .then_with(|| self.profile.cmp(&other.profile))
            .then_with(|| self.below_bottleneck.cmp(&other.below_bottleneck))
            .then_with(|| {
                self.at_or_below_bottleneck
                    .cmp(&other.at_or_below_bottleneck)
            })
    }
}

/// The edges from one node of a cluster's chain to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Link {
    /// One edge of this capacity, at cost 0.
    Plain(usize),
    /// `hi` unit edges, level j at cost c_j (module docs) in cost
    /// component `component`.
    Levels { hi: usize, component: usize },
}

/// Who belongs to a class of the least-cost flow with rates.
#[derive(Debug, Clone, Copy)]
enum Member {
    /// The stragglers (rate < tau, or NaN).
    Straggler,
    /// The workers whose rate (NaN as −∞) is below this.
    RateBelow(f64),
}

/// A class of the least-cost flow with rates, its link, and how it sorts
/// among the nested classes (by size, then by threshold).
#[derive(Debug, Clone, Copy)]
struct Class {
    size: usize,
    threshold: f64,
    member: Member,
    link: Link,
}

/// The policy `optimal` (see the module docs).
#[derive(Debug, Clone)]
pub struct OptimalClustering {
    load: usize,
    greedy: GreedyClustering,
    start: Clustering,
    /// The bottleneck tests, and the least-cost flow with straggler flags.
    net: FlowNetwork,
    /// The least-cost flow with rates when its three cost components
    /// (straggler profile, then the profiles below and at most at the
    /// bottleneck) do not fold into one `i128`.
    lex: FlowNetwork<Lex<3>>,
    /// Compare the cost components as a vector even where they fold (for
    /// the test that both give the same optimum).
    vector_costs: bool,
    straggler: Vec<bool>,
    keys: Vec<f64>,
    sorted: Vec<f64>,
    /// Per worker: the node of its clusters' chains where it enters.
    entry: Vec<usize>,
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
            lex: FlowNetwork::default(),
            vector_costs: false,
            straggler: Vec::new(),
            keys: Vec::new(),
            sorted: Vec::new(),
            entry: Vec::new(),
            worker_edges: Vec::new(),
            members: Vec::new(),
            found_max: 0,
        })
    }

    /// r.
    pub fn load(&self) -> usize {
        self.load
    }

    /// Whether some valid clustering has bottleneck >= t; if so it is left
    /// in `self.members` and its most stragglers in one cluster in `found_max`.
    fn feasible_at(&mut self, a: &Assignment, t: f64) -> bool {
        let (k, p, l) = (a.workers(), a.clusters(), a.size());
        self.entry.clear();
        self.entry
            .extend(self.keys.iter().map(|&x| if x < t { 0 } else { 2 }));
        let links = [Link::Plain(self.load - 1), Link::Plain(l)];
        let (source, sink) = build(
            &mut self.net,
            &mut self.worker_edges,
            a,
            &self.entry,
            &links,
            |_, cost| cost,
        );
        if self.net.max_flow_at_zero_cost(source, sink) != k {
            return false;
        }
        read_members(&mut self.members, &self.worker_edges, &self.net, p);
        self.found_max = self
            .members
            .iter()
            .map(|m| m.iter().filter(|&&w| self.straggler[w]).count())
            .max()
            .unwrap_or(0);
        true
    }

    /// The largest feasible bottleneck t*, from the greedy's up (binary
    /// search over the rates, one maximum flow per step); updates `hi`.
    fn best_bottleneck(
        &mut self,
        a: &Assignment,
        states: &WorkerStates<'_>,
        hi: &mut usize,
    ) -> f64 {
        let (k, p, l) = (a.workers(), a.clusters(), a.size());
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
                *hi = self.found_max;
            } else {
                up = mid - 1;
            }
        }
        let t = sorted[lo];
        self.sorted = sorted;
        t
    }

    /// With rates: the least-cost flow over the nested classes stragglers
    /// (rate < tau), below the bottleneck t* (at most r − 1 per cluster) and
    /// at or below t*, into `self.members`; `hi` bounds the stragglers per
    /// cluster of some clustering with bottleneck t*.
    fn least_cost_with_rates(&mut self, a: &Assignment, tau: f64, t: f64, hi: usize) {
        let (k, p, l) = (a.workers(), a.clusters(), a.size());
        let above = self
            .keys
            .iter()
            .copied()
            .filter(|&x| x > t)
            .min_by(f64::total_cmp)
            .unwrap_or(f64::INFINITY);
        let stragglers = self.straggler.iter().filter(|&&s| s).count();
        let below = self.keys.iter().filter(|&&x| x < t).count();
        let at_or_below = self.keys.iter().filter(|&&x| x < above).count();
        // Nested classes of equal size are equal: a class equal to one before
        // it in the objective, or empty, or everybody, gets no costs.
        let below_levels = below > 0 && below != stragglers;
        let mut classes = [
            Class {
                size: stragglers,
                threshold: tau,
                member: Member::Straggler,
                link: Link::Levels { hi, component: 0 },
            },
            Class {
                size: below,
                threshold: t,
                member: Member::RateBelow(t),
                link: if below_levels {
                    Link::Levels {
                        hi: self.load - 1,
                        component: 1,
                    }
                } else {
                    Link::Plain(self.load - 1)
                },
            },
            Class {
                size: at_or_below,
                threshold: above,
                member: Member::RateBelow(above),
                link: Link::Levels {
                    hi: l.min(self.load - 1 + at_or_below - below),
                    component: 2,
                },
            },
        ];
        let used = if at_or_below < k && at_or_below != stragglers {
            3
        } else {
            2
        };
        let classes = &mut classes[..used];
        // Stable: on a tie the straggler class comes first.
        classes.sort_by(|x, y| {
            x.size
                .cmp(&y.size)
                .then(x.threshold.total_cmp(&y.threshold))
        });
        self.entry.clear();
        for w in 0..k {
            let outside = classes
                .iter()
                .filter(|c| match c.member {
                    Member::Straggler => !self.straggler[w],
                    Member::RateBelow(b) => self.keys[w] >= b,
                })
                .count();
            self.entry.push(outside);
        }
        let mut links = [Link::Plain(0); 3];
        for (link, class) in links.iter_mut().zip(classes.iter()) {
            *link = class.link;
        }
        let links = &links[..used];
        // The components folded into one i128 where they fit (the same
        // order, faster), else compared as a vector. With the straggler
        // costs only, the weight is 1: the network and flow of before levels
        // 3-4 existed.
        let nodes = node_count(a, links.len());
        let folded = folded_weights(links, k, p, nodes).filter(|_| !self.vector_costs);
        let flow = match folded {
            Some(weight) => {
                let (source, sink) = build(
                    &mut self.net,
                    &mut self.worker_edges,
                    a,
                    &self.entry,
                    links,
                    |component, cost| cost * weight[component],
                );
                let zero = self.net.max_flow_at_zero_cost(source, sink);
                let more = self.net.augment_cheapest(source, sink, k - zero);
                read_members(&mut self.members, &self.worker_edges, &self.net, p);
                zero + more
            }
            None => {
                let (source, sink) = build(
                    &mut self.lex,
                    &mut self.worker_edges,
                    a,
                    &self.entry,
                    links,
                    Lex::component,
                );
                let zero = self.lex.max_flow_at_zero_cost(source, sink);
                let more = self.lex.augment_cheapest(source, sink, k - zero);
                read_members(&mut self.members, &self.worker_edges, &self.lex, p);
                zero + more
            }
        };
        assert_eq!(
            flow, k,
            "a clustering with bottleneck {t} and at most {hi} stragglers per cluster exists"
        );
    }

    /// With straggler flags: the least-cost flow, into `self.members`.
    fn least_cost_with_flags(&mut self, a: &Assignment, hi: usize) {
        let (k, p, l) = (a.workers(), a.clusters(), a.size());
        self.entry.clear();
        self.entry
            .extend(self.straggler.iter().map(|&s| if s { 0 } else { 2 }));
        let links = [Link::Levels { hi, component: 0 }, Link::Plain(l)];
        let (source, sink) = build(
            &mut self.net,
            &mut self.worker_edges,
            a,
            &self.entry,
            &links,
            |_, cost| cost,
        );
        let zero = self.net.max_flow_at_zero_cost(source, sink);
        let flow = zero + self.net.augment_cheapest(source, sink, k - zero);
        assert_eq!(
            flow, k,
            "a clustering with at most {hi} stragglers per cluster exists"
        );
        read_members(&mut self.members, &self.worker_edges, &self.net, p);
    }
}

/// Build the chain network into `net`: every cluster has a chain of
/// `links.len() + 1` nodes, the last its cluster node (→ sink, capacity
/// l), link i joining nodes i and i + 1; worker w enters the chain of each
/// of its clusters at node `entry[w]`.
fn build<C: FlowCost>(
    net: &mut FlowNetwork<C>,
    worker_edges: &mut Vec<(usize, usize, usize)>,
    a: &Assignment,
    entry: &[usize],
    links: &[Link],
    cost_of: impl Fn(usize, i128) -> C,
) -> (usize, usize) {
    let (k, p, l) = (a.workers(), a.clusters(), a.size());
    let chain = links.len() + 1;
    let nodes = node_count(a, links.len());
    let (source, sink) = (0, nodes - 1);
    let node = |c: usize, i: usize| 1 + k + chain * c + i;
    net.reset(nodes);
    worker_edges.clear();
    assert_eq!(entry.len(), k, "one entry node per worker");
    for (w, &at) in entry.iter().enumerate() {
        net.add(source, 1 + w, 1, C::ZERO);
        for &c in a.clusters_of(w) {
            let e = net.add(1 + w, node(c, at), 1, C::ZERO);
            worker_edges.push((w, c, e));
        }
    }
    let weights: Vec<Vec<i128>> = links
        .iter()
        .map(|link| match *link {
            Link::Levels { hi, .. } => level_costs(p, nodes, hi),
            Link::Plain(_) => Vec::new(),
        })
        .collect();
    for c in 0..p {
        for (i, link) in links.iter().enumerate() {
            let from = node(c, i);
            match *link {
                Link::Plain(capacity) => {
                    net.add(from, from + 1, capacity, C::ZERO);
                }
                Link::Levels { component, .. } => {
                    for &cost in &weights[i] {
                        net.add(from, from + 1, 1, cost_of(component, cost));
                    }
                }
            }
        }
        net.add(node(c, links.len()), sink, l, C::ZERO);
    }
    (source, sink)
}

/// Nodes of the chain network with `links` links per cluster: source,
/// workers, P chains of `links + 1` nodes, sink.
fn node_count(a: &Assignment, links: usize) -> usize {
    2 + a.workers() + (links + 1) * a.clusters()
}

/// Weights that fold the cost components of `links` into one `i128`
/// exactly (each component's total times its weight stays below the next
/// component's weight, and every path cost fits), when they exist.
///
/// A component's total over a flow is below K·c_hi + 1, c_hi its top level
/// cost (every worker crosses at most one level edge of a link).
fn folded_weights(links: &[Link], k: usize, p: usize, nodes: usize) -> Option<[i128; 3]> {
    let mut bound = [1i128; 3];
    for link in links {
        if let Link::Levels { hi, component } = *link {
            let top = level_costs(p, nodes, hi).last().copied().unwrap_or(0);
            bound[component] = top.checked_mul(k as i128)?.checked_add(1)?;
        }
    }
    let room = i128::MAX / (nodes as i128 * nodes as i128).max(1);
    let product = bound[0].checked_mul(bound[1])?.checked_mul(bound[2])?;
    (product <= room).then_some([bound[1] * bound[2], bound[2], 1])
}

/// Read the clustering off the flow of `net` into `members`.
fn read_members<C: FlowCost>(
    members: &mut Vec<Vec<usize>>,
    worker_edges: &[(usize, usize, usize)],
    net: &FlowNetwork<C>,
    p: usize,
) {
    members.resize_with(p, Vec::new);
    members.iter_mut().for_each(Vec::clear);
    for &(w, c, e) in worker_edges {
        if net.flow(e) == 1 {
            members[c].push(w);
        }
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
        let (k, p) = (a.workers(), a.clusters());
        assert!(
            self.load <= a.size(),
            "scheme.load = {} exceeds the cluster size {}",
            self.load,
            a.size()
        );
        states.check_len(k);
        self.straggler.clear();
        self.straggler
            .extend((0..k).map(|w| states.is_straggler(w)));
        self.greedy.cluster(a, states, &mut self.start);
        let mut hi = self.start.max_stragglers();
        if states.rates.is_some() {
            let t = self.best_bottleneck(a, states, &mut hi);
            self.least_cost_with_rates(a, states.threshold, t, hi);
        } else {
            self.least_cost_with_flags(a, hi);
        }

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
        // K = 200: at most K + 4P + 2 nodes (with rates, four chain nodes
        // per cluster); every level 1..=l gets a distinct weight.
        for p in [5, 8, 10, 20, 25, 40, 50, 100, 200] {
            let l = 200 / p;
            let c = level_costs(p, 200 + 4 * p + 2, l);
            assert!(c[1..].iter().all(|&x| x > 0), "P = {p}");
        }
        let c = level_costs(2, 210, 71);
        assert!(c[1..].iter().all(|&x| x > 0));
        let c = level_costs(2, 210, 72);
        assert_eq!(c[1], 0, "P = 2: level 72 no longer fits");
    }

    #[test]
    fn folded_and_vector_costs_reach_the_same_optimum() {
        // The rates' three cost components folded into one i128 (where they
        // fit, as in every brute-force test) or compared as a vector (beyond):
        // the same objective on random states with few distinct rates.
        use crate::rng::{Stream, stream};
        use rand::RngExt;
        let mut rng = stream(11, Stream::CheckSampling);
        let (mut folded, mut vector) = (Clustering::default(), Clustering::default());
        let mut tie_breaks = 0;
        for (k, p, n) in [(12, 4, 2), (20, 5, 3), (40, 8, 3), (60, 4, 2)] {
            let a = Assignment::circular_shifts(k, p, n, &mut stream(3, Stream::ClusterShifts))
                .unwrap();
            for load in 1..=a.size().min(4) {
                let mut by_folding = OptimalClustering::new(load).unwrap();
                let mut by_vector = OptimalClustering::new(load).unwrap();
                by_vector.vector_costs = true;
                for _ in 0..40 {
                    let rates: Vec<f64> = (0..k)
                        .map(|_| f64::from(rng.random_range(1..5u8)))
                        .collect();
                    let states = WorkerStates::rates(&rates, 0.5);
                    by_folding.cluster(&a, &states, &mut folded);
                    by_vector.cluster(&a, &states, &mut vector);
                    assert_eq!(vector.validate(&a), Ok(()));
                    let f = ClusteringScore::of(&folded.members, &states, load);
                    let v = ClusteringScore::of(&vector.members, &states, load);
                    assert_eq!(f.cmp_objective(&v), Ordering::Equal, "K={k} r={load}");
                    tie_breaks += usize::from(
                        f.below_bottleneck.as_ref().is_some_and(|b| b[0] > 0)
                            || f.at_or_below_bottleneck.as_ref().is_some_and(|b| b[0] > 1),
                    );
                }
            }
        }
        assert!(tie_breaks > 100, "{tie_breaks}");
    }

    #[test]
    fn costs_fold_into_one_i128_only_where_they_fit() {
        let levels = |hi, component| Link::Levels { hi, component };
        // Straggler costs only: weight 1, the costs of before levels 3-4.
        assert_eq!(
            folded_weights(&[levels(3, 0), Link::Plain(2)], 12, 4, 30),
            Some([1, 1, 1])
        );
        // K = 12, P = 4 (M = 5): component totals below 12·24 + 1, 12·4 + 1, 12·4 + 1.
        let w = folded_weights(&[levels(3, 0), levels(2, 1), levels(2, 2)], 12, 4, 30);
        assert_eq!(w, Some([49 * 49, 49, 1]));
        // P = 2, 100 straggler levels: the top cost alone fills the room.
        assert_eq!(
            folded_weights(&[levels(100, 0), levels(2, 1)], 200, 2, 210),
            None
        );
    }

    #[test]
    fn a_load_of_zero_is_refused_naming_the_key() {
        let e = OptimalClustering::new(0).unwrap_err();
        assert_eq!(e.to_string(), "scheme.load = 0 must be at least 1");
    }
}
