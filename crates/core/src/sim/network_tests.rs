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

/// Fixed samples: iteration i's workers take `unit[i][w]` per computation.
struct Fixed(Vec<Vec<f64>>, usize);

impl crate::straggler::DelayModel for Fixed {
    fn workers(&self) -> usize {
        self.0[0].len()
    }

    fn sample(&mut self, out: &mut crate::straggler::RoundSample) {
        out.unit_time.copy_from_slice(&self.0[self.1]);
        out.extra_time.fill(0.0);
        self.1 += 1;
    }
}

/// (decodable_s, duration_s) of every iteration.
#[derive(Default)]
struct Times(Vec<(f64, f64)>);

impl crate::engine::Observer for Times {
    fn wants_workers(&self) -> bool {
        false
    }

    fn iteration(
        &mut self,
        e: &crate::engine::IterationEvent<'_>,
    ) -> Result<(), crate::engine::ObserverError> {
        self.0.push((e.record.decodable_s, e.record.duration_s));
        Ok(())
    }
}

/// gc-cyclic, K = 4, load 2 (any 3 of the 4 results decode), d = 124:
/// vectors of 1000 bytes; time unit 1 s; `network` the section's lines;
/// the iterations of `unit`, as one trial through the driver.
fn cyclic_iterations(network: &str, aggregate: &str, unit: Vec<Vec<f64>>) -> Vec<(f64, f64)> {
    let config = config(&format!(
        r#"
workers = 4
[scheme]
kind = "gc-cyclic"
load = 2
[straggler]
model = "shifted-exponential"
time_unit_ms = 1000.0
[data]
features = 124
[runtime]
aggregate = "{aggregate}"
[network]
{network}
"#
    ));
    let network = super::delivery::from_config(&config).unwrap().unwrap();
    assert_eq!(network.message_bytes, Some(1000.0));
    assert_eq!(network.aggregate().name(), aggregate);
    let scheme = crate::coding::build(&config).unwrap();
    let mut driver = crate::engine::Driver::new(
        vec![crate::engine::Lane::new(scheme, None)],
        config.straggler.state_info,
        1.0,
        None,
        false,
    );
    let mut round = crate::engine::SimulatedRound::new(1.0)
        .with_delivery(Some(network.delivery))
        .with_reduce(network.reduce);
    let n = unit.len() as u64;
    let mut straggling = crate::engine::Straggling::Model(Box::new(Fixed(unit, 0)));
    let mut times = Times::default();
    driver
        .run(&mut straggling, &mut round, 0..n, 0, &mut [&mut times])
        .unwrap();
    times.0
}

fn assert_close(got: &[(f64, f64)], want: &[(f64, f64)]) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g.0 - w.0).abs() < 1e-12 && (g.1 - w.1).abs() < 1e-12,
            "iteration {}: {g:?}, expected {w:?}",
            i + 1
        );
    }
}

#[test]
fn an_unused_vector_holds_the_master_link_into_the_next_iteration() {
    // Master link 1000 B/s: one vector a second (the path's rate too); no
    // latency, workers unlimited. Iteration 1: workers 1-3 ready at
    // 2 · 0.5 = 1, worker 4 at 2 · 1 = 2, so r = 2, 2, 2, 3. The link: 2,
    // 3, 4 (decodable at 4); worker 4's vector, sent at 2 < 4, is not
    // needed but crosses after them, until 5: one second into iteration 2.
    // Iteration 2: all ready at 2 · 0.25 = 0.5, r = 1.5; the first waits
    // for the link, max(1.5, 1 + 1) = 2, then 3, 4: decodable at 4 (3.5
    // with the link free). Worker 4's vector arrives at 5 again.
    let link = "master_bandwidth_bytes_per_s = 1000.0";
    let unit = vec![vec![0.5, 0.5, 0.5, 1.0], vec![0.25; 4], vec![0.25; 4]];
    let got = cyclic_iterations(link, "gather", unit.clone());
    assert_close(&got, &[(4.0, 4.0), (4.0, 4.0), (4.0, 4.0)]);
    // Worker 4 ready at 2 · 2.5 = 5, after the stop at 4: the next task
    // reaches it first and it abandons the task; iteration 2 starts with
    // the link free (1.5, 2.5, 3.5), and its worker 4 holds iteration 3's.
    let mut late = unit;
    late[0][3] = 2.5;
    let got = cyclic_iterations(link, "gather", late);
    assert_close(&got, &[(4.0, 4.0), (3.5, 3.5), (4.0, 4.0)]);
    // A cost of 0.5 s per message on the master's link: r = 1 + 1.5 = 2.5
    // (worker 4: 3.5); 2.5, 4, 5.5 (decodable), worker 4's at 7: 1.5 s
    // into iteration 2, whose r = 0.5 + 1.5 = 2: max(2, 1.5 + 1.5) = 3,
    // 4.5, 6.
    let got = cyclic_iterations(
        &format!("{link}\nmaster_per_message_s = 0.5"),
        "gather",
        vec![vec![0.5, 0.5, 0.5, 1.0], vec![0.25; 4]],
    );
    assert_close(&got, &[(5.5, 5.5), (6.0, 6.0)]);
    // Not shared: every vector alone, nothing carried: each at 1 + 1.
    let got = cyclic_iterations(
        &format!("{link}\nmaster_link_shared = false"),
        "gather",
        vec![vec![0.5, 0.5, 0.5, 1.0], vec![0.5; 4]],
    );
    assert_close(&got, &[(2.0, 2.0), (2.0, 2.0)]);
}

