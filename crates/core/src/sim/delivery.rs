//! The network of a config: its `[network]` section's network (`NetworkConfig::network`), a
//! [`Delivery`] for its messages (issue 26, item 1) and, when
//! `runtime.aggregate` resolves to `reduce`, its [`Reduce`] (issue 28,
//! item 3); what they do is `crate::network::delivery` and
//! `crate::network::reduce`.

use super::message_size::{F64_BYTES, message_values};
use crate::config::{Config, RuntimeAggregate};
use crate::error::InputError;
use crate::network::{Delivery, Reduce, into_input_error};
use crate::spec::Aggregation;

/// What a config's `[network]` does to its rounds.
#[derive(Debug, Clone)]
pub struct RoundNetwork {
    /// Each coded vector's way to the master.
    pub delivery: Delivery,
    /// Bytes of one coded vector, 8 (d + 1), when a bandwidth is limited
    /// (`None` otherwise: the size does not matter then, and file data is
    /// not scanned).
    pub message_bytes: Option<f64>,
    /// `runtime.aggregate` as `train` resolves it for the config's d with
    /// the workers on other hosts than the master
    /// ([`crate::config::RuntimeAggregate::reduces`]): the reduce's costs,
    /// `None` when it gathers.
    pub reduce: Option<Reduce>,
}

impl RoundNetwork {
    /// How the master collects the vectors: reduce when the network has a
    /// [`Reduce`], resolved once in [`in_time_unit`].
    pub fn aggregate(&self) -> Aggregation {
        if self.reduce.is_some() {
            Aggregation::Reduce
        } else {
            Aggregation::Gather
        }
    }
}

/// The network of `config`'s `[network]` (`None` when the section is
/// absent) in its model time (`straggler.time_unit_ms`).
pub fn from_config(config: &Config) -> Result<Option<RoundNetwork>, InputError> {
    in_time_unit(config, config.straggler.time_unit_ms / 1000.0)
}

/// [`from_config`] in model time of `time_unit_s` seconds per unit.
pub fn in_time_unit(config: &Config, time_unit_s: f64) -> Result<Option<RoundNetwork>, InputError> {
    let Some(section) = &config.network else {
        return Ok(None);
    };
    let network = section.network().map_err(into_input_error)?;
    let aggregate = config.runtime.aggregate;
    // d is needed for a bandwidth, or for `auto` to choose.
    let values = if network.limits_bandwidth() || aggregate == RuntimeAggregate::Auto {
        Some(message_values(config)?)
    } else {
        None
    };
    let bytes = if network.limits_bandwidth() {
        values.map(|v| (F64_BYTES * v) as f64)
    } else {
        None
    };
    let delivery =
        Delivery::new(&network, bytes.unwrap_or(0.0), time_unit_s).map_err(into_input_error)?;
    // `[network]` models links between hosts: auto resolves as for a job
    // whose workers are not on the master's node.
    let aggregation = Aggregation::resolve(aggregate, values.map_or(0, |v| v - 1), false);
    let reduce = if aggregation.reduces() {
        Some(Reduce::new(&network, bytes.unwrap_or(0.0), time_unit_s).map_err(into_input_error)?)
    } else {
        None
    };
    Ok(Some(RoundNetwork {
        delivery,
        message_bytes: bytes,
        reduce,
    }))
}
