//! gradcode: straggler-tolerant distributed gradient descent with gradient coding.
//!
//! The math core (config, coding) is pure and deterministic given the seed;
//! see DESIGN.md for the data path and `README.md` for the command line.

pub mod cli;
pub mod cluster;
pub mod coding;
pub mod config;
pub mod error;
pub mod learn;
pub mod logging;
pub mod rng;
pub mod runtime;
pub mod sim;
pub mod straggler;
pub mod textfile;
pub mod trace;
