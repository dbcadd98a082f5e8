//! `gradcode check`: validate the config and print the plan (like PETSc's `-ksp_view`).

use clap::Args;
use rand::seq::SliceRandom;
use serde::Serialize;

use super::{ConfigArgs, load, one_based, print_warnings};
use crate::coding::{
    Accuracy, Arrival, EXACT_RELATIVE_ERROR, RoundContext, RoundPlan, Scheme, Tolerance,
    dynamic_clustering,
};
use crate::config::Config;
use crate::config::StragglerModel;
use crate::engine::decode_prefix;
use crate::rng::{Stream, stream};
use crate::straggler::TraceSummary;

#[derive(Debug, Serialize)]
struct CodewordReport {
    /// 1-based cluster (group) and position.
    cluster: usize,
    index: usize,
    /// Computed after this many partitions.
    after: usize,
    /// 1-based partitions in computation order.
    partitions: Vec<usize>,
    coefficients: Vec<f64>,
}

#[derive(Debug, Serialize)]
struct WorkerReport {
    worker: usize,
    /// 1-based partitions stored.
    partitions: Vec<usize>,
    memory_partitions: usize,
    /// 1-based cluster this iteration, when clustered.
    #[serde(skip_serializing_if = "Option::is_none")]
    cluster: Option<usize>,
    codewords: Vec<CodewordReport>,
}

#[derive(Debug, Serialize)]
struct Amplification {
    /// Largest max|a|·max|B| over the sampled sets.
    worst: f64,
    /// Largest |a·B_W − 1|_inf over the sampled sets.
    max_residual: f64,
    /// Sampled minimal arrival sets.
    samples: usize,
    /// Sampled sets that the arrival count says suffice but that failed to decode numerically.
    failed: usize,
    /// Mean decode error ‖a·B_S − 1‖₂ over the decodable sampled sets: 0
    /// for an exact code, what a partial or approximate one leaves out.
    mean_decode_error: f64,
    /// The decodes approximate the sum over every partition (an
    /// approximate code: `agc-*`, `sgc`, `erasurehead`).
    approximate: bool,
}

/// Lemma 1 of 000 (eq. 19): n > P(K−1)/(2K).
#[derive(Debug, Serialize)]
struct Lemma1 {
    holds: bool,
    /// P(K−1)/(2K).
    bound: f64,
}

/// gc-dc's plan: the assignment matrix and what it costs.
#[derive(Debug, Serialize)]
struct DynamicPlan {
    /// n: clusters each worker may join.
    clusters_per_worker: usize,
    /// m = n·l: partitions every worker stores.
    memory_partitions: usize,
    /// The n·l × P worker cluster assignment matrix, 1-based; column p = the
    /// workers that may join cluster p.
    assignment: Vec<Vec<usize>>,
    /// Where the matrix came from: given, 000 eq. (13), or drawn (which draw).
    assignment_source: String,
    /// Columns that differ as sets (P unless two clusters take the same workers).
    distinct_columns: usize,
    lemma1: Lemma1,
    clustering: &'static str,
    straggler_threshold: f64,
    /// When the straggler model's flags and `straggler_threshold` can name
    /// different stragglers: why (the JSON has them in `warnings`).
    #[serde(skip)]
    threshold_warnings: Vec<String>,
}

#[derive(Debug, Serialize)]
struct DataFormatReport {
    storage: &'static str,
    reason: String,
}

