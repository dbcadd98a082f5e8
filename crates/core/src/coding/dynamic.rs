//! GC-DC: gradient coding with dynamic clustering (000 §IV-V, Buyukates,
//! Ozfatura, Ulukus, Gündüz, IEEE Trans. Commun. 2022; conference version 002).
//!
//! The code is GC-SC's (§II-B): P clusters of l = K/P positions; cluster p
//! owns partitions p·l .. p·l + l − 1 and position i of every cluster sends row
//! i of one shared [`CyclicMds`] code of load r, so the master needs l − r + 1
//! codewords from every cluster. What changes is who fills the positions: the
//! worker cluster assignment matrix ([`Assignment`], n·l × P) lets every worker
//! join any of its n clusters, so it stores their n·l partitions (memory
//! m = n·l, §IV-B) but still computes r per iteration. Every iteration the
//! master forms the clusters anew with a [`ClusteringPolicy`] (the greedy of
//! §V by default) from what it knows of the stragglers, so that they spread
//! across clusters.
//!
//! # How the round engines call it
//!
//! `plan_round(&RoundContext { straggling, rates, .. })` every iteration.
//! Which iteration's states go in is the engine's business
//! (`straggler.state_info`): `imperfect` passes the states observed in
//! iteration t − 1, `perfect` those of iteration t (000 §VI, Fig. 4). With
//! `rates` (heterogeneous workers, §VI-B) a worker is a straggler when its rate
//! is below `scheme.straggler_threshold` (tau) and the flags are ignored;
//! otherwise the flags say it. With neither (the first iteration, `check`),
//! the fixed [`Assignment::initial_clustering`] is used (for the circular
//! shifts, the first l rows: GC-SC's eq. (5) in the running example).
//! `RoundPlan.clusters` holds the iteration's clusters, positions in order;
//! `decode` and `tracker` read the clusters from the plan they are given.
//!
//! # Parameter limits
//!
//! K >= 1; P >= 1 and P | K; 1 <= r <= l; 1 <= n <= P (default: the smallest n
//! with Lemma 1, n > P(K−1)/(2K)); an explicit `scheme.assignment` has n·l rows
//! of P 1-based ids, every worker in exactly n distinct columns; tau finite
//! and > 0. When Lemma 1 fails the scheme still works (`check` says so): a
//! conflict that no single swap resolves is repaired along an augmenting path.

use rand::Rng;

use super::group::{GroupCounter, GroupDecoder, GroupLayout};
use super::{
    Arrival, ArrivalTracker, CodeOptions, CodeParams, Codeword, CodewordId, CodingError, CyclicMds,
    Decoding, LowerBound, Message, RoundContext, RoundPlan, Scheme, Tolerance, WorkerTask,
};
use crate::cluster::{
    Assignment, AssignmentSource, ClusterError, Clustering, ClusteringPolicy, GreedyClustering,
    OptimalClustering, WorkerStates,
};
use crate::rng::Stream;
use serde::{Deserialize, Serialize};

use super::registry::{BuildArgs, SchemeEntry};
use super::{DEFAULT_CLUSTERS, DEFAULT_LOAD};

/// `gc-dc`: the code, the assignment matrix and the clustering policy.
pub static GC_DC: SchemeEntry = SchemeEntry::new::<GcDcParams>(
    "gc-dc",
    "GC-SC's per-cluster cyclic MDS code with the clusters re-formed every iteration from the straggler state, l − r + 1 per cluster decode (Buyukates et al. §IV-V, §VI-B for rates)",
    build_gc_dc,
);

/// The per-iteration clustering policy of gc-dc (`scheme.clustering`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClusteringKind {
    /// The two-phase greedy of 000 §V (Algorithm 1), with an augmenting-path repair.
    #[default]
    Greedy,
    /// Beyond 000: the exact optimum over every valid clustering of the
    /// straggler profile, or with rates of the bottleneck rate, then the
    /// straggler profile, then the spread of the workers below and at most
    /// at the bottleneck rate ([`crate::cluster::OptimalClustering`]).
    Optimal,
}

