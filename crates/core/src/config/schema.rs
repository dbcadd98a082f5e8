//! The config schema: every section of DESIGN.md, unknown keys rejected.
//!
//! Every key has a default (see `configs/reference.toml`, which a test keeps in
//! step with this file). Units are in the names where a key has one; model time
//! (the papers' unitless time) is mapped to wall time by
//! `straggler.time_unit_ms`.

use serde::{Deserialize, Serialize};

/// The whole configuration of a run, simulation or check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// K: number of workers (MPI ranks 1..K; rank 0 is the master).
    pub workers: usize,
    /// Master seed: every random stream (codes, stragglers, data, sampling) derives from it.
    pub seed: u64,
    pub scheme: SchemeConfig,
    pub straggler: StragglerConfig,
    pub data: DataConfig,
    pub model: ModelConfig,
    pub train: TrainConfig,
    pub output: OutputConfig,
    pub simulate: SimulateConfig,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            workers: 12,
            seed: 1,
            scheme: SchemeConfig::default(),
            straggler: StragglerConfig::default(),
            data: DataConfig::default(),
            model: ModelConfig::default(),
            train: TrainConfig::default(),
            output: OutputConfig::default(),
            simulate: SimulateConfig::default(),
        }
    }
}

/// Which gradient coding scheme runs (`scheme.kind`); DESIGN.md's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SchemeKind {
    /// Naive baseline: one partition per worker, wait for all K.
    Uncoded,
    /// Naive placement, the master uses the fastest `wait_for` workers.
    IgnoreStragglers,
    /// Tandon et al. fractional repetition (§3.1).
    GcFrac,
    /// Tandon et al. cyclic repetition with a random MDS matrix (§3.2, Alg. 1-2).
    GcCyclic,
    /// Gradient coding with static clustering (003 §III-C, 000 §II-B).
    GcSc,
    /// Gradient coding with dynamic clustering (000 §IV-V).
    GcDc,
    /// Ignore-straggler gradient coding: sum-coded workers, maximum independent set decoding (004).
    IsGc,
    /// Gradient coding with multi-message communication (003 §III).
    GcMmc,
    /// Uncoded multi-message communication: every partial gradient sent as computed (003 §IV).
    UcMmc,
    /// Tandon et al.'s two-stage scheme for alpha-partial stragglers (001 §4).
    GcPartial,
}

impl SchemeKind {
    /// Every kind this build knows, in the order `check` lists them.
    pub const ALL: [SchemeKind; 10] = [
        SchemeKind::Uncoded,
        SchemeKind::IgnoreStragglers,
        SchemeKind::GcFrac,
        SchemeKind::GcCyclic,
        SchemeKind::GcSc,
        SchemeKind::GcDc,
        SchemeKind::IsGc,
        SchemeKind::GcMmc,
        SchemeKind::UcMmc,
        SchemeKind::GcPartial,
    ];

    /// The name used in configs, JSON and traces.
    pub fn name(self) -> &'static str {
        match self {
            SchemeKind::Uncoded => "uncoded",
            SchemeKind::IgnoreStragglers => "ignore-stragglers",
            SchemeKind::GcFrac => "gc-frac",
            SchemeKind::GcCyclic => "gc-cyclic",
            SchemeKind::GcSc => "gc-sc",
            SchemeKind::GcDc => "gc-dc",
            SchemeKind::IsGc => "is-gc",
            SchemeKind::GcMmc => "gc-mmc",
            SchemeKind::UcMmc => "uc-mmc",
            SchemeKind::GcPartial => "gc-partial",
        }
    }

    /// The `[scheme]` keys this kind reads (besides `kind`).
    pub fn keys(self) -> &'static [&'static str] {
        const DECODE: [&str; 3] = ["code_draws", "decode_tolerance", "decode_cache_entries"];
        match self {
            SchemeKind::Uncoded => &[],
            SchemeKind::IgnoreStragglers => &["wait_for", "deadline"],
            SchemeKind::GcFrac => &["load"],
            SchemeKind::GcCyclic => &["load", DECODE[0], DECODE[1], DECODE[2]],
            SchemeKind::GcSc => &[
                "load",
                "clusters",
                "assignment",
                DECODE[0],
                DECODE[1],
                DECODE[2],
            ],
            SchemeKind::GcDc => &[
                "load",
                "clusters",
                "clusters_per_worker",
                "assignment",
                "straggler_threshold",
                "clustering",
                DECODE[0],
                DECODE[1],
                DECODE[2],
            ],
            SchemeKind::IsGc => &[
                "load",
                "placement",
                "groups",
                "c1",
                "c2",
                "wait_for",
                "deadline",
            ],
            SchemeKind::GcMmc => &[
                "load",
                "clusters",
                "assignment",
                "design",
                "order",
                "orders",
                DECODE[0],
                DECODE[1],
                DECODE[2],
            ],
            SchemeKind::UcMmc => &["load"],
            SchemeKind::GcPartial => &["load", "slowdown", DECODE[0], DECODE[1], DECODE[2]],
        }
    }
}

