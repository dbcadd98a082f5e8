//! Optimisers: gradient descent and Nesterov's accelerated gradient (001 §5),
//! with a learning-rate schedule; with `train.momentum` = beta > 0, gradient
//! descent takes the heavy-ball step `theta_{t+1} = theta_t − eta g_t +
//! beta (theta_t − theta_{t−1})` and Nesterov uses the constant beta in
//! place of t / (t + 3) (SGD with Nesterov momentum, as deep-learning
//! training uses it). Both need only theta_t and theta_{t−1}, the two
//! vectors a snapshot stores, so a resumed run continues exactly.
//!
//! The objective is `F(theta) = (1/N) sum_i l_i(theta) + (l2/2)|theta|²`. The
//! workers compute sums of sample gradients at the *evaluation point*; the
//! master decodes the sum over the recovered samples and calls [`Optimizer::step`]
//! with it and the number of samples it covers, so the update uses the mean
//! gradient over the recovered partitions (exactly the full gradient when
//! every partition is recovered).

use crate::config::{Optimizer as Kind, Schedule, TrainConfig};

/// Optimiser state: the iterate, the previous iterate, the evaluation point.
#[derive(Debug, Clone, PartialEq)]
pub struct Optimizer {
    kind: Kind,
    learning_rate: f64,
    /// `train.momentum`: 0 for none.
    momentum: f64,
    schedule: Schedule,
    decay_iterations: f64,
    /// `train.milestones`, `train.gamma`, `train.min_learning_rate`,
    /// `train.warmup_iterations` and `train.iterations` (the cosine's period).
    milestones: Vec<u64>,
    gamma: f64,
    min_learning_rate: f64,
    warmup_iterations: u64,
    iterations: u64,
    l2: f64,
    iteration: u64,
    theta: Vec<f64>,
    previous: Vec<f64>,
    eval: Vec<f64>,
}

impl Optimizer {
    /// Start at theta = 0 in dimension `dim`.
    pub fn new(train: &TrainConfig, l2: f64, dim: usize) -> Self {
        Self {
            kind: train.optimizer,
            learning_rate: train.learning_rate,
            momentum: train.momentum,
            schedule: train.schedule,
            decay_iterations: train.decay_iterations,
            milestones: train.milestones.clone().unwrap_or_default(),
            gamma: train.gamma.unwrap_or(0.1),
            min_learning_rate: train.min_learning_rate.unwrap_or(0.0),
            warmup_iterations: train.warmup_iterations as u64,
            iterations: train.iterations as u64,
            l2,
            iteration: 0,
            theta: vec![0.0; dim],
            previous: vec![0.0; dim],
            eval: vec![0.0; dim],
        }
    }

    /// Start at `theta` (a network's initialisation) instead of 0.
    pub fn start_at(&mut self, theta: &[f64]) {
        self.restore(0, theta, theta);
    }

    /// Iterations taken so far.
    pub fn iteration(&self) -> u64 {
        self.iteration
    }

    /// The current iterate theta_t.
    pub fn theta(&self) -> &[f64] {
        &self.theta
    }

    /// The iterate before it, theta_{t-1} (Nesterov's momentum needs it to resume).
    pub fn previous(&self) -> &[f64] {
        &self.previous
    }

    /// Continue from a snapshot: `iteration` steps taken, ending at `theta`
    /// after `previous`. The evaluation point follows from them.
    pub fn restore(&mut self, iteration: u64, theta: &[f64], previous: &[f64]) {
        assert_eq!(theta.len(), self.theta.len(), "snapshot dimension");
        assert_eq!(previous.len(), self.theta.len(), "snapshot dimension");
        self.iteration = iteration;
        self.theta.copy_from_slice(theta);
        self.previous.copy_from_slice(previous);
        self.set_eval_point();
    }

