//! What one iteration leaves behind: the vocabulary of traces, progress
//! and summaries, shared by the simulator and the MPI runtime.
//!
//! # The trace schema, written once
//!
//! The per-iteration datasets of a trace are one table, the invocation of
//! `trace_schema!` below: per dataset its group (`iteration`: one value per
//! iteration; `worker`: one per iteration and worker), its name (which is
//! also the field of [`IterationRecord`] and of [`TraceColumns`]), its element
//! type (`f64`, `u64`, `i64`, or `bool` stored as a `u8` flag), the default
//! of [`IterationRecord::new`], its `unit` and `description` attributes, and
//! whether readers require it. From that one table come
//!
//! - [`IterationRecord`] (one row of every dataset) and [`IterationRecord::new`],
//! - [`DATASETS`], the table as data ([`DatasetSpec`]): what the HDF5 writer
//!   creates, with the attributes, and what the reader looks for,
//! - [`TraceColumns`] (the datasets column-major, as read back or summarised),
//!   [`TraceColumns::from_records`], [`TraceColumns::into_records`] and the
//!   per-column length check [`TraceColumns::misshapen`],
//! - [`TraceColumns::visit`], which hands every column, typed, to a
//!   [`ColumnVisitor`]: the HDF5 writer and reader (in the `gradcode` crate)
//!   are such visitors, so they never name a dataset.
//!
//! Adding a dataset is one line of the table (plus whatever fills and uses
//! the new field).

use std::fmt;

/// The group of a per-iteration dataset, which fixes its shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaGroup {
    /// `/iteration/`: one value per iteration, shape `[iterations]`.
    Iteration,
    /// `/worker/`: one value per iteration and worker, shape
    /// `[iterations, workers]` (column k = worker k + 1).
    Worker,
}

impl SchemaGroup {
    /// The HDF5 group name.
    pub const fn name(self) -> &'static str {
        match self {
            SchemaGroup::Iteration => "iteration",
            SchemaGroup::Worker => "worker",
        }
    }

    /// Dimensions of a dataset of this group.
    pub const fn ndim(self) -> usize {
        match self {
            SchemaGroup::Iteration => 1,
            SchemaGroup::Worker => 2,
        }
    }

    /// The shape as the schema documents it: `[iterations]` or `[iterations, workers]`.
    pub const fn shape_name(self) -> &'static str {
        match self {
            SchemaGroup::Iteration => "[iterations]",
            SchemaGroup::Worker => "[iterations, workers]",
        }
    }

    /// The shape of a dataset of this group in a trace of `iterations` rows and `workers` workers.
    pub fn shape(self, iterations: usize, workers: usize) -> Vec<usize> {
        match self {
            SchemaGroup::Iteration => vec![iterations],
            SchemaGroup::Worker => vec![iterations, workers],
        }
    }

    /// Values (row-major) of a dataset of this group with `iterations` rows and `workers` workers.
    pub fn len(self, iterations: usize, workers: usize) -> usize {
        match self {
            SchemaGroup::Iteration => iterations,
            SchemaGroup::Worker => iterations * workers,
        }
    }
}

/// How a dataset's values are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElementType {
    F64,
    U64,
    I64,
    /// A `bool`, stored as a `u8`: 1 = true, 0 = false (read back as `!= 0`).
    Flag,
}

impl ElementType {
    /// The stored type, as the schema documents it: `f64`, `u64`, `i64`, `u8`.
    pub const fn name(self) -> &'static str {
        match self {
            ElementType::F64 => "f64",
            ElementType::U64 => "u64",
            ElementType::I64 => "i64",
            ElementType::Flag => "u8",
        }
    }

    /// Bytes per stored value.
    pub const fn size(self) -> usize {
        match self {
            ElementType::F64 | ElementType::U64 | ElementType::I64 => 8,
            ElementType::Flag => 1,
        }
    }
}

