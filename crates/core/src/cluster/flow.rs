//! A small flow network with reusable buffers: Dinic's maximum flow over the
//! zero-cost edges (after a quick start along direct paths), and successive
//! shortest paths (queue-based Bellman-Ford) for a minimum-cost flow. Used by [`super::OptimalClustering`] once or a
//! few times per iteration, so nothing is allocated once the buffers are warm.
//!
//! Capacities are unit counts (`usize`). Costs are `i128` (the lexicographic
//! weights of the optimal clustering grow like (P + 1)^level) or [`Lex`]
//! vectors of them compared lexicographically: the algorithms only add,
//! negate and compare costs, and the proofs that successive shortest paths
//! end at a least-cost flow (a flow is least-cost iff its residual network
//! has no negative cycle; augmenting along a cheapest path creates none) use
//! nothing else, so they hold in any totally ordered abelian group. With
//! [`Lex`] costs the flow found minimises the first component, then the
//! second among those, and so on.

use std::collections::VecDeque;
use std::fmt::Debug;
use std::ops::{Add, Neg};

const UNSEEN: u32 = u32::MAX;

/// A cost: a totally ordered abelian group (`+`, `-x`, `<` compatible with `+`).
pub(crate) trait FlowCost:
    Copy + Ord + Debug + Add<Output = Self> + Neg<Output = Self>
{
    const ZERO: Self;
    /// `value` in component `index` (0 for a scalar), 0 elsewhere.
    fn component(index: usize, value: i128) -> Self;
}

impl FlowCost for i128 {
    const ZERO: Self = 0;

    fn component(index: usize, value: i128) -> Self {
        assert_eq!(index, 0, "a scalar cost has one component");
        value
    }
}

/// N costs ordered lexicographically, component 0 first. (Compared by
/// hand: the derived comparisons of `[i128; N]` call `memcmp`, a tenth of
/// the optimal clustering's time.)
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lex<const N: usize>(pub [i128; N]);

impl<const N: usize> PartialEq for Lex<N> {
    fn eq(&self, other: &Self) -> bool {
        (0..N).all(|i| self.0[i] == other.0[i])
    }
}

impl<const N: usize> Eq for Lex<N> {}

impl<const N: usize> Ord for Lex<N> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        for i in 0..N {
            match self.0[i].cmp(&other.0[i]) {
                std::cmp::Ordering::Equal => {}
                unequal => return unequal,
            }
        }
        std::cmp::Ordering::Equal
    }
}

impl<const N: usize> PartialOrd for Lex<N> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<const N: usize> Default for Lex<N> {
    fn default() -> Self {
        Self::ZERO
    }
}

impl<const N: usize> Add for Lex<N> {
    type Output = Self;

    fn add(self, other: Self) -> Self {
        Lex(std::array::from_fn(|i| self.0[i] + other.0[i]))
    }
}

impl<const N: usize> Neg for Lex<N> {
    type Output = Self;

    fn neg(self) -> Self {
        Lex(self.0.map(|x| -x))
    }
}

impl<const N: usize> FlowCost for Lex<N> {
    const ZERO: Self = Lex([0; N]);

    fn component(index: usize, value: i128) -> Self {
        let mut c = [0; N];
        c[index] = value;
        Lex(c)
    }
}

#[derive(Debug, Clone, Default)]
pub(crate) struct FlowNetwork<C = i128> {
    /// Per node: ids of its outgoing residual edges.
    adjacent: Vec<Vec<usize>>,
    /// Edge i and i ^ 1 are a pair (forward, reverse).
    to: Vec<usize>,
    residual: Vec<usize>,
    capacity: Vec<usize>,
    cost: Vec<C>,
    level: Vec<u32>,
    next_edge: Vec<usize>,
    queue: VecDeque<usize>,
    /// Node potentials: 0 for the zero-cost flow, else cheapest-path distances.
    potential: Vec<C>,
    /// Per node: whether its potential is set (reachable).
    reached: Vec<bool>,
    queued: Vec<bool>,
    /// Per node: the edge a cheapest path reached it by.
    via: Vec<usize>,
}

