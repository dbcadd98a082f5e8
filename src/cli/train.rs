//! `gradcode train`: its flags, handed to the MPI runtime
//! ([`crate::runtime::train`]); a build without the `mpi` feature refuses it.

use std::path::PathBuf;

use clap::Args;

use super::ConfigArgs;

/// The flags of `train`.
#[derive(Debug, Args)]
pub struct TrainArgs {
    #[command(flatten)]
    pub args: ConfigArgs,
    /// No progress output (the summary is still printed).
    #[arg(long)]
    pub quiet: bool,
    /// HDF5 trace to write (default: output.trace of the config).
    #[arg(long, value_name = "F.h5")]
    pub out: Option<PathBuf>,
    /// Overwrite an existing trace.
    #[arg(long)]
    pub force: bool,
    /// Continue the interrupted run of this trace from its last snapshot
    /// (its config; `--set train.iterations=N` trains longer).
    #[arg(long, value_name = "F.h5", conflicts_with_all = ["out", "force"])]
    pub resume: Option<PathBuf>,
}

/// Train under MPI with these flags.
#[cfg(feature = "mpi")]
pub(super) fn run(flags: TrainArgs) -> anyhow::Result<()> {
    crate::runtime::train(&crate::runtime::TrainOptions {
        config: flags.args.config,
        overrides: flags.args.overrides,
        json: flags.args.json,
        quiet: flags.quiet,
        out: flags.out,
        force: flags.force,
        resume: flags.resume,
    })
}

/// Without MPI there is no runtime to train on.
#[cfg(not(feature = "mpi"))]
pub(super) fn run(_flags: TrainArgs) -> anyhow::Result<()> {
    Err(
        crate::error::InputError::new("train", "this gradcode was built without the `mpi` feature")
            .into(),
    )
}
