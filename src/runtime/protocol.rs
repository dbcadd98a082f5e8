//! The master/worker message protocol (docs/design.md, "Message protocol").
//!
//! Every message is a flat `f64` array (integers are exact below 2^53), sent
//! with a tag that says its kind and, for tasks and results, carries the
//! iteration: `TAG_ITERATION_BASE + iteration mod TAG_ITERATION_SPAN`. The
//! payload repeats the full iteration, which is what the receiver trusts.
//!
//! | kind | direction | payload |
//! |---|---|---|
//! | hello | worker → master | its host name and the CPUs it may run on (the first message of a run) |
//! | config | master → worker | after every hello: the verdict on the config; when good, the worker's node (ranks, cores, one node) and the resolved TOML |
//! | setup | master → worker | the aggregation (gather or reduce, decided by the master), partitions in total, stored partitions, standardisation (centre and scale per feature, or none) |
//! | ready | worker → master | [`Ready`]: samples loaded, features, and the entries its vectors can make non-zero when it sends only those (packed) |
//! | error | worker → master | [`WorkerError`]: 1 when it is about the input (exit status 2), else 0; then one line of UTF-8, one byte per f64 |
//! | task | master → worker | [`Task`]: the iteration's pace and work |
//! | model | master → worker | right after a task: the evaluation point theta (d values), one buffer shared by the sends to all workers; to a packed worker, theta at its entries but the loss, in a buffer of its own |
//! | result | worker → master | [`ResultHeader`]: iteration, message, codeword, computations, compute seconds (wall clock and CPU) and overrun seconds, then the loss sum of each partition computed so far (uncoded) |
//! | vector | worker → master | right after a result: its coded vector (gradient sum, loss sum; d + 1 values), or a packed worker's values at the entries of its ready message |
//! | stop | master → worker | nothing |
//! | bye | worker → master | tasks received, tasks abandoned |
//! | signal | worker → master | the signal the worker caught (SIGTERM, SIGINT) |
//! | ack | worker → master | the iteration of the newest task the worker took |
//! | loading | worker → master | nothing: still loading its partitions (a heartbeat during setup) |
//! | order | master → worker | [`Order`], `aggregate = reduce` only: the iteration, the decodable set's ranks, this worker's decode coefficient of each of its messages |
//! | reduced | worker → master | `aggregate = reduce`: Σ a·(coded vector) over the decodable set (d + 1 values), from its lowest rank, then the seconds it spent on its own share and on the tree |
//! | partial sum | worker → worker | `aggregate = reduce`: a partial sum of the reduction tree (d + 1 values) |
//! | pause | master → worker | the iteration just decoded: the master evaluates in line or waits for its evaluations before it sends the next task, so a worker still on that task (or an older one) drops it now, as the next task would have made it |

use crate::coding::{Codeword, CodewordId, Message, WorkerTask};
use crate::learn::Standardization;
use crate::spec::Aggregation;

