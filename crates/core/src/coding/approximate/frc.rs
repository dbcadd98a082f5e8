//! `agc-frc`: fractional repetition decoded approximately (Charles,
//! Papailiopoulos and Ellenberg, "Approximate gradient coding via sparse
//! random graphs", 2017; arXiv 1711.06771, §3), and `erasurehead`, the same
//! placement with early stopping (Wang, Charles and Papailiopoulos,
//! "ErasureHead", 2019; arXiv 1901.09671).
//!
//! K workers, n = K partitions in K/d blocks of d; block b's d partitions
//! are stored whole by d workers (worker t·K/d + b, as gc-frac places them),
//! each sending their plain sum. The optimal decode takes one copy of every
//! block that arrived (weight 1 on its first arrival): it is exact on the
//! covered blocks and misses the others, so ‖a·B_S − 1‖₂² counts the
//! partitions of the blocks whose d copies all straggle; with each worker
//! straggling independently with probability p its mean over n is p^d
//! ([`expected_error_per_partition`]). The one-step decoder puts
//! K/(|S|·d) on every arrival.
//!
//! `agc-frc` waits for `wait_for` workers (or a deadline), as the paper's
//! model of s stragglers does; `erasurehead` stops at the first `wait_for`
//! results or as soon as every block has arrived, whichever is first, and
//! decodes optimally. Both update with the approximate sum over every
//! sample (a missing block counts 0), ErasureHead's gradient; plain or
//! accelerated descent is `train.momentum` / `train.nesterov`.
//!
//! Limits: 1 <= d <= K, d | K.

use serde::{Deserialize, Serialize};

use super::super::registry::{BuildArgs, SchemeEntry};
use super::super::{
    Arrival, CodingError, DEFAULT_LOAD, Decoding, RoundPlan, Scheme, Tolerance, WaitPolicy,
};
use super::{ApproximateCode, DecoderKind, approximate_methods};

/// `agc-frc`.
pub static AGC_FRC: SchemeEntry = SchemeEntry::new::<AgcFrcParams>(
    "agc-frc",
    "approximate: fractional repetition (K/d blocks of d replicas), the fastest `wait_for` decoded by one copy per block (optimal) or one step (Charles et al. §3)",
    build_frc,
);

/// `erasurehead`.
pub static ERASUREHEAD: SchemeEntry = SchemeEntry::new::<ErasureHeadParams>(
    "erasurehead",
    "approximate: fractional repetition, the master stops at `wait_for` results or when every block arrived and sums one copy per block (Wang et al., ErasureHead)",
    build_erasurehead,
);

/// The `[scheme]` keys of `agc-frc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgcFrcParams {
    /// d: replicas per block, partitions per worker; d | K.
    pub load: usize,
    pub decoder: DecoderKind,
    /// w: the master stops after the fastest w workers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_for: Option<usize>,
    /// Model time after which the master decodes what has arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<f64>,
}

impl Default for AgcFrcParams {
    fn default() -> Self {
        Self {
            load: DEFAULT_LOAD,
            decoder: DecoderKind::Optimal,
            wait_for: None,
            deadline: None,
        }
    }
}

/// The `[scheme]` keys of `erasurehead`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ErasureHeadParams {
    /// d: replicas per block, partitions per worker; d | K.
    pub load: usize,
    /// The paper's num_collect: the master stops after this many workers
    /// (or when every block arrived).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_for: Option<usize>,
    /// Model time after which the master decodes what has arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<f64>,
}

impl Default for ErasureHeadParams {
    fn default() -> Self {
        Self {
            load: DEFAULT_LOAD,
            wait_for: None,
            deadline: None,
        }
    }
}

fn build_frc(args: &BuildArgs<'_>) -> Result<Box<dyn Scheme>, CodingError> {
    let p: AgcFrcParams = args.params()?;
    let policy = WaitPolicy::new(args.workers, p.wait_for, p.deadline, AGC_FRC.name())?;
    Ok(Box::new(FrcCode::new(
        &AGC_FRC,
        args.workers,
        p.load,
        policy,
        p.decoder,
        false,
    )?))
}

