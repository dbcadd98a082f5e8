//! Bad input never panics: property-based fuzzing of the config parser, the
//! LIBSVM / CSV data loaders, the straggler trace CSV loader and the HDF5
//! trace reader (issue 8, item 5), with grammar-aware generators.
//!
//! Quick by default (a few seconds); `GRADCODE_FUZZ_CASES=N` runs N cases per
//! property (`scripts/fuzz.sh` does, next to the coverage-guided libFuzzer
//! targets in `fuzz/`). The harnesses are in `tests/fuzz_support/`.

mod fuzz_support;

use fuzz_support::*;
use gradcode::config::{DataKind, Loss};
use proptest::prelude::*;

fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("GRADCODE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Every key of the schema, with its section.
const KEYS: &[&str] = &[
    "workers",
    "seed",
    "scheme.kind",
    "scheme.load",
    "scheme.clusters",
    "scheme.assignment",
    "scheme.assignment_draws",
    "scheme.wait_for",
    "scheme.deadline",
    "scheme.placement",
    "scheme.groups",
    "scheme.c1",
    "scheme.c2",
    "scheme.design",
    "scheme.order",
    "scheme.orders",
    "scheme.slowdown",
    "scheme.degree",
    "scheme.graph",
    "scheme.decoder",
    "scheme.straggle_probability",
    "scheme.straggle_probabilities",
    "scheme.code_draws",
    "scheme.decode_tolerance",
    "scheme.decode_cache_entries",
    "scheme.clusters_per_worker",
    "scheme.straggler_threshold",
    "scheme.clustering",
    "straggler.model",
    "straggler.alpha",
    "straggler.mu",
    "straggler.state_info",
    "straggler.mode",
    "straggler.time_unit_ms",
    "straggler.mu_fast",
    "straggler.mu_slow",
    "straggler.switch_probability",
    "straggler.initial_stragglers",
    "straggler.rate_max",
    "straggler.slow_factor",
    "straggler.rate_threshold",
    "straggler.delayed_workers",
    "straggler.delayed_count",
    "straggler.delay_mean",
    "straggler.trace_file",
    "straggler.trace_columns",
    "straggler.trace_threshold",
    "data.kind",
    "data.train_samples",
    "data.test_samples",
    "data.features",
    "data.noise_std",
    "data.path",
    "data.test_path",
    "data.test_fraction",
    "data.standardize",
    "data.max_matrix_mib",
    "model.loss",
    "model.l2",
    "train.iterations",
    "train.optimizer",
    "train.learning_rate",
    "train.schedule",
    "train.decay_iterations",
    "train.milestones",
    "train.gamma",
    "train.min_learning_rate",
    "train.warmup_iterations",
    "train.eval_every",
    "output.trace",
    "output.progress_every",
    "simulate.trials",
    "simulate.iterations",
    "simulate.compare",
    "simulate.baseline",
    "nonsense.key",
];

/// Values that break rules: boundaries, huge numbers, NaN and infinities, wrong types, names.
const VALUES: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "4",
    "6",
    "12",
    "-1",
    "4096",
    "4097",
    "1000000000",
    "9223372036854775807",
    "18446744073709551615",
    "1e18",
    "1e308",
    "1e-320",
    "0.5",
    "-0.0",
    "nan",
    "inf",
    "-inf",
    "true",
    "\"\"",
    "\"x\"",
    "\"gc-sc\"",
    "\"gc-dc\"",
    "\"gc-mmc\"",
    "\"is-gc\"",
    "\"gc-partial\"",
    "\"uncoded\"",
    "\"ignore-stragglers\"",
    "\"uc-mmc\"",
    "\"gc-frac\"",
    "\"hr\"",
    "\"fr\"",
    "\"uncorrelated\"",
    "\"hybrid\"",
    "\"optimal\"",
    "\"one-step\"",
    "\"random-regular\"",
    "\"gilbert-elliott\"",
    "\"gilbert-elliott-heterogeneous\"",
    "\"time-varying\"",
    "\"extra-delay\"",
    "\"trace\"",
    "\"synthetic-logistic\"",
    "\"libsvm\"",
    "\"logistic\"",
    "\"perfect\"",
    "\"nesterov\"",
    "\"inverse-time\"",
    "\"/nonexistent/file\"",
    "[]",
    "[0]",
    "[1, 2]",
    "[1, 2, 3]",
    "[2, 2]",
    "[9223372036854775807]",
    "[[1, 2], [3, 4]]",
    "[[1, 2, 3], [4, 5, 6]]",
    "[[0]]",
    "[[]]",
    "[\"gc\", \"gc-sc\"]",
    "[\"gc\", \"gc\"]",
    "[{ name = \"v\", kind = \"gc-sc\", set = { clusters = 2 } }]",
    "[{ name = \"v\", kind = \"gc-cyclic\", set = { load = 9223372036854775807 } }]",
    "[{ name = \"v\", kind = \"is-gc\", set = { kind = \"gc\" } }]",
    "[{ name = \"a b\", kind = \"uncoded\" }]",
    "{}",
    "{ x = 1 }",
];

