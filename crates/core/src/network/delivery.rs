//! When the master has received each message: the [`Network`] applied to the
//! times the workers send (issue 26, item 1).
//!
//! Every message carries `b` bytes (one coded vector:
//! [`crate::sim::message_size`]).
//! Write `L` for the latency, `Bw` and `Bm` for the bandwidths of a worker's
//! link and of the master's (an unlimited one: `b / B = 0`) and `Bp = min(Bw,
//! Bm)` for the path's. A message that its worker is ready to send at `s`
//! (its computations done, the straggler model's time):
//!
//! 1. **leaves its worker** after the worker's earlier messages of the
//!    iteration: its transfer starts at `t = max(s, f)`, `f` the time the
//!    worker's link finished the previous one (`-∞` for the first), and that
//!    link is busy until `t + b / Bw`. A worker's messages go in plan order;
//! 2. **would arrive**, with the master's link to itself, at
//!    `r = t + L + b / Bp`: the latency, then the bytes at the path's
//!    bottleneck rate. This is the arrival time when the master's link is
//!    not shared (`master_link_shared = false`), and with one message and
//!    an unlimited master link it is `s + L + b / Bw`;
//! 3. with `master_link_shared = true`, **crosses the master's link alone**:
//!    the messages are taken in the order of their `r` (ties by worker, then
//!    message) and message `i` arrives at `a_i = max(r_i, a_{i-1} + b / Bm)`
//!    (`a_0 = r_0`). Message `i` occupies the master's link during
//!    `[a_i - b / Bm, a_i]`, which starts after message `i - 1` has finished
//!    (`a_{i-1}`): the link carries one message at a time, at `Bm`. K
//!    messages ready together so arrive `b / Bm` apart, the last at
//!    `r + (K - 1) b / Bm`.
//!
//! `master_per_message_s`, `c` (0 by default), is time the master's link
//! spends on every message besides its bytes (a rendezvous hand-shake, a
//! receive posted late): it is added to `b / Bp` in step 2 and to `b / Bm`
//! in step 3, so K messages ready together arrive `b / Bm + c` apart.
//!
//! What it leaves out: the links of different workers never slow each
//! other (no switch, no contention but on the master's link), the latency
//! has no variance, the master sends nothing (the task and the iterate
//! reach the workers for free), and a gathered message's header is not
//! counted.
//! Times are model time: seconds divided by `straggler.time_unit_ms` / 1000.

use super::{Network, NetworkError};

/// The largest model time one message's latency or transfer may take: far
/// below `f64::MAX`, so that a round's sums of them stay finite.
pub const MAX_MESSAGE_MODEL_TIME: f64 = 1e200;

/// A [`Network`] in model time for messages of one size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Delivery {
    /// `L`.
    latency: f64,
    /// `b / Bw`.
    worker_transfer: f64,
    /// `b / Bq`, `Bq` the bandwidth between two workers (`Bw` unless set).
    peer_transfer: f64,
    /// `b / Bp + c`.
    path_transfer: f64,
    /// `b / Bm + c`.
    master_transfer: f64,
    shared: bool,
}

/// Model time of `bytes` over a link of `bandwidth` bytes per second (0 when unlimited).
fn transfer(bytes: f64, bandwidth: Option<f64>, time_unit_s: f64) -> f64 {
    bandwidth.map_or(0.0, |b| bytes / b / time_unit_s)
}

