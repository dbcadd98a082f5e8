//! Inputs that declare more than a machine holds are refused from what they
//! declare, never by the allocator's abort (issue 38, item 4): IDX files
//! whose header claims 2^31 images (1x1 and 28x28) or 60000 images of
//! 100000 x 100000 pixels, a gzip stream that ends before its header's
//! claim, and networks of 8.6e9 parameters or a ResNet of width 1024. Each
//! ends `gradcode check` and `gradcode train` (under mpirun) with exit
//! status 2 and one line on stderr naming the file or the limit, within
//! 10 s, in a process whose address space `ulimit -v 4000000` (3.8 GiB)
//! bounds, and writes nothing.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use gradcode::learn::idx::write_idx;

const DIR: &str = "input-bombs";

/// The address-space limit every command here runs under, in KiB.
const ULIMIT_KIB: u64 = 4_000_000;

/// How long a refusal may take.
const WITHIN: Duration = Duration::from_secs(10);

fn scratch(name: &str) -> PathBuf {
    common::scratch(DIR, name)
}

/// An IDX header (u8 items) of `dims`.
fn header(dims: &[u32]) -> Vec<u8> {
    let mut bytes = vec![0, 0, 0x08, dims.len() as u8];
    for d in dims {
        bytes.extend_from_slice(&d.to_be_bytes());
    }
    bytes
}

