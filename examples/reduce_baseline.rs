//! Bench baseline: the smallest synchronous distributed gradient descent loop
//! on MPI collectives, for `scripts/bench-runtime.sh` to compare
//! `gradcode train` (uncoded, no injected delay) against.
//!
//! Every iteration: broadcast theta from rank 0, each of ranks 1..K computes the
//! gradient sum of its partition with the same fused kernel, `MPI_Reduce` sums
//! them on rank 0, which takes the step. Same data (the config's synthetic set,
//! partition k on rank k+1), same kernel, same optimiser; no coding, no
//! straggler handling, busy-waiting collectives.
//!
//! `mpirun -n K+1 target/release/examples/reduce_baseline CONFIG.toml`
//! prints the mean seconds per iteration and the final training loss, and
//! asserts that the loss fell (`scripts/test.sh` runs it on 3 ranks).

use std::time::Instant;

use gradcode::config::load;
use gradcode::learn::{DataPlan, Optimizer};
use mpi::collective::SystemOperation;
use mpi::traits::*;

fn main() -> anyhow::Result<()> {
    let universe = mpi::initialize().expect("MPI initialises once");
    let world = universe.world();
    let (rank, size) = (world.rank() as usize, world.size() as usize);
    let path = std::env::args()
        .nth(1)
        .expect("usage: reduce_baseline CONFIG.toml");
    let config = load(Some(std::path::Path::new(&path)), &[])?.config;
    let k = config.workers;
    assert_eq!(size, k + 1, "run with mpirun -n {}", k + 1);
    let plan = DataPlan::new(&config, k)?;
    let dim = plan.features();
    let mine = if rank > 0 {
        plan.load(&[rank - 1])?
    } else {
        Vec::new()
    };
    let mut opt = Optimizer::new(&config.train, config.model.l2, dim);
    let mut theta = vec![0.0; dim];
    let mut local = vec![0.0; dim + 1];
    let mut total = vec![0.0; dim + 1];
    let root = world.process_at_rank(0);
    world.barrier();
    let start = Instant::now();
    let mut first_loss = f64::NAN;
    for iteration in 0..config.train.iterations {
        if rank == 0 {
            theta.copy_from_slice(opt.eval_point());
        }
        root.broadcast_into(&mut theta[..]);
        local.iter_mut().for_each(|v| *v = 0.0);
        for part in &mine {
            let (grad, loss) = local.split_at_mut(dim);
            loss[0] += part.accumulate(config.model.loss, 0..part.len(), &theta, grad);
        }
        if rank == 0 {
            root.reduce_into_root(&local[..], &mut total[..], SystemOperation::sum());
            if iteration == 0 {
                first_loss = opt.objective(total[dim], plan.train_samples());
            }
            opt.step(&total[..dim], plan.train_samples());
        } else {
            root.reduce_into(&local[..], SystemOperation::sum());
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    if rank == 0 {
        let final_loss = opt.objective(total[dim], plan.train_samples());
        // The loop trains: the reduced gradients are the full batch's.
        assert!(
            config.train.iterations < 2 || final_loss < first_loss,
            "the training loss rose from {first_loss:e} to {final_loss:e}"
        );
        println!(
            "{{\"mean_iteration_s\": {:.6e}, \"final_train_loss\": {:.9e}}}",
            elapsed / config.train.iterations as f64,
            final_loss
        );
    }
    Ok(())
}
