//! Fused loss-and-gradient kernels.
//!
//! One pass over the samples: for each row the prediction `x·theta` is
//! computed and the row is added to the gradient while it is still in the
//! L1 cache, so a partition larger than the caches is read from memory once
//! per iteration and the kernel is bound by memory bandwidth.

use ndarray::ArrayView2;

use super::sparse::{CsrMatrix, Features};
use crate::config::Loss;

/// [`accumulate`] or [`accumulate_sparse`], as the samples are stored.
pub fn accumulate_features(
    loss: Loss,
    x: &Features,
    y: &[f64],
    rows: std::ops::Range<usize>,
    theta: &[f64],
    grad: &mut [f64],
) -> f64 {
    match x {
        Features::Dense(x) => accumulate(loss, x.view(), y, rows, theta, grad),
        Features::Sparse(x) => accumulate_sparse(loss, x, y, rows, theta, grad),
    }
}

/// [`loss_sum`] or [`loss_sum_sparse`], as the samples are stored.
pub fn loss_sum_features(loss: Loss, x: &Features, y: &[f64], theta: &[f64]) -> f64 {
    match x {
        Features::Dense(x) => loss_sum(loss, x.view(), y, theta),
        Features::Sparse(x) => loss_sum_sparse(loss, x, y, theta),
    }
}

/// The fused pass of [`accumulate`] over CSR rows: per row the prediction
/// from the stored entries, then the same entries scattered into `grad`
/// while they are in the L1 cache. Reads each stored entry once per pass
/// (12 bytes) plus the entries of `theta` and `grad` it indexes.
pub fn accumulate_sparse(
    loss: Loss,
    x: &CsrMatrix,
    y: &[f64],
    rows: std::ops::Range<usize>,
    theta: &[f64],
    grad: &mut [f64],
) -> f64 {
    debug_assert_eq!(x.columns(), theta.len());
    debug_assert_eq!(grad.len(), theta.len());
    let mut total = 0.0;
    for i in rows {
        let (indices, values) = x.row(i);
        let z = sparse_dot(indices, values, theta);
        let (value, slope) = loss_and_slope(loss, z, y[i]);
        total += value;
        for (&j, &v) in indices.iter().zip(values) {
            grad[j as usize] += slope * v;
        }
    }
    total
}

/// The loss alone over CSR rows (test data).
pub fn loss_sum_sparse(loss: Loss, x: &CsrMatrix, y: &[f64], theta: &[f64]) -> f64 {
    (0..x.rows())
        .map(|i| {
            let (indices, values) = x.row(i);
            loss_and_slope(loss, sparse_dot(indices, values, theta), y[i]).0
        })
        .sum()
}

/// `Σ values[k] · theta[indices[k]]`, with two partial sums to halve the
/// chain of dependent additions.
#[inline(always)]
fn sparse_dot(indices: &[u32], values: &[f64], theta: &[f64]) -> f64 {
    let (mut even, mut odd) = (0.0, 0.0);
    let mut pairs = indices.chunks_exact(2).zip(values.chunks_exact(2));
    for (j, v) in &mut pairs {
        even += v[0] * theta[j[0] as usize];
        odd += v[1] * theta[j[1] as usize];
    }
    if indices.len() % 2 == 1 {
        let last = indices.len() - 1;
        even += values[last] * theta[indices[last] as usize];
    }
    even + odd
}

/// Adds `sum_i grad l_i(theta)` over `rows` of (`x`, `y`) into `grad` and
/// returns `sum_i l_i(theta)`.
///
/// Least squares: `l = (x·theta − y)² / 2`. Logistic (labels ±1):
/// `l = log(1 + exp(−y·x·theta))`.
///
/// On x86-64 processors with AVX2 and FMA the same code runs compiled for
/// them (chosen at run time, so one binary runs on every node of a cluster);
/// elsewhere it runs as compiled for the baseline target.
pub fn accumulate(
    loss: Loss,
    x: ArrayView2<'_, f64>,
    y: &[f64],
    rows: std::ops::Range<usize>,
    theta: &[f64],
    grad: &mut [f64],
) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU supports the features the function is compiled for.
        return unsafe { accumulate_avx2_fma(loss, x, y, rows, theta, grad) };
    }
    accumulate_portable(loss, x, y, rows, theta, grad)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn accumulate_avx2_fma(
    loss: Loss,
    x: ArrayView2<'_, f64>,
    y: &[f64],
    rows: std::ops::Range<usize>,
    theta: &[f64],
    grad: &mut [f64],
) -> f64 {
    fused(
        loss,
        x,
        y,
        rows,
        theta,
        grad,
        |a, b| avx::dot(a, b),
        |s, a, b, next| avx::axpy_prefetch(s, a, b, next),
    )
}

