//! The worker cluster assignment matrix A_cluster of GC-DC (000 §IV-B).

use rand::{Rng, RngExt};

use std::fmt;

use super::ClusterError;

/// The n·l × P worker cluster assignment matrix: column p lists the workers
/// that may join cluster p (they store its l partitions), every worker appears
/// in exactly n distinct columns, so it stores m = n·l partitions.
///
/// Every such matrix admits a complete clustering (every worker in one
/// cluster of its column, l per cluster): giving each of a worker's n edges
/// weight 1/n puts weight 1 on each worker and n·l·(1/n) = l on each cluster,
/// and the bipartite b-matching polytope is integral. [`augment`](super::augment)
/// finds one from any partial clustering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    workers: usize,
    clusters: usize,
    size: usize,
    per_worker: usize,
    /// n·l rows × P, 0-based worker ids.
    rows: Vec<Vec<usize>>,
    /// Column p in ascending worker order (eq. 16).
    columns: Vec<Vec<usize>>,
    /// P_k: the clusters of worker k, ascending.
    clusters_of: Vec<Vec<usize>>,
    /// `member[k·P + p]`: worker k may join cluster p.
    member: Vec<bool>,
}

/// l = K / P, checking P >= 1 and P | K.
/// l = K / P, checking K >= 1, P >= 1 and P | K: the cluster size of every
/// clustered scheme.
pub fn cluster_size(workers: usize, clusters: usize) -> Result<usize, ClusterError> {
    if workers == 0 {
        return Err(ClusterError::new("workers", 0, "must be at least 1"));
    }
    if clusters == 0 {
        return Err(ClusterError::new(
            "scheme.clusters",
            0,
            "must be at least 1",
        ));
    }
    if workers % clusters != 0 {
        return Err(ClusterError::new(
            "scheme.clusters",
            clusters,
            format!("does not divide workers = {workers}"),
        ));
    }
    Ok(workers / clusters)
}

fn check_per_worker(per_worker: usize, clusters: usize) -> Result<(), ClusterError> {
    if per_worker == 0 || per_worker > clusters {
        return Err(ClusterError::new(
            "scheme.clusters_per_worker",
            per_worker,
            format!("must be between 1 and clusters = {clusters}"),
        ));
    }
    Ok(())
}

/// The most circular-shift matrices `scheme.assignment_draws` may ask for.
pub const MAX_ASSIGNMENT_DRAWS: usize = 1024;

/// The circular shifts of 000 eq. (13) (§IV-B): group {1..4} shifted by 0
/// and 1, {5..8} by 3 and 2, {9..12} by 0 and 3 (K = 12, P = 4, n = 2).
pub const EQ13_SHIFTS: [[usize; 2]; 3] = [[0, 1], [3, 2], [0, 3]];

/// Where the A_cluster of a gc-dc scheme came from, for `check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssignmentSource {
    /// `scheme.assignment`, as given.
    Given { distinct_columns: usize },
    /// 000 eq. (13), the paper's matrix for K = 12, P = 4, n = 2.
    Paper { distinct_columns: usize },
    /// Draw `chosen` (1-based) of `draws` circular-shift matrices, the best
    /// by distinct columns, then shared pairs ([`Assignment::default_matrix`]).
    Drawn {
        draws: usize,
        chosen: usize,
        distinct_columns: usize,
        shared_pairs: usize,
    },
}

impl fmt::Display for AssignmentSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            AssignmentSource::Given { distinct_columns } => {
                write!(
                    f,
                    "scheme.assignment as given ({distinct_columns} distinct columns)"
                )
            }
            AssignmentSource::Paper { distinct_columns } => write!(
                f,
                "000 eq. (13), the paper's own matrix ({distinct_columns} distinct columns)"
            ),
            AssignmentSource::Drawn {
                draws,
                chosen,
                distinct_columns,
                shared_pairs,
            } => write!(
                f,
                "circular shifts (000 §IV-B), draw {chosen} of {draws} (scheme.assignment_draws): {distinct_columns} distinct columns, {shared_pairs} worker pairs a cluster can hold"
            ),
        }
    }
}

impl Assignment {
    /// The smallest n that satisfies Lemma 1, n > P(K−1)/(2K): floor(P(K−1)/(2K)) + 1.
    /// It is at most P. (K = 12, P = 4 → 2 and K = 20, P = 5 → 3: the paper's settings.)
    pub fn lemma1_min_per_worker(workers: usize, clusters: usize) -> usize {
        (clusters * workers.saturating_sub(1)) / (2 * workers.max(1)) + 1
    }

