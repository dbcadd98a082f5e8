//! The decoding report of `explain`: which prefix of the arrivals the
//! master decodes (the engine's stop rule), with which coefficients, what it
//! recovers; shared by every scheme's explain view.

use serde::Serialize;

use super::one_based;
use crate::coding::{Arrival, Decoding, RoundPlan, Scheme};
use crate::engine::decode_prefix;

#[derive(Debug, Serialize)]
struct Coefficient {
    /// 1-based worker.
    worker: usize,
    /// 1-based index of the worker's message the coefficient applies to (its
    /// messages in send order; always 1 for single-message schemes).
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<usize>,
    /// That message's codeword: 1-based cluster (group) and position, as in
    /// `check --json`'s `workers[].codewords[]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    codeword: Option<CodewordRef>,
    coefficient: f64,
}

#[derive(Debug, Serialize)]
struct CodewordRef {
    cluster: usize,
    index: usize,
}

#[derive(Debug, Serialize)]
struct ClusterReport {
    cluster: usize,
    /// Workers of this cluster among the arrivals used, 1-based.
    received: Vec<usize>,
    needed: usize,
    decodable: bool,
    coefficients: Vec<Coefficient>,
    #[serde(skip_serializing_if = "Option::is_none")]
    residual: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    amplification: Option<f64>,
}

