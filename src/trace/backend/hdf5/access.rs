//! How a trace opened for writing holds HDF5's caches: bounded, so that a
//! writer's memory stays flat over any number of iterations. Used when a
//! trace is created (hdf5_io.rs) and when a resumed one is reopened (read/).

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

/// Mark the file descriptor under an open trace close-on-exec. HDF5 opens
/// files without `O_CLOEXEC`, so a child process started while a trace is
/// open (a process that reads traces and runs jobs, as the tests do) kept the
/// descriptor, and with it the file's HDF5 lock: a writer then saw the trace
/// "open in another process" until that child ended. With the sec2 driver
/// (HDF5's default, the one traces use) the handle is the POSIX descriptor;
/// other drivers are left as they are. The descriptor is exposed only between
/// the open and this call.
pub(crate) fn close_on_exec(file: &hdf5::File) {
    let sec2 = file
        .access_plist()
        .is_ok_and(|fapl| matches!(fapl.driver(), hdf5::plist::file_access::FileDriver::Sec2));
    if !sec2 {
        return;
    }
    let mut handle: *mut std::ffi::c_void = std::ptr::null_mut();
    // SAFETY: `file` is open; H5P_DEFAULT asks for the driver's own handle,
    // which for sec2 points at the file's `int` descriptor; HDF5 calls are
    // serialised by hdf5-metno's lock.
    let status = hdf5::sync::sync(|| unsafe {
        hdf5_sys::h5f::H5Fget_vfd_handle(file.id(), hdf5_sys::h5p::H5P_DEFAULT, &mut handle)
    });
    if status < 0 || handle.is_null() {
        return;
    }
    // SAFETY: sec2's handle points at an int that lives as long as the file.
    let fd = unsafe { *handle.cast::<std::ffi::c_int>() };
    // SAFETY: fcntl on a descriptor this process owns; only FD_CLOEXEC is added.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
        }
    }
}
