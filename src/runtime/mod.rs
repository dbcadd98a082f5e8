//! The MPI runtime: `mpirun -n K+1 gradcode train`.
//!
//! SPMD: rank 0 is the master, ranks 1..K the workers. Rank 0 reads the
//! config and broadcasts the resolved TOML; workers never need the file. A
//! world size other than K + 1 is reported by rank 0 in one line and every
//! rank exits with status 2.

pub mod protocol;

#[cfg(feature = "mpi")]
mod comm;
#[cfg(feature = "mpi")]
mod interrupt;
#[cfg(feature = "mpi")]
mod master;
#[cfg(feature = "mpi")]
mod progress;
#[cfg(feature = "mpi")]
mod resume;
#[cfg(feature = "mpi")]
mod round;
#[cfg(feature = "mpi")]
mod trace_out;
#[cfg(feature = "mpi")]
mod worker;

#[cfg(feature = "mpi")]
pub use master::TrainSummary;

use std::path::PathBuf;

use crate::coding::Scheme;
use crate::config::{Config, StateInfo, StragglerMode};
use crate::error::InputError;

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

/// Checks a training run needs beyond the config's own rules, made on rank 0
/// before any MPI work starts.
pub fn check_trainable(config: &Config, scheme: &dyn Scheme) -> Result<(), InputError> {
    if !scheme.exact_decoding() {
        return Err(InputError::value(
            "scheme.kind",
            scheme.kind().name(),
            "does not decode exactly in f64 at this size (see `gradcode check`): train refuses it; simulate works",
        ));
    }
    let s = &config.straggler;
    if s.mode == StragglerMode::Measured && s.state_info == StateInfo::Perfect {
        return Err(InputError::value(
            "straggler.state_info",
            "\"perfect\"",
            "needs straggler.mode = \"emulate\": measured speeds are known only after the iteration",
        ));
    }
    if s.mode == StragglerMode::Emulate {
        // Every computation takes at least alpha model time units: beyond the
        // result timeout no result could ever arrive in time.
        let floor_s = s.alpha * s.time_unit_ms / 1000.0;
        let timeout_s = config.train.result_timeout_s;
        if s.model.keys().contains(&"alpha") && floor_s > timeout_s {
            return Err(InputError::value(
                "straggler.alpha",
                short(s.alpha),
                format!(
                    "makes every emulated computation take at least {floor_s:.3e} s (alpha x straggler.time_unit_ms), more than train.result_timeout_s = {}: no result would arrive in time",
                    short(timeout_s)
                ),
            ));
        }
        crate::straggler::DelaySpec::from_config(config)?;
    }
    Ok(())
}

/// A number for a message: plain when short, in exponent form when plain
/// would print hundreds of digits.
fn short(x: f64) -> String {
    if x == 0.0 || (1e-4..1e15).contains(&x.abs()) {
        x.to_string()
    } else {
        format!("{x:e}")
    }
}

#[cfg(not(feature = "mpi"))]
pub fn train(_options: &TrainOptions) -> anyhow::Result<()> {
    Err(InputError::new("train", "this gradcode was built without the `mpi` feature").into())
}

/// Rank 0's preparation, before any MPI work and without creating or
/// changing a file: config, scheme, world size, trainability, data files
/// (cheap checks; the workers load them later), the trace's path, and the
/// snapshot a resumed run continues from (read only).
#[cfg(feature = "mpi")]
struct Prepared {
    loaded: crate::config::LoadedConfig,
    scheme: Box<dyn Scheme>,
    trace: Option<trace_out::TraceOut>,
    resume: Option<crate::trace::Snapshot>,
    /// What the iterations before the snapshot add to the run's totals.
    carried: crate::engine::Carried,
}