/// The `[scheme]` keys of `gc-dc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GcDcParams {
    /// r: partitions a worker computes per iteration, 1 <= r <= l.
    pub load: usize,
    /// P: clusters of l = K / P workers; P | K.
    pub clusters: usize,
    /// n: clusters each worker may join (it stores n·l partitions), 1..=P;
    /// default: the smallest n with Lemma 1, n > P(K-1)/(2K).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clusters_per_worker: Option<usize>,
    /// n·l rows × P of 1-based worker ids, column p = the workers that may
    /// join cluster p; default: 000 eq. (13) for K = 12, P = 4, n = 2, else
    /// the best of `assignment_draws` circular-shift matrices (§IV-B).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assignment: Option<Vec<Vec<usize>>>,
    /// Circular-shift matrices drawn for the default A_cluster; the one with
    /// the most distinct columns, then the most worker pairs a cluster can
    /// hold, is kept (1 = a single draw, as §IV-B describes).
    pub assignment_draws: usize,
    /// tau: with estimated rates, a worker with rate < tau straggles (1 / model time).
    pub straggler_threshold: f64,
    /// The per-iteration clustering: `greedy` (000 §V, the default) or
    /// `optimal` (the exact optimum of its objective, beyond 000).
    pub clustering: ClusteringKind,
    /// The shared code options (`code_draws`, `decode_tolerance`,
    /// `decode_cache_entries`: [`CodeParams`]).
    pub code: CodeParams,
    /// Model time after which the master decodes the clusters that have
    /// l − r + 1 codewords and updates with the mean over their partitions
    /// (partial recovery); none: wait for every cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<f64>,
}

impl Default for GcDcParams {
    fn default() -> Self {
        Self {
            load: DEFAULT_LOAD,
            clusters: DEFAULT_CLUSTERS,
            clusters_per_worker: None,
            assignment: None,
            assignment_draws: 8,
            straggler_threshold: 0.5,
            clustering: ClusteringKind::Greedy,
            code: CodeParams::default(),
            deadline: None,
        }
    }
}

fn build_gc_dc(args: &BuildArgs<'_>) -> Result<Box<dyn Scheme>, CodingError> {
    let p: GcDcParams = args.params()?;
    let options = p.code.options()?;
    Ok(Box::new(
        DynamicClustering::new(
            args.workers,
            p.clusters,
            p.load,
            p.clusters_per_worker,
            p.assignment.as_deref(),
            p.assignment_draws,
            p.straggler_threshold,
            clustering_policy(p.clustering, p.load)?,
            options,
            &mut args.rng(Stream::Code),
            &mut args.rng(Stream::ClusterShifts),
        )?
        .with_deadline(p.deadline)?,
    ))
}

impl From<ClusterError> for CodingError {
    fn from(e: ClusterError) -> Self {
        CodingError::Invalid {
            param: e.param,
            value: e.value,
            rule: e.rule,
        }
    }
}

/// The policy named by `scheme.clustering` for code load r = `load` (the
/// optimal policy's bottleneck depends on it; `scheme.load` >= 1).
pub fn clustering_policy(
    kind: ClusteringKind,
    load: usize,
) -> Result<Box<dyn ClusteringPolicy>, ClusterError> {
    Ok(match kind {
        ClusteringKind::Greedy => Box::new(GreedyClustering::new()),
        ClusteringKind::Optimal => Box::new(OptimalClustering::new(load)?),
    })
}

/// Counts over the iterations planned so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClusteringTotals {
    /// Iterations planned.
    pub rounds: u64,
    /// Of those, planned with straggler information (the policy ran).
    pub informed: u64,
    /// Phase II conflicts, and how they were resolved.
    pub conflicts: u64,
    pub swaps: u64,
    pub repairs: u64,
}

