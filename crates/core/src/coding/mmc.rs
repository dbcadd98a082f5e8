//! Gradient coding with multi-message communication (GC-MMC) and its uncoded
//! baseline (UC-MMC): Ozfatura, Gündüz, Ulukus (003 §III).
//!
//! The K workers fall into P clusters of l = K/P workers (P = 1: no
//! clustering), each cluster owning l partitions (003 §III-C; the assignment
//! of workers to clusters is gc-sc's). Worker position i of a cluster computes
//! its r local partitions in the order i, i+1, ..., i+r−1 (mod l) and sends
//! several coded partial gradients as its computations progress, so the
//! partial work of slow workers counts. A message is identified by its
//! codeword id (cluster, row of the cluster's encoding matrix): a codeword
//! received twice counts once. The master needs enough distinct codewords in
//! every cluster:
//!
//! | `scheme.kind` / `design` | message t of position i | a cluster needs |
//! |---|---|---|
//! | `gc-mmc` correlated (§III-A), order m | after m+t computations (t = 0..r−m): row i+t of the load-m cyclic code | l − m + 1 distinct codewords |
//! | `gc-mmc` uncorrelated (§III-B), order vector [m_0, ...] | after m_t computations: its own codeword over its first m_t partitions | l·L − Σ m_t + 1 distinct (L = orders) |
//! | `gc-mmc` hybrid (§III-D) | uncorrelated for the orders below r, then after r: the plain sum | one plain sum, or the uncorrelated count |
//! | `uc-mmc` (§IV, the correlated design with m = 1, P = 1) | after t+1 computations: partition i+t itself | every partition once |
//!
//! Limits: P >= 1, P | K, 1 <= r <= l; correlated: 1 <= m <= r;
//! uncorrelated and hybrid: distinct orders in 1..=r; hybrid: r = l (every
//! worker stores its whole cluster, so a worker that completes sends the
//! cluster's sum, which is 003's fractional repetition inside a cluster).
//!
//! # The uncorrelated code
//!
//! 003 builds it as a polynomial (Reed-Solomon-like) code (its ref. [11]): the
//! virtual-worker mask has exactly h = l·L − Σ m_t zeros in every column
//! (cyclic symmetry), so with distinct real points α_q, one per row q,
//! column j of B holds f_j(α_q) for the monic f_j(x) = Π (x − α_z) over the h
//! rows z that do not hold partition j. B then has the mask's zeros, and any
//! h + 1 distinct rows S decode: a_q = 1/Π_{k in S, k != q} (α_q − α_k)
//! extracts the leading coefficient, which is 1 for every f_j, so a·B_S = 1.
//! The points are equispaced in [−1, 1], spread over the rows (see
//! [`UncorrelatedCode::new`]) and each row is scaled to max|B(q, ·)| = 1. Real
//! polynomial codes are ill-conditioned as h grows: the code measures its f64
//! decoding accuracy on sampled decodable sets ([`Accuracy`]), `check` prints
//! it and says plainly when it is not exact to 1e-6 relative, and
//! [`Scheme::exact_decoding`] lets `train` refuse such a config.

use faer::Mat;
use rand::Rng;
use rand::RngExt;
use rand::seq::SliceRandom;

use super::fixed_plan::{FixedPlan, fixed_plan_methods};
use super::registry::{BuildArgs, SchemeEntry};
use super::static_code::{default_assignment, parse_assignment};
use super::{
    Accuracy, Arrival, ArrivalTracker, CodeOptions, CodeParams, Codeword, CodewordId, CodingError,
    CyclicMds, Decoding, GroupDecoder, GroupDecoding, Message, RoundPlan, Scheme, Tolerance,
    WorkerTask,
};
use super::{DEFAULT_CLUSTERS, DEFAULT_LOAD};
use crate::rng::Stream;
use serde::{Deserialize, Serialize};

