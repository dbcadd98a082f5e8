//! What every neural network shares: its parameters as slices of the one
//! vector θ, their initialisation, one mini-batch's softmax cross-entropy
//! and its gradient by reverse-mode autodiff (candle), and the evaluation.
//!
//! An architecture ([`Architecture`]) only lists its parameters (its layers
//! register them by name in a [`ParamTable`], which fixes θ's layout) and
//! computes the logits, its layers reading their parameters by name from a
//! [`ParamView`]; this file turns θ into candle variables, runs the forward and
//! the backward pass on the CPU, and adds the gradient back into a slice of
//! f64. The loss is summed (not averaged) over the batch, as the linear
//! models' kernels sum theirs: the engine divides by the recovered samples.

use candle_core::{D, DType, Device, Storage, Tensor, Var};
use rand::RngExt;

use super::ModelError;
use super::params::{Init, ParamTable, ParamView};
use crate::config::Precision;
use crate::error::InputError;
use crate::learn::batch::StepKey;
use crate::learn::{Features, Partition};
use crate::rng::{Stream, substream};

/// `model.dropout` lies in [0, 1): the probability that dropout zeroes a
/// unit (the networks that read it: mlp, cnn).
pub(super) fn check_dropout(dropout: f64) -> Result<(), InputError> {
    if dropout.is_finite() && (0.0..1.0).contains(&dropout) {
        return Ok(());
    }
    Err(InputError::value(
        "model.dropout",
        dropout,
        "must be in [0, 1)",
    ))
}

/// Whether a forward pass trains (dropout active) or evaluates.
pub(crate) struct Pass<'a> {
    /// Dropout's scaled keep mask for the layer that has one (training only).
    pub dropout: Option<&'a Tensor>,
}

/// A network's structure: its parameters and its forward pass.
pub(crate) trait Architecture: Send + Sync + std::fmt::Debug {
    /// The parameter tensors its layers registered, in θ's order.
    fn params(&self) -> &ParamTable;
    /// The logits (batch × classes) of images `x` (batch × channels ×
    /// height × width), each layer reading its parameters from `p` by name.
    fn forward(
        &self,
        p: &ParamView<'_>,
        x: &Tensor,
        pass: &Pass<'_>,
    ) -> candle_core::Result<Tensor>;
    /// The units of the layer dropout applies to (None: no dropout layer).
    fn dropout_units(&self) -> Option<usize>;
    /// The values one sample of `input` = (channels, height, width) puts
    /// into the forward pass's layer outputs (input, each linear or
    /// convolution layer, normalisation, activation, pool and sum, and the
    /// logits), which the backward pass keeps: a floor of the activations'
    /// memory ([`super::memory`]).
    fn activations(&self, input: [usize; 3]) -> u128;
    /// One line: the layers and their sizes (`gradcode check`).
    fn describe(&self) -> String;
    /// Whether [`Self::accumulate_f64`] computes the gradient (in f64)
    /// without candle's autodiff graph.
    fn has_direct_pass(&self) -> bool {
        false
    }
    /// Adds the gradient of the summed cross-entropy of `batch` at `theta`
    /// into `grad` (`overwrite`: writes it over `grad`'s values, as adding
    /// it to zeros would, bit for bit) and returns the loss sum, by a
    /// forward and backward pass written out for this architecture that
    /// reads θ and writes the gradient in place; None when the architecture
    /// has none (candle's graph computes it then).
    fn accumulate_f64(
        &self,
        _batch: &DirectBatch<'_>,
        _theta: &[f64],
        _grad: &mut [f64],
        _overwrite: bool,
    ) -> Option<Result<BatchSums, ModelError>> {
        None
    }
}

/// What one batch's training pass sums besides the gradient: the loss and
/// the samples whose largest logit is their label's (under the pass's
/// dropout: the batch accuracy a training loop reports).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BatchSums {
    pub loss_sum: f64,
    pub correct: usize,
}

/// The rows of `logits` (rows × classes, row-major) whose largest value (the
/// first of equal ones, as candle's argmax) is at the row's label.
pub(crate) fn count_correct(logits: &[f64], classes: usize, labels: &[u32]) -> usize {
    logits
        .chunks(classes)
        .zip(labels)
        .filter(|(row, label)| {
            let mut best = 0;
            for (c, v) in row.iter().enumerate() {
                if *v > row[best] {
                    best = c;
                }
            }
            best == **label as usize
        })
        .count()
}