#[derive(Serialize)]
struct CheckReport {
    origin: String,
    scheme: String,
    /// The scheme's registry description (what it does, the paper section).
    description: &'static str,
    /// Every `[scheme]` key the scheme reads, with its value (set or default;
    /// a key without a default that is not set is absent).
    parameters: serde_json::Map<String, serde_json::Value>,
    /// The scheme's keys in its declaration order, for the text.
    #[serde(skip)]
    keys: &'static [&'static str],
    workers_total: usize,
    partitions: usize,
    /// How partitions store their samples (`data.format` resolved) and why.
    data_format: DataFormatReport,
    /// The model (`model.kind`) in one line: its layers and parameters.
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    /// Synthetic and image data: the samples used and where the counts come from.
    #[serde(skip_serializing_if = "Option::is_none")]
    samples: Option<SamplesReport>,
    /// A network's least memory per process and the dense samples it holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    memory: Option<MemoryReport>,
    /// A LIBSVM or CSV data set as `train` reads it (the whole files, the
    /// standardisation and the test rows checked as `train`'s master does).
    #[serde(skip_serializing_if = "Option::is_none")]
    data_files: Option<DataFilesReport>,
    /// Cluster membership (1-based ids), cluster 1 first; empty when unclustered.
    clusters: Vec<Vec<usize>>,
    tolerated_stragglers: Tolerance,
    arrivals_needed: Tolerance,
    amplification: Amplification,
    /// f64 decoding accuracy measured by the code (gc-mmc uncorrelated, hybrid); absent when exact by construction.
    #[serde(skip_serializing_if = "Option::is_none")]
    decoding_accuracy: Option<Accuracy>,
    /// Decoding is exact to 1e-6 relative; when false, `train` refuses the config.
    exact_decoding: bool,
    /// Model time after which the master decodes what arrived (ignore-stragglers, is-gc).
    #[serde(skip_serializing_if = "Option::is_none")]
    deadline: Option<f64>,
    /// The master may update with part of the partitions recovered.
    partial_recovery: bool,
    /// Messages a worker sends per iteration, at most.
    messages_per_worker: usize,
    /// How `train`'s master collects the coded vectors (`runtime.aggregate`), in one line.
    aggregate: String,
    workers: Vec<WorkerReport>,
    /// gc-dc only.
    #[serde(skip_serializing_if = "Option::is_none")]
    dynamic_clustering: Option<DynamicPlan>,
    /// The replayed trace file (straggler.model = trace).
    #[serde(skip_serializing_if = "Option::is_none")]
    straggler_trace: Option<TraceSummary>,
    /// The straggler model's long-run straggler share and computation time.
    straggler_long_run: crate::straggler::LongRun,
    warnings: Vec<String>,
    /// `[network]`: what it costs the plan's messages (absent: no section).
    #[serde(skip_serializing_if = "Option::is_none")]
    network: Option<crate::sim::communication::Communication>,
    config: Config,
}

fn dynamic_plan(scheme: &dyn Scheme, threshold_warnings: &[String]) -> Option<DynamicPlan> {
    let dc = dynamic_clustering(scheme)?;
    let a = dc.assignment();
    Some(DynamicPlan {
        clusters_per_worker: a.per_worker(),
        memory_partitions: a.memory(),
        assignment: a.rows().iter().map(|r| one_based(r)).collect(),
        assignment_source: dc.assignment_source().to_string(),
        distinct_columns: a.distinct_columns(),
        lemma1: Lemma1 {
            holds: a.lemma1_holds(),
            bound: a.lemma1_bound(),
        },
        clustering: dc.policy_name(),
        straggler_threshold: dc.threshold(),
        threshold_warnings: threshold_warnings.to_vec(),
    })
}

/// Decode `samples` random arrival orders up to the point where they suffice.
fn sample_amplification(
    scheme: &mut dyn Scheme,
    plan: &RoundPlan,
    seed: u64,
    samples: usize,
) -> Amplification {
    let mut rng = stream(seed, Stream::CheckSampling);
    // Every message once, each worker's in send order, interleaved at random.
    let mut order: Vec<usize> = (0..scheme.workers())
        .flat_map(|w| std::iter::repeat_n(w, plan.tasks[w].messages.len()))
        .collect();
    let mut next = vec![0usize; scheme.workers()];
    let mut report = Amplification {
        worst: 0.0,
        max_residual: 0.0,
        samples,
        failed: 0,
        mean_decode_error: 0.0,
        approximate: false,
    };
    let (mut error_sum, mut decoded, mut coverage) = (0.0, 0usize, Vec::new());
    for _ in 0..samples {
        order.shuffle(&mut rng);
        next.fill(0);
        let arrivals: Vec<Arrival> = order
            .iter()
            .map(|&w| {
                next[w] += 1;
                Arrival {
                    worker: w,
                    message: next[w] - 1,
                }
            })
            .collect();
        let (decoding, used) = decode_prefix(scheme, plan, &arrivals);
        if decoding.decodable {
            report.worst = report.worst.max(decoding.amplification);
            report.max_residual = report.max_residual.max(decoding.residual);
            report.approximate |= decoding.approximate;
            error_sum +=
                decoding.error(plan, &arrivals[..used], scheme.partitions(), &mut coverage);
            decoded += 1;
        } else {
            report.failed += 1;
        }
    }
    if decoded > 0 {
        report.mean_decode_error = error_sum / decoded as f64;
    }
    report
}

