//! The learning problem: data partitions (dense or sparse), standardisation,
//! models (linear with fused loss/gradient kernels, neural networks),
//! mini-batches, optimisers. The training loop itself is the
//! engine's driver (`crate::engine`), with a `Learner` for the update.

pub mod batch;
pub mod data;
pub mod kernel;
pub mod model;
pub mod optim;
pub mod sparse;

pub use batch::{StepKey, batch_rows};
// The data sources and the standardisation, also under their former paths
// (`crate::learn::idx`, …): they live in `data/sources/` and `data/`.
pub use data::sources::{cifar, idx, images};
pub use data::standardize::{self, FeatureMoments, Standardization};
pub use data::{DataPlan, Partition};
pub use model::{Confusion, Evaluation, Input, Model, ModelError, TensorLayout};
pub use optim::Optimizer;
pub use sparse::{CsrMatrix, Features};
