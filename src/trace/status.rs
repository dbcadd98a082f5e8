//! How a run stands, as its trace records it: the root attributes
//! `status` and `status_reason`.

/// How a run stands, as its trace records it (root attributes `status` and
/// `status_reason`): `running` from the moment the trace is created (or a
/// run resumed) until the writer ends it. A trace whose writer died (SIGKILL,
/// a crash, a full disk) keeps `running` after no process has it open, which
/// `inspect` reports as such.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    Running,
    Completed,
    /// Stopped by a signal (SIGTERM, SIGINT); resumable from its snapshot.
    Interrupted,
    /// Stopped by an error (the reason says which).
    Failed,
}

impl RunStatus {
    /// The value of the attribute `status`.
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Completed => "completed",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => "failed",
        }
    }
}

/// The one-line reason stored with a status: whitespace runs joined into
/// single spaces, at most [`REASON_CHARS`] characters.
pub fn status_reason(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(REASON_CHARS) {
        Some((cut, _)) => format!("{}...", &line[..cut]),
        None => line,
    }
}

/// The longest reason stored with a status, in characters.
pub const REASON_CHARS: usize = 400;
