//! The random delay models (see the table in the module above). Each owns its
//! ChaCha stream and draws in a fixed order (worker 0 first), so a sample
//! sequence is a pure function of (seed, trial, parameters).

use rand::RngExt;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp1};

use super::{DelayModel, RoundSample};

/// Exp(rate) as Exp(1) / rate.
fn exponential(rng: &mut ChaCha8Rng, rate: f64) -> f64 {
    let e: f64 = Exp1.sample(rng);
    e / rate
}

/// Uniform on (0, max]: never 0, so a rate never gives an infinite time.
fn uniform_positive(rng: &mut ChaCha8Rng, max: f64) -> f64 {
    let u: f64 = rng.random();
    max * (1.0 - u)
}

/// `count` distinct workers out of `workers`, uniformly at random.
fn random_workers(rng: &mut ChaCha8Rng, workers: usize, count: usize) -> Vec<bool> {
    let mut order: Vec<usize> = (0..workers).collect();
    let (chosen, _) = order.partial_shuffle(rng, count);
    let mut mask = vec![false; workers];
    for &w in chosen.iter() {
        mask[w] = true;
    }
    mask
}

/// `none`: nothing injected (the runtime runs at its natural speed).
pub(super) struct NoDelay {
    pub workers: usize,
}

impl DelayModel for NoDelay {
    fn workers(&self) -> usize {
        self.workers
    }

    fn sample(&mut self, out: &mut RoundSample) {
        out.unit_time.fill(0.0);
        out.extra_time.fill(0.0);
        out.straggling.fill(false);
        out.rate.fill(f64::NAN);
    }
}

/// `shifted-exponential` (000 eq. 21, 003 eq. 5): u = alpha + Exp(mu), i.i.d.
/// over workers and iterations; no straggling state.
pub(super) struct ShiftedExponential {
    workers: usize,
    alpha: f64,
    mu: f64,
    rng: ChaCha8Rng,
}

impl ShiftedExponential {
    pub fn new(workers: usize, alpha: f64, mu: f64, rng: ChaCha8Rng) -> Self {
        Self {
            workers,
            alpha,
            mu,
            rng,
        }
    }
}

impl DelayModel for ShiftedExponential {
    fn workers(&self) -> usize {
        self.workers
    }

    fn sample(&mut self, out: &mut RoundSample) {
        for w in 0..self.workers {
            out.unit_time[w] = self.alpha + exponential(&mut self.rng, self.mu);
        }
        out.extra_time.fill(0.0);
        out.straggling.fill(false);
        out.rate.fill(self.mu);
    }
}

/// Which workers a Gilbert-Elliott model calls straggling.
enum StragglerRule {
    /// The slow state (homogeneous workers, 000 §VI-A).
    SlowState,
    /// A rate below tau (heterogeneous workers, 000 §VI-B).
    RateBelow(f64),
}

/// `gilbert-elliott` and `gilbert-elliott-heterogeneous`: every worker is a
/// two-state Markov chain (fast / slow) that, at the start of every
/// iteration but the first, turns slow with probability p_fs when fast and
/// fast with p_sf when slow (000 §VI-A: p_fs = p_sf = p); u = alpha +
/// Exp(rate of its state). `initial_stragglers` workers, drawn at random,
/// start slow.
pub(super) struct GilbertElliott {
    alpha: f64,
    fast: Vec<f64>,
    slow: Vec<f64>,
    /// (p_fs, p_sf).
    switch_probability: (f64, f64),
    rule: StragglerRule,
    slow_now: Vec<bool>,
    started: bool,
    rng: ChaCha8Rng,
}

impl GilbertElliott {
    /// 000 §VI-A: every worker has rate mu_fast in the fast state and mu_slow in the slow one.
    pub fn homogeneous(
        workers: usize,
        alpha: f64,
        mu_fast: f64,
        mu_slow: f64,
        switch_probability: (f64, f64),
        initial_stragglers: usize,
        mut rng: ChaCha8Rng,
    ) -> Self {
        let slow_now = random_workers(&mut rng, workers, initial_stragglers);
        Self {
            alpha,
            fast: vec![mu_fast; workers],
            slow: vec![mu_slow; workers],
            switch_probability,
            rule: StragglerRule::SlowState,
            slow_now,
            started: false,
            rng,
        }
    }

