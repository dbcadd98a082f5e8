//! The most even spread of stragglers that any valid clustering can reach.
//!
//! For a straggler set S and an [`Assignment`], a *valid clustering* puts
//! every worker in exactly one cluster of its own column, l per cluster. Its
//! *straggler profile* is the number of stragglers per cluster. Two measures
//! of "most even":
//!
//! - [`min_max_stragglers`]: the minimum over valid clusterings of the largest
//!   number of stragglers in one cluster. This is what decides whether the
//!   master can finish from non-stragglers alone: a cluster decodes from its
//!   non-stragglers when it has at most r − 1 stragglers.
//! - [`most_even_profile`]: the lexicographically smallest profile sorted in
//!   decreasing order (the largest count as small as possible, then the
//!   second largest, ...).
//!
//! Both are exact. Feasibility of per-cluster straggler caps is a max-flow
//! problem: source → worker (capacity 1); a non-straggler → every cluster node
//! of its column; a straggler → the straggler node of every cluster of its
//! column; straggler node of p → cluster node of p (capacity cap_p); cluster
//! node → sink (capacity l). The caps are feasible iff the flow is K.

use std::collections::VecDeque;

use super::Assignment;

/// A small max-flow network (Edmonds-Karp: BFS augmenting paths).
#[derive(Debug, Clone)]
struct Network {
    /// Per node: indices into `edges`.
    adjacent: Vec<Vec<usize>>,
    /// (to, residual capacity); edge i and i ^ 1 are a pair.
    edges: Vec<(usize, usize)>,
}

impl Network {
    fn new(nodes: usize) -> Self {
        Self {
            adjacent: vec![Vec::new(); nodes],
            edges: Vec::new(),
        }
    }

    fn add(&mut self, from: usize, to: usize, capacity: usize) -> usize {
        let id = self.edges.len();
        self.adjacent[from].push(id);
        self.edges.push((to, capacity));
        self.adjacent[to].push(id + 1);
        self.edges.push((from, 0));
        id
    }

    fn max_flow(&mut self, source: usize, sink: usize) -> usize {
        let n = self.adjacent.len();
        let mut flow = 0;
        let mut via = vec![usize::MAX; n];
        let mut queue = VecDeque::new();
        loop {
            via.iter_mut().for_each(|v| *v = usize::MAX);
            queue.clear();
            queue.push_back(source);
            via[source] = usize::MAX - 1;
            while let Some(u) = queue.pop_front() {
                if u == sink {
                    break;
                }
                for &e in &self.adjacent[u] {
                    let (to, cap) = self.edges[e];
                    if cap > 0 && via[to] == usize::MAX {
                        via[to] = e;
                        queue.push_back(to);
                    }
                }
            }
            if via[sink] == usize::MAX {
                return flow;
            }
            // Unit bottleneck suffices for the sums we need, but take the minimum.
            let mut bottleneck = usize::MAX;
            let mut v = sink;
            while v != source {
                let e = via[v];
                bottleneck = bottleneck.min(self.edges[e].1);
                v = self.edges[e ^ 1].0;
            }
            let mut v = sink;
            while v != source {
                let e = via[v];
                self.edges[e].1 -= bottleneck;
                self.edges[e ^ 1].1 += bottleneck;
                v = self.edges[e ^ 1].0;
            }
            flow += bottleneck;
        }
    }
}

