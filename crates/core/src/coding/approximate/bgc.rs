//! `agc-bgc`: the Bernoulli gradient code (Charles, Papailiopoulos and
//! Ellenberg, "Approximate gradient coding via sparse random graphs", 2017;
//! arXiv 1711.06771, §4).
//!
//! K workers, n = K partitions; worker i stores partition j independently
//! with probability d/n (d = `scheme.load`, the expected partitions per
//! worker) and sends their plain sum. The master waits for `wait_for`
//! workers (or a deadline) and decodes by least squares (optimal) or with
//! one step, K/(|S|·σ) on every arrival, σ the mean number of copies of a
//! partition.
//!
//! Limits: 1 <= d <= K; a draw that leaves a partition on no worker, or a
//! worker with nothing to compute, is drawn again (at most
//! [`MAX_DRAWS`] times, then an error naming `scheme.load`). The
//! paper's regularized BGC is not built.

use rand::{Rng, RngExt};
use serde::{Deserialize, Serialize};

use super::super::registry::{BuildArgs, SchemeEntry};
use super::super::{
    Arrival, CodingError, DEFAULT_LOAD, Decoding, RoundPlan, Scheme, Tolerance, WaitPolicy,
};
use super::{ApproximateCode, DecoderKind, approximate_methods};
use crate::rng::Stream;

/// Draws of the placement before a build gives up.
pub const MAX_DRAWS: usize = 1000;

/// `agc-bgc`.
pub static AGC_BGC: SchemeEntry = SchemeEntry::new::<AgcBgcParams>(
    "agc-bgc",
    "approximate: every worker stores each partition with probability d/n, the fastest `wait_for` decoded by least squares or one step (Charles et al. §4)",
    build,
);

/// The `[scheme]` keys of `agc-bgc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgcBgcParams {
    /// d: the expected partitions per worker.
    pub load: usize,
    pub decoder: DecoderKind,
    /// w: the master stops after the fastest w workers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_for: Option<usize>,
    /// Model time after which the master decodes what has arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<f64>,
}

impl Default for AgcBgcParams {
    fn default() -> Self {
        Self {
            load: DEFAULT_LOAD,
            decoder: DecoderKind::Optimal,
            wait_for: None,
            deadline: None,
        }
    }
}

fn build(args: &BuildArgs<'_>) -> Result<Box<dyn Scheme>, CodingError> {
    let p: AgcBgcParams = args.params()?;
    let policy = WaitPolicy::new(args.workers, p.wait_for, p.deadline, AGC_BGC.name())?;
    let mut rng = args.rng(Stream::Code);
    Ok(Box::new(BernoulliCode::new(
        args.workers,
        p.load,
        policy,
        p.decoder,
        &mut rng,
    )?))
}

/// The Bernoulli gradient code (see the module docs).
#[derive(Debug)]
pub struct BernoulliCode {
    code: ApproximateCode,
}

impl BernoulliCode {
    /// Limits: 1 <= d <= K; those of the wait policy.
    pub fn new(
        workers: usize,
        load: usize,
        policy: WaitPolicy,
        decoder: DecoderKind,
        rng: &mut impl Rng,
    ) -> Result<Self, CodingError> {
        if load == 0 || load > workers {
            return Err(CodingError::invalid(
                "scheme.load",
                load,
                format!("must be between 1 and workers = {workers}"),
            ));
        }
        let q = load as f64 / workers as f64;
        for _ in 0..MAX_DRAWS {
            let rows: Vec<Vec<(usize, f64)>> = (0..workers)
                .map(|_| {
                    (0..workers)
                        .filter(|_| rng.random::<f64>() < q)
                        .map(|p| (p, 1.0))
                        .collect()
                })
                .collect();
            let covered = (0..workers).all(|p| rows.iter().any(|r| r.iter().any(|&(j, _)| j == p)));
            if covered && rows.iter().all(|r| !r.is_empty()) {
                let code =
                    ApproximateCode::new(&AGC_BGC, workers, rows, policy, decoder, "scheme.load")?;
                return Ok(Self { code });
            }
        }
        Err(CodingError::invalid(
            "scheme.load",
            load,
            format!(
                "left a partition on no worker (or a worker with none) in {MAX_DRAWS} draws of K = {workers}: take a larger load"
            ),
        ))
    }
}

impl Scheme for BernoulliCode {
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
    use crate::rng::stream;

    /// Every partition is stored somewhere, the mean load is near d over
    /// many codes, and the optimal decode is optimal: never worse than
    /// one-step on the same arrivals, and never worse with one more worker.
    #[test]
    fn placements_cover_every_partition_and_the_optimal_decode_is_least_error() {
        let k = 12;
        let mut total = 0usize;
        for seed in 0..50 {
            let policy = WaitPolicy::new(k, Some(k), None, "agc-bgc").unwrap();
            let build = |decoder| {
                BernoulliCode::new(k, 3, policy, decoder, &mut stream(seed, Stream::Code)).unwrap()
            };
            let (mut opt, mut one) = (build(DecoderKind::Optimal), build(DecoderKind::OneStep));
            for p in 0..k {
                assert!((0..k).any(|w| opt.stored(w).contains(&p)), "partition {p}");
            }
            total += (0..k).map(|w| opt.stored(w).len()).sum::<usize>();
            let plan = opt.plan_round(&Default::default());
            let error = |code: &mut BernoulliCode, alive: &[usize]| {
                let arrivals: Vec<Arrival> = alive.iter().map(|&w| Arrival::only(w)).collect();
                code.decode(&plan, &arrivals)
                    .error(&plan, &arrivals, k, &mut Vec::new())
            };
            let all: Vec<usize> = (0..k).collect();
            let fewer: Vec<usize> = (1..k).collect();
            let (e_all, e_fewer) = (error(&mut opt, &all), error(&mut opt, &fewer));
            assert!(e_all <= e_fewer + 1e-9, "seed {seed}: {e_all} > {e_fewer}");
            assert!(e_fewer <= error(&mut one, &fewer) + 1e-9, "seed {seed}");
        }
        let mean = total as f64 / (50 * k) as f64;
        assert!((mean - 3.0).abs() < 0.3, "mean load {mean}");
    }
}