/// `gc-mmc`: the clusters, the design and its orders, the code options.
pub static GC_MMC: SchemeEntry = SchemeEntry::new::<GcMmcParams>(
    "gc-mmc",
    "multi-message clustered gradient codes, designs correlated, uncorrelated and hybrid: enough distinct codewords in every cluster decode (Ozfatura et al. §III-A, B, D)",
    build_gc_mmc,
);

/// `uc-mmc`: the load.
pub static UC_MMC: SchemeEntry = SchemeEntry::new::<UcMmcParams>(
    "uc-mmc",
    "uncoded multi-message: every partial gradient sent as computed, every partition once decodes (Ozfatura et al. §IV)",
    build_uc_mmc,
);

/// Code design of gc-mmc (`scheme.design`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MmcDesign {
    /// Order-m cyclic code; a worker sends load - m + 1 codewords (003 §III-A).
    #[default]
    Correlated,
    /// Virtual workers with an order vector, one codeword per message (003 §III-B).
    Uncorrelated,
    /// Uncorrelated messages, and the plain sum once a worker has computed everything (003 §III-D).
    Hybrid,
}

/// The `[scheme]` keys of `gc-mmc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GcMmcParams {
    /// r: partitions per worker, 1 <= r <= l.
    pub load: usize,
    /// P: clusters of l = K / P workers; P | K.
    pub clusters: usize,
    /// l rows × P columns of 1-based worker ids, column p = cluster p.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assignment: Option<Vec<Vec<usize>>>,
    pub design: MmcDesign,
    /// m: order of the correlated messages, 1 <= m <= load.
    pub order: usize,
    /// The order vector of the uncorrelated and hybrid designs (one order per message).
    pub orders: Vec<usize>,
    /// The shared code options (`code_draws`, `decode_tolerance`,
    /// `decode_cache_entries`: [`CodeParams`]).
    pub code: CodeParams,
}

impl Default for GcMmcParams {
    fn default() -> Self {
        Self {
            load: DEFAULT_LOAD,
            clusters: DEFAULT_CLUSTERS,
            assignment: None,
            design: MmcDesign::Correlated,
            order: 2,
            orders: Vec::new(),
            code: CodeParams::default(),
        }
    }
}

/// The `[scheme]` keys of `uc-mmc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct UcMmcParams {
    /// r: partitions per worker, each sent as computed.
    pub load: usize,
}

impl Default for UcMmcParams {
    fn default() -> Self {
        Self { load: DEFAULT_LOAD }
    }
}

fn build_uc_mmc(args: &BuildArgs<'_>) -> Result<Box<dyn Scheme>, CodingError> {
    let p: UcMmcParams = args.params()?;
    Ok(Box::new(MultiMessageCode::uncoded(args.workers, p.load)?))
}

/// Decodable arrival sets sampled at construction to measure the accuracy of
/// the uncorrelated design.
pub const ACCURACY_SAMPLES: usize = 256;

/// The real polynomial code of the uncorrelated design for one cluster of
/// `size` positions and partitions (see the module docs).
#[derive(Debug, Clone)]
pub struct UncorrelatedCode {
    size: usize,
    orders: Vec<usize>,
    b: Mat<f64>,
    needed: usize,
}

