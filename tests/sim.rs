//! The Monte Carlo engine: per iteration it gives exactly the order
//! statistics the schemes' stopping rules define (000 eq. 14-15), its means
//! agree with the closed-form order statistics of i.i.d. shifted
//! exponentials, every scheme sees the same samples, and a run is a pure
//! function of the seed.

use gradcode::coding::{self, RoundContext, RoundPlan, Scheme};
use gradcode::config::{self, Config};
use gradcode::engine::{
    IterationEvent, Observer, ObserverError, Round, RoundReport, RoundTask, SimulatedRound,
    StopRule, Timing,
};
use gradcode::sim::{SimReport, Simulation, lower_bound};
use gradcode::straggler::RoundSample;
use gradcode::trace::IterationRecord;
use proptest::prelude::*;

fn config(text: &str) -> Config {
    config::parse(text, "test.toml", &[])
        .unwrap_or_else(|e| panic!("{e}"))
        .config
}

fn run(text: &str) -> SimReport {
    Simulation::from_config(&config(text))
        .unwrap_or_else(|e| panic!("{e}"))
        .run(&mut [])
        .unwrap()
}

/// What one simulated iteration of one scheme gives.
struct Outcome {
    time: f64,
    decodable: bool,
    messages_received: usize,
    messages_used: usize,
    recovered_fraction: f64,
}

/// One iteration through the engine's simulated round and stop rule.
fn one_round(
    round: &mut SimulatedRound,
    scheme: &mut dyn Scheme,
    plan: &RoundPlan,
    sample: &RoundSample,
) -> Outcome {
    let mut report = RoundReport::default();
    report.clear();
    let task = RoundTask {
        lane: 0,
        iteration: 0,
        plan,
        sample,
        eval_point: None,
    };
    let stop = {
        let mut rule = StopRule::new(scheme, plan);
        round
            .run(&task, &mut rule, &mut report, &mut Timing::new(false))
            .unwrap();
        rule.finish()
    };
    let d = scheme.decode(plan, &report.arrivals);
    Outcome {
        time: stop.time,
        decodable: d.decodable,
        messages_received: report.arrivals.len(),
        messages_used: d.messages_used(),
        recovered_fraction: d.recovered_fraction(scheme.partitions()),
    }
}

/// The k-th smallest (1-based) of `values`.
fn kth(values: &[f64], k: usize) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v[k - 1]
}

fn sample(unit: &[f64]) -> RoundSample {
    let mut s = RoundSample::new(unit.len());
    s.unit_time.copy_from_slice(unit);
    s
}

