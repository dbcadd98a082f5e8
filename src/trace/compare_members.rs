//! The trace files of `gradcode compare` read into its runs
//! ([`Member`](crate::trace::compare::Member)s): every file checked and
//! opened through the guarded reader after its probe
//! ([`crate::trace::file_check`]), a training trace one run, a simulation
//! trace one run per compared scheme and trial; traces of both kinds are
//! refused together. The rows, the baseline and the speedups are
//! [`crate::trace::compare`]'s.

use std::path::{Path, PathBuf};

use super::compare::{Member, repetition_key};
use super::summary::Targets;
use crate::error::InputError;

/// The same file: equal paths, or one file under two names (a symbolic or
/// a hard link: the same device and inode).
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    a == b
        || matches!(
            (std::fs::metadata(a), std::fs::metadata(b)),
            (Ok(x), Ok(y)) if (x.dev(), x.ino()) == (y.dev(), y.ino())
        )
}

/// Every trace read through the guarded reader after its probe, as runs;
/// an error names the file (or the flag a simulation trace cannot answer).
pub fn read_all(
    files: &[PathBuf],
    targets: Targets,
) -> Result<(super::TraceKind, Vec<Member>), InputError> {
    super::backend::check(super::backend::TraceUse::Read)
        .map_err(|missing| InputError::new(files[0].display().to_string(), missing))?;
    use super::{TraceFile, TraceKind};
    let mut kind: Option<(TraceKind, String)> = None;
    let mut members = Vec::new();
    for path in files {
        let name = path.display().to_string();
        super::file_check::check_file(path)?;
        let err = |e| super::file_check::read_error(path, e);
        let file = TraceFile::open(path).map_err(err)?;
        let root = file.root().map_err(err)?;
        same_kind(&mut kind, root.kind, &name)?;
        let key = repetition_key(root.config_toml.as_deref());
        match root.kind {
            TraceKind::Train => {
                let columns = file.columns("/", root.workers).map_err(err)?;
                let kind = root.scheme.clone().unwrap_or_else(|| "?".to_string());
                members.push(Member {
                    file: name.clone(),
                    seed: root.seed,
                    trial: None,
                    label: kind.clone(),
                    kind,
                    key,
                    status: root.status.clone(),
                    columns,
                });
            }
            TraceKind::Simulation => {
                sim_members(&file, &root, key, path, targets, &mut members)?;
            }
        }
        if !members.iter().any(|m| m.file == name) {
            return Err(InputError::new(
                &name,
                "holds no run (a simulation trace without trials)",
            ));
        }
    }
    let (kind, _) = kind.expect("at least one file");
    Ok((kind, members))
}

/// The first trace's kind, or an error when `name` is of another kind:
/// the times of a simulation are model time, never compared with
/// measured ones.
fn same_kind(
    kind: &mut Option<(super::TraceKind, String)>,
    this: super::TraceKind,
    name: &str,
) -> Result<(), InputError> {
    use super::TraceKind;
    match &*kind {
        None => *kind = Some((this, name.to_string())),
        Some((k, first)) if *k != this => {
            let what = |k: TraceKind| match k {
                TraceKind::Train => "a training trace",
                TraceKind::Simulation => "a simulation trace",
            };
            return Err(InputError::new(
                name,
                format!(
                    "is {} and {first} {}: the times of a simulation are model time, not measured, so the two are not compared",
                    what(this),
                    what(*k)
                ),
            ));
        }
        Some(_) => {}
    }
    Ok(())
}

/// The runs of a simulation trace: one per compared scheme and trial
/// (targets refused: a simulation records no losses or accuracies).
fn sim_members(
    file: &super::TraceFile,
    root: &super::RootInfo,
    key: Option<toml::Table>,
    path: &Path,
    targets: Targets,
    members: &mut Vec<Member>,
) -> Result<(), InputError> {
    let name = path.display().to_string();
    let err = |e| super::file_check::read_error(path, e);
    if let Some(flag) = targets.flag() {
        return Err(InputError::new(
            flag,
            format!(
                "{name} is a simulation trace, which records no losses or accuracies: the flag reads training traces (train --out)"
            ),
        ));
    }
    for s in file.sim_schemes().map_err(err)? {
        let kind = sim_kind(key.as_ref(), &s.name);
        // The scheme's name is part of what makes runs repetitions.
        let mut scheme_key = key.clone();
        if let Some(k) = scheme_key.as_mut() {
            k.insert("compared_scheme".to_string(), s.name.clone().into());
        }
        for (trial, group) in &s.trial_groups {
            let columns = file.columns(group, root.workers).map_err(err)?;
            members.push(Member {
                file: name.clone(),
                seed: root.seed,
                trial: Some(*trial),
                kind: kind.clone(),
                label: s.name.clone(),
                key: scheme_key.clone(),
                status: root.status.clone(),
                columns,
            });
        }
    }
    Ok(())
}

/// The kind of the scheme `name` of a simulation's `simulate.compare` (a
/// name, or a table with `name` and `kind`); the name when not found.
fn sim_kind(config: Option<&toml::Table>, name: &str) -> String {
    let entries = config
        .and_then(|c| c.get("simulate"))
        .and_then(|s| s.get("compare"))
        .and_then(|c| c.as_array());
    for e in entries.into_iter().flatten() {
        if let Some(t) = e.as_table()
            && t.get("name").and_then(|n| n.as_str()) == Some(name)
            && let Some(kind) = t.get("kind").and_then(|k| k.as_str())
        {
            return kind.to_string();
        }
    }
    name.to_string()
}
