//! The learning problem: data partitions, fused loss/gradient kernels,
//! optimisers, and a single-process full-batch reference.

pub mod data;
pub mod kernel;
pub mod optim;

pub use data::{DataPlan, Partition};
pub use optim::Optimizer;

use crate::config::Config;
use crate::error::InputError;

/// Result of a single-process full-batch run: the reference trajectory that
/// gradient coding must not change.
#[derive(Debug, Clone, PartialEq)]
pub struct ReferenceRun {
    /// Final iterate.
    pub theta: Vec<f64>,
    /// Objective at the evaluation point of each iteration.
    pub train_loss: Vec<f64>,
}

/// Full-batch gradient descent (or Nesterov) on one process over the same data
/// partitions, summing the partition gradients in partition order.
pub fn train_reference(config: &Config, partitions: usize) -> Result<ReferenceRun, InputError> {
    let plan = DataPlan::new(config, partitions)?;
    let ids: Vec<usize> = (0..partitions).collect();
    let parts = plan.load(&ids)?;
    let d = plan.features();
    let mut opt = Optimizer::new(&config.train, config.model.l2, d);
    let mut gradient = vec![0.0; d];
    // Grown as it goes: train.iterations has no upper limit.
    let mut train_loss = Vec::with_capacity(config.train.iterations.min(1 << 16));
    for _ in 0..config.train.iterations {
        gradient.iter_mut().for_each(|g| *g = 0.0);
        let mut loss = 0.0;
        for part in &parts {
            loss += kernel::accumulate(
                config.model.loss,
                part.x.view(),
                &part.y,
                0..part.len(),
                opt.eval_point(),
                &mut gradient,
            );
        }
        train_loss.push(opt.objective(loss, plan.train_samples()));
        opt.step(&gradient, plan.train_samples());
    }
    Ok(ReferenceRun {
        theta: opt.theta().to_vec(),
        train_loss,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse;

    #[test]
    fn reference_gd_fits_noiseless_linear_data() {
        let config = parse(
            "workers = 4\n[data]\ntrain_samples = 400\nfeatures = 20\nnoise_std = 0.0\n[train]\niterations = 300\nlearning_rate = 0.5\n",
            "t",
            &[],
        )
        .unwrap()
        .config;
        let run = train_reference(&config, 4).unwrap();
        let truth = DataPlan::new(&config, 4).unwrap().true_model().unwrap();
        let err: f64 = run
            .theta
            .iter()
            .zip(&truth)
            .map(|(a, b)| (a - b).powi(2))
            .sum::<f64>()
            .sqrt();
        assert!(err < 1e-6, "distance to theta* = {err}");
        assert!(
            run.train_loss.windows(2).all(|w| w[1] <= w[0] + 1e-12),
            "loss decreases"
        );
    }
}