fn scheme_config(workers: usize, kind: &str, extra: &str) -> Config {
    config(&format!(
        "workers = {workers}\n[scheme]\nkind = \"{kind}\"\n{extra}"
    ))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Every static scheme stops exactly at the order statistic of its rule.
    #[test]
    fn iteration_time_is_the_order_statistic_of_the_rule(
        (k, r, p, unit, w) in (1usize..=4, 1usize..=4, 1usize..=4)
            .prop_flat_map(|(p, l_extra, r)| {
                let l = r + l_extra - 1; // cluster size >= r
                let k = p * l;
                (Just(k), Just(r), Just(p),
                 proptest::collection::vec(0.01f64..10.0, k), 1..=k)
            })
    ) {
        let s = sample(&unit);
        let mut engine = SimulatedRound::new(1.0);
        let full: Vec<f64> = unit.iter().map(|u| r as f64 * u).collect();

        // uncoded: all K; ignore-stragglers: the fastest w (one computation each).
        let c = scheme_config(k, "uncoded", "");
        let mut scheme = coding::build(&c).unwrap();
        let plan = scheme.plan_round(&RoundContext::default());
        let out = one_round(&mut engine, scheme.as_mut(), &plan, &s);
        prop_assert_eq!(out.time, kth(&unit, k));
        prop_assert_eq!(out.messages_received, k);
        prop_assert_eq!(out.recovered_fraction, 1.0);

        let c = scheme_config(k, "ignore-stragglers", &format!("wait_for = {w}\n"));
        let mut scheme = coding::build(&c).unwrap();
        let plan = scheme.plan_round(&RoundContext::default());
        let out = one_round(&mut engine, scheme.as_mut(), &plan, &s);
        prop_assert_eq!(out.time, kth(&unit, w));
        prop_assert_eq!(out.messages_used, w);
        prop_assert!((out.recovered_fraction - w as f64 / k as f64).abs() < 1e-12);

        // gc-cyclic: the (K - r + 1)-th of the r-computation tasks.
        let c = scheme_config(k, "gc-cyclic", &format!("load = {r}\n"));
        let mut scheme = coding::build(&c).unwrap();
        let plan = scheme.plan_round(&RoundContext::default());
        let out = one_round(&mut engine, scheme.as_mut(), &plan, &s);
        prop_assert_eq!(out.time, kth(&full, k - r + 1));
        prop_assert_eq!(out.messages_received, k - r + 1);
        prop_assert!(out.decodable);
        prop_assert_eq!(out.recovered_fraction, 1.0);

        // gc-sc: the slowest cluster's (l - r + 1)-th (000 eq. 14-15).
        let c = scheme_config(k, "gc-sc", &format!("load = {r}\nclusters = {p}\n"));
        let mut scheme = coding::build(&c).unwrap();
        let plan = scheme.plan_round(&RoundContext::default());
        let out = one_round(&mut engine, scheme.as_mut(), &plan, &s);
        let l = k / p;
        let expected = plan
            .clusters
            .iter()
            .map(|members| {
                let times: Vec<f64> = members.iter().map(|&w| full[w]).collect();
                kth(&times, l - r + 1)
            })
            .fold(f64::NEG_INFINITY, f64::max);
        prop_assert_eq!(out.time, expected);
        prop_assert_eq!(
            out.messages_received,
            full.iter().filter(|&&t| t <= expected).count()
        );
        prop_assert!(out.decodable);

        // The lower bound: the P(l - r + 1)-th of all K, below both codes.
        let mut scratch = Vec::new();
        let lb = lower_bound(&s, r, p * (l - r + 1), &mut scratch);
        prop_assert_eq!(lb, kth(&full, p * (l - r + 1)));
        prop_assert!(lb <= expected);
    }

    /// The extra delay is added to every message: time = after · u + e.
    #[test]
    fn extra_time_is_added_to_the_arrivals(
        unit in proptest::collection::vec(0.01f64..10.0, 6),
        extra in proptest::collection::vec(0.0f64..10.0, 6),
    ) {
        let mut s = sample(&unit);
        s.extra_time.copy_from_slice(&extra);
        let c = scheme_config(6, "gc-cyclic", "load = 2\n");
        let mut scheme = coding::build(&c).unwrap();
        let plan = scheme.plan_round(&RoundContext::default());
        let mut engine = SimulatedRound::new(1.0);
        let out = one_round(&mut engine, scheme.as_mut(), &plan, &s);
        let arrivals: Vec<f64> = (0..6).map(|w| 2.0 * unit[w] + extra[w]).collect();
        prop_assert_eq!(out.time, kth(&arrivals, 5));
        let times: Vec<f64> = engine.events().iter().map(|e| e.0).collect();
        prop_assert!(times.windows(2).all(|p| p[0] <= p[1]), "events sorted");
    }
}

/// E of the k-th smallest of n i.i.d. Exp(mu): (1/mu) sum_{i=0}^{k-1} 1/(n - i).
fn exp_order_statistic(k: usize, n: usize, mu: f64) -> f64 {
    (0..k).map(|i| 1.0 / (n - i) as f64).sum::<f64>() / mu
}

/// A simulated mean agrees with its closed form: within twice the 95%
/// half-width (so a correct engine fails about once in 10^4 seeds, not once
/// in 20), and the interval is tight enough (< 2% of the mean) to mean something.
fn assert_agrees(name: &str, simulated: f64, ci95: f64, expected: f64) {
    assert!(
        ci95 < 0.02 * expected,
        "{name}: CI ±{ci95} too wide for a test"
    );
    assert!(
        (simulated - expected).abs() <= 2.0 * ci95,
        "{name}: simulated {simulated} ± {ci95}, closed form {expected}"
    );
}

