//! `gradcode explain` for gc-dc: `--stragglers 3,5,6,7,8` or `--rates ...`
//! form the clusters (000 §V) and the report says how every worker was
//! placed; `--received` then decodes with those clusters.

use serde::Serialize;

use super::ExplainArgs;
use crate::cli::decoding::{ExplainReport, decode_report, print_text as print_decoding};
use crate::cli::{one_based, parse_rates, parse_workers};
use crate::cluster::spread::min_max_stragglers;
use crate::cluster::{
    Clustering, ClusteringPolicy, ClusteringScore, GreedyClustering, How, Resolution, WorkerStates,
};
use crate::coding::{RoundContext, Scheme, dynamic_clustering};
use crate::error::InputError;

#[derive(Debug, Serialize)]
struct PhaseReport {
    /// "non-stragglers" or "stragglers".
    class: &'static str,
    /// 1-based clusters in turn order (O_f / O_s of eq. 17).
    order: Vec<usize>,
    /// Workers of the class in each cluster's column, cluster 1 first.
    availability: Vec<usize>,
    /// Placement stopped after a round in which an open cluster found no worker of the class.
    stopped_at_conflict: bool,
}

#[derive(Debug, Serialize)]
struct PlacementReport {
    worker: usize,
    cluster: usize,
    straggler: bool,
    /// initial | phase-1 | phase-2 | swap | repair.
    phase: &'static str,
    /// Cluster after Phase I; null when left over (or for the initial clustering).
    phase_one_cluster: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    swapped_with: Option<usize>,
}

#[derive(Debug, Serialize)]
struct ConflictReport {
    worker: usize,
    /// The open cluster the worker could not join.
    cluster: usize,
    /// swap | repair.
    resolution: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    partner: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    via_cluster: Option<usize>,
    /// Workers moved along the augmenting path (repair), besides this one.
    #[serde(skip_serializing_if = "Option::is_none")]
    moved: Option<usize>,
}

/// What a clustering achieves on the optimal policy's objective.
#[derive(Debug, Serialize)]
struct ObjectiveReport {
    /// Stragglers per cluster, largest first (the flags objective: smaller
    /// lexicographically is better).
    straggler_profile: Vec<usize>,
    /// With rates: the smallest over clusters of the cluster's (l − r + 1)-th
    /// largest rate (larger is better; null for a NaN rate).
    #[serde(skip_serializing_if = "Option::is_none")]
    bottleneck_rate: Option<Option<f64>>,
    /// With rates: workers with a rate below the bottleneck rate per
    /// cluster, largest first (at an equal bottleneck rate and straggler
    /// profile, smaller lexicographically is better).
    #[serde(skip_serializing_if = "Option::is_none")]
    below_bottleneck_profile: Option<Vec<usize>>,
    /// With rates: the same for a rate at most the bottleneck rate (next).
    #[serde(skip_serializing_if = "Option::is_none")]
    at_or_below_bottleneck_profile: Option<Vec<usize>>,
}

impl ObjectiveReport {
    fn of(score: &ClusteringScore) -> Self {
        Self {
            straggler_profile: score.profile.clone(),
            bottleneck_rate: score.bottleneck_rate.map(|r| r.is_finite().then_some(r)),
            below_bottleneck_profile: score.below_bottleneck.clone(),
            at_or_below_bottleneck_profile: score.at_or_below_bottleneck.clone(),
        }
    }
}

#[derive(Debug, Serialize)]
struct DynamicReport {
    scheme: String,
    clustering: &'static str,
    /// none | stragglers | rates.
    state_information: &'static str,
    /// 1-based workers treated as stragglers.
    stragglers: Vec<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rates: Option<Vec<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    straggler_threshold: Option<f64>,
    /// P lists of 1-based workers, cluster 1 first, each in position order.
    clusters: Vec<Vec<usize>>,
    stragglers_per_cluster: Vec<usize>,
    /// The least, over every valid clustering, of the most stragglers in one cluster.
    most_even_max_stragglers: usize,
    /// With state information: this clustering's objective (see `scheme.clustering`).
    #[serde(skip_serializing_if = "Option::is_none")]
    objective: Option<ObjectiveReport>,
    /// With state information and clustering = optimal: the greedy's (000 §V) on the same state.
    #[serde(skip_serializing_if = "Option::is_none")]
    greedy_objective: Option<ObjectiveReport>,
    phases: Vec<PhaseReport>,
    placements: Vec<PlacementReport>,
    conflicts: Vec<ConflictReport>,
    swaps: usize,
    repairs: usize,
    /// With `--received`: the decoding with these clusters (the keys of `explain` for other schemes).
    #[serde(skip_serializing_if = "Option::is_none")]
    decoding: Option<ExplainReport>,
}

fn phase_name(how: How) -> &'static str {
    match how {
        How::Initial => "initial",
        How::PhaseOne => "phase-1",
        How::PhaseTwo => "phase-2",
        How::Swap { .. } => "swap",
        How::Repair => "repair",
        How::Optimal => "optimal",
    }
}

