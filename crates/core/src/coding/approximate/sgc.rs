//! `sgc`: stochastic gradient coding (Bitar, Wootters and El Rouayheb,
//! "Stochastic gradient coding for straggler-tolerant distributed
//! learning"), with per-worker straggling probabilities for heterogeneous
//! workers.
//!
//! K workers, n = K partitions; every partition is stored by d distinct
//! workers drawn uniformly at random (d = `scheme.load`; drawn again while
//! some worker holds none), and every worker sends the plain sum of its
//! partitions. When worker i straggles
//! independently with probability p_i, the weight 1/(d·(1 − p_i)) on each
//! arrival makes the decoded sum unbiased: partition j's coverage
//! Σ_{i ∋ j} X_i / (d·(1 − p_i)) (X_i = 1 when i arrived) has mean
//! Σ_{i ∋ j} 1/d = 1, and variance Σ_{i ∋ j} p_i / (d²·(1 − p_i)), so
//! E‖a·B_S − 1‖₂² = Σ_j Σ_{i ∋ j} p_i / (d²·(1 − p_i))
//! ([`StochasticCode::expected_squared_error`]; a test checks both on
//! random straggler sets).
//!
//! The probabilities are `scheme.straggle_probabilities` (one per worker),
//! else `scheme.straggle_probability` for every worker, else the share
//! (K − w)/K the master leaves out when it waits for the fastest w =
//! `scheme.wait_for`. Limits: 1 <= d <= K; every p_i in [0, 1).
//! The weights are unbiased only when the stragglers are independent with
//! those probabilities: with a wait for the fastest w they are a uniformly
//! random set of K − w (under i.i.d. delays), close to it for large K.
//! Song and Choi's heterogeneous scheme with a load below 2 is not built.

use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use super::super::registry::{BuildArgs, SchemeEntry};
use super::super::{
    Arrival, CodingError, DEFAULT_LOAD, Decoding, RoundPlan, Scheme, Tolerance, WaitPolicy,
};
use super::{ApproximateCode, DecoderKind, approximate_methods};
use crate::rng::Stream;

/// `sgc`.
pub static SGC: SchemeEntry = SchemeEntry::new::<SgcParams>(
    "sgc",
    "approximate: each partition on d random workers, the arrivals weighted 1/(d(1 − p_i)) for an unbiased sum (Bitar et al., stochastic gradient coding; per-worker p_i)",
    build,
);

/// The `[scheme]` keys of `sgc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SgcParams {
    /// d: the workers that store each partition.
    pub load: usize,
    /// p: every worker's straggling probability, for the weights.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub straggle_probability: Option<f64>,
    /// p_i per worker (K values), for heterogeneous workers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub straggle_probabilities: Option<Vec<f64>>,
    /// w: the master stops after the fastest w workers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_for: Option<usize>,
    /// Model time after which the master decodes what has arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<f64>,
}

impl Default for SgcParams {
    fn default() -> Self {
        Self {
            load: DEFAULT_LOAD,
            straggle_probability: None,
            straggle_probabilities: None,
            wait_for: None,
            deadline: None,
        }
    }
}

fn build(args: &BuildArgs<'_>) -> Result<Box<dyn Scheme>, CodingError> {
    let p: SgcParams = args.params()?;
    let k = args.workers;
    let policy = WaitPolicy::new(k, p.wait_for, p.deadline, SGC.name())?;
    let probabilities = match (
        &p.straggle_probabilities,
        p.straggle_probability,
        p.wait_for,
    ) {
        (Some(list), _, _) => {
            if list.len() != k {
                return Err(CodingError::invalid(
                    "scheme.straggle_probabilities",
                    format!("{} values", list.len()),
                    format!("must hold one probability per worker (workers = {k})"),
                ));
            }
            list.clone()
        }
        (None, Some(q), _) => vec![q; k],
        (None, None, Some(w)) => vec![(k - w) as f64 / k as f64; k],
        (None, None, None) => {
            return Err(CodingError::invalid(
                "scheme.straggle_probability",
                "(missing)",
                "is required with a deadline alone (the weights need the stragglers' probability)",
            ));
        }
    };
    let mut rng = args.rng(Stream::Code);
    Ok(Box::new(StochasticCode::new(
        k,
        p.load,
        probabilities,
        policy,
        &mut rng,
    )?))
}

/// Stochastic gradient coding (see the module docs).
#[derive(Debug)]
pub struct StochasticCode {
    code: ApproximateCode,
    load: usize,
    probabilities: Vec<f64>,
}

