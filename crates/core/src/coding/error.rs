//! The errors of scheme construction and decoding.

use crate::error::InputError;

/// Errors of scheme construction and decoding.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CodingError {
    /// A parameter breaks the scheme's limits; `param` is its config key.
    #[error("{param} = {value} {rule}")]
    Invalid {
        param: String,
        value: String,
        rule: String,
    },
    /// A numerical failure that the parameters did not predict.
    #[error("numerical failure: {what}")]
    Numerical { what: String },
}

impl CodingError {
    pub(crate) fn invalid(
        param: &str,
        value: impl std::fmt::Display,
        rule: impl Into<String>,
    ) -> Self {
        CodingError::Invalid {
            param: param.to_string(),
            value: crate::error::compact_number(value.to_string()),
            rule: rule.into(),
        }
    }
}

impl From<CodingError> for InputError {
    fn from(e: CodingError) -> Self {
        match e {
            CodingError::Invalid { param, value, rule } => InputError::value(param, value, rule),
            CodingError::Numerical { what } => InputError::new("scheme", what),
        }
    }
}