#[test]
fn a_reduce_iteration_is_the_headers_the_tree_and_one_sum() {
    // Worker links 2000 B/s (a vector in 0.5 s), master 1000 B/s, latency
    // 0.01 s. Headers of 2 losses: 80 bytes, 0.04 s over a worker link,
    // 0.08 s over the master's (the path's rate). Workers 1-3 ready at 1,
    // worker 4 at 2. Headers: start 1, r = 1 + 0.01 + 0.08 = 1.09; over the
    // shared link 1.09, 1.17, 1.25: decodable at 1.25 (S = 3 workers).
    // Tree: ceil(log2 3) = 2 rounds of 0.01 + 0.5; the sum, 1016 bytes:
    // 0.01 + 1.016. The iteration: 1.25 + 1.02 + 1.026 = 3.296.
    let network = "latency_s = 0.01\nworker_bandwidth_bytes_per_s = 2000.0\n\
                   master_bandwidth_bytes_per_s = 1000.0";
    let unit = vec![vec![0.5, 0.5, 0.5, 1.0], vec![0.5; 4]];
    let got = cyclic_iterations(network, "reduce", unit.clone());
    let one = (1.25, 1.25 + 2.0 * 0.51 + 1.026);
    // Worker 4's header (r = 2.09) crossed before the sum: nothing carried.
    assert_close(&got, &[one, one]);
    // Gathering the same: vectors over the path at 1 s each, r = 2.01;
    // 2.01, 3.01, 4.01 (decodable), worker 4's at 5.01: the link is busy
    // 1 s into iteration 2, whose first vector, r = 2.01, starts later
    // anyway: 2.01, 3.01, 4.01 again.
    let got = cyclic_iterations(network, "gather", unit);
    assert_close(&got, &[(4.01, 4.01), (4.01, 4.01)]);
}

/// gc-cyclic at K = 8, load 2, `features` features, latency 1 ms, worker
/// links 1.25e9 B/s, the master's 1.25e7 B/s (100 Mbit/s); time unit 1 s.
fn reduce_or_gather(features: usize, aggregate: &str) -> SimReport {
    let report = run(&config(&format!(
        r#"
workers = 8
[scheme]
kind = "gc-cyclic"
load = 2
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
trials = 3
iterations = 40
[runtime]
aggregate = "{aggregate}"
[network]
latency_s = 1e-3
worker_bandwidth_bytes_per_s = 1.25e9
master_bandwidth_bytes_per_s = 1.25e7
"#
    )));
    if aggregate != "auto" {
        assert_eq!(report.network.as_ref().unwrap().aggregate.name(), aggregate);
    }
    report
}

#[test]
fn reduce_beats_gather_over_a_slow_master_link_at_large_d_and_loses_at_small_d() {
    // d = 10^6: gather sends 7 to 8 vectors of 8 MB over the master's link
    // (0.64 s each), reduce headers, three tree rounds at the workers' rate
    // and one vector.
    let (g, r) = (
        reduce_or_gather(1_000_000, "gather"),
        reduce_or_gather(1_000_000, "reduce"),
    );
    let (g, r) = (
        g.schemes[0].mean_iteration_time,
        r.schemes[0].mean_iteration_time,
    );
    assert!(r < 0.25 * g, "d = 10^6: reduce {r}, gather {g}");
    assert!(g >= 7.0 * 0.64, "gather {g}");
    // d = 10: every vector is 88 bytes; reduce's tree and sum add four
    // latencies after the stop, gather's vectors none.
    let (g, r) = (
        reduce_or_gather(10, "gather"),
        reduce_or_gather(10, "reduce"),
    );
    let (g, r) = (
        g.schemes[0].mean_iteration_time,
        r.schemes[0].mean_iteration_time,
    );
    assert!(r > g + 3.0e-3, "d = 10: reduce {r}, gather {g}");

    // auto resolves by the vector's size, as train does.
    assert_eq!(
        reduce_or_gather(10, "auto")
            .network
            .unwrap()
            .aggregate
            .name(),
        "gather"
    );
    let auto = reduce_or_gather(1_000_000, "auto");
    assert_eq!(auto.network.unwrap().aggregate.name(), "reduce");
}