impl<C: FlowCost> FlowNetwork<C> {
    /// Forget every edge; `nodes` nodes numbered from 0.
    pub(crate) fn reset(&mut self, nodes: usize) {
        self.adjacent.iter_mut().for_each(Vec::clear);
        self.adjacent.resize_with(nodes, Vec::new);
        self.adjacent.truncate(nodes);
        self.to.clear();
        self.residual.clear();
        self.capacity.clear();
        self.cost.clear();
    }

    /// An edge `from → to` of `capacity` units at `cost` per unit; its id.
    pub(crate) fn add(&mut self, from: usize, to: usize, capacity: usize, cost: C) -> usize {
        let id = self.to.len();
        self.adjacent[from].push(id);
        self.to.push(to);
        self.residual.push(capacity);
        self.capacity.push(capacity);
        self.cost.push(cost);
        self.adjacent[to].push(id + 1);
        self.to.push(from);
        self.residual.push(0);
        self.capacity.push(0);
        self.cost.push(-cost);
        id
    }

    /// Units of flow on edge `id` (as returned by [`Self::add`]).
    pub(crate) fn flow(&self, id: usize) -> usize {
        self.capacity[id] - self.residual[id]
    }

    /// Push as much flow as possible from `source` to `sink` along residual
    /// edges of cost 0; returns the units pushed. On a network whose costs
    /// are all 0 this is its maximum flow; in general it is a flow of cost 0,
    /// hence of least cost for its value while every cost is >= 0.
    pub(crate) fn max_flow_at_zero_cost(&mut self, source: usize, sink: usize) -> usize {
        self.potential.clear();
        self.potential.resize(self.adjacent.len(), C::ZERO);
        self.reached.clear();
        self.reached.resize(self.adjacent.len(), true);
        let direct = self.direct_paths(source, sink);
        direct + self.admissible_flow(source, sink, usize::MAX)
    }

    /// Whether residual edge `e` from `u` has reduced cost 0 under the
    /// potentials (both ends reachable).
    fn admissible(&self, e: usize, u: usize) -> bool {
        let v = self.to[e];
        self.residual[e] > 0
            && self.reached[u]
            && self.reached[v]
            && self.potential[u] + self.cost[e] == self.potential[v]
    }

    /// A quick start: for every unit edge out of the source, one path of
    /// admissible *forward* edges to the sink if there is one (forward edges
    /// lead from the source towards the sink, so the search is short).
    fn direct_paths(&mut self, source: usize, sink: usize) -> usize {
        let mut pushed = 0;
        for i in 0..self.adjacent[source].len() {
            let e = self.adjacent[source][i];
            if e % 2 == 0 && self.admissible(e, source) && self.forward_path(self.to[e], sink) {
                self.residual[e] -= 1;
                self.residual[e ^ 1] += 1;
                pushed += 1;
            }
        }
        pushed
    }

    /// One unit from `u` to `sink` along admissible forward edges (DFS).
    fn forward_path(&mut self, u: usize, sink: usize) -> bool {
        if u == sink {
            return true;
        }
        for i in 0..self.adjacent[u].len() {
            let e = self.adjacent[u][i];
            if e % 2 == 0 && self.admissible(e, u) && self.forward_path(self.to[e], sink) {
                self.residual[e] -= 1;
                self.residual[e ^ 1] += 1;
                return true;
            }
        }
        false
    }

