//! The learning side of a training run: the optimiser step on the decoded
//! gradient and the evaluation of the losses (and, for classifiers, the
//! test accuracy).

use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Instant;

use super::EngineError;
use super::timing::Timing;
use crate::config::{Config, EvaluationTiming};
use crate::error::InputError;
use crate::learn::{DataPlan, Evaluation, Model, ModelError, Optimizer, Partition, StepKey};
use crate::spec::Batch;

/// The optimiser, the model, the test set and what the update needs to know of the data.
pub struct Learner {
    opt: Optimizer,
    model: Arc<Model>,
    test: Arc<Partition>,
    /// θ at the start (0, or a network's seeded initialisation).
    initial: Vec<f64>,
    /// Samples of each partition that one step's gradient covers (its
    /// mini-batch, or every sample).
    samples: Vec<usize>,
    eval_every: u64,
    iterations: u64,
    train_loss: f64,
    test_loss: f64,
    test_accuracy: f64,
    /// The losses above are at the final θ ([`Learner::evaluate_final`]).
    final_evaluated: bool,
    /// The iterations the training and the test losses above are of
    /// (`u64::MAX`: the final θ's): an evaluation beside an older iteration
    /// does not replace them.
    train_at: Option<u64>,
    test_at: Option<u64>,
    /// Seconds the last step's update took (the optimiser's step alone).
    update_s: f64,
    /// See [`Learner::last_batch_loss`].
    batch_loss: f64,
    /// See [`Learner::last_evaluate_s`].
    evaluate_s: f64,
    /// The learner's own copy of the training data, for the losses the
    /// workers' results did not carry ([`Learner::complete_loss`]), shared
    /// with an evaluation beside the next iteration while it runs.
    own: Arc<Mutex<OwnCopy>>,
    /// The thread that evaluates losses beside the iterations that follow
    /// ([`Learner::evaluate_beside`]), started at its first use.
    beside: Option<Beside>,
    /// The iteration [`Learner::step`] leaves to it.
    beside_iteration: Option<u64>,
    /// `train.evaluation = "deferred"`: evaluations are held in `pending`
    /// until a wait for one of them, which then evaluates every one held
    /// and waits for all (`draining`).
    deferred: bool,
    pending: VecDeque<BesideJob>,
    draining: bool,
}

