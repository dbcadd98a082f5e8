//! The cyclic repetition code of Tandon et al. and its decoder.
//!
//! [`CyclicMds`] is the code of one group of `l` workers over `l` partitions
//! with load `r` (001 §3.2, Algorithm 2): row `i` of the encoding matrix B is
//! supported on partitions `i, i+1, ..., i+r-1 (mod l)` and lies in the null
//! space of a random `(r-1) × l` Gaussian matrix H with `H·1 = 0`. Any `l-r+1`
//! rows then span the all-ones vector with probability 1 (their Theorem 3), so
//! the master recovers the sum of the group's partition gradients from any
//! `l-r+1` codewords by solving `a·B_W = 1` (their Algorithm 1).
//!
//! Two corner cases are built exactly instead of numerically: `r = l` (every
//! row is the all-ones vector: fractional repetition inside the group, 001
//! §3.1) and `r = 1` (B = I: no redundancy).

use faer::Mat;
use faer::linalg::solvers::{Solve, SolveLstsq};
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

use super::CodingError;

/// Encoding matrix of a cyclic repetition code over one group.
#[derive(Debug, Clone)]
pub struct CyclicMds {
    size: usize,
    load: usize,
    /// Row i: the coefficients of worker-position i on local partitions 0..size.
    b: Mat<f64>,
    max_abs_b: f64,
    /// The factors of [`Structured`], computed at the first solve of a code
    /// of at least [`STRUCTURED_MIN_SIZE`] positions (`None` inside: the
    /// code did not factor well, every set is solved densely).
    structured: std::sync::OnceLock<Option<Structured>>,
}

/// Codes of at least this many positions are decoded by their structure
/// (`Structured`: O(size·r + r³) per arrival set after one dense
/// factorisation) instead of one dense least-squares solve per set
/// (O(size³): 3.5 s per set at size 4096). Below it the dense solve is as
/// fast or faster (`cargo bench --bench decode`, `examples/structured_decode.rs`)
/// and its results are the reference every figure was computed with.
pub const STRUCTURED_MIN_SIZE: usize = 256;

/// The most construction work [`CyclicMds::best_of`] takes on, in units of
/// one multiply-add: `draws × size × (r − 1)³ / 3` (each row of each draw
/// solves an (r − 1) × (r − 1) system). 2^37 (1.4e11) is 10 to 20 s on the
/// development machine (`cargo run --release --example structured_decode -- 4096 200 SETS`: K = 4096, r = 200, 8
/// draws, 8.6e10, takes 7 s); K = 4096 allows r up to 233 with the default 8
/// draws, K = 1000 up to 373, K = 373 or fewer any r.
pub const MAX_CONSTRUCTION_WORK: u128 = 1 << 37;

/// Decoding by structure. Every row of B lies in null(H), of dimension
/// m = size − r + 1, and any m rows are a basis of it, so every solution of
/// â·B = v (â over all positions, v in the row space) is â_v + Z·y, with â_v
/// one solution and the r − 1 columns of Z a basis of the left null space of
/// B. A set W of received positions (S = the others) decodes with the â of
/// that family that vanishes on S and has the least norm: the minimum-norm
/// solution of a·B_W = 1 that the dense solve gives. For a minimal set
/// (|S| = r − 1) y solves the square system Z_S·y = −â_S; for more arrivals
/// the least-norm one solves `[ZᵀZ  Z_Sᵀ; Z_S  0]·[y; λ] = [−Zᵀâ_v; −â_v,S]`.
/// â_v comes from one QR factorisation of B_W₀ᵀ for W₀ = the first m
/// positions (kept, O(size·m) per right-hand side), and column s of Z is
/// e_{m+s} − c_s where c_s expresses row m + s in the rows of W₀. Two steps of
/// iterative refinement on the residual (each one more such solve) bring the
/// residual to that of the dense solve.
#[derive(Debug, Clone)]
struct Structured {
    /// The QR factorisation of B_W₀ᵀ (size × m).
    w0: faer::linalg::solvers::Qr<f64>,
    /// Z: size × (r − 1).
    null: Mat<f64>,
    /// ZᵀZ.
    gram: Mat<f64>,
    /// â₁: the solution of â·B = 1 that vanishes on the positions m..size.
    ones: Vec<f64>,
}

