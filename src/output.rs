//! Writing to stdout and stderr without panicking on a closed pipe.
//!
//! `println!` panics when stdout is a pipe whose reader has gone
//! (`gradcode check | head -1`). Everything the binary prints goes through
//! [`outln!`](crate::outln) and [`errln!`](crate::errln) instead: once a
//! stream's reader has gone, further writes to it are dropped and the
//! command runs to its end as usual (a trace is still closed, MPI still
//! finalised), exiting 0 when nothing else failed, so `set -o pipefail`
//! scripts are not broken by `| head`. Any other error writing stdout (a
//! full disk behind a redirection) is kept and reported by `main` with exit
//! status 1: the output is incomplete.

use std::fmt;
use std::io::{ErrorKind, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
static STDERR_CLOSED: AtomicBool = AtomicBool::new(false);
static STDOUT_FAILURE: Mutex<Option<String>> = Mutex::new(None);

/// Write to stdout (see the module docs).
pub fn write_stdout(args: fmt::Arguments<'_>) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != ErrorKind::BrokenPipe {
            let mut failure = STDOUT_FAILURE.lock().unwrap_or_else(|p| p.into_inner());
            failure.get_or_insert_with(|| e.to_string());
        }
    }
}

/// Write to stderr; when it cannot be written there is nowhere to say so,
/// so the line is dropped.
pub fn write_stderr(args: fmt::Arguments<'_>) {
    if STDERR_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    if std::io::stderr().lock().write_fmt(args).is_err() {
        STDERR_CLOSED.store(true, Ordering::Relaxed);
    }
}

/// The first error other than a closed pipe that writing stdout met.
pub fn stdout_failure() -> Option<String> {
    STDOUT_FAILURE
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
}

/// `println!` that never panics (see [`crate::output`]).
#[macro_export]
macro_rules! outln {
    () => {
        $crate::output::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprintln!` that never panics (see [`crate::output`]).
#[macro_export]
macro_rules! errln {
    () => {
        $crate::output::write_stderr(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::write_stderr(format_args!("{}\n", format_args!($($arg)*)))
    };
}
