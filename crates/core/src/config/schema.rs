//! The config schema: every section of docs/design.md ("The config schema"), unknown keys rejected.
//!
//! `[scheme]` is structural here (a name and a table): the schemes declare
//! their own keys (`coding::registry`). Every other key has a default (see
//! `configs/reference.toml`, which a test keeps in step with this file). Units are in the names where a key has one; model time
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
    pub runtime: RuntimeConfig,
    /// `[network]`: the communication `simulate`, `sweep`, `advise` and
    /// `explain` model (`crate::network`, `sim::delivery`). Absent (the default): none, every
    /// message reaches the master the moment its worker sends it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkConfig>,
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
            runtime: RuntimeConfig::default(),
            network: None,
        }
    }
}

/// The name of a gradient coding scheme, as `scheme.kind` and
/// `simulate.compare` give it (`gc-sc`).
///
/// The config layer does not know which names exist: the scheme registry
/// does (`coding::registry`), and the loader (`setup`) refuses a name that is
/// not registered, listing those that are.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SchemeName(String);

impl SchemeName {
    pub fn new(name: impl Into<String>) -> Self {
        Self(name.into())
    }

    /// The name as written in configs, JSON and traces.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for SchemeName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for SchemeName {
    fn from(name: &str) -> Self {
        Self::new(name)
    }
}

impl PartialEq<str> for SchemeName {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for SchemeName {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

/// The scheme `scheme.kind` names when a config does not say.
pub const DEFAULT_SCHEME: &str = "gc-cyclic";

/// The scheme `"gc"` in `simulate.compare` stands for: Tandon's cyclic
/// gradient code over all K workers.
pub const GC_SCHEME: &str = "gc-cyclic";

/// `[scheme]`: which gradient code runs, and its parameters.
///
/// Structural: `params` holds the other keys of the section as given. Each
/// scheme declares the keys it reads, their types, defaults and limits in its
/// own file (`coding::registry`); the loader (`setup`) checks the keys against
/// the registry and fills in the defaults of the schemes in use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SchemeConfig {
    pub kind: SchemeName,
    /// Every other key of `[scheme]` (`load = 2`, `clusters = 4`, ...).
    #[serde(flatten)]
    pub params: toml::Table,
}

impl Default for SchemeConfig {
    fn default() -> Self {
        Self {
            kind: SchemeName::new(DEFAULT_SCHEME),
            params: toml::Table::new(),
        }
    }
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
                "p_fast_to_slow",
                "p_slow_to_fast",
                "initial_stragglers",
            ],
            StragglerModel::GilbertElliottHeterogeneous => &[
                "alpha",
                "rate_max",
                "slow_factor",
                "switch_probability",
                "p_fast_to_slow",
                "p_slow_to_fast",
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
            StragglerModel::Trace => &[
                "trace_file",
                "trace_columns",
                "trace_threshold",
                "trace_compute_share",
            ],
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
    /// Gilbert-Elliott: probability that a fast worker turns slow at the
    /// start of an iteration; with `p_slow_to_fast`, an asymmetric chain in
    /// place of `switch_probability` (whose long-run slow share is 1/2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_fast_to_slow: Option<f64>,
    /// Gilbert-Elliott: probability that a slow worker turns fast (with `p_fast_to_slow`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_slow_to_fast: Option<f64>,
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
    /// trace: share of a measured value that is one partition's computation;
    /// the rest is a fixed cost per message (invocation, transfer). A message
    /// after c computations takes c·share·v + (1 − share)·v; 1 = the whole
    /// value scales with the load.
    pub trace_compute_share: f64,
}

impl StragglerConfig {
    /// The Gilbert-Elliott chain's (fast → slow, slow → fast) probabilities
    /// per iteration: `p_fast_to_slow` and `p_slow_to_fast` when given
    /// (validation requires both or neither), else `switch_probability` both ways.
    pub fn transition_probabilities(&self) -> (f64, f64) {
        match (self.p_fast_to_slow, self.p_slow_to_fast) {
            (Some(to_slow), Some(to_fast)) => (to_slow, to_fast),
            _ => (self.switch_probability, self.switch_probability),
        }
    }