const SHIFTED: &str = "workers = 10\nseed = 7\n[straggler]\nmodel = \"shifted-exponential\"\nalpha = 0.2\nmu = 3.0\n[simulate]\ntrials = 30\niterations = 400\n";

#[test]
fn means_agree_with_closed_form_order_statistics() {
    let (alpha, mu, k) = (0.2, 3.0, 10);
    // uncoded: the max of 10 (one computation each).
    let r = run(&format!(
        "{SHIFTED}compare = [\"uncoded\"]\n[scheme]\nkind = \"uncoded\"\nload = 1\n"
    ));
    let s = &r.schemes[0];
    let expected = alpha + exp_order_statistic(k, k, mu);
    assert_agrees("uncoded", s.mean_iteration_time, s.ci95, expected);
    assert_eq!(s.messages_per_iteration, 10.0);

    // ignore-stragglers: the 7th of 10.
    let r = run(&format!(
        "{SHIFTED}compare = [\"ignore-stragglers\"]\n[scheme]\nkind = \"ignore-stragglers\"\nwait_for = 7\nload = 1\n"
    ));
    let s = &r.schemes[0];
    assert_agrees(
        "ignore-stragglers",
        s.mean_iteration_time,
        s.ci95,
        alpha + exp_order_statistic(7, k, mu),
    );
    assert!((s.recovered_fraction - 0.7).abs() < 1e-12);

    // gc (cyclic, r = 3): 3 · (8th of 10); the lower bound with P = 1 is the same statistic.
    let r = run(&format!(
        "{SHIFTED}compare = [\"gc\", \"gc-frac\"]\n[scheme]\nkind = \"gc-cyclic\"\nload = 2\n"
    ));
    let gc = &r.schemes[0];
    let expected = 2.0 * (alpha + exp_order_statistic(9, k, mu));
    assert_agrees("gc", gc.mean_iteration_time, gc.ci95, expected);
    let lb = r.lower_bound.as_ref().expect("gc-cyclic defines the bound");
    assert_agrees("LB (P = 1)", lb.mean_iteration_time, lb.ci95, expected);
    assert_eq!((lb.workers, lb.load), (9, 2));
    assert_eq!(
        gc.lower_bound.as_ref(),
        Some(lb),
        "gc's own bound is the same"
    );
    assert_eq!(r.schemes[1].lower_bound, None, "gc-frac defines none");
    assert_eq!(gc.messages_per_iteration, 9.0);
    // gc-frac (r = 2, K = 10): the slower of the fastest of each of 5 pairs:
    // the max of 5 i.i.d. minima of two Exp(mu), i.e. of 5 Exp(2 mu).
    let frac = &r.schemes[1];
    assert_agrees(
        "gc-frac",
        frac.mean_iteration_time,
        frac.ci95,
        2.0 * (alpha + exp_order_statistic(5, 5, 2.0 * mu)),
    );

    // Lower bound with P = 2, l = 5, r = 2: the 8th of 10 tasks.
    let r = run(&format!(
        "{SHIFTED}compare = [\"gc-sc\"]\n[scheme]\nkind = \"gc-sc\"\nload = 2\nclusters = 2\n"
    ));
    let lb = r.lower_bound.as_ref().expect("gc-sc defines the bound");
    assert_eq!(lb.workers, 8);
    assert_agrees(
        "LB (P = 2)",
        lb.mean_iteration_time,
        lb.ci95,
        2.0 * (alpha + exp_order_statistic(8, k, mu)),
    );
}

/// Keeps every record.
#[derive(Default)]
struct Collect(Vec<(usize, usize, IterationRecord)>);

impl Observer for Collect {
    fn iteration(&mut self, e: &IterationEvent<'_>) -> Result<(), ObserverError> {
        self.0.push((e.lane, e.trial as usize, e.record.clone()));
        Ok(())
    }
}

const GE: &str = "workers = 12\nseed = 3\n[scheme]\nkind = \"gc-sc\"\nload = 2\nclusters = 4\n[straggler]\nmodel = \"gilbert-elliott\"\ninitial_stragglers = 6\ntime_unit_ms = 1000.0\n[simulate]\ntrials = 3\niterations = 50\ncompare = [\"gc\", \"gc-sc\", \"uncoded\"]\nbaseline = \"gc-sc\"\n";