/// A valid clustering with at most `caps[p]` stragglers in cluster p, if one
/// exists: cluster → workers (ascending).
pub fn clustering_with_caps(
    a: &Assignment,
    straggling: &[bool],
    caps: &[usize],
) -> Option<Vec<Vec<usize>>> {
    let (k, p, l) = (a.workers(), a.clusters(), a.size());
    assert_eq!(straggling.len(), k, "one straggler flag per worker");
    assert_eq!(caps.len(), p, "one cap per cluster");
    // Nodes: source, K workers, P straggler nodes, P cluster nodes, sink.
    let (source, sink) = (0, 1 + k + 2 * p);
    let straggler_node = |c: usize| 1 + k + c;
    let cluster_node = |c: usize| 1 + k + p + c;
    let mut net = Network::new(sink + 1);
    let mut worker_edges = Vec::with_capacity(k * a.per_worker());
    for (w, &straggles) in straggling.iter().enumerate() {
        net.add(source, 1 + w, 1);
        for &c in a.clusters_of(w) {
            let to = if straggles {
                straggler_node(c)
            } else {
                cluster_node(c)
            };
            worker_edges.push((w, c, net.add(1 + w, to, 1)));
        }
    }
    for (c, &cap) in caps.iter().enumerate() {
        net.add(straggler_node(c), cluster_node(c), cap.min(l));
        net.add(cluster_node(c), sink, l);
    }
    if net.max_flow(source, sink) != k {
        return None;
    }
    let mut members = vec![Vec::with_capacity(l); p];
    for (w, c, e) in worker_edges {
        if net.edges[e].1 == 0 {
            members[c].push(w);
        }
    }
    members.iter_mut().for_each(|m| m.sort_unstable());
    Some(members)
}

/// The minimum over valid clusterings of the largest number of stragglers in
/// one cluster, and a clustering that reaches it.
pub fn min_max_clustering(a: &Assignment, straggling: &[bool]) -> (usize, Vec<Vec<usize>>) {
    let (p, l) = (a.clusters(), a.size());
    let stragglers = straggling.iter().filter(|&&s| s).count();
    // Binary search on the cap b: feasibility is monotone in b.
    let (mut lo, mut hi) = (stragglers.div_ceil(p), l);
    let mut best = clustering_with_caps(a, straggling, &vec![hi; p])
        .expect("every assignment matrix admits a complete clustering");
    while lo < hi {
        let mid = (lo + hi) / 2;
        match clustering_with_caps(a, straggling, &vec![mid; p]) {
            Some(m) => {
                best = m;
                hi = mid;
            }
            None => lo = mid + 1,
        }
    }
    (hi, best)
}

/// The minimum over valid clusterings of the largest number of stragglers in one cluster.
pub fn min_max_stragglers(a: &Assignment, straggling: &[bool]) -> usize {
    min_max_clustering(a, straggling).0
}

/// The lexicographically smallest decreasingly sorted straggler profile any
/// valid clustering reaches.
///
/// Exact: candidate profiles are tried from the most even up, each in every
/// distinct arrangement over the clusters that the columns allow, with the
/// counts as caps (caps summing to |S| with a flow of K are met exactly). The
/// cost grows like P! in the worst case: meant for P up to about 8 (tests and
/// statistics), not for the master's loop.
pub fn most_even_profile(a: &Assignment, straggling: &[bool]) -> Vec<usize> {
    let (p, l) = (a.clusters(), a.size());
    let total = straggling.iter().filter(|&&s| s).count();
    let stragglers_in: Vec<usize> = (0..p)
        .map(|c| a.column(c).iter().filter(|&&w| straggling[w]).count())
        .collect();
    let others_in: Vec<usize> = (0..p)
        .map(|c| a.column(c).len() - stragglers_in[c])
        .collect();
    let mut profile = Vec::with_capacity(p);
    let mut found = None;
    profiles(p, l, total, &mut profile, &mut |candidate| {
        // Distinct arrangements: permutations of the ascending multiset.
        let mut caps: Vec<usize> = candidate.iter().rev().copied().collect();
        loop {
            let allowed =
                (0..p).all(|c| caps[c] <= stragglers_in[c] && l - caps[c] <= others_in[c]);
            if allowed && clustering_with_caps(a, straggling, &caps).is_some() {
                found = Some(candidate.to_vec());
                return true;
            }
            if !next_permutation(&mut caps) {
                return false;
            }
        }
    });
    found.expect("every assignment matrix admits a complete clustering")
}

/// Enumerate non-increasing sequences of length `p`, entries <= `max`, summing
/// to `total`, in increasing lexicographic order, until `visit` returns true.
fn profiles(
    p: usize,
    max: usize,
    left: usize,
    prefix: &mut Vec<usize>,
    visit: &mut impl FnMut(&[usize]) -> bool,
) -> bool {
    let slots = p - prefix.len();
    if slots == 0 {
        return left == 0 && visit(prefix);
    }
    let cap = prefix.last().copied().unwrap_or(max).min(left);
    let low = left.div_ceil(slots);
    for v in low..=cap {
        prefix.push(v);
        let done = profiles(p, max, left - v, prefix, visit);
        prefix.pop();
        if done {
            return true;
        }
    }
    false
}