    /// The share of the iterations a Gilbert-Elliott worker spends slow in
    /// the long run, p_fs / (p_fs + p_sf) (1/2 for the symmetric chain,
    /// whatever `initial_stragglers` says); `None` when neither transition
    /// can happen (the initial states last).
    pub fn stationary_slow_share(&self) -> Option<f64> {
        let (to_slow, to_fast) = self.transition_probabilities();
        (to_slow + to_fast > 0.0).then(|| to_slow / (to_slow + to_fast))
    }
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
            p_fast_to_slow: None,
            p_slow_to_fast: None,
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
            trace_compute_share: 1.0,
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
    /// Amazon-shaped one-hot data (001 §5): `nonzeros_per_row` categorical
    /// columns whose levels share the `features` one-hot features, labels
    /// from a planted logistic model.
    SyntheticOnehot,
    /// Images and labels in IDX files (MNIST, Fashion-MNIST), raw or gzip:
    /// `data.path` / `data.labels_path` and `data.test_path` /
    /// `data.test_labels_path`, or a named set (`data.set`).
    Idx,
    /// The binary version of CIFAR-10: the folder `data.path` (or the named
    /// set `data.set = "cifar10"`) holds `data_batch_1.bin` …
    /// `data_batch_5.bin` and `test_batch.bin`, images of 3 × 32 × 32.
    Cifar10,
}

impl DataKind {
    /// Whether the samples are images (`idx`, `cifar10`): the kinds that
    /// cnn and resnet models read.
    pub fn is_images(self) -> bool {
        matches!(self, DataKind::Idx | DataKind::Cifar10)
    }

    /// The name, as in `data.kind`.
    pub fn name(self) -> &'static str {
        match self {
            DataKind::SyntheticLinear => "synthetic-linear",
            DataKind::SyntheticLogistic => "synthetic-logistic",
            DataKind::Libsvm => "libsvm",
            DataKind::Csv => "csv",
            DataKind::SyntheticOnehot => "synthetic-onehot",
            DataKind::Idx => "idx",
            DataKind::Cifar10 => "cifar10",
        }
    }
}

/// How partitions store their samples (`data.format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DataFormat {
    /// Sparse (CSR) for synthetic-onehot, and for LIBSVM files whose density
    /// (stored entries over samples × features) is below
    /// [`SPARSE_DENSITY_THRESHOLD`]; dense otherwise.
    Auto,
    /// Row-major dense matrices.
    Dense,
    /// Compressed sparse rows (LIBSVM, CSV and synthetic-onehot data).
    Sparse,
}

/// `data.format = "auto"` stores LIBSVM data sparse below this density. A
/// CSR entry takes 12 bytes against 8 per dense entry, so CSR is the smaller
/// below a density of 2/3; in time per pass the sparse kernel is level with
/// the dense one at density 0.5 and 1.7× faster at 0.25 (`cargo bench --bench
/// kernel -- "auto threshold"`), so the threshold keeps a margin on both.
pub const SPARSE_DENSITY_THRESHOLD: f64 = 0.25;

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
    /// Stored entries per sample: the categorical columns of synthetic-onehot.
    pub nonzeros_per_row: usize,
    /// How partitions store their samples: auto, dense or sparse.
    pub format: DataFormat,
    /// Standard deviation of the label noise (synthetic-linear).
    pub noise_std: f64,
    /// Training file (libsvm, csv, idx); cifar10: the folder of the batches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Test file (libsvm, csv); without it, `test_fraction` of the training file is held out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_path: Option<String>,
    /// idx: the labels of `path`'s images.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels_path: Option<String>,
    /// idx: the labels of `test_path`'s images.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_labels_path: Option<String>,
    /// idx and cifar10: a named data set under the data set root, in place
    /// of the paths: "fashion-mnist" (Debian's dataset-fashion-mnist),
    /// "mnist" (idx), "cifar10" (cifar10).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub set: Option<String>,
    /// Share of a file's samples held out for testing when there is no `test_path`.
    pub test_fraction: f64,
    /// Files: scale every feature to zero mean and unit variance (statistics of
    /// the training set); sparse partitions are only scaled, not centred.
    pub standardize: bool,
    /// Largest sample matrix (training or test set; dense: samples × features × 8
    /// bytes, sparse: 12 bytes per stored entry and 8 per sample) and model a
    /// process may build, in MiB; larger data sets are refused before anything is allocated.
    pub max_matrix_mib: usize,
}

