//! `agc-bibd`: gradient codes from balanced incomplete block designs
//! (Kadhe, Koyluoglu and Ramchandran, "Gradient coding based on block
//! designs for mitigating adversarial stragglers", 2019; arXiv 1904.13373).
//!
//! The design is the projective plane of prime order q: its q² + q + 1
//! points are the partitions and its q² + q + 1 lines the workers (K must be
//! 7, 13, 31, 57, ...: q = 2 is the Fano plane); a worker stores the q + 1
//! points of its line and sends their plain sum. Every point lies on r = q + 1
//! lines and two lines meet in exactly λ = 1 point, so with the fixed
//! (one-step) weight c = K/((K − s)·r) on each of the K − s arrivals the
//! error is the same for every set of s stragglers, the adversary's worst
//! included: with t_j the straggling lines through point j, Σ t_j = s·k and
//! Σ t_j(t_j − 1) = s(s − 1)·λ, so
//! ‖a·B_S − 1‖₂² = v(cr − 1)² − 2c(cr − 1)·s·k + c²·(s·k + s(s − 1)·λ)
//! ([`BlockDesignCode::one_step_squared_error`]; a test checks it on every
//! straggler set of the Fano plane). The optimal (least-squares) decoder is
//! also offered.
//!
//! Limits: K = q² + q + 1 for a prime q (other designs, the paper's
//! families beyond projective planes among them, are not built).

use serde::{Deserialize, Serialize};

use super::super::registry::{BuildArgs, SchemeEntry};
use super::super::{Arrival, CodingError, Decoding, RoundPlan, Scheme, Tolerance, WaitPolicy};
use super::{ApproximateCode, DecoderKind, approximate_methods};

/// `agc-bibd`.
pub static AGC_BIBD: SchemeEntry = SchemeEntry::new::<AgcBibdParams>(
    "agc-bibd",
    "approximate: the lines of a projective plane of prime order q (K = q² + q + 1; the Fano plane at K = 7) store its points, the same error for every straggler set of a size (Kadhe et al.)",
    build,
);

/// The `[scheme]` keys of `agc-bibd`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgcBibdParams {
    pub decoder: DecoderKind,
    /// w: the master stops after the fastest w workers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_for: Option<usize>,
    /// Model time after which the master decodes what has arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<f64>,
}

fn build(args: &BuildArgs<'_>) -> Result<Box<dyn Scheme>, CodingError> {
    let p: AgcBibdParams = args.params()?;
    let policy = WaitPolicy::new(args.workers, p.wait_for, p.deadline, AGC_BIBD.name())?;
    Ok(Box::new(BlockDesignCode::new(
        args.workers,
        policy,
        p.decoder,
    )?))
}

/// The points of PG(2, q): nonzero vectors of F_q³ whose first nonzero
/// coordinate is 1.
fn projective_points(q: usize) -> Vec<[usize; 3]> {
    let mut points = Vec::with_capacity(q * q + q + 1);
    for y in 0..q {
        for z in 0..q {
            points.push([1, y, z]);
        }
    }
    for z in 0..q {
        points.push([0, 1, z]);
    }
    points.push([0, 0, 1]);
    points
}

fn is_prime(q: usize) -> bool {
    q >= 2 && (2..q).take_while(|d| d * d <= q).all(|d| q % d != 0)
}

/// A code of a projective plane (see the module docs).
#[derive(Debug)]
pub struct BlockDesignCode {
    code: ApproximateCode,
    q: usize,
}

