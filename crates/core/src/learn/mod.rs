//! The learning problem: data partitions (dense or sparse), standardisation,
//! fused loss/gradient kernels, optimisers. The training loop itself is the
//! engine's driver (`crate::engine`), with a `Learner` for the update.

pub mod data;
pub mod kernel;
pub mod optim;
pub mod sparse;
pub mod standardize;

pub use data::{DataPlan, Partition};
pub use optim::Optimizer;
pub use sparse::{CsrMatrix, Features};
pub use standardize::{FeatureMoments, Standardization};
