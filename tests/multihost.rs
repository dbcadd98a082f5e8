//! Several hosts on one machine (issue 26, item 3): `scripts/netns-hosts.sh`
//! makes each "host" a network namespace linked to a bridge by a veth pair
//! (optionally rate-limited with tc tbf), and one mpirun places its ranks on
//! them over OpenMPI's TCP transport (`btl tcp,self`: no shared memory
//! between hosts). Checked here:
//!
//! - training across 3 hosts ends with the same θ, bit for bit, as the same
//!   config on one host over shared memory;
//! - a host whose link goes down mid-run ends the job within
//!   `train.result_timeout_s` (and a margin), naming the workers lost, and
//!   the trace says `failed`;
//! - `probe` measures a 100 Mbit/s link's workers, and pairs of workers
//!   across it, at 0.5..1.2 x the limit, and the unlimited hosts' workers
//!   and a pair inside one host faster;
//! - a test bed left by a run killed with SIGKILL is removed by the next
//!   test bed's setup (`netns-hosts.sh sweep`), one of a live process kept.
//!
//! Needs root, `ip` and `tc` and OpenMPI; otherwise each test says on stderr
//! that it was skipped and why, and passes. Every test bed has its own
//! namespaces (the test process's id and a letter per test) and subnet, and
//! is removed when the test ends, passes, fails or panics (a guard's Drop;
//! the script removes what it made when `up` fails); a SIGKILL leaves it,
//! and the next run's setup removes it.
#![cfg(all(feature = "mpi", feature = "hdf5"))]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/netns-hosts.sh")
}

/// Say why a test did not run, past libtest's capture of `eprintln!`.
fn skipped(test: &str, why: &str) {
    let _ = writeln!(std::io::stderr(), "SKIPPED multihost::{test}: {why}");
}

fn runs(program: &str, args: &[&str]) -> Option<Output> {
    Command::new(program).args(args).output().ok()
}

/// Why the test bed cannot be made here, if it cannot.
fn cannot_run() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("network namespaces need root".into());
    }
    for tool in ["ip", "tc"] {
        if !runs(tool, &["-V"]).is_some_and(|o| o.status.success()) {
            return Some(format!("`{tool}` (iproute2) is not installed"));
        }
    }
    let launcher = std::env::var("GRADCODE_TEST_MPIEXEC").unwrap_or_default();
    if let Some(program) = launcher.split_whitespace().next() {
        return Some(format!(
            "GRADCODE_TEST_MPIEXEC = {program}: the test bed places ranks with OpenMPI's mpirun options"
        ));
    }
    let version = runs("mpirun", &["--version"]).map(|o| common::stdout(&o));
    if !version.as_deref().is_some_and(|v| v.contains("Open MPI")) {
        return Some("mpirun is not OpenMPI's".into());
    }
    None
}

/// The prefix of every test bed's name here: `gct`, the test process's id
/// and a letter.
const PREFIX: &str = "gct";

/// Remove the test beds of test processes that are gone
/// (`netns-hosts.sh sweep`).
fn sweep_stale() {
    let out = Command::new(script())
        .args(["sweep", PREFIX])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "netns-hosts.sh sweep {PREFIX} failed: {}",
        common::stderr(&out)
    );
}

/// The namespaces whose names start with `start`.
fn namespaces_of(start: &str) -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    common::stdout(&out)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(start))
        .map(str::to_string)
        .collect()
}

/// A test bed of hosts 1..N, removed on drop.
struct TestBed {
    name: String,
    subnet: String,
}