#[test]
fn every_scheme_sees_the_same_samples() {
    let mut sim = Simulation::from_config(&config(GE)).unwrap();
    let mut sink = Collect::default();
    let report = sim.run(&mut [&mut sink]).unwrap();
    assert_eq!(sink.0.len(), 3 * 3 * 50);
    // Records come per iteration: gc, gc-sc, uncoded for the same sample.
    for group in sink.0.chunks(3) {
        let (gc, sc, unc) = (&group[0], &group[1], &group[2]);
        assert_eq!((gc.0, sc.0, unc.0), (0, 1, 2));
        assert_eq!(gc.1, sc.1);
        assert_eq!(gc.2.straggling, sc.2.straggling);
        assert_eq!(gc.2.straggling, unc.2.straggling);
        // gc and gc-sc workers both send after 2 computations: same arrival times.
        for w in 0..12 {
            let (a, b) = (gc.2.finish_s[w], sc.2.finish_s[w]);
            if a.is_finite() && b.is_finite() {
                assert_eq!(a, b);
            }
        }
        // uncoded waits for everybody.
        assert!(unc.2.finish_s.iter().all(|t| t.is_finite()));
        assert_eq!(unc.2.messages_received, 12);
        // Clusters: gc is unclustered, gc-sc has 4 clusters of 3.
        assert!(gc.2.cluster.iter().all(|&c| c == -1));
        for c in 1..=4 {
            assert_eq!(sc.2.cluster.iter().filter(|&&x| x == c).count(), 3);
        }
        // The iteration ends with the last message used.
        let last =
            sc.2.finish_s
                .iter()
                .copied()
                .filter(|t| t.is_finite())
                .fold(0.0, f64::max);
        assert_eq!(sc.2.duration_s, last);
        assert_eq!(
            sc.2.used.iter().filter(|&&u| u).count() as u64,
            sc.2.messages_used
        );
    }
    // The summary is the records' mean (time_unit_ms = 1000: seconds = model time).
    for (i, s) in report.schemes.iter().enumerate() {
        let times: Vec<f64> = sink
            .0
            .iter()
            .filter(|r| r.0 == i)
            .map(|r| r.2.duration_s)
            .collect();
        let mean = times.iter().sum::<f64>() / times.len() as f64;
        assert!(
            (mean - s.mean_iteration_time).abs() < 1e-9 * mean,
            "{}",
            s.name
        );
    }
    assert_eq!(report.baseline, "gc-sc");
    assert_eq!(report.schemes[1].improvement_percent, 0.0);
    let gc = &report.schemes[0];
    let expected = 100.0 * (1.0 - gc.mean_iteration_time / report.schemes[1].mean_iteration_time);
    assert!((gc.improvement_percent - expected).abs() < 1e-9);
    // The interval of the reduction comes from the paired per-trial means of
    // the records: t(0.975, trials - 1) · sd(a_i - R·b_i) / sqrt(trials) / mean(b).
    let trial_means = |scheme: usize| -> Vec<f64> {
        (0..report.trials)
            .map(|t| {
                let times: Vec<f64> = sink
                    .0
                    .iter()
                    .filter(|r| r.0 == scheme && r.1 == t)
                    .map(|r| r.2.duration_s)
                    .collect();
                times.iter().sum::<f64>() / times.len() as f64
            })
            .collect()
    };
    let (a, b) = (trial_means(0), trial_means(1));
    let n = a.len() as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let r = ma / mb;
    let var = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x - ma - r * (y - mb)).powi(2))
        .sum::<f64>()
        / (n - 1.0);
    let t = gradcode::stats::student_t_quantile(0.975, n - 1.0);
    let half = 100.0 * t * (var / n).sqrt() / mb;
    assert!(
        (gc.improvement_ci95 - half).abs() < 1e-6 * half,
        "{} vs {half}",
        gc.improvement_ci95
    );
    assert_eq!(report.schemes[1].improvement_ci95, 0.0);
}

