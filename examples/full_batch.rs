//! Single-process reference: full-batch gradient descent (or Nesterov) on
//! the partitions of a config, summing the partition gradients in partition
//! order, with no MPI and no coding. An exact scheme trained under mpirun
//! must end at the same θ; `scripts/bench-sparse.sh` checks it at a scale the
//! test suite does not run.
//!
//! `target/release/examples/full_batch CONFIG.toml` prints
//! `{"theta": [...], "final_train_loss": ..., "rows_materialised": ...}`,
//! and fails when the training loss did not fall (`scripts/test.sh` runs it
//! on the demo config).

use gradcode::config::load;
use gradcode::learn::{DataPlan, Optimizer};

fn main() -> anyhow::Result<()> {
    let path = std::env::args()
        .nth(1)
        .ok_or_else(|| anyhow::anyhow!("usage: full_batch CONFIG.toml"))?;
    let config = load(Some(std::path::Path::new(&path)), &[])?.config;
    let partitions = gradcode::coding::build(&config)?.partitions();
    let plan = DataPlan::new(&config, partitions)?;
    let ids: Vec<usize> = (0..partitions).collect();
    let parts = plan.load(&ids)?;
    let d = plan.features();
    let mut opt = Optimizer::new(&config.train, config.model.l2, d);
    let mut gradient = vec![0.0; d];
    let mut train_loss = f64::NAN;
    let mut first_loss = f64::NAN;
    for iteration in 0..config.train.iterations {
        gradient.iter_mut().for_each(|g| *g = 0.0);
        let mut loss = 0.0;
        for part in &parts {
            loss += part.accumulate(
                config.model.loss,
                0..part.len(),
                opt.eval_point(),
                &mut gradient,
            );
        }
        train_loss = opt.objective(loss, plan.train_samples());
        if iteration == 0 {
            first_loss = train_loss;
        }
        opt.step(&gradient, plan.train_samples());
    }
    // A reference that does not descend is no reference.
    anyhow::ensure!(
        config.train.iterations < 2 || train_loss < first_loss,
        "the training loss rose from {first_loss:e} to {train_loss:e}: lower train.learning_rate"
    );
    let out = serde_json::json!({
        "theta": opt.theta(),
        "final_train_loss": train_loss,
        "rows_materialised": plan.rows_materialised(),
    });
    println!("{out}");
    Ok(())
}
