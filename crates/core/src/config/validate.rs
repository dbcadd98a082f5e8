//! Rules for every section except `[scheme]`, whose keys each scheme declares
//! and whose constructor checks them (`coding::registry`), and the rules of
//! `[model]` that depend on `model.kind`, which the model registry checks
//! (`learn::model`), so that each rule lives once.

use super::schema::*;
use crate::error::InputError;

type Result = std::result::Result<(), InputError>;

fn at_least(field: &str, value: usize, min: usize) -> Result {
    if value < min {
        return Err(InputError::value(
            field,
            value,
            format!("must be at least {min}"),
        ));
    }
    Ok(())
}

fn positive(field: &str, value: f64) -> Result {
    if !(value.is_finite() && value > 0.0) {
        return Err(InputError::value(
            field,
            value,
            "must be a finite number > 0",
        ));
    }
    Ok(())
}

fn non_negative(field: &str, value: f64) -> Result {
    if !(value.is_finite() && value >= 0.0) {
        return Err(InputError::value(
            field,
            value,
            "must be a finite number >= 0",
        ));
    }
    Ok(())
}

/// The largest `workers` (K): a cyclic code's matrix is dense K × K (128 MiB at
/// 4096), and the master exchanges messages with every worker in every iteration.
pub const MAX_WORKERS: usize = 4096;

/// Check every rule that does not belong to a scheme constructor.
pub fn validate(config: &Config) -> Result {
    at_least("workers", config.workers, 1)?;
    if config.workers > MAX_WORKERS {
        return Err(InputError::value(
            "workers",
            config.workers,
            format!(
                "is more than {MAX_WORKERS}, the most this build supports (codes are dense K x K matrices, and the master talks to every worker in every iteration)"
            ),
        ));
    }
    validate_straggler(&config.straggler)?;
    validate_straggler_models(&config.straggler, config.workers)?;
    validate_data(&config.data, config.workers)?;
    validate_model(&config.model)?;
    validate_train(&config.train)?;
    validate_output(&config.output)?;
    validate_simulate(&config.simulate)?;
    validate_compare(config)?;
    if let Some(n) = &config.network {
        n.network().map_err(crate::network::into_input_error)?;
    }
    Ok(())
}

impl NetworkConfig {
    /// The network this section describes, checked: the rules live with
    /// the network's type (`crate::network`), which imports no config.
    pub fn network(
        &self,
    ) -> std::result::Result<crate::network::Network, crate::network::NetworkError> {
        crate::network::Network::new(
            self.latency_s,
            self.worker_bandwidth_bytes_per_s,
            self.master_bandwidth_bytes_per_s,
            self.master_link_shared,
        )?
        .with_master_per_message_s(self.master_per_message_s)?
        .with_peer_bandwidth(self.peer_bandwidth_bytes_per_s)
    }
}

/// The largest `straggler.time_unit_ms`: one day of wall time per model time
/// unit. Beyond it every emulated time is days long, and around 10^16 ms even
/// one model time unit no longer fits a clock.
pub const MAX_TIME_UNIT_MS: f64 = 86_400_000.0;

fn validate_straggler(s: &StragglerConfig) -> Result {
    non_negative("straggler.alpha", s.alpha)?;
    positive("straggler.mu", s.mu)?;
    positive("straggler.time_unit_ms", s.time_unit_ms)?;
    if s.time_unit_ms > MAX_TIME_UNIT_MS {
        return Err(InputError::value(
            "straggler.time_unit_ms",
            format!("{:e}", s.time_unit_ms),
            format!(
                "must be at most {MAX_TIME_UNIT_MS} (one day of wall time per model time unit)"
            ),
        ));
    }
    Ok(())
}

/// Upper limit of `data.max_matrix_mib` and `model.max_memory_mib` (1 PiB): keeps every size computation far from overflow.
pub const MAX_MATRIX_MIB_LIMIT: usize = 1 << 30;

/// Check that a dense `rows × features` f64 matrix fits in `data.max_matrix_mib`;
/// `field` names what is refused (`data.train_samples`, or a data file), `what`
/// says which matrix (`training`, `test`).
pub fn check_dense_matrix(
    field: &str,
    what: &str,
    rows: usize,
    features: usize,
    max_mib: usize,
) -> Result {
    let bytes = rows as u128 * features as u128 * 8;
    let limit = max_mib as u128 * (1 << 20);
    if bytes > limit {
        let mib = bytes.div_ceil(1 << 20);
        return Err(InputError::new(
            field,
            format!(
                "the dense {what} matrix of {rows} samples × {features} features × 8 bytes takes {mib} MiB, more than data.max_matrix_mib = {max_mib} (raise the limit only if the nodes have the memory, or store sparse data sparse: data.format)"
            ),
        ));
    }
    Ok(())
}