impl TestBed {
    /// Hosts 1..=`hosts`, `limits` = (host, tc rate). `None`, said on
    /// stderr, when the machine cannot make one.
    fn up(test: &str, letter: u8, hosts: usize, limits: &[(usize, &str)]) -> Option<Self> {
        if let Some(why) = cannot_run() {
            skipped(test, &why);
            return None;
        }
        // Test beds of earlier runs killed with SIGKILL (no Drop ran) first.
        sweep_stale();
        let pid = std::process::id();
        let name = format!("{PREFIX}{pid}{}", letter as char);
        // 10.(100 + letter).(pid mod 256).0/24: one per test and test process.
        let subnet = format!("10.{}.{}", 100 + (letter - b'a'), pid % 256);
        let mut args = vec![
            "up".to_string(),
            name.clone(),
            subnet.clone(),
            hosts.to_string(),
        ];
        args.extend(limits.iter().map(|(h, rate)| format!("{h}={rate}")));
        let out = Command::new(script()).args(&args).output().unwrap();
        let err = common::stderr(&out);
        if !out.status.success() {
            // Root without the capability (some containers): not this code's failure.
            if err.contains("Operation not permitted") || err.contains("Permission denied") {
                skipped(
                    test,
                    &format!("the test bed cannot be made: {}", err.trim()),
                );
                return None;
            }
            panic!("netns-hosts.sh up failed: {err}");
        }
        Some(Self { name, subnet })
    }

    fn address(&self, host: usize) -> String {
        format!("{}.{host}", self.subnet)
    }

    /// `mpirun` in host 1 with `slots[i]` ranks on host i + 1 (rank 0 on
    /// host 1), TCP only, the MCA parameters `mca`, `gradcode ARGS...`.
    fn mpirun(&self, slots: &[usize], mca: &[(&str, &str)], args: &[&str]) -> Command {
        let hosts: Vec<String> = slots
            .iter()
            .enumerate()
            .map(|(i, n)| format!("{}:{n}", self.address(i + 1)))
            .collect();
        let network = format!("{}.0/24", self.subnet);
        let agent = format!("{} rsh {}", script().display(), self.name);
        let ranks: usize = slots.iter().sum();
        let mut cmd = Command::new(script());
        cmd.args(["exec", &self.name, "1", "mpirun"])
            .args(["--host", &hosts.join(","), "-n", &ranks.to_string()])
            .args(["--mca", "plm_rsh_agent", &agent])
            .args(["--mca", "btl", "tcp,self"])
            .args(["--mca", "btl_tcp_if_include", &network])
            .args(["--mca", "oob_tcp_if_include", &network]);
        for (key, value) in mca {
            cmd.args(["--mca", key, value]);
        }
        cmd.arg(env!("CARGO_BIN_EXE_gradcode"))
            .args(args)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
        cmd
    }

    /// Host `host`'s link (its port on the bridge) up or down.
    fn link(&self, host: usize, up: bool) {
        let state = if up { "up" } else { "down" };
        let out = Command::new(script())
            .args(["link", &self.name, &host.to_string(), state])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", common::stderr(&out));
    }
}

impl Drop for TestBed {
    fn drop(&mut self) {
        let out = Command::new(script())
            .args(["down", &self.name])
            .output()
            .expect("run netns-hosts.sh down");
        if !out.status.success() {
            let _ = writeln!(
                std::io::stderr(),
                "netns-hosts.sh down {} failed: {}",
                self.name,
                common::stderr(&out)
            );
        }
    }
}

/// Kill our child (mpirun, by its pid) if it is still running when a test
/// ends early, so that no job outlives the test bed's Drop.
struct Job(Child);

