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

    fn min_norm_svd(bt: &Mat<f64>) -> Option<Vec<f64>> {
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
        solve_ones(&self.b, self.max_abs_b, positions, self.needed(), tolerance)
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

    #[test]
    fn invalid_load_is_rejected_naming_the_field() {
        let e = CyclicMds::new(3, 4, &mut stream(1, Stream::Code)).unwrap_err();
        assert!(e.to_string().starts_with("scheme.load = 4"), "{e}");
    }
}
