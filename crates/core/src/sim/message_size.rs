//! How many bytes one message of a run carries (issue 26, item 1).
//!
//! Every message of every scheme is one coded vector: the codeword's
//! combination of its partitions' gradient sums (d entries) and of their
//! loss sums (one more), d + 1 f64 in all, as `train`'s workers send them
//! (`src/runtime/worker.rs`). A scheme's plan says how many messages each
//! worker sends (one for gc-cyclic or uncoded, one per partition computed
//! for gc-mmc and uc-mmc, 003); their size is the same for all.

use crate::config::Config;
use crate::error::InputError;
use crate::learn::{DataPlan, Model};

/// Bytes of one f64.
pub const F64_BYTES: usize = 8;

/// d + 1: the f64 values of one message for `config`'s data and model (d,
/// the model's parameters, from `[data]` and `[model]`; file data is
/// scanned once to count its features).
pub fn message_values(config: &Config) -> Result<usize, InputError> {
    let data = DataPlan::new(config, 1)?;
    // Only the size: a network too large to train still has one.
    Ok(Model::sized(config, data.input())?.dim() + 1)
}

/// The bytes of one message: 8 (d + 1).
pub fn message_bytes(config: &Config) -> Result<f64, InputError> {
    Ok((F64_BYTES * message_values(config)?) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ModelName;

    #[test]
    fn a_linear_model_sends_its_features_and_the_loss() {
        let mut config = Config::default();
        config.data.features = 12_345;
        assert_eq!(message_values(&config).unwrap(), 12_346);
        assert_eq!(message_bytes(&config).unwrap(), 8.0 * 12_346.0);
    }

    #[test]
    fn a_network_sends_its_parameters_and_the_loss() {
        // An MLP 20-7-3: (20·7 + 7) + (7·3 + 3) = 171 parameters.
        let mut config = Config::default();
        config.data.features = 20;
        config.model.kind = ModelName::new("mlp");
        config.model.set_param("hidden", vec![7]);
        config.model.classes = 3;
        assert_eq!(message_values(&config).unwrap(), 172);
    }
}
