//! A network's gradient throughput on one core: one mini-batch of 32
//! random 28×28 images through `Model::accumulate` (forward, softmax
//! cross-entropy summed over the batch, backward), for the MLP
//! (784-512-512-10), the LeNet-style CNN of 004 §VIII and a small ResNet
//! (`model.resnet_blocks = [2, 2]`, `resnet_width = 16`: ResNet-18's basic
//! blocks, two stages; the full ResNet-18 takes seconds per batch on one
//! core), in f64 and f32; and the MLP in f64 by candle's graph
//! (`mlp f64 graph`) beside its own written-out pass (`mlp f64`).
//! Criterion reports samples per second. The process is set up as the
//! `gradcode` binary sets itself up (`process_setup`: one thread, the
//! allocator keeping freed memory). `scripts/bench-nn.sh` runs it beside
//! PyTorch on the same networks (`scripts/bench_nn_torch.py`).
//!
//! Run: `cargo bench --bench nn`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group};
use gradcode::config::{Config, ModelName, Precision};
use gradcode::learn::{Features, Input, Model, Partition, StepKey};
use gradcode::rng::{Stream, stream};
use ndarray::Array2;
use rand::RngExt;

const BATCH: usize = 32;
/// The small ResNet's stages and width (as `scripts/bench_nn_torch.py`'s).
const RESNET_BLOCKS: [usize; 2] = [2, 2];
const RESNET_WIDTH: usize = 16;

fn images() -> Partition {
    let mut rng = stream(1, Stream::Data);
    let x = Array2::from_shape_fn((BATCH, 784), |_| rng.random::<f64>() * 2.0 - 1.0);
    Partition {
        id: 0,
        x: Features::Dense(x),
        y: (0..BATCH).map(|i| (i % 10) as f64).collect(),
    }
}

fn networks(c: &mut Criterion) {
    let part = images();
    let rows: Vec<usize> = (0..BATCH).collect();
    let input = Input {
        features: 784,
        image: Some([1, 28, 28]),
        partition_rows: BATCH,
    };
    let mut group = c.benchmark_group("gradient");
    group.throughput(Throughput::Elements(BATCH as u64));
    for kind in ["mlp", "cnn", "resnet"] {
        for precision in [Precision::F64, Precision::F32] {
            let mut config = Config::default();
            config.model.kind = ModelName::new(kind);
            config.model.precision = precision;
            config.model.set_param("dropout", 0.5);
            config
                .model
                .set_param("resnet_blocks", RESNET_BLOCKS.map(|b| b as i64).to_vec());
            config.model.set_param("resnet_width", RESNET_WIDTH as i64);
            let model = Model::new(&config, input).unwrap();
            let theta = model.initial_theta(1);
            let mut grad = vec![0.0; model.dim()];
            let key = StepKey {
                seed: 1,
                partition: 0,
                iteration: 0,
            };
            let name = format!("{kind} {precision:?}").to_lowercase();
            group.bench_function(name, |b| {
                b.iter(|| {
                    black_box(
                        model
                            .accumulate(&part, &rows, &theta, &mut grad, key)
                            .unwrap(),
                    )
                })
            });
        }
    }
    mlp_graph(&mut group, &part, &rows, input);
    group.finish();
}

/// The MLP in f64 by candle's graph (`mlp f64 graph`), beside its own
/// written-out pass (`mlp f64`), which `Model::accumulate` takes.
fn mlp_graph(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    part: &Partition,
    rows: &[usize],
    input: Input,
) {
    let mut config = Config::default();
    config.model.kind = ModelName::new("mlp");
    config.model.set_param("dropout", 0.5);
    let Model::Net(net) = Model::new(&config, input).unwrap() else {
        unreachable!("the mlp is a network")
    };
    let theta = net.initial_theta(1);
    let mut grad = vec![0.0; net.dim()];
    let key = StepKey {
        seed: 1,
        partition: 0,
        iteration: 0,
    };
    group.bench_function("mlp f64 graph", |b| {
        b.iter(|| {
            black_box(
                net.accumulate_by_graph(part, rows, &theta, &mut grad, key)
                    .unwrap(),
            )
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = networks
}

fn main() {
    // As the binary runs: one thread, the allocator keeping freed memory.
    gradcode::process_setup::init();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
