//! Neural networks under gradient coding, under mpirun: every exact scheme
//! trains the CNN (mini-batches, dropout, momentum) along the trajectory of
//! uncoded mini-batch SGD on the same batches; is-gc's and
//! ignore-stragglers' update is the mean of the gradients of exactly the
//! partitions their decode recovered; a resumed CNN run ends at the
//! uninterrupted run's θ bit for bit; bad model and image inputs are refused
//! with one line and exit status 2, writing nothing.
#![cfg(feature = "mpi")]

mod common;

use std::path::{Path, PathBuf};

use gradcode::coding;
use gradcode::config::{Config, parse};
use gradcode::learn::idx::write_idx;
use gradcode::learn::{DataPlan, Model, Optimizer, StepKey};

const DIR: &str = "nn-tests";

/// A small image data set of 16×16 single-channel images in 10 classes
/// (class c: a bright 4×4 square at a class-dependent place, plus noise),
/// written once as IDX files (the training images gzip-compressed):
/// `[data]` lines that point at them.
fn images() -> String {
    static WRITTEN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    WRITTEN
        .get_or_init(|| {
            let write = |name: &str, n: usize, seed: u64, gzip: bool| -> (PathBuf, PathBuf) {
                let mut state = seed;
                let mut next = || {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    (state >> 33) as u32
                };
                let mut pixels = Vec::with_capacity(n * 256);
                let mut labels = Vec::with_capacity(n);
                for _ in 0..n {
                    let class = (next() % 10) as usize;
                    let (cy, cx) = (2 + (class / 5) * 6, 1 + (class % 5) * 3);
                    for y in 0..16 {
                        for x in 0..16 {
                            let inside = (cy..cy + 4).contains(&y) && (cx..cx + 4).contains(&x);
                            let noise = next() % 60;
                            pixels.push(if inside { 180 + noise } else { noise } as u8);
                        }
                    }
                    labels.push(class as u8);
                }
                let ext = if gzip { ".gz" } else { "" };
                let x = common::scratch(DIR, &format!("{name}-images.idx{ext}"));
                let y = common::scratch(DIR, &format!("{name}-labels.idx{ext}"));
                // nextest runs each test in its own process: each writes
                // the same bytes to a file of its own and renames it into
                // place, so a reader never sees a file half written.
                let replace = |path: &PathBuf, dims: &[usize], values: &[u8]| {
                    let mine = PathBuf::from(format!("{}.{}", path.display(), std::process::id()));
                    write_idx(&mine, dims, values, gzip).unwrap();
                    std::fs::rename(&mine, path).unwrap();
                };
                replace(&x, &[n, 16, 16], &pixels);
                replace(&y, &[n], &labels);
                (x, y)
            };
            let (train_x, train_y) = write("train", 480, 1, true);
            let (test_x, test_y) = write("test", 60, 2, false);
            format!(
                "[data]\nkind = \"idx\"\npath = \"{}\"\nlabels_path = \"{}\"\ntest_path = \"{}\"\ntest_labels_path = \"{}\"\ntrain_samples = 480\ntest_samples = 60\n",
                train_x.display(),
                train_y.display(),
                test_x.display(),
                test_y.display()
            )
        })
        .clone()
}

/// The CNN on the images, 6 workers, stragglers emulated at 2 ms per model
/// time unit, mini-batches of 8, dropout, heavy-ball momentum.
fn cnn_config(iterations: usize) -> String {
    format!(
        "workers = 6\nseed = 5\n[straggler]\nmodel = \"shifted-exponential\"\nalpha = 0.01\nmu = 2.0\ntime_unit_ms = 2.0\n{}[model]\nkind = \"cnn\"\ndropout = 0.5\n[train]\niterations = {iterations}\nlearning_rate = 0.05\nbatch_size = 8\nmomentum = 0.5\neval_every = 5\n",
        images()
    )
}

fn train(name: &str, text: &str, extra: &[&str]) -> (serde_json::Value, PathBuf) {
    let (mut command, trace) = common::train_command(DIR, name, 7, text, extra);
    let out = {
        let _one = common::one_at_a_time();
        command.output().expect("mpirun must be installed")
    };
    (common::json(&out), trace)
}

