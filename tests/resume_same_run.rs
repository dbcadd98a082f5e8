//! `train --resume` continues the run the trace records and no other: a
//! `--set` of any key but `train.iterations`, `output.progress_every` and
//! `train.result_timeout_s` is refused (exit 2, the key named, the trace
//! byte for byte unchanged), and so is a data file that changed since the
//! run started (its fingerprint, stored in the trace, differs).
#![cfg(all(feature = "mpi", feature = "hdf5"))]

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

fn scratch(name: &str) -> PathBuf {
    common::scratch("resume-same-run", name)
}

fn train(args: &[&str]) -> Output {
    let _one = common::one_at_a_time();
    common::mpirun_command(3, args).output().unwrap()
}

/// Exit 2 with one error line that names `field`.
fn assert_refused(name: &str, out: &Output, field: &str) {
    let err = common::stderr(out);
    assert_eq!(out.status.code(), Some(2), "{name}: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
    assert_eq!(lines.len(), 1, "{name}: one error line: {err}");
    assert!(lines[0].contains(field), "{name}: names {field}: {err}");
}

fn write_data(path: &Path, flip: bool) {
    let rows: String = (0..60)
        .map(|i| {
            let label = (i % 2 == 0) != flip;
            format!(
                "{},{},{}\n",
                u8::from(label),
                (i as f64 * 0.37).sin(),
                (i as f64 * 0.11).cos()
            )
        })
        .collect();
    std::fs::write(path, rows).unwrap();
}

#[test]
fn a_resume_that_would_be_another_run_is_refused_and_changes_nothing() {
    let data = scratch("data.csv");
    write_data(&data, false);
    let config = scratch("run.toml");
    std::fs::write(
        &config,
        format!(
            "workers = 2\nseed = 4\n[scheme]\nkind = \"gc-cyclic\"\nload = 2\n[straggler]\nmode = \"measured\"\n\
             [data]\nkind = \"csv\"\npath = \"{}\"\ntrain_samples = 60\ntest_samples = 0\n\
             [model]\nloss = \"logistic\"\n[train]\niterations = 4\n[output]\nsnapshot_every = 2\n",
            data.display()
        ),
    )
    .unwrap();
    let trace = scratch("run.h5");
    let t = trace.to_str().unwrap();
    let out = train(&[
        "train",
        "--config",
        config.to_str().unwrap(),
        "--out",
        t,
        "--force",
        "--quiet",
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let before = std::fs::read(&trace).unwrap();
    for (set, field) in [
        ("scheme.kind=\"uncoded\"", "scheme.kind"),
        ("seed=99", "seed"),
        ("train.learning_rate=0.5", "train.learning_rate"),
        ("runtime.wait=\"spin\"", "runtime.wait"),
        ("output.snapshot_every=1", "output.snapshot_every"),
        ("data.features=21", "data.features"),
    ] {
        let out = train(&[
            "train",
            "--resume",
            t,
            "--set",
            "train.iterations=6",
            "--set",
            set,
        ]);
        assert_refused(set, &out, field);
        assert!(
            std::fs::read(&trace).unwrap() == before,
            "{set}: the trace changed"
        );
    }
    // Every label flipped: the same size, another file.
    write_data(&data, true);
    let out = train(&["train", "--resume", t, "--set", "train.iterations=6"]);
    assert_refused("flipped labels", &out, "data.path");
    assert!(common::stderr(&out).contains("changed since the run started"));
    assert!(
        std::fs::read(&trace).unwrap() == before,
        "flipped labels: the trace changed"
    );
    // The same data and an allowed key: the run goes on, its elapsed time
    // continuing from the snapshot's (issue 25, item 6).
    let earlier = gradcode::trace::read_trace(&trace, "/").unwrap().records;
    assert_eq!(earlier.len(), 4);
    write_data(&data, false);
    let out = train(&[
        "train",
        "--resume",
        t,
        "--set",
        "train.iterations=6",
        "--set",
        "output.progress_every=1",
        "--quiet",
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let err = common::stderr(&out);
    assert!(
        !err.contains("warning"),
        "no warnings from the stored config: {err}"
    );
    // The timing table counts both parts, and so does the wall it is a share
    // of: no event takes more than all of it (a resumed run once showed
    // "wait ... 428.07%").
    let text = common::stdout(&out);
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("event "))
        .skip(1)
        .take_while(|l| l.ends_with('%'))
        .collect();
    assert!(rows.iter().any(|r| r.starts_with("wait ")), "{text}");
    for row in rows {
        let share: f64 = row
            .split_whitespace()
            .last()
            .unwrap()
            .trim_end_matches('%')
            .parse()
            .unwrap();
        assert!(share <= 100.0, "{row}\n{text}");
    }
    let after = gradcode::trace::read_trace(&trace, "/").unwrap().records;
    assert_eq!(after.len(), 6);
    let elapsed: Vec<f64> = after.iter().map(|r| r.elapsed_s).collect();
    for i in 0..4 {
        assert_eq!(
            elapsed[i].to_bits(),
            earlier[i].elapsed_s.to_bits(),
            "row {}",
            i + 1
        );
    }
    assert!(
        elapsed.windows(2).all(|w| w[0] < w[1]) && elapsed[0] > 0.0,
        "elapsed_s grows from the first iteration on, across the resume: {elapsed:?}"
    );
    // A trace without elapsed_s (an older gradcode's): the resume adds it,
    // NaN throughout, never a clock restarted at 0.
    common::h5(&trace, common::H5::Write)
        .unwrap()
        .unlink("iteration/elapsed_s")
        .unwrap();
    let out = train(&[
        "train",
        "--resume",
        t,
        "--set",
        "train.iterations=8",
        "--quiet",
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let after = gradcode::trace::read_trace(&trace, "/").unwrap().records;
    assert_eq!(after.len(), 8);
    assert!(after.iter().all(|r| r.elapsed_s.is_nan()), "{after:?}");
}
