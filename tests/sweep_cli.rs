//! `gradcode sweep` end to end: every combination runs or is skipped with
//! its reason, each row is exactly what `simulate` gives for that variant,
//! the table is ranked, written whole, and never replaces a file unasked.

mod common;

use common::{assert_rejected, gradcode, json, stderr};
use std::path::PathBuf;

fn dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sweep-cli");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const SHORT: [&str; 4] = ["--trials", "3", "--iterations", "40"];

#[test]
fn a_grid_with_invalid_combinations_runs_the_rest_and_says_why() {
    let mut args = vec![
        "sweep",
        "--json",
        "--grid",
        "scheme.load=2,5",
        "--grid",
        "scheme.clusters=2,4",
        "--schemes",
        "gc-sc,is-gc",
        "--set",
        "scheme.wait_for=9",
    ];
    args.extend(SHORT);
    let out = gradcode(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    let rows = v["rows"].as_array().unwrap();
    let skipped = v["skipped"].as_array().unwrap();
    // gc-sc: 4 combinations, load 5 > l = 12/4 = 3 invalid. is-gc reads
    // scheme.load but not scheme.clusters: clusters=4 repeats clusters=2.
    assert_eq!(rows.len() + skipped.len(), 8, "{v}");
    let invalid: Vec<_> = skipped
        .iter()
        .filter(|s| s["reason"].as_str().unwrap().starts_with("scheme.load = 5"))
        .collect();
    assert_eq!(invalid.len(), 1, "{v}");
    assert_eq!(invalid[0]["scheme"], "gc-sc");
    assert_eq!(invalid[0]["settings"]["scheme.clusters"], "4");
    let duplicates = skipped
        .iter()
        .filter(|s| {
            s["reason"]
                .as_str()
                .unwrap()
                .contains("does not read scheme.clusters")
        })
        .count();
    assert_eq!(duplicates, 2, "{v}");
    // Ranked by mean iteration time, 1 = fastest.
    let means: Vec<f64> = rows
        .iter()
        .map(|r| r["mean_iteration_time"].as_f64().unwrap())
        .collect();
    assert!(means.windows(2).all(|w| w[0] <= w[1]), "{means:?}");
    assert_eq!(rows[0]["rank"], 1);

    // Each row is what `simulate` gives for that variant.
    for row in rows {
        let scheme = row["scheme"].as_str().unwrap();
        let mut sets = vec![
            "scheme.wait_for=9".to_string(),
            format!("scheme.kind=\"{scheme}\""),
            format!("simulate.compare=[\"{scheme}\"]"),
            format!("simulate.baseline=\"{scheme}\""),
        ];
        for (k, value) in row["settings"].as_object().unwrap() {
            sets.push(format!("{k}={}", value.as_str().unwrap()));
        }
        let mut sim = vec!["simulate", "--json"];
        sim.extend(SHORT);
        for s in &sets {
            sim.extend(["--set", s.as_str()]);
        }
        let s = json(&gradcode(&sim));
        assert_eq!(
            s["schemes"][0]["mean_iteration_time"], row["mean_iteration_time"],
            "{row}"
        );
        assert_eq!(s["schemes"][0]["p99"], row["p99"], "{row}");
        assert_eq!(
            s["schemes"][0]["lower_bound"]["mean_iteration_time"]
                .as_f64()
                .map(serde_json::Value::from)
                .unwrap_or(serde_json::Value::Null),
            row["lower_bound"],
            "{row}"
        );
    }
}

#[test]
fn the_csv_table_is_written_whole_and_not_replaced_unasked() {
    let csv = dir().join("table.csv");
    let _ = std::fs::remove_file(&csv);
    let mut args = vec![
        "sweep",
        "--grid",
        "scheme.load=1,2,3",
        "--schemes",
        "gc-sc",
        "--out",
        csv.to_str().unwrap(),
    ];
    args.extend(SHORT);
    let out = gradcode(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "rank,scheme,scheme.load,mean_iteration_time,ci95,p50,p99,recovered_fraction,mean_decode_error,messages_per_iteration,lower_bound"
    );
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[1].starts_with("1,gc-sc,"), "{text}");
    // A second run refuses the existing file, leaving it as it was.
    let again = gradcode(&args);
    assert_rejected("existing --out", &again, "--out");
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), text);
    for (name, bad, field) in [
        ("no grid", vec!["sweep"], "--grid"),
        (
            "grid without values",
            vec!["sweep", "--grid", "scheme.load"],
            "--grid",
        ),
        (
            "unknown scheme",
            vec!["sweep", "--grid", "scheme.load=2", "--schemes", "gc-nope"],
            "--schemes",
        ),
        (
            "table format",
            vec!["sweep", "--grid", "scheme.load=2", "--out", "t.txt"],
            "--out",
        ),
    ] {
        assert_rejected(name, &gradcode(&bad), field);
    }
}

