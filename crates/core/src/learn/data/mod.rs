//! Training and test data, generated or loaded partition by partition.
//!
//! The training samples are split into `P` contiguous partitions (mini-batches):
//! partition `p` holds samples `p·N/P .. (p+1)·N/P`. A worker generates or
//! loads only the partitions it stores, so data never passes through the
//! master, and no process builds a matrix of more than its own partitions (the
//! master: the test set; [`DataPlan::rows_materialised`] counts them). Every
//! sample is a pure function of (config, seed, sample index):
//!
//! - synthetic samples come from the random sub-stream of their own index
//!   (`rng::substream(seed, Data, i)`), so any partitioning, any process and any
//!   order of generation sees the same data set;
//! - file samples are split into test and training rows by a seeded permutation
//!   that every process computes alike, and standardised with statistics of the
//!   training rows, computed in one streaming pass ([`FeatureMoments`](crate::learn::data::standardize::FeatureMoments)) by one
//!   process and handed to the others ([`DataPlan::set_standardization`]).
//!
//! Each kind of data has its source in [`sources`]: how it is planned and
//! how its rows are generated or read.
//!
//! Partitions are dense or sparse (CSR, [`Storage`]): `data.format = "auto"`
//! stores synthetic-onehot data and LIBSVM files of density below
//! [`SPARSE_DENSITY_THRESHOLD`](crate::config::SPARSE_DENSITY_THRESHOLD) sparse. Sparse data is standardised by scaling
//! only: centering would make every zero non-zero.

mod checks;
mod partition;
mod plan;
pub mod sources;
pub mod standardize;
mod storage;
mod streams;

pub use checks::{CHECK_ROWS, FormatChoice, check_data_files};
pub use partition::Partition;
pub use plan::DataPlan;
pub use storage::{Storage, choose_storage};