    /// 000 §VI-B1: worker k's fast rate mu_f,k ~ U(0, rate_max], drawn once
    /// per trial, its slow rate mu_f,k / slow_factor; a worker straggles when
    /// its current rate is below tau (the paper's 0.5).
    #[allow(clippy::too_many_arguments)]
    pub fn heterogeneous(
        workers: usize,
        alpha: f64,
        rate_max: f64,
        slow_factor: f64,
        tau: f64,
        switch_probability: (f64, f64),
        initial_stragglers: usize,
        mut rng: ChaCha8Rng,
    ) -> Self {
        let slow_now = random_workers(&mut rng, workers, initial_stragglers);
        let fast: Vec<f64> = (0..workers)
            .map(|_| uniform_positive(&mut rng, rate_max))
            .collect();
        let slow = fast.iter().map(|f| f / slow_factor).collect();
        Self {
            alpha,
            fast,
            slow,
            switch_probability,
            rule: StragglerRule::RateBelow(tau),
            slow_now,
            started: false,
            rng,
        }
    }
}

impl DelayModel for GilbertElliott {
    fn workers(&self) -> usize {
        self.fast.len()
    }

    /// The initial states: `initial_stragglers` workers slow (the state of
    /// the first iteration too, which runs in it).
    fn initial_state(&self, out: &mut RoundSample) -> bool {
        for w in 0..self.fast.len() {
            let rate = if self.slow_now[w] {
                self.slow[w]
            } else {
                self.fast[w]
            };
            out.unit_time[w] = 0.0;
            out.extra_time[w] = 0.0;
            out.rate[w] = rate;
            out.straggling[w] = match self.rule {
                StragglerRule::SlowState => self.slow_now[w],
                StragglerRule::RateBelow(tau) => rate < tau,
            };
        }
        true
    }

    fn sample(&mut self, out: &mut RoundSample) {
        // Transitions happen at the start of every iteration but the first,
        // which runs in the initial state.
        let switching = std::mem::replace(&mut self.started, true);
        for w in 0..self.fast.len() {
            let (to_slow, to_fast) = self.switch_probability;
            let p = if self.slow_now[w] { to_fast } else { to_slow };
            if switching && self.rng.random::<f64>() < p {
                self.slow_now[w] = !self.slow_now[w];
            }
            let rate = if self.slow_now[w] {
                self.slow[w]
            } else {
                self.fast[w]
            };
            out.unit_time[w] = self.alpha + exponential(&mut self.rng, rate);
            out.rate[w] = rate;
            out.straggling[w] = match self.rule {
                StragglerRule::SlowState => self.slow_now[w],
                StragglerRule::RateBelow(tau) => rate < tau,
            };
        }
        out.extra_time.fill(0.0);
    }
}

/// `time-varying` (000 eq. 22): mu_k,t+1 = (1 - a) mu_k,t + a U(0, rate_max],
/// a ~ Bernoulli(p) per worker and iteration; u = alpha + Exp(mu_k,t); a
/// worker straggles when mu_k,t < tau. Initially `initial_stragglers` random
/// workers get rates from U(0, tau) and the others from U[tau, rate_max]
/// (000 §VI-B2).
pub(super) struct TimeVarying {
    alpha: f64,
    rate_max: f64,
    tau: f64,
    switch_probability: f64,
    rates: Vec<f64>,
    started: bool,
    rng: ChaCha8Rng,
}