/// The config loaded and its data files checked (they exist, their first
/// rows parse), its warnings printed: what `--ranks` and `--print-config`
/// check before they print their one answer.
fn load_with_data(args: &ConfigArgs) -> anyhow::Result<crate::setup::Setup> {
    let setup = load(args)?;
    crate::learn::data::check_data_files(&setup.loaded.config, setup.scheme.partitions())?;
    print_warnings(&setup.loaded);
    Ok(setup)
}

/// `check --ranks`: the ranks a training run needs, after the checks of the
/// config and the data files (jobs/submit.sh asks for the ranks before it
/// submits, and a missing data.path must stop it there).
fn print_ranks(args: &ConfigArgs) -> anyhow::Result<()> {
    let setup = load_with_data(args)?;
    crate::outln!("{}", setup.loaded.config.workers + 1);
    Ok(())
}

/// `check --print-config`: the config as given (the file with every
/// `--set` applied, no default filled in, so no key is newly "set but not
/// used") as TOML, after the checks of `--ranks`, for a program that reads a
/// config file and takes no `--set`.
fn print_config(args: &ConfigArgs) -> anyhow::Result<()> {
    let setup = load_with_data(args)?;
    let text = toml::to_string(&setup.loaded.given)?;
    crate::output::write_stdout(format_args!("{text}"));
    Ok(())
}

/// The flags of `check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub args: ConfigArgs,
    /// Random minimal arrival sets decoded to measure the worst amplification.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub samples: usize,
    /// Print only the number of MPI ranks a training run needs (workers + 1), for job scripts.
    #[arg(long, conflicts_with = "json")]
    pub ranks: bool,
    /// Print only the config with every --set applied, as TOML: a config file for programs that take no --set.
    #[arg(long, conflicts_with_all = ["json", "ranks"])]
    pub print_config: bool,
}

pub(super) fn run(flags: &CheckArgs) -> anyhow::Result<()> {
    if flags.ranks {
        return print_ranks(&flags.args);
    }
    if flags.print_config {
        return print_config(&flags.args);
    }
    let setup = load(&flags.args)?;
    // The data files train would read: they exist, and their first rows parse.
    let format =
        crate::learn::data::check_data_files(&setup.loaded.config, setup.scheme.partitions())?;
    // The straggler model train and simulate would build: a trace file is
    // read and checked; what the model does in the long run.
    let delays = crate::straggler::DelaySpec::from_config(&setup.loaded.config)?;
    let straggler_trace = delays.trace_summary();
    let straggler_long_run = crate::straggler::LongRun::measure(&delays);
    warn(&setup.loaded, straggler_trace.as_ref(), &straggler_long_run);
    let report = check_report(
        setup,
        format,
        straggler_trace,
        straggler_long_run,
        flags.samples,
    )?;
    if flags.args.json {
        crate::outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_text(&report);
    }
    Ok(())
}

/// The report of a checked setup: its plan of the first round, its
/// decoding sampled `samples` times, its data, memory, straggler model
/// (the trace's summary and the long run) and network.
fn check_report(
    setup: crate::setup::Setup,
    format: crate::learn::data::FormatChoice,
    straggler_trace: Option<TraceSummary>,
    straggler_long_run: crate::straggler::LongRun,
    samples: usize,
) -> anyhow::Result<CheckReport> {
    let parameters = match serde_json::to_value(setup.parameters())? {
        serde_json::Value::Object(map) => map,
        other => unreachable!("a TOML table converts to a JSON object, not {other}"),
    };
    let (loaded, entry, mut scheme) = (setup.loaded, setup.entry, setup.scheme);
    let config = &loaded.config;
    let (data_files, file_model) = read_data_files(config, scheme.partitions())?;
    let plan = scheme.plan_round(&RoundContext::default());
    let network = crate::sim::communication::communication(config, &plan, None)?;
    let amplification = sample_amplification(scheme.as_mut(), &plan, config.seed, samples);
    let tolerance = scheme.tolerance();
    let k = scheme.workers();
    let memory = memory_report(config, &format, scheme.as_ref());
    let messages_per_worker = most_messages(&plan);
    Ok(CheckReport {
        origin: loaded.origin.clone(),
        scheme: entry.name().to_string(),
        description: entry.description(),
        parameters,
        keys: entry.keys(),
        workers_total: k,
        partitions: scheme.partitions(),
        data_format: DataFormatReport {
            storage: format.storage.name(),
            reason: format.reason,
        },
        samples: samples_report(&loaded),
        memory,
        model: format.model.or(file_model),
        data_files,
        clusters: plan.clusters.iter().map(|c| one_based(c)).collect(),
        tolerated_stragglers: tolerance,
        arrivals_needed: Tolerance {
            worst: k - tolerance.worst,
            best: k - tolerance.best,
        },
        amplification,
        decoding_accuracy: scheme.accuracy().copied(),
        exact_decoding: scheme.exact_decoding(),
        deadline: scheme.deadline(),
        partial_recovery: scheme.partial_recovery(),
        messages_per_worker,
        aggregate: aggregate_line(
            config.runtime.aggregate,
            config.runtime.pack_sparse,
            messages_per_worker,
        ),
        workers: worker_reports(scheme.as_ref(), &plan),
        dynamic_clustering: dynamic_plan(scheme.as_ref(), &loaded.threshold_warnings),
        warnings: all_warnings(&loaded, straggler_trace.as_ref(), &straggler_long_run),
        straggler_trace,
        straggler_long_run,
        network,
        config: config.clone(),
    })
}

