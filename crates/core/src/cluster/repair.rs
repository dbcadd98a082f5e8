//! The augmenting-path repair: complete a partial clustering one worker at a time.
//!
//! A clustering is a b-matching of workers to clusters (capacity l) along the
//! edges of the assignment matrix. To place an unplaced worker k, search
//! breadth-first from k's own clusters: a full cluster c leads to cluster c'
//! when some member of c may also join c'. The first open cluster reached ends
//! an augmenting path; every worker on it moves one cluster along and k takes
//! the first spot. A Phase II swap of §V-B is the path of length two.
//!
//! Such a path always exists while a complete clustering exists (and one
//! always does, see [`Assignment`]): in the symmetric difference of the partial
//! clustering and a complete one (with every cluster split into l slots), the
//! alternating path that starts at k can only end at a slot the partial
//! clustering leaves free. Breadth-first search finds a shortest one, so the
//! repair moves as few workers as possible.

use std::collections::VecDeque;

use super::{Assignment, Clustering, How, Placement};

const NONE: usize = usize::MAX;

/// Reusable buffers of the breadth-first search.
#[derive(Debug, Clone, Default)]
pub(crate) struct Augmenter {
    /// Per cluster: (cluster it was reached from, worker that moves in from there).
    parent: Vec<(usize, usize)>,
    visited: Vec<bool>,
    queue: VecDeque<usize>,
}

impl Augmenter {
    /// Place the unplaced worker `k`: returns the open cluster that received a
    /// worker and the number of other workers moved (0: k went straight into
    /// an open cluster of its own), or `None` when no complete clustering
    /// extends this one. `moved(w)` is called for every worker that changed
    /// cluster (not for `k`).
    pub(crate) fn run(
        &mut self,
        a: &Assignment,
        k: usize,
        members: &mut [Vec<usize>],
        cluster_of: &mut [usize],
        mut moved: impl FnMut(usize),
    ) -> Option<(usize, usize)> {
        let (p, l) = (a.clusters(), a.size());
        debug_assert_eq!(cluster_of[k], NONE, "worker {k} is already placed");
        self.parent.clear();
        self.parent.resize(p, (NONE, NONE));
        self.visited.clear();
        self.visited.resize(p, false);
        self.queue.clear();
        let mut end = NONE;
        for &c in a.clusters_of(k) {
            self.visited[c] = true;
            self.parent[c] = (NONE, k);
            if members[c].len() < l {
                end = c;
                break;
            }
            self.queue.push_back(c);
        }
        'search: while end == NONE {
            let c = self.queue.pop_front()?;
            for &w in &members[c] {
                for &c2 in a.clusters_of(w) {
                    if self.visited[c2] {
                        continue;
                    }
                    self.visited[c2] = true;
                    self.parent[c2] = (c, w);
                    if members[c2].len() < l {
                        end = c2;
                        break 'search;
                    }
                    self.queue.push_back(c2);
                }
            }
        }
        // Walk back: the worker entering each cluster leaves its parent cluster.
        let mut shifted = 0;
        let mut c = end;
        loop {
            let (from, w) = self.parent[c];
            members[c].push(w);
            cluster_of[w] = c;
            if from == NONE {
                debug_assert_eq!(w, k);
                break;
            }
            let at = members[from]
                .iter()
                .position(|&x| x == w)
                .expect("a worker on the path is in the cluster it leaves");
            members[from].swap_remove(at);
            moved(w);
            shifted += 1;
            c = from;
        }
        Some((end, shifted))
    }
}

/// Place the unplaced worker `k` into the partial clustering `members` /
/// `cluster_of` (unplaced workers have `usize::MAX`) along a shortest
/// augmenting path. Returns the open cluster that received a worker and the
/// number of other workers moved, or `None` when no complete clustering
/// extends this one (impossible for a valid [`Assignment`]).
pub fn augment(
    a: &Assignment,
    k: usize,
    members: &mut [Vec<usize>],
    cluster_of: &mut [usize],
    moved: impl FnMut(usize),
) -> Option<(usize, usize)> {
    Augmenter::default().run(a, k, members, cluster_of, moved)
}

