//! The start of a run, with no collective: every wait has a bound and names
//! the ranks it waits for.
//!
//! Every worker sends the master a hello ([`Hello`]: its host and the cores
//! it may run on) as soon as MPI is up. The master waits for all of them at
//! most `train.result_timeout_s` (the default when the config could not be
//! read) and names the workers it did not hear from, then sends each worker
//! the verdict on the config and, when it is good, the resolved TOML and
//! the worker's [`Node`] (its node's ranks and cores, worked out from the
//! hellos). A worker that is stopped, hung or gone before it says hello
//! ends the job with a line that names it, never a wait in `MPI_Bcast` or
//! `MPI_Gather` that lasts as long as the worker does not run.

use std::time::{Duration, Instant};

use super::comm::{Backoff, Comm, MASK_WORDS, Node, affinity_mask, instant_after, receive_into};
use super::protocol::{self, ProtocolError};

/// Longest sleep between probes of a rank waiting in the setup.
const SETUP_CAP: Duration = Duration::from_millis(2);
/// Bytes of a host name carried (MPI_MAX_PROCESSOR_NAME is 256 with the terminator).
const HOST_BYTES: usize = 255;

/// This rank's host name (`MPI_Get_processor_name`, else the host name), at
/// most [`HOST_BYTES`] bytes: what a worker's [`Hello`] tells rank 0.
pub(super) fn host_name() -> String {
    let mut name =
        mpi::environment::processor_name().unwrap_or_else(|_| crate::provenance::local_host());
    let mut end = name.len().min(HOST_BYTES);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name.truncate(end);
    name
}

/// A worker's first message: where it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Hello {
    /// `MPI_Get_processor_name`, or the host name.
    pub host: String,
    /// The CPUs this process may run on (sched_getaffinity), one bit each.
    pub mask: [u64; MASK_WORDS],
}

impl Hello {
    /// This process's hello.
    pub fn mine() -> Self {
        Self {
            host: host_name(),
            mask: affinity_mask(),
        }
    }

    /// The mask as 2·[`MASK_WORDS`] 32-bit halves (exact in f64), then the host's bytes.
    pub fn encode(&self) -> Vec<f64> {
        let halves = self
            .mask
            .iter()
            .flat_map(|&w| [f64::from(w as u32), f64::from((w >> 32) as u32)]);
        halves.chain(self.host.bytes().map(f64::from)).collect()
    }

    pub fn decode(data: &[f64]) -> Result<Self, ProtocolError> {
        let malformed = |why: String| ProtocolError { kind: "hello", why };
        if data.len() < 2 * MASK_WORDS || data.len() > 2 * MASK_WORDS + HOST_BYTES {
            return Err(malformed(format!("{} values", data.len())));
        }
        let (halves, host) = data.split_at(2 * MASK_WORDS);
        let whole = |v: f64, max: f64| v >= 0.0 && v <= max && v.fract() == 0.0;
        if let Some(v) = halves.iter().find(|&&v| !whole(v, f64::from(u32::MAX))) {
            return Err(malformed(format!("{v} is not a 32-bit word")));
        }
        if let Some(v) = host.iter().find(|&&v| !whole(v, 255.0)) {
            return Err(malformed(format!("{v} is not a byte")));
        }
        let mut mask = [0u64; MASK_WORDS];
        for (w, pair) in mask.iter_mut().zip(halves.chunks(2)) {
            *w = pair[0] as u64 | ((pair[1] as u64) << 32);
        }
        let bytes: Vec<u8> = host.iter().map(|&b| b as u8).collect();
        Ok(Self {
            host: String::from_utf8_lossy(&bytes).into_owned(),
            mask,
        })
    }
}