impl Delivery {
    /// `network` for messages of `message_bytes` bytes, in model time of
    /// `time_unit_s` seconds per unit. The error names the value whose time
    /// in model units exceeds [`MAX_MESSAGE_MODEL_TIME`] (only a tiny
    /// `straggler.time_unit_ms` can make it).
    pub fn new(
        network: &Network,
        message_bytes: f64,
        time_unit_s: f64,
    ) -> Result<Self, NetworkError> {
        assert!(
            message_bytes >= 0.0 && time_unit_s > 0.0,
            "a message has bytes, a model time unit is positive"
        );
        let worker = network.worker_bandwidth_bytes_per_s();
        let master = network.master_bandwidth_bytes_per_s();
        let path = match (worker, master) {
            (Some(w), Some(m)) => Some(w.min(m)),
            (w, m) => w.or(m),
        };
        // The master's link spends `c` on each message besides its bytes
        // (`master_per_message_s`; 0 leaves every time as it was, bit for bit).
        let per_message = network.master_per_message_s() / time_unit_s;
        let path_bytes = transfer(message_bytes, path, time_unit_s);
        let peer = network.peer_bandwidth_bytes_per_s().or(worker);
        let delivery = Self {
            latency: network.latency_s() / time_unit_s,
            worker_transfer: transfer(message_bytes, worker, time_unit_s),
            peer_transfer: transfer(message_bytes, peer, time_unit_s),
            path_transfer: path_bytes + per_message,
            master_transfer: transfer(message_bytes, master, time_unit_s) + per_message,
            shared: network.master_link_shared(),
        };
        // The path's transfer is the larger of the two links' (when the
        // worker's is the smaller bandwidth, its own check names it first).
        for (field, given, time) in [
            ("latency_s", Some(network.latency_s()), delivery.latency),
            (
                "worker_bandwidth_bytes_per_s",
                worker,
                delivery.worker_transfer,
            ),
            ("master_bandwidth_bytes_per_s", master, path_bytes),
            (
                "peer_bandwidth_bytes_per_s",
                network.peer_bandwidth_bytes_per_s(),
                delivery.peer_transfer,
            ),
            (
                "master_per_message_s",
                Some(network.master_per_message_s()),
                per_message,
            ),
        ] {
            if !(time.is_finite() && time <= MAX_MESSAGE_MODEL_TIME) {
                return Err(NetworkError {
                    field,
                    value: given.unwrap_or(f64::NAN),
                    rule: format!(
                        "with straggler.time_unit_ms = {:e} gives a message {time:e} model time \
                         units, more than the {MAX_MESSAGE_MODEL_TIME:e} a simulation adds up",
                        time_unit_s * 1000.0
                    ),
                });
            }
        }
        Ok(delivery)
    }

    /// `L`: the one-way latency, model time.
    pub fn latency(&self) -> f64 {
        self.latency
    }

    /// `b / Bw`: a message over a worker's link, model time.
    pub fn worker_transfer(&self) -> f64 {
        self.worker_transfer
    }

    /// `b / Bq`: a message from one worker to another (a reduce's tree
    /// round), model time; `Bq` is `network.peer_bandwidth_bytes_per_s`,
    /// or `Bw` when it is unset.
    pub fn peer_transfer(&self) -> f64 {
        self.peer_transfer
    }

    /// `b / Bp + c`: a message over the path to the master, model time.
    pub fn path_transfer(&self) -> f64 {
        self.path_transfer
    }

    /// `b / Bm + c`: a message over the master's link, model time.
    pub fn master_transfer(&self) -> f64 {
        self.master_transfer
    }

    /// Whether the master's link carries one message at a time.
    pub fn shared(&self) -> bool {
        self.shared
    }

    /// Turn `events`, the times the workers are ready to send their
    /// messages (each worker's messages in plan order), into the times the
    /// master has received them (module docs), sorted by arrival time, ties
    /// by worker then message.
    /// `id` gives a message's (worker, message index).
    pub fn deliver<T>(&self, events: &mut [(f64, T)], id: impl Fn(&T) -> (usize, usize)) {
        self.deliver_after(events, id, f64::NEG_INFINITY);
    }

