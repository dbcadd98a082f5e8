//! Gradient codes: placement, per-iteration assignment and decoding.
//!
//! A scheme is one implementation of [`Scheme`], picked by name at run time
//! through the registry ([`SCHEMES`], in `schemes.rs`: the one place that maps
//! `scheme.kind` to a type; each scheme's file declares its parameters and
//! its entry there). A
//! scheme is pure: it plans what every worker computes in an iteration
//! ([`RoundPlan`]), says when the messages received so far suffice
//! ([`ArrivalTracker`]) and turns them into decoding weights ([`Decoding`]).
//! The iteration engine (`crate::engine`: its stop rule, driver and rounds,
//! simulated or MPI) calls these and nothing else, so no scheme logic is
//! written twice.
//!
//! Worker and partition ids are 0-based here; everything a person reads
//! (config, CLI, JSON) is 1-based.

mod dynamic;
mod group;
mod isgc;
mod mds;
mod mmc;
mod partial;
pub mod registry;
mod schemes;
mod static_code;

pub use dynamic::{
    ClusteringKind, ClusteringTotals, DynamicClustering, GC_DC, GcDcParams, clustering_policy,
};
pub use group::{GroupDecoder, MAX_CACHE_BYTES};
pub use isgc::{
    IS_GC, IgnoreStragglerCode, IsGcParams, Layout as IsgcLayout, Placement, WaitPolicy,
};
pub use mds::{CyclicMds, MAX_CONSTRUCTION_WORK, STRUCTURED_MIN_SIZE, Solution};
pub use mmc::{
    ACCURACY_SAMPLES, GC_MMC, GcMmcParams, MmcDesign, MultiMessageCode, UC_MMC, UcMmcParams,
    UncorrelatedCode,
};
pub use partial::{GC_PARTIAL, GcPartialParams, PartialStragglerCode};
pub use registry::{BuildArgs, Registry, SchemeEntry, SchemeParams};
pub use schemes::SCHEMES;
pub use static_code::{
    GC_CYCLIC, GC_FRAC, GC_SC, GcCyclicParams, GcFracParams, GcScParams, IGNORE_STRAGGLERS,
    IgnoreStragglersParams, StaticCode, UNCODED,
};

use crate::config::Config;
use crate::error::InputError;
use serde::Serialize;

/// Errors of scheme construction and decoding.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CodingError {
    /// A parameter breaks the scheme's limits; `param` is its config key.
    #[error("{param} = {value} {rule}")]
    Invalid {
        param: String,
        value: String,
        rule: String,
    },
    /// A numerical failure that the parameters did not predict.
    #[error("numerical failure: {what}")]
    Numerical { what: String },
}

impl CodingError {
    pub(crate) fn invalid(
        param: &str,
        value: impl std::fmt::Display,
        rule: impl Into<String>,
    ) -> Self {
        CodingError::Invalid {
            param: param.to_string(),
            value: crate::error::compact_number(value.to_string()),
            rule: rule.into(),
        }
    }
}

impl From<CodingError> for InputError {
    fn from(e: CodingError) -> Self {
        match e {
            CodingError::Invalid { param, value, rule } => InputError::value(param, value, rule),
            CodingError::Numerical { what } => InputError::new("scheme", what),
        }
    }
}

/// The default of `scheme.load` (r), in every scheme that reads it.
pub(crate) const DEFAULT_LOAD: usize = 2;

/// The default of `scheme.clusters` (P), in every scheme that reads it.
pub(crate) const DEFAULT_CLUSTERS: usize = 1;

/// Numerical settings shared by every real-valued code (`scheme.code_draws`,
/// `scheme.decode_tolerance`, `scheme.decode_cache_entries`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CodeOptions {
    draws: usize,
    tolerance: f64,
    cache_entries: usize,
}

/// The most `scheme.code_draws`: every draw builds a whole code (a dense
/// K × K matrix, K small solves) to keep the best conditioned one, so the
/// setup time grows with the draws; 1024 draws of the K = 100, r = 10 code
/// take about a second, and the best of 8 already avoids the rare
/// near-singular draw the option exists for.
pub const MAX_CODE_DRAWS: usize = 1024;

/// The default `scheme.decode_tolerance`.
pub const DEFAULT_DECODE_TOLERANCE: f64 = 1e-8;

/// The smallest `scheme.decode_tolerance`: the residual |a·B_W − 1|_inf of
/// an f64 solve is a rounding error of at least about 1e-16 × the
/// amplification, so a tolerance below 1e-15 refuses sets that decode as
/// exactly as f64 allows.
pub const MIN_DECODE_TOLERANCE: f64 = 1e-15;

