//! The models `advise` simulates its candidates with, fitted to a training
//! trace (issue 26, item 2): the straggler model to the workers' measured
//! times ([`crate::trace::measured`] through [`crate::study::model`]) and
//! a `[network]` to their transfers ([`crate::trace::fit::network`]); or,
//! without a trace, to a replay CSV or the config's
//! ([`crate::trace::fit::models`]). The candidate search that runs them is
//! [`crate::study::advise`]'s.

/// The `[network]` fitted to a trace's transfers.
pub mod network;
pub use network::{NetworkSource, fit_network};

/// The straggler model and network of the candidates, and the config they make.
pub mod models;
pub use models::{fit_models, fit_trace, fitted_base};
