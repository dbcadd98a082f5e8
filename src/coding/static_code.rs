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

use std::collections::HashMap;
use std::sync::Arc;

use rand::Rng;

use super::{
    Arrival, ArrivalTracker, CodeOptions, Codeword, CodewordId, CodingError, CyclicMds, Decoding,
    GroupDecoding, Message, RoundContext, RoundPlan, Scheme, Solution, Tolerance, WorkerTask,
};
use crate::config::SchemeKind;

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
    kind: SchemeKind,
    workers: usize,
    partitions: usize,
    code: CyclicMds,
    groups: Vec<Group>,
    /// worker → (group, position).
    slot: Vec<(usize, usize)>,
    stored: Vec<Vec<usize>>,
    plan: RoundPlan,
    /// Partial recovery: the master stops after this many workers.
    wait_for: Option<usize>,
    options: CodeOptions,
    /// Coefficients per arrival set (positions as a bitset); `None` = not decodable.
    cache: HashMap<Vec<u64>, Option<Arc<Solution>>>,
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
        Ok(Self::singletons(SchemeKind::Uncoded, workers, None))
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
            SchemeKind::IgnoreStragglers,
            workers,
            Some(wait_for),
        ))
    }

    fn singletons(kind: SchemeKind, workers: usize, wait_for: Option<usize>) -> Self {
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
            SchemeKind::GcFrac,
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
            SchemeKind::GcCyclic,
            workers,
            code,
            groups,
            None,
            options,
        ))
    }

    /// Gradient coding with static clustering (003 §III-C, 000 §II-B): P
    /// clusters of l = K/P workers, each a cyclic repetition code of load r
    /// over its own l partitions; the master needs l-r+1 codewords from every
    /// cluster. `assignment` is the l × P worker assignment matrix (0-based
    /// ids; column p lists cluster p in position order); without it the
    /// default of [`default_assignment`] is used. All clusters share one random
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
        let size = cluster_size(workers, clusters)?;
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
        Ok(Self::assemble(
            SchemeKind::GcSc,
            workers,
            code,
            groups,
            None,
            options,
        ))
    }

    fn assemble(
        kind: SchemeKind,
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
        let clusters = match kind {
            SchemeKind::GcSc | SchemeKind::GcFrac => {
                groups.iter().map(|g| g.workers.clone()).collect()
            }
            _ => Vec::new(),
        };
        Self {
            kind,
            workers,
            partitions,
            code,
            groups,
            slot,
            stored,
            plan: RoundPlan { tasks, clusters },
            wait_for,
            options,
            cache: HashMap::new(),
        }
    }

    /// The code every group uses.
    pub fn code(&self) -> &CyclicMds {
        &self.code
    }

    /// Coefficients for received `positions` of one group (ascending, distinct), cached.
    pub fn solve(&mut self, positions: &[usize]) -> Option<Arc<Solution>> {
        let mut key = vec![0u64; self.code.size().div_ceil(64)];
        for &p in positions {
            key[p / 64] |= 1 << (p % 64);
        }
        if let Some(hit) = self.cache.get(&key) {
            return hit.clone();
        }
        let solution = self
            .code
            .solve(positions, self.options.tolerance())
            .map(Arc::new);
        if self.cache.len() >= self.options.cache_entries() {
            // Bounded memory: start over rather than track recency.
            self.cache.clear();
        }
        self.cache.insert(key, solution.clone());
        solution
    }
}

/// l = K / P, checking P >= 1 and P | K.
pub(crate) fn cluster_size(workers: usize, clusters: usize) -> Result<usize, CodingError> {
    if clusters == 0 {
        return Err(CodingError::invalid(
            "scheme.clusters",
            0,
            "must be at least 1",
        ));
    }
    if workers % clusters != 0 {
        return Err(CodingError::invalid(
            "scheme.clusters",
            clusters,
            format!("does not divide workers = {workers}"),
        ));
    }
    Ok(workers / clusters)
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
    seen: Vec<bool>,
    per_group: Vec<usize>,
    groups_done: usize,
    distinct: usize,
}

