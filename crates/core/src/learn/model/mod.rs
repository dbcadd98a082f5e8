//! Models behind one interface, picked by name (`model.kind`) from a
//! registry ([`MODELS`]): what a worker computes for a partition, and what
//! the master evaluates.
//!
//! Every model's parameters are one flat vector θ of f64, the vector the
//! engine, the schemes, the decode, the snapshots and resume carry; so every
//! scheme trains every model unchanged. A model adds the gradient of its
//! loss *summed* over a set of samples into a slice and returns the loss
//! sum; the engine divides by the recovered samples.
//!
//! - `linear` ([`Linear`]): least squares or logistic regression
//!   (`model.loss`) with the fused dense and sparse kernels of
//!   [`crate::learn::kernel`]; starts at θ = 0.
//! - `mlp`, `cnn`, `resnet`: classifiers trained with softmax cross-entropy,
//!   their gradients by reverse-mode autodiff (candle, on the CPU); θ starts
//!   from a seeded PyTorch-style initialisation.
//!
//! Each kind is one file: its typed `[model]` parameters, its constructor
//! and its `static` [`ModelEntry`]; [`MODELS`] (`models.rs`) lists the
//! entries, one line each. docs/adding-a-model.md walks through adding one.

mod cnn;
mod entry;
mod layers;
mod linear;
pub mod memory;
mod mlp;
mod models;
mod net;
mod ops;
mod params;
mod resnet;

pub use cnn::{CNN, CnnParams};
pub use entry::{Constructor, EVERY_MODEL_KEYS, ModelArgs, ModelEntry, ModelParams};
pub use linear::{LINEAR, Linear, LinearParams};
pub use mlp::{MLP, MlpParams};
pub use models::{MODELS, ModelRegistry};
pub use net::{BatchSums, Confusion, Net};
pub use resnet::{RESNET, ResnetParams};

/// docs/adding-a-model.md, whose example `cargo test --doc` compiles and runs.
#[cfg(doctest)]
#[doc = include_str!("../../../../../docs/adding-a-model.md")]
pub struct AddingAModel;

use crate::config::{Config, Loss, Precision};
use crate::error::InputError;
use crate::learn::Partition;
use crate::learn::batch::{StepKey, batch_rows};
use crate::spec::Batch;

/// A model that cannot compute on what it was given.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// The samples do not fit the model (shape, labels).
    #[error("{0}")]
    Input(String),
    /// The autodiff framework failed.
    #[error("network computation failed: {0}")]
    Compute(String),
}

impl From<candle_core::Error> for ModelError {
    fn from(e: candle_core::Error) -> Self {
        ModelError::Compute(e.to_string())
    }
}

/// What a model reads: `features` per sample, as an image of (channels,
/// height, width) when the data is one; and the samples of the largest
/// partition, the batch of a full-batch gradient (0 when not known), for
/// the network's memory check ([`memory`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Input {
    pub features: usize,
    pub image: Option<[usize; 3]>,
    pub partition_rows: usize,
}

/// The loss sum of a set of samples and, for classifiers, how many of them
/// are classified correctly.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Evaluation {
    pub loss_sum: f64,
    pub correct: Option<usize>,
}

/// One parameter tensor of θ: its name, its shape and where it starts in θ
/// (row-major: its `shape.iter().product()` values follow `offset`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TensorLayout {
    pub name: String,
    pub shape: Vec<usize>,
    pub offset: usize,
}

/// A model: linear or a network.
#[derive(Debug)]
pub enum Model {
    Linear(Linear),
    Net(Box<Net>),
}

impl Model {
    /// The model of `config` over samples shaped as `input`; a network
    /// whose least memory in one process is more than `model.max_memory_mib`
    /// is refused ([`memory`]).
    pub fn new(config: &Config, input: Input) -> Result<Self, InputError> {
        let model = Self::sized(config, input)?;
        if let Model::Net(net) = &model {
            check_memory(config, net, input)?;
        }
        Ok(model)
    }

    /// The model of `config` over samples shaped as `input`, without the
    /// memory check of [`Self::new`]: for what needs only its structure and
    /// size (the message sizes `simulate` models), never to train it.
    /// Nothing in proportion to its parameters is allocated.
    pub fn sized(config: &Config, input: Input) -> Result<Self, InputError> {
        MODELS.build(&config.model, input)
    }

    /// The network of architecture `arch` over samples shaped as `input`
    /// (flat samples as one row of `features`), with `classes` logits,
    /// dropout probability `dropout` on its dropout layer, in `precision`.
    pub(crate) fn network(
        arch: Box<dyn net::Architecture>,
        input: Input,
        classes: usize,
        dropout: f64,
        precision: Precision,
    ) -> Self {
        let shape = input.image.unwrap_or([1, 1, input.features]);
        Model::Net(Box::new(Net::new(arch, shape, classes, dropout, precision)))
    }

    /// Whether `part`'s labels fit the model: a network's are classes in
    /// 0..`model.classes`; a linear model takes any label. What `train`'s
    /// master checks on the test partition and each worker on the
    /// partitions it loads, and what `check` checks on the data it reads.
    pub fn check_labels(&self, part: &Partition) -> Result<(), ModelError> {
        match self {
            Model::Linear { .. } => Ok(()),
            Model::Net(net) => net.check_labels(part),
        }
    }

    /// d: the number of parameters.
    pub fn dim(&self) -> usize {
        match self {
            Model::Linear(linear) => linear.dim(),
            Model::Net(net) => net.dim(),
        }
    }