/// The oracle: mini-batch SGD in this process, independent of the engine,
/// the schemes and the decode: at iteration t the update is the mean of the
/// gradients of the partitions `recovered(t)` on their batches (every
/// partition: uncoded SGD). Returns the final θ and each iteration's batch
/// loss and batch accuracy: the objective over the samples of the update,
/// at its model, and the share of them its training passes predicted.
fn reference(
    config: &Config,
    partitions: usize,
    recovered: impl Fn(u64) -> Vec<usize>,
) -> (Vec<f64>, Vec<(f64, f64)>) {
    let plan = DataPlan::new(config, partitions).unwrap();
    let ids: Vec<usize> = (0..partitions).collect();
    let parts = plan.load(&ids).unwrap();
    let model = Model::new(config, plan.input()).unwrap();
    let d = model.dim();
    let mut opt = Optimizer::new(&config.train, config.model.l2, d);
    opt.start_at(&model.initial_theta(config.seed));
    let mut one = vec![0.0; d + 1];
    let mut batch_losses = Vec::new();
    for t in 0..config.train.iterations as u64 {
        let mut sum = vec![0.0; d];
        let mut loss_sum = 0.0;
        let mut samples = 0;
        let mut correct = 0;
        for p in recovered(t) {
            let key = StepKey {
                seed: config.seed,
                partition: p,
                iteration: t,
            };
            correct += model
                .partition_gradient(
                    &parts[p],
                    plan.spec().batch,
                    key,
                    opt.eval_point(),
                    &mut one,
                )
                .unwrap()
                .expect("a network counts its correct predictions");
            for (s, g) in sum.iter_mut().zip(&one) {
                *s += g;
            }
            loss_sum += one[d];
            samples += config.train.batch_size.unwrap().min(parts[p].len());
        }
        batch_losses.push((
            opt.objective(loss_sum, samples),
            correct as f64 / samples as f64,
        ));
        opt.step(&sum, samples);
    }
    (opt.theta().to_vec(), batch_losses)
}

/// The trace's `model_layout` names the CNN's tensors, which follow one
/// another and together are θ's `dim` parameters.
fn assert_layout(name: &str, trace: &Path, dim: usize) {
    let text = gradcode::trace::TraceFile::open(trace)
        .and_then(|f| f.group_string_attr("/", "model_layout"))
        .unwrap()
        .unwrap_or_else(|| panic!("{name}: no model_layout"));
    let layout: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
    let mut end = 0;
    for t in &layout {
        assert_eq!(t["offset"].as_u64(), Some(end as u64), "{name}: {text}");
        let shape: Vec<usize> = t["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as usize)
            .collect();
        end += shape.iter().product::<usize>();
    }
    assert_eq!(end, dim, "{name}: {text}");
    assert!(
        layout.len() >= 4,
        "{name}: a CNN has several tensors: {text}"
    );
    let names: std::collections::BTreeSet<&str> =
        layout.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), layout.len(), "{name}: distinct names: {text}");
}

/// The trace's `/iteration/batch_loss` equals the oracle's at every
/// iteration (relative error at most 1e-12, every value finite), and
/// `/iteration/batch_accuracy` its share of correct predictions exactly.
fn assert_batch_losses(name: &str, trace: &Path, want: &[(f64, f64)]) {
    let records = gradcode::trace::read_trace(trace, "/").unwrap().records;
    assert_eq!(records.len(), want.len(), "{name}");
    for (t, (r, &(want, accuracy))) in records.iter().zip(want).enumerate() {
        assert_eq!(
            r.batch_accuracy,
            accuracy,
            "{name}: iteration {}: batch accuracy",
            t + 1
        );
        let err = (r.batch_loss - want).abs() / want.abs().max(f64::MIN_POSITIVE);
        assert!(
            r.batch_loss.is_finite() && err <= 1e-12,
            "{name}: iteration {}: batch loss {} vs the oracle's {want} (relative {err:e})",
            t + 1,
            r.batch_loss
        );
    }
}

#[test]
fn every_exact_scheme_trains_the_cnn_along_uncoded_minibatch_sgd() {
    for (name, scheme) in common::EXACT_SCHEMES {
        let text = format!("{}[scheme]\n{scheme}\n", cnn_config(20));
        let (summary, trace) = train(&format!("exact-{name}"), &text, &[]);
        let config = parse(&text, "test", &[]).unwrap().config;
        let partitions = coding::build(&config).unwrap().partitions();
        let (want, batch_losses) = reference(&config, partitions, |_| (0..partitions).collect());
        // Every step's batch loss is uncoded SGD's, whatever the code.
        assert_batch_losses(name, &trace, &batch_losses);
        assert_layout(name, &trace, common::theta(&summary).len());
        let err = common::relative_error(&common::theta(&summary), &want);
        assert!(
            err <= 1e-9,
            "{name}: θ after 20 steps is {err} from uncoded SGD"
        );
        assert_eq!(summary["mean_recovered_fraction"], 1.0, "{name}");
        assert_evaluate_reproduces(name, &summary, &trace, &config);
    }
}

