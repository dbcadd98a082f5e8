//! The tests of `libsvm.rs` that go through a `DataPlan` (a child of
//! `libsvm.rs`, so that `libsvm.rs` does not import the plan that imports
//! it).

use crate::learn::data::plan::testing::bad_file;

#[test]
fn malformed_lines_are_reported_as_file_and_line() {
    let e = bad_file(
        "a.libsvm",
        "libsvm",
        "1 1:0.5 2:1\n-1 1:x\n",
        "least-squares",
    );
    assert!(e.field.ends_with("a.libsvm:2"), "{e}");
    assert!(e.to_string().contains("value `x`"), "{e}");
    let e = bad_file(
        "b.libsvm",
        "libsvm",
        "1 1:0.5\n1 3:1 2:4\n",
        "least-squares",
    );
    assert!(
        e.to_string()
            .contains(":2: feature index 2 does not increase"),
        "{e}"
    );
    let e = bad_file("c.libsvm", "libsvm", "# c\n2 1:1\n", "logistic");
    assert!(e.to_string().contains(":2: label 2 is not binary"), "{e}");
    let e = bad_file("f.libsvm", "libsvm", "1 0:3\n", "least-squares");
    assert!(e.to_string().contains("1-based"), "{e}");
}
