//! The delay models: their statistics match their definitions (000 §VI,
//! eq. 21-22), streams are reproducible per (seed, trial), the straggler-state
//! information is what docs/design.md ("Straggler state information") says,
//! and bad trace files are rejected with errors naming file:line.

use gradcode_core::config::{self, Config, StateInfo};
use gradcode_core::engine::state_context;
use gradcode_core::straggler::{DelaySpec, RoundSample, TraceTable};

fn config(text: &str) -> Config {
    config::parse(text, "test.toml", &[])
        .unwrap_or_else(|e| panic!("{e}"))
        .config
}

/// `iterations` samples of trial `trial`.
fn samples(c: &Config, trial: u64, iterations: usize) -> Vec<RoundSample> {
    let spec = DelaySpec::from_config(c).unwrap();
    let mut model = spec.model(trial);
    (0..iterations)
        .map(|_| {
            let mut s = RoundSample::new(c.workers);
            model.sample(&mut s);
            s
        })
        .collect()
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    s / n as f64
}

#[test]
fn shifted_exponential_has_mean_alpha_plus_one_over_mu() {
    let c = config("workers = 10\n[straggler]\nalpha = 0.5\nmu = 4.0\n");
    let all = samples(&c, 0, 20_000);
    let m = mean(all.iter().flat_map(|s| s.unit_time.iter().copied()));
    // 200 000 draws of Exp(4): standard error 0.25 / sqrt(2e5) = 5.6e-4.
    assert!((m - 0.75).abs() < 3e-3, "mean unit time {m}");
    let min = all
        .iter()
        .flat_map(|s| s.unit_time.iter().copied())
        .fold(f64::INFINITY, f64::min);
    assert!(
        min >= 0.5,
        "a computation is never shorter than alpha: {min}"
    );
    assert!(all.iter().all(|s| s.extra_time.iter().all(|&e| e == 0.0)));
    assert!(all.iter().all(|s| s.straggling.iter().all(|&b| !b)));
    assert!(all[0].rates().is_some_and(|r| r.iter().all(|&x| x == 4.0)));
}

#[test]
fn same_seed_and_trial_repeat_other_trials_and_seeds_differ() {
    let c = config("workers = 6\n");
    let a = samples(&c, 3, 5);
    assert_eq!(a, samples(&c, 3, 5));
    assert_ne!(a, samples(&c, 4, 5));
    let mut c2 = c.clone();
    c2.seed += 1;
    assert_ne!(a, samples(&c2, 3, 5));
}

const GE: &str = "workers = 20\n[straggler]\nmodel = \"gilbert-elliott\"\nalpha = 0.01\nmu_fast = 10.0\nmu_slow = 0.1\nswitch_probability = 0.05\ninitial_stragglers = 10\n";

#[test]
fn gilbert_elliott_starts_with_the_initial_stragglers_and_switches_with_p() {
    let c = config(GE);
    for trial in 0..5 {
        let all = samples(&c, trial, 4000);
        let first = &all[0];
        assert_eq!(first.straggling.iter().filter(|&&b| b).count(), 10);
        for s in &all {
            for w in 0..20 {
                let expected = if s.straggling[w] { 0.1 } else { 10.0 };
                assert_eq!(s.rate[w], expected);
            }
        }
        // Switches between consecutive iterations: 20 workers × 3999 steps, p = 0.05.
        let switches: usize = all
            .windows(2)
            .map(|w| {
                (0..20)
                    .filter(|&k| w[0].straggling[k] != w[1].straggling[k])
                    .count()
            })
            .sum();
        let rate = switches as f64 / (20.0 * 3999.0);
        assert!((rate - 0.05).abs() < 0.006, "switch rate {rate}");
    }
    // Different trials start with different stragglers.
    let t0: Vec<bool> = samples(&c, 0, 1)[0].straggling.clone();
    assert!((1..6).any(|t| samples(&c, t, 1)[0].straggling != t0));
}

#[test]
fn gilbert_elliott_slow_workers_are_slow() {
    let c = config(GE);
    let all = samples(&c, 0, 2000);
    let (mut slow, mut fast) = (Vec::new(), Vec::new());
    for s in &all {
        for w in 0..20 {
            if s.straggling[w] {
                slow.push(s.unit_time[w]);
            } else {
                fast.push(s.unit_time[w]);
            }
        }
    }
    let (ms, mf) = (mean(slow.into_iter()), mean(fast.into_iter()));
    assert!((ms - 10.01).abs() < 0.5, "slow mean {ms}");
    assert!((mf - 0.11).abs() < 0.005, "fast mean {mf}");
}

