//! `[network]` end to end (issue 26, item 1): `simulate`, `sweep`, `advise`,
//! `check` and `explain` read it; bad values are one line, status 2, and
//! nothing written; a section with its defaults changes no output; over a
//! slow master link `advise` ranks schemes that need more messages lower.

mod common;

use common::{assert_rejected, gradcode, json, stdout};
use std::path::PathBuf;

fn dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("network-cli");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(name: &str, text: &str) -> String {
    let path = dir().join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

const BASE: &str = r#"workers = 12
seed = 3
[scheme]
load = 3
[straggler]
model = "shifted-exponential"
alpha = 0.01
mu = 10.0
time_unit_ms = 1000.0
[data]
features = 1000000
train_samples = 24
test_samples = 8
[simulate]
trials = 4
iterations = 50
compare = ["gc-cyclic", "uncoded", "gc-mmc", "uc-mmc"]
"#;

#[test]
fn a_network_section_with_its_defaults_prints_the_same_simulation_and_sweep() {
    let absent = write("absent.toml", BASE);
    let free = write("free.toml", &format!("{BASE}[network]\n"));
    let mut a = json(&gradcode(&["simulate", "--config", &absent, "--json"]));
    let mut b = json(&gradcode(&["simulate", "--config", &free, "--json"]));
    assert!(a.get("network").is_none(), "{a}");
    assert_eq!(b["network"]["latency_s"], 0.0);
    assert_eq!(b["network"]["master_link_shared"], true);
    assert_eq!(b["network"]["message_bytes"], serde_json::Value::Null);
    // Everything else is the same, bit for bit (origin aside).
    for v in [&mut a, &mut b] {
        let o = v.as_object_mut().unwrap();
        o.remove("origin");
        o.remove("network");
    }
    assert_eq!(a, b);
    let sweep = |cfg: &str| {
        stdout(&gradcode(&[
            "sweep",
            "--config",
            cfg,
            "--grid",
            "scheme.load=2,3",
            "--schemes",
            "gc-cyclic,gc-mmc",
            "--json",
        ]))
    };
    let (x, y) = (sweep(&absent), sweep(&free));
    assert!(!x.is_empty());
    assert_eq!(
        x.replace(&absent, "CONFIG"),
        y.replace(&free, "CONFIG"),
        "sweep"
    );
}

#[test]
fn bad_network_values_are_refused_before_anything_is_written() {
    let trace = dir().join("never.h5");
    let table = dir().join("never.csv");
    for (name, section, field) in [
        ("negative latency", "latency_s = -1.0", "network.latency_s"),
        ("nan latency", "latency_s = nan", "network.latency_s"),
        ("huge latency", "latency_s = 1e300", "network.latency_s"),
        (
            "zero bandwidth",
            "worker_bandwidth_bytes_per_s = 0",
            "network.worker_bandwidth_bytes_per_s",
        ),
        (
            "negative bandwidth",
            "master_bandwidth_bytes_per_s = -5.0",
            "network.master_bandwidth_bytes_per_s",
        ),
        (
            "string bandwidth",
            "master_bandwidth_bytes_per_s = \"fast\"",
            "network.master_bandwidth_bytes_per_s",
        ),
        (
            "negative cost per message",
            "master_per_message_s = -0.5",
            "network.master_per_message_s",
        ),
        (
            "huge cost per message",
            "master_per_message_s = 1e9",
            "network.master_per_message_s",
        ),
        (
            "zero bandwidth between workers",
            "peer_bandwidth_bytes_per_s = 0",
            "network.peer_bandwidth_bytes_per_s",
        ),
        (
            "infinite bandwidth between workers",
            "peer_bandwidth_bytes_per_s = inf",
            "network.peer_bandwidth_bytes_per_s",
        ),
        ("unknown key", "jitter_s = 0.1", "network.jitter_s"),
    ] {
        let cfg = write("bad.toml", &format!("{BASE}[network]\n{section}\n"));
        let _ = std::fs::remove_file(&trace);
        let _ = std::fs::remove_file(&table);
        let runs: [Vec<&str>; 4] = [
            vec![
                "simulate",
                "--config",
                &cfg,
                "--out",
                trace.to_str().unwrap(),
            ],
            vec![
                "sweep",
                "--config",
                &cfg,
                "--grid",
                "scheme.load=2,3",
                "--out",
                table.to_str().unwrap(),
            ],
            vec!["advise", "--config", &cfg, "--schemes", "gc-cyclic"],
            vec!["check", "--config", &cfg],
        ];
        for args in runs {
            assert_rejected(&format!("{name}: {}", args[0]), &gradcode(&args), field);
        }
        assert!(!trace.exists(), "{name}: simulate wrote its trace");
        assert!(!table.exists(), "{name}: sweep wrote its table");
    }
    // A time unit so small that a valid latency overflows model time.
    let cfg = write(
        "tiny-unit.toml",
        &format!("{BASE}[network]\nlatency_s = 1.0\n").replace("1000.0", "1e-300"),
    );
    let out = gradcode(&["simulate", "--config", &cfg]);
    assert_rejected("tiny time unit", &out, "network.latency_s");
}

/// (candidate: scheme and settings, rank, messages per iteration) of `advise --json`.
fn ranking(v: &serde_json::Value) -> Vec<(String, usize, f64)> {
    v["ranking"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                format!("{} {}", c["scheme"].as_str().unwrap(), c["settings"]),
                c["rank"].as_u64().unwrap() as usize,
                c["messages_per_iteration"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn over_a_slow_master_link_advise_ranks_schemes_needing_more_messages_lower() {
    let free = write("advise-free.toml", BASE);
    // 8 MB messages over 100 MB/s: 0.08 s each, about a computation's time.
    let slow = write(
        "advise-slow.toml",
        &format!("{BASE}[network]\nmaster_bandwidth_bytes_per_s = 1e8\n"),
    );
    let advise = |cfg: &str| {
        ranking(&json(&gradcode(&[
            "advise",
            "--config",
            cfg,
            "--schemes",
            "gc-cyclic,uncoded,gc-mmc,uc-mmc",
            "--grid",
            "scheme.load=3",
            "--json",
        ])))
    };
    let (before, after) = (advise(&free), advise(&slow));
    assert!(before.len() >= 4, "{before:?}");
    let labels = |r: &[(String, usize, f64)]| {
        let mut l: Vec<String> = r.iter().map(|c| c.0.clone()).collect();
        l.sort();
        l
    };
    assert_eq!(labels(&before), labels(&after), "the same candidates");
    let rank = |r: &[(String, usize, f64)], s: &str| r.iter().find(|c| c.0 == s).unwrap().1;
    // Over the slow link the rank follows the messages the master needs:
    // an iteration that received m messages took at least m transfers of
    // 0.08 s and at most m transfers plus the slowest computation (about
    // 0.3 here, uncoded's time without a network), so 5 messages fewer
    // (0.4 s) is a better rank.
    for a in &after {
        for b in &after {
            if a.2 + 5.0 <= b.2 {
                assert!(
                    a.1 < b.1,
                    "{a:?} needs fewer messages than {b:?}: {after:?}"
                );
            }
        }
    }
    // The scheme that needs the most messages loses ground, the one that
    // needs the fewest gains, and the ranking changed.
    let most = after
        .iter()
        .max_by(|a, b| a.2.total_cmp(&b.2))
        .unwrap()
        .0
        .clone();
    let fewest = after
        .iter()
        .min_by(|a, b| a.2.total_cmp(&b.2))
        .unwrap()
        .0
        .clone();
    assert!(
        rank(&after, &most) >= rank(&before, &most),
        "{before:?} → {after:?}"
    );
    assert!(
        rank(&after, &fewest) <= rank(&before, &fewest),
        "{before:?} → {after:?}"
    );
    assert_ne!(
        before.iter().map(|c| &c.0).collect::<Vec<_>>(),
        after.iter().map(|c| &c.0).collect::<Vec<_>>(),
        "the slow link changed no rank"
    );
}

#[test]
fn check_and_explain_print_what_the_network_costs_the_messages() {
    // 12 uncoded workers, d = 999: 8000-byte messages; 10 ms each over the
    // master's link at 8e5 B/s, after a 1 ms latency.
    let text = "workers = 12\n[scheme]\nkind = \"uncoded\"\n[data]\nfeatures = 999\n\
                [network]\nlatency_s = 0.001\nmaster_bandwidth_bytes_per_s = 8e5\n";
    let cfg = write("costs.toml", text);
    let check = json(&gradcode(&["check", "--config", &cfg, "--json"]));
    let n = &check["network"];
    assert_eq!(n["message_bytes"], 8000.0);
    assert_eq!(n["messages"], 12);
    assert!(
        (n["all_messages_s"].as_f64().unwrap() - 0.121).abs() < 1e-12,
        "{n}"
    );
    assert_eq!(check["config"]["network"]["latency_s"], 0.001);
    let text_out = stdout(&gradcode(&["check", "--config", &cfg]));
    assert!(
        text_out.contains("network       latency 0.001 s, worker links unlimited, master link 8e5 B/s (shared: one message at a time); messages of 8000 bytes"),
        "{text_out}"
    );
    assert!(
        text_out.contains("[network]"),
        "the resolved config: {text_out}"
    );
    // The master's time per message is part of the links' description, in
    // check's text as in simulate's (one formatter).
    let per_message = write(
        "per-message.toml",
        &format!("{text}master_per_message_s = 0.002\n[simulate]\ntrials = 1\niterations = 2\n"),
    );
    let with = "master link 8e5 B/s (shared: one message at a time) and 2e-3 s per message; messages of 8000 bytes";
    let text_out = stdout(&gradcode(&["check", "--config", &per_message]));
    assert!(text_out.contains(with), "{text_out}");
    let sim_out = stdout(&gradcode(&["simulate", "--config", &per_message]));
    assert!(
        sim_out.contains(&with.replace("; messages", ", messages")),
        "{sim_out}"
    );
    let explain = json(&gradcode(&[
        "explain",
        "--config",
        &cfg,
        "--received",
        "1,2,3,4,5,6,7,8,9,10,11,12",
        "--json",
    ]));
    assert_eq!(explain["network"]["messages"], 12);
    let e = explain["network"]["all_messages_s"].as_f64().unwrap();
    assert!((e - 0.121).abs() < 1e-12, "{explain}");
    // Without the section, neither says anything of a network.
    let plain = write("plain.toml", "workers = 12\n[scheme]\nkind = \"uncoded\"\n");
    let check = json(&gradcode(&["check", "--config", &plain, "--json"]));
    assert!(check.get("network").is_none());
    assert!(check["config"].get("network").is_none());
    let out = stdout(&gradcode(&[
        "explain",
        "--config",
        &plain,
        "--received",
        "1,2,3,4,5,6,7,8,9,10,11,12",
    ]));
    assert!(!out.contains("network"), "{out}");
}

#[test]
fn sweep_takes_network_keys_as_grid_axes() {
    // uncoded over K = 12: the iteration is the master's link, K · 8 (d + 1)
    // / bandwidth plus at most the slowest computation; ten times the
    // bandwidth, a tenth of the link's part.
    let cfg = write("sweep-net.toml", BASE);
    let v = json(&gradcode(&[
        "sweep",
        "--config",
        &cfg,
        "--schemes",
        "uncoded",
        "--grid",
        "network.master_bandwidth_bytes_per_s=1e7,1e8,1e9",
        "--json",
    ]));
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "{v}");
    // The run without a network: uncoded's computation alone.
    let plain = json(&gradcode(&[
        "simulate",
        "--config",
        &cfg,
        "--set",
        "scheme.kind=\"uncoded\"",
        "--set",
        "simulate.compare=[]",
        "--json",
    ]));
    let compute = plain["schemes"][0]["mean_iteration_time"].as_f64().unwrap();
    for row in rows {
        let b: f64 = row["settings"]["network.master_bandwidth_bytes_per_s"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let link = 12.0 * 8.0 * 1_000_001.0 / b;
        let mean = row["mean_iteration_time"].as_f64().unwrap();
        assert!(
            mean >= link * (1.0 - 1e-12) && mean <= (link + compute) * (1.0 + 1e-12),
            "bandwidth {b}: {mean} not in [{link}, {link} + {compute}]"
        );
    }
}

#[test]
fn simulate_times_the_aggregate_train_would_use_and_says_which() {
    // gc-cyclic over 12 workers at d = 10^6 (8 MB vectors) and d = 10,
    // master link 100 Mbit/s, workers 10 Gbit/s, latency 1 ms.
    let config_with = |d: usize, aggregate: &str, extra: &str| {
        write(
            &format!(
                "aggregate-{d}-{aggregate}{}.toml",
                if extra.is_empty() { "" } else { "-peer" }
            ),
            &format!(
                "{}[runtime]\naggregate = \"{aggregate}\"\n[network]\nlatency_s = 1e-3\n\
                 worker_bandwidth_bytes_per_s = 1.25e9\nmaster_bandwidth_bytes_per_s = 1.25e7\n{extra}",
                BASE.replace("features = 1000000", &format!("features = {d}"))
                    .replace(
                        "compare = [\"gc-cyclic\", \"uncoded\", \"gc-mmc\", \"uc-mmc\"]",
                        "compare = [\"gc-cyclic\"]"
                    )
            ),
        )
    };
    let config = |d: usize, aggregate: &str| config_with(d, aggregate, "");
    let simulate = |d: usize, aggregate: &str| {
        let v = json(&gradcode(&[
            "simulate",
            "--config",
            &config(d, aggregate),
            "--json",
        ]));
        (
            v["network"]["aggregate"].as_str().unwrap().to_string(),
            v["schemes"][0]["mean_iteration_time"].as_f64().unwrap(),
        )
    };
    let (g, r) = (simulate(1_000_000, "gather"), simulate(1_000_000, "reduce"));
    assert_eq!((g.0.as_str(), r.0.as_str()), ("gather", "reduce"));
    assert!(r.1 < 0.5 * g.1, "d = 10^6: reduce {}, gather {}", r.1, g.1);
    let (g, r) = (simulate(10, "gather"), simulate(10, "reduce"));
    assert!(r.1 > g.1, "d = 10: reduce {}, gather {}", r.1, g.1);
    assert_eq!(simulate(10, "auto").0, "gather");
    assert_eq!(simulate(1_000_000, "auto").0, "reduce");
    let text = stdout(&gradcode(&[
        "simulate",
        "--config",
        &config(1_000_000, "auto"),
    ]));
    assert!(text.contains("; aggregate reduce; "), "{text}");
    // 100 Mbit/s between two workers: each of the tree's rounds takes an
    // 8 MB vector's 0.64 s more than over the 10 Gbit/s worker links; a
    // gather, which has no tree, is unchanged bit for bit.
    let peer = "peer_bandwidth_bytes_per_s = 1.25e7\n";
    let mean_with = |aggregate: &str, extra: &str| {
        json(&gradcode(&[
            "simulate",
            "--config",
            &config_with(1_000_000, aggregate, extra),
            "--json",
        ]))["schemes"][0]["mean_iteration_time"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(mean_with("gather", peer), mean_with("gather", ""));
    let (slow, fast) = (mean_with("reduce", peer), mean_with("reduce", ""));
    // Model time in seconds (BASE: time_unit_ms = 1000).
    let per_round = 8.0 * 1_000_001.0 * (1.0 / 1.25e7 - 1.0 / 1.25e9);
    let rounds = (slow - fast) / per_round;
    // gc-cyclic, load 3 over 12 workers: every decodable set has 10
    // members, ceil(log2 10) = 4 rounds in every iteration.
    assert!(
        (rounds - 4.0).abs() < 1e-6,
        "reduce {slow} with the slow peers, {fast} without: {rounds} rounds"
    );
    let text = stdout(&gradcode(&[
        "simulate",
        "--config",
        &config_with(1_000_000, "reduce", peer),
    ]));
    assert!(
        text.contains(" (shared: one message at a time), between workers 1.25e7 B/s, messages of "),
        "{text}"
    );
}
