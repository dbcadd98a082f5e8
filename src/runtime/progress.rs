//! Rank 0's progress: a bar on a terminal, a plain line every
//! `output.progress_every` iterations otherwise, nothing with `--quiet`.

use std::io::IsTerminal;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

use crate::config::Config;
use crate::engine::{Finish, IterationEvent, Observer, ObserverError, Start};

pub struct Progress {
    bar: Option<ProgressBar>,
    every: usize,
    quiet: bool,
    total_s: f64,
    total: usize,
    /// When this run's first iteration started being counted, and the
    /// iterations before it (a resumed run's).
    started: Instant,
    first: usize,
    /// Iterations completed so far, a resumed run's earlier ones included.
    completed: usize,
}

impl Progress {
    /// A resumed run's mean counts the iterations before it (told at the start).
    pub fn new(config: &Config, quiet: bool) -> Self {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(config.train.iterations as u64);
            bar.set_style(
                ProgressStyle::with_template(
                    "{bar:30} {pos}/{len} iterations  {msg}  [{elapsed} < {eta}]",
                )
                .expect("valid template"),
            );
            bar
        });
        Self {
            bar,
            every: config.output.progress_every,
            quiet,
            total_s: 0.0,
            total: config.train.iterations,
            started: Instant::now(),
            first: 0,
            completed: 0,
        }
    }

    /// Iterations completed so far, a resumed run's earlier ones included:
    /// what a run that fails has done (the trace holds them).
    pub fn completed(&self) -> usize {
        self.completed
    }
}

impl Observer for Progress {
    fn wants_workers(&self) -> bool {
        false
    }

    fn start(&mut self, start: &Start<'_>) -> Result<(), ObserverError> {
        self.total_s = start.carried.duration_s;
        self.first = start.carried.iterations as usize;
        self.completed = self.first;
        Ok(())
    }

    /// Take the bar off the terminal.
    fn finish(&mut self, _finish: &Finish<'_>) -> Result<(), ObserverError> {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        Ok(())
    }

    fn iteration(&mut self, event: &IterationEvent<'_>) -> Result<(), ObserverError> {
        let r = event.record;
        self.total_s += r.duration_s;
        let done = event.iteration as usize + 1;
        self.completed = self.completed.max(done);
        let mean = self.total_s / done as f64;
        // The wall clock per iteration of this run: every wait included (an
        // evaluation's wait for a partition's loss, the trace), which the
        // recorded iteration times leave out.
        let wall = self.started.elapsed().as_secs_f64() / (done - self.first).max(1) as f64;
        if let Some(bar) = &self.bar {
            bar.set_position(done as u64);
            bar.set_message(format!(
                "loss {:.4e}  mean iteration {:.4} s ({:.4} s wall clock)",
                r.train_loss, mean, wall
            ));
        } else if !self.quiet && (done % self.every == 0 || done == self.total) {
            crate::errln!(
                "iteration {done}/{}: train loss {:.6e}, mean iteration {:.4} s ({:.4} s wall clock), recovered {:.3}",
                self.total,
                r.train_loss,
                mean,
                wall,
                r.recovered_fraction
            );
        }
        Ok(())
    }
}
