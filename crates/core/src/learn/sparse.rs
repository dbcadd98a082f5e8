//! Sample matrices: dense (row-major) or compressed sparse rows (CSR).
//!
//! A CSR matrix stores, row after row, the column index (`u32`) and value of
//! every stored entry: 12 bytes per stored entry and 8 per row, against 8
//! bytes per entry of the dense matrix. LIBSVM files are sparse by nature and
//! one-hot data sets of 10^5 features and more exist only this way.

use ndarray::Array2;
use thiserror::Error;

/// A CSR matrix that cannot be built as asked.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum CsrError {
    #[error("row {row}: column {column} is not below the {columns} columns")]
    ColumnOutOfRange {
        row: usize,
        column: usize,
        columns: usize,
    },
    #[error("row {row}: column {column} does not increase (after {previous})")]
    ColumnsNotIncreasing {
        row: usize,
        column: usize,
        previous: usize,
    },
    #[error("{columns} columns do not fit 32-bit column indices")]
    TooManyColumns { columns: usize },
}

/// Compressed sparse rows: row `i` holds `indices[starts[i]..starts[i + 1]]`
/// (strictly increasing columns) and the values at the same positions.
#[derive(Debug, Clone, PartialEq)]
pub struct CsrMatrix {
    columns: usize,
    starts: Vec<usize>,
    indices: Vec<u32>,
    values: Vec<f64>,
}

impl CsrMatrix {
    /// An empty matrix of `columns` columns, to be filled with [`Self::push_row`].
    pub fn new(columns: usize) -> Result<Self, CsrError> {
        if columns > u32::MAX as usize + 1 {
            return Err(CsrError::TooManyColumns { columns });
        }
        Ok(Self {
            columns,
            starts: vec![0],
            indices: Vec::new(),
            values: Vec::new(),
        })
    }

    /// Append a row of (column, value) entries, columns strictly increasing.
    pub fn push_row(&mut self, entries: &[(usize, f64)]) -> Result<(), CsrError> {
        let row = self.rows();
        let mut previous: Option<usize> = None;
        for &(column, _) in entries {
            if column >= self.columns {
                return Err(CsrError::ColumnOutOfRange {
                    row,
                    column,
                    columns: self.columns,
                });
            }
            if let Some(p) = previous.filter(|&p| column <= p) {
                return Err(CsrError::ColumnsNotIncreasing {
                    row,
                    column,
                    previous: p,
                });
            }
            previous = Some(column);
        }
        for &(column, value) in entries {
            self.indices.push(column as u32);
            self.values.push(value);
        }
        self.starts.push(self.indices.len());
        Ok(())
    }

    /// The non-zero entries of a dense matrix.
    pub fn from_dense(x: &Array2<f64>) -> Result<Self, CsrError> {
        let mut m = Self::new(x.ncols())?;
        let mut entries = Vec::new();
        for row in x.rows() {
            entries.clear();
            entries.extend(
                row.iter()
                    .enumerate()
                    .filter(|&(_, &v)| v != 0.0)
                    .map(|(j, &v)| (j, v)),
            );
            m.push_row(&entries)?;
        }
        Ok(m)
    }

    /// The dense matrix (zeros where nothing is stored).
    pub fn to_dense(&self) -> Array2<f64> {
        let mut x = Array2::zeros((self.rows(), self.columns));
        for i in 0..self.rows() {
            let (indices, values) = self.row(i);
            for (&j, &v) in indices.iter().zip(values) {
                x[(i, j as usize)] = v;
            }
        }
        x
    }

    pub fn rows(&self) -> usize {
        self.starts.len() - 1
    }

    pub fn columns(&self) -> usize {
        self.columns
    }

    /// Stored entries.
    pub fn stored(&self) -> usize {
        self.values.len()
    }

    /// The columns with at least one stored entry, ascending: where a
    /// linear model's gradient over these rows can be non-zero.
    pub fn column_support(&self) -> Vec<u32> {
        let mut columns = self.indices.clone();
        columns.sort_unstable();
        columns.dedup();
        columns
    }

    /// Column indices and values of row `i`.
    #[inline]
    pub fn row(&self, i: usize) -> (&[u32], &[f64]) {
        let range = self.starts[i]..self.starts[i + 1];
        (&self.indices[range.clone()], &self.values[range])
    }

    /// Divide column `j` by `scale[j]` (standardisation without centering).
    pub fn scale_columns(&mut self, scale: &[f64]) {
        for (&j, v) in self.indices.iter().zip(&mut self.values) {
            *v /= scale[j as usize];
        }
    }