impl Assignment {
    /// The clustering used without straggler information: the columns of the
    /// first l rows when they hold every worker once (always for
    /// [`Self::circular_shifts`], where they are one shift per group; with eq.
    /// (13) they are GC-SC's eq. (5)). Otherwise the repair completes an empty
    /// clustering, taking workers in index order. Positions are ascending ids
    /// (for circular shifts, the row order).
    pub fn initial_clustering(&self) -> Clustering {
        let (k, p, l) = (self.workers(), self.clusters(), self.size());
        let mut members: Vec<Vec<usize>> = vec![Vec::with_capacity(l); p];
        let mut cluster_of = vec![usize::MAX; k];
        let mut rows_partition = true;
        for row in &self.rows()[..l] {
            for (c, &w) in row.iter().enumerate() {
                if cluster_of[w] != usize::MAX {
                    rows_partition = false;
                }
                cluster_of[w] = c;
                members[c].push(w);
            }
        }
        if !rows_partition {
            members.iter_mut().for_each(Vec::clear);
            cluster_of.iter_mut().for_each(|c| *c = usize::MAX);
            for w in 0..k {
                augment(self, w, &mut members, &mut cluster_of, |_| {})
                    .expect("every assignment matrix admits a complete clustering");
            }
        }
        members.iter_mut().for_each(|m| m.sort_unstable());
        let placements = (0..k)
            .map(|w| Placement {
                cluster: cluster_of[w],
                straggler: false,
                phase_one: None,
                how: How::Initial,
            })
            .collect();
        Clustering {
            members,
            cluster_of,
            placements,
            conflicts: Vec::new(),
            phases: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortest_augmenting_paths_of_length_zero_one_and_two() {
        // K = 10, P = 5, n = 2, both groups shifted by 0 and 1: column p holds
        // p, p−1, 5+p, 5+(p−1) (mod 5 within the group).
        let a = Assignment::from_shifts(10, 5, &[vec![0, 1], vec![0, 1]]).unwrap();
        assert_eq!(a.column(0), &[0, 4, 5, 9]);
        assert_eq!(a.clusters_of(7), &[2, 3]);

        // Worker 7 (clusters 2, 3) with both full and cluster 0 open: no
        // member of 2 or 3 may join 0, so no single swap helps. Shortest path:
        // 7 → c2, 1 (c1, c2) → c1, 5 (c0, c1) → c0.
        let mut members = vec![vec![0], vec![5, 6], vec![2, 1], vec![8, 3], vec![4, 9]];
        let mut cluster_of = vec![0, 2, 2, 3, 4, 1, 1, NONE, 3, 4];
        let mut moved = Vec::new();
        let got = augment(&a, 7, &mut members, &mut cluster_of, |w| moved.push(w));
        assert_eq!(got, Some((0, 2)));
        assert_eq!(moved, vec![5, 1]);
        assert_eq!(cluster_of, vec![0, 1, 2, 3, 4, 0, 1, 2, 3, 4]);
        for (c, m) in members.iter().enumerate() {
            assert_eq!(m.len(), 2, "cluster {c} full");
            assert!(m.iter().all(|&w| a.can_join(w, c)));
        }

        // A single swap: 7 → c2 and 1 → c1, which is open.
        let mut members = vec![vec![0, 5], vec![6], vec![2, 1], vec![8, 3], vec![4, 9]];
        let mut cluster_of = vec![0, 2, 2, 3, 4, 0, 1, NONE, 3, 4];
        let got = augment(&a, 7, &mut members, &mut cluster_of, |_| {});
        assert_eq!(got, Some((1, 1)));
        assert_eq!(cluster_of[1], 1);
        assert_eq!(cluster_of[7], 2);

        // Straight into an open cluster of its own.
        let mut members = vec![vec![0, 5], vec![6, 1], vec![2], vec![8, 3], vec![4, 9]];
        let mut cluster_of = vec![0, 1, 2, 3, 4, 0, 1, NONE, 3, 4];
        assert_eq!(
            augment(&a, 7, &mut members, &mut cluster_of, |_| {}),
            Some((2, 0))
        );
    }
}
