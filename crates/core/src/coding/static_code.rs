//! Static linear gradient codes: the same codeword for a worker in every iteration.
//!
//! One type covers the naive baseline, ignoring stragglers, and Tandon et al.'s
//! fractional and cyclic repetition codes with or without static clustering,
//! because all of them are the same structure: the workers fall into groups of
//! equal size `l`, each group holds its own `l'` partitions, and inside a group
//! position `i` sends row `i` of one [`CyclicMds`] code. They differ only in
//! the groups and the code:
//!
//! | kind | groups | code in a group | paper |
//! |---|---|---|---|
//! | `uncoded` | K groups of one worker | identity (l = r = 1) | 001 §5 baseline |
//! | `ignore-stragglers` | as `uncoded`, the master keeps the fastest w | identity | 001 §5, 004 |
//! | `gc-frac` | K/r blocks of r replicas | all-ones (l = r) | 001 §3.1, eq. (9) |
//! | `gc-cyclic` | one group of K workers | cyclic MDS, load r | 001 §3.2, Alg. 2 |
//! | `gc-sc` | P clusters of l = K/P | cyclic MDS, load r | 003 §III-C, 000 §II-B |

use std::sync::Arc;

use rand::Rng;
use serde::{Deserialize, Serialize};

use super::fixed_plan::{FixedPlan, fixed_plan_methods};
use super::group::{GroupCounter, GroupDecoder, GroupLayout};
use super::registry::{BuildArgs, NoParams, SchemeEntry};
use super::{
    Arrival, ArrivalTracker, CodeOptions, CodeParams, Codeword, CodewordId, CodingError, CyclicMds,
    DEFAULT_CLUSTERS, DEFAULT_LOAD, Decoding, LowerBound, Message, RoundPlan, Scheme, Solution,
    Tolerance, WaitPolicy, WorkerTask,
};
use crate::rng::Stream;

/// `uncoded`: no parameters.
pub static UNCODED: SchemeEntry = SchemeEntry::new::<NoParams>(
    "uncoded",
    "naive baseline (Tandon et al. §5): worker k computes partition k, the master waits for all K",
    build_uncoded,
);

/// `ignore-stragglers`: the parameters of its wait policy.
pub static IGNORE_STRAGGLERS: SchemeEntry = SchemeEntry::new::<IgnoreStragglersParams>(
    "ignore-stragglers",
    "naive placement, the master sums what the fastest `wait_for` workers (or those before `deadline`) send (Tandon et al. §5; Su et al.'s IS-SGD)",
    build_ignore_stragglers,
);

/// `gc-frac`: the load.
pub static GC_FRAC: SchemeEntry = SchemeEntry::new::<GcFracParams>(
    "gc-frac",
    "fractional repetition: K/r blocks of r replicas, one worker per block decodes (Tandon et al. §3.1, eq. (9))",
    build_gc_frac,
);

/// `gc-cyclic`: the load and the code options.
pub static GC_CYCLIC: SchemeEntry = SchemeEntry::new::<GcCyclicParams>(
    "gc-cyclic",
    "cyclic repetition with a random MDS code, any K − r + 1 workers decode (Tandon et al. §3.2, Alg. 1-2)",
    build_gc_cyclic,
);

/// `gc-sc`: load, clusters, assignment and the code options.
pub static GC_SC: SchemeEntry = SchemeEntry::new::<GcScParams>(
    "gc-sc",
    "cyclic MDS code in each of P static clusters of l = K/P, l − r + 1 per cluster decode (Ozfatura et al. §III-C; Buyukates et al. §II-B)",
    build_gc_sc,
);

/// The `[scheme]` keys of `ignore-stragglers`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IgnoreStragglersParams {
    /// w: the master stops after the fastest w workers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_for: Option<usize>,
    /// Model time after which the master decodes what has arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<f64>,
}

/// The `[scheme]` keys of `gc-frac`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GcFracParams {
    /// r: replicas per block, partitions per worker; r | K.
    pub load: usize,
}

impl Default for GcFracParams {
    fn default() -> Self {
        Self { load: DEFAULT_LOAD }
    }
}

/// The `[scheme]` keys of `gc-cyclic`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GcCyclicParams {
    /// r: partitions per worker; tolerates r − 1 stragglers.
    pub load: usize,
    /// The shared code options (`code_draws`, `decode_tolerance`,
    /// `decode_cache_entries`: [`CodeParams`]).
    pub code: CodeParams,
}

