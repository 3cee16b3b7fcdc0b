//! The `prbench` binary: parses flags, calls the libraries, prints results (stdout) and
//! progress and errors (stderr).

mod cli;
mod commands;
mod progress;

use std::process::ExitCode;

use clap::Parser;

/// prbench version plus the git commit it was built from.
pub fn code_version() -> &'static str {
    concat!(env!("CARGO_PKG_VERSION"), " (", env!("PRBENCH_GIT_COMMIT"), ")")
}

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let result = match cli.command {
        cli::Command::Eval(args) => commands::eval::run(args),
        cli::Command::Data(cmd) => commands::data::run(cmd),
        cli::Command::Train(cmd) => commands::train::run(cmd),
        cli::Command::Bench(cli::BenchCommand::Rm(args)) => commands::bench::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::FAILURE
        }
    }
}