/// Decoding coefficients for one arrival set of a [`CyclicMds`] code.
#[derive(Debug, Clone, PartialEq)]
pub struct Solution {
    /// `a` with `a·B_W = 1`, one entry per received position (ascending positions).
    pub coefficients: Vec<f64>,
    /// |a·B_W − 1|_inf.
    pub residual: f64,
    /// max|a| · max|B|: how much rounding in the received vectors can grow.
    pub amplification: f64,
}

impl CyclicMds {
    /// Algorithm 2 of 001 for `size` positions and load `load`, one draw of H.
    ///
    /// Limits: `1 <= load <= size`. The random matrix H is drawn from `rng`.
    pub fn new(size: usize, load: usize, rng: &mut impl Rng) -> Result<Self, CodingError> {
        if size == 0 || load == 0 || load > size {
            return Err(CodingError::invalid(
                "scheme.load",
                load,
                format!("must be between 1 and the group size {size}"),
            ));
        }
        let b = if load == size {
            Mat::full(size, size, 1.0)
        } else if load == 1 {
            Mat::identity(size, size)
        } else {
            Self::random_rows(size, load, rng)?
        };
        Ok(Self::from_matrix(load, b))
    }

    /// Algorithm 2 run `draws` times, keeping the code with the smallest
    /// largest coefficient max|B|.
    ///
    /// Every draw satisfies the B-span condition with probability 1; they
    /// differ in conditioning. A Gaussian H sometimes has a nearly singular
    /// `(r-1) x (r-1)` minor, which makes one row of B huge and its decoding
    /// sets ill-conditioned (we saw max|a|·max|B| = 2e8 at K = 14, r = 6 from
    /// a single draw, 1e6 as the worst over all sets with the best of 8).
    /// Limits: `draws >= 1`; `draws = 1` is Algorithm 2 as published.
    pub fn best_of(
        size: usize,
        load: usize,
        draws: usize,
        rng: &mut impl Rng,
    ) -> Result<Self, CodingError> {
        if draws == 0 {
            return Err(CodingError::invalid(
                "scheme.code_draws",
                0,
                "must be at least 1",
            ));
        }
        if load >= 2 && load < size {
            let work = construction_work(size, load, draws);
            if work > MAX_CONSTRUCTION_WORK {
                return Err(CodingError::invalid(
                    "scheme.load",
                    load,
                    format!(
                        "is too large for a cyclic code of {size} workers with scheme.code_draws = {draws}: \
                         building it takes {draws} × {size} × (load − 1)³ / 3 ≈ {:.1e} operations, \
                         more than the limit {:.1e} (about a minute); the largest load within it is {}",
                        work as f64,
                        MAX_CONSTRUCTION_WORK as f64,
                        max_load_within(size, draws),
                    ),
                ));
            }
        }
        let mut best = Self::new(size, load, rng)?;
        if load == 1 || load == size {
            return Ok(best); // exact constructions: nothing to choose
        }
        for _ in 1..draws {
            let candidate = Self::new(size, load, rng)?;
            if candidate.max_abs_b < best.max_abs_b {
                best = candidate;
            }
        }
        Ok(best)
    }

    /// The repetition code of `size >= 1` positions: every position holds all
    /// `size` partitions and sends their plain sum (load = size, no randomness).
    pub fn repetition(size: usize) -> Self {
        assert!(size >= 1, "a repetition code has at least one position");
        Self::from_matrix(size, Mat::full(size, size, 1.0))
    }

    fn from_matrix(load: usize, b: Mat<f64>) -> Self {
        let max_abs_b = b.norm_max();
        Self {
            size: b.nrows(),
            load,
            b,
            max_abs_b,
            structured: std::sync::OnceLock::new(),
        }
    }