impl UncorrelatedCode {
    /// The code for `orders` (distinct, each in 1..=size; sent in ascending
    /// order). Row `t·size + i` is message t of position i, supported on the
    /// local partitions i, ..., i + orders\[t\] − 1 (mod size).
    ///
    /// The rows get equispaced points of [−1, 1], row q at point (s·q) mod
    /// rows with s the first stride >= 7 coprime with the row count, so that
    /// the messages of one position and of neighbouring positions lie far
    /// apart. At the paper's size (l = 10, orders [6, 8, 10], 7 of 30 needed)
    /// this gave the lowest worst amplification over 3000 random decodable
    /// sets among the orderings and point sets tried: 4.0e5 (relative error
    /// 9e-12), against 7.7e5 for row order, 1.0e6 for position-major order,
    /// and 1.4e7-7.6e7 with Chebyshev points (one set failing a 1e-8 residual).
    pub fn new(size: usize, orders: &[usize]) -> Result<Self, CodingError> {
        let mut orders = orders.to_vec();
        orders.sort_unstable();
        if orders.is_empty() {
            return Err(CodingError::invalid(
                "scheme.orders",
                "[]",
                "must list at least one message order",
            ));
        }
        if orders.windows(2).any(|w| w[0] == w[1])
            || orders[0] == 0
            || orders[orders.len() - 1] > size
        {
            return Err(CodingError::invalid(
                "scheme.orders",
                format!("{orders:?}"),
                format!("must be distinct orders between 1 and {size}"),
            ));
        }
        let l = size;
        let count = orders.len();
        let rows = l * count;
        let h = rows - orders.iter().sum::<usize>();
        // Equispaced points of [-1, 1], row q at point (stride·q) mod rows.
        let stride = (7..)
            .find(|s| gcd(*s, rows) == 1)
            .expect("a coprime stride exists");
        let node = |q: usize| {
            let k = (stride * q) % rows;
            -1.0 + 2.0 * k as f64 / (rows as f64 - 1.0).max(1.0)
        };
        let holds = |q: usize, j: usize| (j + l - q % l) % l < orders[q / l];
        let mut b = Mat::<f64>::zeros(rows, l);
        for j in 0..l {
            let zeros: Vec<f64> = (0..rows).filter(|&z| !holds(z, j)).map(node).collect();
            debug_assert_eq!(zeros.len(), h, "every column has h zeros");
            for q in (0..rows).filter(|&q| holds(q, j)) {
                let x = node(q);
                b[(q, j)] = zeros.iter().map(|z| x - z).product();
            }
        }
        for q in 0..rows {
            let scale = (0..l).fold(0.0_f64, |m, j| m.max(b[(q, j)].abs()));
            for j in 0..l {
                b[(q, j)] /= scale;
            }
        }
        Ok(Self {
            size,
            orders,
            b,
            needed: h + 1,
        })
    }

    /// Positions (and partitions) of the cluster.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The orders, ascending (send order).
    pub fn orders(&self) -> &[usize] {
        &self.orders
    }

    /// Distinct messages that decode: l·L − Σ m_t + 1.
    pub fn needed(&self) -> usize {
        self.needed
    }

    /// The encoding matrix (rows: messages t·size + i; columns: local partitions).
    pub fn matrix(&self) -> &Mat<f64> {
        &self.b
    }

    /// Row of message `t` of position `i`: local partitions in computation
    /// order with their coefficients.
    pub fn row(&self, t: usize, i: usize) -> Vec<(usize, f64)> {
        let q = t * self.size + i;
        (0..self.orders[t])
            .map(|o| {
                let j = (i + o) % self.size;
                (j, self.b[(q, j)])
            })
            .collect()
    }

