//! Mini-batches and the other random choices of a step, as pure functions
//! of (seed, partition, iteration).
//!
//! Gradient coding sums the gradients of several partitions on one worker
//! and decodes them on the master; the decode is exact only when every
//! worker that computes partition `p` at iteration `t` computes the same
//! gradient. So the rows of `p`'s mini-batch at `t`, and its dropout masks,
//! come from a random sub-stream indexed by `(p, t)` alone: whichever worker
//! computes `p`, in whatever order, sees the same numbers.

use rand::seq::index::sample;
use rand_chacha::ChaCha8Rng;

use crate::rng::{Stream, substream};
use crate::spec::Batch;

/// Bits of the sub-stream index for the iteration; the partition takes the
/// rest of the 56 bits a sub-stream index has.
const ITERATION_BITS: u32 = 36;

/// The most partitions a step key can tell apart (2^20).
pub const MAX_PARTITIONS: usize = 1 << (56 - ITERATION_BITS);

/// Which step of which partition a random choice belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepKey {
    pub seed: u64,
    pub partition: usize,
    pub iteration: u64,
}

impl StepKey {
    fn index(self) -> u64 {
        assert!(
            self.partition < MAX_PARTITIONS && self.iteration < 1 << ITERATION_BITS,
            "step key beyond {MAX_PARTITIONS} partitions or 2^{ITERATION_BITS} iterations"
        );
        ((self.partition as u64) << ITERATION_BITS) | self.iteration
    }

    /// The generator of this step's `purpose`.
    pub fn rng(self, purpose: Stream) -> ChaCha8Rng {
        substream(self.seed, purpose, self.index())
    }
}

/// The rows (indices into the partition, increasing) of `batch`'s
/// mini-batch drawn without replacement from a partition of `len` samples
/// at `key` ([`Batch::rows`] of them); every row with [`Batch::Full`] or a
/// mini-batch of at least `len`.
pub fn batch_rows(key: StepKey, len: usize, batch: Batch) -> Vec<usize> {
    let rows = batch.rows(len);
    if rows < len {
        let mut rows = sample(&mut key.rng(Stream::Batch), len, rows).into_vec();
        rows.sort_unstable();
        rows
    } else {
        (0..len).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mini(b: usize) -> Batch {
        Batch::new(Some(b)).unwrap()
    }

    #[test]
    fn a_batch_is_a_function_of_seed_partition_and_iteration() {
        let key = |partition, iteration| StepKey {
            seed: 7,
            partition,
            iteration,
        };
        let a = batch_rows(key(3, 11), 100, mini(10));
        assert_eq!(a, batch_rows(key(3, 11), 100, mini(10)));
        assert_eq!(a.len(), 10);
        assert!(a.windows(2).all(|w| w[0] < w[1]) && a[9] < 100);
        assert_ne!(a, batch_rows(key(3, 12), 100, mini(10)));
        assert_ne!(a, batch_rows(key(4, 11), 100, mini(10)));
        assert_eq!(batch_rows(key(3, 11), 5, mini(10)), [0, 1, 2, 3, 4]);
        assert_eq!(batch_rows(key(3, 11), 3, Batch::Full), [0, 1, 2]);
    }
}
