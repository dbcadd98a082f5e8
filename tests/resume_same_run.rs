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

/// A named data set (`data.set`) is fingerprinted as the files of a path
/// are (issue 38, item 5): a CNN run on `fashion-mnist`, resumed with
/// `GRADCODE_DATASET_ROOT` at a copy whose one test label differs, is
/// refused naming the file, the trace unchanged; resumed at another copy
/// with the same bytes, it goes on (files are matched by what they are,
/// not where). The set is a small slice of the installed Fashion-MNIST
/// (synthetic images where it is not installed), so the runs take seconds.
#[test]
fn a_named_set_that_changed_is_refused_on_resume() {
    use gradcode::learn::idx::{read_idx, write_idx};
    const FILES: [&str; 4] = [
        "train-images-idx3-ubyte.gz",
        "train-labels-idx1-ubyte.gz",
        "t10k-images-idx3-ubyte.gz",
        "t10k-labels-idx1-ubyte.gz",
    ];
    let installed = Path::new("/usr/share/datasets/fashion-mnist");
    let root = |name: &str| {
        let root = scratch(name);
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("fashion-mnist")).unwrap();
        root
    };
    // Root a: 120 training and 20 test images with their labels.
    let a = root("set-a");
    for (i, file) in FILES.iter().enumerate() {
        let n = if i < 2 { 120 } else { 20 };
        let (dims, data) = if installed.join(file).is_file() {
            let read = read_idx(&installed.join(file), 4096, |k, _| k < n).unwrap();
            let mut dims = read.dims.clone();
            dims[0] = n;
            (dims, read.data)
        } else if i % 2 == 0 {
            let pixels = (0..n * 784).map(|k| (k * 37 % 251) as u8).collect();
            (vec![n, 28, 28], pixels)
        } else {
            (vec![n], (0..n).map(|k| (k % 10) as u8).collect())
        };
        write_idx(&a.join("fashion-mnist").join(file), &dims, &data, true).unwrap();
    }
    let copy = |name: &str| {
        let to = root(name);
        for file in FILES {
            let from = a.join("fashion-mnist").join(file);
            std::fs::copy(from, to.join("fashion-mnist").join(file)).unwrap();
        }
        to
    };
    // Root b: one test label changed.
    let b = copy("set-b");
    let labels = b.join("fashion-mnist").join(FILES[3]);
    let mut read = read_idx(&labels, 4096, |_, _| true).unwrap();
    read.data[0] = (read.data[0] + 1) % 10;
    write_idx(&labels, &read.dims, &read.data, true).unwrap();
    // Root c: the same bytes elsewhere.
    let c = copy("set-c");

    let config = scratch("set.toml");
    std::fs::write(
        &config,
        "workers = 2\nseed = 4\n[scheme]\nkind = \"gc-cyclic\"\nload = 2\n[straggler]\nmode = \"measured\"\n\
         [data]\nkind = \"idx\"\nset = \"fashion-mnist\"\ntrain_samples = 120\ntest_samples = 20\n\
         [model]\nkind = \"cnn\"\n[train]\niterations = 4\nbatch_size = 8\nlearning_rate = 0.05\n[output]\nsnapshot_every = 2\n",
    )
    .unwrap();
    let trace = scratch("set.h5");
    let t = trace.to_str().unwrap();
    let train_at = |root: &Path, args: &[&str]| {
        let _one = common::one_at_a_time();
        common::mpirun_command(3, args)
            .env(gradcode::learn::images::DATASET_ROOT_ENV, root)
            .output()
            .unwrap()
    };
    let c_str = config.to_str().unwrap();
    let out = train_at(
        &a,
        &["train", "--config", c_str, "--out", t, "--force", "--quiet"],
    );
    assert!(out.status.success(), "{}", common::stderr(&out));
    let stored = gradcode::trace::read_attr_string(&trace, "/", "data_fingerprint").unwrap();
    assert_eq!(stored.lines().count(), 4, "{stored}");
    assert!(
        stored.contains("data.set/t10k-labels-idx1-ubyte.gz "),
        "{stored}"
    );
    let before = std::fs::read(&trace).unwrap();
    let resume = [
        "train",
        "--resume",
        t,
        "--set",
        "train.iterations=6",
        "--quiet",
    ];
    let out = train_at(&b, &resume);
    assert_refused(
        "a test label changed",
        &out,
        "data.set/t10k-labels-idx1-ubyte.gz",
    );
    assert!(common::stderr(&out).contains("changed since the run started"));
    assert!(
        std::fs::read(&trace).unwrap() == before,
        "a test label changed: the trace changed"
    );
    let out = train_at(&c, &resume);
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert!(
        !common::stderr(&out).contains("warning"),
        "{}",
        common::stderr(&out)
    );
    let after = gradcode::trace::read_trace(&trace, "/").unwrap().records;
    assert_eq!(after.len(), 6);
}