    /// §IV-B: split the workers into l groups of P consecutive ones
    /// (`{gP, .., gP+P−1}`), draw n distinct shifts from {0, .., P−1}
    /// uniformly without replacement per group (a partial Fisher-Yates
    /// shuffle), and circularly shift each group by each of its shifts. Row
    /// `j·l + g` is group g under its j-th shift, so the first l rows hold one
    /// shift of every group, as in eq. (13).
    ///
    /// Limits: K >= 1, P >= 1, P | K, 1 <= n <= P.
    pub fn circular_shifts(
        workers: usize,
        clusters: usize,
        per_worker: usize,
        rng: &mut impl Rng,
    ) -> Result<Self, ClusterError> {
        let size = cluster_size(workers, clusters)?;
        check_per_worker(per_worker, clusters)?;
        let mut pool: Vec<usize> = (0..clusters).collect();
        let shifts: Vec<Vec<usize>> = (0..size)
            .map(|_| {
                for i in 0..per_worker {
                    let j = rng.random_range(i..clusters);
                    pool.swap(i, j);
                }
                pool[..per_worker].to_vec()
            })
            .collect();
        Self::from_shifts(workers, clusters, &shifts)
    }

    /// The default A_cluster of gc-dc. For the paper's size (K = 12, P = 4,
    /// n = 2) the matrix 000 itself uses, eq. (13). Otherwise the best of
    /// `draws` circular-shift matrices ([`Self::circular_shifts`], drawn in
    /// turn from `rng`): the most distinct columns (two clusters with the same
    /// column can never separate the workers they share), then the most
    /// pairs of workers that some cluster can hold together (more ways to
    /// spread stragglers); the earliest draw on a tie. A draw with a repeated
    /// column is kept only when no draw has none (n = P, every column the
    /// whole set, is one such case), and [`AssignmentSource`] says so.
    ///
    /// Limits: those of [`Self::circular_shifts`], and `1 <= draws <=`
    /// `MAX_ASSIGNMENT_DRAWS`.
    pub fn default_matrix(
        workers: usize,
        clusters: usize,
        per_worker: usize,
        draws: usize,
        rng: &mut impl Rng,
    ) -> Result<(Self, AssignmentSource), ClusterError> {
        if !(1..=MAX_ASSIGNMENT_DRAWS).contains(&draws) {
            return Err(ClusterError::new(
                "scheme.assignment_draws",
                draws,
                format!(
                    "must be in 1..={MAX_ASSIGNMENT_DRAWS} (each draw is a whole A_cluster, scored over every pair of workers)"
                ),
            ));
        }
        if (workers, clusters, per_worker) == (12, 4, 2) {
            let a = Self::from_shifts(workers, clusters, &EQ13_SHIFTS.map(|s| s.to_vec()))?;
            let source = AssignmentSource::Paper {
                distinct_columns: a.distinct_columns(),
            };
            return Ok((a, source));
        }
        let mut best: Option<(Self, (usize, usize), usize)> = None;
        for draw in 1..=draws {
            let a = Self::circular_shifts(workers, clusters, per_worker, rng)?;
            let score = (a.distinct_columns(), a.shared_pairs());
            if best.as_ref().is_none_or(|(_, s, _)| score > *s) {
                best = Some((a, score, draw));
            }
        }
        let (a, (distinct_columns, shared_pairs), chosen) = best.expect("draws >= 1");
        Ok((
            a,
            AssignmentSource::Drawn {
                draws,
                chosen,
                distinct_columns,
                shared_pairs,
            },
        ))
    }

    /// Columns that differ as sets: P when no two clusters take the same workers.
    pub fn distinct_columns(&self) -> usize {
        let mut columns: Vec<&[usize]> = self.columns.iter().map(Vec::as_slice).collect();
        columns.sort_unstable();
        columns.dedup();
        columns.len()
    }

    /// Unordered pairs of workers that appear together in some column (that
    /// some cluster can hold together).
    pub fn shared_pairs(&self) -> usize {
        let k = self.workers;
        let mut together = vec![0u64; (k * k).div_ceil(64)];
        let mut pairs = 0;
        for column in &self.columns {
            for (i, &a) in column.iter().enumerate() {
                for &b in &column[i + 1..] {
                    let bit = a.min(b) * k + a.max(b);
                    let (word, mask) = (bit / 64, 1u64 << (bit % 64));
                    if together[word] & mask == 0 {
                        together[word] |= mask;
                        pairs += 1;
                    }
                }
            }
        }
        pairs
    }