/// `bytes` gzip-compressed by gzip(1), each of `members` a member of its own
/// (`cat a.gz b.gz`), written at `path`.
fn write_gzip(path: &Path, bytes: &[u8], members: usize) {
    let chunk = bytes.len().div_ceil(members.max(1)).max(1);
    let mut out = Vec::new();
    for part in bytes.chunks(chunk) {
        let mut child = Command::new("gzip")
            .args(["-c", "-n"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("gzip must be installed");
        let mut stdin = child.stdin.take().unwrap();
        let part = part.to_vec();
        let writer = std::thread::spawn(move || {
            use std::io::Write;
            stdin.write_all(&part).unwrap();
        });
        let o = child.wait_with_output().unwrap();
        writer.join().unwrap();
        assert!(o.status.success());
        out.extend(o.stdout);
    }
    std::fs::write(path, out).unwrap();
}

/// A small valid image set of `side` x `side` images (10 classes; 40
/// training, 10 test images, the training images gzip-compressed): its
/// four paths.
fn image_set(side: usize) -> [PathBuf; 4] {
    let write = |name: &str, n: usize, gzip: bool| {
        let pixels: Vec<u8> = (0..n * side * side).map(|i| (i * 37 % 251) as u8).collect();
        let labels: Vec<u8> = (0..n).map(|i| (i % 10) as u8).collect();
        let ext = if gzip { ".gz" } else { "" };
        let x = scratch(&format!("{name}-{side}-images.idx{ext}"));
        let y = scratch(&format!("{name}-{side}-labels.idx{ext}"));
        write_idx(&x, &[n, side, side], &pixels, gzip).unwrap();
        write_idx(&y, &[n], &labels, gzip).unwrap();
        (x, y)
    };
    let (train_x, train_y) = write("train", 40, true);
    let (test_x, test_y) = write("test", 10, false);
    [train_x, train_y, test_x, test_y]
}

/// A gzip label file that holds what its header declares: 2^31 labels 0
/// (gzip -1 makes it 9.4 MB, the size of the file; made once, in
/// about 12 s, and kept in the scratch folder). Before the header check, a
/// run read it whole and then allocated 2^31 item indices (16 GiB).
fn true_2_31_labels() -> PathBuf {
    let path = scratch("labels-2^31-zeros.idx.gz");
    if std::fs::metadata(&path).is_ok_and(|m| m.len() > 9_000_000) {
        return path;
    }
    let head = scratch("labels-2^31.header");
    std::fs::write(&head, header(&[1 << 31])).unwrap();
    let partial = scratch(&format!("labels-2^31-zeros.{}", std::process::id()));
    let made = Command::new("sh")
        .arg("-c")
        .arg("{ cat \"$1\"; head -c 2147483648 /dev/zero; } | gzip -1 -c -n > \"$2\"")
        .arg("sh")
        .arg(&head)
        .arg(&partial)
        .status()
        .unwrap();
    assert!(made.success());
    std::fs::rename(&partial, &path).unwrap();
    path
}

/// A config of one worker training `model` on the image set of `side`,
/// with the training images (and labels) replaced where given.
fn config_of(
    name: &str,
    side: usize,
    images: Option<&Path>,
    labels: Option<&Path>,
    model: &str,
) -> PathBuf {
    let [x, y, tx, ty] = image_set(side);
    let text = format!(
        "workers = 1\n[scheme]\nkind = \"uncoded\"\n[data]\nkind = \"idx\"\npath = \"{}\"\nlabels_path = \"{}\"\ntest_path = \"{}\"\ntest_labels_path = \"{}\"\ntrain_samples = 40\ntest_samples = 10\n[model]\n{model}\n[train]\niterations = 2\n",
        images.unwrap_or(&x).display(),
        labels.unwrap_or(&y).display(),
        tx.display(),
        ty.display()
    );
    let path = scratch(&format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// [`config_of`] on 16 x 16 images.
fn config(name: &str, images: Option<&Path>, labels: Option<&Path>, model: &str) -> PathBuf {
    config_of(name, 16, images, labels, model)
}

/// `command` run under `ulimit -v` (its environment kept), and how long it took.
fn limited(command: &Command) -> (Output, Duration) {
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg(format!("ulimit -v {ULIMIT_KIB}; exec \"$@\""))
        .arg("sh")
        .arg(command.get_program())
        .args(command.get_args());
    for (key, value) in command.get_envs() {
        match value {
            Some(v) => sh.env(key, v),
            None => sh.env_remove(key),
        };
    }
    let start = Instant::now();
    let out = sh.output().unwrap();
    (out, start.elapsed())
}

/// `gradcode check --config CONFIG`.
fn check_command(config: &Path) -> Command {
    let mut check = Command::new(env!("CARGO_BIN_EXE_gradcode"));
    check.args(["check", "--config", config.to_str().unwrap()]);
    check
}

/// The commands each bomb is given: `check`, and (with MPI) `train` under
/// mpirun with the world one worker needs, into `out`'s folder.
fn commands(config: &Path, out: &Path, extra: &[&str]) -> Vec<(&'static str, Command)> {
    let c = config.to_str().unwrap();
    let mut check = Command::new(env!("CARGO_BIN_EXE_gradcode"));
    check.args(["check", "--config", c]).args(extra);
    #[allow(unused_mut)]
    let mut list = vec![("check", check)];
    #[cfg(feature = "mpi")]
    {
        let mut args = vec!["train", "--config", c, "--out", out.to_str().unwrap()];
        args.extend(extra);
        list.push(("train", common::mpirun_command(2, &args)));
    }
    #[cfg(not(feature = "mpi"))]
    let _ = out;
    list
}

/// Exit status 2, one line on stderr (`error: ...`, containing each of
/// `words`; under mpirun, gradcode's one line and whatever the launcher
/// adds about a rank's exit status), no panic, within [`WITHIN`], and
/// nothing written into `out`'s folder.
fn assert_refused(name: &str, out: &Output, took: Duration, folder: &Path, words: &[&str]) {
    let err = common::stderr(out);
    assert_eq!(out.status.code(), Some(2), "{name}: {err}");
    let ours: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
    assert_eq!(ours.len(), 1, "{name}: one error line: {err}");
    if !name.ends_with("train") {
        assert_eq!(err.lines().count(), 1, "{name}: one line: {err}");
    }
    for word in words {
        assert!(ours[0].contains(word), "{name}: names `{word}`: {err}");
    }
    assert!(
        !err.contains("panicked") && !err.contains("memory allocation"),
        "{name}: {err}"
    );
    assert!(took < WITHIN, "{name}: took {took:?}");
    let written: Vec<_> = std::fs::read_dir(folder).unwrap().collect();
    assert!(written.is_empty(), "{name}: wrote {written:?}");
}

/// A fresh, empty folder for a case's trace.
fn out_folder(name: &str) -> PathBuf {
    let folder = scratch(&format!("out-{name}"));
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).unwrap();
    folder
}

#[test]
fn idx_headers_that_declare_too_much_are_refused_from_the_header() {
    // 9.4 MB of pixels behind each lying header, as in the issue.
    let body: Vec<u8> = (0..60_000 * 157).map(|i| (i * 31 % 256) as u8).collect();
    let write = |name: &str, dims: &[u32], gzip: bool| {
        let path = scratch(name);
        let bytes = [&header(dims)[..], &body].concat();
        if gzip {
            write_gzip(&path, &bytes, 1);
        } else {
            std::fs::write(&path, &bytes).unwrap();
        }
        path
    };
    let labels = true_2_31_labels();
    let max = ["--set", "data.max_matrix_mib=1073741824"];
    struct Case<'a> {
        name: &'a str,
        side: usize,
        images: PathBuf,
        labels: Option<PathBuf>,
        extra: Vec<&'a str>,
        words: Vec<&'a str>,
    }
    let cases = vec![
        // The bombs: 2^31 labels that are there, 2^31 images that
        // are not (1x1: the test images are 1x1 too, so the shapes agree).
        Case {
            name: "2^31 images of 1x1, gzip",
            side: 1,
            images: write("bomb-1x1.idx.gz", &[1 << 31, 1, 1], true),
            labels: Some(labels.clone()),
            extra: vec![],
            words: vec![
                "bomb-1x1.idx.gz",
                "2147483648 items",
                "data.max_matrix_mib = 4096",
            ],
        },
        Case {
            name: "2^31 images of 28x28, gzip",
            side: 28,
            images: write("bomb-28x28.idx.gz", &[1 << 31, 28, 28], true),
            labels: Some(labels.clone()),
            extra: vec![],
            words: vec![
                "bomb-28x28.idx.gz",
                "12845056 MiB",
                "data.max_matrix_mib = 4096",
            ],
        },
        Case {
            name: "60000 images of 100000x100000, gzip",
            side: 16,
            images: write("bomb-wide.idx.gz", &[60000, 100_000, 100_000], true),
            labels: None,
            extra: vec![],
            words: vec!["bomb-wide.idx.gz", "items larger than 1 GiB"],
        },
        // Within the largest limit: a raw file's size against its header.
        Case {
            name: "2^31 images of 1x1, raw, the limit at its largest",
            side: 1,
            images: write("bomb-1x1.idx", &[1 << 31, 1, 1], false),
            labels: None,
            extra: max.to_vec(),
            words: vec![
                "bomb-1x1.idx",
                "the file has 9420016 bytes, its header declares 2147483664",
            ],
        },
        // Within the largest limit, a gzip stream is read: it ends long
        // before the 2^31 labels its header declares.
        Case {
            name: "2^31 labels, gzip, the limit at its largest",
            side: 16,
            images: write("bomb-16x16.idx.gz", &[1 << 31, 16, 16], true),
            labels: Some(write("bomb-labels.idx.gz", &[1 << 31], true)),
            extra: max.to_vec(),
            words: vec![
                "bomb-labels.idx.gz",
                "ends inside item 9420001 of the 2147483648",
            ],
        },
    ];
    for case in &cases {
        let cfg = config_of(
            &format!("idx-{}", case.words[0]),
            case.side,
            Some(&case.images),
            case.labels.as_deref(),
            "kind = \"mlp\"\nhidden = [8]",
        );
        let folder = out_folder(case.words[0]);
        for (sub, command) in commands(&cfg, &folder.join("t.h5"), &case.extra) {
            let (out, took) = limited(&command);
            assert_refused(
                &format!("{}: {sub}", case.name),
                &out,
                took,
                &folder,
                &case.words,
            );
        }
    }
}

/// gzip files of several members are read whole; a gzip file followed by
/// bytes that are not a member is refused naming it.
#[test]
fn multi_member_gzip_is_read_and_trailing_garbage_refused() {
    let [x, ..] = image_set(16);
    let cfg = config("good", None, None, "kind = \"mlp\"\nhidden = [8]");
    let (o, _) = limited(&check_command(&cfg));
    assert!(o.status.success(), "{}", common::stderr(&o));
    let bytes = {
        let pixels: Vec<u8> = (0..40 * 256).map(|i| (i * 37 % 251) as u8).collect();
        [&header(&[40, 16, 16])[..], &pixels].concat()
    };
    let two = scratch("two-members.idx.gz");
    write_gzip(&two, &bytes, 2);
    let cfg = config(
        "two-members",
        Some(&two),
        None,
        "kind = \"mlp\"\nhidden = [8]",
    );
    let (o, _) = limited(&check_command(&cfg));
    assert!(o.status.success(), "two members: {}", common::stderr(&o));
    let garbage = scratch("garbage.idx.gz");
    let mut with = std::fs::read(&x).unwrap();
    with.extend_from_slice(b"trailing garbage");
    std::fs::write(&garbage, with).unwrap();
    let cfg = config(
        "garbage",
        Some(&garbage),
        None,
        "kind = \"mlp\"\nhidden = [8]",
    );
    let folder = out_folder("garbage");
    for (sub, command) in commands(&cfg, &folder.join("t.h5"), &[]) {
        let (out, took) = limited(&command);
        assert_refused(
            &format!("trailing garbage: {sub}"),
            &out,
            took,
            &folder,
            &["garbage.idx.gz", "not a gzip member"],
        );
    }
}

/// This machine's memory in MiB.
fn machine_mib() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap();
    let line = text.lines().find(|l| l.starts_with("MemTotal:")).unwrap();
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        / 1024
}

#[test]
fn networks_larger_than_the_memory_limit_are_refused_before_anything_is_allocated() {
    // 256-65536-65536-65536-10: 8.6e9 parameters, 385 GiB at the master.
    let mlp = "kind = \"mlp\"\nhidden = [65536, 65536, 65536]";
    // Widths 1024 to 8192: 2.9e9 parameters, 128 GiB at the master.
    let resnet = "kind = \"resnet\"\nresnet_width = 1024";
    for (name, model, master_mib) in [("mlp", mlp, 394_024), ("resnet", resnet, 130_764)] {
        let cfg = config(&format!("net-{name}"), None, None, model);
        // The limit given, and the default: the machine's memory (where
        // the machine has less than the network needs).
        let mut limits = vec![];
        if machine_mib() < master_mib {
            limits.push(None);
        }
        limits.push(Some(3906));
        for limit in limits {
            let set = limit.map(|l| format!("model.max_memory_mib={l}"));
            let extra: Vec<&str> = set.iter().flat_map(|s| ["--set", s.as_str()]).collect();
            let folder = out_folder(&format!("net-{name}-{limit:?}"));
            let size = format!("needs at least {master_mib} MiB in the master");
            let rule = match limit {
                Some(l) => format!("more than model.max_memory_mib = {l}"),
                None => format!(
                    "more than model.max_memory_mib = {} (unset: this machine's memory)",
                    machine_mib()
                ),
            };
            for (sub, command) in commands(&cfg, &folder.join("t.h5"), &extra) {
                let (out, took) = limited(&command);
                assert_refused(
                    &format!("{name}, limit {limit:?}: {sub}"),
                    &out,
                    took,
                    &folder,
                    &[&size, &rule],
                );
            }
        }
    }
    // A network of ordinary size passes, and trains.
    let cfg = config("net-small", None, None, "kind = \"mlp\"\nhidden = [32, 32]");
    let o = common::gradcode(&["check", "--config", cfg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    #[cfg(feature = "mpi")]
    {
        let trace = scratch("net-small.h5");
        let args = common::train_args(&cfg, &trace);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let _one = common::one_at_a_time();
        let o = common::mpirun_command(2, &args).output().unwrap();
        assert!(o.status.success(), "{}", common::stderr(&o));
    }
}
