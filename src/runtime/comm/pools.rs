//! Buffers of the sends in flight: the master's models shared by the
//! sends of an iteration ([`ModelPool`]), and one rank's nonblocking sends
//! ([`SendPool`]), each request beside its destination and its buffer,
//! released only once the request has completed.

use std::rc::Rc;

use mpi::topology::SimpleCommunicator;

use super::ffi;

/// The master's models in flight: at most `max` buffers of one model each,
/// shared by reference count with the sends that read them. A buffer is
/// reused once no send holds it, so its memory is allocated once.
#[derive(Debug)]
pub struct ModelPool {
    buffers: Vec<Rc<Vec<f64>>>,
    max: usize,
}

impl ModelPool {
    pub fn new(max: usize) -> Self {
        Self {
            buffers: Vec::new(),
            max: max.max(1),
        }
    }

    /// A buffer no send holds, filled with `model`; `None` when all `max`
    /// buffers are still held by sends in flight.
    pub fn fill(&mut self, model: &[f64]) -> Option<Rc<Vec<f64>>> {
        let i = match self.buffers.iter().position(|b| Rc::strong_count(b) == 1) {
            Some(i) => i,
            None if self.buffers.len() < self.max => {
                self.buffers.push(Rc::new(Vec::with_capacity(model.len())));
                self.buffers.len() - 1
            }
            None => return None,
        };
        let buffer = Rc::get_mut(&mut self.buffers[i]).expect("no send holds it");
        buffer.clear();
        buffer.extend_from_slice(model);
        Some(Rc::clone(&self.buffers[i]))
    }

    /// Buffers allocated (held or free).
    pub fn allocated(&self) -> usize {
        self.buffers.len()
    }

    /// Buffers some send still holds.
    pub fn held(&self) -> usize {
        self.buffers
            .iter()
            .filter(|b| Rc::strong_count(b) > 1)
            .count()
    }
}

/// What a send reads from: a buffer of its own, or a model shared with the
/// sends of the same iteration to other workers.
#[derive(Debug)]
pub(super) enum Payload {
    Owned(Vec<f64>),
    Shared(Rc<Vec<f64>>),
}

impl Payload {
    fn data(&self) -> &[f64] {
        match self {
            Self::Owned(v) => v,
            Self::Shared(v) => v,
        }
    }
}

/// A send in flight: its destination and tag beside the buffer it reads.
#[derive(Debug)]
struct Pending {
    rank: i32,
    tag: i32,
    payload: Payload,
}

/// Spare buffers kept for reuse (more are freed): a worker's spares may be
/// vectors of d + 1 values.
const MAX_SPARES: usize = 4;

/// The sends of one rank in flight, each request beside its destination and
/// its buffer; a buffer is released (recycled or, for a shared model, its
/// reference dropped) only when its request has completed.
#[derive(Debug, Default)]
pub struct SendPool {
    /// Parallel to `pending`: the MPI requests, for `MPI_Testsome`.
    requests: Vec<ffi::Request>,
    pending: Vec<Pending>,
    spares: Vec<Vec<f64>>,
    indices: Vec<i32>,
    posted: u64,
    completed: u64,
}

impl SendPool {
    /// Sends in flight.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Sends posted and completed since the start.
    pub fn counts(&self) -> (u64, u64) {
        (self.posted, self.completed)
    }

    /// Destinations of the sends in flight, ascending, without repeats.
    pub fn pending_ranks(&self) -> Vec<i32> {
        let mut ranks: Vec<i32> = self.pending.iter().map(|p| p.rank).collect();
        ranks.sort_unstable();
        ranks.dedup();
        ranks
    }

    /// An empty buffer with room for `len` values: a spare when one is large enough.
    pub(super) fn spare(&mut self, len: usize) -> Vec<f64> {
        match self.spares.iter().position(|v| v.capacity() >= len) {
            Some(i) => {
                let mut v = self.spares.swap_remove(i);
                v.clear();
                v
            }
            None => Vec::with_capacity(len),
        }
    }

