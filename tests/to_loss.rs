//! Time to a training loss (`advise --objective time-to-loss`): the
//! simulation trains on the gradients the workers would send, on the
//! straggler samples of `simulate`. Checked against descents written here,
//! on the partitions each iteration recovered.

mod common;

use gradcode::config::Config;
use gradcode::engine::{IterationEvent, Observer, ObserverError};
use gradcode::learn::{DataPlan, Optimizer};
use gradcode::sim::{Simulation, default_target, exact_losses, time_to_loss};

/// The demo (least squares on 1200 × 200, K = 12, 60 iterations of GD)
/// with `overrides`, run for `trials` trials.
fn demo(trials: usize, overrides: &[&str]) -> Config {
    let mut all: Vec<String> = overrides.iter().map(ToString::to_string).collect();
    all.push(format!("simulate.trials={trials}"));
    gradcode::setup::load(None, &all).unwrap().loaded.config
}

#[test]
fn the_exact_losses_are_those_of_full_batch_descent() {
    let config = demo(2, &["train.optimizer=\"nesterov\""]);
    let losses = exact_losses(&config).unwrap();
    let (_, reference) = common::full_batch(&config, config.workers);
    assert_eq!(losses.len(), reference.len());
    for (t, (a, b)) in losses.iter().zip(&reference).enumerate() {
        assert!(
            (a - b).abs() <= 1e-12 * b.abs(),
            "iteration {t}: {a} vs {b}"
        );
    }
    assert!(
        losses[59] < losses[30] && losses[30] < losses[0],
        "{losses:?}"
    );
}

/// An exact scheme's decoded gradient is the full gradient: its trajectory
/// is full-batch descent's, so it reaches the default target at iteration
/// T/2 in every trial and ends at the same loss.
#[test]
fn an_exact_scheme_trains_as_full_batch_descent() {
    for kind in ["gc-sc", "gc-cyclic", "gc-dc"] {
        let config = demo(3, &[&format!("scheme.kind=\"{kind}\"")]);
        let losses = exact_losses(&config).unwrap();
        let target = default_target(&losses).unwrap();
        let trials = time_to_loss(&config, target).unwrap();
        assert_eq!(trials.len(), 3);
        for t in &trials {
            assert_eq!(t.iterations, Some(30), "{kind}: {t:?}");
            let end = losses[59];
            assert!(
                (t.final_loss - end).abs() <= 1e-10 * end,
                "{kind}: {t:?} vs {end}"
            );
        }
    }
}

/// What a simulation of one scheme did, per trial and iteration: the
/// workers whose messages the decode used, and the duration (model time).
#[derive(Default)]
struct Used {
    iterations: Vec<(u64, Vec<usize>, f64)>,
}

impl Observer for Used {
    fn iteration(&mut self, e: &IterationEvent<'_>) -> Result<(), ObserverError> {
        let used = (0..e.record.used.len())
            .filter(|&w| e.record.used[w])
            .collect();
        self.iterations.push((e.trial, used, e.duration));
        Ok(())
    }
}

/// ignore-stragglers recovers the partitions of the workers it waited for:
/// its training is descent on the mean gradient of those partitions, and
/// the time to the target the sum of `simulate`'s durations before the
/// first iteration at the target. The reference takes the used workers
/// and durations from `simulate` itself and does the descent here.
#[test]
fn a_partial_scheme_descends_on_the_partitions_it_recovered() {
    let trials = 3;
    let config = demo(
        trials,
        &[
            "scheme.kind=\"ignore-stragglers\"",
            "scheme.wait_for=4",
            "simulate.iterations=60",
        ],
    );
    let target = default_target(&exact_losses(&config).unwrap()).unwrap();
    let got = time_to_loss(&config, target).unwrap();

    let mut sim = Simulation::from_config(&config).unwrap();
    let stored: Vec<Vec<usize>> = {
        let scheme = sim.schemes().next().unwrap();
        (0..config.workers)
            .map(|w| scheme.stored(w).to_vec())
            .collect()
    };
    let mut used = Used::default();
    sim.run(&mut [&mut used]).unwrap();

    let k = config.workers;
    let data = DataPlan::new(&config, k).unwrap();
    let parts = data.load(&(0..k).collect::<Vec<_>>()).unwrap();
    let d = data.features();
    let loss = config.model.loss;
    for (trial, outcome) in got.iter().enumerate() {
        let mut opt = Optimizer::new(&config.train, config.model.l2, d);
        let (mut elapsed, mut reached, mut last) = (0.0, None, f64::NAN);
        let rows = used.iterations.iter().filter(|r| r.0 == trial as u64);
        for (t, (_, workers, duration)) in rows.enumerate() {
            let loss_sum: f64 = parts
                .iter()
                .map(|p| p.loss_sum(loss, opt.eval_point()))
                .sum();
            last = opt.objective(loss_sum, data.train_samples());
            if reached.is_none() && last <= target {
                reached = Some((t as u64, elapsed));
            }
            elapsed += duration;
            let mut partitions: Vec<usize> =
                workers.iter().flat_map(|&w| stored[w].clone()).collect();
            partitions.sort_unstable();
            partitions.dedup();
            let mut gradient = vec![0.0; d];
            let mut samples = 0;
            for &p in &partitions {
                parts[p].accumulate(loss, 0..parts[p].len(), opt.eval_point(), &mut gradient);
                samples += parts[p].len();
            }
            opt.step(&gradient, samples);
        }
        let (iterations, time) = reached.expect("the reference reaches the target");
        assert_eq!(outcome.iterations, Some(iterations), "trial {trial}");
        let t = outcome.time.unwrap();
        assert!(
            (t - time).abs() <= 1e-12 * time,
            "trial {trial}: {t} vs {time}"
        );
        assert!(
            (outcome.final_loss - last).abs() <= 1e-10 * last,
            "trial {trial}: {} vs {last}",
            outcome.final_loss
        );
    }
}