impl BlockDesignCode {
    /// Limits: K = q² + q + 1 for a prime q; those of the wait policy.
    pub fn new(
        workers: usize,
        policy: WaitPolicy,
        decoder: DecoderKind,
    ) -> Result<Self, CodingError> {
        let q = (1..=workers)
            .find(|q| q * q + q + 1 >= workers)
            .unwrap_or(0);
        if q * q + q + 1 != workers || !is_prime(q) {
            let sizes: Vec<String> = (2..20)
                .filter(|&q| is_prime(q))
                .map(|q| (q * q + q + 1).to_string())
                .collect();
            return Err(CodingError::invalid(
                "workers",
                workers,
                format!(
                    "is not q² + q + 1 for a prime q, the size of a projective plane (agc-bibd: {}, ...)",
                    sizes.join(", ")
                ),
            ));
        }
        let points = projective_points(q);
        let rows = points
            .iter()
            .map(|line| {
                points
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| (0..3).map(|i| p[i] * line[i]).sum::<usize>() % q == 0)
                    .map(|(j, _)| (j, 1.0))
                    .collect()
            })
            .collect();
        let code = ApproximateCode::new(&AGC_BIBD, workers, rows, policy, decoder, "workers")?;
        Ok(Self { code, q })
    }

    /// The one-step error's square with any `stragglers` of the K lines
    /// (the same for every set of that size).
    pub fn one_step_squared_error(&self, stragglers: usize) -> f64 {
        let v = (self.q * self.q + self.q + 1) as f64;
        let (k, r, lambda) = ((self.q + 1) as f64, (self.q + 1) as f64, 1.0);
        let s = stragglers as f64;
        if stragglers as f64 >= v {
            return v;
        }
        let c = v / ((v - s) * r);
        v * (c * r - 1.0).powi(2) - 2.0 * c * (c * r - 1.0) * s * k
            + c * c * (s * k + s * (s - 1.0) * lambda)
    }
}

impl Scheme for BlockDesignCode {
    approximate_methods!(code);

    fn decode(&mut self, _plan: &RoundPlan, received: &[Arrival]) -> Decoding {
        self.code.decode_with_decoder(received)
    }

    /// No straggler set is decoded exactly by construction.
    fn tolerance(&self) -> Tolerance {
        Tolerance { worst: 0, best: 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Fano plane (K = 7) and PG(2, 3) (K = 13): every line holds q + 1
    /// points, every point is on q + 1 lines, two lines share one point; the
    /// one-step error of every straggler set of the Fano plane is the closed
    /// form of its size (an adversary cannot do worse than a random set),
    /// and the optimal error is never above it.
    #[test]
    fn the_fano_planes_one_step_error_depends_only_on_the_number_of_stragglers() {
        for (k, q) in [(7, 2), (13, 3)] {
            let policy = WaitPolicy::new(k, Some(k - 1), None, "agc-bibd").unwrap();
            let c = BlockDesignCode::new(k, policy, DecoderKind::OneStep).unwrap();
            for w in 0..k {
                assert_eq!(c.stored(w).len(), q + 1);
                for x in 0..w {
                    let shared = c
                        .stored(w)
                        .iter()
                        .filter(|p| c.stored(x).contains(p))
                        .count();
                    assert_eq!(shared, 1, "lines {x} and {w}");
                }
            }
            for p in 0..k {
                assert_eq!((0..k).filter(|&w| c.stored(w).contains(&p)).count(), q + 1);
            }
        }
        let k = 7;
        let policy = WaitPolicy::new(k, Some(4), None, "agc-bibd").unwrap();
        let mut one = BlockDesignCode::new(k, policy, DecoderKind::OneStep).unwrap();
        let mut opt = BlockDesignCode::new(k, policy, DecoderKind::Optimal).unwrap();
        let plan = one.plan_round(&Default::default());
        for mask in 0u32..(1 << k) - 1 {
            let alive: Vec<Arrival> = (0..k)
                .filter(|w| mask & (1 << w) == 0)
                .map(Arrival::only)
                .collect();
            let s = mask.count_ones() as usize;
            let e = one
                .decode(&plan, &alive)
                .error(&plan, &alive, k, &mut Vec::new());
            let want = one.one_step_squared_error(s);
            assert!(
                (e * e - want).abs() <= 1e-9,
                "stragglers {mask:07b}: {} vs {want}",
                e * e
            );
            let e_opt = opt
                .decode(&plan, &alive)
                .error(&plan, &alive, k, &mut Vec::new());
            assert!(e_opt <= e + 1e-9, "{mask:07b}");
        }
    }

    #[test]
    fn a_worker_count_that_is_no_projective_plane_is_refused() {
        let policy = WaitPolicy::new(8, Some(4), None, "agc-bibd").unwrap();
        let e = BlockDesignCode::new(8, policy, DecoderKind::Optimal)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("workers = 8 is not q² + q + 1 for a prime q"),
            "{e}"
        );
        assert!(e.contains("7, 13, 31"), "{e}");
    }
}
