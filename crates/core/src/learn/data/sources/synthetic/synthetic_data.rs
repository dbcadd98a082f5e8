//! The tests of `synthetic.rs` that go through a `DataPlan` (a child of
//! `synthetic.rs`, so that `synthetic.rs` does not import the plan that
//! imports it).

use crate::config::parse;
use crate::learn::data::plan::testing::{WithSeed, config, onehot};
use crate::learn::data::{DataPlan, Partition, Storage};
use crate::learn::sparse::Features;

#[test]
fn synthetic_data_does_not_depend_on_the_partitioning() {
    let c = config("workers = 4\n[data]\ntrain_samples = 12\nfeatures = 5\n");
    let by4 = DataPlan::new(&c, 4).unwrap();
    let by3 = DataPlan::new(&c, 3).unwrap();
    let a = by4.load(&[1]).unwrap().remove(0); // samples 3..6
    let b = by3.load(&[0]).unwrap().remove(0); // samples 0..4
    assert_eq!(a.x.to_dense().row(0), b.x.to_dense().row(3));
    assert_eq!(a.y[0], b.y[3]);
    assert_eq!(
        by4.load(&[2, 1]).unwrap()[1],
        a,
        "same partition, same data, in any request order"
    );
}

#[test]
fn test_samples_differ_from_training_samples() {
    let c = config("workers = 2\n[data]\ntrain_samples = 10\ntest_samples = 10\nfeatures = 3\n");
    let plan = DataPlan::new(&c, 2).unwrap();
    let train = plan.load(&[0]).unwrap().remove(0);
    let test = plan.load_test().unwrap();
    for i in 0..5 {
        assert_ne!(train.x.to_dense().row(i), test.x.to_dense().row(i));
    }
}

#[test]
fn synthetic_linear_labels_follow_the_true_model() {
    let c = config("workers = 2\n[data]\ntrain_samples = 50\nfeatures = 8\nnoise_std = 0.0\n");
    let plan = DataPlan::new(&c, 2).unwrap();
    let theta = plan.true_model().unwrap();
    for part in plan.load(&[0, 1]).unwrap() {
        let x = part.x.to_dense();
        for (row, y) in x.rows().into_iter().zip(&part.y) {
            let dot: f64 = row.iter().zip(&theta).map(|(a, b)| a * b).sum();
            assert!((dot - y).abs() < 1e-12);
        }
    }
}

#[test]
fn synthetic_logistic_labels_are_signs() {
    let c = config(
        "workers = 2\n[data]\nkind = \"synthetic-logistic\"\ntrain_samples = 200\nfeatures = 4\n[model]\nloss = \"logistic\"\n",
    );
    let plan = DataPlan::new(&c, 2).unwrap();
    let parts = plan.load(&[0, 1]).unwrap();
    let positives = parts
        .iter()
        .flat_map(|p| &p.y)
        .filter(|&&y| y == 1.0)
        .count();
    assert!(
        parts
            .iter()
            .flat_map(|p| &p.y)
            .all(|&y| y == 1.0 || y == -1.0)
    );
    assert!(
        positives > 20 && positives < 180,
        "both classes occur: {positives}"
    );
}

#[test]
fn synthetic_data_larger_than_the_limit_is_refused_by_validation() {
    let e = parse(
        "workers = 2\n[data]\ntrain_samples = 1000000\nfeatures = 1000000\n",
        "t.toml",
        &[],
    )
    .unwrap_err();
    assert_eq!(e.field, "data.train_samples");
    assert!(
        e.to_string()
            .contains("7629395 MiB, more than data.max_matrix_mib = 4096"),
        "{e}"
    );
    let e = parse(
        &format!(
            "workers = 2\n[data]\ntest_samples = {}\nfeatures = 3\n",
            i64::MAX
        ),
        "t.toml",
        &[],
    )
    .unwrap_err();
    assert_eq!(e.field, "data.test_samples");
    let e = parse("[data]\nmax_matrix_mib = 0\n", "t.toml", &[]).unwrap_err();
    assert_eq!(e.field, "data.max_matrix_mib");
}

#[test]
fn onehot_rows_have_one_level_per_column() {
    let plan = DataPlan::new(&onehot(""), 4).unwrap();
    assert_eq!(plan.storage(), Storage::Sparse);
    let parts = plan.load(&[0, 1, 2, 3]).unwrap();
    let mut levels_seen = std::collections::HashSet::new();
    for p in &parts {
        let Features::Sparse(x) = &p.x else {
            panic!("sparse")
        };
        for i in 0..x.rows() {
            let (indices, values) = x.row(i);
            assert_eq!(indices.len(), 10);
            assert!(values.iter().all(|&v| v == 1.0));
            for (c, &j) in indices.iter().enumerate() {
                // Column c owns features 500c .. 500(c + 1).
                assert_eq!(j as usize / 500, c, "row {i}: {indices:?}");
                levels_seen.insert(j);
            }
        }
        assert!(p.y.iter().all(|&y| y == 1.0 || y == -1.0));
    }
    assert!(
        levels_seen.len() > 400,
        "many levels occur: {}",
        levels_seen.len()
    );
    let positives = parts
        .iter()
        .flat_map(|p| &p.y)
        .filter(|&&y| y == 1.0)
        .count();
    assert!(
        positives > 40 && positives < 360,
        "both classes: {positives}"
    );
    assert_eq!(plan.rows_materialised(), 400);
}

