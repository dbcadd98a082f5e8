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

/// Wait, at most `limit`, until what this process wrote to stdout and
/// stderr has been read from their pipes.
///
/// For just before `MPI_Abort`: a launcher reads a rank's output from a
/// pipe and may act on the abort first, killing the job before it has
/// forwarded the last lines, the error that says why the job ends (MPICH's
/// Hydra lost a rank's last line in 11 of 60 aborts on this machine, and in
/// none of 60 after this wait; tests/mpi.rs
/// `the_error_before_an_abort_always_reaches_the_user` aborts forty times in
/// a row under MPICH).
/// A stream that is not a pipe (a terminal, a file) has nothing to wait for.
pub fn drain_to_launcher(limit: std::time::Duration) {
    let _ = std::io::stdout().lock().flush();
    let deadline = std::time::Instant::now() + limit;
    for fd in [libc::STDOUT_FILENO, libc::STDERR_FILENO] {
        while unread_in_pipe(fd).is_some_and(|unread| unread > 0)
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

/// The bytes written to pipe `fd` that its reader has not read yet; `None`
/// when `fd` is not a pipe.
fn unread_in_pipe(fd: libc::c_int) -> Option<libc::c_int> {
    // SAFETY: fstat and ioctl(FIONREAD) only write into the locals passed.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut stat) != 0 || stat.st_mode & libc::S_IFMT != libc::S_IFIFO {
            return None;
        }
        let mut unread: libc::c_int = 0;
        (libc::ioctl(fd, libc::FIONREAD, &mut unread) == 0).then_some(unread)
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

/// Print `error` as the one line the user reads and give the exit status it
/// ends the process with: a [`crate::error::QuietExit`] prints nothing (its
/// line was printed already) and keeps its status; an
/// [`crate::error::InputError`] is bad input, status 2; anything else is a
/// failure, status 1, printed with its context chain.
pub fn report_error(error: &anyhow::Error) -> u8 {
    if let Some(crate::error::QuietExit(code)) = error.downcast_ref::<crate::error::QuietExit>() {
        return *code;
    }
    match error.downcast_ref::<crate::error::InputError>() {
        Some(input) => {
            write_stderr(format_args!("error: {input}\n"));
            2
        }
        None => {
            write_stderr(format_args!("error: {error:#}\n"));
            1
        }
    }
}

/// This process's rank as its MPI launcher set it in the environment
/// (OpenMPI's `OMPI_COMM_WORLD_RANK`, PMIx's `PMIX_RANK`, MPICH's
/// `PMI_RANK`, Slurm's `SLURM_PROCID` under srun), before MPI starts:
/// `None` outside a launcher.
pub fn launcher_rank() -> Option<u32> {
    [
        "OMPI_COMM_WORLD_RANK",
        "PMIX_RANK",
        "PMI_RANK",
        "SLURM_PROCID",
    ]
    .iter()
    .find_map(|name| std::env::var(name).ok()?.trim().parse().ok())
}
