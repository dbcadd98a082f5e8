//! Sending an iteration's tasks: each worker its task and the model (one
//! buffer of a pool shared by the sends, or θ packed to the worker's
//! entries), but not to a worker that has not taken its last tasks.

use std::rc::Rc;
use std::time::Instant;

use super::incoming::Incoming;
use super::{MAX_MODELS_IN_FLIGHT, MpiRound};
use crate::engine::{RoundError, RoundReport, RoundStatus, RoundTask};
use crate::error::Iteration;
use crate::runtime::comm::instant_after;
use crate::runtime::interrupt;
use crate::runtime::packing;
use crate::runtime::protocol::{self, Pace, Task};

/// How long a worker goes without taking its tasks before the master names
/// it on stderr (seconds).
const SILENT_WARNING_S: f64 = 1.0;

impl MpiRound<'_> {
    /// Send iteration `task.iteration`'s tasks; `Some` status when a signal
    /// stops the round before they are sent.
    pub(super) fn send_tasks(
        &mut self,
        task: &RoundTask<'_>,
        report: &mut RoundReport,
    ) -> Result<Option<RoundStatus>, RoundError> {
        let t = task.iteration;
        let eval_point = task
            .eval_point
            .expect("a training round has an evaluation point");
        self.comm.reap();
        if let Some(status) = self.take_acknowledgements(task, report)? {
            return Ok(Some(status));
        }
        // The last round's model buffer goes back to the pool first.
        self.round_model = None;
        let model = match self.model_buffer(t, eval_point)? {
            Ok(model) => model,
            Err(status) => return Ok(Some(status)),
        };
        self.sent.fill(false);
        for w in 0..task.plan.tasks.len() {
            if self.untaken[w].len() as u64 >= protocol::MAX_UNTAKEN_TASKS {
                self.name_if_silent(w, t);
                continue;
            }
            self.send_task(w, task, &model);
        }
        self.round_model = Some((t, model));
        Ok(None)
    }

    /// What arrived since the last wait first, when a worker looks as if it
    /// took too few tasks: the acknowledgements say which workers took
    /// them. After this process was stopped (SIGSTOP, a suspended job) they
    /// wait unread, and a worker would look as if it took none and not be
    /// sent this task. `Some` status: a worker's signal.
    fn take_acknowledgements(
        &mut self,
        task: &RoundTask<'_>,
        report: &mut RoundReport,
    ) -> Result<Option<RoundStatus>, RoundError> {
        if !self
            .untaken
            .iter()
            .any(|q| q.len() as u64 >= protocol::MAX_UNTAKEN_TASKS)
        {
            return Ok(None);
        }
        while let Some(m) = self.comm.try_receive() {
            match self.incoming(m, task, report)? {
                Incoming::Handled => {}
                Incoming::Signal(signal) => {
                    return Ok(Some(RoundStatus::Interrupted { signal }));
                }
                Incoming::Result { worker, vector, .. } => {
                    if let Some((vector, len)) = vector {
                        self.receive_counted(vector, worker as i32 + 1, len, None)?;
                    }
                    return Err(format!(
                        "worker {} sent a result of {} before its task was sent",
                        worker + 1,
                        Iteration(task.iteration)
                    )
                    .into());
                }
            }
        }
        Ok(None)
    }

    /// Worker `w` does not take its tasks: stopped, hung or gone. Said
    /// once, until it takes one again; a worker that lags a few iterations
    /// (ranks sharing cores) is not named.
    fn name_if_silent(&mut self, w: usize, t: u64) {
        let (since, named) = self.silent[w].get_or_insert_with(|| (Instant::now(), false));
        if !*named && since.elapsed().as_secs_f64() >= SILENT_WARNING_S {
            *named = true;
            log::warn!(
                "{}: worker {} has not taken its last {} tasks (stopped, hung or gone): \
                 it is sent none until it does; the iterations go on without it while \
                 the scheme decodes, and the training loss of a partition only it \
                 computes is not recorded",
                Iteration(t),
                w + 1,
                self.untaken[w].len()
            );
        }
    }

    /// A model buffer for iteration `t`. When all [`MAX_MODELS_IN_FLIGHT`]
    /// are held by sends that workers have not taken, wait for one to
    /// complete, at most `train.result_timeout_s`, then fail naming them.
    fn model_buffer(
        &mut self,
        t: u64,
        eval_point: &[f64],
    ) -> Result<Result<Rc<Vec<f64>>, RoundStatus>, RoundError> {
        if let Some(buffer) = self.models.fill(eval_point) {
            return Ok(Ok(buffer));
        }
        let start = Instant::now();
        let give_up = instant_after(start, self.result_timeout_s);
        log::warn!(
            "{}: all {MAX_MODELS_IN_FLIGHT} model buffers are held by sends to workers {:?}; waiting",
            Iteration(t),
            self.comm.pending_ranks()
        );
        loop {
            self.comm.reap();
            if let Some(buffer) = self.models.fill(eval_point) {
                return Ok(Ok(buffer));
            }
            if let Some(signal) = interrupt::received() {
                return Ok(Err(RoundStatus::Interrupted { signal }));
            }
            if give_up.is_some_and(|g| Instant::now() >= g) {
                let ranks: Vec<String> = self
                    .comm
                    .pending_ranks()
                    .iter()
                    .map(|r| r.to_string())
                    .collect();
                return Err(format!(
                    "{}: the {MAX_MODELS_IN_FLIGHT} models in flight are held by sends that workers {} \
                     have not taken for {} s (train.result_timeout_s): they are stopped or hung",
                    Iteration(t),
                    ranks.join(", "),
                    self.result_timeout_s
                )
                .into());
            }
            self.backoff.pause(give_up);
        }
    }

    /// Send worker `w` its task of this round and the model.
    pub(super) fn send_task(&mut self, w: usize, task: &RoundTask<'_>, model: &Rc<Vec<f64>>) {
        let t = task.iteration;
        if let Some((_, true)) = self.silent[w].take() {
            log::warn!("{}: worker {} takes its tasks again", Iteration(t), w + 1);
        }
        self.untaken[w].push_back(t);
        self.sent[w] = true;
        let pace = Pace {
            emulate: self.emulate,
            unit_time: task.sample.unit_time[w],
            extra_time: task.sample.extra_time[w],
            time_unit_ms: self.time_unit_ms,
            straggling: task.sample.straggling[w],
        };
        let mut header = self.comm.buffer(64);
        Task::encode_into(t, &pace, &task.plan.tasks[w], &mut header);
        let rank = w as i32 + 1;
        self.comm
            .send_owned(rank, protocol::iteration_tag(t), header);
        match self.entries(w) {
            // A packed worker reads θ at its entries alone.
            Some(entries) => {
                let mut packed = self.comm.buffer(entries.len());
                packing::pack_model(model, entries, &mut packed);
                self.comm.send_owned(rank, protocol::TAG_MODEL, packed);
            }
            None => self.comm.send_shared(rank, protocol::TAG_MODEL, model),
        }
    }
}