    /// [`Delivery::deliver`] with the master's link busy until
    /// `master_busy_until` (model time of this iteration's clock) with an
    /// earlier message, such as a vector of the iteration before that the
    /// decode did not need: with `master_link_shared = true` the first
    /// message arrives no earlier than `master_busy_until + b / Bm` (step 3
    /// with `a_0` that message). `-∞`: the link is free.
    pub fn deliver_after<T>(
        &self,
        events: &mut [(f64, T)],
        id: impl Fn(&T) -> (usize, usize),
        master_busy_until: f64,
    ) {
        // 1 and 2: each worker's link, then the path. A worker's messages
        // are consecutive and in order (the simulated round pushes them so).
        let mut link_free = f64::NEG_INFINITY;
        let mut worker = usize::MAX;
        for (time, message) in events.iter_mut() {
            let (w, _) = id(message);
            if w != worker {
                worker = w;
                link_free = f64::NEG_INFINITY;
            }
            let start = time.max(link_free);
            link_free = start + self.worker_transfer;
            *time = start + self.latency + self.path_transfer;
        }
        events.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(id(&a.1).cmp(&id(&b.1))));
        // 3: the master's link, one message at a time.
        if self.shared {
            let mut previous = master_busy_until;
            for (time, _) in events.iter_mut() {
                *time = time.max(previous + self.master_transfer);
                previous = *time;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message: (worker, index).
    #[derive(Debug, Clone, Copy, PartialEq)]
    struct Arrival {
        worker: usize,
        message: usize,
    }

    fn at(worker: usize, message: usize, time: f64) -> (f64, Arrival) {
        (time, Arrival { worker, message })
    }

    trait Deliver {
        fn deliver_all(&self, events: &mut [(f64, Arrival)]);
    }

    impl Deliver for Delivery {
        fn deliver_all(&self, events: &mut [(f64, Arrival)]) {
            self.deliver(events, |a| (a.worker, a.message));
        }
    }

    /// Bandwidths in bytes per second, time unit 1 s.
    fn delivery(latency: f64, worker: Option<f64>, master: Option<f64>, shared: bool) -> Delivery {
        let n = Network::new(latency, worker, master, shared).unwrap();
        Delivery::new(&n, 1000.0, 1.0).unwrap()
    }

    #[test]
    fn one_message_arrives_after_the_latency_and_its_bytes_at_the_worker_bandwidth() {
        // 1000 bytes at 500 B/s: 2 s; latency 0.25 s; sent at 3 s.
        for shared in [true, false] {
            let mut e = [at(0, 0, 3.0)];
            delivery(0.25, Some(500.0), None, shared).deliver_all(&mut e);
            assert_eq!(e[0].0, 3.0 + 0.25 + 2.0);
        }
        // A slower master link is the path's bottleneck: 1000 / 250 = 4 s.
        let mut e = [at(0, 0, 3.0)];
        delivery(0.25, Some(500.0), Some(250.0), true).deliver_all(&mut e);
        assert_eq!(e[0].0, 3.0 + 0.25 + 4.0);
    }

    #[test]
    fn the_shared_master_link_serialises_messages_ready_together() {
        // Four workers ready at 1 s, 1000 bytes each, master link 1000 B/s,
        // unlimited workers: r = 1 + 0.5 + 1 = 2.5, then one per second.
        let mut e: Vec<_> = (0..4).map(|w| at(w, 0, 1.0)).collect();
        delivery(0.5, None, Some(1000.0), true).deliver_all(&mut e);
        let times: Vec<f64> = e.iter().map(|x| x.0).collect();
        assert_eq!(times, [2.5, 3.5, 4.5, 5.5]);
        let workers: Vec<usize> = e.iter().map(|x| x.1.worker).collect();
        assert_eq!(workers, [0, 1, 2, 3], "ties by worker");
        // Not shared: all arrive at r.
        let mut e: Vec<_> = (0..4).map(|w| at(w, 0, 1.0)).collect();
        delivery(0.5, None, Some(1000.0), false).deliver_all(&mut e);
        assert!(e.iter().all(|x| x.0 == 2.5));
    }

    #[test]
    fn a_message_never_waits_for_a_link_that_is_already_free() {
        // r = 0.5 + 1 = 1.5 and 10 + 0.5 + 1 = 11.5: the link is free long
        // before the second; and a message that waits is counted from the
        // end of the one before (worker 2, r = 2 < 1.5 + 1).
        let mut e = [at(0, 0, 0.0), at(1, 0, 10.0), at(2, 0, 0.5)];
        delivery(0.5, None, Some(1000.0), true).deliver_all(&mut e);
        let got: Vec<(usize, f64)> = e.iter().map(|x| (x.1.worker, x.0)).collect();
        assert_eq!(got, [(0, 1.5), (2, 2.5), (1, 11.5)]);
    }

    #[test]
    fn a_workers_messages_share_its_link_and_then_the_masters() {
        // Multi-message: worker 0 is ready with three messages at 1, 1.5
        // and 4 s; worker 1 with two at 1 and 2 s. 1000 bytes over worker
        // links of 500 B/s (2 s each) and a master link of 1000 B/s (1 s);
        // latency 0.5; the path's rate is 500 B/s.
        //
        // Worker 0: starts 1, 3 (after the first, busy until 3), 5 → r = 3.5, 5.5, 7.5.
        // Worker 1: starts 1, 3 → r = 3.5, 5.5.
        // Master link in order of r (ties by worker): 3.5 (w0), max(3.5, 4.5) = 4.5 (w1),
        // max(5.5, 5.5) = 5.5 (w0 m1), max(5.5, 6.5) = 6.5 (w1 m1), max(7.5, 7.5) = 7.5.
        let mut e = [
            at(0, 0, 1.0),
            at(0, 1, 1.5),
            at(0, 2, 4.0),
            at(1, 0, 1.0),
            at(1, 1, 2.0),
        ];
        delivery(0.5, Some(500.0), Some(1000.0), true).deliver_all(&mut e);
        let got: Vec<(usize, usize, f64)> =
            e.iter().map(|x| (x.1.worker, x.1.message, x.0)).collect();
        assert_eq!(
            got,
            [
                (0, 0, 3.5),
                (1, 0, 4.5),
                (0, 1, 5.5),
                (1, 1, 6.5),
                (0, 2, 7.5)
            ]
        );
        // Not shared: each at its r.
        let mut e = [at(0, 0, 1.0), at(0, 1, 1.5), at(0, 2, 4.0)];
        delivery(0.5, Some(500.0), Some(1000.0), false).deliver_all(&mut e);
        let times: Vec<f64> = e.iter().map(|x| x.0).collect();
        assert_eq!(times, [3.5, 5.5, 7.5]);
    }

    #[test]
    fn a_link_still_busy_delays_the_first_message_by_what_is_left_of_it() {
        // Master link 1000 B/s (1 s a message), latency 0.5: r = 1 + 0.5 + 1
        // = 2.5 for both. Busy until 2 (an earlier vector): max(2.5, 2 + 1)
        // = 3, then 4. Busy until 1: the first's transfer starts at 1.5,
        // after it: 2.5, 3.5 as with the link free. Not shared: no wait.
        for (busy, want) in [(2.0, [3.0, 4.0]), (1.0, [2.5, 3.5])] {
            let mut e = [at(0, 0, 1.0), at(1, 0, 1.0)];
            delivery(0.5, None, Some(1000.0), true).deliver_after(
                &mut e,
                |a| (a.worker, a.message),
                busy,
            );
            assert_eq!(e.map(|x| x.0), want, "busy until {busy}");
        }
        let mut e = [at(0, 0, 1.0)];
        delivery(0.5, None, Some(1000.0), false).deliver_after(
            &mut e,
            |a| (a.worker, a.message),
            9.0,
        );
        assert_eq!(e[0].0, 2.5);
    }

    #[test]
    fn a_cost_per_message_spaces_the_master_links_messages_by_it() {
        // Four ready at 1 s, 1000 bytes at 1000 B/s, latency 0.5, c = 0.25:
        // r = 1 + 0.5 + 1 + 0.25 = 2.75, then 1.25 s apart; not shared: all
        // at r.
        for shared in [true, false] {
            let n = Network::new(0.5, None, Some(1000.0), shared)
                .unwrap()
                .with_master_per_message_s(0.25)
                .unwrap();
            let mut e: Vec<_> = (0..4).map(|w| at(w, 0, 1.0)).collect();
            Delivery::new(&n, 1000.0, 1.0).unwrap().deliver_all(&mut e);
            let times: Vec<f64> = e.iter().map(|x| x.0).collect();
            let want = if shared {
                [2.75, 4.0, 5.25, 6.5]
            } else {
                [2.75; 4]
            };
            assert_eq!(times, want, "shared {shared}");
        }
        let n = Network::new(0.0, None, None, true)
            .unwrap()
            .with_master_per_message_s(1.0)
            .unwrap();
        let e = Delivery::new(&n, 8.0, 1e-300).unwrap_err();
        assert_eq!(e.field, "master_per_message_s");
    }

    #[test]
    fn a_free_network_keeps_every_time_bit_for_bit() {
        let times = [0.1, 0.7, 0.30000000000000004, 1e-300, 5e10];
        let mut e: Vec<_> = times
            .iter()
            .enumerate()
            .map(|(w, &t)| at(w, 0, t))
            .collect();
        Delivery::new(&Network::new(0.0, None, None, true).unwrap(), 8e6, 1e-3)
            .unwrap()
            .deliver_all(&mut e);
        let mut sorted = times.to_vec();
        sorted.sort_by(f64::total_cmp);
        let got: Vec<u64> = e.iter().map(|x| x.0.to_bits()).collect();
        let want: Vec<u64> = sorted.iter().map(|t| t.to_bits()).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn seconds_become_model_time_and_absurd_ones_are_refused() {
        // Time unit 10 ms: latency 20 ms = 2 units, 1000 B at 1e4 B/s = 0.1 s = 10 units.
        let n = Network::new(0.02, Some(1e4), None, true).unwrap();
        let mut e = [at(0, 0, 1.0)];
        Delivery::new(&n, 1000.0, 0.01).unwrap().deliver_all(&mut e);
        assert!((e[0].0 - 13.0).abs() < 1e-12, "{}", e[0].0);
        let n = Network::new(1.0, None, None, true).unwrap();
        let e = Delivery::new(&n, 8.0, 1e-250).unwrap_err();
        assert_eq!(e.field, "latency_s");
        assert!(
            e.to_string()
                .starts_with("network.latency_s = 1 with straggler.time_unit_ms = 1e-247"),
            "{e}"
        );
        let n = Network::new(0.0, Some(1.0), None, true).unwrap();
        let e = Delivery::new(&n, 8e9, 1e-200).unwrap_err();
        assert_eq!(e.field, "worker_bandwidth_bytes_per_s");
        let n = Network::new(0.0, None, Some(1.0), true).unwrap();
        let e = Delivery::new(&n, 8e9, 1e-200).unwrap_err();
        assert_eq!(e.field, "master_bandwidth_bytes_per_s");
    }
}
