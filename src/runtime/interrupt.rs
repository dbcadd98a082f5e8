//! SIGTERM and SIGINT as a flag that every rank polls.
//!
//! Slurm sends SIGTERM to every task at the time limit (and SIGKILL some time
//! later); mpirun forwards Ctrl-C. The handler only records the signal; the
//! master then abandons the iteration in hand, saves a snapshot, stops the
//! workers and exits, and a worker keeps serving until the master's stop
//! arrives (it tells the master it was signalled, and gives up on its own
//! after [`WORKER_GRACE`] if the master is gone).

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use signal_hook::consts::{SIGINT, SIGTERM};

/// How long a signalled worker waits for the master's stop before it exits by itself.
pub const WORKER_GRACE: Duration = Duration::from_secs(4);

static RECEIVED: OnceLock<Arc<AtomicUsize>> = OnceLock::new();

/// Catch SIGTERM and SIGINT from now on.
pub fn install() -> std::io::Result<()> {
    let flag = RECEIVED.get_or_init(|| Arc::new(AtomicUsize::new(0)));
    for signal in [SIGTERM, SIGINT] {
        signal_hook::flag::register_usize(signal, Arc::clone(flag), signal as usize)?;
    }
    Ok(())
}

/// The last signal caught, if any.
pub fn received() -> Option<i32> {
    let v = RECEIVED.get()?.load(Ordering::SeqCst);
    (v != 0).then_some(v as i32)
}

/// The conventional exit status of a process ended by `signal` (128 + signal).
pub fn exit_status(signal: i32) -> u8 {
    (128 + signal).clamp(0, 255) as u8
}

/// The name of a signal for messages.
pub fn name(signal: i32) -> &'static str {
    match signal {
        SIGTERM => "SIGTERM",
        SIGINT => "SIGINT",
        _ => "a signal",
    }
}
