//! The version of the trace schema (root attribute `trace_schema`), and
//! whether a trace is one this gradcode reads.

use super::status_reason;

/// The version of the trace schema this gradcode writes and reads (root
/// attribute `trace_schema`). A trace without one was written by gradcode
/// 0.1 before the attribute existed, and is schema 1 when its
/// `gradcode_version` is 0.1.x; any other trace (a newer schema, another
/// version, garbage) is refused by every reader and by resume.
pub const TRACE_SCHEMA: u64 = 1;

/// Whether a trace with these root attributes is one this gradcode reads:
/// `Err` (in words) when not.
pub fn check_schema(trace_schema: Option<u64>, gradcode_version: &str) -> Result<(), String> {
    match trace_schema {
        Some(TRACE_SCHEMA) => Ok(()),
        Some(other) => Err(format!(
            "trace schema {other} (written by gradcode {gradcode_version}); this gradcode {} reads schema {TRACE_SCHEMA}",
            env!("CARGO_PKG_VERSION")
        )),
        None if gradcode_version.split('.').take(2).eq(["0", "1"])
            && gradcode_version.split('.').count() == 3
            && gradcode_version
                .split('.')
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())) =>
        {
            Ok(())
        }
        None => Err(format!(
            "written by gradcode {:?} without a trace_schema attribute: not a trace this gradcode {} reads",
            status_reason(gradcode_version),
            env!("CARGO_PKG_VERSION")
        )),
    }
}
