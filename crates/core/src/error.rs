//! Errors shared by every layer.
//!
//! [`InputError`] is the one type for bad input from a person: a config key, a
//! command-line flag, a data or trace file. It always names what is wrong (the
//! field, flag or `file:line`) and the rule it breaks, in one line. The binary
//! maps it to exit status 2; every other error exits with status 1.

use std::fmt;

/// Bad input: names the offending field and the broken rule, in one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct InputError {
    /// The config key (`scheme.clusters`), flag (`--received`) or `file:line`.
    pub field: String,
    /// The whole one-line message, which contains `field`.
    message: String,
}

impl InputError {
    /// `"{field} = {value} {rule}"`, e.g. `scheme.clusters = 5 does not divide workers = 12`.
    pub fn value(
        field: impl Into<String>,
        value: impl fmt::Display,
        rule: impl fmt::Display,
    ) -> Self {
        let field = field.into();
        let message = format!("{field} = {value} {rule}");
        Self::from_parts(field, message)
    }

    /// `"{field}: {rule}"`, for rules that are not about one value.
    pub fn new(field: impl Into<String>, rule: impl fmt::Display) -> Self {
        let field = field.into();
        let message = format!("{field}: {rule}");
        Self::from_parts(field, message)
    }

    fn from_parts(field: String, message: String) -> Self {
        // One line, always: a message from a parser may carry newlines.
        let message = message.split_whitespace().collect::<Vec<_>>().join(" ");
        Self { field, message }
    }

    /// The message without the field prefix logic: what is printed after `error: `.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_error_names_field_value_and_rule() {
        let e = InputError::value("scheme.clusters", 5, "does not divide workers = 12");
        assert_eq!(
            e.to_string(),
            "scheme.clusters = 5 does not divide workers = 12"
        );
        assert_eq!(e.field, "scheme.clusters");
    }

    #[test]
    fn messages_are_one_line() {
        let e = InputError::new("config.toml:3:1", "expected `=`\n  |\n3 | foo\n");
        assert!(!e.to_string().contains('\n'), "{e}");
        assert!(e.to_string().starts_with("config.toml:3:1: expected `=`"));
    }
}

/// Exit with this status without printing: the reason was printed elsewhere
/// (by rank 0 of an MPI run, say), and every other rank must only exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("exit status {0}")]
pub struct QuietExit(pub u8);
