//! What a scheme whose plan never changes holds, once: its registry entry,
//! K, the partitions, what every worker stores and the plan, and the
//! [`Scheme`](super::Scheme) methods that read them
//! ([`fixed_plan_methods!`]).

use super::{RoundPlan, SchemeEntry};

/// The layout and the plan of a scheme that plans every iteration alike
/// (the static codes, is-gc, gc-mmc, uc-mmc, gc-partial).
#[derive(Debug, Clone)]
pub(crate) struct FixedPlan {
    kind: &'static SchemeEntry,
    partitions: usize,
    /// Per worker, the partitions it stores, ascending.
    stored: Vec<Vec<usize>>,
    plan: RoundPlan,
}

impl FixedPlan {
    /// K is the number of workers `stored` and `plan` describe (one task
    /// each); a worker computes only partitions it stores, each below
    /// `partitions`.
    pub(crate) fn new(
        kind: &'static SchemeEntry,
        partitions: usize,
        stored: Vec<Vec<usize>>,
        plan: RoundPlan,
    ) -> Self {
        debug_assert_eq!(plan.tasks.len(), stored.len(), "one task per worker");
        debug_assert!(
            plan.tasks.iter().zip(&stored).all(|(task, mine)| task
                .compute
                .iter()
                .all(|p| *p < partitions && mine.contains(p))),
            "a worker computes only partitions it stores"
        );
        Self {
            kind,
            partitions,
            stored,
            plan,
        }
    }

    /// The registry entry (`Scheme::kind`).
    pub(crate) fn kind(&self) -> &'static SchemeEntry {
        self.kind
    }

    /// K.
    pub(crate) fn workers(&self) -> usize {
        self.stored.len()
    }

    /// The number of data partitions.
    pub(crate) fn partitions(&self) -> usize {
        self.partitions
    }

    /// The partitions `worker` stores, ascending.
    pub(crate) fn stored(&self, worker: usize) -> &[usize] {
        &self.stored[worker]
    }

    /// The plan of every iteration.
    pub(crate) fn plan(&self) -> &RoundPlan {
        &self.plan
    }
}

/// Inside `impl Scheme for T`, where `self.$field` is a [`FixedPlan`]: the
/// methods `kind`, `workers`, `partitions`, `stored` and `plan_round` (a
/// copy of the fixed plan).
macro_rules! fixed_plan_methods {
    ($field:ident) => {
        fn kind(&self) -> &'static $crate::coding::SchemeEntry {
            self.$field.kind()
        }

        fn workers(&self) -> usize {
            self.$field.workers()
        }

        fn partitions(&self) -> usize {
            self.$field.partitions()
        }

        fn stored(&self, worker: usize) -> &[usize] {
            self.$field.stored(worker)
        }

        fn plan_round(
            &mut self,
            _ctx: &$crate::coding::RoundContext<'_>,
        ) -> $crate::coding::RoundPlan {
            self.$field.plan().clone()
        }
    };
}
pub(crate) use fixed_plan_methods;