/// A grid whose product of axes exceeds 10,000 variants is refused before
/// any variant runs (three 2000-value axes reached 4.6 GB in 8 s).
#[test]
fn a_grid_of_too_many_variants_is_refused_up_front() {
    let values = (1..=2000)
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let (a, b, c) = (
        format!("seed={values}"),
        format!("simulate.trials={values}"),
        format!("simulate.iterations={values}"),
    );
    let o = gradcode(&["sweep", "--grid", &a, "--grid", &b, "--grid", &c]);
    assert_rejected("2000^3 variants", &o, "--grid");
    assert!(stderr(&o).contains("2000 x 2000 x 2000"), "{}", stderr(&o));
}

/// A grid whose every variant is refused is bad input (it exited 0 with
/// an empty table), and a value with an unclosed bracket is refused, not
/// taken as a string (issue 27, defect 12).
#[test]
fn a_grid_that_runs_nothing_or_does_not_parse_is_refused() {
    let o = gradcode(&[
        "sweep",
        "--grid",
        "scheme.nokey=1,2",
        "--trials",
        "2",
        "--iterations",
        "10",
    ]);
    assert_rejected("unknown key", &o, "--grid");
    assert!(
        stderr(&o).contains("every one of its 2 variants was refused"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("scheme.nokey: unknown key"),
        "{}",
        stderr(&o)
    );
    let o = gradcode(&["sweep", "--grid", "scheme.load=[1,2"]);
    assert_rejected("unclosed bracket", &o, "--grid");
    assert!(stderr(&o).contains("unclosed"), "{}", stderr(&o));
}

/// `scheme.kind` is an axis (issue 25: `--grid scheme.kind=uncoded,gc-dc`
/// printed uncoded's time twice, once labelled gc-dc): each row is labelled
/// by the scheme that ran and equals `simulate` of that scheme; a row shows
/// only the keys its scheme reads; giving `--schemes` too, or an axis of a
/// key sweep sets itself, is refused.
#[test]
fn a_scheme_kind_axis_runs_and_labels_each_scheme() {
    let mut args = vec![
        "sweep",
        "--json",
        "--grid",
        "scheme.kind=uncoded,gc-dc",
        "--grid",
        "scheme.load=2,3",
        "--set",
        "scheme.clusters=4",
    ];
    args.extend(SHORT);
    let out = gradcode(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    let rows = v["rows"].as_array().unwrap();
    // uncoded does not read scheme.load: load 3 repeats load 2.
    assert_eq!(rows.len(), 3, "{v}");
    let mut means = std::collections::BTreeMap::new();
    for row in rows {
        let scheme = row["scheme"].as_str().unwrap();
        let settings = row["settings"].as_object().unwrap();
        assert!(!settings.contains_key("scheme.kind"), "{row}");
        assert_eq!(
            settings.contains_key("scheme.load"),
            scheme == "gc-dc",
            "{row}"
        );
        let mut sim = vec!["simulate".to_string(), "--json".to_string()];
        sim.extend(SHORT.iter().map(|s| s.to_string()));
        let mut sets = vec![
            "scheme.clusters=4".to_string(),
            format!("scheme.kind=\"{scheme}\""),
            format!("simulate.compare=[\"{scheme}\"]"),
        ];
        for (k, value) in settings {
            sets.push(format!("{k}={}", value.as_str().unwrap()));
        }
        for s in sets {
            sim.extend(["--set".to_string(), s]);
        }
        let sim: Vec<&str> = sim.iter().map(String::as_str).collect();
        let s = json(&gradcode(&sim));
        assert_eq!(s["schemes"][0]["name"], scheme, "{s}");
        assert_eq!(
            s["schemes"][0]["mean_iteration_time"], row["mean_iteration_time"],
            "{row}"
        );
        means.insert(
            format!("{scheme} {settings:?}"),
            row["mean_iteration_time"].as_f64().unwrap(),
        );
    }
    let distinct: std::collections::BTreeSet<u64> = means.values().map(|m| m.to_bits()).collect();
    assert_eq!(distinct.len(), 3, "every row its own time: {means:?}");
    for (bad, field) in [
        (vec!["--schemes", "gc-sc"], "--grid"),
        (vec!["--grid", "simulate.baseline=\"a\",\"b\""], "--grid"),
    ] {
        let mut a = vec!["sweep", "--grid", "scheme.kind=uncoded,gc-dc"];
        a.extend(bad);
        a.extend(SHORT);
        assert_rejected("sweep", &gradcode(&a), field);
    }
}
