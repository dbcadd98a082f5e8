//! Simulations with a `[network]` (issue 26, item 1): a free network changes
//! nothing, a latency shifts every iteration by itself, a slow shared master
//! link makes uncoded's iteration K transfers long, and schemes that need
//! more messages lose ground over it.

use super::{SimReport, Simulation};
use crate::config::{Config, NetworkConfig};

/// A config through the loader (scheme defaults filled in).
fn config(text: &str) -> Config {
    crate::setup::parse(text, "test", &[])
        .unwrap()
        .loaded
        .config
}

fn run(config: &Config) -> SimReport {
    Simulation::from_config(config)
        .unwrap()
        .run(&mut [])
        .unwrap()
}

const EVERY_SCHEME: &str = r#"
workers = 12
[scheme]
load = 2
clusters = 4
[straggler]
model = "gilbert-elliott"
time_unit_ms = 10.0
[simulate]
trials = 3
iterations = 60
compare = [
    "uncoded", "gc-cyclic", "gc-sc", "gc-dc", "gc-frac", "gc-mmc", "uc-mmc",
    { name = "is-gc-9", kind = "is-gc", set = { wait_for = 9 } },
    { name = "ignore-9", kind = "ignore-stragglers", set = { wait_for = 9 } },
]
"#;

/// Every field of every scheme's summary, bit for bit (Debug prints an f64
/// so that it reads back to the same bits; NaN equal to NaN).
fn assert_same_schemes(a: &SimReport, b: &SimReport) {
    assert_eq!(a.schemes.len(), b.schemes.len());
    for (x, y) in a.schemes.iter().zip(&b.schemes) {
        assert_eq!(format!("{x:?}"), format!("{y:?}"));
        let bits = |v: &[f64]| v.iter().map(|t| t.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&x.trial_means), bits(&y.trial_means), "{}", x.name);
        assert_eq!(bits(&x.trial_p99), bits(&y.trial_p99), "{}", x.name);
        assert_eq!(
            x.mean_iteration_time.to_bits(),
            y.mean_iteration_time.to_bits(),
            "{}",
            x.name
        );
    }
}

#[test]
fn a_network_section_with_its_defaults_changes_no_result() {
    for model in ["gilbert-elliott", "shifted-exponential"] {
        let text = EVERY_SCHEME.replace("gilbert-elliott", model);
        let absent = config(&text);
        assert_eq!(absent.network, None);
        let present = config(&format!("{text}\n[network]\n"));
        assert_eq!(present.network, Some(NetworkConfig::default()));
        let (a, b) = (run(&absent), run(&present));
        assert_same_schemes(&a, &b);
        assert!(a.network.is_none());
        let n = b.network.expect("reported");
        assert_eq!(
            n.message_bytes, None,
            "no bandwidth: the size is not needed"
        );
    }
}

#[test]
fn a_latency_delays_every_iteration_of_every_scheme_by_itself() {
    // 30 ms over a 10 ms time unit: 3 model time units, for every message.
    let free = run(&config(EVERY_SCHEME));
    let late = run(&config(&format!(
        "{EVERY_SCHEME}\n[network]\nlatency_s = 0.03\n"
    )));
    for (a, b) in free.schemes.iter().zip(&late.schemes) {
        for (x, y) in [
            (a.mean_iteration_time, b.mean_iteration_time),
            (a.p50, b.p50),
            (a.p99, b.p99),
        ] {
            assert!((y - x - 3.0).abs() < 1e-9, "{}: {x} → {y}", a.name);
        }
        // The same messages decode: only their times moved.
        assert_eq!(
            a.messages_per_iteration, b.messages_per_iteration,
            "{}",
            a.name
        );
        assert_eq!(a.recovered_fraction, b.recovered_fraction, "{}", a.name);
    }
}