#[test]
fn heterogeneous_rates_are_uniform_slowed_tenfold_and_thresholded() {
    let c = config(
        "workers = 20\n[straggler]\nmodel = \"gilbert-elliott-heterogeneous\"\nrate_max = 5.0\nslow_factor = 10.0\nrate_threshold = 0.5\ninitial_stragglers = 10\n",
    );
    let mut fast_rates = Vec::new();
    for trial in 0..200 {
        let all = samples(&c, trial, 300);
        let mut fast = [f64::NAN; 20];
        let mut slow = [f64::NAN; 20];
        for s in &all {
            for w in 0..20 {
                assert_eq!(s.straggling[w], s.rate[w] < 0.5, "straggling = rate < tau");
                // Two rates per worker, one tenfold the other.
                if fast[w].is_nan() && slow[w].is_nan() {
                    fast[w] = s.rate[w];
                } else if s.rate[w] != fast[w] && slow[w].is_nan() {
                    slow[w] = s.rate[w];
                }
            }
        }
        for w in 0..20 {
            if !slow[w].is_nan() {
                let (hi, lo) = (fast[w].max(slow[w]), fast[w].min(slow[w]));
                assert!((hi / lo - 10.0).abs() < 1e-9, "rates {hi} and {lo}");
                fast_rates.push(hi);
            }
        }
    }
    // mu_f ~ U(0, 5]: mean 2.5, all within (0, 5].
    assert!(fast_rates.iter().all(|&r| r > 0.0 && r <= 5.0));
    let m = mean(fast_rates.iter().copied());
    assert!((m - 2.5).abs() < 0.1, "mean fast rate {m}");
}

#[test]
fn time_varying_rates_follow_eq_22() {
    let c = config(
        "workers = 20\n[straggler]\nmodel = \"time-varying\"\nrate_max = 5.0\nrate_threshold = 1.0\nswitch_probability = 0.05\ninitial_stragglers = 10\n",
    );
    let all = samples(&c, 0, 3000);
    assert_eq!(all[0].straggling.iter().filter(|&&b| b).count(), 10);
    for w in 0..20 {
        let r = all[0].rate[w];
        if all[0].straggling[w] {
            assert!(r > 0.0 && r < 1.0);
        } else {
            assert!((1.0..=5.0).contains(&r));
        }
    }
    let changes: usize = all
        .windows(2)
        .map(|p| (0..20).filter(|&k| p[0].rate[k] != p[1].rate[k]).count())
        .sum();
    let rate = changes as f64 / (20.0 * 2999.0);
    assert!((rate - 0.05).abs() < 0.008, "re-draw rate {rate}");
    for s in &all {
        for w in 0..20 {
            assert!(s.rate[w] > 0.0 && s.rate[w] <= 5.0);
            assert_eq!(s.straggling[w], s.rate[w] < 1.0);
        }
    }
}

#[test]
fn extra_delay_hits_only_the_delayed_workers() {
    let c = config(
        "workers = 8\n[straggler]\nmodel = \"extra-delay\"\ndelayed_workers = [2, 5]\ndelay_mean = 3.0\n",
    );
    let all = samples(&c, 0, 20_000);
    for s in &all {
        for w in 0..8 {
            let delayed = w == 1 || w == 4;
            assert_eq!(s.straggling[w], delayed);
            assert_eq!(s.extra_time[w] > 0.0, delayed);
        }
    }
    let m = mean(all.iter().flat_map(|s| [s.extra_time[1], s.extra_time[4]]));
    assert!((m - 3.0).abs() < 0.1, "mean extra delay {m}");
    // A message after c computations: c·u + e.
    let s = &all[0];
    assert_eq!(s.message_time(1, 3), 3.0 * s.unit_time[1] + s.extra_time[1]);

    let c = config("workers = 8\n[straggler]\nmodel = \"extra-delay\"\ndelayed_count = 3\n");
    let all = samples(&c, 0, 4000);
    let mut hits = [0usize; 8];
    for s in &all {
        assert_eq!(s.straggling.iter().filter(|&&b| b).count(), 3);
        for (h, &b) in hits.iter_mut().zip(&s.straggling) {
            *h += usize::from(b);
        }
    }
    // Each worker is delayed 3/8 of the time.
    for h in hits {
        assert!((h as f64 / 4000.0 - 0.375).abs() < 0.03, "{hits:?}");
    }
}

#[test]
fn state_information_is_this_or_the_previous_iteration() {
    let c = config(GE);
    let all = samples(&c, 0, 2);
    let ctx = state_context(StateInfo::Perfect, 1, &all[1], Some(&all[0]));
    assert_eq!(ctx.straggling, Some(all[1].straggling.as_slice()));
    assert_eq!(ctx.rates, Some(all[1].rate.as_slice()));
    let ctx = state_context(StateInfo::Imperfect, 1, &all[1], Some(&all[0]));
    assert_eq!(ctx.straggling, Some(all[0].straggling.as_slice()));
    assert_eq!(ctx.iteration, 1);
    let ctx = state_context(StateInfo::Imperfect, 0, &all[0], None);
    assert!(ctx.straggling.is_none() && ctx.rates.is_none());
    // A trace has no rates.
    let mut s = RoundSample::new(3);
    s.rate.fill(f64::NAN);
    assert!(
        state_context(StateInfo::Perfect, 0, &s, None)
            .rates
            .is_none()
    );
}