/// A CIFAR-10 folder (`data.kind = "cifar10"`, `data.path` a folder) is
/// fingerprinted file by file: an MLP run on six small batch files, resumed
/// after one label of `data_batch_3.bin` changed, is refused naming
/// `data.path/data_batch_3.bin`, the trace unchanged; with the file put back,
/// it goes on.
#[test]
fn a_cifar10_folder_whose_batch_changed_is_refused_on_resume() {
    use gradcode::learn::cifar::{IMAGE_BYTES, RECORD_BYTES, TEST_FILE, TRAIN_FILES, write_cifar};
    let folder = scratch("cifar10");
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).unwrap();
    for (f, file) in TRAIN_FILES.iter().chain([&TEST_FILE]).enumerate() {
        let n = 8;
        let labels: Vec<u8> = (0..n).map(|k| ((f * n + k) % 10) as u8).collect();
        let images: Vec<u8> = (0..n * IMAGE_BYTES)
            .map(|k| ((k * 37 + f * 11) % 251) as u8)
            .collect();
        write_cifar(&folder.join(file), &labels, &images).unwrap();
    }
    let config = scratch("cifar10.toml");
    std::fs::write(
        &config,
        format!(
            "workers = 2\nseed = 4\n[scheme]\nkind = \"gc-cyclic\"\nload = 2\n[straggler]\nmode = \"measured\"\n\
             [data]\nkind = \"cifar10\"\npath = \"{}\"\n\
             [model]\nkind = \"mlp\"\nhidden = [4]\n[train]\niterations = 4\nbatch_size = 4\nlearning_rate = 0.05\n[output]\nsnapshot_every = 2\n",
            folder.display()
        ),
    )
    .unwrap();
    let trace = scratch("cifar10.h5");
    let t = trace.to_str().unwrap();
    let c = config.to_str().unwrap();
    let out = train(&["train", "--config", c, "--out", t, "--force", "--quiet"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let stored = gradcode::trace::read_attr_string(&trace, "/", "data_fingerprint").unwrap();
    // The config file is no data file: the six batches alone.
    assert_eq!(stored.lines().count(), 6, "{stored}");
    let batch3 = folder.join(TRAIN_FILES[2]);
    assert!(
        stored.contains(&format!(
            "data.path/data_batch_3.bin {} bytes={}",
            batch3.display(),
            8 * RECORD_BYTES
        )),
        "{stored}"
    );
    let good = std::fs::read(&batch3).unwrap();
    let mut changed = good.clone();
    changed[0] = (changed[0] + 1) % 10;
    std::fs::write(&batch3, &changed).unwrap();
    let before = std::fs::read(&trace).unwrap();
    let resume = [
        "train",
        "--resume",
        t,
        "--set",
        "train.iterations=6",
        "--quiet",
    ];
    let out = train(&resume);
    assert_refused("a label changed", &out, "data.path/data_batch_3.bin");
    assert!(common::stderr(&out).contains("changed since the run started"));
    assert!(
        std::fs::read(&trace).unwrap() == before,
        "the trace changed"
    );
    std::fs::write(&batch3, &good).unwrap();
    let out = train(&resume);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let after = gradcode::trace::read_trace(&trace, "/").unwrap().records;
    assert_eq!(after.len(), 6);
}
