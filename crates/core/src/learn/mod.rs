//! The learning problem: data partitions (dense or sparse), standardisation,
//! models (linear with fused loss/gradient kernels, neural networks),
//! mini-batches, optimisers. The training loop itself is the
//! engine's driver (`crate::engine`), with a `Learner` for the update.

pub mod batch;
pub mod cifar;
pub mod data;
pub mod idx;
pub mod images;
pub mod kernel;
pub mod model;
pub mod optim;
pub mod sparse;
pub mod standardize;

pub use batch::{StepKey, batch_rows};
pub use data::{DataPlan, Partition};
pub use model::{Confusion, Evaluation, Input, Model, ModelError, TensorLayout};
pub use optim::Optimizer;
pub use sparse::{CsrMatrix, Features};
pub use standardize::{FeatureMoments, Standardization};
