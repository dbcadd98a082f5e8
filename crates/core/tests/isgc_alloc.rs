//! The lean IS-GC decode path allocates nothing once its buffers have grown
//! (n = 1024, cr and hr), counted by a global allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use gradcode_core::coding::{IgnoreStragglerCode, IsgcLayout, WaitPolicy};
use gradcode_core::rng::{Stream, stream};
use rand::seq::SliceRandom;

struct Counting;
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn max_independent_set_does_not_allocate_at_n_1024() {
    let n = 1024;
    let policy = WaitPolicy::new(n, Some(n / 2), None, "is-gc").unwrap();
    for (c, layout) in [
        (8, IsgcLayout::Cr),
        (8, IsgcLayout::Fr),
        (
            8,
            IsgcLayout::Hr {
                groups: 128,
                c1: 5,
                c2: 3,
            },
        ),
    ] {
        let mut code =
            IgnoreStragglerCode::new(n, c, layout, policy, stream(1, Stream::IsgcTieBreak))
                .unwrap();
        let mut rng = stream(2, Stream::CheckSampling);
        let mut order: Vec<usize> = (0..n).collect();
        let sets: Vec<Vec<usize>> = [1, 3, 100, 512, 900, 1024]
            .iter()
            .map(|&w| {
                order.shuffle(&mut rng);
                order[..w].to_vec()
            })
            .collect();
        // Warm up: buffers grow to their largest size.
        let mut total = 0;
        for set in &sets {
            total += code.max_independent_set(set).len();
        }
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        for _ in 0..3 {
            for set in &sets {
                total += code.max_independent_set(set).len();
            }
        }
        let after = ALLOCATIONS.load(Ordering::Relaxed);
        assert_eq!(after - before, 0, "{layout:?} allocated");
        assert!(total > 0);
    }
}