/// The next permutation in lexicographic order; false (and sorted) after the last.
fn next_permutation(v: &mut [usize]) -> bool {
    let n = v.len();
    if n < 2 {
        return false;
    }
    let mut i = n - 1;
    while i > 0 && v[i - 1] >= v[i] {
        i -= 1;
    }
    if i == 0 {
        v.reverse();
        return false;
    }
    let mut j = n - 1;
    while v[j] <= v[i - 1] {
        j -= 1;
    }
    v.swap(i - 1, j);
    v[i..].reverse();
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Stream, stream};
    use rand::RngExt;

    /// Every valid clustering, by backtracking over workers.
    fn all_clusterings(a: &Assignment) -> Vec<Vec<usize>> {
        fn go(
            a: &Assignment,
            w: usize,
            load: &mut Vec<usize>,
            cur: &mut Vec<usize>,
            out: &mut Vec<Vec<usize>>,
        ) {
            if w == a.workers() {
                out.push(cur.clone());
                return;
            }
            for &c in a.clusters_of(w) {
                if load[c] < a.size() {
                    load[c] += 1;
                    cur.push(c);
                    go(a, w + 1, load, cur, out);
                    cur.pop();
                    load[c] -= 1;
                }
            }
        }
        let mut out = Vec::new();
        go(a, 0, &mut vec![0; a.clusters()], &mut Vec::new(), &mut out);
        out
    }

    #[test]
    fn flow_optima_equal_brute_force() {
        let mut rng = stream(11, Stream::CheckSampling);
        for (k, p, n) in [
            (6, 3, 2),
            (8, 4, 2),
            (8, 2, 1),
            (9, 3, 2),
            (10, 5, 3),
            (12, 4, 2),
        ] {
            for trial in 0..6 {
                let a =
                    Assignment::circular_shifts(k, p, n, &mut stream(trial, Stream::ClusterShifts))
                        .unwrap();
                let every = all_clusterings(&a);
                assert!(!every.is_empty());
                for _ in 0..8 {
                    let s: Vec<bool> = (0..k).map(|_| rng.random_bool(0.5)).collect();
                    let mut best_max = usize::MAX;
                    let mut best_profile = vec![usize::MAX];
                    for cl in &every {
                        let mut counts = vec![0; p];
                        for w in 0..k {
                            counts[cl[w]] += s[w] as usize;
                        }
                        counts.sort_unstable_by(|x, y| y.cmp(x));
                        best_max = best_max.min(counts[0]);
                        if counts < best_profile {
                            best_profile = counts;
                        }
                    }
                    let (m, members) = min_max_clustering(&a, &s);
                    assert_eq!(m, best_max, "K={k} P={p} n={n} S={s:?}");
                    let worst = members
                        .iter()
                        .map(|m| m.iter().filter(|&&w| s[w]).count())
                        .max()
                        .unwrap();
                    assert_eq!(worst, m, "the returned clustering reaches the optimum");
                    for (c, m) in members.iter().enumerate() {
                        assert_eq!(m.len(), k / p);
                        assert!(m.iter().all(|&w| a.can_join(w, c)));
                    }
                    assert_eq!(
                        most_even_profile(&a, &s),
                        best_profile,
                        "K={k} P={p} S={s:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn permutations_and_profiles_enumerate_in_order() {
        let mut v = vec![0, 1, 1];
        let mut seen = vec![v.clone()];
        while next_permutation(&mut v) {
            seen.push(v.clone());
        }
        assert_eq!(seen, vec![vec![0, 1, 1], vec![1, 0, 1], vec![1, 1, 0]]);
        let mut all = Vec::new();
        profiles(3, 3, 4, &mut Vec::new(), &mut |x| {
            all.push(x.to_vec());
            false
        });
        assert_eq!(all, vec![vec![2, 1, 1], vec![2, 2, 0], vec![3, 1, 0]]);
    }
}