#[test]
fn a_run_is_a_pure_function_of_the_seed() {
    let a = run(GE);
    let b = run(GE);
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
    let c = run(&GE.replace("seed = 3", "seed = 4"));
    assert_ne!(
        a.schemes[0].mean_iteration_time,
        c.schemes[0].mean_iteration_time
    );
}

#[test]
fn gc_is_cyclic_gc_over_all_workers_whatever_the_kind() {
    let c = config(GE);
    let sim = Simulation::from_config(&c).unwrap();
    assert_eq!(sim.names(), ["gc", "gc-sc", "uncoded"]);
    let gc = sim.schemes().next().unwrap();
    assert_eq!(gc.kind().name(), "gc-cyclic");
    assert_eq!(gc.tolerance().worst, 1);
    assert_eq!(gc.stored(0).len(), 2);
}

#[test]
fn nothing_to_simulate_without_a_delay_model() {
    let c = config("[straggler]\nmodel = \"none\"\n");
    let e = Simulation::from_config(&c).err().unwrap();
    assert_eq!(e.field, "straggler.model");
}

/// ∫_0^x (1 − e^{−μ s})^K ds, by the binomial expansion.
fn integral_of_cdf_power(k: usize, mu: f64, x: f64) -> f64 {
    let mut sum = x;
    let mut binom = 1.0;
    for j in 1..=k {
        binom *= (k - j + 1) as f64 / j as f64;
        let sign = if j % 2 == 1 { -1.0 } else { 1.0 };
        sum += sign * binom * (1.0 - (-(j as f64) * mu * x).exp()) / (j as f64 * mu);
    }
    sum
}

/// A deadline d alone, each worker's one message at r·(alpha + Exp(mu)):
/// with p = P(r·(alpha + Exp(mu)) ≤ d) and q = (1 − p)^K (nothing by d),
/// the master decodes what arrived by d (or all K, if they all did, at the
/// last of them), else the first arrival after d. So
/// E[messages] = K·p + q, E[time] = d − ∫_0^d P(all K by t) dt + q·r/(K·mu)
/// (memorylessness: the first arrival after d comes r/(K·mu) later on average).
#[test]
fn deadlines_agree_with_closed_forms() {
    let (alpha, mu, k) = (0.2, 3.0, 10usize);
    for (kind, load) in [("ignore-stragglers", 1usize), ("is-gc", 2)] {
        for d in [0.1, 0.45, 0.9] {
            let r = run(&format!(
                "{SHIFTED}compare = [\"{kind}\"]\n[scheme]\nkind = \"{kind}\"\nload = {load}\nplacement = \"cr\"\ndeadline = {d}\n"
            ));
            let s = &r.schemes[0];
            let name = format!("{kind} (r = {load}) with deadline {d}");
            let rf = load as f64;
            let slack = (d / rf - alpha).max(0.0); // per-computation time left by d
            let p = 1.0 - (-mu * slack).exp();
            let q = (1.0 - p).powi(k as i32);
            // P(all K by t) for t = r·(alpha + s): (1 − e^{−mu s})^K.
            let all_by_d = rf * integral_of_cdf_power(k, mu, slack);
            let time = d - all_by_d + q * rf / (k as f64 * mu);
            let time = if slack == 0.0 {
                // d before any arrival: the first one, r·(alpha + Exp(K mu)).
                rf * (alpha + 1.0 / (k as f64 * mu))
            } else {
                time
            };
            assert_agrees(&name, s.mean_iteration_time, s.ci95, time);
            let messages = k as f64 * p + q;
            // 12000 iterations, sd of the count <= sqrt(K)/2: 4 standard errors.
            let tolerance = 4.0 * (k as f64).sqrt() / 2.0 / (12000f64).sqrt();
            assert!(
                (s.messages_per_iteration - messages).abs() <= tolerance,
                "{name}: {} messages, closed form {messages}",
                s.messages_per_iteration
            );
            if slack == 0.0 {
                assert_eq!(
                    s.messages_per_iteration, 1.0,
                    "{name}: the first arrival alone"
                );
            }
            // Every decoded message recovers its own partitions: is-gc's
            // workers are cyclic (they may overlap), ignore-stragglers' disjoint.
            if kind == "ignore-stragglers" {
                assert!(
                    (s.recovered_fraction - s.messages_per_iteration / k as f64).abs() < 1e-12,
                    "{name}"
                );
            }
            assert_eq!(s.decodable_fraction, 1.0, "{name}");
        }
    }
}

