//! The optimal decode's least squares on sparse rows: weights `a` over the
//! arrivals S minimising ‖a·B_S − 1‖₂, where row i of B stores worker i's
//! few (partition, coefficient) pairs.
//!
//! The problem splits into the connected components of the arrivals (two
//! arrivals are joined when they store a common partition): a component's
//! weights only touch its own partitions, and a partition no arrival stores
//! adds 1 to the squared error whatever the weights. A component of at most
//! [`DENSE_WORKERS`] arrivals is solved densely (the minimum-norm solution
//! of a thin SVD, as before); a larger one by CGLS, conjugate gradients on
//! the normal equations applied through the sparse rows, started from 0 so
//! that it tends to the same minimum-norm solution. One CGLS step costs two
//! passes over the component's nonzeros, O(|S|·load), where the dense
//! solve costs O(n·|S|²): a decode of the fastest 90% takes 3-6 ms at
//! K = 1024, where the dense solve took 53 ms already at K = 512
//! (`scripts/bench-sim.sh`, docs/performance.md). A component whose CGLS
//! does not meet its tolerance within its step budget is solved densely.
//!
//! The weights are a function of the arrival set and its order alone (no
//! state carries from one decode to the next), so a trace's recorded
//! survivors reproduce its decode error.

use faer::Mat;

use super::super::CyclicMds;

/// Components of at most this many arrivals are solved densely.
pub(crate) const DENSE_WORKERS: usize = 64;

/// CGLS stops when ‖Mᵀr‖ ≤ this · ‖M‖_F · ‖r‖ (the residual is orthogonal
/// to the columns to rounding), or when ‖r‖ ≤ this · ‖1‖ (an exact decode).
const CGLS_TOLERANCE: f64 = 1e-13;

/// The least-squares weights of `workers` (distinct rows of `rows`, each row
/// `(partition, coefficient)` pairs over `partitions` partitions), aligned
/// with `workers`.
pub(crate) fn least_squares(
    rows: &[Vec<(usize, f64)>],
    workers: &[usize],
    partitions: usize,
) -> Vec<f64> {
    let mut weights = vec![0.0; workers.len()];
    for component in components(rows, workers, partitions) {
        let local = LocalRows::new(rows, workers, &component, partitions);
        let solved = if component.len() <= DENSE_WORKERS {
            local.dense()
        } else {
            local.cgls().unwrap_or_else(|| local.dense())
        };
        for (&slot, a) in component.iter().zip(solved) {
            weights[slot] = a;
        }
    }
    weights
}

