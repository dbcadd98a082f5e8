//! Each network's gradient (reverse-mode autodiff through candle and the
//! custom convolution, pooling and linear operations) agrees with central
//! finite differences of its loss, in f64, on random inputs; and a batch's
//! gradient is the same whichever process computes it (a pure function of
//! θ, the batch and the step key), which is what makes coded sums exact.

use gradcode_core::config::{Config, ModelName};
use gradcode_core::learn::{Features, Input, Model, Partition, StepKey};
use ndarray::Array2;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// `n` random images of `shape` with labels in 0..classes.
fn random_images(n: usize, shape: [usize; 3], classes: usize, seed: u64) -> Partition {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let width: usize = shape.iter().product();
    let x = Array2::from_shape_fn((n, width), |_| rng.random::<f64>() * 2.0 - 1.0);
    Partition {
        id: 0,
        x: Features::Dense(x),
        y: (0..n)
            .map(|_| rng.random_range(0..classes) as f64)
            .collect(),
    }
}

fn model(kind: &str, shape: [usize; 3], tweak: impl Fn(&mut Config)) -> Model {
    let mut config = Config::default();
    config.model.kind = ModelName::new(kind);
    config.model.classes = 4;
    tweak(&mut config);
    Model::new(
        &config,
        Input {
            features: shape.iter().product(),
            image: Some(shape),
            partition_rows: 0,
        },
    )
    .unwrap()
}

/// The summed loss of `part` at `theta` with the step's dropout masks, and its gradient.
fn loss_and_gradient(
    model: &Model,
    part: &Partition,
    theta: &[f64],
    key: StepKey,
) -> (f64, Vec<f64>) {
    let rows: Vec<usize> = (0..part.len()).collect();
    let mut grad = vec![0.0; model.dim()];
    let loss = model
        .accumulate(part, &rows, theta, &mut grad, key)
        .unwrap();
    (loss, grad)
}

/// Central differences on `coordinates` random coordinates: each within
/// 1e-6 of the autodiff gradient, relative to the larger of the two (or to
/// 1e-3 of the gradient's largest entry, for entries near 0).
fn assert_matches_finite_differences(
    name: &str,
    model: &Model,
    part: &Partition,
    coordinates: usize,
) {
    let key = StepKey {
        seed: 9,
        partition: 2,
        iteration: 7,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    // Away from the initialisation's symmetric point, as after some training.
    let theta: Vec<f64> = model
        .initial_theta(11)
        .iter()
        .map(|v| v + 0.05 * (rng.random::<f64>() - 0.5))
        .collect();
    let (_, grad) = loss_and_gradient(model, part, &theta, key);
    let largest = grad.iter().fold(0.0f64, |m, g| m.max(g.abs()));
    assert!(largest > 0.0, "{name}: the gradient is not zero");
    let h = 1e-6;
    let mut worst = 0.0f64;
    for _ in 0..coordinates {
        let i = rng.random_range(0..theta.len());
        let (mut up, mut down) = (theta.clone(), theta.clone());
        up[i] += h;
        down[i] -= h;
        let fd = (loss_and_gradient(model, part, &up, key).0
            - loss_and_gradient(model, part, &down, key).0)
            / (2.0 * h);
        let scale = fd.abs().max(grad[i].abs()).max(1e-3 * largest);
        worst = worst.max((fd - grad[i]).abs() / scale);
    }
    assert!(
        worst <= 1e-6,
        "{name}: finite differences differ by {worst:e} (relative)"
    );
}

#[test]
fn the_mlp_gradient_matches_finite_differences() {
    let shape = [1, 5, 6];
    let m = model("mlp", shape, |c| {
        c.model.set_param("hidden", vec![7, 5]);
        c.model.set_param("dropout", 0.3);
    });
    assert_matches_finite_differences("mlp", &m, &random_images(9, shape, 4, 1), 60);
}

#[test]
fn the_cnn_gradient_matches_finite_differences() {
    let shape = [2, 17, 16];
    let m = model("cnn", shape, |c| c.model.set_param("dropout", 0.5));
    assert_matches_finite_differences("cnn", &m, &random_images(5, shape, 4, 2), 60);
}

#[test]
fn the_resnet_gradient_matches_finite_differences() {
    let shape = [3, 8, 8];
    let m = model("resnet", shape, |c| {
        c.model.set_param("resnet_blocks", vec![1, 1]);
        c.model.set_param("resnet_width", 4);
    });
    assert_matches_finite_differences("resnet", &m, &random_images(6, shape, 4, 3), 60);
}

#[test]
fn a_batch_gradient_is_a_pure_function_of_theta_the_batch_and_the_key() {
    let shape = [1, 16, 16];
    let m = model("cnn", shape, |c| c.model.set_param("dropout", 0.5));
    let part = random_images(8, shape, 4, 4);
    let theta = m.initial_theta(1);
    let key = |iteration| StepKey {
        seed: 1,
        partition: 0,
        iteration,
    };
    let (la, ga) = loss_and_gradient(&m, &part, &theta, key(3));
    let (lb, gb) = loss_and_gradient(&m, &part, &theta, key(3));
    assert_eq!(la.to_bits(), lb.to_bits());
    assert!(ga.iter().zip(&gb).all(|(a, b)| a.to_bits() == b.to_bits()));
    let (_, other) = loss_and_gradient(&m, &part, &theta, key(4));
    assert_ne!(ga, other, "another iteration draws other dropout masks");
}

#[test]
fn single_precision_stays_close_to_double() {
    let shape = [1, 16, 16];
    let part = random_images(8, shape, 4, 5);
    let f64_model = model("cnn", shape, |_| {});
    let f32_model = model("cnn", shape, |c| {
        c.model.precision = gradcode_core::config::Precision::F32
    });
    let theta = f64_model.initial_theta(1);
    let key = StepKey {
        seed: 1,
        partition: 0,
        iteration: 0,
    };
    let (_, a) = loss_and_gradient(&f64_model, &part, &theta, key);
    let (_, b) = loss_and_gradient(&f32_model, &part, &theta, key);
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let diff: Vec<f64> = a.iter().zip(&b).map(|(x, y)| x - y).collect();
    let relative = norm(&diff) / norm(&a);
    assert!(
        relative < 1e-5 && relative > 0.0,
        "f32 gradient is {relative:e} from f64"
    );
}
