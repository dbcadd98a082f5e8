//! The run's HDF5 trace as an observer: a row per iteration, the final model
//! and the timing summary at the end. The file is created (and so checked)
//! before any MPI work starts. Without the `hdf5` feature there is no trace,
//! and an explicit `--out` is refused.

use std::path::{Path, PathBuf};

use super::TrainOptions;
use crate::coding::Scheme;
use crate::config::Config;
use crate::engine::{IterationEvent, Observer, ObserverError, RunSummary, SnapshotEvent};
use crate::error::InputError;

pub struct TraceOut {
    path: PathBuf,
    #[cfg(feature = "hdf5")]
    writer: Option<crate::trace::TraceWriter>,
}

impl TraceOut {
    pub fn open(
        config: &Config,
        scheme: &dyn Scheme,
        options: &TrainOptions,
    ) -> Result<Option<Self>, InputError> {
        #[cfg(not(feature = "hdf5"))]
        {
            let _ = (config, scheme);
            if options.out.is_some() {
                return Err(InputError::new(
                    "--out",
                    "this gradcode was built without the `hdf5` feature",
                ));
            }
            eprintln!(
                "warning: this gradcode was built without the `hdf5` feature: no trace is written"
            );
            Ok(None)
        }
        #[cfg(feature = "hdf5")]
        {
            let path = crate::trace::trace_path(config, options.out.as_deref(), options.force)?;
            let meta = crate::trace::TraceMeta {
                scheme: scheme.kind().name().to_string(),
                workers: scheme.workers(),
                config_toml: config.to_toml(),
                seed: config.seed,
            };
            let field = if options.out.is_some() {
                "--out"
            } else {
                "output.trace"
            };
            let writer = crate::trace::TraceWriter::create(&path, &meta).map_err(|e| {
                InputError::new(field, format!("cannot write {}: {e}", path.display()))
            })?;
            Ok(Some(Self {
                path,
                writer: Some(writer),
            }))
        }
    }

    /// Reopen the trace of an interrupted run at its last snapshot.
    pub fn resume(path: &Path) -> Result<(Self, crate::trace::Snapshot), InputError> {
        #[cfg(not(feature = "hdf5"))]
        {
            let _ = path;
            Err(InputError::new(
                "--resume",
                "this gradcode was built without the `hdf5` feature",
            ))
        }
        #[cfg(feature = "hdf5")]
        {
            let (writer, snapshot) = crate::trace::TraceWriter::resume(path)
                .map_err(|e| InputError::new("--resume", format!("{}: {e}", path.display())))?;
            Ok((
                Self {
                    path: path.to_path_buf(),
                    writer: Some(writer),
                },
                snapshot,
            ))
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Observer for TraceOut {
    fn iteration(&mut self, event: &IterationEvent<'_>) -> Result<(), ObserverError> {
        #[cfg(feature = "hdf5")]
        if let Some(w) = &mut self.writer {
            w.append(event.record)?;
        }
        #[cfg(not(feature = "hdf5"))]
        let _ = event;
        Ok(())
    }

    fn snapshot(&mut self, snapshot: &SnapshotEvent<'_>) -> Result<(), ObserverError> {
        #[cfg(feature = "hdf5")]
        if let Some(w) = &mut self.writer {
            w.write_snapshot(snapshot.iteration, snapshot.theta, snapshot.previous)?;
        }
        #[cfg(not(feature = "hdf5"))]
        let _ = snapshot;
        Ok(())
    }

    fn finish(&mut self, summary: &RunSummary) -> Result<(), ObserverError> {
        // The model itself went in with the last snapshot.
        #[cfg(feature = "hdf5")]
        if let Some(mut w) = self.writer.take() {
            w.write_timing(&summary.timing)?;
            w.close()?;
        }
        #[cfg(not(feature = "hdf5"))]
        let _ = summary;
        Ok(())
    }
}