impl Default for GcCyclicParams {
    fn default() -> Self {
        Self {
            load: DEFAULT_LOAD,
            code: CodeParams::default(),
        }
    }
}

/// The `[scheme]` keys of `gc-sc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GcScParams {
    /// r: partitions per worker, 1 <= r <= l.
    pub load: usize,
    /// P: clusters of l = K / P workers; P | K.
    pub clusters: usize,
    /// l rows × P columns of 1-based worker ids, column p = cluster p;
    /// default: `default_assignment` (000 eq. (5) generalised).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assignment: Option<Vec<Vec<usize>>>,
    /// The shared code options (`code_draws`, `decode_tolerance`,
    /// `decode_cache_entries`: [`CodeParams`]).
    pub code: CodeParams,
    /// Model time after which the master decodes the clusters that have
    /// l − r + 1 codewords and updates with the mean over their partitions
    /// (partial recovery); none: wait for every cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<f64>,
}

impl Default for GcScParams {
    fn default() -> Self {
        Self {
            load: DEFAULT_LOAD,
            clusters: DEFAULT_CLUSTERS,
            assignment: None,
            code: CodeParams::default(),
            deadline: None,
        }
    }
}

fn build_uncoded(args: &BuildArgs<'_>) -> Result<Box<dyn Scheme>, CodingError> {
    Ok(Box::new(StaticCode::uncoded(args.workers)?))
}

fn build_ignore_stragglers(args: &BuildArgs<'_>) -> Result<Box<dyn Scheme>, CodingError> {
    let p: IgnoreStragglersParams = args.params()?;
    let policy = WaitPolicy::new(args.workers, p.wait_for, p.deadline, "ignore-stragglers")?;
    Ok(Box::new(StaticCode::ignore_stragglers_with(
        args.workers,
        policy,
    )?))
}

fn build_gc_frac(args: &BuildArgs<'_>) -> Result<Box<dyn Scheme>, CodingError> {
    let p: GcFracParams = args.params()?;
    Ok(Box::new(StaticCode::fractional_repetition(
        args.workers,
        p.load,
    )?))
}

fn build_gc_cyclic(args: &BuildArgs<'_>) -> Result<Box<dyn Scheme>, CodingError> {
    let p: GcCyclicParams = args.params()?;
    let options = p.code.options()?;
    let mut rng = args.rng(Stream::Code);
    Ok(Box::new(StaticCode::cyclic_repetition(
        args.workers,
        p.load,
        options,
        &mut rng,
    )?))
}

fn build_gc_sc(args: &BuildArgs<'_>) -> Result<Box<dyn Scheme>, CodingError> {
    let p: GcScParams = args.params()?;
    let options = p.code.options()?;
    let mut rng = args.rng(Stream::Code);
    Ok(Box::new(
        StaticCode::static_clustering(
            args.workers,
            p.clusters,
            p.load,
            p.assignment.as_deref(),
            options,
            &mut rng,
        )?
        .with_deadline(p.deadline)?,
    ))
}

#[derive(Debug, Clone)]
struct Group {
    /// Workers in position order: position i sends row i of the code.
    workers: Vec<usize>,
    /// Global ids of the group's local partitions 0..l'.
    partitions: Vec<usize>,
}

/// A static clustered linear gradient code (see the module docs for the kinds).
#[derive(Debug)]
pub struct StaticCode {
    /// Entry, K, partitions, what every worker stores, the plan.
    fixed: FixedPlan,
    /// The code of every group, with the coefficient cache.
    decoder: GroupDecoder,
    layout: StaticLayout,
    /// Partial recovery: the master stops after this many workers.
    wait_for: Option<usize>,
    /// Partial recovery: model time after which the master decodes what arrived.
    deadline: Option<f64>,
}

/// The fixed groups of a static code.
#[derive(Debug)]
struct StaticLayout {
    groups: Vec<Group>,
    /// worker → (group, position).
    slot: Vec<(usize, usize)>,
}

impl GroupLayout for StaticLayout {
    fn groups(&self) -> usize {
        self.groups.len()
    }

    fn slot(&self, worker: usize) -> (usize, usize) {
        self.slot[worker]
    }

    fn worker(&self, group: usize, position: usize) -> usize {
        self.groups[group].workers[position]
    }

    fn partitions(&self, group: usize) -> &[usize] {
        &self.groups[group].partitions
    }
}