/// Which readers need a dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// Its rows are the iterations of the trace: a file without it is not a trace.
    Rows,
    /// Written by every gradcode: needed for the records of a trace
    /// ([`TraceColumns::into_records`]); a summary reports it as not recorded.
    Always,
    /// Newer than the first traces: records of a trace without it get the
    /// default of [`IterationRecord::new`].
    Optional,
}

/// One per-iteration dataset of the schema: one line of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatasetSpec {
    /// Position in [`DATASETS`].
    pub index: usize,
    pub group: SchemaGroup,
    /// The dataset's name, which is also the field of [`IterationRecord`] and [`TraceColumns`].
    pub name: &'static str,
    /// `group/name`, relative to the trace's group.
    pub path: &'static str,
    pub element: ElementType,
    /// The `unit` attribute: `s`, `1` (fractions and flags), `count`, `id` or `bytes`.
    pub unit: &'static str,
    /// The `description` attribute.
    pub description: &'static str,
    pub presence: Presence,
}

/// A type of values a dataset holds in memory: the four of [`ElementType`].
pub trait Element: Copy + PartialEq + fmt::Debug + 'static {
    const TYPE: ElementType;

    /// Hand a column of this type to the visitor's method for it.
    fn visit<V: ColumnVisitor + ?Sized>(
        visitor: &mut V,
        spec: &'static DatasetSpec,
        column: &mut Option<Vec<Self>>,
    ) -> Result<(), V::Error>;
}

/// Something that handles every column of [`TraceColumns`], typed (an HDF5
/// writer writes them, a reader fills them): see [`TraceColumns::visit`].
/// `None` is a dataset that is absent.
pub trait ColumnVisitor {
    type Error;
    fn f64(
        &mut self,
        spec: &'static DatasetSpec,
        column: &mut Option<Vec<f64>>,
    ) -> Result<(), Self::Error>;
    fn u64(
        &mut self,
        spec: &'static DatasetSpec,
        column: &mut Option<Vec<u64>>,
    ) -> Result<(), Self::Error>;
    fn i64(
        &mut self,
        spec: &'static DatasetSpec,
        column: &mut Option<Vec<i64>>,
    ) -> Result<(), Self::Error>;
    fn flag(
        &mut self,
        spec: &'static DatasetSpec,
        column: &mut Option<Vec<bool>>,
    ) -> Result<(), Self::Error>;
}

macro_rules! element {
    ($ty:ty, $kind:ident, $method:ident) => {
        impl Element for $ty {
            const TYPE: ElementType = ElementType::$kind;
            fn visit<V: ColumnVisitor + ?Sized>(
                visitor: &mut V,
                spec: &'static DatasetSpec,
                column: &mut Option<Vec<Self>>,
            ) -> Result<(), V::Error> {
                visitor.$method(spec, column)
            }
        }
    };
}
element!(f64, F64, f64);
element!(u64, U64, u64);
element!(i64, I64, i64);
element!(bool, Flag, flag);

/// Why columns do not make records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnsError {
    /// A dataset the records need is absent.
    Missing(&'static DatasetSpec),
    /// A dataset does not have one value per iteration (and worker).
    Misshapen(&'static DatasetSpec),
}

impl fmt::Display for ColumnsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ColumnsError::Missing(d) => write!(f, "no dataset {}", d.path),
            ColumnsError::Misshapen(d) => write!(
                f,
                "dataset {} does not have one entry per iteration{}",
                d.path,
                if d.group == SchemaGroup::Worker {
                    " and worker"
                } else {
                    ""
                }
            ),
        }
    }
}

impl std::error::Error for ColumnsError {}

