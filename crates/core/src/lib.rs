//! gradcode-core: the pure part of gradcode, built and tested without MPI,
//! HDF5 or a command line.
//!
//! - [`config`]: the TOML schema, `--set` overrides, validation;
//! - [`coding`]: the gradient codes behind one [`coding::Scheme`] interface,
//!   and their registry ([`coding::registry`]);
//! - [`setup`]: the loader: config, the registry's checks, the scheme;
//! - [`spec`]: the typed run: the batch and the aggregation, decided once;
//! - [`cluster`]: GC-DC's per-iteration clustering;
//! - [`straggler`]: delay models and trace replay;
//! - [`learn`]: data partitions, loss/gradient kernels, optimisers;
//! - [`engine`]: the iteration driver, the stop rule, the simulated round,
//!   the observer interface (the MPI round is in `gradcode`);
//! - [`network`]: the `[network]` values, checked (communication in the model);
//! - [`sim`]: the Monte Carlo simulator;
//! - [`record`]: what one iteration leaves behind (the trace's vocabulary);
//! - [`stats`]: means, confidence intervals, percentiles.
//!
//! The `gradcode` crate adds the MPI runtime, HDF5 trace I/O and the CLI.

pub mod cluster;
pub mod coding;
pub mod config;
pub mod csvfile;
pub mod engine;
pub mod error;
pub mod files;
pub mod learn;
pub mod network;
pub mod record;
pub mod rng;
pub mod setup;
pub mod sim;
pub mod spec;
pub mod stats;
pub mod straggler;
pub mod study;
pub mod textfile;