/// Check that a model of `features` parameters fits in `data.max_matrix_mib`
/// and that the features fit the 32-bit column indices of sparse partitions.
pub fn check_sparse_width(field: &str, features: usize, max_mib: usize) -> Result {
    let limit = max_mib as u128 * (1 << 20);
    let model = features as u128 * 8;
    if model > limit {
        return Err(InputError::new(
            field,
            format!(
                "the model of {features} features × 8 bytes takes {} MiB, more than data.max_matrix_mib = {max_mib} (every process holds several)",
                model.div_ceil(1 << 20)
            ),
        ));
    }
    if features as u128 > u32::MAX as u128 + 1 {
        return Err(InputError::new(
            field,
            format!("has {features} features; sparse partitions index at most 2^32"),
        ));
    }
    Ok(())
}

/// Bytes a CSR matrix of `rows` rows and `stored` entries takes: a start
/// offset (8 bytes) per row and one more, and per stored entry a 32-bit
/// column index and an f64 value (12 bytes). `learn::sparse::CsrMatrix::bytes`
/// is this count for a built matrix (its test checks the two agree).
pub fn csr_bytes(rows: usize, stored: usize) -> u128 {
    (rows as u128 + 1) * 8 + stored as u128 * 12
}

/// Check [`check_sparse_width`] and that a CSR matrix of `rows` samples with
/// `stored` entries fits in `data.max_matrix_mib`.
pub fn check_sparse_matrix(
    field: &str,
    what: &str,
    rows: usize,
    stored: usize,
    features: usize,
    max_mib: usize,
) -> Result {
    check_sparse_width(field, features, max_mib)?;
    let limit = max_mib as u128 * (1 << 20);
    let bytes = csr_bytes(rows, stored);
    if bytes > limit {
        return Err(InputError::new(
            field,
            format!(
                "the sparse {what} matrix of {rows} samples with {stored} stored entries takes {} MiB, more than data.max_matrix_mib = {max_mib}",
                bytes.div_ceil(1 << 20)
            ),
        ));
    }
    Ok(())
}

