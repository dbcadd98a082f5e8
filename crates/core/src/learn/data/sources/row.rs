//! A parsed data row, and the rules both text formats share: numbers and
//! labels.

use crate::config::Loss;

/// A parsed data line: label and (0-based feature, value) pairs.
pub(super) type Row = (f64, Vec<(usize, f64)>);

/// The label as the loss reads it: as it is for least squares, -1/+1 for
/// logistic loss (given as -1/+1 or 0/1).
pub(super) fn binary_label(label: f64, loss: Loss) -> Result<f64, String> {
    match loss {
        Loss::LeastSquares => Ok(label),
        Loss::Logistic => {
            if label == 1.0 {
                Ok(1.0)
            } else if label == -1.0 || label == 0.0 {
                Ok(-1.0)
            } else {
                Err(format!(
                    "label {label} is not binary (logistic loss needs -1/+1 or 0/1)"
                ))
            }
        }
    }
}

pub(super) fn parse_number(text: &str) -> Result<f64, ()> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(()),
    }
}