/// `gradcode evaluate` on the trace reproduces `train --json`'s final test
/// loss and accuracy exactly; its confusion matrix counts each test label
/// (read here from the test set) in its row and its diagonal the correct
/// ones; `--train` evaluates every training sample; a key outside [data]
/// is refused, naming it.
fn assert_evaluate_reproduces(
    name: &str,
    summary: &serde_json::Value,
    trace: &Path,
    config: &Config,
) {
    let t = trace.to_str().unwrap();
    let out = common::gradcode(&["evaluate", t, "--json"]);
    assert!(out.status.success(), "{name}: {}", common::stderr(&out));
    let e = common::json(&out);
    assert_eq!(e["accuracy"], summary["final_test_accuracy"], "{name}: {e}");
    assert_eq!(e["loss"], summary["final_test_loss"], "{name}: {e}");
    assert_eq!(e["set"], "test");
    let partitions = coding::build(config).unwrap().partitions();
    let labels = DataPlan::new(config, partitions)
        .unwrap()
        .load_test()
        .unwrap()
        .y;
    let confusion: Vec<Vec<u64>> = serde_json::from_value(e["confusion"].clone()).unwrap();
    let mut per_class = vec![0u64; confusion.len()];
    for y in &labels {
        per_class[*y as usize] += 1;
    }
    let rows: Vec<u64> = confusion.iter().map(|r| r.iter().sum()).collect();
    assert_eq!(
        rows, per_class,
        "{name}: each row counts its class's test samples"
    );
    let diagonal: u64 = (0..confusion.len()).map(|c| confusion[c][c]).sum();
    assert_eq!(Some(diagonal), e["correct"].as_u64(), "{name}: {e}");
    let accuracy = summary["final_test_accuracy"].as_f64().unwrap();
    assert_eq!(diagonal as f64 / labels.len() as f64, accuracy, "{name}");
    let out = common::gradcode(&["evaluate", t, "--json", "--train"]);
    assert!(out.status.success(), "{name}: {}", common::stderr(&out));
    let e = common::json(&out);
    assert_eq!(e["samples"], 480, "{name}: every training sample: {e}");
    assert_eq!(e["set"], "train");
    let out = common::gradcode(&["evaluate", t, "--set", "seed=4"]);
    common::assert_rejected(name, &out, "seed");
}

/// IDX data without `train_samples` / `test_samples` uses every image of
/// its files (issue 39: the synthetic defaults 2000 / 400 were used
/// silently); `check` prints the counts, where they come from, and the
/// memory per process of the model and of the samples.
#[test]
fn idx_data_without_counts_uses_every_image_and_check_says_so() {
    let counted = images();
    let uncounted: String = counted
        .lines()
        .filter(|l| !l.contains("_samples"))
        .map(|l| format!("{l}\n"))
        .collect();
    let model = "[model]\nkind = \"mlp\"\nhidden = [32]\n[train]\nbatch_size = 8\n";
    for (name, data, train, test, source) in [
        ("every-image", &uncounted, 480, 60, "every image"),
        ("counted", &counted, 480, 60, "set"),
        (
            "one-count",
            &format!("{uncounted}test_samples = 10\n"),
            480,
            10,
            "every image",
        ),
    ] {
        let path = common::scratch(DIR, &format!("{name}.toml"));
        std::fs::write(
            &path,
            format!("workers = 4\n[scheme]\nkind = \"uncoded\"\n{data}{model}"),
        )
        .unwrap();
        let out = common::gradcode(&["check", "--config", path.to_str().unwrap(), "--json"]);
        assert!(out.status.success(), "{name}: {}", common::stderr(&out));
        let v = common::json(&out);
        assert_eq!(
            v["samples"]["train_samples"], train,
            "{name}: {}",
            v["samples"]
        );
        assert_eq!(v["samples"]["test_samples"], test, "{name}");
        assert_eq!(v["samples"]["source"], source, "{name}");
        // The resolved config (what a trace stores) says the counts.
        assert_eq!(v["config"]["data"]["train_samples"], train, "{name}");
        assert_eq!(v["config"]["data"]["test_samples"], test, "{name}");
        // 4 partitions of 120 images of 16x16, one stored per worker
        // (uncoded), in f64: 120 x 256 x 8 bytes = 0.23 MiB, rounded up.
        assert_eq!(v["memory"]["worker_data_mib"], 1, "{name}: {}", v["memory"]);
        let d = 256 * 32 + 32 + 32 * 10 + 10;
        let master = (6 * 8 * d as u64).div_ceil(1 << 20);
        assert_eq!(v["memory"]["master_mib"], master, "{name}: {}", v["memory"]);
        let out = common::gradcode(&["check", "--config", path.to_str().unwrap()]);
        let text = common::stdout(&out);
        assert!(
            text.contains(&format!("samples       {train} training, {test} test")),
            "{name}: {text}"
        );
    }
}

