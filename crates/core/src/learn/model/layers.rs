//! The layers the networks are built of: each registers its parameter
//! tensors by name in the network's [`ParamTable`] when it is built, in
//! PyTorch's naming (`fc1.weight`, `fc1.bias`), and reads them back by those
//! names, shape-checked, from a [`ParamView`] in the forward pass.

use std::ops::Range;

use candle_core::Tensor;

use super::ops::{conv2d, linear};
use super::params::{ParamTable, ParamView};

/// A fully connected layer `x · weight + bias`: weight inputs × outputs,
/// bias outputs, both uniform on ±1/√inputs at the start (PyTorch's default).
#[derive(Debug, Clone)]
pub(crate) struct Dense {
    weight: String,
    bias: String,
    pub inputs: usize,
    pub outputs: usize,
}

impl Dense {
    /// Registers `{name}.weight` and `{name}.bias`, in that order.
    pub fn new(table: &mut ParamTable, name: &str, inputs: usize, outputs: usize) -> Self {
        Self {
            weight: table.uniform(format!("{name}.weight"), &[inputs, outputs], inputs),
            bias: table.uniform(format!("{name}.bias"), &[outputs], inputs),
            inputs,
            outputs,
        }
    }

    /// The layer's output (batch × outputs) for `x` (batch × inputs);
    /// `input_grad`: whether the backward pass computes `x`'s gradient.
    pub fn forward(
        &self,
        p: &ParamView<'_>,
        x: &Tensor,
        input_grad: bool,
    ) -> candle_core::Result<Tensor> {
        let w = p.get(&self.weight, &[self.inputs, self.outputs])?;
        linear(x, w, p.get(&self.bias, &[self.outputs])?, input_grad)
    }

    /// Where the weight (inputs × outputs, row-major) and the bias lie in θ.
    pub fn ranges(&self, table: &ParamTable) -> candle_core::Result<(Range<usize>, Range<usize>)> {
        Ok((
            table.range(&self.weight, &[self.inputs, self.outputs])?,
            table.range(&self.bias, &[self.outputs])?,
        ))
    }
}

/// A convolution's channels, square kernel, zero padding and stride.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConvShape {
    pub input: usize,
    pub output: usize,
    pub kernel: usize,
    pub padding: usize,
    pub stride: usize,
}

/// A 2-D convolution: weight output × input × kernel × kernel and, unless
/// batch normalisation follows (whose shift replaces it), a bias of
/// `output`; both uniform on ±1/√(input · kernel²) at the start.
#[derive(Debug, Clone)]
pub(crate) struct Conv {
    weight: String,
    bias: Option<String>,
    shape: ConvShape,
}

impl Conv {
    /// Registers `{name}.weight`, then `{name}.bias` when `bias`.
    pub fn new(table: &mut ParamTable, name: &str, shape: ConvShape, bias: bool) -> Self {
        let fan_in = shape.input * shape.kernel * shape.kernel;
        let weight = table.uniform(format!("{name}.weight"), &Self::weight_shape(shape), fan_in);
        let bias = bias.then(|| table.uniform(format!("{name}.bias"), &[shape.output], fan_in));
        Self {
            weight,
            bias,
            shape,
        }
    }

    fn weight_shape(s: ConvShape) -> [usize; 4] {
        [s.output, s.input, s.kernel, s.kernel]
    }

    /// The convolution of `x` (batch × input × height × width);
    /// `input_grad` as for [`Dense::forward`].
    pub fn forward(
        &self,
        p: &ParamView<'_>,
        x: &Tensor,
        input_grad: bool,
    ) -> candle_core::Result<Tensor> {
        let w = p.get(&self.weight, &Self::weight_shape(self.shape))?;
        let zero;
        let bias = match &self.bias {
            Some(name) => p.get(name, &[self.shape.output])?,
            None => {
                zero = Tensor::zeros(self.shape.output, w.dtype(), w.device())?;
                &zero
            }
        };
        let ConvShape {
            padding, stride, ..
        } = self.shape;
        conv2d(x, w, bias, padding, stride, input_grad)
    }
}

/// Added to the variance before its square root in batch normalisation.
const BN_EPS: f64 = 1e-5;

/// Batch normalisation with the statistics of the batch it normalises,
/// over (batch, height, width), then a scale (1 at the start) and a shift
/// (0 at the start) per channel.
#[derive(Debug, Clone)]
pub(crate) struct BatchNorm {
    scale: String,
    shift: String,
    channels: usize,
}

impl BatchNorm {
    /// Registers `{name}.scale` and `{name}.shift`, in that order.
    pub fn new(table: &mut ParamTable, name: &str, channels: usize) -> Self {
        Self {
            scale: table.constant(format!("{name}.scale"), &[channels], 1.0),
            shift: table.constant(format!("{name}.shift"), &[channels], 0.0),
            channels,
        }
    }

    /// `x` (batch × channels × height × width) normalised.
    pub fn forward(&self, p: &ParamView<'_>, x: &Tensor) -> candle_core::Result<Tensor> {
        let c = self.channels;
        let scale = p.get(&self.scale, &[c])?;
        let shift = p.get(&self.shift, &[c])?;
        let mean = x.mean_keepdim((0, 2, 3))?;
        let centred = x.broadcast_sub(&mean)?;
        let var = centred.sqr()?.mean_keepdim((0, 2, 3))?;
        let normed = centred.broadcast_div(&(var + BN_EPS)?.sqrt()?)?;
        normed
            .broadcast_mul(&scale.reshape((1, c, 1, 1))?)?
            .broadcast_add(&shift.reshape((1, c, 1, 1))?)
    }
}
