//! Process-wide settings made once, before any thread starts, for the
//! neural networks' computations (`model.kind` a network).
//!
//! - One thread per process: the ranks of an MPI job are the parallelism
//!   (one per core); candle and its matrix products would otherwise start a
//!   thread per core in every rank. `RAYON_NUM_THREADS` set by the user wins.
//! - The allocator keeps freed memory: a network's step allocates and frees
//!   buffers of megabytes (parameters, gradients) that glibc would return to
//!   the kernel and fault back in at every step. With `M_MMAP_THRESHOLD` and
//!   `M_TRIM_THRESHOLD` raised, the MLP's step (batch 32, f64) took about 9 ms
//!   instead of 16.5 ms (`cargo bench --bench nn`, which calls this `init`;
//!   without the call, as before). The memory stays with the
//!   process: a rank's peak, which `bench-nn.sh` reports, not more.

/// The largest block glibc serves from the heap rather than by mmap (32 MiB,
/// glibc's largest allowed value on 64-bit), and the free memory at the top
/// of the heap it keeps instead of trimming (1 GiB).
const MMAP_THRESHOLD_BYTES: i32 = 32 << 20;
const TRIM_THRESHOLD_BYTES: i32 = 1 << 30;

/// Apply the settings; call first thing in `main`.
pub fn init() {
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        // SAFETY: called at the start of main, before any other thread exists.
        unsafe { std::env::set_var("RAYON_NUM_THREADS", "1") };
    }
    // SAFETY: mallopt changes two allocator parameters; valid values, and
    // no allocation is in progress on another thread (there is none yet).
    let set = unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
            && libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) == 1
    };
    // Only speed depends on it; say so in the diagnostics when it failed.
    if !set {
        log::debug!("mallopt refused the allocator thresholds; networks' steps fault more pages");
    }
}
