//! Rank 0 of a probe: the three measurements, one worker (or pair) at a
//! time, and the report of their fits.

use std::time::Instant;

use gradcode_core::network::probe::{
    LinkFit, PeerLink, ProbePlan, ProbeReport, Simultaneous, WorkerLink, fastest, fit_link,
    simultaneous_bytes,
};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use super::watchdog::Watchdog;
use super::{
    IDLE_SLEEP, PEER_PING, PING_PONG, SEND, TAG_COMMAND, TAG_DATA, TAG_RESULT, fastest_one_way,
};

/// The master: both measurements, then the report.
pub(super) fn master(
    world: &SimpleCommunicator,
    plan: &ProbePlan,
    hosts: Vec<String>,
    watchdog: &Watchdog,
) -> anyhow::Result<ProbeReport> {
    let workers = world.size() as usize - 1;
    let max = *plan.sizes_bytes.last().expect("at least two sizes");
    let min = plan.sizes_bytes[0];
    let mut buffer = vec![0u8; max];
    let mut links = Vec::with_capacity(workers);
    for (w, host) in hosts.iter().enumerate().skip(1) {
        let peer = world.process_at_rank(w as i32);
        let mut one_way_s = Vec::with_capacity(plan.sizes_bytes.len());
        for &bytes in &plan.sizes_bytes {
            // One untimed warm-up, then the timed repetitions.
            let count = plan.repetitions + 1;
            watchdog.waiting(format!("worker {w} (ping-pong of {bytes} bytes)"));
            peer.send_with_tag(&[PING_PONG, bytes as u64, count as u64, 0][..], TAG_COMMAND);
            one_way_s.push(fastest_one_way(&peer, &mut buffer, bytes, count));
        }
        let fit = fit_sizes(plan, &one_way_s, &format!("worker {w}"))?;
        links.push(WorkerLink {
            worker: w,
            host: host.clone(),
            latency_s: fit.latency_s,
            bandwidth_bytes_per_s: fit.bandwidth_bytes_per_s,
            one_way_s,
            simultaneous_bytes: 0,
            alone_s: 0.0,
        });
    }
    let bandwidths: Vec<f64> = links.iter().map(|l| l.bandwidth_bytes_per_s).collect();
    let sends = simultaneous_bytes(&bandwidths, min, max);
    let everyone: Vec<usize> = (1..=workers).collect();
    let total: usize = sends.iter().sum();
    buffer.resize(total.max(max), 0);
    for (link, &bytes) in links.iter_mut().zip(&sends) {
        link.simultaneous_bytes = bytes;
    }
    let mut alone = Vec::with_capacity(workers);
    for w in 1..=workers {
        watchdog.waiting(format!("worker {w} (its message alone)"));
        alone.push(timed_sends(
            world,
            &[w],
            &sends,
            plan.repetitions,
            &mut buffer,
        ));
    }
    for (link, &t) in links.iter_mut().zip(&alone) {
        link.alone_s = t;
    }
    watchdog.waiting(format!("one of workers 1..{workers} (all sending at once)"));
    let all_s = timed_sends(world, &everyone, &sends, plan.repetitions, &mut buffer);
    let simultaneous = Simultaneous {
        bytes: total,
        all_s,
        slowest_alone_s: alone.iter().copied().fold(0.0, f64::max),
    };
    let mut peers = Vec::with_capacity(workers.saturating_sub(1));
    for a in 1..workers {
        watchdog.waiting(format!("workers {a} and {} (their ping-pong)", a + 1));
        peers.push(peer_link(world, plan, [a, a + 1], &hosts)?);
    }
    Ok(ProbeReport::summarise(
        hosts[0].clone(),
        plan,
        links,
        simultaneous,
        peers,
    ))
}

/// The line through the fastest one-way times of the plan's sizes, or
/// an error naming `who` when they did not grow with the size.
fn fit_sizes(plan: &ProbePlan, one_way_s: &[f64], who: &str) -> anyhow::Result<LinkFit> {
    let points: Vec<(usize, f64)> = plan
        .sizes_bytes
        .iter()
        .copied()
        .zip(one_way_s.iter().copied())
        .collect();
    fit_link(&points).ok_or_else(|| {
        anyhow::anyhow!(
            "{who}: the one-way time did not grow with the message size ({one_way_s:?} s for {:?} bytes): no bandwidth to fit; raise --max-bytes",
            plan.sizes_bytes
        )
    })
}

/// Measurement 3 for the workers `pair`: the first pings, the second
/// answers, the first reports each size's fastest one-way time.
fn peer_link(
    world: &SimpleCommunicator,
    plan: &ProbePlan,
    pair: [usize; 2],
    hosts: &[String],
) -> anyhow::Result<PeerLink> {
    let [a, b] = pair;
    let mut one_way_s = Vec::with_capacity(plan.sizes_bytes.len());
    for &bytes in &plan.sizes_bytes {
        // One untimed warm-up, as measurement 1.
        let count = (plan.repetitions + 1) as u64;
        world
            .process_at_rank(b as i32)
            .send_with_tag(&[PING_PONG, bytes as u64, count, a as u64][..], TAG_COMMAND);
        let first = world.process_at_rank(a as i32);
        first.send_with_tag(&[PEER_PING, bytes as u64, count, b as u64][..], TAG_COMMAND);
        // Waiting without spinning: the pair may share the master's cores.
        while first.immediate_probe_with_tag(TAG_RESULT).is_none() {
            std::thread::sleep(IDLE_SLEEP);
        }
        let mut fastest_s = [0f64];
        first.receive_into_with_tag(&mut fastest_s[..], TAG_RESULT);
        one_way_s.push(fastest_s[0]);
    }
    let fit = fit_sizes(plan, &one_way_s, &format!("workers {a} and {b}"))?;
    Ok(PeerLink {
        workers: pair,
        hosts: [hosts[a].clone(), hosts[b].clone()],
        latency_s: fit.latency_s,
        bandwidth_bytes_per_s: fit.bandwidth_bytes_per_s,
        one_way_s,
    })
}

/// The fastest, over a warm-up and `repetitions` timed rounds, of the time
/// from the master's command to the arrival of the last message when the
/// workers `who` (1-based) each send their `sends[w - 1]` bytes at once;
/// `buffer` holds at least their sum.
fn timed_sends(
    world: &SimpleCommunicator,
    who: &[usize],
    sends: &[usize],
    repetitions: usize,
    buffer: &mut [u8],
) -> f64 {
    let mut times = Vec::with_capacity(repetitions);
    for rep in 0..=repetitions {
        // Disjoint parts of the buffer, one per sender, all receiving at once.
        let mut parts = Vec::with_capacity(who.len());
        let mut rest = &mut buffer[..];
        for &w in who {
            let (part, tail) = rest.split_at_mut(sends[w - 1]);
            parts.push(part);
            rest = tail;
        }
        let start = Instant::now();
        mpi::request::scope(|scope| {
            let mut requests = Vec::with_capacity(who.len());
            for (&w, part) in who.iter().zip(parts) {
                let peer = world.process_at_rank(w as i32);
                requests.push(peer.immediate_receive_into_with_tag(scope, part, TAG_DATA));
            }
            for &w in who {
                world
                    .process_at_rank(w as i32)
                    .send_with_tag(&[SEND, sends[w - 1] as u64, 0][..], TAG_COMMAND);
            }
            for request in requests {
                request.wait();
            }
        });
        if rep > 0 {
            times.push(start.elapsed().as_secs_f64());
        }
    }
    fastest(&times)
}