fn build_erasurehead(args: &BuildArgs<'_>) -> Result<Box<dyn Scheme>, CodingError> {
    let p: ErasureHeadParams = args.params()?;
    let policy = WaitPolicy::new(args.workers, p.wait_for, p.deadline, ERASUREHEAD.name())?;
    Ok(Box::new(FrcCode::new(
        &ERASUREHEAD,
        args.workers,
        p.load,
        policy,
        DecoderKind::Optimal,
        true,
    )?))
}

/// E‖a·B_S − 1‖₂²/n of the optimal FRC decode when every worker straggles
/// independently with probability `p`: p^d (a block is missed when its d
/// copies all straggle).
pub fn expected_error_per_partition(p: f64, load: usize) -> f64 {
    p.powi(load as i32)
}

/// A fractional repetition code decoded approximately (see the module docs).
#[derive(Debug)]
pub struct FrcCode {
    code: ApproximateCode,
    /// K/d.
    blocks: usize,
}

impl FrcCode {
    /// Limits: 1 <= d <= K, d | K; those of the wait policy.
    pub fn new(
        kind: &'static SchemeEntry,
        workers: usize,
        load: usize,
        policy: WaitPolicy,
        decoder: DecoderKind,
        early_stop: bool,
    ) -> Result<Self, CodingError> {
        if load == 0 || load > workers || workers % load != 0 {
            return Err(CodingError::invalid(
                "scheme.load",
                load,
                format!("must divide workers = {workers} (K/d blocks of d replicas)"),
            ));
        }
        let blocks = workers / load;
        let rows = (0..workers)
            .map(|w| {
                let b = w % blocks;
                (b * load..(b + 1) * load).map(|p| (p, 1.0)).collect()
            })
            .collect();
        let code = ApproximateCode::new(kind, workers, rows, policy, decoder, "scheme.load")?;
        // ErasureHead: every block arrived is every partition covered.
        let code = if early_stop {
            code.stopping_when_covered()
        } else {
            code
        };
        Ok(Self { code, blocks })
    }

    /// The block worker `w` holds.
    fn block(&self, w: usize) -> usize {
        w % self.blocks
    }
}

impl Scheme for FrcCode {
    approximate_methods!(code);

    fn decode(&mut self, _plan: &RoundPlan, received: &[Arrival]) -> Decoding {
        let (workers, slots) = self.code.distinct(received);
        let weights = match self.code.decoder {
            // One copy of every block that arrived: the least-squares optimum.
            DecoderKind::Optimal => {
                let mut covered = vec![false; self.blocks];
                workers
                    .iter()
                    .map(|&w| {
                        if std::mem::replace(&mut covered[self.block(w)], true) {
                            0.0
                        } else {
                            1.0
                        }
                    })
                    .collect()
            }
            DecoderKind::OneStep => {
                vec![self.code.one_step_weight(workers.len()); workers.len()]
            }
        };
        self.code.decoding(received, &slots, &workers, &weights)
    }

