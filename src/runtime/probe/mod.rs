//! `gradcode probe`'s MPI program (issue 26, item 2): rank 0 measures the
//! links to ranks 1..K and between neighbouring workers, as the module
//! [`gradcode_core::network::probe`] describes, and hands the report to the
//! command, which prints it.
//!
//! Its start is `train`'s: each worker first says hello to rank 0
//! (`setup::say_hello`: so that every first contact goes to rank 0, as in
//! train: under MPICH over UCX/TCP a first message from rank 0 to worker 1
//! did not arrive while worker 2 was stopped), rank 0 hears every hello
//! within `--timeout-s` (`setup::await_hellos`), then sends each worker the
//! verdict on the flags. There is no collective: every later wait of rank 0
//! for a worker is watched (`watchdog.rs`): a worker (or a pair) silent for
//! `--timeout-s` is named and the job ends.

mod master;
mod watchdog;

use std::time::{Duration, Instant};

use gradcode_core::network::probe::{DEFAULT_TIMEOUT_S, ProbePlan, ProbeReport, fastest};
use mpi::topology::{Process, SimpleCommunicator};
use mpi::traits::*;

use super::comm::Comm;
use super::setup::{self, HelloError};
use crate::error::{InputError, QuietExit};
use watchdog::Watchdog;

/// The master's commands to a worker: `[kind, bytes, count, peer]`
/// (`peer`: the rank it exchanges messages with; 0, the master, but in a
/// pair of workers).
const TAG_COMMAND: i32 = 1;
/// Payload messages.
const TAG_DATA: i32 = 2;
/// A pair's fastest one-way time, from its first worker to the master.
const TAG_RESULT: i32 = 3;
/// Answer `count` messages of `peer` (the master's ping-pong, or the
/// second worker of a pair).
const PING_PONG: u64 = 1;
const SEND: u64 = 2;
const DONE: u64 = 3;
/// Time `count` round trips to `peer` and report the fastest half.
const PEER_PING: u64 = 4;

/// The fastest one-way time (half a round trip) of `count` round trips
/// of `bytes` with `other`, the first untimed (a warm-up: it opens the
/// connection, touches the pages).
fn fastest_one_way(other: &Process<'_>, buffer: &mut [u8], bytes: usize, count: usize) -> f64 {
    let mut times = Vec::with_capacity(count.saturating_sub(1));
    for rep in 0..count {
        let start = Instant::now();
        other.send_with_tag(&buffer[..bytes], TAG_DATA);
        other.receive_into_with_tag(&mut buffer[..bytes], TAG_DATA);
        if rep > 0 {
            times.push(start.elapsed().as_secs_f64() / 2.0);
        }
    }
    fastest(&times)
}

/// How long an idle worker sleeps between probes for the next command
/// (the ranks of a probe may share few cores: an idle rank must not spin).
/// It delays the start of an all-at-once round by at most this much
/// (and the rounds of each worker alone alike).
const IDLE_SLEEP: Duration = Duration::from_micros(100);

/// The verdict on the flags, rank 0 → every worker.
const TAG_VERDICT: i32 = 4;

/// `gradcode probe` on every rank: `checked` is the plan from the flags (or
/// why they are refused; rank 0 prints it, every rank ends with status 2),
/// `print` prints rank 0's report before MPI finalises.
pub fn run(
    checked: Result<ProbePlan, InputError>,
    print: impl FnOnce(&ProbeReport, &ProbePlan) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let inherited = crate::finalize::InheritedSockets::record();
    // Funneled: the watchdog thread may end the job (MPI_Abort).
    let (universe, _) = mpi::initialize_with_threading(mpi::Threading::Funneled)
        .ok_or_else(|| anyhow::anyhow!("MPI was already initialised"))?;
    let world = universe.world();
    let outcome = if world.rank() == 0 {
        rank_zero(&world, checked, print)
    } else {
        worker_rank(&world)
    };
    // MPI_Finalize (dropping the universe) cannot hang the finished job.
    let library = mpi::environment::library_version().unwrap_or_default();
    crate::finalize::FinalizeGuard::arm(&inherited, &library);
    drop(world);
    drop(universe);
    outcome
}

/// A worker: its hello, the verdict, then the master's commands.
fn worker_rank(world: &SimpleCommunicator) -> anyhow::Result<()> {
    crate::signals::stop_if_asked(world.rank(), "before it says its host");
    let comm = Comm::new(world);
    setup::say_hello(&comm);
    let master = world.process_at_rank(0);
    wait_for(&master, TAG_VERDICT);
    let (verdict, _) = master.receive_with_tag::<u8>(TAG_VERDICT);
    // The master heard the hello before its verdict: the send is complete.
    comm.drain(Instant::now() + Duration::from_secs(1));
    if verdict != 0 {
        return Err(QuietExit(2).into());
    }
    worker(world);
    Ok(())
}

