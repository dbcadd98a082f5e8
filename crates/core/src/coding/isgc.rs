//! Ignore-straggler gradient coding (IS-GC): Su, Sukhnandan, Li, "On Arbitrary
//! Ignorance of Stragglers with Gradient Coding" (004).
//!
//! Every worker stores c partitions and sends the plain sum of their gradients
//! (004 §IV). Two workers *conflict* when they store a common partition; the
//! sums of pairwise non-conflicting workers add up to the sum of the gradients
//! of the partitions they hold, so from any received set W' the master
//! recovers c·α(G[W']) partitions, where α is the size of a maximum
//! independent set of the conflict graph induced on W'. The master may stop
//! after any number of workers (the fastest `w`, a deadline, or both) and
//! updates with the mean gradient over the recovered partitions.
//!
//! # Placements (n = K workers = K partitions, c = `scheme.load`)
//!
//! - `fr` (004 §III): c | n; worker i stores block ⌊i/c⌋, partitions
//!   ⌊i/c⌋c .. ⌊i/c⌋c + c − 1. The conflict graph is n/c disjoint cliques.
//! - `cr` (004 §III, §V): 1 <= c <= n; worker i stores i, i+1, ..., i+c−1
//!   (mod n). The conflict graph is the circulant C_n^{1..c−1} (Theorem 1).
//! - `hr` = HR(n, c1, c2) (004 §VI): g groups of n0 = n/g workers and n0
//!   partitions. Worker i = g_i·n0 + k stores the bottom c1 rows of the
//!   per-group table, local partitions k − c1, ..., k − 1 (mod n0) of its own
//!   group, and the top c2 rows of cyclic repetition, partitions i, ..., i+c2−1
//!   (mod n), which spill into the next group for k >= n0 − c2 + 1.
//!   Limits: g | n, c <= n0 <= 2c − 1 (Theorem 6), c1 >= 1 (c1 = 0 is `cr`),
//!   c1 + c2 = c, and for g >= 2 also n0 <= c + c1: the condition in the proof
//!   of Theorem 6 under which every group is a clique (checked exhaustively
//!   for n <= 24 in the tests; without it Alg. 4's CONFLICT is wrong).
//!
//! # Decoding (maximum independent set in O(|W'|))
//!
//! FR, and HR with c2 = 0 or g = 1, are disjoint cliques: one uniformly random
//! received worker per clique (Alg. 1). CR and HR with c2 >= 1, g >= 2 have a
//! *monotone reach* structure: worker x conflicts forward (clockwise) with
//! exactly the workers in (x, x + len(x)], with x + len(x) non-decreasing in x
//! (CR: len = c − 1; HR: the rest of x's group, or c − 1 for the spill workers
//! k >= n0 − c2 + 1, which is Alg. 4). For such graphs (proper circular-arc
//! graphs) the greedy walk "take the next received worker beyond the reach of
//! the last one, stopping before the reach of the last wraps onto the start"
//! finds the largest independent set containing its start (Theorems 2 and 9),
//! and some maximum independent set contains a worker of the *window* of a
//! received worker u: u and the received workers in its forward reach. Alg. 2
//! takes this window (u, ..., u+c−1), one greedy walk per start.
//!
//! Where the pseudo-code, read literally, misses the maximum, this module
//! departs from it:
//!
//! 1. Alg. 2 lines 6-7 (and Alg. 3) compute `next = i0 + j` with `i0` moved
//!    to each new pick while `j` keeps counting, so the scan skips received
//!    workers: at n = 9, c = 2 with every worker received it returns
//!    {1, 3, 6}, not a set of 4. Over every received subset and start for
//!    n <= 12 the literal reading misses the maximum in 92,211 of 503,796
//!    cases. Here the scan runs over the received workers in circular order.
//! 2. Alg. 3 lines 2-3 start the walks from the received workers of one random
//!    group; Theorem 8 claims some maximum set meets them, which is false:
//!    HR(12, 1, 3) with g = 3 and W' = {1, 8, 11} (1-based) has the maximum
//!    {1, 8}, while group 3's only received worker 11 conflicts with both.
//!    Here the starts are the window of a random received worker u (u and
//!    the received workers within its forward reach), as for CR; an exchange
//!    argument shows some maximum independent set meets it.
//! 3. Alg. 3 line 10 adds to I instead of I' (a typo) and line 7 lacks the n
//!    of `mod n`; Alg. 4 line 1 mixes 0- and 1-based ids. The conflict rule
//!    used here is derived from the stored sets and checked against them.
//!
//! One walk per window start would cost O(c · |W'|/c) per start. Instead the
//! walks share their suffixes: every received worker is labelled once with
//! the number of greedy steps to one lap past u and where that lap lands, so
//! all starts cost O(|W'|) together. Sorting W' circularly costs
//! O(min(|W'| log |W'|, |W'| + n/64)) (a bitset of n bits when |W'| >= n/64
//! words). Buffers are kept in the code: a decode allocates nothing.
//!
//! # Tie-breaking
//!
//! The start u is a uniformly random received worker, ties between maximum
//! starts are broken uniformly, and FR picks uniformly in each clique, all from
//! the code's own ChaCha stream (`rng::Stream::IsgcTieBreak`), so that workers
//! placed alike have their partitions recovered equally often (004 §IV) and a
//! run is reproducible. For FR and CR every worker is alike (rotations); for
//! HR only workers at the same position of different groups are.

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::fixed_plan::{FixedPlan, fixed_plan_methods};
use super::registry::{BuildArgs, SchemeEntry};
use super::{
    Arrival, ArrivalTracker, Codeword, CodewordId, CodingError, DEFAULT_LOAD, Decoding, Message,
    RoundPlan, Scheme, Tolerance, WorkerTask,
};
use crate::rng::Stream;

