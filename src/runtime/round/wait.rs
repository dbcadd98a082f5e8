//! Waiting for an iteration's results: every result of this iteration goes
//! to the stop rule with its arrival time in model time, until the rule says
//! to decode, a pending deadline passes, a signal comes, or no result comes
//! for `train.result_timeout_s` while the rule still waits.

use std::time::{Duration, Instant};

use mpi::point_to_point::Message;

use super::incoming::Incoming;
use super::{Held, MpiRound, RECEIVED_BYTES};
use crate::coding::Arrival;
use crate::engine::{Decision, RoundError, RoundReport, RoundStatus, RoundTask, StopRule, Timing};
use crate::error::Iteration;
use crate::runtime::comm::{Received, Wait, instant_after};
use crate::runtime::protocol::{self, ResultHeader};

/// The clock of a round's wait for results.
struct WaitClock {
    /// When the round's tasks were sent: arrival times count from here.
    start: Instant,
    /// When the last result came (or the wait began), moved on by the time
    /// this process was stopped since: the workers' silence counts from here.
    last_progress: Instant,
    /// How long this process had been stopped (SIGSTOP, a suspended job)
    /// when the clock last looked.
    suspended: Duration,
}

/// What the wait for the next message gave.
enum Step {
    Message(Received),
    /// Nothing yet, and the rule still waits: wait again.
    Again,
    /// The round ends: the deadline passed, or a signal came.
    End(RoundStatus),
}

/// A result of this iteration as it arrived: its header, its matched vector
/// (none when it stays at its worker), its worker and when it came
/// (seconds since the round's start).
struct Arrived {
    header: ResultHeader,
    vector: Option<(Message, usize)>,
    worker: usize,
    arrived_s: f64,
}

