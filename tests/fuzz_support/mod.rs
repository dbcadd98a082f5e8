//! Fuzz harnesses of the input parsers, shared by the always-on proptest
//! version (`tests/fuzz_inputs.rs`) and the coverage-guided libFuzzer targets
//! (`fuzz/fuzz_targets/*.rs`, run by `scripts/fuzz.sh`).
//!
//! Each harness feeds one input through a parser and everything that
//! consumes its result, and checks that the input ends in `Ok` or a typed
//! error (`InputError`, `CodingError`, `TraceError`) with a one-line message.
//! A panic, an abort or an allocation beyond the fuzzer's memory limit is a
//! finding.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use gradcode::coding::SCHEMES;
use gradcode::coding::{self, Arrival, CodingError, RoundContext};
use gradcode::config::{self, Config, DataKind, Loss, StragglerModel};
use gradcode::error::InputError;
use gradcode::learn::DataPlan;
use gradcode::setup;
use gradcode::straggler::{DelaySpec, RoundSample, TraceTable};

/// Schemes are built only for configs at most this large: a valid config with
/// K = 4096 workers and load 2000 is legal but takes minutes to build (K dense
/// (r-1) × (r-1) solves per draw), which is work, not a bug; the limits of K
/// and of every key are checked by validation whatever their size.
pub const BUILD_MAX_WORKERS: usize = 256;
pub const BUILD_MAX_LOAD: usize = 32;
pub const BUILD_MAX_DRAWS: usize = 8;

/// `data.max_matrix_mib` of the data harness: a fuzzed LIBSVM index may ask for a wide matrix.
pub const FUZZ_MATRIX_MIB: usize = 64;

/// A per-process scratch directory for the files the harnesses write: under
/// cargo's folder for test data (in `target/`) when built as a test, the system's
/// temporary folder when built as a libFuzzer target.
pub fn scratch_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base =
            option_env!("CARGO_TARGET_TMPDIR").map_or_else(std::env::temp_dir, PathBuf::from);
        let dir = base.join(format!("gradcode-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create the fuzz scratch directory");
        dir
    })
}

/// A file in the scratch directory, private to the calling thread (tests run in parallel).
pub fn scratch_file(name: &str) -> PathBuf {
    let thread = format!("{:?}", std::thread::current().id());
    let thread: String = thread.chars().filter(char::is_ascii_digit).collect();
    scratch_dir().join(format!("t{thread}-{name}"))
}

fn one_line(message: &str) {
    assert!(!message.contains('\n'), "error spans lines: {message:?}");
    assert!(!message.trim().is_empty(), "empty error message");
}

/// An `InputError` names a field and says what is wrong, in one line.
pub fn check_input_error(e: &InputError) {
    one_line(&e.to_string());
    assert!(!e.field.is_empty(), "error without a field: {e}");
    // The message is one line: whitespace in a field (a quoted TOML key) is collapsed.
    let field = e.field.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        e.to_string().contains(&field),
        "the message does not name its field {:?}: {e}",
        e.field
    );
}

fn check_coding_error(e: &CodingError) {
    one_line(&e.to_string());
    if let CodingError::Invalid { param, .. } = e {
        assert!(param.starts_with("scheme."), "{e}");
    }
}

// ---------------------------------------------------------------- config

/// Config bytes: the text, then `--set` overrides separated by NUL bytes.
pub fn config_bytes(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.split('\0');
    let toml = parts.next().unwrap_or("");
    let overrides: Vec<String> = parts.take(8).map(str::to_string).collect();
    config_text(toml, &overrides);
}

/// Parse a config with overrides, then build everything that only needs the config.
pub fn config_text(toml: &str, overrides: &[String]) {
    let loaded = config::parse(toml, "fuzz.toml", overrides)
        .and_then(|parsed| setup::resolve(&coding::SCHEMES, parsed));
    match loaded {
        Err(e) => check_input_error(&e),
        Ok(loaded) => {
            for w in loaded.unused_keys() {
                one_line(&w);
            }
            exercise_config(&loaded.config);
        }
    }
}

fn cheap_to_build(c: &Config) -> bool {
    let at_most = |key: &str, max: usize| {
        SCHEMES
            .param::<Option<usize>>(c, key)
            .is_ok_and(|v| v.is_none_or(|v| v <= max))
    };
    c.workers <= BUILD_MAX_WORKERS
        && at_most("load", BUILD_MAX_LOAD)
        && at_most("code_draws", BUILD_MAX_DRAWS)
        && at_most("clusters_per_worker", BUILD_MAX_LOAD)
}

