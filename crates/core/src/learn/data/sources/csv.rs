//! CSV rows: the target, then one cell per feature.

use super::row::{Row, binary_label, parse_number};
use crate::config::Loss;

/// Parse one CSV row (the target, then one cell per feature); `None` for a
/// comment row (its first cell starts with `#`).
pub(super) fn parse_csv_row(
    cells: crate::csvfile::Row<'_>,
    loss: Loss,
) -> Result<Option<Row>, String> {
    let mut cells = cells.iter();
    let label = cells.next().expect("a row has a cell");
    if label.starts_with('#') {
        return Ok(None);
    }
    let label = parse_number(label).map_err(|_| format!("target `{label}` is not a number"))?;
    let mut features = Vec::new();
    for (j, cell) in cells.enumerate() {
        let value =
            parse_number(cell).map_err(|_| format!("cell {} `{cell}` is not a number", j + 2))?;
        features.push((j, value));
    }
    Ok(Some((binary_label(label, loss)?, features)))
}

#[cfg(test)]
mod csv_files;