fn accumulate_portable(
    loss: Loss,
    x: ArrayView2<'_, f64>,
    y: &[f64],
    rows: std::ops::Range<usize>,
    theta: &[f64],
    grad: &mut [f64],
) -> f64 {
    fused(
        loss,
        x,
        y,
        rows,
        theta,
        grad,
        dot,
        |s, a, b, _next: &[f64]| axpy(s, a, b),
    )
}

/// How far ahead of the row being accumulated the vector path prefetches
/// (into the L2 cache): the first row starting at least this many bytes
/// later, so 2 rows ahead for d = 1000 and more for narrower rows. One row
/// ahead into L1 (T0) left the memory system idle during the accumulation
/// and evicted theta and the gradient: 43% of the read bandwidth; 2 rows
/// ahead into L2 (T1): 70% (`cargo bench --bench kernel`).
const PREFETCH_AHEAD_BYTES: usize = 12 << 10;

/// The fused pass, generic in its two vector operations. `axpy` also gets
/// a row further on (see [`PREFETCH_AHEAD_BYTES`]), which the vector path
/// prefetches while it accumulates this one from the L1 cache, so that the
/// memory system keeps streaming.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the kernel's data plus its two vector operations
fn fused(
    loss: Loss,
    x: ArrayView2<'_, f64>,
    y: &[f64],
    rows: std::ops::Range<usize>,
    theta: &[f64],
    grad: &mut [f64],
    dot: impl Fn(&[f64], &[f64]) -> f64,
    axpy: impl Fn(f64, &[f64], &mut [f64], &[f64]),
) -> f64 {
    debug_assert_eq!(x.ncols(), theta.len());
    debug_assert_eq!(grad.len(), theta.len());
    let data = x
        .as_slice()
        .expect("partition matrices are row-major and contiguous");
    let d = x.ncols();
    let row = |i: usize| &data[i * d..(i + 1) * d];
    let ahead = PREFETCH_AHEAD_BYTES
        .div_ceil(std::mem::size_of::<f64>() * d.max(1))
        .max(1);
    let mut total = 0.0;
    for i in rows.clone() {
        let (value, slope) = loss_and_slope(loss, dot(row(i), theta), y[i]);
        total += value;
        // Prefetch past the range's end too, within the matrix: a caller
        // that walks a partition in blocks (the worker, to probe for a newer
        // task between them) gets the next block's first rows in cache, as in
        // one pass (`scripts/bench-runtime.sh`, K = 1, 10000 × 1000: 1.12× the
        // MPI_Reduce loop with the prefetch stopping at the block's end, 0.98× with it).
        let next = if i + ahead < x.nrows() {
            row(i + ahead)
        } else {
            &[][..]
        };
        axpy(slope, row(i), grad, next);
    }
    total
}

/// The loss of one sample with prediction `z` and label `y`, and its
/// derivative in `z`.
#[inline(always)]
fn loss_and_slope(loss: Loss, z: f64, y: f64) -> (f64, f64) {
    match loss {
        Loss::LeastSquares => {
            let r = z - y;
            (0.5 * r * r, r)
        }
        Loss::Logistic => {
            let m = y * z;
            // log(1 + e^{-m}) and its derivative -y·sigma(-m), both stable,
            // from one exponential e = e^{-|m|} <= 1.
            let e = (-m.abs()).exp();
            let (value, sigma) = if m > 0.0 {
                (e.ln_1p(), e / (1.0 + e))
            } else {
                (-m + e.ln_1p(), 1.0 / (1.0 + e))
            };
            (value, -y * sigma)
        }
    }
}

