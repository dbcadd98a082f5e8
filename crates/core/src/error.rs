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
    /// A field or value longer than [`MAX_ECHO`] characters is shortened (see [`shorten`]).
    pub fn value(
        field: impl Into<String>,
        value: impl fmt::Display,
        rule: impl fmt::Display,
    ) -> Self {
        let field = shorten(&field.into(), MAX_ECHO);
        let value = shorten(&compact_number(value.to_string()), MAX_ECHO);
        let message = format!("{field} = {value} {rule}");
        Self::from_parts(field, message)
    }

    /// `"{field}: {rule}"`, for rules that are not about one value.
    /// A field longer than [`MAX_ECHO`] characters is shortened (see [`shorten`]).
    pub fn new(field: impl Into<String>, rule: impl fmt::Display) -> Self {
        let field = shorten(&field.into(), MAX_ECHO);
        let message = format!("{field}: {rule}");
        Self::from_parts(field, message)
    }

    fn from_parts(field: String, message: String) -> Self {
        // One line, always: a message from a parser may carry newlines.
        let message = message.split_whitespace().collect::<Vec<_>>().join(" ");
        // A rule may quote input too (a parser's message, a list given to a
        // flag): the line keeps its start (the field) and its end (the rule).
        let message = shorten_middle(&message, MAX_MESSAGE);
        Self { field, message }
    }

    /// The message without the field prefix logic: what is printed after `error: `.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// A value that is a number spelled out in more than 20 characters (an
/// `f64` such as 1e-300 printed by `Display` as 302 characters) in
/// scientific notation, `1e-300`; anything else as it is.
pub fn compact_number(text: String) -> String {
    if text.len() <= 20 {
        return text;
    }
    match text.parse::<f64>() {
        Ok(x)
            if x.is_finite()
                && text
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b"+-.".contains(&b)) =>
        {
            format!("{x:e}")
        }
        _ => text,
    }
}

/// The most characters of one field or value an [`InputError`] echoes: a 5 MB
/// bad key is named by its first characters and its length, not printed whole.
pub const MAX_ECHO: usize = 120;

/// The most characters of an [`InputError`]'s whole line.
pub const MAX_MESSAGE: usize = 600;

/// `text` when it has at most `max` characters, else its first characters
/// and its length in bytes, `max` characters or fewer in all
/// (`schedule.aaaaaaaa… (5000000 bytes)`).
pub fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let tail = format!("… ({} bytes)", text.len());
    let head: String = text
        .chars()
        .take(max.saturating_sub(tail.chars().count()))
        .collect();
    format!("{head}{tail}")
}

/// `text` when it has at most `max` characters, else its start and its end
/// with ` … ` between them: at most `max` characters.
fn shorten_middle(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_string();
    }
    let keep = max.saturating_sub(3);
    let (head, tail) = (keep - keep / 3, keep / 3);
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(n - tail).collect();
    format!("{start} … {end}")
}

/// A 0-based iteration index as people read it: 1-based, as `inspect`, the
/// traces' snapshot `iteration` attributes and progress lines count
/// (`Iteration(0)` prints `iteration 1`). Every user-facing message that names
/// an iteration formats it through this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Iteration(pub u64);

impl Iteration {
    /// The 1-based number.
    pub fn number(self) -> u64 {
        self.0.saturating_add(1)
    }
}

impl fmt::Display for Iteration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "iteration {}", self.number())
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
    fn numbers_spelled_out_in_hundreds_of_digits_are_echoed_compactly() {
        let e = InputError::value("scheme.decode_tolerance", 1e-300, "is below 1e-15");
        assert_eq!(
            e.to_string(),
            "scheme.decode_tolerance = 1e-300 is below 1e-15"
        );
        let e = InputError::value("straggler.alpha", 1.5e300, "is too large");
        assert_eq!(e.to_string(), "straggler.alpha = 1.5e300 is too large");
        // Short numbers and other text stay as given.
        assert_eq!(InputError::value("x", 0.25, "r").to_string(), "x = 0.25 r");
        let id = "12345678901234567890123";
        assert_eq!(compact_number(format!("\"{id}\"")), format!("\"{id}\""));
        assert_eq!(compact_number("a".repeat(30)), "a".repeat(30));
    }

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
    fn long_fields_values_and_rules_are_shortened_keeping_the_rule() {
        let key = format!("scheme.{}", "k".repeat(5_000_000));
        let e = InputError::new(&key, "unknown key (expected one of `kind`, `load`)");
        let line = e.to_string();
        assert!(line.len() < 1000, "{} bytes", line.len());
        assert!(line.starts_with("scheme.kkk"), "{line}");
        assert!(line.contains("(5000007 bytes)"), "{line}");
        assert!(
            line.ends_with("unknown key (expected one of `kind`, `load`)"),
            "{line}"
        );
        assert!(
            line.contains(&e.field),
            "the line names its (shortened) field"
        );
        assert!(e.field.chars().count() <= MAX_ECHO);
        let e = InputError::value("scheme.kind", "x".repeat(1 << 20), "is not known");
        let line = e.to_string();
        assert!(
            line.len() < 1000 && line.ends_with("bytes) is not known"),
            "{line}"
        );
        // A rule quoting a long list keeps the field and the end of the line.
        let e = InputError::new(
            "--received",
            format!("{} names worker 9 twice", "1,".repeat(1 << 16)),
        );
        let line = e.to_string();
        assert!(line.chars().count() <= MAX_MESSAGE, "{line}");
        assert!(line.starts_with("--received: 1,1,") && line.ends_with("names worker 9 twice"));
        // Short input is echoed whole.
        assert_eq!(
            InputError::value("workers", 0, "must be at least 1").to_string(),
            "workers = 0 must be at least 1"
        );
    }

    #[test]
    fn iterations_are_numbered_from_one() {
        assert_eq!(Iteration(0).to_string(), "iteration 1");
        assert_eq!(Iteration(41).number(), 42);
        assert_eq!(Iteration(u64::MAX).number(), u64::MAX);
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
