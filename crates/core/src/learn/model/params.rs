//! A network's parameters by name: the table of θ's tensors a network's
//! layers register when it is built ([`ParamTable`]), and the views its
//! passes read them through, by name and shape-checked ([`ParamView`] over
//! candle tensors, [`ParamTable::range`] for where one lies in θ itself).
//!
//! θ's layout is the order of registration: each tensor's values follow the
//! previous tensor's (row-major), and tensor `i` starts from sub-stream `i`
//! of the model-initialisation stream. The trace stores θ and the layout
//! ([`super::TensorLayout`]), so a layer registers its tensors in the order
//! they had when they were read positionally.

use std::collections::HashMap;
use std::ops::Range;

use candle_core::Tensor;

/// How a parameter starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Init {
    /// Uniform on ±1/√fan_in (PyTorch's default for linear and convolution
    /// layers, weights and biases).
    Uniform { fan_in: usize },
    /// A constant (batch normalisation: scale 1, shift 0).
    Constant(f64),
}

/// One parameter tensor of a network.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ParamSpec {
    pub name: String,
    pub shape: Vec<usize>,
    pub init: Init,
}

impl ParamSpec {
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }
}

/// A network's parameter tensors in θ's order, found by name.
#[derive(Debug, Clone, Default)]
pub(crate) struct ParamTable {
    specs: Vec<ParamSpec>,
    /// Where tensor `i` starts in θ; the last entry is the dimension.
    offsets: Vec<usize>,
    index: HashMap<String, usize>,
}

impl ParamTable {
    /// No parameters yet.
    pub fn new() -> Self {
        Self {
            offsets: vec![0],
            ..Self::default()
        }
    }

    /// Appends tensor `name` of `shape`, uniform on ±1/√`fan_in` at the
    /// start; returns its name, what a layer reads it by.
    pub fn uniform(&mut self, name: String, shape: &[usize], fan_in: usize) -> String {
        self.push(name, shape, Init::Uniform { fan_in })
    }

    /// Appends tensor `name` of `shape`, `value` everywhere at the start;
    /// returns its name.
    pub fn constant(&mut self, name: String, shape: &[usize], value: f64) -> String {
        self.push(name, shape, Init::Constant(value))
    }

    /// Appends a tensor. A name registered twice is a bug of the
    /// architecture that registers it (names are not input): it panics.
    fn push(&mut self, name: String, shape: &[usize], init: Init) -> String {
        let previous = self.index.insert(name.clone(), self.specs.len());
        assert!(previous.is_none(), "parameter {name} registered twice");
        let spec = ParamSpec {
            name: name.clone(),
            shape: shape.to_vec(),
            init,
        };
        self.offsets.push(self.dim() + spec.len());
        self.specs.push(spec);
        name
    }

    /// The tensors in θ's order.
    pub fn specs(&self) -> &[ParamSpec] {
        &self.specs
    }

    /// d: the values of every tensor.
    pub fn dim(&self) -> usize {
        *self.offsets.last().expect("offsets start with 0")
    }

    /// Where tensor `i` (in θ's order) lies in θ.
    pub fn range_at(&self, i: usize) -> Range<usize> {
        self.offsets[i]..self.offsets[i + 1]
    }

    /// The position of tensor `name` in θ's order; an error when no tensor
    /// has that name or it is not of `shape`.
    pub fn position(&self, name: &str, shape: &[usize]) -> candle_core::Result<usize> {
        let Some(&i) = self.index.get(name) else {
            candle_core::bail!("the network has no parameter {name}")
        };
        let registered = &self.specs[i].shape;
        if registered != shape {
            candle_core::bail!("parameter {name} is {registered:?}, read as {shape:?}");
        }
        Ok(i)
    }

    /// Where tensor `name` of `shape` lies in θ.
    pub fn range(&self, name: &str, shape: &[usize]) -> candle_core::Result<Range<usize>> {
        Ok(self.range_at(self.position(name, shape)?))
    }
}

/// θ as candle tensors (one per parameter, in θ's order), read by name.
pub(crate) struct ParamView<'a> {
    table: &'a ParamTable,
    tensors: &'a [Tensor],
}

impl<'a> ParamView<'a> {
    /// The view of `tensors`, the tensors of `table` in its order.
    pub fn new(table: &'a ParamTable, tensors: &'a [Tensor]) -> Self {
        assert_eq!(
            table.specs().len(),
            tensors.len(),
            "one tensor per parameter"
        );
        Self { table, tensors }
    }

    /// Tensor `name`, which must be of `shape`.
    pub fn get(&self, name: &str, shape: &[usize]) -> candle_core::Result<&'a Tensor> {
        Ok(&self.tensors[self.table.position(name, shape)?])
    }
}

#[cfg(test)]
mod tests {
    use candle_core::Device;

    use super::*;

    fn table() -> ParamTable {
        let mut t = ParamTable::new();
        t.uniform("fc1.weight".into(), &[3, 2], 3);
        t.uniform("fc1.bias".into(), &[2], 3);
        t.constant("bn.scale".into(), &[4], 1.0);
        t
    }

    #[test]
    fn tensors_follow_each_other_in_the_order_they_are_registered() {
        let t = table();
        assert_eq!(t.dim(), 6 + 2 + 4);
        assert_eq!(t.range("fc1.bias", &[2]).unwrap(), 6..8);
        assert_eq!(t.range("bn.scale", &[4]).unwrap(), 8..12);
        let names: Vec<&str> = t.specs().iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["fc1.weight", "fc1.bias", "bn.scale"]);
    }

    #[test]
    fn a_missing_name_or_another_shape_is_an_error() {
        let t = table();
        let e = t.position("fc2.weight", &[3, 2]).unwrap_err().to_string();
        assert!(e.contains("no parameter fc2.weight"), "{e}");
        let e = t.position("fc1.weight", &[2, 3]).unwrap_err().to_string();
        assert!(e.contains("fc1.weight is [3, 2], read as [2, 3]"), "{e}");
        let tensors: Vec<Tensor> = t
            .specs()
            .iter()
            .map(|s| Tensor::zeros(s.shape.as_slice(), candle_core::DType::F64, &Device::Cpu))
            .collect::<Result<_, _>>()
            .unwrap();
        let view = ParamView::new(&t, &tensors);
        assert_eq!(view.get("bn.scale", &[4]).unwrap().dims(), [4]);
        assert!(view.get("bn.scale", &[3]).is_err());
    }

    #[test]
    #[should_panic(expected = "parameter fc1.bias registered twice")]
    fn a_name_registered_twice_panics() {
        table().uniform("fc1.bias".into(), &[2], 3);
    }
}