/// The evaluation thread of a learner: evaluations are sent to it in
/// iteration order and come back in that order; `in_flight` sent and not
/// yet taken back. Dropping it ends the thread (its queue closes).
struct Beside {
    jobs: Sender<BesideJob>,
    results: Receiver<BesideResult>,
    in_flight: usize,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Beside {
    fn drop(&mut self) {
        // Close the queue first: the thread ends after its current job.
        let (closed, _) = std::sync::mpsc::channel();
        drop(std::mem::replace(&mut self.jobs, closed));
        // A panic of the thread was printed by the panic hook, and
        // take_beside reports it for any evaluation not yet taken.
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One iteration's evaluation: at `point` (its evaluation point), the test
/// set's loss and accuracy and, with `train`, the loss sum over every
/// partition (`known`: the losses the results carried).
struct BesideJob {
    iteration: u64,
    point: Vec<f64>,
    known: Option<Vec<f64>>,
    train: bool,
}

/// What the thread evaluated for a [`BesideJob`] (its point moved back),
/// and the seconds each part took.
struct BesideResult {
    iteration: u64,
    point: Vec<f64>,
    test: Result<Evaluation, ModelError>,
    train_sum: Option<Result<f64, EngineError>>,
    test_s: f64,
    train_s: f64,
}

/// The losses of an evaluation beside the next iteration, for the record of
/// the iteration it evaluated ([`Learner::take_beside`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BesideLosses {
    pub iteration: u64,
    /// The training loss over all the data (NaN when not asked for).
    pub train: f64,
    pub test: f64,
    pub test_accuracy: f64,
    /// Seconds the master waited for the thread to finish it.
    pub wait_s: f64,
}

/// The training partitions as the master's learner sees them: the data plan
/// they come from, each partition loaded the first time its loss is needed
/// and kept, and the batches' size and seed (those of the workers).
struct OwnCopy {
    data: DataPlan,
    loaded: Vec<Option<Partition>>,
    batch: Batch,
    seed: u64,
    /// One partition's gradient and loss sums (d + 1).
    scratch: Vec<f64>,
}

impl OwnCopy {
    /// The loss sum over every partition at `theta`, each partition's
    /// mini-batch of iteration `iteration`: the entries of `known` that are
    /// not NaN, the others computed here (see [`Learner::complete_loss`]).
    fn loss_sum(
        &mut self,
        model: &Model,
        iteration: u64,
        theta: &[f64],
        known: Option<&[f64]>,
    ) -> Result<f64, EngineError> {
        let mut sum = 0.0;
        for p in 0..self.loaded.len() {
            if let Some(&loss) = known.and_then(|k| k.get(p))
                && !loss.is_nan()
            {
                sum += loss;
                continue;
            }
            if self.loaded[p].is_none() {
                let part = self.data.load(&[p]).map_err(|e| EngineError::Model {
                    iteration,
                    what: format!("loading partition {} for the training loss: {e}", p + 1),
                })?;
                self.loaded[p] = part.into_iter().next();
            }
            let part = self.loaded[p].as_ref().expect("loaded above");
            self.scratch.resize(theta.len() + 1, 0.0);
            let key = StepKey {
                seed: self.seed,
                partition: p,
                iteration,
            };
            model
                .partition_gradient(part, self.batch, key, theta, &mut self.scratch)
                .map_err(|e| EngineError::Model {
                    iteration,
                    what: e.to_string(),
                })?;
            sum += self.scratch[theta.len()];
        }
        Ok(sum)
    }
}

/// The losses one step evaluated (NaN: not evaluated this iteration).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepLosses {
    pub train: f64,
    pub test: f64,
    /// Share of the test samples classified correctly (classifiers; NaN otherwise).
    pub test_accuracy: f64,
}

impl Learner {
    /// The learner of `config` over the partitions of `data`, starting at
    /// the model's initial θ (0 for linear models).
    pub fn new(config: &Config, data: &DataPlan, test: Partition) -> Result<Self, InputError> {
        let model = Arc::new(Model::new(config, data.input())?);
        model
            .check_labels(&test)
            .map_err(|e| InputError::new("data: the test samples", e))?;
        Ok(Self::with_model(config, data, test, model))
    }

    /// As [`Learner::new`] with a model built already (shared with an in-process round).
    pub fn with_model(
        config: &Config,
        data: &DataPlan,
        test: Partition,
        model: Arc<Model>,
    ) -> Self {
        let initial = model.initial_theta(config.seed);
        let mut opt = Optimizer::new(&config.train, config.model.l2, model.dim());
        opt.start_at(&initial);
        let batch = data.spec().batch;
        Self {
            opt,
            model,
            test: Arc::new(test),
            initial,
            samples: (0..data.partitions())
                .map(|p| batch.rows(data.rows(p).len()))
                .collect(),
            eval_every: config.train.eval_every as u64,
            iterations: config.train.iterations as u64,
            train_loss: f64::NAN,
            test_loss: f64::NAN,
            test_accuracy: f64::NAN,
            final_evaluated: false,
            update_s: f64::NAN,
            batch_loss: f64::NAN,
            evaluate_s: 0.0,
            own: Arc::new(Mutex::new(OwnCopy {
                data: data.clone(),
                loaded: (0..data.partitions()).map(|_| None).collect(),
                batch,
                seed: config.seed,
                scratch: Vec::new(),
            })),
            beside: None,
            beside_iteration: None,
            deferred: config.train.evaluation == EvaluationTiming::Deferred,
            pending: VecDeque::new(),
            draining: false,
            train_at: None,
            test_at: None,
        }
    }

    /// The model whose gradients the learner steps with.
    pub fn model(&self) -> &Arc<Model> {
        &self.model
    }

    /// Back to the start: θ at its initial value, no iteration taken.
    pub fn reset(&mut self) {
        self.opt.start_at(&self.initial);
        self.train_loss = f64::NAN;
        self.test_loss = f64::NAN;
        self.test_accuracy = f64::NAN;
        self.train_at = None;
        self.test_at = None;
        // Evaluations of the run before are not this run's.
        self.beside = None;
        self.beside_iteration = None;
        self.pending.clear();
        self.draining = false;
        self.final_evaluated = false;
    }

    /// d: the number of parameters.
    pub fn dim(&self) -> usize {
        self.opt.theta().len()
    }

