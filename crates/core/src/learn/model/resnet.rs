//! `model.kind = "resnet"`: ResNet-18's structure (He et al. 2016), as 004
//! §VIII trains on CIFAR-10, with its depth and width configurable so that a
//! small one trains on a CPU.
//!
//! A 3×3 stem convolution of `model.resnet_width` channels (the CIFAR
//! variant: no 7×7 stride-2 stem and no max-pool), batch normalisation and
//! ReLU; then one stage per entry of `model.resnet_blocks` (ResNet-18:
//! 2, 2, 2, 2), stage `s` of width `resnet_width · 2^s` and stride 2 from
//! the second stage on; each basic block is conv 3×3, BN, ReLU, conv 3×3,
//! BN, plus a shortcut (a 1×1 convolution and BN where the shape changes),
//! then ReLU; global average pooling and a linear layer of
//! `model.classes` logits.
//!
//! Limits: batch normalisation always uses the statistics of the batch it
//! normalises — a partition's mini-batch in training, a chunk of 256 test
//! samples in evaluation — and keeps no running statistics, because the
//! model's state is the one vector θ the schemes code and the snapshots
//! store. Its scale and shift are parameters (in θ).

use candle_core::Tensor;
use serde::{Deserialize, Serialize};

use super::Model;
use super::entry::{ModelArgs, ModelEntry};
use super::net::{Architecture, ParamSpec, Params, Pass};
use super::ops::{conv2d, linear};
use crate::config::Precision;
use crate::error::InputError;

/// The `[model]` keys the ResNet reads (besides `kind` and `l2`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ResnetParams {
    /// The number of classes; labels are 0 .. classes − 1.
    pub classes: usize,
    /// The precision of the forward and backward passes.
    pub precision: Precision,
    /// Basic blocks per stage (ResNet-18: 2, 2, 2, 2).
    pub resnet_blocks: Vec<usize>,
    /// The channels of the first stage (ResNet-18: 64), doubled at each stage.
    pub resnet_width: usize,
    /// The most memory one process may need, in MiB (`Model::new` checks it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_memory_mib: Option<usize>,
}

impl Default for ResnetParams {
    fn default() -> Self {
        Self {
            classes: 10,
            precision: Precision::F64,
            resnet_blocks: vec![2, 2, 2, 2],
            resnet_width: 64,
            max_memory_mib: None,
        }
    }
}

/// The registry entry of `model.kind = "resnet"`.
pub static RESNET: ModelEntry = ModelEntry::new::<ResnetParams>(
    "resnet",
    "ResNet-18's structure (He et al. 2016) of configurable depth and width, as 004 §VIII trains on CIFAR-10",
    build,
)
.reading_images();

fn build(args: &ModelArgs<'_>) -> Result<Model, InputError> {
    let p: ResnetParams = args.params()?;
    let channels = args.image()?[0];
    let arch = Resnet::new(channels, &p.resnet_blocks, p.resnet_width, p.classes);
    // The ResNet has no dropout (`model.dropout` is not read).
    Ok(Model::network(
        Box::new(arch),
        args.input,
        p.classes,
        0.0,
        p.precision,
    ))
}

const BN_EPS: f64 = 1e-5;

#[derive(Debug, Clone, Copy)]
struct Block {
    input: usize,
    output: usize,
    stride: usize,
}

impl Block {
    fn projects(&self) -> bool {
        self.stride != 1 || self.input != self.output
    }
}

#[derive(Debug)]
pub(crate) struct Resnet {
    blocks: Vec<Block>,
    stage_blocks: Vec<usize>,
    width: usize,
    classes: usize,
    params: Vec<ParamSpec>,
}

fn conv_params(
    params: &mut Vec<ParamSpec>,
    name: &str,
    input: usize,
    output: usize,
    kernel: usize,
) {
    params.push(ParamSpec::uniform(
        format!("{name}.weight"),
        &[output, input, kernel, kernel],
        input * kernel * kernel,
    ));
}

fn bn_params(params: &mut Vec<ParamSpec>, name: &str, channels: usize) {
    params.push(ParamSpec::constant(
        format!("{name}.scale"),
        &[channels],
        1.0,
    ));
    params.push(ParamSpec::constant(
        format!("{name}.shift"),
        &[channels],
        0.0,
    ));
}

