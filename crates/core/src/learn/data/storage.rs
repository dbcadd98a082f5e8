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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::testing::{config, scratch, write};
    use super::*;
    use crate::learn::data::DataPlan;

    #[test]
    fn auto_format_follows_the_density() {
        let dir = scratch();
        let sparse = write(&dir, "auto-sparse.libsvm", "1 1:1\n-1 9:2\n1 3:1\n1 5:1\n");
        let dense = write(
            &dir,
            "auto-dense.libsvm",
            "1 1:1 2:2\n-1 1:2 2:1\n1 2:1\n1 1:3\n",
        );
        let plan = |path: &Path, format: &str| {
            let c = config(&format!(
                "workers = 1\n[data]\nkind = \"libsvm\"\nformat = \"{format}\"\npath = \"{}\"\n",
                path.display()
            ));
            DataPlan::new(&c, 1).unwrap()
        };
        let p = plan(&sparse, "auto");
        assert!((p.density() - 4.0 / 36.0).abs() < 1e-15);
        assert_eq!(p.storage(), Storage::Sparse);
        let p = plan(&dense, "auto");
        assert!((p.density() - 6.0 / 8.0).abs() < 1e-15);
        assert_eq!(p.storage(), Storage::Dense);
        assert_eq!(plan(&dense, "sparse").storage(), Storage::Sparse);
        assert_eq!(plan(&sparse, "dense").storage(), Storage::Dense);
        assert_eq!(
            choose_storage(DataFormat::Auto, DataKind::Csv, Some(0.01)),
            Storage::Dense,
            "CSV is dense text: dense unless asked"
        );
    }
}
