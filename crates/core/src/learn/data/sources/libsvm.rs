//! LIBSVM lines: `label index:value ...`, 1-based increasing indices.

use super::row::{Row, binary_label, parse_number};
use crate::config::Loss;

/// Parse one LIBSVM line; `None` for blank and comment lines.
pub(super) fn parse_libsvm_line(line: &str, loss: Loss) -> Result<Option<Row>, String> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let mut tokens = line.split_whitespace();
    let label = tokens.next().expect("non-empty line has a token");
    let label = parse_number(label).map_err(|_| format!("label `{label}` is not a number"))?;
    let mut features = Vec::new();
    let mut last = 0usize;
    for token in tokens {
        if token.starts_with('#') {
            break; // trailing comment
        }
        let (index, value) = token
            .split_once(':')
            .ok_or_else(|| format!("`{token}` is not of the form index:value"))?;
        let index: usize = index
            .parse()
            .map_err(|_| format!("feature index `{index}` is not an integer"))?;
        if index == 0 {
            return Err("feature indices are 1-based; found 0".to_string());
        }
        if index <= last {
            return Err(format!(
                "feature index {index} does not increase (after {last})"
            ));
        }
        last = index;
        let value = parse_number(value)
            .map_err(|_| format!("value `{value}` of feature {index} is not a number"))?;
        features.push((index - 1, value));
    }
    Ok(Some((binary_label(label, loss)?, features)))
}

#[cfg(test)]
mod libsvm_files;