/// The GC-DC scheme (`scheme.kind = "gc-dc"`); see the module docs.
#[derive(Debug)]
pub struct DynamicClustering {
    workers: usize,
    assignment: Assignment,
    source: AssignmentSource,
    /// Partial recovery: model time after which the master decodes what arrived.
    deadline: Option<f64>,
    policy: Box<dyn ClusteringPolicy>,
    threshold: f64,
    decoder: GroupDecoder,
    /// Cluster p's partitions, local partition j = p·l + j.
    partitions: Vec<Vec<usize>>,
    /// The task of position i of cluster p.
    slot_tasks: Vec<Vec<WorkerTask>>,
    stored: Vec<Vec<usize>>,
    initial: Clustering,
    last: Clustering,
    totals: ClusteringTotals,
}

impl DynamicClustering {
    /// Build GC-DC. `assignment` is `scheme.assignment` (1-based, n·l × P);
    /// without it the matrix comes from circular shifts drawn from
    /// `shift_rng`. The code is drawn from `code_rng` exactly as GC-SC draws
    /// it (same seed, same code). Limits: see the module docs.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        workers: usize,
        clusters: usize,
        load: usize,
        per_worker: Option<usize>,
        assignment: Option<&[Vec<usize>]>,
        assignment_draws: usize,
        threshold: f64,
        policy: Box<dyn ClusteringPolicy>,
        options: CodeOptions,
        code_rng: &mut impl Rng,
        shift_rng: &mut impl Rng,
    ) -> Result<Self, CodingError> {
        if workers == 0 {
            return Err(CodingError::invalid("workers", 0, "must be at least 1"));
        }
        let size = crate::cluster::cluster_size(workers, clusters)?;
        if load == 0 || load > size {
            return Err(CodingError::invalid(
                "scheme.load",
                load,
                format!("must be between 1 and the cluster size workers / clusters = {size}"),
            ));
        }
        if !(threshold.is_finite() && threshold > 0.0) {
            return Err(CodingError::invalid(
                "scheme.straggler_threshold",
                threshold,
                "must be a finite number > 0",
            ));
        }
        let (assignment, source) = match assignment {
            Some(rows) => {
                let a = Assignment::from_rows(workers, clusters, per_worker, rows)?;
                let distinct_columns = a.distinct_columns();
                (a, AssignmentSource::Given { distinct_columns })
            }
            None => {
                let n = per_worker
                    .unwrap_or_else(|| Assignment::lemma1_min_per_worker(workers, clusters));
                Assignment::default_matrix(workers, clusters, n, assignment_draws, shift_rng)?
            }
        };
        let code = CyclicMds::best_of(size, load, options.draws(), code_rng)?;
        let partitions: Vec<Vec<usize>> = (0..clusters)
            .map(|p| (p * size..(p + 1) * size).collect())
            .collect();
        let slot_tasks = partitions
            .iter()
            .enumerate()
            .map(|(p, parts)| {
                (0..size)
                    .map(|i| {
                        let terms: Vec<(usize, f64)> = code
                            .row(i)
                            .into_iter()
                            .map(|(local, c)| (parts[local], c))
                            .collect();
                        WorkerTask {
                            compute: terms.iter().map(|&(q, _)| q).collect(),
                            messages: vec![Message {
                                after: load,
                                codeword: Codeword {
                                    id: CodewordId { group: p, index: i },
                                    terms,
                                },
                            }],
                        }
                    })
                    .collect()
            })
            .collect();
        let stored = (0..workers)
            .map(|w| {
                let mut mine: Vec<usize> = assignment
                    .clusters_of(w)
                    .iter()
                    .flat_map(|&p| partitions[p].iter().copied())
                    .collect();
                mine.sort_unstable();
                mine
            })
            .collect();
        let initial = assignment.initial_clustering();
        Ok(Self {
            workers,
            last: initial.clone(),
            initial,
            assignment,
            source,
            deadline: None,
            policy,
            threshold,
            decoder: GroupDecoder::cyclic(code, options),
            partitions,
            slot_tasks,
            stored,
            totals: ClusteringTotals::default(),
        })
    }

    /// The worker cluster assignment matrix.
    pub fn assignment(&self) -> &Assignment {
        &self.assignment
    }

    /// GC-DC with a deadline (model time, finite and > 0): at the deadline the
    /// master decodes the clusters that have l − r + 1 codewords and updates
    /// with the mean over their partitions (partial recovery). `None` leaves
    /// it as it is.
    pub fn with_deadline(mut self, deadline: Option<f64>) -> Result<Self, CodingError> {
        super::check_deadline(deadline)?;
        if deadline.is_some() {
            self.deadline = deadline;
        }
        Ok(self)
    }

    /// Where the assignment matrix came from (given, the paper's, or drawn).
    pub fn assignment_source(&self) -> AssignmentSource {
        self.source
    }

    /// The clustering of the last planned iteration (the initial one before any).
    pub fn last_clustering(&self) -> &Clustering {
        &self.last
    }

    /// The clustering used without straggler information.
    pub fn initial_clustering(&self) -> &Clustering {
        &self.initial
    }

    /// tau: a worker with an estimated rate below it is a straggler.
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// The policy's config name.
    pub fn policy_name(&self) -> &'static str {
        self.policy.name()
    }

    /// Conflicts, swaps and repairs over the iterations planned so far.
    pub fn totals(&self) -> ClusteringTotals {
        self.totals
    }

    /// The code every cluster uses.
    pub fn code(&self) -> &CyclicMds {
        self.decoder
            .cyclic_code()
            .expect("gc-dc decodes cyclic groups")
    }
}

