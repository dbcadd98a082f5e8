//! Dynamic clustering for GC-DC (000 §IV-V): the pure math.
//!
//! GC-DC (Buyukates, Ozfatura, Ulukus, Gündüz, IEEE Trans. Commun. 2022, file
//! 000 of the papers) keeps GC-SC's P clusters of l = K/P codewords each, but
//! lets every worker store the partitions of n clusters, so that the master can
//! re-form the clusters at every iteration and spread the stragglers across
//! them, at the same computation load r.
//!
//! - [`Assignment`]: the worker cluster assignment matrix A_cluster (n·l × P)
//!   built by circular shifts (§IV-B) or given explicitly; which clusters each
//!   worker may join.
//! - [`ClusteringPolicy`]: one iteration's clustering from the straggler states
//!   ([`WorkerStates`]) into a [`Clustering`] with a per-worker placement log.
//!   [`GreedyClustering`] is Algorithm 1 of §V (see its docs for how the
//!   worked example of §V is read where the pseudo-code disagrees).
//!   [`OptimalClustering`] (beyond 000, whose §VII leaves it open) is exact
//!   for the objective of [`ClusteringScore`], by flows.
//! - [`augment`]: the augmenting-path repair that completes any partial
//!   clustering; it makes every policy return a valid clustering even when no
//!   single swap resolves a conflict (Lemma 1 does not hold).
//! - [`spread`]: the most even spread of stragglers any valid clustering can
//!   reach (max-flow feasibility), to measure a policy against.
//!
//! Worker and cluster ids are 0-based here; the CLI prints them 1-based.

mod assignment;
mod flow;
mod greedy;
mod optimal;
mod repair;
pub mod spread;

pub use assignment::{Assignment, AssignmentSource, EQ13_SHIFTS, cluster_size};
pub use greedy::{GreedyClustering, PhaseOneRule};
pub use optimal::{ClusteringScore, OptimalClustering};
pub use repair::augment;

use std::fmt;

/// Errors of cluster-matrix construction. `param` is the config key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{param} = {value} {rule}")]
pub struct ClusterError {
    pub param: String,
    pub value: String,
    pub rule: String,
}

impl ClusterError {
    pub(crate) fn new(
        param: &str,
        value: impl fmt::Display,
        rule: impl Into<String>,
    ) -> ClusterError {
        ClusterError {
            param: param.to_string(),
            value: value.to_string(),
            rule: rule.into(),
        }
    }
}

/// What the master knows of the workers when it forms the clusters.
///
/// With `rates` (heterogeneous workers, 000 §VI-B) worker k is a straggler when
/// `rates[k] < threshold` (tau) and candidates are ordered fastest first; the
/// flags are then not consulted. Without rates, `straggling[k]` says it and
/// candidates are ordered by index (eq. 16). Without either, nobody straggles.
/// A NaN rate counts as the slowest possible (a straggler).
#[derive(Debug, Clone, Copy)]
pub struct WorkerStates<'a> {
    pub straggling: Option<&'a [bool]>,
    pub rates: Option<&'a [f64]>,
    /// tau, in the unit of the rates.
    pub threshold: f64,
}

impl<'a> WorkerStates<'a> {
    /// Homogeneous workers: straggler flags only.
    pub fn flags(straggling: &'a [bool]) -> Self {
        Self {
            straggling: Some(straggling),
            rates: None,
            threshold: 0.0,
        }
    }

    /// Heterogeneous workers: estimated rates and the threshold tau.
    pub fn rates(rates: &'a [f64], threshold: f64) -> Self {
        Self {
            straggling: None,
            rates: Some(rates),
            threshold,
        }
    }

    /// Whether worker `k` is treated as a straggler.
    pub fn is_straggler(&self, k: usize) -> bool {
        match (self.rates, self.straggling) {
            (Some(r), _) => r[k] < self.threshold || r[k].is_nan(),
            (None, Some(s)) => s[k],
            (None, None) => false,
        }
    }

    /// The rate used to order candidates, NaN mapped to −inf; `None` without rates.
    pub fn rate(&self, k: usize) -> Option<f64> {
        self.rates.map(|r| {
            if r[k].is_nan() {
                f64::NEG_INFINITY
            } else {
                r[k]
            }
        })
    }

    /// Checks that the given slices have one entry per worker.
    pub fn check_len(&self, workers: usize) {
        if let Some(s) = self.straggling {
            assert_eq!(s.len(), workers, "one straggler flag per worker");
        }
        if let Some(r) = self.rates {
            assert_eq!(r.len(), workers, "one rate per worker");
        }
    }
}

/// How a worker got its cluster in one clustering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// The fixed clustering used when the master has no straggler information.
    Initial,
    /// Taken by its cluster's turn in Phase I (§V-A) and never moved.
    PhaseOne,
    /// Left over after Phase I and put into an open cluster of its own column
    /// (Phase II without a conflict).
    PhaseTwo,
    /// Moved by a Phase II swap (§V-B) with `partner`.
    Swap { partner: usize },
    /// Moved along an augmenting path by the repair ([`augment`]).
    Repair,
    /// Placed by the exact optimisation of [`OptimalClustering`].
    Optimal,
}

