//! What `runtime.aggregate = "reduce"` costs in the model (issue 28, item 3;
//! docs/aggregate.md): the results are headers, and after the decode the
//! decodable set S sums its vectors among itself and its lowest rank sends
//! the sum to the master.
//!
//! With the notation of [`super::delivery`] (`L`, `Bw`, `Bp`, `Bm`) and `b`
//! the bytes of one coded vector, 8 (d + 1):
//!
//! 1. every result is a header of `8 (8 + c)` bytes, `c` its computations
//!    ([`header_bytes`]; an iteration's headers are all taken at the size of
//!    its largest), delivered as a gather's vectors are, so the stop rule
//!    decides on the headers' arrivals;
//! 2. at the stop `T` the master's orders reach S at once (the master's
//!    messages are free, as the task and the iterate are);
//! 3. the members sum by the binomial tree of `Comm::tree_sum`
//!    (`src/runtime/comm/mod.rs`): `ceil(log2 |S|)` rounds, in each of which a
//!    member receives one vector from another, `L + b / Bq`, `Bq` the
//!    bandwidth between two workers (`network.peer_bandwidth_bytes_per_s`,
//!    which `gradcode probe` measures; `Bw` when unset);
//! 4. the lowest rank sends the sum (the `d + 1` values and its two timings,
//!    `b + 16` bytes) over the path to the master: it arrives at
//!    `T + ceil(log2 |S|) (L + b / Bq) + L + (b + 16) / Bp`. Every header S
//!    sent arrived by `T`, so the master's link is free for it but for
//!    headers of workers outside S that come later, which are left out here
//!    (at most `8 (8 + c)` bytes each).

use super::{Delivery, Network, NetworkError};

/// Bytes of a result header with `computations` losses: its fixed part of
/// eight f64 and one loss per computation, as `train` sends it for a linear
/// model (`src/runtime/protocol.rs`, `result_message_bytes(computations, 1,
/// 0)`); a network's header also carries a count per computation, 8 bytes
/// each, which this model leaves out.
pub fn header_bytes(computations: usize) -> f64 {
    (8 * (8 + computations)) as f64
}

/// The extra bytes the reduced sum carries besides its vector: the leader's
/// two timings (`src/runtime/worker.rs`, `Worker::reduce`).
pub const SUM_EXTRA_BYTES: f64 = 16.0;

/// The reduce of one config: its network in model time for the vector, the
/// sum and the headers of each size.
#[derive(Debug, Clone)]
pub struct Reduce {
    network: Network,
    time_unit_s: f64,
    vector: Delivery,
    sum: Delivery,
    /// Header deliveries by computations, built as iterations need them.
    headers: Vec<Option<Delivery>>,
}

impl Reduce {
    /// The reduce over `network` of coded vectors of `vector_bytes` bytes,
    /// model time of `time_unit_s` seconds; the error as [`Delivery::new`]'s.
    pub fn new(
        network: &Network,
        vector_bytes: f64,
        time_unit_s: f64,
    ) -> Result<Self, NetworkError> {
        Ok(Self {
            network: *network,
            time_unit_s,
            vector: Delivery::new(network, vector_bytes, time_unit_s)?,
            sum: Delivery::new(network, vector_bytes + SUM_EXTRA_BYTES, time_unit_s)?,
            headers: Vec::new(),
        })
    }

    /// The delivery of headers with `computations` losses.
    pub fn headers(&mut self, computations: usize) -> Result<Delivery, NetworkError> {
        if self.headers.len() <= computations {
            self.headers.resize(computations + 1, None);
        }
        if let Some(d) = self.headers[computations] {
            return Ok(d);
        }
        let d = Delivery::new(&self.network, header_bytes(computations), self.time_unit_s)?;
        self.headers[computations] = Some(d);
        Ok(d)
    }

    /// Model time from the stop to the sum's arrival at the master for a
    /// decodable set of `members` workers (module docs, steps 3 and 4); 0
    /// for an empty set (no order is sent).
    pub fn after_stop(&self, members: usize) -> f64 {
        if members == 0 {
            return 0.0;
        }
        let rounds = members.next_power_of_two().trailing_zeros() as f64;
        rounds * (self.vector.latency() + self.vector.peer_transfer())
            + self.sum.latency()
            + self.sum.path_transfer()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_takes_ceil_log2_rounds_then_the_sum_crosses_the_path() {
        // 8000-byte vectors; worker links 4000 B/s (2 s a vector), master
        // 2000 B/s (the path's bottleneck: the sum 8016 B in 4.008 s);
        // latency 0.5 s; time unit 1 s.
        let n = Network::new(0.5, Some(4000.0), Some(2000.0), true).unwrap();
        let r = Reduce::new(&n, 8000.0, 1.0).unwrap();
        let sum = 0.5 + 8016.0 / 2000.0;
        assert_eq!(r.after_stop(0), 0.0);
        assert_eq!(r.after_stop(1), sum);
        for (members, rounds) in [(2, 1.0), (3, 2.0), (4, 2.0), (5, 3.0), (8, 3.0), (9, 4.0)] {
            let want = rounds * (0.5 + 2.0) + sum;
            assert!(
                (r.after_stop(members) - want).abs() < 1e-12,
                "{members}: {} vs {want}",
                r.after_stop(members)
            );
        }
    }

    #[test]
    fn a_peer_bandwidth_times_the_tree_rounds_alone() {
        // As above, with 8000 B/s between two workers: a round takes 1 s of
        // bytes, not the worker link's 2 s; the sum's path is unchanged.
        let n = Network::new(0.5, Some(4000.0), Some(2000.0), true)
            .unwrap()
            .with_peer_bandwidth(Some(8000.0))
            .unwrap();
        let r = Reduce::new(&n, 8000.0, 1.0).unwrap();
        let sum = 0.5 + 8016.0 / 2000.0;
        assert_eq!(r.after_stop(1), sum);
        for (members, rounds) in [(2, 1.0), (4, 2.0), (5, 3.0)] {
            let want = rounds * (0.5 + 1.0) + sum;
            assert!((r.after_stop(members) - want).abs() < 1e-12, "{members}");
        }
        // Unset, it is the worker's link, bit for bit.
        let plain = Network::new(0.5, Some(4000.0), Some(2000.0), true).unwrap();
        let unset = plain.with_peer_bandwidth(None).unwrap();
        assert_eq!(
            Reduce::new(&plain, 8000.0, 1.0).unwrap().after_stop(6),
            Reduce::new(&unset, 8000.0, 1.0).unwrap().after_stop(6)
        );
    }

    #[test]
    fn headers_cross_at_their_own_size() {
        // 1000 B/s master link, no latency: a header of 2 losses is 80 bytes.
        let n = Network::new(0.0, None, Some(1000.0), true).unwrap();
        let mut r = Reduce::new(&n, 8e6, 1.0).unwrap();
        assert_eq!(header_bytes(2), 80.0);
        let h = r.headers(2).unwrap();
        assert!((h.master_transfer() - 0.08).abs() < 1e-15);
        assert_eq!(r.headers(2).unwrap(), h, "cached");
        assert!((r.headers(0).unwrap().master_transfer() - 0.064).abs() < 1e-15);
    }
}
