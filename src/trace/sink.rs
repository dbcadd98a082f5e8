//! The trace sink: the one factory of traces a run writes, an observer of
//! the run and its checkpoint (`Checkpoint`: snapshots, and the state a
//! resumed run restores). Whether HDF5 is compiled in is the backend's
//! ([`crate::trace::backend`]), asked at each entry. A training run's trace (`train`, [`TraceSink::for_run`],
//! [`TraceSink::resume`]) holds a row per iteration, snapshots, the timing
//! summary; a simulation's (`simulate --out`, [`TraceSink::for_simulation`])
//! a group per scheme and trial. Both record the run's status when the
//! session finishes: completed, interrupted (a signal) or failed.
//!
//! A training trace:
//! Before any MPI work starts rank 0 only checks the trace's path (an
//! existing file only with `--force` and when no process has it open, a
//! folder it can write in) or, for `--resume`, reads the snapshot without
//! changing the file. The file itself is created, or the resumed trace
//! reopened and its records after the snapshot cut, when training has
//! started: at the first iteration, snapshot or end of a run whose workers
//! all set up. An input error found on the way (a data file, a worker that
//! cannot load its partitions) leaves no file behind and changes none.
//! Without the `hdf5` feature there is no trace, and an explicit `--out` is
//! refused. A simulation trace is created before the simulation starts
//! (bad input, exit 2, before any output), its status `running` until the
//! session's finish.

use std::path::{Path, PathBuf};

use crate::coding::Scheme;
use crate::config::Config;
use crate::engine::{
    Checkpoint, Finish, IterationEvent, Observer, ObserverError, Restore, SnapshotEvent, Start,
};
use crate::error::InputError;

/// Where the user asked a trace to go: `--out` (absent: `output.trace` or
/// a made name), `--force`, and the config file (never overwritten).
#[derive(Debug, Clone, Copy, Default)]
pub struct Target<'a> {
    pub out: Option<&'a Path>,
    pub force: bool,
    pub config_file: Option<&'a Path>,
}

/// What opens the file at the start of training.
enum Plan {
    /// A new trace.
    Create {
        meta: crate::trace::TraceMeta,
        force: bool,
        /// The name was made for this run (see `TracePath::generated`).
        generated: bool,
    },
    /// The trace of the run resumed, at the snapshot read when it was checked.
    Resume { snapshot: crate::trace::Snapshot },
}

pub struct TraceSink {
    path: PathBuf,
    /// A simulation's trace, created with the sink.
    sim: Option<crate::trace::SimTraceWriter>,
    /// The state a resumed run continues from.
    restore: Option<Restore>,
    /// The file was created (or the resumed trace reopened) by this run.
    opened: bool,
    plan: Option<Plan>,
    writer: Option<crate::trace::TraceWriter>,
    /// `runtime.wait` as resolved, and why: root attributes written with the file.
    wait: Option<(String, String)>,
    /// A write to the trace failed: the run ends with that error, which
    /// `end` does not repeat.
    write_failed: bool,
    /// What the loss datasets hold: the root attribute `losses`.
    losses: Option<String>,
    /// A new run's data files' fingerprint: the root attribute
    /// `data_fingerprint`, written with the file.
    data_fingerprint: Option<String>,
    /// A resumed trace's `data_fingerprint` (absent in older traces).
    stored_data_fingerprint: Option<String>,
    /// θ's tensors as JSON (the root attribute `model_layout`), told at the start.
    model_layout: Option<String>,
}

