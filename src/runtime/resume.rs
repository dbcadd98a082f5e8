//! Resume continues this run and no other: the keys a resumed run may
//! change, and the data files' fingerprint stored when the run started and
//! checked when it resumes.

use crate::config::Config;
use crate::error::InputError;
use crate::trace::place::{Input, inputs_of};

/// The keys `--set` may change on `train --resume`: how long to train, and
/// what cannot change the trajectory (how often progress is printed, how
/// long the master waits for a silent worker before it gives up). Any
/// other key (the scheme, the seed, the learning rate, how ranks wait, how
/// often snapshots are written, the data) would make the resumed
/// iterations another run than the one the trace records.
pub const RESUME_KEYS: [&str; 3] = [
    "train.iterations",
    "output.progress_every",
    "train.result_timeout_s",
];

/// Refuse a `--set KEY=VALUE` of `train --resume` whose key is not in
/// [`RESUME_KEYS`], naming the key.
pub fn check_overrides(overrides: &[String]) -> Result<(), InputError> {
    for o in overrides {
        let key = o.split_once('=').map_or(o.as_str(), |(k, _)| k).trim();
        if !RESUME_KEYS.contains(&key) {
            return Err(InputError::new(
                key,
                format!(
                    "cannot be changed by --set on --resume: a resumed run continues the run the trace \
                     records (only {} may change)",
                    RESUME_KEYS.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// The fingerprint of every file the run reads but the config (stored in
/// the trace itself): one line `WHAT PATH bytes=N crc32=X` each, in the
/// order of [`inputs_of`] (a named set's files as `data.set/NAME`); empty
/// for synthetic data.
pub fn data_fingerprint(config: &Config) -> Result<String, InputError> {
    let mut lines = Vec::new();
    for Input { what, path } in inputs_of(config, None) {
        let print = crate::files::fingerprint(&path).map_err(|e| {
            InputError::value(
                &what,
                format!("\"{}\"", path.display()),
                format!("cannot be read: {e}"),
            )
        })?;
        lines.push(format!("{what} {} {print}", path.display()));
    }
    Ok(lines.join("\n"))
}

/// Refuse a resume whose data files differ from those the run started
/// with (`stored`, the trace's `data_fingerprint`): a file whose size or
/// CRC-32 differs is named. Files are matched by what they are, not where
/// they are: a named set read from another root (`GRADCODE_DATASET_ROOT`)
/// with the same bytes is the same data. A trace without a fingerprint (an
/// older gradcode), or without one of a named set's files (gradcode
/// fingerprinted only paths before), is not checked for those: `Ok(false)`.
pub fn check_data(stored: Option<&str>, config: &Config) -> Result<bool, InputError> {
    let Some(stored) = stored else {
        return Ok(false);
    };
    let now = data_fingerprint(config)?;
    // Each line is `WHAT PATH bytes=N crc32=X`: the first field names it,
    // the last two are its fingerprint.
    let what = |line: &str| line.split_whitespace().next().unwrap_or("").to_string();
    let print = |line: &str| {
        line.rsplitn(3, ' ')
            .take(2)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let before: Vec<&str> = stored.lines().collect();
    let mut checked = true;
    for line in now.lines() {
        let then = before.iter().find(|l| what(l) == what(line));
        if then.is_none() && what(line).starts_with("data.set/") {
            checked = false;
            continue;
        }
        if then.map(|l| print(l)) != Some(print(line)) {
            return Err(InputError::new(
                what(line),
                format!(
                    "the file changed since the run started (then {}, now {}): a resumed run must read \
                     the data it started with",
                    then.map_or("not read".to_string(), |l| print(l)),
                    print(line)
                ),
            ));
        }
    }
    if let Some(gone) = before
        .iter()
        .find(|l| !now.lines().any(|n| what(n) == what(l)))
    {
        return Err(InputError::new(
            what(gone),
            "the run read this file when it started and reads it no more: a resumed run must read the data it started with",
        ));
    }
    Ok(checked)
}