impl Drop for Job {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Model time units per computation of workers 1..6 (as in
/// tests/bit_reproducible.rs): due times at least 12 ms apart, so that the
/// same messages decode in every run.
const UNIT_TIMES: &str = "2.2,2.5,2.8,3.1,3.5,3.9";

fn replay_config(csv: &Path, iterations: usize) -> String {
    format!(
        "workers = 6\nseed = 4\n[scheme]\nkind = \"gc-cyclic\"\nload = 3\n[straggler]\nmodel = \"trace\"\ntrace_file = \"{}\"\ntime_unit_ms = 40.0\n[data]\nkind = \"synthetic-logistic\"\ntrain_samples = 600\ntest_samples = 60\nfeatures = 30\n[train]\niterations = {iterations}\nlearning_rate = 0.5\noptimizer = \"nesterov\"\n",
        csv.display()
    )
}

/// θ's bits and, per iteration, the workers used and the messages received.
type Run = (Vec<u64>, Vec<(Vec<bool>, u64)>);

fn finished(out: &Output, trace: &Path, what: &str) -> Run {
    assert!(out.status.success(), "{what}: {}", common::stderr(out));
    let theta = common::theta(&common::json(out));
    let records = gradcode::trace::read_trace(trace, "/").unwrap().records;
    (
        theta.iter().map(|x| x.to_bits()).collect(),
        records
            .iter()
            .map(|r| (r.used.clone(), r.messages_received))
            .collect(),
    )
}

#[test]
fn training_across_three_hosts_equals_one_host_bit_for_bit() {
    const TEST: &str = "training_across_three_hosts_equals_one_host_bit_for_bit";
    let _one = common::one_at_a_time();
    let Some(bed) = TestBed::up(TEST, b'a', 3, &[]) else {
        return;
    };
    let csv = common::scratch("multihost", "times.csv");
    std::fs::write(&csv, format!("w1,w2,w3,w4,w5,w6\n{UNIT_TIMES}\n")).unwrap();
    let text = replay_config(&csv, 6);
    // A loaded machine may delay a worker past the 12 ms between due times;
    // then the runs decode other messages and are repeated (at most 3 times).
    for attempt in 1..=3 {
        let (mut one_host, trace) =
            common::train_command("multihost", &format!("one-{attempt}"), 7, &text, &[]);
        let one = finished(&one_host.output().unwrap(), &trace, "one host");
        let config = common::scratch("multihost", &format!("one-{attempt}.toml"));
        let spread_trace = common::scratch("multihost", &format!("three-{attempt}.h5"));
        let args = common::train_args(&config, &spread_trace);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        // Master and 2 workers on host 1, 2 workers on each of hosts 2 and 3.
        let out = bed.mpirun(&[3, 2, 2], &[], &args).output().unwrap();
        let three = finished(&out, &spread_trace, "three hosts");
        if one.1 == three.1 {
            assert_eq!(
                one.0, three.0,
                "the same messages decoded, yet θ differs between one host and three"
            );
            return;
        }
    }
    panic!("in 3 attempts the one-host and three-host runs never decoded the same messages");
}

#[test]
fn a_host_whose_link_goes_down_fails_the_job_naming_its_workers() {
    const TEST: &str = "a_host_whose_link_goes_down_fails_the_job_naming_its_workers";
    const TIMEOUT_S: f64 = 5.0;
    /// mpirun notices a daemon it cannot reach only when TCP gives up on
    /// it: by its keepalive on an idle connection (by default after 300 s
    /// and 9 probes 20 s apart) or, with data unacknowledged (MPI_Abort's
    /// kill), after `net.ipv4.tcp_retries2` retransmissions (15 by default,
    /// many minutes). Until then the job outlives the lost host. Here
    /// probes every 2 s, given up after 5 unanswered (10-12 s, after the
    /// master's timeout, so that the master names the workers and closes
    /// the trace as failed first), and 3 retransmissions (about 3 s) in
    /// host 1, where mpirun runs.
    const KEEPALIVE: [(&str, &str); 3] = [
        ("oob_tcp_keepalive_time", "2"),
        ("oob_tcp_keepalive_intvl", "2"),
        ("oob_tcp_keepalive_probes", "5"),
    ];
    /// Beyond the timeout: the master's 3 s wait for the workers to
    /// acknowledge its stop, the retransmissions, mpirun's end (16 s in all
    /// in a run by hand).
    const MARGIN_S: f64 = 20.0;
    let _one = common::one_at_a_time();
    let Some(bed) = TestBed::up(TEST, b'b', 3, &[]) else {
        return;
    };
    // In host 1's network namespace only.
    let set = Command::new(script())
        .args(["exec", &bed.name, "1", "sh", "-c"])
        .arg("echo 3 > /proc/sys/net/ipv4/tcp_retries2")
        .output()
        .unwrap();
    assert!(set.status.success(), "{}", common::stderr(&set));
    let csv = common::scratch("multihost", "times-down.csv");
    std::fs::write(&csv, format!("w1,w2,w3,w4,w5,w6\n{UNIT_TIMES}\n")).unwrap();
    // Uncoded: the result of every worker is needed, so losing host 3's
    // workers (5 and 6) stops the decoding.
    let text = replay_config(&csv, 1000)
        .replace("kind = \"gc-cyclic\"\nload = 3", "kind = \"uncoded\"")
        + &format!("result_timeout_s = {TIMEOUT_S}\n[output]\nprogress_every = 1\n");
    let config = common::scratch("multihost", "down.toml");
    std::fs::write(&config, &text).unwrap();
    let trace = common::scratch("multihost", "down.h5");
    let args = [
        "train",
        "--config",
        config.to_str().unwrap(),
        "--out",
        trace.to_str().unwrap(),
        "--force",
    ];
    let child = bed
        .mpirun(&[3, 2, 2], &KEEPALIVE, &args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut job = Job(child);
    let stdout = job.0.stdout.take().unwrap();
    let stdout = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut BufReader::new(stdout), &mut text);
        text
    });
    // The progress lines on stderr say when 3 iterations are done.
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let stderr = job.0.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut err = String::new();
    let started = Instant::now();
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60).saturating_sub(started.elapsed()))
            .unwrap_or_else(|_| panic!("no third iteration within 60 s: {err}"));
        err += &line;
        err.push('\n');
        if line.starts_with("iteration 3/") {
            break;
        }
    }
    bed.link(3, false);
    let down = Instant::now();
    let deadline = Duration::from_secs_f64(TIMEOUT_S + MARGIN_S);
    let status = loop {
        if let Some(status) = job.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            down.elapsed() < deadline,
            "the job still runs {} s after host 3's link went down (train.result_timeout_s = {TIMEOUT_S}): {err}{}",
            down.elapsed().as_secs_f64(),
            rx.try_iter().collect::<Vec<_>>().join("\n")
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let ended_s = down.elapsed().as_secs_f64();
    reader.join().unwrap();
    err += &rx.try_iter().collect::<Vec<_>>().join("\n");
    let _ = stdout.join();
    assert!(!status.success(), "{err}");
    let _ = writeln!(
        std::io::stderr(),
        "multihost: the job ended {ended_s:.1} s after host 3's link went down"
    );
    // The master's error names the workers it waited for: those of host 3
    // whose result of that iteration had not arrived when the link went
    // down (one of them may have sent it just before).
    let line = err
        .lines()
        .find(|l| l.starts_with("error: iteration"))
        .unwrap_or_else(|| panic!("no error line of the master: {err}"));
    let (_, named) = line
        .split_once("no answer from workers ")
        .unwrap_or_else(|| panic!("the error names no workers: {line}"));
    let named: Vec<&str> = named.split(':').next().unwrap().split(", ").collect();
    assert!(
        !named.is_empty() && named.iter().all(|w| ["5", "6"].contains(w)),
        "the error names workers {named:?}, not host 3's (5, 6): {line}"
    );
    let inspected = common::gradcode(&["inspect", "--json", trace.to_str().unwrap()]);
    let summary = common::json(&inspected);
    assert_eq!(summary["status"], "failed", "{summary}");
}

