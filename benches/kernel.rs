//! A worker's gradient kernel against the machine's memory bandwidth.
//!
//! Both run on a partition of 256 MiB (8x the 32 MiB last-level cache of the
//! development machine), so every pass streams from memory:
//! - `stream copy`: a STREAM-like copy `b = a` (bytes read + bytes written per second);
//! - `stream read`: a STREAM-like read-only sum (bytes read per second);
//! - `kernel`: `learn::kernel::accumulate` over the partition (sample bytes read per second).
//!
//! The kernel reads each sample once per iteration, so its throughput should
//! approach the read bandwidth (target: at least 60% of it). Criterion reports
//! throughput in bytes per second.
//!
//! `sparse kernel`: `learn::kernel::accumulate_sparse` over the training set of
//! the Amazon-shaped synthetic-onehot problem (001 §5: 26,210 samples ×
//! 241,915 one-hot features, 10 stored entries per sample) as one CSR
//! partition, in stored entries (non-zeros) per second.
//!
//! `auto threshold`: the dense and the sparse kernel on the same 20,000 × 1000
//! samples at densities around `data.format = "auto"`'s threshold (0.25), in
//! time per pass: where storing sparse stops paying.
//!
//! Run: `cargo bench --bench kernel`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use gradcode::config::Loss;
use gradcode::learn::{CsrMatrix, DataPlan, Features, kernel};
use gradcode::rng::{Stream, stream};
use ndarray::Array2;
use rand::RngExt;

const BYTES: usize = 256 << 20;

/// The read-only pass of STREAM: a sum with 16 independent lanes, compiled
/// for AVX2 when the CPU has it (as the kernel is), so that the baseline is
/// the memory system and not the adder.
fn stream_sum(a: &[f64]) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2.
        return unsafe { stream_sum_avx2(a) };
    }
    stream_sum_portable(a)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn stream_sum_avx2(a: &[f64]) -> f64 {
    stream_sum_portable(a)
}

#[inline(always)]
fn stream_sum_portable(a: &[f64]) -> f64 {
    let mut acc = [0.0; 16];
    for chunk in a.chunks_exact(16) {
        for (s, v) in acc.iter_mut().zip(chunk) {
            *s += v;
        }
    }
    acc.iter().sum()
}
const FEATURES: usize = 1000;

fn bandwidth(c: &mut Criterion) {
    let values = BYTES / 8;
    let rows = values / FEATURES;
    let mut rng = stream(1, Stream::Data);
    let x = Array2::from_shape_fn((rows, FEATURES), |_| rng.random_range(-1.0..1.0));
    let y: Vec<f64> = (0..rows).map(|_| rng.random_range(-1.0..1.0)).collect();
    let theta: Vec<f64> = (0..FEATURES).map(|_| rng.random_range(-0.1..0.1)).collect();
    let a = x.as_slice().unwrap();
    let mut b = vec![0.0; a.len()];

    let mut group = c.benchmark_group("memory bandwidth");
    group.sample_size(10);
    group.throughput(Throughput::Bytes((2 * BYTES) as u64));
    group.bench_function("stream copy", |bench| {
        bench.iter(|| b.copy_from_slice(black_box(a)))
    });
    group.throughput(Throughput::Bytes(BYTES as u64));
    group.bench_function("stream read", |bench| {
        bench.iter(|| black_box(stream_sum(black_box(a))))
    });
    for loss in [Loss::LeastSquares, Loss::Logistic] {
        group.bench_function(format!("kernel {loss:?}"), |bench| {
            let mut grad = vec![0.0; FEATURES];
            bench.iter(|| {
                black_box(kernel::accumulate(
                    loss,
                    x.view(),
                    &y,
                    0..rows,
                    black_box(&theta),
                    &mut grad,
                ))
            })
        });
    }
    group.finish();
}

/// The Amazon-shaped one-hot problem of `scripts/bench-sparse.sh`.
const ONEHOT: &str = "workers = 1\n[data]\nkind = \"synthetic-onehot\"\ntrain_samples = 26210\ntest_samples = 1\nfeatures = 241915\nnonzeros_per_row = 10\n[model]\nloss = \"logistic\"\n";

fn sparse(c: &mut Criterion) {
    let config = gradcode::config::parse(ONEHOT, "bench", &[])
        .expect("valid config")
        .config;
    let plan = DataPlan::new(&config, 1).expect("synthetic data");
    let part = plan.load(&[0]).expect("synthetic data").remove(0);
    let Features::Sparse(x) = &part.x else {
        panic!("one-hot data is stored sparse")
    };
    let mut rng = stream(2, Stream::Data);
    let theta: Vec<f64> = (0..x.columns())
        .map(|_| rng.random_range(-0.1..0.1))
        .collect();
    let mut group = c.benchmark_group("sparse kernel");
    group.throughput(Throughput::Elements(x.stored() as u64));
    for loss in [Loss::LeastSquares, Loss::Logistic] {
        group.bench_function(format!("onehot 26210x241915 {loss:?}"), |bench| {
            let mut grad = vec![0.0; x.columns()];
            bench.iter(|| {
                black_box(kernel::accumulate_sparse(
                    loss,
                    x,
                    &part.y,
                    0..x.rows(),
                    black_box(&theta),
                    &mut grad,
                ))
            })
        });
    }
    group.finish();
}

fn threshold(c: &mut Criterion) {
    let (rows, d) = (20_000, 1000);
    let mut rng = stream(3, Stream::Data);
    let y: Vec<f64> = (0..rows)
        .map(|_| if rng.random::<bool>() { 1.0 } else { -1.0 })
        .collect();
    let theta: Vec<f64> = (0..d).map(|_| rng.random_range(-0.1..0.1)).collect();
    let mut group = c.benchmark_group("auto threshold");
    group.sample_size(20);
    for density in [0.05, 0.25, 0.5] {
        let x = Array2::from_shape_fn((rows, d), |_| {
            if rng.random::<f64>() < density {
                rng.random_range(-1.0..1.0)
            } else {
                0.0
            }
        });
        let csr = CsrMatrix::from_dense(&x).expect("1000 columns");
        let mut grad = vec![0.0; d];
        group.bench_function(format!("dense density {density}"), |bench| {
            bench.iter(|| {
                black_box(kernel::accumulate(
                    Loss::Logistic,
                    x.view(),
                    &y,
                    0..rows,
                    black_box(&theta),
                    &mut grad,
                ))
            })
        });
        group.bench_function(format!("sparse density {density}"), |bench| {
            bench.iter(|| {
                black_box(kernel::accumulate_sparse(
                    Loss::Logistic,
                    &csr,
                    &y,
                    0..rows,
                    black_box(&theta),
                    &mut grad,
                ))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bandwidth, sparse, threshold);
criterion_main!(benches);
