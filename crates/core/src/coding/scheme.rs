//! The scheme interface: the [`Scheme`] trait the engine calls, the
//! arrival tracker it hands out, and a scheme's entry in the registry
//! ([`SchemeEntry`]: its name, its parameters' keys and defaults, its
//! constructor), kept beside the trait its constructor builds.

use serde::Serialize;

use std::sync::OnceLock;

use super::params::{
    BuildArgs, ParamError, SchemeParams, defaults_of, expand, field_names, resolve_params,
};
use super::{Accuracy, Arrival, CodingError, Decoding, RoundContext, RoundPlan};

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

/// A scheme as [`std::any::Any`], so that a caller that needs one scheme's
/// own state reaches it by its type (`coding::dynamic_clustering` for
/// gc-dc's) without the trait naming every scheme type.
pub trait AsAny {
    fn as_any(&self) -> &dyn std::any::Any;
}

impl<T: std::any::Any> AsAny for T {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A gradient coding scheme: it plans what every worker computes and sends
/// in an iteration, and decodes what arrived.
///
/// A scheme built by name from a config, one iteration planned, and the
/// full gradient decoded exactly from all workers but a straggler
/// (Tandon et al.'s cyclic code, load 2, tolerates one):
///
/// ```
/// use gradcode_core::coding::{self, Arrival, RoundContext};
/// let text = "workers = 4\n[scheme]\nkind = \"gc-cyclic\"\nload = 2\n";
/// let config = gradcode_core::config::parse(text, "example", &[]).unwrap().config;
/// let mut scheme = coding::build(&config).unwrap();
/// let plan = scheme.plan_round(&RoundContext::default());
/// // A made-up gradient per partition, and their sum.
/// let gradients: Vec<Vec<f64>> = (0..scheme.partitions())
///     .map(|p| vec![p as f64 + 1.0, 0.5 - p as f64])
///     .collect();
/// let sum = [1.0 + 2.0 + 3.0 + 4.0, 0.5 - 0.5 - 1.5 - 2.5];
/// // Worker 2 straggles; each other worker sends its codeword's combination.
/// let received: Vec<Arrival> = [0, 1, 3].into_iter().map(Arrival::only).collect();
/// let decoding = scheme.decode(&plan, &received);
/// assert!(decoding.decodable);
/// assert_eq!(decoding.recovered, vec![0, 1, 2, 3]);
/// let messages: Vec<Vec<f64>> = received
///     .iter()
///     .map(|a| plan.tasks[a.worker].messages[a.message].codeword.encode(&gradients))
///     .collect();
/// let refs: Vec<&[f64]> = messages.iter().map(Vec::as_slice).collect();
/// for (x, y) in decoding.combine(&refs).iter().zip(sum) {
///     assert!((x - y).abs() <= 1e-12, "{x} != {y}");
/// }
/// ```
pub trait Scheme: AsAny + Send {
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
    /// Whether f64 decoding is exact to [`EXACT_RELATIVE_ERROR`](super::EXACT_RELATIVE_ERROR): `train` refuses
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

/// A scheme's constructor: it reads its parameters from `args` and checks
/// their limits.
pub type Constructor = fn(&BuildArgs<'_>) -> Result<Box<dyn Scheme>, CodingError>;

/// One registered scheme: its name, description, parameters and constructor.
/// Made by [`SchemeEntry::new`] in the scheme's own file.
pub struct SchemeEntry {
    name: &'static str,
    description: &'static str,
    fields: fn() -> &'static [&'static str],
    /// `fields` with [`CODE_FIELD`] expanded, made on first use.
    keys: OnceLock<Vec<&'static str>>,
    defaults: fn() -> toml::Table,
    resolve: fn(&toml::Table) -> Result<toml::Table, ParamError>,
    build: Constructor,
}

impl SchemeEntry {
    /// The entry of the scheme `name` (as in `scheme.kind`) with parameters
    /// `P` and constructor `build`.
    pub const fn new<P: SchemeParams>(
        name: &'static str,
        description: &'static str,
        build: Constructor,
    ) -> Self {
        Self {
            name,
            description,
            fields: field_names::<P>,
            keys: OnceLock::new(),
            defaults: defaults_of::<P>,
            resolve: resolve_params::<P>,
            build,
        }
    }

    /// The name in configs, JSON and traces.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// One line: what the scheme does, and the paper section.
    pub fn description(&self) -> &'static str {
        self.description
    }

    /// The `[scheme]` keys it reads (besides `kind`), in declaration order
    /// (the shared code options in the place of their field).
    pub fn keys(&self) -> &[&'static str] {
        self.keys.get_or_init(|| expand((self.fields)()))
    }

    /// Whether it reads the `[scheme]` key `key`.
    pub fn declares(&self, key: &str) -> bool {
        self.keys().contains(&key)
    }

    /// Its keys with their defaults (a key without a default is absent).
    pub fn defaults(&self) -> toml::Table {
        (self.defaults)()
    }

    /// Its parameters as given in `params` (its own keys; any others are
    /// ignored), type-checked, with the defaults of the keys not given.
    pub fn resolve(&self, params: &toml::Table) -> Result<toml::Table, ParamError> {
        (self.resolve)(params)
    }

    /// Build the scheme.
    pub fn build(&self, args: &BuildArgs<'_>) -> Result<Box<dyn Scheme>, CodingError> {
        (self.build)(args)
    }
}

impl PartialEq for SchemeEntry {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for SchemeEntry {}

impl std::fmt::Debug for SchemeEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemeEntry")
            .field("name", &self.name)
            .field("keys", &self.keys())
            .finish()
    }
}

impl std::fmt::Display for SchemeEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}