    /// Dinic's blocking flows on the admissible edges (reduced cost 0 under
    /// the potentials), up to `limit` units; returns the units pushed.
    fn admissible_flow(&mut self, source: usize, sink: usize, limit: usize) -> usize {
        let n = self.adjacent.len();
        let mut total = 0;
        while total < limit {
            self.level.clear();
            self.level.resize(n, UNSEEN);
            self.queue.clear();
            self.level[source] = 0;
            self.queue.push_back(source);
            while let Some(u) = self.queue.pop_front() {
                for i in 0..self.adjacent[u].len() {
                    let e = self.adjacent[u][i];
                    let v = self.to[e];
                    if self.level[v] == UNSEEN && self.admissible(e, u) {
                        self.level[v] = self.level[u] + 1;
                        self.queue.push_back(v);
                    }
                }
            }
            if self.level[sink] == UNSEEN {
                return total;
            }
            self.next_edge.clear();
            self.next_edge.resize(n, 0);
            while total < limit {
                let pushed = self.blocking_path(source, sink, limit - total);
                if pushed == 0 {
                    break;
                }
                total += pushed;
            }
        }
        total
    }

    /// One augmenting path of the level graph (depth-first, with the
    /// current-edge pointers of Dinic's algorithm).
    fn blocking_path(&mut self, u: usize, sink: usize, limit: usize) -> usize {
        if u == sink {
            return limit;
        }
        while self.next_edge[u] < self.adjacent[u].len() {
            let e = self.adjacent[u][self.next_edge[u]];
            let v = self.to[e];
            if self.level[v] == self.level[u] + 1 && self.admissible(e, u) {
                let pushed = self.blocking_path(v, sink, limit.min(self.residual[e]));
                if pushed > 0 {
                    self.residual[e] -= pushed;
                    self.residual[e ^ 1] += pushed;
                    return pushed;
                }
            }
            self.next_edge[u] += 1;
        }
        0
    }

    /// Cheapest residual paths from `source` (queue-based Bellman-Ford, as
    /// residual costs can be negative): `potential` holds the distance of
    /// every node with `reached` set, `via` the edge of a cheapest path to it.
    fn cheapest_paths(&mut self, source: usize) {
        let n = self.adjacent.len();
        self.potential.clear();
        self.potential.resize(n, C::ZERO);
        self.reached.clear();
        self.reached.resize(n, false);
        self.queued.clear();
        self.queued.resize(n, false);
        self.via.clear();
        self.via.resize(n, usize::MAX);
        self.queue.clear();
        self.reached[source] = true;
        self.queue.push_back(source);
        self.queued[source] = true;
        while let Some(u) = self.queue.pop_front() {
            self.queued[u] = false;
            let du = self.potential[u];
            for &e in &self.adjacent[u] {
                if self.residual[e] == 0 {
                    continue;
                }
                let v = self.to[e];
                let dv = du + self.cost[e];
                if !self.reached[v] || dv < self.potential[v] {
                    self.potential[v] = dv;
                    self.reached[v] = true;
                    self.via[v] = e;
                    if !self.queued[v] {
                        self.queued[v] = true;
                        self.queue.push_back(v);
                    }
                }
            }
        }
    }

    /// Successive shortest paths: push up to `units` more units from
    /// `source` to `sink`, each along a cheapest residual path
    /// ([`Self::cheapest_paths`]); returns the units pushed. Starting from a
    /// least-cost flow (for example one of cost 0 while every cost is >= 0),
    /// the flow stays a least-cost flow of its value after every
    /// augmentation (the residual network never gets a negative cycle), so
    /// the result is a minimum-cost flow of its value.
    pub(crate) fn augment_cheapest(&mut self, source: usize, sink: usize, units: usize) -> usize {
        let mut pushed = 0;
        while pushed < units {
            self.cheapest_paths(source);
            if !self.reached[sink] {
                return pushed;
            }
            let mut bottleneck = units - pushed;
            let mut v = sink;
            while v != source {
                let e = self.via[v];
                bottleneck = bottleneck.min(self.residual[e]);
                v = self.to[e ^ 1];
            }
            let mut v = sink;
            while v != source {
                let e = self.via[v];
                self.residual[e] -= bottleneck;
                self.residual[e ^ 1] += bottleneck;
                v = self.to[e ^ 1];
            }
            pushed += bottleneck;
        }
        pushed
    }