    /// Exact whatever d − 1 workers straggle; at best K − K/d.
    fn tolerance(&self) -> Tolerance {
        let k = self.code.fixed.workers();
        let d = k / self.blocks;
        Tolerance {
            worst: d - 1,
            best: k - self.blocks,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Stream, stream};
    use rand::RngExt;

    fn frc(k: usize, d: usize, decoder: DecoderKind, early: bool) -> FrcCode {
        let policy = WaitPolicy::new(k, Some(k / 2), None, "agc-frc").unwrap();
        FrcCode::new(&AGC_FRC, k, d, policy, decoder, early).unwrap()
    }

    fn error(code: &mut FrcCode, alive: &[usize]) -> f64 {
        let plan = code.plan_round(&Default::default());
        let arrivals: Vec<Arrival> = alive.iter().map(|&w| Arrival::only(w)).collect();
        let decoding = code.decode(&plan, &arrivals);
        decoding.error(&plan, &arrivals, code.partitions(), &mut Vec::new())
    }

    /// The one-copy-per-block decode is the least-squares optimum, and its
    /// squared error counts the partitions of the blocks every copy of
    /// which straggles, on every straggler set of K = 8, d = 2.
    #[test]
    fn the_optimal_decode_misses_exactly_the_blocks_whose_copies_all_straggle() {
        let (k, d) = (8, 2);
        let mut code = frc(k, d, DecoderKind::Optimal, false);
        for mask in 1u32..(1 << k) {
            let alive: Vec<usize> = (0..k).filter(|w| mask & (1 << w) != 0).collect();
            let e = error(&mut code, &alive);
            let missed = (0..k / d)
                .filter(|&b| alive.iter().all(|&w| code.block(w) != b))
                .count();
            assert!(
                (e * e - (missed * d) as f64).abs() <= 1e-9,
                "{alive:?}: {e}"
            );
            let (workers, _) = code
                .code
                .distinct(&alive.iter().map(|&w| Arrival::only(w)).collect::<Vec<_>>());
            let ls = code.code.least_squares(&workers);
            let plan = code.plan_round(&Default::default());
            let arrivals: Vec<Arrival> = workers.iter().map(|&w| Arrival::only(w)).collect();
            let mut d_ls = code.decode(&plan, &arrivals);
            d_ls.weights = ls;
            let e_ls = d_ls.error(&plan, &arrivals, k, &mut Vec::new());
            assert!(
                (e - e_ls).abs() <= 1e-9,
                "{alive:?}: {e} vs least squares {e_ls}"
            );
        }
    }

    /// Charles et al.'s closed form: with i.i.d. straggling probability p,
    /// E‖a·B_S − 1‖²/n = p^d; 20000 random straggler sets agree within
    /// four standard errors.
    #[test]
    fn the_mean_squared_error_per_partition_is_p_to_the_d() {
        let (k, d, p) = (12, 3, 0.3);
        let mut code = frc(k, d, DecoderKind::Optimal, false);
        let mut rng = stream(5, Stream::CheckSampling);
        let trials = 20000;
        let samples: Vec<f64> = (0..trials)
            .map(|_| {
                let alive: Vec<usize> = (0..k).filter(|_| rng.random::<f64>() >= p).collect();
                let e = error(&mut code, &alive);
                e * e / k as f64
            })
            .collect();
        let mean = samples.iter().sum::<f64>() / trials as f64;
        let var = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (trials - 1) as f64;
        let want = expected_error_per_partition(p, d);
        let se = (var / trials as f64).sqrt();
        assert!(
            (mean - want).abs() <= 4.0 * se,
            "{mean} vs {want} (se {se})"
        );
    }

    /// ErasureHead stops as soon as every block arrived (here at the third
    /// worker of K = 6, d = 2, wait_for 3 not needed), agc-frc only at
    /// `wait_for`.
    #[test]
    fn erasurehead_stops_when_every_block_arrived() {
        let k = 6;
        let policy = WaitPolicy::new(k, Some(5), None, "erasurehead").unwrap();
        let early = FrcCode::new(&ERASUREHEAD, k, 2, policy, DecoderKind::Optimal, true).unwrap();
        let late = FrcCode::new(&AGC_FRC, k, 2, policy, DecoderKind::Optimal, false).unwrap();
        let plan = early.code.fixed.plan().clone();
        for (code, stops_at) in [(&early, 3), (&late, 5)] {
            let mut tracker = code.tracker(&plan);
            let stop = [0, 1, 2, 3, 4, 5]
                .into_iter()
                .position(|w| tracker.arrive(Arrival::only(w)))
                .unwrap();
            assert_eq!(stop + 1, stops_at);
        }
    }
}
