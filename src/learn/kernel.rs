//! Fused loss-and-gradient kernels.
//!
//! One pass over the samples: for each row the prediction `x·theta` is
//! computed and the row is added to the gradient while it is still in the
//! L1 cache, so a partition larger than the caches is read from memory once
//! per iteration and the kernel is bound by memory bandwidth.

use ndarray::ArrayView2;

use crate::config::Loss;

/// Adds `sum_i grad l_i(theta)` over `rows` of (`x`, `y`) into `grad` and
/// returns `sum_i l_i(theta)`.
///
/// Least squares: `l = (x·theta − y)² / 2`. Logistic (labels ±1):
/// `l = log(1 + exp(−y·x·theta))`.
pub fn accumulate(
    loss: Loss,
    x: ArrayView2<'_, f64>,
    y: &[f64],
    rows: std::ops::Range<usize>,
    theta: &[f64],
    grad: &mut [f64],
) -> f64 {
    debug_assert_eq!(x.ncols(), theta.len());
    debug_assert_eq!(grad.len(), theta.len());
    let mut total = 0.0;
    for i in rows {
        let row = x.row(i);
        let row = row
            .as_slice()
            .expect("partition matrices are row-major and contiguous");
        let z = dot(row, theta);
        let (value, slope) = match loss {
            Loss::LeastSquares => {
                let r = z - y[i];
                (0.5 * r * r, r)
            }
            Loss::Logistic => {
                let m = y[i] * z;
                // log(1 + e^{-m}) and its derivative -y·sigma(-m), both stable.
                let value = if m > 0.0 {
                    (-m).exp().ln_1p()
                } else {
                    -m + m.exp().ln_1p()
                };
                let sigma = if m > 0.0 {
                    let e = (-m).exp();
                    e / (1.0 + e)
                } else {
                    1.0 / (1.0 + m.exp())
                };
                (value, -y[i] * sigma)
            }
        };
        total += value;
        axpy(slope, row, grad);
    }
    total
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

/// Dot product with four independent accumulators, so that it vectorises.
#[inline]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0; 4];
    let (a4, a_rest) = a.split_at(a.len() - a.len() % 4);
    let (b4, b_rest) = b.split_at(a4.len());
    for (x, y) in a4.chunks_exact(4).zip(b4.chunks_exact(4)) {
        acc[0] += x[0] * y[0];
        acc[1] += x[1] * y[1];
        acc[2] += x[2] * y[2];
        acc[3] += x[3] * y[3];
    }
    let tail: f64 = a_rest.iter().zip(b_rest).map(|(x, y)| x * y).sum();
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// `y += alpha · x`.
#[inline]
pub fn axpy(alpha: f64, x: &[f64], y: &mut [f64]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += alpha * xi;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
    fn dot_handles_every_tail_length() {
        for n in 0..11 {
            let a: Vec<f64> = (0..n).map(|i| i as f64 + 0.5).collect();
            let b: Vec<f64> = (0..n).map(|i| 2.0 - i as f64).collect();
            let naive: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - naive).abs() < 1e-12);
        }
    }
}