/// uncoded over K = 8 workers with `features` features, the master's link
/// at `bandwidth` bytes per second (shared), time unit 1 s.
fn uncoded(features: usize, bandwidth: Option<f64>) -> Config {
    let mut text = format!(
        r#"
workers = 8
[scheme]
kind = "uncoded"
[straggler]
model = "shifted-exponential"
alpha = 0.01
mu = 10.0
time_unit_ms = 1000.0
[data]
features = {features}
train_samples = 16
test_samples = 8
[simulate]
trials = 4
iterations = 50
"#
    );
    if let Some(b) = bandwidth {
        text.push_str(&format!(
            "[network]\nmaster_bandwidth_bytes_per_s = {b:e}\n"
        ));
    }
    config(&text)
}

#[test]
fn uncoded_over_a_slow_shared_master_link_takes_k_transfers() {
    let k = 8.0;
    let bandwidth = 1e7;
    for features in [10_000, 100_000, 1_000_000] {
        let compute = run(&uncoded(features, None)).schemes[0].mean_iteration_time;
        let report = run(&uncoded(features, Some(bandwidth)));
        let bytes = 8.0 * (features + 1) as f64;
        assert_eq!(report.network.as_ref().unwrap().message_bytes, Some(bytes));
        // One message's transfer, in model time (1 s units).
        let t = bytes / bandwidth;
        let mean = report.schemes[0].mean_iteration_time;
        // Each iteration: the K messages cross the link one after another,
        // the first no earlier than its sender's finish, the last no later
        // than the slowest's: K t + min ≤ time ≤ K t + max (uncoded's
        // iteration time without a network is the max).
        assert!(
            mean >= k * t * (1.0 - 1e-12),
            "d = {features}: {mean} < K t = {}",
            k * t
        );
        assert!(
            mean <= (k * t + compute) * (1.0 + 1e-12),
            "d = {features}: {mean} > K t + {compute}"
        );
    }
    // Large d: the link is the iteration: within 5% of K·8·d/bandwidth.
    let d = 1_000_000;
    let mean = run(&uncoded(d, Some(1e6))).schemes[0].mean_iteration_time;
    let predicted = k * 8.0 * d as f64 / 1e6;
    assert!(
        (mean / predicted - 1.0).abs() < 0.05,
        "{mean} vs {predicted}"
    );
}

const RANKED: &str = r#"
workers = 12
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
fn over_a_slow_master_link_schemes_that_need_more_messages_lose_ground() {
    let free = run(&config(RANKED));
    // 8 MB messages over 100 MB/s: 0.08 s each, the computations ~0.1 s.
    let slow = run(&config(&format!(
        "{RANKED}\n[network]\nmaster_bandwidth_bytes_per_s = 1e8\n"
    )));
    let t = 8.0 * 1_000_001.0 / 1e8;
    for s in &slow.schemes {
        // Every received message crossed the link alone before the decode.
        assert!(
            s.mean_iteration_time >= s.messages_per_iteration * t * (1.0 - 1e-12),
            "{}: {} < {} messages x {t}",
            s.name,
            s.mean_iteration_time,
            s.messages_per_iteration
        );
    }
    // Against the scheme that needs the fewest messages, each scheme that
    // needs more loses ground: its time relative to it grows.
    let fewest = slow
        .schemes
        .iter()
        .enumerate()
        .min_by(|a, b| {
            a.1.messages_per_iteration
                .total_cmp(&b.1.messages_per_iteration)
        })
        .unwrap()
        .0;
    let ratio = |r: &SimReport, i: usize| {
        r.schemes[i].mean_iteration_time / r.schemes[fewest].mean_iteration_time
    };
    let mut compared = 0;
    for i in 0..slow.schemes.len() {
        let more =
            slow.schemes[i].messages_per_iteration - slow.schemes[fewest].messages_per_iteration;
        if more >= 1.0 {
            compared += 1;
            assert!(
                ratio(&slow, i) > ratio(&free, i),
                "{}: {} messages more, ratio {} → {}",
                slow.schemes[i].name,
                more,
                ratio(&free, i),
                ratio(&slow, i)
            );
        }
    }
    assert!(
        compared >= 2,
        "the comparison needs schemes of different message counts"
    );
}
