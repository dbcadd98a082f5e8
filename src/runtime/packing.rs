//! Packed vectors: a worker whose coded vectors can be non-zero at few of
//! their d + 1 entries sends the values there alone (issue 28).
//!
//! A linear model's full-batch gradient of a partition is non-zero only at
//! the columns its rows store (and the loss, entry d): on one-hot features
//! a small part of d. A worker's coded vectors combine the gradients of its
//! stored partitions, so they are zero outside the union of those
//! partitions' supports: the worker tells the master that union once, in
//! its ready message ([`protocol::Ready`](super::protocol::Ready)), and then
//! sends each vector's values at the union's entries, in its order. The
//! master adds a packed vector into the dense sum at those entries, and
//! sends such a worker the model θ at the union's entries alone (the
//! gradient reads θ only at the columns its rows store). The
//! values are the dense vector's at every entry of the union and zero
//! elsewhere, so the decoded sum equals the dense decode's value for value
//! (`0 + a·0` added or not changes no value; at most the sign of a zero).
//!
//! Only gathered results are packed: a reduction (`aggregate = reduce`)
//! adds the vectors of several workers, whose unions differ, in a tree.

/// The entries a worker's vectors can make non-zero, and where each stored
/// partition's support lies among them.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Packing {
    /// The union of the stored partitions' supports, increasing; it ends
    /// with the loss entry d.
    entries: Vec<u32>,
    /// Per stored partition: the position in `entries` of each entry of
    /// its support.
    positions: Vec<Vec<u32>>,
}

impl Packing {
    /// The packing of a worker's vectors from its stored partitions'
    /// supports (entries of the d + 1, increasing, each ending with the loss
    /// entry d): `None` when a partition has none (its vectors are dense) or
    /// when the union is more than half of the `len` = d + 1 entries (a
    /// packed vector would save less than half the bytes, and the master's
    /// scattered addition costs more per value than a dense one).
    pub(super) fn new(supports: &[Option<Vec<u32>>], len: usize) -> Option<Self> {
        let supports: Vec<&[u32]> = supports
            .iter()
            .map(|s| s.as_deref())
            .collect::<Option<_>>()?;
        let mut entries: Vec<u32> = supports.concat();
        entries.sort_unstable();
        entries.dedup();
        if entries.is_empty() || entries.len() * 2 > len {
            return None;
        }
        let positions = supports
            .iter()
            .map(|s| {
                s.iter()
                    .map(|j| entries.binary_search(j).expect("a support is in the union") as u32)
                    .collect()
            })
            .collect();
        Some(Self { entries, positions })
    }

    /// The entries, increasing, ending with the loss entry d.
    pub(super) fn entries(&self) -> &[u32] {
        &self.entries
    }

    /// The values of a packed model: the entries but the loss.
    pub(super) fn model_len(&self) -> usize {
        self.entries.len() - 1
    }

    /// Write a packed model ([`pack_model`]) into θ at its entries; θ's
    /// other values are left as they are (the gradient does not read them).
    pub(super) fn unpack_model(&self, packed: &[f64], theta: &mut [f64]) {
        for (&j, &v) in self.entries.iter().zip(packed) {
            theta[j as usize] = v;
        }
    }

    /// `out` = Σ c · g at the entries, over `terms` (c, g, q) in their order,
    /// where g (d + 1 values) is zero outside the support of stored
    /// partition q: per entry the additions of
    /// [`kernel::sparse_combination_into`](crate::learn::kernel::sparse_combination_into),
    /// bit for bit.
    pub(super) fn combination_into(&self, out: &mut Vec<f64>, terms: &[(f64, &[f64], usize)]) {
        out.clear();
        out.resize(self.entries.len(), 0.0);
        for &(c, g, q) in terms {
            for &k in &self.positions[q] {
                let k = k as usize;
                out[k] += c * g[self.entries[k] as usize];
            }
        }
    }
}

/// The model θ (d values) at a worker's packed `entries` but the loss
/// entry d, appended to `out` in their order.
pub(super) fn pack_model(theta: &[f64], entries: &[u32], out: &mut Vec<f64>) {
    out.extend(
        entries
            .iter()
            .filter(|&&j| (j as usize) < theta.len())
            .map(|&j| theta[j as usize]),
    );
}