impl Resnet {
    pub fn new(channels: usize, stage_blocks: &[usize], width: usize, classes: usize) -> Self {
        let mut params = Vec::new();
        conv_params(&mut params, "stem.conv", channels, width, 3);
        bn_params(&mut params, "stem.bn", width);
        let mut blocks = Vec::new();
        let mut input = width;
        for (s, &count) in stage_blocks.iter().enumerate() {
            let output = width << s;
            for b in 0..count {
                let block = Block {
                    input,
                    output,
                    stride: if s > 0 && b == 0 { 2 } else { 1 },
                };
                let name = format!("stage{}.block{}", s + 1, b + 1);
                conv_params(&mut params, &format!("{name}.conv1"), input, output, 3);
                bn_params(&mut params, &format!("{name}.bn1"), output);
                conv_params(&mut params, &format!("{name}.conv2"), output, output, 3);
                bn_params(&mut params, &format!("{name}.bn2"), output);
                if block.projects() {
                    conv_params(&mut params, &format!("{name}.shortcut"), input, output, 1);
                    bn_params(&mut params, &format!("{name}.shortcut_bn"), output);
                }
                blocks.push(block);
                input = output;
            }
        }
        params.push(ParamSpec::uniform("fc.weight", &[input, classes], input));
        params.push(ParamSpec::uniform("fc.bias", &[classes], input));
        Self {
            blocks,
            stage_blocks: stage_blocks.to_vec(),
            width,
            classes,
            params,
        }
    }
}

/// Batch normalisation with the batch's statistics over (batch, height, width).
fn batch_norm(x: &Tensor, scale: &Tensor, shift: &Tensor) -> candle_core::Result<Tensor> {
    let c = x.dim(1)?;
    let mean = x.mean_keepdim((0, 2, 3))?;
    let centred = x.broadcast_sub(&mean)?;
    let var = centred.sqr()?.mean_keepdim((0, 2, 3))?;
    let normed = centred.broadcast_div(&(var + BN_EPS)?.sqrt()?)?;
    normed
        .broadcast_mul(&scale.reshape((1, c, 1, 1))?)?
        .broadcast_add(&shift.reshape((1, c, 1, 1))?)
}

/// A convolution without bias (batch normalisation's shift replaces it), then BN.
fn conv_bn(
    x: &Tensor,
    p: &mut Params<'_>,
    padding: usize,
    stride: usize,
    input_grad: bool,
) -> candle_core::Result<Tensor> {
    let w = p.next();
    let zero = Tensor::zeros(w.dim(0)?, w.dtype(), w.device())?;
    let h = conv2d(x, w, &zero, padding, stride, input_grad)?;
    batch_norm(&h, p.next(), p.next())
}

impl Architecture for Resnet {
    fn params(&self) -> &[ParamSpec] {
        &self.params
    }

    fn forward(
        &self,
        p: &mut Params<'_>,
        x: &Tensor,
        _pass: &Pass<'_>,
    ) -> candle_core::Result<Tensor> {
        let mut h = conv_bn(x, p, 1, 1, false)?.relu()?;
        for block in &self.blocks {
            let branch = conv_bn(&h, p, 1, block.stride, true)?.relu()?;
            let branch = conv_bn(&branch, p, 1, 1, true)?;
            let shortcut = if block.projects() {
                conv_bn(&h, p, 0, block.stride, true)?
            } else {
                h.clone()
            };
            h = (branch + shortcut)?.relu()?;
        }
        let pooled = h.mean((2, 3))?;
        linear(&pooled, p.next(), p.next(), true)
    }

    fn dropout_units(&self) -> Option<usize> {
        None
    }

    fn activations(&self, input: [usize; 3]) -> u128 {
        let [c, mut h, mut w] = input.map(|v| v as u128);
        let width = self.width as u128;
        // The input; the stem's convolution, normalisation and ReLU.
        let mut values = c * h * w + 3 * width * h * w;
        for block in &self.blocks {
            // A 3x3 convolution of padding 1 (and the 1x1 shortcut) at stride s.
            let s = block.stride as u128;
            (h, w) = ((h - 1) / s + 1, (w - 1) / s + 1);
            // conv1, bn1, ReLU, conv2, bn2, the sum and its ReLU; the
            // shortcut's convolution and normalisation where it projects.
            let tensors = if block.projects() { 9 } else { 7 };
            values += tensors * block.output as u128 * h * w;
        }
        // The pooled features and the logits.
        let last = self.blocks.last().map_or(width, |b| b.output as u128);
        values + last + self.classes as u128
    }

    fn describe(&self) -> String {
        let b: Vec<String> = self.stage_blocks.iter().map(usize::to_string).collect();
        format!("resnet blocks {} width {}", b.join("-"), self.width)
    }
}
