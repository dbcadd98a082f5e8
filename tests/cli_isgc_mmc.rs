//! The command line for is-gc, gc-mmc, uc-mmc and gc-partial: explain's JSON
//! keys (workers_used, partitions_recovered, recovered_fraction, messages),
//! multi-message arrival lists, check's accuracy verdict, and bad input.

mod common;

use common::{assert_rejected, gradcode, json};
use std::path::PathBuf;

fn write_config(name: &str, text: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-isgc-mmc");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

fn ids(v: &serde_json::Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

fn rejected(args: &[&str], field: &str) {
    assert_rejected(&format!("{args:?}"), &gradcode(args), field);
}

const ISGC: &str =
    "workers = 12\n[scheme]\nkind = \"is-gc\"\nload = 3\nplacement = \"cr\"\nwait_for = 8\n";

#[test]
fn explain_is_gc_reports_workers_used_and_partitions_recovered() {
    let path = write_config("isgc-cr", ISGC);
    let v = json(&gradcode(&[
        "explain",
        "--config",
        path.to_str().unwrap(),
        "--received",
        "1,2,3,5,9,12",
        "--json",
    ]));
    // Among {1,2,3,5,9,12} with c = 3 on a 12-cycle the maximum is 3 workers.
    let used = ids(&v["workers_used"]);
    assert_eq!(used.len(), 3, "{v}");
    let mut partitions: Vec<u64> = used
        .iter()
        .flat_map(|&w| (0..3).map(move |j| (w - 1 + j) % 12 + 1))
        .collect();
    partitions.sort_unstable();
    assert_eq!(ids(&v["partitions_recovered"]), partitions);
    assert_eq!(v["recovered_fraction"], 0.75);
    assert_eq!(v["decodable"], true);
    assert_eq!(v["messages_received"], 6);
    assert_eq!(v["messages_used"], 3);
    assert_eq!(ids(&v["recovered_partitions"]), partitions);
}

#[test]
fn explain_is_gc_stops_at_the_fastest_w() {
    let path = write_config("isgc-w", ISGC);
    let v = json(&gradcode(&[
        "explain",
        "--config",
        path.to_str().unwrap(),
        "--set",
        "scheme.wait_for=2",
        "--received",
        "1,7,4",
        "--json",
    ]));
    assert_eq!(ids(&v["used"]), vec![1, 7]);
    assert_eq!(ids(&v["workers_used"]), vec![1, 7]);
    assert_eq!(v["recovered_fraction"], 0.5);
}

#[test]
fn explain_gc_mmc_example_1_counts_a_repeated_codeword_once() {
    let text = "workers = 6\n[scheme]\nkind = \"gc-mmc\"\nload = 3\norder = 2\n";
    let path = write_config("mmc-example1", text);
    let args = |received: &'static str| {
        vec![
            "explain".to_string(),
            "--config".to_string(),
            path.to_str().unwrap().to_string(),
            "--received".to_string(),
            received.to_string(),
            "--json".to_string(),
        ]
    };
    let run = |received| {
        let a = args(received);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        json(&gradcode(&a))
    };
    let v = run("1,1,2,2,4,4");
    assert_eq!(v["decodable"], true);
    assert_eq!(v["messages_received"], 6);
    assert_eq!(v["messages_used"], 5);
    assert_eq!(v["recovered_fraction"], 1.0);
    let v = run("1,1,2,2,4");
    assert_eq!(v["decodable"], false);
    let a = args("1,1,1");
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    rejected(&a, "--received");
}

#[test]
fn check_reports_the_uncorrelated_accuracy_at_the_papers_size() {
    let text = "workers = 40\n[scheme]\nkind = \"gc-mmc\"\nload = 10\nclusters = 4\ndesign = \"uncorrelated\"\norders = [6, 8, 10]\n";
    let path = write_config("mmc-paper", text);
    let v = json(&gradcode(&[
        "check",
        "--config",
        path.to_str().unwrap(),
        "--json",
        "--samples",
        "50",
    ]));
    assert_eq!(v["exact_decoding"], true);
    assert_eq!(v["messages_per_worker"], 3);
    let acc = &v["decoding_accuracy"];
    assert!(
        acc["worst_relative_error"].as_f64().unwrap() < 1e-6,
        "{acc}"
    );
    assert_eq!(v["amplification"]["failed"], 0);
    let text = String::from_utf8(
        gradcode(&[
            "check",
            "--config",
            path.to_str().unwrap(),
            "--samples",
            "10",
        ])
        .stdout,
    )
    .unwrap();
    assert!(
        text.contains("f64 decoding exact to 1e-6 relative"),
        "{text}"
    );
}

#[test]
fn check_works_for_every_new_kind() {
    for (kind, extra, worst, best) in [
        (
            "is-gc",
            &["scheme.load=3", "scheme.deadline=0.5"][..],
            11,
            11,
        ),
        (
            "is-gc",
            &["scheme.placement=fr", "scheme.load=3", "scheme.wait_for=9"][..],
            3,
            3,
        ),
        (
            "is-gc",
            &[
                "scheme.placement=hr",
                "scheme.load=3",
                "scheme.groups=3",
                "scheme.c1=2",
                "scheme.c2=1",
                "scheme.wait_for=6",
            ][..],
            6,
            6,
        ),
        ("gc-mmc", &["scheme.load=3", "scheme.order=2"][..], 2, 8),
        (
            "gc-mmc",
            &[
                "scheme.load=3",
                "scheme.design=hybrid",
                "scheme.orders=[2, 3]",
            ][..],
            2,
            8,
        ),
        ("uc-mmc", &["scheme.load=3"][..], 2, 8),
        (
            "gc-partial",
            &["scheme.load=2", "scheme.slowdown=3.0"][..],
            1,
            1,
        ),
    ] {
        let set_kind = format!("scheme.kind={kind}");
        let mut args = vec!["check", "--json", "--samples", "20", "--set", &set_kind];
        for e in extra {
            args.extend(["--set", e]);
        }
        let v = json(&gradcode(&args));
        assert_eq!(v["scheme"], kind);
        assert_eq!(v["amplification"]["failed"], 0, "{kind} {extra:?}");
        let t = &v["tolerated_stragglers"];
        assert_eq!(
            (t["worst"].as_u64().unwrap(), t["best"].as_u64().unwrap()),
            (worst, best),
            "{kind} {extra:?}"
        );
    }
}

#[test]
fn invalid_new_scheme_keys_exit_2_naming_the_key() {
    for (sets, field) in [
        (&["scheme.kind=is-gc"][..], "scheme.wait_for"),
        (
            &[
                "scheme.kind=is-gc",
                "scheme.wait_for=4",
                "scheme.deadline=-1",
            ][..],
            "scheme.deadline",
        ),
        (
            &[
                "scheme.kind=is-gc",
                "scheme.wait_for=4",
                "scheme.placement=fr",
                "scheme.load=5",
            ][..],
            "scheme.load",
        ),
        (
            &[
                "scheme.kind=is-gc",
                "scheme.wait_for=4",
                "scheme.placement=hr",
                "scheme.groups=5",
            ][..],
            "scheme.groups",
        ),
        (
            &[
                "scheme.kind=is-gc",
                "scheme.wait_for=4",
                "scheme.placement=hq",
            ][..],
            "scheme.placement",
        ),
        (
            &["scheme.kind=gc-mmc", "scheme.order=3"][..],
            "scheme.order",
        ),
        (
            &["scheme.kind=gc-mmc", "scheme.design=uncorrelated"][..],
            "scheme.orders",
        ),
        (
            &[
                "scheme.kind=gc-mmc",
                "scheme.design=hybrid",
                "scheme.orders=[1]",
            ][..],
            "scheme.load",
        ),
        (
            &[
                "scheme.kind=gc-partial",
                "scheme.slowdown=1.3",
                "scheme.load=2",
            ][..],
            "scheme.slowdown",
        ),
    ] {
        let mut args = vec!["check"];
        for s in sets {
            args.extend(["--set", s]);
        }
        rejected(&args, field);
    }
}

/// Multi-message decoding is attributable: every coefficient of `explain
/// --json` names the message and codeword it weighs, and the weighted sum of
/// those codewords (from `check --json`) is 1 on every partition (a·B = 1),
/// for gc-mmc (003's Example 1), uc-mmc and gc-partial.
#[test]
fn explain_coefficients_rebuild_the_sum_for_multi_message_schemes() {
    for (name, text, received) in [
        (
            "attr-gc-mmc",
            "workers = 6\n[scheme]\nkind = \"gc-mmc\"\nload = 3\norder = 2\n",
            "1,1,2,2,4,4",
        ),
        (
            "attr-uc-mmc",
            "workers = 6\n[scheme]\nkind = \"uc-mmc\"\nload = 3\n",
            "1,1,1,2,2,2,3,3,3,4,4,4,5,5,5,6,6,6",
        ),
        (
            "attr-gc-partial",
            "workers = 6\n[scheme]\nkind = \"gc-partial\"\nload = 2\nslowdown = 2.0\n",
            "1,2,3,4,5,6,1,2,3,4,5,6",
        ),
    ] {
        let path = write_config(name, text);
        let config = path.to_str().unwrap();
        let check = json(&gradcode(&["check", "--config", config, "--json"]));
        let v = json(&gradcode(&[
            "explain",
            "--config",
            config,
            "--received",
            received,
            "--json",
        ]));
        assert_eq!(v["decodable"], true, "{name}: {v}");
        let partitions = check["partitions"].as_u64().unwrap() as usize;
        let mut sum = vec![0.0; partitions];
        let coefficients = v["coefficients"].as_array().unwrap();
        assert!(!coefficients.is_empty(), "{name}");
        for c in coefficients {
            let worker = c["worker"].as_u64().unwrap() as usize;
            let message = c["message"].as_u64().expect("a message index") as usize;
            let codeword = &check["workers"][worker - 1]["codewords"][message - 1];
            assert_eq!(codeword["cluster"], c["codeword"]["cluster"], "{name}: {c}");
            assert_eq!(codeword["index"], c["codeword"]["index"], "{name}: {c}");
            let weight = c["coefficient"].as_f64().unwrap();
            let parts = codeword["partitions"].as_array().unwrap();
            let coefs = codeword["coefficients"].as_array().unwrap();
            for (p, b) in parts.iter().zip(coefs) {
                sum[p.as_u64().unwrap() as usize - 1] += weight * b.as_f64().unwrap();
            }
        }
        for (p, s) in sum.iter().enumerate() {
            assert!((s - 1.0).abs() < 1e-9, "{name}: partition {}: {s}", p + 1);
        }
    }
}