/// One mini-batch, for an architecture's own pass ([`Architecture::accumulate_f64`]).
pub(crate) struct DirectBatch<'a> {
    /// The samples, rows × features, row-major.
    pub x: &'a [f64],
    pub rows: usize,
    pub labels: &'a [u32],
    pub classes: usize,
    /// Dropout's scaled keep mask (rows × the dropout layer's units).
    pub dropout: Option<&'a [f64]>,
}

/// The summed softmax cross-entropy of `logits` (rows × classes, row-major)
/// against `labels` and its gradient with respect to the logits, by the
/// same candle operations (and so the same roundings) as the graph of
/// [`Net::accumulate`].
pub(crate) fn cross_entropy_head(
    logits: Vec<f64>,
    rows: usize,
    classes: usize,
    labels: &[u32],
) -> candle_core::Result<(f64, Vec<f64>)> {
    let dev = Device::Cpu;
    let logits = Var::from_vec(logits, (rows, classes), &dev)?;
    let labels = Tensor::from_slice(labels, rows, &dev)?;
    let loss = cross_entropy_sum(logits.as_tensor(), &labels)?;
    let grads = loss.backward()?;
    let dlogits = match grads.get(logits.as_tensor()) {
        Some(g) => g.flatten_all()?.to_vec1::<f64>()?,
        None => vec![0.0; rows * classes],
    };
    Ok((loss.to_scalar::<f64>()?, dlogits))
}

/// The test set is evaluated in chunks of this many samples (batch
/// normalisation then normalises each chunk with its own statistics).
pub(crate) const EVAL_CHUNK: usize = 256;

/// A network over images of `input` = (channels, height, width).
#[derive(Debug)]
pub struct Net {
    arch: Box<dyn Architecture>,
    input: [usize; 3],
    classes: usize,
    dropout: f64,
    dtype: DType,
}

impl Net {
    pub(crate) fn new(
        arch: Box<dyn Architecture>,
        input: [usize; 3],
        classes: usize,
        dropout: f64,
        precision: Precision,
    ) -> Self {
        let dtype = match precision {
            Precision::F64 => DType::F64,
            Precision::F32 => DType::F32,
        };
        Self {
            arch,
            input,
            classes,
            dropout,
            dtype,
        }
    }

    /// d: the number of parameters.
    pub fn dim(&self) -> usize {
        self.arch.params().dim()
    }

    /// Each parameter tensor's name, shape and offset in θ, in θ's order.
    pub fn layout(&self) -> Vec<super::TensorLayout> {
        let table = self.arch.params();
        table
            .specs()
            .iter()
            .enumerate()
            .map(|(i, p)| super::TensorLayout {
                name: p.name.clone(),
                shape: p.shape.clone(),
                offset: table.range_at(i).start,
            })
            .collect()
    }

    /// The least memory of one process that trains this network on
    /// batches of `batch` samples ([`super::memory`]).
    pub fn memory(&self, batch: usize) -> super::memory::NetMemory {
        super::memory::NetMemory {
            parameters: self.dim() as u128,
            precision_bytes: self.dtype.size_in_bytes() as u128,
            graph: !(self.dtype == DType::F64 && self.arch.has_direct_pass()),
            batch: batch as u128,
            activations_per_sample: self.arch.activations(self.input),
        }
    }

    pub fn describe(&self) -> String {
        format!(
            "{} ({} parameters, {}, input {}x{}x{}, {} classes{})",
            self.arch.describe(),
            self.dim(),
            if self.dtype == DType::F64 {
                "f64"
            } else {
                "f32"
            },
            self.input[0],
            self.input[1],
            self.input[2],
            self.classes,
            if self.dropout > 0.0 && self.arch.dropout_units().is_some() {
                format!(", dropout {}", self.dropout)
            } else {
                String::new()
            }
        )
    }

