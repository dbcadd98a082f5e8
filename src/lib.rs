//! gradcode: straggler-tolerant distributed gradient descent with gradient coding.
//!
//! This crate is the MPI runtime ([`runtime`]), the HDF5 traces ([`trace`])
//! and the command line ([`cli`]), on top of the pure core
//! [`gradcode_core`], whose modules it re-exports under their own names
//! (`gradcode::coding`, `gradcode::config`, ...). The core depends on no MPI,
//! HDF5 or command-line crate: a dependency pointing the wrong way does not
//! compile.

pub use gradcode_core::{
    cluster, coding, config, csvfile, engine, error, files, learn, record, rng, setup, sim, spec,
    stats, straggler, study, textfile,
};

pub mod cli;
#[cfg(feature = "mpi")]
pub mod finalize;
pub mod logging;
pub mod output;
pub mod process_setup;
pub mod provenance;
#[cfg(feature = "mpi")]
pub mod runtime;
pub mod signals;
pub mod trace;
