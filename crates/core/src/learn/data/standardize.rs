//! Standardisation statistics from one streaming pass over the training rows.
//!
//! [`FeatureMoments`] keeps, per feature, the count, mean and sum of squared
//! deviations of the values it was given (Welford's update, which stays
//! accurate when the mean is large against the spread; the textbook
//! `E[x²] − E[x]²` cancels catastrophically). Rows list only the features
//! they store (a LIBSVM row its non-zeros); the unlisted zeros of a feature
//! are merged in at the end with the pairwise combination of Chan, Golub and
//! LeVeque, so a sparse pass costs O(stored entries), not O(rows × features).
//! Memory: four numbers per feature (with the largest magnitude, for the
//! error that names a column whose statistics overflow), whatever the number
//! of rows.

/// Per-feature count, mean and sum of squared deviations of the listed values.
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureMoments {
    rows: u64,
    count: Vec<u64>,
    mean: Vec<f64>,
    squares: Vec<f64>,
    largest: Vec<f64>,
}

/// A feature whose mean or variance over the training rows is not finite
/// (values near 1e154 and beyond): the data cannot be standardised as it is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Overflow {
    /// 0-based feature.
    pub feature: usize,
    /// "mean" or "variance": the first statistic that overflows.
    pub statistic: &'static str,
    /// The largest magnitude of the feature's values.
    pub largest: f64,
}

impl FeatureMoments {
    pub fn new(features: usize) -> Self {
        Self {
            rows: 0,
            count: vec![0; features],
            mean: vec![0.0; features],
            squares: vec![0.0; features],
            largest: vec![0.0; features],
        }
    }

    /// Add one row given as (feature, value) pairs; unlisted features are 0.
    /// Features beyond the width are the caller's error to report first.
    pub fn add_row(&mut self, entries: impl IntoIterator<Item = (usize, f64)>) {
        self.rows += 1;
        for (j, v) in entries {
            self.count[j] += 1;
            let n = self.count[j] as f64;
            let delta = v - self.mean[j];
            self.mean[j] += delta / n;
            self.squares[j] += delta * (v - self.mean[j]);
            self.largest[j] = self.largest[j].max(v.abs());
        }
    }

    /// Rows added.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Mean and population variance of every feature over all rows (the
    /// unlisted zeros included).
    pub fn mean_and_variance(&self) -> (Vec<f64>, Vec<f64>) {
        let rows = self.rows as f64;
        if self.rows == 0 {
            let d = self.count.len();
            return (vec![0.0; d], vec![0.0; d]);
        }
        self.count
            .iter()
            .zip(&self.mean)
            .zip(&self.squares)
            .map(|((&listed, &mean), &squares)| {
                // Merge (listed, mean, squares) with (zeros, 0, 0).
                let (a, b) = (listed as f64, (self.rows - listed) as f64);
                let delta = -mean;
                let merged_mean = mean + delta * b / rows;
                let merged_squares = squares + delta * delta * a * b / rows;
                (merged_mean, merged_squares / rows)
            })
            .unzip()
    }

    /// The standardisation these moments give: centred (dense data) or only
    /// scaled (sparse data: centering would make every zero non-zero); the
    /// first feature whose mean or variance overflows when there is one.
    pub fn standardization(&self, center: bool) -> Result<Standardization, Overflow> {
        let (mean, variance) = self.mean_and_variance();
        if let Some(feature) =
            (0..mean.len()).find(|&j| !(mean[j].is_finite() && variance[j].is_finite()))
        {
            return Err(Overflow {
                feature,
                statistic: if mean[feature].is_finite() {
                    "variance"
                } else {
                    "mean"
                },
                largest: self.largest[feature],
            });
        }
        let scale = variance
            .iter()
            .map(|v| v.sqrt())
            // A constant feature is only centred.
            .map(|s| if s > 0.0 { s } else { 1.0 })
            .collect();
        let center = if center {
            mean
        } else {
            vec![0.0; self.count.len()]
        };
        Ok(Standardization { center, scale })
    }
}

/// `x ← (x − center) / scale`, per feature.
#[derive(Debug, Clone, PartialEq)]
pub struct Standardization {
    pub center: Vec<f64>,
    pub scale: Vec<f64>,
}

