//! SIGTERM and SIGINT as a flag that the run polls: every rank of `train`
//! (`runtime::interrupt`), and `simulate` between its rounds. The handler
//! only records the signal; the run then ends its iteration loop, its
//! trace records the status `interrupted`, and the process exits with
//! 128 + the signal.

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use signal_hook::consts::{SIGINT, SIGTERM};

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

/// The run was stopped by a signal after `iterations` completed iterations;
/// the trace holds them and a snapshot to resume from. Or it was stopped
/// during the setup, before any iteration, while the workers listed in
/// `during_setup` had not loaded their data yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interrupted {
    pub signal: i32,
    pub iterations: u64,
    pub during_setup: Option<String>,
}

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let signal = name(self.signal);
        match &self.during_setup {
            Some(workers) if workers.is_empty() => write!(
                f,
                "interrupted by {signal} during setup, before the first iteration"
            ),
            Some(workers) => write!(
                f,
                "interrupted by {signal} during setup, before the first iteration; workers not ready: {workers}"
            ),
            None => write!(
                f,
                "interrupted by {signal} after {} iterations; the trace holds them and a snapshot: continue with `gradcode train --resume TRACE`",
                self.iterations
            ),
        }
    }
}

impl std::error::Error for Interrupted {}

/// The environment variable of [`stop_if_asked`].
pub const TEST_STOP_VAR: &str = "GRADCODE_TEST_STOP_RANK";

/// Fault injection for the tests only (tests/reliability.rs, tests/probe.rs): with
/// `GRADCODE_TEST_STOP_RANK=R` in the environment rank R stops itself here
/// (SIGSTOP, as `kill -STOP` or a suspended job would), so that a test can
/// show that the other ranks do not wait for it without a bound. Nothing
/// else reads it.
pub fn stop_if_asked(rank: i32, place: &str) {
    let asked = std::env::var(TEST_STOP_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<i32>().ok());
    if asked == Some(rank) {
        log::warn!("{TEST_STOP_VAR}={rank}: stopping {place}, on purpose");
        // SAFETY: raise only sends a signal to this process.
        unsafe {
            libc::raise(libc::SIGSTOP);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_status_is_128_plus_the_signal() {
        assert_eq!(exit_status(SIGTERM), 143);
        assert_eq!(exit_status(SIGINT), 130);
        assert_eq!(name(SIGTERM), "SIGTERM");
    }
}
