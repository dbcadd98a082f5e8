//! The learning problem on one process: full-batch descent (the oracle the
//! MPI tests compare `train` with) fits noiseless linear data.

mod support;

use gradcode_core::config::parse;
use gradcode_core::learn::DataPlan;

#[test]
fn full_batch_gd_fits_noiseless_linear_data() {
    let config = parse(
        "workers = 4\n[data]\ntrain_samples = 400\nfeatures = 20\nnoise_std = 0.0\n[train]\niterations = 300\nlearning_rate = 0.5\n",
        "t",
        &[],
    )
    .unwrap()
    .config;
    let (theta, train_loss) = support::full_batch(&config, 4);
    let truth = DataPlan::new(&config, 4).unwrap().true_model().unwrap();
    let err: f64 = theta
        .iter()
        .zip(&truth)
        .map(|(a, b)| (a - b).powi(2))
        .sum::<f64>()
        .sqrt();
    assert!(err < 1e-6, "distance to theta* = {err}");
    assert!(
        train_loss.windows(2).all(|w| w[1] <= w[0] + 1e-12),
        "loss decreases"
    );
}
