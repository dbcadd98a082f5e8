//! Time to a training loss (`advise --objective time-to-loss`): the
//! simulation trains on the gradients the workers would send, on the
//! straggler samples of `simulate`. Checked against descents written here,
//! on the partitions each iteration recovered.

mod support;

use gradcode_core::coding::Arrival;
use gradcode_core::config::Config;
use gradcode_core::engine::{IterationEvent, Observer, ObserverError};
use gradcode_core::learn::{DataPlan, Optimizer};
use gradcode_core::sim::{Simulation, default_target, exact_losses, time_to_loss};

/// The demo (least squares on 1200 × 200, K = 12, 60 iterations of GD)
/// with `overrides`, run for `trials` trials.
fn demo(trials: usize, overrides: &[&str]) -> Config {
    let mut all: Vec<String> = overrides.iter().map(ToString::to_string).collect();
    all.push(format!("simulate.trials={trials}"));
    gradcode_core::setup::load(None, &all)
        .unwrap()
        .loaded
        .config
}

#[test]
fn the_exact_losses_are_those_of_full_batch_descent() {
    let config = demo(2, &["train.optimizer=\"nesterov\""]);
    let losses = exact_losses(&config).unwrap();
    let (_, reference) = support::full_batch(&config, config.workers);
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
/// T/2 in every trial and ends at the same loss. Every exact scheme of the
/// registry, the multi-message ones (several coded messages per worker)
/// among them.
#[test]
fn an_exact_scheme_trains_as_full_batch_descent() {
    let exact = [
        "uncoded",
        "gc-frac",
        "gc-cyclic",
        "gc-sc",
        "gc-dc",
        "gc-mmc",
        "uc-mmc",
        "gc-partial",
    ];
    for kind in exact {
        let config = demo(
            3,
            &[
                &format!("scheme.kind=\"{kind}\""),
                "scheme.clusters_per_worker=2",
            ],
        );
        let losses = exact_losses(&config).unwrap();
        let target = default_target(&losses).unwrap();
        let scheme = gradcode_core::coding::build(&config).unwrap();
        let trials = time_to_loss(&config, scheme, target).unwrap();
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
/// workers whose message the master accepted, in arrival order, and the
/// duration (model time).
#[derive(Default)]
struct Accepted {
    iterations: Vec<(u64, Vec<usize>, f64)>,
}

impl Observer for Accepted {
    fn iteration(&mut self, e: &IterationEvent<'_>) -> Result<(), ObserverError> {
        let finish = &e.record.finish_s;
        let mut workers: Vec<usize> = (0..finish.len())
            .filter(|&w| finish[w].is_finite())
            .collect();
        workers.sort_by(|&a, &b| finish[a].total_cmp(&finish[b]).then(a.cmp(&b)));
        self.iterations.push((e.trial, workers, e.duration));
        Ok(())
    }
}

/// A scheme that recovers part of the gradient descends on the mean
/// gradient of the partitions it recovered: ignore-stragglers those of the
/// workers it waited for, is-gc those its coded messages decode to. The
/// reference takes the accepted messages and the durations from `simulate`
/// itself, asks the scheme which partitions they decode to, and does the
/// descent here; the time to the target is the sum of the durations before
/// the first iteration at the target.
#[test]
fn a_partial_scheme_descends_on_the_partitions_it_recovered() {
    let trials = 3;
    for scheme in [
        &["scheme.kind=\"ignore-stragglers\"", "scheme.wait_for=4"][..],
        &[
            "scheme.kind=\"is-gc\"",
            "scheme.load=2",
            "scheme.wait_for=6",
        ],
        &[
            "scheme.kind=\"is-gc\"",
            "scheme.load=3",
            "scheme.placement=\"fr\"",
            "scheme.deadline=0.2",
        ],
    ] {
        let mut overrides = scheme.to_vec();
        overrides.push("simulate.iterations=60");
        let config = demo(trials, &overrides);
        partial_scheme_matches_its_reference(&config);
    }
}

fn partial_scheme_matches_its_reference(config: &Config) {
    let name = &config.scheme.kind;
    let target = default_target(&exact_losses(config).unwrap()).unwrap();
    let got = time_to_loss(
        config,
        gradcode_core::coding::build(config).unwrap(),
        target,
    )
    .unwrap();

    let mut sim = Simulation::from_config(config).unwrap();
    let mut accepted = Accepted::default();
    sim.run(&mut [&mut accepted]).unwrap();
    let mut scheme = gradcode_core::coding::build(config).unwrap();
    let plan = scheme.plan_round(&Default::default());

    let k = config.workers;
    let data = DataPlan::new(config, scheme.partitions()).unwrap();
    let parts = data
        .load(&(0..scheme.partitions()).collect::<Vec<_>>())
        .unwrap();
    let d = data.features();
    let loss = config.model.loss;
    let mut partial = false;
    for (trial, outcome) in got.iter().enumerate() {
        let mut opt = Optimizer::new(&config.train, config.model.l2, d);
        let (mut elapsed, mut reached, mut last) = (0.0, None, f64::NAN);
        let rows = accepted.iterations.iter().filter(|r| r.0 == trial as u64);
        for (t, (_, workers, duration)) in rows.enumerate() {
            assert!(workers.iter().all(|&w| w < k));
            let loss_sum: f64 = parts
                .iter()
                .map(|p| p.loss_sum(loss, opt.eval_point()))
                .sum();
            last = opt.objective(loss_sum, data.train_samples());
            if reached.is_none() && last <= target {
                reached = Some((t as u64, elapsed));
            }
            elapsed += duration;
            let arrivals: Vec<Arrival> = workers
                .iter()
                .map(|&worker| Arrival { worker, message: 0 })
                .collect();
            let recovered = scheme.decode(&plan, &arrivals).recovered;
            partial |= recovered.len() < parts.len();
            let mut gradient = vec![0.0; d];
            let mut samples = 0;
            for &p in &recovered {
                parts[p].accumulate(loss, 0..parts[p].len(), opt.eval_point(), &mut gradient);
                samples += parts[p].len();
            }
            opt.step(&gradient, samples);
        }
        let (iterations, time) = reached.expect("the reference reaches the target");
        assert_eq!(
            outcome.iterations,
            Some(iterations),
            "{name:?} trial {trial}"
        );
        let t = outcome.time.unwrap();
        assert!(
            (t - time).abs() <= 1e-12 * time,
            "{name:?} trial {trial}: {t} vs {time}"
        );
        assert!(
            (outcome.final_loss - last).abs() <= 1e-10 * last,
            "{name:?} trial {trial}: {} vs {last}",
            outcome.final_loss
        );
    }
    assert!(
        partial,
        "{name:?}: some iteration recovers part of the gradient"
    );
}
