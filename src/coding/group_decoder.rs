//! Per-group decoding of clustered codes, shared by [`super::StaticCode`] and
//! [`super::DynamicClustering`]: every group (cluster) runs the same
//! [`CyclicMds`] code over its own partitions, position i sending row i, and
//! the master decodes each group from the positions it received. Coefficients
//! are cached per arrival set (positions as a bitset), which is valid for any
//! group because all groups share the code.

use std::collections::HashMap;
use std::sync::Arc;

use super::{Arrival, CodeOptions, CyclicMds, Decoding, GroupDecoding, Solution};

/// The code of every group, its numerical options and the coefficient cache.
#[derive(Debug)]
pub(crate) struct GroupDecoder {
    code: CyclicMds,
    options: CodeOptions,
    /// Coefficients per arrival set (positions as a bitset); `None` = not decodable.
    cache: HashMap<Vec<u64>, Option<Arc<Solution>>>,
}

/// Where a worker sits in one iteration's groups.
pub(crate) trait GroupLayout {
    /// Number of groups.
    fn groups(&self) -> usize;
    /// (group, position) of `worker`.
    fn slot(&self, worker: usize) -> (usize, usize);
    /// The worker at `position` of `group`.
    fn worker(&self, group: usize, position: usize) -> usize;
    /// The global partitions of `group`, local partition j first.
    fn partitions(&self, group: usize) -> &[usize];
}

impl GroupDecoder {
    pub(crate) fn new(code: CyclicMds, options: CodeOptions) -> Self {
        Self {
            code,
            options,
            cache: HashMap::new(),
        }
    }

    pub(crate) fn code(&self) -> &CyclicMds {
        &self.code
    }

    /// Coefficients for received `positions` of one group (ascending, distinct), cached.
    pub(crate) fn solve(&mut self, positions: &[usize]) -> Option<Arc<Solution>> {
        let mut key = vec![0u64; self.code.size().div_ceil(64)];
        for &p in positions {
            key[p / 64] |= 1 << (p % 64);
        }
        if let Some(hit) = self.cache.get(&key) {
            return hit.clone();
        }
        let solution = self
            .code
            .solve(positions, self.options.tolerance())
            .map(Arc::new);
        if self.cache.len() >= self.options.cache_entries() {
            // Bounded memory: start over rather than track recency.
            self.cache.clear();
        }
        self.cache.insert(key, solution.clone());
        solution
    }

    /// Decode single-message arrivals group by group. A duplicate counts once
    /// and gets weight 0. `decodable` is true when every group decodes.
    pub(crate) fn decode(
        &mut self,
        layout: &impl GroupLayout,
        workers: usize,
        received: &[Arrival],
    ) -> Decoding {
        // Positions received per group, with the index of the first arrival of each.
        let mut per_group: Vec<Vec<(usize, usize)>> = vec![Vec::new(); layout.groups()];
        let mut seen = vec![false; workers];
        for (idx, a) in received.iter().enumerate() {
            assert!(
                a.worker < workers && a.message == 0,
                "arrival {a:?} is not a message of this code"
            );
            if std::mem::replace(&mut seen[a.worker], true) {
                continue;
            }
            let (g, pos) = layout.slot(a.worker);
            per_group[g].push((pos, idx));
        }
        let needed = self.code.needed();
        let mut weights = vec![0.0; received.len()];
        let mut recovered = Vec::new();
        let mut groups = Vec::with_capacity(per_group.len());
        let (mut residual, mut amplification) = (0.0_f64, 0.0_f64);
        for (g, mut arrivals) in per_group.into_iter().enumerate() {
            arrivals.sort_unstable();
            let positions: Vec<usize> = arrivals.iter().map(|&(p, _)| p).collect();
            let solution = if positions.is_empty() {
                None
            } else {
                self.solve(&positions)
            };
            let workers: Vec<usize> = positions.iter().map(|&p| layout.worker(g, p)).collect();
            let mut report = GroupDecoding {
                group: g,
                positions,
                workers,
                needed,
                decodable: solution.is_some(),
                coefficients: Vec::new(),
                residual: f64::NAN,
                amplification: f64::NAN,
            };
            if let Some(s) = solution {
                for (&(_, idx), &c) in arrivals.iter().zip(&s.coefficients) {
                    weights[idx] = c;
                }
                recovered.extend_from_slice(layout.partitions(g));
                residual = residual.max(s.residual);
                amplification = amplification.max(s.amplification);
                report.coefficients = s.coefficients.clone();
                report.residual = s.residual;
                report.amplification = s.amplification;
            }
            groups.push(report);
        }
        recovered.sort_unstable();
        let decodable = groups.iter().all(|g| g.decodable);
        Decoding {
            decodable,
            weights,
            recovered,
            residual,
            amplification,
            groups,
        }
    }
}

/// Arrival counting per group: the tracker logic of clustered codes.
#[derive(Debug, Clone)]
pub(crate) struct GroupCounter {
    seen: Vec<bool>,
    per_group: Vec<usize>,
    needed: usize,
    groups_done: usize,
    distinct: usize,
}

impl GroupCounter {
    pub(crate) fn new(workers: usize, groups: usize, needed: usize) -> Self {
        Self {
            seen: vec![false; workers],
            per_group: vec![0; groups],
            needed,
            groups_done: 0,
            distinct: 0,
        }
    }

    /// Count `worker`, a member of `group`, once.
    pub(crate) fn arrive(&mut self, worker: usize, group: impl FnOnce() -> usize) {
        if !self.seen[worker] {
            self.seen[worker] = true;
            self.distinct += 1;
            let g = group();
            self.per_group[g] += 1;
            if self.per_group[g] == self.needed {
                self.groups_done += 1;
            }
        }
    }

    /// Every group has `needed` distinct arrivals.
    pub(crate) fn all_groups_done(&self) -> bool {
        self.groups_done == self.per_group.len()
    }

    /// Distinct workers heard from.
    pub(crate) fn distinct(&self) -> usize {
        self.distinct
    }
}
