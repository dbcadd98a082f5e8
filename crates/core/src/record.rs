//! What one iteration leaves behind: the vocabulary of traces, progress
//! and summaries, shared by the simulator and the MPI runtime.

/// What happened in one iteration: one row of every dataset of the schema.
#[derive(Debug, Clone, PartialEq)]
pub struct IterationRecord {
    pub duration_s: f64,
    pub decode_s: f64,
    pub recovered_fraction: f64,
    pub messages_used: u64,
    pub messages_received: u64,
    pub stale_dropped: u64,
    pub train_loss: f64,
    pub test_loss: f64,
    /// Per worker: arrival time of its last message received in time, NaN if none.
    pub finish_s: Vec<f64>,
    /// Per worker: straggling this iteration.
    pub straggling: Vec<bool>,
    /// Per worker: 1-based cluster this iteration, -1 when unclustered.
    pub cluster: Vec<i64>,
    /// Per worker: a message of it has a non-zero decoding weight.
    pub used: Vec<bool>,
    /// Per worker: seconds its real work ran past the emulated due time (0 when on time, and in simulation).
    pub overrun_s: Vec<f64>,
}

impl IterationRecord {
    /// A record for `workers` workers with nothing measured: NaN times and
    /// losses, zero counts, no worker received, straggling or used, unclustered.
    pub fn new(workers: usize) -> Self {
        Self {
            duration_s: f64::NAN,
            decode_s: f64::NAN,
            recovered_fraction: f64::NAN,
            messages_used: 0,
            messages_received: 0,
            stale_dropped: 0,
            train_loss: f64::NAN,
            test_loss: f64::NAN,
            finish_s: vec![f64::NAN; workers],
            straggling: vec![false; workers],
            cluster: vec![-1; workers],
            used: vec![false; workers],
            overrun_s: vec![0.0; workers],
        }
    }

    /// K, from the per-worker fields.
    pub fn workers(&self) -> usize {
        self.finish_s.len()
    }
}

/// One named timing event of a run: how long it took in total, how often it ran.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TimingEvent {
    pub event: String,
    pub total_s: f64,
    pub count: u64,
}

/// An error of a record sink (a trace writer): whatever the sink reports.
pub type SinkError = Box<dyn std::error::Error + Send + Sync>;

/// Something that takes the records of a simulation: scheme index (in
/// `simulate.compare` order), trial, record, in iteration order per
/// (scheme, trial).
pub trait RecordSink {
    fn record(
        &mut self,
        scheme: usize,
        trial: usize,
        record: &IterationRecord,
    ) -> Result<(), SinkError>;
}