pub const TAG_SETUP: i32 = 1;
pub const TAG_READY: i32 = 2;
pub const TAG_ERROR: i32 = 3;
pub const TAG_STOP: i32 = 4;
pub const TAG_BYE: i32 = 5;
/// Worker → master: this worker caught SIGTERM or SIGINT (payload: the signal).
pub const TAG_SIGNAL: i32 = 6;
/// Worker → master: the newest task this worker has taken (payload: its iteration).
pub const TAG_ACK: i32 = 7;
/// Worker → master, during setup: still loading (sent a few times per
/// `train.result_timeout_s`, so that only a silent worker times out).
pub const TAG_LOADING: i32 = 8;
/// Master → worker, right after each task: the model to evaluate the gradient at.
pub const TAG_MODEL: i32 = 9;
/// Worker → master, right after each result header: the coded vector.
pub const TAG_VECTOR: i32 = 10;
/// Master → worker, `aggregate = reduce`: take part in this iteration's reduction.
pub const TAG_ORDER: i32 = 11;
/// Worker → master, `aggregate = reduce`: the reduced vector, from the set's lowest rank.
pub const TAG_REDUCED: i32 = 12;
/// Worker → worker, `aggregate = reduce`: a partial sum of the reduction
/// tree (d + 1 values); a worker's probes for the master's messages match
/// rank 0 alone, so they never take one.
pub const TAG_PARTIAL_SUM: i32 = 13;
/// Worker → master, first of all: its host and cores (`setup::Hello`).
pub const TAG_HELLO: i32 = 14;
/// Master → worker, after every hello: the verdict on the config and, when
/// good, the resolved TOML and the worker's node (`setup::Verdict`).
pub const TAG_CONFIG: i32 = 15;
/// Tasks a worker may have sent to it and not yet taken; past this the master
/// skips it (it is stopped, hung or gone), which bounds the messages waiting
/// for it and the models it holds in flight (see `round::MAX_MODELS_IN_FLIGHT`).
pub const MAX_UNTAKEN_TASKS: u64 = 2;
/// Tasks and results: base + iteration mod span (MPI guarantees tags up to 32767).
pub const TAG_ITERATION_BASE: i32 = 16;
pub const TAG_ITERATION_SPAN: i32 = 16_000;
/// Master → worker: drop the task of this iteration or older (payload: the
/// iteration); past the task and result tags.
pub const TAG_PAUSE: i32 = TAG_ITERATION_BASE + TAG_ITERATION_SPAN + 1;
const _: () = assert!(TAG_PAUSE <= 32_767, "MPI guarantees tags up to 32767");

/// The tag of a task or result of `iteration`.
pub fn iteration_tag(iteration: u64) -> i32 {
    TAG_ITERATION_BASE + (iteration % TAG_ITERATION_SPAN as u64) as i32
}

/// Whether `tag` is a task or result tag.
pub fn is_iteration_tag(tag: i32) -> bool {
    (TAG_ITERATION_BASE..TAG_ITERATION_BASE + TAG_ITERATION_SPAN).contains(&tag)
}

/// A malformed message: a bug or a version mismatch between ranks, never user input.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("malformed {kind} message: {why}")]
pub struct ProtocolError {
    pub kind: &'static str,
    pub why: String,
}

fn malformed(kind: &'static str, why: impl Into<String>) -> ProtocolError {
    ProtocolError {
        kind,
        why: why.into(),
    }
}

/// Reads a flat f64 message front to back.
struct Reader<'a> {
    kind: &'static str,
    data: &'a [f64],
    at: usize,
}

impl<'a> Reader<'a> {
    fn new(kind: &'static str, data: &'a [f64]) -> Self {
        Self { kind, data, at: 0 }
    }

    fn f64(&mut self) -> Result<f64, ProtocolError> {
        let v = *self
            .data
            .get(self.at)
            .ok_or_else(|| malformed(self.kind, format!("ends at {}", self.at)))?;
        self.at += 1;
        Ok(v)
    }

    fn count(&mut self) -> Result<usize, ProtocolError> {
        let v = self.f64()?;
        if v < 0.0 || v.fract() != 0.0 || v > 2f64.powi(52) {
            return Err(malformed(
                self.kind,
                format!("{v} at {} is not a count", self.at - 1),
            ));
        }
        Ok(v as usize)
    }

    /// The next `n` values.
    fn take(&mut self, n: usize) -> Result<&'a [f64], ProtocolError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.data.len())
            .ok_or_else(|| {
                malformed(self.kind, format!("ends before {n} values at {}", self.at))
            })?;
        let values = &self.data[self.at..end];
        self.at = end;
        Ok(values)
    }

    fn rest(self) -> &'a [f64] {
        &self.data[self.at..]
    }
}

/// Setup of one worker: how the master collects the vectors (decided once,
/// by the master), how many partitions exist, which it stores, and the
/// standardisation of file data (computed once, by the master).
#[derive(Debug, Clone, PartialEq)]
pub struct Setup {
    pub aggregation: Aggregation,
    pub partitions: usize,
    pub stored: Vec<usize>,
    pub standardization: Option<Standardization>,
}

