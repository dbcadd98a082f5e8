//! The network of the model (issue 26, item 1): the `[network]` section's
//! values, checked (the config's validation and the simulator build it; it
//! imports neither), and what it does to a message ([`delivery`]).
//!
//! The papers' simulations (000 §VI) time computation only: a worker's coded
//! vector reaches the master the moment the worker finishes; 003 counts the
//! messages (its communication load, Fig. 1(b)) but gives them no transfer
//! time. With K vectors of d doubles over one master link, communication can
//! decide which scheme wins; this is the model of it: a one-way latency per
//! message, the bandwidth of each worker's link and of the master's, and
//! whether the master's receives share its link (and, for a reduce's tree,
//! the bandwidth between two workers). [`fit`] fits the latency
//! and a link's bandwidth to the transfers a training run measured;
//! [`reduce`] times `runtime.aggregate = "reduce"`.

pub mod delivery;
pub mod fit;
pub mod probe;
pub mod reduce;

pub use delivery::{Delivery, MAX_MESSAGE_MODEL_TIME};
pub use reduce::Reduce;

use crate::error::InputError;

/// The longest one-way latency a message may have, in seconds (one hour).
pub const MAX_LATENCY_S: f64 = 3600.0;

/// The smallest bandwidth a link may have, in bytes per second: below one
/// byte per second a message of a model's size takes longer than any run.
pub const MIN_BANDWIDTH_BYTES_PER_S: f64 = 1.0;

/// A `[network]` value that breaks its rule; displays as
/// `network.<field> = <value> <rule>`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("network.{field} = {value} {rule}")]
pub struct NetworkError {
    /// The key inside `[network]` (`latency_s`).
    pub field: &'static str,
    pub value: f64,
    pub rule: String,
}

/// The links between the workers and the master, checked: every value is
/// finite, a latency in `[0, MAX_LATENCY_S]`, a bandwidth at least
/// [`MIN_BANDWIDTH_BYTES_PER_S`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Network {
    latency_s: f64,
    worker_bandwidth_bytes_per_s: Option<f64>,
    master_bandwidth_bytes_per_s: Option<f64>,
    master_link_shared: bool,
    master_per_message_s: f64,
    peer_bandwidth_bytes_per_s: Option<f64>,
}

/// The longest time the master's link may spend on a message besides its
/// bytes, in seconds (one hour).
pub const MAX_PER_MESSAGE_S: f64 = 3600.0;

impl Network {
    /// A network of these links (`None`: an unlimited bandwidth); the error
    /// names the first value that breaks its rule.
    pub fn new(
        latency_s: f64,
        worker_bandwidth_bytes_per_s: Option<f64>,
        master_bandwidth_bytes_per_s: Option<f64>,
        master_link_shared: bool,
    ) -> Result<Self, NetworkError> {
        if !(latency_s.is_finite() && (0.0..=MAX_LATENCY_S).contains(&latency_s)) {
            return Err(NetworkError {
                field: "latency_s",
                value: latency_s,
                rule: format!("must be a finite number of seconds in [0, {MAX_LATENCY_S}]"),
            });
        }
        for (field, bandwidth) in [
            ("worker_bandwidth_bytes_per_s", worker_bandwidth_bytes_per_s),
            ("master_bandwidth_bytes_per_s", master_bandwidth_bytes_per_s),
        ] {
            if let Some(b) = bandwidth {
                check_bandwidth(field, b)?;
            }
        }
        Ok(Self {
            latency_s,
            worker_bandwidth_bytes_per_s,
            master_bandwidth_bytes_per_s,
            master_link_shared,
            master_per_message_s: 0.0,
            peer_bandwidth_bytes_per_s: None,
        })
    }

    /// This network with `bytes_per_s` between two workers (a reduce's tree
    /// rounds, [`reduce`]); `None` (the default): a worker's link, as
    /// before the key existed. The rule is a bandwidth's.
    pub fn with_peer_bandwidth(mut self, bytes_per_s: Option<f64>) -> Result<Self, NetworkError> {
        if let Some(b) = bytes_per_s {
            check_bandwidth("peer_bandwidth_bytes_per_s", b)?;
        }
        self.peer_bandwidth_bytes_per_s = bytes_per_s;
        Ok(self)
    }

    /// Bandwidth between two workers (`None`: that of a worker's link).
    pub fn peer_bandwidth_bytes_per_s(&self) -> Option<f64> {
        self.peer_bandwidth_bytes_per_s
    }

    /// This network with the master's link spending `seconds` on every
    /// message besides its bytes (`master_per_message_s`: finite, in `[0,
    /// MAX_PER_MESSAGE_S]`).
    pub fn with_master_per_message_s(mut self, seconds: f64) -> Result<Self, NetworkError> {
        if !(seconds.is_finite() && (0.0..=MAX_PER_MESSAGE_S).contains(&seconds)) {
            return Err(NetworkError {
                field: "master_per_message_s",
                value: seconds,
                rule: format!("must be a finite number of seconds in [0, {MAX_PER_MESSAGE_S}]"),
            });
        }
        self.master_per_message_s = seconds;
        Ok(self)
    }

