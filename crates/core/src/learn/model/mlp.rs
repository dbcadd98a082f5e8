//! `model.kind = "mlp"`: a multilayer perceptron classifier.
//!
//! The flattened input, `model.hidden` fully connected ReLU layers, and a
//! linear output layer of `model.classes` logits; with `model.dropout` > 0,
//! dropout on the last hidden layer. 004 §VIII's experiments (the authors'
//! public code) use 784-512-512-10, the default here on 28×28 images.
//! Limits: no batch normalisation, no other activation than ReLU.

use candle_core::Tensor;

use super::net::{Architecture, ParamSpec, Params, Pass};
use super::ops::linear;

#[derive(Debug)]
pub(crate) struct Mlp {
    widths: Vec<usize>,
    params: Vec<ParamSpec>,
}

impl Mlp {
    /// Layers of `inputs` → `hidden`… → `classes`.
    pub fn new(inputs: usize, hidden: &[usize], classes: usize) -> Self {
        let mut widths = vec![inputs];
        widths.extend_from_slice(hidden);
        widths.push(classes);
        let mut params = Vec::new();
        for (i, w) in widths.windows(2).enumerate() {
            params.push(ParamSpec::uniform(
                format!("fc{}.weight", i + 1),
                &[w[0], w[1]],
                w[0],
            ));
            params.push(ParamSpec::uniform(
                format!("fc{}.bias", i + 1),
                &[w[1]],
                w[0],
            ));
        }
        Self { widths, params }
    }
}

impl Architecture for Mlp {
    fn params(&self) -> &[ParamSpec] {
        &self.params
    }

    fn forward(
        &self,
        p: &mut Params<'_>,
        x: &Tensor,
        pass: &Pass<'_>,
    ) -> candle_core::Result<Tensor> {
        let mut h = x.flatten_from(1)?;
        let layers = self.widths.len() - 1;
        for layer in 0..layers {
            let (w, b) = (p.next(), p.next());
            h = linear(&h, w, b, layer > 0)?;
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

    fn describe(&self) -> String {
        let w: Vec<String> = self.widths.iter().map(usize::to_string).collect();
        format!("mlp {}", w.join("-"))
    }
}
