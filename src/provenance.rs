//! What ran, where and when: the build (git commit, features, MPI and HDF5
//! library versions), the command line, the hosts of the ranks, the Slurm
//! job, and the times. `gradcode --version` prints the build; every trace
//! stores all of it as root attributes (`inspect` shows them).

/// The git commit this binary was built from ("unknown" outside a checkout).
pub const GIT_COMMIT: &str = env!("GRADCODE_GIT_COMMIT");

/// The cargo features built in.
pub fn features() -> String {
    let mut on = Vec::new();
    if cfg!(feature = "mpi") {
        on.push("mpi");
    }
    if cfg!(feature = "hdf5") {
        on.push("hdf5");
    }
    if on.is_empty() {
        "none".to_string()
    } else {
        on.join(",")
    }
}

/// The MPI library's own version line (MPI_Get_library_version, callable
/// before MPI_Init), or "none" without the `mpi` feature.
pub fn mpi_library() -> String {
    #[cfg(feature = "mpi")]
    {
        mpi::environment::library_version()
            .map(|v| {
                let v = v.split('\0').next().unwrap_or("");
                v.lines().next().unwrap_or("").trim().to_string()
            })
            .unwrap_or_else(|_| "unknown".to_string())
    }
    #[cfg(not(feature = "mpi"))]
    {
        "none".to_string()
    }
}

/// The HDF5 library's version, or "none" without the `hdf5` feature.
pub fn hdf5_library() -> String {
    crate::trace::hdf5_library()
}

/// `gradcode --version`: the version and the build.
pub fn long_version() -> String {
    format!(
        "{}\ncommit {GIT_COMMIT}\nfeatures {}\nMPI {}\n{}",
        env!("CARGO_PKG_VERSION"),
        features(),
        mpi_library(),
        hdf5_library()
    )
}

/// The command line, each argument quoted when it needs to be.
pub fn command_line() -> String {
    std::env::args()
        .map(|a| {
            if !a.is_empty()
                && a.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./=,:@+%".contains(&b))
            {
                a
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Now, as an RFC 3339 UTC time with seconds (`2026-11-24T01:49:15Z`).
pub fn now_utc() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// The hosts of the ranks, compactly: `node01 (ranks 0-6), node02 (ranks 7-12)`.
pub fn hosts(per_rank: &[String]) -> String {
    let mut parts: Vec<(String, usize, usize)> = Vec::new();
    for (rank, host) in per_rank.iter().enumerate() {
        match parts.last_mut() {
            Some((h, _, last)) if h == host && *last + 1 == rank => *last = rank,
            _ => parts.push((host.clone(), rank, rank)),
        }
    }
    parts
        .iter()
        .map(|(h, a, b)| {
            if a == b {
                format!("{h} (rank {a})")
            } else {
                format!("{h} (ranks {a}-{b})")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

static HOSTS: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Record the hosts of this job's ranks (rank 0 under MPI, once gathered);
/// a trace written later names them.
pub fn set_hosts(per_rank: &[String]) {
    let _ = HOSTS.set(hosts(per_rank));
}

/// This machine's host name.
pub fn local_host() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates
    // within it when the name fits (and we stop at the first NUL either way).
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0;
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    if ok {
        String::from_utf8_lossy(&buf[..end]).into_owned()
    } else {
        "unknown".to_string()
    }
}

/// The hosts as set by [`set_hosts`], else this machine (a single process).
fn job_hosts() -> String {
    HOSTS
        .get()
        .cloned()
        .unwrap_or_else(|| hosts(&[local_host()]))
}

/// The root attributes a trace gets when it is created.
pub fn trace_attributes() -> Vec<(&'static str, String)> {
    let env = |name: &str| std::env::var(name).unwrap_or_default();
    let hosts = job_hosts();
    // HDF5 strings cannot hold NUL: none of these should, none may.
    let clean = |v: String| v.replace('\0', "");
    vec![
        ("git_commit", GIT_COMMIT.to_string()),
        ("build_features", features()),
        ("mpi_library", mpi_library()),
        ("hdf5_library", hdf5_library()),
        ("command_line", command_line()),
        ("hosts", hosts),
        ("slurm_job_id", env("SLURM_JOB_ID")),
        ("slurm_array_job_id", env("SLURM_ARRAY_JOB_ID")),
        ("slurm_array_task_id", env("SLURM_ARRAY_TASK_ID")),
        ("started_at", now_utc()),
    ]
    .into_iter()
    .map(|(key, value)| (key, clean(value)))
    .collect()
}

/// One line of the `resumed` attribute: when, from which iteration, by which
/// command, on which hosts, with which build.
pub fn resume_line(iteration: u64) -> String {
    format!(
        "{} from iteration {iteration}: {} on {} (commit {GIT_COMMIT})",
        now_utc(),
        command_line(),
        job_hosts()
    )
    .replace('\0', "")
}

/// The provenance attributes `inspect` shows, in order (with `ended_at`,
/// written when the run ends, and `resumed`, a line per resume).
pub const TRACE_KEYS: [&str; 12] = [
    "git_commit",
    "build_features",
    "mpi_library",
    "hdf5_library",
    "command_line",
    "hosts",
    "slurm_job_id",
    "slurm_array_job_id",
    "slurm_array_task_id",
    "started_at",
    "ended_at",
    "resumed",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn now_is_an_rfc3339_utc_time() {
        let t = now_utc();
        assert_eq!(t.len(), "2026-11-24T01:49:15Z".len(), "{t}");
        assert!(t.ends_with('Z') && t.as_bytes()[10] == b'T', "{t}");
        assert!(humantime::parse_rfc3339(&t).is_ok(), "{t}");
    }

    #[test]
    fn hosts_are_grouped_by_consecutive_ranks() {
        let h = |v: &[&str]| hosts(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(
            h(&["a", "a", "a", "b", "b"]),
            "a (ranks 0-2), b (ranks 3-4)"
        );
        assert_eq!(h(&["a", "b", "a"]), "a (rank 0), b (rank 1), a (rank 2)");
    }
}