#[test]
fn every_registered_scheme_and_key_is_fuzzed() {
    let registry = &gradcode::coding::SCHEMES;
    for key in registry.keys() {
        let key = format!("scheme.{key}");
        assert!(KEYS.contains(&key.as_str()), "{key} is not in KEYS");
    }
    for name in registry.names() {
        let quoted = format!("\"{name}\"");
        assert!(KINDS.contains(&quoted.as_str()), "{name} is not in KINDS");
    }
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(VALUES).prop_map(str::to_string),
        1 => any::<i64>().prop_map(|v| v.to_string()),
        1 => any::<f64>().prop_map(|v| format!("{v:?}")),
        1 => (0usize..64).prop_map(|v| v.to_string()),
        1 => proptest::collection::vec(0usize..40, 0..12).prop_map(|v| format!("{v:?}")),
    ]
}

const COUNTS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "4",
    "5",
    "6",
    "8",
    "12",
    "4096",
    "9223372036854775807",
];
const REALS: &[&str] = &[
    "0.0", "0.5", "1.0", "2.0", "10.0", "1e-320", "1e308", "nan", "inf", "-1.0",
];
const KINDS: &[&str] = &[
    "\"uncoded\"",
    "\"ignore-stragglers\"",
    "\"gc-frac\"",
    "\"gc-cyclic\"",
    "\"gc-sc\"",
    "\"gc-dc\"",
    "\"is-gc\"",
    "\"gc-mmc\"",
    "\"uc-mmc\"",
    "\"gc-partial\"",
    "\"agc-expander\"",
    "\"agc-frc\"",
    "\"agc-bgc\"",
    "\"agc-graph\"",
    "\"agc-bibd\"",
    "\"sgc\"",
    "\"erasurehead\"",
];
const MODELS: &[&str] = &[
    "\"none\"",
    "\"shifted-exponential\"",
    "\"gilbert-elliott\"",
    "\"gilbert-elliott-heterogeneous\"",
    "\"time-varying\"",
    "\"extra-delay\"",
];

/// A value of the key's own type most of the time (so that many configs are
/// valid and reach the scheme constructors), anything otherwise.
fn typed_value(key: &'static str) -> BoxedStrategy<String> {
    let pool: &'static [&'static str] = match key.rsplit('.').next().unwrap_or(key) {
        "kind" if key.starts_with("scheme") => KINDS,
        "model" => MODELS,
        "placement" => &["\"fr\"", "\"cr\"", "\"hr\""],
        "design" => &["\"correlated\"", "\"uncorrelated\"", "\"hybrid\""],
        "state_info" => &["\"perfect\"", "\"imperfect\""],
        "orders" | "delayed_workers" | "trace_columns" => {
            &["[]", "[1]", "[1, 2]", "[2, 1]", "[1, 1]", "[3, 2, 1]"]
        }
        "assignment" => &[
            "[[1, 2], [3, 4]]",
            "[[1, 2, 3], [4, 5, 6]]",
            "[[1], [2]]",
            "[[1, 1]]",
        ],
        "compare" => &[
            "[\"gc\", \"gc-sc\"]",
            "[\"gc-dc\", \"uncoded\"]",
            "[{ name = \"v\", kind = \"gc-sc\", set = { clusters = 2 } }]",
        ],
        "deadline"
        | "slowdown"
        | "decode_tolerance"
        | "straggler_threshold"
        | "alpha"
        | "mu"
        | "time_unit_ms"
        | "mu_fast"
        | "mu_slow"
        | "switch_probability"
        | "rate_max"
        | "slow_factor"
        | "rate_threshold"
        | "delay_mean"
        | "trace_threshold"
        | "noise_std"
        | "test_fraction"
        | "l2"
        | "learning_rate"
        | "gamma"
        | "min_learning_rate"
        | "decay_iterations" => REALS,
        _ => COUNTS,
    };
    prop_oneof![
        6 => proptest::sample::select(pool).prop_map(str::to_string),
        1 => value(),
    ]
    .boxed()
}