impl MpiRound<'_> {
    /// Receive until the stop rule says to decode (or a signal ends the
    /// round), the round's tasks sent at `start`.
    pub(super) fn await_results(
        &mut self,
        task: &RoundTask<'_>,
        rule: &mut StopRule<'_>,
        report: &mut RoundReport,
        timing: &mut Timing,
        start: Instant,
    ) -> Result<RoundStatus, RoundError> {
        let mut clock = WaitClock {
            start,
            last_progress: Instant::now(),
            suspended: self.comm.suspended(),
        };
        loop {
            let m = match self.next_message(task, rule, report, &mut clock)? {
                Step::Message(m) => m,
                Step::Again => continue,
                Step::End(status) => return Ok(status),
            };
            let (header, vector, worker) = match self.incoming(m, task, report)? {
                Incoming::Handled => continue,
                Incoming::Signal(signal) => return Ok(RoundStatus::Interrupted { signal }),
                Incoming::Result {
                    header,
                    vector,
                    worker,
                } => (header, vector, worker),
            };
            let arrived_s = start.elapsed().as_secs_f64();
            clock.last_progress = Instant::now();
            let arrived = Arrived {
                header,
                vector,
                worker,
                arrived_s,
            };
            if let Some(status) = self.accept(arrived, rule, report, timing, start)? {
                return Ok(status);
            }
        }
    }

    /// Wait for the next message until the pending deadline, if any, and
    /// at most the result timeout; past the deadline the rule expires, and
    /// past the timeout the round fails naming the silent workers.
    fn next_message(
        &mut self,
        task: &RoundTask<'_>,
        rule: &mut StopRule<'_>,
        report: &RoundReport,
        clock: &mut WaitClock,
    ) -> Result<Step, RoundError> {
        let time_unit_s = self.time_unit_ms / 1000.0;
        // Time this process was stopped (SIGSTOP, a suspended job) is not
        // the workers' silence.
        let now_suspended = self.comm.suspended();
        clock.last_progress += now_suspended - clock.suspended;
        clock.suspended = now_suspended;
        let give_up = instant_after(clock.last_progress, self.result_timeout_s);
        let deadline = rule
            .wait_until()
            .and_then(|d| instant_after(clock.start, d * time_unit_s));
        let until = match (deadline, give_up) {
            (Some(d), Some(g)) => Some(d.min(g)),
            (d, g) => d.or(g),
        };
        match self.comm.receive_or_signal(&mut self.backoff, until, true) {
            Wait::Message(m) => Ok(Step::Message(m)),
            Wait::Signal(signal) => Ok(Step::End(RoundStatus::Interrupted { signal })),
            Wait::Timeout => {
                // Past the deadline's instant the deadline has passed, whatever
                // the rounding of seconds to model time says.
                let now = if deadline.is_some_and(|d| Instant::now() >= d) {
                    f64::INFINITY
                } else {
                    clock.start.elapsed().as_secs_f64() / time_unit_s
                };
                if rule.expire(now) {
                    // The deadline, messages in hand.
                    return Ok(Step::End(RoundStatus::Completed));
                }
                if give_up.is_some_and(|g| Instant::now() < g) {
                    return Ok(Step::Again);
                }
                Err(self.silence_error(task, report))
            }
        }
    }

    /// No result for `train.result_timeout_s` while the scheme cannot
    /// decode: the error names the workers that sent none.
    fn silence_error(&self, task: &RoundTask<'_>, report: &RoundReport) -> RoundError {
        let time_unit_s = self.time_unit_ms / 1000.0;
        let silent: Vec<usize> = (0..self.workers)
            .filter(|&w| !report.arrivals.iter().any(|a| a.worker == w))
            .collect();
        // In emulation a silent worker may simply be due later than the timeout.
        let late: Vec<String> = silent
            .iter()
            .filter_map(|&w| {
                let first = task.plan.tasks[w].messages.first()?;
                let due_s = (first.after as f64 * task.sample.unit_time[w]
                    + task.sample.extra_time[w])
                    * time_unit_s;
                (self.emulate && due_s > self.result_timeout_s)
                    .then(|| format!("{} at {due_s:.3e} s", w + 1))
            })
            .collect();
        let names: Vec<String> = silent.iter().map(|w| (w + 1).to_string()).collect();
        let why = if late.is_empty() {
            "a worker died or hangs".to_string()
        } else {
            format!(
                "a worker died or hangs, or its emulated time is beyond the timeout (workers {})",
                late.join(", ")
            )
        };
        format!(
            "{}: no result for {} s (train.result_timeout_s) and the scheme cannot decode yet; \
             no answer from workers {}: {why}",
            Iteration(task.iteration),
            self.result_timeout_s,
            names.join(", ")
        )
        .into()
    }

    /// Give an arrived result to the stop rule and, when the rule takes it,
    /// note it in `report` and keep its vector; `Some` status when the
    /// round ends with it (the rule decodes, with or without it).
    fn accept(
        &mut self,
        arrived: Arrived,
        rule: &mut StopRule<'_>,
        report: &mut RoundReport,
        timing: &mut Timing,
        start: Instant,
    ) -> Result<Option<RoundStatus>, RoundError> {
        let Arrived {
            header,
            vector,
            worker: w,
            arrived_s,
        } = arrived;
        self.note_compute(w, &header, report, timing);
        let arrival = Arrival {
            worker: w,
            message: header.message,
        };
        let decision = rule.arrive(arrival, arrived_s / (self.time_unit_ms / 1000.0));
        if decision == Decision::DecodeWithout {
            if let Some((vector, len)) = vector {
                self.receive_counted(vector, w as i32 + 1, len, None)?;
            }
            log::debug!(
                "{}: the result of worker {} came after the deadline; not used",
                Iteration(self.iteration),
                w + 1
            );
            return Ok(Some(RoundStatus::Completed));
        }
        report.accept(arrival, arrived_s);
        // What advise --trace fits the network to (issue 26, item 2):
        // the bytes as sent (header and vector: the header alone when the
        // vector stays at its worker for a reduce), the worker's compute,
        // and when the last byte had arrived.
        let vector_len = vector.as_ref().map_or(0, |&(_, len)| len);
        let bytes = protocol::result_message_bytes(
            header.computations,
            header.per_computation(),
            vector_len,
        );
        report.message_bytes[w] = report.message_bytes[w].max(0.0) + bytes as f64;
        report.compute_s[w] = header.compute_s;
        report.received_s[w] = if vector.is_none() {
            arrived_s
        } else {
            f64::NAN
        };
        let held = self.keep_vector(vector, header.message, w, start, report)?;
        self.vectors.push(Some((held, w)));
        Ok((decision == Decision::Decode).then_some(RoundStatus::Completed))
    }

    /// The overrun and compute that worker `w`'s result `header` reports,
    /// into `report` and (what its earlier results of the task did not
    /// report) the timing events.
    fn note_compute(
        &mut self,
        w: usize,
        header: &ResultHeader,
        report: &mut RoundReport,
        timing: &mut Timing,
    ) {
        report.overrun_s[w] = report.overrun_s[w].max(header.overrun_s);
        if header.computations > 0 {
            report.per_computation_s[w] = header.compute_s / header.computations as f64;
        }
        let (wall_s, cpu_s) = self.new_compute_s(w, header);
        if wall_s > 0.0 {
            timing.add("compute (workers)", wall_s);
            timing.add("compute (workers, CPU)", cpu_s);
        }
    }

    /// Keep the vector of worker `w`'s accepted `message`: at its worker
    /// (`aggregate = reduce`), received now into a buffer of the round while
    /// those held fit in [`RECEIVED_BYTES`] (its time of arrival in
    /// `report`), else matched and left waiting at its worker until the decode.
    fn keep_vector(
        &mut self,
        vector: Option<(Message, usize)>,
        message: usize,
        w: usize,
        start: Instant,
        report: &mut RoundReport,
    ) -> Result<Held, RoundError> {
        Ok(match vector {
            None => Held::AtWorker(message),
            Some((vector, len))
                if (self.received_in_use + 1) * len * size_of::<f64>() <= RECEIVED_BYTES =>
            {
                if self.received.len() == self.received_in_use {
                    self.received.push(Vec::new());
                }
                self.receive_counted(vector, w as i32 + 1, len, Some(self.received_in_use))?;
                report.received_s[w] = start.elapsed().as_secs_f64();
                self.received_in_use += 1;
                Held::Received(self.received_in_use - 1)
            }
            Some((vector, len)) => Held::Matched(vector, len),
        })
    }
}
