//! IS-GC (004): the decoder returns a maximum independent set of the conflict
//! graph induced on EVERY received subset (n <= 12, brute force), the bounds
//! of Theorems 10-11, uniform recovery per partition (chi-square), the wait
//! policies, and where the paper's pseudo-code, read literally, goes wrong.

use gradcode_core::coding::{
    Arrival, Decoding, IgnoreStragglerCode, IsgcLayout, RoundContext, RoundPlan, Scheme, WaitPolicy,
};
use gradcode_core::engine::{Decision, Stop, StopCause, StopRule, decode_prefix};
use gradcode_core::rng::{Stream, stream};
use rand::RngExt;
use rand::seq::SliceRandom;

fn code(n: usize, c: usize, layout: IsgcLayout, seed: u64) -> IgnoreStragglerCode {
    let policy = WaitPolicy::new(n, Some(n), None, "is-gc").unwrap();
    IgnoreStragglerCode::new(n, c, layout, policy, stream(seed, Stream::IsgcTieBreak))
        .unwrap_or_else(|e| panic!("n = {n}, c = {c}, {layout:?}: {e}"))
}

/// Conflict masks from the stored partitions: bit j of adj[i] when workers i
/// and j (i != j) store a common partition.
fn conflicts(code: &IgnoreStragglerCode) -> Vec<u32> {
    let n = code.workers();
    (0..n)
        .map(|i| {
            (0..n)
                .filter(|&j| j != i && code.stored(i).iter().any(|p| code.stored(j).contains(p)))
                .fold(0u32, |m, j| m | 1 << j)
        })
        .collect()
}

/// alpha(G[S]) for every subset S of the n workers (bitmask DP).
fn independence_numbers(adj: &[u32]) -> Vec<u8> {
    let n = adj.len();
    let mut alpha = vec![0u8; 1 << n];
    for s in 1..(1usize << n) {
        let v = s.trailing_zeros() as usize;
        let without = alpha[s & !(1 << v)];
        let with = 1 + alpha[s & !(1 << v) & !(adj[v] as usize)];
        alpha[s] = without.max(with);
    }
    alpha
}

/// Every valid configuration of each placement for n workers.
fn layouts(n: usize) -> Vec<(usize, IsgcLayout)> {
    let mut out = Vec::new();
    for c in 1..=n {
        out.push((c, IsgcLayout::Cr));
        if n % c == 0 {
            out.push((c, IsgcLayout::Fr));
        }
        for groups in (1..=n).filter(|g| n % g == 0) {
            let n0 = n / groups;
            for c1 in 1..=c {
                let c2 = c - c1;
                let valid = c <= n0 && n0 < 2 * c && (groups == 1 || n0 <= c + c1);
                if valid {
                    out.push((c, IsgcLayout::Hr { groups, c1, c2 }));
                }
            }
        }
    }
    out
}

#[test]
fn decoder_finds_a_maximum_independent_set_for_every_received_subset() {
    let mut configs = 0;
    let mut hr_with_spill = 0;
    for n in 1..=12 {
        for (c, layout) in layouts(n) {
            let mut code = code(n, c, layout, n as u64 * 100 + c as u64);
            let adj = conflicts(&code);
            let alpha = independence_numbers(&adj);
            configs += 1;
            if matches!(layout, IsgcLayout::Hr { groups, c2, .. } if groups >= 2 && c2 >= 1) {
                hr_with_spill += 1;
            }
            for (s, &alpha_s) in alpha.iter().enumerate().skip(1) {
                let received: Vec<usize> = (0..n).filter(|&w| s >> w & 1 == 1).collect();
                let set = code.max_independent_set(&received).to_vec();
                let mask = set.iter().fold(0usize, |m, &w| m | 1 << w);
                assert_eq!(
                    set.len(),
                    mask.count_ones() as usize,
                    "{layout:?} n={n} c={c}: repeated worker in {set:?}"
                );
                assert_eq!(mask & !s, 0, "{layout:?} n={n} c={c}: {set:?} not received");
                for &w in &set {
                    assert_eq!(
                        adj[w] as usize & mask,
                        0,
                        "{layout:?} n={n} c={c} W'={received:?}: {set:?} has a conflict"
                    );
                }
                assert_eq!(
                    set.len(),
                    alpha_s as usize,
                    "{layout:?} n={n} c={c} W'={received:?}: {set:?} is not maximum"
                );
            }
        }
    }
    assert!(
        configs > 200 && hr_with_spill >= 3,
        "{configs} configs, {hr_with_spill} hr"
    );
}

