//! One greedy dynamic clustering (000 §V, Algorithm 1 with the repair) as the
//! master runs it every iteration, at K = 20 (P = 5, n = 3: the paper's
//! setting; target under 5 µs), K = 200 (P = 10, n = 5, the Lemma 1
//! minimum) and K = 1024 (P = 64, n = 8, where Lemma 1 does not hold and
//! conflicts may need the augmenting-path repair; target under 1 ms), for
//! straggler flags and for rates; and a whole gc-dc `plan_round` (clustering
//! plus the RoundPlan it returns). The optimal clustering (beyond 000, the
//! exact optimum by flows, load r = 3) at K = 20 (target under 50 µs) and
//! K = 200 (target under 5 ms), for flags and for rates.
//!
//! Run: `cargo bench --bench clustering`.

use std::hint::black_box;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, criterion_group, criterion_main};
use gradcode::cluster::{
    Assignment, Clustering, ClusteringPolicy, GreedyClustering, OptimalClustering, WorkerStates,
};
use gradcode::coding::ClusteringKind;
use gradcode::coding::{CodeOptions, DynamicClustering, RoundContext, Scheme, clustering_policy};
use gradcode::rng::{Stream, stream};
use rand::RngExt;

fn straggler_sets(k: usize, count: usize) -> Vec<Vec<bool>> {
    let mut rng = stream(5, Stream::CheckSampling);
    (0..count)
        .map(|_| (0..k).map(|_| rng.random_bool(0.5)).collect())
        .collect()
}

fn rate_sets(k: usize, count: usize) -> Vec<Vec<f64>> {
    let mut rng = stream(6, Stream::CheckSampling);
    (0..count)
        .map(|_| (0..k).map(|_| rng.random_range(0.0..5.0)).collect())
        .collect()
}

/// One clustering by `policy` per iteration, cycling through the straggler
/// flag sets (`flags/LABEL`) and through the rate sets (`rates/LABEL`).
fn flags_and_rates<P: ClusteringPolicy>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    label: &str,
    a: &Assignment,
    mut policy: P,
    sets: &[Vec<bool>],
    rates: &[Vec<f64>],
) {
    let mut out = Clustering::default();
    group.bench_with_input(BenchmarkId::new("flags", label), sets, |b, sets| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % sets.len();
            policy.cluster(a, &WorkerStates::flags(black_box(&sets[i])), &mut out);
            black_box(out.members.len())
        })
    });
    group.bench_with_input(BenchmarkId::new("rates", label), rates, |b, rates| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % rates.len();
            policy.cluster(a, &WorkerStates::rates(black_box(&rates[i]), 2.5), &mut out);
            black_box(out.members.len())
        })
    });
}

fn clustering(c: &mut Criterion) {
    let mut group = c.benchmark_group("gc-dc greedy clustering");
    for (k, p, n) in [(20, 5, 3), (200, 10, 5), (1024, 64, 8)] {
        let a =
            Assignment::circular_shifts(k, p, n, &mut stream(1, Stream::ClusterShifts)).unwrap();
        let sets = straggler_sets(k, 64);
        let rates = rate_sets(k, 64);
        let label = format!("K={k},P={p},n={n}");
        flags_and_rates(
            &mut group,
            &label,
            &a,
            GreedyClustering::new(),
            &sets,
            &rates,
        );
        let mut scheme = DynamicClustering::new(
            k,
            p,
            3,
            Some(n),
            None,
            8,
            0.5,
            clustering_policy(ClusteringKind::Greedy, 3).unwrap(),
            CodeOptions::default(),
            &mut stream(1, Stream::Code),
            &mut stream(1, Stream::ClusterShifts),
        )
        .unwrap();
        group.bench_with_input(BenchmarkId::new("plan_round", &label), &sets, |b, sets| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) % sets.len();
                black_box(scheme.plan_round(&RoundContext {
                    iteration: i as u64,
                    straggling: Some(black_box(&sets[i])),
                    rates: None,
                }))
            })
        });
    }
    group.finish();
}

fn optimal(c: &mut Criterion) {
    let mut group = c.benchmark_group("gc-dc optimal clustering");
    for (k, p, n) in [(20, 5, 3), (200, 10, 5)] {
        let a =
            Assignment::circular_shifts(k, p, n, &mut stream(1, Stream::ClusterShifts)).unwrap();
        let sets = straggler_sets(k, 64);
        let rates = rate_sets(k, 64);
        let label = format!("K={k},P={p},n={n}");
        let policy = OptimalClustering::new(3).unwrap();
        flags_and_rates(&mut group, &label, &a, policy, &sets, &rates);
    }
    group.finish();
}

criterion_group!(benches, clustering, optimal);
criterion_main!(benches);
