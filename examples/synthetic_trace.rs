//! Write a synthetic *training* trace without MPI, for trying `gradcode
//! inspect` and the plotting scripts (scripts/plots.py, scripts/report.sh).
//!
//! The iteration records (times, stragglers, clusters, messages) are those of
//! a simulated run of the config's `scheme.kind` (trial 0; times in seconds
//! via `straggler.time_unit_ms`); the losses are made up (a noisy decay, a
//! batch loss at every iteration, the test loss every 10th iteration) and
//! `/model/theta` is zeros. With
//! `--accuracy`, a made-up test accuracy (a classifier's: rising, with a
//! wiggle) is recorded with the test loss; without it the accuracy is NaN,
//! as in a linear model's run. Written through `TraceWriter`, so the file has
//! the layout of `gradcode train --out`, and read back (one record per
//! iteration, or it fails; `scripts/test.sh` runs it).
//!
//!   cargo run --release --example synthetic_trace -- OUT.h5 [CONFIG] [--accuracy] [--set key=value]...

use std::path::PathBuf;

use gradcode::engine::{IterationEvent, Observer, ObserverError};
use gradcode::sim::Simulation;
use gradcode::trace::{TraceMeta, TraceWriter};

/// Forwards the records of scheme 0, trial 0, adding losses.
struct Forward {
    writer: TraceWriter,
    /// Record a test accuracy with the test loss.
    accuracy: bool,
}

impl Observer for Forward {
    fn iteration(&mut self, event: &IterationEvent<'_>) -> Result<(), ObserverError> {
        if event.lane != 0 || event.trial != 0 {
            return Ok(());
        }
        let i = self.writer.iterations() as f64;
        let mut r = event.record.clone();
        // A deterministic wiggle instead of noise: no random stream needed.
        let wiggle = 1.0 + 0.05 * (1.7 * i).sin();
        r.train_loss = (0.05 + 1.0 / (1.0 + 0.05 * i)) * wiggle;
        // The step's batch loss: the train loss with a wiggle of its own.
        r.batch_loss = r.train_loss * (1.0 + 0.1 * (2.3 * i).cos());
        let tested = (i as u64) % 10 == 9;
        r.test_loss = if tested {
            1.1 * (0.05 + 1.0 / (1.0 + 0.05 * i))
        } else {
            f64::NAN
        };
        r.test_accuracy = if tested && self.accuracy {
            0.9 - 0.8 / (1.0 + 0.05 * i) + 0.05 * (0.7 * i).sin()
        } else {
            f64::NAN
        };
        r.decode_s = 1e-4 * (1.0 + 0.5 * (0.3 * i).cos());
        Ok(self.writer.append(&r)?)
    }
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let out = PathBuf::from(args.next().ok_or_else(|| {
        anyhow::anyhow!("usage: synthetic_trace OUT.h5 [CONFIG] [--accuracy] [--set k=v]...")
    })?);
    let mut config_path = None;
    let mut overrides = Vec::new();
    let mut accuracy = false;
    while let Some(a) = args.next() {
        if a == "--accuracy" {
            accuracy = true;
        } else if a == "--set" {
            overrides.push(
                args.next()
                    .ok_or_else(|| anyhow::anyhow!("--set needs key=value"))?,
            );
        } else {
            config_path = Some(PathBuf::from(a));
        }
    }
    let mut loaded = gradcode::setup::load(config_path.as_deref(), &overrides)?.loaded;
    let c = &mut loaded.config;
    // One scheme (scheme.kind), one trial.
    c.simulate.compare = Vec::new();
    c.simulate.baseline = None;
    c.simulate.trials = 1;
    let meta = TraceMeta {
        scheme: c.scheme.kind.to_string(),
        workers: c.workers,
        config_toml: c.to_toml(),
        seed: c.seed,
    };
    let mut sim = Simulation::from_config(c)?;
    let mut sink = Forward {
        writer: TraceWriter::create(&out, &meta)?,
        accuracy,
    };
    sim.run(&mut [&mut sink])?;
    let iterations = sink.writer.iterations();
    sink.writer.write_theta(iterations as u64, &[0.0; 10])?;
    sink.writer.close()?;
    // What was written reads back: one record per simulated iteration.
    let read = gradcode::trace::read_trace(&out, "/")?;
    anyhow::ensure!(
        read.records.len() == iterations,
        "{} holds {} records, {iterations} were written",
        out.display(),
        read.records.len()
    );
    println!(
        "{}: {iterations} iterations of {}",
        out.display(),
        meta.scheme
    );
    Ok(())
}