fn report(
    scheme: &dyn Scheme,
    c: &Clustering,
    info: &'static str,
    rates: Option<Vec<f64>>,
) -> DynamicReport {
    let dc = dynamic_clustering(scheme).expect("explain_dc runs on gc-dc");
    let flags: Vec<bool> = c.placements.iter().map(|p| p.straggler).collect();
    let stragglers: Vec<usize> = (0..flags.len()).filter(|&w| flags[w]).collect();
    DynamicReport {
        scheme: scheme.kind().name().to_string(),
        clustering: dc.policy_name(),
        state_information: info,
        stragglers: one_based(&stragglers),
        straggler_threshold: rates.as_ref().map(|_| dc.threshold()),
        rates,
        clusters: c.members.iter().map(|m| one_based(m)).collect(),
        stragglers_per_cluster: c.straggler_counts(),
        most_even_max_stragglers: min_max_stragglers(dc.assignment(), &flags),
        objective: None,
        greedy_objective: None,
        phases: c
            .phases
            .iter()
            .map(|ph| PhaseReport {
                class: if ph.stragglers {
                    "stragglers"
                } else {
                    "non-stragglers"
                },
                order: one_based(&ph.order),
                availability: ph.availability.clone(),
                stopped_at_conflict: ph.stopped_at_conflict,
            })
            .collect(),
        placements: c
            .placements
            .iter()
            .enumerate()
            .map(|(w, p)| PlacementReport {
                worker: w + 1,
                cluster: p.cluster + 1,
                straggler: p.straggler,
                phase: phase_name(p.how),
                phase_one_cluster: p.phase_one.map(|x| x + 1),
                swapped_with: match p.how {
                    How::Swap { partner } => Some(partner + 1),
                    _ => None,
                },
            })
            .collect(),
        conflicts: c
            .conflicts
            .iter()
            .map(|x| {
                let (resolution, partner, via, moved) = match x.resolution {
                    Resolution::Swap { partner, via } => {
                        ("swap", Some(partner + 1), Some(via + 1), None)
                    }
                    Resolution::Repair { moved } => ("repair", None, None, Some(moved)),
                };
                ConflictReport {
                    worker: x.worker + 1,
                    cluster: x.cluster + 1,
                    resolution,
                    partner,
                    via_cluster: via,
                    moved,
                }
            })
            .collect(),
        swaps: c.swaps(),
        repairs: c.repairs(),
        decoding: None,
    }
}

pub(super) fn run(flags: &ExplainArgs, scheme: &mut dyn Scheme) -> anyhow::Result<()> {
    let k = scheme.workers();
    if flags.stragglers.is_some() && flags.rates.is_some() {
        return Err(InputError::new(
            "--stragglers",
            "cannot be combined with --rates (with rates, a straggler is a worker whose rate is below scheme.straggler_threshold)",
        )
        .into());
    }
    let straggling = match flags.stragglers.as_deref() {
        Some(text) => {
            let mut flags = vec![false; k];
            for w in parse_workers("--stragglers", text, k)? {
                flags[w] = true;
            }
            Some(flags)
        }
        None => None,
    };
    let rates = flags
        .rates
        .as_deref()
        .map(|text| parse_rates("--rates", text, k))
        .transpose()?;
    let received = flags
        .received
        .as_deref()
        .map(|text| parse_workers("--received", text, k))
        .transpose()?;
    let info = match (&straggling, &rates) {
        (Some(_), _) => "stragglers",
        (None, Some(_)) => "rates",
        (None, None) => "none",
    };
    let plan = scheme.plan_round(&RoundContext {
        iteration: 0,
        straggling: straggling.as_deref(),
        rates: rates.as_deref(),
    });
    let clustering = dynamic_clustering(&*scheme)
        .expect("explain_dc runs on gc-dc")
        .last_clustering()
        .clone();
    let mut out = report(scheme, &clustering, info, rates.clone());
    if info != "none" {
        let dc = dynamic_clustering(&*scheme).expect("explain_dc runs on gc-dc");
        let states = WorkerStates {
            straggling: straggling.as_deref(),
            rates: rates.as_deref(),
            threshold: dc.threshold(),
        };
        let load = dc.code().load();
        out.objective = Some(ObjectiveReport::of(&ClusteringScore::of(
            &clustering.members,
            &states,
            load,
        )));
        if dc.policy_name() != "greedy" {
            let mut greedy = Clustering::default();
            GreedyClustering::new().cluster(dc.assignment(), &states, &mut greedy);
            out.greedy_objective = Some(ObjectiveReport::of(&ClusteringScore::of(
                &greedy.members,
                &states,
                load,
            )));
        }
    }
    out.decoding = received.map(|r| {
        let arrivals: Vec<crate::coding::Arrival> =
            r.into_iter().map(crate::coding::Arrival::only).collect();
        decode_report(scheme, &plan, &arrivals)
    });
    if flags.args.json {
        crate::outln!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print_text(&out);
    }
    Ok(())
}