/// The text summary of a network's run prints the test accuracy at the
/// final model: the share `evaluate` computes on its trace.
#[test]
fn the_text_summary_prints_the_final_test_accuracy() {
    let text = format!(
        "workers = 2\nseed = 2\n{}[model]\nkind = \"mlp\"\nhidden = [16]\n[train]\niterations = 6\nlearning_rate = 0.1\nbatch_size = 8\n",
        images()
    );
    let config = common::scratch(DIR, "summary-accuracy.toml");
    std::fs::write(&config, text).unwrap();
    let trace = common::scratch(DIR, "summary-accuracy.h5");
    let (c, t) = (config.to_str().unwrap(), trace.to_str().unwrap());
    let out = {
        let _one = common::one_at_a_time();
        common::mpirun_command(
            3,
            &["train", "--config", c, "--out", t, "--force", "--quiet"],
        )
        .output()
        .expect("mpirun must be installed")
    };
    assert!(out.status.success(), "{}", common::stderr(&out));
    let stdout = common::stdout(&out);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("trained "))
        .unwrap_or_else(|| panic!("no summary line: {stdout}"));
    let printed: f64 = line
        .split(", test accuracy ")
        .nth(1)
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no test accuracy: {line}"));
    let e = common::json(&common::gradcode(&["evaluate", t, "--json"]));
    let accuracy = e["accuracy"].as_f64().unwrap();
    assert!(
        (printed - accuracy).abs() <= 5e-5,
        "{line} vs evaluate's {accuracy}"
    );
}

#[test]
fn in_single_precision_a_coded_run_follows_uncoded_f32_sgd() {
    // Each partition's f32 gradient is the same on every worker that
    // computes it; the codewords and the decode stay in f64.
    let text = format!(
        "{}[scheme]\nkind = \"gc-cyclic\"\nload = 3\n",
        cnn_config(10).replace("[model]\n", "[model]\nprecision = \"f32\"\n")
    );
    let (summary, _) = train("f32-gc-cyclic", &text, &[]);
    let config = parse(&text, "test", &[]).unwrap().config;
    let partitions = coding::build(&config).unwrap().partitions();
    let (want, _) = reference(&config, partitions, |_| (0..partitions).collect());
    let err = common::relative_error(&common::theta(&summary), &want);
    assert!(err <= 1e-9, "f32: θ is {err} from uncoded f32 SGD");
}

#[test]
fn a_worker_that_lags_behind_does_not_stall_the_training_loss() {
    // w = 1 of 6 under oversubscription: workers fall behind by several
    // tasks and are skipped for an iteration; the evaluations of the
    // training loss must not wait for a loss that no sent task computes
    // (that waited train.result_timeout_s, 300 s by default, each time):
    // the master computes every loss the results did not bring.
    let text = format!(
        "{}[scheme]\nkind = \"ignore-stragglers\"\nwait_for = 1\n",
        cnn_config(80)
            .replace("eval_every = 5", "eval_every = 2")
            .replace("[train]\n", "[train]\nresult_timeout_s = 120.0\n")
    );
    let started = std::time::Instant::now();
    let (summary, trace) = train("lagging", &text, &[]);
    assert_eq!(summary["iterations"], 80);
    let elapsed = started.elapsed().as_secs_f64();
    assert!(
        elapsed < 100.0,
        "80 steps took {elapsed:.0} s: an evaluation waited for a lost loss"
    );
    // Measuring is not training: the elapsed time the trace records leaves
    // out the loss evaluations (the test set's, and the 40 full-data
    // training losses the master completes on its own copy of the data),
    // which the master's timing events total; it still
    // holds every iteration's duration.
    let evaluating_s: f64 = summary["timing"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| ["evaluate", "evaluate train loss"].contains(&e["event"].as_str().unwrap()))
        .map(|e| e["total_s"].as_f64().unwrap())
        .sum();
    let records = gradcode::trace::read_trace(&trace, "/").unwrap().records;
    for (t, r) in records.iter().enumerate() {
        assert_eq!(
            r.train_loss.is_finite(),
            t % 2 == 0 || t + 1 == records.len() || r.recovered_fraction == 1.0,
            "iteration {t}: the training loss is known exactly where evaluated"
        );
    }
    let last = records.last().unwrap().elapsed_s;
    let durations: f64 = records.iter().map(|r| r.duration_s).sum();
    let wall_s = summary["wall_s"].as_f64().unwrap();
    assert!(evaluating_s > 0.0, "{}", summary["timing"]);
    assert!(
        last + evaluating_s <= wall_s + 1e-6,
        "elapsed {last} s + evaluations {evaluating_s} s > the run's wall clock {wall_s} s"
    );
    assert!(
        last >= durations - 1e-9,
        "elapsed {last} s < the iterations' {durations} s"
    );
}