/// A config of random keys and values, as a file and as `--set` overrides.
fn config_input() -> impl Strategy<Value = (String, Vec<String>)> {
    let pair = || proptest::sample::select(KEYS).prop_flat_map(|k| (Just(k), typed_value(k)));
    let base = (
        proptest::sample::select(KINDS),
        proptest::sample::select(&["2", "4", "6", "8", "12", "16"][..]),
    );
    (
        base,
        proptest::collection::vec(pair(), 0..7),
        proptest::collection::vec(pair(), 0..3),
    )
        .prop_map(|((kind, workers), file, sets)| {
            // Later keys replace earlier ones (a duplicate key is a TOML error, tested elsewhere).
            let mut keys: std::collections::BTreeMap<&str, String> = Default::default();
            keys.insert("scheme.kind", kind.to_string());
            keys.insert("workers", workers.to_string());
            keys.insert("data.train_samples", "64".to_string());
            keys.insert("data.features", "4".to_string());
            keys.extend(file);
            let mut root = String::new();
            let mut sections: std::collections::BTreeMap<&str, String> = Default::default();
            for (key, v) in keys {
                match key.split_once('.') {
                    None => root.push_str(&format!("{key} = {v}\n")),
                    Some((section, name)) => sections
                        .entry(section)
                        .or_default()
                        .push_str(&format!("{name} = {v}\n")),
                }
            }
            for (section, body) in sections {
                root.push_str(&format!("[{section}]\n{body}"));
            }
            let sets = sets.into_iter().map(|(k, v)| format!("{k}={v}")).collect();
            (root, sets)
        })
}

/// Text damage: cut, splice garbage into, or repeat part of a valid text.
fn damaged(valid: &'static [&'static str]) -> impl Strategy<Value = Vec<u8>> {
    (
        proptest::sample::select(valid),
        any::<prop::sample::Index>(),
        proptest::collection::vec(any::<u8>(), 0..16),
        0u8..3,
    )
        .prop_map(|(text, at, garbage, how)| {
            let bytes = text.as_bytes();
            let i = at.index(bytes.len() + 1);
            let mut out = bytes[..i].to_vec();
            match how {
                0 => {}
                1 => {
                    out.extend_from_slice(&garbage);
                    out.extend_from_slice(&bytes[i..]);
                }
                _ => {
                    out.extend_from_slice(&bytes[i..]);
                    out.extend_from_slice(&bytes[..i]);
                }
            }
            out
        })
}

const CONFIGS: &[&str] = &[
    include_str!("../configs/demo.toml"),
    include_str!("../configs/paper/gcdc-fig3.toml"),
    include_str!("../configs/paper/mmc-fig1.toml"),
    include_str!("../configs/paper/isgc-recovery.toml"),
];

proptest! {
    #![proptest_config(cases(48))]

    #[test]
    fn any_config_and_overrides_end_in_ok_or_an_input_error((text, sets) in config_input()) {
        config_text(&text, &sets);
    }

    #[test]
    fn damaged_configs_end_in_ok_or_an_input_error(bytes in damaged(CONFIGS)) {
        config_bytes(&bytes);
    }
}

/// One LIBSVM or CSV line of valid pieces, extreme numbers and garbage.
fn data_line(csv: bool) -> impl Strategy<Value = String> {
    let number = prop_oneof![
        Just("1".to_string()),
        Just("-1".to_string()),
        Just("0".to_string()),
        Just("2.5".to_string()),
        Just("1e308".to_string()),
        Just("1e309".to_string()),
        Just("nan".to_string()),
        Just("".to_string()),
        Just("1.".to_string()),
        Just("-".to_string()),
        any::<f64>().prop_map(|v| v.to_string()),
        "[ -~]{0,4}",
    ];
    let index = prop_oneof![
        (1usize..12).prop_map(|i| i.to_string()),
        Just("0".to_string()),
        Just("100000000".to_string()),
        Just("18446744073709551615".to_string()),
        Just("18446744073709551616".to_string()),
        Just("x".to_string()),
    ];
    if csv {
        proptest::collection::vec(number, 1..6)
            .prop_map(|cells| cells.join(","))
            .boxed()
    } else {
        (
            number.clone(),
            proptest::collection::vec((index, number), 0..6),
        )
            .prop_map(|(label, feats)| {
                let mut line = label;
                for (i, v) in feats {
                    line.push_str(&format!(" {i}:{v}"));
                }
                line
            })
            .boxed()
    }
}

