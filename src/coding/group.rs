//! Decoding of one group (cluster) of a linear gradient code, with a cache of
//! coefficients per arrival set: the per-group solve of [`super::StaticCode`]
//! made available to other schemes (gc-mmc, gc-partial) without copying it.

use std::collections::HashMap;
use std::sync::Arc;

use faer::Mat;

use super::mds::solve_ones;
use super::{CodeOptions, CyclicMds, Solution};

#[derive(Debug, Clone)]
enum GroupCode {
    /// Tandon's cyclic repetition code (exact answers for r = l and r = 1).
    Cyclic(CyclicMds),
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
            code: GroupCode::Cyclic(code),
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

    /// Codewords (rows) of the group.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Partitions (columns) of the group.
    pub fn cols(&self) -> usize {
        self.cols
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
        if self.cache.len() >= self.options.cache_entries() {
            // Bounded memory: start over rather than track recency.
            self.cache.clear();
        }
        self.cache.insert(key, solution.clone());
        solution
    }
}
