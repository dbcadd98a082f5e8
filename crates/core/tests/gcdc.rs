//! The gc-dc scheme (000 §IV-V): plans, storage, decoding and the tracker on
//! the iteration's own clusters.

mod support;

use gradcode_core::cluster::Assignment;
use gradcode_core::coding::ClusteringKind;
use gradcode_core::coding::{
    Arrival, CodeOptions, DynamicClustering, RoundContext, RoundPlan, Scheme, StaticCode,
    clustering_policy,
};
use gradcode_core::engine::decode_prefix;
use gradcode_core::rng::{Stream, stream};
use proptest::prelude::*;
use rand::RngExt;

use support::eq13_rows;

fn gc_dc(
    k: usize,
    p: usize,
    r: usize,
    n: Option<usize>,
    rows: Option<&[Vec<usize>]>,
    seed: u64,
) -> DynamicClustering {
    DynamicClustering::new(
        k,
        p,
        r,
        n,
        rows,
        8,
        0.5,
        clustering_policy(ClusteringKind::Greedy, r).unwrap(),
        CodeOptions::default(),
        &mut stream(seed, Stream::Code),
        &mut stream(seed, Stream::ClusterShifts),
    )
    .unwrap()
}

fn example() -> DynamicClustering {
    gc_dc(12, 4, 2, Some(2), Some(&eq13_rows()), 1)
}

fn flags(k: usize, stragglers_one_based: &[usize]) -> Vec<bool> {
    let mut f = vec![false; k];
    for &w in stragglers_one_based {
        f[w - 1] = true;
    }
    f
}

fn arrivals(workers: &[usize]) -> Vec<Arrival> {
    workers.iter().map(|&w| Arrival::only(w)).collect()
}

/// Relative error of the decoded sum against the true sum of the recovered partitions.
fn decoded_error(
    scheme: &mut dyn Scheme,
    plan: &RoundPlan,
    received: &[usize],
    seed: u64,
) -> Option<f64> {
    let mut rng = stream(seed, Stream::CheckSampling);
    let dim = 16;
    let gradients: Vec<Vec<f64>> = (0..scheme.partitions())
        .map(|_| (0..dim).map(|_| rng.random_range(-1.0..1.0)).collect())
        .collect();
    let decoding = scheme.decode(plan, &arrivals(received));
    if !decoding.decodable {
        return None;
    }
    let messages: Vec<Vec<f64>> = received
        .iter()
        .map(|&w| plan.tasks[w].messages[0].codeword.encode(&gradients))
        .collect();
    let refs: Vec<&[f64]> = messages.iter().map(|m| m.as_slice()).collect();
    let decoded = decoding.combine(&refs);
    let mut truth = vec![0.0; dim];
    for &q in &decoding.recovered {
        for (t, g) in truth.iter_mut().zip(&gradients[q]) {
            *t += g;
        }
    }
    let num: f64 = decoded
        .iter()
        .zip(&truth)
        .map(|(a, b)| (a - b).powi(2))
        .sum::<f64>()
        .sqrt();
    let den: f64 = truth.iter().map(|b| b * b).sum::<f64>().sqrt();
    Some(num / den)
}

/// Every worker computes only partitions it stores, the codeword of its
/// position in its cluster, and the plan's clusters match the codeword ids.
fn check_plan(scheme: &dyn Scheme, a: &Assignment, plan: &RoundPlan, r: usize) {
    let (p, l) = (a.clusters(), a.size());
    assert_eq!(plan.clusters.len(), p);
    for (c, members) in plan.clusters.iter().enumerate() {
        assert_eq!(members.len(), l);
        for (i, &w) in members.iter().enumerate() {
            assert!(a.can_join(w, c), "worker {w} is not in column {c}");
            let task = &plan.tasks[w];
            assert_eq!(task.messages.len(), 1);
            let cw = &task.messages[0].codeword;
            assert_eq!((cw.id.group, cw.id.index), (c, i));
            assert_eq!(task.compute.len(), r);
            for q in &task.compute {
                assert!(
                    (c * l..(c + 1) * l).contains(q),
                    "partition {q} outside cluster {c}"
                );
                assert!(
                    scheme.stored(w).binary_search(q).is_ok(),
                    "worker {w} computes unstored {q}"
                );
            }
        }
    }
    for w in 0..a.workers() {
        assert_eq!(scheme.stored(w).len(), a.memory(), "m = n·l");
    }
}

