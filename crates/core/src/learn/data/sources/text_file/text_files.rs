//! The tests of `text_file.rs` that go through a `DataPlan`: LIBSVM and
//! CSV files planned, loaded and standardised (a child of `text_file.rs`,
//! so that it does not import the plan that imports it).

use std::path::Path;

use crate::config::{DataFormat, DataKind};
use crate::learn::data::plan::testing::{bad_file, breast_cancer, config, scratch, shared, write};
use crate::learn::data::{DataPlan, Partition, Storage, choose_storage};
use crate::learn::sparse::Features;

#[test]
fn libsvm_file_loads_split_and_standardised() {
    let c = breast_cancer(4, "test_fraction = 0.25\n");
    let plan = DataPlan::new(&c, 4).unwrap();
    assert_eq!(plan.features(), 30);
    assert_eq!(plan.train_samples() + plan.test_samples(), 569);
    assert_eq!(plan.test_samples(), 142);
    let parts = plan.load(&[0, 1, 2, 3]).unwrap();
    assert_eq!(
        parts.iter().map(Partition::len).sum::<usize>(),
        plan.train_samples()
    );
    // Standardised over the training rows: every feature has mean 0, std 1.
    for j in 0..30 {
        let values: Vec<f64> = parts
            .iter()
            .flat_map(|p| p.x.to_dense().column(j).to_vec())
            .collect();
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        assert!(
            mean.abs() < 1e-9 && (var - 1.0).abs() < 1e-9,
            "feature {j}: {mean} {var}"
        );
    }
    let test = plan.load_test().unwrap();
    assert_eq!(test.len(), 142);
}

#[test]
fn a_column_whose_statistics_overflow_is_named_as_the_cause() {
    let rows = |f: &dyn Fn(usize) -> String| (0..40).map(f).collect::<String>();
    // CSV: the variance of column 3 overflows (its mean is 0).
    let spread = rows(&|i| format!("{i},0.5,{}1e200\n", if i % 2 == 0 { "-" } else { "" }));
    let e = bad_file("spread.csv", "csv", &spread, "least-squares");
    assert!(e.field.ends_with("spread.csv"), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("column 3 (feature 2) cannot be standardised: its variance"),
        "{e}"
    );
    assert!(text.contains("values up to 1.000e200"), "{e}");
    assert!(text.contains("data.standardize = false"), "{e}");
    assert!(!text.contains("diverged"), "{e}");
    // LIBSVM: feature 4 swings between ±1.7e308 (a constant 1.7e308 is
    // fine: the streaming mean stays finite and the spread is 0).
    let large = rows(&|i| format!("{i} 1:0.5 4:{}1.7e308\n", if i % 2 == 0 { "-" } else { "" }));
    let e = bad_file("large.libsvm", "libsvm", &large, "least-squares");
    assert!(
        e.to_string()
            .contains("feature 4 cannot be standardised: its "),
        "{e}"
    );
    // The same file unstandardised loads (the values are finite).
    let dir = scratch();
    let path = write(&dir, "spread.csv", &spread);
    let c = config(&format!(
        "workers = 1\n[data]\nkind = \"csv\"\npath = \"{}\"\nstandardize = false\n",
        path.display()
    ));
    assert!(DataPlan::new(&c, 1).unwrap().load(&[0]).is_ok());
}

#[test]
fn a_huge_feature_index_is_refused_before_the_matrix_is_allocated() {
    // Two tiny lines ask for a dense 2 × 10^12 matrix (16 TB): refused, naming the file.
    let e = bad_file(
        "wide.libsvm",
        "libsvm",
        "1 1:1\n-1 1000000000000:1\n",
        "least-squares",
    );
    assert!(e.field.ends_with("wide.libsvm"), "{e}");
    assert!(e.to_string().contains("1000000000000 features"), "{e}");
    assert!(e.to_string().contains("data.max_matrix_mib = 4096"), "{e}");
    // The largest index usize holds: the size computation does not overflow.
    let e = bad_file(
        "widest.libsvm",
        "libsvm",
        &format!("1 {}:1\n", usize::MAX),
        "least-squares",
    );
    assert!(
        e.to_string().contains("more than data.max_matrix_mib"),
        "{e}"
    );
}

