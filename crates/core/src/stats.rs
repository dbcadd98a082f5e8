//! Statistics of Monte Carlo results: the mean over trials with a 95%
//! confidence interval (Student t over the per-trial means) and percentiles.

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
/// freedom, for p in (0.5, 1): bisection on the CDF
/// 1 - I_{nu/(nu+t^2)}(nu/2, 1/2) / 2.
pub fn student_t_quantile(p: f64, nu: f64) -> f64 {
    assert!(
        p > 0.5 && p < 1.0 && nu > 0.0,
        "t quantile p = {p}, nu = {nu}"
    );
    let tail = 1.0 - p;
    let upper_tail = |t: f64| 0.5 * incomplete_beta(nu / 2.0, 0.5, nu / (nu + t * t));
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    while upper_tail(hi) > tail {
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if upper_tail(mid) > tail {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-12 * hi {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// ln Γ(x) for x > 0 (Lanczos approximation, g = 7, 9 terms; |error| < 1e-13 here).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 - x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, &c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularized incomplete beta function I_x(a, b), by its continued
/// fraction (modified Lentz), using the symmetry I_x(a, b) = 1 - I_{1-x}(b, a)
/// where the fraction converges slowly.
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..=1000 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 / guard(1.0 + aa * d);
        c = guard(1.0 + aa / c);
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 / guard(1.0 + aa * d);
        c = guard(1.0 + aa / c);
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
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
    }

    #[test]
    fn ln_gamma_of_integers_and_half() {
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-12);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-12);
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
