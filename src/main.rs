//! The `gradcode` binary: parse the command line, run, map errors to exit status.
//!
//! Exit status 0 on success, 2 on bad input (config, flags, files) with one
//! line on stderr that names the field and the rule, 1 on any other failure.

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{CommandFactory, FromArgMatches};
use gradcode::cli::{Cli, run};

fn main() -> ExitCode {
    // The trace probe's child (see gradcode::trace::probe): not a command a
    // user runs, so not in clap's help.
    if let Some(code) = gradcode::trace::probe_child() {
        return code;
    }
    gradcode::process_setup::init();
    gradcode::logging::init();
    // `--version` prints the build too (commit, features, MPI and HDF5 libraries).
    let long_version: &'static str =
        Box::leak(gradcode::provenance::long_version().into_boxed_str());
    let parsed = Cli::command()
        .long_version(long_version)
        .try_get_matches()
        .and_then(|matches| Cli::from_arg_matches(&matches));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            // Help and version go to stdout with status 0.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            // Under mpirun every rank parses the same command line: one line
            // from rank 0, not one per rank run together. The other ranks
            // end with status 0, before MPI starts: a rank that ended with 2
            // made mpirun abort the job, and over TCP rank 0 was killed
            // before it printed the line (the job then said nothing but
            // mpirun's notice). The job's status is rank 0's, 2.
            if gradcode::output::launcher_rank().is_some_and(|rank| rank != 0) {
                return ExitCode::SUCCESS;
            }
            // clap's first paragraph (the error and what it is about), on one line.
            let text = e.to_string();
            let first: Vec<&str> = text
                .lines()
                .map(str::trim)
                .take_while(|l| !l.is_empty())
                .collect();
            gradcode::errln!("{}", first.join(" "));
            return ExitCode::from(2);
        }
    };
    match run(cli) {
        Ok(()) => match gradcode::output::stdout_failure() {
            // A closed pipe is not a failure (see gradcode::output); anything else is.
            Some(failure) => {
                gradcode::errln!("error: writing to stdout: {failure}; the output is incomplete");
                ExitCode::from(1)
            }
            None => ExitCode::SUCCESS,
        },
        Err(e) => ExitCode::from(gradcode::output::report_error(&e)),
    }
}
