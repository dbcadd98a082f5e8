//! `model.kind = "linear"`: least squares or logistic regression
//! (`model.loss`), θ the d weights, starting at 0. The gradient and loss
//! sums are the fused dense and sparse kernels of [`crate::learn::kernel`],
//! reached through the partition that stores the samples
//! ([`Partition::accumulate`], [`Partition::loss_sum`]).

use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::entry::{ModelArgs, ModelEntry, ModelParams};
use super::{Model, TensorLayout};
use crate::config::Loss;
use crate::error::InputError;
use crate::learn::Partition;

/// The `[model]` keys the linear model reads (besides `kind` and `l2`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LinearParams {
    /// The loss: least squares or logistic.
    pub loss: Loss,
}

impl Default for LinearParams {
    fn default() -> Self {
        Self {
            loss: Loss::LeastSquares,
        }
    }
}

impl ModelParams for LinearParams {}

/// The registry entry of `model.kind = "linear"`.
pub static LINEAR: ModelEntry = ModelEntry::new::<LinearParams>(
    "linear",
    "least squares or logistic regression (model.loss), fused kernels; the model of 000-003's experiments",
    build,
);

fn build(args: &ModelArgs<'_>) -> Result<Model, InputError> {
    let p: LinearParams = args.params()?;
    Ok(Model::Linear(Linear::new(p.loss, args.input.features)))
}

/// A linear model of `features` weights with a loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Linear {
    loss: Loss,
    features: usize,
}

impl Linear {
    pub fn new(loss: Loss, features: usize) -> Self {
        Self { loss, features }
    }

    /// Its loss.
    pub fn loss(&self) -> Loss {
        self.loss
    }

    /// d: the number of weights.
    pub fn dim(&self) -> usize {
        self.features
    }

    /// θ's one tensor, `weights`, of d values.
    pub fn layout(&self) -> Vec<TensorLayout> {
        vec![TensorLayout {
            name: "weights".to_string(),
            shape: vec![self.features],
            offset: 0,
        }]
    }

    /// One line: `linear, least-squares loss, 5 parameters`.
    pub fn describe(&self) -> String {
        let loss = match self.loss {
            Loss::LeastSquares => "least-squares",
            Loss::Logistic => "logistic",
        };
        format!("linear, {loss} loss, {} parameters", self.features)
    }

    /// θ at the start: 0.
    pub fn initial_theta(&self) -> Vec<f64> {
        vec![0.0; self.features]
    }

    /// Adds the gradient of the loss summed over the samples `rows` of
    /// `part` at `theta` into `grad` and returns the loss sum.
    pub fn accumulate(
        &self,
        part: &Partition,
        rows: &[usize],
        theta: &[f64],
        grad: &mut [f64],
    ) -> f64 {
        match contiguous(rows) {
            Some(range) => part.accumulate(self.loss, range, theta, grad),
            None => rows
                .iter()
                .map(|&r| part.accumulate(self.loss, r..r + 1, theta, grad))
                .sum(),
        }
    }

    /// The loss sum over every sample of `part` at `theta`.
    pub fn loss_sum(&self, part: &Partition, theta: &[f64]) -> f64 {
        part.loss_sum(self.loss, theta)
    }
}

/// `rows` as a range when it is one.
fn contiguous(rows: &[usize]) -> Option<Range<usize>> {
    let (&first, &last) = (rows.first()?, rows.last()?);
    (last - first + 1 == rows.len() && rows.windows(2).all(|w| w[1] == w[0] + 1))
        .then_some(first..last + 1)
}