    fn random_rows(size: usize, load: usize, rng: &mut impl Rng) -> Result<Mat<f64>, CodingError> {
        let s = load - 1;
        // H = randn(s, n), drawn row by row; H(:, n) = -sum(H(:, 1:n-1), 2), so that H·1 = 0.
        let mut draws: Vec<f64> = (0..s * size).map(|_| StandardNormal.sample(rng)).collect();
        for row in 0..s {
            let sum: f64 = draws[row * size..row * size + size - 1].iter().sum();
            draws[row * size + size - 1] = -sum;
        }
        let h = Mat::<f64>::from_fn(s, size, |r, c| draws[r * size + c]);
        let mut b = Mat::<f64>::zeros(size, size);
        for i in 0..size {
            // j = i, i+1, ..., i+s (mod n); B(i, j) = [1; -H(:, j(2:s+1)) \ H(:, j(1))].
            let cols: Vec<usize> = (0..=s).map(|o| (i + o) % size).collect();
            let hs = Mat::<f64>::from_fn(s, s, |r, c| h[(r, cols[c + 1])]);
            let rhs = Mat::<f64>::from_fn(s, 1, |r, _| -h[(r, cols[0])]);
            let x = hs.partial_piv_lu().solve(&rhs);
            // The LU does not report singularity: check that row i really lies in null(H).
            let check = &hs * &x - &rhs;
            let worst = (0..s).fold(0.0_f64, |m, r| m.max(check[(r, 0)].abs()));
            if !(worst.is_finite() && worst <= 1e-8 * (1.0 + rhs.norm_max())) {
                return Err(CodingError::Numerical {
                    what: format!(
                        "cyclic code construction (group size {size}, load {load}) drew a singular H"
                    ),
                });
            }
            b[(i, cols[0])] = 1.0;
            for (k, &c) in cols[1..].iter().enumerate() {
                b[(i, c)] = x[(k, 0)];
            }
        }
        Ok(b)
    }

    /// Number of positions (workers) and local partitions of the group.
    pub fn size(&self) -> usize {
        self.size
    }

    /// r: partitions per codeword.
    pub fn load(&self) -> usize {
        self.load
    }

    /// Codewords needed to decode: `size - load + 1`.
    pub fn needed(&self) -> usize {
        self.size - self.load + 1
    }

    /// The local partitions of position `i` and their coefficients, in computation order.
    pub fn row(&self, i: usize) -> Vec<(usize, f64)> {
        (0..self.load)
            .map(|o| {
                let c = (i + o) % self.size;
                (c, self.b[(i, c)])
            })
            .collect()
    }

    /// The encoding matrix B (rows: positions, columns: local partitions).
    pub fn matrix(&self) -> &Mat<f64> {
        &self.b
    }

    fn lstsq_qr(bt: &Mat<f64>) -> Vec<f64> {
        let ones = Mat::<f64>::full(bt.nrows(), 1, 1.0);
        let a = bt.qr().solve_lstsq(&ones);
        (0..bt.ncols()).map(|j| a[(j, 0)]).collect()
    }

    pub(crate) fn min_norm_svd(bt: &Mat<f64>) -> Option<Vec<f64>> {
        let (rows, m) = (bt.nrows(), bt.ncols());
        let svd = bt.thin_svd().ok()?;
        let (u, v, sigma) = (svd.U(), svd.V(), svd.S().column_vector());
        let dims = sigma.nrows();
        let sigma_max = (0..dims).fold(0.0_f64, |acc, k| acc.max(sigma[k]));
        let cutoff = sigma_max * (rows.max(m) as f64) * f64::EPSILON;
        let mut a = vec![0.0; m];
        for k in (0..dims).filter(|&k| sigma[k] > cutoff) {
            let scale = (0..rows).map(|r| u[(r, k)]).sum::<f64>() / sigma[k];
            for (j, aj) in a.iter_mut().enumerate() {
                *aj += v[(j, k)] * scale;
            }
        }
        Some(a)
    }