#[test]
fn without_state_information_gc_dc_plans_exactly_gc_sc() {
    let mut dc = example();
    let mut sc = StaticCode::static_clustering(
        12,
        4,
        2,
        None,
        CodeOptions::default(),
        &mut stream(1, Stream::Code),
    )
    .unwrap();
    let plan = dc.plan_round(&RoundContext::default());
    assert_eq!(plan, sc.plan_round(&RoundContext::default()));
    // Worker 1 stores g1..g6 (§IV-B: I_1 = {D_1, ..., D_6}).
    assert_eq!(dc.stored(0), &[0, 1, 2, 3, 4, 5]);
    assert_eq!(dc.totals().informed, 0);
}

#[test]
fn worked_example_plan_uses_the_dynamic_clusters() {
    let mut dc = example();
    let s = flags(12, &[3, 5, 6, 7, 8]);
    let plan = dc.plan_round(&RoundContext {
        iteration: 1,
        straggling: Some(&s),
        rates: None,
    });
    let one_based: Vec<Vec<usize>> = plan
        .clusters
        .iter()
        .map(|m| m.iter().map(|w| w + 1).collect())
        .collect();
    assert_eq!(
        one_based,
        vec![
            vec![1, 4, 6],
            vec![7, 8, 10],
            vec![2, 3, 11],
            vec![5, 9, 12]
        ]
    );
    check_plan(&dc, &dc.assignment().clone(), &plan, 2);
    // Worker 12 computes codeword 3 of cluster 4: g12 and g10.
    assert_eq!(plan.tasks[11].compute, vec![11, 9]);
    let totals = dc.totals();
    assert_eq!(
        (
            totals.informed,
            totals.conflicts,
            totals.swaps,
            totals.repairs
        ),
        (1, 1, 1, 0)
    );
    // Two non-stragglers per cluster decode.
    let received = [0, 3, 9, 6, 1, 10, 8, 11];
    let err = decoded_error(&mut dc, &plan, &received, 3).expect("2 per cluster decode");
    assert!(err < 1e-9, "relative error {err}");
}

#[test]
fn section_iv_c_example_recovers_from_non_stragglers_only() {
    // S = [1,1,0,1,1,1,1,0,0,1,0,1]: GC-SC's cluster 3 = {3, 8, 11} straggles
    // entirely; GC-DC re-forms the clusters so the 8 non-stragglers suffice.
    let s = flags(12, &[3, 8, 9, 11]);
    let fast: Vec<usize> = (0..12).filter(|&w| !s[w]).collect();
    let mut sc = StaticCode::static_clustering(
        12,
        4,
        2,
        None,
        CodeOptions::default(),
        &mut stream(1, Stream::Code),
    )
    .unwrap();
    let plan = sc.plan_round(&RoundContext::default());
    assert!(!sc.decode(&plan, &arrivals(&fast)).decodable);
    let mut dc = example();
    let plan = dc.plan_round(&RoundContext {
        iteration: 1,
        straggling: Some(&s),
        rates: None,
    });
    assert_eq!(dc.last_clustering().straggler_counts(), vec![1, 1, 1, 1]);
    let err = decoded_error(&mut dc, &plan, &fast, 9).expect("non-stragglers suffice");
    assert!(err < 1e-9);
}

#[test]
fn constructor_limits_name_their_keys() {
    let build = |k, p, r, n, rows: Option<&[Vec<usize>]>, tau: f64| {
        DynamicClustering::new(
            k,
            p,
            r,
            n,
            rows,
            8,
            tau,
            clustering_policy(ClusteringKind::Greedy, 1).unwrap(),
            CodeOptions::default(),
            &mut stream(1, Stream::Code),
            &mut stream(1, Stream::ClusterShifts),
        )
        .map(|_| ())
        .unwrap_err()
        .to_string()
    };
    assert_eq!(
        build(12, 5, 2, None, None, 0.5),
        "scheme.clusters = 5 does not divide workers = 12"
    );
    assert!(build(12, 4, 4, None, None, 0.5).starts_with("scheme.load = 4"));
    assert!(build(12, 4, 2, Some(0), None, 0.5).starts_with("scheme.clusters_per_worker = 0"));
    assert!(build(12, 4, 2, Some(5), None, 0.5).starts_with("scheme.clusters_per_worker = 5"));
    assert!(build(12, 4, 2, None, None, 0.0).starts_with("scheme.straggler_threshold = 0"));
    assert!(build(12, 4, 2, None, None, f64::NAN).starts_with("scheme.straggler_threshold"));
    let rows = eq13_rows();
    assert!(build(12, 4, 2, Some(3), Some(&rows), 0.5).starts_with("scheme.assignment"));
}

