//! `train.batch_size` as a type: every sample of a partition, or a
//! mini-batch of a fixed size drawn from it.

use std::num::NonZeroUsize;

use crate::error::InputError;

/// The samples of a partition one step's gradient uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Batch {
    /// Every sample of the partition (no `train.batch_size`).
    #[default]
    Full,
    /// A mini-batch of this many samples, drawn without replacement.
    Mini(NonZeroUsize),
}

impl Batch {
    /// `train.batch_size` as it is written: `None` the full batch; zero
    /// refused (config validation refuses it first).
    pub fn new(batch_size: Option<usize>) -> Result<Self, InputError> {
        match batch_size {
            None => Ok(Self::Full),
            Some(b) => NonZeroUsize::new(b)
                .map(Self::Mini)
                .ok_or_else(|| InputError::value("train.batch_size", b, "must be at least 1")),
        }
    }

    /// [`Batch::new`] checked against the smallest of `partitions`
    /// partitions of `train_samples` samples (⌊N / P⌋): a mini-batch is
    /// drawn without replacement from one partition, so it cannot be larger.
    pub fn checked(
        batch_size: Option<usize>,
        train_samples: usize,
        partitions: usize,
    ) -> Result<Self, InputError> {
        let batch = Self::new(batch_size)?;
        let smallest = train_samples / partitions.max(1);
        match batch {
            Self::Mini(b) if b.get() > smallest => Err(InputError::value(
                "train.batch_size",
                b,
                format!(
                    "is larger than the smallest partition ({smallest} samples: data.train_samples = {train_samples} over {partitions} partitions); a batch is drawn from one partition"
                ),
            )),
            _ => Ok(batch),
        }
    }

    /// The mini-batch's size; `None` for the full batch.
    pub fn size(self) -> Option<usize> {
        match self {
            Self::Full => None,
            Self::Mini(b) => Some(b.get()),
        }
    }

    /// Samples a step uses of a partition of `len` samples: the
    /// mini-batch's size, at most `len`; `len` for the full batch.
    pub fn rows(self, len: usize) -> usize {
        match self {
            Self::Full => len,
            Self::Mini(b) => b.get().min(len),
        }
    }

    /// The b of a network's memory check ([`crate::learn::model::memory`]):
    /// the mini-batch's size, or `largest`, the largest partition's samples
    /// (0 when not known), for the full batch.
    pub fn memory_rows(self, largest: usize) -> usize {
        self.size().unwrap_or(largest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mini(b: usize) -> Batch {
        Batch::new(Some(b)).unwrap()
    }

    #[test]
    fn rows_are_the_mini_batch_at_most_the_partition() {
        assert_eq!(Batch::Full.rows(7), 7);
        assert_eq!(mini(3).rows(7), 3);
        assert_eq!(mini(10).rows(7), 7);
        assert_eq!(mini(3).size(), Some(3));
        assert_eq!(Batch::Full.size(), None);
        assert_eq!(mini(3).memory_rows(0), 3);
        assert_eq!(Batch::Full.memory_rows(9), 9);
    }

    #[test]
    fn zero_is_refused_and_none_is_the_full_batch() {
        assert_eq!(Batch::new(None).unwrap(), Batch::Full);
        let e = Batch::new(Some(0)).unwrap_err().to_string();
        assert!(e.contains("train.batch_size"), "{e}");
    }

    #[test]
    fn a_batch_larger_than_the_smallest_partition_is_refused() {
        // 401 samples over 4 partitions: the smallest holds 100.
        assert_eq!(Batch::checked(Some(100), 401, 4).unwrap(), mini(100));
        assert_eq!(Batch::checked(None, 401, 4).unwrap(), Batch::Full);
        let e = Batch::checked(Some(101), 401, 4).unwrap_err().to_string();
        assert_eq!(
            e,
            "train.batch_size = 101 is larger than the smallest partition (100 samples: data.train_samples = 401 over 4 partitions); a batch is drawn from one partition"
        );
    }
}