#[cfg(feature = "mpi")]
fn prepare(options: &TrainOptions, world_size: usize) -> Result<Prepared, InputError> {
    if let Some(path) = &options.resume {
        return prepare_resume(options, path, world_size);
    }
    let setup = crate::setup::load(options.config.as_deref(), &options.overrides)?;
    warn_unused(&setup.loaded);
    let crate::setup::Setup { loaded, scheme, .. } = setup;
    check_world(&loaded.config, world_size)?;
    check_trainable(&loaded.config, scheme.as_ref())?;
    crate::learn::data::check_data_files(&loaded.config)?;
    check_batch(&loaded.config, scheme.as_ref())?;
    // Last: the path is checked, the file created when training starts,
    // with the data files' fingerprint a resume checks.
    let mut trace = trace_out::TraceOut::check(&loaded.config, scheme.as_ref(), options)?;
    if let Some(trace) = trace.as_mut() {
        trace.set_data_fingerprint(resume::data_fingerprint(&loaded.config)?);
    }
    Ok(Prepared {
        loaded,
        scheme,
        trace,
        resume: None,
        carried: Default::default(),
    })
}

/// `--resume F.h5`: the config stored in the trace (with any `--set`), the
/// trace reopened at its last snapshot.
#[cfg(feature = "mpi")]
fn prepare_resume(
    options: &TrainOptions,
    path: &std::path::Path,
    world_size: usize,
) -> Result<Prepared, InputError> {
    for (flag, given) in [
        ("--config", options.config.is_some()),
        ("--out", options.out.is_some()),
    ] {
        if given {
            return Err(InputError::new(
                flag,
                "cannot be given with --resume: the run continues the trace and its config",
            ));
        }
    }
    // Only what cannot make it another run may change.
    resume::check_overrides(&options.overrides)?;
    // Read only: a refused resume leaves the file as it was.
    let (trace, snapshot, carried) = trace_out::TraceOut::check_resume(path)?;
    let origin = format!("{} (config_toml)", path.display());
    let setup = crate::setup::parse(&snapshot.config_toml, &origin, &options.overrides)?;
    // The stored config is the resolved one, every key set: its unused keys
    // were reported when the run started.
    let crate::setup::Setup { loaded, scheme, .. } = setup;
    check_world(&loaded.config, world_size)?;
    check_trainable(&loaded.config, scheme.as_ref())?;
    if snapshot.iteration >= loaded.config.train.iterations as u64 {
        return Err(InputError::value(
            "train.iterations",
            loaded.config.train.iterations,
            format!(
                "is already reached: the trace has {} iterations (raise it with --set train.iterations=N to train longer)",
                snapshot.iteration
            ),
        ));
    }
    crate::learn::data::check_data_files(&loaded.config)?;
    if !resume::check_data(trace.stored_data_fingerprint(), &loaded.config)? {
        crate::errln!(
            "warning: {} has no data fingerprint (written by an older gradcode): the data files are not checked",
            path.display()
        );
    }
    check_batch(&loaded.config, scheme.as_ref())?;
    Ok(Prepared {
        loaded,
        scheme,
        trace: Some(trace),
        resume: Some(snapshot),
        carried,
    })
}

/// `train.batch_size` against the scheme's partitions, when the number of
/// training samples is known without reading a file (synthetic and image
/// data; text files are checked when they are read).
#[cfg(feature = "mpi")]
fn check_batch(config: &Config, scheme: &dyn Scheme) -> Result<(), InputError> {
    use crate::config::DataKind;
    match config.data.kind {
        DataKind::Libsvm | DataKind::Csv => Ok(()),
        _ => crate::learn::data::check_batch(
            config.train.batch_size,
            config.data.train_samples,
            scheme.partitions(),
        ),
    }
}

/// Print the keys that are set but unused, and the loader's other warnings
/// (gc-dc's straggler threshold against the model's flags), one `warning:`
/// line each.
#[cfg(feature = "mpi")]
fn warn_unused(loaded: &crate::config::LoadedConfig) {
    for warning in loaded
        .unused_keys()
        .iter()
        .chain(&loaded.threshold_warnings)
    {
        crate::errln!("warning: {warning}");
    }
}