    /// Decode `sets` random sets of `needed()` distinct rows with random
    /// gradients (4 coordinates in [−1, 1]) and report the worst relative
    /// error and amplification against the true sum.
    pub fn measure_accuracy(&self, sets: usize, tolerance: f64, rng: &mut impl Rng) -> Accuracy {
        measure_accuracy(&self.b, self.needed, sets, tolerance, rng)
    }
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Worst f64 decoding error of `sets` random sets of `needed` rows of `b`.
fn measure_accuracy(
    b: &Mat<f64>,
    needed: usize,
    sets: usize,
    tolerance: f64,
    rng: &mut impl Rng,
) -> Accuracy {
    const DIM: usize = 4;
    let (rows, cols) = (b.nrows(), b.ncols());
    let max_abs_b = b.norm_max();
    let mut order: Vec<usize> = (0..rows).collect();
    let mut report = Accuracy {
        worst_relative_error: 0.0,
        worst_amplification: 0.0,
        sets,
        failed: 0,
    };
    for _ in 0..sets {
        order.shuffle(rng);
        let mut set = order[..needed].to_vec();
        set.sort_unstable();
        let Some(solution) = super::mds::solve_ones(b, max_abs_b, &set, needed, tolerance) else {
            report.failed += 1;
            continue;
        };
        let gradients: Vec<[f64; DIM]> = (0..cols)
            .map(|_| std::array::from_fn(|_| rng.random_range(-1.0..1.0)))
            .collect();
        let mut truth = [0.0; DIM];
        for g in &gradients {
            truth.iter_mut().zip(g).for_each(|(t, v)| *t += v);
        }
        let mut decoded = [0.0; DIM];
        for (&q, &a) in set.iter().zip(&solution.coefficients) {
            let mut message = [0.0; DIM];
            for (j, g) in gradients.iter().enumerate() {
                message
                    .iter_mut()
                    .zip(g)
                    .for_each(|(m, v)| *m += b[(q, j)] * v);
            }
            decoded
                .iter_mut()
                .zip(&message)
                .for_each(|(d, m)| *d += a * m);
        }
        let norm = truth.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
        let error = decoded
            .iter()
            .zip(&truth)
            .fold(0.0_f64, |m, (d, t)| m.max((d - t).abs()));
        let amplification = (0..cols)
            .map(|j| {
                set.iter()
                    .zip(&solution.coefficients)
                    .map(|(&q, a)| (a * b[(q, j)]).abs())
                    .sum::<f64>()
            })
            .fold(0.0_f64, f64::max);
        report.worst_relative_error = report.worst_relative_error.max(error / norm.max(1e-300));
        report.worst_amplification = report.worst_amplification.max(amplification);
    }
    report
}

/// A message of a position: (computations before it, row of the cluster's
/// code, local partitions and coefficients).
type PlannedMessage = (usize, usize, Vec<(usize, f64)>);

/// A cluster's decoding: (row, arrival) pairs entering the sum, their
/// coefficients, residual, amplification.
type ClusterSolution = (Vec<(usize, usize)>, Vec<f64>, f64, f64);

#[derive(Debug, Clone)]
struct Cluster {
    /// Workers in position order.
    workers: Vec<usize>,
    /// Global ids of the cluster's local partitions.
    partitions: Vec<usize>,
}

/// A multi-message code: gc-mmc (correlated, uncorrelated, hybrid) or uc-mmc.
#[derive(Debug, Clone)]
pub struct MultiMessageCode {
    /// Entry, K, partitions, what every worker stores, the plan.
    fixed: FixedPlan,
    design: MmcDesign,
    load: usize,
    clusters: Vec<Cluster>,
    /// The code every cluster uses.
    decoder: GroupDecoder,
    /// Coded rows of a cluster's code (the hybrid's plain sum is row `coded_rows`).
    coded_rows: usize,
    /// Distinct coded codewords that decode a cluster.
    coded_needed: usize,
    /// Hybrid: a received plain sum decodes its cluster alone.
    has_sum: bool,
    accuracy: Option<Accuracy>,
}

/// Build gc-mmc: the design picks the constructor.
fn build_gc_mmc(args: &BuildArgs<'_>) -> Result<Box<dyn Scheme>, CodingError> {
    let s: GcMmcParams = args.params()?;
    let options = s.code.options()?;
    let k = args.workers;
    let assignment = s.assignment.as_deref();
    let code = match s.design {
        MmcDesign::Correlated => {
            let mut rng = args.rng(Stream::Code);
            MultiMessageCode::correlated(
                k, s.clusters, s.load, s.order, assignment, options, &mut rng,
            )?
        }
        MmcDesign::Uncorrelated | MmcDesign::Hybrid => MultiMessageCode::uncorrelated(
            k,
            s.clusters,
            s.load,
            &s.orders,
            s.design == MmcDesign::Hybrid,
            assignment,
            options,
            &mut args.rng(Stream::MmcAccuracy),
        )?,
    };
    Ok(Box::new(code))
}

/// Cluster layout shared by the designs: P clusters of l, position i of a
/// cluster computes local partitions i, ..., i + r − 1 (mod l).
fn clusters_of(
    workers: usize,
    clusters: usize,
    load: usize,
    assignment: Option<&[Vec<usize>]>,
) -> Result<(usize, Vec<Cluster>), CodingError> {
    if workers == 0 {
        return Err(CodingError::invalid("workers", 0, "must be at least 1"));
    }
    let l = crate::cluster::cluster_size(workers, clusters)?;
    if load == 0 || load > l {
        return Err(CodingError::invalid(
            "scheme.load",
            load,
            format!("must be between 1 and the cluster size workers / clusters = {l}"),
        ));
    }
    let matrix = match assignment {
        Some(rows) => parse_assignment(rows, workers, clusters)?,
        None => default_assignment(workers, clusters),
    };
    let clusters = (0..clusters)
        .map(|p| Cluster {
            workers: matrix.iter().map(|row| row[p]).collect(),
            partitions: (p * l..(p + 1) * l).collect(),
        })
        .collect();
    Ok((l, clusters))
}

impl MultiMessageCode {
    /// Correlated design (003 §III-A): order m, each worker sends r − m + 1
    /// codewords of the load-m cyclic repetition code (Tandon's Alg. 2 with
    /// the best of `options.draws()` random matrices), per cluster.
    pub fn correlated(
        workers: usize,
        clusters: usize,
        load: usize,
        order: usize,
        assignment: Option<&[Vec<usize>]>,
        options: CodeOptions,
        rng: &mut impl Rng,
    ) -> Result<Self, CodingError> {
        let (l, clusters) = clusters_of(workers, clusters, load, assignment)?;
        if order == 0 || order > load {
            return Err(CodingError::invalid(
                "scheme.order",
                order,
                format!("must be between 1 and load = {load}"),
            ));
        }
        let code = CyclicMds::best_of(l, order, options.draws(), rng)?;
        let messages = |i: usize| -> Vec<PlannedMessage> {
            (0..=load - order)
                .map(|t| {
                    let q = (i + t) % l;
                    (order + t, q, code.row(q))
                })
                .collect()
        };
        let needed = code.needed();
        let decoder = GroupDecoder::cyclic(code.clone(), options);
        Ok(Self::assemble(
            &GC_MMC,
            MmcDesign::Correlated,
            workers,
            load,
            clusters,
            &messages,
            decoder,
            needed,
            false,
            None,
        ))
    }

