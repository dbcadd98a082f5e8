//! Where a trace goes: `--out`, else `output.trace`, else a new name in
//! `results/` made from the run's scheme and the time; checked before any
//! work starts, nothing created.

use super::place;

/// Where a trace goes: `--out` (the flag), else `output.trace`, else a
/// new name ([`default_trace_name`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracePath {
    pub path: std::path::PathBuf,
    /// `--out` or `output.trace`: what an error names.
    pub field: &'static str,
    /// `--force`: an existing file may be replaced (when no process has it open).
    pub force: bool,
    /// The name was made for this run (neither `--out` nor `output.trace`
    /// given): when another run takes it first, the next free one is taken.
    pub generated: bool,
}

/// The folder of the traces named by [`default_trace_name`].
pub const DEFAULT_TRACE_FOLDER: &str = "results";

/// A new trace name for a run of `stem` (the scheme kind of a training run,
/// `simulate` for a simulation) at `time`: `results/<stem>-<UTC time
/// stamp>.h5` (`results/gc-dc-20261126T190312Z.h5`), with `-2`, `-3`, ...
/// before `.h5` when that name is taken (a file, a folder, anything) or
/// `taken` (names another writer of this process claimed).
pub fn default_trace_name(
    stem: &str,
    time: std::time::SystemTime,
    taken: &[std::path::PathBuf],
) -> std::path::PathBuf {
    // RFC 3339 `2026-11-26T19:03:12Z` without its separators.
    let stamp: String = humantime::format_rfc3339_seconds(time)
        .to_string()
        .chars()
        .filter(|c| !matches!(c, '-' | ':'))
        .collect();
    let stem: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let folder = std::path::Path::new(DEFAULT_TRACE_FOLDER);
    (1u64..)
        .map(|n| match n {
            1 => folder.join(format!("{stem}-{stamp}.h5")),
            n => folder.join(format!("{stem}-{stamp}-{n}.h5")),
        })
        .find(|p| std::fs::symlink_metadata(p).is_err() && !taken.contains(p))
        .expect("some suffix is free")
}

/// The trace path of a run (`train`) or simulation (`simulate --out`),
/// checked before any work starts, with nothing created or changed: `out`
/// (the `--out` flag), else `output.trace`, else a new name from
/// `default_stem` and the time ([`default_trace_name`]); never anything but a
/// regular file, nor one of the command's `inputs` ([`place::check_target`]);
/// an existing file only with `force`, and only when no process has it open
/// (HDF5's lock); a folder in which a file can be created (probed with a
/// file created and removed at once; a missing folder is created with the
/// trace, see [`place`]).
pub fn trace_path(
    config: &crate::config::Config,
    out: Option<&std::path::Path>,
    force: bool,
    inputs: &[place::Input],
    default_stem: &str,
) -> Result<TracePath, crate::error::InputError> {
    use crate::error::InputError;
    use std::path::PathBuf;
    let (field, path, generated) = match (out, &config.output.trace) {
        (Some(p), _) => ("--out", p.to_path_buf(), false),
        (None, Some(t)) => ("output.trace", PathBuf::from(t), false),
        (None, None) => (
            "output.trace",
            default_trace_name(default_stem, std::time::SystemTime::now(), &[]),
            true,
        ),
    };
    // The lock is only probed here; it is taken when the trace is created.
    place::check_output(&path, force, inputs).map_err(|e| InputError::new(field, e))?;
    Ok(TracePath {
        path,
        field,
        force,
        generated,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn default_trace_names_have_the_scheme_and_a_utc_stamp_and_avoid_taken_ones() {
        use std::path::PathBuf;
        use std::time::{Duration, UNIX_EPOCH};
        // 2026-11-26T19:03:12Z.
        let t = UNIX_EPOCH + Duration::from_secs(1_795_719_792);
        let first = super::default_trace_name("gc-dc", t, &[]);
        assert_eq!(first, PathBuf::from("results/gc-dc-20261126T190312Z.h5"));
        let second = super::default_trace_name("gc-dc", t, std::slice::from_ref(&first));
        assert_eq!(second, PathBuf::from("results/gc-dc-20261126T190312Z-2.h5"));
        let third = super::default_trace_name("gc-dc", t, &[first, second]);
        assert_eq!(third, PathBuf::from("results/gc-dc-20261126T190312Z-3.h5"));
        // Nothing but letters, digits, `-` and `_` from the stem.
        let odd = super::default_trace_name("a/b c", t, &[]);
        assert_eq!(odd, PathBuf::from("results/a_b_c-20261126T190312Z.h5"));
    }
}
