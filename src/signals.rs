//! SIGTERM and SIGINT as a flag that the run polls: every rank of `train`
//! (`runtime::interrupt`), and `simulate` between its rounds. The handler
//! only records the signal; the run then ends its iteration loop, its
//! trace records the status `interrupted`, and the process exits with
//! 128 + the signal.

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

use signal_hook::consts::{SIGINT, SIGTERM};

static RECEIVED: OnceLock<Arc<AtomicUsize>> = OnceLock::new();
/// The process that sent the last signal caught (0: the kernel or unknown).
static SENDER_PID: AtomicI32 = AtomicI32::new(0);

/// Catch SIGTERM and SIGINT from now on, noting who sent them.
pub fn install() -> std::io::Result<()> {
    let flag = RECEIVED.get_or_init(|| Arc::new(AtomicUsize::new(0)));
    for signal in [SIGTERM, SIGINT] {
        let flag = Arc::clone(flag);
        // SAFETY: the action only stores into atomics, which is
        // async-signal-safe; `si_pid` reads a field the kernel filled.
        unsafe {
            signal_hook_registry::register_sigaction(signal, move |info: &libc::siginfo_t| {
                SENDER_PID.store(info.si_pid(), Ordering::SeqCst);
                flag.store(signal as usize, Ordering::SeqCst);
            })?;
        }
    }
    Ok(())
}

/// Who sent the last signal caught, in words for a message: `" from
/// mpirun (pid 4242), this process's launcher: ..."`; empty when the
/// kernel sent it (a terminal's Ctrl-C) or it is not known. The launcher
/// (the parent process: mpirun, orted, Hydra's proxy, slurmstepd) sends
/// SIGTERM both when the job is cancelled or out of time and when another
/// rank of the job died: its own output says which.
pub fn sender() -> String {
    let pid = SENDER_PID.load(Ordering::SeqCst);
    if pid <= 0 {
        return String::new();
    }
    let command = std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|c| c.trim().to_string())
        .unwrap_or_else(|_| "a process now gone".to_string());
    // SAFETY: getppid has no preconditions.
    if pid == unsafe { libc::getppid() } {
        format!(
            " from {command} (pid {pid}), this rank's launcher, which sends it when the job is cancelled or another rank died (its output says which)"
        )
    } else {
        format!(" from {command} (pid {pid})")
    }
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
        }?;
        match sender() {
            from if from.is_empty() => Ok(()),
            from => write!(f, "; {signal} came{from}"),
        }
    }
}

impl std::error::Error for Interrupted {}

/// Whether the fault-injection variable `var` (tests only) names `rank`.
pub fn asks_rank(var: &str, rank: i32) -> bool {
    std::env::var(var)
        .ok()
        .and_then(|v| v.trim().parse::<i32>().ok())
        == Some(rank)
}

/// The environment variable of [`stop_if_asked`].
pub const TEST_STOP_VAR: &str = "GRADCODE_TEST_STOP_RANK";

/// Fault injection for the tests only (tests/reliability.rs, tests/probe.rs): with
/// `GRADCODE_TEST_STOP_RANK=R` in the environment rank R stops itself here
/// (SIGSTOP, as `kill -STOP` or a suspended job would), so that a test can
/// show that the other ranks do not wait for it without a bound. Nothing
/// else reads it.
pub fn stop_if_asked(rank: i32, place: &str) {
    if asks_rank(TEST_STOP_VAR, rank) {
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
