//! Decoding-coefficient solve of gc-cyclic (Tandon's Algorithm 1, a·B_W = 1)
//! at (K, r) = (12, 3), (40, 10), (100, 10): a fresh solve for a new arrival
//! set, and a cache hit for a set seen before.
//!
//! Run: `cargo bench --bench decode` (targets: (40, 10) fresh < 100 µs; cached < 1 µs).

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use gradcode::coding::{CodeOptions, CyclicMds, StaticCode};
use gradcode::rng::{Stream, stream};
use rand::seq::SliceRandom;

fn arrival_sets(k: usize, r: usize, count: usize) -> Vec<Vec<usize>> {
    let mut rng = stream(3, Stream::CheckSampling);
    let mut order: Vec<usize> = (0..k).collect();
    (0..count)
        .map(|_| {
            order.shuffle(&mut rng);
            let mut set = order[..k - r + 1].to_vec();
            set.sort_unstable();
            set
        })
        .collect()
}

fn decode(c: &mut Criterion) {
    let mut group = c.benchmark_group("gc-cyclic decode");
    for (k, r) in [(12, 3), (40, 10), (100, 10)] {
        let code = CyclicMds::best_of(k, r, 8, &mut stream(1, Stream::Code)).unwrap();
        let sets = arrival_sets(k, r, 64);
        group.bench_with_input(
            BenchmarkId::new("fresh solve", format!("K={k},r={r}")),
            &sets,
            |b, sets| {
                let mut i = 0;
                b.iter(|| {
                    i = (i + 1) % sets.len();
                    black_box(
                        code.solve(black_box(&sets[i]), 1e-6)
                            .expect("K-r+1 arrivals decode"),
                    )
                })
            },
        );
        let mut cached = StaticCode::cyclic_repetition(
            k,
            r,
            CodeOptions::new(8, 1e-6, 4096).unwrap(),
            &mut stream(1, Stream::Code),
        )
        .unwrap();
        for set in &sets {
            cached.solve(set).expect("K-r+1 arrivals decode");
        }
        group.bench_with_input(
            BenchmarkId::new("cached", format!("K={k},r={r}")),
            &sets,
            |b, sets| {
                let mut i = 0;
                b.iter(|| {
                    i = (i + 1) % sets.len();
                    black_box(cached.solve(black_box(&sets[i])).expect("cached"))
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, decode);
criterion_main!(benches);