impl TimeVarying {
    pub fn new(
        workers: usize,
        alpha: f64,
        rate_max: f64,
        tau: f64,
        switch_probability: f64,
        initial_stragglers: usize,
        mut rng: ChaCha8Rng,
    ) -> Self {
        let straggling = random_workers(&mut rng, workers, initial_stragglers);
        let rates = straggling
            .iter()
            .map(|&s| {
                if s {
                    uniform_positive(&mut rng, tau)
                } else {
                    tau + (rate_max - tau) * rng.random::<f64>()
                }
            })
            .collect();
        Self {
            alpha,
            rate_max,
            tau,
            switch_probability,
            rates,
            started: false,
            rng,
        }
    }
}

impl DelayModel for TimeVarying {
    fn workers(&self) -> usize {
        self.rates.len()
    }

    /// The initial rates (`initial_stragglers` of them below tau).
    fn initial_state(&self, out: &mut RoundSample) -> bool {
        for (w, &rate) in self.rates.iter().enumerate() {
            out.unit_time[w] = 0.0;
            out.extra_time[w] = 0.0;
            out.rate[w] = rate;
            out.straggling[w] = rate < self.tau;
        }
        true
    }

    fn sample(&mut self, out: &mut RoundSample) {
        let resampling = std::mem::replace(&mut self.started, true);
        for w in 0..self.rates.len() {
            if resampling && self.rng.random::<f64>() < self.switch_probability {
                self.rates[w] = uniform_positive(&mut self.rng, self.rate_max);
            }
            let rate = self.rates[w];
            out.unit_time[w] = self.alpha + exponential(&mut self.rng, rate);
            out.rate[w] = rate;
            out.straggling[w] = rate < self.tau;
        }
        out.extra_time.fill(0.0);
    }
}

/// Which workers `extra-delay` delays.
pub(super) enum Delayed {
    /// The same workers every iteration (0-based).
    Chosen(Vec<usize>),
    /// This many workers drawn at random every iteration (001 §5: "s random workers").
    Random(usize),
}

/// `extra-delay`: u = alpha + Exp(mu) for everybody, and the delayed workers
/// sleep an extra e ~ Exp(1 / delay_mean) before sending each message
/// (001 §5, 004 §VIII-B: "adding an arbitrary delay before sending");
/// they are the iteration's stragglers.
pub(super) struct ExtraDelay {
    workers: usize,
    alpha: f64,
    mu: f64,
    delayed: Delayed,
    delay_mean: f64,
    order: Vec<usize>,
    rng: ChaCha8Rng,
}

impl ExtraDelay {
    pub fn new(
        workers: usize,
        alpha: f64,
        mu: f64,
        delayed: Delayed,
        delay_mean: f64,
        rng: ChaCha8Rng,
    ) -> Self {
        Self {
            workers,
            alpha,
            mu,
            delayed,
            delay_mean,
            order: (0..workers).collect(),
            rng,
        }
    }
}

impl DelayModel for ExtraDelay {
    fn workers(&self) -> usize {
        self.workers
    }

    /// Chosen delayed workers are delayed in every iteration, so known
    /// before the first; randomly drawn ones are not.
    fn initial_state(&self, out: &mut RoundSample) -> bool {
        let Delayed::Chosen(list) = &self.delayed else {
            return false;
        };
        out.unit_time.fill(0.0);
        out.extra_time.fill(0.0);
        out.straggling.fill(false);
        for &w in list {
            out.straggling[w] = true;
        }
        out.rate.fill(self.mu);
        true
    }

    fn sample(&mut self, out: &mut RoundSample) {
        for w in 0..self.workers {
            out.unit_time[w] = self.alpha + exponential(&mut self.rng, self.mu);
        }
        out.straggling.fill(false);
        match &self.delayed {
            Delayed::Chosen(list) => {
                for &w in list {
                    out.straggling[w] = true;
                }
            }
            Delayed::Random(count) => {
                let (chosen, _) = self.order.partial_shuffle(&mut self.rng, *count);
                for &w in chosen.iter() {
                    out.straggling[w] = true;
                }
            }
        }
        for w in 0..self.workers {
            out.extra_time[w] = if out.straggling[w] {
                self.delay_mean * exponential(&mut self.rng, 1.0)
            } else {
                0.0
            };
        }
        out.rate.fill(self.mu);
    }
}