#[test]
fn repeated_and_unordered_arrivals_give_the_same_maximum() {
    let mut c = code(12, 3, IsgcLayout::Cr, 5);
    let adj = conflicts(&c);
    let alpha = independence_numbers(&adj);
    let received = [11, 0, 4, 0, 7, 11, 3];
    let set = c.max_independent_set(&received).to_vec();
    let mask = [0usize, 3, 4, 7, 11].iter().fold(0, |m, &w| m | 1 << w);
    assert_eq!(set.len(), alpha[mask] as usize);
}

/// Literal Alg. 2 of 004: `next = i0 + j` with i0 moved to each pick while j
/// keeps counting (lines 6-9).
fn literal_alg2(n: usize, c: usize, received: &[usize], u: usize) -> usize {
    let d = |x: usize, y: usize| {
        let a = x.abs_diff(y);
        a.min(n - a)
    };
    let mut best = 0;
    for i in (0..c).map(|v| (u + v) % n).filter(|i| received.contains(i)) {
        let (mut set, mut i0) = (vec![i], i);
        for j in 1..n {
            let next = (i0 + j) % n;
            if received.contains(&next) && d(i0, next) >= c && d(next, i) >= c {
                i0 = next;
                if !set.contains(&next) {
                    set.push(next); // I' is a set
                }
            }
        }
        best = best.max(set.len());
    }
    best
}

#[test]
fn literal_algorithm_2_misses_the_maximum_and_the_decoder_does_not() {
    let all: Vec<usize> = (0..9).collect();
    // From worker 1 (1-based) it picks 1, 3, 6; from worker 2 it picks 2, 4, 7.
    assert_eq!(literal_alg2(9, 2, &all, 0), 3);
    let mut c = code(9, 2, IsgcLayout::Cr, 1);
    assert_eq!(c.max_independent_set(&all).len(), 4);
}

#[test]
fn starting_in_one_group_as_algorithm_3_does_can_miss_the_maximum() {
    // HR(12, 1, 3), g = 3 (n0 = 4, c = 4); W' = {1, 8, 11} 1-based.
    let layout = IsgcLayout::Hr {
        groups: 3,
        c1: 1,
        c2: 3,
    };
    let mut c = code(12, 4, layout, 3);
    let adj = conflicts(&c);
    let conflict = |a: usize, b: usize| adj[a] >> b & 1 == 1;
    // Group 3's only received worker (11) conflicts with both others, which do not conflict.
    assert!(conflict(10, 0) && conflict(10, 7) && !conflict(0, 7));
    for _ in 0..50 {
        let mut set = c.max_independent_set(&[0, 7, 10]).to_vec();
        set.sort_unstable();
        assert_eq!(set, vec![0, 7]);
    }
}

#[test]
fn theorems_10_and_11_bound_the_recovered_workers_for_fr_and_cr_tightly() {
    for n in 2..=12 {
        for (c, layout) in layouts(n) {
            let c_ = code(n, c, layout, 9);
            let alpha = independence_numbers(&conflicts(&c_));
            let mut seen_lo = vec![usize::MAX; n + 1];
            let mut seen_hi = vec![0; n + 1];
            for (s, &a) in alpha.iter().enumerate().skip(1) {
                let w = s.count_ones() as usize;
                seen_lo[w] = seen_lo[w].min(a as usize);
                seen_hi[w] = seen_hi[w].max(a as usize);
            }
            for w in 1..=n {
                // Theorem 11 holds for every placement.
                assert!(seen_hi[w] <= w.min(n / c), "{layout:?} n={n} c={c} w={w}");
                match layout {
                    IsgcLayout::Fr | IsgcLayout::Cr => {
                        // Theorem 10, and both bounds are attained.
                        let lo = w.div_ceil(c).min(n / c);
                        assert_eq!(seen_lo[w], lo, "{layout:?} n={n} c={c} w={w}");
                        assert_eq!(seen_hi[w], w.min(n / c), "{layout:?} n={n} c={c} w={w}");
                    }
                    IsgcLayout::Hr { groups, .. } => {
                        // Groups are cliques: the exact bounds use n0 and g.
                        let n0 = n / groups;
                        assert_eq!(seen_lo[w], w.div_ceil(n0).min(groups), "{layout:?} w={w}");
                        assert_eq!(seen_hi[w], w.min(groups), "{layout:?} w={w}");
                    }
                }
            }
        }
    }
}

