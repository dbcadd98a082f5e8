//! The decode's sum: the accepted vectors times their decode weights, added
//! into the model's gradient and loss sum at the master (`aggregate =
//! gather`), or reduced among the decodable set and received as one vector
//! (`aggregate = reduce`).

use std::time::Instant;

use super::{Held, MpiRound};
use crate::engine::RoundError;
use crate::error::Iteration;
use crate::learn::kernel;
use crate::runtime::comm::instant_after;
use crate::runtime::packing;
use crate::runtime::protocol;

impl MpiRound<'_> {
    /// `aggregate = gather`: `out` = Σ weight · vector over the accepted
    /// vectors in `order`'s order, each checked for non-finite values.
    pub(super) fn gather_combine(
        &mut self,
        order: &[usize],
        weights: &[f64],
        out: &mut Vec<f64>,
    ) -> Result<(), RoundError> {
        // Every value of `out` is written by the first term of nonzero
        // weight (0 + weight · v): zeroed first only when there is none.
        let written = order
            .iter()
            .any(|&i| weights[i] != 0.0 && self.vectors[i].is_some());
        // A packed vector is added at its entries alone: into zeros.
        let packed = order
            .iter()
            .any(|&i| matches!(self.vectors[i], Some((_, w)) if self.entries(w).is_some()));
        out.resize(self.dim + 1, 0.0);
        if !written || packed {
            out.fill(0.0);
        }
        let all_received = order
            .iter()
            .all(|&i| matches!(self.vectors[i], None | Some((Held::Received(_), _))));
        if all_received && !packed {
            self.combine_received(order, weights, out);
        } else {
            self.combine_one_by_one(order, weights, out, !packed)?;
        }
        self.discard_vectors()
    }

    /// Every vector received as it arrived (the usual case): one pass over
    /// `out` in blocks that stay in cache, each block taking the terms in
    /// `order`'s order, the same additions as one pass per vector (bit
    /// for bit) with a third of the memory traffic of `out`.
    fn combine_received(&mut self, order: &[usize], weights: &[f64], out: &mut [f64]) {
        let mut terms = Vec::with_capacity(order.len());
        for &i in order {
            if let Some((Held::Received(slot), worker)) = self.vectors[i].take() {
                terms.push((worker, slot, weights[i]));
            }
        }
        let vectors: Vec<(f64, &[f64])> = terms
            .iter()
            .map(|&(_, slot, weight)| (weight, self.received[slot].as_slice()))
            .collect();
        let finite = combine_checked(out, &vectors);
        for (&(worker, slot, _), finite) in terms.iter().zip(finite) {
            if !finite {
                warn_non_finite(worker, &self.received[slot], None, self.dim);
            }
        }
    }

    /// One vector at a time, in `order`'s order: those matched and waiting
    /// at their workers are received now, into the scratch buffer; a packed
    /// one is added at its entries. `overwrite`: the first dense term of
    /// nonzero weight writes `out` (`0 + weight · v`) rather than adding.
    fn combine_one_by_one(
        &mut self,
        order: &[usize],
        weights: &[f64],
        out: &mut [f64],
        overwrite: bool,
    ) -> Result<(), RoundError> {
        let mut first = overwrite;
        for &i in order {
            let Some((held, worker)) = self.vectors[i].take() else {
                continue;
            };
            let vector = match held {
                Held::Received(slot) => &self.received[slot],
                Held::Matched(message, len) => {
                    self.receive_counted(message, worker as i32 + 1, len, None)?;
                    &self.scratch
                }
                Held::AtWorker(_) => unreachable!("a gathering round holds no vector at a worker"),
            };
            let weight = weights[i];
            let entries = self.entries(worker);
            let finite = match entries {
                _ if weight == 0.0 => kernel::all_finite(vector),
                Some(entries) => packing::scatter_add_checked(out, weight, vector, entries),
                None => {
                    let finite = add_scaled_checked(out, weight, vector, first);
                    first = false;
                    finite
                }
            };
            if !finite {
                warn_non_finite(worker, vector, entries, self.dim);
            }
        }
        Ok(())
    }

    /// `aggregate = reduce`: order every worker of the decodable set (its
    /// accepted messages of nonzero weight) to reduce Σ weight · vector, its
    /// terms in `order`'s order, and receive the sum from the set's lowest
    /// rank, waiting at most `train.result_timeout_s`.
    pub(super) fn reduce_combine(
        &mut self,
        order: &[usize],
        weights: &[f64],
        out: &mut Vec<f64>,
    ) -> Result<(), RoundError> {
        let (t, dim) = (self.iteration, self.dim);
        let mut shares: std::collections::BTreeMap<usize, Vec<(usize, f64)>> = Default::default();
        for &i in order {
            if let Some((Held::AtWorker(message), w)) = self.vectors[i].take()
                && weights[i] != 0.0
            {
                shares.entry(w).or_default().push((message, weights[i]));
            }
        }
        self.discard_vectors()?;
        out.clear();
        out.resize(dim + 1, 0.0);
        if shares.is_empty() {
            return Ok(());
        }
        let members: Vec<i32> = shares.keys().map(|&w| w as i32 + 1).collect();
        for (w, terms) in shares {
            let order = protocol::Order {
                iteration: t,
                members: members.clone(),
                terms,
            };
            order.encode_into(&mut self.order);
            self.comm
                .send(w as i32 + 1, protocol::TAG_ORDER, &self.order);
        }
        self.receive_reduced(&members)?;
        out.copy_from_slice(&self.scratch[..=dim]);
        let (share_s, tree_s) = self.reduce_leader_s.unwrap_or((0.0, 0.0));
        self.reduce_leader_s = Some((
            share_s + self.scratch[dim + 1],
            tree_s + self.scratch[dim + 2],
        ));
        if let Some(bad) = out.iter().position(|v| !v.is_finite()) {
            let what = if bad == dim {
                "loss".to_string()
            } else {
                format!("gradient entry {}", bad + 1)
            };
            log::warn!(
                "{}: the reduced sum of workers {members:?} has a non-finite {what}",
                Iteration(t)
            );
        }
        Ok(())
    }

    /// Receive the sum of the decodable set `members` from its lowest rank
    /// into the scratch buffer (d + 1 values and the leader's two timings),
    /// waiting at most `train.result_timeout_s`.
    fn receive_reduced(&mut self, members: &[i32]) -> Result<(), RoundError> {
        let leader = members[0];
        let by = instant_after(Instant::now(), self.result_timeout_s);
        let Some((message, len)) =
            self.comm
                .probe_from(leader, protocol::TAG_REDUCED, &mut self.backoff, by)
        else {
            return Err(format!(
                "{}: the decodable set's reduction (workers {members:?}) delivered no sum within {} s (train.result_timeout_s): one of them is stopped, hung or gone",
                Iteration(self.iteration),
                self.result_timeout_s
            )
            .into());
        };
        self.receive_counted(message, leader, len, None)?;
        if len != self.dim + 3 {
            return Err(format!(
                "worker {leader} sent a reduced vector of {len} values, expected {}",
                self.dim + 3
            )
            .into());
        }
        Ok(())
    }
}

