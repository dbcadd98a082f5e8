//! `model.kind = "cnn"`: the LeNet-style network of 004 §VIII's experiments.
//!
//! As in the authors' public code (PyTorch's MNIST example): conv 1→10 5×5,
//! max-pool 2, ReLU; conv 10→20 5×5, max-pool 2, ReLU; flatten (320 on
//! 28×28 images); linear 320→50, ReLU, dropout (`model.dropout`); linear
//! 50→`model.classes`. Input channels and image size follow the data (the
//! image must be at least 16×16 so that both convolutions fit). Limits: the
//! PyTorch example's 2-D dropout after the second convolution is left out
//! (its masks would be one more random choice per step; the fully connected
//! dropout is kept).

use candle_core::Tensor;
use serde::{Deserialize, Serialize};

use super::Model;
use super::entry::{ModelArgs, ModelEntry, ModelParams};
use super::layers::{Conv, ConvShape, Dense};
use super::net::{Architecture, Pass, check_dropout};
use super::ops::max_pool2;
use super::params::{ParamTable, ParamView};
use crate::config::Precision;
use crate::error::InputError;

/// The `[model]` keys the CNN reads (besides `kind` and `l2`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CnnParams {
    /// The number of classes; labels are 0 .. classes − 1.
    pub classes: usize,
    /// The probability that dropout zeroes a unit of the hidden layer.
    pub dropout: f64,
    /// The precision of the forward and backward passes.
    pub precision: Precision,
    /// The most memory one process may need, in MiB (`Model::new` checks it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_memory_mib: Option<usize>,
}

impl Default for CnnParams {
    fn default() -> Self {
        Self {
            classes: 10,
            dropout: 0.0,
            precision: Precision::F64,
            max_memory_mib: None,
        }
    }
}

impl ModelParams for CnnParams {
    fn check(&self) -> Result<(), InputError> {
        check_dropout(self.dropout)
    }
}

/// The registry entry of `model.kind = "cnn"`.
pub static CNN: ModelEntry = ModelEntry::new::<CnnParams>(
    "cnn",
    "LeNet-style network of two convolutions and two linear layers (004 §VIII)",
    build,
)
.reading_images();

fn build(args: &ModelArgs<'_>) -> Result<Model, InputError> {
    let p: CnnParams = args.params()?;
    let shape = args.image()?;
    let arch = Cnn::new(shape, p.classes).ok_or_else(|| {
        InputError::value(
            "model.kind",
            "\"cnn\"",
            format!(
                "needs images of at least 16 x 16 pixels for its two 5 x 5 convolutions and 2 x 2 pools; the data's are {} x {}",
                shape[1], shape[2]
            ),
        )
    })?;
    Ok(Model::network(
        Box::new(arch),
        args.input,
        p.classes,
        p.dropout,
        p.precision,
    ))
}

const KERNEL: usize = 5;
const CONV1: usize = 10;
const CONV2: usize = 20;
const HIDDEN: usize = 50;

/// The network: its layers, which own their parameters' names, and the
/// table of those parameters in θ's order (conv1, conv2, fc1, fc2; each
/// weight before its bias).
#[derive(Debug)]
pub(crate) struct Cnn {
    flat: usize,
    classes: usize,
    conv1: Conv,
    conv2: Conv,
    fc1: Dense,
    fc2: Dense,
    params: ParamTable,
}

impl Cnn {
    /// The side of an image after a 5×5 valid convolution and a 2×2 max-pool.
    fn reduce(side: usize) -> Option<usize> {
        side.checked_sub(KERNEL - 1)
            .map(|s| s / 2)
            .filter(|&s| s > 0)
    }

    /// The spatial size after both convolution blocks, None when the image is too small.
    pub fn features_after_convolutions(height: usize, width: usize) -> Option<(usize, usize)> {
        let h = Self::reduce(Self::reduce(height)?)?;
        let w = Self::reduce(Self::reduce(width)?)?;
        Some((h, w))
    }

    /// The network for images of `input` = (channels, height, width); None
    /// when they are too small for its two convolutions.
    pub fn new(input: [usize; 3], classes: usize) -> Option<Self> {
        let [c, h, w] = input;
        let (h2, w2) = Self::features_after_convolutions(h, w)?;
        let flat = CONV2 * h2 * w2;
        let valid = |input, output| ConvShape {
            input,
            output,
            kernel: KERNEL,
            padding: 0,
            stride: 1,
        };
        let mut params = ParamTable::new();
        Some(Self {
            flat,
            classes,
            conv1: Conv::new(&mut params, "conv1", valid(c, CONV1), true),
            conv2: Conv::new(&mut params, "conv2", valid(CONV1, CONV2), true),
            fc1: Dense::new(&mut params, "fc1", flat, HIDDEN),
            fc2: Dense::new(&mut params, "fc2", HIDDEN, classes),
            params,
        })
    }
}

impl Architecture for Cnn {
    fn params(&self) -> &ParamTable {
        &self.params
    }

    fn forward(
        &self,
        p: &ParamView<'_>,
        x: &Tensor,
        pass: &Pass<'_>,
    ) -> candle_core::Result<Tensor> {
        let h = max_pool2(&self.conv1.forward(p, x, false)?)?.relu()?;
        let h = max_pool2(&self.conv2.forward(p, &h, true)?)?.relu()?;
        let mut h = self.fc1.forward(p, &h.flatten_from(1)?, true)?.relu()?;
        if let Some(mask) = pass.dropout {
            h = h.mul(mask)?;
        }
        self.fc2.forward(p, &h, true)
    }

    fn dropout_units(&self) -> Option<usize> {
        Some(HIDDEN)
    }

    fn activations(&self, input: [usize; 3]) -> u128 {
        let [c, h, w] = input.map(|v| v as u128);
        let k = KERNEL as u128 - 1;
        let (h1, w1) = ((h - k) / 2, (w - k) / 2);
        let (h2, w2) = ((h1 - k) / 2, (w1 - k) / 2);
        let (conv1, conv2) = (CONV1 as u128, CONV2 as u128);
        // The input; each convolution's output, its pool and ReLU; the
        // hidden layer before and after its ReLU; the logits.
        c * h * w
            + conv1 * (h - k) * (w - k)
            + 2 * conv1 * h1 * w1
            + conv2 * (h1 - k) * (w1 - k)
            + 2 * conv2 * h2 * w2
            + 2 * HIDDEN as u128
            + self.classes as u128
    }

    fn describe(&self) -> String {
        format!(
            "cnn conv{KERNEL}x{KERNEL}({CONV1})-pool2-conv{KERNEL}x{KERNEL}({CONV2})-pool2-fc({}->{HIDDEN})-fc",
            self.flat
        )
    }
}