fn write(name: &str, text: &str) -> String {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("straggler-traces");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn trace_replay_uses_the_chosen_columns_and_wraps() {
    let path = write("ok.csv", "w0,w1,w2,w3\n1,2,3,40\n5,6,7,8\n");
    let c = config(&format!(
        "workers = 2\n[straggler]\nmodel = \"trace\"\ntrace_file = \"{path}\"\ntrace_columns = [4, 2]\ntrace_threshold = 2.0\n[simulate]\niterations = 3\n"
    ));
    let all = samples(&c, 0, 3);
    assert_eq!(all[0].unit_time, [40.0, 2.0]);
    assert_eq!(all[1].unit_time, [8.0, 6.0]);
    assert_eq!(all[2].unit_time, [40.0, 2.0]);
    // Median of (40, 2) is 21: nobody exceeds 42.
    assert!(all[0].straggling.iter().all(|&b| !b));
    // Trial k starts at row k · simulate.iterations (mod the rows): 3 and 6.
    assert_eq!(samples(&c, 1, 1)[0].unit_time, [8.0, 6.0]);
    assert_eq!(samples(&c, 2, 1)[0].unit_time, [40.0, 2.0]);
    let c = config(&format!(
        "workers = 3\n[straggler]\nmodel = \"trace\"\ntrace_file = \"{path}\"\n"
    ));
    assert_eq!(samples(&c, 0, 1)[0].unit_time, [1.0, 2.0, 3.0]);
    let c = config(&format!(
        "workers = 4\n[straggler]\nmodel = \"trace\"\ntrace_file = \"{path}\"\n"
    ));
    // Median of (1, 2, 3, 40) is 2.5: only 40 > 5 straggles.
    assert_eq!(samples(&c, 0, 1)[0].straggling, [false, false, false, true]);
}

/// With `trace_compute_share = s` a value v is s·v of computation per
/// partition and (1 − s)·v fixed per message: a message after c
/// computations arrives at c·s·v + (1 − s)·v, so redundancy costs only
/// computation; straggling still compares whole values.
#[test]
fn a_trace_value_splits_into_computation_and_a_fixed_cost() {
    let path = write("split.csv", "w0,w1,w2,w3\n1,2,3,40\n");
    let c = config(&format!(
        "workers = 4\n[straggler]\nmodel = \"trace\"\ntrace_file = \"{path}\"\ntrace_compute_share = 0.25\n"
    ));
    let s = &samples(&c, 0, 1)[0];
    for (w, v) in [1.0, 2.0, 3.0, 40.0].into_iter().enumerate() {
        assert_eq!(s.message_time(w, 1), 0.25 * v + 0.75 * v);
        assert_eq!(s.message_time(w, 3), 3.0 * 0.25 * v + 0.75 * v);
    }
    assert_eq!(s.straggling, [false, false, false, true]);
    for bad in ["0.0", "1.5", "-0.1"] {
        let e = config::parse(
            &format!("[straggler]\ntrace_compute_share = {bad}\n"),
            "t",
            &[],
        )
        .unwrap_err();
        assert_eq!(e.field, "straggler.trace_compute_share", "{bad}");
    }
}

#[test]
fn the_real_aws_traces_load_as_their_manifest_says() {
    // The traces shipped in data/traces/aws-lambda/ (see its README for the
    // source), each with the rounds and workers MANIFEST.tsv lists.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/traces/aws-lambda");
    let manifest = std::fs::read_to_string(dir.join("MANIFEST.tsv")).unwrap();
    let mut n = 0;
    for line in manifest.lines().skip(1) {
        let fields: Vec<&str> = line.split('\t').collect();
        let [file, rounds, workers] = fields[..] else {
            panic!("MANIFEST.tsv line {line:?}")
        };
        let p = dir.join(file);
        let t = TraceTable::load(&p).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.columns(), workers.parse::<usize>().unwrap(), "{file}");
        assert_eq!(t.rows(), rounds.parse::<usize>().unwrap(), "{file}");
        n += 1;
    }
    let csvs = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "csv")
        })
        .count();
    assert_eq!(n, csvs, "every CSV is in MANIFEST.tsv");
    assert!(n >= 40);
}