    /// θ at the start: each parameter from its `Init`, from the seed's
    /// model-initialisation stream (parameter `i` from sub-stream `i`).
    pub fn initial_theta(&self, seed: u64) -> Vec<f64> {
        let mut theta = Vec::with_capacity(self.dim());
        for (i, p) in self.arch.params().specs().iter().enumerate() {
            match p.init {
                Init::Uniform { fan_in } => {
                    let bound = 1.0 / (fan_in.max(1) as f64).sqrt();
                    let mut rng = substream(seed, Stream::ModelInit, i as u64);
                    theta.extend((0..p.len()).map(|_| rng.random_range(-bound..bound)));
                }
                Init::Constant(v) => theta.extend(std::iter::repeat_n(v, p.len())),
            }
        }
        theta
    }

    /// θ as one tensor per parameter, in the network's precision; as
    /// variables (whose gradients the backward pass computes) when `vars`.
    /// In f64 each parameter is copied once, straight into its variable.
    fn tensors(&self, theta: &[f64], vars: bool) -> candle_core::Result<(Vec<Tensor>, Vec<Var>)> {
        let dev = Device::Cpu;
        let table = self.arch.params();
        let mut tensors = Vec::with_capacity(table.specs().len());
        let mut variables = Vec::with_capacity(table.specs().len());
        for (i, p) in table.specs().iter().enumerate() {
            let values = &theta[table.range_at(i)];
            let shape = p.shape.as_slice();
            match (vars, self.dtype) {
                (true, DType::F64) => variables.push(Var::from_slice(values, shape, &dev)?),
                (true, _) => {
                    let t = Tensor::from_slice(values, shape, &dev)?.to_dtype(self.dtype)?;
                    variables.push(Var::from_tensor(&t)?);
                }
                (false, _) => {
                    tensors.push(Tensor::from_slice(values, shape, &dev)?.to_dtype(self.dtype)?)
                }
            }
        }
        if vars {
            tensors = variables.iter().map(|v| v.as_tensor().clone()).collect();
        }
        Ok((tensors, variables))
    }

    /// The pixels (rows × features, row-major, f64) of the samples `rows`
    /// of `part`, and their labels.
    fn gather(&self, part: &Partition, rows: &[usize]) -> Result<(Vec<f64>, Vec<u32>), ModelError> {
        let Features::Dense(x) = &part.x else {
            return Err(ModelError::Input(
                "a network needs dense samples (data.format = \"dense\")".into(),
            ));
        };
        let width: usize = self.input.iter().product();
        if x.ncols() != width {
            return Err(ModelError::Input(format!(
                "samples of {} features do not fit the network's input of {} x {} x {}",
                x.ncols(),
                self.input[0],
                self.input[1],
                self.input[2]
            )));
        }
        let data = x.as_slice().expect("partition matrices are contiguous");
        let mut pixels = Vec::with_capacity(rows.len() * width);
        let mut labels = Vec::with_capacity(rows.len());
        for &r in rows {
            pixels.extend_from_slice(&data[r * width..(r + 1) * width]);
            labels.push(self.class_of(part.y[r])?);
        }
        Ok((pixels, labels))
    }

    /// The class a label names: an integer in 0..classes.
    fn class_of(&self, y: f64) -> Result<u32, ModelError> {
        if !(y >= 0.0 && y < self.classes as f64 && y.fract() == 0.0) {
            return Err(ModelError::Input(format!(
                "label {y} is not a class in 0..{}",
                self.classes
            )));
        }
        Ok(y as u32)
    }

    /// Every label of `part` names a class (see [`Model::check_labels`](super::Model::check_labels)).
    pub fn check_labels(&self, part: &Partition) -> Result<(), ModelError> {
        for (i, &y) in part.y.iter().enumerate() {
            self.class_of(y)
                .map_err(|e| ModelError::Input(format!("sample {}: {e}", i + 1)))?;
        }
        Ok(())
    }

    /// The images of `rows` of `x` as a batch tensor, and their labels.
    fn batch(&self, part: &Partition, rows: &[usize]) -> Result<(Tensor, Tensor), ModelError> {
        let (pixels, labels) = self.gather(part, rows)?;
        let [c, h, w] = self.input;
        let dev = Device::Cpu;
        let images = Tensor::from_vec(pixels, (rows.len(), c, h, w), &dev)?.to_dtype(self.dtype)?;
        let labels = Tensor::from_vec(labels, rows.len(), &dev)?;
        Ok((images, labels))
    }