/// The clusters of one planned iteration, read from its plan.
struct PlanLayout<'a> {
    plan: &'a RoundPlan,
    partitions: &'a [Vec<usize>],
}

impl GroupLayout for PlanLayout<'_> {
    fn groups(&self) -> usize {
        self.plan.clusters.len()
    }

    fn slot(&self, worker: usize) -> (usize, usize) {
        let id = self.plan.tasks[worker].messages[0].codeword.id;
        (id.group, id.index)
    }

    fn worker(&self, group: usize, position: usize) -> usize {
        self.plan.clusters[group][position]
    }

    fn partitions(&self, group: usize) -> &[usize] {
        &self.partitions[group]
    }
}

struct DynamicTracker<'a> {
    plan: &'a RoundPlan,
    counter: GroupCounter,
}

impl ArrivalTracker for DynamicTracker<'_> {
    fn arrive(&mut self, arrival: Arrival) -> bool {
        let plan = self.plan;
        self.counter.arrive(arrival.worker, || {
            plan.tasks[arrival.worker].messages[0].codeword.id.group
        });
        self.counter.all_groups_done()
    }

    fn recoverable(&self) -> bool {
        self.counter.any_group_done()
    }
}

impl Scheme for DynamicClustering {
    fn decode_tolerance(&self) -> Option<f64> {
        Some(self.decoder.tolerance())
    }