    /// Solve `a·B_W = 1` for the received positions `positions` (ascending, distinct).
    ///
    /// With more than `needed()` arrivals the minimum-norm solution (SVD)
    /// gives the smallest coefficients. Returns `None` when
    /// the all-ones vector is not in the span of the received rows, that is
    /// when the residual exceeds `tolerance`: a set that cannot decode is never
    /// given coefficients.
    pub fn solve(&self, positions: &[usize], tolerance: f64) -> Option<Solution> {
        if positions.is_empty() {
            return None;
        }
        let m = positions.len();
        // Exact answers where the structure gives them: repetition (any
        // subset, equal weights) and identity (only the full set, weights 1).
        if self.load == self.size {
            let a = 1.0 / m as f64;
            let residual = ((0..m).map(|_| a).sum::<f64>() - 1.0).abs();
            return Some(Solution {
                coefficients: vec![a; m],
                residual,
                amplification: a,
            });
        }
        if self.load == 1 {
            return (m == self.size).then(|| Solution {
                coefficients: vec![1.0; m],
                residual: 0.0,
                amplification: 1.0,
            });
        }
        if self.size >= STRUCTURED_MIN_SIZE {
            if positions.len() < self.needed() {
                // Fewer than m rows of a basis of null(H) span a subspace
                // that holds 1 with probability 0 (001, Theorem 3).
                return None;
            }
            let structured = self
                .structured
                .get_or_init(|| Structured::new(&self.b, self.load, tolerance));
            if let Some(structured) = structured {
                // With its refinement it is at least as accurate as the dense
                // solve (examples/structured_decode.rs counts both ways).
                return structured.solve(self, positions, tolerance);
            }
            // The code did not factor accurately: every set is solved densely.
        }
        self.solve_dense(positions, tolerance)
    }

    /// [`Self::solve`] by the code's structure (see `Structured`), whatever
    /// the size; the dense solve when the code does not factor accurately.
    pub fn solve_structured(&self, positions: &[usize], tolerance: f64) -> Option<Solution> {
        if self.load == self.size || self.load == 1 || positions.len() < self.needed() {
            return self.solve(positions, tolerance);
        }
        match self
            .structured
            .get_or_init(|| Structured::new(&self.b, self.load, tolerance))
        {
            Some(structured) => structured.solve(self, positions, tolerance),
            None => self.solve_dense(positions, tolerance),
        }
    }

    /// [`Self::solve`] by one dense least-squares solve (QR, or SVD beyond
    /// `needed()` arrivals), whatever the size: the reference.
    pub fn solve_dense(&self, positions: &[usize], tolerance: f64) -> Option<Solution> {
        solve_ones(&self.b, self.max_abs_b, positions, self.needed(), tolerance)
    }

    /// 1 − â·B for coefficients `a` of every position (0 where not
    /// received), by the cyclic support of the rows (O(size·r)).
    fn residual_vector(&self, a: &[f64]) -> Vec<f64> {
        let mut rest = vec![1.0; self.size];
        for (i, &ai) in a.iter().enumerate() {
            if ai != 0.0 {
                for o in 0..self.load {
                    let c = (i + o) % self.size;
                    rest[c] -= ai * self.b[(i, c)];
                }
            }
        }
        rest
    }
}

/// `draws × size × (load − 1)³ / 3`.
fn construction_work(size: usize, load: usize, draws: usize) -> u128 {
    let s = load.saturating_sub(1) as u128;
    draws as u128 * size as u128 * s * s * s / 3
}

/// The largest load whose construction work is within [`MAX_CONSTRUCTION_WORK`].
fn max_load_within(size: usize, draws: usize) -> usize {
    let mut load = 2;
    while load < size && construction_work(size, load + 1, draws) <= MAX_CONSTRUCTION_WORK {
        load += 1;
    }
    load
}

/// A structured solve whose residual is above `tolerance` times this is
/// refined (one more O(size·m) solve per step): the decode then keeps a
/// margin below the tolerance without paying for refinement in the usual case.
const REFINE_BELOW: f64 = 0.1;

