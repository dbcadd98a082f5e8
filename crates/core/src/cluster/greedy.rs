//! The greedy dynamic clustering of 000 §V (Algorithm 1).
//!
//! # The algorithm as implemented
//!
//! 1. **Classes.** Stragglers and non-stragglers come from [`WorkerStates`]
//!    (flags, or rate < tau). The larger class is placed first; the
//!    non-stragglers on a tie (`|K_f| >= |K_s|`, §V-A).
//! 2. **Candidate order.** With rates, fastest first (ties by index)
//!    (§VI-B); with straggler flags, non-stragglers before stragglers, each
//!    by worker index (eq. 16 within a class). The two agree on one state:
//!    flags and the rates of a two-rate model of the same flags give the
//!    same order, hence the same clustering.
//! 3. **Turn order per class** (eq. 17, line 13): clusters by ascending
//!    availability |K_x^p|, the number of the class's workers in column p of
//!    the whole matrix; lower cluster index first on ties.
//! 4. **Phase I, one class at a time** (lines 16-23): clusters take turns in
//!    rounds; at its turn an open cluster (fewer than l workers) takes the
//!    first unplaced worker of the class in its column. A full cluster skips
//!    its turn; so does an open cluster that has no such worker left, which
//!    is a *placement conflict*.
//! 5. **Phase II** (§V-B, lines 26-35): every worker left over, first-class
//!    ones first, each in candidate order: if one of its own clusters is open
//!    it joins the first such (by index). Otherwise it is conflicted: for the
//!    open clusters p by index, for its own clusters p̄ in P_k by index, the
//!    first member k̄ of p̄ in candidate order (a non-straggler before a
//!    straggler, the fastest first with rates; "the first such worker" of
//!    §V-B, with the order of step 2) that may join p moves to p and
//!    the worker takes its place in p̄ (a swap). When no single swap exists
//!    (possible when Lemma 1 fails), the augmenting-path repair
//!    ([`crate::cluster::augment`]) places it and the conflict is counted as a
//!    repair. The result is always a valid clustering.
//! 6. Each cluster's workers take positions in ascending id order.
//!
//! # Where the worked example and the pseudo-code disagree
//!
//! Run literally, lines 16-23 place the first class until every worker of it
//! is placed: in the example of §V (eq. 18, S = [1,1,0,1,0,0,0,0,1,1,1,1]) the
//! non-stragglers go 3:w2, 4:w4, 1:w1, 2:w10, 3:w11, 4:w9, then cluster 1 and
//! cluster 2 have no non-straggler left and cluster 3 takes w12. The
//! stragglers then end with w5 left over, cluster 1 open, and the swap of w5
//! and w4, giving 1, 2, 0 and 2 stragglers per cluster. The text instead says
//! the placement "continues until all the non-straggling workers are placed
//! ... (or until a placement conflict is observed)", and Fig. 2 leaves w12
//! over after Phase I, swaps it with w4, and ends with 1, 2, 1, 1.
//!
//! We follow the example ([`PhaseOneRule::WorkedExample`], the default): the
//! **first** class stops at the end of the first round in which an open
//! cluster had no worker of the class left (cluster 1's third turn in the
//! example; the rest of that round still takes its turns, as footnote 5 calls
//! a pass over all clusters a round). Its remaining workers wait for Phase II.
//! The **second** class is placed as lines 16-23 say, until it is placed or a
//! round places nobody: in the example the straggler w8 is placed by cluster 2
//! right after cluster 1 found no straggler, which the text's stop rule would
//! not allow. [`PhaseOneRule::PseudoCode`] is the literal reading, kept for
//! comparison.

use super::repair::Augmenter;
use super::{
    Assignment, ClassPhase, Clustering, ClusteringPolicy, Conflict, How, Placement, Resolution,
    WorkerStates,
};

const NONE: usize = usize::MAX;

/// When Phase I stops placing a class (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PhaseOneRule {
    /// The worked example of §V: the first class stops after a round with a
    /// placement conflict; the second is placed until done or stuck.
    #[default]
    WorkedExample,
    /// Lines 16-23 of Algorithm 1 as written: both classes are placed until
    /// done or a round places nobody.
    PseudoCode,
}

