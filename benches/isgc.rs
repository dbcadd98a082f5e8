//! IS-GC decode (maximum independent set of the conflict graph among the
//! received workers) at n = 1024 for cr and hr, for several numbers of
//! received workers w. Target: under 20 µs per decode.
//!
//! `lean` is `IgnoreStragglerCode::max_independent_set` (no allocation);
//! `decode` is the full `Scheme::decode`, which also builds the `Decoding`
//! (weights, recovered partitions).
//!
//! Run: `cargo bench --bench isgc`.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use gradcode::coding::{
    Arrival, IgnoreStragglerCode, IsgcLayout, RoundContext, Scheme, WaitPolicy,
};
use gradcode::rng::{Stream, stream};
use rand::seq::SliceRandom;

fn decode(c: &mut Criterion) {
    let n = 1024;
    let mut group = c.benchmark_group("is-gc decode n=1024");
    let layouts = [
        ("cr c=8", 8, IsgcLayout::Cr),
        ("cr c=32", 32, IsgcLayout::Cr),
        (
            "hr(1024,5,3) g=128",
            8,
            IsgcLayout::Hr {
                groups: 128,
                c1: 5,
                c2: 3,
            },
        ),
        (
            "hr(1024,20,12) g=32",
            32,
            IsgcLayout::Hr {
                groups: 32,
                c1: 20,
                c2: 12,
            },
        ),
    ];
    for (name, load, layout) in layouts {
        let policy = WaitPolicy::new(n, Some(n), None, "is-gc").unwrap();
        let mut code =
            IgnoreStragglerCode::new(n, load, layout, policy, stream(1, Stream::IsgcTieBreak))
                .unwrap();
        let plan = code.plan_round(&RoundContext::default());
        for w in [256, 768, 1024] {
            let mut rng = stream(3, Stream::CheckSampling);
            let mut order: Vec<usize> = (0..n).collect();
            let sets: Vec<Vec<usize>> = (0..32)
                .map(|_| {
                    order.shuffle(&mut rng);
                    order[..w].to_vec()
                })
                .collect();
            group.bench_with_input(
                BenchmarkId::new(format!("lean {name}"), w),
                &sets,
                |b, sets| {
                    let mut i = 0;
                    b.iter(|| {
                        i = (i + 1) % sets.len();
                        black_box(code.max_independent_set(black_box(&sets[i])).len())
                    })
                },
            );
            let arrivals: Vec<Vec<Arrival>> = sets
                .iter()
                .map(|s| s.iter().map(|&w| Arrival::only(w)).collect())
                .collect();
            group.bench_with_input(
                BenchmarkId::new(format!("decode {name}"), w),
                &arrivals,
                |b, sets| {
                    let mut i = 0;
                    b.iter(|| {
                        i = (i + 1) % sets.len();
                        black_box(code.decode(&plan, black_box(&sets[i])))
                    })
                },
            );
        }
    }
    group.finish();
}

criterion_group!(benches, decode);
criterion_main!(benches);