impl Default for DataConfig {
    fn default() -> Self {
        Self {
            kind: DataKind::SyntheticLinear,
            train_samples: 2000,
            test_samples: 400,
            features: 1000,
            nonzeros_per_row: 10,
            format: DataFormat::Auto,
            noise_std: 1.0,
            path: None,
            test_path: None,
            labels_path: None,
            test_labels_path: None,
            set: None,
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

/// The model kind (`model.kind`): the name of a kind in the model registry
/// (`learn::model::MODELS`: `linear`, `mlp`, `cnn`, `resnet`). This layer
/// takes it as given, as it takes `scheme.kind`; the loader (`setup`)
/// refuses a name the registry does not know, and the registry's checks of
/// the kind against the data (a network needs class labels, `cnn` and
/// `resnet` need images) run there too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ModelName(String);

impl ModelName {
    /// The name of the default kind, the linear model.
    pub const LINEAR: &'static str = "linear";

    /// The kind named `name` (checked against the registry by the loader).
    pub fn new(name: impl Into<String>) -> Self {
        Self(name.into())
    }

    /// The name, as in `model.kind`.
    pub fn name(&self) -> &str {
        &self.0
    }
}

impl Default for ModelName {
    fn default() -> Self {
        Self::new(Self::LINEAR)
    }
}

impl std::fmt::Display for ModelName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The floating-point type a network computes its gradients in (`model.precision`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Precision {
    /// Double precision: coded sums decode to the uncoded gradient to rounding.
    F64,
    /// Single precision inside the network; gradients are sent and decoded in f64.
    F32,
}

/// `[model]`: the learning problem. The keys that other parts read (the
/// data's label checks, the optimiser, the memory check) are typed here
/// ([`MODEL_KEYS`]); the keys of one model kind (`hidden`, `dropout`,
/// `resnet_blocks`, `resnet_width`, …) are its registry entry's, kept in
/// [`ModelConfig::params`] as `[scheme]`'s are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelConfig {
    pub kind: ModelName,
    /// The loss of the linear model (networks use softmax cross-entropy).
    pub loss: Loss,
    /// L2 regularisation weight lambda (weight decay for networks).
    pub l2: f64,
    /// Networks: the number of classes; labels are 0 .. classes − 1.
    pub classes: usize,
    /// Networks: the precision of the forward and backward passes.
    pub precision: Precision,
    /// Networks: the most memory one process may need, in MiB (its
    /// parameters' vectors and a batch's activations, `learn::model::memory`);
    /// unset: the machine's physical memory, read when the process starts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_memory_mib: Option<usize>,
    /// Every other key of `[model]`: the keys of the model kinds
    /// (`hidden = [512, 512]`, `dropout = 0.5`, ...), which the model
    /// registry declares, types and checks (`learn::model::ModelRegistry`);
    /// the loader fills in the defaults of the kind in use.
    #[serde(flatten)]
    pub params: toml::Table,
}

impl ModelConfig {
    /// Set the model kind's key `key` ([`Self::params`]): `hidden`, `dropout`, ...
    pub fn set_param(&mut self, key: &str, value: impl Into<toml::Value>) {
        self.params.insert(key.to_string(), value.into());
    }
}

/// The keys of `[model]` typed in [`ModelConfig`], in its order; the
/// others are the model kinds' ([`ModelConfig::params`]).
pub const MODEL_KEYS: [&str; 6] = [
    "kind",
    "loss",
    "l2",
    "classes",
    "precision",
    "max_memory_mib",
];

impl Default for ModelConfig {
    fn default() -> Self {
        Self {
            kind: ModelName::default(),
            loss: Loss::LeastSquares,
            l2: 0.0,
            classes: 10,
            precision: Precision::F64,
            max_memory_mib: None,
            params: toml::Table::new(),
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
    /// eta_t = learning_rate · gamma^(milestones ≤ t): multiplied by `gamma`
    /// after each milestone's number of steps.
    Step,
    /// eta_t = floor + (learning_rate − floor) · (1 + cos(π t / iterations)) / 2,
    /// floor = `min_learning_rate`: from learning_rate at the first step
    /// towards the floor at the last.
    Cosine,
}

/// When a measured run's losses (the test set's, a partial decode's
/// full-data training loss) are evaluated (`train.evaluation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EvaluationTiming {
    /// On a thread of the master at the lowest priority, beside the
    /// iterations that follow: the losses come in as the run goes, and the
    /// thread takes CPU the workers would have where no core is spare.
    #[default]
    Beside,
    /// Held until the run must wait anyway (a snapshot, the end) or until
    /// the held iterations fill their memory bound, then evaluated while
    /// nothing trains: no iteration runs beside an evaluation on any
    /// machine, and the iterations are observed (progress, trace) late.
    Deferred,
}

impl EvaluationTiming {
    fn is_beside(&self) -> bool {
        *self == EvaluationTiming::Beside
    }
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
    /// `schedule = "step"`: after how many steps eta is multiplied by
    /// `gamma`, each one (strictly increasing, ≥ 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub milestones: Option<Vec<u64>>,
    /// `schedule = "step"`: the factor at each milestone, in (0, 1]; 0.1 unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gamma: Option<f64>,
    /// `schedule = "cosine"`: the floor it decays towards, in [0,
    /// learning_rate]; 0 unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_learning_rate: Option<f64>,
    /// Linear warm-up of any schedule: step t (0-based) of the first
    /// `warmup_iterations` takes eta_t · (t + 1) / warmup_iterations. 0: none.
    pub warmup_iterations: usize,
    /// Evaluate the test loss, and the full-data training loss of an
    /// iteration that recovered only some partitions, every this many
    /// iterations (from the first) and at the last.
    pub eval_every: usize,
    /// When those evaluations run: beside the training or deferred.
    #[serde(skip_serializing_if = "EvaluationTiming::is_beside")]
    pub evaluation: EvaluationTiming,
    /// Give up (an error) when no result arrives for this long while the scheme still needs one.
    pub result_timeout_s: f64,
    /// Mini-batch SGD: samples drawn from each partition per step, a pure
    /// function of (seed, partition, iteration). Unset: every sample of the
    /// partition (full-batch descent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_size: Option<usize>,
    /// Momentum beta in [0, 1): heavy-ball with `optimizer = "gd"`, a constant
    /// beta in place of t / (t + 3) with `optimizer = "nesterov"`. 0: none.
    pub momentum: f64,
}

impl Default for TrainConfig {
    fn default() -> Self {
        Self {
            iterations: 100,
            optimizer: Optimizer::Gd,
            learning_rate: 0.1,
            schedule: Schedule::Constant,
            decay_iterations: 100.0,
            milestones: None,
            gamma: None,
            min_learning_rate: None,
            warmup_iterations: 0,
            eval_every: 1,
            evaluation: EvaluationTiming::Beside,
            result_timeout_s: 300.0,
            batch_size: None,
            momentum: 0.0,
        }
    }
}

/// `[network]`: the links between the workers and the master, in the model
/// only (`sim::delivery` defines what they do to a message; the MPI runtime
/// crosses the real network). Every key is optional; a section with none of
/// them models a network that costs nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NetworkConfig {
    /// One-way latency of every message, seconds.
    pub latency_s: f64,
    /// Bandwidth of each worker's link, bytes per second; unset: unlimited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker_bandwidth_bytes_per_s: Option<f64>,
    /// Bandwidth of the master's link, bytes per second; unset: unlimited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub master_bandwidth_bytes_per_s: Option<f64>,
    /// The master's receives share its link: one message crosses it at a time.
    pub master_link_shared: bool,
    /// Seconds the master's link spends on each message besides its bytes
    /// (a rendezvous hand-shake, a receive posted late); 0: none.
    pub master_per_message_s: f64,
    /// Bandwidth between two workers, bytes per second: a reduce's tree
    /// rounds; unset: a worker's link (`worker_bandwidth_bytes_per_s`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer_bandwidth_bytes_per_s: Option<f64>,
}

impl Default for NetworkConfig {
    fn default() -> Self {
        Self {
            latency_s: 0.0,
            worker_bandwidth_bytes_per_s: None,
            master_bandwidth_bytes_per_s: None,
            master_link_shared: true,
            master_per_message_s: 0.0,
            peer_bandwidth_bytes_per_s: None,
        }
    }
}

/// `[output]`: traces and progress.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OutputConfig {
    /// HDF5 trace written by `train` (and by `simulate --out` when given no
    /// path). Unset (the default): a new name per run, decided by the
    /// command (`results/<scheme>-<UTC time stamp>.h5`), so that runs never
    /// collide.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    /// Plain progress line every this many iterations when stderr is not a terminal.
    pub progress_every: usize,
    /// Write a resumable snapshot (model, momentum, records) to the trace every this many iterations.
    pub snapshot_every: usize,
}

impl Default for OutputConfig {
    fn default() -> Self {
        Self {
            trace: None,
            progress_every: 10,
            snapshot_every: 10,
        }
    }
}

/// How an MPI rank waits for its next message (`runtime.wait`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuntimeWait {
    /// Spin when the node's ranks do not outnumber its cores, back off otherwise.
    #[default]
    Auto,
    /// Busy-poll MPI: the lowest latency, a core per rank.
    Spin,
    /// Probe, then sleep a growing interval: ranks that share cores stay responsive.
    Backoff,
}

impl RuntimeWait {
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Spin => "spin",
            Self::Backoff => "backoff",
        }
    }
}