/// Say which value of worker `worker`'s vector (d gradient entries and the
/// loss, or its packed `entries`) is not finite.
fn warn_non_finite(worker: usize, vector: &[f64], entries: Option<&[u32]>, dim: usize) {
    let k = vector.iter().position(|v| !v.is_finite()).unwrap_or(0);
    let bad = entries.map_or(k, |e| e[k] as usize);
    let what = if bad == dim {
        "loss".to_string()
    } else {
        format!("gradient entry {}", bad + 1)
    };
    log::warn!("worker {} sent a non-finite {what}", worker + 1);
}

/// `out = Σ weight · v` over `terms` in their order (a term of weight 0 is
/// only checked), the first written as `0 + weight · v`: per value the same
/// additions in the same order as [`add_scaled_checked`] once per term, bit
/// for bit, but in blocks of [`kernel::COMBINATION_BLOCK`] so `out` is read and written
/// once. Per term, whether all its values are finite.
fn combine_checked(out: &mut [f64], terms: &[(f64, &[f64])]) -> Vec<bool> {
    let mut finite = vec![true; terms.len()];
    let mut start = 0;
    while start < out.len() {
        let end = (start + kernel::COMBINATION_BLOCK).min(out.len());
        let block = &mut out[start..end];
        let mut first = true;
        for (&(weight, v), finite) in terms.iter().zip(finite.iter_mut()) {
            let v = &v[start..end];
            *finite &= if weight == 0.0 {
                kernel::all_finite(v)
            } else {
                let ok = add_scaled_checked(block, weight, v, first);
                first = false;
                ok
            };
        }
        start = end;
    }
    finite
}