    /// UC-MMC (003 §IV; its ref. \[19\]): cyclic placement over all K workers,
    /// every partial gradient sent as soon as it is computed; the master needs
    /// every partition once. It is the correlated design with m = 1, P = 1.
    /// Limits: K >= 1, 1 <= r <= K.
    pub fn uncoded(workers: usize, load: usize) -> Result<Self, CodingError> {
        let (l, clusters) = clusters_of(workers, 1, load, None)?;
        // Load 1 is the identity: no random draw is made.
        let identity = CyclicMds::new(l, 1, &mut crate::rng::stream(0, crate::rng::Stream::Code))?;
        let messages = |i: usize| -> Vec<PlannedMessage> {
            (0..load)
                .map(|t| {
                    let q = (i + t) % l;
                    (t + 1, q, vec![(q, 1.0)])
                })
                .collect()
        };
        let decoder = GroupDecoder::cyclic(identity, CodeOptions::default());
        Ok(Self::assemble(
            &UC_MMC,
            MmcDesign::Correlated,
            workers,
            load,
            clusters,
            &messages,
            decoder,
            l,
            false,
            None,
        ))
    }

    /// Uncorrelated design (003 §III-B) with order vector `orders`, or the
    /// hybrid (003 §III-D) when `hybrid`: the orders below r are uncorrelated
    /// codewords and a worker that completes all r computations sends the
    /// plain sum of its cluster. The f64 accuracy is measured on
    /// [`ACCURACY_SAMPLES`] random decodable sets drawn from `sampler`.
    #[allow(clippy::too_many_arguments)]
    pub fn uncorrelated(
        workers: usize,
        clusters: usize,
        load: usize,
        orders: &[usize],
        hybrid: bool,
        assignment: Option<&[Vec<usize>]>,
        options: CodeOptions,
        sampler: &mut impl Rng,
    ) -> Result<Self, CodingError> {
        let (l, clusters) = clusters_of(workers, clusters, load, assignment)?;
        if orders.is_empty() {
            return Err(CodingError::invalid(
                "scheme.orders",
                "[]",
                "must list at least one message order",
            ));
        }
        let mut sorted = orders.to_vec();
        sorted.sort_unstable();
        if sorted.windows(2).any(|w| w[0] == w[1])
            || sorted[0] == 0
            || sorted[sorted.len() - 1] > load
        {
            return Err(CodingError::invalid(
                "scheme.orders",
                format!("{orders:?}"),
                format!("must be distinct orders between 1 and load = {load}"),
            ));
        }
        if hybrid && load != l {
            return Err(CodingError::invalid(
                "scheme.load",
                load,
                format!(
                    "must equal the cluster size workers / clusters = {l} for design = hybrid (a worker that completes sends its cluster's plain sum, 003 §III-D)"
                ),
            ));
        }
        let coded: Vec<usize> = if hybrid {
            sorted.iter().copied().filter(|&o| o < load).collect()
        } else {
            sorted
        };
        let code = if coded.is_empty() {
            None
        } else {
            Some(UncorrelatedCode::new(l, &coded)?)
        };
        let coded_rows = code.as_ref().map_or(0, |c| c.matrix().nrows());
        let coded_needed = code.as_ref().map_or(usize::MAX, |c| c.needed());
        let mut b = Mat::<f64>::zeros(coded_rows + usize::from(hybrid), l);
        if let Some(c) = &code {
            b.as_mut()
                .submatrix_mut(0, 0, coded_rows, l)
                .copy_from(c.matrix());
        }
        if hybrid {
            for j in 0..l {
                b[(coded_rows, j)] = 1.0;
            }
        }
        let accuracy = code
            .as_ref()
            .map(|c| c.measure_accuracy(ACCURACY_SAMPLES, options.tolerance(), sampler));
        let messages = |i: usize| -> Vec<PlannedMessage> {
            let mut out: Vec<PlannedMessage> = Vec::new();
            if let Some(c) = &code {
                for (t, &o) in c.orders().iter().enumerate() {
                    out.push((o, t * l + i, c.row(t, i)));
                }
            }
            if hybrid {
                out.push((
                    load,
                    coded_rows,
                    (0..l).map(|o| ((i + o) % l, 1.0)).collect(),
                ));
            }
            out
        };
        let decoder = GroupDecoder::matrix(b, coded_needed.min(coded_rows.max(1)), options);
        Ok(Self::assemble(
            &GC_MMC,
            if hybrid {
                MmcDesign::Hybrid
            } else {
                MmcDesign::Uncorrelated
            },
            workers,
            load,
            clusters,
            &messages,
            decoder,
            coded_needed,
            hybrid,
            accuracy,
        ))
    }