impl StochasticCode {
    /// Limits: 1 <= d <= K; K probabilities in [0, 1); those of the wait policy.
    pub fn new(
        workers: usize,
        load: usize,
        probabilities: Vec<f64>,
        policy: WaitPolicy,
        rng: &mut impl rand::Rng,
    ) -> Result<Self, CodingError> {
        if load == 0 || load > workers {
            return Err(CodingError::invalid(
                "scheme.load",
                load,
                format!("must be between 1 and workers = {workers}"),
            ));
        }
        if let Some((i, p)) = probabilities
            .iter()
            .enumerate()
            .find(|&(_, p)| !(p.is_finite() && (0.0..1.0).contains(p)))
        {
            return Err(CodingError::invalid(
                "scheme.straggle_probabilities",
                p,
                format!(
                    "(worker {}) must be in [0, 1): the weight 1/(d(1 − p)) of a worker that always straggles is infinite",
                    i + 1
                ),
            ));
        }
        // Drawn again while some worker holds nothing (it would have no
        // message to send).
        let mut all: Vec<usize> = (0..workers).collect();
        let mut draw = || {
            let mut rows: Vec<Vec<(usize, f64)>> = vec![Vec::new(); workers];
            for p in 0..workers {
                all.shuffle(rng);
                for &w in &all[..load] {
                    rows[w].push((p, 1.0));
                }
            }
            rows
        };
        let Some(rows) = (0..super::bgc::MAX_DRAWS)
            .map(|_| draw())
            .find(|rows| rows.iter().all(|r| !r.is_empty()))
        else {
            return Err(CodingError::invalid(
                "scheme.load",
                load,
                format!(
                    "left a worker with no partition in {} draws of K = {workers}: take a larger load",
                    super::bgc::MAX_DRAWS
                ),
            ));
        };
        let code = ApproximateCode::new(
            &SGC,
            workers,
            rows,
            policy,
            DecoderKind::OneStep,
            "scheme.load",
        )?;
        Ok(Self {
            code,
            load,
            probabilities,
        })
    }

    /// The unbiased weight of worker `w`: 1/(d·(1 − p_w)).
    fn weight(&self, w: usize) -> f64 {
        1.0 / (self.load as f64 * (1.0 - self.probabilities[w]))
    }

    /// E‖a·B_S − 1‖₂² when every worker i straggles independently with
    /// its probability p_i: Σ_j Σ_{i ∋ j} p_i / (d²·(1 − p_i)).
    pub fn expected_squared_error(&self) -> f64 {
        let d2 = (self.load * self.load) as f64;
        (0..self.code.fixed.workers())
            .map(|w| {
                let p = self.probabilities[w];
                self.code.fixed.stored(w).len() as f64 * p / (d2 * (1.0 - p))
            })
            .sum()
    }
}

impl Scheme for StochasticCode {
    approximate_methods!(code);

    fn decode(&mut self, _plan: &RoundPlan, received: &[Arrival]) -> Decoding {
        let (workers, slots) = self.code.distinct(received);
        let weights: Vec<f64> = workers.iter().map(|&w| self.weight(w)).collect();
        self.code.decoding(received, &slots, &workers, &weights)
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
    use rand::RngExt;

    /// With independent stragglers of their probabilities (heterogeneous
    /// here) the decoded coverage of every partition has mean 1 and the
    /// squared error has the closed-form mean, within 4 standard errors
    /// over 20000 straggler sets; every partition has d holders.
    #[test]
    fn the_decode_is_unbiased_with_the_closed_form_error() {
        let k = 10;
        let probabilities: Vec<f64> = (0..k).map(|i| 0.05 + 0.04 * i as f64).collect();
        let policy = WaitPolicy::new(k, Some(k), None, "sgc").unwrap();
        let mut c = StochasticCode::new(
            k,
            3,
            probabilities.clone(),
            policy,
            &mut stream(2, Stream::Code),
        )
        .unwrap();
        for p in 0..k {
            assert_eq!((0..k).filter(|&w| c.stored(w).contains(&p)).count(), 3);
        }
        let plan = c.plan_round(&Default::default());
        let mut rng = stream(9, Stream::CheckSampling);
        let trials = 20000;
        let mut coverage_sum = vec![0.0; k];
        let mut squared = Vec::with_capacity(trials);
        let mut coverage = Vec::new();
        for _ in 0..trials {
            let alive: Vec<Arrival> = (0..k)
                .filter(|&w| rng.random::<f64>() >= probabilities[w])
                .map(Arrival::only)
                .collect();
            let e = c
                .decode(&plan, &alive)
                .error(&plan, &alive, k, &mut coverage);
            for (s, v) in coverage_sum.iter_mut().zip(&coverage) {
                *s += v;
            }
            squared.push(e * e);
        }
        let mean = squared.iter().sum::<f64>() / trials as f64;
        let var = squared.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (trials - 1) as f64;
        let want = c.expected_squared_error();
        let se = (var / trials as f64).sqrt();
        assert!(
            (mean - want).abs() <= 4.0 * se,
            "{mean} vs {want} (se {se})"
        );
        for (j, s) in coverage_sum.iter().enumerate() {
            let m = s / trials as f64;
            assert!((m - 1.0).abs() < 0.03, "partition {j}: mean coverage {m}");
        }
    }

    #[test]
    fn a_probability_of_one_is_refused_naming_the_worker() {
        let policy = WaitPolicy::new(3, Some(2), None, "sgc").unwrap();
        let e = StochasticCode::new(
            3,
            2,
            vec![0.1, 1.0, 0.2],
            policy,
            &mut stream(1, Stream::Code),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("scheme.straggle_probabilities = 1 (worker 2)"),
            "{e}"
        );
    }
}
