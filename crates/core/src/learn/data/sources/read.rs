//! Reading data files row by row: counting and checking them ([`scan`]) and
//! keeping only the wanted rows ([`read_rows`]).

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use ndarray::Array2;

use super::csv::parse_csv_row;
use super::libsvm::parse_libsvm_line;
use super::row::Row;
use crate::config::{DataKind, Loss};
use crate::csvfile::CsvRows;
use crate::error::InputError;
use crate::learn::data::Storage;
use crate::learn::sparse::{CsrMatrix, Features};
use crate::textfile::Lines;

/// What a pass over a file found.
pub(crate) struct Scan {
    pub(crate) rows: usize,
    pub(crate) features: usize,
    /// Entries the rows list (LIBSVM pairs, CSV cells).
    pub(crate) stored: usize,
}

fn open(path: &str) -> Result<File, InputError> {
    crate::files::open_input(Path::new(path))
        .map_err(|e| InputError::new(path, format!("cannot open: {e}")))
}

/// Samples and labels read from a file.
type Samples = (Features, Vec<f64>);

/// Read the data rows of a file, calling `each(row_index, line_number, row)`;
/// with `limit`, stop after that many rows. LIBSVM is read line by line
/// ([`Lines`]), CSV row by row ([`CsvRows`]: quoted cells, `\r\n`); the first
/// row of a CSV file that is not blank is its header.
pub(crate) fn for_each_row(
    kind: DataKind,
    path: &str,
    loss: Loss,
    limit: Option<usize>,
    mut each: impl FnMut(usize, usize, Row) -> Result<(), String>,
) -> Result<usize, InputError> {
    let mut rows = 0;
    let mut take = |rows: &mut usize, line_no: usize, parsed: Result<Option<Row>, String>| {
        let at = || format!("{path}:{line_no}");
        match parsed {
            Ok(Some(row)) => {
                each(*rows, line_no, row).map_err(|why| InputError::new(at(), why))?;
                *rows += 1;
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(why) => Err(InputError::new(at(), why)),
        }
    };
    match kind {
        DataKind::Csv => {
            let mut csv = CsvRows::new(open(path)?, path);
            let mut header_seen = false;
            while let Some((line_no, cells)) = csv.next_row()? {
                if limit.is_some_and(|n| rows >= n) {
                    break;
                }
                if !header_seen {
                    header_seen = true;
                    continue;
                }
                take(&mut rows, line_no, parse_csv_row(cells, loss))?;
            }
        }
        _ => {
            for item in Lines::new(BufReader::new(open(path)?), path) {
                if limit.is_some_and(|n| rows >= n) {
                    break;
                }
                let (line_no, line) = item?;
                take(&mut rows, line_no, parse_libsvm_line(&line, loss))?;
            }
        }
    }
    Ok(rows)
}

pub(crate) fn scan_file(kind: DataKind, path: &str, loss: Loss) -> Result<Scan, InputError> {
    scan(kind, path, loss, None)
}

pub(crate) fn beyond_features(j: usize, features: usize) -> String {
    format!(
        "feature {} exceeds the {features} features of the training data",
        j + 1
    )
}

/// Count and check the rows of a file (with `limit`, the first so many).
pub(crate) fn scan(
    kind: DataKind,
    path: &str,
    loss: Loss,
    limit: Option<usize>,
) -> Result<Scan, InputError> {
    let mut features = 0usize;
    let mut stored = 0usize;
    let mut csv_width: Option<usize> = None;
    let rows = for_each_row(kind, path, loss, limit, |_, _, (_, feats)| {
        stored += feats.len();
        match kind {
            DataKind::Csv => match csv_width {
                None => csv_width = Some(feats.len()),
                Some(w) if w != feats.len() => {
                    return Err(format!(
                        "has {} feature cells, earlier rows {w}",
                        feats.len()
                    ));
                }
                Some(_) => {}
            },
            _ => {
                if let Some(&(last, _)) = feats.last() {
                    features = features.max(last + 1);
                }
            }
        }
        Ok(())
    })?;
    if rows == 0 {
        return Err(InputError::new(path, "has no data rows"));
    }
    if kind == DataKind::Csv {
        features = csv_width.unwrap_or(0);
    }
    // Sparse rows: the features may come after the rows read.
    if features == 0 && limit.is_none_or(|n| rows < n) {
        return Err(InputError::new(path, "has no features"));
    }
    Ok(Scan {
        rows,
        features,
        stored,
    })
}

/// Read the rows `wanted[k]` (row indices of the file, in the wanted order)
/// into matrices stored as `storage`; only the wanted rows are kept.
pub(crate) fn read_rows(
    kind: DataKind,
    path: &str,
    features: usize,
    loss: Loss,
    wanted: &[Vec<usize>],
    storage: Storage,
) -> Result<Vec<Samples>, InputError> {
    // row index → (set, position).
    let mut slot = std::collections::HashMap::new();
    for (k, rows) in wanted.iter().enumerate() {
        for (pos, &r) in rows.iter().enumerate() {
            slot.insert(r, (k, pos));
        }
    }
    let mut labels: Vec<Vec<f64>> = wanted.iter().map(|rows| vec![0.0; rows.len()]).collect();
    match storage {
        Storage::Dense => {
            let mut xs: Vec<Array2<f64>> = wanted
                .iter()
                .map(|rows| Array2::zeros((rows.len(), features)))
                .collect();
            for_each_row(kind, path, loss, None, |row, _, (label, feats)| {
                if let Some(&(k, pos)) = slot.get(&row) {
                    labels[k][pos] = label;
                    for (j, v) in feats {
                        if j >= features {
                            return Err(beyond_features(j, features));
                        }
                        xs[k][(pos, j)] = v;
                    }
                }
                Ok(())
            })?;
            Ok(xs.into_iter().map(Features::Dense).zip(labels).collect())
        }
        Storage::Sparse => {
            // Rows arrive in file order: keep them by position, then build each CSR in order.
            let mut entries: Vec<Vec<Vec<(usize, f64)>>> = wanted
                .iter()
                .map(|rows| vec![Vec::new(); rows.len()])
                .collect();
            for_each_row(kind, path, loss, None, |row, _, (label, feats)| {
                if let Some(&(k, pos)) = slot.get(&row) {
                    labels[k][pos] = label;
                    if let Some(&(j, _)) = feats.iter().find(|&&(j, _)| j >= features) {
                        return Err(beyond_features(j, features));
                    }
                    // Explicit zeros are not stored.
                    entries[k][pos] = feats.into_iter().filter(|&(_, v)| v != 0.0).collect();
                }
                Ok(())
            })?;
            let mut out = Vec::with_capacity(wanted.len());
            for (rows, y) in entries.into_iter().zip(labels) {
                let mut x =
                    CsrMatrix::new(features).map_err(|e| InputError::new(path, e.to_string()))?;
                for r in rows {
                    x.push_row(&r)
                        .map_err(|e| InputError::new(path, e.to_string()))?;
                }
                out.push((Features::Sparse(x), y));
            }
            Ok(out)
        }
    }
}
