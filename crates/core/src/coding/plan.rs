//! What a scheme plans for an iteration: per worker the partitions to
//! compute and the messages (codewords) to send, and the straggler
//! information the plan may use.

use serde::Serialize;

/// Identifies a codeword: group (cluster) and position within it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct CodewordId {
    pub group: usize,
    pub index: usize,
}

/// A linear combination of partition gradients.
#[derive(Debug, PartialEq, Serialize)]
pub struct Codeword {
    pub id: CodewordId,
    /// (partition, coefficient), in the order the worker computes them.
    pub terms: Vec<(usize, f64)>,
}

impl Codeword {
    /// The coded vector `sum_j c_j · g_j` from the partition gradients, indexed by partition.
    pub fn encode(&self, gradients: &[Vec<f64>]) -> Vec<f64> {
        let dim = self.terms.first().map_or(0, |&(p, _)| gradients[p].len());
        let mut out = vec![0.0; dim];
        for &(p, c) in &self.terms {
            for (o, g) in out.iter_mut().zip(&gradients[p]) {
                *o += c * g;
            }
        }
        out
    }
}

/// One message a worker sends in an iteration.
#[derive(Debug, PartialEq, Serialize)]
pub struct Message {
    /// Partition computations the worker completes before sending it.
    pub after: usize,
    pub codeword: Codeword,
}

/// What one worker does in one iteration.
#[derive(Debug, PartialEq, Serialize)]
pub struct WorkerTask {
    /// Partitions in computation order.
    pub compute: Vec<usize>,
    /// Messages in send order.
    pub messages: Vec<Message>,
}

/// What every worker does in one iteration.
#[derive(Debug, Default, PartialEq, Serialize)]
pub struct RoundPlan {
    /// Indexed by worker.
    pub tasks: Vec<WorkerTask>,
    /// Cluster membership this iteration (cluster → workers), empty when unclustered.
    pub clusters: Vec<Vec<usize>>,
}

// Clone with `clone_from` that reuses every nested buffer: an engine that
// plans every iteration into the same plan (`Scheme::plan_round_into`)
// allocates nothing once the buffers have grown.
impl Clone for Codeword {
    fn clone(&self) -> Self {
        Self {
            id: self.id,
            terms: self.terms.clone(),
        }
    }

    fn clone_from(&mut self, source: &Self) {
        self.id = source.id;
        self.terms.clone_from(&source.terms);
    }
}

impl Clone for Message {
    fn clone(&self) -> Self {
        Self {
            after: self.after,
            codeword: self.codeword.clone(),
        }
    }

    fn clone_from(&mut self, source: &Self) {
        self.after = source.after;
        self.codeword.clone_from(&source.codeword);
    }
}

impl Clone for WorkerTask {
    fn clone(&self) -> Self {
        Self {
            compute: self.compute.clone(),
            messages: self.messages.clone(),
        }
    }

    fn clone_from(&mut self, source: &Self) {
        self.compute.clone_from(&source.compute);
        self.messages.clone_from(&source.messages);
    }
}

impl Clone for RoundPlan {
    fn clone(&self) -> Self {
        Self {
            tasks: self.tasks.clone(),
            clusters: self.clusters.clone(),
        }
    }

    fn clone_from(&mut self, source: &Self) {
        self.tasks.clone_from(&source.tasks);
        self.clusters.clone_from(&source.clusters);
    }
}

/// The straggler information the master has when it plans an iteration.
#[derive(Debug, Clone, Copy, Default)]
pub struct RoundContext<'a> {
    pub iteration: u64,
    /// Workers believed to straggle (imperfect: iteration t-1; perfect: t).
    pub straggling: Option<&'a [bool]>,
    /// Estimated computation rates, for heterogeneous workers.
    pub rates: Option<&'a [f64]>,
}
