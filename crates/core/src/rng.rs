//! Reproducible random streams.
//!
//! Every random choice in gradcode comes from a ChaCha8 generator seeded with
//! the config's `seed` and a fixed stream id per purpose, so that (a) a run is
//! a pure function of (config, seed), and (b) adding draws to one purpose never
//! shifts another (the code construction does not change when the straggler
//! model draws more numbers).

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// What a random stream is for. The discriminant is the ChaCha stream id and
/// must never change for an existing variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub enum Stream {
    /// Code construction: the random MDS matrix H of cyclic repetition.
    Code = 1,
    /// Straggler sets sampled by `check` to measure decode amplification.
    CheckSampling = 2,
    /// Training and test data: features, labels, noise, the true model, splits.
    Data = 3,
    /// GC-DC: the circular shifts of the cluster assignment matrix (000 §IV-B).
    ClusterShifts = 10,
    /// is-gc: random tie-breaking among maximum independent sets (004 §IV).
    IsgcTieBreak = 20,
    /// gc-mmc uncorrelated design: arrival sets sampled to measure decoding accuracy.
    MmcAccuracy = 21,
    /// Straggler delays and states (src/straggler/); one indexed stream per
    /// Monte Carlo trial, trial 0 being the one the MPI runtime replays.
    Straggler = 30,
    /// Mini-batch rows of a partition at an iteration (`learn::batch`).
    Batch = 40,
    /// Dropout masks of a partition's batch at an iteration (`learn::model`).
    Dropout = 41,
    /// The initial parameters of a neural network (`learn::model`).
    ModelInit = 42,
    /// Bootstrap resamples of a straggler-model fit (`straggler::fit_interval`).
    FitBootstrap = 50,
}

/// Bits of the 64-bit ChaCha stream id left for sub-stream indices; the
/// purpose takes the top 8.
const INDEX_BITS: u32 = 56;

/// The generator for `purpose` under `seed` (sub-stream 0 of the purpose).
pub fn stream(seed: u64, purpose: Stream) -> ChaCha8Rng {
    substream(seed, purpose, 0)
}

/// Independent sub-stream `index < 2^56` of `purpose` (e.g. the data of
/// sample `index`): the same numbers whichever process draws them and in
/// whatever order, which is what lets every worker generate only its own
/// partitions. Purpose and index share the ChaCha stream id, so every pair
/// is its own full-length stream (the word position, 68 bits, is not used:
/// offsets there would wrap).
pub fn substream(seed: u64, purpose: Stream, index: u64) -> ChaCha8Rng {
    assert!(
        index < 1 << INDEX_BITS,
        "sub-stream index {index} needs more than {INDEX_BITS} bits"
    );
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(((purpose as u64) << INDEX_BITS) | index);
    rng
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: u64 = stream(7, Stream::Code).random();
        let b: u64 = stream(7, Stream::Code).random();
        let c: u64 = stream(7, Stream::CheckSampling).random();
        let d: u64 = stream(8, Stream::Code).random();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
    }

    #[test]
    fn substreams_are_reproducible_and_distinct() {
        let a: u64 = substream(7, Stream::Data, 3).random();
        let b: u64 = substream(7, Stream::Data, 3).random();
        let c: u64 = substream(7, Stream::Data, 4).random();
        assert_eq!(a, b);
        assert_ne!(a, c);
        // Far-apart indices stay distinct (a word-position offset would wrap).
        let far: u64 = substream(7, Stream::Data, 3 + (1 << 50)).random();
        assert_ne!(a, far);
    }
}
