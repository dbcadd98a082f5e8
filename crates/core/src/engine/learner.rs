//! The learning side of a training run: the optimiser step on the decoded
//! gradient and the evaluation of the losses.

use super::EngineError;
use super::timing::Timing;
use crate::config::{Config, Loss};
use crate::learn::{DataPlan, Optimizer, Partition};

/// The optimiser, the test set and what the update needs to know of the data.
pub struct Learner {
    opt: Optimizer,
    loss: Loss,
    test: Partition,
    /// Training samples of each partition.
    samples: Vec<usize>,
    eval_every: u64,
    iterations: u64,
    train_loss: f64,
    test_loss: f64,
}

/// The losses one step evaluated (NaN: not evaluated this iteration).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepLosses {
    pub train: f64,
    pub test: f64,
}

impl Learner {
    /// The learner of `config` over the partitions of `data`, starting at θ = 0.
    pub fn new(config: &Config, data: &DataPlan, test: Partition) -> Self {
        Self {
            opt: Optimizer::new(&config.train, config.model.l2, data.features()),
            loss: config.model.loss,
            test,
            samples: (0..data.partitions()).map(|p| data.rows(p).len()).collect(),
            eval_every: config.train.eval_every as u64,
            iterations: config.train.iterations as u64,
            train_loss: f64::NAN,
            test_loss: f64::NAN,
        }
    }

    /// d: the number of parameters.
    pub fn dim(&self) -> usize {
        self.opt.theta().len()
    }

    /// Continue from a snapshot after `iteration` completed iterations.
    pub fn restore(
        &mut self,
        iteration: u64,
        theta: &[f64],
        previous: &[f64],
    ) -> Result<(), EngineError> {
        let dim = self.dim();
        if theta.len() != dim || previous.len() != dim {
            return Err(EngineError::Resume(format!(
                "the snapshot has {} parameters, the data {dim} features",
                theta.len()
            )));
        }
        self.opt.restore(iteration, theta, previous);
        Ok(())
    }

    /// The current iterate.
    pub fn theta(&self) -> &[f64] {
        self.opt.theta()
    }

    /// The iterate before it (Nesterov's momentum).
    pub fn previous(&self) -> &[f64] {
        self.opt.previous()
    }

    /// Where the workers evaluate the gradient this iteration.
    pub fn eval_point(&self) -> &[f64] {
        self.opt.eval_point()
    }

    /// The last evaluated training and test losses (the training loss over
    /// all the training data, see [`Learner::step`]).
    pub fn last_losses(&self) -> StepLosses {
        StepLosses {
            train: self.train_loss,
            test: self.test_loss,
        }
    }

    /// Whether iteration `iteration` evaluates the losses: every
    /// `train.eval_every` iterations from the first, and the last.
    pub fn evaluates(&self, iteration: u64) -> bool {
        iteration % self.eval_every == 0 || iteration + 1 == self.iterations
    }

    /// Partitions of the training data.
    pub fn partitions(&self) -> usize {
        self.samples.len()
    }

    /// Iteration `iteration`'s update with the decoded sum over the
    /// `recovered` partitions: `combined` holds the gradient sum (d entries)
    /// and the loss sum (one more). The update uses the mean over the
    /// recovered samples. The training loss is the objective over all the
    /// training data at the evaluation point: from `full_loss`, the loss sum
    /// over every partition when known, else from the decoded loss sum when
    /// `recovered` is every partition, else not evaluated (NaN); never the
    /// loss of the recovered part alone. Errors when anything is not finite
    /// (divergence).
    pub fn step(
        &mut self,
        iteration: u64,
        combined: &[f64],
        recovered: &[usize],
        full_loss: Option<f64>,
        timing: &mut Timing,
    ) -> Result<StepLosses, EngineError> {
        let dim = self.dim();
        if combined.iter().any(|v| !v.is_finite()) {
            return Err(EngineError::Diverged {
                iteration,
                what: "the decoded gradient is not finite (the model diverged)".into(),
            });
        }
        let samples: usize = recovered.iter().map(|&p| self.samples[p]).sum();
        let everything = recovered.len() == self.samples.len();
        let loss_sum = full_loss.or(everything.then_some(combined[dim]));
        let total: usize = self.samples.iter().sum();
        let mut losses = StepLosses {
            train: loss_sum.map_or(f64::NAN, |sum| self.opt.objective(sum, total)),
            test: f64::NAN,
        };
        if loss_sum.is_some() {
            self.train_loss = losses.train;
        }
        if self.evaluates(iteration) {
            losses.test = timing.time("evaluate", || {
                let sum = self.test.loss_sum(self.loss, self.opt.eval_point());
                self.opt.objective(sum, self.test.len())
            });
            self.test_loss = losses.test;
        }
        timing.time("update", || self.opt.step(&combined[..dim], samples));
        if self.opt.theta().iter().any(|v| !v.is_finite()) {
            return Err(EngineError::Diverged {
                iteration,
                what: "the model is not finite after the update (it diverged)".into(),
            });
        }
        Ok(losses)
    }
}
