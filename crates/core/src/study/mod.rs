//! Studies over many configs, on common random numbers (the same seed, so
//! the same straggler samples wherever K is the same):
//!
//! - [`grid`]: `KEY=V1,V2,...` axes and every combination of their values;
//! - [`variant`]: the variants of one typed base config (a scheme and one
//!   value per key, set as `--set` sets them), run as `simulate` runs them,
//!   and those that repeat an earlier one; [`skipped`]: those not run, with
//!   the reason;
//! - [`search`]: the candidates `advise` searches per scheme and the memory
//!   they store; [`advise`](mod@advise): the search itself, with the rules
//!   each candidate passes and the reasons of those skipped; [`rank`](mod@rank): their ranking with paired intervals;
//! - [`model`]: the straggler model simulated, the config's or fitted to
//!   measured times, and [`sensitivity`](mod@sensitivity): the advice at the ends of the
//!   fitted parameters' intervals;
//! - [`sweep`](mod@sweep): `sweep`'s variants of every scheme, ranked;
//! - [`speedup`]: the speedup of runs over a baseline's, paired by seed
//!   where they can be.
//!
//! The commands `sweep`, `advise` and `compare` parse their flags, call
//! these and print.

pub mod advise;
pub mod grid;
pub mod model;
pub mod rank;
pub mod search;
pub mod sensitivity;
pub mod skipped;
pub mod speedup;
pub mod sweep;
pub mod variant;

pub use grid::{Axis, MAX_GRID_VARIANTS, combinations, describe, label, parse_axis, parse_grid};
pub use model::{ModelSource, Sensitivity};
pub use rank::{Candidate, Objective, Ran, rank};
pub use sensitivity::{SENSITIVITY_CANDIDATES, sensitivity};
pub use skipped::{Skipped, describe_skipped, merge_skipped};
pub use variant::{Outcome, VariantRunner};