impl std::fmt::Display for SchemeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The per-iteration clustering policy of gc-dc (`scheme.clustering`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClusteringKind {
    /// The two-phase greedy of 000 §V (Algorithm 1), with an augmenting-path repair.
    Greedy,
}

/// `[scheme]`: the gradient code and its parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchemeConfig {
    pub kind: SchemeKind,
    /// r: partitions a worker computes per iteration (Tandon's s = r - 1 stragglers).
    pub load: usize,
    /// P: number of clusters (gc-sc, gc-dc); must divide `workers`.
    pub clusters: usize,
    /// Explicit cluster assignment: rows of 1-based worker ids, one column per cluster
    /// (gc-sc: l rows; gc-dc: n·l rows, column p = the workers that may join cluster p).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assignment: Option<Vec<Vec<usize>>>,
    /// w: the master stops waiting after the fastest w workers (ignore-stragglers, is-gc).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_for: Option<usize>,
    /// Model time after which the master decodes what has arrived (ignore-stragglers, is-gc).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<f64>,
    /// Data placement of is-gc: fractional, cyclic or hybrid repetition (004 §IV-VI).
    pub placement: Placement,
    /// g: groups of the hybrid repetition placement HR(n, c1, c2); must divide `workers`.
    pub groups: usize,
    /// c1: rows of HR(n, c1, c2) taken from the per-group placement (004 §VI-B).
    pub c1: usize,
    /// c2: rows of HR(n, c1, c2) taken from cyclic repetition; c1 + c2 = load.
    pub c2: usize,
    /// Code design of gc-mmc (003 §III-A, III-B, III-D).
    pub design: MmcDesign,
    /// m: order of the correlated gc-mmc messages, 1 <= m <= load.
    pub order: usize,
    /// Order vector of the uncorrelated and hybrid gc-mmc designs (one order per message).
    pub orders: Vec<usize>,
    /// alpha of gc-partial: a partial straggler is at most this many times slower (> 1).
    pub slowdown: f64,
    /// Random MDS matrices drawn per cyclic code; the best conditioned is kept (1 = Algorithm 2 as published).
    pub code_draws: usize,
    /// An arrival set decodes only if |a·B_W - 1|_inf is at most this.
    pub decode_tolerance: f64,
    /// Decoding coefficients cached per arrival set, at most this many sets per code.
    pub decode_cache_entries: usize,
    /// n: clusters each gc-dc worker may join (it stores n·l partitions);
    /// default: the smallest n with Lemma 1, n > P(K-1)/(2K).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clusters_per_worker: Option<usize>,
    /// tau: with estimated rates, gc-dc treats a worker with rate < tau as a straggler (1 / model time).
    pub straggler_threshold: f64,
    /// gc-dc's per-iteration clustering policy.
    pub clustering: ClusteringKind,
}

impl Default for SchemeConfig {
    fn default() -> Self {
        Self {
            kind: SchemeKind::GcCyclic,
            load: 2,
            clusters: 1,
            assignment: None,
            wait_for: None,
            deadline: None,
            placement: Placement::Cr,
            groups: 1,
            c1: 1,
            c2: 1,
            design: MmcDesign::Correlated,
            order: 2,
            orders: Vec::new(),
            slowdown: 2.0,
            code_draws: 8,
            decode_tolerance: 1e-8,
            decode_cache_entries: 4096,
            clusters_per_worker: None,
            straggler_threshold: 0.5,
            clustering: ClusteringKind::Greedy,
        }
    }
}

/// Data placement of is-gc (`scheme.placement`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// Fractional repetition: n/c groups of c workers storing the same c partitions (004 §III).
    Fr,
    /// Cyclic repetition: worker i stores partitions i..i+c-1 (mod n) (004 §III, §V).
    Cr,
    /// Hybrid repetition HR(n, c1, c2) with `groups` groups (004 §VI).
    Hr,
}