/// The most messages a worker sends in `plan`.
fn most_messages(plan: &RoundPlan) -> usize {
    plan.tasks
        .iter()
        .map(|t| t.messages.len())
        .max()
        .unwrap_or(0)
}

/// The config's warnings, the straggler trace's clock warnings and the
/// long run's, as the report lists them.
fn all_warnings(
    loaded: &crate::config::LoadedConfig,
    straggler_trace: Option<&TraceSummary>,
    straggler_long_run: &crate::straggler::LongRun,
) -> Vec<String> {
    loaded
        .warnings()
        .into_iter()
        .chain(straggler_trace.into_iter().flat_map(clock_warnings))
        .chain(straggler_long_run.warning())
        .collect()
}

/// The config's warnings, then the straggler trace's clock warnings and
/// the long run's, on stderr.
fn warn(
    loaded: &crate::config::LoadedConfig,
    straggler_trace: Option<&TraceSummary>,
    straggler_long_run: &crate::straggler::LongRun,
) {
    print_warnings(loaded);
    if let Some(warning) = straggler_trace.and_then(clock_warnings) {
        crate::errln!("warning: {warning}");
    }
    if let Some(warning) = straggler_long_run.warning() {
        crate::errln!("warning: {warning}");
    }
}

/// Per worker: the partitions it stores, its cluster, the codewords it
/// sends in the plan of the first round.
fn worker_reports(scheme: &dyn Scheme, plan: &RoundPlan) -> Vec<WorkerReport> {
    let mut cluster_of = vec![None; scheme.workers()];
    for (c, members) in plan.clusters.iter().enumerate() {
        for &w in members {
            cluster_of[w] = Some(c + 1);
        }
    }
    plan.tasks
        .iter()
        .enumerate()
        .map(|(w, task)| WorkerReport {
            worker: w + 1,
            partitions: one_based(scheme.stored(w)),
            memory_partitions: scheme.stored(w).len(),
            cluster: cluster_of[w],
            codewords: task
                .messages
                .iter()
                .map(|m| CodewordReport {
                    cluster: m.codeword.id.group + 1,
                    index: m.codeword.id.index + 1,
                    after: m.after,
                    partitions: m.codeword.terms.iter().map(|&(p, _)| p + 1).collect(),
                    coefficients: m.codeword.terms.iter().map(|&(_, c)| c).collect(),
                })
                .collect(),
        })
        .collect()
}

/// `runtime.aggregate` as `train` will apply it (docs/aggregate.md), and
/// what it does with several messages per worker.
fn aggregate_line(
    aggregate: crate::config::RuntimeAggregate,
    pack_sparse: bool,
    messages_per_worker: usize,
) -> String {
    use crate::config::RuntimeAggregate;
    let reduce = "results are headers; the decodable set sums its weighted vectors by a \
                  binomial tree and the master receives one vector";
    let multi = if messages_per_worker > 1 {
        "; a worker with several messages in the set sums them with their own \
         coefficients first (reduced per message, never gathered)"
    } else {
        ""
    };
    let packed = if pack_sparse {
        " (packed on sparse features: a linear model's full-batch vectors carry the \
         entries the worker's partitions can make non-zero alone, when at most half of d + 1)"
    } else {
        " (all d + 1 values: runtime.pack_sparse = false)"
    };
    match aggregate {
        RuntimeAggregate::Gather => {
            format!("gather: every result carries its coded vector to the master{packed}")
        }
        RuntimeAggregate::Reduce => format!("reduce: {reduce}{multi}"),
        RuntimeAggregate::Auto => format!(
            "auto: reduce when the ranks span several nodes and a coded vector is at least \
             {} bytes (d ≥ {}), gather otherwise (on one node gathering was faster at every \
             size measured); reduce: {reduce}{multi}",
            RuntimeAggregate::AUTO_REDUCE_BYTES,
            RuntimeAggregate::AUTO_REDUCE_BYTES.div_ceil(8) - 1
        ),
    }
}

