//! Traces are read only by a gradcode that knows their schema: every trace
//! carries `trace_schema` (1); one of another schema, or without it and
//! with a `gradcode_version` other than 0.1.x (a newer one, an older one,
//! garbage, none), is refused by `inspect` and by `train --resume` (exit 2,
//! the file named, the file byte for byte unchanged), and so is a snapshot
//! whose θ is not finite. Traces of 0.1.x without the attribute (written
//! before it existed) are read.
#![cfg(all(feature = "mpi", feature = "hdf5"))]

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

fn scratch(name: &str) -> PathBuf {
    common::scratch("trace-versions", name)
}

/// A completed training run of 2 workers, resumable (a snapshot).
fn trained(name: &str) -> PathBuf {
    let trace = scratch(name);
    let out = {
        let _one = common::one_at_a_time();
        common::mpirun_command(
            3,
            &[
                "train",
                "--out",
                trace.to_str().unwrap(),
                "--force",
                "--quiet",
                "--set",
                "workers=2",
                "--set",
                "straggler.mode=\"measured\"",
                "--set",
                "train.iterations=4",
                "--set",
                "output.snapshot_every=2",
                "--set",
                "data.train_samples=40",
                "--set",
                "data.test_samples=10",
                "--set",
                "data.features=5",
                "--set",
                "scheme.kind=\"gc-cyclic\"",
                "--set",
                "scheme.load=2",
            ],
        )
        .output()
        .unwrap()
    };
    assert!(out.status.success(), "{}", common::stderr(&out));
    trace
}

fn set_string(trace: &Path, name: &str, value: Option<&str>) {
    let f = common::h5(trace, common::H5::Write).unwrap();
    if f.attr(name).is_ok() {
        f.delete_attr(name).unwrap();
    }
    if let Some(value) = value {
        let v: hdf5::types::VarLenUnicode = value.parse().unwrap();
        f.new_attr::<hdf5::types::VarLenUnicode>()
            .create(name)
            .unwrap()
            .write_scalar(&v)
            .unwrap();
    }
}

fn set_schema(trace: &Path, value: Option<u64>) {
    let f = common::h5(trace, common::H5::Write).unwrap();
    if f.attr("trace_schema").is_ok() {
        f.delete_attr("trace_schema").unwrap();
    }
    if let Some(value) = value {
        f.new_attr::<u64>()
            .create("trace_schema")
            .unwrap()
            .write_scalar(&value)
            .unwrap();
    }
}

fn resume(trace: &Path) -> Output {
    let _one = common::one_at_a_time();
    common::mpirun_command(
        3,
        &[
            "train",
            "--resume",
            trace.to_str().unwrap(),
            "--set",
            "train.iterations=6",
            "--quiet",
        ],
    )
    .output()
    .unwrap()
}

/// Exit 2 and one error line naming the trace and containing `rule`.
fn assert_refused(what: &str, out: &Output, trace: &Path, rule: &str) {
    let err = common::stderr(out);
    assert_eq!(out.status.code(), Some(2), "{what}: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
    assert_eq!(lines.len(), 1, "{what}: {err}");
    assert!(
        lines[0].contains(&trace.display().to_string()),
        "{what}: {err}"
    );
    assert!(lines[0].contains(rule), "{what}: {err}");
}

#[test]
fn traces_of_an_unknown_schema_or_version_are_refused_by_inspect_and_resume() {
    let source = trained("source.h5");
    let trace = scratch("edited.h5");
    // Written with the schema attribute; a 0.1.x trace without it is read.
    std::fs::copy(&source, &trace).unwrap();
    let f = common::h5(&trace, common::H5::Read).unwrap();
    assert_eq!(
        f.attr("trace_schema")
            .unwrap()
            .read_scalar::<u64>()
            .unwrap(),
        1
    );
    drop(f);
    set_schema(&trace, None);
    let o = common::gradcode(&["inspect", trace.to_str().unwrap()]);
    assert!(
        o.status.success(),
        "a 0.1 trace without trace_schema: {}",
        common::stderr(&o)
    );
    for (what, version, schema, rule) in [
        ("a newer schema", Some("0.1.0"), Some(2), "trace schema 2"),
        ("a newer gradcode", Some("9.0.0"), None, "\"9.0.0\""),
        ("an older gradcode", Some("0.0.1"), None, "\"0.0.1\""),
        ("garbage", Some("x.y"), None, "\"x.y\""),
        ("no version", None, None, "gradcode_version"),
    ] {
        std::fs::copy(&source, &trace).unwrap();
        set_string(&trace, "gradcode_version", version);
        set_schema(&trace, schema);
        let before = std::fs::read(&trace).unwrap();
        let o = common::gradcode(&["inspect", trace.to_str().unwrap()]);
        assert_refused(&format!("inspect of {what}"), &o, &trace, rule);
        let o = resume(&trace);
        assert_refused(&format!("resume of {what}"), &o, &trace, rule);
        assert!(
            std::fs::read(&trace).unwrap() == before,
            "{what}: the file changed"
        );
    }
}

#[test]
fn a_snapshot_whose_model_is_not_finite_is_an_input_error() {
    let trace = trained("nan.h5");
    let f = common::h5(&trace, common::H5::Write).unwrap();
    let committed: u64 = f
        .group("model")
        .unwrap()
        .attr("snapshot")
        .unwrap()
        .read_scalar()
        .unwrap();
    let slot = gradcode::trace::SNAPSHOT_SLOTS[committed as usize];
    // Row 0 θ, row 1 the iterate before it.
    let ds = f.dataset(&format!("model/{slot}")).unwrap();
    let mut rows: Vec<f64> = ds.read_raw().unwrap();
    rows[2] = f64::NAN;
    ds.write_raw(&rows).unwrap();
    drop(ds);
    drop(f);
    let before = std::fs::read(&trace).unwrap();
    let o = resume(&trace);
    assert_refused(
        "NaN in the snapshot",
        &o,
        &trace,
        "theta holds NaN at entry 3",
    );
    assert!(std::fs::read(&trace).unwrap() == before, "the file changed");
}