/// 000 Algorithm 1 gives the master the state S⁰ before iteration 1: under
/// imperfect state information the first iteration of every trial is
/// clustered with S⁰ (the model's initial state), not with nothing.
#[test]
fn the_first_iteration_under_imperfect_information_uses_the_initial_state() {
    let text = "workers = 12\nseed = 9\n[scheme]\nkind = \"gc-dc\"\nload = 2\nclusters = 4\nclusters_per_worker = 2\n[straggler]\nmodel = \"gilbert-elliott\"\ninitial_stragglers = 5\nstate_info = \"imperfect\"\n[simulate]\ntrials = 3\niterations = 2\n";
    let c = config(text);
    let mut sim = Simulation::from_config(&c).unwrap();
    let mut records = Collect::default();
    sim.run(&mut [&mut records]).unwrap();
    let spec = gradcode::straggler::DelaySpec::from_config(&c).unwrap();
    for trial in 0..3usize {
        let mut s0 = RoundSample::new(12);
        assert!(spec.model(trial as u64).initial_state(&mut s0));
        assert_eq!(s0.straggling.iter().filter(|&&s| s).count(), 5);
        // A fresh gc-dc told S⁰ forms the clusters the simulator's first iteration used.
        let mut fresh = coding::build(&c).unwrap();
        let plan = fresh.plan_round(&RoundContext {
            iteration: 0,
            straggling: Some(&s0.straggling),
            rates: s0.rates(),
        });
        let mut expected = vec![-1i64; 12];
        for (p, members) in plan.clusters.iter().enumerate() {
            for &w in members {
                expected[w] = p as i64 + 1;
            }
        }
        let first = records
            .0
            .iter()
            .find(|r| r.1 == trial)
            .expect("a record of the trial");
        assert_eq!(first.2.cluster, expected, "trial {trial}");
        // And not the initial clustering a master without S⁰ would use.
        let blind = coding::build(&c)
            .unwrap()
            .plan_round(&RoundContext::default());
        assert_ne!(
            plan.clusters, blind.clusters,
            "trial {trial}: S⁰ changes the clusters"
        );
    }
}

/// Deadline-aware GC-SC and GC-DC: with a deadline later than every arrival
/// they are the plain schemes iteration by iteration; with a short one they
/// stop at it (or at the first arrival after it that recovers a cluster)
/// and recover only whole clusters.
#[test]
fn clustered_codes_with_a_deadline() {
    let base = "workers = 12\nseed = 5\n[scheme]\nkind = \"gc-dc\"\nload = 2\nclusters = 4\nclusters_per_worker = 2\n[straggler]\nmodel = \"gilbert-elliott\"\ninitial_stragglers = 4\nmu_slow = 1.0\n[simulate]\ntrials = 3\niterations = 60\n";
    for kind in ["gc-sc", "gc-dc"] {
        let text = format!(
            "{base}compare = [\"{kind}\", {{ name = \"late\", kind = \"{kind}\", set = {{ deadline = 1e9 }} }}, {{ name = \"early\", kind = \"{kind}\", set = {{ deadline = 0.5 }} }}]\n"
        );
        let c = config(&text);
        let mut sim = Simulation::from_config(&c).unwrap();
        let mut records = Collect::default();
        let report = sim.run(&mut [&mut records]).unwrap();
        let of = |lane: usize| -> Vec<&IterationRecord> {
            records
                .0
                .iter()
                .filter(|r| r.0 == lane)
                .map(|r| &r.2)
                .collect()
        };
        let (plain, late, early) = (of(0), of(1), of(2));
        for (i, (p, l)) in plain.iter().zip(&late).enumerate() {
            // Field by field, NaN equal to NaN (decode_s and the losses are NaN here).
            assert_eq!(
                format!("{p:?}"),
                format!("{l:?}"),
                "{kind}: iteration {i}: a deadline after every arrival changes nothing"
            );
        }
        assert!(report.schemes[2].recovered_fraction < 1.0, "{kind}");
        assert!(report.schemes[2].mean_iteration_time < report.schemes[0].mean_iteration_time);
        assert_eq!(report.schemes[2].decodable_fraction, 1.0, "{kind}");
        assert!(
            report.schemes[2].lower_bound.is_none(),
            "{kind}: no full-recovery bound"
        );
        for (r, p) in early.iter().zip(&plain) {
            // Whole clusters: the recovered share is a multiple of 1/P.
            let clusters = 4.0 * r.recovered_fraction;
            assert!(
                (clusters - clusters.round()).abs() < 1e-12,
                "{kind}: {}",
                r.recovered_fraction
            );
            assert!(r.recovered_fraction > 0.0);
            // It stops at the deadline, or after it at the first arrival that recovers a cluster.
            assert!(r.duration_s <= p.duration_s + 1e-12 || r.duration_s > 0.5);
            if r.duration_s > 0.5 {
                assert_eq!(
                    r.recovered_fraction, 0.25,
                    "{kind}: one cluster, the first to complete"
                );
            }
        }
    }
}