    /// `messages(i)`: (after, row, local terms) of position i's messages.
    #[allow(clippy::too_many_arguments)]
    fn assemble(
        kind: &'static SchemeEntry,
        design: MmcDesign,
        workers: usize,
        load: usize,
        clusters: Vec<Cluster>,
        messages: &dyn Fn(usize) -> Vec<PlannedMessage>,
        decoder: GroupDecoder,
        coded_needed: usize,
        has_sum: bool,
        accuracy: Option<Accuracy>,
    ) -> Self {
        let coded_rows = decoder.rows() - usize::from(has_sum);
        let mut tasks = vec![
            WorkerTask {
                compute: Vec::new(),
                messages: Vec::new(),
            };
            workers
        ];
        let mut stored = vec![Vec::new(); workers];
        for (p, cluster) in clusters.iter().enumerate() {
            let l = cluster.partitions.len();
            for (i, &w) in cluster.workers.iter().enumerate() {
                let compute: Vec<usize> =
                    (0..load).map(|o| cluster.partitions[(i + o) % l]).collect();
                let mut mine = compute.clone();
                mine.sort_unstable();
                stored[w] = mine;
                let messages = messages(i)
                    .into_iter()
                    .map(|(after, row, terms)| Message {
                        after,
                        codeword: Codeword {
                            id: CodewordId {
                                group: p,
                                index: row,
                            },
                            terms: terms
                                .into_iter()
                                .map(|(j, c)| (cluster.partitions[j], c))
                                .collect(),
                        },
                    })
                    .collect();
                tasks[w] = WorkerTask { compute, messages };
            }
        }
        let partitions = clusters.iter().map(|c| c.partitions.len()).sum();
        let plan_clusters = if clusters.len() > 1 {
            clusters.iter().map(|c| c.workers.clone()).collect()
        } else {
            Vec::new()
        };
        let plan = RoundPlan {
            tasks,
            clusters: plan_clusters,
        };
        Self {
            fixed: FixedPlan::new(kind, partitions, stored, plan),
            design,
            load,
            clusters,
            decoder,
            coded_rows,
            coded_needed,
            has_sum,
            accuracy,
        }
    }

