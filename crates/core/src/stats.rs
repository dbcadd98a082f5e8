//! Statistics of Monte Carlo results: the mean over trials with a 95%
//! confidence interval (Student t over the per-trial means) and percentiles.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// Mean and the half-width of its 95% confidence interval, `t_{0.975, n-1} ·
/// s / sqrt(n)` with s the sample standard deviation of `values` (the
/// per-trial means). The half-width is NaN for fewer than two values.
pub fn mean_ci95(values: &[f64]) -> (f64, f64) {
    let n = values.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (mean, f64::NAN);
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let half = student_t_quantile(0.975, (n - 1) as f64) * (var / n as f64).sqrt();
    (mean, half)
}

/// Half-width, in percentage points, of the 95% confidence interval of the
/// reduction 100 · (1 − Ā / B̄) of a scheme's mean time Ā against the
/// baseline's B̄, from the paired per-trial means `scheme` and `baseline`
/// (both ran on the same sampled delays in every trial). Delta method for a
/// ratio of means: Var(Ā / B̄) ≈ (s_A² − 2R·s_AB + R²·s_B²) / (n·B̄²) with
/// R = Ā / B̄, times `t_{0.975, n-1}`. Pairing makes it much narrower than the
/// two means' own intervals suggest. NaN for fewer than two trials; 0 when
/// the scheme's trial means are a fixed multiple of the baseline's (the
/// baseline itself).
pub fn reduction_ci95(scheme: &[f64], baseline: &[f64]) -> f64 {
    assert_eq!(
        scheme.len(),
        baseline.len(),
        "paired trial means of different lengths"
    );
    let n = scheme.len();
    if n < 2 {
        return f64::NAN;
    }
    let nf = n as f64;
    let ma = scheme.iter().sum::<f64>() / nf;
    let mb = baseline.iter().sum::<f64>() / nf;
    let r = ma / mb;
    // Variance of the residuals a_i − R·b_i: s_A² − 2R·s_AB + R²·s_B².
    let var = scheme
        .iter()
        .zip(baseline)
        .map(|(a, b)| ((a - ma) - r * (b - mb)).powi(2))
        .sum::<f64>()
        / (nf - 1.0);
    100.0 * student_t_quantile(0.975, nf - 1.0) * (var / nf).sqrt() / mb.abs()
}

/// The `q`-quantile of sorted `values` by linear interpolation between the
/// closest ranks (numpy's default): position (n - 1) · q.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    assert!((0.0..=1.0).contains(&q), "quantile {q} outside [0, 1]");
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let h = (n - 1) as f64 * q;
            let lo = h.floor() as usize;
            let hi = (lo + 1).min(n - 1);
            sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
        }
    }
}