/// The most `scheme.decode_cache_entries`. Each entry holds one arrival set's
/// coefficients; whatever this says, a decoder keeps at most
/// [`MAX_CACHE_BYTES`] of them.
pub const MAX_DECODE_CACHE_ENTRIES: usize = 1 << 20;

impl CodeOptions {
    /// Limits: `1 <= draws <= MAX_CODE_DRAWS`; `MIN_DECODE_TOLERANCE <=
    /// tolerance < 1`; `1 <= cache_entries <= MAX_DECODE_CACHE_ENTRIES`.
    pub fn new(draws: usize, tolerance: f64, cache_entries: usize) -> Result<Self, CodingError> {
        if draws == 0 {
            return Err(CodingError::invalid(
                "scheme.code_draws",
                0,
                "must be at least 1",
            ));
        }
        if draws > MAX_CODE_DRAWS {
            return Err(CodingError::invalid(
                "scheme.code_draws",
                draws,
                format!(
                    "is more than {MAX_CODE_DRAWS}: every draw builds a whole code to keep the best conditioned, so the setup time grows with the draws (the default 8 already avoids a near-singular draw)"
                ),
            ));
        }
        if !(tolerance.is_finite() && tolerance > 0.0 && tolerance < 1.0) {
            return Err(CodingError::invalid(
                "scheme.decode_tolerance",
                tolerance,
                "must be in (0, 1)",
            ));
        }
        if tolerance < MIN_DECODE_TOLERANCE {
            return Err(CodingError::invalid(
                "scheme.decode_tolerance",
                tolerance,
                format!(
                    "is below {MIN_DECODE_TOLERANCE:e}: an f64 decode has a rounding residual of about 1e-16 × its amplification, so no set of a real-valued code would decode (default 1e-8)"
                ),
            ));
        }
        if cache_entries == 0 {
            return Err(CodingError::invalid(
                "scheme.decode_cache_entries",
                0,
                "must be at least 1",
            ));
        }
        if cache_entries > MAX_DECODE_CACHE_ENTRIES {
            return Err(CodingError::invalid(
                "scheme.decode_cache_entries",
                cache_entries,
                format!(
                    "is more than {MAX_DECODE_CACHE_ENTRIES} (every entry keeps one arrival set's coefficients; the default is 4096)"
                ),
            ));
        }
        Ok(Self {
            draws,
            tolerance,
            cache_entries,
        })
    }

    /// Random MDS matrices drawn per cyclic code; the best conditioned is kept.
    pub fn draws(&self) -> usize {
        self.draws
    }

    /// An arrival set decodes only if |a·B_W − 1|_inf is at most this.
    pub fn tolerance(&self) -> f64 {
        self.tolerance
    }

    /// Arrival sets whose coefficients are kept per code.
    pub fn cache_entries(&self) -> usize {
        self.cache_entries
    }
}

impl Default for CodeOptions {
    fn default() -> Self {
        Self {
            draws: 8,
            tolerance: DEFAULT_DECODE_TOLERANCE,
            cache_entries: 4096,
        }
    }
}

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

/// Incremental check of whether the arrivals so far suffice to decode.
pub trait ArrivalTracker {
    /// Record an arrival; returns whether the arrivals so far suffice.
    fn arrive(&mut self, arrival: Arrival) -> bool;
    /// Whether the arrivals so far recover at least one partition: what a
    /// partial-recovery scheme needs to decode at its deadline. True for
    /// schemes where every message recovers its own partitions (the
    /// default); a clustered code recovers a cluster only with l − r + 1 of
    /// its codewords.
    fn recoverable(&self) -> bool {
        true
    }
}

/// `scheme.deadline`'s limits: a finite model time > 0.
pub(crate) fn check_deadline(deadline: Option<f64>) -> Result<(), CodingError> {
    match deadline {
        Some(d) if !(d.is_finite() && d > 0.0) => Err(CodingError::invalid(
            "scheme.deadline",
            d,
            "must be a finite model time > 0",
        )),
        _ => Ok(()),
    }
}

/// The parameters of the lower bound of 000 §VI: the iteration cannot end
/// before the `workers`-th fastest of all K workers completes `load`
/// computations (for P clusters of l workers and load r: P(l − r + 1)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct LowerBound {
    pub load: usize,
    pub workers: usize,
}