impl TraceSink {
    /// The trace of a new training run: its path checked, nothing created.
    pub fn for_run(
        config: &Config,
        scheme: &dyn Scheme,
        target: Target<'_>,
    ) -> Result<Option<Self>, InputError> {
        if let Err(missing) = super::backend::check(super::backend::TraceUse::Run) {
            if target.out.is_some() {
                return Err(InputError::new("--out", missing));
            }
            crate::errln!("warning: {missing}: no trace is written");
            return Ok(None);
        }
        let inputs = crate::trace::place::inputs_of(config, target.config_file);
        let target = crate::trace::trace_path(
            config,
            target.out,
            target.force,
            &inputs,
            scheme.kind().name(),
        )?;
        let meta = crate::trace::TraceMeta {
            scheme: scheme.kind().name().to_string(),
            workers: scheme.workers(),
            config_toml: config.to_toml(),
            seed: config.seed,
        };
        Ok(Some(Self {
            path: target.path,
            sim: None,
            restore: None,
            opened: false,
            plan: Some(Plan::Create {
                meta,
                force: target.force,
                generated: target.generated,
            }),
            writer: None,
            wait: None,
            write_failed: false,
            losses: None,
            data_fingerprint: None,
            stored_data_fingerprint: None,
            model_layout: None,
        }))
    }

    /// The trace of an interrupted run and its last snapshot, read without
    /// changing the file; it is reopened when training starts. Its restore
    /// point ([`Checkpoint::restore_point`]) is the snapshot with the totals
    /// of the iterations before it, which the resumed run carries over.
    pub fn resume(path: &Path) -> Result<(Self, crate::trace::Snapshot), InputError> {
        super::backend::check(super::backend::TraceUse::Run)
            .map_err(|missing| InputError::new("--resume", missing))?;
        // A file that is no regular file, or whose metadata HDF5 cannot
        // read within the probe's deadline, is refused before it is opened here.
        crate::files::check_regular(path)
            .map_err(|e| e.to_string())
            .and_then(|_| crate::trace::probe::check(path))
            .map_err(|e| InputError::new("--resume", format!("{}: {e}", path.display())))?;
        let snapshot = crate::trace::read_snapshot(path).map_err(|e| {
            let text = e.to_string();
            if text.contains("unable to lock file") {
                InputError::new(
                    "--resume",
                    format!(
                        "{} is open in another process (it holds the file's HDF5 lock: is the run still going?)",
                        path.display()
                    ),
                )
            } else {
                InputError::new("--resume", format!("{}: {text}", path.display()))
            }
        })?;
        let carried = carried_totals(path, snapshot.iteration)
            .map_err(|e| InputError::new("--resume", format!("{}: {e}", path.display())))?;
        let stored_data_fingerprint = crate::trace::TraceFile::open(path)
            .and_then(|f| f.group_string_attr("/", "data_fingerprint"))
            .map_err(|e| InputError::new("--resume", format!("{}: {e}", path.display())))?;
        let restore = Restore {
            iteration: snapshot.iteration,
            theta: snapshot.theta.clone(),
            previous: snapshot.previous_theta.clone(),
            carried,
        };
        Ok((
            Self {
                path: path.to_path_buf(),
                sim: None,
                restore: Some(restore),
                opened: false,
                plan: Some(Plan::Resume {
                    snapshot: snapshot.clone(),
                }),
                writer: None,
                wait: None,
                write_failed: false,
                losses: None,
                data_fingerprint: None,
                stored_data_fingerprint,
                model_layout: None,
            },
            snapshot,
        ))
    }

    /// The trace of `simulate --out` for the compared schemes `names`,
    /// created now (status `running`): a path that cannot be created, or a
    /// file there that may not be replaced (no `--force`, or a process has
    /// it open), is bad input, and the file there is left untouched. A name
    /// made for this run that another process took since it was checked is
    /// replaced by the next free one ([`TraceSink::path`] says which).
    pub fn for_simulation(
        config: &Config,
        names: &[String],
        target: Target<'_>,
    ) -> Result<Self, InputError> {
        let inputs = crate::trace::place::inputs_of(config, target.config_file);
        let target =
            crate::trace::trace_path(config, target.out, target.force, &inputs, "simulate")?;
        super::backend::check(super::backend::TraceUse::Simulation)
            .map_err(|missing| InputError::value(target.field, target.path.display(), missing))?;
        let mut target = target;
        let writer = create_simulation(config, names, &mut target)?;
        Ok(Self {
            path: target.path,
            sim: Some(writer),
            restore: None,
            opened: true,
            plan: None,
            writer: None,
            wait: None,
            write_failed: false,
            losses: None,
            data_fingerprint: None,
            stored_data_fingerprint: None,
            model_layout: None,
        })
    }

