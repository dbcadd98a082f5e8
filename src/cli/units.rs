//! Model time in seconds: what `simulate`, `sweep` and `advise` say a model
//! time unit is.

/// Seconds of wall time per model time unit when `train` emulates the
/// config's straggler model (`straggler.time_unit_ms`); `None` when it
/// measures times instead (`straggler.mode = measured`).
pub(crate) fn emulated_unit_s(config: &crate::config::Config) -> Option<f64> {
    (config.straggler.mode == crate::config::StragglerMode::Emulate)
        .then(|| config.straggler.time_unit_ms / 1000.0)
}

/// What a model time unit is in seconds, for a table's heading ("" without one).
pub(crate) fn unit_note(unit_s: Option<f64>) -> String {
    unit_s.map_or(String::new(), |s| {
        format!(" (1 unit = {s} s of emulated delay in train: straggler.time_unit_ms; its iterations add compute and messages)")
    })
}
