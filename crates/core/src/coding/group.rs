//! Per-group decoding of linear gradient codes, shared by every clustered
//! scheme: [`super::StaticCode`], [`super::DynamicClustering`], gc-mmc and
//! gc-partial. Each group (cluster) runs one code over its own partitions,
//! position i sending row i; the master decodes each group from the
//! positions it received. Coefficients are cached per arrival set (positions
//! as a bitset), valid for every group that shares the code.

use std::collections::HashMap;
use std::sync::Arc;

use faer::Mat;

use super::mds::solve_ones;
use super::{Arrival, CodeOptions, CyclicMds, Decoding, GroupDecoding, Solution};

/// The most memory one decoder's cache of coefficients takes (256 MiB), in
/// whatever `scheme.decode_cache_entries` says: 4096 entries at K = 4096
/// would take 130 MiB, 2^20 of them 34 GiB.
pub const MAX_CACHE_BYTES: usize = 256 << 20;

#[derive(Debug, Clone)]
enum GroupCode {
    /// Tandon's cyclic repetition code (exact answers for r = l and r = 1).
    Cyclic(Box<CyclicMds>),
    /// Any encoding matrix; `unique_at` rows give a unique solution.
    Matrix {
        b: Mat<f64>,
        max_abs_b: f64,
        unique_at: usize,
    },
}

/// Coefficients `a` with `a·B_S = 1` for received rows S of one group's
/// encoding matrix B, cached per arrival set (bounded by
/// `scheme.decode_cache_entries`; a set that cannot decode is cached as such).
#[derive(Debug, Clone)]
pub struct GroupDecoder {
    code: GroupCode,
    rows: usize,
    cols: usize,
    needed: usize,
    options: CodeOptions,
    cache: HashMap<Vec<u64>, Option<Arc<Solution>>>,
}

impl GroupDecoder {
    /// The decoder of a cyclic repetition code: any `code.needed()` rows decode.
    pub fn cyclic(code: CyclicMds, options: CodeOptions) -> Self {
        let (rows, needed) = (code.size(), code.needed());
        Self {
            code: GroupCode::Cyclic(Box::new(code)),
            rows,
            cols: rows,
            needed,
            options,
            cache: HashMap::new(),
        }
    }

    /// The decoder of the encoding matrix `b` (rows: codewords, columns: the
    /// group's partitions) of which any `needed` rows decode.
    pub fn matrix(b: Mat<f64>, needed: usize, options: CodeOptions) -> Self {
        let (rows, cols) = (b.nrows(), b.ncols());
        let max_abs_b = b.norm_max();
        Self {
            code: GroupCode::Matrix {
                b,
                max_abs_b,
                unique_at: needed,
            },
            rows,
            cols,
            needed,
            options,
            cache: HashMap::new(),
        }
    }

    /// The cyclic code of a decoder built with [`GroupDecoder::cyclic`].
    pub fn cyclic_code(&self) -> Option<&CyclicMds> {
        match &self.code {
            GroupCode::Cyclic(code) => Some(code.as_ref()),
            GroupCode::Matrix { .. } => None,
        }
    }

    /// Codewords (rows) of the group.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Partitions (columns) of the group.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// `scheme.decode_tolerance`: the largest residual a solve accepts.
    pub fn tolerance(&self) -> f64 {
        self.options.tolerance()
    }

    /// Distinct codewords that always suffice.
    pub fn needed(&self) -> usize {
        self.needed
    }

    /// Coefficients for the received rows `positions` (ascending, distinct), cached.
    pub fn solve(&mut self, positions: &[usize]) -> Option<Arc<Solution>> {
        let mut key = vec![0u64; self.rows.div_ceil(64)];
        for &p in positions {
            key[p / 64] |= 1 << (p % 64);
        }
        if let Some(hit) = self.cache.get(&key) {
            return hit.clone();
        }
        let tolerance = self.options.tolerance();
        let solution = match &self.code {
            GroupCode::Cyclic(code) => code.solve(positions, tolerance),
            GroupCode::Matrix {
                b,
                max_abs_b,
                unique_at,
            } => solve_ones(b, *max_abs_b, positions, *unique_at, tolerance),
        }
        .map(Arc::new);
        // An entry: the key (rows bits), up to `rows` coefficients, the map's overhead.
        let entry_bytes = self.rows.div_ceil(8) + 8 * self.rows + 64;
        let entries = self
            .options
            .cache_entries()
            .min((MAX_CACHE_BYTES / entry_bytes).max(1));
        if self.cache.len() >= entries {
            // Bounded memory: start over rather than track recency.
            self.cache.clear();
        }
        self.cache.insert(key, solution.clone());
        solution
    }
}

/// Where a worker sits in one iteration's groups (single-message codes).
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
    /// Decode single-message arrivals group by group under `layout`. A
    /// duplicate counts once and gets weight 0. `decodable` is true when
    /// every group decodes.
    pub(crate) fn decode_groups(
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
        let needed = self.needed();
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
            approximate: false,
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

    /// Some group has `needed` distinct arrivals.
    pub(crate) fn any_group_done(&self) -> bool {
        self.groups_done > 0
    }

    /// Distinct workers heard from.
    pub(crate) fn distinct(&self) -> usize {
        self.distinct
    }
}
