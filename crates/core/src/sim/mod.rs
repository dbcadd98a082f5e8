//! The Monte Carlo simulator: many iterations of every compared scheme under
//! sampled delays, on a virtual clock, in seconds.
//!
//! - [`round`]: one iteration of one scheme given one [`RoundSample`]
//!   (arrival events, the master's stopping rule, decoding), and the lower
//!   bound of 000 §VI.
//! - [`run`]: trials × iterations × schemes on common random numbers, with
//!   per-scheme statistics ([`SimReport`]) and optional per-iteration records
//!   for a trace.
//!
//! Time here is the papers' unitless model time.
//!
//! [`RoundSample`]: crate::straggler::RoundSample

pub mod round;
pub mod run;

pub use round::{RoundEngine, RoundOutcome, WorkerDetail, lower_bound};
pub use run::{
    BoundSummary, Contender, SchemeSummary, SimReport, SimSettings, Simulation, build_entry,
    simulate,
};