/// The samples of synthetic and image data (known without reading a text
/// file) and where the counts come from.
#[derive(Serialize)]
struct SamplesReport {
    train_samples: usize,
    test_samples: usize,
    /// `set` (both keys given), `every image` (an image file's count, a key
    /// unset) or `default` (synthetic data without the keys).
    source: &'static str,
}

/// The least memory one process of a network run needs, MiB (the model's
/// floors of `crate::learn::model::memory`), and the dense samples it holds.
#[derive(Serialize)]
struct MemoryReport {
    /// The master's vectors of d parameters.
    master_mib: u64,
    /// A worker's vectors, candle's copy of θ and its gradient, one batch's activations.
    worker_mib: u64,
    /// The dense training samples of the worker that stores the most partitions (null: sparse data).
    worker_data_mib: Option<u64>,
    /// The dense test samples the master holds (null: sparse data).
    master_test_mib: Option<u64>,
}

/// MiB, rounded up, of `bytes`.
fn mib(bytes: u128) -> u64 {
    bytes.div_ceil(1 << 20) as u64
}

fn samples_report(loaded: &crate::config::LoadedConfig) -> Option<SamplesReport> {
    use crate::config::DataKind;
    let d = &loaded.config.data;
    if matches!(d.kind, DataKind::Libsvm | DataKind::Csv) {
        return None;
    }
    let set = ["data.train_samples", "data.test_samples"]
        .iter()
        .all(|k| loaded.explicit.contains(*k));
    let source = match (set, d.kind) {
        (true, _) => "set",
        (false, DataKind::Idx | DataKind::Cifar10) => "every image",
        (false, _) => "default",
    };
    Some(SamplesReport {
        train_samples: d.train_samples,
        test_samples: d.test_samples,
        source,
    })
}

/// The memory floors of a network, with its dense samples per process.
fn memory_report(
    config: &Config,
    format: &crate::learn::data::FormatChoice,
    scheme: &dyn crate::coding::Scheme,
) -> Option<MemoryReport> {
    let features = format.features;
    let memory = format.memory?;
    let dense = format.storage == crate::learn::data::Storage::Dense;
    let rows = config
        .data
        .train_samples
        .div_ceil(scheme.partitions().max(1)) as u128;
    let stored = (0..scheme.workers())
        .map(|w| scheme.stored(w).len())
        .max()
        .unwrap_or(0) as u128;
    let data = |samples: u128| {
        features
            .filter(|_| dense)
            .map(|f| mib(samples * f as u128 * 8))
    };
    Some(MemoryReport {
        master_mib: mib(memory.master_bytes()),
        worker_mib: mib(memory.worker_bytes()),
        worker_data_mib: data(stored * rows),
        master_test_mib: data(config.data.test_samples as u128),
    })
}

/// The samples and features of a LIBSVM or CSV data set.
#[derive(Serialize)]
struct DataFilesReport {
    train_samples: usize,
    test_samples: usize,
    features: usize,
}