/// `out[entries[k]] += weight · v[k]` for every k (a packed vector added
/// into the dense sum), in one pass that also tells whether every value of
/// `v` is finite.
pub(super) fn scatter_add_checked(
    out: &mut [f64],
    weight: f64,
    v: &[f64],
    entries: &[u32],
) -> bool {
    let mut check = 0.0;
    for (&j, &x) in entries.iter().zip(v) {
        out[j as usize] += weight * x;
        check += x * 0.0;
    }
    check == 0.0
}

#[cfg(test)]
mod tests {
    use super::{Packing, pack_model, scatter_add_checked};
    use crate::learn::kernel;

    /// Three partitions' gradients on d = 9 (10 entries with the loss), each
    /// zero outside its support.
    fn gradients() -> (Vec<Option<Vec<u32>>>, Vec<Vec<f64>>) {
        let supports = vec![vec![1u32, 4, 9], vec![0, 4, 7, 9], vec![2, 9]];
        let grads = supports
            .iter()
            .enumerate()
            .map(|(q, s)| {
                let mut g = vec![0.0; 10];
                for (i, &j) in s.iter().enumerate() {
                    g[j as usize] = 0.37 * (q as f64 + 1.0) - 0.11 * i as f64 + 1e-3 * j as f64;
                }
                g
            })
            .collect();
        (supports.into_iter().map(Some).collect(), grads)
    }

    #[test]
    fn a_packed_combination_is_the_sparse_one_at_the_union_and_scatters_back_to_it() {
        let (supports, grads) = gradients();
        let packing = Packing::new(&supports, 20).expect("7 of 20 entries");
        assert_eq!(packing.entries(), [0, 1, 2, 4, 7, 9]);
        let coefficients = [(0.5, 0), (-1.25, 1), (2.0, 2)];
        let terms: Vec<(f64, &[f64], usize)> = coefficients
            .iter()
            .map(|&(c, q)| (c, grads[q].as_slice(), q))
            .collect();
        let mut packed = Vec::new();
        packing.combination_into(&mut packed, &terms);
        let sparse_terms: Vec<kernel::SparseTerm<'_>> = coefficients
            .iter()
            .map(|&(c, q)| (c, grads[q].as_slice(), supports[q].as_deref().unwrap()))
            .collect();
        let mut dense = Vec::new();
        kernel::sparse_combination_into(&mut dense, &sparse_terms, 10);
        for (k, &j) in packing.entries().iter().enumerate() {
            assert_eq!(
                packed[k].to_bits(),
                dense[j as usize].to_bits(),
                "entry {j}"
            );
        }
        // The master: 0.75 · packed into zeros is 0.75 · dense everywhere.
        let mut sum = vec![0.0; 10];
        assert!(scatter_add_checked(
            &mut sum,
            0.75,
            &packed,
            packing.entries()
        ));
        let want: Vec<f64> = dense.iter().map(|x| 0.0 + 0.75 * x).collect();
        assert_eq!(sum, want);
        packed[2] = f64::NAN;
        assert!(!scatter_add_checked(
            &mut sum,
            1.0,
            &packed,
            packing.entries()
        ));
    }

    #[test]
    fn a_packed_model_unpacks_to_theta_at_the_entries() {
        let (supports, _) = gradients();
        let packing = Packing::new(&supports, 20).unwrap();
        let theta: Vec<f64> = (0..9).map(|j| 1.5 * j as f64 - 4.0).collect();
        let mut packed = vec![7.0];
        pack_model(&theta, packing.entries(), &mut packed);
        assert_eq!(
            packed,
            [7.0, -4.0, -2.5, -1.0, 2.0, 6.5],
            "appended, without the loss entry"
        );
        assert_eq!(packing.model_len(), 5);
        let mut back = vec![f64::NAN; 9];
        packing.unpack_model(&packed[1..], &mut back);
        for j in 0..9 {
            if packing.entries().contains(&(j as u32)) {
                assert_eq!(back[j], theta[j]);
            } else {
                assert!(back[j].is_nan(), "entry {j} is left as it was");
            }
        }
    }

    #[test]
    fn a_dense_partition_or_a_union_over_half_the_entries_is_not_packed() {
        let (mut supports, _) = gradients();
        assert!(Packing::new(&supports, 12).is_some(), "6 of 12 entries");
        assert!(Packing::new(&supports, 11).is_none(), "6 of 11 entries");
        supports[1] = None;
        assert!(Packing::new(&supports, 20).is_none(), "a dense partition");
        assert!(Packing::new(&[], 20).is_none(), "nothing stored");
    }
}
