//! The Monte Carlo simulator: many iterations of every compared scheme under
//! sampled delays, on a virtual clock, in seconds.
//!
//! A simulation is the iteration driver ([`crate::engine::Driver`]) with the
//! simulated round ([`crate::engine::SimulatedRound`]): one lane per scheme
//! of `simulate.compare`, one run per trial on the trial's own straggler
//! stream, every scheme on the same samples (common random numbers). What a
//! config means (stop rule, deadlines, state information, planning) is the
//! same code as in `train`. [`run`] adds the statistics ([`SimReport`]) and
//! [`lower_bound`] the bound of 000 §VI.
//!
//! Time here is the papers' unitless model time. A `[network]` section
//! ([`crate::network`]) adds each message's way to the master ([`crate::network::delivery`]); its
//! seconds are turned into model time by `straggler.time_unit_ms`. The lower
//! bounds stay those of computation alone.

pub mod communication;
pub mod delivery;
pub mod message_size;
#[cfg(test)]
mod network_tests;
pub mod run;
pub mod to_loss;

pub use run::{BoundSummary, NetworkSummary, SchemeSummary, SimReport, Simulation};
pub use to_loss::{LossRunError, TrialToLoss, default_target, exact_losses, time_to_loss};

use crate::straggler::RoundSample;

/// The lower bound of 000 §VI on one sample: the iteration ends as soon as
/// the `needed`-th fastest of all K workers finishes its whole task of
/// `load` computations (the full gradient recovered from any P(l − r + 1)
/// workers, whatever the code). `scratch` is reused between calls.
pub fn lower_bound(
    sample: &RoundSample,
    load: usize,
    needed: usize,
    scratch: &mut Vec<f64>,
) -> f64 {
    let k = sample.workers();
    assert!(
        (1..=k).contains(&needed),
        "lower bound needs between 1 and {k} workers, not {needed}"
    );
    scratch.clear();
    scratch.extend((0..k).map(|w| sample.message_time(w, load)));
    let (_, &mut t, _) = scratch.select_nth_unstable_by(needed - 1, f64::total_cmp);
    t
}