/// Each rank's node, from every rank's hello (rank 0's first): the ranks
/// with its host, the cores in the union of their masks (`fallback` when
/// the masks are empty), and whether every rank shares the one host.
pub(super) fn nodes(hellos: &[Hello], fallback: usize) -> Vec<Node> {
    let one_node = hellos.iter().all(|h| h.host == hellos[0].host);
    hellos
        .iter()
        .map(|me| {
            let mut union = [0u64; MASK_WORDS];
            let mut ranks = 0;
            for h in hellos.iter().filter(|h| h.host == me.host) {
                ranks += 1;
                union.iter_mut().zip(h.mask).for_each(|(u, m)| *u |= m);
            }
            let cores: usize = union.iter().map(|w| w.count_ones() as usize).sum();
            Node {
                ranks,
                cores: if cores == 0 { fallback } else { cores },
                one_node,
            }
        })
        .collect()
}

/// Why the master has not every worker's hello.
#[derive(Debug, thiserror::Error)]
pub(super) enum HelloError {
    /// No hello from the workers `silent` (1-based, ascending) within
    /// `timeout_s`; `heard` of `workers` answered. The message is `train`'s
    /// (its timeout is `train.result_timeout_s`); `probe` words its own.
    #[error(
        "setup: no word from worker(s) {} for {timeout_s} s (train.result_timeout_s) after MPI started: \
         they are stopped, hung or gone ({heard} of {workers} workers answered)",
        list(silent)
    )]
    Silent {
        silent: Vec<usize>,
        heard: usize,
        workers: usize,
        timeout_s: f64,
    },
    /// Worker `rank` sent what is not a hello.
    #[error("worker {rank}: {source}")]
    Malformed { rank: i32, source: ProtocolError },
}

/// `1, 2, 5`.
fn list(ranks: &[usize]) -> String {
    let names: Vec<String> = ranks.iter().map(usize::to_string).collect();
    names.join(", ")
}

/// A worker's first message (train's and probe's): its [`Hello`] to rank 0.
pub(super) fn say_hello(comm: &Comm<'_>) {
    comm.send(0, protocol::TAG_HELLO, &Hello::mine().encode());
}

/// The master's wait for every worker's hello, at most `timeout_s`: every
/// rank's hello (its own first), or the workers it did not hear from.
pub(super) fn await_hellos(comm: &Comm<'_>, timeout_s: f64) -> Result<Vec<Hello>, HelloError> {
    let workers = comm.size() as usize - 1;
    let mut hellos: Vec<Option<Hello>> = vec![None; workers + 1];
    hellos[0] = Some(Hello::mine());
    let start = Instant::now();
    comm.awake();
    let mut backoff = Backoff::new(SETUP_CAP);
    let mut heard = 0;
    while heard < workers {
        let deadline = instant_after(start, timeout_s);
        let Some(w) = comm.probe_any(protocol::TAG_HELLO, &mut backoff, deadline) else {
            let silent = (1..=workers).filter(|&w| hellos[w].is_none()).collect();
            return Err(HelloError::Silent {
                silent,
                heard,
                workers,
                timeout_s,
            });
        };
        let (rank, data) = w;
        let hello =
            Hello::decode(&data).map_err(|source| HelloError::Malformed { rank, source })?;
        let slot = &mut hellos[rank as usize];
        if slot.is_none() {
            heard += 1;
        }
        *slot = Some(hello);
    }
    Ok(hellos.into_iter().map(|h| h.expect("heard")).collect())
}

/// What the master tells each worker after the hellos: the config is bad
/// (every rank exits with status 2), or the resolved TOML and the worker's node.
pub(super) enum Verdict {
    Refused,
    Config { toml: String, node: Node },
}

impl Verdict {
    /// `[0]`, or `[1, node ranks, node cores, one node, TOML bytes...]`.
    pub fn encode(&self) -> Vec<f64> {
        match self {
            Self::Refused => vec![0.0],
            Self::Config { toml, node } => [
                1.0,
                node.ranks as f64,
                node.cores as f64,
                f64::from(u8::from(node.one_node)),
            ]
            .into_iter()
            .chain(toml.bytes().map(f64::from))
            .collect(),
        }
    }

