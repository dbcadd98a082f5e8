//! Diagnostics on stderr: warnings (a training loss not recorded, a worker's
//! non-finite result, model buffers exhausted) unless the environment says
//! otherwise: `GRADCODE_LOG=off`, `info` (setup and shutdown), `debug` (every iteration, every
//! task a worker takes or abandons), `trace`, or per module
//! (`GRADCODE_LOG=gradcode::runtime::worker=debug`). Under MPI every line
//! names its rank. Errors a person must act on are not logs: they are one
//! line on stderr and an exit status, whatever `GRADCODE_LOG` says.

use std::io::Write;
use std::sync::OnceLock;

/// The environment variable that selects what is logged.
pub const ENV: &str = "GRADCODE_LOG";

static RANK: OnceLock<i32> = OnceLock::new();

/// Set up logging from `GRADCODE_LOG` (warnings when it is unset).
pub fn init() {
    let env = env_logger::Env::default().filter_or(ENV, "warn");
    let _ = env_logger::Builder::from_env(env)
        .format(|f, record| {
            let who = RANK
                .get()
                .map_or_else(String::new, |r| format!(" rank {r}"));
            writeln!(
                f,
                "[gradcode{who} {} {}] {}",
                record.level(),
                record.target(),
                record.args()
            )
        })
        .try_init();
}

/// Name this process's MPI rank in every log line from now on.
pub fn set_rank(rank: i32) {
    let _ = RANK.set(rank);
}