    /// The matrix of given shifts: `shifts[g]` are the n distinct shifts of
    /// group g. Shift s puts worker `gP + ((p − s) mod P)` in column p, so
    /// shift 1 of group {1, 2, 3, 4} is the row [4, 1, 2, 3] (1-based) of eq. (13).
    pub fn from_shifts(
        workers: usize,
        clusters: usize,
        shifts: &[Vec<usize>],
    ) -> Result<Self, ClusterError> {
        let size = cluster_size(workers, clusters)?;
        let value = || format!("{shifts:?}");
        if shifts.len() != size {
            return Err(ClusterError::new(
                "shifts",
                value(),
                format!("must give the shifts of l = {size} groups"),
            ));
        }
        let per_worker = shifts[0].len();
        check_per_worker(per_worker, clusters)?;
        let mut rows = vec![Vec::new(); per_worker * size];
        for (g, group) in shifts.iter().enumerate() {
            if group.len() != per_worker {
                return Err(ClusterError::new(
                    "shifts",
                    value(),
                    "must give n shifts for every group",
                ));
            }
            for (j, &s) in group.iter().enumerate() {
                if s >= clusters || group[..j].contains(&s) {
                    return Err(ClusterError::new(
                        "shifts",
                        value(),
                        format!("must be distinct per group and below P = {clusters}"),
                    ));
                }
                rows[j * size + g] = (0..clusters)
                    .map(|p| g * clusters + (p + clusters - s) % clusters)
                    .collect();
            }
        }
        Ok(Self::assemble(workers, clusters, size, per_worker, rows))
    }

    /// An explicit matrix (`scheme.assignment` of gc-dc): 1-based worker ids,
    /// n·l rows × P columns, column p = the workers that may join cluster p.
    /// `per_worker` (n) is inferred from the number of rows when `None`.
    ///
    /// Limits: P | K; the rows are a multiple of l (n·l, 1 <= n <= P, equal to
    /// `per_worker` when given); ids in 1..=K; no worker twice in a column;
    /// every worker in exactly n columns.
    pub fn from_rows(
        workers: usize,
        clusters: usize,
        per_worker: Option<usize>,
        rows: &[Vec<usize>],
    ) -> Result<Self, ClusterError> {
        let size = cluster_size(workers, clusters)?;
        let shape =
            |rule: String| ClusterError::new("scheme.assignment", format!("{rows:?}"), rule);
        let n = match per_worker {
            Some(n) => {
                check_per_worker(n, clusters)?;
                if rows.len() != n * size {
                    return Err(shape(format!(
                        "has {} rows, not clusters_per_worker × workers / clusters = {n} × {size}",
                        rows.len()
                    )));
                }
                n
            }
            None => {
                if rows.is_empty() || rows.len() % size != 0 || rows.len() / size > clusters {
                    return Err(shape(format!(
                        "has {} rows, not n × workers / clusters = n × {size} with 1 <= n <= {clusters}",
                        rows.len()
                    )));
                }
                rows.len() / size
            }
        };
        let mut count = vec![0usize; workers];
        let mut out = Vec::with_capacity(rows.len());
        for (i, row) in rows.iter().enumerate() {
            if row.len() != clusters {
                return Err(shape(format!(
                    "row {} has {} entries, not clusters = {clusters}",
                    i + 1,
                    row.len()
                )));
            }
            let mut zero_based = Vec::with_capacity(clusters);
            for &w in row {
                if w == 0 || w > workers {
                    return Err(shape(format!("names worker {w}, outside 1..={workers}")));
                }
                count[w - 1] += 1;
                zero_based.push(w - 1);
            }
            out.push(zero_based);
        }
        for p in 0..clusters {
            let mut column: Vec<usize> = out.iter().map(|r| r[p]).collect();
            column.sort_unstable();
            if let Some(w) = column.windows(2).find(|x| x[0] == x[1]) {
                return Err(shape(format!(
                    "names worker {} twice in column {}",
                    w[0] + 1,
                    p + 1
                )));
            }
        }
        if let Some(w) = count.iter().position(|&c| c != n) {
            return Err(shape(format!(
                "names worker {} {} times, not clusters_per_worker = {n}",
                w + 1,
                count[w]
            )));
        }
        Ok(Self::assemble(workers, clusters, size, n, out))
    }