/// Generates the schema's types from its table (see the module doc).
macro_rules! trace_schema {
    // Internal rules first: the table rule's `expr` fragments must not see them.
    (@group iteration) => { SchemaGroup::Iteration };
    (@group worker) => { SchemaGroup::Worker };
    (@presence) => { Presence::Always };
    (@presence rows) => { Presence::Rows };
    (@presence optional) => { Presence::Optional };
    (@record_ty iteration $elem:ty) => { $elem };
    (@record_ty worker $elem:ty) => { Vec<$elem> };
    (@default iteration $workers:ident $default:expr) => { $default };
    (@default worker $workers:ident $default:expr) => { vec![$default; $workers] };
    (@gather iteration $records:ident $field:ident) => {
        $records.iter().map(|r| r.$field).collect()
    };
    (@gather worker $records:ident $field:ident) => {
        $records.iter().flat_map(|r| r.$field.iter().copied()).collect()
    };
    (@take iteration $record:ident $field:ident $column:ident $i:ident $k:ident) => {
        $record.$field = $column[$i]
    };
    (@take worker $record:ident $field:ident $column:ident $i:ident $k:ident) => {
        $record.$field.copy_from_slice(&$column[$i * $k..($i + 1) * $k])
    };
    ($(
        $(#[$doc:meta])*
        $group:ident $field:ident: $elem:ty = $default:expr,
            unit $unit:literal, $description:literal $(, $presence:ident)?;
    )*) => {
        /// Positions in the table.
        #[allow(non_camel_case_types)]
        enum Field { $($field),* }

        /// The per-iteration datasets of a trace, in the order of the schema.
        pub static DATASETS: &[DatasetSpec] = &[$(DatasetSpec {
            index: Field::$field as usize,
            group: trace_schema!(@group $group),
            name: stringify!($field),
            path: concat!(stringify!($group), "/", stringify!($field)),
            element: <$elem as Element>::TYPE,
            unit: $unit,
            description: $description,
            presence: trace_schema!(@presence $($presence)?),
        }),*];

        /// What happened in one iteration: one row of every dataset of the schema.
        #[derive(Debug, Clone, PartialEq)]
        pub struct IterationRecord {
            $( $(#[$doc])* pub $field: trace_schema!(@record_ty $group $elem), )*
        }

        impl IterationRecord {
            /// A record for `workers` workers with nothing measured: NaN times and
            /// losses, zero counts, no worker received, straggling or used, unclustered.
            pub fn new(workers: usize) -> Self {
                Self { $( $field: trace_schema!(@default $group workers $default), )* }
            }
        }

        /// The datasets of one trace, column-major, each `None` when absent.
        /// Per-worker columns are row-major, iterations × workers (entry
        /// `i * workers + k` is worker k + 1 in iteration i + 1).
        #[derive(Debug, Clone, Default, PartialEq)]
        pub struct TraceColumns {
            pub workers: usize,
            /// Rows: the length of the [`Presence::Rows`] dataset.
            pub iterations: usize,
            $( pub $field: Option<Vec<$elem>>, )*
        }

        impl TraceColumns {
            /// Every dataset, from records (all of `workers` workers).
            pub fn from_records(workers: usize, records: &[IterationRecord]) -> Self {
                Self {
                    workers,
                    iterations: records.len(),
                    $( $field: Some(trace_schema!(@gather $group records $field)), )*
                }
            }

            /// No dataset: `iterations` rows of `workers` workers, to be filled.
            pub fn empty(workers: usize, iterations: usize) -> Self {
                Self { workers, iterations, ..Self::default() }
            }

            /// The datasets present whose length is not one value per
            /// iteration (and worker), in table order.
            pub fn misshapen(&self) -> Vec<&'static DatasetSpec> {
                let mut bad = Vec::new();
                $(
                    let spec = &DATASETS[Field::$field as usize];
                    let want = spec.group.len(self.iterations, self.workers);
                    if self.$field.as_ref().is_some_and(|c| c.len() != want) {
                        bad.push(spec);
                    }
                )*
                bad
            }

            /// Hand every column, in table order, to `visitor`.
            pub fn visit<V: ColumnVisitor + ?Sized>(&mut self, visitor: &mut V) -> Result<(), V::Error> {
                $( <$elem as Element>::visit(visitor, &DATASETS[Field::$field as usize], &mut self.$field)?; )*
                Ok(())
            }

            /// The records: every dataset but the [`Presence::Optional`] ones
            /// must be present (those absent take the default of
            /// [`IterationRecord::new`]), every one of the right length.
            pub fn into_records(self) -> Result<Vec<IterationRecord>, ColumnsError> {
                if let Some(spec) = self.misshapen().first() {
                    return Err(ColumnsError::Misshapen(spec));
                }
                $(
                    let spec = &DATASETS[Field::$field as usize];
                    if self.$field.is_none() && spec.presence != Presence::Optional {
                        return Err(ColumnsError::Missing(spec));
                    }
                )*
                let k = self.workers;
                Ok((0..self.iterations)
                    .map(|i| {
                        let mut record = IterationRecord::new(k);
                        $(
                            if let Some(column) = &self.$field {
                                trace_schema!(@take $group record $field column i k);
                            }
                        )*
                        record
                    })
                    .collect())
            }
        }
    };
}

trace_schema! {
    iteration duration_s: f64 = f64::NAN,
        unit "s", "time of the iteration: train, from the send of θ to the updated θ (the wait for a decodable set, the decode and the update; not the evaluation of the losses, which elapsed_s counts); simulation, the model time until the master holds a decodable set x straggler.time_unit_ms", rows;
    iteration decodable_s: f64 = f64::NAN,
        unit "s", "time from the send of θ until the master held a decodable set of messages (what simulate's model time predicts); simulation, equal to duration_s; NaN in a trace written before this dataset",
        optional;
    iteration decode_s: f64 = f64::NAN,
        unit "s", "time spent decoding; NaN when not measured (simulation)";
    iteration recovered_fraction: f64 = f64::NAN,
        unit "1", "share of the partitions whose gradient sum was recovered (1 for an approximate code's decode, which approximates every partition's: decode_error says how well)";
    iteration decode_error: f64 = f64::NAN,
        unit "1", "the decode error (in partition gradients) ‖a·B_S − 1‖₂: how far the decoded combination of the messages used (decode weights a, their codewords B_S over the partitions) is from the sum of every partition's gradient; 0 to rounding for an exact decode, √(partitions not recovered) for a partial scheme's; NaN in a trace written before this dataset",
        optional;
    iteration messages_used: u64 = 0,
        unit "count", "messages with a non-zero decoding weight";
    iteration messages_received: u64 = 0,
        unit "count", "messages received by the end of the iteration";
    iteration stale_dropped: u64 = 0,
        unit "count", "results of older iterations received and dropped";
    iteration train_loss: f64 = f64::NAN,
        unit "1", "training objective over all the training data at the iteration's model (the workers' evaluation point), never over the recovered partitions alone: recorded at every iteration whose decode recovered every partition, otherwise every train.eval_every-th iteration from the first and the last (the losses the results did not bring computed by the master on its own copy of the data, nothing waited for); NaN when not evaluated (and in a simulation without a model)";
    iteration batch_loss: f64 = f64::NAN,
        unit "1", "objective over the samples this iteration's update used, at the iteration's model: the decoded loss sum over the recovered partitions' samples (each partition's mini-batch with train.batch_size); recorded at every iteration of every scheme (an exact scheme's equals train_loss, a partial scheme's is the recovered part's, an approximate code's is its decoded approximation over every partition); NaN in simulation without a model and in a trace written before this dataset",
        optional;
    iteration batch_accuracy: f64 = f64::NAN,
        unit "1", "a classifier's share of the samples this iteration's update used that its training passes predicted correctly (the recovered partitions' mini-batches at the iteration's model, an approximate code's those its weighted arrivals computed, under dropout: the accuracy a training loop reports beside its batch loss); recorded at every iteration of every scheme with a network; NaN for a linear model, in simulation and in a trace written before this dataset",
        optional;
    iteration test_loss: f64 = f64::NAN,
        unit "1", "test objective at the iteration's model: every train.eval_every-th iteration from the first and the last; NaN when not evaluated (and in simulation)";
    iteration test_accuracy: f64 = f64::NAN,
        unit "1", "share of the test samples classified correctly at the iteration's model (classifiers: model.kind a network), when test_loss is evaluated; NaN otherwise (and in simulation)",
        optional;
    iteration elapsed_s: f64 = f64::NAN,
        unit "s", "seconds since the run started, at the end of the iteration: train, the master's wall clock from the start of its first iteration less the time it spent evaluating losses (the test evaluation and a partial scheme's wait for every partition's loss are left out, as from duration_s; trace writing and planning are in); a resumed run continues from the elapsed at its snapshot, NaN after resuming a trace without this dataset); simulation, the running sum of duration_s (model time x straggler.time_unit_ms; no wall clock, no evaluation)",
        optional;
    /// Per worker: arrival time of its last message received in time, NaN if none.
    worker finish_s: f64 = f64::NAN,
        unit "s", "column k = worker k+1: arrival of its last message received in time, NaN if none";
    /// Per worker: straggling this iteration.
    worker straggling: bool = false,
        unit "1", "column k = worker k+1: 1 when straggling this iteration";
    /// Per worker: 1-based cluster this iteration, -1 when unclustered.
    worker cluster: i64 = -1,
        unit "id", "column k = worker k+1: 1-based cluster this iteration, -1 when unclustered";
    /// Per worker: a message of it has a non-zero decoding weight.
    worker used: bool = false,
        unit "1", "column k = worker k+1: 1 when a message of it has a non-zero decoding weight";
    /// Per worker: seconds its real work ran past the emulated due time (0 when on time, and in simulation).
    worker overrun_s: f64 = 0.0,
        unit "s", "column k = worker k+1: seconds its real work ran past the emulated due time (0 on time; 0 in simulation)",
        optional;
    /// Per worker: bytes of the result messages the master accepted from it (NaN: none, or not measured).
    worker message_bytes: f64 = f64::NAN,
        unit "bytes", "column k = worker k+1: train, bytes of the result messages (headers and vectors) the master received from it in time; NaN when none, and in simulation",
        optional;
    /// Per worker: compute seconds its last accepted message's header reports (NaN: none, or not measured).
    worker compute_s: f64 = f64::NAN,
        unit "s", "column k = worker k+1: train, the wall-clock compute seconds the header of its last message received in time reports (the task's computations before that message; not an emulated wait); NaN when none, and in simulation",
        optional;
    /// Per worker: when the master had received the whole of its last accepted message (NaN: none, or not measured).
    worker received_s: f64 = f64::NAN,
        unit "s", "column k = worker k+1: train, seconds from the send of θ until the master had received the whole of its last message received in time, vector included (finish_s is the header's arrival); NaN when none, when the vector waited at the worker until the decode, and in simulation",
        optional;
}

impl IterationRecord {
    /// K, from the per-worker fields.
    pub fn workers(&self) -> usize {
        self.finish_s.len()
    }
}

/// The dataset whose rows are the iterations of a trace ([`Presence::Rows`]).
pub fn rows_dataset() -> &'static DatasetSpec {
    DATASETS
        .iter()
        .find(|d| d.presence == Presence::Rows)
        .expect("the table has a rows dataset (tested)")
}

/// One named timing event of a run: how long it took in total, how often it ran.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TimingEvent {
    pub event: String,
    pub total_s: f64,
    pub count: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_consistent() {
        let rows: Vec<_> = DATASETS
            .iter()
            .filter(|d| d.presence == Presence::Rows)
            .collect();
        assert_eq!(rows.len(), 1, "exactly one dataset gives the rows");
        assert_eq!(rows[0].group, SchemaGroup::Iteration);
        assert!(std::ptr::eq(rows_dataset(), rows[0]));
        for (i, d) in DATASETS.iter().enumerate() {
            assert_eq!(d.index, i);
            assert_eq!(d.path, format!("{}/{}", d.group.name(), d.name));
            assert!(
                ["s", "1", "count", "id", "bytes"].contains(&d.unit),
                "{}",
                d.unit
            );
            assert!(!d.description.is_empty());
        }
        let mut names: Vec<&str> = DATASETS.iter().map(|d| d.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), DATASETS.len(), "names are unique");
    }

    /// A visitor that records what it was handed.
    struct Seen(Vec<(&'static str, ElementType, Option<usize>)>);

    impl ColumnVisitor for Seen {
        type Error = ();
        fn f64(&mut self, s: &'static DatasetSpec, c: &mut Option<Vec<f64>>) -> Result<(), ()> {
            self.0
                .push((s.path, ElementType::F64, c.as_ref().map(Vec::len)));
            Ok(())
        }
        fn u64(&mut self, s: &'static DatasetSpec, c: &mut Option<Vec<u64>>) -> Result<(), ()> {
            self.0
                .push((s.path, ElementType::U64, c.as_ref().map(Vec::len)));
            Ok(())
        }
        fn i64(&mut self, s: &'static DatasetSpec, c: &mut Option<Vec<i64>>) -> Result<(), ()> {
            self.0
                .push((s.path, ElementType::I64, c.as_ref().map(Vec::len)));
            Ok(())
        }
        fn flag(&mut self, s: &'static DatasetSpec, c: &mut Option<Vec<bool>>) -> Result<(), ()> {
            self.0
                .push((s.path, ElementType::Flag, c.as_ref().map(Vec::len)));
            Ok(())
        }
    }

    #[test]
    fn visiting_hands_every_dataset_in_table_order_with_its_type() {
        let records = vec![IterationRecord::new(3); 4];
        let mut c = TraceColumns::from_records(3, &records);
        let mut seen = Seen(Vec::new());
        c.visit(&mut seen).unwrap();
        let want: Vec<_> = DATASETS
            .iter()
            .map(|d| (d.path, d.element, Some(d.group.len(4, 3))))
            .collect();
        assert_eq!(seen.0, want);
    }

    #[test]
    fn records_go_through_columns_unchanged() {
        let k = 3;
        let records: Vec<IterationRecord> = (0..5)
            .map(|i| {
                let mut r = IterationRecord::new(k);
                r.duration_s = i as f64 + 0.5;
                r.messages_used = i;
                r.finish_s[1] = i as f64;
                r.straggling[2] = i % 2 == 0;
                r.cluster[0] = i as i64;
                r.overrun_s[2] = 0.25 * i as f64;
                r
            })
            .collect();
        let c = TraceColumns::from_records(k, &records);
        assert!(c.misshapen().is_empty());
        // Compare through Debug: NaN defaults are not == themselves.
        let back = c.into_records().unwrap();
        assert_eq!(format!("{back:?}"), format!("{records:?}"));
    }

    #[test]
    fn optional_datasets_default_and_the_others_are_needed() {
        let records = vec![IterationRecord::new(2); 3];
        let mut c = TraceColumns::from_records(2, &records);
        c.overrun_s = None;
        // A trace older than the measured transfers (issue 26, item 2).
        c.message_bytes = None;
        c.compute_s = None;
        c.received_s = None;
        let back = c.clone().into_records().unwrap();
        assert!(back.iter().all(|r| r.overrun_s == vec![0.0; 2]));
        assert!(back.iter().all(|r| {
            [&r.message_bytes, &r.compute_s, &r.received_s]
                .iter()
                .all(|v| v.len() == 2 && v.iter().all(|x| x.is_nan()))
        }));
        c.cluster = None;
        let e = c.into_records().unwrap_err();
        assert_eq!(e.to_string(), "no dataset worker/cluster");
    }

    #[test]
    fn misshapen_columns_are_named() {
        let mut c = TraceColumns::from_records(3, &vec![IterationRecord::new(3); 4]);
        c.test_loss = Some(vec![1.0]);
        c.cluster = Some(vec![1; 5]);
        let bad: Vec<&str> = c.misshapen().iter().map(|d| d.path).collect();
        assert_eq!(bad, ["iteration/test_loss", "worker/cluster"]);
        let e = c.into_records().unwrap_err();
        assert_eq!(
            e.to_string(),
            "dataset iteration/test_loss does not have one entry per iteration"
        );
    }
}