/// `is-gc`: placement, load and wait policy.
pub static IS_GC: SchemeEntry = SchemeEntry::new::<IsGcParams>(
    "is-gc",
    "sum-coded placements fr, cr, hr; the master decodes a maximum independent set of the conflict graph of what the fastest `wait_for` (or those before `deadline`) send (Su et al. §IV-VI, Alg. 1-4)",
    build_is_gc,
);

/// Data placement of is-gc (`scheme.placement`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// Fractional repetition: n/c groups of c workers storing the same c partitions (004 §III).
    Fr,
    /// Cyclic repetition: worker i stores partitions i..i+c-1 (mod n) (004 §III, §V).
    #[default]
    Cr,
    /// Hybrid repetition HR(n, c1, c2) with `groups` groups (004 §VI).
    Hr,
}

/// The `[scheme]` keys of `is-gc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IsGcParams {
    /// c: partitions per worker.
    pub load: usize,
    pub placement: Placement,
    /// g: groups of the hr placement; g | K.
    pub groups: usize,
    /// c1: rows of HR(n, c1, c2) taken from the per-group placement (004 §VI-B).
    pub c1: usize,
    /// c2: rows of HR(n, c1, c2) taken from cyclic repetition; c1 + c2 = load.
    pub c2: usize,
    /// w: the master stops after the fastest w workers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_for: Option<usize>,
    /// Model time after which the master decodes what has arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<f64>,
}

impl Default for IsGcParams {
    fn default() -> Self {
        Self {
            load: DEFAULT_LOAD,
            placement: Placement::Cr,
            groups: 1,
            c1: 1,
            c2: 1,
            wait_for: None,
            deadline: None,
        }
    }
}

fn build_is_gc(args: &BuildArgs<'_>) -> Result<Box<dyn Scheme>, CodingError> {
    let p: IsGcParams = args.params()?;
    let policy = WaitPolicy::new(args.workers, p.wait_for, p.deadline, IS_GC.name())?;
    Ok(Box::new(IgnoreStragglerCode::new(
        args.workers,
        p.load,
        Layout::from_params(&p),
        policy,
        args.rng(Stream::IsgcTieBreak),
    )?))
}