impl Setup {
    pub fn encode(&self) -> Vec<f64> {
        let aggregation = match self.aggregation {
            Aggregation::Gather => 0.0,
            Aggregation::Reduce => 1.0,
        };
        let mut out = vec![
            aggregation,
            self.partitions as f64,
            self.stored.len() as f64,
        ];
        out.extend(self.stored.iter().map(|&p| p as f64));
        match &self.standardization {
            None => out.push(0.0),
            Some(s) => {
                out.push(s.features() as f64);
                out.extend_from_slice(&s.center);
                out.extend_from_slice(&s.scale);
            }
        }
        out
    }

    pub fn decode(data: &[f64]) -> Result<Self, ProtocolError> {
        let mut r = Reader::new("setup", data);
        let aggregation = match r.count()? {
            0 => Aggregation::Gather,
            1 => Aggregation::Reduce,
            _ => {
                return Err(malformed(
                    "setup",
                    "aggregation neither gather (0) nor reduce (1)",
                ));
            }
        };
        let partitions = r.count()?;
        let n = r.count()?;
        let stored = (0..n).map(|_| r.count()).collect::<Result<Vec<_>, _>>()?;
        if stored.iter().any(|&p| p >= partitions) {
            return Err(malformed("setup", "stored partition out of range"));
        }
        let features = r.count()?;
        let standardization = if features == 0 {
            None
        } else {
            let center = r.take(features)?.to_vec();
            let scale = r.take(features)?.to_vec();
            Some(Standardization { center, scale })
        };
        Ok(Self {
            aggregation,
            partitions,
            stored,
            standardization,
        })
    }
}

/// A worker's ready message: it has loaded `samples` samples of `features`
/// features. `packed`: the entries of the d + 1 (gradient, then the loss)
/// that its vectors can make non-zero, in increasing order and ending with
/// the loss (d), when it sends only the values there (a linear model's
/// full-batch gradient on sparse features, gathered: see the worker's
/// `Packing`); `None`: its vectors have all d + 1 values.
#[derive(Debug, Clone, PartialEq)]
pub struct Ready {
    pub samples: usize,
    pub features: usize,
    pub packed: Option<Vec<u32>>,
}

impl Ready {
    pub fn encode(&self) -> Vec<f64> {
        let mut out = vec![self.samples as f64, self.features as f64];
        if let Some(entries) = &self.packed {
            out.push(entries.len() as f64);
            out.extend(entries.iter().map(|&j| j as f64));
        }
        out
    }

    pub fn decode(data: &[f64]) -> Result<Self, ProtocolError> {
        let mut r = Reader::new("ready", data);
        let samples = r.count()?;
        let features = r.count()?;
        if r.at == data.len() {
            return Ok(Self {
                samples,
                features,
                packed: None,
            });
        }
        let n = r.count()?;
        let entries = r
            .take(n)?
            .iter()
            .map(|&v| {
                (v >= 0.0 && v.fract() == 0.0 && v <= features as f64)
                    .then_some(v as u32)
                    .ok_or_else(|| {
                        malformed("ready", format!("entry {v} is not one of 0..={features}"))
                    })
            })
            .collect::<Result<Vec<u32>, _>>()?;
        if !entries.windows(2).all(|w| w[0] < w[1]) {
            return Err(malformed("ready", "entries not in increasing order"));
        }
        if entries.last() != Some(&(features as u32)) {
            return Err(malformed("ready", "entries do not end with the loss"));
        }
        if !r.rest().is_empty() {
            return Err(malformed("ready", "values after the entries"));
        }
        Ok(Self {
            samples,
            features,
            packed: Some(entries),
        })
    }
}

