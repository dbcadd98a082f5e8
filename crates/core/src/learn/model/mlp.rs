//! `model.kind = "mlp"`: a multilayer perceptron classifier.
//!
//! The flattened input, `model.hidden` fully connected ReLU layers, and a
//! linear output layer of `model.classes` logits; with `model.dropout` > 0,
//! dropout on the last hidden layer. 004 §VIII's experiments (the authors'
//! public code) use 784-512-512-10, the default here on 28×28 images.
//! Limits: no batch normalisation, no other activation than ReLU.
//!
//! In f64 the gradient comes from a forward and backward pass written out
//! here ([`Mlp::accumulate_f64`]) that reads the weights in θ where they are
//! and adds the weight gradients straight into the output: the same matrix
//! products, in the same order, and the same element-wise operations as
//! candle's graph of [`Mlp::forward`], whose loss head it keeps, without
//! copying θ into candle variables and the gradients out of candle's store
//! (about 5 MB each way per batch for 784-512-512-10). The two agree bit for
//! bit (tested below); f32 goes through candle's graph. Measured with
//! `cargo bench --bench nn -- 'gradient/mlp f64'`, which times this pass
//! (`mlp f64`) and the graph ([`super::Net::accumulate_by_graph`], `mlp
//! f64 graph`) on 784-512-512-10, batch 32, one thread, on a loaded 2-core
//! machine: 3.5 to 4.5 ms per batch by this pass, 6.3 to 6.5 ms by the
//! graph, so the pass stays (issue 40 kept it only if the graph came
//! within 10%).

use candle_core::Tensor;
use serde::{Deserialize, Serialize};

use super::entry::{ModelArgs, ModelEntry, ModelParams};
use super::layers::Dense;
use super::net::{
    Architecture, BatchSums, DirectBatch, Pass, check_dropout, count_correct, cross_entropy_head,
};
use super::ops::gemm;
use super::params::{ParamTable, ParamView};
use super::{Input, Model, ModelError};
use crate::config::Precision;
use crate::error::InputError;

/// The `[model]` keys the MLP reads (besides `kind` and `l2`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MlpParams {
    /// The number of classes; labels are 0 .. classes − 1.
    pub classes: usize,
    /// The widths of the hidden layers.
    pub hidden: Vec<usize>,
    /// The probability that dropout zeroes a unit of the last hidden layer.
    pub dropout: f64,
    /// The precision of the forward and backward passes.
    pub precision: Precision,
    /// The most memory one process may need, in MiB (`Model::new` checks it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_memory_mib: Option<usize>,
}

impl Default for MlpParams {
    fn default() -> Self {
        Self {
            classes: 10,
            hidden: vec![512, 512],
            dropout: 0.0,
            precision: Precision::F64,
            max_memory_mib: None,
        }
    }
}

/// The widest hidden layer (`model.hidden`).
const MAX_WIDTH: usize = 1 << 16;

impl ModelParams for MlpParams {
    fn check(&self) -> Result<(), InputError> {
        if self.hidden.iter().any(|&h| h == 0 || h > MAX_WIDTH) {
            return Err(InputError::value(
                "model.hidden",
                format!("{:?}", self.hidden),
                format!("every width must be in 1..={MAX_WIDTH}"),
            ));
        }
        check_dropout(self.dropout)
    }
}

/// The registry entry of `model.kind = "mlp"`.
pub static MLP: ModelEntry = ModelEntry::new::<MlpParams>(
    "mlp",
    "multilayer perceptron of model.hidden ReLU layers (004 §VIII's 784-512-512-10)",
    build,
);

fn build(args: &ModelArgs<'_>) -> Result<Model, InputError> {
    let p: MlpParams = args.params()?;
    Ok(Model::mlp(
        args.input,
        &p.hidden,
        p.classes,
        p.dropout,
        p.precision,
    ))
}