    fn assemble(
        workers: usize,
        clusters: usize,
        size: usize,
        per_worker: usize,
        rows: Vec<Vec<usize>>,
    ) -> Self {
        let mut columns: Vec<Vec<usize>> = (0..clusters)
            .map(|p| rows.iter().map(|r| r[p]).collect())
            .collect();
        let mut clusters_of = vec![Vec::with_capacity(per_worker); workers];
        let mut member = vec![false; workers * clusters];
        for (p, column) in columns.iter_mut().enumerate() {
            column.sort_unstable();
            for &k in column.iter() {
                clusters_of[k].push(p);
                member[k * clusters + p] = true;
            }
        }
        Self {
            workers,
            clusters,
            size,
            per_worker,
            rows,
            columns,
            clusters_of,
            member,
        }
    }

    /// K.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// P.
    pub fn clusters(&self) -> usize {
        self.clusters
    }

    /// l = K / P: workers (and partitions) per cluster.
    pub fn size(&self) -> usize {
        self.size
    }

    /// n: clusters per worker.
    pub fn per_worker(&self) -> usize {
        self.per_worker
    }

    /// m = n·l: partitions a worker stores.
    pub fn memory(&self) -> usize {
        self.per_worker * self.size
    }

    /// The n·l × P matrix, 0-based, rows in construction order.
    pub fn rows(&self) -> &[Vec<usize>] {
        &self.rows
    }

    /// The workers that may join cluster `p`, ascending (eq. 16).
    pub fn column(&self, p: usize) -> &[usize] {
        &self.columns[p]
    }

    /// P_k: the clusters worker `k` may join, ascending.
    pub fn clusters_of(&self, k: usize) -> &[usize] {
        &self.clusters_of[k]
    }

    /// Whether worker `k` may join cluster `p`.
    pub fn can_join(&self, k: usize, p: usize) -> bool {
        self.member[k * self.clusters + p]
    }

    /// P(K−1)/(2K), the bound of Lemma 1 (eq. 19).
    pub fn lemma1_bound(&self) -> f64 {
        (self.clusters * (self.workers - 1)) as f64 / (2 * self.workers) as f64
    }

