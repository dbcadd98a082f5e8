//! Random d-regular simple graphs, the placements of the expander and graph
//! codes.
//!
//! Drawn by pairing points (each vertex owns d of them) one random pair at a
//! time, taking a pair only when it joins two different vertices not yet
//! adjacent; when no such pair is left among the remaining points the draw
//! restarts (Steger and Wormald's algorithm, uniform in the limit). Limits:
//! d < n and n·d even; the draw gives up after [`MAX_RESTARTS`] restarts
//! (a d close to n − 1 on a small n), an error naming the degree.

use rand::{Rng, RngExt};

use super::super::CodingError;

/// Restarts of the pairing before a draw gives up.
pub const MAX_RESTARTS: usize = 1000;

/// The most edge ends (n·d) a draw pairs.
pub const MAX_POINTS: usize = 1 << 20;

/// Tries of candidate pairs, over every restart, before a draw gives up
/// (bounds the time a dense degree on a large graph could take).
const MAX_WORK: usize = 1 << 28;

/// The edges (u < v) of a random d-regular simple graph on `n` vertices,
/// sorted; `key` names the degree's config key in errors.
pub(crate) fn random_regular(
    n: usize,
    d: usize,
    rng: &mut impl Rng,
    key: &str,
) -> Result<Vec<(usize, usize)>, CodingError> {
    if d == 0 || d >= n {
        return Err(CodingError::invalid(
            key,
            d,
            format!(
                "must be between 1 and {} (a simple d-regular graph on {n} vertices)",
                n.saturating_sub(1)
            ),
        ));
    }
    if (n * d) % 2 == 1 {
        return Err(CodingError::invalid(
            key,
            d,
            format!("times {n} vertices is odd: a d-regular graph has n·d/2 edges"),
        ));
    }
    if n * d > MAX_POINTS {
        return Err(CodingError::invalid(
            key,
            d,
            format!(
                "gives n·d = {} edge ends on {n} vertices, more than {MAX_POINTS} (the draw pairs them one by one): take a smaller degree",
                n * d
            ),
        ));
    }
    let mut work = 0usize;
    for _ in 0..MAX_RESTARTS {
        if let Some(edges) = pair(n, d, rng, &mut work) {
            return Ok(edges);
        }
        if work > MAX_WORK {
            break;
        }
    }
    Err(CodingError::invalid(
        key,
        d,
        format!(
            "gave no simple {d}-regular graph on {n} vertices in {MAX_RESTARTS} draws: take a smaller degree"
        ),
    ))
}

/// One pairing attempt; `None` at a dead end.
fn pair(n: usize, d: usize, rng: &mut impl Rng, work: &mut usize) -> Option<Vec<(usize, usize)>> {
    let mut points: Vec<usize> = (0..n).flat_map(|v| std::iter::repeat_n(v, d)).collect();
    let mut adjacent = vec![false; n * n];
    let mut edges = Vec::with_capacity(n * d / 2);
    while !points.is_empty() {
        let len = points.len();
        let mut chosen = None;
        // Random tries first; an exhaustive search before giving up.
        for _ in 0..(4 * len) {
            *work += 1;
            let (i, j) = (rng.random_range(0..len), rng.random_range(0..len));
            let (u, v) = (points[i], points[j]);
            if i != j && u != v && !adjacent[u * n + v] {
                chosen = Some((i, j));
                break;
            }
        }
        if chosen.is_none() {
            *work += len * len / 2;
            if *work > MAX_WORK {
                return None;
            }
            chosen = (0..len)
                .flat_map(|i| (i + 1..len).map(move |j| (i, j)))
                .find(|&(i, j)| {
                    let (u, v) = (points[i], points[j]);
                    u != v && !adjacent[u * n + v]
                });
        }
        let (i, j) = chosen?;
        let (u, v) = (points[i], points[j]);
        adjacent[u * n + v] = true;
        adjacent[v * n + u] = true;
        edges.push((u.min(v), u.max(v)));
        let (hi, lo) = (i.max(j), i.min(j));
        points.swap_remove(hi);
        points.swap_remove(lo);
    }
    edges.sort_unstable();
    Some(edges)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Stream, stream};

    #[test]
    fn every_vertex_has_degree_d_and_no_loop_or_repeat() {
        for (n, d) in [(12, 3), (12, 4), (6, 4), (20, 5), (30, 6), (7, 2)] {
            let edges =
                random_regular(n, d, &mut stream(n as u64 + d as u64, Stream::Code), "d").unwrap();
            assert_eq!(edges.len(), n * d / 2);
            let mut degree = vec![0; n];
            for (i, &(u, v)) in edges.iter().enumerate() {
                assert!(u < v, "no loop, u < v");
                assert!(!edges[..i].contains(&(u, v)), "no repeated edge");
                degree[u] += 1;
                degree[v] += 1;
            }
            assert!(degree.iter().all(|&k| k == d), "{n}, {d}: {degree:?}");
        }
    }

    #[test]
    fn impossible_degrees_are_errors_naming_the_key() {
        let mut rng = stream(1, Stream::Code);
        for (n, d) in [(5, 3), (4, 4), (4, 0)] {
            let e = random_regular(n, d, &mut rng, "scheme.degree").unwrap_err();
            assert!(
                matches!(&e, CodingError::Invalid { param, .. } if param == "scheme.degree"),
                "{e}"
            );
        }
    }
}
