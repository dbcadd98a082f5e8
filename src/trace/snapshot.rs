//! The two snapshot slots of a training trace, the attribute naming the
//! committed one, and what a resume reads back (see
//! `backend/hdf5/checkpoint.rs` for how they are written).

/// `/model/snapshot_0`, `/model/snapshot_1`: the two snapshot slots, written
/// in turn; the attribute [`SNAPSHOT_COMMITTED`] of `/model` names the one
/// a resume reads.
pub const SNAPSHOT_SLOTS: [&str; 2] = ["snapshot_0", "snapshot_1"];

/// The attribute of `/model` naming the committed snapshot slot (0 or 1;
/// [`NO_SNAPSHOT`] before the first commit).
pub const SNAPSHOT_COMMITTED: &str = "snapshot";

/// The value of [`SNAPSHOT_COMMITTED`] before a snapshot is committed.
pub const NO_SNAPSHOT: u64 = u64::MAX;

/// What an interrupted run needs to continue: the iterate after `iteration`
/// completed iterations, the one before it, and the run's resolved config.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub iteration: u64,
    pub theta: Vec<f64>,
    pub previous_theta: Vec<f64>,
    pub config_toml: String,
    pub seed: u64,
}
