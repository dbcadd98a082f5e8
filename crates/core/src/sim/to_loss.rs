//! Time to a training loss: the simulation trains (`advise --objective
//! time-to-loss`).
//!
//! An exact scheme follows full-batch descent whatever its speed; a scheme
//! that recovers only part of the gradient (is-gc, ignore-stragglers, a
//! deadline) takes cheaper iterations that each do less. Which finishes
//! first is a question of time to a loss, not of time per iteration. Here
//! each trial runs the iteration driver with a [`LearningRound`]: the
//! arrivals, stops and durations of `simulate` on the trial's straggler
//! samples, and the update of `train` on the gradients the workers would
//! send, computed in this process from the config's data. The training
//! loss is evaluated at every iteration (`train.eval_every = 1`), over all
//! the training data.

use crate::coding::Scheme;
use crate::config::Config;
use crate::engine::{
    Driver, EngineError, IterationEvent, Lane, Learner, LearningRound, Observer, ObserverError,
    SimulatedRound, Straggling, Timing,
};
use crate::error::InputError;
use crate::learn::{DataPlan, StepKey, batch_rows};
use crate::straggler::DelaySpec;

/// How one trial reached the target loss.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrialToLoss {
    /// Model time from the start until the first iteration whose recorded
    /// training loss (at its evaluation point, before its update) is at
    /// most the target: the sum of the durations of the iterations before
    /// it. `None`: not within the trial's iterations.
    pub time: Option<f64>,
    /// Iterations completed before that iteration.
    pub iterations: Option<u64>,
    /// The last recorded training loss of the trial.
    pub final_loss: f64,
}

/// The training losses full-batch descent records on the data of `config`
/// (every partition summed in partition order, the optimiser of
/// `[train]`): `train.iterations` values, the objective over all the
/// training data at each iteration's evaluation point.
pub fn exact_losses(config: &Config) -> Result<Vec<f64>, LossRunError> {
    let mut config = config.clone();
    config.train.eval_every = 1;
    let partitions = config.workers;
    let data = DataPlan::new(&config, partitions)?;
    let ids: Vec<usize> = (0..partitions).collect();
    let parts = data.load(&ids)?;
    let mut learner = Learner::new(&config, &data, data.load_test()?)?;
    let model = learner.model().clone();
    let dim = learner.dim();
    let mut timing = Timing::new(false);
    let mut sum = vec![0.0; dim + 1];
    let mut losses = Vec::with_capacity(config.train.iterations);
    for t in 0..config.train.iterations as u64 {
        sum.fill(0.0);
        // Every partition's gradient added into one sum, in partition order.
        for part in &parts {
            let key = StepKey {
                seed: config.seed,
                partition: part.id,
                iteration: t,
            };
            let rows = batch_rows(key, part.len(), data.spec().batch);
            let (grad, loss) = sum.split_at_mut(dim);
            loss[0] += model
                .accumulate(part, &rows, learner.eval_point(), grad, key)
                .map_err(|e| EngineError::Model {
                    iteration: t,
                    what: e.to_string(),
                })?;
        }
        let step = learner.step(t, &sum, &ids, false, None, &mut timing)?;
        losses.push(step.train);
    }
    Ok(losses)
}

/// The default target of [`exact_losses`]' run: the loss it records at
/// iteration ⌊T/2⌋ (so that a scheme with half the progress per iteration
/// can still reach it within the T iterations), raised by 10⁻⁹ of the
/// decrease up to there, so that the rounding of a coded sum does not move
/// an exact scheme past that iteration. `None` for fewer than 2 losses.
pub fn default_target(losses: &[f64]) -> Option<f64> {
    if losses.len() < 2 {
        return None;
    }
    let at = losses[losses.len() / 2];
    Some(at + 1e-9 * (losses[0] - at).abs())
}

/// Why a time-to-loss run failed: its data, or the run (a divergence, a
/// decode that failed).
#[derive(Debug, thiserror::Error)]
pub enum LossRunError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// `simulate.trials` trials of `train.iterations` iterations of `scheme`
/// (the scheme of `config`'s `scheme.kind`, built: `coding::build`, or the
/// one a loaded setup holds) training on the data of `config`, each on the
/// straggler samples `simulate` gives the same trial (common random
/// numbers): how each reached `target`. One scheme serves every trial, as
/// in `simulate`.
pub fn time_to_loss(
    config: &Config,
    scheme: Box<dyn Scheme>,
    target: f64,
) -> Result<Vec<TrialToLoss>, LossRunError> {
    let mut config = config.clone();
    config.train.eval_every = 1;
    let spec = DelaySpec::from_config(&config)?;
    let partitions = scheme.partitions();
    let data = DataPlan::new(&config, partitions)?;
    let ids: Vec<usize> = (0..partitions).collect();
    let learner = Learner::new(&config, &data, data.load_test()?)?;
    let time_unit_s = config.straggler.time_unit_ms / 1000.0;
    let mut round = LearningRound::new(
        {
            let network = super::delivery::from_config(&config)?;
            SimulatedRound::new(time_unit_s)
                .with_delivery(network.as_ref().map(|n| n.delivery))
                .with_reduce(network.and_then(|n| n.reduce))
        },
        learner.model().clone(),
        data.spec().batch,
        config.seed,
        data.load(&ids)?,
    );
    let mut driver = Driver::new(
        vec![Lane::new(scheme, Some(learner))],
        config.straggler.state_info,
        time_unit_s,
        None,
        false,
    );
    let mut trials = Vec::with_capacity(config.simulate.trials);
    for trial in 0..config.simulate.trials as u64 {
        if let Some(learner) = driver.lanes_mut()[0].learner_mut() {
            learner.reset();
        }
        let mut race = Race::new(target);
        let mut straggling = Straggling::Model(spec.model(trial));
        driver.run(
            &mut straggling,
            &mut round,
            0..config.train.iterations as u64,
            trial,
            &mut [&mut race],
        )?;
        trials.push(race.outcome);
    }
    Ok(trials)
}

/// The observer of one trial: elapsed model time, and the first iteration
/// whose recorded loss is at most the target.
struct Race {
    target: f64,
    elapsed: f64,
    outcome: TrialToLoss,
}

impl Race {
    fn new(target: f64) -> Self {
        Self {
            target,
            elapsed: 0.0,
            outcome: TrialToLoss {
                time: None,
                iterations: None,
                final_loss: f64::NAN,
            },
        }
    }
}

impl Observer for Race {
    fn wants_workers(&self) -> bool {
        false
    }

    fn iteration(&mut self, event: &IterationEvent<'_>) -> Result<(), ObserverError> {
        let loss = event.record.train_loss;
        self.outcome.final_loss = loss;
        if self.outcome.time.is_none() && loss <= self.target {
            self.outcome.time = Some(self.elapsed);
            self.outcome.iterations = Some(event.iteration);
        }
        self.elapsed += event.duration;
        Ok(())
    }
}