    /// Post a send of `payload` to `rank` with `tag`, its request beside it.
    pub(super) fn post(
        &mut self,
        world: &SimpleCommunicator,
        rank: i32,
        tag: i32,
        payload: Payload,
    ) {
        // SAFETY: the buffer stays alive and unmodified until the request
        // completes: `pending` owns it (or a reference to the shared model,
        // which is never mutated while referenced) and releases it only in
        // `reap` after MPI_Testsome reported the request complete. Moving the
        // `Vec` or `Rc` handle does not move the heap data MPI reads.
        let request = unsafe { ffi::isend(world, payload.data(), rank, tag) };
        self.requests.push(request);
        self.pending.push(Pending { rank, tag, payload });
        self.posted += 1;
    }

    /// Test every request without blocking and release the buffers of those
    /// complete; returns how many completed.
    pub fn reap(&mut self) -> usize {
        if self.requests.is_empty() {
            return 0;
        }
        let n = self.requests.len();
        // SAFETY: every request in `requests` was started by `post` and is
        // live (completed ones were removed at the last reap).
        let done = unsafe { ffi::test_some(&mut self.requests, &mut self.indices) };
        if done <= 0 {
            // 0, or MPI_UNDEFINED when no request is active (cannot happen: all are).
            return 0;
        }
        let null = ffi::null_request();
        let mut keep = 0;
        for i in 0..n {
            if self.requests[i] == null {
                continue;
            }
            self.requests.swap(keep, i);
            self.pending.swap(keep, i);
            keep += 1;
        }
        self.requests.truncate(keep);
        for p in self.pending.drain(keep..) {
            if let Payload::Owned(v) = p.payload {
                if self.spares.len() < MAX_SPARES {
                    self.spares.push(v);
                }
            }
        }
        self.completed += done as u64;
        done as usize
    }
}

impl Drop for SendPool {
    fn drop(&mut self) {
        if !self.pending.is_empty() {
            // Only on a path that ends the job with MPI_Abort (a rank is gone):
            // MPI may still read the buffers, so they are not freed.
            let sends: Vec<String> = self
                .pending
                .iter()
                .map(|p| format!("{}:{}", p.rank, p.tag))
                .collect();
            log::warn!(
                "{} sends still in flight at exit (rank:tag {}); their buffers are kept",
                sends.len(),
                sends.join(" ")
            );
            std::mem::forget(std::mem::take(&mut self.pending));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use super::ModelPool;

    #[test]
    fn the_model_pool_reuses_free_buffers_and_stops_at_its_bound() {
        let mut pool = ModelPool::new(2);
        let a = pool.fill(&[1.0, 2.0]).unwrap();
        let a_ptr = a.as_ptr();
        // Two sends hold the first model.
        let sends_a = [Rc::clone(&a), Rc::clone(&a)];
        drop(a);
        let b = pool.fill(&[3.0, 4.0]).unwrap();
        assert_ne!(b.as_ptr(), a_ptr, "a held buffer is not overwritten");
        assert_eq!(*sends_a[0], vec![1.0, 2.0]);
        assert_eq!((pool.allocated(), pool.held()), (2, 2));
        // Both buffers held: the bound is reached.
        assert!(pool.fill(&[5.0, 6.0]).is_none());
        assert_eq!(pool.allocated(), 2);
        // One send completes: still held by the other.
        let [first, second] = sends_a;
        drop(first);
        assert!(pool.fill(&[5.0, 6.0]).is_none());
        // The last completes: the buffer is reused, not reallocated.
        drop(second);
        let c = pool.fill(&[5.0, 6.0]).unwrap();
        assert_eq!(c.as_ptr(), a_ptr);
        assert_eq!(*c, vec![5.0, 6.0]);
        assert_eq!(*b, vec![3.0, 4.0]);
        assert_eq!(pool.allocated(), 2);
    }
}