/// When the master of a partial-recovery scheme stops waiting: after the
/// fastest `wait_for` workers, at a deadline (model time), or whichever comes
/// first when both are set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WaitPolicy {
    wait_for: Option<usize>,
    deadline: Option<f64>,
}

impl WaitPolicy {
    /// Limits: at least one of `wait_for` and `deadline`; `1 <= wait_for <=
    /// workers`; `deadline` finite and > 0. `kind` names the scheme in errors.
    pub fn new(
        workers: usize,
        wait_for: Option<usize>,
        deadline: Option<f64>,
        kind: &str,
    ) -> Result<Self, CodingError> {
        if wait_for.is_none() && deadline.is_none() {
            return Err(CodingError::invalid(
                "scheme.wait_for",
                "(missing)",
                format!("is required (or scheme.deadline) when scheme.kind = {kind}"),
            ));
        }
        if let Some(w) = wait_for {
            if w == 0 || w > workers {
                return Err(CodingError::invalid(
                    "scheme.wait_for",
                    w,
                    format!("must be between 1 and workers = {workers}"),
                ));
            }
        }
        super::check_deadline(deadline)?;
        Ok(Self { wait_for, deadline })
    }

    /// The master stops after this many distinct workers.
    pub fn wait_for(&self) -> Option<usize> {
        self.wait_for
    }

    /// The master stops at this model time and decodes what arrived.
    pub fn deadline(&self) -> Option<f64> {
        self.deadline
    }
}

/// The data placement of an IS-GC code (see the module docs for the rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Fractional repetition (c | n).
    Fr,
    /// Cyclic repetition.
    Cr,
    /// Hybrid repetition HR(n, c1, c2) with `groups` groups.
    Hr { groups: usize, c1: usize, c2: usize },
}

impl Layout {
    /// `scheme.placement` with `scheme.groups`, `scheme.c1`, `scheme.c2` for `hr`.
    pub fn from_params(s: &IsGcParams) -> Self {
        match s.placement {
            Placement::Fr => Layout::Fr,
            Placement::Cr => Layout::Cr,
            Placement::Hr => Layout::Hr {
                groups: s.groups,
                c1: s.c1,
                c2: s.c2,
            },
        }
    }

    /// The config name (`fr`, `cr`, `hr`).
    pub fn name(&self) -> &'static str {
        match self {
            Layout::Fr => "fr",
            Layout::Cr => "cr",
            Layout::Hr { .. } => "hr",
        }
    }
}

/// How the conflict graph is searched.
#[derive(Debug, Clone)]
enum Conflicts {
    /// Disjoint cliques of consecutive workers of this size.
    Cliques { size: usize },
    /// Monotone forward reach: worker x conflicts with (x, x + reach[x]] (mod n).
    Circular { reach: Vec<u32> },
}

/// Reusable decoder buffers: a decode allocates nothing once they have grown.
#[derive(Debug, Clone, Default)]
struct Scratch {
    stamp: u32,
    /// Per worker: the stamp of the decode that last saw it.
    seen: Vec<u32>,
    /// Distinct received workers (sorted for the circular search).
    received: Vec<u32>,
    bits: Vec<u64>,
    /// Per clique: stamp, received count and reservoir pick.
    clique_stamp: Vec<u32>,
    clique_count: Vec<u32>,
    clique_pick: Vec<u32>,
    cliques_hit: Vec<u32>,
    /// Per index of the unrolled received list, offset by the start u.
    unrolled: Vec<u32>,
    nxt: Vec<u32>,
    steps: Vec<u32>,
    land: Vec<u32>,
    path: Vec<u32>,
    chosen: Vec<usize>,
}

const UNSET: u32 = u32::MAX;