/// Code design of gc-mmc (`scheme.design`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MmcDesign {
    /// Order-m cyclic code; a worker sends load - m + 1 codewords (003 §III-A).
    Correlated,
    /// Virtual workers with an order vector, one codeword per message (003 §III-B).
    Uncorrelated,
    /// Uncorrelated messages, and the plain sum once a worker has computed everything (003 §III-D).
    Hybrid,
}

/// Straggler model (`straggler.model`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StragglerModel {
    /// No injected delay: every computation takes its real time.
    None,
    /// r computations take r·(alpha + Exp(mu)) (000 eq. 21, 003 eq. 5).
    ShiftedExponential,
    /// Two-state Markov chain per worker, rates mu_fast / mu_slow (000 §VI-A).
    GilbertElliott,
    /// Two-state chain with per-worker rates mu_f ~ U(0, rate_max], mu_s = mu_f / slow_factor (000 §VI-B1).
    GilbertElliottHeterogeneous,
    /// Per-worker rates re-drawn from U(0, rate_max] with probability p per iteration (000 eq. 22).
    TimeVarying,
    /// Shifted exponential plus an Exp(1 / delay_mean) delay before sending on some workers (001 §5, 004 §VIII-B).
    ExtraDelay,
    /// Replay of measured completion times from a CSV file (rounds x workers).
    Trace,
}

impl StragglerModel {
    /// The name used in configs.
    pub fn name(self) -> &'static str {
        match self {
            StragglerModel::None => "none",
            StragglerModel::ShiftedExponential => "shifted-exponential",
            StragglerModel::GilbertElliott => "gilbert-elliott",
            StragglerModel::GilbertElliottHeterogeneous => "gilbert-elliott-heterogeneous",
            StragglerModel::TimeVarying => "time-varying",
            StragglerModel::ExtraDelay => "extra-delay",
            StragglerModel::Trace => "trace",
        }
    }

    /// The `[straggler]` keys this model reads (besides `model` and the
    /// runtime keys `state_info`, `mode`, `time_unit_ms` that every model uses).
    pub fn keys(self) -> &'static [&'static str] {
        match self {
            StragglerModel::None => &[],
            StragglerModel::ShiftedExponential => &["alpha", "mu"],
            StragglerModel::GilbertElliott => &[
                "alpha",
                "mu_fast",
                "mu_slow",
                "switch_probability",
                "initial_stragglers",
            ],
            StragglerModel::GilbertElliottHeterogeneous => &[
                "alpha",
                "rate_max",
                "slow_factor",
                "switch_probability",
                "initial_stragglers",
                "rate_threshold",
            ],
            StragglerModel::TimeVarying => &[
                "alpha",
                "rate_max",
                "switch_probability",
                "initial_stragglers",
                "rate_threshold",
            ],
            StragglerModel::ExtraDelay => &[
                "alpha",
                "mu",
                "delayed_workers",
                "delayed_count",
                "delay_mean",
            ],
            StragglerModel::Trace => &["trace_file", "trace_columns", "trace_threshold"],
        }
    }
}

/// What the master knows of the straggler state when it plans an iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StateInfo {
    /// The state of iteration t-1, learned from feedback (000 §V).
    Imperfect,
    /// The state of iteration t itself (000 §VI, Fig. 4(b)).
    Perfect,
}

/// How the MPI runtime produces straggling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StragglerMode {
    /// Workers sleep until their sampled completion time.
    Emulate,
    /// Nothing injected; straggling inferred from measured compute times.
    Measured,
}

/// `[straggler]`: the delay model and how the runtime applies it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StragglerConfig {
    pub model: StragglerModel,
    /// alpha: minimum duration of one partition computation (model time).
    pub alpha: f64,
    /// mu: rate of the exponential part (1 / model time).
    pub mu: f64,
    pub state_info: StateInfo,
    pub mode: StragglerMode,
    /// Wall-clock milliseconds per model time unit in emulation.
    pub time_unit_ms: f64,
    /// mu_f: fast-state rate of gilbert-elliott (1 / model time).
    pub mu_fast: f64,
    /// mu_s: slow-state rate of gilbert-elliott (1 / model time).
    pub mu_slow: f64,
    /// p: probability that a worker switches state (Gilbert-Elliott) or re-draws its rate (time-varying) at the start of an iteration.
    pub switch_probability: f64,
    /// Workers that start in the slow state, chosen at random per trial (Gilbert-Elliott, time-varying).
    pub initial_stragglers: usize,
    /// Largest fast rate of the heterogeneous models: rates are drawn from U(0, rate_max] (1 / model time).
    pub rate_max: f64,
    /// mu_s = mu_f / slow_factor in gilbert-elliott-heterogeneous.
    pub slow_factor: f64,
    /// tau: a worker whose rate is below this straggles (heterogeneous models; 1 / model time).
    pub rate_threshold: f64,
    /// extra-delay: 1-based workers delayed in every iteration.
    pub delayed_workers: Vec<usize>,
    /// extra-delay: workers drawn at random in every iteration to be delayed.
    pub delayed_count: usize,
    /// extra-delay: mean of the exponential delay (model time).
    pub delay_mean: f64,
    /// trace: CSV of completion times, one row per round, one column per worker.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_file: Option<String>,
    /// trace: 1-based data columns replayed as workers 1..K (default the first K).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_columns: Option<Vec<usize>>,
    /// trace: a worker straggles in a round when its time exceeds this multiple of the round's median.
    pub trace_threshold: f64,
}