#[test]
fn theorem_10_fails_for_hybrid_repetition_with_groups_larger_than_c() {
    // HR(6, 1, 1) with g = 2: n0 = 3 > c = 2. Receiving group 1 whole (w = 3)
    // recovers one worker, below Theorem 10's min(ceil(3/2), 3) = 2.
    let layout = IsgcLayout::Hr {
        groups: 2,
        c1: 1,
        c2: 1,
    };
    let mut c = code(6, 2, layout, 4);
    assert_eq!(c.max_independent_set(&[0, 1, 2]).len(), 1);
}

/// Pearson's chi-square statistic of `counts` against equal expectations.
fn chi_square(counts: &[u64]) -> f64 {
    let total: u64 = counts.iter().sum();
    let expected = total as f64 / counts.len() as f64;
    counts
        .iter()
        .map(|&o| (o as f64 - expected).powi(2) / expected)
        .sum()
}

/// How often each partition is recovered over `draws` uniform received sets of size w.
fn recovery_counts(
    n: usize,
    w: usize,
    draws: usize,
    mut decode: impl FnMut(&[usize]) -> Vec<usize>,
) -> Vec<u64> {
    let mut rng = stream(77, Stream::CheckSampling);
    let mut order: Vec<usize> = (0..n).collect();
    let mut counts = vec![0u64; n];
    for _ in 0..draws {
        order.shuffle(&mut rng);
        for p in decode(&order[..w]) {
            counts[p] += 1;
        }
    }
    counts
}

// Critical values of chi-square at p = 0.001.
const CHI2_DF11: f64 = 31.26;
const CHI2_DF9: f64 = 27.88;
const CHI2_DF2_BONFERRONI_6: f64 = 17.4; // p = 0.001 / 6 per class

#[test]
fn every_partition_is_recovered_equally_often_for_fr_and_cr() {
    const DRAWS: usize = 100_000;
    for (n, c, layout, w) in [
        (12, 3, IsgcLayout::Fr, 5),
        (12, 3, IsgcLayout::Cr, 6),
        (10, 3, IsgcLayout::Cr, 4),
    ] {
        let mut scheme = code(n, c, layout, 21);
        let counts = recovery_counts(n, w, DRAWS, |received| {
            scheme
                .max_independent_set(received)
                .iter()
                .flat_map(|&x| (0..c).map(move |j| (x, j)))
                .map(|(x, j)| match layout {
                    IsgcLayout::Fr => x / c * c + j,
                    _ => (x + j) % n,
                })
                .collect()
        });
        let critical = if n == 12 { CHI2_DF11 } else { CHI2_DF9 };
        let stat = chi_square(&counts);
        assert!(
            stat < critical,
            "{layout:?} n={n}: chi2 = {stat}, counts {counts:?}"
        );
    }
}

#[test]
fn the_chi_square_test_rejects_a_decoder_without_random_tie_breaks() {
    // The lexicographically first maximum independent set: maximum, but biased.
    let (n, c) = (12, 3);
    let scheme = code(n, c, IsgcLayout::Cr, 1);
    let adj = conflicts(&scheme);
    let alpha = independence_numbers(&adj);
    let counts = recovery_counts(n, 6, 100_000, |received| {
        let s = received.iter().fold(0usize, |m, &w| m | 1 << w);
        let mut chosen = Vec::new();
        let mut rest = s;
        let mut taken = 0usize;
        while rest != 0 {
            let v = rest.trailing_zeros() as usize;
            rest &= !(1 << v);
            let remaining = rest & !(adj[v] as usize);
            if 1 + alpha[remaining] as usize + taken == alpha[s] as usize
                && (chosen.iter().all(|&u: &usize| adj[u] >> v & 1 == 0))
            {
                chosen.push(v);
                taken += 1;
                rest = remaining;
            }
        }
        chosen
            .iter()
            .flat_map(|&x| (0..c).map(move |j| (x + j) % n))
            .collect()
    });
    assert!(chi_square(&counts) > 10.0 * CHI2_DF11, "{counts:?}");
}