impl Structured {
    /// The factors of `b` (load `load`, at least 2 and less than its size),
    /// or `None` when the factorisation of B_W₀ is not accurate to `tolerance`.
    fn new(b: &Mat<f64>, load: usize, tolerance: f64) -> Option<Self> {
        let size = b.nrows();
        let m = size - load + 1;
        let nulls = load - 1;
        // B_W₀ᵀ: size × m, column j = row j of B.
        let bt = Mat::<f64>::from_fn(size, m, |r, c| b[(c, r)]);
        let w0 = bt.qr();
        // c_s for the rows m..size of B: each lies in the span of B_W₀ᵀ.
        let rows = Mat::<f64>::from_fn(size, nulls, |r, c| b[(m + c, r)]);
        let x = w0.solve_lstsq(&rows);
        let fit = (&bt * &x - &rows).norm_max();
        if !(fit.is_finite() && fit <= tolerance * (1.0 + b.norm_max())) {
            return None;
        }
        let null = Mat::<f64>::from_fn(size, nulls, |r, c| {
            if r < m {
                -x[(r, c)]
            } else if r - m == c {
                1.0
            } else {
                0.0
            }
        });
        let gram = null.transpose() * &null;
        let mut structured = Self {
            w0,
            null,
            gram,
            ones: Vec::new(),
        };
        structured.ones = structured.on_w0(&vec![1.0; size]);
        Some(structured)
    }

    /// The solution of d·B = v that vanishes on the positions m..size, for v
    /// in the row space of B (one entry per partition): O(size·m).
    fn on_w0(&self, v: &[f64]) -> Vec<f64> {
        let size = v.len();
        let m = size - self.gram.nrows();
        let x = self
            .w0
            .solve_lstsq(Mat::<f64>::from_fn(size, 1, |r, _| v[r]));
        (0..size)
            .map(|p| if p < m { x[(p, 0)] } else { 0.0 })
            .collect()
    }

    /// The least-norm d over the positions with d·B = d₀·B and d = 0 on
    /// `missing`, from `d`= d₀ (which it changes): O(size·r + r³).
    fn project(&self, mut d: Vec<f64>, missing: &[usize]) -> Vec<f64> {
        let size = d.len();
        let nulls = self.gram.nrows();
        let y = if missing.len() == nulls {
            // A minimal set: Z_S is square and fixes y.
            let zs = Mat::<f64>::from_fn(nulls, nulls, |r, c| self.null[(missing[r], c)]);
            let rhs = Mat::<f64>::from_fn(nulls, 1, |r, _| -d[missing[r]]);
            zs.partial_piv_lu().solve(&rhs)
        } else {
            let n = nulls + missing.len();
            let kkt = Mat::<f64>::from_fn(n, n, |r, c| match (r < nulls, c < nulls) {
                (true, true) => self.gram[(r, c)],
                (true, false) => self.null[(missing[c - nulls], r)],
                (false, true) => self.null[(missing[r - nulls], c)],
                (false, false) => 0.0,
            });
            let rhs = Mat::<f64>::from_fn(n, 1, |r, _| {
                if r < nulls {
                    -(0..size).map(|p| self.null[(p, r)] * d[p]).sum::<f64>()
                } else {
                    -d[missing[r - nulls]]
                }
            });
            kkt.partial_piv_lu().solve(&rhs)
        };
        for (p, dp) in d.iter_mut().enumerate() {
            *dp += (0..nulls)
                .map(|c| self.null[(p, c)] * y[(c, 0)])
                .sum::<f64>();
        }
        d
    }

    /// The minimum-norm a with a·B_W = 1 for the rows `positions` of `code`
    /// (ascending, distinct, at least `needed()`), `None` when its residual
    /// exceeds `tolerance` after two steps of refinement: not decodable.
    fn solve(&self, code: &CyclicMds, positions: &[usize], tolerance: f64) -> Option<Solution> {
        let size = code.size;
        let mut received = vec![false; size];
        for &p in positions {
            received[p] = true;
        }
        let missing: Vec<usize> = (0..size).filter(|&p| !received[p]).collect();
        if missing.len() > self.gram.nrows() {
            return None;
        }
        let mut a = self.project(self.ones.clone(), &missing);
        let mut residual = code.residual_vector(&a);
        // Iterative refinement: correct a by the solution for the residual.
        for _ in 0..2 {
            let worst = residual.iter().fold(0.0_f64, |m, r| m.max(r.abs()));
            if !worst.is_finite() || worst <= tolerance * REFINE_BELOW {
                break;
            }
            let delta = self.project(self.on_w0(&residual), &missing);
            let next: Vec<f64> = a.iter().zip(&delta).map(|(a, d)| a + d).collect();
            let next_residual = code.residual_vector(&next);
            let next_worst = next_residual.iter().fold(0.0_f64, |m, r| m.max(r.abs()));
            if next_worst.is_nan() || next_worst >= worst {
                break;
            }
            (a, residual) = (next, next_residual);
        }
        let worst = residual.iter().fold(0.0_f64, |m, r| m.max(r.abs()));
        if !worst.is_finite() || worst > tolerance {
            return None;
        }
        let coefficients: Vec<f64> = positions.iter().map(|&p| a[p]).collect();
        let max_a = coefficients.iter().fold(0.0_f64, |acc, x| acc.max(x.abs()));
        Some(Solution {
            coefficients,
            residual: worst,
            amplification: max_a * code.max_abs_b,
        })
    }
}