fn validate_data(d: &DataConfig, workers: usize) -> Result {
    if !(1..=MAX_MATRIX_MIB_LIMIT).contains(&d.max_matrix_mib) {
        return Err(InputError::value(
            "data.max_matrix_mib",
            d.max_matrix_mib,
            format!("must be in 1..={MAX_MATRIX_MIB_LIMIT}"),
        ));
    }
    match d.kind {
        DataKind::SyntheticLinear | DataKind::SyntheticLogistic | DataKind::SyntheticOnehot => {
            if d.train_samples < workers {
                return Err(InputError::value(
                    "data.train_samples",
                    d.train_samples,
                    format!("is fewer than workers = {workers} (every partition needs a sample)"),
                ));
            }
            at_least("data.test_samples", d.test_samples, 1)?;
            at_least("data.features", d.features, 1)?;
            if d.kind == DataKind::SyntheticOnehot {
                at_least("data.nonzeros_per_row", d.nonzeros_per_row, 1)?;
                if d.nonzeros_per_row > d.features {
                    return Err(InputError::value(
                        "data.nonzeros_per_row",
                        d.nonzeros_per_row,
                        format!(
                            "exceeds data.features = {} (each categorical column needs a level)",
                            d.features
                        ),
                    ));
                }
            } else if d.format == DataFormat::Sparse {
                return Err(InputError::value(
                    "data.format",
                    "\"sparse\"",
                    format!(
                        "needs libsvm, csv or synthetic-onehot data; data.kind = {} is dense",
                        d.kind.name()
                    ),
                ));
            }
            if d.kind == DataKind::SyntheticOnehot && d.format != DataFormat::Dense {
                check_sparse_width("data.features", d.features, d.max_matrix_mib)?;
                let nnz = d.nonzeros_per_row as u128;
                for (field, what, rows) in [
                    ("data.train_samples", "training", d.train_samples),
                    ("data.test_samples", "test", d.test_samples),
                ] {
                    let stored = usize::try_from(rows as u128 * nnz).unwrap_or(usize::MAX);
                    check_sparse_matrix(field, what, rows, stored, d.features, d.max_matrix_mib)?;
                }
            } else {
                check_dense_matrix(
                    "data.train_samples",
                    "training",
                    d.train_samples,
                    d.features,
                    d.max_matrix_mib,
                )?;
                check_dense_matrix(
                    "data.test_samples",
                    "test",
                    d.test_samples,
                    d.features,
                    d.max_matrix_mib,
                )?;
            }
            non_negative("data.noise_std", d.noise_std)?;
            for (field, value) in [("data.path", &d.path), ("data.test_path", &d.test_path)] {
                if value.is_some() {
                    return Err(InputError::new(
                        field,
                        format!(
                            "is set but data.kind = {} generates its data",
                            d.kind.name()
                        ),
                    ));
                }
            }
        }
        DataKind::Idx | DataKind::Cifar10 => {
            if d.format == DataFormat::Sparse {
                return Err(InputError::value(
                    "data.format",
                    "\"sparse\"",
                    format!(
                        "needs libsvm, csv or synthetic-onehot data; images (data.kind = {}) are dense",
                        d.kind.name()
                    ),
                ));
            }
            if d.kind == DataKind::Cifar10 {
                // The folder holds the test batch and every label.
                for (field, value) in [
                    ("data.test_path", &d.test_path),
                    ("data.labels_path", &d.labels_path),
                    ("data.test_labels_path", &d.test_labels_path),
                ] {
                    if value.is_some() {
                        return Err(InputError::new(
                            field,
                            "is set but data.kind = cifar10 reads the test images and every label from the folder data.path (or data.set) names",
                        ));
                    }
                }
            }
            at_least("data.train_samples", d.train_samples, workers)?;
            at_least("data.test_samples", d.test_samples, 1)?;
        }
        DataKind::Libsvm | DataKind::Csv => {
            match &d.path {
                None => {
                    return Err(InputError::new(
                        "data.path",
                        format!("is required when data.kind = {}", d.kind.name()),
                    ));
                }
                Some(p) if p.trim().is_empty() => {
                    return Err(InputError::value("data.path", "\"\"", "must name a file"));
                }
                Some(_) => {}
            }
            if !(d.test_fraction.is_finite() && (0.0..1.0).contains(&d.test_fraction)) {
                return Err(InputError::value(
                    "data.test_fraction",
                    d.test_fraction,
                    "must be in [0, 1)",
                ));
            }
        }
    }
    Ok(())
}

/// The `[model]` keys every kind shares. The rules that depend on the kind
/// (a network's keys, its data) are the model registry's
/// (`learn::model::ModelRegistry::check`), which the loader applies.
fn validate_model(m: &ModelConfig) -> Result {
    non_negative("model.l2", m.l2)?;
    if let Some(mib) = m.max_memory_mib {
        if !(1..=MAX_MATRIX_MIB_LIMIT).contains(&mib) {
            return Err(InputError::value(
                "model.max_memory_mib",
                mib,
                format!("must be in 1..={MAX_MATRIX_MIB_LIMIT}"),
            ));
        }
    }
    Ok(())
}

fn validate_train(t: &TrainConfig) -> Result {
    at_least("train.iterations", t.iterations, 1)?;
    if let Some(b) = t.batch_size {
        at_least("train.batch_size", b, 1)?;
    }
    if !(t.momentum.is_finite() && (0.0..1.0).contains(&t.momentum)) {
        return Err(InputError::value(
            "train.momentum",
            t.momentum,
            "must be in [0, 1)",
        ));
    }
    positive("train.learning_rate", t.learning_rate)?;
    positive("train.decay_iterations", t.decay_iterations)?;
    validate_schedule(t)?;
    at_least("train.eval_every", t.eval_every, 1)?;
    positive("train.result_timeout_s", t.result_timeout_s)?;
    Ok(())
}