impl StaticTracker<'_> {
    fn sufficient(&self) -> bool {
        match self.code.wait_for {
            Some(w) => self.distinct >= w,
            None => self.groups_done == self.code.groups.len(),
        }
    }
}

impl ArrivalTracker for StaticTracker<'_> {
    fn arrive(&mut self, arrival: Arrival) -> bool {
        let w = arrival.worker;
        if !self.seen[w] {
            self.seen[w] = true;
            self.distinct += 1;
            let g = self.code.slot[w].0;
            self.per_group[g] += 1;
            if self.per_group[g] == self.code.code.needed() {
                self.groups_done += 1;
            }
        }
        self.sufficient()
    }
}

impl Scheme for StaticCode {
    fn kind(&self) -> SchemeKind {
        self.kind
    }

    fn workers(&self) -> usize {
        self.workers
    }

    fn partitions(&self) -> usize {
        self.partitions
    }

    fn stored(&self, worker: usize) -> &[usize] {
        &self.stored[worker]
    }

    fn plan_round(&mut self, _ctx: &RoundContext<'_>) -> RoundPlan {
        self.plan.clone()
    }

    fn tracker<'a>(&'a self, _plan: &'a RoundPlan) -> Box<dyn ArrivalTracker + 'a> {
        Box::new(StaticTracker {
            code: self,
            seen: vec![false; self.workers],
            per_group: vec![0; self.groups.len()],
            groups_done: 0,
            distinct: 0,
        })
    }

    fn decode(&mut self, _plan: &RoundPlan, received: &[Arrival]) -> Decoding {
        // Positions received per group, with the index of the first arrival of each.
        let mut per_group: Vec<Vec<(usize, usize)>> = vec![Vec::new(); self.groups.len()];
        let mut seen = vec![false; self.workers];
        for (idx, a) in received.iter().enumerate() {
            assert!(
                a.worker < self.workers && a.message == 0,
                "arrival {a:?} is not a message of this static code"
            );
            if std::mem::replace(&mut seen[a.worker], true) {
                continue; // a duplicate counts once and gets weight 0
            }
            let (g, pos) = self.slot[a.worker];
            per_group[g].push((pos, idx));
        }
        let needed = self.code.needed();
        let mut weights = vec![0.0; received.len()];
        let mut recovered = Vec::new();
        let mut groups = Vec::with_capacity(self.groups.len());
        let (mut residual, mut amplification) = (0.0_f64, 0.0_f64);
        for (g, mut arrivals) in per_group.into_iter().enumerate() {
            arrivals.sort_unstable();
            let positions: Vec<usize> = arrivals.iter().map(|&(p, _)| p).collect();
            let solution = if positions.is_empty() {
                None
            } else {
                self.solve(&positions)
            };
            let group = &self.groups[g];
            let workers: Vec<usize> = positions.iter().map(|&p| group.workers[p]).collect();
            let mut report = GroupDecoding {
                group: g,
                positions,
                workers,
                needed,
                decodable: solution.is_some(),
                coefficients: Vec::new(),
                residual: f64::NAN,
                amplification: f64::NAN,
            };
            if let Some(s) = solution {
                for (&(_, idx), &c) in arrivals.iter().zip(&s.coefficients) {
                    weights[idx] = c;
                }
                recovered.extend_from_slice(&group.partitions);
                residual = residual.max(s.residual);
                amplification = amplification.max(s.amplification);
                report.coefficients = s.coefficients.clone();
                report.residual = s.residual;
                report.amplification = s.amplification;
            }
            groups.push(report);
        }
        recovered.sort_unstable();
        let decodable = match self.wait_for {
            Some(w) => seen.iter().filter(|&&s| s).count() >= w,
            None => groups.iter().all(|g| g.decodable),
        };
        Decoding {
            decodable,
            weights,
            recovered,
            residual,
            amplification,
            groups,
        }
    }

    fn static_plan(&self) -> bool {
        true
    }

    fn tolerance(&self) -> Tolerance {
        if let Some(w) = self.wait_for {
            let t = self.workers - w;
            return Tolerance { worst: t, best: t };
        }
        let spare = self.code.size() - self.code.needed();
        Tolerance {
            worst: spare,
            best: spare * self.groups.len(),
        }
    }
}
