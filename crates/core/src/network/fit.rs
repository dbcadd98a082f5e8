//! A link fitted to measured transfers (issue 26, item 2): `advise --trace`
//! reads, per worker and iteration of a training run, the bytes of the
//! result the master received and the seconds the result spent between the
//! worker's end of compute and its arrival, and fits t = latency + bytes /
//! bandwidth to those pairs ([`fit_transfers`]), the line
//! [`delivery`](super::delivery) models.
//!
//! A measured transfer time is the link's own time plus waits that only ever
//! add to it: the master busy receiving another worker's vector (a shared
//! link), the scheduler, the send of the model to the worker. So the fit is
//! made on the *lower envelope*: per message size, the lower decile of its
//! times (the fastest messages, those that waited least; a decile, not the
//! minimum, so that one odd value does not set it), then a Theil-Sen line
//! through those per-size points (the median of the slopes of every pair of
//! sizes, and the median intercept): one size whose envelope is still off (a
//! mid-size message slowed by TCP's delayed acknowledgements, as `probe`
//! saw) moves the median less than it would move least squares. With one
//! message size only (uncoded, gc-cyclic: every message is d + 1 values) the
//! latency and the bandwidth cannot be told apart: [`LinkFit::OneSize`] says
//! so and gives the whole time of a message of that size, no bandwidth.

/// The share of a message size's times below its envelope point.
pub const ENVELOPE_QUANTILE: f64 = 0.1;

/// What the transfers say about the link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LinkFit {
    /// Two sizes or more: the line t = `latency_s` + bytes / `bandwidth_bytes_per_s`.
    Line {
        latency_s: f64,
        bandwidth_bytes_per_s: f64,
        /// The line's intercept was below zero and `latency_s` is 0.
        latency_clamped: bool,
        /// Distinct message sizes.
        sizes: usize,
        /// Transfers used.
        transfers: usize,
    },
    /// One size only: a message of `bytes` takes `seconds` (its envelope
    /// point); the latency and the bandwidth are not separable.
    OneSize {
        bytes: f64,
        seconds: f64,
        transfers: usize,
    },
}

/// Why the transfers give no link.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum LinkFitError {
    #[error("no transfer with a finite size above 0 and a finite time at or above 0")]
    NoTransfers,
    #[error(
        "the transfer time does not grow with the message size (fitted slope {slope_s_per_byte:e} s per byte over {sizes} sizes): no bandwidth to fit"
    )]
    NotIncreasing { slope_s_per_byte: f64, sizes: usize },
}

/// The value below which a share `q` of the sorted, non-empty `values` lie
/// (the element at ⌊q (n − 1)⌋).
fn lower_quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).floor() as usize]
}

/// The median of a non-empty list (the mean of the middle two when even).
pub(super) fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// The per-size envelope points `(bytes, seconds)`, ascending in bytes, of
/// the usable transfers, and how many were usable.
pub fn envelope(transfers: &[(f64, f64)]) -> (Vec<(f64, f64)>, usize) {
    let mut usable: Vec<(f64, f64)> = transfers
        .iter()
        .copied()
        .filter(|&(b, t)| b.is_finite() && b > 0.0 && t.is_finite() && t >= 0.0)
        .collect();
    let n = usable.len();
    usable.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let mut points = Vec::new();
    let mut start = 0;
    while start < usable.len() {
        let bytes = usable[start].0;
        let end = start + usable[start..].iter().take_while(|p| p.0 == bytes).count();
        let times: Vec<f64> = usable[start..end].iter().map(|p| p.1).collect();
        points.push((bytes, lower_quantile(&times, ENVELOPE_QUANTILE)));
        start = end;
    }
    (points, n)
}