    /// The trace's path (a made name may change when the file is created,
    /// if another run took it meanwhile: read it after the run).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this run created the file (or reopened the resumed trace).
    pub fn opened(&self) -> bool {
        self.opened
    }

    /// Say what `/iteration/train_loss` and `test_loss` hold for this run's
    /// `train.eval_every` (the root attribute `losses`, written when the
    /// file is opened).
    pub fn set_losses(&mut self, config: &Config) {
        let n = config.train.eval_every;
        self.losses = Some(format!(
            "train_loss: the objective over all the training data at the iteration's model (never over the \
             recovered partitions alone), recorded at every iteration whose decode recovered every partition \
             and otherwise every {n} iteration(s) from the first and at the last (train.eval_every = {n}), NaN \
             in between; batch_loss: the objective over the samples each update used (the recovered partitions' \
             mini-batches) at every iteration; test_loss: the test objective every {n} iteration(s) from the first \
             and at the last"
        ));
    }

    /// Record the data files' fingerprint (`data_fingerprint`, see
    /// `runtime::resume`) as a root attribute when a new trace is created.
    pub fn set_data_fingerprint(&mut self, fingerprint: String) {
        self.data_fingerprint = Some(fingerprint);
    }

    /// The `data_fingerprint` of the trace a resume continues, if it has one.
    pub fn stored_data_fingerprint(&self) -> Option<&str> {
        self.stored_data_fingerprint.as_deref()
    }

    /// Record how the ranks wait (`runtime_wait`: spin or backoff) and why
    /// (`runtime_wait_reason`), as root attributes, when the file is opened.
    pub fn set_wait(&mut self, mode: &str, reason: &str) {
        self.wait = Some((mode.to_string(), reason.to_string()));
    }

    /// The writer, the file created or reopened at the first call.
    fn writer(&mut self) -> Result<&mut crate::trace::TraceWriter, ObserverError> {
        use crate::trace::TraceWriter;
        if let Some(plan) = self.plan.take() {
            let writer = match plan {
                Plan::Create {
                    meta,
                    force,
                    generated,
                } => {
                    let mut tried = Vec::new();
                    let made = loop {
                        match TraceWriter::create_with(&self.path, &meta, force) {
                            // A name made for this run, taken by another
                            // since it was checked: the next free one.
                            Err(crate::trace::TraceError::Place(_))
                                if generated && tried.len() < 100 =>
                            {
                                tried.push(self.path.clone());
                                self.path = crate::trace::default_trace_name(
                                    &meta.scheme,
                                    std::time::SystemTime::now(),
                                    &tried,
                                );
                            }
                            other => break other,
                        }
                    };
                    let mut writer = match made {
                        Ok(writer) => writer,
                        // Checked free at the start, taken since (two runs
                        // with one --out): an input error, nothing replaced.
                        Err(crate::trace::TraceError::Place(reason)) => {
                            return Err(Box::new(InputError::new(
                                "--out",
                                format!(
                                    "{reason} (another process created or locked it after this run checked it)"
                                ),
                            )));
                        }
                        Err(e) => return Err(e.into()),
                    };
                    if let Some(print) = &self.data_fingerprint {
                        writer.set_root_attr("data_fingerprint", print)?;
                    }
                    writer
                }
                Plan::Resume { snapshot } => {
                    let (writer, now) = TraceWriter::resume(&self.path)?;
                    if !same_snapshot(&now, &snapshot) {
                        return Err(format!(
                            "{}: its snapshot changed after the run was checked (another process wrote it?); nothing was cut",
                            self.path.display()
                        )
                        .into());
                    }
                    writer
                }
            };
            let mut writer = writer;
            if let Some((mode, reason)) = &self.wait {
                writer.set_root_attr("runtime_wait", mode)?;
                writer.set_root_attr("runtime_wait_reason", reason)?;
            }
            if let Some(losses) = &self.losses {
                writer.set_root_attr("losses", losses)?;
            }
            if let Some(layout) = &self.model_layout {
                writer.set_root_attr("model_layout", layout)?;
            }
            self.writer = Some(writer);
            self.opened = true;
        }
        self.writer
            .as_mut()
            .ok_or_else(|| format!("the trace {} is closed", self.path.display()).into())
    }