/// An IS-GC code: placement (FR, CR, HR), plain-sum messages, maximum
/// independent set decoding, and a wait policy (004 §IV-VI).
///
/// Limits: n >= 1, 1 <= c <= n, plus the placement's rules (module docs) and
/// those of [`WaitPolicy::new`].
#[derive(Debug, Clone)]
pub struct IgnoreStragglerCode {
    /// Entry, K = n partitions, what every worker stores, the plan.
    fixed: FixedPlan,
    load: usize,
    layout: Layout,
    conflicts: Conflicts,
    policy: WaitPolicy,
    rng: ChaCha8Rng,
    scratch: Scratch,
}

impl IgnoreStragglerCode {
    /// Build the code; `tie_break` is its random stream for tie-breaking.
    pub fn new(
        workers: usize,
        load: usize,
        layout: Layout,
        policy: WaitPolicy,
        tie_break: ChaCha8Rng,
    ) -> Result<Self, CodingError> {
        let n = workers;
        let c = load;
        if n == 0 {
            return Err(CodingError::invalid("workers", 0, "must be at least 1"));
        }
        if c == 0 || c > n {
            return Err(CodingError::invalid(
                "scheme.load",
                c,
                format!("must be between 1 and workers = {n}"),
            ));
        }
        if u32::try_from(3 * n).is_err() {
            return Err(CodingError::invalid(
                "workers",
                n,
                "is too large for is-gc (at most 2^32 / 3)",
            ));
        }
        let (compute, conflicts, clusters): (Vec<Vec<usize>>, Conflicts, Vec<Vec<usize>>) =
            match layout {
                Layout::Fr => {
                    if n % c != 0 {
                        return Err(CodingError::invalid(
                            "scheme.load",
                            c,
                            format!("does not divide workers = {n} (placement = fr needs c | n)"),
                        ));
                    }
                    let compute = (0..n)
                        .map(|i| (i / c * c..i / c * c + c).collect())
                        .collect();
                    let clusters = (0..n / c).map(|b| (b * c..b * c + c).collect()).collect();
                    (compute, Conflicts::Cliques { size: c }, clusters)
                }
                Layout::Cr => {
                    let compute = (0..n)
                        .map(|i| (0..c).map(|j| (i + j) % n).collect())
                        .collect();
                    let reach = vec![(c - 1) as u32; n];
                    (compute, Conflicts::Circular { reach }, Vec::new())
                }
                Layout::Hr { groups, c1, c2 } => {
                    let n0 = check_hybrid(n, c, groups, c1, c2)?;
                    let compute = (0..n)
                        .map(|i| {
                            let (g, k) = (i / n0, i % n0);
                            let upper = (n0 - c1..n0).map(move |j| g * n0 + (k + j) % n0);
                            let cyclic = (0..c2).map(move |j| (i + j) % n);
                            upper.chain(cyclic).collect()
                        })
                        .collect();
                    let clusters = (0..groups)
                        .map(|g| (g * n0..g * n0 + n0).collect())
                        .collect();
                    let conflicts = if groups == 1 {
                        Conflicts::Cliques { size: n }
                    } else if c2 == 0 {
                        Conflicts::Cliques { size: n0 }
                    } else {
                        // Alg. 4: a spill worker (k >= n0 - c2 + 1) reaches c - 1
                        // workers ahead, into the next group; any other worker
                        // reaches the end of its own group.
                        let reach = (0..n)
                            .map(|i| {
                                let k = i % n0;
                                if k + c2 > n0 { c - 1 } else { n0 - 1 - k }
                            })
                            .map(|r| r as u32)
                            .collect();
                        Conflicts::Circular { reach }
                    };
                    (compute, conflicts, clusters)
                }
            };
        let stored: Vec<Vec<usize>> = compute
            .iter()
            .map(|p: &Vec<usize>| {
                let mut s = p.clone();
                s.sort_unstable();
                s
            })
            .collect();
        debug_assert!(
            stored.iter().all(|s| s.windows(2).all(|w| w[0] < w[1])),
            "a worker stores distinct partitions"
        );
        let tasks = compute
            .into_iter()
            .enumerate()
            .map(|(i, compute)| {
                // FR workers of a block send the same sum: one codeword id.
                let id = match layout {
                    Layout::Fr => CodewordId {
                        group: i / c,
                        index: 0,
                    },
                    _ => CodewordId { group: 0, index: i },
                };
                let terms = compute.iter().map(|&p| (p, 1.0)).collect();
                WorkerTask {
                    compute,
                    messages: vec![Message {
                        after: c,
                        codeword: Codeword { id, terms },
                    }],
                }
            })
            .collect();
        let mut scratch = Scratch {
            seen: vec![0; n],
            bits: vec![0; n.div_ceil(64)],
            ..Scratch::default()
        };
        scratch.received.reserve(n);
        scratch.chosen.reserve(n);
        if let Conflicts::Cliques { size } = conflicts {
            scratch.clique_stamp = vec![0; n / size];
            scratch.clique_count = vec![0; n / size];
            scratch.clique_pick = vec![0; n / size];
            scratch.cliques_hit.reserve(n / size);
        } else {
            scratch.unrolled.reserve(3 * n);
            for buf in [
                &mut scratch.nxt,
                &mut scratch.steps,
                &mut scratch.land,
                &mut scratch.path,
            ] {
                buf.reserve(n);
            }
        }
        Ok(Self {
            fixed: FixedPlan::new(&IS_GC, n, stored, RoundPlan { tasks, clusters }),
            load: c,
            layout,
            conflicts,
            policy,
            rng: tie_break,
            scratch,
        })
    }

