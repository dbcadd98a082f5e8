//! Outputs never destroy anything, inputs never hang: every writer
//! (`train --out`, `simulate --out`, `sweep --out`, `inspect --replay-csv`)
//! refuses with `--force` a target that is a FIFO, a device or one of the
//! command's own inputs, and a file another process holds the lock of; the
//! readers refuse a FIFO as a config, a data file or a trace at once. Each
//! refusal is exit 2 with one line naming the flag, and leaves the target
//! and its folder exactly as they were.
#![cfg(all(feature = "mpi", feature = "hdf5"))]

mod common;

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn scratch(name: &str) -> PathBuf {
    let dir = common::scratch("outputs", name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `gradcode ARGS` (under `mpirun -n 3` when `mpi`), killed and failed when
/// it takes more than 60 s: a refusal must never wait on its target.
fn run(mpi: bool, args: &[&str]) -> Output {
    let mut command = if mpi {
        common::mpirun_command(3, args)
    } else {
        let mut c = Command::new(env!("CARGO_BIN_EXE_gradcode"));
        c.args(args);
        c
    };
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("gradcode {args:?} still runs after 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Refused as bad input: exit 2 and one error line naming `flag` (under
/// mpirun, which adds its own lines after a rank's exit status 2, the one
/// line is the line that starts with `error`).
fn assert_rejected(name: &str, out: &Output, flag: &str, mpi: bool) {
    if !mpi {
        return common::assert_rejected(name, out, flag);
    }
    let err = common::stderr(out);
    assert_eq!(out.status.code(), Some(2), "{name}: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
    assert_eq!(lines.len(), 1, "{name}: one error line: {err}");
    assert!(lines[0].contains(flag), "{name}: names {flag}: {err}");
}

fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

/// The names in `dir` and, for each, its type and contents (a FIFO's and a
/// link's without opening them).
fn snapshot(dir: &Path) -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let meta = std::fs::symlink_metadata(e.path()).unwrap();
            let what = if meta.file_type().is_fifo() {
                "fifo".to_string()
            } else if meta.file_type().is_symlink() {
                format!(
                    "link to {}",
                    std::fs::read_link(e.path()).unwrap().display()
                )
            } else {
                format!("{:?}", std::fs::read(e.path()).unwrap())
            };
            (e.file_name().to_string_lossy().into_owned(), what)
        })
        .collect();
    all.sort();
    all
}

const CONFIG: &str = "workers = 2\nseed = 3\n[data]\nkind = \"csv\"\npath = \"DATA\"\ntrain_samples = 40\ntest_samples = 0\n[train]\niterations = 3\n[simulate]\ntrials = 2\niterations = 5\n";

/// A folder with a config, its CSV data and a small training trace.
fn setup(name: &str) -> (PathBuf, PathBuf, PathBuf, PathBuf) {
    let dir = scratch(name);
    let data = dir.join("data.csv");
    let rows: String = (0..40)
        .map(|i| format!("{},{},{}\n", i % 2, i as f64 * 0.1, 1.0 - i as f64 * 0.05))
        .collect();
    std::fs::write(&data, rows).unwrap();
    let config = dir.join("run.toml");
    std::fs::write(&config, CONFIG.replace("DATA", data.to_str().unwrap())).unwrap();
    let trace = dir.join("trace.h5");
    let out = run(
        true,
        &[
            "train",
            "--config",
            config.to_str().unwrap(),
            "--out",
            trace.to_str().unwrap(),
            "--quiet",
        ],
    );
    assert!(out.status.success(), "{}", common::stderr(&out));
    (dir, config, data, trace)
}

/// Each writer's command line with `TARGET` as its output, `--force` given.
fn writers(config: &Path, trace: &Path) -> Vec<(&'static str, bool, Vec<String>, &'static str)> {
    let c = config.to_str().unwrap().to_string();
    let t = trace.to_str().unwrap().to_string();
    let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        (
            "train",
            true,
            args(&[
                "train", "--config", &c, "--out", "TARGET", "--force", "--quiet",
            ]),
            "--out",
        ),
        (
            "simulate",
            false,
            args(&["simulate", "--config", &c, "--out", "TARGET", "--force"]),
            "--out",
        ),
        (
            "sweep",
            false,
            args(&[
                "sweep", "--config", &c, "--grid", "seed=1,2", "--out", "TARGET", "--force",
            ]),
            "--out",
        ),
        (
            "replay-csv",
            false,
            args(&["inspect", &t, "--replay-csv", "TARGET", "--force"]),
            "--replay-csv",
        ),
    ]
}

fn with_target(args: &[String], target: &Path) -> Vec<String> {
    args.iter()
        .map(|a| {
            if a == "TARGET" {
                target.to_str().unwrap().to_string()
            } else {
                a.clone()
            }
        })
        .collect()
}

#[test]
fn no_writer_replaces_a_fifo_or_a_device() {
    let (dir, config, _, trace) = setup("special");
    for (name, mpi, args, flag) in writers(&config, &trace) {
        // sweep's table must end in .csv or .json.
        let fifo = dir.join(format!("{name}-fifo.csv"));
        mkfifo(&fifo);
        // A link to /dev/null: were it replaced, only the link would go.
        let device = dir.join(format!("{name}-null.csv"));
        std::os::unix::fs::symlink("/dev/null", &device).unwrap();
        for (target, what) in [(&fifo, "a FIFO"), (&device, "a character device")] {
            let before = snapshot(&dir);
            let args = with_target(&args, target);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = run(mpi, &args);
            assert_rejected(&format!("{name} over {what}"), &out, flag, mpi);
            assert!(
                common::stderr(&out).contains(what),
                "{name}: {}",
                common::stderr(&out)
            );
            assert_eq!(
                snapshot(&dir),
                before,
                "{name}: {what} or its folder changed"
            );
        }
    }
}

#[test]
fn no_writer_replaces_its_own_inputs() {
    let (_dir, config, data, trace) = setup("own");
    for (name, mpi, args, flag) in writers(&config, &trace) {
        let targets: Vec<(&Path, &str)> = match name {
            "replay-csv" => vec![(&trace, "trace")],
            "sweep" => vec![(&data, "data.path")],
            _ => vec![(&config, "config"), (&data, "data.path")],
        };
        for (target, what) in targets {
            let before = std::fs::read(target).unwrap();
            let args = with_target(&args, target);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = run(mpi, &args);
            assert_rejected(&format!("{name} over its {what}"), &out, flag, mpi);
            assert!(
                common::stderr(&out).contains(&format!("this command's {what}")),
                "{name}: {}",
                common::stderr(&out)
            );
            assert_eq!(
                std::fs::read(target).unwrap(),
                before,
                "{name}: {what} changed"
            );
        }
    }
}

#[test]
fn no_writer_replaces_a_file_another_process_holds() {
    let (dir, config, _, trace) = setup("locked");
    for (name, mpi, args, flag) in writers(&config, &trace) {
        let live = dir.join(format!("{name}-live.csv"));
        std::fs::write(&live, b"a running job writes this").unwrap();
        let held = std::fs::File::open(&live).unwrap();
        // The lock HDF5 takes for a file it writes.
        // SAFETY: flock on a descriptor `held` owns.
        let locked = unsafe {
            use std::os::fd::AsRawFd;
            libc::flock(held.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB)
        };
        assert_eq!(locked, 0);
        let args = with_target(&args, &live);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(mpi, &args);
        assert_rejected(&format!("{name} over a live file"), &out, flag, mpi);
        assert!(common::stderr(&out).contains("another process"), "{name}");
        assert_eq!(std::fs::read(&live).unwrap(), b"a running job writes this");
        drop(held);
    }
}

#[test]
fn tables_go_only_into_existing_folders_and_are_checked_before_the_work() {
    let (dir, config, _, trace) = setup("folders");
    for (name, _, args, flag) in writers(&config, &trace) {
        if name != "sweep" && name != "replay-csv" {
            continue;
        }
        let missing = dir.join("missing").join("table.csv");
        let args = with_target(&args, &missing);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let before = snapshot(&dir);
        let out = run(false, &args);
        assert_rejected(&format!("{name} into a missing folder"), &out, flag, false);
        assert!(common::stderr(&out).contains("does not exist"), "{name}");
        assert_eq!(snapshot(&dir), before, "{name}: nothing is left behind");
    }
}

#[test]
fn a_fifo_as_an_input_is_refused_at_once() {
    let (dir, config, _, _) = setup("fifo-inputs");
    let fifo = dir.join("input.fifo");
    mkfifo(&fifo);
    let f = fifo.to_str().unwrap();
    let out = run(false, &["check", "--config", f]);
    assert_rejected("check --config FIFO", &out, "--config", false);
    let out = run(false, &["inspect", f]);
    assert_rejected("inspect FIFO", &out, f, false);
    for key in ["data.path", "data.test_path"] {
        let set = format!("{key}=\"{f}\"");
        let out = run(
            false,
            &["check", "--config", config.to_str().unwrap(), "--set", &set],
        );
        assert_rejected(&format!("check with {key} a FIFO"), &out, key, false);
        assert!(
            common::stderr(&out).contains("FIFO"),
            "{}",
            common::stderr(&out)
        );
    }
    let config_text = std::fs::read_to_string(&config).unwrap();
    let replay = format!("{config_text}[straggler]\nmodel = \"trace\"\ntrace_file = \"{f}\"\n");
    let replay_config = dir.join("replay.toml");
    std::fs::write(&replay_config, replay).unwrap();
    let out = run(
        false,
        &["check", "--config", replay_config.to_str().unwrap()],
    );
    assert_rejected(
        "check with a FIFO trace_file",
        &out,
        "straggler.trace_file",
        false,
    );
}

/// Two runs started together with one `--out` (issue 27, defect 12: the
/// loser exited 1 after loading): one writes the trace, the other is
/// refused as bad input, exit 2 with one line naming `--out` (at its start,
/// or when it creates the file if both checked the path before either
/// created it), and the winner's trace is whole.
#[test]
fn of_two_runs_with_one_trace_the_second_is_refused_as_bad_input() {
    let (dir, config, _, _) = setup("race");
    let trace = dir.join("raced.h5");
    let args = [
        "train",
        "--config",
        config.to_str().unwrap(),
        "--out",
        trace.to_str().unwrap(),
        "--quiet",
        "--set",
        "train.iterations=200",
    ];
    let _one = common::one_at_a_time();
    let outputs: Vec<Output> = std::thread::scope(|s| {
        let runs: Vec<_> = (0..2).map(|_| s.spawn(|| run(true, &args))).collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let codes: Vec<Option<i32>> = outputs.iter().map(|o| o.status.code()).collect();
    assert!(
        codes == [Some(0), Some(2)] || codes == [Some(2), Some(0)],
        "{codes:?}: {} / {}",
        common::stderr(&outputs[0]),
        common::stderr(&outputs[1])
    );
    let loser = outputs.iter().find(|o| o.status.code() == Some(2)).unwrap();
    assert_rejected("the second run", loser, "--out", true);
    let data = gradcode::trace::read_trace(&trace, "/").unwrap();
    assert_eq!(data.records.len(), 200);
}

/// Runs given neither `--out` nor `output.trace` never collide (issue 25,
/// item 6): each writes `results/<scheme>-<UTC stamp>.h5` below its working
/// folder (`simulate-<stamp>` for a simulation), the next free `-2`, `-3`,
/// ... when the second's name is taken, and says where at its end; an
/// explicit `output.trace` that exists is refused as before.
#[test]
fn runs_without_a_trace_name_get_new_names_and_print_them() {
    let (dir, config, _, _) = setup("names");
    let c = config.to_str().unwrap();
    let in_dir = |mpi: bool, args: &[&str]| -> Output {
        let mut command = if mpi {
            common::mpirun_command(3, args)
        } else {
            let mut c = Command::new(env!("CARGO_BIN_EXE_gradcode"));
            c.args(args);
            c
        };
        let _one = common::one_at_a_time();
        command.current_dir(&dir).output().unwrap()
    };
    let printed = |out: &Output, prefix: &str| -> PathBuf {
        assert!(out.status.success(), "{}", common::stderr(out));
        let text = common::stdout(out);
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` line in {text}"));
        PathBuf::from(line.trim())
    };
    let mut seen = Vec::new();
    for _ in 0..2 {
        let sim = printed(
            &in_dir(false, &["simulate", "--config", c, "--out"]),
            "trace written to ",
        );
        let train = printed(&in_dir(true, &["train", "--config", c]), "trace: ");
        for (path, stem) in [(sim, "simulate-"), (train, "gc-cyclic-")] {
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            assert_eq!(path.parent(), Some(Path::new("results")), "{path:?}");
            let stamp = name.strip_prefix(stem).unwrap_or_else(|| panic!("{name}"));
            // 20261126T190312Z.h5, or with a suffix -2.h5.
            assert_eq!(&stamp[8..9], "T", "{name}");
            assert_eq!(&stamp[15..16], "Z", "{name}");
            assert!(stamp[..8].bytes().all(|b| b.is_ascii_digit()), "{name}");
            assert!(dir.join(&path).is_file(), "{path:?}");
            assert!(!seen.contains(&path), "{path:?} written twice");
            seen.push(path);
        }
    }
    gradcode::trace::read_trace(&dir.join(&seen[1]), "/").unwrap();
    // Every name of the next 60 seconds taken: the run takes its `-2`.
    let now = std::time::SystemTime::now();
    let taken: Vec<PathBuf> = (0..60)
        .map(|s| {
            let name =
                gradcode::trace::default_trace_name("simulate", now + Duration::from_secs(s), &[]);
            std::fs::write(dir.join(&name), "taken").unwrap();
            name
        })
        .collect();
    let next = printed(
        &in_dir(false, &["simulate", "--config", c, "--out"]),
        "trace written to ",
    );
    let base = next.to_str().unwrap().strip_suffix("-2.h5").unwrap();
    assert!(
        taken.contains(&PathBuf::from(format!("{base}.h5"))),
        "{next:?}"
    );
    for t in &taken {
        assert_eq!(std::fs::read(dir.join(t)).unwrap(), b"taken");
    }
    // An explicit output.trace: refused when it exists, as ever.
    let explicit = format!("output.trace=\"{}\"", dir.join(&seen[1]).display());
    let out = in_dir(true, &["train", "--config", c, "--set", &explicit]);
    assert_rejected("explicit output.trace", &out, "output.trace", true);
}
