//! Rank 0's watchdog in a probe: a worker (or a pair) silent for longer
//! than `--timeout-s` is named and the job ends.

use std::time::{Duration, Instant};

/// What rank 0 waits for, and since when: a thread ends the job when one
/// wait lasts longer than `--timeout-s`, naming what it waited for
/// (rank 0's own MPI calls block, so the bound must come from beside them).
pub(super) struct Watchdog {
    waiting: std::sync::Arc<std::sync::Mutex<Option<(Instant, String)>>>,
}

impl Watchdog {
    pub(super) fn start(timeout_s: f64) -> Self {
        let waiting: std::sync::Arc<std::sync::Mutex<Option<(Instant, String)>>> =
            std::sync::Arc::default();
        let watched = std::sync::Arc::clone(&waiting);
        let limit = Duration::from_secs_f64(timeout_s);
        let spawned = std::thread::Builder::new()
            .name("probe-watchdog".to_string())
            .spawn(move || {
                loop {
                    std::thread::sleep(Duration::from_millis(100).min(limit));
                    let late = watched
                        .lock()
                        .ok()
                        .and_then(|w| w.as_ref().filter(|(since, _)| since.elapsed() >= limit).map(|(_, what)| what.clone()));
                    if let Some(what) = late {
                        crate::errln!(
                            "error: probe: no answer from {what} within {timeout_s} s (--timeout-s): it is stopped, hung or gone; ending the job (MPI_Abort)"
                        );
                        crate::output::drain_to_launcher(Duration::from_secs(1));
                        // SAFETY: MPI is initialised (the watchdog starts
                        // after MPI_Init) and rank 0 finalises only after
                        // it has stopped waiting; MPI_Abort does not return.
                        unsafe {
                            mpi::ffi::MPI_Abort(mpi::ffi::RSMPI_COMM_WORLD, 1);
                        }
                    }
                }
            });
        if let Err(e) = spawned {
            log::warn!("probe: no watchdog thread ({e}): a silent worker is not timed out");
        }
        Self { waiting }
    }

    /// Rank 0 now waits for `what` (a worker, a pair, the workers).
    pub(super) fn waiting(&self, what: String) {
        if let Ok(mut w) = self.waiting.lock() {
            *w = Some((Instant::now(), what));
        }
    }

    /// Rank 0 waits for no one.
    pub(super) fn idle(&self) {
        if let Ok(mut w) = self.waiting.lock() {
            *w = None;
        }
    }
}