    /// Bytes of the three arrays (what `config::csr_bytes` counts before
    /// a matrix is built, for the `data.max_matrix_mib` check).
    pub fn bytes(&self) -> usize {
        self.starts.len() * std::mem::size_of::<usize>()
            + self.indices.len() * std::mem::size_of::<u32>()
            + self.values.len() * std::mem::size_of::<f64>()
    }
}

/// The samples of a partition: dense or sparse.
#[derive(Debug, Clone, PartialEq)]
pub enum Features {
    Dense(Array2<f64>),
    Sparse(CsrMatrix),
}

impl Features {
    pub fn rows(&self) -> usize {
        match self {
            Features::Dense(x) => x.nrows(),
            Features::Sparse(x) => x.rows(),
        }
    }

    pub fn columns(&self) -> usize {
        match self {
            Features::Dense(x) => x.ncols(),
            Features::Sparse(x) => x.columns(),
        }
    }

    /// Values the kernel reads per pass: every entry (dense) or the stored ones (sparse).
    pub fn values(&self) -> usize {
        match self {
            Features::Dense(x) => x.len(),
            Features::Sparse(x) => x.stored(),
        }
    }

    /// A dense copy (tests, small data).
    pub fn to_dense(&self) -> Array2<f64> {
        match self {
            Features::Dense(x) => x.clone(),
            Features::Sparse(x) => x.to_dense(),
        }
    }

    /// Rows per block of about `values` values read (at least one row).
    pub fn rows_per_block(&self, values: usize) -> usize {
        let per_row = self.values().div_ceil(self.rows().max(1)).max(1);
        (values / per_row).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    /// The support is every stored column once, ascending, whatever its
    /// repeats across rows (a stored zero counts).
    #[test]
    fn the_column_support_is_the_stored_columns_once_ascending() {
        let mut x = CsrMatrix::new(10).unwrap();
        x.push_row(&[(2, -0.5), (7, 1.0)]).unwrap();
        x.push_row(&[]).unwrap();
        x.push_row(&[(0, 1.0), (2, 3.0), (9, 0.0)]).unwrap();
        assert_eq!(x.column_support(), vec![0, 2, 7, 9]);
        assert!(CsrMatrix::new(4).unwrap().column_support().is_empty());
    }

    #[test]
    fn dense_to_csr_and_back_is_exact() {
        let x = array![
            [0.0, 1.5, 0.0, -2.0],
            [0.0, 0.0, 0.0, 0.0],
            [3.25, 0.0, 1e-300, 0.0]
        ];
        let m = CsrMatrix::from_dense(&x).unwrap();
        assert_eq!((m.rows(), m.columns(), m.stored()), (3, 4, 4));
        assert_eq!(m.row(0), (&[1u32, 3][..], &[1.5, -2.0][..]));
        assert_eq!(m.row(1), (&[][..], &[][..]));
        assert_eq!(m.to_dense(), x);
        assert_eq!(m.bytes() as u128, crate::config::csr_bytes(3, 4));
    }

    #[test]
    fn rows_out_of_order_or_range_are_refused() {
        let mut m = CsrMatrix::new(3).unwrap();
        assert_eq!(
            m.push_row(&[(0, 1.0), (3, 1.0)]),
            Err(CsrError::ColumnOutOfRange {
                row: 0,
                column: 3,
                columns: 3
            })
        );
        assert_eq!(
            m.push_row(&[(2, 1.0), (2, 1.0)]),
            Err(CsrError::ColumnsNotIncreasing {
                row: 0,
                column: 2,
                previous: 2
            })
        );
        assert_eq!(m.rows(), 0, "a refused row is not stored");
        assert!(CsrMatrix::new(u32::MAX as usize + 2).is_err());
    }

    #[test]
    fn columns_scale_without_centering() {
        let mut m = CsrMatrix::from_dense(&array![[2.0, 0.0], [0.0, 6.0]]).unwrap();
        m.scale_columns(&[2.0, 3.0]);
        assert_eq!(m.to_dense(), array![[1.0, 0.0], [0.0, 2.0]]);
        assert_eq!(m.stored(), 2, "zeros stay zeros, and unstored");
    }

    #[test]
    fn blocks_hold_about_the_values_asked_for() {
        let dense = Features::Dense(Array2::zeros((100, 50)));
        assert_eq!(dense.rows_per_block(1000), 20);
        assert_eq!(dense.rows_per_block(10), 1, "at least one row");
        let mut m = CsrMatrix::new(1_000_000).unwrap();
        for i in 0..100 {
            m.push_row(&[(i, 1.0), (i + 500_000, 2.0)]).unwrap();
        }
        let sparse = Features::Sparse(m);
        assert_eq!(sparse.values(), 200);
        assert_eq!(
            sparse.rows_per_block(1000),
            500,
            "by stored entries, not columns"
        );
    }
}
