//! GC-DC dynamic clustering (000 §IV-V): the worked example of §V exactly,
//! validity of every clustering for random sizes and straggler sets, and an
//! exhaustive check at small sizes that the circular-shift construction always
//! admits a complete clustering and that greedy + repair always returns one.

mod support;

use gradcode_core::cluster::spread::{min_max_stragglers, most_even_profile};
use gradcode_core::cluster::{
    Assignment, ClassPhase, Clustering, ClusteringPolicy, Conflict, GreedyClustering, How,
    PhaseOneRule, Resolution, WorkerStates,
};
use gradcode_core::rng::{Stream, stream};
use proptest::prelude::*;
use rand::RngExt;

use support::eq13;

/// The paper's S (S_k = 0: straggler) as straggler flags.
fn flags_from_s(s: &[u8]) -> Vec<bool> {
    s.iter().map(|&x| x == 0).collect()
}

fn one_based(members: &[Vec<usize>]) -> Vec<Vec<usize>> {
    members
        .iter()
        .map(|m| m.iter().map(|w| w + 1).collect())
        .collect()
}

fn run(policy: &mut GreedyClustering, a: &Assignment, states: &WorkerStates<'_>) -> Clustering {
    let mut out = Clustering::default();
    policy.cluster(a, states, &mut out);
    out.validate(a).unwrap();
    out
}

/// Clusters after Phase I (1-based, ascending) from the placement log.
fn after_phase_one(c: &Clustering, clusters: usize) -> (Vec<Vec<usize>>, Vec<usize>) {
    let mut members = vec![Vec::new(); clusters];
    let mut left = Vec::new();
    for (w, p) in c.placements.iter().enumerate() {
        match p.phase_one {
            Some(at) => members[at].push(w + 1),
            None => left.push(w + 1),
        }
    }
    (members, left)
}

#[test]
fn worked_example_of_section_v() {
    let a = eq13();
    let s = flags_from_s(&[1, 1, 0, 1, 0, 0, 0, 0, 1, 1, 1, 1]);
    let c = run(&mut GreedyClustering::new(), &a, &WorkerStates::flags(&s));

    // 7 non-stragglers ≥ 5 stragglers: non-stragglers first, O_f = [3, 4, 1, 2]
    // from |K_f^p| = 4, 4, 3, 3; then O_s = [1, 2, 3, 4] from |K_s^p| = 2, 2, 3, 3.
    assert_eq!(
        c.phases,
        vec![
            ClassPhase {
                stragglers: false,
                order: vec![2, 3, 0, 1],
                availability: vec![4, 4, 3, 3],
                stopped_at_conflict: true,
            },
            ClassPhase {
                stragglers: true,
                order: vec![0, 1, 2, 3],
                availability: vec![2, 2, 3, 3],
                stopped_at_conflict: false,
            },
        ]
    );

    // Fig. 2, end of Phase I: w12 left over, cluster 1 one short.
    let (phase_one, left) = after_phase_one(&c, 4);
    assert_eq!(
        phase_one,
        vec![vec![1, 6], vec![7, 8, 10], vec![2, 3, 11], vec![4, 5, 9]]
    );
    assert_eq!(left, vec![12]);

    // Phase II: w12 may join clusters 3 and 4 only; nobody in cluster 3 may
    // join cluster 1, w4 in cluster 4 may: swap w4 and w12.
    assert_eq!(
        c.conflicts,
        vec![Conflict {
            worker: 11,
            cluster: 0,
            resolution: Resolution::Swap { partner: 3, via: 3 },
        }]
    );
    assert_eq!((c.swaps(), c.repairs()), (1, 0));
    assert_eq!(c.placements[11].how, How::Swap { partner: 3 });
    assert_eq!(c.placements[3].how, How::Swap { partner: 11 });
    for w in [0, 1, 2, 4, 5, 6, 7, 8, 9, 10] {
        assert_eq!(c.placements[w].how, How::PhaseOne, "worker {}", w + 1);
    }

    // Fig. 2, final: cluster 2 has two stragglers, the others one each.
    assert_eq!(
        one_based(&c.members),
        vec![
            vec![1, 4, 6],
            vec![7, 8, 10],
            vec![2, 3, 11],
            vec![5, 9, 12]
        ]
    );
    assert_eq!(c.straggler_counts(), vec![1, 2, 1, 1]);
    // "as uniformly as possible": no valid clustering does better.
    assert_eq!(min_max_stragglers(&a, &s), 2);
    assert_eq!(most_even_profile(&a, &s), vec![2, 1, 1, 1]);
}

