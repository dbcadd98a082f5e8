//! What a `[network]` costs one round's messages, for `check` and `explain`
//! (issue 26, item 1): the messages of a plan (or some of them) sent
//! together at time 0, delivered as a simulation delivers them
//! ([`crate::network::delivery`]), in seconds.

use serde::Serialize;

use super::delivery::in_time_unit;
use crate::coding::{Arrival, RoundPlan};
use crate::config::{Config, NetworkConfig};
use crate::error::InputError;
use crate::network::into_input_error;

/// The cost of sending some messages of a round at once.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Communication {
    #[serde(flatten)]
    pub network: NetworkConfig,
    /// Bytes of each coded vector (8 (d + 1)); null when no bandwidth is limited.
    pub message_bytes: Option<f64>,
    /// How the master collects the vectors, as `train` resolves
    /// `runtime.aggregate` for the config: "gather" or "reduce".
    pub aggregate: crate::spec::Aggregation,
    /// The messages counted (reducing: their headers).
    pub messages: usize,
    /// Seconds from the send to the arrival of one message alone (reducing:
    /// a header): latency and its bytes at the path's bandwidth.
    pub one_message_s: f64,
    /// Seconds from the send, all at once at 0, to the last arrival;
    /// reducing, to the arrival of the sum that the workers of the counted
    /// messages reduce once the last header is in.
    pub all_messages_s: f64,
}

impl Communication {
    /// One line: the links, the message size and the two times; `what`
    /// names the messages counted ("the plan's 12 messages").
    pub fn describe(&self, what: &str) -> String {
        let reduce = self.aggregate.reduces();
        format!(
            "{}; {}: {}one alone arrives {:.6} s after it is sent, {what} sent together within {:.6} s{}",
            links(&self.network),
            match self.message_bytes {
                Some(b) => format!("messages of {b} bytes"),
                None => "message size irrelevant (no bandwidth limit)".to_string(),
            },
            if reduce {
                "aggregate reduce: the results are headers, "
            } else {
                ""
            },
            self.one_message_s,
            self.all_messages_s,
            if reduce {
                ", their workers' reduced sum included"
            } else {
                ""
            }
        )
    }
}

/// A `[network]`'s links in words, as `simulate`, `check` and `explain`
/// print them: the latency, each link's bandwidth ("unlimited" when unset),
/// whether the master's link is shared, and the keys that only matter when
/// set (the time per message on the master's link, the bandwidth between
/// workers).
pub fn links(n: &NetworkConfig) -> String {
    let rate = |b: Option<f64>| b.map_or("unlimited".to_string(), |b| format!("{b:e} B/s"));
    format!(
        "latency {} s, worker links {}, master link {} ({}){}{}",
        n.latency_s,
        rate(n.worker_bandwidth_bytes_per_s),
        rate(n.master_bandwidth_bytes_per_s),
        if n.master_link_shared {
            "shared: one message at a time"
        } else {
            "not shared"
        },
        if n.master_per_message_s > 0.0 {
            format!(" and {:e} s per message", n.master_per_message_s)
        } else {
            String::new()
        },
        n.peer_bandwidth_bytes_per_s
            .map(|b| format!(", between workers {}", rate(Some(b))))
            .unwrap_or_default(),
    )
}