#[test]
fn default_n_is_the_lemma_1_minimum() {
    let dc = gc_dc(20, 5, 3, None, None, 4);
    assert_eq!(dc.assignment().per_worker(), 3);
    assert!(dc.assignment().lemma1_holds());
    let dc = gc_dc(12, 4, 2, None, None, 4);
    assert_eq!(dc.assignment().per_worker(), 2);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Planning into a reused plan (the engine's way) gives exactly the plan
    /// of `plan_round`, whatever the previous iteration's plan held.
    #[test]
    fn planning_into_a_reused_plan_equals_a_fresh_plan(
        (p, l) in (1usize..=6).prop_flat_map(|p| (Just(p), 1usize..=6)),
        seed in 0u64..100_000,
        straggle in 0.0f64..=1.0,
    ) {
        let k = p * l;
        let r = 1 + (seed as usize) % l;
        let (mut fresh, mut reused) = (gc_dc(k, p, r, None, None, seed), gc_dc(k, p, r, None, None, seed));
        let mut rng = stream(seed, Stream::CheckSampling);
        let mut plan = RoundPlan::default();
        for t in 0..6u64 {
            let s: Vec<bool> = (0..k).map(|_| rng.random_bool(straggle)).collect();
            let ctx = RoundContext { iteration: t, straggling: (t > 0).then_some(s.as_slice()), rates: None };
            reused.plan_round_into(&ctx, &mut plan);
            prop_assert_eq!(&plan, &fresh.plan_round(&ctx), "iteration {}", t);
        }
    }

    /// On random sizes and straggler sets: the plan is consistent with the
    /// clustering and the stored data, the tracker stops at the first prefix
    /// that decodes, and l − r + 1 arrivals per cluster decode exactly.
    #[test]
    fn plans_decode_exactly_on_their_own_clusters(
        (p, l) in (1usize..=8).prop_flat_map(|p| (Just(p), 1usize..=8)),
        r_pick in 0usize..100,
        n_pick in 0usize..100,
        seed in 0u64..100_000,
        straggle in 0.0f64..=1.0,
        heterogeneous in any::<bool>(),
    ) {
        let k = p * l;
        let r = 1 + r_pick % l;
        let n = 1 + n_pick % p;
        let mut dc = gc_dc(k, p, r, Some(n), None, seed);
        let a = dc.assignment().clone();
        let mut rng = stream(seed, Stream::CheckSampling);
        let s: Vec<bool> = (0..k).map(|_| rng.random_bool(straggle)).collect();
        let rates: Vec<f64> = (0..k).map(|_| rng.random_range(0.0..1.0)).collect();
        let ctx = if heterogeneous {
            RoundContext { iteration: 2, straggling: None, rates: Some(&rates) }
        } else {
            RoundContext { iteration: 2, straggling: Some(&s), rates: None }
        };
        let plan = dc.plan_round(&ctx);
        check_plan(&dc, &a, &plan, r);
        prop_assert_eq!(&plan.clusters, &dc.last_clustering().members);
        // Arrival order: non-stragglers first (by the flags the master used), then stragglers.
        let used_flags: Vec<bool> = dc.last_clustering().placements.iter().map(|x| x.straggler).collect();
        let mut order: Vec<usize> = (0..k).filter(|&w| !used_flags[w]).collect();
        order.extend((0..k).filter(|&w| used_flags[w]));
        let (d, used) = decode_prefix(&mut dc, &plan, &arrivals(&order));
        prop_assert!(d.decodable, "all K arrivals decode");
        let needed = l - r + 1;
        let counts_ok = |prefix: &[usize]| plan.clusters.iter().all(|m| prefix.iter().filter(|w| m.contains(w)).count() >= needed);
        prop_assert!(counts_ok(&order[..used]));
        prop_assert!(used == 0 || !counts_ok(&order[..used - 1]), "stops at the first sufficient prefix");
        let err = decoded_error(&mut dc, &plan, &order[..used], seed).unwrap();
        prop_assert!(err < 1e-8, "relative error {}", err);
        // One cluster one short: not decodable, and that cluster recovers nothing.
        if needed >= 1 {
            let short: Vec<usize> = plan.clusters.iter().enumerate().flat_map(|(c, m)| {
                let take = if c == 0 { needed - 1 } else { needed };
                m[..take].to_vec()
            }).collect();
            let d = dc.decode(&plan, &arrivals(&short));
            prop_assert!(!d.decodable);
            prop_assert!(d.recovered.iter().all(|q| *q >= l), "cluster 1 recovers nothing");
        }
    }
}