fn check_workers(workers: usize) -> Result<(), CodingError> {
    if workers == 0 {
        return Err(CodingError::invalid("workers", 0, "must be at least 1"));
    }
    Ok(())
}

impl StaticCode {
    /// The naive scheme: worker k stores partition k; the master waits for all K.
    /// Limits: K >= 1.
    pub fn uncoded(workers: usize) -> Result<Self, CodingError> {
        check_workers(workers)?;
        Ok(Self::singletons(&UNCODED, workers, None))
    }

    /// Ignore stragglers (001 §5; 004's IS-SGD): naive placement, the master
    /// sums the fastest `wait_for` partial gradients. Limits: 1 <= w <= K.
    pub fn ignore_stragglers(workers: usize, wait_for: usize) -> Result<Self, CodingError> {
        check_workers(workers)?;
        if wait_for == 0 || wait_for > workers {
            return Err(CodingError::invalid(
                "scheme.wait_for",
                wait_for,
                format!("must be between 1 and workers = {workers}"),
            ));
        }
        Ok(Self::singletons(
            &IGNORE_STRAGGLERS,
            workers,
            Some(wait_for),
        ))
    }

    /// Ignore stragglers under a wait policy: the fastest `wait_for` workers, a
    /// deadline (the round engine decodes what arrived by then), or both,
    /// whichever comes first. Limits: those of [`WaitPolicy::new`].
    /// The code with a deadline (model time, finite and > 0): at the
    /// deadline the master decodes the groups that have enough codewords and
    /// updates with their partitions (partial recovery). `None` leaves it as
    /// it is.
    pub fn with_deadline(mut self, deadline: Option<f64>) -> Result<Self, CodingError> {
        super::check_deadline(deadline)?;
        if deadline.is_some() {
            self.deadline = deadline;
        }
        Ok(self)
    }

    pub fn ignore_stragglers_with(workers: usize, policy: WaitPolicy) -> Result<Self, CodingError> {
        check_workers(workers)?;
        let mut code = Self::singletons(&IGNORE_STRAGGLERS, workers, policy.wait_for());
        code.deadline = policy.deadline();
        Ok(code)
    }

    fn singletons(kind: &'static SchemeEntry, workers: usize, wait_for: Option<usize>) -> Self {
        let groups = (0..workers)
            .map(|k| Group {
                workers: vec![k],
                partitions: vec![k],
            })
            .collect();
        Self::assemble(
            kind,
            workers,
            CyclicMds::repetition(1),
            groups,
            wait_for,
            CodeOptions::default(),
        )
    }

    /// Fractional repetition (001 §3.1, eq. (9)): K/r blocks of r partitions,
    /// each block stored whole by r workers (worker `t·K/r + b` holds block b),
    /// which send the plain sum; the master needs one worker per block.
    /// Limits: 1 <= r <= K and r | K.
    pub fn fractional_repetition(workers: usize, load: usize) -> Result<Self, CodingError> {
        check_workers(workers)?;
        if load == 0 || load > workers {
            return Err(CodingError::invalid(
                "scheme.load",
                load,
                format!("must be between 1 and workers = {workers}"),
            ));
        }
        if workers % load != 0 {
            return Err(CodingError::invalid(
                "scheme.load",
                load,
                format!("does not divide workers = {workers} (gc-frac needs r | K)"),
            ));
        }
        let blocks = workers / load;
        let groups = (0..blocks)
            .map(|b| Group {
                workers: (0..load).map(|t| t * blocks + b).collect(),
                partitions: (b * load..(b + 1) * load).collect(),
            })
            .collect();
        let code = CyclicMds::repetition(load);
        Ok(Self::assemble(
            &GC_FRAC,
            workers,
            code,
            groups,
            None,
            CodeOptions::default(),
        ))
    }

    /// Cyclic repetition (001 §3.2, Algorithms 1-2): worker k stores partitions
    /// k..k+r-1 (mod K) and sends a random-MDS combination; any K-r+1 decode.
    /// Limits: 1 <= r <= K.
    pub fn cyclic_repetition(
        workers: usize,
        load: usize,
        options: CodeOptions,
        rng: &mut impl Rng,
    ) -> Result<Self, CodingError> {
        check_workers(workers)?;
        if load == 0 || load > workers {
            return Err(CodingError::invalid(
                "scheme.load",
                load,
                format!("must be between 1 and workers = {workers}"),
            ));
        }
        let code = CyclicMds::best_of(workers, load, options.draws(), rng)?;
        let groups = vec![Group {
            workers: (0..workers).collect(),
            partitions: (0..workers).collect(),
        }];
        Ok(Self::assemble(
            &GC_CYCLIC, workers, code, groups, None, options,
        ))
    }