/// (file name, contents, text the error must contain)
const BAD_TRACES: &[(&str, &str, &str)] = &[
    (
        "short-row.csv",
        "w0,w1,w2\n1,2,3\n4,5\n",
        "short-row.csv:3: has 2 cells",
    ),
    (
        "long-row.csv",
        "1,2\n3,4,5\n",
        "long-row.csv:2: has 3 cells",
    ),
    (
        "nan.csv",
        "w0,w1\n1,2\n\n3,NaN\n",
        "nan.csv:4: column 2 (w1) is NaN",
    ),
    (
        "negative.csv",
        "1,2\n3,-4\n",
        "negative.csv:2: column 2 is -4, negative",
    ),
    (
        "text.csv",
        "w0,w1\n1,abc\n",
        "text.csv:2: column 2 (w1) is `abc`, not a number",
    ),
    (
        "empty-cell.csv",
        "w0,w1\n1,\n",
        "empty-cell.csv:2: column 2 (w1) is empty",
    ),
    (
        "infinite.csv",
        "1,inf\n",
        "infinite.csv:1: column 2 is infinite",
    ),
    (
        "header-only.csv",
        "w0,w1\n",
        "header-only.csv:1: is a header with no data rows",
    ),
    ("empty.csv", "\n\n", "empty.csv: has no rows"),
];

#[test]
fn bad_trace_files_are_rejected_naming_file_and_line() {
    for (name, text, expected) in BAD_TRACES {
        let path = write(name, text);
        let e = TraceTable::load(std::path::Path::new(&path)).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains(expected), "{name}: {msg}");
        assert!(!msg.contains('\n'));
    }
}

#[test]
fn trace_columns_are_checked_against_the_file() {
    let path = write("three.csv", "a,b,c\n1,2,3\n");
    let c = config(&format!(
        "workers = 2\n[straggler]\nmodel = \"trace\"\ntrace_file = \"{path}\"\ntrace_columns = [1, 4]\n"
    ));
    let e = DelaySpec::from_config(&c).unwrap_err();
    assert_eq!(e.field, "straggler.trace_columns");
    assert!(e.to_string().contains("names column 4"), "{e}");
    let c = config(&format!(
        "workers = 4\n[straggler]\nmodel = \"trace\"\ntrace_file = \"{path}\"\n"
    ));
    let e = DelaySpec::from_config(&c).unwrap_err();
    assert!(
        e.to_string()
            .contains("three.csv:2: has 3 columns, fewer than workers = 4"),
        "{e}"
    );
    let c = config(
        "workers = 4\n[straggler]\nmodel = \"trace\"\ntrace_file = \"/nonexistent/x.csv\"\n",
    );
    let e = DelaySpec::from_config(&c).unwrap_err();
    assert_eq!(e.field, "straggler.trace_file");
}

/// S⁰, the state before the first iteration (000 Algorithm 1): the models
/// whose state persists report it, and their first iteration runs in it
/// (same flags and rates); the others have none.
#[test]
fn the_initial_state_is_the_first_iterations_state() {
    for (text, has) in [
        (
            "[straggler]\nmodel = \"gilbert-elliott\"\ninitial_stragglers = 4\n",
            true,
        ),
        (
            "[straggler]\nmodel = \"gilbert-elliott-heterogeneous\"\ninitial_stragglers = 3\n",
            true,
        ),
        (
            "[straggler]\nmodel = \"time-varying\"\ninitial_stragglers = 5\n",
            true,
        ),
        (
            "[straggler]\nmodel = \"extra-delay\"\ndelayed_workers = [2, 7]\n",
            true,
        ),
        (
            "[straggler]\nmodel = \"extra-delay\"\ndelayed_count = 2\n",
            false,
        ),
        ("[straggler]\nmodel = \"shifted-exponential\"\n", false),
    ] {
        let c = config(&format!("workers = 12\nseed = 4\n{text}"));
        for trial in 0..3 {
            let model = DelaySpec::from_config(&c).unwrap().model(trial);
            let mut s0 = RoundSample::new(12);
            assert_eq!(model.initial_state(&mut s0), has, "{text}");
            if has {
                let first = &samples(&c, trial, 1)[0];
                assert_eq!(s0.straggling, first.straggling, "{text}");
                assert_eq!(s0.rate, first.rate, "{text}");
                assert!(
                    s0.straggling.iter().any(|&s| s),
                    "{text}: someone straggles"
                );
            } else {
                let blank = RoundSample::new(12);
                assert_eq!(
                    (&s0.unit_time, &s0.extra_time, &s0.straggling),
                    (&blank.unit_time, &blank.extra_time, &blank.straggling),
                    "{text}: untouched"
                );
                assert!(s0.rate.iter().all(|r| r.is_nan()), "{text}: untouched");
            }
        }
    }
}
