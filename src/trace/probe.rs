//! Reading an untrusted trace without hanging.
//!
//! HDF5 can loop forever on some damaged files: zeroed bytes inside a
//! global heap collection, where variable-length strings (the root
//! attributes, `/timing/event`) live, make its read spin at 100% CPU, which
//! no check in this process can interrupt. So before a command reads a
//! trace it did not write (`inspect`, `inspect --replay-csv`, `advise
//! --trace`, `train --resume`), `check` runs this same executable as a
//! child (`gradcode __probe-trace FILE`), which opens the trace and reads
//! every string it holds (`child`), and waits for it at most
//! `deadline`: a child still running then is killed and the trace refused
//! as corrupted. Only the strings are read, so the probe takes milliseconds
//! whatever the size of the numeric datasets.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::TraceFile;

/// The hidden subcommand that runs [`child`].
pub const SUBCOMMAND: &str = "__probe-trace";

/// The environment variable that sets the probe's deadline in seconds
/// (default [`DEFAULT_DEADLINE_S`]), for a file system slow to open files.
pub const DEADLINE_ENV: &str = "GRADCODE_TRACE_PROBE_S";

/// Seconds the probe may take by default: opening a trace and reading its
/// strings takes milliseconds on a local disk.
pub const DEFAULT_DEADLINE_S: f64 = 2.0;

/// How long [`check`] waits for the child: [`DEFAULT_DEADLINE_S`] when
/// [`DEADLINE_ENV`] is unset, else its value, which must be a positive
/// number of seconds (`Err` says so: a typo is never silently the default).
pub fn deadline() -> Result<Duration, String> {
    let Some(value) = std::env::var_os(DEADLINE_ENV) else {
        return Ok(Duration::from_secs_f64(DEFAULT_DEADLINE_S));
    };
    let text = value.to_string_lossy();
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| {
            format!(
                "{DEADLINE_ENV} = {:?} must be a positive number of seconds (unset: {DEFAULT_DEADLINE_S})",
                text
            )
        })
}

/// Probe the trace at `path` in a child process; `Err` (in words) when the
/// child is still reading at the deadline (it is killed), when its read
/// failed (its error), or when it crashed (HDF5 can also crash on a damaged
/// file, in ways that depend on the process's history): the caller never
/// opens a file whose probe failed. A probe that cannot be started is an
/// error too.
pub fn check(path: &Path) -> Result<(), String> {
    let limit = deadline()?;
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find the gradcode executable to probe the trace: {e}"))?;
    let mut child = Command::new(exe)
        .arg(SUBCOMMAND)
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start the trace probe: {e}"))?;
    let start = Instant::now();
    let mut pause = Duration::from_micros(200);
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => {
                use std::io::Read;
                let mut err = String::new();
                if let Some(mut pipe) = child.stderr.take() {
                    let _ = pipe.by_ref().take(4096).read_to_string(&mut err);
                }
                let first = err.lines().next().unwrap_or("").trim().to_string();
                if first.contains("unable to lock file") {
                    // Another process has it open for writing: the caller's
                    // own open fails the same way, before reading anything,
                    // and says so in its words.
                    return Ok(());
                }
                return Err(match status.code() {
                    Some(_) if !first.is_empty() => first,
                    Some(code) => format!("the trace probe failed (exit status {code})"),
                    None => {
                        use std::os::unix::process::ExitStatusExt;
                        format!(
                            "reading its HDF5 metadata crashes HDF5 (signal {}), so the file is damaged",
                            status.signal().unwrap_or(0)
                        )
                    }
                });
            }
            Ok(None) if start.elapsed() < limit => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "reading its HDF5 metadata did not finish within {:.1} s, so the file is damaged \
                     (HDF5 loops on some corrupted files); on a slow file system set {DEADLINE_ENV} \
                     to more seconds",
                    limit.as_secs_f64()
                ));
            }
            Err(e) => {
                let _ = child.kill();
                return Err(format!("cannot wait for the trace probe: {e}"));
            }
        }
    }
}

/// The child's work: open the trace and read every string it holds.
/// Exit status 0 when that succeeded, 2 otherwise (the parent's own read
/// reports the error).
pub fn child(path: &Path) -> std::process::ExitCode {
    let read = TraceFile::open(path).and_then(|f| {
        f.root()?;
        f.read_every_string()
    });
    match read {
        Ok(_) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            crate::errln!("{e}");
            std::process::ExitCode::from(2)
        }
    }
}
