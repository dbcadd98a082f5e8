//! `gradcode job`: what the batch scripts (jobs/) need of JSON, done by the
//! binary so that compute nodes need no Python (issue 26, item 5): the field
//! of a summary or of `inspect --json`, and the summary of a job whose
//! launcher failed before gradcode could write one.

use std::io::Read;
use std::path::Path;

use clap::Subcommand;
use serde_json::Value;

use crate::error::InputError;

#[derive(Debug, Subcommand)]
pub enum JobAction {
    /// Print one top-level field of a JSON file (`-`: stdin): a string as
    /// it is, anything else as JSON.
    Field {
        #[arg(value_name = "FILE.json|-")]
        file: String,
        #[arg(value_name = "KEY")]
        key: String,
    },
    /// Print the summary of a job whose launcher exited with STATUS before
    /// gradcode wrote one.
    FailedSummary {
        #[arg(long, value_name = "STATUS")]
        status: i32,
        #[arg(long, value_name = "F.h5")]
        trace: String,
    },
}

pub fn run(action: &JobAction) -> anyhow::Result<()> {
    match action {
        JobAction::Field { file, key } => {
            let text = read(file)?;
            let value: Value = serde_json::from_str(&text)
                .map_err(|e| InputError::new(file.as_str(), format!("not JSON ({e})")))?;
            let field = value.get(key).ok_or_else(|| {
                InputError::new(file.as_str(), format!("no top-level field \"{key}\""))
            })?;
            match field {
                Value::String(s) => crate::outln!("{s}"),
                other => crate::outln!("{other}"),
            }
        }
        JobAction::FailedSummary { status, trace } => {
            let summary = failed_summary(*status, trace);
            crate::outln!("{summary}");
        }
    }
    Ok(())
}

/// The summary.json of a job that failed before gradcode printed one.
pub fn failed_summary(status: i32, trace: &str) -> Value {
    serde_json::json!({
        "status": "failed",
        "error": format!(
            "the launcher exited {status} before gradcode wrote a summary (see the job log)"
        ),
        "trace": trace,
    })
}

/// The whole text of `file` (`-`: stdin); a FIFO, a device or a folder is
/// refused, as every input file is ([`crate::files::open_input`]).
fn read(file: &str) -> Result<String, InputError> {
    let mut text = String::new();
    let read = if file == "-" {
        std::io::stdin().read_to_string(&mut text)
    } else {
        crate::files::open_input(Path::new(file)).and_then(|mut f| f.read_to_string(&mut text))
    };
    read.map_err(|e| InputError::new(file, e))?;
    Ok(text)
}