/// How a worker paces an iteration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pace {
    /// Emulate: hold each message until its sampled time. Measured: send when computed.
    pub emulate: bool,
    /// Model time of one partition computation this iteration.
    pub unit_time: f64,
    /// Model time added to every message of this iteration (extra delay models).
    pub extra_time: f64,
    /// Wall-clock milliseconds per model time unit.
    pub time_unit_ms: f64,
    /// The worker's emulated straggler state this iteration.
    pub straggling: bool,
}

impl Pace {
    /// Wall-clock seconds after the task arrives at which a message sent after
    /// `after` computations is due.
    pub fn due_s(&self, after: usize) -> f64 {
        (after as f64 * self.unit_time + self.extra_time) * self.time_unit_ms / 1000.0
    }
}

/// One iteration's work for one worker (the model follows in its own message).
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub iteration: u64,
    pub pace: Pace,
    pub work: WorkerTask,
}

impl Task {
    /// Encode into `out` (cleared first), reusing its allocation.
    pub fn encode_into(iteration: u64, pace: &Pace, work: &WorkerTask, out: &mut Vec<f64>) {
        out.clear();
        out.extend([
            iteration as f64,
            f64::from(u8::from(pace.emulate)),
            pace.unit_time,
            pace.extra_time,
            pace.time_unit_ms,
            f64::from(u8::from(pace.straggling)),
            work.compute.len() as f64,
        ]);
        out.extend(work.compute.iter().map(|&p| p as f64));
        out.push(work.messages.len() as f64);
        for m in &work.messages {
            let id = m.codeword.id;
            out.extend([
                m.after as f64,
                id.group as f64,
                id.index as f64,
                m.codeword.terms.len() as f64,
            ]);
            for &(p, c) in &m.codeword.terms {
                out.extend([p as f64, c]);
            }
        }
    }

    pub fn decode(data: &[f64]) -> Result<Self, ProtocolError> {
        let mut r = Reader::new("task", data);
        let iteration = r.count()? as u64;
        let emulate = r.f64()? != 0.0;
        let (unit_time, extra_time, time_unit_ms) = (r.f64()?, r.f64()?, r.f64()?);
        let straggling = r.f64()? != 0.0;
        let n = r.count()?;
        let compute = (0..n).map(|_| r.count()).collect::<Result<Vec<_>, _>>()?;
        let m = r.count()?;
        let mut messages = Vec::with_capacity(m);
        for _ in 0..m {
            let after = r.count()?;
            let id = CodewordId {
                group: r.count()?,
                index: r.count()?,
            };
            let t = r.count()?;
            let mut terms = Vec::with_capacity(t);
            for _ in 0..t {
                terms.push((r.count()?, r.f64()?));
            }
            if after > compute.len() {
                return Err(malformed(
                    "task",
                    format!("message after {after} of {} computations", compute.len()),
                ));
            }
            messages.push(Message {
                after,
                codeword: Codeword { id, terms },
            });
        }
        let rest = r.rest();
        if !rest.is_empty() {
            return Err(malformed(
                "task",
                format!("{} values after the messages", rest.len()),
            ));
        }
        Ok(Self {
            iteration,
            pace: Pace {
                emulate,
                unit_time,
                extra_time,
                time_unit_ms,
                straggling,
            },
            work: WorkerTask { compute, messages },
        })
    }
}

/// What a worker says about one message besides the coded vector.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultHeader {
    pub iteration: u64,
    /// Index of the message in the worker's task.
    pub message: usize,
    pub codeword: CodewordId,
    /// Partition computations done for this message.
    pub computations: usize,
    /// Real (wall-clock) seconds spent computing them.
    pub compute_s: f64,
    /// CPU seconds the worker's thread spent computing them: below
    /// `compute_s` when the worker shares its core with other ranks.
    pub compute_cpu_s: f64,
    /// Seconds the real work ran past the emulated due time (0 when on time or measured).
    pub overrun_s: f64,
    /// The loss sum of each partition computed so far (one per computation,
    /// in the task's `compute` order), uncoded: from every result the master
    /// learns the losses of the partitions it covers, which gives the
    /// full-data training loss when the decode recovers only some partitions.
    pub losses: Vec<f64>,
    /// A classifier's count of each computation's batch samples predicted
    /// correctly in its training pass (same order as `losses`; empty for a
    /// linear model): the master's batch accuracy over the partitions it
    /// recovers.
    pub correct: Vec<f64>,
}

