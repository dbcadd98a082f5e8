//! What a `[network]` costs one round's messages, for `check` and `explain`
//! (issue 26, item 1): the messages of a plan (or some of them) sent
//! together at time 0, delivered as a simulation delivers them
//! ([`crate::network::delivery`]), in seconds.

use serde::Serialize;

use super::delivery::network_of;
use super::message_size::message_bytes;
use crate::coding::{Arrival, RoundPlan};
use crate::config::{Config, NetworkConfig};
use crate::error::InputError;
use crate::network::{Delivery, into_input_error};

/// The cost of sending some messages of a round at once.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Communication {
    #[serde(flatten)]
    pub network: NetworkConfig,
    /// Bytes of each message (8 (d + 1)); null when no bandwidth is limited.
    pub message_bytes: Option<f64>,
    /// The messages counted.
    pub messages: usize,
    /// Seconds from the send to the arrival of one message alone: latency
    /// and its bytes at the path's bandwidth.
    pub one_message_s: f64,
    /// Seconds from the send, all at once at 0, to the last arrival.
    pub all_messages_s: f64,
}

impl Communication {
    /// One line: the links, the message size and the two times; `what`
    /// names the messages counted ("the plan's 12 messages").
    pub fn describe(&self, what: &str) -> String {
        let rate = |b: Option<f64>| b.map_or("unlimited".to_string(), |b| format!("{b:e} B/s"));
        let n = &self.network;
        format!(
            "latency {} s, worker links {}, master link {} ({}); {}: one alone arrives {:.6} s after it is sent, {what} sent together within {:.6} s",
            n.latency_s,
            rate(n.worker_bandwidth_bytes_per_s),
            rate(n.master_bandwidth_bytes_per_s),
            if n.master_link_shared {
                "shared: one message at a time"
            } else {
                "not shared"
            },
            match self.message_bytes {
                Some(b) => format!("messages of {b} bytes"),
                None => "message size irrelevant (no bandwidth limit)".to_string(),
            },
            self.one_message_s,
            self.all_messages_s
        )
    }
}

/// The cost of `config`'s `[network]` (`None` when it has none) for the
/// messages `arrivals` of `plan` (every message of the plan when `None`).
pub fn communication(
    config: &Config,
    plan: &RoundPlan,
    arrivals: Option<&[Arrival]>,
) -> Result<Option<Communication>, InputError> {
    let Some(section) = &config.network else {
        return Ok(None);
    };
    let network = network_of(section).map_err(into_input_error)?;
    let bytes = if network.limits_bandwidth() {
        Some(message_bytes(config)?)
    } else {
        None
    };
    // Model time of 1 s: the times come out in seconds.
    let delivery = Delivery::new(&network, bytes.unwrap_or(0.0), 1.0).map_err(into_input_error)?;
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
    let mut one = [(0.0, Arrival::only(0))];
    delivery.deliver(&mut one, |a| (a.worker, a.message));
    let messages = events.len();
    delivery.deliver(&mut events, |a| (a.worker, a.message));
    Ok(Some(Communication {
        network: section.clone(),
        message_bytes: bytes,
        messages,
        one_message_s: one[0].0,
        all_messages_s: events.last().map_or(0.0, |e| e.0),
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
        config.network = None;
        assert_eq!(communication(&config, &plan, None).unwrap(), None);
    }
}