    /// Record how the run ended and close the file. A trace never created
    /// (the run failed before training) stays uncreated. Failures to write
    /// are warnings: the run's own outcome is what the job reports.
    fn end(&mut self, status: crate::trace::RunStatus, reason: &str) {
        if let Some(w) = self.writer.take() {
            match w.finish(status, reason) {
                Ok(()) => {}
                // The cause is the run's own error, printed once by the caller.
                Err(_) if self.write_failed => crate::errln!(
                    "warning: the trace {} could not record how the run ended (a write to it \
                     failed: the error below); inspect reports it as a run that died",
                    self.path.display()
                ),
                Err(e) => crate::errln!(
                    "warning: the trace {} was not closed properly: {e}",
                    self.path.display()
                ),
            }
        }
    }
}

/// The status and one-line reason a trace records for `outcome`.
fn status_of(
    outcome: &crate::engine::Outcome,
    finish: &Finish<'_>,
    simulation: bool,
) -> (crate::trace::RunStatus, String) {
    use crate::engine::Outcome;
    use crate::trace::RunStatus;
    match outcome {
        Outcome::Completed => (RunStatus::Completed, String::new()),
        Outcome::Interrupted { signal } if simulation => (
            RunStatus::Interrupted,
            format!(
                "interrupted by {} in trial {} after {} iterations; the trace holds the iterations before it",
                crate::signals::name(*signal),
                finish.trial + 1,
                finish.completed
            ),
        ),
        Outcome::Interrupted { signal } => (
            RunStatus::Interrupted,
            crate::signals::Interrupted {
                signal: *signal,
                iterations: finish.completed,
                during_setup: None,
            }
            .to_string(),
        ),
        Outcome::Failed { reason } => (RunStatus::Failed, reason.clone()),
    }
}

/// Create the simulation trace at `target` (see [`TraceSink::for_simulation`]).
fn create_simulation(
    config: &Config,
    names: &[String],
    target: &mut crate::trace::TracePath,
) -> Result<crate::trace::SimTraceWriter, InputError> {
    use crate::trace::{SimTraceWriter, TraceError, TraceMeta};
    let meta = TraceMeta {
        scheme: names.join(","),
        workers: config.workers,
        config_toml: config.to_toml(),
        seed: config.seed,
    };
    let mut tried = Vec::new();
    loop {
        let made = SimTraceWriter::create_with(
            &target.path,
            &meta,
            names,
            config.simulate.trials,
            config.simulate.iterations,
            config.straggler.time_unit_ms / 1000.0,
            target.force,
        );
        match made {
            Err(TraceError::Place(_)) if target.generated && tried.len() < 100 => {
                tried.push(target.path.clone());
                target.path = crate::trace::default_trace_name(
                    "simulate",
                    std::time::SystemTime::now(),
                    &tried,
                );
            }
            other => return other.map_err(|e| InputError::new(target.field, e)),
        }
    }
}