#[test]
fn the_literal_pseudo_code_disagrees_with_the_worked_example() {
    let a = eq13();
    let s = flags_from_s(&[1, 1, 0, 1, 0, 0, 0, 0, 1, 1, 1, 1]);
    let c = run(
        &mut GreedyClustering::with_rule(PhaseOneRule::PseudoCode),
        &a,
        &WorkerStates::flags(&s),
    );
    // Lines 16-23 as written let cluster 3 take w12 in Phase I; the
    // stragglers then leave w5 over, which swaps with w4.
    let (phase_one, left) = after_phase_one(&c, 4);
    assert_eq!(
        phase_one,
        vec![vec![1, 6], vec![7, 8, 10], vec![2, 11, 12], vec![3, 4, 9]]
    );
    assert_eq!(left, vec![5]);
    assert_eq!(
        c.conflicts,
        vec![Conflict {
            worker: 4,
            cluster: 0,
            resolution: Resolution::Swap { partner: 3, via: 3 },
        }]
    );
    assert_eq!(c.straggler_counts(), vec![1, 2, 0, 2]);
}

#[test]
fn heterogeneous_workers_are_taken_fastest_first_and_split_by_tau() {
    // K = 4, P = 2, n = 2: every worker may join both clusters.
    let a = Assignment::from_shifts(4, 2, &[vec![0, 1], vec![0, 1]]).unwrap();
    let rates = [1.0, 2.0, 3.0, 4.0];
    // tau below every rate: no stragglers; by index the clusters would be
    // {1, 3}, {2, 4}; by rate cluster 1 takes w4 then w2.
    let by_index = run(
        &mut GreedyClustering::new(),
        &a,
        &WorkerStates::flags(&[false; 4]),
    );
    assert_eq!(by_index.members, vec![vec![0, 2], vec![1, 3]]);
    let c = run(
        &mut GreedyClustering::new(),
        &a,
        &WorkerStates::rates(&rates, 0.5),
    );
    assert_eq!(c.members, vec![vec![1, 3], vec![0, 2]]);
    assert!(c.placements.iter().all(|p| !p.straggler));
    // tau = 2.5: w1 and w2 straggle (rate < tau) and are split.
    let c = run(
        &mut GreedyClustering::new(),
        &a,
        &WorkerStates::rates(&rates, 2.5),
    );
    let stragglers: Vec<bool> = c.placements.iter().map(|p| p.straggler).collect();
    assert_eq!(stragglers, vec![true, true, false, false]);
    assert_eq!(c.straggler_counts(), vec![1, 1]);
    // Rates override flags; a NaN rate is a straggler.
    let states = WorkerStates {
        straggling: Some(&[true, true, true, true]),
        rates: Some(&[f64::NAN, 2.0, 3.0, 4.0]),
        threshold: 0.5,
    };
    let c = run(&mut GreedyClustering::new(), &a, &states);
    let stragglers: Vec<bool> = c.placements.iter().map(|p| p.straggler).collect();
    assert_eq!(stragglers, vec![true, false, false, false]);
}

#[test]
fn no_state_information_means_nobody_straggles() {
    let a = eq13();
    let states = WorkerStates {
        straggling: None,
        rates: None,
        threshold: 1.0,
    };
    let c = run(&mut GreedyClustering::new(), &a, &states);
    assert!(c.placements.iter().all(|p| !p.straggler));
}