fn list(ids: &[usize]) -> String {
    ids.iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn objective_text(o: &ObjectiveReport) -> String {
    let profile = format!(
        "stragglers per cluster, largest first: {}",
        list(&o.straggler_profile)
    );
    match o.bottleneck_rate {
        Some(rate) => {
            let slow = match (
                &o.below_bottleneck_profile,
                &o.at_or_below_bottleneck_profile,
            ) {
                (Some(below), Some(at)) => format!(
                    "; rate below it per cluster: {}, at most it: {}",
                    list(below),
                    list(at)
                ),
                _ => String::new(),
            };
            format!(
                "bottleneck rate (worst cluster's (l - r + 1)-th fastest) {}; {profile}{slow}",
                rate.map_or("NaN".to_string(), |r| format!("{r}"))
            )
        }
        None => profile,
    }
}

fn print_text(r: &DynamicReport) {
    print_state(r);
    print_phase_one(r);
    print_conflicts(r);
    print_clusters(r);
    let most = r.stragglers_per_cluster.iter().max().copied().unwrap_or(0);
    crate::outln!(
        "spread      at most {most} stragglers in a cluster; the most even valid clustering has {}",
        r.most_even_max_stragglers
    );
    if let Some(o) = &r.objective {
        println!("objective   {}", objective_text(o));
        if let Some(g) = &r.greedy_objective {
            println!(
                "greedy      {} (000 §V on the same state)",
                objective_text(g)
            );
        }
    }
    if let Some(d) = &r.decoding {
        crate::outln!();
        print_decoding(d);
    }
}

/// The scheme and the straggler state the clustering is formed from.
fn print_state(r: &DynamicReport) {
    crate::outln!("scheme      {} (clustering: {})", r.scheme, r.clustering);
    let workers = r.placements.len();
    match r.state_information {
        "none" => crate::outln!(
            "stragglers  no state information: the initial clustering (give --stragglers or --rates)"
        ),
        _ => {
            crate::outln!(
                "stragglers  {} ({} of {workers}){}",
                if r.stragglers.is_empty() {
                    "none".to_string()
                } else {
                    list(&r.stragglers)
                },
                r.stragglers.len(),
                match r.straggler_threshold {
                    Some(tau) => format!(", rate < tau = {tau}"),
                    None => String::new(),
                }
            );
        }
    }
}

/// Phase I: each class's turn order, and the clusters after it.
fn print_phase_one(r: &DynamicReport) {
    for (i, ph) in r.phases.iter().enumerate() {
        crate::outln!(
            "phase I     {} {}: turn order {} (availability {}){}",
            ph.class,
            if i == 0 { "first" } else { "next" },
            list(&ph.order),
            list(&ph.availability),
            if ph.stopped_at_conflict {
                "; stopped after a round with a placement conflict"
            } else {
                ""
            }
        );
    }
    if !r.phases.is_empty() {
        let mut after: Vec<Vec<usize>> = vec![Vec::new(); r.clusters.len()];
        let mut left = Vec::new();
        for p in &r.placements {
            match p.phase_one_cluster {
                Some(c) => after[c - 1].push(p.worker),
                None => left.push(p.worker),
            }
        }
        let clusters: Vec<String> = after
            .iter()
            .enumerate()
            .map(|(c, m)| format!("{}: [{}]", c + 1, list(m)))
            .collect();
        crate::outln!(
            "after I     {}; left over: {}",
            clusters.join(" "),
            if left.is_empty() {
                "none".to_string()
            } else {
                list(&left)
            }
        );
    }
}

/// Phase II: how each placement conflict was resolved.
fn print_conflicts(r: &DynamicReport) {
    for c in &r.conflicts {
        match (c.partner, c.via_cluster, c.moved) {
            (Some(partner), Some(via), _) => crate::outln!(
                "phase II    worker {} could not join cluster {}: swapped with worker {} of cluster {}",
                c.worker,
                c.cluster,
                partner,
                via
            ),
            (_, _, moved) => crate::outln!(
                "phase II    worker {}: no single swap fills cluster {}; repaired along an augmenting path moving {} workers",
                c.worker,
                c.cluster,
                moved.unwrap_or(0)
            ),
        }
    }
}

/// The clusters formed, their members and stragglers.
fn print_clusters(r: &DynamicReport) {
    crate::outln!("clusters    (* = straggler; position order)");
    for (c, members) in r.clusters.iter().enumerate() {
        let names: Vec<String> = members
            .iter()
            .map(|&w| {
                let p = &r.placements[w - 1];
                let mark = if p.straggler { "*" } else { "" };
                let how = match p.phase {
                    "phase-1" | "initial" | "optimal" => String::new(),
                    other => format!(" ({other})"),
                };
                format!("{w}{mark}{how}")
            })
            .collect();
        crate::outln!(
            "  cluster {:<3} {}   {} straggler{}",
            c + 1,
            names.join(" "),
            r.stragglers_per_cluster[c],
            if r.stragglers_per_cluster[c] == 1 {
                ""
            } else {
                "s"
            }
        );
    }
}
