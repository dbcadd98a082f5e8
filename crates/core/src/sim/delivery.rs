//! The network of a config: its `[network]` section as a [`Network`] and a
//! [`Delivery`] for its messages (issue 26, item 1); what a delivery does
//! is `crate::network::delivery`.

use super::message_size::message_bytes;
use crate::config::{Config, NetworkConfig};
use crate::error::InputError;
use crate::network::{Delivery, Network, NetworkError, into_input_error};

/// The network of a `[network]` section.
pub fn network_of(c: &NetworkConfig) -> Result<Network, NetworkError> {
    Network::new(
        c.latency_s,
        c.worker_bandwidth_bytes_per_s,
        c.master_bandwidth_bytes_per_s,
        c.master_link_shared,
    )
}

/// The delivery of `config`'s `[network]` (`None` when the section is
/// absent) in its model time (`straggler.time_unit_ms`), with the bytes of
/// its messages ([`message_bytes`]) when a bandwidth is limited (`None`
/// otherwise: the size does not matter then, and file data is not scanned).
pub fn from_config(config: &Config) -> Result<Option<(Delivery, Option<f64>)>, InputError> {
    let Some(section) = &config.network else {
        return Ok(None);
    };
    let network = network_of(section).map_err(into_input_error)?;
    let bytes = if network.limits_bandwidth() {
        Some(message_bytes(config)?)
    } else {
        None
    };
    let delivery = Delivery::new(
        &network,
        bytes.unwrap_or(0.0),
        config.straggler.time_unit_ms / 1000.0,
    )
    .map_err(into_input_error)?;
    Ok(Some((delivery, bytes)))
}
