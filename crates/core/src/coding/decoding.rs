//! What decoding an iteration's arrivals gives: the weight of each
//! message, the recovered partitions, and the accuracy of f64 decoding.

use serde::Serialize;

/// A received message: worker and message index within its task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Arrival {
    pub worker: usize,
    pub message: usize,
}

impl Arrival {
    /// The single message of `worker` (single-message schemes).
    pub fn only(worker: usize) -> Self {
        Self { worker, message: 0 }
    }
}

/// Decoding of one group (cluster) of a code.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupDecoding {
    pub group: usize,
    /// Received positions in the group's code, ascending.
    pub positions: Vec<usize>,
    /// Workers behind those positions, same order.
    pub workers: Vec<usize>,
    /// Codewords needed from this group.
    pub needed: usize,
    pub decodable: bool,
    /// Coefficients for `workers` (empty when not decodable).
    pub coefficients: Vec<f64>,
    pub residual: f64,
    pub amplification: f64,
}

/// The outcome of decoding a set of received messages.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decoding {
    /// The scheme's stopping rule is met and its target was recovered.
    pub decodable: bool,
    /// Weight of each received message, aligned with the input; the weighted
    /// sum of the message vectors equals the sum of the gradients of `recovered`.
    pub weights: Vec<f64>,
    /// Partitions whose gradient sum the weighted messages give, ascending.
    pub recovered: Vec<usize>,
    /// Largest |a·B_W − 1|_inf over the decoded groups.
    pub residual: f64,
    /// Largest max|a|·max|B| over the decoded groups.
    pub amplification: f64,
    /// Per group (cluster), for reporting.
    pub groups: Vec<GroupDecoding>,
    /// An approximate code's decode: the weighted messages approximate the
    /// sum of every partition's gradient (`recovered` lists them all) with
    /// the error [`Decoding::error`], instead of giving the exact sum of
    /// `recovered`. The update then steps with the approximation over every
    /// sample, and the training loss is evaluated as for a partial decode.
    pub approximate: bool,
}

impl Decoding {
    /// `sum_i weights_i · messages_i`: the sum of the gradients of `recovered`.
    /// `messages` is aligned with the arrivals that were decoded.
    pub fn combine(&self, messages: &[&[f64]]) -> Vec<f64> {
        assert_eq!(
            messages.len(),
            self.weights.len(),
            "one message per decoded arrival"
        );
        let dim = messages.first().map_or(0, |m| m.len());
        let mut out = vec![0.0; dim];
        for (m, &w) in messages.iter().zip(&self.weights) {
            if w != 0.0 {
                for (o, v) in out.iter_mut().zip(m.iter()) {
                    *o += w * v;
                }
            }
        }
        out
    }

    /// Share of the partitions whose gradients were recovered.
    pub fn recovered_fraction(&self, partitions: usize) -> f64 {
        self.recovered.len() as f64 / partitions as f64
    }

    /// The decode error ‖a·B_S − 1‖₂ over the `partitions` partitions: how
    /// far the weighted sum of the arrivals' codewords (`plan`'s, `arrivals`
    /// aligned with the weights) is from the sum of every partition's
    /// gradient, in partition gradients. 0 (to rounding) for an exact
    /// decode; √(partitions not recovered) for a partial one (IS-GC,
    /// ignore-stragglers: 1 on the recovered partitions, 0 elsewhere).
    /// `coverage` is scratch space (its contents are replaced).
    pub fn error(
        &self,
        plan: &super::RoundPlan,
        arrivals: &[Arrival],
        partitions: usize,
        coverage: &mut Vec<f64>,
    ) -> f64 {
        coverage.clear();
        coverage.resize(partitions, 0.0);
        for (a, &w) in arrivals.iter().zip(&self.weights) {
            if w == 0.0 {
                continue;
            }
            let codeword = &plan.tasks[a.worker].messages[a.message].codeword;
            for &(p, c) in &codeword.terms {
                coverage[p] += w * c;
            }
        }
        coverage
            .iter()
            .map(|v| (v - 1.0) * (v - 1.0))
            .sum::<f64>()
            .sqrt()
    }

    /// Messages that enter the decoded sum (nonzero weight): the "messages used"
    /// of the communication load. Messages received are the arrivals decoded
    /// (`weights.len()`), duplicates and unneeded messages included.
    pub fn messages_used(&self) -> usize {
        self.weights.iter().filter(|&&w| w != 0.0).count()
    }

    /// The mean gradient over the recovered partitions, `combine(messages) /
    /// |recovered|`: what the model update uses, for every scheme (with full
    /// recovery it is the usual mean over all partitions). Empty when nothing
    /// was recovered.
    pub fn combine_mean(&self, messages: &[&[f64]]) -> Vec<f64> {
        if self.recovered.is_empty() {
            return Vec::new();
        }
        let scale = 1.0 / self.recovered.len() as f64;
        let mut out = self.combine(messages);
        out.iter_mut().for_each(|v| *v *= scale);
        out
    }
}

/// Relative error above which f64 decoding is not called exact: `train`
/// refuses a scheme whose measured [`Accuracy`] exceeds it.
pub const EXACT_RELATIVE_ERROR: f64 = 1e-6;

/// Measured accuracy of f64 decoding over sampled decodable arrival sets, for
/// codes whose conditioning is a concern (gc-mmc's uncorrelated design).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Accuracy {
    /// Largest |decoded − true| / |true| (infinity norms) over random gradients.
    pub worst_relative_error: f64,
    /// Largest sum over messages of |weight · coefficient| for one partition.
    pub worst_amplification: f64,
    /// Decodable arrival sets sampled.
    pub sets: usize,
    /// Sampled sets that should decode but whose solve failed the residual tolerance.
    pub failed: usize,
}

impl Accuracy {
    /// Decoding is exact to [`EXACT_RELATIVE_ERROR`] on every sampled set.
    pub fn exact(&self) -> bool {
        self.failed == 0 && self.worst_relative_error <= EXACT_RELATIVE_ERROR
    }
}