    /// The placement.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// c: partitions per worker.
    pub fn load(&self) -> usize {
        self.load
    }

    /// The wait policy.
    pub fn policy(&self) -> WaitPolicy {
        self.policy
    }

    /// A maximum set of pairwise non-conflicting workers among `received`
    /// (0-based worker ids; repeats count once), ties broken at random from
    /// the code's stream. The lean decode path: O(|received|) (see the module
    /// docs for the sort) and no allocation; the slice lives in the code's
    /// buffer until the next call. Order: unspecified.
    ///
    /// Panics if a worker id is out of range.
    pub fn max_independent_set(&mut self, received: &[usize]) -> &[usize] {
        let n = self.fixed.workers();
        let s = &mut self.scratch;
        s.stamp = s.stamp.wrapping_add(1);
        if s.stamp == 0 {
            s.seen.fill(0);
            s.clique_stamp.fill(0);
            s.stamp = 1;
        }
        s.received.clear();
        for &w in received {
            assert!(w < n, "worker {w} is not one of the {n} workers");
            if s.seen[w] != s.stamp {
                s.seen[w] = s.stamp;
                s.received.push(w as u32);
            }
        }
        s.chosen.clear();
        if !s.received.is_empty() {
            match &self.conflicts {
                Conflicts::Cliques { size } => one_per_clique(s, *size, &mut self.rng),
                Conflicts::Circular { reach } => {
                    sort_circular(s);
                    circular_greedy(s, n, reach, &mut self.rng);
                }
            }
        }
        &self.scratch.chosen
    }
}

/// Alg. 1 generalised to cliques of `size` consecutive workers: one uniformly
/// random received worker per clique (reservoir sampling, one pass).
fn one_per_clique(s: &mut Scratch, size: usize, rng: &mut ChaCha8Rng) {
    s.cliques_hit.clear();
    for &w in &s.received {
        let q = w as usize / size;
        if s.clique_stamp[q] != s.stamp {
            s.clique_stamp[q] = s.stamp;
            s.clique_count[q] = 1;
            s.clique_pick[q] = w;
            s.cliques_hit.push(q as u32);
        } else {
            s.clique_count[q] += 1;
            if rng.random_range(0..s.clique_count[q]) == 0 {
                s.clique_pick[q] = w;
            }
        }
    }
    s.chosen.extend(
        s.cliques_hit
            .iter()
            .map(|&q| s.clique_pick[q as usize] as usize),
    );
}