impl Model {
    /// An MLP classifier over samples shaped as `input` (flattened): the
    /// `hidden` ReLU layers, `classes` logits, dropout on the last hidden
    /// layer with probability `dropout`, computed in `precision`.
    pub fn mlp(
        input: Input,
        hidden: &[usize],
        classes: usize,
        dropout: f64,
        precision: Precision,
    ) -> Model {
        let arch = Mlp::new(input.features, hidden, classes);
        Model::network(Box::new(arch), input, classes, dropout, precision)
    }
}

/// The network: its layers `fc1`, `fc2`, …, which own their parameters'
/// names, and the table of those parameters in θ's order (each layer's
/// weight, then its bias).
#[derive(Debug)]
pub(crate) struct Mlp {
    widths: Vec<usize>,
    layers: Vec<Dense>,
    params: ParamTable,
}

impl Mlp {
    /// Layers of `inputs` → `hidden`… → `classes`.
    pub fn new(inputs: usize, hidden: &[usize], classes: usize) -> Self {
        let mut widths = vec![inputs];
        widths.extend_from_slice(hidden);
        widths.push(classes);
        let mut params = ParamTable::new();
        let layers = widths
            .windows(2)
            .enumerate()
            .map(|(i, w)| Dense::new(&mut params, &format!("fc{}", i + 1), w[0], w[1]))
            .collect();
        Self {
            widths,
            layers,
            params,
        }
    }
}

impl Architecture for Mlp {
    fn params(&self) -> &ParamTable {
        &self.params
    }

    fn forward(
        &self,
        p: &ParamView<'_>,
        x: &Tensor,
        pass: &Pass<'_>,
    ) -> candle_core::Result<Tensor> {
        let mut h = x.flatten_from(1)?;
        let layers = self.layers.len();
        for (layer, dense) in self.layers.iter().enumerate() {
            h = dense.forward(p, &h, layer > 0)?;
            if layer + 1 < layers {
                h = h.relu()?;
                if layer + 2 == layers {
                    if let Some(mask) = pass.dropout {
                        h = h.mul(mask)?;
                    }
                }
            }
        }
        Ok(h)
    }

    fn dropout_units(&self) -> Option<usize> {
        (self.widths.len() > 2).then(|| self.widths[self.widths.len() - 2])
    }

    fn activations(&self, _input: [usize; 3]) -> u128 {
        // The input, each hidden layer before and after its ReLU, the logits.
        let hidden: u128 = self.widths[1..self.widths.len() - 1]
            .iter()
            .map(|&w| w as u128)
            .sum();
        self.widths[0] as u128 + 2 * hidden + *self.widths.last().unwrap() as u128
    }

    fn describe(&self) -> String {
        let w: Vec<String> = self.widths.iter().map(usize::to_string).collect();
        format!("mlp {}", w.join("-"))
    }

    fn has_direct_pass(&self) -> bool {
        true
    }

    fn accumulate_f64(
        &self,
        batch: &DirectBatch<'_>,
        theta: &[f64],
        grad: &mut [f64],
        overwrite: bool,
    ) -> Option<Result<BatchSums, ModelError>> {
        Some(self.pass(batch, theta, grad, overwrite))
    }
}

impl Mlp {
    /// The forward and backward pass of [`Architecture::accumulate_f64`],
    /// each layer's weight and bias read from θ by their names. Every
    /// operation mirrors one of candle's in [`Self::forward`]'s graph and
    /// its backward pass: `0.0 + v` where candle adds a gradient into its
    /// store's zeros, `g * (z >= 0)` for ReLU's gradient.
    fn pass(
        &self,
        batch: &DirectBatch<'_>,
        theta: &[f64],
        grad: &mut [f64],
        overwrite: bool,
    ) -> Result<BatchSums, ModelError> {
        let layers = self.layers.len();
        if batch.x.len() != batch.rows * self.widths[0] || batch.classes != self.widths[layers] {
            return Err(ModelError::Input(format!(
                "a batch of {} values for {} samples and {} classes does not fit mlp {:?}",
                batch.x.len(),
                batch.rows,
                batch.classes,
                self.widths
            )));
        }
        let (acts, logits) = self.forward_f64(batch, theta)?;
        let correct = count_correct(&logits, batch.classes, batch.labels);
        let (loss, g) = cross_entropy_head(logits, batch.rows, batch.classes, batch.labels)?;
        acts.backward(self, batch, theta, g, (grad, overwrite))?;
        Ok(BatchSums {
            loss_sum: loss,
            correct,
        })
    }

