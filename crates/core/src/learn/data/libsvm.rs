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
mod tests {
    use super::super::testing::bad_file;

    #[test]
    fn malformed_lines_are_reported_as_file_and_line() {
        let e = bad_file(
            "a.libsvm",
            "libsvm",
            "1 1:0.5 2:1\n-1 1:x\n",
            "least-squares",
        );
        assert!(e.field.ends_with("a.libsvm:2"), "{e}");
        assert!(e.to_string().contains("value `x`"), "{e}");
        let e = bad_file(
            "b.libsvm",
            "libsvm",
            "1 1:0.5\n1 3:1 2:4\n",
            "least-squares",
        );
        assert!(
            e.to_string()
                .contains(":2: feature index 2 does not increase"),
            "{e}"
        );
        let e = bad_file("c.libsvm", "libsvm", "# c\n2 1:1\n", "logistic");
        assert!(e.to_string().contains(":2: label 2 is not binary"), "{e}");
        let e = bad_file("f.libsvm", "libsvm", "1 0:3\n", "least-squares");
        assert!(e.to_string().contains("1-based"), "{e}");
    }
}