/// For LIBSVM and CSV data: read the files as `train`'s master does before
/// any rank starts (every row parsed, the size limits, the standardisation,
/// the test rows, the model built for the width found), so that `check`
/// refuses what `train` would; and the model's line. Nothing for other data.
fn read_data_files(
    config: &Config,
    partitions: usize,
) -> Result<(Option<DataFilesReport>, Option<String>), crate::error::InputError> {
    use crate::config::DataKind;
    if !matches!(config.data.kind, DataKind::Libsvm | DataKind::Csv) {
        return Ok((None, None));
    }
    let data = crate::learn::DataPlan::new(config, partitions)?;
    data.standardization()?;
    let test = data.load_test()?;
    let model = crate::learn::Model::new(config, data.input())?;
    // As train's master (the test samples) and its workers (every
    // partition they load): the labels fit the model.
    model
        .check_labels(&test)
        .map_err(|e| crate::error::InputError::new("data: the test samples", e))?;
    let every: Vec<usize> = (0..partitions).collect();
    let classifier = !matches!(model, crate::learn::Model::Linear { .. });
    for part in data.load(if classifier { &every } else { &[] })? {
        model.check_labels(&part).map_err(|e| {
            crate::error::InputError::new(format!("data: partition {}", part.id + 1), e)
        })?;
    }
    let model = model.describe();
    Ok((
        Some(DataFilesReport {
            train_samples: data.train_samples(),
            test_samples: data.test_samples(),
            features: data.features(),
        }),
        Some(model),
    ))
}