    /// Continue from a snapshot after `iteration` completed iterations.
    pub fn restore(
        &mut self,
        iteration: u64,
        theta: &[f64],
        previous: &[f64],
    ) -> Result<(), EngineError> {
        let dim = self.dim();
        if theta.len() != dim || previous.len() != dim {
            return Err(EngineError::Resume(format!(
                "the snapshot has {} parameters, the model {dim}",
                theta.len()
            )));
        }
        self.opt.restore(iteration, theta, previous);
        Ok(())
    }

    /// The current iterate.
    pub fn theta(&self) -> &[f64] {
        self.opt.theta()
    }

    /// The iterate before it (Nesterov's momentum).
    pub fn previous(&self) -> &[f64] {
        self.opt.previous()
    }

    /// Where the workers evaluate the gradient this iteration.
    pub fn eval_point(&self) -> &[f64] {
        self.opt.eval_point()
    }

    /// The training and test losses of the last evaluation: after
    /// [`Learner::evaluate_final`], those at the final θ; else the last
    /// iteration's (the training loss over all the training data, see
    /// [`Learner::step`]; NaN when a partial scheme could not know it there).
    /// Seconds the last [`Learner::step`]'s update of θ took (the
    /// optimiser's step, not the evaluation before it; NaN before the first).
    pub fn last_update_s(&self) -> f64 {
        self.update_s
    }

    /// The last [`Learner::step`]'s objective over the samples its update
    /// used: the decoded loss sum over the recovered partitions' samples
    /// (each partition's mini-batch with `train.batch_size`) at the
    /// evaluation point. Known at every step of every scheme (an exact
    /// scheme's equals the training loss); NaN before the first.
    pub fn last_batch_loss(&self) -> f64 {
        self.batch_loss
    }

    /// Seconds the last [`Learner::step`] spent evaluating the test loss
    /// and accuracy (0 when it did not evaluate them).
    pub fn last_evaluate_s(&self) -> f64 {
        self.evaluate_s
    }

    pub fn last_losses(&self) -> StepLosses {
        StepLosses {
            train: self.train_loss,
            test: self.test_loss,
            test_accuracy: self.test_accuracy,
        }
    }

    /// The losses at the current θ (the model a run ends with), after the
    /// last update: the training objective from `loss_sum`, the loss sum over
    /// every partition at θ (from a final round; NaN when it is not known),
    /// and the test loss and accuracy evaluated here. They become
    /// [`Learner::last_losses`].
    pub fn evaluate_final(
        &mut self,
        loss_sum: Option<f64>,
        timing: &mut Timing,
    ) -> Result<StepLosses, EngineError> {
        let total: usize = self.samples.iter().sum();
        let theta = self.opt.theta();
        let evaluation = timing
            .time("evaluate", || self.model.evaluate(&self.test, theta))
            .map_err(|e| EngineError::Model {
                iteration: self.opt.iteration(),
                what: e.to_string(),
            })?;
        let (test, test_accuracy) = self.test_losses(theta, &evaluation);
        let losses = StepLosses {
            train: loss_sum.map_or(f64::NAN, |sum| self.opt.objective_at(theta, sum, total)),
            test,
            test_accuracy,
        };
        self.train_loss = losses.train;
        self.test_loss = losses.test;
        self.test_accuracy = losses.test_accuracy;
        self.final_evaluated = true;
        self.train_at = Some(u64::MAX);
        self.test_at = Some(u64::MAX);
        Ok(losses)
    }

    /// The loss sum over every partition at this iteration's evaluation
    /// point (`at_final`: at θ, the final model's round), each partition's
    /// mini-batch of iteration `iteration` with `train.batch_size`: the
    /// entries of `known` that are not NaN (the losses the workers' results
    /// carried), the others computed here on the learner's own copy of the
    /// partition (loaded the first time it is needed and kept), as a worker
    /// computes it: the same batch and dropout ([`Model::partition_gradient`]).
    /// Summed in partition order. Nothing waits for a worker, so measuring
    /// the loss of a partial scheme does not change which results the run
    /// uses (issue 39); the master holds the partitions it evaluated.
    pub fn complete_loss(
        &mut self,
        iteration: u64,
        at_final: bool,
        known: Option<&[f64]>,
    ) -> Result<f64, EngineError> {
        let theta = if at_final {
            self.opt.theta()
        } else {
            self.opt.eval_point()
        };
        let mut own = self.own.lock().unwrap_or_else(PoisonError::into_inner);
        own.loss_sum(&self.model, iteration, theta, known)
    }

