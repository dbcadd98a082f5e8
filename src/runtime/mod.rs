//! The MPI runtime: `mpirun -n K+1 gradcode train`.
//!
//! SPMD: rank 0 is the master, ranks 1..K the workers. Rank 0 reads the
//! config and, once every worker has said hello (`setup`, no collective:
//! a silent worker is named after `train.result_timeout_s`), sends each
//! the resolved TOML; workers never need the file. A world size other than
//! K + 1 is reported by rank 0 in one line and every rank exits with status 2.
//!
//! The whole module is compiled with the `mpi` feature only (`lib.rs`); a
//! build without it says so when asked to train (`cli`).

pub mod protocol;

mod comm;
mod interrupt;
mod master;
mod packing;
mod prepare;
pub mod probe;
mod progress;
mod report;
mod resume;
mod round;
mod setup;
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
    // The launcher's sockets, which the finalize guard never touches.
    let inherited = crate::finalize::InheritedSockets::record();
    // Funneled: a worker loads its partitions on a second thread while the
    // main thread, the only one that calls MPI, keeps talking to the master.
    let (universe, _) = mpi::initialize_with_threading(mpi::Threading::Funneled)
        .ok_or_else(|| anyhow::anyhow!("MPI was already initialised"))?;
    let world = universe.world();
    let comm = comm::Comm::new(&world);
    // A panic on any rank ends the job at once, with its message.
    interrupt::abort_on_panic(comm.rank());
    // From here on SIGTERM and SIGINT only raise a flag (see `interrupt`).
    interrupt::install()?;
    crate::logging::set_rank(comm.rank());
    log::info!("MPI world of {} ranks", comm.size());
    interrupt::stop_if_asked(comm.rank(), "before the setup");
    let outcome = if comm.rank() == 0 {
        run_rank_zero(&comm, options)
    } else {
        run_worker(&comm)
    };
    let outcome = print_error(outcome);
    settle_messages(&comm, &outcome);
    drop(comm);
    // MPI_Finalize (dropping the universe) cannot hang the finished job.
    let library = mpi::environment::library_version().unwrap_or_default();
    crate::finalize::FinalizeGuard::arm(&inherited, &library);
    drop(universe);
    outcome
}

/// Rank 0 prepares, hears every worker's hello (at most the result
/// timeout), then sends each the verdict: the config and its node; and runs
/// the master.
fn run_rank_zero(comm: &comm::Comm<'_>, options: &TrainOptions) -> anyhow::Result<()> {
    let prepared = prepare::prepare(options, comm.size() as usize);
    let timeout_s = prepared.as_ref().map_or_else(
        |_| crate::config::Config::default().train.result_timeout_s,
        |p| p.loaded.config.train.result_timeout_s,
    );
    let hellos = match setup::await_hellos(comm, timeout_s) {
        Ok(hellos) => hellos,
        Err(e) => {
            if let Err(input) = &prepared {
                crate::errln!("error: {input}");
            }
            crate::errln!("error: {e}");
            comm.abort(1);
        }
    };
    let hosts: Vec<String> = hellos.iter().map(|h| h.host.clone()).collect();
    crate::provenance::set_hosts(&hosts);
    let fallback_cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let nodes = setup::nodes(&hellos, fallback_cores);
    match prepared {
        Ok(p) => {
            comm.set_rest_limit_s(p.loaded.config.train.result_timeout_s);
            let toml = p.loaded.config.to_toml();
            for (w, node) in nodes.iter().enumerate().skip(1) {
                let verdict = setup::Verdict::Config {
                    toml: toml.clone(),
                    node: *node,
                };
                comm.send(w as i32, protocol::TAG_CONFIG, &verdict.encode());
            }
            run_master(comm, p, nodes[0], options)
        }
        Err(e) => {
            crate::errln!("error: {e}");
            for w in 1..comm.size() {
                comm.send(w, protocol::TAG_CONFIG, &setup::Verdict::Refused.encode());
            }
            Err(crate::error::QuietExit(2).into())
        }
    }
}

/// A worker rank: its setup from the master (the verdict), then its work.
fn run_worker(comm: &comm::Comm<'_>) -> anyhow::Result<()> {
    match setup::worker_setup(comm)? {
        setup::Verdict::Refused => Err(crate::error::QuietExit(2).into()),
        setup::Verdict::Config { toml, node } => {
            let config = crate::config::parse(&toml, "<config from the master>", &[])?.config;
            comm.set_rest_limit_s(config.train.result_timeout_s);
            let wait = comm::wait_mode(&config, node, comm.rank());
            worker::run(comm, &config, wait)
        }
    }
}