#[test]
fn hybrid_repetition_recovers_alike_partitions_equally_often() {
    // HR(12, 2, 1), g = 3, n0 = 4: partitions at the same position of different
    // groups are alike (rotation by n0); positions within a group are not.
    let (n, c, groups) = (12, 3, 3);
    let layout = IsgcLayout::Hr {
        groups,
        c1: 2,
        c2: 1,
    };
    let mut scheme = code(n, c, layout, 8);
    let stored: Vec<Vec<usize>> = (0..n).map(|w| scheme.stored(w).to_vec()).collect();
    let counts = recovery_counts(n, 5, 100_000, |received| {
        scheme
            .max_independent_set(received)
            .iter()
            .flat_map(|&x| stored[x].clone())
            .collect()
    });
    let n0 = n / groups;
    for k in 0..n0 {
        let class: Vec<u64> = (0..groups).map(|g| counts[g * n0 + k]).collect();
        let stat = chi_square(&class);
        assert!(
            stat < CHI2_DF2_BONFERRONI_6,
            "position {k}: chi2 = {stat}, {class:?}"
        );
    }
}

#[test]
fn decode_sums_the_chosen_workers_and_the_mean_is_over_recovered_partitions() {
    let (n, c) = (12, 3);
    let mut scheme = code(n, c, IsgcLayout::Cr, 2);
    let plan = scheme.plan_round(&RoundContext::default());
    let mut rng = stream(5, Stream::CheckSampling);
    let gradients: Vec<Vec<f64>> = (0..n)
        .map(|_| (0..6).map(|_| rng.random_range(-1.0..1.0)).collect())
        .collect();
    let received = [3, 4, 9, 0, 4];
    let arrivals: Vec<Arrival> = received.iter().map(|&w| Arrival::only(w)).collect();
    let d = scheme.decode(&plan, &arrivals);
    assert!(d.decodable);
    assert_eq!(d.recovered.len(), c * d.messages_used());
    assert_eq!(d.weights[4], 0.0, "a repeated worker counts once");
    let messages: Vec<Vec<f64>> = received
        .iter()
        .map(|&w| plan.tasks[w].messages[0].codeword.encode(&gradients))
        .collect();
    let refs: Vec<&[f64]> = messages.iter().map(|m| m.as_slice()).collect();
    let mean = d.combine_mean(&refs);
    for (k, &v) in mean.iter().enumerate() {
        let truth: f64 =
            d.recovered.iter().map(|&p| gradients[p][k]).sum::<f64>() / d.recovered.len() as f64;
        assert!((v - truth).abs() < 1e-12);
    }
    assert_eq!(d.recovered_fraction(n), d.recovered.len() as f64 / 12.0);
}

#[test]
fn wait_policies_fastest_w_deadline_or_both() {
    let n = 8;
    let arrivals = [(0.1, 3), (0.2, 5), (0.25, 3), (0.3, 0), (0.5, 7), (0.9, 1)];
    let build = |w: Option<usize>, d: Option<f64>| {
        let policy = WaitPolicy::new(n, w, d, "is-gc").unwrap();
        IgnoreStragglerCode::new(
            n,
            2,
            IsgcLayout::Cr,
            policy,
            stream(1, Stream::IsgcTieBreak),
        )
        .unwrap()
    };
    // The engine's stop rule on timed arrivals, as the simulated round feeds it.
    let stop = |s: &mut IgnoreStragglerCode, plan: &RoundPlan| -> (Stop, Decoding) {
        let mut rule = StopRule::new(s, plan);
        for &(time, w) in &arrivals {
            if rule.arrive(Arrival::only(w), time) != Decision::Wait {
                break;
            }
        }
        let stop = rule.finish();
        let received: Vec<Arrival> = arrivals[..stop.accepted]
            .iter()
            .map(|&(_, w)| Arrival::only(w))
            .collect();
        (stop, s.decode(plan, &received))
    };
    // Fastest w = 3 distinct: stops at the 4th arrival (a repeat does not count).
    let mut s = build(Some(3), None);
    let plan = s.plan_round(&RoundContext::default());
    let (out, _) = stop(&mut s, &plan);
    assert_eq!(
        (out.accepted, out.time, out.cause),
        (4, 0.3, StopCause::Sufficient)
    );
    // Deadline 0.45 alone: the four arrivals before it.
    let mut s = build(None, Some(0.45));
    let (out, decoding) = stop(&mut s, &plan);
    assert_eq!(
        (out.accepted, out.time, out.cause),
        (4, 0.45, StopCause::Deadline)
    );
    assert!(decoding.decodable);
    // Both: whichever comes first.
    let mut s = build(Some(2), Some(0.45));
    let (out, _) = stop(&mut s, &plan);
    assert_eq!((out.accepted, out.time), (2, 0.2));
    let mut s = build(Some(6), Some(0.22));
    let (out, _) = stop(&mut s, &plan);
    assert_eq!(
        (out.accepted, out.time, out.cause),
        (2, 0.22, StopCause::Deadline)
    );
    // Nothing by the deadline: the first arrival is decoded.
    let mut s = build(None, Some(0.05));
    let (out, decoding) = stop(&mut s, &plan);
    assert_eq!(
        (out.accepted, out.time, out.cause),
        (1, 0.1, StopCause::FirstAfterDeadline)
    );
    assert_eq!(decoding.recovered, vec![3, 4]);
    // Every arrival before a deadline the tracker never meets: the master
    // waits for the deadline (w = 8 of 8 workers, but only 6 distinct arrive).
    let mut s = build(Some(8), Some(2.0));
    let (out, _) = stop(&mut s, &plan);
    assert_eq!(
        (out.accepted, out.time, out.cause),
        (6, 2.0, StopCause::Deadline)
    );
    // Without a deadline the tracker alone decides, as the untimed prefix does.
    let mut s = build(Some(3), None);
    let received: Vec<Arrival> = arrivals.iter().map(|&(_, w)| Arrival::only(w)).collect();
    assert_eq!(decode_prefix(&mut s, &plan, &received).1, 4);
}