/// The partitions the decode of each iteration recovered: the union of the
/// partitions stored by the workers whose message it used (is-gc and
/// ignore-stragglers sum-code each worker's partitions with weight 1 and
/// use workers of disjoint partitions).
fn recovered_per_iteration(trace: &Path, config: &Config) -> Vec<Vec<usize>> {
    let scheme = coding::build(config).unwrap();
    let records = gradcode::trace::read_trace(trace, "/").unwrap().records;
    records
        .iter()
        .map(|r| {
            let mut parts: Vec<usize> = (0..config.workers)
                .filter(|&w| r.used[w])
                .flat_map(|w| scheme.stored(w).to_vec())
                .collect();
            parts.sort_unstable();
            let n = parts.len();
            parts.dedup();
            assert_eq!(parts.len(), n, "used workers hold disjoint partitions");
            let fraction = parts.len() as f64 / scheme.partitions() as f64;
            assert_eq!(
                r.recovered_fraction, fraction,
                "the trace's recovered fraction"
            );
            parts
        })
        .collect()
}

#[test]
fn partial_schemes_step_with_the_mean_of_exactly_the_recovered_partitions() {
    for (name, scheme) in [
        (
            "is-gc",
            "kind = \"is-gc\"\nload = 2\nplacement = \"cr\"\nwait_for = 3",
        ),
        (
            "ignore-stragglers",
            "kind = \"ignore-stragglers\"\nwait_for = 4",
        ),
    ] {
        let text = format!("{}[scheme]\n{scheme}\n", cnn_config(15));
        let (summary, trace) = train(&format!("partial-{name}"), &text, &[]);
        let config = parse(&text, "test", &[]).unwrap().config;
        let recovered = recovered_per_iteration(&trace, &config);
        assert!(
            recovered.iter().any(|r| r.len() < config.workers),
            "{name}: some iteration recovers part of the gradient"
        );
        let partitions = coding::build(&config).unwrap().partitions();
        let (want, batch_losses) =
            reference(&config, partitions, |t| recovered[t as usize].clone());
        // Every step's batch loss, whatever eval_every: the mean over the
        // partitions this step recovered (issue 39: it was recorded only at
        // evaluations and where every partition was recovered).
        assert_batch_losses(name, &trace, &batch_losses);
        let err = common::relative_error(&common::theta(&summary), &want);
        assert!(
            err <= 1e-9,
            "{name}: θ is {err} from the recovered partitions' SGD"
        );
    }
}

#[test]
fn a_resumed_cnn_run_ends_at_the_uninterrupted_runs_theta_bit_for_bit() {
    // Uncoded: its decoded sum does not depend on which workers were
    // fastest, so two runs can agree bit for bit (a coded scheme's decode
    // weights follow the arrivals, and its θ agrees to rounding: above).
    let text = format!(
        "{}[scheme]\nkind = \"uncoded\"\n[output]\nsnapshot_every = 4\n",
        cnn_config(12)
    );
    let (whole, _) = train("resume-whole", &text, &[]);
    let (_, trace) = train("resume-first", &text, &["--set", "train.iterations=8"]);
    let out = {
        let _one = common::one_at_a_time();
        common::mpirun_command(
            7,
            &[
                "train",
                "--resume",
                trace.to_str().unwrap(),
                "--set",
                "train.iterations=12",
                "--json",
                "--quiet",
            ],
        )
        .output()
        .unwrap()
    };
    let resumed = common::json(&out);
    assert_eq!(resumed["resumed_at"], 8);
    let (a, b) = (common::theta(&whole), common::theta(&resumed));
    assert!(
        a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()),
        "resumed θ differs from the uninterrupted run's"
    );
}