    /// Gradient coding with static clustering (003 §III-C, 000 §II-B): P
    /// clusters of l = K/P workers, each a cyclic repetition code of load r
    /// over its own l partitions; the master needs l-r+1 codewords from every
    /// cluster. `assignment` is the l × P worker assignment matrix (0-based
    /// ids; column p lists cluster p in position order); without it the
    /// default of `default_assignment` is used. All clusters share one random
    /// code matrix. Limits: P >= 1, P | K, 1 <= r <= l.
    pub fn static_clustering(
        workers: usize,
        clusters: usize,
        load: usize,
        assignment: Option<&[Vec<usize>]>,
        options: CodeOptions,
        rng: &mut impl Rng,
    ) -> Result<Self, CodingError> {
        check_workers(workers)?;
        let size = crate::cluster::cluster_size(workers, clusters)?;
        if load == 0 || load > size {
            return Err(CodingError::invalid(
                "scheme.load",
                load,
                format!("must be between 1 and the cluster size workers / clusters = {size}"),
            ));
        }
        let matrix = match assignment {
            Some(rows) => parse_assignment(rows, workers, clusters)?,
            None => default_assignment(workers, clusters),
        };
        let code = CyclicMds::best_of(size, load, options.draws(), rng)?;
        let groups = (0..clusters)
            .map(|p| Group {
                workers: matrix.iter().map(|row| row[p]).collect(),
                partitions: (p * size..(p + 1) * size).collect(),
            })
            .collect();
        Ok(Self::assemble(&GC_SC, workers, code, groups, None, options))
    }

    fn assemble(
        kind: &'static SchemeEntry,
        workers: usize,
        code: CyclicMds,
        groups: Vec<Group>,
        wait_for: Option<usize>,
        options: CodeOptions,
    ) -> Self {
        let mut slot = vec![(usize::MAX, usize::MAX); workers];
        let mut tasks = vec![
            WorkerTask {
                compute: Vec::new(),
                messages: Vec::new()
            };
            workers
        ];
        let mut stored = vec![Vec::new(); workers];
        let partitions = groups.iter().map(|g| g.partitions.len()).sum();
        for (g, group) in groups.iter().enumerate() {
            for (i, &w) in group.workers.iter().enumerate() {
                slot[w] = (g, i);
                let terms: Vec<(usize, f64)> = code
                    .row(i)
                    .into_iter()
                    .map(|(local, c)| (group.partitions[local], c))
                    .collect();
                let compute: Vec<usize> = terms.iter().map(|&(p, _)| p).collect();
                let mut mine = compute.clone();
                mine.sort_unstable();
                stored[w] = mine;
                tasks[w] = WorkerTask {
                    compute,
                    messages: vec![Message {
                        after: code.load(),
                        codeword: Codeword {
                            id: CodewordId { group: g, index: i },
                            terms,
                        },
                    }],
                };
            }
        }
        debug_assert!(
            slot.iter().all(|&(g, _)| g != usize::MAX),
            "every worker is in a group"
        );
        let clusters = if *kind == GC_SC || *kind == GC_FRAC {
            groups.iter().map(|g| g.workers.clone()).collect()
        } else {
            Vec::new()
        };
        Self {
            fixed: FixedPlan::new(kind, partitions, stored, RoundPlan { tasks, clusters }),
            decoder: GroupDecoder::cyclic(code, options),
            layout: StaticLayout { groups, slot },
            wait_for,
            deadline: None,
        }
    }

    /// The code every group uses.
    pub fn code(&self) -> &CyclicMds {
        self.decoder
            .cyclic_code()
            .expect("static codes decode cyclic groups")
    }

    /// Coefficients for received `positions` of one group (ascending, distinct), cached.
    pub fn solve(&mut self, positions: &[usize]) -> Option<Arc<Solution>> {
        self.decoder.solve(positions)
    }
}

/// The default l × P assignment: row i holds the workers iP .. iP+P-1, in
/// order on even rows and rotated left by one on odd rows. At K = 12, P = 4
/// this is eq. (5) of 000 exactly; the rotation keeps a cluster from taking
/// the same position of every group of P consecutive workers.
pub fn default_assignment(workers: usize, clusters: usize) -> Vec<Vec<usize>> {
    let rows = workers / clusters;
    (0..rows)
        .map(|i| {
            (0..clusters)
                .map(|p| i * clusters + (p + i % 2) % clusters)
                .collect()
        })
        .collect()
}