    /// Evaluate iteration `iteration`'s losses at its evaluation point (a
    /// copy: call it before [`Learner::step`]) on the learner's evaluation
    /// thread, beside the iterations that follow (issue 39: measuring is
    /// not training): the master sends the next task and waits for its
    /// results as it would without an evaluation, so the workers see the
    /// same timeline. The test set's loss and accuracy, and with `train` the
    /// training loss over every partition as [`Learner::complete_loss`]
    /// computes it (`known`: the losses the results carried).
    /// [`Learner::step`] of `iteration` then leaves them out;
    /// [`Learner::take_beside`] collects them, in the order they were asked
    /// for. The thread runs at the lowest scheduling priority (nice 19):
    /// where the machine has no core to spare, the training runs first.
    /// With `train.evaluation = "deferred"` the evaluation is held until a
    /// [`Learner::take_beside`] must wait, and is then done with every
    /// other held one while the master waits for all of them.
    pub fn evaluate_beside(
        &mut self,
        iteration: u64,
        known: Option<&[f64]>,
        train: bool,
    ) -> Result<(), EngineError> {
        if self.beside.is_none() {
            self.beside = Some(self.start_beside(iteration)?);
        }
        let beside = self.beside.as_mut().expect("started above");
        let job = BesideJob {
            iteration,
            point: self.opt.eval_point().to_vec(),
            known: known.map(<[f64]>::to_vec),
            train,
        };
        if self.deferred {
            self.pending.push_back(job);
        } else {
            send_job(beside, job)?;
        }
        beside.in_flight += 1;
        self.beside_iteration = Some(iteration);
        Ok(())
    }