    /// The hidden layers' values of [`Self::pass`]'s forward pass, and the logits.
    fn forward_f64(
        &self,
        batch: &DirectBatch<'_>,
        theta: &[f64],
    ) -> candle_core::Result<(HiddenValues, Vec<f64>)> {
        let rows = batch.rows;
        let layers = self.layers.len();
        let mut acts = HiddenValues::default();
        for (l, layer) in self.layers.iter().enumerate() {
            let (w, b) = layer.ranges(&self.params)?;
            let input = if l == 0 { batch.x } else { &acts.inputs[l - 1] };
            let mut y = Vec::with_capacity(rows * layer.outputs);
            for _ in 0..rows {
                y.extend_from_slice(&theta[b.clone()]);
            }
            let (n_in, n_out) = (layer.inputs, layer.outputs);
            gemm(
                &mut y, rows, n_out, n_in, input, false, &theta[w], false, true,
            );
            if l + 1 == layers {
                return Ok((acts, y));
            }
            let mut h: Vec<f64> = y.iter().map(|v| v.max(0f64)).collect();
            if l + 2 == layers {
                if let Some(mask) = batch.dropout {
                    h.iter_mut().zip(mask).for_each(|(v, m)| *v *= m);
                }
            }
            acts.pre.push(y);
            acts.inputs.push(h);
        }
        unreachable!("an mlp has at least its output layer")
    }
}

/// The hidden layers' values in [`Mlp::pass`]: `inputs[l]`, what layer
/// `l + 1` reads (after ReLU and dropout); `pre[l]`, hidden layer `l`'s
/// output before its ReLU.
#[derive(Default)]
struct HiddenValues {
    inputs: Vec<Vec<f64>>,
    pre: Vec<Vec<f64>>,
}

