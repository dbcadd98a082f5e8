//! HDF5 traces: what is written reads back identically, in the schema of
//! the table (`gradcode::record::DATASETS`); every reader refuses a dataset
//! that claims more than the file holds, before reading it.
#![cfg(feature = "hdf5")]

#[path = "fuzz_support/hostile.rs"]
mod hostile;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use gradcode::record::{ColumnVisitor, DatasetSpec, TraceColumns};
use gradcode::trace::{
    DATASETS, ElementType, IterationRecord, Report, SchemaGroup, SimTraceWriter, TraceError,
    TraceFile, TraceMeta, TraceWriter, read_attr_string, read_trace,
};
use hostile::{EVERY_ROW, HOSTILE_ROWS, hostile_trace};

fn path(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("traces");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn meta(workers: usize) -> TraceMeta {
    TraceMeta {
        scheme: "gc-sc".into(),
        workers,
        config_toml: "workers = 3\n[scheme]\nkind = \"gc-sc\"\n".into(),
        seed: 42,
    }
}

fn record(i: usize, workers: usize) -> IterationRecord {
    let mut r = IterationRecord::new(workers);
    r.duration_s = 0.5 + i as f64;
    r.decode_s = 1e-4 * i as f64;
    r.recovered_fraction = 1.0 / (1 + i) as f64;
    r.messages_used = i as u64;
    r.messages_received = 2 * i as u64;
    r.stale_dropped = (i % 3) as u64;
    r.train_loss = if i % 2 == 0 {
        10.0 / (1 + i) as f64
    } else {
        f64::NAN
    };
    r.test_loss = 20.0 / (1 + i) as f64;
    for w in 0..workers {
        r.finish_s[w] = if (w + i) % 3 == 0 {
            f64::NAN
        } else {
            (w * i) as f64
        };
        r.straggling[w] = (w + i) % 2 == 0;
        r.cluster[w] = if i % 4 == 0 { -1 } else { (w % 2) as i64 + 1 };
        r.used[w] = (w * i) % 3 == 1;
    }
    r
}

/// Equal, with NaN equal to NaN.
fn same(a: &IterationRecord, b: &IterationRecord) -> bool {
    let f = |x: f64, y: f64| x == y || (x.is_nan() && y.is_nan());
    f(a.duration_s, b.duration_s)
        && f(a.decode_s, b.decode_s)
        && f(a.recovered_fraction, b.recovered_fraction)
        && a.messages_used == b.messages_used
        && a.messages_received == b.messages_received
        && a.stale_dropped == b.stale_dropped
        && f(a.train_loss, b.train_loss)
        && f(a.test_loss, b.test_loss)
        && f(a.test_accuracy, b.test_accuracy)
        && f(a.elapsed_s, b.elapsed_s)
        && a.finish_s.iter().zip(&b.finish_s).all(|(&x, &y)| f(x, y))
        && a.straggling == b.straggling
        && a.cluster == b.cluster
        && a.used == b.used
}

#[test]
fn a_run_trace_reads_back_with_its_attributes_and_theta() {
    let p = path("run.h5");
    let mut w = TraceWriter::create(&p, &meta(3)).unwrap();
    let records: Vec<IterationRecord> = (0..700).map(|i| record(i, 3)).collect();
    for (i, r) in records.iter().enumerate() {
        w.append(r).unwrap();
        if i == 300 {
            w.flush().unwrap();
        }
    }
    assert_eq!(w.iterations(), 700);
    w.write_theta(5, &[1.0, 2.0, 3.0, 4.0]).unwrap();
    w.write_theta(699, &[1.5, 2.5, 3.5, 4.5]).unwrap();
    let e = w.write_theta(700, &[1.0]).unwrap_err();
    assert!(matches!(e, TraceError::Record(_)), "{e}");
    let e = w.append(&record(0, 4)).unwrap_err();
    assert!(e.to_string().contains("3 workers"), "{e}");
    w.close().unwrap();

    let t = read_trace(&p, "/").unwrap();
    assert_eq!(t.workers, 3);
    assert_eq!(t.records.len(), 700);
    for (a, b) in t.records.iter().zip(&records) {
        assert!(same(a, b), "{a:?} != {b:?}");
    }
    assert_eq!(t.theta, Some(vec![1.5, 2.5, 3.5, 4.5]));
    assert_eq!(read_attr_string(&p, "/", "scheme").unwrap(), "gc-sc");
    assert_eq!(
        read_attr_string(&p, "/", "config_toml").unwrap(),
        meta(3).config_toml
    );
    assert_eq!(
        read_attr_string(&p, "/", "gradcode_version").unwrap(),
        env!("CARGO_PKG_VERSION")
    );
    // Units are attributes of the datasets.
    let f = hdf5::File::open(&p).unwrap();
    let unit = |ds: &str| -> String {
        let v: hdf5::types::VarLenUnicode = f
            .dataset(ds)
            .unwrap()
            .attr("unit")
            .unwrap()
            .read_scalar()
            .unwrap();
        v.as_str().to_string()
    };
    assert_eq!(unit("iteration/duration_s"), "s");
    assert_eq!(unit("worker/finish_s"), "s");
    assert_eq!(unit("iteration/messages_used"), "count");
    let seed: u64 = f.attr("seed").unwrap().read_scalar().unwrap();
    let workers: u64 = f.attr("workers").unwrap().read_scalar().unwrap();
    assert_eq!((seed, workers), (42, 3));
    let theta_iteration: u64 = f
        .dataset("model/theta")
        .unwrap()
        .attr("iteration")
        .unwrap()
        .read_scalar()
        .unwrap();
    assert_eq!(theta_iteration, 699);
    // Chunked and resizable along the iterations.
    let ds = f.dataset("worker/straggling").unwrap();
    assert!(ds.is_chunked());
    assert_eq!(ds.shape(), [700, 3]);
}

#[test]
fn a_simulation_trace_has_one_trace_per_scheme_and_trial() {
    let p = path("sim.h5");
    let names = vec!["gc".to_string(), "gc-sc".to_string()];
    let mut w = SimTraceWriter::create(&p, &meta(3), &names, 2, 5, 0.1).unwrap();
    for trial in 0..2 {
        for i in 0..5 {
            for s in 0..2 {
                w.append(s, trial, &record(10 * s + 100 * trial + i, 3))
                    .unwrap();
            }
        }
    }
    w.close().unwrap();
    for trial in 0..2 {
        for (s, name) in names.iter().enumerate() {
            let t = read_trace(&p, &format!("/sim/{name}/trial_{trial}")).unwrap();
            assert_eq!(t.records.len(), 5);
            assert!(t.theta.is_none());
            for (i, r) in t.records.iter().enumerate() {
                assert!(same(r, &record(10 * s + 100 * trial + i, 3)));
            }
        }
    }
    assert_eq!(
        read_attr_string(&p, "/sim/gc-sc", "scheme").unwrap(),
        "gc-sc"
    );
    let f = hdf5::File::open(&p).unwrap();
    let unit: f64 = f
        .group("sim/gc")
        .unwrap()
        .attr("model_time_unit_s")
        .unwrap()
        .read_scalar()
        .unwrap();
    assert_eq!(unit, 0.1);
}

/// Every column of a trace as f64 (flags as 0 / 1), in table order.
struct AsF64(Vec<(&'static DatasetSpec, Vec<f64>)>);

impl ColumnVisitor for AsF64 {
    type Error = ();
    fn f64(&mut self, s: &'static DatasetSpec, c: &mut Option<Vec<f64>>) -> Result<(), ()> {
        self.0.push((s, c.clone().unwrap()));
        Ok(())
    }
    fn u64(&mut self, s: &'static DatasetSpec, c: &mut Option<Vec<u64>>) -> Result<(), ()> {
        self.0
            .push((s, c.as_ref().unwrap().iter().map(|&x| x as f64).collect()));
        Ok(())
    }
    fn i64(&mut self, s: &'static DatasetSpec, c: &mut Option<Vec<i64>>) -> Result<(), ()> {
        self.0
            .push((s, c.as_ref().unwrap().iter().map(|&x| x as f64).collect()));
        Ok(())
    }
    fn flag(&mut self, s: &'static DatasetSpec, c: &mut Option<Vec<bool>>) -> Result<(), ()> {
        self.0.push((
            s,
            c.as_ref()
                .unwrap()
                .iter()
                .map(|&x| f64::from(u8::from(x)))
                .collect(),
        ));
        Ok(())
    }
}

fn columns_f64(
    workers: usize,
    records: &[IterationRecord],
) -> Vec<(&'static DatasetSpec, Vec<f64>)> {
    let mut v = AsF64(Vec::new());
    TraceColumns::from_records(workers, records)
        .visit(&mut v)
        .unwrap();
    v.0
}

/// Records whose every field has values of its own (no two datasets hold
/// the same column), so that a dataset written to or read from the place of
/// another is seen.
fn distinct_records(workers: usize, iterations: usize) -> Vec<IterationRecord> {
    (0..iterations)
        .map(|i| {
            let x = i as f64;
            let mut r = IterationRecord::new(workers);
            r.duration_s = 1.0 + x;
            r.decode_s = 2e-3 * (1.0 + x);
            r.elapsed_s = 0.75 * (1.0 + x) * (2.0 + x);
            r.recovered_fraction = 1.0 / (2.0 + x);
            r.decode_error = 0.375 * x;
            r.messages_used = 3 + i as u64;
            r.messages_received = 40 + 2 * i as u64;
            r.stale_dropped = 500 + i as u64;
            r.train_loss = if i == 1 { f64::NAN } else { 6.0 / (1.0 + x) };
            r.batch_loss = 6.5 / (1.0 + x) + 0.25;
            r.batch_accuracy = 0.125 + 0.02 * x;
            r.test_loss = 7.0 / (1.0 + x) + 0.5;
            r.test_accuracy = if i % 2 == 0 {
                0.25 + 0.01 * x
            } else {
                f64::NAN
            };
            for w in 0..workers {
                let y = w as f64;
                r.finish_s[w] = if (i + w) % 4 == 3 {
                    f64::NAN
                } else {
                    8.0 + x + 0.1 * y
                };
                r.straggling[w] = (i + w) % 2 == 0;
                r.cluster[w] = if i % 3 == 0 {
                    -1
                } else {
                    1 + ((i + w) % 2) as i64
                };
                r.used[w] = (i * w) % 3 == 1;
                r.overrun_s[w] = 0.01 * (1.0 + x) * (1.0 + y);
                // Issue 26, item 2's measured transfers.
                r.message_bytes[w] = 800_088.0 + 8.0 * (x + y);
                r.compute_s[w] = 0.002 * (1.0 + x) + 0.0003 * y;
                r.received_s[w] = 9.0 + x + 0.2 * y;
            }
            r
        })
        .collect()
}

/// Equal as bits (so NaN = NaN).
fn same_column(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

#[test]
fn every_dataset_of_the_table_is_written_and_read_back_equal() {
    let (k, n) = (3, 7);
    let records = distinct_records(k, n);
    let want = columns_f64(k, &records);
    assert_eq!(want.len(), DATASETS.len());
    for (i, (a, ca)) in want.iter().enumerate() {
        for (b, cb) in &want[i + 1..] {
            assert!(
                !same_column(ca, cb),
                "the test records hold the same values in {} and {}: give the new field values of its own",
                a.path,
                b.path
            );
        }
    }
    let p = path("every-dataset.h5");
    let mut w = TraceWriter::create(&p, &meta(k)).unwrap();
    for r in &records {
        w.append(r).unwrap();
    }
    w.close().unwrap();

    // Read back through the trace reader: the same records.
    let t = read_trace(&p, "/").unwrap();
    assert_eq!(t.workers, k);
    assert_eq!(format!("{:?}", t.records), format!("{records:?}"));

    // And through the hdf5 crate alone: every dataset of the table, with the
    // table's type, shape and attributes, holds its column.
    let f = hdf5::File::open(&p).unwrap();
    for (spec, column) in &want {
        let ds = f.dataset(spec.path).unwrap();
        let shape = match spec.group {
            SchemaGroup::Iteration => vec![n],
            SchemaGroup::Worker => vec![n, k],
        };
        assert_eq!(ds.shape(), shape, "{}", spec.path);
        let stored = ds.dtype().unwrap();
        let expected = match spec.element {
            ElementType::F64 => hdf5::Datatype::from_type::<f64>(),
            ElementType::U64 => hdf5::Datatype::from_type::<u64>(),
            ElementType::I64 => hdf5::Datatype::from_type::<i64>(),
            ElementType::Flag => hdf5::Datatype::from_type::<u8>(),
        }
        .unwrap();
        assert_eq!(stored, expected, "{}", spec.path);
        assert!(ds.is_chunked(), "{}", spec.path);
        let got: Vec<f64> = ds.read_raw::<f64>().unwrap();
        assert!(
            same_column(&got, column),
            "{}: {got:?} != {column:?}",
            spec.path
        );
        for (attr, value) in [("unit", spec.unit), ("description", spec.description)] {
            let v: hdf5::types::VarLenUnicode = ds.attr(attr).unwrap().read_scalar().unwrap();
            assert_eq!(v.as_str(), value, "{}@{attr}", spec.path);
        }
    }
}

/// Where each reader stands on a dataset that claims 2^31 rows: `true` when
/// it must refuse it (it reads it), `false` when it may ignore it.
const HOSTILE_EXPECTATIONS: [(&str, bool, bool, bool); 3] = [
    // (target, read_trace, inspect's Report::read, TraceWriter::resume)
    ("model/theta", true, true, true),
    // /timing/ is rewritten at the end of a resumed run, never read by resume.
    ("timing/total_s", true, true, false),
    // Outside the schema: inspect reads (and so refuses) it, the others ignore it.
    ("notes/big", false, true, false),
];

/// `e` is one line naming `/target` and the size rule.
fn names_the_size_rule(e: &TraceError, target: &str) {
    // Every dataset of the table claims the rows: the first is refused.
    let target = if target == EVERY_ROW {
        DATASETS[0].path
    } else {
        target
    };
    let m = e.to_string();
    assert!(!m.contains('\n'), "{m}");
    assert!(
        m.contains(&format!("/{target} ")),
        "does not name /{target}: {m}"
    );
    assert!(m.contains("more than the"), "does not state the rule: {m}");
}

#[test]
fn every_reader_refuses_a_dataset_claiming_more_than_the_file_holds() {
    let table = DATASETS.iter().map(|d| (d.path, true, true, true));
    let every = [(EVERY_ROW, true, true, true)];
    for (target, by_trace, by_report, by_resume) in table.chain(every).chain(HOSTILE_EXPECTATIONS) {
        let p = path(&format!("hostile-{}.h5", target.replace('/', "-")));
        hostile_trace(&p, Some(target), HOSTILE_ROWS);
        let bytes = std::fs::metadata(&p).unwrap().len();
        assert!(
            bytes < 64 * 1024,
            "the hostile file is small: {bytes} bytes"
        );
        let start = Instant::now();
        match read_trace(&p, "/") {
            Err(e) if by_trace => names_the_size_rule(&e, target),
            Ok(_) if !by_trace => {}
            other => panic!("read_trace of hostile {target}: {other:?}"),
        }
        match Report::read(&p) {
            Err(e) if by_report => names_the_size_rule(&e, target),
            Ok(r) if !by_report => {
                // Listed with its shape, not read.
                let extra = r
                    .extra_datasets
                    .iter()
                    .find(|d| d.path == format!("/{target}"))
                    .unwrap_or_else(|| panic!("{target} not listed: {r:?}"));
                assert_eq!(extra.shape, [HOSTILE_ROWS]);
                assert_eq!(extra.values, None);
            }
            other => panic!("inspect of hostile {target}: {other:?}"),
        }
        match TraceWriter::resume(&p) {
            Err(e) if by_resume => names_the_size_rule(&e, target),
            Ok((w, s)) if !by_resume => {
                assert_eq!(s.iteration, 0);
                w.close().unwrap();
            }
            Err(e) => panic!("resume of hostile {target}: {e}"),
            Ok(_) => panic!("resume of hostile {target} succeeded"),
        }
        if by_resume {
            // Refused before anything was cut or written.
            let f = hdf5::File::open(&p).unwrap();
            let claimed = if target == EVERY_ROW {
                DATASETS[0].path
            } else {
                target
            };
            assert_eq!(f.dataset(claimed).unwrap().shape()[0], HOSTILE_ROWS);
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{target}: the readers took {:?}",
            start.elapsed()
        );
    }
}

#[test]
fn the_hostile_files_control_is_a_trace_every_reader_reads_and_resume_continues() {
    let p = path("hostile-control.h5");
    hostile_trace(&p, None, HOSTILE_ROWS);
    let t = read_trace(&p, "/").unwrap();
    assert_eq!((t.workers, t.records.len()), (hostile::WORKERS, 0));
    assert_eq!(t.theta, Some(vec![0.5, 0.5]));
    assert_eq!(t.timing.len(), 1);
    let r = Report::read(&p).unwrap();
    assert_eq!(r.summary.unwrap().iterations, 0);
    assert!(r.extra_datasets.is_empty(), "{:?}", r.extra_datasets);
    let (mut w, s) = TraceWriter::resume(&p).unwrap();
    assert_eq!((s.iteration, s.seed), (0, 1));
    w.append(&distinct_records(hostile::WORKERS, 1)[0]).unwrap();
    w.close().unwrap();
    assert_eq!(read_trace(&p, "/").unwrap().records.len(), 1);
}

/// A trace at `p` of 6 of `records` (K = 3) with a snapshot after the 4th.
fn six_records_snapshot_after_four(p: &std::path::Path, records: &[IterationRecord]) {
    let mut w = TraceWriter::create(p, &meta(3)).unwrap();
    for r in &records[..6] {
        w.append(r).unwrap();
    }
    w.write_snapshot(4, &[1.0, 2.0], &[0.5, 1.5]).unwrap();
    w.close().unwrap();
}

/// `w` (resumed at 4) continues with `records` from the 7th: the file reads
/// back as records 1-4 then 7 on.
fn continue_from_the_seventh(p: &std::path::Path, mut w: TraceWriter, records: &[IterationRecord]) {
    for r in &records[6..] {
        w.append(r).unwrap();
    }
    w.close().unwrap();
    let back = read_trace(p, "/").unwrap().records;
    let want: Vec<IterationRecord> = records[..4].iter().chain(&records[6..]).cloned().collect();
    assert_eq!(format!("{back:?}"), format!("{want:?}"));
}

#[test]
fn resume_reads_the_snapshot_and_cuts_the_records_after_it() {
    let p = path("resume.h5");
    let records = distinct_records(3, 9);
    six_records_snapshot_after_four(&p, &records);
    let (w, s) = TraceWriter::resume(&p).unwrap();
    assert_eq!(s.iteration, 4);
    assert_eq!(
        (s.theta, s.previous_theta),
        (vec![1.0, 2.0], vec![0.5, 1.5])
    );
    assert_eq!(
        (s.seed, s.config_toml.as_str()),
        (42, meta(3).config_toml.as_str())
    );
    assert_eq!(w.iterations(), 4);
    continue_from_the_seventh(&p, w, &records);
    // The iteration scales were cut with the rows and continued: 1..=7 again.
    assert_scales(&p, "", 7, 3);
}

/// A trace written before `/iteration/test_accuracy` (an optional dataset)
/// reads back with NaN accuracy, and resumed, gains the dataset: NaN (not
/// HDF5's fill value 0, a measured accuracy of 0) in the rows before the
/// snapshot, the records' values after, with the dimension scales of the
/// other datasets.
#[test]
fn resuming_a_trace_without_an_optional_dataset_adds_it_with_nan_before_the_snapshot() {
    let p = path("resume-no-accuracy.h5");
    let records = distinct_records(3, 9);
    six_records_snapshot_after_four(&p, &records);
    hdf5::File::open_rw(&p)
        .unwrap()
        .unlink("iteration/test_accuracy")
        .unwrap();
    let old = read_trace(&p, "/").unwrap().records;
    assert_eq!(old.len(), 6);
    assert!(old.iter().all(|r| r.test_accuracy.is_nan()));
    assert_eq!(old[0].test_loss, records[0].test_loss);
    let (mut w, s) = TraceWriter::resume(&p).unwrap();
    assert_eq!(s.iteration, 4);
    w.append(&records[6]).unwrap();
    w.close().unwrap();
    let back = read_trace(&p, "/").unwrap().records;
    assert_eq!(back.len(), 5);
    let accuracy: Vec<u64> = back.iter().map(|r| r.test_accuracy.to_bits()).collect();
    let want: Vec<u64> = [f64::NAN; 4]
        .iter()
        .chain([records[6].test_accuracy].iter())
        .map(|x| x.to_bits())
        .collect();
    assert!(records[6].test_accuracy.is_finite());
    assert_eq!(accuracy, want, "{back:?}");
    assert!(same(&back[4], &records[6]));
    assert_scales(&p, "", 5, 3);
}

/// Killed during a flush after its snapshot, a trace may hold datasets of
/// unequal lengths beyond it: every reader of the whole table refuses the
/// file, while the rows up to the snapshot (what a resume keeps and counts)
/// read back whole, and resume continues from there.
#[test]
fn rows_up_to_the_snapshot_read_back_when_a_kill_left_datasets_unequal_beyond_it() {
    let p = path("unequal-beyond-snapshot.h5");
    let records = distinct_records(3, 8);
    six_records_snapshot_after_four(&p, &records);
    // What a SIGKILL between two datasets' extensions leaves: one longer.
    {
        let f = hdf5::File::open_rw(&p).unwrap();
        f.dataset("iteration/test_loss")
            .unwrap()
            .resize((7,))
            .unwrap();
        f.dataset("worker/finish_s")
            .unwrap()
            .resize((5, 3))
            .unwrap();
    }
    let m = read_trace(&p, "/").unwrap_err().to_string();
    assert!(m.contains("does not have one entry per iteration"), "{m}");
    let file = TraceFile::open(&p).unwrap();
    let kept = file.columns_upto("/", None, 4).unwrap();
    assert_eq!(kept.iterations, 4);
    let all = TraceColumns::from_records(3, &records[..4]);
    assert_eq!(format!("{kept:?}"), format!("{all:?}"));
    let m = file.columns_upto("/", None, 6).unwrap_err().to_string();
    assert!(
        m.contains("/worker/finish_s has 5 rows, fewer than the 6"),
        "{m}"
    );
    drop(file);
    let (w, s) = TraceWriter::resume(&p).unwrap();
    assert_eq!(s.iteration, 4);
    continue_from_the_seventh(&p, w, &records);
}

/// The dimension scales of the trace group `group` (e.g. "" or "sim/gc/trial_0/"):
/// `iteration/iteration` and `worker/iteration` are 1..=iterations, `worker/worker`
/// 1..=workers, each marked as a dimension scale (attribute CLASS, NAME), and
/// every dataset of the schema has them attached (attribute DIMENSION_LIST).
fn assert_scales(p: &std::path::Path, group: &str, iterations: u64, workers: u64) {
    let f = hdf5::File::open(p).unwrap();
    for (scale, n) in [
        ("iteration/iteration", iterations),
        ("worker/iteration", iterations),
        ("worker/worker", workers),
    ] {
        let ds = f.dataset(&format!("{group}{scale}")).unwrap();
        assert_eq!(
            ds.read_raw::<u64>().unwrap(),
            (1..=n).collect::<Vec<_>>(),
            "{group}{scale}"
        );
        let class = ds
            .attr("CLASS")
            .unwrap()
            .read_scalar::<hdf5::types::FixedAscii<16>>()
            .unwrap();
        assert_eq!(class.as_str(), "DIMENSION_SCALE", "{group}{scale}");
        let name = ds
            .attr("NAME")
            .unwrap()
            .read_scalar::<hdf5::types::FixedAscii<16>>()
            .unwrap();
        assert_eq!(
            name.as_str(),
            scale.split('/').next_back().unwrap(),
            "{group}{scale}"
        );
    }
    for spec in DATASETS {
        let ds = f.dataset(&format!("{group}{}", spec.path)).unwrap();
        assert!(
            ds.attr("DIMENSION_LIST").is_ok(),
            "{group}{} has no dimension scales",
            spec.path
        );
    }
    // Not extras for inspect.
    let report = Report::read(p).unwrap();
    assert!(
        report.extra_datasets.is_empty(),
        "{:?}",
        report.extra_datasets
    );
}

#[test]
fn traces_have_dimension_scales_for_iteration_and_worker() {
    let p = path("scales.h5");
    let mut w = TraceWriter::create(&p, &meta(3)).unwrap();
    for r in distinct_records(3, 5) {
        w.append(&r).unwrap();
    }
    w.close().unwrap();
    assert_scales(&p, "", 5, 3);
}

/// A row the iteration scale does not number was not written whole (a
/// write that failed part way): read_trace and inspect name it (issue 27:
/// the Python reader did, the Rust readers read such rows as data).
#[test]
fn a_row_the_iteration_scale_does_not_number_is_refused() {
    let p = path("unnumbered.h5");
    // Resume reads the rows up to its snapshot (after the fourth): row 3.
    six_records_snapshot_after_four(&p, &distinct_records(3, 6));
    read_trace(&p, "/").expect("the control reads");
    {
        let f = hdf5::File::open_rw(&p).unwrap();
        let ds = f.dataset("iteration/iteration").unwrap();
        ds.write_slice(&[0u64], 2..3).unwrap();
    }
    let t = read_trace(&p, "/").expect_err("read_trace refuses it");
    let r = Report::read(&p).expect_err("inspect refuses it");
    for e in [t.to_string(), r.to_string()] {
        assert!(
            e.contains("row 3 of /iteration/iteration is numbered 0, not 3"),
            "{e}"
        );
    }
}

/// Every reader's error on `p`, which must refuse it: (read_trace, inspect, resume).
fn every_reader_refuses(p: &std::path::Path) -> [String; 3] {
    let t = read_trace(p, "/").expect_err("read_trace refuses it");
    let r = Report::read(p).expect_err("inspect refuses it");
    let w = TraceWriter::resume(p)
        .map(|_| ())
        .expect_err("resume refuses it");
    [t.to_string(), r.to_string(), w.to_string()]
}

#[test]
fn datasets_that_each_fit_but_together_exceed_the_file_are_refused() {
    let control = path("together-control.h5");
    hostile_trace(&control, None, 0);
    let size = std::fs::metadata(&control).unwrap().len() as usize;
    // The largest dataset, /worker/ f64 of 2 workers, claims 16 bytes a row.
    let rows = size / 16 - 64;
    let p = path("together.h5");
    hostile_trace(&p, Some(EVERY_ROW), rows);
    let file = std::fs::metadata(&p).unwrap().len() as usize;
    let per_row: Vec<usize> = DATASETS
        .iter()
        .map(|d| {
            let values = match d.group {
                SchemaGroup::Iteration => 1,
                SchemaGroup::Worker => hostile::WORKERS,
            };
            values * d.element.size()
        })
        .collect();
    assert!(
        per_row.iter().all(|b| b * rows <= file),
        "each dataset alone fits"
    );
    assert!(
        per_row.iter().sum::<usize>() * rows > file,
        "together they do not"
    );
    for m in every_reader_refuses(&p) {
        assert!(!m.contains('\n'), "{m}");
        assert!(
            m.contains("/{iteration,worker} up to /")
                && m.contains("bytes together, more than the"),
            "{m}"
        );
    }
}

#[test]
fn datasets_of_the_wrong_dimensions_or_kind_are_refused_naming_them() {
    type Damage = fn(&hdf5::File);
    let cases: [(&str, Damage); 3] = [
        (
            "dataset /worker/cluster has shape [0], not [iterations, workers]",
            |f| {
                f.unlink("worker/cluster").unwrap();
                f.group("worker")
                    .unwrap()
                    .new_dataset::<i64>()
                    .shape(0)
                    .create("cluster")
                    .unwrap();
            },
        ),
        ("dataset /iteration/decode_s holds", |f| {
            f.unlink("iteration/decode_s").unwrap();
            let v: Vec<hdf5::types::VarLenUnicode> = Vec::new();
            f.group("iteration")
                .unwrap()
                .new_dataset_builder()
                .with_data(&v)
                .create("decode_s")
                .unwrap();
        }),
        (
            "dataset /model/theta has shape [1, 2], not [parameters]",
            |f| {
                f.unlink("model/theta").unwrap();
                let ds = f
                    .group("model")
                    .unwrap()
                    .new_dataset::<f64>()
                    .shape((1, 2))
                    .create("theta")
                    .unwrap();
                ds.new_attr::<u64>()
                    .create("iteration")
                    .unwrap()
                    .write_scalar(&0)
                    .unwrap();
            },
        ),
    ];
    for (i, (rule, damage)) in cases.into_iter().enumerate() {
        let p = path(&format!("wrong-shape-{i}.h5"));
        hostile_trace(&p, None, 0);
        damage(&hdf5::File::open_rw(&p).unwrap());
        for m in every_reader_refuses(&p) {
            assert!(!m.contains('\n'), "{m}");
            assert!(m.contains(rule), "does not say `{rule}`: {m}");
        }
    }
}

/// Snapshots alternate between two slots; the attribute `snapshot` of
/// `/model` names the committed one, which resume reads; `/model/theta` is
/// the last model; inspect lists none of it as foreign, and reports the
/// status and the snapshot's iteration.
#[test]
fn snapshots_alternate_between_two_slots_and_the_committed_one_resumes() {
    let p = path("slots.h5");
    let mut w = TraceWriter::create(&p, &meta(3)).unwrap();
    let records = distinct_records(3, 3);
    for (i, r) in records.iter().enumerate() {
        w.append(r).unwrap();
        let t = (i + 1) as f64;
        w.write_snapshot(i as u64 + 1, &[t, -t], &[t - 1.0, 1.0 - t])
            .unwrap();
    }
    drop(w); // no close: an error path, status failed
    let f = hdf5::File::open(&p).unwrap();
    let model = f.group("model").unwrap();
    let committed: u64 = model.attr("snapshot").unwrap().read_scalar().unwrap();
    let slot_iteration = |name: &str| -> u64 {
        model
            .dataset(name)
            .unwrap()
            .attr("iteration")
            .unwrap()
            .read_scalar()
            .unwrap()
    };
    // Three snapshots: slots 0, 1, 0; slot 0 committed with iteration 3, slot 1 holds 2.
    assert_eq!(committed, 0);
    assert_eq!(
        (slot_iteration("snapshot_0"), slot_iteration("snapshot_1")),
        (3, 2)
    );
    let theta: Vec<f64> = model.dataset("theta").unwrap().read_raw().unwrap();
    assert_eq!(theta, [3.0, -3.0]);
    assert!(!model.link_exists("previous_theta"));
    drop((model, f));
    let r = Report::read(&p).unwrap();
    assert!(r.extra_datasets.is_empty(), "{:?}", r.extra_datasets);
    assert!(r.extra_groups.is_empty(), "{:?}", r.extra_groups);
    assert_eq!(r.status.as_deref(), Some("failed"));
    assert!(r.status_reason.is_some());
    assert_eq!(r.snapshot_iteration, Some(Some(3)));
    assert_eq!(r.model.unwrap().unwrap().iteration, Some(3));
    let s = gradcode::trace::read_snapshot(&p).unwrap();
    assert_eq!(
        (s.iteration, s.theta, s.previous_theta),
        (3, vec![3.0, -3.0], vec![2.0, -2.0])
    );
    // Resumed, the next snapshot goes to the other slot.
    let (mut w, _) = TraceWriter::resume(&p).unwrap();
    w.write_snapshot(3, &[9.0, 9.0], &[8.0, 8.0]).unwrap();
    w.close().unwrap();
    let f = hdf5::File::open(&p).unwrap();
    let committed: u64 = f
        .group("model")
        .unwrap()
        .attr("snapshot")
        .unwrap()
        .read_scalar()
        .unwrap();
    assert_eq!(committed, 1);
    drop(f);
    assert_eq!(read_attr_string(&p, "/", "status").unwrap(), "completed");
    assert_eq!(read_attr_string(&p, "/", "status_reason").unwrap(), "");
}

/// A trace whose slots are not committed, or whose commit names no slot,
/// is refused by resume, naming the rule, and left as it was.
#[test]
fn an_uncommitted_or_misnamed_snapshot_is_refused() {
    for (value, rule) in [
        (u64::MAX, "no committed snapshot"),
        (7, "attribute snapshot of /model = 7 names no snapshot slot"),
    ] {
        let p = path(&format!("uncommitted-{value}.h5"));
        let mut w = TraceWriter::create(&p, &meta(3)).unwrap();
        w.append(&distinct_records(3, 1)[0]).unwrap();
        w.write_snapshot(1, &[1.0], &[0.0]).unwrap();
        w.close().unwrap();
        {
            let f = hdf5::File::open_rw(&p).unwrap();
            f.group("model")
                .unwrap()
                .attr("snapshot")
                .unwrap()
                .write_scalar(&value)
                .unwrap();
        }
        let before = std::fs::read(&p).unwrap();
        let e = TraceWriter::resume(&p).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains(rule) && !e.contains('\n'), "{e}");
        let e = gradcode::trace::read_snapshot(&p).unwrap_err().to_string();
        assert!(e.contains(rule), "{e}");
        assert_eq!(
            std::fs::read(&p).unwrap(),
            before,
            "a refused resume changed the file"
        );
    }
}