/// Length of a result header's fixed part; `computations` losses follow
/// (and, from a classifier, as many counts of correct predictions).
pub const RESULT_HEADER: usize = 8;

/// Bytes a result crosses the network as: its header (the fixed part, one
/// loss per computation and, from a classifier, one count per computation:
/// `per_computation` values of each computation) and its vector of `vector_len`
/// values (d + 1), every value an f64. What `train` records per worker in
/// `/worker/message_bytes` (issue 26, item 2).
pub fn result_message_bytes(
    computations: usize,
    per_computation: usize,
    vector_len: usize,
) -> usize {
    (RESULT_HEADER + per_computation * computations + vector_len) * size_of::<f64>()
}

impl ResultHeader {
    /// The header into `out` (cleared first); the vector is its own message.
    pub fn encode_into(&self, out: &mut Vec<f64>) {
        out.clear();
        out.extend([
            self.iteration as f64,
            self.message as f64,
            self.codeword.group as f64,
            self.codeword.index as f64,
            self.computations as f64,
            self.compute_s,
            self.compute_cpu_s,
            self.overrun_s,
        ]);
        out.extend_from_slice(&self.losses);
        out.extend_from_slice(&self.correct);
    }

    /// Header values per computation: its loss, and a classifier's count.
    pub fn per_computation(&self) -> usize {
        if self.correct.is_empty() { 1 } else { 2 }
    }

    pub fn decode(data: &[f64]) -> Result<Self, ProtocolError> {
        let mut r = Reader::new("result", data);
        let mut header = Self {
            iteration: r.count()? as u64,
            message: r.count()?,
            codeword: CodewordId {
                group: r.count()?,
                index: r.count()?,
            },
            computations: r.count()?,
            compute_s: r.f64()?,
            compute_cpu_s: r.f64()?,
            overrun_s: r.f64()?,
            losses: Vec::new(),
            correct: Vec::new(),
        };
        let rest = r.rest();
        let c = header.computations;
        if rest.len() != c && (c == 0 || rest.len() != 2 * c) {
            return Err(malformed(
                "result",
                format!(
                    "{} values after the header of {c} computations (a loss each, and a count each from a classifier)",
                    rest.len(),
                ),
            ));
        }
        let (losses, correct) = rest.split_at(c);
        if let Some(bad) = correct
            .iter()
            .find(|v| !(v.is_finite() && **v >= 0.0 && v.fract() == 0.0))
        {
            return Err(malformed(
                "result",
                format!("a count of correct predictions is {bad}, not a count"),
            ));
        }
        header.losses = losses.to_vec();
        header.correct = correct.to_vec();
        Ok(header)
    }
}

/// `aggregate = reduce`: the master's order to one member of the decodable
/// set S to reduce its share of the decoded sum.
#[derive(Debug, Clone, PartialEq)]
pub struct Order {
    pub iteration: u64,
    /// The MPI ranks of S, ascending: the reduction's communicator is made
    /// of them, and the first sends the sum to the master.
    pub members: Vec<i32>,
    /// (message index in the worker's task, decode coefficient): this
    /// worker's share is Σ coefficient · vector, in this order.
    pub terms: Vec<(usize, f64)>,
}

impl Order {
    pub fn encode_into(&self, out: &mut Vec<f64>) {
        out.clear();
        out.push(self.iteration as f64);
        out.push(self.members.len() as f64);
        out.extend(self.members.iter().map(|&r| f64::from(r)));
        out.push(self.terms.len() as f64);
        for &(m, a) in &self.terms {
            out.extend([m as f64, a]);
        }
    }

