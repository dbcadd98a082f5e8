//! Dense or sparse partitions: `data.format` resolved.

use crate::config::{DataFormat, DataKind, SPARSE_DENSITY_THRESHOLD};

/// How a plan stores partitions: `data.format` resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    Dense,
    Sparse,
}

impl Storage {
    pub fn name(self) -> &'static str {
        match self {
            Storage::Dense => "dense",
            Storage::Sparse => "sparse",
        }
    }
}

/// `data.format` resolved for data of `kind` with `density` (stored entries
/// over samples × features, files only).
pub fn choose_storage(format: DataFormat, kind: DataKind, density: Option<f64>) -> Storage {
    match format {
        DataFormat::Dense => Storage::Dense,
        DataFormat::Sparse => Storage::Sparse,
        DataFormat::Auto => match kind {
            DataKind::SyntheticOnehot => Storage::Sparse,
            DataKind::Libsvm if density.is_some_and(|d| d < SPARSE_DENSITY_THRESHOLD) => {
                Storage::Sparse
            }
            _ => Storage::Dense,
        },
    }
}