    /// The design (uc-mmc reports `Correlated`: it is the order-1 correlated design).
    pub fn design(&self) -> MmcDesign {
        self.design
    }

    /// Distinct coded codewords a cluster needs (usize::MAX: the hybrid with
    /// no coded orders, which needs a plain sum).
    pub fn coded_needed(&self) -> usize {
        self.coded_needed
    }

    /// Messages a worker sends per iteration at most.
    pub fn messages_per_worker(&self) -> usize {
        self.fixed
            .plan()
            .tasks
            .first()
            .map_or(0, |t| t.messages.len())
    }

    fn codeword(&self, plan: &RoundPlan, a: Arrival) -> CodewordId {
        let task = &plan.tasks[a.worker];
        assert!(
            a.message < task.messages.len(),
            "arrival {a:?}: worker {} sends {} messages",
            a.worker,
            task.messages.len()
        );
        task.messages[a.message].codeword.id
    }
}

struct MmcTracker<'a> {
    code: &'a MultiMessageCode,
    plan: &'a RoundPlan,
    rows: usize,
    seen: Vec<bool>,
    count: Vec<usize>,
    done: Vec<bool>,
    clusters_done: usize,
}

impl ArrivalTracker for MmcTracker<'_> {
    fn arrive(&mut self, arrival: Arrival) -> bool {
        let id = self.code.codeword(self.plan, arrival);
        let (p, q) = (id.group, id.index);
        if !std::mem::replace(&mut self.seen[p * self.rows + q], true) && !self.done[p] {
            let complete = if self.code.has_sum && q == self.code.coded_rows {
                true
            } else {
                self.count[p] += 1;
                self.count[p] >= self.code.coded_needed
            };
            if complete {
                self.done[p] = true;
                self.clusters_done += 1;
            }
        }
        self.clusters_done == self.code.clusters.len()
    }
}

impl Scheme for MultiMessageCode {
    fn decode_tolerance(&self) -> Option<f64> {
        Some(self.decoder.tolerance())
    }

    fixed_plan_methods!(fixed);

    fn tracker<'a>(&'a self, plan: &'a RoundPlan) -> Box<dyn ArrivalTracker + 'a> {
        let rows = self.decoder.rows();
        let p = self.clusters.len();
        Box::new(MmcTracker {
            code: self,
            plan,
            rows,
            seen: vec![false; p * rows],
            count: vec![0; p],
            done: vec![false; p],
            clusters_done: 0,
        })
    }

