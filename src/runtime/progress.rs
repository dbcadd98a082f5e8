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
    /// The last recorded test accuracy (NaN: none yet, or not a classifier).
    test_accuracy: f64,
}

/// ", batch accuracy 0.8125" for a network's iteration, else nothing.
fn batch_accuracy_text(batch_accuracy: f64) -> String {
    if batch_accuracy.is_finite() {
        format!(", batch accuracy {batch_accuracy:.4}")
    } else {
        String::new()
    }
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
            test_accuracy: f64::NAN,
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
        if r.test_accuracy.is_finite() {
            self.test_accuracy = r.test_accuracy;
        }
        if let Some(bar) = &self.bar {
            bar.set_position(done as u64);
            bar.set_message(format!(
                "batch loss {:.4e}{}{}  mean iteration {:.4} s ({:.4} s wall clock)",
                r.batch_loss,
                batch_accuracy_text(r.batch_accuracy),
                self.accuracy_text(),
                mean,
                wall
            ));
        } else if !self.quiet && (done % self.every == 0 || done == self.total) {
            let train = if r.train_loss.is_finite() {
                format!(", train loss {:.6e}", r.train_loss)
            } else {
                String::new()
            };
            let eta_s = wall * self.total.saturating_sub(done) as f64;
            crate::errln!(
                "iteration {done}/{}: batch loss {:.6e}{}{train}{}, mean iteration {:.4} s ({:.4} s wall clock, {:.1} iterations/s, {:.0} s to go), recovered {:.3}",
                self.total,
                r.batch_loss,
                batch_accuracy_text(r.batch_accuracy),
                self.accuracy_text(),
                mean,
                wall,
                1.0 / wall,
                eta_s,
                r.recovered_fraction
            );
        }
        Ok(())
    }
}

impl Progress {
    /// ", test accuracy 0.8125" once a test accuracy was recorded, else nothing.
    fn accuracy_text(&self) -> String {
        if self.test_accuracy.is_finite() {
            format!(", test accuracy {:.4}", self.test_accuracy)
        } else {
            String::new()
        }
    }
}