/// The schedule's own keys: each read by one schedule only, and set only with it.
fn validate_schedule(t: &TrainConfig) -> Result {
    use super::Schedule;
    let only_with = |field: &str, schedule: &str| {
        InputError::new(
            field,
            format!(
                "is read only with train.schedule = \"{schedule}\"; remove it or set that schedule"
            ),
        )
    };
    if t.schedule != Schedule::Step {
        if t.milestones.is_some() {
            return Err(only_with("train.milestones", "step"));
        }
        if t.gamma.is_some() {
            return Err(only_with("train.gamma", "step"));
        }
    }
    if t.schedule != Schedule::Cosine && t.min_learning_rate.is_some() {
        return Err(only_with("train.min_learning_rate", "cosine"));
    }
    if t.schedule == Schedule::Step {
        let milestones = t.milestones.as_deref().unwrap_or_default();
        if milestones.is_empty() {
            return Err(InputError::new(
                "train.milestones",
                "is required with train.schedule = \"step\": after how many steps the learning rate is multiplied by train.gamma, e.g. [30, 60]",
            ));
        }
        if milestones[0] < 1 || milestones.windows(2).any(|w| w[1] <= w[0]) {
            return Err(InputError::value(
                "train.milestones",
                format!("{milestones:?}"),
                "must be step counts ≥ 1 in strictly increasing order",
            ));
        }
    }
    if let Some(gamma) = t.gamma
        && !(gamma > 0.0 && gamma <= 1.0)
    {
        return Err(InputError::value("train.gamma", gamma, "must be in (0, 1]"));
    }
    if let Some(floor) = t.min_learning_rate
        && !(floor >= 0.0 && floor <= t.learning_rate)
    {
        return Err(InputError::value(
            "train.min_learning_rate",
            floor,
            "must be in [0, train.learning_rate]",
        ));
    }
    if t.warmup_iterations > t.iterations {
        return Err(InputError::value(
            "train.warmup_iterations",
            t.warmup_iterations,
            "must be at most train.iterations",
        ));
    }
    Ok(())
}

fn validate_output(o: &OutputConfig) -> Result {
    if o.trace.as_deref().is_some_and(|t| t.trim().is_empty()) {
        return Err(InputError::value(
            "output.trace",
            "\"\"",
            "must name a file",
        ));
    }
    at_least("output.progress_every", o.progress_every, 1)?;
    at_least("output.snapshot_every", o.snapshot_every, 1)?;
    Ok(())
}

fn validate_simulate(s: &SimulateConfig) -> Result {
    at_least("simulate.trials", s.trials, 1)?;
    at_least("simulate.iterations", s.iterations, 1)?;
    Ok(())
}

fn probability(field: &str, value: f64) -> Result {
    if !(value.is_finite() && (0.0..=1.0).contains(&value)) {
        return Err(InputError::value(field, value, "must be in [0, 1]"));
    }
    Ok(())
}

fn at_most(field: &str, value: usize, max: usize, what: &str) -> Result {
    if value > max {
        return Err(InputError::value(
            field,
            value,
            format!("is more than {what} = {max}"),
        ));
    }
    Ok(())
}