/// Validate a 1-based l × P assignment matrix and return it 0-based.
pub(crate) fn parse_assignment(
    rows: &[Vec<usize>],
    workers: usize,
    clusters: usize,
) -> Result<Vec<Vec<usize>>, CodingError> {
    let size = workers / clusters;
    let shape = |what: String| CodingError::invalid("scheme.assignment", format!("{rows:?}"), what);
    if rows.len() != size {
        return Err(shape(format!(
            "has {} rows, but a cluster has workers / clusters = {size} workers",
            rows.len()
        )));
    }
    let mut seen = vec![false; workers];
    let mut out = Vec::with_capacity(size);
    for (i, row) in rows.iter().enumerate() {
        if row.len() != clusters {
            return Err(shape(format!(
                "row {} has {} entries, not clusters = {clusters}",
                i + 1,
                row.len()
            )));
        }
        let mut zero_based = Vec::with_capacity(clusters);
        for &w in row {
            if w == 0 || w > workers {
                return Err(shape(format!("names worker {w}, outside 1..={workers}")));
            }
            if seen[w - 1] {
                return Err(shape(format!("names worker {w} twice")));
            }
            seen[w - 1] = true;
            zero_based.push(w - 1);
        }
        out.push(zero_based);
    }
    Ok(out)
}

struct StaticTracker<'a> {
    code: &'a StaticCode,
    counter: GroupCounter,
}

impl ArrivalTracker for StaticTracker<'_> {
    fn arrive(&mut self, arrival: Arrival) -> bool {
        let slot = &self.code.layout.slot;
        self.counter
            .arrive(arrival.worker, || slot[arrival.worker].0);
        match self.code.wait_for {
            Some(w) => self.counter.distinct() >= w,
            None => self.counter.all_groups_done(),
        }
    }

    fn recoverable(&self) -> bool {
        self.counter.any_group_done()
    }
}

impl Scheme for StaticCode {
    fn decode_tolerance(&self) -> Option<f64> {
        Some(self.decoder.tolerance())
    }

    fixed_plan_methods!(fixed);

    fn tracker<'a>(&'a self, _plan: &'a RoundPlan) -> Box<dyn ArrivalTracker + 'a> {
        Box::new(StaticTracker {
            code: self,
            counter: GroupCounter::new(
                self.fixed.workers(),
                self.layout.groups.len(),
                self.code().needed(),
            ),
        })
    }

    fn decode(&mut self, _plan: &RoundPlan, received: &[Arrival]) -> Decoding {
        let mut decoding = self
            .decoder
            .decode_groups(&self.layout, self.fixed.workers(), received);
        if self.partial_recovery() {
            // The master may update with whatever arrived.
            decoding.decodable = !decoding.recovered.is_empty();
        }
        decoding
    }

    fn deadline(&self) -> Option<f64> {
        self.deadline
    }

    fn partial_recovery(&self) -> bool {
        *self.fixed.kind() == IGNORE_STRAGGLERS || self.deadline.is_some()
    }

    fn static_plan(&self) -> bool {
        true
    }

    /// gc-cyclic (P = 1) and gc-sc: P(l − r + 1) workers of load r (000 §VI).
    fn lower_bound(&self) -> Option<LowerBound> {
        // A deadline ends iterations with partial recovery: no full-recovery bound.
        ((*self.fixed.kind() == GC_CYCLIC || *self.fixed.kind() == GC_SC)
            && self.deadline.is_none())
        .then(|| {
            let code = self.code();
            LowerBound {
                load: code.load(),
                workers: self.layout.groups.len() * code.needed(),
            }
        })
    }

    fn tolerance(&self) -> Tolerance {
        if let Some(w) = self.wait_for {
            let t = self.fixed.workers() - w;
            return Tolerance { worst: t, best: t };
        }
        if self.partial_recovery() {
            // Deadline only: the master updates with whatever arrived.
            let t = self.fixed.workers() - 1;
            return Tolerance { worst: t, best: t };
        }
        let code = self.code();
        let spare = code.size() - code.needed();
        Tolerance {
            worst: spare,
            best: spare * self.layout.groups.len(),
        }
    }
}