#[derive(Debug, Serialize)]
pub(super) struct ExplainReport {
    scheme: String,
    /// As given, 1-based, in arrival order.
    received: Vec<usize>,
    /// The prefix of `received` the master decodes: it stops as soon as it can.
    used: Vec<usize>,
    decodable: bool,
    /// Decoding coefficient of every used worker whose result enters the sum (when decodable).
    coefficients: Vec<Coefficient>,
    /// 1-based partitions whose gradient sum the coefficients give.
    recovered_partitions: Vec<usize>,
    /// The same as `recovered_partitions` (the name is-gc's reports use).
    partitions_recovered: Vec<usize>,
    /// 1-based workers whose messages enter the sum (is-gc: the maximum
    /// independent set of the conflict graph among the used arrivals).
    workers_used: Vec<usize>,
    recovered_fraction: f64,
    /// ‖a·B_S − 1‖₂ over the partitions: 0 for an exact decode.
    decode_error: f64,
    /// The decode approximates the sum over every partition (an approximate
    /// code: `recovered_partitions` lists them all).
    approximate: bool,
    /// Communication load: messages the master received (the used prefix)
    /// and messages that enter the sum.
    messages_received: usize,
    messages_used: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    residual: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    amplification: Option<f64>,
    /// Per cluster of clustered codes (gc-sc, gc-frac blocks); gc-cyclic has one
    /// cluster of all workers; uncoded placements list none.
    clusters: Vec<ClusterReport>,
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// Decode `arrivals` (in arrival order) as the master would under `plan`.
pub(super) fn decode_report(
    scheme: &mut dyn Scheme,
    plan: &RoundPlan,
    arrivals: &[Arrival],
) -> ExplainReport {
    let received: Vec<usize> = arrivals.iter().map(|a| a.worker).collect();
    let (decoding, used) = decode_prefix(scheme, plan, arrivals);
    let mut workers_used: Vec<usize> = received[..used]
        .iter()
        .zip(&decoding.weights)
        .filter(|&(_, &w)| w != 0.0)
        .map(|(&worker, _)| worker + 1)
        .collect();
    workers_used.sort_unstable();
    workers_used.dedup();
    let coefficients = used_coefficients(plan, &arrivals[..used], &decoding);
    let clusters = cluster_reports(plan, &decoding);
    let any_decoded = !decoding.recovered.is_empty();
    ExplainReport {
        scheme: scheme.kind().name().to_string(),
        received: one_based(&received),
        used: one_based(&received[..used]),
        decodable: decoding.decodable,
        coefficients,
        recovered_partitions: one_based(&decoding.recovered),
        partitions_recovered: one_based(&decoding.recovered),
        workers_used,
        messages_received: used,
        messages_used: decoding.messages_used(),
        recovered_fraction: decoding.recovered_fraction(scheme.partitions()),
        decode_error: decoding.error(
            plan,
            &arrivals[..used],
            scheme.partitions(),
            &mut Vec::new(),
        ),
        approximate: decoding.approximate,
        residual: any_decoded.then_some(decoding.residual),
        amplification: any_decoded.then_some(decoding.amplification),
        clusters,
    }
}

/// The coefficient of every used arrival whose result enters the sum (none
/// when the arrivals do not decode), by worker and message.
fn used_coefficients(plan: &RoundPlan, used: &[Arrival], decoding: &Decoding) -> Vec<Coefficient> {
    let mut coefficients: Vec<Coefficient> = Vec::new();
    if decoding.decodable {
        coefficients = used
            .iter()
            .zip(&decoding.weights)
            .filter(|&(_, &w)| w != 0.0)
            .map(|(a, &coefficient)| {
                let id = plan.tasks[a.worker].messages[a.message].codeword.id;
                Coefficient {
                    worker: a.worker + 1,
                    message: Some(a.message + 1),
                    codeword: Some(CodewordRef {
                        cluster: id.group + 1,
                        index: id.index + 1,
                    }),
                    coefficient,
                }
            })
            .collect();
        coefficients.sort_by_key(|c| (c.worker, c.message));
    }
    coefficients
}

/// The groups of the decode, each with its received workers and
/// coefficients.
fn cluster_reports(plan: &RoundPlan, decoding: &Decoding) -> Vec<ClusterReport> {
    // Clusters of clustered codes and the one group of gc-cyclic; the
    // singleton groups of uncoded placements say nothing the top level does not.
    let show_groups = !plan.clusters.is_empty() || decoding.groups.len() == 1;
    decoding
        .groups
        .iter()
        .filter(|_| show_groups)
        .map(|g| ClusterReport {
            cluster: g.group + 1,
            received: one_based(&g.workers),
            needed: g.needed,
            decodable: g.decodable,
            coefficients: g
                .workers
                .iter()
                .zip(&g.coefficients)
                .map(|(&w, &c)| Coefficient {
                    worker: w + 1,
                    message: None,
                    codeword: None,
                    coefficient: c,
                })
                .collect(),
            residual: finite(g.residual),
            amplification: finite(g.amplification),
        })
        .collect()
}

pub(super) fn print_text(r: &ExplainReport) {
    crate::outln!("scheme      {}", r.scheme);
    crate::outln!(
        "received    {} ({} workers)",
        list(&r.received),
        r.received.len()
    );
    if r.used.len() < r.received.len() {
        crate::outln!(
            "used        {} (the master stops as soon as it can decode)",
            list(&r.used)
        );
    }
    print_decodable(r);
    crate::outln!(
        "workers     {} enter the sum; messages received {}, used {}",
        if r.workers_used.is_empty() {
            "none".to_string()
        } else {
            list(&r.workers_used)
        },
        r.messages_received,
        r.messages_used
    );
    if let (Some(res), Some(amp)) = (r.residual, r.amplification) {
        crate::outln!(
            "numerics    residual |a·B_W − 1|_inf = {res:.2e}, amplification max|a|·max|B| = {amp:.3e}"
        );
    }
    print_clusters(r);
}

/// Worker or partition numbers, comma separated.
fn list(ids: &[usize]) -> String {
    ids.iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether the arrivals decode, and what they recover (or which clusters
/// are short).
fn print_decodable(r: &ExplainReport) {
    let short: Vec<String> = r
        .clusters
        .iter()
        .filter(|c| !c.decodable)
        .map(|c| c.cluster.to_string())
        .collect();
    match (r.decodable, short.is_empty()) {
        (true, _) if r.approximate => crate::outln!(
            "decodable   yes, approximating the sum over every partition: decode error ‖a·B_S − 1‖₂ = {:.4}",
            r.decode_error
        ),
        (true, _) if r.decode_error > 1e-9 => crate::outln!(
            "decodable   yes, recovering {:.1}% of the partitions (decode error ‖a·B_S − 1‖₂ = {:.4})",
            100.0 * r.recovered_fraction,
            r.decode_error
        ),
        (true, _) => crate::outln!(
            "decodable   yes, recovering {:.1}% of the partitions",
            100.0 * r.recovered_fraction
        ),
        (false, false) => crate::outln!(
            "decodable   no: cluster {} short; the clusters that decode cover {:.1}% of the partitions",
            short.join(", "),
            100.0 * r.recovered_fraction
        ),
        (false, true) => crate::outln!(
            "decodable   no: too few arrivals; they cover {:.1}% of the partitions",
            100.0 * r.recovered_fraction
        ),
    }
}

/// Per cluster: what it received, whether it decodes, its coefficients.
fn print_clusters(r: &ExplainReport) {
    for c in &r.clusters {
        if r.clusters.len() > 1 || !c.decodable {
            let state = if c.decodable {
                "decodes".to_string()
            } else {
                format!("short: {} of {} needed", c.received.len(), c.needed)
            };
            crate::outln!(
                "cluster {:<3} received [{}], {}",
                c.cluster,
                list(&c.received),
                state
            );
        }
        for k in &c.coefficients {
            crate::outln!(
                "    worker {:>4}  coefficient {:+.9}",
                k.worker,
                k.coefficient
            );
        }
    }
}