fn data_file(csv: bool) -> impl Strategy<Value = Vec<u8>> {
    (
        proptest::collection::vec(data_line(csv), 0..12),
        any::<bool>(),
        any::<prop::sample::Index>(),
    )
        .prop_map(move |(lines, header, cut)| {
            let mut text = String::new();
            if csv && header {
                text.push_str("y,a,b\n");
            }
            for l in lines {
                text.push_str(&l);
                text.push('\n');
            }
            // Sometimes truncated mid-line (a file that ends mid-number).
            let mut bytes = text.into_bytes();
            if cut.index(4) == 0 {
                let at = cut.index(bytes.len() + 1);
                bytes.truncate(at);
            }
            bytes
        })
}

const LIBSVM_LINES: &[&str] = &[
    "1 1:0.5 2:1\n-1 1:2 3:0.25\n1 2:3\n-1 1:1 2:1 3:1\n",
    "0 1:1\n1 2:1 # comment\n\n# full-line comment\n1 1:1e-3\n",
];
const CSV_LINES: &[&str] = &["y,a,b\n1,2,3\n-1,0.5,1\n1,1,1\n-1,2,2\n"];

proptest! {
    #![proptest_config(cases(48))]

    #[test]
    fn libsvm_files_end_in_ok_or_a_file_line_error(
        train in data_file(false),
        test in proptest::option::of(data_file(false)),
        logistic in any::<bool>(),
        standardize in any::<bool>(),
        partitions in 1usize..5,
    ) {
        let loss = if logistic { Loss::Logistic } else { Loss::LeastSquares };
        data_files(DataKind::Libsvm, loss, standardize, partitions, 0.25, &train, test.as_deref());
    }

    #[test]
    fn csv_files_end_in_ok_or_a_file_line_error(
        train in data_file(true),
        test in proptest::option::of(data_file(true)),
        logistic in any::<bool>(),
        partitions in 1usize..5,
    ) {
        let loss = if logistic { Loss::Logistic } else { Loss::LeastSquares };
        data_files(DataKind::Csv, loss, true, partitions, 0.5, &train, test.as_deref());
    }

    #[test]
    fn damaged_data_files_end_in_ok_or_a_file_line_error(
        svm in damaged(LIBSVM_LINES),
        csv in damaged(CSV_LINES),
        flags in any::<[u8; 2]>(),
    ) {
        data_bytes(&[&[flags[0] & !1, flags[1]][..], &svm].concat());
        data_bytes(&[&[flags[0] | 1, flags[1]][..], &csv].concat());
    }
}

/// A trace CSV: optional header, rows of cells (numbers, extremes, garbage, quotes).
fn trace_text() -> impl Strategy<Value = Vec<u8>> {
    let cell = prop_oneof![
        4 => (0u32..1000).prop_map(|v| format!("{}", v as f64 / 100.0)),
        1 => Just("-1".to_string()),
        1 => Just("nan".to_string()),
        1 => Just("inf".to_string()),
        1 => Just("1e400".to_string()),
        1 => Just("\"2.5\"".to_string()),
        1 => Just("".to_string()),
        1 => "[ -~]{0,3}",
    ];
    (
        any::<bool>(),
        1usize..6,
        proptest::collection::vec(proptest::collection::vec(cell, 1..6), 0..8),
    )
        .prop_map(|(header, width, rows)| {
            let mut text = String::new();
            if header {
                let names: Vec<String> = (0..width).map(|i| format!("w{i}")).collect();
                text.push_str(&names.join(","));
                text.push('\n');
            }
            for row in rows {
                text.push_str(&row.join(","));
                text.push('\n');
            }
            text.into_bytes()
        })
}

proptest! {
    #![proptest_config(cases(64))]

    #[test]
    fn trace_csv_files_end_in_ok_or_a_file_line_error(
        text in trace_text(),
        workers in 1usize..6,
        columns in proptest::option::of(proptest::collection::vec(0usize..8, 1..6)),
    ) {
        trace_csv(&text, workers, columns);
    }

    #[test]
    fn raw_trace_bytes_end_in_ok_or_an_error(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        trace_csv_bytes(&bytes);
    }
}

