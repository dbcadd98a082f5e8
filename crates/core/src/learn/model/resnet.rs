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
use super::entry::{ModelArgs, ModelEntry, ModelParams};
use super::layers::{BatchNorm, Conv, ConvShape, Dense};
use super::net::{Architecture, Pass};
use super::params::{ParamTable, ParamView};
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

impl ModelParams for ResnetParams {
    fn check(&self) -> Result<(), InputError> {
        let b = &self.resnet_blocks;
        if b.is_empty() || b.len() > 6 || b.iter().any(|&n| n == 0 || n > 64) {
            return Err(InputError::value(
                "model.resnet_blocks",
                format!("{b:?}"),
                "must list 1 to 6 stages of 1..=64 blocks each",
            ));
        }
        if !(1..=1024).contains(&self.resnet_width) {
            return Err(InputError::value(
                "model.resnet_width",
                self.resnet_width,
                "must be in 1..=1024",
            ));
        }
        Ok(())
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

/// A convolution without bias (batch normalisation's shift replaces it),
/// then batch normalisation.
#[derive(Debug)]
struct ConvBn {
    conv: Conv,
    bn: BatchNorm,
}

impl ConvBn {
    /// Registers `{conv}.weight`, `{bn}.scale` and `{bn}.shift`, in that order.
    fn new(table: &mut ParamTable, (conv, bn): (&str, &str), shape: ConvShape) -> Self {
        Self {
            conv: Conv::new(table, conv, shape, false),
            bn: BatchNorm::new(table, bn, shape.output),
        }
    }

    fn forward(
        &self,
        p: &ParamView<'_>,
        x: &Tensor,
        input_grad: bool,
    ) -> candle_core::Result<Tensor> {
        self.bn.forward(p, &self.conv.forward(p, x, input_grad)?)
    }
}

/// A basic block: conv 3×3, BN, ReLU, conv 3×3, BN, plus the shortcut (a
/// 1×1 convolution and BN where the shape changes), then ReLU.
#[derive(Debug)]
struct Block {
    output: usize,
    stride: usize,
    conv1: ConvBn,
    conv2: ConvBn,
    shortcut: Option<ConvBn>,
}

impl Block {
    /// Block `name` from `input` to `output` channels at `stride`.
    fn new(table: &mut ParamTable, name: &str, input: usize, output: usize, stride: usize) -> Self {
        let shape = |input, kernel, padding, stride| ConvShape {
            input,
            output,
            kernel,
            padding,
            stride,
        };
        let mut layer = |conv: &str, bn: &str, shape| {
            ConvBn::new(
                table,
                (&format!("{name}.{conv}"), &format!("{name}.{bn}")),
                shape,
            )
        };
        let conv1 = layer("conv1", "bn1", shape(input, 3, 1, stride));
        let conv2 = layer("conv2", "bn2", shape(output, 3, 1, 1));
        let projects = stride != 1 || input != output;
        let shortcut =
            projects.then(|| layer("shortcut", "shortcut_bn", shape(input, 1, 0, stride)));
        Self {
            output,
            stride,
            conv1,
            conv2,
            shortcut,
        }
    }

    fn projects(&self) -> bool {
        self.shortcut.is_some()
    }

    fn forward(&self, p: &ParamView<'_>, h: &Tensor) -> candle_core::Result<Tensor> {
        let branch = self.conv1.forward(p, h, true)?.relu()?;
        let branch = self.conv2.forward(p, &branch, true)?;
        let shortcut = match &self.shortcut {
            Some(projection) => projection.forward(p, h, true)?,
            None => h.clone(),
        };
        (branch + shortcut)?.relu()
    }
}

/// The network: its layers, which own their parameters' names, and the
/// table of those parameters in θ's order (the stem, each block's conv1,
/// bn1, conv2, bn2 and shortcut, the linear layer).
#[derive(Debug)]
pub(crate) struct Resnet {
    stem: ConvBn,
    blocks: Vec<Block>,
    fc: Dense,
    stage_blocks: Vec<usize>,
    width: usize,
    classes: usize,
    params: ParamTable,
}

impl Resnet {
    pub fn new(channels: usize, stage_blocks: &[usize], width: usize, classes: usize) -> Self {
        let mut params = ParamTable::new();
        let stem_shape = ConvShape {
            input: channels,
            output: width,
            kernel: 3,
            padding: 1,
            stride: 1,
        };
        let stem = ConvBn::new(&mut params, ("stem.conv", "stem.bn"), stem_shape);
        let mut blocks = Vec::new();
        let mut input = width;
        for (s, &count) in stage_blocks.iter().enumerate() {
            let output = width << s;
            for b in 0..count {
                let stride = if s > 0 && b == 0 { 2 } else { 1 };
                let name = format!("stage{}.block{}", s + 1, b + 1);
                blocks.push(Block::new(&mut params, &name, input, output, stride));
                input = output;
            }
        }
        let fc = Dense::new(&mut params, "fc", input, classes);
        Self {
            stem,
            blocks,
            fc,
            stage_blocks: stage_blocks.to_vec(),
            width,
            classes,
            params,
        }
    }
}

impl Architecture for Resnet {
    fn params(&self) -> &ParamTable {
        &self.params
    }

    fn forward(
        &self,
        p: &ParamView<'_>,
        x: &Tensor,
        _pass: &Pass<'_>,
    ) -> candle_core::Result<Tensor> {
        let mut h = self.stem.forward(p, x, false)?.relu()?;
        for block in &self.blocks {
            h = block.forward(p, &h)?;
        }
        self.fc.forward(p, &h.mean((2, 3))?, true)
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