    fn start_beside(&self, iteration: u64) -> Result<Beside, EngineError> {
        let (jobs, queue) = std::sync::mpsc::channel::<BesideJob>();
        let (done, results) = std::sync::mpsc::channel();
        let model = Arc::clone(&self.model);
        let test = Arc::clone(&self.test);
        let own = Arc::clone(&self.own);
        let thread = std::thread::Builder::new()
            .name("gradcode-evaluate".into())
            .spawn(move || {
                // This thread only (Linux: nice values are per thread);
                // nothing to do where it is refused.
                // SAFETY: setpriority reads no memory of ours.
                unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) };
                for job in queue {
                    let start = Instant::now();
                    let test = model.evaluate(&test, &job.point);
                    let test_s = start.elapsed().as_secs_f64();
                    let start = Instant::now();
                    let train_sum = job.train.then(|| {
                        let mut own = own.lock().unwrap_or_else(PoisonError::into_inner);
                        own.loss_sum(&model, job.iteration, &job.point, job.known.as_deref())
                    });
                    let result = BesideResult {
                        iteration: job.iteration,
                        point: job.point,
                        test,
                        train_sum,
                        test_s,
                        train_s: start.elapsed().as_secs_f64(),
                    };
                    if done.send(result).is_err() {
                        return;
                    }
                }
            })
            .map_err(|e| EngineError::Model {
                iteration,
                what: format!("starting the evaluation thread: {e}"),
            })?;
        Ok(Beside {
            jobs,
            results,
            in_flight: 0,
            thread: Some(thread),
        })
    }

    /// Evaluations asked of [`Learner::evaluate_beside`] and not yet taken.
    pub fn beside_in_flight(&self) -> usize {
        self.beside.as_ref().map_or(0, |b| b.in_flight)
    }

    /// The oldest evaluation beside not yet taken, once it is done (`wait`:
    /// waiting for it; else `None` while it runs; `None` when there is none),
    /// taken as the last evaluation's losses ([`Learner::last_losses`]). Its
    /// times are the timing events "evaluate (beside)" and "evaluate train
    /// loss (beside)" (beside the master's work, not in its wall time), a
    /// wait for it "evaluate (wait for beside)".
    pub fn take_beside(
        &mut self,
        wait: bool,
        timing: &mut Timing,
    ) -> Result<Option<BesideLosses>, EngineError> {
        let Some(beside) = self.beside.as_mut().filter(|b| b.in_flight > 0) else {
            return Ok(None);
        };
        // Deferred: the first wait releases every held evaluation, and the
        // waits go on until all of them are taken.
        if self.deferred && (wait || self.draining) {
            self.draining = true;
            for job in self.pending.drain(..) {
                send_job(beside, job)?;
            }
        }
        let wait = wait || self.draining;
        let start = Instant::now();
        let received = if wait {
            beside
                .results
                .recv()
                .map_err(|_| TryRecvError::Disconnected)
        } else {
            beside.results.try_recv()
        };
        let result = match received {
            Ok(result) => result,
            Err(TryRecvError::Empty) => return Ok(None),
            Err(TryRecvError::Disconnected) => {
                return Err(EngineError::Model {
                    iteration: self.opt.iteration(),
                    what: "the evaluation thread failed (it panicked)".into(),
                });
            }
        };
        beside.in_flight -= 1;
        if beside.in_flight == 0 {
            self.draining = false;
        }
        let wait_s = if wait {
            let wait_s = start.elapsed().as_secs_f64();
            timing.add("evaluate (wait for beside)", wait_s);
            wait_s
        } else {
            0.0
        };
        timing.add("evaluate (beside)", result.test_s);
        let iteration = result.iteration;
        let evaluation = result.test.map_err(|e| EngineError::Model {
            iteration,
            what: e.to_string(),
        })?;
        let point = &result.point;
        let (test, test_accuracy) = self.test_losses(point, &evaluation);
        let mut losses = BesideLosses {
            iteration,
            train: f64::NAN,
            test,
            test_accuracy,
            wait_s,
        };
        let newest = |at: Option<u64>| at.is_none_or(|at| iteration >= at);
        if let Some(sum) = result.train_sum {
            timing.add("evaluate train loss (beside)", result.train_s);
            let total: usize = self.samples.iter().sum();
            losses.train = self.opt.objective_at(point, sum?, total);
            if newest(self.train_at) {
                self.train_loss = losses.train;
                self.train_at = Some(iteration);
            }
        }
        if newest(self.test_at) {
            self.test_loss = losses.test;
            self.test_accuracy = losses.test_accuracy;
            self.test_at = Some(iteration);
        }
        Ok(Some(losses))
    }

    /// The test objective at `point` and the test accuracy (NaN without
    /// one) of the test set's `evaluation` there.
    fn test_losses(&self, point: &[f64], evaluation: &Evaluation) -> (f64, f64) {
        let n = self.test.len();
        (
            self.opt.objective_at(point, evaluation.loss_sum, n),
            evaluation.correct.map_or(f64::NAN, |c| c as f64 / n as f64),
        )
    }

    /// Whether [`Learner::last_losses`] are at the final θ.
    pub fn final_evaluated(&self) -> bool {
        self.final_evaluated
    }

    /// Whether iteration `iteration` evaluates the losses: every
    /// `train.eval_every` iterations from the first, and the last.
    pub fn evaluates(&self, iteration: u64) -> bool {
        iteration % self.eval_every == 0 || iteration + 1 == self.iterations
    }

    /// The samples one step's gradient covers over the partitions `recovered`
    /// (each one's mini-batch, or every sample).
    pub fn samples_of(&self, recovered: &[usize]) -> usize {
        recovered.iter().map(|&p| self.samples[p]).sum()
    }

    /// Partitions of the training data.
    pub fn partitions(&self) -> usize {
        self.samples.len()
    }

    /// Iteration `iteration`'s update with the decoded sum over the
    /// `recovered` partitions: `combined` holds the gradient sum (d entries)
    /// and the loss sum (one more). The update uses the mean over the
    /// recovered samples (each partition's mini-batch with
    /// `train.batch_size`). The training loss is the objective over all the
    /// training data at the evaluation point (over every partition's
    /// mini-batch of the step with `train.batch_size`): from `full_loss`, the loss sum
    /// over every partition when known, else from the decoded loss sum when
    /// `recovered` is every partition and the decode was exact (not
    /// `approximate`, see `coding::Decoding::approximate`), else not
    /// evaluated (NaN); never the loss of the recovered part alone. Errors
    /// when anything is not finite (divergence).
    pub fn step(
        &mut self,
        iteration: u64,
        combined: &[f64],
        recovered: &[usize],
        approximate: bool,
        full_loss: Option<f64>,
        timing: &mut Timing,
    ) -> Result<StepLosses, EngineError> {
        let dim = self.dim();
        if !crate::learn::kernel::all_finite(combined) {
            return Err(EngineError::Diverged {
                iteration,
                what: "the decoded gradient is not finite (the model diverged)".into(),
            });
        }
        let samples = self.samples_of(recovered);
        self.batch_loss = self.opt.objective(combined[dim], samples);
        // An approximate decode's loss sum is approximate too: not the
        // training loss, which is then evaluated as for a partial decode.
        let everything = !approximate && recovered.len() == self.samples.len();
        let loss_sum = full_loss.or(everything.then_some(combined[dim]));
        let total: usize = self.samples.iter().sum();
        let mut losses = StepLosses {
            train: loss_sum.map_or(f64::NAN, |sum| self.opt.objective(sum, total)),
            test: f64::NAN,
            test_accuracy: f64::NAN,
        };
        // At an evaluation (the last iteration is one) the value recorded
        // there, NaN when it could not be known: a final loss is never an
        // older iteration's.
        if loss_sum.is_some() || self.evaluates(iteration) {
            self.train_loss = losses.train;
            self.train_at = Some(iteration);
        }
        self.evaluate_s = 0.0;
        if self.evaluates(iteration) && self.beside_iteration != Some(iteration) {
            let evaluate_start = Instant::now();
            let evaluation = timing
                .time("evaluate", || {
                    self.model.evaluate(&self.test, self.opt.eval_point())
                })
                .map_err(|e| EngineError::Model {
                    iteration,
                    what: e.to_string(),
                })?;
            (losses.test, losses.test_accuracy) =
                self.test_losses(self.opt.eval_point(), &evaluation);
            self.test_loss = losses.test;
            self.test_accuracy = losses.test_accuracy;
            self.test_at = Some(iteration);
            self.evaluate_s = evaluate_start.elapsed().as_secs_f64();
        }
        let update_start = Instant::now();
        self.opt.step(&combined[..dim], samples);
        self.update_s = update_start.elapsed().as_secs_f64();
        timing.add("update", self.update_s);
        if !crate::learn::kernel::all_finite(self.opt.theta()) {
            return Err(EngineError::Diverged {
                iteration,
                what: "the model is not finite after the update (it diverged)".into(),
            });
        }
        Ok(losses)
    }
}