/// Sort the distinct received workers ascending: a comparison sort when they
/// are fewer than the bitset's words, else the bitset (O(|W'| + n/64)).
fn sort_circular(s: &mut Scratch) {
    if s.received.len() < s.bits.len() {
        s.received.sort_unstable();
        return;
    }
    for &w in &s.received {
        s.bits[w as usize / 64] |= 1 << (w % 64);
    }
    s.received.clear();
    for (i, word) in s.bits.iter_mut().enumerate() {
        let mut bits = std::mem::take(word);
        while bits != 0 {
            s.received.push((i * 64) as u32 + bits.trailing_zeros());
            bits &= bits - 1;
        }
    }
}

/// Maximum independent set of a monotone-reach circular conflict graph on the
/// sorted received workers (see the module docs).
///
/// Unrolled indices i >= 0 stand for worker p[i mod m] at position
/// p[i mod m] + ⌊i/m⌋·n. nxt(i) is the first index past the reach of i. The
/// window is [a, b) with a random and b = nxt(a); every walk runs to the first
/// index >= a + m (its landing). A walk from start s makes K steps to land at
/// L, and the greedy set from s has K − [L > s + m] workers: the last worker
/// before landing is allowed only when its reach stops short of s's next lap.
fn circular_greedy(s: &mut Scratch, n: usize, reach: &[u32], rng: &mut ChaCha8Rng) {
    let m = s.received.len();
    // Unrolled positions of three laps: index i is worker p[i mod m] at
    // p[i mod m] + (i div m)·n (no division in the loops below).
    s.unrolled.clear();
    for lap in 0..3 {
        let offset = (lap * n) as u32;
        s.unrolled.extend(s.received.iter().map(|&w| w + offset));
    }
    let q = &s.unrolled;
    let a = rng.random_range(0..m);
    let end = a + m;
    s.nxt.clear();
    let mut j = a + 1;
    for i in a..end {
        j = j.max(i + 1);
        let r = q[i] + reach[s.received[if i < m { i } else { i - m }] as usize];
        while q[j] <= r {
            j += 1;
        }
        s.nxt.push(j as u32);
    }
    let b = s.nxt[0] as usize;
    s.steps.clear();
    s.steps.resize(m, UNSET);
    s.land.clear();
    s.land.resize(m, 0);
    let (mut best_size, mut best_start, mut ties) = (0u32, a, 0u32);
    for start in a..b {
        s.path.clear();
        let mut v = start;
        while v < end && s.steps[v - a] == UNSET {
            s.path.push(v as u32);
            v = s.nxt[v - a] as usize;
        }
        let (mut k, landing) = if v >= end {
            (0, v as u32)
        } else {
            (s.steps[v - a], s.land[v - a])
        };
        for &x in s.path.iter().rev() {
            k += 1;
            s.steps[x as usize - a] = k;
            s.land[x as usize - a] = landing;
        }
        let size = s.steps[start - a] - u32::from(s.land[start - a] as usize > start + m);
        if size > best_size {
            (best_size, best_start, ties) = (size, start, 1);
        } else if size == best_size {
            ties += 1;
            if rng.random_range(0..ties) == 0 {
                best_start = start;
            }
        }
    }
    let mut v = best_start;
    for _ in 0..best_size {
        let x = q[v] as usize;
        s.chosen.push(if x >= n { x - n } else { x });
        v = s.nxt[v - a] as usize;
    }
}