/// Everything `check` and `simulate` derive from a valid config before running.
pub fn exercise_config(c: &Config) {
    // The resolved config is valid TOML that parses back to the same config.
    let resolved = c.to_toml();
    let again = config::parse(&resolved, "resolved.toml", &[])
        .and_then(|parsed| setup::resolve(&coding::SCHEMES, parsed))
        .unwrap_or_else(|e| panic!("the resolved config does not parse: {e}\n{resolved}"));
    assert_eq!(again.config.to_toml(), resolved);
    for entry in c.compared() {
        let entry_config = match c.for_entry(&entry) {
            Ok(x) => x,
            Err(e) => {
                check_input_error(&e);
                continue;
            }
        };
        if !cheap_to_build(&entry_config) {
            continue;
        }
        match coding::build_kind(entry.kind(), &entry_config) {
            Err(e) => check_coding_error(&e),
            Ok(mut scheme) => {
                if std::env::var_os("GRADCODE_FUZZ_VERBOSE").is_some() {
                    eprintln!("built {} K={}", entry.name(), scheme.workers());
                }
                let k = scheme.workers();
                for w in 0..k {
                    assert!(scheme.stored(w).iter().all(|&p| p < scheme.partitions()));
                }
                let plan = scheme.plan_round(&RoundContext::default());
                assert_eq!(plan.tasks.len(), k);
                let arrivals: Vec<Arrival> = plan
                    .tasks
                    .iter()
                    .enumerate()
                    .flat_map(|(worker, t)| {
                        (0..t.messages.len()).map(move |message| Arrival { worker, message })
                    })
                    .collect();
                let (decoding, used) =
                    gradcode::engine::decode_prefix(scheme.as_mut(), &plan, &arrivals);
                assert!(used <= arrivals.len());
                let fraction = decoding.recovered_fraction(scheme.partitions());
                assert!((0.0..=1.0).contains(&fraction), "{fraction}");
            }
        }
    }
    if c.straggler.model != StragglerModel::Trace && c.workers <= BUILD_MAX_WORKERS {
        match DelaySpec::from_config(c) {
            Err(e) => check_input_error(&e),
            Ok(spec) => {
                let mut model = spec.model(0);
                let mut sample = RoundSample::new(c.workers);
                for _ in 0..3 {
                    model.sample(&mut sample);
                    assert!(
                        sample.unit_time.iter().all(|u| *u >= 0.0),
                        "{:?}",
                        sample.unit_time
                    );
                    assert!(sample.extra_time.iter().all(|e| *e >= 0.0));
                }
            }
        }
    }
}

// ---------------------------------------------------------------- data files

/// A data file (and maybe a test file) with fuzzed content. Byte 0 picks the
/// kind, loss, standardisation and whether a test file follows (the rest
/// split at the first NUL); byte 1 the partitions and the held-out share.
pub fn data_bytes(data: &[u8]) {
    let (head, body) = data.split_at(data.len().min(2));
    let flags = head.first().copied().unwrap_or(0);
    let shape = head.get(1).copied().unwrap_or(0);
    let kind = if flags & 1 == 0 {
        DataKind::Libsvm
    } else {
        DataKind::Csv
    };
    let loss = if flags & 2 == 0 {
        Loss::LeastSquares
    } else {
        Loss::Logistic
    };
    let standardize = flags & 4 != 0;
    let with_test = flags & 8 != 0;
    let partitions = 1 + usize::from(shape & 7);
    let test_fraction = [0.0, 0.2, 0.5, 0.9][usize::from(shape >> 3) & 3];
    let (train, test) = match (with_test, body.iter().position(|&b| b == 0)) {
        (true, Some(i)) => (&body[..i], Some(&body[i + 1..])),
        _ => (body, None),
    };
    data_files(
        kind,
        loss,
        standardize,
        partitions,
        test_fraction,
        train,
        test,
    );
}

