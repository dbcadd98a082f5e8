//! The MPI runtime: `mpirun -n K+1 gradcode train`.
//!
//! SPMD: rank 0 is the master, ranks 1..K the workers. Rank 0 reads the
//! config and broadcasts the resolved TOML; workers never need the file. A
//! world size other than K + 1 is reported by rank 0 in one line and every
//! rank exits with status 2.
//!
//! The whole module is compiled with the `mpi` feature only (`lib.rs`); a
//! build without it says so when asked to train (`cli`).

pub mod protocol;

mod comm;
mod interrupt;
mod master;
mod packing;
mod prepare;
mod progress;
mod report;
mod resume;
mod round;
mod worker;

pub use master::TrainSummary;

use std::path::PathBuf;

/// Options of `gradcode train`.
#[derive(Debug, Clone)]
pub struct TrainOptions {
    pub config: Option<PathBuf>,
    pub overrides: Vec<String>,
    pub json: bool,
    pub quiet: bool,
    /// The trace file (`output.trace` when absent).
    pub out: Option<PathBuf>,
    /// Overwrite an existing trace.
    pub force: bool,
    /// Continue the interrupted run of this trace from its last snapshot.
    pub resume: Option<PathBuf>,
}

pub fn train(options: &TrainOptions) -> anyhow::Result<()> {
    use mpi::traits::*;

    use crate::error::QuietExit;

    // Funneled: a worker loads its partitions on a second thread while the
    // main thread, the only one that calls MPI, keeps talking to the master.
    let (universe, _) = mpi::initialize_with_threading(mpi::Threading::Funneled)
        .ok_or_else(|| anyhow::anyhow!("MPI was already initialised"))?;
    let world = universe.world();
    let root = world.process_at_rank(0);
    let comm = comm::Comm::new(&world);
    // A panic on any rank ends the job at once, with its message.
    interrupt::abort_on_panic(comm.rank());
    // From here on SIGTERM and SIGINT only raise a flag (see `interrupt`).
    interrupt::install()?;
    crate::logging::set_rank(comm.rank());
    log::info!("MPI world of {} ranks", comm.size());
    comm::gather_hosts(&world);
    // Rank 0 prepares, then broadcasts [status, length] and the resolved TOML.
    let mut prepared = None;
    let mut status = [0u64; 2];
    let mut text = Vec::new();
    if comm.rank() == 0 {
        match prepare::prepare(options, comm.size() as usize) {
            Ok(p) => {
                text = p.loaded.config.to_toml().into_bytes();
                prepared = Some(p);
            }
            // Print before the broadcast: the workers exit as soon as they hear,
            // and mpirun may kill rank 0 before it gets to print afterwards.
            Err(e) => crate::errln!("error: {e}"),
        }
        status = [u64::from(prepared.is_none()), text.len() as u64];
    }
    root.broadcast_into(&mut status[..]);
    if status[0] != 0 {
        return Err(QuietExit(2).into());
    }
    text.resize(status[1] as usize, 0);
    root.broadcast_into(&mut text[..]);

    // Collective: how many ranks share this node and how many cores they have.
    let node = comm::Node::probe(&world);
    let outcome = run_rank(&comm, prepared, &text, node, options);
    // Every send completes before MPI finalises (the destinations have
    // received them all by the end of the stop/bye handshake).
    // How long a rank tests its sends in flight at the end of a clean run.
    comm.drain(std::time::Instant::now() + std::time::Duration::from_secs(3));
    outcome
}

/// The master's or a worker's part of the run.
fn run_rank(
    comm: &comm::Comm<'_>,
    prepared: Option<prepare::Prepared>,
    text: &[u8],
    node: comm::Node,
    options: &TrainOptions,
) -> anyhow::Result<()> {
    use crate::error::QuietExit;
    if let Some(prepare::Prepared {
        loaded,
        scheme,
        trace,
    }) = prepared
    {
        let config = &loaded.config;
        let wait = comm::wait_mode(config, node, comm.rank());
        let mut master = master::Master {
            comm,
            config,
            wait,
            one_node: node.one_node,
            workers: scheme.workers(),
            scheme: Some(scheme),
        };
        let mut progress = progress::Progress::new(config, options.quiet);
        let mut trace = trace;
        if let Some(trace) = trace.as_mut() {
            trace.set_losses(config);
            trace.set_wait(
                wait.name(),
                &format!(
                    "runtime.wait = {}; {} ranks on the master's node, {} cores",
                    config.runtime.wait.name(),
                    node.ranks,
                    node.cores
                ),
            );
        }
        // The session finishes the observers: the trace records how the run
        // ended and is closed, before any abort below.
        let end = master.run(
            &mut [&mut progress],
            trace
                .as_mut()
                .map(|t| t as &mut dyn crate::engine::Checkpoint),
        );
        let master::RunEnd { result, clean } = end;
        // The path as created (a made name is final only then).
        let trace_file = trace.as_ref().map(|t| t.path().display().to_string());
        let trace_opened = trace.as_ref().is_some_and(|t| t.opened());
        drop(trace);
        let outcome = result.and_then(|mut summary| {
            summary.trace = trace_file.clone();
            report::report(&summary, options.json)
        });
        if let Err(e) = &outcome {
            if options.json {
                // The job's summary file says how the run ended, not only the trace.
                crate::outln!(
                    "{}",
                    serde_json::to_string_pretty(&report::ended_early(e, trace_file.as_deref()))?
                );
            }
            // Every run that wrote a trace says where (an input error,
            // which leaves no trace, stays one line).
            if let (Some(path), true) = (&trace_file, trace_opened) {
                crate::errln!("trace: {path}");
            }
            if let Some(stop) = e.downcast_ref::<master::Interrupted>() {
                crate::errln!("gradcode: {stop}");
                if !clean {
                    comm.abort(interrupt::exit_status(stop.signal));
                }
                return Err(QuietExit(interrupt::exit_status(stop.signal)).into());
            }
        }
        if !clean {
            // A worker is gone or hangs: MPI cannot shut down cleanly. The trace is closed.
            match &outcome {
                Ok(()) => {
                    crate::errln!(
                        "warning: training completed and the trace is closed; ending the job with MPI_Abort"
                    );
                    comm.abort(0);
                }
                Err(e) => {
                    crate::errln!("error: {e:#}");
                    comm.abort(1);
                }
            }
        }
        outcome?;
    } else {
        let text = std::str::from_utf8(text)
            .map_err(|_| anyhow::anyhow!("broadcast config is not UTF-8"))?;
        let config = crate::config::parse(text, "<broadcast config>", &[])?.config;
        let wait = comm::wait_mode(&config, node, comm.rank());
        worker::run(comm, &config, wait, node.one_node)?;
    }
    Ok(())
}