/// The resolved config as `check` prints it: for LIBSVM and CSV data
/// without the `[data]` keys only synthetic data reads (the file sets them).
fn printed_config(config: &Config) -> String {
    use crate::config::DataKind;
    let text = config.to_toml();
    if !matches!(config.data.kind, DataKind::Libsvm | DataKind::Csv) {
        return text;
    }
    const SYNTHETIC_ONLY: [&str; 5] = [
        "features",
        "train_samples",
        "test_samples",
        "noise_std",
        "nonzeros_per_row",
    ];
    let mut section = String::new();
    let mut kept = String::new();
    for line in text.lines() {
        if line.starts_with('[') {
            section = line.to_string();
        }
        let key = line.split('=').next().unwrap_or("").trim();
        if !(section == "[data]" && SYNTHETIC_ONLY.contains(&key)) {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    kept
}

/// The warning for the replayed trace columns that look like clock readings.
fn clock_warnings(t: &TraceSummary) -> Option<String> {
    (!t.clock_like.is_empty()).then(|| {
        format!(
            "{}: {} look like clock readings, not durations (they never fall from row to row, or vary by less than 0.1% of their median); straggler.model = trace replays each value as a completion time",
            t.file,
            column_list(&t.clock_like)
        )
    })
}

/// Four decimals, or four significant digits beyond a million.
fn short(value: f64) -> String {
    if value.abs() < 1e6 {
        format!("{value:.4}")
    } else {
        format!("{value:.4e}")
    }
}

/// 1-based columns as ranges: `1-4, 7`.
fn column_list(columns: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < columns.len() {
        let mut j = i;
        while j + 1 < columns.len() && columns[j + 1] == columns[j] + 1 {
            j += 1;
        }
        parts.push(if j > i + 1 {
            format!("{}-{}", columns[i], columns[j])
        } else if j == i + 1 {
            format!("{}, {}", columns[i], columns[j])
        } else {
            columns[i].to_string()
        });
        i = j + 1;
    }
    format!(
        "column{} {}",
        if columns.len() == 1 { "" } else { "s" },
        parts.join(", ")
    )
}

fn print_text(r: &CheckReport) {
    print_scheme(r);
    print_data(r);
    print_tolerance(r);
    print_stragglers(r);
    if let Some(d) = &r.dynamic_clustering {
        print_dynamic(r, d);
    }
    print_decoding(r);
    print_clusters(r);
    print_workers(r);
    crate::outln!(
        "\nresolved config:\n{}",
        printed_config(&r.config).trim_end()
    );
}

/// `n what`, with an `s` unless n is 1.
fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// The config's origin, its scheme and parameters, the workers and the
/// data's storage.
fn print_scheme(r: &CheckReport) {
    crate::outln!("gradcode check: {} is valid", r.origin);
    crate::outln!("scheme        {}: {}", r.scheme, r.description);
    if !r.parameters.is_empty() {
        let parameters: Vec<String> = r
            .keys
            .iter()
            .filter_map(|key| Some(format!("{key} = {}", r.parameters.get(*key)?)))
            .collect();
        crate::outln!("parameters    {}", parameters.join(", "));
    }
    crate::outln!(
        "workers       K = {}, partitions = {}",
        r.workers_total,
        r.partitions
    );
    crate::outln!(
        "data          {} partitions ({})",
        r.data_format.storage,
        r.data_format.reason
    );
}

/// The data read, the samples, the model and the memory it needs.
fn print_data(r: &CheckReport) {
    if let Some(d) = &r.data_files {
        crate::outln!(
            "data read     {} training samples, {} test samples, {} features",
            d.train_samples,
            d.test_samples,
            d.features
        );
    }
    if let Some(n) = &r.samples {
        let source = match n.source {
            "set" => "data.train_samples, data.test_samples",
            "every image" => "every image of the files, a count unset",
            _ => "the synthetic defaults",
        };
        crate::outln!(
            "samples       {} training, {} test ({source})",
            n.train_samples,
            n.test_samples
        );
    }
    if let Some(model) = &r.model {
        crate::outln!("model         {model}");
    }
    if let Some(m) = &r.memory {
        let with = |data: Option<u64>, what: &str| {
            data.map_or(String::new(), |d| format!(" + {d} MiB {what}"))
        };
        crate::outln!(
            "memory        at least {} MiB in the master{}, {} MiB in a worker{} (model.max_memory_mib counts the model's part)",
            m.master_mib,
            with(m.master_test_mib, "of test samples"),
            m.worker_mib,
            with(m.worker_data_mib, "of its partitions' samples")
        );
    }
}

/// The clusters, the stragglers tolerated, the arrivals needed and the
/// sampled decoding amplification.
fn print_tolerance(r: &CheckReport) {
    if !r.clusters.is_empty() {
        crate::outln!(
            "clusters      {} of {} workers",
            r.clusters.len(),
            r.clusters[0].len()
        );
    }
    crate::outln!(
        "tolerated     {} in the worst case, {} in the best case",
        plural(r.tolerated_stragglers.worst, "straggler"),
        plural(r.tolerated_stragglers.best, "straggler"),
    );
    crate::outln!(
        "arrivals      the master needs {} in the worst case, {} in the best case",
        plural(r.arrivals_needed.worst, "worker"),
        plural(r.arrivals_needed.best, "worker"),
    );
    let a = &r.amplification;
    crate::outln!(
        "decoding      worst amplification max|a|·max|B| = {:.3e}, worst residual = {:.1e} over {} sampled minimal arrival sets{}",
        a.worst,
        a.max_residual,
        a.samples,
        if a.failed > 0 {
            format!("; {} FAILED to decode numerically", a.failed)
        } else {
            String::new()
        }
    );
}

/// The straggler model in the long run, and its trace file.
fn print_stragglers(r: &CheckReport) {
    let l = &r.straggler_long_run;
    let share = match r.config.straggler.model {
        StragglerModel::None | StragglerModel::ShiftedExponential => {
            "no straggler state".to_string()
        }
        _ => format!(
            "{:.1}% of worker-iterations straggle in the long run",
            100.0 * l.straggler_share
        ),
    };
    crate::outln!(
        "stragglers    {}: {share} ({} iterations of trial 0{}); one partition computation takes {} on average, median {} (model time units)",
        r.config.straggler.model.name(),
        l.iterations,
        match l.stationary_slow_share {
            Some(p) => format!("; the chain is slow {:.1}% of the time", 100.0 * p),
            None => String::new(),
        },
        short(l.mean_unit_time),
        short(l.median_unit_time)
    );
    if let Some(t) = &r.straggler_trace {
        crate::outln!(
            "trace         {}: {} rows x {} columns, replaying {}; median {}, range [{}, {}] (model time units)",
            t.file,
            t.rows,
            t.columns,
            column_list(&t.replayed),
            short(t.median),
            short(t.min),
            short(t.max)
        );
    }
}

/// Dynamic clustering: the memory, Lemma 1, the clustering rule and the
/// assignment matrix.
fn print_dynamic(r: &CheckReport, d: &DynamicPlan) {
    crate::outln!(
        "memory        every worker stores n·l = {} partitions (n = {} clusters per worker); computes {} per iteration",
        d.memory_partitions,
        d.clusters_per_worker,
        r.workers
            .first()
            .map_or(0, |w| w.codewords.first().map_or(0, |c| c.after))
    );
    let n = d.clusters_per_worker as f64;
    if d.lemma1.holds {
        crate::outln!(
            "Lemma 1       holds: n = {n} > P(K-1)/(2K) = {:.3}, a single swap resolves any Phase I conflict",
            d.lemma1.bound
        );
    } else {
        crate::outln!(
            "Lemma 1       does NOT hold: n = {n} <= P(K-1)/(2K) = {:.3}; a conflict may need more than one swap, which the augmenting-path repair provides (every clustering stays valid)",
            d.lemma1.bound
        );
    }
    crate::outln!(
        "clustering    {} per iteration; a worker with estimated rate < {} straggles",
        d.clustering,
        d.straggler_threshold
    );
    for warning in &d.threshold_warnings {
        crate::outln!("  warning: {warning}");
    }
    crate::outln!(
        "\nassignment matrix A_cluster ({} x {}, column p = workers that may join cluster p): {}",
        d.assignment.len(),
        r.clusters.len(),
        d.assignment_source
    );
    if d.distinct_columns < r.clusters.len() && d.clusters_per_worker < r.clusters.len() {
        crate::outln!(
            "  warning: only {} of {} columns differ: clusters with the same column share their candidates, so those workers can be spread over fewer clusters",
            d.distinct_columns,
            r.clusters.len()
        );
    }
    for row in &d.assignment {
        let row: Vec<String> = row.iter().map(|w| format!("{w:>4}")).collect();
        crate::outln!("  {}", row.join(""));
    }
}

/// The decoding accuracy, partial recovery, the messages, the
/// aggregation and the network.
fn print_decoding(r: &CheckReport) {
    if let Some(acc) = &r.decoding_accuracy {
        if r.exact_decoding {
            crate::outln!(
                "accuracy      f64 decoding exact to {EXACT_RELATIVE_ERROR:.0e} relative: worst relative error {:.1e}, worst amplification {:.3e} over {} sampled decodable sets",
                acc.worst_relative_error,
                acc.worst_amplification,
                acc.sets
            );
        } else {
            crate::outln!(
                "accuracy      NOT EXACT: f64 decoding is not exact to {EXACT_RELATIVE_ERROR:.0e} relative (worst relative error {:.1e}, worst amplification {:.3e}, {} of {} sampled decodable sets failed the residual tolerance); `train` refuses this config, `simulate` still works",
                acc.worst_relative_error,
                acc.worst_amplification,
                acc.failed,
                acc.sets
            );
        }
    }
    if r.partial_recovery {
        let a = &r.amplification;
        crate::outln!(
            "recovery      {}{}; mean decode error ‖a·B_S − 1‖₂ = {:.4} over {} uniformly random arrival orders",
            if a.approximate {
                "approximate: the master updates with the decoded approximation of the sum over every partition, over every sample"
            } else {
                "partial: the master updates with the mean over the recovered partitions"
            },
            r.deadline
                .map(|d| format!("; deadline {d} (model time)"))
                .unwrap_or_default(),
            a.mean_decode_error,
            a.samples
        );
    }
    if r.messages_per_worker > 1 {
        crate::outln!(
            "messages      up to {} per worker per iteration",
            r.messages_per_worker
        );
    }
    crate::outln!("aggregate     {}", r.aggregate);
    if let Some(n) = &r.network {
        crate::outln!(
            "network       {}",
            n.describe(&format!("the plan's {} messages", n.messages))
        );
    }
}

/// The cluster assignment (or the initial clusters of dynamic clustering).
fn print_clusters(r: &CheckReport) {
    if !r.clusters.is_empty() {
        if r.dynamic_clustering.is_some() {
            crate::outln!(
                "\ninitial clusters, used without straggler information (column p = cluster p, row i = position i):"
            );
        } else {
            crate::outln!("\ncluster assignment (column p = cluster p, row i = position i):");
        }
        let rows = r.clusters[0].len();
        for i in 0..rows {
            let row: Vec<String> = r.clusters.iter().map(|c| format!("{:>4}", c[i])).collect();
            crate::outln!("  {}", row.join(""));
        }
    }
}

/// One row per worker: its memory, the partitions it stores, the
/// codewords it sends.
fn print_workers(r: &CheckReport) {
    crate::outln!("\nworker  memory  partitions stored      codeword sent");
    for w in &r.workers {
        let stored: Vec<String> = w.partitions.iter().map(|p| p.to_string()).collect();
        let codewords: Vec<String> = w
            .codewords
            .iter()
            .map(|c| {
                let terms: Vec<String> = c
                    .partitions
                    .iter()
                    .zip(&c.coefficients)
                    .map(|(p, a)| format!("{a:+.4}·g{p}"))
                    .collect();
                format!("c({},{}) = {}", c.cluster, c.index, terms.join(" "))
            })
            .collect();
        crate::outln!(
            "{:>6}  {:>6}  {:<22}  {}",
            w.worker,
            w.memory_partitions,
            stored.join(" "),
            codewords.join("; ")
        );
    }
}
