//! SIGTERM and SIGINT on the ranks of an MPI run (the flag itself is
//! `crate::signals`), and a panic that ends the whole job.
//!
//! Slurm sends SIGTERM to every task at the time limit (and SIGKILL some time
//! later); mpirun forwards Ctrl-C. The handler only records the signal; the
//! master then abandons the iteration in hand, saves a snapshot, stops the
//! workers and exits, and a worker keeps serving until the master's stop
//! arrives (it tells the master it was signalled, and gives up on its own
//! after [`WORKER_GRACE`] if the master is gone).

use std::time::Duration;

pub use crate::signals::{exit_status, install, name, received, stop_if_asked};

/// How long a signalled worker waits for the master's stop before it exits by itself.
pub const WORKER_GRACE: Duration = Duration::from_secs(4);

/// From now on a panic on this rank ends the whole job at once: the hook
/// prints the panic's message and location with the rank (and a backtrace
/// when `RUST_BACKTRACE` asks for one), then calls `MPI_Abort`, after which
/// mpirun (or srun) ends every rank. Without it a panicking rank would die
/// alone and the others would wait for it until `train.result_timeout_s`.
/// Like a SIGKILL of rank 0, the trace keeps every iteration up to its last
/// flush. Before `MPI_Init` and after `MPI_Finalize` the process just exits.
pub fn abort_on_panic(rank: i32) {
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(no message)".to_string());
        let location = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let who = if rank == 0 {
            "rank 0 (master)".to_string()
        } else {
            format!("rank {rank} (worker {rank})")
        };
        // One line, even when the message has several.
        let message = message.lines().collect::<Vec<_>>().join(" ");
        crate::errln!("error: {who} panicked{location}: {message}; ending the job (MPI_Abort)");
        let backtrace = std::backtrace::Backtrace::capture();
        if backtrace.status() == std::backtrace::BacktraceStatus::Captured {
            crate::errln!("{backtrace}");
        }
        if mpi::is_initialized() && !mpi::is_finalized() {
            crate::output::drain_to_launcher(std::time::Duration::from_secs(1));
            // SAFETY: MPI is initialised and not finalised; MPI_Abort may be
            // called from any thread and does not return.
            unsafe {
                mpi::ffi::MPI_Abort(mpi::ffi::RSMPI_COMM_WORLD, 1);
            }
        }
    }));
}

/// The environment variable of [`panic_if_asked`].
pub const TEST_PANIC_VAR: &str = "GRADCODE_TEST_PANIC_RANK";

/// Fault injection for the tests only (tests/reliability.rs): with
/// `GRADCODE_TEST_PANIC_RANK=R` in the environment rank R panics here (a
/// worker when it takes its first task, the master before the first
/// iteration), so that a test can show a panic ends the job. Nothing else reads it.
#[track_caller]
pub fn panic_if_asked(rank: i32, place: &str) {
    if crate::signals::asks_rank(TEST_PANIC_VAR, rank) {
        panic!("{TEST_PANIC_VAR}={rank}: panic {place}, on purpose");
    }
}

/// The environment variable of [`fail_if_asked`].
pub const TEST_FAIL_VAR: &str = "GRADCODE_TEST_FAIL_RANK";

/// Fault injection for the tests only (tests/mpi.rs): with
/// `GRADCODE_TEST_FAIL_RANK=R` in the environment worker R's step fails
/// here with an error (not a panic), so that a test can show the error
/// reaches the user, naming the worker. Nothing else reads it.
pub fn fail_if_asked(rank: i32, place: &str) -> anyhow::Result<()> {
    if crate::signals::asks_rank(TEST_FAIL_VAR, rank) {
        anyhow::bail!("{TEST_FAIL_VAR}={rank}: failed {place}, on purpose");
    }
    Ok(())
}
