//! The learning problem: data partitions, fused loss/gradient kernels,
//! optimisers. The training loop itself is the engine's driver
//! (`crate::engine`), with a `Learner` for the update.

pub mod data;
pub mod kernel;
pub mod optim;

pub use data::{DataPlan, Partition};
pub use optim::Optimizer;