    /// The loss of the linear model (its fused kernels' fast path), None for networks.
    pub fn linear_loss(&self) -> Option<Loss> {
        match self {
            Model::Linear(linear) => Some(linear.loss()),
            Model::Net(_) => None,
        }
    }

    /// Whether the model classifies (and so has an accuracy).
    pub fn classifies(&self) -> bool {
        matches!(self, Model::Net(_))
    }

    /// θ's tensors in θ's order (a linear model: one, `weights`, of d
    /// values), together exactly the d parameters.
    pub fn layout(&self) -> Vec<TensorLayout> {
        match self {
            Model::Linear(linear) => linear.layout(),
            Model::Net(net) => net.layout(),
        }
    }

    /// One line: what the model is (`gradcode check`).
    pub fn describe(&self) -> String {
        match self {
            Model::Linear(linear) => linear.describe(),
            Model::Net(net) => net.describe(),
        }
    }

    /// θ at the start: 0 for the linear model, a seeded initialisation for networks.
    pub fn initial_theta(&self, seed: u64) -> Vec<f64> {
        match self {
            Model::Linear(linear) => linear.initial_theta(),
            Model::Net(net) => net.initial_theta(seed),
        }
    }

    /// Adds the gradient of the loss summed over the samples `rows` of
    /// `part` at `theta` into `grad` and returns the loss sum. `key` names
    /// the step for the random choices inside it (dropout).
    pub fn accumulate(
        &self,
        part: &Partition,
        rows: &[usize],
        theta: &[f64],
        grad: &mut [f64],
        key: StepKey,
    ) -> Result<f64, ModelError> {
        match self {
            Model::Linear(linear) => Ok(linear.accumulate(part, rows, theta, grad)),
            Model::Net(net) => Ok(net
                .accumulate(part, rows, theta, grad, key, false)?
                .loss_sum),
        }
    }

    /// Partition `part`'s contribution at `key`'s iteration, into `out`
    /// (dim + 1 entries, overwritten): the gradient sum over its mini-batch
    /// of `batch` ([`batch_rows`]; every sample with [`Batch::Full`]) and, in the last entry, the loss sum. Returns a classifier's
    /// count of the batch's samples it predicts correctly in that pass
    /// (`None` for a linear model). What a worker computes for a partition,
    /// and what every in-process reference computes.
    pub fn partition_gradient(
        &self,
        part: &Partition,
        batch: Batch,
        key: StepKey,
        theta: &[f64],
        out: &mut [f64],
    ) -> Result<Option<usize>, ModelError> {
        let dim = self.dim();
        assert_eq!(
            out.len(),
            dim + 1,
            "a partition's vector has dim + 1 entries"
        );
        let rows = batch_rows(key, part.len(), batch);
        let (grad, loss) = out.split_at_mut(dim);
        let correct;
        (loss[0], correct) = match self {
            // Written over `out` by the network's own pass when it has one
            // (no pass zeroing 8·d bytes first).
            Model::Net(net) => {
                let sums = net.accumulate(part, &rows, theta, grad, key, true)?;
                (sums.loss_sum, Some(sums.correct))
            }
            Model::Linear { .. } => {
                grad.fill(0.0);
                (self.accumulate(part, &rows, theta, grad, key)?, None)
            }
        };
        Ok(correct)
    }

    /// The loss sum over every sample of `part` at `theta` (and the
    /// correctly classified samples for a classifier), with no dropout.
    pub fn evaluate(&self, part: &Partition, theta: &[f64]) -> Result<Evaluation, ModelError> {
        match self {
            Model::Linear(linear) => Ok(Evaluation {
                loss_sum: linear.loss_sum(part, theta),
                correct: None,
            }),
            Model::Net(net) => {
                let (loss_sum, correct) = net.evaluate(part, theta)?;
                Ok(Evaluation {
                    loss_sum,
                    correct: Some(correct),
                })
            }
        }
    }

    /// As [`Model::evaluate`], with the confusion matrix of a classifier's
    /// predictions (`None` for a linear model).
    pub fn evaluate_confusion(
        &self,
        part: &Partition,
        theta: &[f64],
    ) -> Result<(Evaluation, Option<Confusion>), ModelError> {
        match self {
            Model::Linear { .. } => Ok((self.evaluate(part, theta)?, None)),
            Model::Net(net) => {
                let (loss_sum, confusion) = net.confusion(part, theta)?;
                let evaluation = Evaluation {
                    loss_sum,
                    correct: Some(confusion.correct()),
                };
                Ok((evaluation, Some(confusion)))
            }
        }
    }
}

/// Refuse a network whose least memory in one process ([`memory`]) is
/// more than `model.max_memory_mib` (unset: the machine's memory, when it
/// can be read), before anything of its size is allocated. The batch is
/// `train.batch_size`, or the largest partition's samples (full batch).
fn check_memory(config: &Config, net: &Net, input: Input) -> Result<(), InputError> {
    let (limit, whose) = match config.model.max_memory_mib {
        Some(limit) => (limit, ""),
        None => match memory::machine_memory_mib() {
            Some(limit) => (limit, " (unset: this machine's memory)"),
            None => return Ok(()),
        },
    };
    let batch = Batch::new(config.train.batch_size)?.memory_rows(input.partition_rows);
    match net.memory(batch).exceeds(limit) {
        None => Ok(()),
        Some(rule) => Err(InputError::new(
            "model.max_memory_mib",
            format!(
                "the network {} {rule}, more than model.max_memory_mib = {limit}{whose}",
                net.describe()
            ),
        )),
    }
}
