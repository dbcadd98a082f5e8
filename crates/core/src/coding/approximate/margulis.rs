//! The Margulis–Gabber–Galil expander, the explicit family of Raviv et al.
//! §V (`scheme.graph = "margulis"` of `agc-expander`).
//!
//! Vertices Z_m × Z_m, (x, y) numbered x·m + y; (x, y) is joined to
//! (x ± 2y, y), (x ± (2y + 1), y), (x, y ± 2x) and (x, y ± (2x + 1)), mod m:
//! four maps and their inverses, so the adjacency matrix (with
//! multiplicity) is symmetric and every row sums to 8. Gabber and Galil
//! (1981) bound its second eigenvalue by 5√2 ≈ 7.07 for every m; a test
//! checks it for m = 2 … 12.
//! Limits: K = m² workers; small m gives self-loops (a worker storing its
//! own partition) and parallel edges (a partition stored with weight 2/8 or
//! more), which the code keeps as weights.

/// Each vertex's neighbours of the graph on Z_m × Z_m with their
/// multiplicities (a self-loop counts 2: once for a map, once for its
/// inverse), sorted by neighbour; `m >= 1`.
pub(crate) fn margulis_neighbours(m: usize) -> Vec<Vec<(usize, usize)>> {
    let n = m * m;
    let wrap = |v: i64| v.rem_euclid(m as i64) as usize;
    let mut rows = Vec::with_capacity(n);
    for x in 0..m as i64 {
        for y in 0..m as i64 {
            let mut row: Vec<usize> = Vec::with_capacity(8);
            for sign in [1i64, -1] {
                row.push(wrap(x + sign * 2 * y) * m + y as usize);
                row.push(wrap(x + sign * (2 * y + 1)) * m + y as usize);
                row.push(x as usize * m + wrap(y + sign * 2 * x));
                row.push(x as usize * m + wrap(y + sign * (2 * x + 1)));
            }
            row.sort_unstable();
            let mut counted: Vec<(usize, usize)> = Vec::new();
            for u in row {
                match counted.last_mut() {
                    Some((last, count)) if *last == u => *count += 1,
                    _ => counted.push((u, 1)),
                }
            }
            rows.push(counted);
        }
    }
    rows
}

/// m when `n` = m² (m >= 2), else `None`.
pub(crate) fn square_side(n: usize) -> Option<usize> {
    let m = (n as f64).sqrt().round() as usize;
    (m >= 2 && m * m == n).then_some(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adjacency(m: usize) -> faer::Mat<f64> {
        let rows = margulis_neighbours(m);
        let n = m * m;
        faer::Mat::from_fn(n, n, |i, j| {
            rows[i]
                .iter()
                .find(|&&(u, _)| u == j)
                .map_or(0.0, |&(_, c)| c as f64)
        })
    }

    /// Symmetric, 8 per row, and Gabber and Galil's bound: the second
    /// eigenvalue at most 5√2.
    #[test]
    fn the_graph_is_symmetric_8_regular_and_its_second_eigenvalue_is_at_most_5_sqrt_2() {
        for m in 2..=12 {
            let a = adjacency(m);
            let n = m * m;
            for i in 0..n {
                let sum: f64 = (0..n).map(|j| a[(i, j)]).sum();
                assert_eq!(sum, 8.0, "m = {m}, row {i}");
                for j in 0..n {
                    assert_eq!(a[(i, j)], a[(j, i)], "m = {m}: ({i}, {j})");
                }
            }
            let mut eigenvalues: Vec<f64> = a
                .self_adjoint_eigenvalues(faer::Side::Lower)
                .unwrap()
                .into_iter()
                .collect();
            eigenvalues.sort_by(|x, y| y.total_cmp(x));
            assert!(
                (eigenvalues[0] - 8.0).abs() < 1e-9,
                "m = {m}: {eigenvalues:?}"
            );
            let second = eigenvalues[1];
            assert!(
                second <= 5.0 * 2f64.sqrt() + 1e-9,
                "m = {m}: the second eigenvalue {second} > 5√2"
            );
        }
    }

    #[test]
    fn only_squares_of_at_least_2_have_a_side() {
        assert_eq!(square_side(4), Some(2));
        assert_eq!(square_side(49), Some(7));
        for n in [0, 1, 2, 3, 5, 8, 10, 48, 50] {
            assert_eq!(square_side(n), None, "{n}");
        }
    }
}