    fn set_eval_point(&mut self) {
        match self.kind {
            Kind::Gd => self.eval.copy_from_slice(&self.theta),
            Kind::Nesterov => {
                let t = self.iteration as f64;
                let beta = if self.momentum > 0.0 {
                    self.momentum
                } else {
                    t / (t + 3.0)
                };
                for ((e, &x), &p) in self.eval.iter_mut().zip(&self.theta).zip(&self.previous) {
                    *e = x + beta * (x - p);
                }
            }
        }
    }

    /// Where the gradient of this iteration is evaluated: theta_t for gradient
    /// descent, y_t = theta_t + beta_t (theta_t − theta_{t−1}) for Nesterov with
    /// beta_t = t / (t + 3).
    pub fn eval_point(&self) -> &[f64] {
        &self.eval
    }

    /// eta_t of the schedule at t = the steps taken so far (a function of
    /// t alone, so a resumed run continues it exactly), times the warm-up's
    /// (t + 1) / warmup_iterations during the warm-up.
    pub fn step_size(&self) -> f64 {
        let t = self.iteration;
        let eta = match self.schedule {
            Schedule::Constant => self.learning_rate,
            Schedule::InverseTime => self.learning_rate / (1.0 + t as f64 / self.decay_iterations),
            Schedule::Step => {
                let passed = self.milestones.iter().filter(|&&m| m <= t).count();
                self.learning_rate * self.gamma.powi(passed as i32)
            }
            Schedule::Cosine => {
                let phase = std::f64::consts::PI * t as f64 / self.iterations.max(1) as f64;
                let floor = self.min_learning_rate;
                floor + (self.learning_rate - floor) * 0.5 * (1.0 + phase.cos())
            }
        };
        if t < self.warmup_iterations {
            eta * (t + 1) as f64 / self.warmup_iterations as f64
        } else {
            eta
        }
    }

    /// The objective at the evaluation point from a decoded loss sum over `samples`.
    pub fn objective(&self, loss_sum: f64, samples: usize) -> f64 {
        self.objective_at(&self.eval, loss_sum, samples)
    }

    /// The objective at `point` from the loss sum over `samples` at `point`.
    pub fn objective_at(&self, point: &[f64], loss_sum: f64, samples: usize) -> f64 {
        let mean = loss_sum / samples as f64;
        if self.l2 == 0.0 {
            // No penalty term: no pass over the d values of `point`.
            return mean;
        }
        let norm2: f64 = point.iter().map(|v| v * v).sum();
        mean + 0.5 * self.l2 * norm2
    }

    /// One step with the gradient sum over `samples` recovered samples at the evaluation point.
    pub fn step(&mut self, gradient_sum: &[f64], samples: usize) {
        assert_eq!(gradient_sum.len(), self.theta.len(), "gradient dimension");
        assert!(samples > 0, "a step needs at least one recovered sample");
        let eta = self.step_size();
        let scale = 1.0 / samples as f64;
        // theta_{t+1} = eval − eta (mean gradient + l2 · eval)
        //               + beta (theta_t − theta_{t−1})  (heavy ball: gd with momentum)
        let heavy_ball = if self.kind == Kind::Gd {
            self.momentum
        } else {
            0.0
        };
        std::mem::swap(&mut self.previous, &mut self.theta);
        if heavy_ball > 0.0 {
            // previous now holds theta_t, theta holds theta_{t−1}.
            for (((next, &e), &g), &now) in self
                .theta
                .iter_mut()
                .zip(&self.eval)
                .zip(gradient_sum)
                .zip(&self.previous)
            {
                let before = *next;
                *next = e - eta * (g * scale + self.l2 * e) + heavy_ball * (now - before);
            }
        } else if self.kind == Kind::Gd {
            // Gradient descent evaluates at θ: the new point written to both
            // in one pass (no copy after it).
            for ((next, e), &g) in self.theta.iter_mut().zip(&mut self.eval).zip(gradient_sum) {
                *next = *e - eta * (g * scale + self.l2 * *e);
                *e = *next;
            }
            self.iteration += 1;
            return;
        } else {
            for ((next, &e), &g) in self.theta.iter_mut().zip(&self.eval).zip(gradient_sum) {
                *next = e - eta * (g * scale + self.l2 * e);
            }
        }
        self.iteration += 1;
        self.set_eval_point();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Optimizer as Kind, Schedule, TrainConfig};