/// Plan and load a data file: every partition, then the test set.
pub fn data_files(
    kind: DataKind,
    loss: Loss,
    standardize: bool,
    partitions: usize,
    test_fraction: f64,
    train: &[u8],
    test: Option<&[u8]>,
) {
    let ext = if kind == DataKind::Csv {
        "csv"
    } else {
        "libsvm"
    };
    let path = scratch_file(&format!("train.{ext}"));
    std::fs::write(&path, train).expect("write the data file");
    let test_path = test.map(|t| {
        let p = scratch_file(&format!("test.{ext}"));
        std::fs::write(&p, t).expect("write the test file");
        p
    });
    let mut c = Config {
        workers: partitions,
        ..Config::default()
    };
    c.data.kind = kind;
    c.data.path = Some(path.display().to_string());
    c.data.test_path = test_path.as_ref().map(|p| p.display().to_string());
    c.data.test_fraction = test_fraction;
    c.data.standardize = standardize;
    c.data.max_matrix_mib = FUZZ_MATRIX_MIB;
    c.model.loss = loss;
    config::validate(&c).expect("the harness builds a valid config");
    let files: Vec<String> = [Some(&path), test_path.as_ref()]
        .into_iter()
        .flatten()
        .map(|p| p.display().to_string())
        .collect();
    // An error names a file (as `file` or `file:line`) or a data key.
    let check = |e: &InputError| {
        check_input_error(e);
        assert!(
            files.iter().any(|f| e.field.starts_with(f.as_str())) || e.field.starts_with("data."),
            "{e}"
        );
    };
    let plan = match DataPlan::new(&c, partitions) {
        Ok(p) => p,
        Err(e) => return check(&e),
    };
    let ids: Vec<usize> = (0..partitions).collect();
    match plan.load(&ids) {
        Err(e) => check(&e),
        Ok(parts) => {
            assert_eq!(
                parts.iter().map(|p| p.len()).sum::<usize>(),
                plan.train_samples()
            );
            for p in &parts {
                assert_eq!(p.x.columns(), plan.features());
                assert_eq!(p.x.rows(), p.y.len());
                assert!(p.y.iter().all(|y| y.is_finite()));
                if loss == Loss::Logistic {
                    assert!(p.y.iter().all(|&y| y == 1.0 || y == -1.0));
                }
            }
        }
    }
    match plan.load_test() {
        Err(e) => check(&e),
        Ok(t) => {
            assert_eq!(t.len(), plan.test_samples());
            assert_eq!(t.x.columns(), plan.features());
        }
    }
}

// ---------------------------------------------------------------- trace CSV

/// A straggler trace CSV: byte 0 picks K (1..=8) and whether explicit
/// columns follow (bytes 1..=K, 1-based); the rest is the file.
pub fn trace_csv_bytes(data: &[u8]) {
    let flags = data.first().copied().unwrap_or(0);
    let workers = 1 + usize::from(flags & 7);
    let explicit = flags & 8 != 0;
    let rest = data.get(1..).unwrap_or(&[]);
    let (columns, text) = if explicit && rest.len() >= workers {
        let (c, t) = rest.split_at(workers);
        (Some(c.iter().map(|&b| usize::from(b)).collect()), t)
    } else {
        (None, rest)
    };
    trace_csv(text, workers, columns);
}

/// Load a trace CSV from a file, choose its columns and replay a few rounds.
pub fn trace_csv(text: &[u8], workers: usize, columns: Option<Vec<usize>>) {
    let path = scratch_file("trace.csv");
    std::fs::write(&path, text).expect("write the trace file");
    let origin = path.display().to_string();
    let table = match TraceTable::load(&path) {
        Ok(t) => t,
        Err(e) => {
            check_input_error(&e);
            assert!(e.field.starts_with(&origin), "{e}");
            return;
        }
    };
    // Parsing the same text from memory agrees with reading the file.
    if let Ok(text) = std::str::from_utf8(text) {
        assert_eq!(TraceTable::parse(text, &origin).as_ref(), Ok(&table));
    }
    assert!(table.rows() >= 1 && table.columns() >= 1);
    let chosen = match table.select_columns(columns.as_deref(), workers) {
        Ok(c) => c,
        Err(e) => return check_input_error(&e),
    };
    assert!(chosen.iter().all(|&c| c < table.columns()));
    let mut c = Config {
        workers,
        ..Config::default()
    };
    c.straggler.model = StragglerModel::Trace;
    c.straggler.trace_file = Some(origin);
    c.straggler.trace_columns = columns;
    if let Err(e) = config::validate(&c) {
        return check_input_error(&e);
    }
    let spec = DelaySpec::from_config(&c).expect("the same file and columns loaded above");
    let mut model = spec.model(3);
    let mut sample = RoundSample::new(workers);
    for _ in 0..table.rows().min(4) + 1 {
        model.sample(&mut sample);
        assert!(sample.unit_time.iter().all(|u| u.is_finite() && *u >= 0.0));
    }
}

// ---------------------------------------------------------------- HDF5 traces

/// Hostile trace files built with the hdf5 crate (also used by tests/inspect.rs).
#[cfg(feature = "hdf5")]
pub mod hostile;

#[cfg(feature = "hdf5")]
pub mod hdf5_trace {
    use super::*;
    use gradcode::trace::{
        IterationRecord, Report, TimingEvent, TraceError, TraceMeta, TraceWriter, read_attr_string,
        read_trace,
    };

