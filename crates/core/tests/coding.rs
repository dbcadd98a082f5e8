//! Properties of the static gradient codes: every tolerated straggler set
//! decodes exactly, every other set is reported as not decodable, and a decoded
//! gradient equals the true sum of the partition gradients.

use gradcode_core::coding::{Arrival, CodeOptions, RoundContext, RoundPlan, Scheme, StaticCode};
use gradcode_core::engine::decode_prefix;
use gradcode_core::rng::{Stream, stream};
use proptest::prelude::*;
use rand::RngExt;

/// Every subset of 0..n of size k, in lexicographic order.
fn subsets(n: usize, k: usize) -> Vec<Vec<usize>> {
    fn go(start: usize, n: usize, k: usize, cur: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if cur.len() == k {
            out.push(cur.clone());
            return;
        }
        for i in start..n {
            if n - i < k - cur.len() {
                break;
            }
            cur.push(i);
            go(i + 1, n, k, cur, out);
            cur.pop();
        }
    }
    let mut out = Vec::new();
    go(0, n, k, &mut Vec::new(), &mut out);
    out
}

fn cyclic(k: usize, r: usize, seed: u64) -> StaticCode {
    StaticCode::cyclic_repetition(
        k,
        r,
        CodeOptions::default(),
        &mut stream(seed, Stream::Code),
    )
    .unwrap()
}

fn arrivals(workers: &[usize]) -> Vec<Arrival> {
    workers.iter().map(|&w| Arrival::only(w)).collect()
}

fn plan(scheme: &mut dyn Scheme) -> RoundPlan {
    scheme.plan_round(&RoundContext::default())
}