    fn train(kind: Kind, schedule: Schedule) -> TrainConfig {
        TrainConfig {
            optimizer: kind,
            schedule,
            learning_rate: 0.5,
            decay_iterations: 10.0,
            ..TrainConfig::default()
        }
    }

    /// f(theta) = sum_i (theta_i − c_i)² / 2 per sample, one sample.
    fn grad(point: &[f64], c: &[f64]) -> Vec<f64> {
        point.iter().zip(c).map(|(p, c)| p - c).collect()
    }

    /// The step sizes a fresh optimiser takes over `steps` steps, and those
    /// of one restored at each step (a resumed run).
    fn step_sizes(config: &TrainConfig, steps: u64) -> Vec<f64> {
        let mut opt = Optimizer::new(config, 0.0, 1);
        let mut sizes = Vec::new();
        for t in 0..steps {
            let mut resumed = Optimizer::new(config, 0.0, 1);
            resumed.restore(t, opt.theta(), opt.previous());
            assert_eq!(resumed.step_size(), opt.step_size(), "resumed at step {t}");
            sizes.push(opt.step_size());
            opt.step(&[0.0], 1);
        }
        sizes
    }

    #[test]
    fn the_step_schedule_multiplies_by_gamma_after_each_milestone() {
        let config = TrainConfig {
            schedule: Schedule::Step,
            learning_rate: 0.8,
            milestones: Some(vec![2, 5]),
            gamma: Some(0.5),
            iterations: 7,
            ..TrainConfig::default()
        };
        assert_eq!(
            step_sizes(&config, 7),
            [0.8, 0.8, 0.4, 0.4, 0.4, 0.2, 0.2],
            "after 2 steps ×0.5, after 5 steps ×0.5 again"
        );
        // gamma unset: 0.1.
        let config = TrainConfig {
            gamma: None,
            ..config
        };
        let sizes = step_sizes(&config, 3);
        assert!((sizes[2] - 0.08).abs() < 1e-15, "{sizes:?}");
    }

    #[test]
    fn the_cosine_schedule_runs_from_the_rate_to_the_floor() {
        let config = TrainConfig {
            schedule: Schedule::Cosine,
            learning_rate: 1.0,
            min_learning_rate: Some(0.2),
            iterations: 8,
            ..TrainConfig::default()
        };
        let sizes = step_sizes(&config, 8);
        assert_eq!(sizes[0], 1.0);
        // Half way: the mean of the rate and the floor.
        assert!((sizes[4] - 0.6).abs() < 1e-15, "{sizes:?}");
        // Decreasing towards the floor, above it to the last step.
        assert!(sizes.windows(2).all(|w| w[1] < w[0]), "{sizes:?}");
        let last = 0.2 + 0.8 * 0.5 * (1.0 + (std::f64::consts::PI * 7.0 / 8.0).cos());
        assert!(
            (sizes[7] - last).abs() < 1e-15 && sizes[7] > 0.2,
            "{sizes:?}"
        );
    }

    #[test]
    fn a_warm_up_rises_linearly_into_the_schedule() {
        let config = TrainConfig {
            schedule: Schedule::Step,
            learning_rate: 0.4,
            milestones: Some(vec![6]),
            gamma: Some(0.5),
            warmup_iterations: 4,
            iterations: 8,
            ..TrainConfig::default()
        };
        let sizes = step_sizes(&config, 8);
        let want = [0.1, 0.2, 0.30000000000000004, 0.4, 0.4, 0.4, 0.2, 0.2];
        for (got, want) in sizes.iter().zip(want) {
            assert!((got - want).abs() < 1e-15, "{sizes:?}");
        }
    }