/// Every n-subset of 0..p (the shifts of one group; their order only permutes rows).
fn subsets(p: usize, n: usize) -> Vec<Vec<usize>> {
    (0u32..1 << p)
        .filter(|m| m.count_ones() as usize == n)
        .map(|m| (0..p).filter(|i| m >> i & 1 == 1).collect())
        .collect()
}

/// Whether a complete clustering exists, by plain backtracking (independent of the repair).
fn complete_clustering_exists(a: &Assignment) -> bool {
    fn go(a: &Assignment, w: usize, load: &mut [usize]) -> bool {
        if w == a.workers() {
            return true;
        }
        for &c in a.clusters_of(w) {
            if load[c] < a.size() {
                load[c] += 1;
                if go(a, w + 1, load) {
                    return true;
                }
                load[c] -= 1;
            }
        }
        false
    }
    go(a, 0, &mut vec![0; a.clusters()])
}

#[derive(Debug, Default)]
struct Tally {
    clusterings: u64,
    conflicts: u64,
    repairs: u64,
    long_repairs: u64,
    repairs_with_lemma1: u64,
}

#[test]
fn exhaustive_small_sizes_always_give_a_complete_valid_clustering() {
    let mut tally = Tally::default();
    let mut out = Clustering::default();
    for (k, p) in [
        (4, 2),
        (6, 2),
        (6, 3),
        (8, 2),
        (8, 4),
        (9, 3),
        (10, 5),
        (12, 3),
        (12, 4),
    ] {
        let l = k / p;
        for n in 1..=p {
            let choices = subsets(p, n);
            let combos = choices.len().pow(l as u32);
            for combo in 0..combos {
                let mut rest = combo;
                let shifts: Vec<Vec<usize>> = (0..l)
                    .map(|_| {
                        let s = choices[rest % choices.len()].clone();
                        rest /= choices.len();
                        s
                    })
                    .collect();
                let a = Assignment::from_shifts(k, p, &shifts).unwrap();
                assert!(
                    complete_clustering_exists(&a),
                    "K={k} P={p} shifts={shifts:?}"
                );
                for mask in 0u32..1 << k {
                    let s: Vec<bool> = (0..k).map(|w| mask >> w & 1 == 1).collect();
                    for rule in [PhaseOneRule::WorkedExample, PhaseOneRule::PseudoCode] {
                        GreedyClustering::with_rule(rule).cluster(
                            &a,
                            &WorkerStates::flags(&s),
                            &mut out,
                        );
                        if let Err(e) = out.validate(&a) {
                            panic!("K={k} P={p} shifts={shifts:?} S={s:?} {rule:?}: {e}");
                        }
                        tally.clusterings += 1;
                        tally.conflicts += out.conflicts.len() as u64;
                        for c in &out.conflicts {
                            if let Resolution::Repair { moved } = c.resolution {
                                tally.repairs += 1;
                                tally.long_repairs += (moved >= 2) as u64;
                                tally.repairs_with_lemma1 += a.lemma1_holds() as u64;
                            }
                        }
                    }
                }
            }
        }
    }
    println!("{tally:?}");
    assert!(tally.clusterings > 1_000_000);
    // The repair is exercised, and only when no single swap exists: every
    // repair path moves at least two workers.
    assert!(tally.repairs > 0, "{tally:?}");
    assert_eq!(tally.long_repairs, tally.repairs, "{tally:?}");
    // Lemma 1: when n > P(K−1)/(2K), a single swap always resolved the conflict.
    assert_eq!(tally.repairs_with_lemma1, 0, "{tally:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Every clustering is valid: each worker in exactly one cluster, only in a
    /// cluster of its column, every cluster exactly l workers.
    #[test]
    fn every_clustering_is_valid(
        (p, l) in (1usize..=20).prop_flat_map(|p| (Just(p), 1..=200 / p)),
        n_pick in 0usize..1000,
        seed in 0u64..1_000_000,
        straggle in 0.0f64..=1.0,
        heterogeneous in any::<bool>(),
        literal in any::<bool>(),
    ) {
        let k = p * l;
        let n = 1 + n_pick % p;
        let a = Assignment::circular_shifts(k, p, n, &mut stream(seed, Stream::ClusterShifts)).unwrap();
        let mut rng = stream(seed, Stream::CheckSampling);
        let flags: Vec<bool> = (0..k).map(|_| rng.random_bool(straggle)).collect();
        let rates: Vec<f64> = (0..k).map(|_| rng.random_range(0.0..5.0)).collect();
        let states = if heterogeneous {
            WorkerStates::rates(&rates, 5.0 * straggle)
        } else {
            WorkerStates::flags(&flags)
        };
        let rule = if literal { PhaseOneRule::PseudoCode } else { PhaseOneRule::WorkedExample };
        let mut out = Clustering::default();
        GreedyClustering::with_rule(rule).cluster(&a, &states, &mut out);
        prop_assert_eq!(out.validate(&a), Ok(()));
        for (w, pl) in out.placements.iter().enumerate() {
            prop_assert_eq!(pl.straggler, states.is_straggler(w));
            if pl.how == How::PhaseOne {
                prop_assert_eq!(pl.phase_one, Some(pl.cluster), "unmoved workers stay");
            }
        }
        let s: Vec<bool> = (0..k).map(|w| states.is_straggler(w)).collect();
        prop_assert!(out.max_stragglers() >= min_max_stragglers(&a, &s));
        // Reusing the output buffers gives the same clustering.
        let again = out.clone();
        GreedyClustering::with_rule(rule).cluster(&a, &states, &mut out);
        prop_assert_eq!(out, again);
    }
}

#[test]
fn greedy_never_beats_the_optimum_and_the_two_measures_agree() {
    let (k, p, n) = (20, 5, 3);
    let mut rng = stream(7, Stream::CheckSampling);
    let mut greedy = GreedyClustering::new();
    let mut out = Clustering::default();
    for set in 0..300u64 {
        let a =
            Assignment::circular_shifts(k, p, n, &mut stream(set, Stream::ClusterShifts)).unwrap();
        let s: Vec<bool> = (0..k).map(|_| rng.random_bool(0.5)).collect();
        greedy.cluster(&a, &WorkerStates::flags(&s), &mut out);
        let best = most_even_profile(&a, &s);
        assert_eq!(best[0], min_max_stragglers(&a, &s));
        let mut mine = out.straggler_counts();
        mine.sort_unstable_by(|x, y| y.cmp(x));
        assert!(mine >= best, "greedy {mine:?} below the optimum {best:?}");
        assert_eq!(mine.iter().sum::<usize>(), best.iter().sum::<usize>());
    }
}

/// One state, one clustering: for every straggler set of eq. (13) (all
/// 4095 but the empty one), the flags and the rates of the same state
/// (10 for a non-straggler, 0.1 for a straggler, tau = 0.5) give the same
/// clustering, and 000 §V's example (`explain --stragglers 6,7,11,12`) gets
/// the most even spread, one straggler per cluster.
#[test]
fn flags_and_rates_of_one_state_give_one_clustering() {
    let a = eq13();
    let mut greedy = GreedyClustering::new();
    for set in 1u32..1 << 12 {
        let flags: Vec<bool> = (0..12).map(|w| set >> w & 1 == 1).collect();
        let rates: Vec<f64> = flags.iter().map(|&s| if s { 0.1 } else { 10.0 }).collect();
        let by_flags = run(&mut greedy, &a, &WorkerStates::flags(&flags));
        let by_rates = run(&mut greedy, &a, &WorkerStates::rates(&rates, 0.5));
        assert_eq!(by_flags.members, by_rates.members, "stragglers {flags:?}");
    }
    let example: Vec<bool> = (1..=12).map(|w| [6, 7, 11, 12].contains(&w)).collect();
    let c = run(&mut greedy, &a, &WorkerStates::flags(&example));
    assert_eq!(c.straggler_counts(), vec![1, 1, 1, 1]);
    assert_eq!(min_max_stragglers(&a, &example), 1);
}