/// The totals of the first `upto` iterations of the trace at `path` (those
/// a resume keeps; records after its snapshot are cut) and its saved timing
/// events. A run killed before it saved its timing (SIGKILL) has none: the
/// resumed run's `/timing/` then counts from the resume on.
fn carried_totals(
    path: &Path,
    upto: u64,
) -> Result<crate::engine::Carried, crate::trace::TraceError> {
    let file = crate::trace::TraceFile::open(path)?;
    let n = usize::try_from(upto)
        .map_err(|_| crate::trace::TraceError::Record(format!("snapshot iteration {upto}")))?;
    let columns = file.columns_upto("/", None, n)?;
    let sum = |c: &Option<Vec<f64>>| c.as_ref().map_or(0.0, |v| v[..n].iter().sum());
    Ok(crate::engine::Carried {
        iterations: n as u64,
        duration_s: sum(&columns.duration_s),
        // Not recorded by an older gradcode: unknown, not 0.
        decodable_s: columns
            .decodable_s
            .as_ref()
            .map_or(f64::NAN, |v| v[..n].iter().sum()),
        recovered: sum(&columns.recovered_fraction),
        stale_dropped: columns
            .stale_dropped
            .as_ref()
            .map_or(0, |v| v[..n].iter().sum()),
        overruns: columns.overrun_s.as_ref().map_or(0, |v| {
            v[..n * columns.workers]
                .iter()
                .filter(|&&o| o > 0.0)
                .count() as u64
        }),
        // The elapsed time at the snapshot (0 before any iteration); NaN
        // when the trace did not record it (an older gradcode's).
        elapsed_s: match n.checked_sub(1) {
            None => 0.0,
            Some(last) => columns.elapsed_s.as_ref().map_or(f64::NAN, |v| v[last]),
        },
        timing: file.timing("/")?.unwrap_or_default(),
    })
}

/// The same snapshot, bit for bit (NaN included).
fn same_snapshot(a: &crate::trace::Snapshot, b: &crate::trace::Snapshot) -> bool {
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    (a.iteration, a.seed, &a.config_toml) == (b.iteration, b.seed, &b.config_toml)
        && bits(&a.theta) == bits(&b.theta)
        && bits(&a.previous_theta) == bits(&b.previous_theta)
}

impl TraceSink {
    /// `write` on the writer, remembering a failure (see `end`).
    fn with_writer(
        &mut self,
        write: impl FnOnce(&mut crate::trace::TraceWriter) -> Result<(), crate::trace::TraceError>,
    ) -> Result<(), ObserverError> {
        let result = self
            .writer()
            .and_then(|w| write(w).map_err(ObserverError::from));
        self.write_failed |= result.is_err();
        result
    }
}

impl Observer for TraceSink {
    /// A training run's model layout, written with the file.
    fn start(&mut self, start: &Start<'_>) -> Result<(), ObserverError> {
        if let Some(layout) = start.model_layout {
            self.model_layout = Some(serde_json::to_string(layout)?);
        }
        Ok(())
    }

    fn iteration(&mut self, event: &IterationEvent<'_>) -> Result<(), ObserverError> {
        match &mut self.sim {
            Some(sim) => sim.append(event.lane, event.trial as usize, event.record)?,
            None => self.with_writer(|w| w.append(event.record))?,
        }
        Ok(())
    }

    fn snapshot(&mut self, snapshot: &SnapshotEvent<'_>) -> Result<(), ObserverError> {
        self.with_writer(|w| {
            w.write_snapshot(snapshot.iteration, snapshot.theta, snapshot.previous)
        })?;
        Ok(())
    }

    /// A training trace gets the timing summary and the final losses (the
    /// model itself went in with the last snapshot); then either trace
    /// records the status and is closed.
    fn finish(&mut self, finish: &Finish<'_>) -> Result<(), ObserverError> {
        if let Some(sim) = self.sim.take() {
            let (status, reason) = status_of(finish.outcome, finish, true);
            return Ok(sim.finish(status, &reason)?);
        }
        let written = match finish.summary {
            Some(summary) => self.with_writer(|w| {
                w.write_timing(&summary.timing)?;
                if summary.final_at_theta {
                    w.write_final_losses(
                        summary.final_train_loss,
                        summary.final_test_loss,
                        summary.final_test_accuracy,
                    )?;
                }
                Ok(())
            }),
            None => Ok(()),
        };
        let (status, reason) = match &written {
            Ok(()) => status_of(finish.outcome, finish, false),
            Err(e) => (crate::trace::RunStatus::Failed, e.to_string()),
        };
        self.end(status, &reason);
        written
    }
}

impl Checkpoint for TraceSink {
    fn restore_point(&self) -> Option<&Restore> {
        self.restore.as_ref()
    }
}
