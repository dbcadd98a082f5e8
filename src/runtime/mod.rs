//! The MPI runtime: `mpirun -n K+1 gradcode train`.
//!
//! SPMD: rank 0 is the master, ranks 1..K the workers. Rank 0 reads the
//! config and broadcasts the resolved TOML; workers never need the file. A
//! world size other than K + 1 is reported by rank 0 in one line and every
//! rank exits with status 2.

pub mod protocol;

#[cfg(feature = "mpi")]
mod comm;
#[cfg(feature = "mpi")]
mod master;
#[cfg(feature = "mpi")]
mod worker;

#[cfg(feature = "mpi")]
pub use master::{IterationRecord, Observer, TrainSummary};

use std::path::PathBuf;

/// Options of `gradcode train`.
#[derive(Debug, Clone)]
pub struct TrainOptions {
    pub config: Option<PathBuf>,
    pub overrides: Vec<String>,
    pub json: bool,
    pub quiet: bool,
}

#[cfg(not(feature = "mpi"))]
pub fn train(_options: &TrainOptions) -> anyhow::Result<()> {
    Err(
        crate::error::InputError::new("train", "this gradcode was built without the `mpi` feature")
            .into(),
    )
}

#[cfg(feature = "mpi")]
pub fn train(options: &TrainOptions) -> anyhow::Result<()> {
    use mpi::traits::*;

    use crate::error::{InputError, QuietExit};

    let mut universe =
        mpi::initialize().ok_or_else(|| anyhow::anyhow!("MPI was already initialised"))?;
    let world = universe.world();
    let root = world.process_at_rank(0);
    let comm = comm::Comm::new(&world);
    // Rank 0: load, build, check the world size; then broadcast [status, length] and the TOML.
    let mut setup: Option<(crate::config::LoadedConfig, Box<dyn crate::coding::Scheme>)> = None;
    let mut status = [0u64; 2];
    let mut text = Vec::new();
    let mut failure: Option<InputError> = None;
    if comm.rank() == 0 {
        let args = crate::cli::ConfigArgs {
            config: options.config.clone(),
            overrides: options.overrides.clone(),
            json: false,
        };
        match crate::cli::setup(&args) {
            Ok((loaded, scheme)) => {
                let k = loaded.config.workers;
                if comm.size() as usize != k + 1 {
                    failure = Some(InputError::value(
                        "workers",
                        k,
                        format!(
                            "needs {} MPI ranks (1 master + {k} workers) but this run has {}: use mpirun -n {}",
                            k + 1,
                            comm.size(),
                            k + 1
                        ),
                    ));
                } else {
                    text = loaded.config.to_toml().into_bytes();
                    setup = Some((loaded, scheme));
                }
            }
            Err(e) => failure = Some(e),
        }
        status = [u64::from(failure.is_some()), text.len() as u64];
    }
    if let Some(e) = &failure {
        // Print before the broadcast: the workers exit as soon as they hear,
        // and mpirun may kill rank 0 before it gets to print afterwards.
        eprintln!("error: {e}");
    }
    root.broadcast_into(&mut status[..]);
    if status[0] != 0 {
        return Err(QuietExit(2).into());
    }
    text.resize(status[1] as usize, 0);
    root.broadcast_into(&mut text[..]);

    // Room for the small messages before the data is planned (setup, ready, error, bye).
    universe.set_buffer_size(comm::buffer_bytes(2 * comm.size() as usize + 8, 64));
    if comm.rank() == 0 {
        let (loaded, scheme) = setup.expect("rank 0 has its setup");
        let config = &loaded.config;
        let mut master = master::Master {
            comm: &comm,
            universe: &mut universe,
            config,
            scheme,
        };
        let mut progress = progress::Progress::new(config, options.quiet);
        let summary = master.run(&mut progress);
        progress.finish();
        report(&summary?, options.json)?;
    } else {
        let text = std::str::from_utf8(&text)
            .map_err(|_| anyhow::anyhow!("broadcast config is not UTF-8"))?;
        let config = crate::config::parse(text, "<broadcast config>", &[])?.config;
        worker::run(&comm, &mut universe, &config)?;
    }
    Ok(())
}

#[cfg(feature = "mpi")]
fn report(summary: &TrainSummary, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(summary)?);
    } else {
        println!(
            "trained {} on {} workers for {} iterations: mean iteration {:.4} s, final train loss {:.6e}, test loss {:.6e}",
            summary.scheme,
            summary.workers,
            summary.iterations,
            summary.mean_iteration_s,
            summary.final_train_loss,
            summary.final_test_loss
        );
        println!(
            "mean recovered fraction {:.3}, stale results dropped {}, emulation overruns {}, tasks abandoned by workers {}",
            summary.mean_recovered_fraction,
            summary.stale_dropped,
            summary.overruns,
            summary.tasks_abandoned
        );
    }
    Ok(())
}

#[cfg(feature = "mpi")]
mod progress {
    //! Rank 0's progress: a bar on a terminal, a plain line every N iterations otherwise.

    use std::io::IsTerminal;

    use indicatif::{ProgressBar, ProgressStyle};

    use super::master::{IterationRecord, Observer};
    use crate::config::Config;

    pub struct Progress {
        bar: Option<ProgressBar>,
        every: usize,
        quiet: bool,
        total_s: f64,
        total: usize,
    }

    impl Progress {
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
            }
        }

        pub fn finish(&self) {
            if let Some(bar) = &self.bar {
                bar.finish_and_clear();
            }
        }
    }

    impl Observer for Progress {
        fn iteration(&mut self, r: &IterationRecord) -> anyhow::Result<()> {
            self.total_s += r.duration_s;
            let done = r.iteration as usize + 1;
            let mean = self.total_s / done as f64;
            if let Some(bar) = &self.bar {
                bar.set_position(done as u64);
                bar.set_message(format!(
                    "loss {:.4e}  mean iteration {:.4} s",
                    r.train_loss, mean
                ));
            } else if !self.quiet && (done % self.every == 0 || done == self.total) {
                eprintln!(
                    "iteration {done}/{}: train loss {:.6e}, mean iteration {:.4} s, recovered {:.3}",
                    self.total, r.train_loss, mean, r.recovered_fraction
                );
            }
            Ok(())
        }
    }
}