#[test]
fn probe_measures_a_rate_limited_link() {
    const TEST: &str = "probe_measures_a_rate_limited_link";
    /// Host 2's link: 100 Mbit/s, in bytes per second.
    const LIMIT: f64 = 100e6 / 8.0;
    let _one = common::one_at_a_time();
    let Some(bed) = TestBed::up(TEST, b'c', 3, &[(2, "100mbit")]) else {
        return;
    };
    // Rank 0 (master) and worker 1 on host 1, workers 2 and 3 on host 2
    // (limited), worker 4 on host 3.
    let out = bed
        .mpirun(
            &[2, 2, 1],
            &[],
            &[
                "probe",
                "--max-bytes",
                "1048576",
                "--repetitions",
                "3",
                "--json",
            ],
        )
        .output()
        .unwrap();
    let v = common::json(&out);
    let bandwidth = |w: usize| {
        let x = v["workers"][w - 1]["bandwidth_bytes_per_s"]
            .as_f64()
            .unwrap();
        assert!(x.is_finite() && x > 0.0, "{v}");
        x
    };
    // Placed as asked: each host has its own name (netns-hosts.sh).
    for (w, host) in [(1, 1), (2, 2), (3, 2), (4, 3)] {
        let name = v["workers"][w - 1]["host"].as_str().unwrap();
        assert!(name.ends_with(&format!("-h{host}")), "worker {w} on {name}");
    }
    for w in [2, 3] {
        let ratio = bandwidth(w) / LIMIT;
        assert!(
            (0.5..=1.2).contains(&ratio),
            "worker {w} behind the 100 Mbit/s link measured {:.3e} B/s, {ratio:.2} x the limit: {v}",
            bandwidth(w)
        );
    }
    for w in [1, 4] {
        assert!(
            bandwidth(w) > 2.0 * LIMIT,
            "worker {w} on an unlimited link measured {:.3e} B/s, not above 2 x the limit: {v}",
            bandwidth(w)
        );
    }
    // Between workers: 1-2 and 3-4 cross host 2's link, 2-3 stay inside
    // host 2; the key is the median of the three, a limited pair's.
    let pair = |i: usize, workers: [usize; 2]| {
        let p = &v["peers"][i];
        assert_eq!(p["workers"], serde_json::json!(workers), "{v}");
        let x = p["bandwidth_bytes_per_s"].as_f64().unwrap();
        assert!(x.is_finite() && x > 0.0, "{v}");
        x
    };
    for (i, workers) in [(0, [1, 2]), (2, [3, 4])] {
        let ratio = pair(i, workers) / LIMIT;
        assert!(
            (0.5..=1.2).contains(&ratio),
            "workers {workers:?} across the 100 Mbit/s link measured {ratio:.2} x the limit: {v}"
        );
    }
    assert!(
        pair(1, [2, 3]) > 2.0 * LIMIT,
        "workers 2 and 3 inside host 2 measured {:.3e} B/s, not above 2 x the limit: {v}",
        pair(1, [2, 3])
    );
    let key = v["network"]["peer_bandwidth_bytes_per_s"].as_f64().unwrap();
    assert!((0.5..=1.2).contains(&(key / LIMIT)), "{v}");
}

