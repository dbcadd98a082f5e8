//! Models behind one interface, picked by name (`model.kind`): what a
//! worker computes for a partition, and what the master evaluates.
//!
//! Every model's parameters are one flat vector θ of f64, the vector the
//! engine, the schemes, the decode, the snapshots and resume carry; so every
//! scheme trains every model unchanged. A model adds the gradient of its
//! loss *summed* over a set of samples into a slice and returns the loss
//! sum; the engine divides by the recovered samples.
//!
//! - `linear`: least squares or logistic regression (`model.loss`) with the
//!   fused dense and sparse kernels of [`crate::learn::kernel`]; starts at θ = 0.
//! - `mlp`, `cnn`, `resnet`: classifiers trained with softmax cross-entropy,
//!   their gradients by reverse-mode autodiff (candle, on the CPU); θ starts
//!   from a seeded PyTorch-style initialisation.

mod cnn;
pub mod memory;
mod mlp;
mod net;
mod ops;
mod resnet;

use std::ops::Range;

pub use net::{BatchSums, Confusion, Net};

use crate::config::{Config, Loss, ModelKind};
use crate::error::InputError;
use crate::learn::Partition;
use crate::learn::batch::{StepKey, batch_rows};

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
    Linear { loss: Loss, features: usize },
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
        let m = &config.model;
        let image = || {
            input.image.ok_or_else(|| {
                InputError::value(
                    "model.kind",
                    format!("\"{}\"", m.kind.name()),
                    "needs images (data.kind = \"idx\" or \"cifar10\"); this data has flat samples",
                )
            })
        };
        let arch: Box<dyn net::Architecture> = match m.kind {
            ModelKind::Linear => {
                return Ok(Model::Linear {
                    loss: m.loss,
                    features: input.features,
                });
            }
            ModelKind::Mlp => Box::new(mlp::Mlp::new(input.features, &m.hidden, m.classes)),
            ModelKind::Cnn => {
                let shape = image()?;
                Box::new(cnn::Cnn::new(shape, m.classes).ok_or_else(|| {
                    InputError::value(
                        "model.kind",
                        "\"cnn\"",
                        format!(
                            "needs images of at least 16 x 16 pixels for its two 5 x 5 convolutions and 2 x 2 pools; the data's are {} x {}",
                            shape[1], shape[2]
                        ),
                    )
                })?)
            }
            ModelKind::Resnet => Box::new(resnet::Resnet::new(
                image()?[0],
                &m.resnet_blocks,
                m.resnet_width,
                m.classes,
            )),
        };
        let shape = input.image.unwrap_or([1, 1, input.features]);
        Ok(Model::Net(Box::new(Net::new(
            arch,
            shape,
            m.classes,
            m.dropout,
            m.precision,
        ))))
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
            Model::Linear { features, .. } => *features,
            Model::Net(net) => net.dim(),
        }
    }

    /// The loss of the linear model (its fused kernels' fast path), None for networks.
    pub fn linear_loss(&self) -> Option<Loss> {
        match self {
            Model::Linear { loss, .. } => Some(*loss),
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
            Model::Linear { features, .. } => vec![TensorLayout {
                name: "weights".to_string(),
                shape: vec![*features],
                offset: 0,
            }],
            Model::Net(net) => net.layout(),
        }
    }

    /// One line: what the model is (`gradcode check`).
    pub fn describe(&self) -> String {
        match self {
            Model::Linear { loss, features } => format!(
                "linear, {} loss, {features} parameters",
                match loss {
                    Loss::LeastSquares => "least-squares",
                    Loss::Logistic => "logistic",
                }
            ),
            Model::Net(net) => net.describe(),
        }
    }

    /// θ at the start: 0 for the linear model, a seeded initialisation for networks.
    pub fn initial_theta(&self, seed: u64) -> Vec<f64> {
        match self {
            Model::Linear { features, .. } => vec![0.0; *features],
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
            Model::Linear { loss, .. } => Ok(match contiguous(rows) {
                Some(range) => part.accumulate(*loss, range, theta, grad),
                None => rows
                    .iter()
                    .map(|&r| part.accumulate(*loss, r..r + 1, theta, grad))
                    .sum(),
            }),
            Model::Net(net) => Ok(net
                .accumulate(part, rows, theta, grad, key, false)?
                .loss_sum),
        }
    }

    /// Partition `part`'s contribution at `key`'s iteration, into `out`
    /// (dim + 1 entries, overwritten): the gradient sum over its mini-batch
    /// of `batch` samples ([`batch_rows`]; every sample when `batch` is
    /// None) and, in the last entry, the loss sum. Returns a classifier's
    /// count of the batch's samples it predicts correctly in that pass
    /// (`None` for a linear model). What a worker computes for a partition,
    /// and what every in-process reference computes.
    pub fn partition_gradient(
        &self,
        part: &Partition,
        batch: Option<usize>,
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
            Model::Linear { loss, .. } => Ok(Evaluation {
                loss_sum: part.loss_sum(*loss, theta),
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
    let batch = config.train.batch_size.unwrap_or(input.partition_rows);
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

/// `rows` as a range when it is one.
fn contiguous(rows: &[usize]) -> Option<Range<usize>> {
    let (&first, &last) = (rows.first()?, rows.last()?);
    (last - first + 1 == rows.len() && rows.windows(2).all(|w| w[1] == w[0] + 1))
        .then_some(first..last + 1)
}
