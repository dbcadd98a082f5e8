//! HDF5 traces: what is written reads back identically, in the schema of
//! DESIGN.md, and a killed writer leaves a readable file.
#![cfg(feature = "hdf5")]

use std::path::PathBuf;

use gradcode::trace::{
    IterationRecord, SimTraceWriter, TraceError, TraceMeta, TraceWriter, read_attr_string,
    read_trace,
};

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