#[test]
fn the_matrix_limit_counts_samples_times_features() {
    // 3 training rows × 2^20 features × 8 bytes = 24 MiB: over a 16 MiB limit, under 32.
    let dir = scratch();
    let path = write(&dir, "limit.libsvm", "1 1048576:1\n2 1:1\n3 2:1\n");
    let text = |mib: usize| {
        format!(
            "workers = 1\n[data]\nkind = \"libsvm\"\nformat = \"dense\"\npath = \"{}\"\ntest_fraction = 0.0\nmax_matrix_mib = {mib}\n",
            path.display()
        )
    };
    // Stored sparse (the automatic choice at this density) it takes bytes, not MiB.
    let sparse = DataPlan::new(&config(&text(16).replace("\"dense\"", "\"auto\"")), 1).unwrap();
    assert_eq!(sparse.storage(), Storage::Sparse);
    assert_eq!(sparse.load(&[0]).unwrap()[0].x.values(), 3);
    let e = DataPlan::new(&config(&text(16)), 1).unwrap_err();
    assert!(
        e.to_string()
            .contains("training matrix of 3 samples × 1048576 features"),
        "{e}"
    );
    assert!(e.to_string().contains("takes 24 MiB"), "{e}");
    let plan = DataPlan::new(&config(&text(32)), 1).unwrap();
    assert_eq!(plan.features(), 1 << 20);
}

#[test]
fn sparse_and_dense_loads_of_a_file_agree() {
    // Unstandardised: the same numbers; standardised: sparse is the dense
    // standardisation without the centre, x / std.
    let load = |format: &str, standardize: bool| {
        let c = breast_cancer(
            2,
            &format!("format = \"{format}\"\nstandardize = {standardize}\n"),
        );
        let plan = DataPlan::new(&c, 2).unwrap();
        (plan.load(&[0, 1]).unwrap(), plan.load_test().unwrap(), plan)
    };
    let (dense, dense_test, _) = load("dense", false);
    let (sparse, sparse_test, plan) = load("sparse", false);
    assert_eq!(plan.storage(), Storage::Sparse);
    for (d, s) in dense.iter().zip(&sparse) {
        assert!(matches!(s.x, Features::Sparse(_)));
        assert_eq!(d.x.to_dense(), s.x.to_dense());
        assert_eq!(d.y, s.y);
    }
    assert_eq!(dense_test.x.to_dense(), sparse_test.x.to_dense());
    let (scaled, _, plan) = load("sparse", true);
    let s = plan.standardization().unwrap().unwrap();
    assert!(!s.centers(), "sparse data is not centred");
    for (d, p) in dense.iter().zip(&scaled) {
        let expected = d.x.to_dense() / ndarray::ArrayView1::from(&s.scale);
        let got = p.x.to_dense();
        assert!((&got - &expected).iter().all(|v| v.abs() <= 1e-12));
    }
}

#[test]
fn a_large_mean_offset_is_standardised_accurately() {
    // Feature 1 = 1e8 + noise in [-1, 1): the old naive pass would lose it.
    let rows: Vec<String> = (0..2000)
        .map(|i| {
            let noise = ((i * 7919 + 13) % 2000) as f64 / 1000.0 - 1.0;
            format!("{} 1:{} 2:{}", i % 2, 1e8 + noise, noise)
        })
        .collect();
    let dir = scratch();
    let path = write(&dir, "offset.libsvm", &(rows.join("\n") + "\n"));
    let c = config(&format!(
        "workers = 2\n[data]\nkind = \"libsvm\"\nformat = \"dense\"\npath = \"{}\"\ntest_fraction = 0.0\n",
        path.display()
    ));
    let plan = DataPlan::new(&c, 2).unwrap();
    let parts = plan.load(&[0, 1]).unwrap();
    for j in 0..2 {
        let values: Vec<f64> = parts
            .iter()
            .flat_map(|p| p.x.to_dense().column(j).to_vec())
            .collect();
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        assert!(
            mean.abs() < 1e-6 && (var - 1.0).abs() < 1e-6,
            "{j}: {mean} {var}"
        );
    }
    // Both features are the same noise: standardised, they coincide.
    for p in &parts {
        let x = p.x.to_dense();
        for r in x.rows() {
            assert!((r[0] - r[1]).abs() < 1e-6, "{r}");
        }
    }
}