    /// Seconds the master's link spends on each message besides its bytes.
    pub fn master_per_message_s(&self) -> f64 {
        self.master_per_message_s
    }

    /// One-way latency of a message, seconds.
    pub fn latency_s(&self) -> f64 {
        self.latency_s
    }

    /// Bandwidth of each worker's link (`None`: unlimited).
    pub fn worker_bandwidth_bytes_per_s(&self) -> Option<f64> {
        self.worker_bandwidth_bytes_per_s
    }

    /// Bandwidth of the master's link (`None`: unlimited).
    pub fn master_bandwidth_bytes_per_s(&self) -> Option<f64> {
        self.master_bandwidth_bytes_per_s
    }

    /// Whether the master's link carries one message at a time.
    pub fn master_link_shared(&self) -> bool {
        self.master_link_shared
    }

    /// Whether a message's size matters (some bandwidth is limited): only
    /// then does a simulation need the model's dimension.
    pub fn limits_bandwidth(&self) -> bool {
        self.worker_bandwidth_bytes_per_s.is_some() || self.master_bandwidth_bytes_per_s.is_some()
    }
}

/// A bandwidth's rule: finite, at least [`MIN_BANDWIDTH_BYTES_PER_S`].
fn check_bandwidth(field: &'static str, b: f64) -> Result<(), NetworkError> {
    if b.is_finite() && b >= MIN_BANDWIDTH_BYTES_PER_S {
        return Ok(());
    }
    Err(NetworkError {
        field,
        value: b,
        rule: format!(
            "must be a finite number of bytes per second >= {MIN_BANDWIDTH_BYTES_PER_S} \
             (leave it out for an unlimited link)"
        ),
    })
}

/// A network error as an input error naming `network.<field>`.
pub fn into_input_error(e: NetworkError) -> InputError {
    InputError::value(format!("network.{}", e.field), e.value, e.rule)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bad_value_is_named_with_its_rule() {
        for latency in [-1e-3, f64::NAN, f64::INFINITY, 1e300, MAX_LATENCY_S * 1.01] {
            let e = Network::new(latency, None, None, true).unwrap_err();
            assert_eq!(e.field, "latency_s");
            assert!(e.to_string().starts_with("network.latency_s = "), "{e}");
            assert!(e.to_string().contains("in [0, 3600]"), "{e}");
        }
        for b in [0.0, -5.0, 0.5, f64::NAN, f64::INFINITY] {
            let e = Network::new(0.0, Some(b), None, true).unwrap_err();
            assert_eq!(e.field, "worker_bandwidth_bytes_per_s", "{b}");
            let e = Network::new(0.0, Some(1e9), Some(b), false).unwrap_err();
            assert_eq!(e.field, "master_bandwidth_bytes_per_s", "{b}");
            assert!(e.to_string().contains(">= 1"), "{e}");
            let e = Network::new(0.0, None, None, true)
                .unwrap()
                .with_peer_bandwidth(Some(b))
                .unwrap_err();
            assert_eq!(e.field, "peer_bandwidth_bytes_per_s", "{b}");
            assert!(e.to_string().contains(">= 1"), "{e}");
        }
    }

    #[test]
    fn a_bad_per_message_time_is_named_with_its_rule() {
        let n = Network::new(0.0, None, None, true).unwrap();
        for s in [-1e-9, f64::NAN, f64::INFINITY, MAX_PER_MESSAGE_S * 1.01] {
            let e = n.with_master_per_message_s(s).unwrap_err();
            assert_eq!(e.field, "master_per_message_s");
            assert!(e.to_string().contains("in [0, 3600]"), "{e}");
        }
        for s in [0.0, 0.05, MAX_PER_MESSAGE_S] {
            assert_eq!(
                n.with_master_per_message_s(s)
                    .unwrap()
                    .master_per_message_s(),
                s
            );
        }
    }

    #[test]
    fn the_limits_themselves_and_huge_bandwidths_are_accepted() {
        let n = Network::new(MAX_LATENCY_S, Some(1.0), Some(1e300), false).unwrap();
        assert_eq!(n.latency_s(), MAX_LATENCY_S);
        assert_eq!(n.worker_bandwidth_bytes_per_s(), Some(1.0));
        assert_eq!(n.master_bandwidth_bytes_per_s(), Some(1e300));
        assert!(!n.master_link_shared());
        assert!(n.limits_bandwidth());
        assert!(
            !Network::new(0.0, None, None, true)
                .unwrap()
                .limits_bandwidth()
        );
    }
}