impl Default for StragglerConfig {
    fn default() -> Self {
        Self {
            model: StragglerModel::ShiftedExponential,
            alpha: 0.01,
            mu: 10.0,
            state_info: StateInfo::Imperfect,
            mode: StragglerMode::Emulate,
            time_unit_ms: 100.0,
            mu_fast: 10.0,
            mu_slow: 0.1,
            switch_probability: 0.05,
            initial_stragglers: 0,
            rate_max: 5.0,
            slow_factor: 10.0,
            rate_threshold: 0.5,
            delayed_workers: Vec::new(),
            delayed_count: 0,
            delay_mean: 1.0,
            trace_file: None,
            trace_columns: None,
            trace_threshold: 2.0,
        }
    }
}

/// Where the training data comes from (`data.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DataKind {
    /// Gaussian features, y = X·theta* + noise (000 §VI).
    SyntheticLinear,
    /// Two-Gaussian mixture with logistic labels (001 §5).
    SyntheticLogistic,
    /// A LIBSVM file (`label index:value ...`, 1-based indices).
    Libsvm,
    /// A CSV file with a header; the first column is the target.
    Csv,
}

/// `[data]`: the training and test data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DataConfig {
    pub kind: DataKind,
    /// Training samples (synthetic); split into `workers` equal partitions.
    pub train_samples: usize,
    /// Test samples (synthetic).
    pub test_samples: usize,
    /// d: features (synthetic).
    pub features: usize,
    /// Standard deviation of the label noise (synthetic-linear).
    pub noise_std: f64,
    /// Training file (libsvm, csv).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Test file (libsvm, csv); without it, `test_fraction` of the training file is held out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_path: Option<String>,
    /// Share of a file's samples held out for testing when there is no `test_path`.
    pub test_fraction: f64,
    /// Scale every feature to zero mean and unit variance (statistics of the training set).
    pub standardize: bool,
    /// Largest dense sample matrix (training or test set, samples × features × 8 bytes)
    /// a process may build, in MiB; larger data sets are refused before anything is allocated.
    pub max_matrix_mib: usize,
}

impl Default for DataConfig {
    fn default() -> Self {
        Self {
            kind: DataKind::SyntheticLinear,
            train_samples: 2000,
            test_samples: 400,
            features: 1000,
            noise_std: 1.0,
            path: None,
            test_path: None,
            test_fraction: 0.2,
            standardize: true,
            max_matrix_mib: 4096,
        }
    }
}

/// The loss (`model.loss`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Loss {
    LeastSquares,
    Logistic,
}

/// `[model]`: the learning problem.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelConfig {
    pub loss: Loss,
    /// L2 regularisation weight lambda.
    pub l2: f64,
}

impl Default for ModelConfig {
    fn default() -> Self {
        Self {
            loss: Loss::LeastSquares,
            l2: 0.0,
        }
    }
}

/// The optimiser (`train.optimizer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Optimizer {
    /// Plain gradient descent.
    Gd,
    /// Nesterov's accelerated gradient (001 §5).
    Nesterov,
}

/// The learning-rate schedule (`train.schedule`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Schedule {
    /// eta_t = learning_rate.
    Constant,
    /// eta_t = learning_rate / (1 + t / decay_iterations) (001 Fig. 7's c1 / (t + c2)).
    InverseTime,
}

/// `[train]`: the optimisation loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrainConfig {
    pub iterations: usize,
    pub optimizer: Optimizer,
    pub learning_rate: f64,
    pub schedule: Schedule,
    /// c2 of the inverse-time schedule, in iterations.
    pub decay_iterations: f64,
    /// Evaluate train and test loss every this many iterations.
    pub eval_every: usize,
    /// Give up (an error) when no result arrives for this long while the scheme still needs one.
    pub result_timeout_s: f64,
}

