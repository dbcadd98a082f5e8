//! The least memory a network needs in one process, checked against
//! `model.max_memory_mib` (default: the machine's memory) when the model is
//! built, so that a network that cannot fit is refused in one line by
//! `check` and before `train` writes anything, not by the allocator's abort.
//!
//! What is counted, in bytes (d parameters, a batch of b samples):
//! - the master: [`MASTER_VECTORS`] vectors of d f64: the optimiser's θ_t,
//!   θ_{t−1} and evaluation point, the decoded gradient, a model it sends
//!   and a coded vector it receives;
//! - a worker: [`WORKER_VECTORS`] vectors of d f64 (θ, the gradient of a
//!   partition, the model received); for the networks that compute through
//!   candle's graph (the cnn, the resnet, and the mlp in f32) the graph's
//!   copy of θ and its gradients, 2 · d values in the network's precision;
//!   and the activations of one batch: the output of every layer for b
//!   samples in the network's precision (`Architecture::activations`),
//!   b being `train.batch_size` or, for full-batch descent, the largest
//!   partition.
//!
//! Both are floors: the master holds more vectors while results arrive,
//! candle keeps more intermediates (batch normalisation's, the convolutions'
//! unfolded inputs), the data matrices are `data.max_matrix_mib`'s. The
//! larger of the two is compared with the limit, which is per process: ranks
//! sharing a node share its memory.

use std::sync::OnceLock;

/// Vectors of d f64 the master holds (see the module documentation).
pub const MASTER_VECTORS: u128 = 6;
/// Vectors of d f64 a worker holds besides the network's own (see the module documentation).
pub const WORKER_VECTORS: u128 = 3;

const MIB: u128 = 1 << 20;

/// This machine's physical memory in MiB (`MemTotal` of `/proc/meminfo`),
/// read once, the first time it is asked for (when a process builds its
/// first network); None where it cannot be read (no `/proc`: the default
/// limit is then not applied).
pub fn machine_memory_mib() -> Option<usize> {
    static MEMORY: OnceLock<Option<usize>> = OnceLock::new();
    *MEMORY.get_or_init(|| {
        let text = std::fs::read_to_string("/proc/meminfo").ok()?;
        parse_mem_total(&text).map(|kib| kib / 1024)
    })
}

/// The `MemTotal:` line of `/proc/meminfo`, in KiB.
fn parse_mem_total(text: &str) -> Option<usize> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line.split_whitespace().skip(1);
    let kib: usize = words.next()?.parse().ok()?;
    (words.next() == Some("kB")).then_some(kib)
}

/// The least memory of one process of a network run ([module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetMemory {
    /// d: parameters.
    pub parameters: u128,
    /// Bytes per value of the network's precision (8 for f64, 4 for f32).
    pub precision_bytes: u128,
    /// Whether the worker's gradient goes through candle's graph (its copy
    /// of θ and of the gradient count).
    pub graph: bool,
    /// Samples of one batch (b).
    pub batch: u128,
    /// Activations of one sample (values).
    pub activations_per_sample: u128,
}

impl NetMemory {
    /// The master's floor in bytes.
    pub fn master_bytes(&self) -> u128 {
        MASTER_VECTORS * 8 * self.parameters
    }

    /// The graph's copy of θ and its gradients in bytes (0 without the graph).
    fn graph_bytes(&self) -> u128 {
        if self.graph {
            2 * self.precision_bytes * self.parameters
        } else {
            0
        }
    }

    /// One batch's activations in bytes.
    pub fn activation_bytes(&self) -> u128 {
        self.batch * self.activations_per_sample * self.precision_bytes
    }

    /// A worker's floor in bytes.
    pub fn worker_bytes(&self) -> u128 {
        WORKER_VECTORS * 8 * self.parameters + self.graph_bytes() + self.activation_bytes()
    }

    /// The larger floor, in bytes.
    pub fn bytes(&self) -> u128 {
        self.master_bytes().max(self.worker_bytes())
    }

    /// `None` when the floor is within `limit_mib`; else the rule it breaks,
    /// in words (the process, what it holds and the sizes in MiB).
    pub fn exceeds(&self, limit_mib: usize) -> Option<String> {
        let limit = limit_mib as u128 * MIB;
        if self.bytes() <= limit {
            return None;
        }
        let mib = |b: u128| b.div_ceil(MIB);
        let d = self.parameters;
        Some(if self.master_bytes() >= self.worker_bytes() {
            format!(
                "needs at least {} MiB in the master ({MASTER_VECTORS} vectors of its {d} parameters x 8 bytes: theta, the previous theta, the evaluation point, the decoded gradient, a model sent and a vector received)",
                mib(self.master_bytes())
            )
        } else {
            let graph = if self.graph {
                format!(
                    ", candle's copy of theta and its gradient {} MiB",
                    mib(self.graph_bytes())
                )
            } else {
                String::new()
            };
            format!(
                "needs at least {} MiB in a worker ({WORKER_VECTORS} vectors of its {d} parameters x 8 bytes {} MiB{graph}, the activations of a batch of {} samples {} MiB)",
                mib(self.worker_bytes()),
                mib(WORKER_VECTORS * 8 * d),
                self.batch,
                mib(self.activation_bytes())
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_total_is_read_in_kib() {
        let text = "MemTotal:       24684084 kB\nMemFree:        19244040 kB\n";
        assert_eq!(parse_mem_total(text), Some(24684084));
        assert_eq!(parse_mem_total("MemFree: 1 kB\n"), None);
        assert_eq!(parse_mem_total("MemTotal: many kB\n"), None);
        #[cfg(target_os = "linux")]
        assert!(machine_memory_mib().is_some_and(|m| m > 0));
    }

    #[test]
    fn the_larger_floor_is_named_with_its_parts() {
        let mut m = NetMemory {
            parameters: 1 << 20,
            precision_bytes: 8,
            graph: false,
            batch: 64,
            activations_per_sample: 1000,
        };
        // Master: 6 x 8 MiB = 48 MiB; worker: 24 MiB + 64000 x 8 bytes.
        assert_eq!(m.master_bytes(), 48 * MIB);
        assert_eq!(m.worker_bytes(), 24 * MIB + 512_000);
        assert_eq!(m.exceeds(48), None);
        let e = m.exceeds(47).unwrap();
        assert!(e.starts_with("needs at least 48 MiB in the master"), "{e}");
        // A batch whose activations outweigh the master's vectors.
        m.batch = 1 << 14;
        m.graph = true;
        m.precision_bytes = 4;
        // 24 MiB + 2 x 4 MiB + 2^14 x 1000 x 4 bytes (62.5 MiB).
        assert_eq!(m.worker_bytes(), 32 * MIB + 65_536_000);
        let e = m.exceeds(64).unwrap();
        assert_eq!(
            e,
            "needs at least 95 MiB in a worker (3 vectors of its 1048576 parameters x 8 bytes 24 MiB, candle's copy of theta and its gradient 8 MiB, the activations of a batch of 16384 samples 63 MiB)"
        );
    }
}