    /// A small valid run trace written by `TraceWriter`: 5 iterations, 3
    /// workers, a snapshot after iteration 5 (theta and the previous theta), timing.
    pub fn valid_trace() -> &'static [u8] {
        static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
        BYTES.get_or_init(|| {
            let path = scratch_file("valid.h5");
            let meta = TraceMeta {
                scheme: "gc-cyclic".into(),
                workers: 3,
                config_toml: "workers = 3\n".into(),
                seed: 7,
            };
            let mut w = TraceWriter::create(&path, &meta).expect("create a trace");
            for i in 0..5 {
                let mut r = IterationRecord::new(3);
                r.duration_s = 0.5 + i as f64;
                r.messages_used = 2;
                r.finish_s = vec![0.1, 0.2, f64::NAN];
                r.cluster = vec![1, 1, -1];
                r.used = vec![true, true, false];
                w.append(&r).expect("append");
            }
            w.write_snapshot(5, &[1.0, -2.0, 3.5], &[1.0, -2.0, 3.0])
                .expect("snapshot");
            w.write_timing(&[TimingEvent {
                event: "decode".into(),
                total_s: 0.25,
                count: 5,
            }])
            .expect("timing");
            w.close().expect("close");
            std::fs::read(&path).expect("read the trace back")
        })
    }

    /// Mutations of the valid trace: bytes 0..4 (little-endian) give a length
    /// to truncate to (mod the length + 1; 0xFFFFFFFF: keep all), then every
    /// 5 bytes an offset (4 bytes, mod the length) and a byte to XOR there.
    pub fn hdf5_bytes(data: &[u8]) {
        let mut file = valid_trace().to_vec();
        let word = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
        let mut rest = data;
        let truncate = if rest.len() >= 4 {
            let t = word(rest);
            rest = &rest[4..];
            (t != u32::MAX as usize).then_some(t)
        } else {
            None
        };
        let len = file.len();
        for m in rest.chunks_exact(5).take(64) {
            file[word(m) % len] ^= m[4];
        }
        if let Some(t) = truncate {
            file.truncate(t % (len + 1));
        }
        hdf5_file(&file);
    }

    /// Structure-aware generation: bytes → a hostile [`hostile::Structure`]
    /// (datasets claiming shapes far beyond the file, cluster ids up to
    /// 2^63 − 1, groups linked into themselves or to the root, soft, dangling
    /// and external links, hard-linked datasets and trials, deep nesting),
    /// written with the hdf5 crate and read back by every reader. Each ends
    /// in `Ok` or a one-line error; under libFuzzer's memory limit an
    /// allocation sized by a claim or a value is a finding.
    pub fn structure_bytes(data: &[u8]) {
        let s = super::hostile::Structure::from_bytes(data);
        let path = scratch_file("structure.h5");
        super::hostile::build(&path, &s);
        let [_, report, _] = read_all(&path);
        if report.is_none() {
            // What inspect accepted is bounded by the file.
            let r = Report::read(&path).expect("read twice, same answer");
            for summary in r
                .summary
                .iter()
                .chain(r.schemes.iter().flatten().map(|scheme| &scheme.summary))
            {
                if let Some(c) = &summary.clusters {
                    assert!(c.count <= s.workers, "{s:?}: P = {}", c.count);
                }
            }
        }
    }

    /// Read a (corrupted) trace file back with every reader of traces: see [`read_all`].
    pub fn hdf5_file(bytes: &[u8]) {
        let path = scratch_file("corrupt.h5");
        std::fs::write(&path, bytes).expect("write the trace file");
        read_all(&path);
    }

    /// Every reader of traces on the file at `path`, all of them the one
    /// guarded reader (`TraceFile`): `read_trace`, what `gradcode inspect`
    /// reads (`Report::read`), the root attributes, and `train --resume`
    /// (`TraceWriter::resume`, on a copy: it cuts the file). Each ends in
    /// `Ok` or a one-line `TraceError`; what they read agrees. The errors,
    /// in that order (`None` for a reader that succeeded).
    pub fn read_all(path: &Path) -> [Option<TraceError>; 3] {
        let check = |e: &TraceError| one_line(&e.to_string());
        let trace = read_trace(path, "/");
        let report = Report::read(path);
        if let (Ok(t), Ok(r)) = (&trace, &report) {
            for rec in &t.records {
                assert_eq!(rec.workers(), t.workers);
            }
            if let Some(s) = &r.summary {
                assert_eq!(
                    s.iterations,
                    t.records.len(),
                    "inspect and read_trace agree"
                );
            }
        }
        for name in ["scheme", "config_toml", "gradcode_version"] {
            if let Err(e) = read_attr_string(path, "/", name) {
                check(&e);
            }
        }
        let copy = scratch_file("resume.h5");
        std::fs::copy(path, &copy).expect("copy the trace file");
        let resumed = TraceWriter::resume(&copy).and_then(|(w, snapshot)| {
            assert_eq!(w.iterations() as u64, snapshot.iteration);
            assert_eq!(snapshot.theta.len(), snapshot.previous_theta.len());
            w.close()
        });
        let errors = [trace.err(), report.err(), resumed.err()];
        for e in errors.iter().flatten() {
            check(e);
        }
        errors
    }
}
