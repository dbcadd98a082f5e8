//! The data sources, one file per kind of data: generated (`synthetic`),
//! text files (`text_file`: LIBSVM lines in `libsvm`, CSV rows in `csv`,
//! read by `read`) and images ([`images`]: IDX files in [`idx`], CIFAR-10
//! in [`cifar`]). Each source plans its data (its `Shape`, checked against
//! `data.max_matrix_mib`) and produces the rows a partition asks for;
//! [`DataPlan`](super::DataPlan) dispatches to it.

pub mod cifar;
mod csv;
pub mod idx;
pub mod images;
mod libsvm;
pub(crate) mod read;
mod row;
pub(crate) mod synthetic;
pub(crate) mod text_file;

/// What a source plans: its width, its sample counts and how dense it is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Shape {
    /// Features per sample.
    pub(crate) features: usize,
    /// Training samples over all partitions.
    pub(crate) train_samples: usize,
    /// Test samples.
    pub(crate) test_samples: usize,
    /// Stored entries over samples × features (files: of the whole file(s)).
    pub(crate) density: f64,
}
