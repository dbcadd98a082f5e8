//! What a trace writer is given when it creates a trace (its root
//! attributes) and how often it writes and flushes its records.

/// The root attributes of a trace (`gradcode_version` is added by the writer).
#[derive(Debug, Clone, PartialEq)]
pub struct TraceMeta {
    /// `scheme.kind` (a simulation trace: the compared schemes, comma separated).
    pub scheme: String,
    pub workers: usize,
    /// The resolved config (`Config::to_toml`).
    pub config_toml: String,
    pub seed: u64,
}

/// Records are written and the file flushed at most this often (and at most once per iteration).
pub const FLUSH_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);
