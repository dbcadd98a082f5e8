//! The tests of `csv.rs` that go through a `DataPlan` (a child of
//! `csv.rs`, so that `csv.rs` does not import the plan that imports it).

use std::path::Path;

use crate::learn::data::DataPlan;
use crate::learn::data::plan::testing::{bad_file, config, scratch, write};

#[test]
fn malformed_rows_are_reported_as_file_and_line() {
    let e = bad_file("d.csv", "csv", "y,a,b\n1,2,3\n1,2\n", "least-squares");
    assert!(
        e.to_string().contains("d.csv:3: has 1 feature cells"),
        "{e}"
    );
    let e = bad_file("e.csv", "csv", "y,a\n1,nan\n", "least-squares");
    assert!(
        e.to_string()
            .contains("e.csv:2: cell 2 `nan` is not a number"),
        "{e}"
    );
    let e = bad_file("g.csv", "csv", "y,a\n", "least-squares");
    assert!(e.to_string().contains("has no data rows"), "{e}");
}

#[test]
fn quoted_cells_and_crlf_lines_load_like_plain_csv() {
    let dir = scratch();
    let plain = write(
        &dir,
        "plain.csv",
        "y,a,b\n1,0.5,2\n-1,1.5,3\n1,2,-4\n-1,0,1\n2,3,5\n",
    );
    // The same rows: quoted cells (a header name with a comma), CRLF
    // line ends, a comment with a quote, a blank line, spaces, no last line end.
    let quoted = write(
        &dir,
        "quoted.csv",
        "\"y\",\"a, first\",\"b\"\r\n# a \"comment\", here\r\n\"1\",0.5,\"2\"\r\n\r\n-1, 1.5 ,3\r\n\"1\",\"2\",\"-4\"\r\n-1,0,1\r\n2,3,5",
    );
    let load = |path: &Path| {
        let c = config(&format!(
            "workers = 2\n[data]\nkind = \"csv\"\npath = \"{}\"\nstandardize = false\n",
            path.display()
        ));
        let plan = DataPlan::new(&c, 2).unwrap();
        (
            plan.features(),
            plan.load(&[0, 1]).unwrap(),
            plan.load_test().unwrap(),
        )
    };
    let (fa, a, ta) = load(&plain);
    let (fb, b, tb) = load(&quoted);
    assert_eq!(fa, 2);
    assert_eq!(fa, fb);
    assert_eq!(a, b);
    assert_eq!(ta, tb);
}

#[test]
fn a_malformed_csv_row_is_named_by_its_line() {
    // The quoted header name spans lines 1 and 2; line 4 is blank.
    let e = bad_file(
        "q.csv",
        "csv",
        "\"y\",\"a\nb\"\r\n1,2\r\n\r\n1,\"x\"\r\n",
        "least-squares",
    );
    assert!(
        e.to_string()
            .contains("q.csv:5: cell 2 `x` is not a number"),
        "{e}"
    );
    let e = bad_file("w.csv", "csv", "y,a\r\n1,2\r\n1,2,3\r\n", "least-squares");
    assert!(
        e.to_string().contains("w.csv:3: has 2 feature cells"),
        "{e}"
    );
}