/// `out = weight · v` (`overwrite`) or `out += weight · v`, in one pass that
/// also tells whether every value of `v` is finite (`v · 0` is 0 for a
/// finite v and NaN otherwise; eight lanes so the sum vectorises).
fn add_scaled_checked(out: &mut [f64], weight: f64, v: &[f64], overwrite: bool) -> bool {
    const LANES: usize = 8;
    let mut check = [0.0; LANES];
    let mut outs = out.chunks_exact_mut(LANES);
    let mut vs = v.chunks_exact(LANES);
    for (o, v) in (&mut outs).zip(&mut vs) {
        for k in 0..LANES {
            o[k] = if overwrite { 0.0 } else { o[k] } + weight * v[k];
            check[k] += v[k] * 0.0;
        }
    }
    for (o, v) in outs.into_remainder().iter_mut().zip(vs.remainder()) {
        *o = if overwrite { 0.0 } else { *o } + weight * v;
        check[0] += v * 0.0;
    }
    check.iter().sum::<f64>() == 0.0
}

#[cfg(test)]
mod tests {
    use super::{add_scaled_checked, combine_checked};
    use crate::learn::kernel::COMBINATION_BLOCK;

    #[test]
    fn a_checked_addition_equals_the_plain_one_and_finds_non_finite_values() {
        let v: Vec<f64> = (0..21).map(|i| (i as f64 - 7.5) * 0.37).collect();
        let mut plain = vec![0.5; 21];
        for (o, x) in plain.iter_mut().zip(&v) {
            *o += -1.25 * x;
        }
        let mut out = vec![0.5; 21];
        assert!(add_scaled_checked(&mut out, -1.25, &v, false));
        assert_eq!(out, plain);
        let mut fresh = vec![9.0; 21];
        assert!(add_scaled_checked(&mut fresh, 2.0, &v, true));
        assert_eq!(fresh, v.iter().map(|x| 0.0 + 2.0 * x).collect::<Vec<_>>());
        for bad in [0, 7, 16, 20] {
            for value in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                let mut w = v.clone();
                w[bad] = value;
                assert!(
                    !add_scaled_checked(&mut out, 1.0, &w, false),
                    "{bad} {value}"
                );
            }
        }
    }

    /// The blocked combine adds the same terms in the same order as one
    /// pass per vector: equal bit for bit (lengths across block boundaries,
    /// a zero weight first and in the middle), and it names exactly the
    /// non-finite terms, a zero-weight one included.
    #[test]
    fn a_blocked_combine_equals_one_pass_per_vector_bit_for_bit() {
        for len in [
            1,
            7,
            COMBINATION_BLOCK,
            COMBINATION_BLOCK + 3,
            3 * COMBINATION_BLOCK + 17,
        ] {
            let vectors: Vec<Vec<f64>> = (0..4)
                .map(|j| {
                    (0..len)
                        .map(|i| ((i * 31 + j * 7) % 97) as f64 * 0.013 - 0.6 + j as f64 / 3.0)
                        .collect()
                })
                .collect();
            let weights = [0.0, 1.0 / 3.0, -2.5, 0.7];
            let mut plain = vec![f64::NAN; len];
            let mut first = true;
            for (w, v) in weights.iter().zip(&vectors) {
                if *w != 0.0 {
                    assert!(add_scaled_checked(&mut plain, *w, v, first));
                    first = false;
                }
            }
            let terms: Vec<(f64, &[f64])> = weights
                .iter()
                .zip(&vectors)
                .map(|(&w, v)| (w, v.as_slice()))
                .collect();
            let mut blocked = vec![f64::NAN; len];
            assert_eq!(combine_checked(&mut blocked, &terms), vec![true; 4]);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&blocked), bits(&plain), "length {len}");
            let mut bad = vectors.clone();
            bad[0][len - 1] = f64::NAN;
            bad[2][len / 2] = f64::INFINITY;
            let terms: Vec<(f64, &[f64])> = weights
                .iter()
                .zip(&bad)
                .map(|(&w, v)| (w, v.as_slice()))
                .collect();
            assert_eq!(
                combine_checked(&mut blocked, &terms),
                vec![false, true, false, true],
                "length {len}"
            );
        }
    }
}