#[test]
fn onehot_data_is_reproducible_and_independent_of_the_partitioning() {
    let by4 = DataPlan::new(&onehot(""), 4).unwrap();
    let by5 = DataPlan::new(&onehot(""), 5).unwrap();
    let whole4: Vec<Partition> = by4.load(&[0, 1, 2, 3]).unwrap();
    let whole5: Vec<Partition> = by5.load(&[4, 3, 2, 1, 0]).unwrap();
    let stack = |parts: &[Partition]| {
        let mut rows: Vec<(Vec<f64>, f64)> = Vec::new();
        for p in parts {
            let x = p.x.to_dense();
            rows.extend(
                x.rows()
                    .into_iter()
                    .map(|r| r.to_vec())
                    .zip(p.y.iter().copied()),
            );
        }
        rows
    };
    let mut five = whole5.clone();
    five.sort_by_key(|p| p.id);
    assert_eq!(stack(&whole4), stack(&five));
    assert_eq!(
        by4.load(&[2]).unwrap(),
        DataPlan::new(&onehot(""), 4).unwrap().load(&[2]).unwrap()
    );
    let other = DataPlan::new(&onehot("").clone_with_seed(2), 4).unwrap();
    assert_ne!(
        other.load(&[0]).unwrap(),
        by4.load(&[0]).unwrap(),
        "the seed matters"
    );
    // Dense storage of the same data: the same numbers.
    let dense = DataPlan::new(&onehot("format = \"dense\"\n"), 4).unwrap();
    assert_eq!(dense.storage(), Storage::Dense);
    let d = dense.load(&[1]).unwrap().remove(0);
    assert!(matches!(d.x, Features::Dense(_)));
    assert_eq!(d.x.to_dense(), whole4[1].x.to_dense());
    assert_eq!(dense.load_test().unwrap().y, by4.load_test().unwrap().y);
}

#[test]
fn onehot_parameters_are_validated_naming_the_field() {
    let bad = |text: &str| parse(text, "t.toml", &[]).unwrap_err();
    let base = "workers = 2\n[data]\nkind = \"synthetic-onehot\"\n";
    let e = bad(&format!("{base}nonzeros_per_row = 0\n"));
    assert_eq!(e.field, "data.nonzeros_per_row", "{e}");
    let e = bad(&format!("{base}features = 5\nnonzeros_per_row = 6\n"));
    assert_eq!(e.field, "data.nonzeros_per_row", "{e}");
    assert!(e.to_string().contains("exceeds data.features = 5"), "{e}");
    let e = bad(&format!("{base}train_samples = 1\n"));
    assert_eq!(e.field, "data.train_samples", "{e}");
    let e = bad(&format!("{base}features = 0\n"));
    assert_eq!(e.field, "data.features", "{e}");
    let e = bad(&format!(
        "{base}features = 5000000000\nnonzeros_per_row = 1\nmax_matrix_mib = 65536\n"
    ));
    assert_eq!(e.field, "data.features", "{e}");
    assert!(e.to_string().contains("2^32"), "{e}");
    let e = bad(&format!("{base}features = 1000000000\n"));
    assert_eq!(e.field, "data.features", "{e}");
    assert!(
        e.to_string().contains("the model of 1000000000 features"),
        "{e}"
    );
    let e = bad(&format!(
        "{base}train_samples = 100000000\nnonzeros_per_row = 10\nmax_matrix_mib = 100\n"
    ));
    assert_eq!(e.field, "data.train_samples", "{e}");
    assert!(e.to_string().contains("sparse training matrix"), "{e}");
    // Dense storage of one-hot data is checked as dense.
    let e = bad(&format!(
        "{base}format = \"dense\"\ntrain_samples = 26210\nfeatures = 241915\n"
    ));
    assert_eq!(e.field, "data.train_samples", "{e}");
    assert!(e.to_string().contains("dense training matrix"), "{e}");
    let e = bad("workers = 2\n[data]\nformat = \"sparse\"\n");
    assert_eq!(e.field, "data.format", "{e}");
    let e = bad("workers = 2\n[data]\nformat = \"thin\"\n");
    assert!(e.to_string().contains("data.format"), "{e}");
}