    fn decode(&mut self, plan: &RoundPlan, received: &[Arrival]) -> Decoding {
        let rows = self.decoder.rows();
        // Distinct codewords per cluster: (row, index of its first arrival).
        let mut per_cluster: Vec<Vec<(usize, usize)>> = vec![Vec::new(); self.clusters.len()];
        let mut seen = vec![false; self.clusters.len() * rows];
        for (idx, &a) in received.iter().enumerate() {
            assert!(
                a.worker < self.fixed.workers(),
                "arrival {a:?}: no such worker"
            );
            let id = self.codeword(plan, a);
            if !std::mem::replace(&mut seen[id.group * rows + id.index], true) {
                per_cluster[id.group].push((id.index, idx));
            }
        }
        let mut weights = vec![0.0; received.len()];
        let mut recovered = Vec::new();
        let mut groups = Vec::with_capacity(self.clusters.len());
        let (mut residual, mut amplification) = (0.0_f64, 0.0_f64);
        for (p, mut arrivals) in per_cluster.into_iter().enumerate() {
            arrivals.sort_unstable();
            let sum = arrivals
                .iter()
                .find(|&&(q, _)| self.has_sum && q == self.coded_rows)
                .copied();
            let coded = arrivals.len() - usize::from(sum.is_some());
            // (arrivals entering the sum, their coefficients, residual, amplification)
            let solved: Option<ClusterSolution> = if let Some(s) = sum {
                Some((vec![s], vec![1.0], 0.0, 1.0))
            } else if coded >= self.coded_needed {
                let positions: Vec<usize> = arrivals.iter().map(|&(q, _)| q).collect();
                self.decoder.solve(&positions).map(|s| {
                    (
                        arrivals.clone(),
                        s.coefficients.clone(),
                        s.residual,
                        s.amplification,
                    )
                })
            } else {
                None
            };
            let cluster = &self.clusters[p];
            let workers: Vec<usize> = arrivals.iter().map(|&(_, i)| received[i].worker).collect();
            let needed = if self.coded_needed == usize::MAX {
                1
            } else {
                self.coded_needed
            };
            let mut report = GroupDecoding {
                group: p,
                positions: arrivals.iter().map(|&(q, _)| q).collect(),
                workers,
                needed,
                decodable: solved.is_some(),
                coefficients: Vec::new(),
                residual: f64::NAN,
                amplification: f64::NAN,
            };
            if let Some((used, coefficients, res, amp)) = solved {
                let mut full = vec![0.0; arrivals.len()];
                for (&(q, idx), &c) in used.iter().zip(&coefficients) {
                    weights[idx] = c;
                    let k = arrivals
                        .iter()
                        .position(|&(r, _)| r == q)
                        .expect("used ⊆ arrivals");
                    full[k] = c;
                }
                recovered.extend_from_slice(&cluster.partitions);
                residual = residual.max(res);
                amplification = amplification.max(amp);
                report.coefficients = full;
                report.residual = res;
                report.amplification = amp;
            }
            groups.push(report);
        }
        recovered.sort_unstable();
        Decoding {
            decodable: groups.iter().all(|g| g.decodable),
            weights,
            recovered,
            residual,
            amplification,
            groups,
            approximate: false,
        }
    }

    fn tolerance(&self) -> Tolerance {
        let l = self.clusters[0].partitions.len();
        let p = self.clusters.len();
        let r = self.load;
        let per_worker = self.messages_per_worker();
        // Workers (sending everything) needed per cluster in the worst and best case.
        let (worst, best) = if self.has_sum {
            (1, 1)
        } else {
            match self.design {
                MmcDesign::Correlated => {
                    // Consecutive positions send overlapping codewords: s + per_worker − 1
                    // distinct from s of them; spread ones send per_worker each.
                    let needed = self.coded_needed;
                    (
                        (needed + 1).saturating_sub(per_worker).max(1),
                        needed.div_ceil(per_worker),
                    )
                }
                _ => {
                    let s = self.coded_needed.div_ceil(per_worker);
                    (s, s)
                }
            }
        };
        debug_assert!(worst <= l && r <= l);
        Tolerance {
            worst: l - worst,
            best: p * (l - best),
        }
    }

    fn accuracy(&self) -> Option<&Accuracy> {
        self.accuracy.as_ref()
    }
}