/// AVX2 + FMA versions of [`dot`] and [`axpy`]: 256-bit vectors, four
/// independent accumulators (16 doubles in flight) to hide the FMA latency.
#[cfg(target_arch = "x86_64")]
mod avx {
    use std::arch::x86_64::*;

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub fn dot(a: &[f64], b: &[f64]) -> f64 {
        let n = a.len().min(b.len());
        let main = n - n % 16;
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        // SAFETY: every load reads 4 doubles at an index + 3 < main <= n of both slices.
        unsafe {
            let mut acc = [_mm256_setzero_pd(); 4];
            let mut i = 0;
            while i < main {
                for (k, s) in acc.iter_mut().enumerate() {
                    let j = i + 4 * k;
                    *s =
                        _mm256_fmadd_pd(_mm256_loadu_pd(pa.add(j)), _mm256_loadu_pd(pb.add(j)), *s);
                }
                i += 16;
            }
            let sum = _mm256_add_pd(_mm256_add_pd(acc[0], acc[1]), _mm256_add_pd(acc[2], acc[3]));
            let mut lanes = [0.0; 4];
            _mm256_storeu_pd(lanes.as_mut_ptr(), sum);
            let tail: f64 = a[main..n].iter().zip(&b[main..n]).map(|(x, y)| x * y).sum();
            (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + tail
        }
    }

    /// `y += alpha · x`, prefetching `next` (a row further on) into the L2
    /// cache as it goes, so that the memory system streams while this
    /// one is accumulated from the L1 cache.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub fn axpy_prefetch(alpha: f64, x: &[f64], y: &mut [f64], next: &[f64]) {
        let n = x.len().min(y.len());
        let main = n - n % 8;
        let (px, py) = (x.as_ptr(), y.as_mut_ptr());
        let prefetch_len = next.len().min(main);
        // SAFETY: every load and store touches 4 doubles at an index + 3 < main <= n
        // of both slices; a prefetch is a hint and points into `next` below its length.
        unsafe {
            let a = _mm256_set1_pd(alpha);
            let mut i = 0;
            while i < main {
                if i < prefetch_len {
                    _mm_prefetch::<_MM_HINT_T1>(next.as_ptr().add(i).cast());
                }
                let v0 = _mm256_fmadd_pd(a, _mm256_loadu_pd(px.add(i)), _mm256_loadu_pd(py.add(i)));
                let v1 = _mm256_fmadd_pd(
                    a,
                    _mm256_loadu_pd(px.add(i + 4)),
                    _mm256_loadu_pd(py.add(i + 4)),
                );
                _mm256_storeu_pd(py.add(i), v0);
                _mm256_storeu_pd(py.add(i + 4), v1);
                i += 8;
            }
        }
        for (yi, xi) in y[main..n].iter_mut().zip(&x[main..n]) {
            *yi += alpha * xi;
        }
    }
}

/// The loss alone (test data), same definitions as [`accumulate`].
pub fn loss_sum(loss: Loss, x: ArrayView2<'_, f64>, y: &[f64], theta: &[f64]) -> f64 {
    let mut total = 0.0;
    for (i, row) in x.rows().into_iter().enumerate() {
        let row = row.as_slice().expect("row-major");
        let z = dot(row, theta);
        total += match loss {
            Loss::LeastSquares => 0.5 * (z - y[i]).powi(2),
            Loss::Logistic => {
                let m = y[i] * z;
                if m > 0.0 {
                    (-m).exp().ln_1p()
                } else {
                    -m + m.exp().ln_1p()
                }
            }
        };
    }
    total
}

/// Lanes of independent partial sums in [`dot`]: four vector registers of
/// four doubles, enough to hide the latency of the adds.
const DOT_LANES: usize = 16;

/// Dot product with 16 independent accumulators, so that it vectorises and
/// is not bound by the latency of one long chain of additions.
#[inline(always)]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0; DOT_LANES];
    let split = a.len() - a.len() % DOT_LANES;
    let (a_main, a_rest) = a.split_at(split);
    let (b_main, b_rest) = b.split_at(split);
    for (x, y) in a_main
        .chunks_exact(DOT_LANES)
        .zip(b_main.chunks_exact(DOT_LANES))
    {
        for l in 0..DOT_LANES {
            acc[l] += x[l] * y[l];
        }
    }
    let tail: f64 = a_rest.iter().zip(b_rest).map(|(x, y)| x * y).sum();
    let mut width = DOT_LANES;
    while width > 1 {
        width /= 2;
        for l in 0..width {
            acc[l] += acc[l + width];
        }
    }
    acc[0] + tail
}