/// The keys of the delay models (src/straggler/): ranges always, cross-key
/// rules only for the model that reads them.
fn validate_straggler_models(s: &StragglerConfig, workers: usize) -> Result {
    positive("straggler.mu_fast", s.mu_fast)?;
    positive("straggler.mu_slow", s.mu_slow)?;
    probability("straggler.switch_probability", s.switch_probability)?;
    match (s.p_fast_to_slow, s.p_slow_to_fast) {
        (Some(to_slow), Some(to_fast)) => {
            probability("straggler.p_fast_to_slow", to_slow)?;
            probability("straggler.p_slow_to_fast", to_fast)?;
        }
        (Some(_), None) => {
            return Err(InputError::new(
                "straggler.p_slow_to_fast",
                "is required with straggler.p_fast_to_slow (an asymmetric chain needs both)",
            ));
        }
        (None, Some(_)) => {
            return Err(InputError::new(
                "straggler.p_fast_to_slow",
                "is required with straggler.p_slow_to_fast (an asymmetric chain needs both)",
            ));
        }
        (None, None) => {}
    }
    at_most(
        "straggler.initial_stragglers",
        s.initial_stragglers,
        workers,
        "workers",
    )?;
    positive("straggler.rate_max", s.rate_max)?;
    if !(s.slow_factor.is_finite() && s.slow_factor >= 1.0) {
        return Err(InputError::value(
            "straggler.slow_factor",
            s.slow_factor,
            "must be a finite number >= 1",
        ));
    }
    non_negative("straggler.rate_threshold", s.rate_threshold)?;
    let mut seen = vec![false; workers];
    for &w in &s.delayed_workers {
        if w == 0 || w > workers {
            return Err(InputError::value(
                "straggler.delayed_workers",
                format!("{:?}", s.delayed_workers),
                format!("names worker {w}, outside 1..={workers}"),
            ));
        }
        if std::mem::replace(&mut seen[w - 1], true) {
            return Err(InputError::value(
                "straggler.delayed_workers",
                format!("{:?}", s.delayed_workers),
                format!("names worker {w} twice"),
            ));
        }
    }
    at_most(
        "straggler.delayed_count",
        s.delayed_count,
        workers,
        "workers",
    )?;
    positive("straggler.delay_mean", s.delay_mean)?;
    positive("straggler.trace_threshold", s.trace_threshold)?;
    if !(s.trace_compute_share > 0.0 && s.trace_compute_share <= 1.0) {
        return Err(InputError::value(
            "straggler.trace_compute_share",
            s.trace_compute_share,
            "must be in (0, 1]",
        ));
    }
    if let Some(columns) = &s.trace_columns {
        if columns.len() != workers {
            return Err(InputError::value(
                "straggler.trace_columns",
                format!("{columns:?}"),
                format!(
                    "lists {} columns, not one per worker (workers = {workers})",
                    columns.len()
                ),
            ));
        }
        let mut sorted = columns.clone();
        sorted.sort_unstable();
        if sorted.first() == Some(&0) {
            return Err(InputError::value(
                "straggler.trace_columns",
                format!("{columns:?}"),
                "has column 0; columns are 1-based",
            ));
        }
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(InputError::value(
                "straggler.trace_columns",
                format!("{columns:?}"),
                format!("names column {} twice", w[0]),
            ));
        }
    }
    match s.model {
        StragglerModel::GilbertElliott if s.mu_slow >= s.mu_fast => Err(InputError::value(
            "straggler.mu_slow",
            s.mu_slow,
            format!("must be below straggler.mu_fast = {}", s.mu_fast),
        )),
        StragglerModel::TimeVarying if s.rate_threshold >= s.rate_max => Err(InputError::value(
            "straggler.rate_threshold",
            s.rate_threshold,
            format!(
                "must be below straggler.rate_max = {} (initial rates of non-stragglers are drawn from [rate_threshold, rate_max])",
                s.rate_max
            ),
        )),
        StragglerModel::TimeVarying if s.initial_stragglers > 0 && s.rate_threshold == 0.0 => {
            Err(InputError::value(
                "straggler.rate_threshold",
                0,
                "must be > 0 when straggler.initial_stragglers > 0 (their rates are drawn from (0, rate_threshold))",
            ))
        }
        StragglerModel::ExtraDelay => match (s.delayed_workers.is_empty(), s.delayed_count) {
            (true, 0) => Err(InputError::new(
                "straggler.delayed_workers",
                "straggler.model = extra-delay needs straggler.delayed_workers (chosen workers) or straggler.delayed_count (random workers)",
            )),
            (false, c) if c > 0 => Err(InputError::new(
                "straggler.delayed_count",
                "is set together with straggler.delayed_workers; extra-delay takes one of them",
            )),
            _ => Ok(()),
        },
        StragglerModel::Trace => match &s.trace_file {
            None => Err(InputError::new(
                "straggler.trace_file",
                "is required when straggler.model = trace",
            )),
            Some(p) if p.trim().is_empty() => Err(InputError::value(
                "straggler.trace_file",
                "\"\"",
                "must name a file",
            )),
            Some(_) => Ok(()),
        },
        _ => Ok(()),
    }
}

/// `simulate.compare` lists distinct names, fit for an HDF5 group;
/// `simulate.baseline` is one of them.
fn validate_compare(config: &Config) -> Result {
    let compared = config.compared();
    let names: Vec<&str> = compared.iter().map(|e| e.name()).collect();
    for (i, name) in names.iter().enumerate() {
        let valid = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !valid {
            return Err(InputError::value(
                "simulate.compare",
                format!("{names:?}"),
                format!("has the name \"{name}\"; names are letters, digits, `-`, `_` and `.`"),
            ));
        }
        if names[..i].contains(name) {
            return Err(InputError::value(
                "simulate.compare",
                format!("{names:?}"),
                format!("lists {name} twice"),
            ));
        }
    }
    if let Some(b) = &config.simulate.baseline {
        if !names.contains(&b.as_str()) {
            return Err(InputError::value(
                "simulate.baseline",
                format!("\"{b}\""),
                format!("is not among the compared schemes {names:?}"),
            ));
        }
    }
    Ok(())
}