/// The decode error ‖a·B_S − 1‖₂ every iteration records (issue 41, item
/// 2): 0 to rounding for every exact scheme at every decodable iteration;
/// for the partial schemes √(partitions not recovered), exactly as the
/// recovered fraction says, and some iterations recover part only.
#[test]
fn the_decode_error_is_zero_for_exact_decodes_and_the_missing_share_for_partial_ones() {
    let exact = [
        "kind = \"uncoded\"",
        "kind = \"gc-frac\"\nload = 3",
        "kind = \"gc-cyclic\"\nload = 3",
        "kind = \"gc-sc\"\nload = 2\nclusters = 2",
        "kind = \"gc-dc\"\nload = 2\nclusters = 2\nclusters_per_worker = 2",
        "kind = \"gc-mmc\"\nload = 3\ndesign = \"correlated\"\norder = 2",
        "kind = \"uc-mmc\"\nload = 3",
        "kind = \"gc-partial\"\nload = 2\nslowdown = 2.0",
    ];
    let partial = [
        "kind = \"is-gc\"\nload = 2\nplacement = \"cr\"\nwait_for = 3",
        "kind = \"ignore-stragglers\"\nwait_for = 4",
    ];
    for (scheme, is_exact) in exact
        .iter()
        .map(|s| (s, true))
        .chain(partial.iter().map(|s| (s, false)))
    {
        let text = format!(
            "workers = 6\nseed = 11\n[scheme]\n{scheme}\n[straggler]\nmodel = \"shifted-exponential\"\nalpha = 0.01\nmu = 2.0\n[simulate]\ntrials = 2\niterations = 100\n"
        );
        let config = config(&text);
        let partitions = coding::build(&config).unwrap().partitions();
        let mut sim = Simulation::from_config(&config).unwrap_or_else(|e| panic!("{scheme}: {e}"));
        let mut sink = Collect::default();
        let report = sim.run(&mut [&mut sink]).unwrap();
        assert_eq!(sink.0.len(), 200, "{scheme}");
        // simulate --json's mean is the records' mean.
        let mean = sink.0.iter().map(|(_, _, r)| r.decode_error).sum::<f64>() / 200.0;
        assert!(
            (report.schemes[0].mean_decode_error - mean).abs() <= 1e-12,
            "{scheme}: {} vs {mean}",
            report.schemes[0].mean_decode_error
        );
        let mut partly = 0;
        for (_, trial, r) in &sink.0 {
            let missing = partitions as f64 * (1.0 - r.recovered_fraction);
            let want = if is_exact { 0.0 } else { missing.sqrt() };
            assert!(
                (r.decode_error - want).abs() <= 1e-9,
                "{scheme}, trial {trial}: decode error {} vs {want} (recovered {})",
                r.decode_error,
                r.recovered_fraction
            );
            partly += usize::from(r.recovered_fraction < 1.0);
        }
        if !is_exact {
            assert!(partly > 0, "{scheme}: some iteration recovers part only");
        }
    }
}