#[cfg(feature = "mpi")]
fn check_world(config: &Config, world_size: usize) -> Result<(), InputError> {
    let k = config.workers;
    if world_size != k + 1 {
        return Err(InputError::value(
            "workers",
            k,
            format!(
                "needs {} MPI ranks (1 master + {k} workers) but this run has {world_size}: use mpirun -n {}",
                k + 1,
                k + 1
            ),
        ));
    }
    Ok(())
}

#[cfg(feature = "mpi")]
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
    gather_hosts(&world);
    // Rank 0 prepares, then broadcasts [status, length] and the resolved TOML.
    let mut prepared = None;
    let mut status = [0u64; 2];
    let mut text = Vec::new();
    if comm.rank() == 0 {
        match prepare(options, comm.size() as usize) {
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
    comm.drain(std::time::Instant::now() + SHUTDOWN_DRAIN);
    outcome
}

/// How long a rank tests its sends in flight at the end of a clean run.
#[cfg(feature = "mpi")]
const SHUTDOWN_DRAIN: std::time::Duration = std::time::Duration::from_secs(3);

/// `runtime.wait` resolved on this node, logged by rank 0.
#[cfg(feature = "mpi")]
fn wait_mode(config: &Config, node: comm::Node, rank: i32) -> comm::WaitMode {
    let mode = comm::WaitMode::resolve(config.runtime.wait, node.ranks, node.cores);
    let text = format!(
        "runtime.wait = {}: {} ({} ranks on this node, {} cores)",
        config.runtime.wait.name(),
        mode.name(),
        node.ranks,
        node.cores
    );
    if rank == 0 {
        log::info!("{text}");
    } else {
        log::debug!("{text}");
    }
    mode
}

/// The master's or a worker's part of the run.
#[cfg(feature = "mpi")]
fn run_rank(
    comm: &comm::Comm<'_>,
    prepared: Option<Prepared>,
    text: &[u8],
    node: comm::Node,
    options: &TrainOptions,
) -> anyhow::Result<()> {
    use crate::error::QuietExit;
    if let Some(Prepared {
        loaded,
        scheme,
        trace,
        resume,
        carried,
    }) = prepared
    {
        let config = &loaded.config;
        let wait = wait_mode(config, node, comm.rank());
        let mut master = master::Master {
            comm,
            config,
            wait,
            workers: scheme.workers(),
            scheme: Some(scheme),
            resume,
            carried: &carried,
        };
        let mut progress = progress::Progress::new(config, options.quiet, &carried);
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
        let end = match trace.as_mut() {
            Some(trace) => master.run(&mut [&mut progress, trace]),
            None => master.run(&mut [&mut progress]),
        };
        progress.clear();
        let master::RunEnd { result, clean } = end;
        // The trace records how the run ended and is closed, before any abort below.
        if let Some(trace) = trace.as_mut() {
            trace.end(&result);
        }
        // The path as created (a made name is final only then).
        let trace_file = trace.as_ref().map(|t| t.path().display().to_string());
        let trace_opened = trace.as_ref().is_some_and(|t| t.opened());
        drop(trace);
        let outcome = result.and_then(|mut summary| {
            summary.trace = trace_file.clone();
            report(&summary, options.json)
        });
        if let Err(e) = &outcome {
            if options.json {
                // The job's summary file says how the run ended, not only the trace.
                crate::outln!(
                    "{}",
                    serde_json::to_string_pretty(&ended_early(e, trace_file.as_deref()))?
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
        let wait = wait_mode(&config, node, comm.rank());
        worker::run(comm, &config, wait)?;
    }
    Ok(())
}

/// `train --json` of a run that did not complete: its status
/// (`interrupted` or `failed`), the error, the iterations done and the trace.
#[cfg(feature = "mpi")]
fn ended_early(error: &anyhow::Error, trace: Option<&str>) -> serde_json::Value {
    let (status, iterations, signal) = match error.downcast_ref::<master::Interrupted>() {
        Some(stop) => ("interrupted", Some(stop.iterations), Some(stop.signal)),
        None => ("failed", None, None),
    };
    serde_json::json!({
        "status": status,
        "error": format!("{error:#}"),
        "iterations": iterations,
        "signal": signal,
        "trace": trace,
    })
}

/// Rank 0 learns every rank's host (MPI_Get_processor_name, at most 255
/// bytes each) for the trace's provenance.
#[cfg(feature = "mpi")]
fn gather_hosts(world: &mpi::topology::SimpleCommunicator) {
    use mpi::traits::*;
    const WIDTH: usize = 256;
    let name =
        mpi::environment::processor_name().unwrap_or_else(|_| crate::provenance::local_host());
    let mut mine = [0u8; WIDTH];
    let n = name.len().min(WIDTH - 1);
    mine[..n].copy_from_slice(&name.as_bytes()[..n]);
    let root = world.process_at_rank(0);
    if world.rank() == 0 {
        let mut all = vec![0u8; WIDTH * world.size() as usize];
        root.gather_into_root(&mine[..], &mut all[..]);
        let hosts: Vec<String> = all
            .chunks(WIDTH)
            .map(|c| {
                let end = c.iter().position(|&b| b == 0).unwrap_or(c.len());
                String::from_utf8_lossy(&c[..end]).into_owned()
            })
            .collect();
        crate::provenance::set_hosts(&hosts);
    } else {
        root.gather_into(&mine[..]);
    }
}

#[cfg(feature = "mpi")]
fn report(summary: &TrainSummary, json: bool) -> anyhow::Result<()> {
    if summary.final_train_loss.is_nan() {
        crate::errln!(
            "warning: the training loss at the final model is not known: a partition's loss did not \
             arrive in its evaluation (a worker stopped taking tasks?) or a signal stopped it; \
             final_train_loss is null, never an older iteration's value"
        );
    }
    if json {
        let mut value = serde_json::to_value(summary)?;
        if let serde_json::Value::Object(map) = &mut value {
            map.insert("status".to_string(), "completed".into());
        }
        crate::outln!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(());
    }
    print_timing(summary);
    crate::outln!(
        "trained {} on {} workers for {} iterations: mean iteration {:.4} s, final train loss {:.6e}, test loss {:.6e}",
        summary.scheme,
        summary.workers,
        summary.iterations,
        summary.mean_iteration_s,
        summary.final_train_loss,
        summary.final_test_loss
    );
    crate::outln!(
        "mean recovered fraction {:.3}, stale results dropped {}, emulation overruns {}, tasks abandoned by workers {}",
        summary.mean_recovered_fraction,
        summary.stale_dropped,
        summary.overruns,
        summary.tasks_abandoned
    );
    if let Some(trace) = &summary.trace {
        crate::outln!("trace: {trace}");
    }
    Ok(())
}

/// The timing summary, like PETSc's -log_view: every named event with its
/// total, count, mean and share of the run's wall time (the workers' compute:
/// share of the workers' combined time).
#[cfg(feature = "mpi")]
fn print_timing(summary: &TrainSummary) {
    let wall = summary.wall_s;
    crate::outln!(
        "{:<28} {:>12} {:>9} {:>12} {:>8}",
        "event",
        "total s",
        "count",
        "mean s",
        "% wall"
    );
    for e in &summary.timing {
        let capacity = if e.event.starts_with("compute") {
            wall * summary.workers as f64
        } else {
            wall
        };
        crate::outln!(
            "{:<28} {:>12.6} {:>9} {:>12.3e} {:>7.2}%",
            e.event,
            e.total_s,
            e.count,
            e.total_s / e.count.max(1) as f64,
            100.0 * e.total_s / capacity
        );
    }
}