/// Algorithm 1 of 000 §V with the repair fallback; the policy `greedy`.
/// Reuses its buffers: one clustering at K = 200 allocates nothing once warm
/// besides the two small per-class reports.
#[derive(Debug, Clone, Default)]
pub struct GreedyClustering {
    rule: PhaseOneRule,
    straggler: Vec<bool>,
    /// Worker → position in the candidate order (index, or fastest first).
    rank: Vec<usize>,
    by_rank: Vec<usize>,
    /// Rates with NaN as −inf.
    key: Vec<f64>,
    /// Per cluster, its column in candidate order.
    columns: Vec<Vec<usize>>,
    cursor: Vec<usize>,
    leftovers: Vec<usize>,
    augmenter: Augmenter,
}

impl GreedyClustering {
    /// The greedy of §V read as its worked example ([`PhaseOneRule::WorkedExample`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// The greedy with a given Phase I stop rule.
    pub fn with_rule(rule: PhaseOneRule) -> Self {
        Self {
            rule,
            ..Self::default()
        }
    }

    pub fn rule(&self) -> PhaseOneRule {
        self.rule
    }

    fn prepare(&mut self, a: &Assignment, states: &WorkerStates<'_>) {
        let k = a.workers();
        states.check_len(k);
        self.straggler.clear();
        self.straggler
            .extend((0..k).map(|w| states.is_straggler(w)));
        self.rank.clear();
        self.rank.resize(k, 0);
        self.columns.resize_with(a.clusters(), Vec::new);
        if states.rates.is_some() {
            // Fastest first, ties by index; the columns are filled in that order.
            self.key.clear();
            self.key
                .extend((0..k).map(|w| states.rate(w).unwrap_or(0.0)));
            self.by_rank.clear();
            self.by_rank.extend(0..k);
            let key = &self.key;
            self.by_rank
                .sort_unstable_by(|&x, &y| key[y].total_cmp(&key[x]).then(x.cmp(&y)));
            self.columns.iter_mut().for_each(Vec::clear);
            for (i, &w) in self.by_rank.iter().enumerate() {
                self.rank[w] = i;
                for &c in a.clusters_of(w) {
                    self.columns[c].push(w);
                }
            }
        } else {
            // Non-stragglers before stragglers, each by index: the order that
            // fastest-first gives for the same state as two rates, so that
            // flags and rates of one state give one clustering. Within a
            // class (all Phase I looks at) it is the index order of eq. 16.
            self.by_rank.clear();
            self.by_rank.extend(0..k);
            let straggler = &self.straggler;
            self.by_rank.sort_unstable_by_key(|&w| (straggler[w], w));
            for (i, &w) in self.by_rank.iter().enumerate() {
                self.rank[w] = i;
            }
            for (c, column) in self.columns.iter_mut().enumerate() {
                column.clear();
                column.extend_from_slice(a.column(c));
            }
        }
        self.cursor.clear();
        self.cursor.resize(a.clusters(), 0);
    }

    /// Phase I for the workers of one class.
    fn place_class(
        &mut self,
        a: &Assignment,
        class: bool,
        stop_at_conflict: bool,
        out: &mut Clustering,
    ) {
        let (p, l) = (a.clusters(), a.size());
        let availability: Vec<usize> = self
            .columns
            .iter()
            .map(|col| col.iter().filter(|&&w| self.straggler[w] == class).count())
            .collect();
        let mut order: Vec<usize> = (0..p).collect();
        order.sort_by_key(|&c| (availability[c], c));
        self.cursor.iter_mut().for_each(|c| *c = 0);
        let mut remaining = self
            .straggler
            .iter()
            .zip(&out.cluster_of)
            .filter(|&(&s, &c)| s == class && c == NONE)
            .count();
        let mut stopped = false;
        while remaining > 0 {
            let (mut placed_any, mut conflict) = (false, false);
            for &c in &order {
                if remaining == 0 {
                    break;
                }
                if out.members[c].len() == l {
                    continue;
                }
                let column = &self.columns[c];
                let cursor = &mut self.cursor[c];
                while *cursor < column.len()
                    && (out.cluster_of[column[*cursor]] != NONE
                        || self.straggler[column[*cursor]] != class)
                {
                    *cursor += 1;
                }
                if *cursor == column.len() {
                    conflict = true;
                    continue;
                }
                let w = column[*cursor];
                *cursor += 1;
                out.members[c].push(w);
                out.cluster_of[w] = c;
                out.placements[w].phase_one = Some(c);
                out.placements[w].how = How::PhaseOne;
                remaining -= 1;
                placed_any = true;
            }
            if !placed_any {
                break;
            }
            if conflict && stop_at_conflict && remaining > 0 {
                stopped = true;
                break;
            }
        }
        out.phases.push(ClassPhase {
            stragglers: class,
            order,
            availability,
            stopped_at_conflict: stopped,
        });
    }