    fn kind(&self) -> &'static SchemeEntry {
        &GC_DC
    }

    fn workers(&self) -> usize {
        self.workers
    }

    fn partitions(&self) -> usize {
        self.workers
    }

    fn stored(&self, worker: usize) -> &[usize] {
        &self.stored[worker]
    }

    fn plan_round(&mut self, ctx: &RoundContext<'_>) -> RoundPlan {
        let mut plan = RoundPlan::default();
        self.plan_round_into(ctx, &mut plan);
        plan
    }

    fn plan_round_into(&mut self, ctx: &RoundContext<'_>, plan: &mut RoundPlan) {
        if ctx.straggling.is_none() && ctx.rates.is_none() {
            self.last.clone_from(&self.initial);
        } else {
            let states = WorkerStates {
                straggling: ctx.straggling,
                rates: ctx.rates,
                threshold: self.threshold,
            };
            self.policy
                .cluster(&self.assignment, &states, &mut self.last);
            let swaps = self.last.swaps() as u64;
            self.totals.informed += 1;
            self.totals.conflicts += self.last.conflicts.len() as u64;
            self.totals.swaps += swaps;
            self.totals.repairs += self.last.conflicts.len() as u64 - swaps;
        }
        self.totals.rounds += 1;
        // Worker w takes the task of its position in its cluster.
        plan.tasks.truncate(self.workers);
        for (p, members) in self.last.members.iter().enumerate() {
            for (i, &w) in members.iter().enumerate() {
                let task = &self.slot_tasks[p][i];
                match plan.tasks.get_mut(w) {
                    Some(t) => t.clone_from(task),
                    None => {
                        // Only while the plan grows to K tasks: in worker order.
                        plan.tasks.resize_with(w + 1, || WorkerTask {
                            compute: Vec::new(),
                            messages: Vec::new(),
                        });
                        plan.tasks[w].clone_from(task);
                    }
                }
            }
        }
        plan.clusters.clone_from(&self.last.members);
    }

    fn tracker<'a>(&'a self, plan: &'a RoundPlan) -> Box<dyn ArrivalTracker + 'a> {
        Box::new(DynamicTracker {
            plan,
            counter: GroupCounter::new(
                self.workers,
                plan.clusters.len(),
                self.decoder
                    .cyclic_code()
                    .expect("gc-dc decodes cyclic groups")
                    .needed(),
            ),
        })
    }

    fn decode(&mut self, plan: &RoundPlan, received: &[Arrival]) -> Decoding {
        let layout = PlanLayout {
            plan,
            partitions: &self.partitions,
        };
        let mut decoding = self.decoder.decode_groups(&layout, self.workers, received);
        if self.deadline.is_some() {
            // Partial recovery: the clusters that decoded are enough.
            decoding.decodable = !decoding.recovered.is_empty();
        }
        decoding
    }

    fn deadline(&self) -> Option<f64> {
        self.deadline
    }

    fn partial_recovery(&self) -> bool {
        self.deadline.is_some()
    }

    fn degenerate(&self) -> Option<String> {
        let a = &self.assignment;
        (0..self.workers)
            .all(|k| a.clusters_of(k).len() == 1)
            .then(|| {
                "every worker can join one cluster only (scheme.clusters_per_worker = 1): no cluster \
                 is ever re-formed, a static clustering as gc-sc's"
                    .to_string()
            })
    }

    /// As GC-SC in any one clustering: r − 1 stragglers whatever they are (the
    /// dynamic clustering does not improve the worst case, §V), P(r − 1) when
    /// they fall one cluster's share each, which the clustering aims at.
    fn tolerance(&self) -> Tolerance {
        let code = self
            .decoder
            .cyclic_code()
            .expect("gc-dc decodes cyclic groups");
        let spare = code.size() - code.needed();
        Tolerance {
            worst: spare,
            best: spare * self.assignment.clusters(),
        }
    }

    /// P(l − r + 1) workers of load r (000 §VI), as for GC-SC; none with a
    /// deadline (partial recovery can end an iteration earlier).
    fn lower_bound(&self) -> Option<LowerBound> {
        if self.deadline.is_some() {
            return None;
        }
        let code = self
            .decoder
            .cyclic_code()
            .expect("gc-dc decodes cyclic groups");
        Some(LowerBound {
            load: code.load(),
            workers: self.assignment.clusters() * code.needed(),
        })
    }
}

/// GC-DC's clustering state (assignment matrix, last clustering) for
/// `check` and `explain`; `None` for every other scheme.
pub fn dynamic_clustering(scheme: &dyn Scheme) -> Option<&DynamicClustering> {
    scheme.as_any().downcast_ref::<DynamicClustering>()
}