#[test]
fn invalid_parameters_name_their_key() {
    let policy = WaitPolicy::new(12, Some(6), None, "is-gc").unwrap();
    let build = |n: usize, c: usize, layout: IsgcLayout| {
        IgnoreStragglerCode::new(n, c, layout, policy, stream(1, Stream::IsgcTieBreak))
            .unwrap_err()
            .to_string()
    };
    let hr = |groups, c1, c2| IsgcLayout::Hr { groups, c1, c2 };
    for (n, c, layout, starts) in [
        (12, 5, IsgcLayout::Fr, "scheme.load = 5"),
        (12, 0, IsgcLayout::Cr, "scheme.load = 0"),
        (12, 13, IsgcLayout::Cr, "scheme.load = 13"),
        (12, 3, hr(5, 2, 1), "scheme.groups = 5"),
        (12, 3, hr(0, 2, 1), "scheme.groups = 0"),
        (12, 3, hr(2, 2, 1), "scheme.groups = 2"), // n0 = 6 > 2c - 1 = 5
        (12, 5, hr(4, 2, 3), "scheme.load = 5"),   // n0 = 3 < c
        (12, 3, hr(3, 0, 3), "scheme.c1 = 0"),
        (12, 3, hr(3, 2, 2), "scheme.c2 = 2"),
        (14, 4, hr(2, 1, 3), "scheme.c1 = 1"), // n0 = 7 > c + c1 = 5
    ] {
        let e = build(n, c, layout);
        assert!(e.starts_with(starts), "{layout:?}: {e}");
    }
    let e = WaitPolicy::new(12, None, None, "is-gc").unwrap_err();
    assert!(e.to_string().starts_with("scheme.wait_for"), "{e}");
    let e = WaitPolicy::new(12, Some(13), None, "is-gc").unwrap_err();
    assert!(e.to_string().starts_with("scheme.wait_for = 13"), "{e}");
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let e = WaitPolicy::new(12, None, Some(bad), "is-gc").unwrap_err();
        assert!(e.to_string().starts_with("scheme.deadline"), "{e}");
    }
}

#[test]
fn hybrid_repetition_placement_follows_004_section_vi() {
    // HR(n, c, 0) with n0 = c is FR; HR(n, c - 1, 1) with n0 = c stores the same.
    let fr = code(12, 3, IsgcLayout::Fr, 1);
    for (c1, c2) in [(3, 0), (2, 1)] {
        let hr = code(12, 3, IsgcLayout::Hr { groups: 4, c1, c2 }, 1);
        for w in 0..12 {
            assert_eq!(hr.stored(w), fr.stored(w), "HR(12, {c1}, {c2}) worker {w}");
        }
    }
    // HR(8, 1, 2), g = 2 (n0 = 4): worker 4 (local 3) holds local partition 2
    // of its group (upper row) and 3, 4 (cyclic rows, 4 is in group 2).
    let hr = code(
        8,
        3,
        IsgcLayout::Hr {
            groups: 2,
            c1: 1,
            c2: 2,
        },
        1,
    );
    assert_eq!(hr.stored(3), &[2, 3, 4]);
    assert_eq!(hr.stored(0), &[0, 1, 3]);
}