/// Where a worker ended up and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// Final cluster.
    pub cluster: usize,
    /// Treated as a straggler in this clustering.
    pub straggler: bool,
    /// Cluster after Phase I (`None`: left over after Phase I).
    pub phase_one: Option<usize>,
    pub how: How,
}

/// How a placement conflict was resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// §V-B: `partner`, in cluster `via` (one of the worker's own clusters),
    /// moved to the conflicted cluster and the worker took its place in `via`.
    Swap { partner: usize, via: usize },
    /// No single swap resolved it: an augmenting path moved `moved` workers
    /// (besides the conflicted one) one cluster along.
    Repair { moved: usize },
}

/// A leftover worker all of whose clusters were full while `cluster` was open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conflict {
    pub worker: usize,
    /// The open (conflicted) cluster that finally received a worker.
    pub cluster: usize,
    pub resolution: Resolution,
}

/// Phase I of one class of workers (stragglers or not), for reporting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassPhase {
    /// The class: stragglers (`true`) or non-stragglers.
    pub stragglers: bool,
    /// Clusters in turn order (O_f or O_s of eq. 17).
    pub order: Vec<usize>,
    /// Workers of the class in that column, per cluster (|K_f^p| or |K_s^p|).
    pub availability: Vec<usize>,
    /// Placement stopped after a round with a conflict, leaving workers over.
    pub stopped_at_conflict: bool,
}

/// One iteration's clusters and how they were formed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Clustering {
    /// Cluster p's workers in position order (ascending worker id): position
    /// i computes codeword i of cluster p.
    pub members: Vec<Vec<usize>>,
    /// Worker → cluster.
    pub cluster_of: Vec<usize>,
    /// Per worker.
    pub placements: Vec<Placement>,
    /// Phase II conflicts in the order they were resolved.
    pub conflicts: Vec<Conflict>,
    /// Phase I per class, in placement order (empty for the initial clustering).
    pub phases: Vec<ClassPhase>,
}

impl Clustering {
    /// Conflicts resolved by a single swap.
    pub fn swaps(&self) -> usize {
        self.conflicts
            .iter()
            .filter(|c| matches!(c.resolution, Resolution::Swap { .. }))
            .count()
    }

    /// Conflicts that needed the augmenting-path repair.
    pub fn repairs(&self) -> usize {
        self.conflicts.len() - self.swaps()
    }

    /// Stragglers per cluster.
    pub fn straggler_counts(&self) -> Vec<usize> {
        self.members
            .iter()
            .map(|m| m.iter().filter(|&&k| self.placements[k].straggler).count())
            .collect()
    }

    /// Largest number of stragglers in one cluster.
    pub fn max_stragglers(&self) -> usize {
        self.straggler_counts().into_iter().max().unwrap_or(0)
    }

    /// Every worker in exactly one cluster, only in a cluster of its column,
    /// every cluster exactly l workers, and the bookkeeping consistent.
    pub fn validate(&self, assignment: &Assignment) -> Result<(), String> {
        let (k, p, l) = (
            assignment.workers(),
            assignment.clusters(),
            assignment.size(),
        );
        if self.members.len() != p {
            return Err(format!("{} clusters, not {p}", self.members.len()));
        }
        if self.cluster_of.len() != k || self.placements.len() != k {
            return Err("bookkeeping is not one entry per worker".into());
        }
        let mut seen = vec![false; k];
        for (c, m) in self.members.iter().enumerate() {
            if m.len() != l {
                return Err(format!("cluster {c} has {} workers, not {l}", m.len()));
            }
            for &w in m {
                if w >= k || std::mem::replace(&mut seen[w], true) {
                    return Err(format!("worker {w} placed twice or out of range"));
                }
                if !assignment.can_join(w, c) {
                    return Err(format!("worker {w} is not in column {c}"));
                }
                if self.cluster_of[w] != c || self.placements[w].cluster != c {
                    return Err(format!("worker {w}: cluster_of disagrees with members"));
                }
            }
            if m.windows(2).any(|x| x[0] >= x[1]) {
                return Err(format!("cluster {c} is not in ascending worker order"));
            }
        }
        Ok(())
    }
}

/// A rule that forms the P clusters of one iteration.
///
/// Implementations must return a valid clustering for every [`Assignment`]
/// (every worker in exactly one cluster of its own column, every cluster
/// exactly l workers); [`augment`] completes any partial one.
pub trait ClusteringPolicy: Send + fmt::Debug {
    /// The name in configs (`scheme.clustering`).
    fn name(&self) -> &'static str;

    /// Form the clusters for `states` into `out` (its buffers are reused).
    fn cluster(&mut self, assignment: &Assignment, states: &WorkerStates<'_>, out: &mut Clustering);
}