/// The cost of `config`'s `[network]` (`None` when it has none) for the
/// messages `arrivals` of `plan` (every message of the plan when `None`),
/// as a simulation times them: gathered, or reduced when `runtime.aggregate`
/// resolves to `reduce` (their headers, then the tree of their workers and
/// the sum: [`crate::network::reduce`]).
pub fn communication(
    config: &Config,
    plan: &RoundPlan,
    arrivals: Option<&[Arrival]>,
) -> Result<Option<Communication>, InputError> {
    let Some(section) = &config.network else {
        return Ok(None);
    };
    // Model time of 1 s: the times come out in seconds.
    let network = in_time_unit(config, 1.0)?.expect("the section is there");
    let aggregate = network.aggregate();
    let mut reduce = network.reduce;
    let delivery = match &mut reduce {
        Some(reduce) => {
            let computations = plan
                .tasks
                .iter()
                .flat_map(|t| t.messages.iter().map(|m| m.after))
                .max()
                .unwrap_or(0);
            reduce.headers(computations).map_err(into_input_error)?
        }
        None => network.delivery,
    };
    let mut events: Vec<(f64, Arrival)> = match arrivals {
        Some(a) => a.iter().map(|&a| (0.0, a)).collect(),
        None => plan
            .tasks
            .iter()
            .enumerate()
            .flat_map(|(worker, t)| {
                (0..t.messages.len()).map(move |message| (0.0, Arrival { worker, message }))
            })
            .collect(),
    };
    // Each worker's messages together and in order, as a round sends them.
    events.sort_unstable_by_key(|e| (e.1.worker, e.1.message));
    let mut workers: Vec<usize> = events.iter().map(|e| e.1.worker).collect();
    workers.dedup();
    let mut one = [(0.0, Arrival::only(0))];
    delivery.deliver(&mut one, |a| (a.worker, a.message));
    let messages = events.len();
    delivery.deliver(&mut events, |a| (a.worker, a.message));
    let last = events.last().map_or(0.0, |e| e.0);
    Ok(Some(Communication {
        network: section.clone(),
        message_bytes: network.message_bytes,
        aggregate,
        messages,
        one_message_s: one[0].0,
        all_messages_s: last + reduce.map_or(0.0, |r| r.after_stop(workers.len())),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coding::RoundContext;

    #[test]
    fn a_plans_messages_sent_together_cross_the_master_link_one_by_one() {
        // 12 uncoded workers, d = 999: 8000-byte messages, master link 8e5
        // B/s (10 ms each), latency 1 ms, unlimited workers.
        let mut config = Config {
            workers: 12,
            ..Config::default()
        };
        config.data.features = 999;
        config.network = Some(NetworkConfig {
            latency_s: 1e-3,
            master_bandwidth_bytes_per_s: Some(8e5),
            ..NetworkConfig::default()
        });
        let mut scheme = crate::coding::SCHEMES
            .build_kind("uncoded", &config)
            .unwrap();
        let plan = scheme.plan_round(&RoundContext::default());
        let c = communication(&config, &plan, None).unwrap().unwrap();
        assert_eq!(c.aggregate.name(), "gather");
        assert_eq!(c.message_bytes, Some(8000.0));
        assert_eq!(c.messages, 12);
        assert!((c.one_message_s - 0.011).abs() < 1e-15);
        assert!((c.all_messages_s - (0.001 + 12.0 * 0.01)).abs() < 1e-12);
        // Three of them: 1 ms + 3 × 10 ms.
        let some: Vec<Arrival> = [4, 0, 7].into_iter().map(Arrival::only).collect();
        let c = communication(&config, &plan, Some(&some)).unwrap().unwrap();
        assert_eq!(c.messages, 3);
        assert!((c.all_messages_s - 0.031).abs() < 1e-12);
        // Not shared: all at once.
        config.network.as_mut().unwrap().master_link_shared = false;
        let c = communication(&config, &plan, None).unwrap().unwrap();
        assert!((c.all_messages_s - 0.011).abs() < 1e-15);
        assert_eq!(
            c.describe("the 12"),
            "latency 0.001 s, worker links unlimited, master link 8e5 B/s (not shared); \
             messages of 8000 bytes: one alone arrives 0.011000 s after it is sent, the 12 \
             sent together within 0.011000 s"
        );
        // Reducing: 12 headers of one loss (72 bytes, 90 µs each over the
        // shared link) arrive by 1 ms + 12 × 90 µs; then 4 tree rounds of 1
        // ms (unlimited worker links) and the sum, 1 ms + 8016 B / 8e5 B/s.
        config.network.as_mut().unwrap().master_link_shared = true;
        config.runtime.aggregate = crate::config::RuntimeAggregate::Reduce;
        let c = communication(&config, &plan, None).unwrap().unwrap();
        assert_eq!(c.aggregate.name(), "reduce");
        assert!((c.one_message_s - (0.001 + 72.0 / 8e5)).abs() < 1e-15);
        let want = 0.001 + 12.0 * 72.0 / 8e5 + 4.0 * 0.001 + 0.001 + 8016.0 / 8e5;
        assert!(
            (c.all_messages_s - want).abs() < 1e-12,
            "{}",
            c.all_messages_s
        );
        // Three of them: 2 rounds.
        let c = communication(&config, &plan, Some(&some)).unwrap().unwrap();
        let want = 0.001 + 3.0 * 72.0 / 8e5 + 2.0 * 0.001 + 0.001 + 8016.0 / 8e5;
        assert!(
            (c.all_messages_s - want).abs() < 1e-12,
            "{}",
            c.all_messages_s
        );
        assert!(
            c.describe("the 3")
                .contains("aggregate reduce: the results are headers")
        );
        config.network = None;
        assert_eq!(communication(&config, &plan, None).unwrap(), None);
    }
}
