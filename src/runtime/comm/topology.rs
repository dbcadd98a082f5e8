//! What a rank knows of its node: the job's ranks there and the cores
//! they may run on (this process's CPU affinity).

/// What a rank knows about its node: its ranks and its cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Node {
    /// Ranks of this job on this node (the ranks whose host is this one's).
    pub ranks: usize,
    /// Cores the node's ranks may run on: the union of their affinity masks.
    pub cores: usize,
    /// Every rank of the job is on this node: the same answer on every
    /// rank (`runtime.aggregate = "auto"` gathers then).
    pub one_node: bool,
}

/// 64-bit words of an affinity bit set: 1024 CPUs, glibc's `CPU_SETSIZE`.
pub const MASK_WORDS: usize = 16;

/// This process's CPU affinity as a bit set (empty when it cannot be read).
pub fn affinity_mask() -> [u64; MASK_WORDS] {
    let mut mask = [0u64; MASK_WORDS];
    // SAFETY: cpu_set_t is plain data; sched_getaffinity writes at most its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return mask;
        }
        for cpu in 0..(MASK_WORDS * 64).min(libc::CPU_SETSIZE as usize) {
            if libc::CPU_ISSET(cpu, &set) {
                mask[cpu / 64] |= 1 << (cpu % 64);
            }
        }
    }
    mask
}

#[cfg(test)]
mod tests {
    use super::affinity_mask;

    #[test]
    fn the_affinity_mask_counts_the_cores_this_process_may_use() {
        let cores: usize = affinity_mask()
            .iter()
            .map(|w| w.count_ones() as usize)
            .sum();
        let parallelism = std::thread::available_parallelism().unwrap().get();
        assert_eq!(cores, parallelism);
    }
}