/// The `p`-quantile of Student's t distribution with `nu` degrees of
/// freedom, for p in (0, 1) (statrs' inverse CDF).
pub fn student_t_quantile(p: f64, nu: f64) -> f64 {
    assert!(
        p > 0.0 && p < 1.0 && nu > 0.0,
        "t quantile p = {p}, nu = {nu}"
    );
    StudentsT::new(0.0, 1.0, nu)
        .expect("a standard t distribution with nu > 0")
        .inverse_cdf(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_tables() {
        // Two-sided 95% critical values of Student's t.
        for (nu, expected) in [
            (1.0, 12.706_204_736),
            (2.0, 4.302_652_730),
            (5.0, 2.570_581_836),
            (29.0, 2.045_229_642),
            (1000.0, 1.962_339_081),
        ] {
            let t = student_t_quantile(0.975, nu);
            assert!((t - expected).abs() < 1e-7, "nu = {nu}: {t} vs {expected}");
        }
        // nu = 1 is the Cauchy distribution, tan(π (p − 1/2)); nu = 2 has
        // t = (2p − 1) sqrt(2 / (4p (1 − p))).
        for p in [0.6, 0.75, 0.9, 0.99, 0.999] {
            let cauchy = (std::f64::consts::PI * (p - 0.5)).tan();
            let t1 = student_t_quantile(p, 1.0);
            assert!(
                (t1 - cauchy).abs() < 1e-10 * cauchy,
                "p = {p}: {t1} vs {cauchy}"
            );
            let closed = (2.0 * p - 1.0) * (2.0 / (4.0 * p * (1.0 - p))).sqrt();
            let t2 = student_t_quantile(p, 2.0);
            assert!(
                (t2 - closed).abs() < 1e-10 * closed,
                "p = {p}: {t2} vs {closed}"
            );
        }
    }

    /// (p, nu, quantile) of the hand-written quantile this crate had before
    /// statrs (bisection on its own continued-fraction incomplete beta, which
    /// agreed with scipy.stats.t.ppf to 2e-12 relative at these points).
    const EARLIER_QUANTILES: [(f64, f64, f64); 54] = [
        (0.6, 1.0, 0.3249196962329961),
        (0.75, 1.0, 0.9999999999995453),
        (0.9, 1.0, 3.0776835371752895),
        (0.975, 1.0, 12.706204736172367),
        (0.995, 1.0, 63.65674116284936),
        (0.9995, 1.0, 636.6192487690132),
        (0.6, 2.0, 0.28867513459488237),
        (0.75, 2.0, 0.8164965809276055),
        (0.9, 2.0, 1.8856180831635356),
        (0.975, 2.0, 4.302652729749752),
        (0.995, 2.0, 9.924843200915348),
        (0.9995, 2.0, 31.599054576436174),
        (0.6, 3.0, 0.2766706623327764),
        (0.75, 3.0, 0.7648923284043576),
        (0.9, 3.0, 1.6377443536962346),
        (0.975, 3.0, 3.1824463052844294),
        (0.995, 3.0, 5.840909309734343),
        (0.9995, 3.0, 12.923978636685206),
        (0.6, 5.0, 0.26718086570406285),
        (0.75, 5.0, 0.7266868438002803),
        (0.9, 5.0, 1.475884048824355),
        (0.975, 5.0, 2.570581835635494),
        (0.995, 5.0, 4.032142983554877),
        (0.9995, 5.0, 6.868826625881411),
        (0.6, 10.0, 0.2601848294920046),
        (0.75, 10.0, 0.6998120613122865),
        (0.9, 10.0, 1.3721836411100412),
        (0.975, 10.0, 2.2281388519868415),
        (0.995, 10.0, 3.1692726726168985),
        (0.9995, 10.0, 4.5868938587027515),
        (0.6, 29.0, 0.2556836345712554),
        (0.75, 29.0, 0.683043860821499),
        (0.9, 29.0, 1.3114336473013282),
        (0.975, 29.0, 2.0452296421326537),
        (0.995, 29.0, 2.7563859036699796),
        (0.9995, 29.0, 3.659405019467158),
        (0.6, 120.0, 0.2539095232149293),
        (0.75, 120.0, 0.6765397249125726),
        (0.9, 120.0, 1.2886462336568911),
        (0.975, 120.0, 1.9799304050820865),
        (0.995, 120.0, 2.6174211451061637),
        (0.9995, 120.0, 3.3734537685622854),
        (0.6, 1000.0, 0.25341451583915386),
        (0.75, 1000.0, 0.6747351646065454),
        (0.9, 1000.0, 1.2823987214601402),
        (0.975, 1000.0, 1.9623390808274053),
        (0.995, 1000.0, 2.5807546980659026),
        (0.9995, 1000.0, 3.30028264842349),
        (0.6, 2.5, 0.2814595127484836),
        (0.75, 2.5, 0.7850136829922576),
        (0.9, 2.5, 1.7302509288069814),
        (0.975, 2.5, 3.574654842003838),
        (0.995, 2.5, 7.163728138950319),
        (0.9995, 2.5, 18.277893528131244),
    ];

    #[test]
    fn t_quantiles_equal_the_earlier_implementations() {
        for (p, nu, earlier) in EARLIER_QUANTILES {
            let t = student_t_quantile(p, nu);
            assert!(
                (t - earlier).abs() <= 1e-10 * earlier,
                "p = {p}, nu = {nu}: {t} vs {earlier}"
            );
            // The lower tail mirrors the upper one.
            let lower = student_t_quantile(1.0 - p, nu);
            assert!((lower + t).abs() <= 1e-9 * t, "p = {p}, nu = {nu}: {lower}");
        }
    }

    #[test]
    fn percentiles_interpolate_like_numpy() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 0.5), 2.5);
        assert_eq!(percentile(&v, 0.0), 1.0);
        assert_eq!(percentile(&v, 1.0), 4.0);
        assert!((percentile(&v, 0.99) - 3.97).abs() < 1e-12);
    }

    #[test]
    fn reduction_interval_of_known_pairs() {
        // A = [1, 2, 3], B = [2, 2, 5]: Ā = 2, B̄ = 3, R = 2/3; residuals
        // (a − Ā) − R(b − B̄) = -1 + 2/3, 0 + 2/3, 1 − 4/3 = -1/3, 2/3, -1/3;
        // their sum of squares 6/9 over n − 1 = 2 gives 1/3.
        let h = reduction_ci95(&[1.0, 2.0, 3.0], &[2.0, 2.0, 5.0]);
        let expected = 100.0 * 4.302_652_730 * (1.0f64 / 3.0 / 3.0).sqrt() / 3.0;
        assert!((h - expected).abs() < 1e-6, "{h} vs {expected}");
        // A fixed multiple of the baseline has no uncertainty in its reduction.
        let b = [1.3, 0.7, 2.9, 4.1];
        let a: Vec<f64> = b.iter().map(|x| 0.6 * x).collect();
        assert!(reduction_ci95(&a, &b) < 1e-9);
        assert_eq!(reduction_ci95(&b, &b), 0.0);
        assert!(reduction_ci95(&[1.0], &[2.0]).is_nan());
    }

    #[test]
    fn reduction_interval_does_not_depend_on_the_time_unit() {
        let a = [1.0, 2.5, 2.0, 3.5];
        let b = [2.0, 3.0, 2.5, 5.0];
        let scaled = |v: &[f64]| v.iter().map(|x| 1000.0 * x).collect::<Vec<_>>();
        let h = reduction_ci95(&a, &b);
        assert!((reduction_ci95(&scaled(&a), &scaled(&b)) - h).abs() < 1e-9 * h);
        assert!(h > 0.0);
    }

    #[test]
    fn confidence_interval_of_known_sample() {
        // mean 3, s = sqrt(2.5), n = 5: half-width t(0.975, 4) · s / sqrt(5).
        let (m, h) = mean_ci95(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(m, 3.0);
        assert!(
            (h - 2.776_445_105 * (2.5f64 / 5.0).sqrt()).abs() < 1e-8,
            "{h}"
        );
        assert!(mean_ci95(&[2.0]).1.is_nan());
    }
}