/// Each rank prints its own error now, before MPI finalises: a worker that
/// exits with a failure status after finalising makes the launcher kill
/// the others, and rank 0's line must have reached the launcher by then.
/// The error becomes a `QuietExit` with the status it ends the rank with.
fn print_error(outcome: anyhow::Result<()>) -> anyhow::Result<()> {
    use crate::error::QuietExit;
    outcome.map_err(|e| {
        let printed = !e.is::<QuietExit>();
        let code = crate::output::report_error(&e);
        // A launcher reads the pipe as it comes; anyone else may read it
        // only once this process has ended (nothing to wait for then). A
        // quiet exit printed nothing here: it does not wait (a launcher
        // that is ending the job may have stopped reading, and mpirun
        // crashed in its finalize when the ranks outlived its SIGKILL).
        if printed && crate::output::launcher_rank().is_some() {
            crate::output::drain_to_launcher(std::time::Duration::from_secs(1));
        }
        QuietExit(code).into()
    })
}

/// Every send completes before MPI finalises (the destinations have
/// received them all by the end of the stop/bye handshake), and every
/// posted receive finished: when not, a peer is stopped or gone and
/// MPI_Finalize would wait for it for ever, so the job is aborted.
fn settle_messages(comm: &comm::Comm<'_>, outcome: &anyhow::Result<()>) {
    // How long a rank tests its sends in flight at the end of a clean run.
    let left = comm.drain(std::time::Instant::now() + std::time::Duration::from_secs(3));
    if left > 0 {
        // A peer never took them: MPI_Finalize would wait for it for ever.
        crate::errln!(
            "error: rank {}: {left} message(s) to rank(s) {:?} not taken within 3 s of the end; ending the job with MPI_Abort",
            comm.rank(),
            comm.pending_ranks()
        );
        // Not a success, even where this rank's own part went well.
        comm.abort(exit_code(outcome).max(1));
    }
    let unfinished = comm.abandon_receives();
    if !unfinished.is_empty() {
        // Posted receives a stopped sender never finished: the same.
        crate::errln!(
            "error: rank {}: message(s) from rank(s) {unfinished:?} never arrived whole; ending the job with MPI_Abort",
            comm.rank()
        );
        comm.abort(exit_code(outcome).max(1));
    }
}

/// The exit status `outcome` ends this rank with (its errors are all
/// `QuietExit`s by now, printed).
fn exit_code(outcome: &anyhow::Result<()>) -> u8 {
    outcome.as_ref().err().map_or(0, |e| {
        e.downcast_ref::<crate::error::QuietExit>()
            .map_or(1, |q| q.0)
    })
}

/// The master's part of the run.
fn run_master(
    comm: &comm::Comm<'_>,
    prepared: prepare::Prepared,
    node: comm::Node,
    options: &TrainOptions,
) -> anyhow::Result<()> {
    let prepare::Prepared {
        loaded,
        scheme,
        trace,
    } = prepared;
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
    let written = trace_file.as_deref().filter(|_| trace_opened);
    let completed = progress.completed() as u64;
    end_master(comm, outcome, clean, options.json, completed, written)
}

/// Say how the master's run ended when it failed (`--json`: the summary of
/// a run that ended early, after `completed` iterations; the trace
/// `written`, if any) and end the job: a signal with its exit status, and
/// a run that did not end cleanly (a worker is gone or hangs: MPI cannot
/// shut down cleanly) with `MPI_Abort`, the trace closed by then.
fn end_master(
    comm: &comm::Comm<'_>,
    outcome: anyhow::Result<()>,
    clean: bool,
    json: bool,
    completed: u64,
    written: Option<&str>,
) -> anyhow::Result<()> {
    use crate::error::QuietExit;
    if let Err(e) = &outcome {
        if json {
            // The job's summary file says how the run ended, not only the trace.
            crate::outln!(
                "{}",
                serde_json::to_string_pretty(&report::ended_early(e, completed, written))?
            );
        }
        // Every run that wrote a trace says where (an input error,
        // which leaves no trace, stays one line).
        if let Some(path) = written {
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
    outcome
}
