//! Named timing events summed over a run, like PETSc's `-log_view`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::Instant;

use crate::record::TimingEvent;

/// Named timing events, summed over a run. A disabled `Timing` (the
/// simulator's) reads no clock at all.
#[derive(Debug, Default)]
pub struct Timing {
    enabled: bool,
    events: BTreeMap<Cow<'static, str>, (f64, u64)>,
}

impl Timing {
    /// Timing that measures (`enabled`) or does nothing.
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled,
            events: BTreeMap::new(),
        }
    }

    /// Whether events are measured.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Add `seconds` to `event` (and count it once).
    pub fn add(&mut self, event: &'static str, seconds: f64) {
        if self.enabled {
            let e = self.events.entry(Cow::Borrowed(event)).or_insert((0.0, 0));
            e.0 += seconds;
            e.1 += 1;
        }
    }

    /// Run `f`, timed as `event`.
    pub fn time<R>(&mut self, event: &'static str, f: impl FnOnce() -> R) -> R {
        if !self.enabled {
            return f();
        }
        let start = Instant::now();
        let r = f();
        self.add(event, start.elapsed().as_secs_f64());
        r
    }

    /// Add the totals and counts of `events` (an earlier part of a resumed
    /// run), whether or not this timing measures.
    pub fn merge(&mut self, events: &[TimingEvent]) {
        for e in events {
            let sum = self
                .events
                .entry(Cow::Owned(e.event.clone()))
                .or_insert((0.0, 0));
            sum.0 += e.total_s;
            sum.1 += e.count;
        }
    }

    /// Every event with its total and count, by name.
    pub fn summary(&self) -> Vec<TimingEvent> {
        self.events
            .iter()
            .map(|(event, &(total_s, count))| TimingEvent {
                event: event.to_string(),
                total_s,
                count,
            })
            .collect()
    }
}
