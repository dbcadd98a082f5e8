//! A partition: the samples of one mini-batch (or of the test set).

use std::ops::Range;

use crate::config::Loss;
use crate::learn::sparse::Features;

/// Samples of one partition (or of the test set): rows of `x`, labels `y`.
#[derive(Debug, Clone, PartialEq)]
pub struct Partition {
    /// Partition id (`usize::MAX` for the test set).
    pub id: usize,
    /// Samples × features, dense (row-major) or sparse.
    pub x: Features,
    pub y: Vec<f64>,
}

impl Partition {
    /// Number of samples.
    pub fn len(&self) -> usize {
        self.y.len()
    }

    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    /// Adds the gradient of the loss over `rows` into `grad`; returns the loss sum
    /// (`kernel::accumulate_features`).
    pub fn accumulate(
        &self,
        loss: Loss,
        rows: Range<usize>,
        theta: &[f64],
        grad: &mut [f64],
    ) -> f64 {
        crate::learn::kernel::accumulate_features(loss, &self.x, &self.y, rows, theta, grad)
    }

    /// The loss summed over every sample.
    pub fn loss_sum(&self, loss: Loss, theta: &[f64]) -> f64 {
        crate::learn::kernel::loss_sum_features(loss, &self.x, &self.y, theta)
    }
}