    /// Lemma 1 (eq. 19): n > P(K−1)/(2K). When it holds, a single swap
    /// resolves a Phase I conflict of the paper's greedy.
    pub fn lemma1_holds(&self) -> bool {
        2 * self.workers * self.per_worker > self.clusters * (self.workers - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Stream, stream};

    /// Eq. (13) of 000, 1-based.
    pub(crate) const EQ13: [[usize; 4]; 6] = [
        [1, 2, 3, 4],
        [6, 7, 8, 5],
        [9, 10, 11, 12],
        [4, 1, 2, 3],
        [7, 8, 5, 6],
        [10, 11, 12, 9],
    ];

    fn eq13() -> Vec<Vec<usize>> {
        EQ13.iter().map(|r| r.to_vec()).collect()
    }

    #[test]
    fn shifts_of_the_paper_give_eq_13() {
        // Group {1..4}: shifts 0, 1; {5..8}: 3, 2; {9..12}: 0, 3 (§IV-B).
        let a = Assignment::from_shifts(12, 4, &[vec![0, 1], vec![3, 2], vec![0, 3]]).unwrap();
        let one_based: Vec<Vec<usize>> = a
            .rows()
            .iter()
            .map(|r| r.iter().map(|w| w + 1).collect())
            .collect();
        assert_eq!(one_based, eq13());
        assert_eq!(a, Assignment::from_rows(12, 4, Some(2), &eq13()).unwrap());
    }

    #[test]
    fn sorted_columns_are_eq_18() {
        let a = Assignment::from_rows(12, 4, None, &eq13()).unwrap();
        assert_eq!(a.per_worker(), 2);
        assert_eq!(a.memory(), 6);
        let cols: Vec<Vec<usize>> = (0..4)
            .map(|p| a.column(p).iter().map(|w| w + 1).collect())
            .collect();
        assert_eq!(
            cols,
            vec![
                vec![1, 4, 6, 7, 9, 10],
                vec![1, 2, 7, 8, 10, 11],
                vec![2, 3, 5, 8, 11, 12],
                vec![3, 4, 5, 6, 9, 12],
            ]
        );
        // Worker 1 is in clusters 1 and 2; worker 12 in 3 and 4.
        assert_eq!(a.clusters_of(0), &[0, 1]);
        assert_eq!(a.clusters_of(11), &[2, 3]);
        assert!(a.lemma1_holds(), "n = 2 > 11/6");
        assert!((a.lemma1_bound() - 11.0 / 6.0).abs() < 1e-12);
    }

    #[test]
    fn initial_clustering_is_eq_5() {
        let a = Assignment::from_rows(12, 4, None, &eq13()).unwrap();
        let c = a.initial_clustering();
        c.validate(&a).unwrap();
        assert_eq!(
            c.members,
            vec![vec![0, 5, 8], vec![1, 6, 9], vec![2, 7, 10], vec![3, 4, 11]]
        );
    }

    #[test]
    fn random_shifts_are_valid_and_reproducible() {
        for (k, p, n) in [(12, 4, 2), (20, 5, 3), (200, 10, 5), (7, 7, 7), (9, 1, 1)] {
            let a = Assignment::circular_shifts(k, p, n, &mut stream(3, Stream::ClusterShifts))
                .unwrap();
            let b = Assignment::circular_shifts(k, p, n, &mut stream(3, Stream::ClusterShifts))
                .unwrap();
            assert_eq!(a, b);
            for w in 0..k {
                assert_eq!(
                    a.clusters_of(w).len(),
                    n,
                    "worker {w} in n distinct clusters"
                );
            }
            for c in 0..p {
                assert_eq!(a.column(c).len(), n * (k / p));
            }
            a.initial_clustering().validate(&a).unwrap();
        }
    }

    #[test]
    fn lemma1_minimum_reproduces_the_papers_n() {
        assert_eq!(Assignment::lemma1_min_per_worker(12, 4), 2);
        assert_eq!(Assignment::lemma1_min_per_worker(20, 5), 3);
        for k in 1..=60 {
            for p in (1..=k).filter(|p| k % p == 0) {
                let n = Assignment::lemma1_min_per_worker(k, p);
                assert!((1..=p).contains(&n), "K={k} P={p} n={n}");
                let holds = |n: usize| 2 * k * n > p * (k - 1);
                assert!(holds(n) && (n == 1 || !holds(n - 1)), "K={k} P={p} n={n}");
            }
        }
    }

    #[test]
    fn explicit_matrices_are_checked_naming_the_key() {
        type Case<'a> = (&'a [&'a [usize]], Option<usize>, &'a str);
        let bad: &[Case] = &[
            (&[&[1, 2], &[3, 4]], Some(2), "has 2 rows"),
            (&[&[1, 2, 3], &[3, 4, 1]], None, "row 1 has 3 entries"),
            (&[&[1, 2], &[2, 1], &[3, 5], &[4, 3]], None, "outside 1..=4"),
            (
                &[&[1, 2], &[1, 3], &[3, 4], &[4, 2]],
                None,
                "twice in column 1",
            ),
            (
                &[&[1, 2], &[3, 4], &[2, 1], &[3, 4]],
                None,
                "twice in column 1",
            ),
            (&[&[1, 2], &[3, 4], &[2, 1]], None, "has 3 rows"),
        ];
        for (rows, n, why) in bad {
            let rows: Vec<Vec<usize>> = rows.iter().map(|r| r.to_vec()).collect();
            let e = Assignment::from_rows(4, 2, *n, &rows).unwrap_err();
            assert_eq!(e.param, "scheme.assignment", "{rows:?}");
            assert!(e.to_string().contains(why), "{rows:?}: {e}");
        }
        let rows = vec![vec![1, 2, 3], vec![4, 1, 6]];
        let e = Assignment::from_rows(6, 3, None, &rows).unwrap_err();
        assert!(
            e.to_string()
                .contains("names worker 1 2 times, not clusters_per_worker = 1"),
            "{e}"
        );
        let e = Assignment::circular_shifts(12, 4, 5, &mut stream(1, Stream::ClusterShifts))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "scheme.clusters_per_worker = 5 must be between 1 and clusters = 4"
        );
        let e = Assignment::circular_shifts(12, 5, 1, &mut stream(1, Stream::ClusterShifts))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "scheme.clusters = 5 does not divide workers = 12"
        );
    }

    #[test]
    fn an_explicit_matrix_whose_first_rows_overlap_still_gets_an_initial_clustering() {
        // K = 4, P = 2, n = 2: rows 1-2 name worker 1 twice.
        let rows = vec![vec![1, 2], vec![3, 1], vec![2, 4], vec![4, 3]];
        let a = Assignment::from_rows(4, 2, None, &rows).unwrap();
        let c = a.initial_clustering();
        c.validate(&a).unwrap();
    }
}