/// The arrivals (indices into `workers`) grouped by connected component,
/// each group ascending, groups in the order of their first arrival.
fn components(rows: &[Vec<(usize, f64)>], workers: &[usize], partitions: usize) -> Vec<Vec<usize>> {
    let mut parent: Vec<usize> = (0..workers.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let mut owner = vec![usize::MAX; partitions];
    for (slot, &w) in workers.iter().enumerate() {
        for &(p, _) in &rows[w] {
            if owner[p] == usize::MAX {
                owner[p] = slot;
            } else {
                let (a, b) = (root(&mut parent, slot), root(&mut parent, owner[p]));
                if a != b {
                    parent[a.max(b)] = a.min(b);
                }
            }
        }
    }
    let mut group_of = vec![usize::MAX; workers.len()];
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for slot in 0..workers.len() {
        let r = root(&mut parent, slot);
        if group_of[r] == usize::MAX {
            group_of[r] = groups.len();
            groups.push(Vec::new());
        }
        groups[group_of[r]].push(slot);
    }
    groups
}

/// One component's rows over its own partitions, numbered 0.. in order of
/// first appearance.
struct LocalRows {
    rows: Vec<Vec<(usize, f64)>>,
    partitions: usize,
}

impl LocalRows {
    fn new(
        rows: &[Vec<(usize, f64)>],
        workers: &[usize],
        component: &[usize],
        partitions: usize,
    ) -> Self {
        let mut local = vec![usize::MAX; partitions];
        let mut count = 0;
        let rows = component
            .iter()
            .map(|&slot| {
                rows[workers[slot]]
                    .iter()
                    .map(|&(p, c)| {
                        if local[p] == usize::MAX {
                            local[p] = count;
                            count += 1;
                        }
                        (local[p], c)
                    })
                    .collect()
            })
            .collect();
        Self {
            rows,
            partitions: count,
        }
    }

    /// The minimum-norm solution by a dense thin SVD of Mᵀ = B_Cᵀ.
    fn dense(&self) -> Vec<f64> {
        let mut bt = Mat::<f64>::zeros(self.partitions, self.rows.len());
        for (j, row) in self.rows.iter().enumerate() {
            for &(p, c) in row {
                bt[(p, j)] += c;
            }
        }
        CyclicMds::min_norm_svd(&bt).unwrap_or_else(|| vec![0.0; self.rows.len()])
    }

    /// `out = M·x`: the coverage of every local partition by weights `x`.
    fn cover(&self, x: &[f64], out: &mut [f64]) {
        out.fill(0.0);
        for (row, &a) in self.rows.iter().zip(x) {
            for &(p, c) in row {
                out[p] += a * c;
            }
        }
    }

    /// `out = Mᵀ·r`: each row's inner product with `r`.
    fn project(&self, r: &[f64], out: &mut [f64]) {
        for (o, row) in out.iter_mut().zip(&self.rows) {
            *o = row.iter().map(|&(p, c)| c * r[p]).sum();
        }
    }

    /// CGLS from 0 for min ‖M·a − 1‖₂; `None` when it has not converged
    /// within 4·|C| + 100 steps.
    fn cgls(&self) -> Option<Vec<f64>> {
        let m = self.rows.len();
        let norm_m = self
            .rows
            .iter()
            .flatten()
            .map(|&(_, c)| c * c)
            .sum::<f64>()
            .sqrt();
        let norm_b = (self.partitions as f64).sqrt();
        let mut x = vec![0.0; m];
        let mut r = vec![1.0; self.partitions];
        let mut s = vec![0.0; m];
        self.project(&r, &mut s);
        let mut p = s.clone();
        let mut q = vec![0.0; self.partitions];
        let mut gamma = dot(&s, &s);
        for _ in 0..4 * m + 100 {
            let norm_r = dot(&r, &r).sqrt();
            if norm_r <= CGLS_TOLERANCE * norm_b || gamma.sqrt() <= CGLS_TOLERANCE * norm_m * norm_r
            {
                return Some(x);
            }
            self.cover(&p, &mut q);
            let qq = dot(&q, &q);
            if qq == 0.0 {
                return Some(x);
            }
            let alpha = gamma / qq;
            x.iter_mut().zip(&p).for_each(|(x, p)| *x += alpha * p);
            r.iter_mut().zip(&q).for_each(|(r, q)| *r -= alpha * q);
            self.project(&r, &mut s);
            let next = dot(&s, &s);
            let beta = next / gamma;
            gamma = next;
            p.iter_mut().zip(&s).for_each(|(p, s)| *p = s + beta * *p);
        }
        None
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(a, b)| a * b).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Stream, stream};
    use rand::RngExt;

    /// ‖a·B_S − 1‖₂ over every partition.
    fn error(rows: &[Vec<(usize, f64)>], workers: &[usize], a: &[f64], n: usize) -> f64 {
        let mut coverage = vec![0.0; n];
        for (&w, &a) in workers.iter().zip(a) {
            for &(p, c) in &rows[w] {
                coverage[p] += a * c;
            }
        }
        coverage
            .iter()
            .map(|v| (v - 1.0).powi(2))
            .sum::<f64>()
            .sqrt()
    }

    /// The error of the dense minimum-norm solve over the whole B_Sᵀ.
    fn dense_error(rows: &[Vec<(usize, f64)>], workers: &[usize], n: usize) -> f64 {
        let bt = Mat::<f64>::from_fn(n, workers.len(), |p, j| {
            rows[workers[j]]
                .iter()
                .filter(|&&(q, _)| q == p)
                .map(|&(_, c)| c)
                .sum()
        });
        let a = CyclicMds::min_norm_svd(&bt).unwrap();
        error(rows, workers, &a, n)
    }

    /// Random sparse rows: `k` workers, `n` partitions, each worker storing
    /// `load` distinct random partitions with random positive coefficients.
    fn random_rows(k: usize, n: usize, load: usize, seed: u64) -> Vec<Vec<(usize, f64)>> {
        let mut rng = stream(seed, Stream::CheckSampling);
        (0..k)
            .map(|_| {
                let mut row: Vec<(usize, f64)> = Vec::new();
                while row.len() < load {
                    let p = rng.random_range(0..n);
                    if row.iter().all(|&(q, _)| q != p) {
                        row.push((p, rng.random_range(0.2..2.0)));
                    }
                }
                row.sort_by_key(|&(p, _)| p);
                row
            })
            .collect()
    }

    /// Components and CGLS reach the dense solve's error on random sparse
    /// codes (one giant component, many small ones, duplicate rows), and an
    /// exact decode is exact.
    #[test]
    fn the_sparse_solve_reaches_the_dense_minimum() {
        let mut rng = stream(9, Stream::CheckSampling);
        for (k, n, load, seed) in [
            (150, 150, 3, 1),
            (200, 120, 2, 2),
            (120, 300, 1, 3),
            (90, 90, 6, 4),
        ] {
            let mut rows = random_rows(k, n, load, seed);
            // Two duplicate rows: a rank-deficient B_S.
            rows[1] = rows[0].clone();
            for _ in 0..10 {
                let keep = rng.random_range(0.5..1.0);
                let workers: Vec<usize> = (0..k).filter(|_| rng.random::<f64>() < keep).collect();
                let a = least_squares(&rows, &workers, n);
                let (e, want) = (
                    error(&rows, &workers, &a, n),
                    dense_error(&rows, &workers, n),
                );
                assert!(
                    (e - want).abs() <= 1e-9 * want.max(1.0),
                    "K = {k}, n = {n}, load {load}: sparse {e}, dense {want}"
                );
            }
        }
        // Identity rows: every set decodes its own partitions exactly.
        let rows: Vec<Vec<(usize, f64)>> = (0..100).map(|i| vec![(i, 0.5)]).collect();
        let all: Vec<usize> = (0..100).collect();
        let a = least_squares(&rows, &all, 100);
        assert!(a.iter().all(|&a| (a - 2.0).abs() < 1e-12), "{a:?}");
    }

    /// A component larger than the dense bound goes through CGLS, which
    /// converges there (not through its dense fallback).
    #[test]
    fn cgls_converges_on_a_giant_component() {
        let rows = random_rows(300, 300, 4, 5);
        let workers: Vec<usize> = (0..270).collect();
        let parts = components(&rows, &workers, 300);
        let giant = parts.iter().map(Vec::len).max().unwrap();
        assert!(giant > DENSE_WORKERS, "the largest component has {giant}");
        for component in parts.iter().filter(|c| c.len() > DENSE_WORKERS) {
            let local = LocalRows::new(&rows, &workers, component, 300);
            let solved = local.cgls().expect("CGLS converges");
            let dense = local.dense();
            let mut coverage = vec![0.0; local.partitions];
            let e = |a: &[f64], cov: &mut Vec<f64>| {
                local.cover(a, cov);
                cov.iter().map(|v| (v - 1.0).powi(2)).sum::<f64>().sqrt()
            };
            let (e_cgls, e_dense) = (e(&solved, &mut coverage), e(&dense, &mut coverage));
            assert!((e_cgls - e_dense).abs() <= 1e-9, "{e_cgls} vs {e_dense}");
        }
    }
}
