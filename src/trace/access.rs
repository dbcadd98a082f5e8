//! How a trace opened for writing holds HDF5's caches: bounded, so that a
//! writer's memory stays flat over any number of iterations. Used when a
//! trace is created (hdf5_io.rs) and when a resumed one is reopened (read.rs).

/// The most bytes HDF5's metadata cache of a trace being written may grow to
/// (HDF5's default is 32 MiB: it grew by about 80 bytes per iteration until
/// it got there, tens of MiB on rank 0 for nothing, since rows are only appended).
const METADATA_CACHE_BYTES: usize = 2 << 20;

/// The bytes of each dataset's chunk cache in a trace being written (HDF5's
/// default is 1 MiB per dataset; a trace has about 40 datasets per group).
const CHUNK_CACHE_BYTES: usize = 64 << 10;

/// The access properties of a trace opened for writing: caches bounded as
/// above, so that the writer's memory stays flat over any number of iterations
/// (`scripts/bench-soak.sh` measures it).
pub(crate) fn writer_access(fapl: &mut hdf5::plist::FileAccessBuilder) {
    let cache = hdf5::plist::file_access::MetadataCacheConfig {
        initial_size: 1 << 20,
        min_size: 1 << 20,
        max_size: METADATA_CACHE_BYTES,
        ..Default::default()
    };
    fapl.mdc_config(&cache)
        .chunk_cache(521, CHUNK_CACHE_BYTES, 1.0);
}
