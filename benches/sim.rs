//! The Monte Carlo simulator on the nine configs of 000 §VI (configs/paper/gcdc-fig*.toml):
//! 30 trials × 400 iterations of every compared scheme and the lower bound.
//! Throughput is in worker-iterations (trials × iterations × K × schemes).
//!
//! Run: `cargo bench --bench sim` (target: all nine under 2 s on one core).
//! `scripts/bench-sim.sh` times the same through the CLI.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use gradcode::config::Config;
use gradcode::sim::Simulation;

fn gcdc_configs() -> Vec<(String, Config)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("configs/paper");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("configs/paper")
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("gcdc-fig") && n.ends_with(".toml"))
        })
        .collect();
    paths.sort();
    assert_eq!(paths.len(), 9, "nine gcdc configs in {}", dir.display());
    paths
        .iter()
        .map(|p| {
            let loaded = gradcode::setup::load(Some(p), &[])
                .unwrap_or_else(|e| panic!("{e}"))
                .loaded;
            (p.display().to_string(), loaded.config)
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let configs = gcdc_configs();
    let worker_iterations: u64 = configs
        .iter()
        .map(|(_, c)| {
            let s = &c.simulate;
            (s.trials * s.iterations * c.workers * c.compared().len()) as u64
        })
        .sum();
    let mut group = c.benchmark_group("simulate");
    group.sample_size(10);
    group.throughput(Throughput::Elements(worker_iterations));
    group.bench_function("nine gcdc configs, 30 x 400", |b| {
        b.iter(|| {
            for (name, config) in &configs {
                // Building the schemes (code draws) is part of a run.
                let mut sim =
                    Simulation::from_config(config).unwrap_or_else(|e| panic!("{name}: {e}"));
                black_box(sim.run(&mut []).unwrap());
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