impl Default for TrainConfig {
    fn default() -> Self {
        Self {
            iterations: 100,
            optimizer: Optimizer::Gd,
            learning_rate: 0.1,
            schedule: Schedule::Constant,
            decay_iterations: 100.0,
            eval_every: 1,
            result_timeout_s: 300.0,
        }
    }
}

/// `[output]`: traces and progress.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OutputConfig {
    /// HDF5 trace written by `train` (and by `simulate --out` when given no path).
    pub trace: String,
    /// Plain progress line every this many iterations when stderr is not a terminal.
    pub progress_every: usize,
    /// Write a resumable snapshot (model, momentum, records) to the trace every this many iterations.
    pub snapshot_every: usize,
}

impl Default for OutputConfig {
    fn default() -> Self {
        Self {
            trace: "results/gradcode.h5".to_string(),
            progress_every: 10,
            snapshot_every: 10,
        }
    }
}

/// `[simulate]`: the Monte Carlo simulator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimulateConfig {
    /// Independent trials (each with fresh straggler randomness).
    pub trials: usize,
    /// Iterations per trial.
    pub iterations: usize,
    /// Schemes compared side by side on common random numbers; empty = `scheme.kind` alone.
    pub compare: Vec<CompareEntry>,
    /// The name of the `compare` entry that improvements are measured against; default its first entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
}

/// One scheme of `simulate.compare`:
///
/// - a `scheme.kind` name (`"gc-sc"`): that scheme with the config's `[scheme]` keys;
/// - `"gc"`: Tandon's cyclic gradient code over all K workers (gc-cyclic with
///   the config's load), which the clustered papers (000, 003) call GC;
/// - a variant `{ name = "gc-mmc-1", kind = "gc-mmc", set = { clusters = 4 } }`:
///   the scheme `kind` with the `[scheme]` keys of `set` changed, reported as
///   `name`, so two settings of one kind can be compared (003 Fig. 1's
///   GC-MMC-1 and GC-MMC-2, 004's FR, CR and HR).
#[derive(Debug, Clone, PartialEq)]
pub enum CompareEntry {
    /// The scheme `scheme.kind` names, with the config's parameters.
    Kind(SchemeKind),
    /// Tandon's cyclic GC over all K workers, whatever `scheme.kind` is.
    Gc,
    /// A named scheme with some `[scheme]` keys changed.
    Variant(SchemeVariant),
}

/// A named setting of a scheme in `simulate.compare`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchemeVariant {
    /// Its name in tables, JSON and traces (letters, digits, `-`, `_`, `.`).
    pub name: String,
    pub kind: SchemeKind,
    /// `[scheme]` keys that differ from the config's, e.g. `{ clusters = 4, load = 5 }`.
    #[serde(default)]
    pub set: toml::Table,
}

impl CompareEntry {
    /// The scheme kind that is built for this entry.
    pub fn kind(&self) -> SchemeKind {
        match self {
            CompareEntry::Kind(k) => *k,
            CompareEntry::Gc => SchemeKind::GcCyclic,
            CompareEntry::Variant(v) => v.kind,
        }
    }

    /// The name in configs, tables, JSON and traces.
    pub fn name(&self) -> &str {
        match self {
            CompareEntry::Kind(k) => k.name(),
            CompareEntry::Gc => "gc",
            CompareEntry::Variant(v) => &v.name,
        }
    }
}

impl std::fmt::Display for CompareEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for CompareEntry {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            CompareEntry::Variant(v) => v.serialize(serializer),
            other => serializer.serialize_str(other.name()),
        }
    }
}

impl<'de> Deserialize<'de> for CompareEntry {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = CompareEntry;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a scheme kind, \"gc\", or a table { name, kind, set }")
            }

            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<CompareEntry, E> {
                use serde::de::IntoDeserializer;
                if name == "gc" {
                    return Ok(CompareEntry::Gc);
                }
                let kind: Result<SchemeKind, serde::de::value::Error> =
                    SchemeKind::deserialize(name.into_deserializer());
                kind.map(CompareEntry::Kind).map_err(|e| {
                    // "unknown variant `x`, expected one of ..." with `gc` among the choices.
                    E::custom(e.to_string().replacen(
                        "expected one of",
                        "expected `gc` or one of",
                        1,
                    ))
                })
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<CompareEntry, A::Error> {
                SchemeVariant::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(CompareEntry::Variant)
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl Default for SimulateConfig {
    fn default() -> Self {
        Self {
            trials: 30,
            iterations: 400,
            compare: Vec::new(),
            baseline: None,
        }
    }
}