/// The weighted sum of the messages of `received` against the sum of every partition gradient.
fn decoded_error(
    scheme: &mut dyn Scheme,
    received: &[usize],
    dim: usize,
    seed: u64,
) -> Option<f64> {
    let plan = plan(scheme);
    let mut rng = stream(seed, Stream::CheckSampling);
    let gradients: Vec<Vec<f64>> = (0..scheme.partitions())
        .map(|_| (0..dim).map(|_| rng.random_range(-1.0..1.0)).collect())
        .collect();
    let decoding = scheme.decode(&plan, &arrivals(received));
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
    for p in &decoding.recovered {
        for (t, g) in truth.iter_mut().zip(&gradients[*p]) {
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

#[test]
fn gc_cyclic_every_set_of_k_minus_r_plus_1_decodes_and_every_smaller_set_does_not() {
    for k in 1..=14 {
        for r in 1..=k {
            let mut code = cyclic(k, r, 1000 + k as u64);
            let p = plan(&mut code);
            let needed = k - r + 1;
            for set in subsets(k, needed) {
                let d = code.decode(&p, &arrivals(&set));
                assert!(d.decodable, "K={k} r={r}: {set:?} must decode");
                assert!(
                    d.residual <= 1e-9,
                    "K={k} r={r}: {set:?} residual {}",
                    d.residual
                );
                assert_eq!(d.recovered, (0..k).collect::<Vec<_>>());
            }
            if needed >= 2 {
                for set in subsets(k, needed - 1) {
                    let d = code.decode(&p, &arrivals(&set));
                    assert!(
                        !d.decodable,
                        "K={k} r={r}: {set:?} has too few codewords but was decoded"
                    );
                    assert!(
                        d.weights.iter().all(|&w| w == 0.0),
                        "no coefficients for a set that cannot decode"
                    );
                }
            }
        }
    }
}

#[test]
fn gc_frac_decodes_exactly_when_every_block_is_heard_from() {
    for k in 1..=14 {
        for r in (1..=k).filter(|r| k % r == 0) {
            let mut code = StaticCode::fractional_repetition(k, r).unwrap();
            let p = plan(&mut code);
            let blocks = k / r;
            // Worker t·K/r + b holds block b.
            let block_of = |w: usize| w % blocks;
            for size in 1..=k {
                for set in subsets(k, size) {
                    let covers = (0..blocks).all(|b| set.iter().any(|&w| block_of(w) == b));
                    let d = code.decode(&p, &arrivals(&set));
                    assert_eq!(d.decodable, covers, "K={k} r={r} {set:?}");
                    if size == k - r + 1 {
                        assert!(
                            covers,
                            "any K-r+1 workers cover every block (K={k} r={r} {set:?})"
                        );
                    }
                    if d.decodable {
                        assert!(d.residual <= 1e-9);
                    }
                }
            }
        }
    }
}

#[test]
fn decoded_gradient_equals_the_true_sum_on_random_vectors() {
    let dim = 1000;
    let mut rng = stream(5, Stream::CheckSampling);
    for (k, r) in [(12, 3), (14, 5), (10, 10), (8, 1), (13, 4)] {
        let mut code = cyclic(k, r, 77);
        for trial in 0..20 {
            let mut order: Vec<usize> = (0..k).collect();
            rand::seq::SliceRandom::shuffle(order.as_mut_slice(), &mut rng);
            let set = &order[..k - r + 1];
            let err = decoded_error(&mut code, set, dim, trial).expect("K-r+1 arrivals decode");
            assert!(err <= 1e-9, "cyclic K={k} r={r}: relative error {err}");
        }
    }
    let mut frac = StaticCode::fractional_repetition(12, 3).unwrap();
    let err = decoded_error(&mut frac, &[0, 5, 10, 3], dim, 3).expect("one per block decodes");
    assert!(err <= 1e-12, "frac relative error {err}");
    let mut sc = StaticCode::static_clustering(
        12,
        4,
        2,
        None,
        CodeOptions::default(),
        &mut stream(1, Stream::Code),
    )
    .unwrap();
    let err =
        decoded_error(&mut sc, &[0, 5, 1, 6, 2, 7, 3, 4], dim, 4).expect("two per cluster decode");
    assert!(err <= 1e-9, "gc-sc relative error {err}");
}

#[test]
fn ignore_stragglers_recovers_exactly_what_arrived() {
    let mut code = StaticCode::ignore_stragglers(10, 7).unwrap();
    let p = plan(&mut code);
    let set = [9, 2, 4, 0, 7, 1, 3, 8];
    let (d, used) = decode_prefix(&mut code, &p, &arrivals(&set));
    assert_eq!(used, 7, "the master stops at the fastest w = 7");
    assert!(d.decodable);
    assert_eq!(d.recovered, vec![0, 1, 2, 3, 4, 7, 9]);
    assert_eq!(d.weights, vec![1.0; 7]);
    let err = decoded_error(&mut code, &set[..7], 50, 1).unwrap();
    assert!(err <= 1e-15);
    // A partial-recovery scheme: fewer than w arrivals (a deadline) still update.
    let short = code.decode(&p, &arrivals(&set[..6]));
    assert!(short.decodable);
    assert_eq!(short.recovered, vec![0, 1, 2, 4, 7, 9]);
}

#[test]
fn uncoded_needs_every_worker() {
    let mut code = StaticCode::uncoded(6).unwrap();
    let p = plan(&mut code);
    assert!(!code.decode(&p, &arrivals(&[0, 1, 2, 3, 4])).decodable);
    assert!(code.decode(&p, &arrivals(&[5, 4, 3, 2, 1, 0])).decodable);
}

#[test]
fn gc_sc_running_example_of_000_section_ii_b() {
    // K = 12, P = 4, r = 2: eq. (5) assignment, eq. (6) data assignment.
    let mut sc = StaticCode::static_clustering(
        12,
        4,
        2,
        None,
        CodeOptions::default(),
        &mut stream(1, Stream::Code),
    )
    .unwrap();
    let p = plan(&mut sc);
    let one_based = |v: &[usize]| v.iter().map(|x| x + 1).collect::<Vec<_>>();
    let clusters: Vec<Vec<usize>> = p.clusters.iter().map(|c| one_based(c)).collect();
    assert_eq!(
        clusters,
        vec![
            vec![1, 6, 9],
            vec![2, 7, 10],
            vec![3, 8, 11],
            vec![4, 5, 12]
        ]
    );
    // Eq. (6), worker by worker: the partitions each computes, in order.
    let expected = [
        [1, 2],
        [4, 5],
        [7, 8],
        [10, 11],
        [11, 12],
        [2, 3],
        [5, 6],
        [8, 9],
        [3, 1],
        [6, 4],
        [9, 7],
        [12, 10],
    ];
    for (w, want) in expected.iter().enumerate() {
        assert_eq!(
            one_based(&p.tasks[w].compute),
            want.to_vec(),
            "worker {}",
            w + 1
        );
    }
    // Realization 1 of Fig. 1: one straggler per cluster still decodes.
    let d = sc.decode(&p, &arrivals(&[0, 5, 1, 6, 2, 7, 3, 4]));
    assert!(d.decodable);
    // Realization 2: 8 arrivals but cluster 3 short.
    let d = sc.decode(&p, &arrivals(&[0, 5, 1, 6, 3, 4, 11, 2]));
    assert!(!d.decodable);
    assert!(!d.groups[2].decodable);
    assert_eq!(
        d.recovered.len(),
        9,
        "clusters 1, 2 and 4 still decode on their own"
    );
}

#[test]
fn explicit_assignment_overrides_the_default() {
    // K = 6, P = 2, l = 3; 1-based rows, column p = cluster p.
    let rows = [vec![1, 2], vec![3, 4], vec![5, 6]];
    let mut sc = StaticCode::static_clustering(
        6,
        2,
        2,
        Some(&rows),
        CodeOptions::default(),
        &mut stream(1, Stream::Code),
    )
    .unwrap();
    let p = plan(&mut sc);
    assert_eq!(p.clusters, vec![vec![0, 2, 4], vec![1, 3, 5]]);
}

#[test]
fn invalid_parameters_name_their_config_key() {
    let opts = CodeOptions::default();
    let mut rng = stream(1, Stream::Code);
    let e = StaticCode::static_clustering(12, 5, 2, None, opts, &mut rng).unwrap_err();
    assert_eq!(
        e.to_string(),
        "scheme.clusters = 5 does not divide workers = 12"
    );
    let e = StaticCode::static_clustering(12, 4, 4, None, opts, &mut rng).unwrap_err();
    assert!(e.to_string().starts_with("scheme.load = 4"), "{e}");
    let e = StaticCode::fractional_repetition(12, 5).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("scheme.load = 5 does not divide workers = 12"),
        "{e}"
    );
    let e = StaticCode::ignore_stragglers(12, 13).unwrap_err();
    assert!(e.to_string().starts_with("scheme.wait_for = 13"), "{e}");
    let e = StaticCode::static_clustering(4, 2, 1, Some(&[vec![1, 2], vec![2, 3]]), opts, &mut rng)
        .unwrap_err();
    assert!(e.to_string().contains("names worker 2 twice"), "{e}");
}

#[test]
fn cached_coefficients_equal_fresh_ones() {
    let mut a = cyclic(10, 3, 9);
    let p = plan(&mut a);
    let set = arrivals(&[9, 1, 2, 3, 4, 5, 6, 7]);
    let first = a.decode(&p, &set);
    let second = a.decode(&p, &set);
    assert_eq!(first, second);
    let mut fresh = cyclic(10, 3, 9);
    assert_eq!(
        fresh.decode(&p, &set),
        first,
        "same seed, same code, same coefficients"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// gc-sc decodes exactly when every cluster has l - r + 1 arrivals.
    #[test]
    fn gc_sc_decodes_iff_every_cluster_has_enough(
        (k, clusters, r, received) in (1usize..=6, 1usize..=8)
            .prop_flat_map(|(p, l)| (Just(p * l), Just(p), 1..=l))
            .prop_flat_map(|(k, p, r)| (Just(k), Just(p), Just(r), proptest::sample::subsequence((0..k).collect::<Vec<_>>(), 0..=k)))
            .prop_flat_map(|(k, p, r, set)| (Just(k), Just(p), Just(r), Just(set).prop_shuffle())),
        seed in 0u64..1000,
    ) {
        let mut sc = StaticCode::static_clustering(k, clusters, r, None, CodeOptions::default(), &mut stream(seed, Stream::Code)).unwrap();
        let p = plan(&mut sc);
        let l = k / clusters;
        let needed = l - r + 1;
        let enough = p.clusters.iter().all(|members| received.iter().filter(|w| members.contains(w)).count() >= needed);
        let d = sc.decode(&p, &arrivals(&received));
        prop_assert_eq!(d.decodable, enough);
        if enough {
            prop_assert!(d.residual <= 1e-9, "residual {}", d.residual);
            let err = decoded_error(&mut sc, &received, 20, seed).unwrap();
            prop_assert!(err <= 1e-9, "relative error {}", err);
        }
    }

    /// The tracker says "enough" at exactly the first prefix that decodes.
    #[test]
    fn tracker_agrees_with_the_decoder(
        (k, r, order) in (2usize..=16).prop_flat_map(|k| (Just(k), 1..=k, Just((0..k).collect::<Vec<_>>()).prop_shuffle())),
        seed in 0u64..1000,
    ) {
        let mut code = cyclic(k, r, seed);
        let p = plan(&mut code);
        let (d, used) = decode_prefix(&mut code, &p, &arrivals(&order));
        prop_assert!(d.decodable);
        prop_assert_eq!(used, k - r + 1);
    }
}

/// With a deadline, gc-sc and gc-dc recover exactly the partitions of the
/// clusters that have l − r + 1 of their codewords, and `decodable` means
/// "some cluster recovered" (brute force: every arrival set of K = 12, P = 4,
/// r = 2 for gc-sc; gc-dc on several straggler states, every arrival set).
#[test]
fn partial_recovery_of_clustered_codes_is_exactly_the_completed_clusters() {
    for kind in ["gc-sc", "gc-dc"] {
        let config = gradcode_core::config::parse(
            &format!(
                "workers = 12\n[scheme]\nkind = \"{kind}\"\nload = 2\nclusters = 4\nclusters_per_worker = 2\ndeadline = 0.5\n"
            ),
            "t",
            &[],
        )
        .unwrap()
        .config;
        let mut scheme = gradcode_core::coding::build(&config).unwrap();
        assert!(scheme.partial_recovery() && scheme.deadline() == Some(0.5));
        let states: Vec<Vec<bool>> = (0..4u32)
            .map(|s| (0..12).map(|w| (w * 7 + s * 5) % 4 == 0).collect())
            .collect();
        for state in &states {
            let plan = scheme.plan_round(&RoundContext {
                iteration: 1,
                straggling: Some(state),
                rates: None,
            });
            let cluster_of = |w: usize| plan.tasks[w].messages[0].codeword.id.group;
            let partitions_of = |g: usize| -> Vec<usize> {
                let mut p: Vec<usize> = plan
                    .tasks
                    .iter()
                    .filter(|t| t.messages[0].codeword.id.group == g)
                    .flat_map(|t| t.compute.iter().copied())
                    .collect();
                p.sort_unstable();
                p.dedup();
                p
            };
            for set in 0u32..1 << 12 {
                let workers: Vec<usize> = (0..12).filter(|w| set >> w & 1 == 1).collect();
                let mut per_cluster = [0usize; 4];
                for &w in &workers {
                    per_cluster[cluster_of(w)] += 1;
                }
                let mut expected: Vec<usize> = (0..4)
                    .filter(|&g| per_cluster[g] >= 2) // l − r + 1 = 3 − 2 + 1
                    .flat_map(partitions_of)
                    .collect();
                expected.sort_unstable();
                let arrivals: Vec<Arrival> = workers.iter().map(|&w| Arrival::only(w)).collect();
                let d = scheme.decode(&plan, &arrivals);
                assert_eq!(d.recovered, expected, "{kind}: {workers:?}");
                assert_eq!(d.decodable, !expected.is_empty(), "{kind}: {workers:?}");
            }
            if kind == "gc-sc" {
                break; // static clusters: one state is all there is
            }
        }
    }
}
