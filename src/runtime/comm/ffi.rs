//! The raw MPI calls that rsmpi has no safe form for here: a nonblocking
//! send and a matched nonblocking receive from buffers whose lifetime the
//! caller manages, and testing, cancelling and waiting on their requests.
//! Each is an `unsafe fn` whose contract says what the caller keeps alive;
//! every request started here is completed by its caller (tested or waited
//! complete) or cancelled and then waited on.

use mpi::datatype::Equivalence;
use mpi::ffi;
use mpi::point_to_point::Message;
use mpi::raw::{AsRaw, AsRawMut};
use mpi::topology::SimpleCommunicator;

/// A request of a nonblocking operation.
pub(super) type Request = ffi::MPI_Request;

/// The null request: what a completed request becomes.
pub(super) fn null_request() -> Request {
    // SAFETY: reads a constant the MPI library initialises.
    unsafe { ffi::RSMPI_REQUEST_NULL }
}

/// Start sending `data` to world rank `rank` with `tag` (`MPI_Isend`).
///
/// # Safety
/// `data`'s memory must stay alive and unmodified until the returned
/// request has completed (moving a `Vec` or `Rc` handle that owns it does
/// not move it).
pub(super) unsafe fn isend(
    world: &SimpleCommunicator,
    data: &[f64],
    rank: i32,
    tag: i32,
) -> Request {
    let count = i32::try_from(data.len()).expect("a message of fewer than 2^31 values");
    let mut request = null_request();
    // SAFETY: the caller keeps `data` alive and unmodified until the
    // request completes; `count` values of f64 are what it holds.
    unsafe {
        ffi::MPI_Isend(
            data.as_ptr().cast(),
            count,
            f64::equivalent_datatype().as_raw(),
            rank,
            tag,
            world.as_raw(),
            &mut request,
        );
    }
    request
}

/// Start receiving the matched `message` into `data` (`MPI_Imrecv`; as
/// many values as `data` holds, the probed count).
///
/// # Safety
/// `data`'s allocation must be neither read, freed nor reallocated until
/// the returned request has completed.
pub(super) unsafe fn imrecv(message: Message, data: &mut [f64]) -> Request {
    let mut message = message;
    let count = i32::try_from(data.len()).expect("a probed count fits an MPI count");
    let mut request = null_request();
    // SAFETY: `data` holds `count` values; the caller leaves its
    // allocation alone until the request completes.
    unsafe {
        ffi::MPI_Imrecv(
            data.as_mut_ptr().cast(),
            count,
            f64::equivalent_datatype().as_raw(),
            message.as_raw_mut(),
            &mut request,
        );
    }
    request
}

/// Whether `request` has completed (`MPI_Test`; it is the null request
/// then, and testing it again says true).
///
/// # Safety
/// `request` must be one this module started, or the null request.
pub(super) unsafe fn test(request: &mut Request) -> bool {
    let mut done: i32 = 0;
    // SAFETY: a live request (or the null request once complete); a status
    // is not asked for.
    unsafe { ffi::MPI_Test(request, &mut done, ffi::RSMPI_STATUS_IGNORE) };
    done != 0
}

/// Test every request of `requests` without blocking (`MPI_Testsome`):
/// those complete become the null request, and their positions are the
/// first entries of `indices` (resized to `requests.len()`). Returns how
/// many completed (0, or a negative `MPI_UNDEFINED` when none is active).
///
/// # Safety
/// Every request must be one this module started, or the null request.
pub(super) unsafe fn test_some(requests: &mut [Request], indices: &mut Vec<i32>) -> i32 {
    let n = requests.len();
    indices.resize(n, 0);
    let mut done: i32 = 0;
    // SAFETY: the arrays have n entries; completed requests are set to MPI_REQUEST_NULL.
    unsafe {
        ffi::MPI_Testsome(
            n as i32,
            requests.as_mut_ptr(),
            &mut done,
            indices.as_mut_ptr(),
            ffi::RSMPI_STATUSES_IGNORE,
        );
    }
    done
}

/// Cancel `request` and wait until the cancellation has completed
/// (`MPI_Cancel`, `MPI_Wait`): its buffer is free again then.
///
/// # Safety
/// `request` must be a live request this module started.
pub(super) unsafe fn cancel_and_wait(request: &mut Request) {
    // SAFETY: a live request; MPI_Wait completes the cancelled request.
    unsafe {
        ffi::MPI_Cancel(request);
        ffi::MPI_Wait(request, ffi::RSMPI_STATUS_IGNORE);
    }
}