/// `y += alpha · x`.
#[inline(always)]
pub fn axpy(alpha: f64, x: &[f64], y: &mut [f64]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += alpha * xi;
    }
}

/// A term of [`sparse_combination_into`]: coefficient, vector, support.
pub type SparseTerm<'a> = (f64, &'a [f64], &'a [u32]);

/// [`combination_into`] of vectors each zero outside its support (the
/// indices of `support`, ascending, below `len`): `out` is zeroed, then each
/// term adds `c · v` at its support only, in the terms' order. Bit for bit
/// [`combination_into`]'s result for such vectors (a skipped `c · 0` adds
/// a signed zero, which leaves a value unchanged and `+0` at `+0`), with
/// a pass over the supports instead of over every term's `len` values.
pub fn sparse_combination_into(out: &mut Vec<f64>, terms: &[SparseTerm<'_>], len: usize) {
    out.clear();
    out.resize(len, 0.0);
    for &(c, v, support) in terms {
        for &j in support {
            let j = j as usize;
            out[j] += c * v[j];
        }
    }
}

/// Whether every value of `v` is finite, in one pass that vectorises
/// (`x · 0` is 0 for a finite x and NaN otherwise, summed over eight lanes)
/// where a search for the first non-finite value does not.
pub fn all_finite(v: &[f64]) -> bool {
    const LANES: usize = 8;
    let mut check = [0.0; LANES];
    let mut chunks = v.chunks_exact(LANES);
    for c in &mut chunks {
        for k in 0..LANES {
            check[k] += c[k] * 0.0;
        }
    }
    chunks.remainder().iter().for_each(|x| check[0] += x * 0.0);
    check.iter().sum::<f64>() == 0.0
}

/// Values per block of a blocked linear combination ([`combination_into`],
/// and the master's checked combine of the gathered vectors): 8 KiB of the
/// output, which stays in the first-level cache while every term is added
/// to it.
pub const COMBINATION_BLOCK: usize = 1024;

/// `out = Σ c · v` over `terms` in their order, the first term as
/// `0 + c · v` and each other added as [`axpy`] adds it (every term counted,
/// a zero coefficient too): bit for bit what zeroing `out` and adding the
/// terms one after another gives, but in one blocked pass that writes `out`
/// once, without zeroing it first. `out` is replaced by `len` values (zeros
/// when there is no term); every term has at least `len` values.
pub fn combination_into(out: &mut Vec<f64>, terms: &[(f64, &[f64])], len: usize) {
    out.clear();
    let Some((&(c, first), rest)) = terms.split_first() else {
        out.resize(len, 0.0);
        return;
    };
    out.reserve(len);
    let mut start = 0;
    while start < len {
        let end = (start + COMBINATION_BLOCK).min(len);
        out.extend(first[start..end].iter().map(|g| 0.0 + c * g));
        for &(c, v) in rest {
            axpy(c, &v[start..end], &mut out[start..end]);
        }
        start = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Finite, or not for one infinity or NaN wherever it is (in a lane or
    /// in the remainder), as the plain search says.
    #[test]
    fn all_finite_agrees_with_a_search_for_a_non_finite_value() {
        for len in [0, 1, 7, 8, 9, 64, 101] {
            let clean: Vec<f64> = (0..len).map(|i| i as f64 * 1e300 - 3e301).collect();
            assert!(all_finite(&clean), "len {len}");
            for at in 0..len {
                for bad in [f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
                    let mut v = clean.clone();
                    v[at] = bad;
                    assert!(!all_finite(&v), "len {len}, {bad} at {at}");
                }
            }
        }
    }

    /// On vectors zero outside their supports, the sparse combination
    /// equals the dense one bit for bit: overlapping and disjoint supports,
    /// negative coefficients (signed zeros), an empty support.
    #[test]
    fn a_sparse_combination_equals_the_dense_one_bit_for_bit() {
        let len = 50;
        let supports: [Vec<u32>; 4] = [
            vec![0, 3, 4, 17, 49],
            vec![3, 5, 17, 20],
            vec![],
            vec![1, 4, 20, 33, 49],
        ];
        let vectors: Vec<Vec<f64>> = supports
            .iter()
            .enumerate()
            .map(|(k, support)| {
                let mut v = vec![0.0; len];
                for (n, &j) in support.iter().enumerate() {
                    // A zero inside the support too, and values that cancel.
                    v[j as usize] = [1.5, -0.0, 0.0, -2.25, 1e300][(n + k) % 5];
                }
                v
            })
            .collect();
        for coefficients in [
            vec![-1.0, 0.5, 2.0, -3.0],
            vec![1.0],
            vec![-0.5, -0.5],
            vec![],
        ] {
            let dense: Vec<(f64, &[f64])> = coefficients
                .iter()
                .zip(&vectors)
                .map(|(&c, v)| (c, v.as_slice()))
                .collect();
            let sparse: Vec<SparseTerm<'_>> = coefficients
                .iter()
                .zip(&vectors)
                .zip(&supports)
                .map(|((&c, v), s)| (c, v.as_slice(), s.as_slice()))
                .collect();
            let (mut want, mut got) = (Vec::new(), vec![f64::NAN; 3]);
            combination_into(&mut want, &dense, len);
            sparse_combination_into(&mut got, &sparse, len);
            let differ = got
                .iter()
                .zip(&want)
                .position(|(a, b)| a.to_bits() != b.to_bits());
            assert_eq!(
                differ, None,
                "coefficients {coefficients:?}: {got:?} against {want:?}"
            );
        }
    }

    /// The blocked combination equals zeroing and adding the terms one
    /// after another, bit for bit, across block edges, with a zero
    /// coefficient and with no term at all.
    #[test]
    fn a_blocked_combination_equals_adding_the_terms_in_turn_bit_for_bit() {
        let len = 2 * COMBINATION_BLOCK + 37;
        let vectors: Vec<Vec<f64>> = (0..3)
            .map(|k| {
                (0..len)
                    .map(|i| ((i * 7 + k * 13) % 29) as f64 * 0.1 - 1.3)
                    .collect()
            })
            .collect();
        for coefficients in [vec![], vec![0.7], vec![0.7, -1.9], vec![0.3, 0.0, 2.5]] {
            let terms: Vec<(f64, &[f64])> = coefficients
                .iter()
                .zip(&vectors)
                .map(|(&c, v)| (c, v.as_slice()))
                .collect();
            let mut want = vec![0.0; len];
            for &(c, v) in &terms {
                axpy(c, v, &mut want);
            }
            let mut got = vec![f64::NAN; 5];
            combination_into(&mut got, &terms, len);
            assert_eq!(got.len(), len);
            let differ = got
                .iter()
                .zip(&want)
                .position(|(a, b)| a.to_bits() != b.to_bits());
            assert_eq!(differ, None, "coefficients {coefficients:?}");
        }
    }
    use ndarray::array;

    /// Central differences of the summed loss.
    fn numeric_gradient(loss: Loss, x: ArrayView2<'_, f64>, y: &[f64], theta: &[f64]) -> Vec<f64> {
        let h = 1e-6;
        (0..theta.len())
            .map(|j| {
                let mut plus = theta.to_vec();
                let mut minus = theta.to_vec();
                plus[j] += h;
                minus[j] -= h;
                (loss_sum(loss, x, y, &plus) - loss_sum(loss, x, y, &minus)) / (2.0 * h)
            })
            .collect()
    }

    #[test]
    fn gradients_match_finite_differences() {
        let x = array![
            [1.0, -2.0, 0.5, 3.0, 1.5],
            [0.3, 0.1, -1.0, 2.0, -0.7],
            [-1.2, 0.4, 0.9, -0.2, 0.0]
        ];
        let theta = [0.2, -0.1, 0.3, 0.05, -0.4];
        for (loss, y) in [
            (Loss::LeastSquares, [1.0, -0.5, 2.0]),
            (Loss::Logistic, [1.0, -1.0, 1.0]),
        ] {
            let mut grad = vec![0.0; 5];
            let value = accumulate(loss, x.view(), &y, 0..3, &theta, &mut grad);
            assert!((value - loss_sum(loss, x.view(), &y, &theta)).abs() < 1e-12);
            let numeric = numeric_gradient(loss, x.view(), &y, &theta);
            for (a, b) in grad.iter().zip(&numeric) {
                assert!((a - b).abs() < 1e-6, "{loss:?}: {grad:?} vs {numeric:?}");
            }
        }
    }

    #[test]
    fn logistic_is_stable_for_large_margins() {
        let x = array![[1000.0], [-1000.0]];
        let mut grad = vec![0.0];
        let value = accumulate(
            Loss::Logistic,
            x.view(),
            &[1.0, 1.0],
            0..2,
            &[1.0],
            &mut grad,
        );
        assert!(
            value.is_finite() && (value - 1000.0).abs() < 1e-9,
            "{value}"
        );
        assert!((grad[0] - 1000.0).abs() < 1e-9, "{grad:?}");
    }

    #[test]
    fn row_ranges_add_up() {
        let x = array![[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]];
        let y = [1.0, 2.0, 3.0];
        let theta = [0.1, 0.2];
        let mut whole = vec![0.0; 2];
        let v = accumulate(Loss::LeastSquares, x.view(), &y, 0..3, &theta, &mut whole);
        let mut parts = vec![0.0; 2];
        let v1 = accumulate(Loss::LeastSquares, x.view(), &y, 0..1, &theta, &mut parts);
        let v2 = accumulate(Loss::LeastSquares, x.view(), &y, 1..3, &theta, &mut parts);
        assert!((v - v1 - v2).abs() < 1e-15);
        assert_eq!(whole, parts);
    }

    #[test]
    fn vector_paths_agree_with_the_portable_one() {
        // Rows of 37 and 1000 features: 42 and 2 rows between a row and the
        // row prefetched while it is accumulated, so both sizes prefetch.
        for (rows, d) in [(60, 37), (9, 1000)] {
            let x = ndarray::Array2::from_shape_fn((rows, d), |(i, j)| {
                ((i * 31 + j * 17) % 23) as f64 / 7.0 - 1.5
            });
            let y: Vec<f64> = (0..rows)
                .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
                .collect();
            let theta: Vec<f64> = (0..d)
                .map(|j| (j as f64 - 18.0) / (40.0 * d as f64))
                .collect();
            for loss in [Loss::LeastSquares, Loss::Logistic] {
                let mut a = vec![0.0; d];
                let mut b = vec![0.0; d];
                let va = accumulate(loss, x.view(), &y, 1..rows, &theta, &mut a);
                let vb = accumulate_portable(loss, x.view(), &y, 1..rows, &theta, &mut b);
                assert!((va - vb).abs() <= 1e-12 * vb.abs().max(1.0));
                // In two blocks, the first prefetching into the second (as
                // the worker walks a partition): the same gradient, bit for bit.
                let mut blocks = vec![0.0; d];
                let mid = rows / 2;
                let v1 = accumulate(loss, x.view(), &y, 1..mid, &theta, &mut blocks);
                let v2 = accumulate(loss, x.view(), &y, mid..rows, &theta, &mut blocks);
                assert_eq!(blocks, a, "{loss:?} d = {d}: blocks and one pass");
                assert!((v1 + v2 - va).abs() <= 1e-12 * va.abs().max(1.0));
                for (p, q) in a.iter().zip(&b) {
                    assert!(
                        (p - q).abs() <= 1e-12 * q.abs().max(1.0),
                        "{loss:?} d = {d}"
                    );
                }
            }
        }
    }

    #[test]
    fn dot_handles_every_tail_length() {
        for n in 0..40 {
            let a: Vec<f64> = (0..n).map(|i| i as f64 + 0.5).collect();
            let b: Vec<f64> = (0..n).map(|i| 2.0 - i as f64).collect();
            let naive: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - naive).abs() < 1e-12);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(200))]

        /// The sparse and the dense kernel agree on the same data: random
        /// shapes, densities from empty rows to full ones, both losses, any
        /// row range.
        #[test]
        fn sparse_and_dense_kernels_agree(
            rows in 1usize..40,
            d in 1usize..70,
            density in 0.0f64..1.0,
            seed in proptest::prelude::any::<u64>(),
            from in 0usize..40,
        ) {
            use rand::{RngExt, SeedableRng};
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let x = ndarray::Array2::from_shape_fn((rows, d), |_| {
                if rng.random::<f64>() < density { rng.random_range(-3.0..3.0) } else { 0.0 }
            });
            let csr = CsrMatrix::from_dense(&x).unwrap();
            let labels: Vec<f64> = (0..rows).map(|_| if rng.random::<bool>() { 1.0 } else { -1.0 }).collect();
            let theta: Vec<f64> = (0..d).map(|_| rng.random_range(-0.5..0.5)).collect();
            let range = from.min(rows - 1)..rows;
            // The size of the sums behind a loss: relative to it, rounding
            // is bounded even when the loss itself nearly cancels to 0
            // (a least-squares residual of 1e-4 from terms of order 1).
            let scale = |rows: std::ops::Range<usize>| -> f64 {
                rows.map(|i| {
                    let size: f64 = x.row(i).iter().zip(&theta).map(|(a, b)| (a * b).abs()).sum();
                    (1.0 + size + labels[i].abs()).powi(2)
                })
                .sum()
            };
            // The same for the gradient: a bound on |slope| times |x| per row
            // (|slope| <= |x·θ| + |y| for least squares, <= 1 for logistic).
            let gradient_scale: f64 = {
                let mut g = vec![0.0; d];
                for i in range.clone() {
                    let size: f64 = x.row(i).iter().zip(&theta).map(|(a, b)| (a * b).abs()).sum();
                    for (gj, xij) in g.iter_mut().zip(x.row(i)) {
                        *gj += (1.0 + size + labels[i].abs()) * xij.abs();
                    }
                }
                g.iter().map(|v| v * v).sum::<f64>().sqrt()
            };
            for loss in [Loss::LeastSquares, Loss::Logistic] {
                let mut dense = vec![0.0; d];
                let mut sparse = vec![0.0; d];
                let vd = accumulate(loss, x.view(), &labels, range.clone(), &theta, &mut dense);
                let vs = accumulate_sparse(loss, &csr, &labels, range.clone(), &theta, &mut sparse);
                proptest::prop_assert!((vd - vs).abs() <= 1e-12 * scale(range.clone()), "{loss:?}: loss {vd} vs {vs}");
                let err: f64 = sparse.iter().zip(&dense).map(|(a, b)| (a - b).powi(2)).sum::<f64>().sqrt();
                proptest::prop_assert!(
                    err <= 1e-12 * gradient_scale,
                    "{loss:?}: gradient error {err}, scale {gradient_scale}"
                );
                let td = loss_sum(loss, x.view(), &labels, &theta);
                let ts = loss_sum_sparse(loss, &csr, &labels, &theta);
                proptest::prop_assert!((td - ts).abs() <= 1e-12 * scale(0..rows), "{loss:?}: loss sum {td} vs {ts}");
            }
        }
    }

    #[test]
    fn the_sparse_kernel_matches_finite_differences() {
        let x = array![
            [0.0, -2.0, 0.0, 3.0],
            [0.3, 0.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, 0.0]
        ];
        let csr = CsrMatrix::from_dense(&x).unwrap();
        let theta = [0.2, -0.1, 0.3, 0.05];
        for (loss, y) in [
            (Loss::LeastSquares, [1.0, -0.5, 2.0]),
            (Loss::Logistic, [1.0, -1.0, 1.0]),
        ] {
            let mut grad = vec![0.0; 4];
            accumulate_sparse(loss, &csr, &y, 0..3, &theta, &mut grad);
            let numeric = numeric_gradient(loss, x.view(), &y, &theta);
            for (a, b) in grad.iter().zip(&numeric) {
                assert!((a - b).abs() < 1e-6, "{loss:?}: {grad:?} vs {numeric:?}");
            }
            assert_eq!(grad[2], 0.0, "a column with no entries gets no gradient");
        }
    }
}