    pub fn decode(data: &[f64]) -> Result<Self, ProtocolError> {
        let mut r = Reader::new("order", data);
        let iteration = r.count()? as u64;
        let n = r.count()?;
        let members = (0..n)
            .map(|_| {
                let rank = r.count()?;
                i32::try_from(rank)
                    .ok()
                    .filter(|&rank| rank > 0)
                    .ok_or_else(|| malformed("order", format!("member {rank} is not a worker")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if members.is_empty() || members.windows(2).any(|w| w[0] >= w[1]) {
            return Err(malformed("order", "members are not ascending ranks"));
        }
        let t = r.count()?;
        let terms = (0..t)
            .map(|_| Ok((r.count()?, r.f64()?)))
            .collect::<Result<Vec<_>, ProtocolError>>()?;
        let rest = r.rest();
        if !rest.is_empty() {
            return Err(malformed(
                "order",
                format!("{} values after the terms", rest.len()),
            ));
        }
        Ok(Self {
            iteration,
            members,
            terms,
        })
    }
}

/// A rank's error, as the master prints it: whether it is about the user's
/// input (the run exits with status 2) or not (status 1), and its one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerError {
    pub input: bool,
    pub text: String,
}

impl WorkerError {
    /// The most bytes of text a message carries.
    pub const MAX_TEXT_BYTES: usize = 1000;

    /// From the error a worker's step returned: an [`InputError`] or a
    /// model's input error anywhere in its chain is the user's input.
    ///
    /// [`InputError`]: crate::error::InputError
    pub fn from_error(error: &anyhow::Error) -> Self {
        let input = error.chain().any(|cause| {
            cause.is::<crate::error::InputError>()
                || matches!(
                    cause.downcast_ref::<crate::learn::ModelError>(),
                    Some(crate::learn::ModelError::Input(_))
                )
        });
        // One line: a chain's causes are joined by ": ".
        let text = format!("{error:#}").replace(['\n', '\r'], " ");
        Self { input, text }
    }

    /// `[input, bytes...]`, one byte per f64, the text cut at
    /// [`MAX_TEXT_BYTES`](Self::MAX_TEXT_BYTES) on a character boundary.
    pub fn encode(&self) -> Vec<f64> {
        let mut end = self.text.len().min(Self::MAX_TEXT_BYTES);
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        std::iter::once(f64::from(u8::from(self.input)))
            .chain(self.text[..end].bytes().map(f64::from))
            .collect()
    }

    /// The error of a message; invalid bytes become U+FFFD.
    pub fn decode(data: &[f64]) -> Self {
        let input = data.first().is_some_and(|&v| v == 1.0);
        let bytes: Vec<u8> = data
            .iter()
            .skip(1)
            .map(|&b| b.clamp(0.0, 255.0) as u8)
            .collect();
        Self {
            input,
            text: String::from_utf8_lossy(&bytes).into_owned(),
        }
    }

    /// The error the master's run ends with, naming the rank: an
    /// [`InputError`](crate::error::InputError) (exit 2) for input.
    pub fn at_rank(&self, rank: i32) -> Box<dyn std::error::Error + Send + Sync> {
        if self.input {
            Box::new(crate::error::InputError::new(
                format!("worker {rank}"),
                &self.text,
            ))
        } else {
            format!("worker {rank}: {}", self.text).into()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task() -> (Pace, WorkerTask) {
        let pace = Pace {
            emulate: true,
            unit_time: 0.25,
            extra_time: 1.5,
            time_unit_ms: 10.0,
            straggling: true,
        };
        let work = WorkerTask {
            compute: vec![3, 4, 7],
            messages: vec![
                Message {
                    after: 2,
                    codeword: Codeword {
                        id: CodewordId { group: 1, index: 2 },
                        terms: vec![(3, 1.0), (4, -0.5)],
                    },
                },
                Message {
                    after: 3,
                    codeword: Codeword {
                        id: CodewordId { group: 0, index: 0 },
                        terms: vec![(7, 2.0)],
                    },
                },
            ],
        };
        (pace, work)
    }

    #[test]
    fn an_order_round_trips_and_refuses_unsorted_members() {
        let order = Order {
            iteration: 41,
            members: vec![2, 5, 9],
            terms: vec![(0, 0.5), (2, -1.25)],
        };
        let mut out = Vec::new();
        order.encode_into(&mut out);
        assert_eq!(Order::decode(&out).unwrap(), order);
        let mut swapped = out.clone();
        swapped.swap(2, 3);
        assert!(Order::decode(&swapped).is_err());
        let mut master = out.clone();
        master[2] = 0.0;
        assert!(Order::decode(&master).is_err());
        assert!(Order::decode(&out[..out.len() - 1]).is_err());
    }

    #[test]
    fn task_round_trips() {
        let (pace, work) = task();
        let mut buf = vec![99.0; 3];
        Task::encode_into(12345, &pace, &work, &mut buf);
        let back = Task::decode(&buf).unwrap();
        assert_eq!(
            back,
            Task {
                iteration: 12345,
                pace,
                work,
            }
        );
        assert!(
            (back.pace.due_s(2) - 0.02).abs() < 1e-15,
            "(2·0.25 + 1.5)·10 ms"
        );
    }

    #[test]
    fn truncated_or_mis_sized_tasks_are_rejected() {
        let (pace, work) = task();
        let mut buf = Vec::new();
        Task::encode_into(1, &pace, &work, &mut buf);
        let mut long = buf.clone();
        long.push(0.5);
        assert!(Task::decode(&long).is_err(), "trailing values");
        assert!(Task::decode(&buf[..10]).is_err(), "truncated");
        let mut bad = buf.clone();
        bad[6] = 2.5; // compute count
        assert!(Task::decode(&bad).is_err());
    }

    #[test]
    fn result_round_trips() {
        let h = ResultHeader {
            iteration: 7,
            message: 1,
            codeword: CodewordId { group: 3, index: 0 },
            computations: 2,
            compute_s: 0.5,
            compute_cpu_s: 0.25,
            overrun_s: 0.0,
            losses: vec![1.25, 3.5],
            correct: Vec::new(),
        };
        let mut buf = Vec::new();
        h.encode_into(&mut buf);
        assert_eq!(buf.len(), RESULT_HEADER + 2);
        assert_eq!(ResultHeader::decode(&buf).unwrap(), h);
        // The bytes train records: the encoded header and a vector of d + 1.
        assert_eq!(
            result_message_bytes(h.computations, h.per_computation(), 11),
            (buf.len() + 11) * 8
        );
        // A classifier's header: a count of correct predictions per computation.
        let counted = ResultHeader {
            correct: vec![3.0, 0.0],
            ..h.clone()
        };
        let mut with_counts = Vec::new();
        counted.encode_into(&mut with_counts);
        assert_eq!(with_counts.len(), RESULT_HEADER + 4);
        assert_eq!(ResultHeader::decode(&with_counts).unwrap(), counted);
        assert_eq!(
            result_message_bytes(2, counted.per_computation(), 11),
            (with_counts.len() + 11) * 8
        );
        for bad in [-1.0, 0.5, f64::NAN] {
            let mut wrong = with_counts.clone();
            wrong[RESULT_HEADER + 3] = bad;
            assert!(ResultHeader::decode(&wrong).is_err(), "count {bad}");
        }
        assert!(
            ResultHeader::decode(&with_counts[..RESULT_HEADER + 3]).is_err(),
            "a count missing"
        );
        // The header a reduce's model times (network::reduce) is this one.
        assert_eq!(
            gradcode_core::network::reduce::header_bytes(h.computations),
            (buf.len() * 8) as f64
        );
        assert!(ResultHeader::decode(&buf[..6]).is_err(), "truncated");
        assert!(
            ResultHeader::decode(&buf[..RESULT_HEADER + 1]).is_err(),
            "a loss missing"
        );
        buf.push(1.0);
        assert!(ResultHeader::decode(&buf).is_err(), "trailing values");
    }

    #[test]
    fn setup_and_text_round_trip() {
        let mut s = Setup {
            aggregation: Aggregation::Gather,
            partitions: 12,
            stored: vec![0, 5, 11],
            standardization: None,
        };
        assert_eq!(Setup::decode(&s.encode()).unwrap(), s);
        s.aggregation = Aggregation::Reduce;
        assert_eq!(Setup::decode(&s.encode()).unwrap(), s);
        s.standardization = Some(Standardization {
            center: vec![1.5, -2.0, 0.0],
            scale: vec![0.25, 1.0, 3.0],
        });
        let encoded = s.encode();
        assert_eq!(Setup::decode(&encoded).unwrap(), s);
        assert!(
            Setup::decode(&encoded[..encoded.len() - 1]).is_err(),
            "a scale short"
        );
        assert!(
            Setup::decode(&[0.0, 2.0, 1.0, 2.0, 0.0]).is_err(),
            "partition 2 of 2"
        );
        assert!(
            Setup::decode(&[0.0, 2.0, 1.0, 1.0]).is_err(),
            "no standardisation count"
        );
        assert!(Setup::decode(&[1.0, 2.0, 1.0, 1.0, 0.0]).is_ok());
        assert!(
            Setup::decode(&[2.0, 2.0, 1.0, 1.0, 0.0]).is_err(),
            "aggregation 2"
        );
        assert!(Setup::decode(&[]).is_err(), "no aggregation");
        let error = WorkerError {
            input: true,
            text: "data.path: cannot open: é".to_string(),
        };
        assert_eq!(WorkerError::decode(&error.encode()), error);
        let long = WorkerError {
            input: false,
            text: "é".repeat(600),
        };
        let cut = WorkerError::decode(&long.encode());
        assert!(!cut.input);
        assert_eq!(cut.text, "é".repeat(500), "cut on a character boundary");
    }

    #[test]
    fn ready_round_trips_and_refuses_entries_that_are_not_a_packing() {
        let dense = Ready {
            samples: 40,
            features: 7,
            packed: None,
        };
        assert_eq!(Ready::decode(&dense.encode()).unwrap(), dense);
        let packed = Ready {
            packed: Some(vec![0, 3, 6, 7]),
            ..dense.clone()
        };
        assert_eq!(Ready::decode(&packed.encode()).unwrap(), packed);
        for (bad, why) in [
            (vec![40.0, 7.0, 2.0, 3.0], "ends before"),
            (vec![40.0, 7.0, 2.0, 3.0, 3.0], "increasing"),
            (vec![40.0, 7.0, 2.0, 5.0, 3.0], "increasing"),
            (vec![40.0, 7.0, 2.0, 3.0, 6.0], "end with the loss"),
            (vec![40.0, 7.0, 2.0, 3.0, 8.0], "not one of 0..=7"),
            (vec![40.0, 7.0, 2.0, 0.5, 7.0], "not one of 0..=7"),
            (vec![40.0, 7.0, 1.0, 7.0, 1.0], "values after"),
        ] {
            let e = Ready::decode(&bad).unwrap_err();
            assert!(e.to_string().contains(why), "{bad:?}: {e}");
        }
    }

    #[test]
    fn tags_carry_the_iteration() {
        assert_eq!(iteration_tag(0), TAG_ITERATION_BASE);
        assert_eq!(iteration_tag(16_001), TAG_ITERATION_BASE + 1);
        assert!(is_iteration_tag(iteration_tag(123_456)));
        for t in [
            TAG_SETUP,
            TAG_READY,
            TAG_ERROR,
            TAG_STOP,
            TAG_BYE,
            TAG_SIGNAL,
            TAG_ACK,
            TAG_LOADING,
            TAG_MODEL,
            TAG_VECTOR,
            TAG_PAUSE,
        ] {
            assert!(!is_iteration_tag(t));
        }
        assert!(iteration_tag(u64::MAX) < 32_767);
    }
}
