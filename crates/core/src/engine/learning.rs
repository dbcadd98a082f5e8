//! The simulated round with vectors: the simulator's virtual clock, and the
//! workers' computations done in this process, so that a simulation can
//! train (`advise --objective time-to-loss`).
//!
//! The arrivals, their times and the stop are those of [`SimulatedRound`]
//! (the same straggler sample gives the same iteration as in `simulate`);
//! the vectors are what the workers of `train` send: each partition's
//! gradient sum and loss sum at the iteration's evaluation point, and per
//! message its codeword's combination of them ([`Codeword::encode`]).
//!
//! [`Codeword::encode`]: crate::coding::Codeword::encode

use super::{
    Round, RoundError, RoundReport, RoundStatus, RoundTask, SimulatedRound, StopRule, Timing,
};
use std::sync::Arc;

use crate::coding::Arrival;
use crate::learn::{Model, Partition, StepKey};
use crate::spec::Batch;

/// A simulated round whose messages carry the coded gradients of the
/// training data, computed in process. Keeps its buffers between iterations.
pub struct LearningRound {
    clock: SimulatedRound,
    model: Arc<Model>,
    /// The batch of a partition's step and the seed its batches are drawn with.
    batch: Batch,
    seed: u64,
    /// Every partition of the training data, indexed by partition id.
    partitions: Vec<Partition>,
    /// Per partition: the gradient sum (d entries) and the loss sum at the
    /// last iteration's evaluation point.
    vectors: Vec<Vec<f64>>,
    /// The accepted messages' vectors, in arrival order.
    messages: Vec<Vec<f64>>,
    /// Per partition: a classifier's correct predictions of its batch at
    /// the last iteration's evaluation point (None for a linear model).
    correct: Vec<Option<usize>>,
    /// Per partition: the loss sum at the last iteration's evaluation point.
    losses: Vec<f64>,
}

impl LearningRound {
    /// A round over `partitions` (the training data, partition `p` at index
    /// `p`) for `model`, with `batch`'s mini-batches drawn under
    /// `seed` (every sample with [`Batch::Full`]), its arrivals and times those of
    /// `clock` (the simulator's round, with the run's network).
    pub fn new(
        clock: SimulatedRound,
        model: Arc<Model>,
        batch: Batch,
        seed: u64,
        partitions: Vec<Partition>,
    ) -> Self {
        assert!(
            partitions.iter().enumerate().all(|(p, part)| part.id == p),
            "partitions are indexed by their id"
        );
        let vectors = vec![vec![0.0; model.dim() + 1]; partitions.len()];
        Self {
            clock,
            model,
            batch,
            seed,
            partitions,
            vectors,
            messages: Vec::new(),
            correct: Vec::new(),
            losses: Vec::new(),
        }
    }
}

impl Round for LearningRound {
    fn run(
        &mut self,
        task: &RoundTask<'_>,
        rule: &mut StopRule<'_>,
        report: &mut RoundReport,
        timing: &mut Timing,
    ) -> Result<RoundStatus, RoundError> {
        let status = self.clock.run(task, rule, report, timing)?;
        let theta = task
            .eval_point
            .ok_or("a learning round needs the evaluation point")?;
        self.correct.clear();
        for (part, v) in self.partitions.iter().zip(&mut self.vectors) {
            let key = StepKey {
                seed: self.seed,
                partition: part.id,
                iteration: task.iteration,
            };
            let correct = self
                .model
                .partition_gradient(part, self.batch, key, theta, v)
                .map_err(|e| e.to_string())?;
            self.correct.push(correct);
        }
        self.losses.clear();
        self.losses
            .extend(self.vectors.iter().map(|v| v[v.len() - 1]));
        self.messages.clear();
        for a in &report.arrivals {
            let codeword = &task.plan.tasks[a.worker].messages[a.message].codeword;
            self.messages.push(codeword.encode(&self.vectors));
        }
        Ok(status)
    }

    fn settle(
        &mut self,
        task: &RoundTask<'_>,
        arrivals: &[Arrival],
        weights: &[f64],
        stop: f64,
    ) -> f64 {
        self.clock.settle(task, arrivals, weights, stop)
    }

    fn combine(
        &mut self,
        order: &[usize],
        weights: &[f64],
        out: &mut Vec<f64>,
    ) -> Result<bool, RoundError> {
        out.clear();
        out.resize(self.vectors.first().map_or(0, Vec::len), 0.0);
        // As the MPI round: in `order`, messages of weight 0 left out.
        for &i in order {
            if weights[i] != 0.0 {
                for (o, v) in out.iter_mut().zip(&self.messages[i]) {
                    *o += weights[i] * v;
                }
            }
        }
        Ok(true)
    }

    fn partition_losses(&self) -> Option<&[f64]> {
        Some(&self.losses)
    }

    fn batch_correct(&self, recovered: &[usize]) -> Option<f64> {
        recovered
            .iter()
            .map(|&p| self.correct.get(p).copied().flatten().map(|c| c as f64))
            .sum()
    }
}
