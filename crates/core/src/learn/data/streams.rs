//! Which sub-stream of `Stream::Data` each random draw of the data takes.

/// Sub-stream indices (below 2^56): training samples use their own index,
/// test samples `TEST_BASE + j`; these are reserved.
pub(super) const TRUE_MODEL: u64 = (1 << 56) - 1;
pub(super) const MIXTURE_MEANS: u64 = (1 << 56) - 2;
pub(super) const SPLIT: u64 = (1 << 56) - 3;
pub(super) const TEST_BASE: u64 = 1 << 50;
