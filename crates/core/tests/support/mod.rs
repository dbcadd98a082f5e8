//! The test oracles of the core's tests, shared with the app's tests
//! (`tests/common/mod.rs` includes this file): single-process full-batch
//! descent written independently of the engine, and the paper's eq. (13)
//! assignment spelled independently of the library.
#![allow(dead_code)] // each test binary uses a part

/// The test oracle of every exact scheme: single-process full-batch descent
/// (or Nesterov) on the same data partitions, summing the partition
/// gradients in partition order. Returns the final θ and the objective at
/// the evaluation point of each iteration. Written here, independently of
/// the engine, so that a test compares the engine with something else.
pub fn full_batch(
    config: &gradcode_core::config::Config,
    partitions: usize,
) -> (Vec<f64>, Vec<f64>) {
    use gradcode_core::learn::{DataPlan, Optimizer, kernel};
    let plan = DataPlan::new(config, partitions).unwrap();
    let ids: Vec<usize> = (0..partitions).collect();
    let parts = plan.load(&ids).unwrap();
    let d = plan.features();
    let mut opt = Optimizer::new(&config.train, config.model.l2, d);
    let mut gradient = vec![0.0; d];
    let mut train_loss = Vec::new();
    for _ in 0..config.train.iterations {
        gradient.iter_mut().for_each(|g| *g = 0.0);
        let mut loss = 0.0;
        for part in &parts {
            loss += kernel::accumulate_features(
                config.model.loss,
                &part.x,
                &part.y,
                0..part.len(),
                opt.eval_point(),
                &mut gradient,
            );
        }
        train_loss.push(opt.objective(loss, plan.train_samples()));
        opt.step(&gradient, plan.train_samples());
    }
    (opt.theta().to_vec(), train_loss)
}

/// The training objective over all the training data of `config` (split
/// into `partitions`) at `theta`, summed partition by partition as the master does.
pub fn objective_at(
    config: &gradcode_core::config::Config,
    partitions: usize,
    theta: &[f64],
) -> f64 {
    use gradcode_core::learn::{DataPlan, Optimizer, kernel};
    let plan = DataPlan::new(config, partitions).unwrap();
    let ids: Vec<usize> = (0..partitions).collect();
    let parts = plan.load(&ids).unwrap();
    let mut gradient = vec![0.0; theta.len()];
    let loss: f64 = parts
        .iter()
        .map(|part| {
            kernel::accumulate_features(
                config.model.loss,
                &part.x,
                &part.y,
                0..part.len(),
                theta,
                &mut gradient,
            )
        })
        .sum();
    let opt = Optimizer::new(&config.train, config.model.l2, theta.len());
    opt.objective_at(theta, loss, plan.train_samples())
}

/// A_cluster of 000 eq. (13) (K = 12, P = 4, n = 2), 1-based rows as the
/// paper prints them: the reference the library's `EQ13_SHIFTS` is checked
/// against, spelled here independently of it.
pub const EQ13: [[usize; 4]; 6] = [
    [1, 2, 3, 4],
    [6, 7, 8, 5],
    [9, 10, 11, 12],
    [4, 1, 2, 3],
    [7, 8, 5, 6],
    [10, 11, 12, 9],
];

/// [`EQ13`] as rows for `Assignment::from_rows`.
pub fn eq13_rows() -> Vec<Vec<usize>> {
    EQ13.iter().map(|r| r.to_vec()).collect()
}

/// [`EQ13`] as an assignment.
pub fn eq13() -> gradcode_core::cluster::Assignment {
    gradcode_core::cluster::Assignment::from_rows(12, 4, Some(2), &eq13_rows()).unwrap()
}