    /// The total cost of the current flow.
    #[cfg(test)]
    pub(crate) fn total_cost(&self) -> C {
        (0..self.to.len())
            .step_by(2)
            .flat_map(|e| std::iter::repeat_n(self.cost[e], self.flow(e)))
            .fold(C::ZERO, |a, b| a + b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maximum_flow_and_cheapest_flow_of_a_small_network() {
        // 0 → {1, 2} → 3; the direct edge 0 → 3 costs 5.
        let mut net = FlowNetwork::<i128>::default();
        net.reset(4);
        let a = net.add(0, 1, 2, 0);
        net.add(1, 3, 1, 0);
        let b = net.add(0, 2, 1, 0);
        net.add(2, 3, 1, 2);
        let direct = net.add(0, 3, 3, 5);
        assert_eq!(net.max_flow_at_zero_cost(0, 3), 1);
        assert_eq!(net.flow(a), 1);
        assert_eq!(net.total_cost(), 0);
        // Two more units: one over 2 (cost 2), then one direct (cost 5).
        assert_eq!(net.augment_cheapest(0, 3, 2), 2);
        assert_eq!(net.flow(b), 1);
        assert_eq!(net.flow(direct), 1);
        assert_eq!(net.total_cost(), 7);
        // Only two units of capacity left (both direct).
        assert_eq!(net.augment_cheapest(0, 3, 5), 2);
        assert_eq!(net.total_cost(), 17);
        // Reset forgets everything.
        net.reset(2);
        net.add(0, 1, 4, 0);
        assert_eq!(net.max_flow_at_zero_cost(0, 1), 4);
    }

    #[test]
    fn lexicographic_costs_minimise_the_first_component_then_the_next() {
        // Source 0 → {1, 2, 3} → sink 4, one unit to send; the three routes
        // cost (1, 0), (0, 5) and (0, 2): the first component decides, then
        // the second among (0, 5) and (0, 2).
        let mut net = FlowNetwork::<Lex<2>>::default();
        net.reset(5);
        let mut routes = Vec::new();
        for (node, cost) in [(1, [1, 0]), (2, [0, 5]), (3, [0, 2])] {
            routes.push(net.add(0, node, 1, Lex(cost)));
            net.add(node, 4, 1, Lex::ZERO);
        }
        assert_eq!(net.max_flow_at_zero_cost(0, 4), 0);
        assert_eq!(net.augment_cheapest(0, 4, 1), 1);
        assert_eq!(
            routes.iter().map(|&e| net.flow(e)).collect::<Vec<_>>(),
            [0, 0, 1]
        );
        assert_eq!(net.total_cost(), Lex([0, 2]));
        // Two more: (0, 5), then (1, 0).
        assert_eq!(net.augment_cheapest(0, 4, 2), 2);
        assert_eq!(net.total_cost(), Lex([1, 7]));
        assert_eq!(Lex::<2>::component(1, 3), Lex([0, 3]));
        assert!(Lex([0, 9]) < Lex([1, -9]));
    }

    #[test]
    fn cheapest_paths_reroute_earlier_flow() {
        // Source 0, workers 1-2, clusters 3-4, sink 5. Worker 1 may join
        // either cluster, worker 2 only cluster 3; cluster 3 is free, cluster
        // 4 costs 1. The zero-cost flow may put worker 1 into cluster 3;
        // the second unit must then reroute it to cluster 4 (cost 1).
        let mut net = FlowNetwork::<i128>::default();
        net.reset(6);
        net.add(0, 1, 1, 0);
        net.add(0, 2, 1, 0);
        let w1c3 = net.add(1, 3, 1, 0);
        let w1c4 = net.add(1, 4, 1, 0);
        let w2c3 = net.add(2, 3, 1, 0);
        net.add(3, 5, 1, 0);
        net.add(4, 5, 1, 1);
        let zero = net.max_flow_at_zero_cost(0, 5);
        assert_eq!(zero, 1);
        assert_eq!(net.augment_cheapest(0, 5, 1), 1);
        assert_eq!((net.flow(w1c3), net.flow(w1c4), net.flow(w2c3)), (0, 1, 1));
        assert_eq!(net.total_cost(), 1);
    }
}