/// How the master collects the coded vectors of an iteration
/// (`runtime.aggregate`; docs/aggregate.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuntimeAggregate {
    /// Every result carries its vector to the master (K vectors of d values inbound).
    #[default]
    Gather,
    /// Results are headers only; the decodable set reduces its weighted
    /// vectors among itself and one of them sends the sum (one vector inbound).
    Reduce,
    /// `reduce` when the workers are not all on the master's node and a
    /// coded vector is at least [`RuntimeAggregate::AUTO_REDUCE_BYTES`];
    /// `gather` otherwise.
    Auto,
}

impl RuntimeAggregate {
    /// Bytes of one coded vector (8·(d + 1)) from which `auto` reduces when
    /// the ranks span several nodes: 128 KiB, d ≥ 16,383. Measured with
    /// `scripts/bench-aggregate.sh` (K = 16, gc-cyclic load 2, 17 ranks on
    /// 2 cores, docs/performance.md) under load: gather faster at d = 10^4
    /// (reduce 1.34× its time), reduce from d = 3·10^4 (0.87×) to 10^6
    /// (0.88×). On a quiet machine, all ranks on one node, reduce was slower
    /// at every size (1.61× at 3·10^4, 1.29× at 10^5, 1.13× at 10^6, 1.38×
    /// at 10^7; the one-hot 26,210 × 241,915 case of `bench-sparse.sh`
    /// 1.25×): there the master's "link" is memory, and `auto` gathers.
    pub const AUTO_REDUCE_BYTES: usize = 128 << 10;