/// Send `job` to the evaluation thread of `beside`.
fn send_job(beside: &Beside, job: BesideJob) -> Result<(), EngineError> {
    let iteration = job.iteration;
    beside.jobs.send(job).map_err(|_| EngineError::Model {
        iteration,
        what: "the evaluation thread ended".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Timing;
    use crate::learn::DataPlan;

    /// The final losses are those of the last evaluation, NaN when a
    /// partial decode left the training loss unknown there: never an
    /// older iteration's value (issue 27: 0.693147 of iteration 1 was
    /// reported as the final loss).
    #[test]
    fn the_last_losses_are_the_last_evaluations_never_older() {
        let text = "workers = 2\n[data]\ntrain_samples = 20\ntest_samples = 4\nfeatures = 3\n[train]\niterations = 3\neval_every = 1\n";
        let config = crate::config::parse(text, "test", &[]).unwrap().config;
        let data = DataPlan::new(&config, 2).unwrap();
        let mut learner = Learner::new(&config, &data, data.load_test().unwrap()).unwrap();
        let mut timing = Timing::default();
        let combined = vec![0.1, -0.2, 0.3, 7.0];
        // Iteration 1: both partitions recovered, the loss sum decoded.
        let first = learner
            .step(0, &combined, &[0, 1], false, None, &mut timing)
            .unwrap();
        assert!(first.train.is_finite());
        assert_eq!(learner.last_losses().train, first.train);
        // The last iteration recovers one partition and no full loss came.
        let last = learner
            .step(2, &combined, &[0], false, None, &mut timing)
            .unwrap();
        assert!(last.train.is_nan());
        assert!(
            learner.last_losses().train.is_nan(),
            "not iteration 1's {}",
            first.train
        );
        assert!(
            learner.last_losses().test.is_finite(),
            "the test loss is the master's own"
        );
    }

    /// The full-data loss a partial decode needs comes from the learner's
    /// own copy for the partitions the results did not bring: at θ = 0 a
    /// logistic model's loss is ln 2 per sample, so the sum over every
    /// partition is n ln 2 whichever losses were known; a known entry is
    /// taken as given (never recomputed) and the missing ones computed.
    #[test]
    fn the_learner_completes_the_losses_the_results_did_not_bring() {
        let text = "workers = 3\n[data]\nkind = \"synthetic-logistic\"\ntrain_samples = 30\ntest_samples = 6\nfeatures = 4\n[model]\nloss = \"logistic\"\n";
        let config = crate::config::parse(text, "test", &[]).unwrap().config;
        let data = DataPlan::new(&config, 3).unwrap();
        let mut learner = Learner::new(&config, &data, data.load_test().unwrap()).unwrap();
        assert!(learner.theta().iter().all(|&x| x == 0.0), "starts at 0");
        let n = data.train_samples() as f64;
        let ln2 = std::f64::consts::LN_2;
        let all = learner.complete_loss(0, false, None).unwrap();
        assert!((all - n * ln2).abs() <= 1e-12 * n, "{all} vs {}", n * ln2);
        let first = data.rows(0).len() as f64;
        let known = [first * ln2, f64::NAN, f64::NAN];
        let completed = learner.complete_loss(0, false, Some(&known)).unwrap();
        assert!((completed - all).abs() <= 1e-12 * n);
        // A known value is used as it is: 1000 more in, 1000 more out.
        let shifted = [first * ln2 + 1000.0, f64::NAN, f64::NAN];
        let more = learner.complete_loss(0, false, Some(&shifted)).unwrap();
        assert!((more - all - 1000.0).abs() <= 1e-9);
    }

    /// An evaluation beside gives the losses of the in-line one at the same
    /// point (ln 2 per sample at θ = 0, the test loss the in-line step gives), is left
    /// out of the step that asked for it, and its thread runs at nice 19
    /// (Linux: read from /proc while the thread waits for its next job).
    #[test]
    fn an_evaluation_beside_is_the_in_line_one_on_a_thread_at_the_lowest_priority() {
        let text = "workers = 3\n[data]\nkind = \"synthetic-logistic\"\ntrain_samples = 30\ntest_samples = 6\nfeatures = 4\n[model]\nloss = \"logistic\"\n[train]\neval_every = 1\n";
        let config = crate::config::parse(text, "test", &[]).unwrap().config;
        let data = DataPlan::new(&config, 3).unwrap();
        let mut timing = Timing::new(true);
        let combined = vec![0.1, -0.2, 0.3, 0.05, 7.0];
        let mut in_line = Learner::new(&config, &data, data.load_test().unwrap()).unwrap();
        let want = in_line
            .step(0, &combined, &[0], false, None, &mut timing)
            .unwrap();
        let mut beside = Learner::new(&config, &data, data.load_test().unwrap()).unwrap();
        beside.evaluate_beside(0, None, true).unwrap();
        let step = beside
            .step(0, &combined, &[0], false, None, &mut timing)
            .unwrap();
        assert!(step.test.is_nan(), "left to the thread");
        assert_eq!(beside.beside_in_flight(), 1);
        let got = beside.take_beside(true, &mut timing).unwrap().unwrap();
        assert_eq!(got.iteration, 0);
        assert_eq!(got.test.to_bits(), want.test.to_bits());
        let ln2 = std::f64::consts::LN_2;
        assert!((got.train - ln2).abs() <= 1e-12, "{} per sample", got.train);
        assert_eq!(beside.last_losses().test.to_bits(), want.test.to_bits());
        assert_eq!(beside.beside_in_flight(), 0);
        assert!(beside.take_beside(true, &mut timing).unwrap().is_none());
        // The thread's nice value: field 19 of its stat, after the name.
        let nice = std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|task| {
                let path = task.ok()?.path();
                let comm = std::fs::read_to_string(path.join("comm")).ok()?;
                (comm.trim() == "gradcode-evalua").then(|| {
                    let stat = std::fs::read_to_string(path.join("stat")).unwrap();
                    let after = &stat[stat.rfind(')').unwrap() + 2..];
                    after.split(' ').nth(16).unwrap().parse::<i64>().unwrap()
                })
            })
            .collect::<Vec<_>>();
        assert!(
            nice.contains(&19),
            "the evaluation threads' nice values: {nice:?}"
        );
    }
}