impl HiddenValues {
    /// The backward pass from the logits' gradient `g`: each layer's weight
    /// and bias gradients written (`overwrite`) or added into `grad`.
    fn backward(
        &self,
        mlp: &Mlp,
        batch: &DirectBatch<'_>,
        theta: &[f64],
        mut g: Vec<f64>,
        (grad, overwrite): (&mut [f64], bool),
    ) -> candle_core::Result<()> {
        let rows = batch.rows;
        let layers = mlp.layers.len();
        for (l, layer) in mlp.layers.iter().enumerate().rev() {
            let (n_in, n_out) = (layer.inputs, layer.outputs);
            let (w, b) = layer.ranges(&mlp.params)?;
            let input = if l == 0 { batch.x } else { &self.inputs[l - 1] };
            // dW (+)= inputᵀ (in × rows) · g (rows × out), straight into θ's gradient.
            let dw = &mut grad[w.clone()];
            gemm(dw, n_in, n_out, rows, input, true, &g, false, !overwrite);
            let mut db = vec![0.0; n_out];
            for row in g.chunks(n_out) {
                for (d, &v) in db.iter_mut().zip(row) {
                    *d += v;
                }
            }
            for (o, d) in grad[b].iter_mut().zip(db) {
                *o = if overwrite { 0.0 } else { *o } + (0.0 + d);
            }
            if l == 0 {
                break;
            }
            // The input's gradient: g (rows × out) · Wᵀ (out × in), then
            // back through dropout (on the last hidden layer) and ReLU.
            let mut dx = vec![0.0; rows * n_in];
            gemm(
                &mut dx, rows, n_in, n_out, &g, false, &theta[w], true, false,
            );
            let mask = batch.dropout.filter(|_| l + 1 == layers);
            for (i, (d, z)) in dx.iter_mut().zip(&self.pre[l - 1]).enumerate() {
                let mut v = 0.0 + *d;
                if let Some(mask) = mask {
                    v = 0.0 + v * mask[i];
                }
                *d = 0.0 + v * if *z >= 0.0 { 1.0 } else { 0.0 };
            }
            g = dx;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use ndarray::Array2;

    use super::*;
    use crate::config::Precision;
    use crate::learn::batch::StepKey;
    use crate::learn::model::Net;
    use crate::learn::{Features, Partition};

    /// Samples with a band of zero pixels (as an image's border), so that
    /// signed zeros go through the products too.
    fn samples(n: usize, features: usize, classes: usize) -> Partition {
        let x = Array2::from_shape_fn((n, features), |(i, j)| {
            if j % 7 == 0 {
                0.0
            } else {
                ((i * 31 + j * 17) % 101) as f64 / 50.0 - 1.0
            }
        });
        Partition {
            id: 0,
            x: Features::Dense(x),
            y: (0..n).map(|i| ((i * 3) % classes) as f64).collect(),
        }
    }

    #[test]
    fn the_written_out_pass_equals_candles_graph_bit_for_bit() {
        let cases: [(usize, &[usize], usize, f64); 5] = [
            (784, &[512, 512], 32, 0.5),
            (50, &[37, 23], 9, 0.5),
            (50, &[37, 23], 9, 0.0),
            (30, &[16], 5, 0.3),
            (30, &[], 5, 0.5),
        ];
        for (features, hidden, rows, dropout) in cases {
            let classes = 10;
            let net = Net::new(
                Box::new(Mlp::new(features, hidden, classes)),
                [1, 1, features],
                classes,
                dropout,
                Precision::F64,
            );
            let part = samples(rows + 3, features, classes);
            let picked: Vec<usize> = (0..rows).map(|i| (i * 5 + 2) % (rows + 3)).collect();
            let theta = net.initial_theta(7);
            let key = StepKey {
                seed: 3,
                partition: 1,
                iteration: 4,
            };
            // From zeros (what a worker computes) and added onto a gradient.
            let start: Vec<f64> = (0..net.dim()).map(|i| (i % 13) as f64 * 0.25).collect();
            for from in [vec![0.0; net.dim()], start] {
                let (mut ours, mut graph) = (from.clone(), from);
                let a = net
                    .accumulate(&part, &picked, &theta, &mut ours, key, false)
                    .unwrap();
                let b = net
                    .accumulate_by_graph(&part, &picked, &theta, &mut graph, key)
                    .unwrap();
                assert_eq!(
                    a.loss_sum.to_bits(),
                    b.loss_sum.to_bits(),
                    "loss of {hidden:?}"
                );
                assert_eq!(a.correct, b.correct, "correct of {hidden:?}");
                let differ = ours
                    .iter()
                    .zip(&graph)
                    .position(|(x, y)| x.to_bits() != y.to_bits());
                assert_eq!(differ, None, "gradient of mlp {features}-{hidden:?}");
                assert!(ours.iter().any(|&v| v != 0.0));
            }
            // Written over whatever the buffer held (a worker's recycled
            // slot): the graph's gradient from zeros, bit for bit.
            let mut over = vec![f64::NAN; net.dim()];
            let mut graph = vec![0.0; net.dim()];
            let a = net
                .accumulate(&part, &picked, &theta, &mut over, key, true)
                .unwrap();
            let b = net
                .accumulate_by_graph(&part, &picked, &theta, &mut graph, key)
                .unwrap();
            assert_eq!(
                a.loss_sum.to_bits(),
                b.loss_sum.to_bits(),
                "loss of {hidden:?}"
            );
            assert_eq!(a.correct, b.correct, "correct of {hidden:?}");
            let differ = over
                .iter()
                .zip(&graph)
                .position(|(x, y)| x.to_bits() != y.to_bits());
            assert_eq!(
                differ, None,
                "overwritten gradient of mlp {features}-{hidden:?}"
            );
        }
    }
}