/// Check HR(n, c1, c2) with `groups` groups and return n0 = n / groups.
fn check_hybrid(
    n: usize,
    c: usize,
    groups: usize,
    c1: usize,
    c2: usize,
) -> Result<usize, CodingError> {
    if groups == 0 {
        return Err(CodingError::invalid(
            "scheme.groups",
            0,
            "must be at least 1",
        ));
    }
    if n % groups != 0 {
        return Err(CodingError::invalid(
            "scheme.groups",
            groups,
            format!("does not divide workers = {n}"),
        ));
    }
    let n0 = n / groups;
    if c > n0 {
        return Err(CodingError::invalid(
            "scheme.load",
            c,
            format!(
                "exceeds the group size n0 = workers / groups = {n0} (hr needs c <= n0 <= 2c - 1, 004 Theorem 6)"
            ),
        ));
    }
    if n0 > 2 * c - 1 {
        return Err(CodingError::invalid(
            "scheme.groups",
            groups,
            format!(
                "gives groups of n0 = {n0} workers, more than 2 load - 1 = {} (hr needs c <= n0 <= 2c - 1, 004 Theorem 6)",
                2 * c - 1
            ),
        ));
    }
    if c1 == 0 {
        return Err(CodingError::invalid(
            "scheme.c1",
            0,
            "must be at least 1 for placement = hr (c1 = 0 is placement = cr)",
        ));
    }
    if c1 + c2 != c {
        return Err(CodingError::invalid(
            "scheme.c2",
            c2,
            format!("makes c1 + c2 = {}, not load = {c}", c1 + c2),
        ));
    }
    if groups >= 2 && n0 > c + c1 {
        return Err(CodingError::invalid(
            "scheme.c1",
            c1,
            format!(
                "is too small: groups of n0 = {n0} workers need c1 >= n0 - load = {} so that every group is a clique (004 Theorem 6)",
                n0 - c
            ),
        ));
    }
    Ok(n0)
}

struct IsgcTracker {
    seen: Vec<bool>,
    distinct: usize,
    wait_for: Option<usize>,
}

impl ArrivalTracker for IsgcTracker {
    fn arrive(&mut self, arrival: Arrival) -> bool {
        if !std::mem::replace(&mut self.seen[arrival.worker], true) {
            self.distinct += 1;
        }
        self.wait_for.is_some_and(|w| self.distinct >= w) || self.distinct == self.seen.len()
    }
}

impl Scheme for IgnoreStragglerCode {
    fixed_plan_methods!(fixed);

    /// Sufficient at `wait_for` distinct workers, or when all have arrived.
    fn tracker<'a>(&'a self, _plan: &'a RoundPlan) -> Box<dyn ArrivalTracker + 'a> {
        Box::new(IsgcTracker {
            seen: vec![false; self.fixed.workers()],
            distinct: 0,
            wait_for: self.policy.wait_for,
        })
    }

    fn decode(&mut self, _plan: &RoundPlan, received: &[Arrival]) -> Decoding {
        let workers: Vec<usize> = received
            .iter()
            .map(|a| {
                assert!(
                    a.worker < self.fixed.workers() && a.message == 0,
                    "arrival {a:?} is not a message of this is-gc code"
                );
                a.worker
            })
            .collect();
        let mut chosen = vec![false; self.fixed.workers()];
        for &w in self.max_independent_set(&workers) {
            chosen[w] = true;
        }
        let mut weights = vec![0.0; received.len()];
        let mut held = vec![false; self.fixed.workers()];
        for (idx, &w) in workers.iter().enumerate() {
            // The first arrival of a chosen worker enters the sum; a repeat gets 0.
            if std::mem::replace(&mut chosen[w], false) {
                weights[idx] = 1.0;
                for &p in self.fixed.stored(w) {
                    debug_assert!(!held[p], "chosen workers are pairwise non-conflicting");
                    held[p] = true;
                }
            }
        }
        let recovered: Vec<usize> = (0..self.fixed.workers()).filter(|&p| held[p]).collect();
        let decodable = !recovered.is_empty();
        Decoding {
            decodable,
            weights,
            recovered,
            residual: 0.0,
            amplification: if decodable { 1.0 } else { 0.0 },
            groups: Vec::new(),
            approximate: false,
        }
    }

    /// Stragglers the master may ignore and still update: n − w under
    /// `wait_for`, n − 1 under a deadline alone.
    fn tolerance(&self) -> Tolerance {
        let t = self.fixed.workers() - self.policy.wait_for.unwrap_or(1);
        Tolerance { worst: t, best: t }
    }

    fn deadline(&self) -> Option<f64> {
        self.policy.deadline
    }

    fn partial_recovery(&self) -> bool {
        true
    }
}