#[test]
fn a_test_bed_left_by_a_killed_run_is_swept_and_a_live_ones_kept() {
    const TEST: &str = "a_test_bed_left_by_a_killed_run_is_swept_and_a_live_ones_kept";
    let _one = common::one_at_a_time();
    // A live process's test bed (this one's): kept by the sweep.
    let Some(live) = TestBed::up(TEST, b'd', 1, &[]) else {
        return;
    };
    // A run that made its test bed and was killed with SIGKILL: nothing
    // removed it.
    let mut killed = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "'{}' up {PREFIX}$$k 10.250.$(($$ % 256)) 2 && echo made && exec sleep 600",
            script().display()
        ))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stale = format!("{PREFIX}{}k-", killed.id());
    let mut line = String::new();
    BufReader::new(killed.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    killed.kill().unwrap(); // SIGKILL
    killed.wait().unwrap();
    assert_eq!(line, "made\n", "the killed run's test bed was not made");
    assert_eq!(namespaces_of(&stale).len(), 3, "left behind");
    // The next test bed's setup sweeps it.
    let Some(next) = TestBed::up(TEST, b'e', 1, &[]) else {
        return;
    };
    assert_eq!(namespaces_of(&stale), Vec::<String>::new(), "not swept");
    let kept = namespaces_of(&format!("{}-", live.name));
    assert_eq!(
        kept.len(),
        2,
        "a live process's test bed was swept: {kept:?}"
    );
    drop(next);
    drop(live);
}