    #[test]
    fn both_optimisers_converge_on_a_quadratic() {
        let c = [1.0, -2.0, 3.0];
        for kind in [Kind::Gd, Kind::Nesterov] {
            let mut opt = Optimizer::new(&train(kind, Schedule::Constant), 0.0, 3);
            for _ in 0..200 {
                let g = grad(opt.eval_point(), &c);
                opt.step(&g, 1);
            }
            for (t, c) in opt.theta().iter().zip(&c) {
                assert!((t - c).abs() < 1e-8, "{kind:?}: {:?}", opt.theta());
            }
        }
    }

    #[test]
    fn gradient_descent_step_is_the_textbook_one() {
        let mut opt = Optimizer::new(&train(Kind::Gd, Schedule::Constant), 0.1, 2);
        opt.step(&[4.0, -2.0], 2);
        assert_eq!(opt.theta(), &[-1.0, 0.5]);
        // eta (mean grad + l2 theta): 0.5 · ((4, -2)/2 + 0.1 · (-1, 0.5))
        opt.step(&[4.0, -2.0], 2);
        assert!((opt.theta()[0] - (-1.0 - 0.5 * (2.0 - 0.1))).abs() < 1e-15);
    }

    #[test]
    fn nesterov_evaluates_at_the_extrapolated_point() {
        let mut opt = Optimizer::new(&train(Kind::Nesterov, Schedule::Constant), 0.0, 1);
        opt.step(&[-2.0], 1); // theta_1 = 1, theta_0 = 0
        assert_eq!(opt.theta(), &[1.0]);
        assert_eq!(opt.eval_point(), &[1.0 + 0.25 * 1.0], "beta_1 = 1/4");
    }

    #[test]
    fn a_restored_optimizer_continues_exactly() {
        for kind in [Kind::Gd, Kind::Nesterov] {
            let c = [1.0, -2.0];
            let mut whole = Optimizer::new(&train(kind, Schedule::InverseTime), 0.05, 2);
            let mut first = Optimizer::new(&train(kind, Schedule::InverseTime), 0.05, 2);
            for _ in 0..7 {
                let g = grad(whole.eval_point(), &c);
                whole.step(&g, 1);
                let g = grad(first.eval_point(), &c);
                first.step(&g, 1);
            }
            let mut resumed = Optimizer::new(&train(kind, Schedule::InverseTime), 0.05, 2);
            resumed.restore(first.iteration(), first.theta(), first.previous());
            assert_eq!(resumed, first, "{kind:?}");
            for _ in 0..5 {
                let g = grad(whole.eval_point(), &c);
                whole.step(&g, 1);
                let g = grad(resumed.eval_point(), &c);
                resumed.step(&g, 1);
            }
            assert_eq!(resumed.theta(), whole.theta(), "{kind:?}");
        }
    }

    #[test]
    fn heavy_ball_adds_beta_times_the_last_step() {
        let mut config = train(Kind::Gd, Schedule::Constant);
        config.momentum = 0.9;
        let mut opt = Optimizer::new(&config, 0.0, 1);
        opt.step(&[-2.0], 1); // theta_1 = 0 + 0.5 · 2 = 1 (no step before)
        assert_eq!(opt.theta(), &[1.0]);
        opt.step(&[-2.0], 1); // theta_2 = 1 + 1 + 0.9 · (1 − 0)
        assert_eq!(opt.theta(), &[2.9]);
        config.optimizer = Kind::Nesterov;
        let mut nesterov = Optimizer::new(&config, 0.0, 1);
        nesterov.step(&[-2.0], 1);
        assert_eq!(
            nesterov.eval_point(),
            &[1.0 + 0.9 * 1.0],
            "the constant beta"
        );
    }

    #[test]
    fn inverse_time_schedule_decays() {
        let mut opt = Optimizer::new(&train(Kind::Gd, Schedule::InverseTime), 0.0, 1);
        assert_eq!(opt.step_size(), 0.5);
        for _ in 0..10 {
            opt.step(&[0.0], 1);
        }
        assert_eq!(opt.step_size(), 0.25);
    }
}