/// How many stragglers a scheme tolerates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Tolerance {
    /// Stragglers tolerated whatever workers they are.
    pub worst: usize,
    /// Stragglers tolerated when they fall where they hurt least.
    pub best: usize,
}

/// A gradient coding scheme.
pub trait Scheme: Send {
    /// The registry entry of the scheme (`kind().name()` is its `scheme.kind`).
    fn kind(&self) -> &'static SchemeEntry;
    /// K.
    fn workers(&self) -> usize;
    /// Number of data partitions.
    fn partitions(&self) -> usize;
    /// Partitions worker `worker` stores, ascending (its memory).
    fn stored(&self, worker: usize) -> &[usize];
    /// Plan an iteration.
    fn plan_round(&mut self, ctx: &RoundContext<'_>) -> RoundPlan;
    /// Plan an iteration into `plan`, reusing its buffers (the engine's
    /// driver plans every iteration this way). The default replaces `plan`
    /// with [`plan_round`](Scheme::plan_round)'s.
    fn plan_round_into(&mut self, ctx: &RoundContext<'_>, plan: &mut RoundPlan) {
        *plan = self.plan_round(ctx);
    }
    /// A fresh tracker for an iteration planned as `plan`.
    fn tracker<'a>(&'a self, plan: &'a RoundPlan) -> Box<dyn ArrivalTracker + 'a>;
    /// Decode exactly the given arrivals of an iteration planned as `plan`.
    fn decode(&mut self, plan: &RoundPlan, received: &[Arrival]) -> Decoding;
    /// Stragglers tolerated.
    fn tolerance(&self) -> Tolerance;
    /// `scheme.decode_tolerance` of a real-valued code (the residual a
    /// decode may have); `None` for schemes that decode exactly.
    fn decode_tolerance(&self) -> Option<f64> {
        None
    }
    /// GC-DC's clustering state (assignment matrix, last clustering) for
    /// `check` and `explain`; `None` for every other scheme.
    fn dynamic_clustering(&self) -> Option<&DynamicClustering> {
        None
    }
    /// Model time after which the master stops waiting and decodes what has
    /// arrived (the engine's stop rule, `engine::StopRule`); `None`: wait for
    /// the tracker.
    fn deadline(&self) -> Option<f64> {
        None
    }
    /// Whether the master may update with a decoding that recovered only some
    /// partitions (ignore-stragglers, is-gc). For such schemes
    /// `Decoding.decodable` means "at least one partition recovered".
    fn partial_recovery(&self) -> bool {
        false
    }
    /// Measured f64 decoding accuracy; `None` when the code is exact by
    /// construction or well conditioned by design (every code but gc-mmc's
    /// uncorrelated and hybrid designs).
    fn accuracy(&self) -> Option<&Accuracy> {
        None
    }
    /// Whether f64 decoding is exact to [`EXACT_RELATIVE_ERROR`]: `train` refuses
    /// a scheme for which this is false; `simulate` needs only which sets decode.
    fn exact_decoding(&self) -> bool {
        self.accuracy().is_none_or(Accuracy::exact)
    }
    /// The lower bound LB of 000 §VI, when the scheme defines one: no code
    /// with this load and clustering can end an iteration before the
    /// `workers`-th fastest of all K workers has finished its whole task of
    /// `load` computations. `None` for schemes without such a bound.
    fn lower_bound(&self) -> Option<LowerBound> {
        None
    }
    /// True when `plan_round` returns the same plan in every iteration,
    /// whatever the context, so an engine may plan once and reuse the plan
    /// (the simulator does). Default `false`: plan every iteration.
    fn static_plan(&self) -> bool {
        false
    }
    /// Why this configuration of the scheme is a degenerate case of another
    /// (a gc-dc whose every worker can join one cluster only re-forms no
    /// cluster); `None` when it is not. `advise` drops degenerate variants.
    fn degenerate(&self) -> Option<String> {
        None
    }
}

/// Build the scheme `kind` (a registered name) with the `[scheme]` keys of
/// `config`; its constructor checks its parameters' limits. Configs from the
/// loader (`setup`) have had their keys and types checked already.
pub fn build_kind(kind: &str, config: &Config) -> Result<Box<dyn Scheme>, CodingError> {
    SCHEMES.build_kind(kind, config)
}

/// Build the scheme of `scheme.kind`.
pub fn build(config: &Config) -> Result<Box<dyn Scheme>, CodingError> {
    build_kind(config.scheme.kind.as_str(), config)
}