// Truncation only: the realistic damage (a killed job, a partial copy). Bit
// flips inside HDF5 metadata can crash libhdf5 itself (see scripts/fuzz.sh
// and the hdf5_trace fuzz target), so they are not in the always-on suite.
#[cfg(feature = "hdf5")]
proptest! {
    #![proptest_config(cases(24))]

    #[test]
    fn truncated_hdf5_traces_end_in_ok_or_a_trace_error(cut in any::<prop::sample::Index>()) {
        let valid = hdf5_trace::valid_trace();
        hdf5_trace::hdf5_file(&valid[..cut.index(valid.len() + 1)]);
    }
}

// Structure-aware: hostile shapes, cluster ids, self links, external links,
// deep groups, hard-linked trials (tests/fuzz_support/hostile.rs), built with
// the hdf5 crate, so never a crash of libhdf5 on corrupt metadata.
#[cfg(feature = "hdf5")]
proptest! {
    #![proptest_config(cases(32))]

    #[test]
    fn hostile_hdf5_structures_end_in_ok_or_a_trace_error(
        bytes in proptest::collection::vec(any::<u8>(), 0..40)
    ) {
        hdf5_trace::structure_bytes(&bytes);
    }
}

/// The structure generator is not vacuous: the structures of issue 17 are
/// a few bytes away, and inspect refuses each.
#[cfg(feature = "hdf5")]
#[test]
fn the_structure_generator_reaches_every_hostile_case() {
    use fuzz_support::hostile::{Link, Structure};
    type Case = (&'static str, &'static [u8], fn(&Structure) -> bool);
    let cases: [Case; 5] = [
        // flags 0, 3 iterations, 2 workers, one claim: dataset 0 (duration_s), 1 column, 10^9 rows.
        ("10^9 rows", &[0, 3, 1, 1, 0, 1, 7], |s| {
            s.claims == [(0, 1_000_000_000, 1)]
        }),
        ("cluster id 2^62", &[0, 3, 1, 0, 1, 7], |s| {
            s.cluster_ids == [1 << 62]
        }),
        ("self link", &[8, 3, 1, 0, 0, 1], |s| {
            s.links == [Link::SelfHard]
        }),
        ("external link", &[8, 3, 1, 0, 0, 0, 0, 0, 0, 16], |s| {
            s.links == [Link::External]
        }),
        ("deep groups", &[16, 3, 1, 0, 0, 0, 0, 0, 0, 0, 0, 4], |s| {
            s.depth == 100
        }),
    ];
    for (what, bytes, is) in cases {
        let s = Structure::from_bytes(bytes);
        assert!(is(&s), "{what}: {s:?}");
        let path = scratch_file("generated.h5");
        fuzz_support::hostile::build(&path, &s);
        let [_, report, _] = hdf5_trace::read_all(&path);
        assert!(report.is_some(), "{what}: inspect accepted {s:?}");
    }
}

/// The harness is not vacuous: the untouched trace passes every reader.
#[cfg(feature = "hdf5")]
#[test]
fn the_valid_trace_reads_back_with_every_reader() {
    let path = scratch_file("valid-every-reader.h5");
    std::fs::write(&path, hdf5_trace::valid_trace()).unwrap();
    let errors = hdf5_trace::read_all(&path);
    assert!(errors.iter().all(Option::is_none), "{errors:?}");
}

#[cfg(feature = "hdf5")]
#[test]
fn every_truncation_of_a_trace_ends_in_ok_or_a_trace_error() {
    let valid = hdf5_trace::valid_trace();
    // Every 97th length, and the last bytes one by one.
    let lengths = (0..valid.len())
        .step_by(97)
        .chain(valid.len().saturating_sub(16)..=valid.len());
    for len in lengths {
        hdf5_trace::hdf5_file(&valid[..len]);
    }
}

/// Every length of the valid trace (about 66 000 files; a minute): run by
/// `cargo test --release --test fuzz_inputs -- --ignored`.
#[cfg(feature = "hdf5")]
#[test]
#[ignore]
fn every_length_of_a_truncated_trace_ends_in_ok_or_a_trace_error() {
    let valid = hdf5_trace::valid_trace();
    for len in 0..=valid.len() {
        hdf5_trace::hdf5_file(&valid[..len]);
    }
}