    /// Phase II for one leftover worker `k`.
    fn place_leftover(&mut self, a: &Assignment, k: usize, out: &mut Clustering) {
        let (p, l) = (a.clusters(), a.size());
        if let Some(&c) = a.clusters_of(k).iter().find(|&&c| out.members[c].len() < l) {
            out.members[c].push(k);
            out.cluster_of[k] = c;
            out.placements[k].how = How::PhaseTwo;
            return;
        }
        for open in (0..p).filter(|&c| out.members[c].len() < l) {
            for &via in a.clusters_of(k) {
                let partner = out.members[via]
                    .iter()
                    .copied()
                    .filter(|&w| a.can_join(w, open))
                    .min_by_key(|&w| self.rank[w]);
                if let Some(partner) = partner {
                    let at = out.members[via]
                        .iter()
                        .position(|&w| w == partner)
                        .expect("partner is a member");
                    out.members[via][at] = k;
                    out.cluster_of[k] = via;
                    out.placements[k].how = How::Swap { partner };
                    out.members[open].push(partner);
                    out.cluster_of[partner] = open;
                    out.placements[partner].how = How::Swap { partner: k };
                    out.conflicts.push(Conflict {
                        worker: k,
                        cluster: open,
                        resolution: Resolution::Swap { partner, via },
                    });
                    return;
                }
            }
        }
        let placements = &mut out.placements;
        let (end, moved) = self
            .augmenter
            .run(a, k, &mut out.members, &mut out.cluster_of, |w| {
                placements[w].how = How::Repair
            })
            .expect("every assignment matrix admits a complete clustering");
        out.placements[k].how = How::Repair;
        out.conflicts.push(Conflict {
            worker: k,
            cluster: end,
            resolution: Resolution::Repair { moved },
        });
    }
}

impl ClusteringPolicy for GreedyClustering {
    fn name(&self) -> &'static str {
        "greedy"
    }

    fn cluster(&mut self, a: &Assignment, states: &WorkerStates<'_>, out: &mut Clustering) {
        let (k, p, l) = (a.workers(), a.clusters(), a.size());
        self.prepare(a, states);
        out.members.resize_with(p, Vec::new);
        for m in &mut out.members {
            m.clear();
            m.reserve(l);
        }
        out.cluster_of.clear();
        out.cluster_of.resize(k, NONE);
        out.placements.clear();
        out.placements.extend((0..k).map(|w| Placement {
            cluster: NONE,
            straggler: self.straggler[w],
            phase_one: None,
            how: How::PhaseTwo,
        }));
        out.conflicts.clear();
        out.phases.clear();

        let stragglers = self.straggler.iter().filter(|&&s| s).count();
        let first = stragglers > k - stragglers;
        let stop_first = self.rule == PhaseOneRule::WorkedExample;
        self.place_class(a, first, stop_first, out);
        self.place_class(a, !first, false, out);

        self.leftovers.clear();
        self.leftovers
            .extend((0..k).filter(|&w| out.cluster_of[w] == NONE));
        let (rank, straggler) = (&self.rank, &self.straggler);
        self.leftovers
            .sort_unstable_by_key(|&w| (straggler[w] != first, rank[w]));
        let leftovers = std::mem::take(&mut self.leftovers);
        for &w in &leftovers {
            self.place_leftover(a, w, out);
        }
        self.leftovers = leftovers;

        for m in &mut out.members {
            m.sort_unstable();
        }
        for (w, placement) in out.placements.iter_mut().enumerate() {
            placement.cluster = out.cluster_of[w];
        }
        debug_assert_eq!(out.validate(a), Ok(()));
    }
}
