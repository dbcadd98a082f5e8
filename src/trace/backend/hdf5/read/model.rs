//! The model of a training trace: `/model/theta`, the two snapshot slots
//! and the one committed, and the summary `inspect` prints.

use super::{Expect, Kind, Result, TraceFile, full, record};
use crate::trace::TraceError;
use crate::trace::contents::ModelInfo;

/// The snapshot slots of a training trace (`/model/snapshot_0`, `_1` and
/// the attribute `snapshot` of `/model` naming the committed one).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SlotState {
    /// No slot: no snapshot, or a trace written before the slots.
    NoSlots,
    /// Slots, none committed yet (killed while writing the first).
    Uncommitted,
    /// The committed slot: θ and the iterate before it after `iteration`.
    Committed {
        slot: usize,
        iteration: u64,
        theta: Vec<f64>,
        previous: Vec<f64>,
    },
}

/// The Euclidean norm of the finite entries of `v`, scaled by the largest
/// so that entries near 1e300 give their norm, not an overflow.
fn norm(v: &[f64]) -> f64 {
    let largest = v
        .iter()
        .filter(|x| x.is_finite())
        .fold(0.0f64, |m, x| m.max(x.abs()));
    if largest == 0.0 {
        return 0.0;
    }
    largest
        * v.iter()
            .filter(|x| x.is_finite())
            .map(|x| (x / largest) * (x / largest))
            .sum::<f64>()
            .sqrt()
}

impl TraceFile {
    /// `<group>/model/<name>` (`theta`, `previous_theta`), guarded, and its
    /// `iteration` attribute; `None` when absent.
    pub fn model_vector(&self, group: &str, name: &str) -> Result<Option<(Vec<f64>, Option<u64>)>> {
        let g = self.group(group)?;
        if !self.has_group(&g, group, "model")? {
            return Ok(None);
        }
        let rel = format!("model/{name}");
        if !g.link_exists(&rel) {
            return Ok(None);
        }
        let path = full(group, &rel);
        let ds = g
            .dataset(&rel)
            .map_err(|e| TraceError::hdf5(format!("dataset {path}"), e))?;
        let shape = self.guard(
            &ds,
            &path,
            &Expect::vector::<f64>("[parameters]", Kind::Number),
        )?;
        self.charge(&ds, &path, &shape, 8)?;
        let values = ds
            .read_raw::<f64>()
            .map_err(|e| TraceError::hdf5(format!("dataset {path}"), e))?;
        let iteration = self.number_attr::<u64>(&ds, &path, "iteration")?;
        Ok(Some((values, iteration)))
    }

    /// The snapshot slots under `<group>/model`, the committed one read
    /// (guarded: `[2, parameters]` numbers within the file's size, with its
    /// attribute `iteration`).
    pub(crate) fn snapshot_slot(&self, group: &str) -> Result<SlotState> {
        use crate::trace::{NO_SNAPSHOT, SNAPSHOT_COMMITTED, SNAPSHOT_SLOTS};
        let g = self.group(group)?;
        if !self.has_group(&g, group, "model")? {
            return Ok(SlotState::NoSlots);
        }
        let model_path = full(group, "model");
        let model = self.group(&model_path)?;
        let present: Vec<bool> = SNAPSHOT_SLOTS
            .iter()
            .map(|s| model.link_exists(s))
            .collect();
        if !present.iter().any(|&p| p) {
            return Ok(SlotState::NoSlots);
        }
        let committed = match self.number_attr::<u64>(&model, &model_path, SNAPSHOT_COMMITTED)? {
            None | Some(NO_SNAPSHOT) => return Ok(SlotState::Uncommitted),
            Some(c) => c,
        };
        let slot = usize::try_from(committed)
            .ok()
            .filter(|&c| c < SNAPSHOT_SLOTS.len() && present[c])
            .ok_or_else(|| {
                record(format!(
                    "attribute {SNAPSHOT_COMMITTED} of {model_path} = {committed} names no snapshot slot ({})",
                    SNAPSHOT_SLOTS.join(", ")
                ))
            })?;
        let path = full(&model_path, SNAPSHOT_SLOTS[slot]);
        let ds = model
            .dataset(SNAPSHOT_SLOTS[slot])
            .map_err(|e| TraceError::hdf5(format!("dataset {path}"), e))?;
        let expect = Expect {
            dims: "[2, parameters]",
            ndim: 2,
            kind: Kind::Number,
            read_size: 8,
        };
        let shape = self.guard(&ds, &path, &expect)?;
        self.charge(&ds, &path, &shape, 8)?;
        if shape[0] != 2 {
            return Err(record(format!(
                "dataset {path} has shape {shape:?}, not [2, parameters]"
            )));
        }
        let iteration = self
            .number_attr::<u64>(&ds, &path, "iteration")?
            .ok_or_else(|| record(format!("dataset {path} has no attribute iteration")))?;
        let mut theta = ds
            .read_raw::<f64>()
            .map_err(|e| TraceError::hdf5(format!("dataset {path}"), e))?;
        let previous = theta.split_off(shape[1]);
        Ok(SlotState::Committed {
            slot,
            iteration,
            theta,
            previous,
        })
    }

    /// The iteration of the committed snapshot under `<group>/model`, the
    /// one `train --resume` continues from: the committed slot's, or in a
    /// trace without slots `/model/theta`'s; `None` when there is none.
    pub fn snapshot_iteration(&self, group: &str) -> Result<Option<u64>> {
        match self.snapshot_slot(group)? {
            SlotState::Committed { iteration, .. } => Ok(Some(iteration)),
            SlotState::Uncommitted => Ok(None),
            SlotState::NoSlots => Ok(self.model_vector(group, "theta")?.and_then(|(_, it)| it)),
        }
    }

    /// `<group>/model/theta`, when present.
    pub fn model(&self, group: &str) -> Result<Option<ModelInfo>> {
        let Some((theta, iteration)) = self.model_vector(group, "theta")? else {
            return Ok(None);
        };
        let model_path = full(group, "model");
        let model = self.group(&model_path)?;
        let loss = |name| self.number_attr::<f64>(&model, &model_path, name);
        Ok(Some(ModelInfo {
            parameters: theta.len(),
            iteration,
            norm: norm(&theta),
            non_finite: theta.iter().filter(|x| !x.is_finite()).count(),
            final_train_loss: loss("final_train_loss")?,
            final_test_loss: loss("final_test_loss")?,
            final_test_accuracy: loss("final_test_accuracy")?,
        }))
    }
}