impl Standardization {
    /// Features it applies to.
    pub fn features(&self) -> usize {
        self.scale.len()
    }

    /// Whether it subtracts anything (it does not for sparse data).
    pub fn centers(&self) -> bool {
        self.center.iter().any(|&c| c != 0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic noise in [-1, 1).
    fn noise(i: usize) -> f64 {
        ((i * 7919 + 13) % 2000) as f64 / 1000.0 - 1.0
    }

    #[test]
    fn a_large_offset_does_not_cost_accuracy() {
        // 1e8 + noise of standard deviation ~0.58: the squares are ~1e16, where
        // an f64 resolves steps of 2, so E[x²] − E[x]² loses every digit.
        let n = 100_000;
        let values: Vec<f64> = (0..n).map(|i| 1e8 + noise(i)).collect();
        let mut m = FeatureMoments::new(1);
        for &v in &values {
            m.add_row([(0, v)]);
        }
        let (mean, var) = m.mean_and_variance();
        // Reference: two passes, deviations from the mean.
        let exact_mean = values.iter().sum::<f64>() / n as f64;
        let exact_var = values.iter().map(|v| (v - exact_mean).powi(2)).sum::<f64>() / n as f64;
        assert!((mean[0] - exact_mean).abs() <= 1e-9 * exact_mean);
        let welford_error = (var[0] - exact_var).abs() / exact_var;
        assert!(welford_error < 1e-6, "Welford: {welford_error}");
        let (sum, sum_sq) = values
            .iter()
            .fold((0.0, 0.0), |(s, q), v| (s + v, q + v * v));
        let naive_var = sum_sq / n as f64 - (sum / n as f64).powi(2);
        let naive_error = (naive_var - exact_var).abs() / exact_var;
        assert!(
            naive_error > 1e-2,
            "the naive sum of squares should fail here: {naive_error}"
        );
    }

    #[test]
    fn unlisted_zeros_count_as_values() {
        // Feature 0: 4, 0, 0, 2 → mean 1.5, variance (6.25 + 2.25 + 2.25 + 0.25) / 4.
        // Feature 1: 0, 0, 0, 0 (never listed). Feature 2: listed zeros and a 3.
        let mut m = FeatureMoments::new(3);
        m.add_row([(0, 4.0), (2, 0.0)]);
        m.add_row([]);
        m.add_row([(2, 3.0)]);
        m.add_row([(0, 2.0)]);
        let (mean, var) = m.mean_and_variance();
        assert_eq!(mean, vec![1.5, 0.0, 0.75]);
        assert!((var[0] - 2.75).abs() < 1e-15);
        assert_eq!(var[1], 0.0);
        assert!((var[2] - (3.0 * 0.75f64.powi(2) + 2.25f64.powi(2)) / 4.0).abs() < 1e-15);
        let s = m.standardization(false).unwrap();
        assert!(!s.centers());
        assert_eq!(s.scale[1], 1.0, "a constant feature keeps its scale");
        let c = m.standardization(true).unwrap();
        assert_eq!(c.center, mean);
    }

    #[test]
    fn sparse_merge_equals_the_dense_pass() {
        // The same rows, listing every feature or only the non-zeros.
        let rows: Vec<Vec<f64>> = (0..50)
            .map(|i| {
                (0..4)
                    .map(|j| {
                        if (i + j) % 3 == 0 {
                            noise(i * 4 + j) * 5.0 + 1e6
                        } else {
                            0.0
                        }
                    })
                    .collect()
            })
            .collect();
        let mut dense = FeatureMoments::new(4);
        let mut sparse = FeatureMoments::new(4);
        for r in &rows {
            dense.add_row(r.iter().copied().enumerate());
            sparse.add_row(r.iter().copied().enumerate().filter(|&(_, v)| v != 0.0));
        }
        let (dm, dv) = dense.mean_and_variance();
        let (sm, sv) = sparse.mean_and_variance();
        for j in 0..4 {
            assert!((dm[j] - sm[j]).abs() <= 1e-12 * dm[j].abs());
            assert!(
                (dv[j] - sv[j]).abs() <= 1e-10 * dv[j],
                "{j}: {} {}",
                dv[j],
                sv[j]
            );
        }
    }
}
