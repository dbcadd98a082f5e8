//! How often does the greedy dynamic clustering of 000 §V reach the most even
//! spread of stragglers that any valid clustering could reach?
//!
//! For each of `--sets` random straggler sets (every worker straggles
//! independently with probability `--probability`, 1/2 by default: a uniform
//! random subset) and a fresh circular-shift assignment matrix per set (or one
//! fixed matrix with `--fixed-matrix`), it compares the straggler profile of
//! a clustering (stragglers per cluster) with two exact optima over all valid
//! clusterings (`gradcode::cluster::spread`):
//!
//! - min-max: the least possible largest number of stragglers in one cluster;
//! - profile: the lexicographically least decreasingly sorted profile.
//!
//! and counts, when some clustering leaves at most r − 1 stragglers in every
//! cluster (the master can then finish from non-stragglers alone), how often
//! the clustering does too. Rows: the greedy as the worked example reads it
//! (the default policy), the literal pseudo-code, and the static GC-SC
//! clustering (the first l rows) for reference.
//!
//! It asserts that no clustering reaches a lower maximum or a more even
//! profile than the exact optima (`scripts/test.sh` runs it on 2,000 sets).
//!
//! Run: `cargo run --release --example greedy_spread` (K = 20, P = 5, n = 3,
//! r = 3, 10^4 sets: the setting of 000 Figs. 4-7). Options: `--sets N
//! --workers K --clusters P --per-worker n --load r --probability q --seed s
//! --fixed-matrix`.

use std::collections::BTreeMap;

use gradcode::cluster::spread::{min_max_stragglers, most_even_profile};
use gradcode::cluster::{
    Assignment, Clustering, ClusteringPolicy, GreedyClustering, PhaseOneRule, WorkerStates,
};
use gradcode::rng::{Stream, stream};
use rand::RngExt;

#[derive(Debug, Default, Clone)]
struct Tally {
    max_equal: u64,
    profile_equal: u64,
    /// Sets where the optimum allows finishing from non-stragglers.
    finishable: u64,
    finishes: u64,
    conflicts: u64,
    repairs: u64,
}

fn sorted_desc(mut v: Vec<usize>) -> Vec<usize> {
    v.sort_unstable_by(|a, b| b.cmp(a));
    v
}

fn main() {
    let mut sets = 10_000u64;
    let (mut k, mut p, mut n, mut r) = (20usize, 5usize, 3usize, 3usize);
    let mut probability = 0.5f64;
    let mut seed = 1u64;
    let mut fixed = false;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = || {
            args.get(i + 1)
                .unwrap_or_else(|| panic!("{} needs a value", args[i]))
                .clone()
        };
        match args[i].as_str() {
            "--sets" => sets = value().parse().expect("--sets: a count"),
            "--workers" => k = value().parse().expect("--workers: a count"),
            "--clusters" => p = value().parse().expect("--clusters: a count"),
            "--per-worker" => n = value().parse().expect("--per-worker: a count"),
            "--load" => r = value().parse().expect("--load: a count"),
            "--probability" => probability = value().parse().expect("--probability: in [0, 1]"),
            "--seed" => seed = value().parse().expect("--seed: an integer"),
            "--fixed-matrix" => {
                fixed = true;
                i += 1;
                continue;
            }
            other => panic!("unknown option {other}"),
        }
        i += 2;
    }
    let mut shifts = stream(seed, Stream::ClusterShifts);
    let mut sampling = stream(seed, Stream::CheckSampling);
    let mut a = Assignment::circular_shifts(k, p, n, &mut shifts).expect("valid sizes");
    let names = [
        "greedy (worked example)",
        "greedy (pseudo-code)",
        "static (GC-SC)",
    ];
    let mut policies = [
        GreedyClustering::with_rule(PhaseOneRule::WorkedExample),
        GreedyClustering::with_rule(PhaseOneRule::PseudoCode),
    ];
    let mut tallies = vec![Tally::default(); names.len()];
    // Per number of stragglers: (sets, greedy max equal, greedy profile equal).
    let mut by_count: BTreeMap<usize, (u64, u64, u64)> = BTreeMap::new();
    let mut out = Clustering::default();
    for _ in 0..sets {
        if !fixed {
            a = Assignment::circular_shifts(k, p, n, &mut shifts).expect("valid sizes");
        }
        let s: Vec<bool> = (0..k).map(|_| sampling.random_bool(probability)).collect();
        let best_max = min_max_stragglers(&a, &s);
        let best_profile = most_even_profile(&a, &s);
        assert_eq!(best_profile[0], best_max);
        let finishable = best_max < r;
        for (j, tally) in tallies.iter_mut().enumerate() {
            let counts = if j < policies.len() {
                policies[j].cluster(&a, &WorkerStates::flags(&s), &mut out);
                tally.conflicts += out.conflicts.len() as u64;
                tally.repairs += out.repairs() as u64;
                out.straggler_counts()
            } else {
                let initial = a.initial_clustering();
                initial
                    .members
                    .iter()
                    .map(|m| m.iter().filter(|&&w| s[w]).count())
                    .collect()
            };
            let profile = sorted_desc(counts);
            // No clustering beats the exact optima (they are exact).
            assert!(
                profile[0] >= best_max,
                "{}: below the min-max optimum",
                names[j]
            );
            assert!(
                profile >= best_profile,
                "{}: below the most even profile",
                names[j]
            );
            let max_equal = profile[0] == best_max;
            let profile_equal = profile == best_profile;
            tally.max_equal += max_equal as u64;
            tally.profile_equal += profile_equal as u64;
            tally.finishable += finishable as u64;
            tally.finishes += (finishable && profile[0] < r) as u64;
            if j == 0 {
                let e = by_count
                    .entry(s.iter().filter(|&&x| x).count())
                    .or_default();
                e.0 += 1;
                e.1 += max_equal as u64;
                e.2 += profile_equal as u64;
            }
        }
    }
    let pct = |x: u64, of: u64| {
        if of == 0 {
            "-".to_string()
        } else {
            format!("{:.2}%", 100.0 * x as f64 / of as f64)
        }
    };
    println!(
        "K = {k}, P = {p}, n = {n}, r = {r}: {sets} straggler sets (each worker straggles with probability {probability}), {}; Lemma 1 {}",
        if fixed {
            "one fixed circular-shift matrix"
        } else {
            "a fresh circular-shift matrix per set"
        },
        if a.lemma1_holds() {
            "holds"
        } else {
            "does not hold"
        }
    );
    println!(
        "{:<26} {:>14} {:>16} {:>26} {:>10} {:>8}",
        "clustering",
        "max = optimum",
        "profile = optimum",
        "finishes when possible",
        "conflicts",
        "repairs"
    );
    for (name, t) in names.iter().zip(&tallies) {
        println!(
            "{:<26} {:>14} {:>16} {:>26} {:>10} {:>8}",
            name,
            pct(t.max_equal, sets),
            pct(t.profile_equal, sets),
            format!("{} of {}", pct(t.finishes, t.finishable), t.finishable),
            t.conflicts,
            t.repairs
        );
    }
    println!("\ngreedy (worked example) by number of stragglers:");
    println!(
        "{:>10} {:>7} {:>14} {:>16}",
        "stragglers", "sets", "max = optimum", "profile = optimum"
    );
    for (count, (total, max_equal, profile_equal)) in &by_count {
        println!(
            "{:>10} {:>7} {:>14} {:>16}",
            count,
            total,
            pct(*max_equal, *total),
            pct(*profile_equal, *total)
        );
    }
}
