//! What the master does with a message that comes while it waits for an
//! iteration's results: acknowledgements, a worker's error or signal,
//! results of older iterations (dropped) and results of this one (their
//! partition losses noted, their vectors matched).

use std::time::Instant;

use mpi::point_to_point::Message;

use super::MpiRound;
use crate::engine::{RoundError, RoundReport, RoundTask};
use crate::error::Iteration;
use crate::runtime::comm::{Received, instant_after};
use crate::runtime::protocol::{self, ResultHeader};

/// What a message that came during an iteration was.
pub(super) enum Incoming {
    /// Nothing for the caller: an acknowledgement, a stale result dropped.
    Handled,
    /// A worker caught a signal: the job is being stopped.
    Signal(i32),
    /// A result of this iteration: its header and matched vector (none
    /// with `aggregate = reduce`: the worker keeps it).
    Result {
        header: ResultHeader,
        vector: Option<(Message, usize)>,
        worker: usize,
    },
}

impl MpiRound<'_> {
    /// Handle a message that came while the master waits for the results of
    /// `task`: acknowledgements, errors, signals, results of older iterations
    /// (dropped, counted in `report`) and results of this iteration, whose
    /// partition losses are noted and whose vector is matched, not received.
    pub(super) fn incoming(
        &mut self,
        m: Received,
        task: &RoundTask<'_>,
        report: &mut RoundReport,
    ) -> Result<Incoming, RoundError> {
        self.round_bytes += (m.data.len() * size_of::<f64>()) as u64;
        match m.tag {
            protocol::TAG_ACK => {
                self.take_ack(&m, task);
                Ok(Incoming::Handled)
            }
            // A worker caught SIGTERM or SIGINT: the job is being stopped.
            protocol::TAG_SIGNAL => Ok(Incoming::Signal(m.data.first().map_or(15, |&s| s as i32))),
            protocol::TAG_ERROR => Err(protocol::WorkerError::decode(&m.data).at_rank(m.rank)),
            tag if !protocol::is_iteration_tag(tag) => Err(format!(
                "worker {} sent tag {tag} during {}",
                m.rank,
                Iteration(task.iteration)
            )
            .into()),
            _ => self.result(m, task, report),
        }
    }

    /// Worker `m.rank` took its tasks up to the iteration `m` names.
    fn take_ack(&mut self, m: &Received, task: &RoundTask<'_>) {
        let taken = m.data.first().copied().unwrap_or(f64::NAN);
        let w = (m.rank - 1) as usize;
        let queue = &mut self.untaken[w];
        while queue.front().is_some_and(|&i| i as f64 <= taken) {
            queue.pop_front();
        }
        // Skipped at this round's send for lagging, it caught up: it
        // gets this round's task now (an exact scheme may need it).
        if !self.sent[w]
            && (self.untaken[w].len() as u64) < protocol::MAX_UNTAKEN_TASKS
            && let Some((iteration, model)) = &self.round_model
            && *iteration == task.iteration
        {
            let model = model.clone();
            self.send_task(w, task, &model);
        }
    }

    /// A result header `m` and its vector (matched, not received): dropped
    /// when it is of an older iteration, an error when it is not what
    /// `task` asked for or its vector has the wrong length.
    fn result(
        &mut self,
        m: Received,
        task: &RoundTask<'_>,
        report: &mut RoundReport,
    ) -> Result<Incoming, RoundError> {
        let t = task.iteration;
        let header = ResultHeader::decode(&m.data)?;
        let vector = self.match_vector(m.rank, t)?;
        let w = (m.rank - 1) as usize;
        let expected_len = self.vector_len(w);
        let bad_len = vector
            .as_ref()
            .map(|&(_, len)| len)
            .filter(|&len| len != expected_len);
        if header.iteration < t || bad_len.is_some() {
            if let Some((vector, len)) = vector {
                self.receive_counted(vector, m.rank, len, None)?;
            }
            let (wall_s, cpu_s) = self.new_compute_s(w, &header);
            self.unused_compute_s.0 += wall_s;
            self.unused_compute_s.1 += cpu_s;
            if let Some(len) = bad_len {
                return Err(format!(
                    "worker {} sent a vector of {len} values, expected {expected_len}",
                    m.rank
                )
                .into());
            }
            report.stale_dropped += 1;
            return Ok(Incoming::Handled);
        }
        let work = &task.plan.tasks[w];
        let expected = work.messages.get(header.message).map(|msg| msg.codeword.id);
        if header.iteration > t
            || expected != Some(header.codeword)
            || header.computations > work.compute.len()
        {
            if let Some((vector, len)) = vector {
                self.receive_counted(vector, m.rank, len, None)?;
            }
            return Err(format!(
                "worker {} sent a result that {} did not ask for: {header:?}",
                m.rank,
                Iteration(t)
            )
            .into());
        }
        for (&p, &loss) in work.compute.iter().zip(&header.losses) {
            self.partition_loss[p] = loss;
        }
        for (&p, &correct) in work.compute.iter().zip(&header.correct) {
            self.partition_correct[p] = correct;
        }
        Ok(Incoming::Result {
            header,
            vector,
            worker: w,
        })
    }

    /// The vector of worker `rank`'s result header of iteration `t`'s round, matched: gathering, it
    /// follows at once (the worker posts both sends together); reducing,
    /// the worker keeps it (`aggregate = reduce`) and there is none.
    fn match_vector(&mut self, rank: i32, t: u64) -> Result<Option<(Message, usize)>, RoundError> {
        if self.aggregation.reduces() {
            return Ok(None);
        }
        let vector_by = instant_after(Instant::now(), self.result_timeout_s);
        match self
            .comm
            .probe_from(rank, protocol::TAG_VECTOR, &mut self.backoff, vector_by)
        {
            Some(vector) => Ok(Some(vector)),
            None => Err(format!(
                "{}: worker {rank} sent a result header without its vector",
                Iteration(t)
            )
            .into()),
        }
    }
}