    pub fn decode(data: &[f64]) -> Result<Self, ProtocolError> {
        let malformed = |why: &str| ProtocolError {
            kind: "config",
            why: why.to_string(),
        };
        match data {
            [v] if *v == 0.0 => Ok(Self::Refused),
            [v, ranks, cores, one_node, text @ ..] if *v == 1.0 => {
                let count =
                    |x: f64| (x >= 1.0 && x.fract() == 0.0 && x < 1e9).then_some(x as usize);
                let (Some(ranks), Some(cores)) = (count(*ranks), count(*cores)) else {
                    return Err(malformed("a node of no ranks or no cores"));
                };
                if text
                    .iter()
                    .any(|&b| !(0.0..=255.0).contains(&b) || b.fract() != 0.0)
                {
                    return Err(malformed("the TOML is not bytes"));
                }
                let bytes: Vec<u8> = text.iter().map(|&b| b as u8).collect();
                let toml =
                    String::from_utf8(bytes).map_err(|_| malformed("the TOML is not UTF-8"))?;
                Ok(Self::Config {
                    toml,
                    node: Node {
                        ranks,
                        cores,
                        one_node: *one_node == 1.0,
                    },
                })
            }
            _ => Err(malformed("neither a refusal nor a config")),
        }
    }
}

/// A worker: say hello, then wait for the master's verdict (as long as it
/// takes: a master that gives up on the setup ends the job).
pub(super) fn worker_setup(comm: &Comm<'_>) -> anyhow::Result<Verdict> {
    say_hello(comm);
    let mut backoff = Backoff::new(SETUP_CAP);
    let (message, len) = comm
        .probe_from(0, protocol::TAG_CONFIG, &mut backoff, None)
        .expect("no deadline");
    let mut data = Vec::new();
    receive_into(message, len, &mut data);
    Ok(Verdict::decode(&data)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(host: &str, cpus: &[usize]) -> Hello {
        let mut mask = [0u64; MASK_WORDS];
        for &c in cpus {
            mask[c / 64] |= 1 << (c % 64);
        }
        Hello {
            host: host.to_string(),
            mask,
        }
    }

    #[test]
    fn a_hello_round_trips_and_refuses_what_is_not_one() {
        let h = hello("node-7.cluster", &[0, 1, 63, 64, 1023]);
        assert_eq!(Hello::decode(&h.encode()).unwrap(), h);
        let mut bad = h.encode();
        bad[3] = 0.5;
        assert!(Hello::decode(&bad).is_err());
        assert!(Hello::decode(&[1.0; 3]).is_err());
        let mut long = h.encode();
        long.extend([65.0; HOST_BYTES]);
        assert!(Hello::decode(&long).is_err());
    }

    #[test]
    fn nodes_count_the_ranks_and_the_union_of_cores_per_host() {
        let hellos = [
            hello("a", &[0]),
            hello("a", &[1]),
            hello("b", &[0, 1, 2, 3]),
            hello("a", &[1]),
        ];
        let nodes = nodes(&hellos, 8);
        let on_a = Node {
            ranks: 3,
            cores: 2,
            one_node: false,
        };
        assert_eq!(nodes[0], on_a);
        assert_eq!(nodes[1], on_a);
        assert_eq!(nodes[3], on_a);
        assert_eq!(
            nodes[2],
            Node {
                ranks: 1,
                cores: 4,
                one_node: false
            }
        );
        let one = super::nodes(&[hello("a", &[]), hello("a", &[])], 8);
        assert!(
            one.iter()
                .all(|n| n.one_node && n.ranks == 2 && n.cores == 8)
        );
    }

    #[test]
    fn a_verdict_round_trips() {
        let node = Node {
            ranks: 3,
            cores: 2,
            one_node: true,
        };
        let v = Verdict::Config {
            toml: "seed = 1\n# é\n".to_string(),
            node,
        };
        match Verdict::decode(&v.encode()).unwrap() {
            Verdict::Config { toml, node: n } => {
                assert_eq!(toml, "seed = 1\n# é\n");
                assert_eq!(n, node);
            }
            Verdict::Refused => panic!("a config"),
        }
        assert!(matches!(
            Verdict::decode(&Verdict::Refused.encode()).unwrap(),
            Verdict::Refused
        ));
        assert!(Verdict::decode(&[1.0, 0.0, 2.0, 1.0]).is_err());
        assert!(Verdict::decode(&[]).is_err());
    }
}