/// `train` refuses `text` (with `set` overrides): exit 2, one line naming
/// `field`, and no trace created.
fn assert_train_refuses(name: &str, text: &str, set: &[&str], field: &str) {
    let trace = common::scratch(DIR, &format!("refused-{name}.h5"));
    let _ = std::fs::remove_file(&trace);
    let config = common::scratch(DIR, &format!("refused-{name}.toml"));
    std::fs::write(&config, text).unwrap();
    let mut args = vec![
        "train",
        "--config",
        config.to_str().unwrap(),
        "--out",
        trace.to_str().unwrap(),
    ];
    for s in set {
        args.extend(["--set", s]);
    }
    let out = {
        let _one = common::one_at_a_time();
        common::mpirun_command(7, &args).output().unwrap()
    };
    let err = common::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{name}: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
    assert_eq!(lines.len(), 1, "{name}: one error line: {err}");
    assert!(lines[0].contains(field), "{name}: names {field}: {err}");
    assert!(!trace.exists(), "{name}: no trace written");
}

#[test]
fn bad_model_and_image_inputs_are_refused_before_anything_is_written() {
    let base = format!("{}[scheme]\nkind = \"uncoded\"\n", cnn_config(3));
    assert_train_refuses("kind", &base, &["model.kind=\"transformer\""], "model.kind");
    // 480 images over 6 partitions: 80 per partition.
    assert_train_refuses("batch", &base, &["train.batch_size=81"], "train.batch_size");
    let small = base.replace("kind = \"cnn\"", "kind = \"resnet\"");
    assert_train_refuses("labels", &small, &["model.classes=5"], "model.classes");
    let flat = "workers = 6\n[scheme]\nkind = \"uncoded\"\n[model]\nkind = \"cnn\"\n[train]\nbatch_size = 8\n";
    assert_train_refuses("flat", flat, &[], "model.kind");
    let missing = "workers = 6\n[scheme]\nkind = \"uncoded\"\n[data]\nkind = \"idx\"\nset = \"no-such-set\"\n[model]\nkind = \"mlp\"\n";
    assert_train_refuses("set", missing, &[], "data.set");
}

#[test]
fn a_truncated_or_corrupted_idx_file_is_refused_with_its_byte_offset() {
    let data = images();
    let path_of = |key: &str| -> PathBuf {
        let line = data.lines().find(|l| l.starts_with(key)).unwrap();
        PathBuf::from(line.split('"').nth(1).unwrap())
    };
    let train_images = path_of("path =");
    let test_images = path_of("test_path =");
    for (name, source, cut) in [
        ("truncated-gzip", &train_images, true),
        ("corrupted-raw", &test_images, false),
    ] {
        let bytes = std::fs::read(source).unwrap();
        let broken = common::scratch(DIR, &format!("{name}.idx"));
        if cut {
            std::fs::write(&broken, &bytes[..bytes.len() / 2]).unwrap();
        } else {
            let mut bytes = bytes.clone();
            bytes[2] = 0x0b; // the type byte: i16, not u8
            std::fs::write(&broken, &bytes).unwrap();
        }
        let text = format!("{}[scheme]\nkind = \"uncoded\"\n", cnn_config(3))
            .replace(&source.display().to_string(), &broken.display().to_string());
        let field = broken.display().to_string();
        assert_train_refuses(name, &text, &[], &field);
        let config = common::scratch(DIR, &format!("refused-{name}.toml"));
        let out = common::gradcode(&["check", "--config", config.to_str().unwrap()]);
        common::assert_rejected(name, &out, "byte ");
    }
}

#[test]
fn a_named_set_that_is_not_installed_names_its_package() {
    let text = "workers = 2\n[scheme]\nkind = \"uncoded\"\n[data]\nkind = \"idx\"\nset = \"fashion-mnist\"\n[model]\nkind = \"mlp\"\n";
    let config = common::scratch(DIR, "not-installed.toml");
    std::fs::write(&config, text).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gradcode"))
        .args(["check", "--config", config.to_str().unwrap()])
        .env(
            gradcode::learn::images::DATASET_ROOT_ENV,
            "/nonexistent-datasets",
        )
        .output()
        .unwrap();
    common::assert_rejected("not installed", &out, "data.set");
    assert!(
        common::stderr(&out).contains("dataset-fashion-mnist"),
        "names the package: {}",
        common::stderr(&out)
    );
}