#[test]
fn csv_and_libsvm_of_the_same_data_agree() {
    let (csv, svm) = (shared("diabetes.csv"), shared("diabetes.libsvm"));
    let load = |kind: &str, path: &str| {
        let c = config(&format!(
            "workers = 2\n[data]\nkind = \"{kind}\"\npath = \"{path}\"\nstandardize = false\n"
        ));
        let plan = DataPlan::new(&c, 2).unwrap();
        (
            plan.features(),
            plan.load(&[0, 1]).unwrap(),
            plan.load_test().unwrap(),
        )
    };
    let (fa, a, ta) = load("csv", &csv);
    let (fb, b, tb) = load("libsvm", &svm);
    assert_eq!(fa, 10);
    assert_eq!(fa, fb);
    for (p, q) in a.iter().zip(&b) {
        assert!(
            (&p.x.to_dense() - &q.x.to_dense())
                .iter()
                .all(|v| v.abs() < 1e-9)
        );
        assert_eq!(p.y, q.y);
    }
    assert_eq!(ta.y, tb.y);
}

#[test]
fn files_that_end_mid_line_are_read_or_refused_at_that_line() {
    // A last line without a newline is a line; one cut inside a pair or a number is refused.
    let e = bad_file("t1.libsvm", "libsvm", "1 1:0.5\n-1 2:", "least-squares");
    assert!(
        e.to_string()
            .contains("t1.libsvm:2: value `` of feature 2 is not a number"),
        "{e}"
    );
    let e = bad_file("t2.libsvm", "libsvm", "1 1:0.5\n-1 2", "least-squares");
    assert!(
        e.to_string()
            .contains("t2.libsvm:2: `2` is not of the form"),
        "{e}"
    );
    let e = bad_file("t3.csv", "csv", "y,a\n1,2\n1,2e", "least-squares");
    assert!(e.to_string().contains("t3.csv:3: cell 2 `2e`"), "{e}");
    let e = bad_file("t4.csv", "csv", "y,a\n1,2\n1", "least-squares");
    assert!(
        e.to_string().contains("t4.csv:3: has 0 feature cells"),
        "{e}"
    );
}

#[test]
fn auto_format_follows_the_density() {
    let dir = scratch();
    let sparse = write(&dir, "auto-sparse.libsvm", "1 1:1\n-1 9:2\n1 3:1\n1 5:1\n");
    let dense = write(
        &dir,
        "auto-dense.libsvm",
        "1 1:1 2:2\n-1 1:2 2:1\n1 2:1\n1 1:3\n",
    );
    let plan = |path: &Path, format: &str| {
        let c = config(&format!(
            "workers = 1\n[data]\nkind = \"libsvm\"\nformat = \"{format}\"\npath = \"{}\"\n",
            path.display()
        ));
        DataPlan::new(&c, 1).unwrap()
    };
    let p = plan(&sparse, "auto");
    assert!((p.density() - 4.0 / 36.0).abs() < 1e-15);
    assert_eq!(p.storage(), Storage::Sparse);
    let p = plan(&dense, "auto");
    assert!((p.density() - 6.0 / 8.0).abs() < 1e-15);
    assert_eq!(p.storage(), Storage::Dense);
    assert_eq!(plan(&dense, "sparse").storage(), Storage::Sparse);
    assert_eq!(plan(&sparse, "dense").storage(), Storage::Dense);
    assert_eq!(
        choose_storage(DataFormat::Auto, DataKind::Csv, Some(0.01)),
        Storage::Dense,
        "CSV is dense text: dense unless asked"
    );
}