/// Rank 0 checks the flags against the world, hears every worker's hello
/// (at most --timeout-s, its default when the flags are bad), then tells
/// them the verdict before anything is measured.
fn rank_zero(
    world: &SimpleCommunicator,
    checked: Result<ProbePlan, InputError>,
    print: impl FnOnce(&ProbeReport, &ProbePlan) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let ranks = world.size() as usize;
    let checked = checked.and_then(|plan| check_ranks(plan, ranks));
    let timeout_s = checked
        .as_ref()
        .map_or(DEFAULT_TIMEOUT_S, |plan| plan.timeout_s);
    let hosts = hear_hosts(world, timeout_s);
    // Printed before the verdict: the workers exit as soon as they hear,
    // and the launcher may then end rank 0 first.
    if let Err(e) = &checked {
        crate::errln!("error: {e}");
    }
    let verdict = u8::from(checked.is_err());
    for w in 1..ranks as i32 {
        world
            .process_at_rank(w)
            .send_with_tag(&verdict, TAG_VERDICT);
    }
    let Ok(plan) = checked else {
        return Err(QuietExit(2).into());
    };
    let watchdog = Watchdog::start(timeout_s);
    let report = master::master(world, &plan, hosts, &watchdog);
    for w in 1..ranks as i32 {
        world
            .process_at_rank(w)
            .send_with_tag(&[DONE, 0, 0, 0][..], TAG_COMMAND);
    }
    watchdog.idle();
    print(&report?, &plan)
}

/// Every rank's host (rank 0's first) from the workers' hellos; a worker
/// not heard from within `timeout_s` is named and the job ends.
fn hear_hosts(world: &SimpleCommunicator, timeout_s: f64) -> Vec<String> {
    let comm = Comm::new(world);
    match setup::await_hellos(&comm, timeout_s) {
        Ok(hellos) => hellos.into_iter().map(|h| h.host).collect(),
        Err(HelloError::Silent { silent, .. }) => {
            crate::errln!(
                "error: probe: no answer from worker {} (its host name, at the start) within {timeout_s} s (--timeout-s): it is stopped, hung or gone; ending the job (MPI_Abort)",
                silent[0]
            );
            comm.abort(1)
        }
        Err(e) => {
            crate::errln!("error: probe: {e}");
            comm.abort(1)
        }
    }
}

/// Wait without spinning until `from` has sent a message with `tag`.
fn wait_for(from: &Process<'_>, tag: i32) {
    while from.immediate_probe_with_tag(tag).is_none() {
        std::thread::sleep(IDLE_SLEEP);
    }
}

/// The plan, or the refusal of a world too small to measure a link in.
fn check_ranks(plan: ProbePlan, ranks: usize) -> Result<ProbePlan, InputError> {
    if ranks < 2 {
        return Err(InputError::value(
            "MPI ranks",
            ranks,
            "is too few: probe measures the links between rank 0 (the master) and ranks 1..K (the workers); run it as mpirun -n K+1 gradcode probe with K >= 1",
        ));
    }
    Ok(plan)
}

/// A worker: wait for each command without spinning, carry it out.
fn worker(world: &SimpleCommunicator) {
    let master = world.process_at_rank(0);
    let mut buffer = Vec::new();
    loop {
        while master.immediate_probe_with_tag(TAG_COMMAND).is_none() {
            std::thread::sleep(IDLE_SLEEP);
        }
        let mut command = [0u64; 4];
        master.receive_into_with_tag(&mut command[..], TAG_COMMAND);
        let [kind, bytes, count, peer] = command;
        let bytes = bytes as usize;
        if buffer.len() < bytes {
            buffer.resize(bytes, 0u8);
        }
        let other = world.process_at_rank(peer as i32);
        match kind {
            PING_PONG => {
                for _ in 0..count {
                    other.receive_into_with_tag(&mut buffer[..bytes], TAG_DATA);
                    other.send_with_tag(&buffer[..bytes], TAG_DATA);
                }
            }
            SEND => master.send_with_tag(&buffer[..bytes], TAG_DATA),
            PEER_PING => {
                let one_way = fastest_one_way(&other, &mut buffer, bytes, count as usize);
                master.send_with_tag(&[one_way][..], TAG_RESULT);
            }
            _ => return,
        }
    }
}