    pub fn name(self) -> &'static str {
        match self {
            Self::Gather => "gather",
            Self::Reduce => "reduce",
            Self::Auto => "auto",
        }
    }

    /// Whether a run with `dim` parameters reduces; `one_node`: every rank
    /// of the job is on the master's node (`train` finds it with
    /// `MPI_Comm_split_type`, the same answer on every rank; the network
    /// model of `simulate` times hosts apart).
    pub fn reduces(self, dim: usize, one_node: bool) -> bool {
        match self {
            Self::Gather => false,
            Self::Reduce => true,
            Self::Auto => !one_node && 8 * (dim + 1) >= Self::AUTO_REDUCE_BYTES,
        }
    }
}

/// `[runtime]`: how the MPI ranks of `train` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RuntimeConfig {
    pub wait: RuntimeWait,
    pub aggregate: RuntimeAggregate,
    /// Gathered results of a linear model's full-batch gradient on sparse
    /// features carry only the entries the worker's partitions can make
    /// non-zero, and the worker is sent θ there alone, when those are at
    /// most half of the d + 1 (docs/aggregate.md, "Packed vectors").
    /// `false`: every vector has all d + 1 values, as a dense model's.
    pub pack_sparse: bool,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            wait: RuntimeWait::default(),
            aggregate: RuntimeAggregate::default(),
            pack_sparse: true,
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
/// - a scheme name (`"gc-sc"`): that scheme with the config's `[scheme]` keys;
/// - `"gc"`: Tandon's cyclic gradient code over all K workers (gc-cyclic with
///   the config's load), which the clustered papers (000, 003) call GC;
/// - a variant `{ name = "gc-mmc-1", kind = "gc-mmc", set = { clusters = 4 } }`:
///   the scheme `kind` with the `[scheme]` keys of `set` changed, reported as
///   `name`, so two settings of one kind can be compared (003 Fig. 1's
///   GC-MMC-1 and GC-MMC-2, 004's FR, CR and HR).
#[derive(Debug, Clone, PartialEq)]
pub enum CompareEntry {
    /// The scheme of this name, with the config's parameters.
    Kind(SchemeName),
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
    pub kind: SchemeName,
    /// `[scheme]` keys that differ from the config's, e.g. `{ clusters = 4, load = 5 }`.
    #[serde(default)]
    pub set: toml::Table,
}

impl CompareEntry {
    /// The name of the scheme that is built for this entry.
    pub fn kind(&self) -> &str {
        match self {
            CompareEntry::Kind(k) => k.as_str(),
            CompareEntry::Gc => GC_SCHEME,
            CompareEntry::Variant(v) => v.kind.as_str(),
        }
    }

    /// The name in configs, tables, JSON and traces.
    pub fn name(&self) -> &str {
        match self {
            CompareEntry::Kind(k) => k.as_str(),
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
                f.write_str("a scheme name, \"gc\", or a table { name, kind, set }")
            }

            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<CompareEntry, E> {
                Ok(match name {
                    "gc" => CompareEntry::Gc,
                    _ => CompareEntry::Kind(SchemeName::new(name)),
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