    /// The dropout mask of `key`'s batch of `batch` samples (batch × the
    /// dropout layer's units, row-major): each unit kept with probability
    /// 1 − p and then scaled by 1 / (1 − p). None without a dropout layer.
    fn dropout_values(&self, key: StepKey, batch: usize) -> Option<Vec<f64>> {
        let units = self.arch.dropout_units()?;
        if self.dropout <= 0.0 {
            return None;
        }
        let keep = 1.0 - self.dropout;
        let mut rng = key.rng(Stream::Dropout);
        Some(
            (0..batch * units)
                .map(|_| {
                    if rng.random::<f64>() < keep {
                        1.0 / keep
                    } else {
                        0.0
                    }
                })
                .collect(),
        )
    }

    /// [`Self::dropout_values`] as a tensor in the network's precision.
    fn dropout_mask(&self, key: StepKey, batch: usize) -> candle_core::Result<Option<Tensor>> {
        let Some(mask) = self.dropout_values(key, batch) else {
            return Ok(None);
        };
        let units = mask.len() / batch;
        Tensor::from_vec(mask, (batch, units), &Device::Cpu)?
            .to_dtype(self.dtype)
            .map(Some)
    }

    /// Adds the gradient of the summed cross-entropy of the samples `rows`
    /// of `part` at `theta` into `grad` (`overwrite`: replaces `grad`'s
    /// values by it, bit for bit what zeroing `grad` and adding gives,
    /// without a zeroing pass when the architecture has its own pass);
    /// returns the loss sum. Dropout masks come from `key`.
    pub fn accumulate(
        &self,
        part: &Partition,
        rows: &[usize],
        theta: &[f64],
        grad: &mut [f64],
        key: StepKey,
        overwrite: bool,
    ) -> Result<BatchSums, ModelError> {
        if self.dtype == DType::F64 && self.arch.has_direct_pass() && !rows.is_empty() {
            let (pixels, labels) = self.gather(part, rows)?;
            let mask = self.dropout_values(key, rows.len());
            let batch = DirectBatch {
                x: &pixels,
                rows: rows.len(),
                labels: &labels,
                classes: self.classes,
                dropout: mask.as_deref(),
            };
            if let Some(loss) = self.arch.accumulate_f64(&batch, theta, grad, overwrite) {
                return loss;
            }
        }
        if overwrite {
            grad.fill(0.0);
        }
        if rows.is_empty() {
            return Ok(BatchSums::default());
        }
        self.accumulate_by_graph(part, rows, theta, grad, key)
    }

    /// [`Self::accumulate`] by candle's autodiff graph of the network's
    /// forward pass, whatever pass of its own the architecture has (the
    /// MLP's in f64): `cargo bench --bench nn -- 'gradient/mlp f64'`
    /// times both.
    pub fn accumulate_by_graph(
        &self,
        part: &Partition,
        rows: &[usize],
        theta: &[f64],
        grad: &mut [f64],
        key: StepKey,
    ) -> Result<BatchSums, ModelError> {
        if rows.is_empty() {
            return Ok(BatchSums::default());
        }
        let (x, labels) = self.batch(part, rows)?;
        let (as_tensors, vars) = self.tensors(theta, true)?;
        let mask = self.dropout_mask(key, rows.len())?;
        let table = self.arch.params();
        let logits = self.arch.forward(
            &ParamView::new(table, &as_tensors),
            &x,
            &Pass {
                dropout: mask.as_ref(),
            },
        )?;
        let loss = cross_entropy_sum(&logits, &labels)?;
        let grads = loss.backward()?;
        for (i, v) in vars.iter().enumerate() {
            if let Some(g) = grads.get(v.as_tensor()) {
                add_into(&mut grad[table.range_at(i)], g)?;
            }
        }
        let predicted = logits.argmax(D::Minus1)?.to_vec1::<u32>()?;
        let truth = labels.to_vec1::<u32>()?;
        Ok(BatchSums {
            loss_sum: loss.to_dtype(DType::F64)?.to_scalar::<f64>()?,
            correct: predicted.iter().zip(&truth).filter(|(a, b)| a == b).count(),
        })
    }