/// Fit the link to `(bytes, seconds)` transfers (see the module doc);
/// transfers with a size not finite or not above 0, or a time not finite or
/// below 0, are left out.
pub fn fit_transfers(transfers: &[(f64, f64)]) -> Result<LinkFit, LinkFitError> {
    let (points, used) = envelope(transfers);
    match points.as_slice() {
        [] => Err(LinkFitError::NoTransfers),
        [(bytes, seconds)] => Ok(LinkFit::OneSize {
            bytes: *bytes,
            seconds: *seconds,
            transfers: used,
        }),
        _ => {
            let mut slopes = Vec::with_capacity(points.len() * (points.len() - 1) / 2);
            for (i, &(b0, t0)) in points.iter().enumerate() {
                for &(b1, t1) in &points[i + 1..] {
                    slopes.push((t1 - t0) / (b1 - b0));
                }
            }
            let slope = median(&mut slopes);
            if !(slope.is_finite() && slope > 0.0) {
                return Err(LinkFitError::NotIncreasing {
                    slope_s_per_byte: slope,
                    sizes: points.len(),
                });
            }
            let mut intercepts: Vec<f64> = points.iter().map(|&(b, t)| t - slope * b).collect();
            let intercept = median(&mut intercepts);
            Ok(LinkFit::Line {
                latency_s: intercept.max(0.0),
                bandwidth_bytes_per_s: 1.0 / slope,
                latency_clamped: intercept < 0.0,
                sizes: points.len(),
                transfers: used,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Transfers of `sizes` on the line (latency, bandwidth), `per_size`
    /// each; all but a fifth of them wait besides (a deterministic spread
    /// of up to `wait_s`), which only adds time.
    fn transfers(
        latency_s: f64,
        bandwidth: f64,
        sizes: &[f64],
        per_size: usize,
        wait_s: f64,
    ) -> Vec<(f64, f64)> {
        let mut out = Vec::new();
        for &b in sizes {
            for i in 0..per_size {
                let wait = if i % 5 == 0 {
                    0.0
                } else {
                    wait_s * ((i * 7919) % 101) as f64 / 100.0
                };
                out.push((b, latency_s + b / bandwidth + wait));
            }
        }
        // Order must not matter.
        out.reverse();
        out
    }

    #[test]
    fn a_known_line_is_recovered_from_transfers_that_wait() {
        let (latency, bandwidth) = (2.5e-4, 1.25e7);
        let sizes = [808.0, 8.0e4 + 72.0, 8.0e5 + 72.0, 8.0e6 + 72.0];
        let t = transfers(latency, bandwidth, &sizes, 50, 0.3);
        let LinkFit::Line {
            latency_s,
            bandwidth_bytes_per_s,
            latency_clamped,
            sizes: n,
            transfers,
        } = fit_transfers(&t).unwrap()
        else {
            panic!("two sizes or more give a line")
        };
        assert!((latency_s / latency - 1.0).abs() < 1e-9, "{latency_s}");
        assert!(
            (bandwidth_bytes_per_s / bandwidth - 1.0).abs() < 1e-9,
            "{bandwidth_bytes_per_s}"
        );
        assert!(!latency_clamped);
        assert_eq!((n, transfers), (4, 200));
        // Least squares on every transfer would be pulled up by the waits.
        let mean_t: f64 = t.iter().map(|p| p.1).sum::<f64>() / t.len() as f64;
        assert!(mean_t > latency + sizes.iter().sum::<f64>() / 4.0 / bandwidth + 0.05);
    }

    #[test]
    fn one_size_off_its_line_does_not_move_the_median_line() {
        let (latency, bandwidth) = (1e-4, 1e8);
        let sizes = [1e3, 1e4, 1e5, 1e6, 1e7];
        let mut t = transfers(latency, bandwidth, &sizes, 10, 0.0);
        // The 1e5-byte messages all took 30 ms more (delayed acknowledgements).
        for p in t.iter_mut().filter(|p| p.0 == 1e5) {
            p.1 += 0.03;
        }
        let LinkFit::Line {
            bandwidth_bytes_per_s,
            ..
        } = fit_transfers(&t).unwrap()
        else {
            panic!("a line")
        };
        // The median of the 10 pairwise slopes: 6 exact, 4 off.
        assert!(
            (bandwidth_bytes_per_s / bandwidth - 1.0).abs() < 0.05,
            "{bandwidth_bytes_per_s}"
        );
    }

    #[test]
    fn one_size_gives_its_time_and_no_bandwidth() {
        let t = transfers(3e-4, 1e9, &[8e5], 30, 0.01);
        let fit = fit_transfers(&t).unwrap();
        assert_eq!(
            fit,
            LinkFit::OneSize {
                bytes: 8e5,
                seconds: 3e-4 + 8e5 / 1e9,
                transfers: 30
            }
        );
    }

    #[test]
    fn unusable_transfers_are_left_out_and_none_is_an_error() {
        let mut t = transfers(1e-3, 1e6, &[1e3, 1e5], 10, 0.0);
        t.extend([
            (f64::NAN, 1.0),
            (0.0, 1.0),
            (1e4, f64::NAN),
            (1e4, -1.0),
            (f64::INFINITY, 1.0),
        ]);
        let LinkFit::Line {
            latency_s,
            transfers,
            sizes,
            ..
        } = fit_transfers(&t).unwrap()
        else {
            panic!("a line")
        };
        assert_eq!((sizes, transfers), (2, 20));
        assert!((latency_s / 1e-3 - 1.0).abs() < 1e-9);
        assert_eq!(
            fit_transfers(&[(f64::NAN, 1.0), (8.0, -1.0)]),
            Err(LinkFitError::NoTransfers)
        );
        assert_eq!(fit_transfers(&[]), Err(LinkFitError::NoTransfers));
    }

    #[test]
    fn times_that_shrink_with_size_have_no_bandwidth_and_a_negative_intercept_is_clamped() {
        let e = fit_transfers(&[(1e3, 2e-3), (1e6, 1e-3)]).unwrap_err();
        assert!(
            matches!(e, LinkFitError::NotIncreasing { sizes: 2, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("no bandwidth"), "{e}");
        // Times proportional to size and a bit less: intercept below 0.
        let fit = fit_transfers(&[(1e3, 0.5e-6), (1e6, 0.9995e-3)]).unwrap();
        let LinkFit::Line {
            latency_s,
            latency_clamped,
            ..
        } = fit
        else {
            panic!("a line")
        };
        assert_eq!(latency_s, 0.0);
        assert!(latency_clamped);
    }
}