/// Solve `a·B_S = 1` for the rows `positions` (ascending, distinct) of any
/// encoding matrix `b` (rows: codewords, columns: partitions; `max_abs_b` =
/// max|B|). B_S^T a^T = 1 is a (columns x |S|) system: with exactly
/// `unique_at` rows, no more than the columns (the master's usual case), it
/// has full column rank and a unique solution (Householder QR least squares);
/// otherwise the minimum-norm solution by thin SVD. `None` when the residual
/// |a·B_S − 1|_inf exceeds `tolerance`: a set that cannot decode is never
/// given coefficients.
pub(crate) fn solve_ones(
    b: &Mat<f64>,
    max_abs_b: f64,
    positions: &[usize],
    unique_at: usize,
    tolerance: f64,
) -> Option<Solution> {
    let m = positions.len();
    if m == 0 {
        return None;
    }
    let cols = b.ncols();
    let bt = Mat::<f64>::from_fn(cols, m, |r, c| b[(positions[c], r)]);
    let a = if m == unique_at && m <= cols {
        CyclicMds::lstsq_qr(&bt)
    } else {
        CyclicMds::min_norm_svd(&bt)?
    };
    let residual = (0..cols)
        .map(|r| ((0..m).map(|j| bt[(r, j)] * a[j]).sum::<f64>() - 1.0).abs())
        .fold(0.0_f64, f64::max);
    if !residual.is_finite() || residual > tolerance {
        return None;
    }
    let max_a = a.iter().fold(0.0_f64, |acc, x| acc.max(x.abs()));
    Some(Solution {
        coefficients: a,
        residual,
        amplification: max_a * max_abs_b,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Stream, stream};

    fn code(size: usize, load: usize) -> CyclicMds {
        CyclicMds::new(size, load, &mut stream(42, Stream::Code)).unwrap()
    }

    #[test]
    fn rows_have_cyclic_support_and_lie_in_null_space_of_h() {
        let c = code(7, 3);
        for i in 0..7 {
            let row = c.row(i);
            let cols: Vec<usize> = row.iter().map(|&(p, _)| p).collect();
            assert_eq!(cols, vec![i, (i + 1) % 7, (i + 2) % 7]);
            assert_eq!(row[0].1, 1.0, "first coefficient is 1 as in Algorithm 2");
            let nonzero = (0..7).filter(|&j| c.matrix()[(i, j)] != 0.0).count();
            assert_eq!(nonzero, 3);
        }
    }

    #[test]
    fn tandon_figure_1_shape_decodes_from_any_two_of_three() {
        let c = code(3, 2);
        for set in [[0, 1], [0, 2], [1, 2]] {
            let s = c.solve(&set, 1e-9).expect("any 2 of 3 decode");
            assert!(s.residual < 1e-12);
        }
        for single in [[0], [1], [2]] {
            assert!(
                c.solve(&single, 1e-9).is_none(),
                "one codeword of a load-2 code cannot decode"
            );
        }
    }

    #[test]
    fn full_load_is_exact_repetition_and_load_one_is_identity() {
        let rep = code(4, 4);
        assert_eq!(rep.matrix(), &Mat::<f64>::full(4, 4, 1.0));
        assert_eq!(rep.needed(), 1);
        let s = rep.solve(&[2], 1e-12).unwrap();
        assert_eq!(s.coefficients, vec![1.0]);
        let id = code(4, 1);
        assert_eq!(id.matrix(), &Mat::<f64>::identity(4, 4));
        assert!(id.solve(&[0, 1, 2], 1e-9).is_none());
        assert_eq!(
            id.solve(&[0, 1, 2, 3], 1e-12).unwrap().coefficients,
            vec![1.0; 4]
        );
    }

    /// Ascending random subsets of 0..size with `missing` positions left out.
    fn random_set(size: usize, missing: usize, rng: &mut impl Rng) -> Vec<usize> {
        use rand::seq::SliceRandom;
        let mut all: Vec<usize> = (0..size).collect();
        all.shuffle(rng);
        let mut set = all[missing..].to_vec();
        set.sort_unstable();
        set
    }

    #[test]
    fn the_structured_solve_gives_the_dense_minimum_norm_coefficients() {
        let mut rng = stream(5, Stream::CheckSampling);
        for (size, load) in [(12, 3), (40, 10), (64, 2), (257, 2), (300, 7)] {
            let c = CyclicMds::best_of(size, load, 2, &mut stream(9, Stream::Code)).unwrap();
            for missing in [load - 1, load / 2, 0] {
                for _ in 0..4 {
                    let set = random_set(size, missing, &mut rng);
                    let dense = c.solve_dense(&set, 1e-6).expect("dense decodes");
                    let fast = c.solve_structured(&set, 1e-6).unwrap_or_else(|| {
                        panic!("K={size} r={load} missing {missing}: structured fails")
                    });
                    let scale = dense
                        .coefficients
                        .iter()
                        .fold(1.0_f64, |m, x| m.max(x.abs()));
                    for (a, b) in dense.coefficients.iter().zip(&fast.coefficients) {
                        assert!(
                            (a - b).abs() <= 1e-7 * scale,
                            "K={size} r={load} missing {missing}: {a} vs {b}"
                        );
                    }
                    assert!(fast.residual <= 1e-6);
                    assert!(c.solve(&set, 1e-6).is_some());
                }
            }
            // One missing position more than the code tolerates: not decodable either way.
            let set = random_set(size, load, &mut rng);
            assert!(c.solve_dense(&set, 1e-6).is_none());
            assert!(c.solve_structured(&set, 1e-6).is_none());
            assert!(c.solve(&set, 1e-6).is_none());
        }
    }

    #[test]
    fn large_codes_are_decoded_by_structure() {
        let c =
            CyclicMds::best_of(STRUCTURED_MIN_SIZE, 4, 1, &mut stream(2, Stream::Code)).unwrap();
        let set: Vec<usize> = (3..STRUCTURED_MIN_SIZE).collect();
        assert!(c.structured.get().is_none(), "factored at the first solve");
        let s = c.solve(&set, 1e-8).expect("decodes");
        assert!(
            matches!(c.structured.get(), Some(Some(_))),
            "the code's structure was factored and used"
        );
        assert_eq!(Some(s), c.solve_structured(&set, 1e-8));
    }

    #[test]
    fn construction_work_beyond_the_limit_is_refused_naming_the_load() {
        let max = max_load_within(4096, 8);
        assert!(construction_work(4096, max, 8) <= MAX_CONSTRUCTION_WORK);
        assert!(construction_work(4096, max + 1, 8) > MAX_CONSTRUCTION_WORK);
        let e = CyclicMds::best_of(4096, max + 1, 8, &mut stream(1, Stream::Code)).unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("scheme.load = {} is too large", max + 1)),
            "{text}"
        );
        assert!(
            text.contains(&format!("the largest load within it is {max}")),
            "{text}"
        );
        // Every load of a code of 100 workers is within the limit.
        assert_eq!(max_load_within(100, 8), 100);
        // Exact constructions cost nothing: any size may use them.
        assert!(CyclicMds::best_of(4096, 4096, 8, &mut stream(1, Stream::Code)).is_ok());
        assert!(CyclicMds::best_of(300, 1, 8, &mut stream(1, Stream::Code)).is_ok());
    }

    #[test]
    fn invalid_load_is_rejected_naming_the_field() {
        let e = CyclicMds::new(3, 4, &mut stream(1, Stream::Code)).unwrap_err();
        assert!(e.to_string().starts_with("scheme.load = 4"), "{e}");
    }
}