    /// The summed cross-entropy and the correctly classified samples of
    /// every sample of `part` at `theta` (no dropout), in chunks of
    /// `EVAL_CHUNK`.
    pub fn evaluate(&self, part: &Partition, theta: &[f64]) -> Result<(f64, usize), ModelError> {
        let (loss_sum, confusion) = self.confusion(part, theta)?;
        Ok((loss_sum, confusion.correct()))
    }

    /// The loss sum over every sample of `part` at `theta` (no dropout) and
    /// the confusion matrix of its predictions (the class of the largest logit).
    pub fn confusion(
        &self,
        part: &Partition,
        theta: &[f64],
    ) -> Result<(f64, Confusion), ModelError> {
        let (tensors, _) = self.tensors(theta, false)?;
        let mut loss_sum = 0.0;
        let mut confusion = Confusion::new(self.classes);
        let rows: Vec<usize> = (0..part.len()).collect();
        for chunk in rows.chunks(EVAL_CHUNK) {
            let (x, labels) = self.batch(part, chunk)?;
            let logits = self.arch.forward(
                &ParamView::new(self.arch.params(), &tensors),
                &x,
                &Pass { dropout: None },
            )?;
            loss_sum += cross_entropy_sum(&logits, &labels)?
                .to_dtype(DType::F64)?
                .to_scalar::<f64>()?;
            let predicted = logits.argmax(D::Minus1)?.to_vec1::<u32>()?;
            let truth = labels.to_vec1::<u32>()?;
            for (&t, &p) in truth.iter().zip(&predicted) {
                confusion.add(t as usize, p as usize);
            }
        }
        Ok((loss_sum, confusion))
    }
}

/// Counts of (true class, predicted class) over a set of samples.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confusion {
    /// `counts[t][p]`: samples of class `t` predicted as `p`.
    pub counts: Vec<Vec<u64>>,
}

impl Confusion {
    /// No samples over `classes` classes.
    pub fn new(classes: usize) -> Self {
        Self {
            counts: vec![vec![0; classes]; classes],
        }
    }

    fn add(&mut self, truth: usize, predicted: usize) {
        self.counts[truth][predicted] += 1;
    }

    /// Add the counts of `other` (over as many classes).
    pub fn merge(&mut self, other: &Confusion) {
        for (row, o) in self.counts.iter_mut().zip(&other.counts) {
            for (c, v) in row.iter_mut().zip(o) {
                *c += v;
            }
        }
    }

    /// Samples counted.
    pub fn samples(&self) -> u64 {
        self.counts.iter().flatten().sum()
    }

    /// Samples predicted as their class.
    pub fn correct(&self) -> usize {
        (0..self.counts.len())
            .map(|c| self.counts[c][c] as usize)
            .sum()
    }

    /// Per class: the share of its samples predicted as it (NaN for a class
    /// with no samples).
    pub fn class_accuracy(&self) -> Vec<f64> {
        self.counts
            .iter()
            .enumerate()
            .map(|(c, row)| row[c] as f64 / row.iter().sum::<u64>() as f64)
            .collect()
    }
}

/// Adds the gradient `g` into `out`, read in place when it is a contiguous
/// f64 tensor (the usual case), else through a copy.
fn add_into(out: &mut [f64], g: &Tensor) -> candle_core::Result<()> {
    if g.dtype() == DType::F64 {
        let (storage, layout) = g.storage_and_layout();
        if let (Storage::Cpu(cpu), Some((start, end))) = (&*storage, layout.contiguous_offsets()) {
            let values = &cpu.as_slice::<f64>()?[start..end];
            for (o, v) in out.iter_mut().zip(values) {
                *o += v;
            }
            return Ok(());
        }
    }
    let values = g.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()?;
    for (o, v) in out.iter_mut().zip(values) {
        *o += v;
    }
    Ok(())
}

/// Σ over the batch of −log softmax(logits)[label].
fn cross_entropy_sum(logits: &Tensor, labels: &Tensor) -> candle_core::Result<Tensor> {
    let log_p = candle_nn::ops::log_softmax(logits, D::Minus1)?;
    log_p.gather(&labels.unsqueeze(1)?, 1)?.sum_all()?.neg()
}
