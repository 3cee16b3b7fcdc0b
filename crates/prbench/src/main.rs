//! The `prbench` binary: parses flags, calls the libraries, prints results (stdout) and
//! progress and errors (stderr).

mod cli;
mod commands;
mod progress;

use std::process::ExitCode;

use clap::Parser;

/// mimalloc instead of glibc malloc: candle allocates and frees large tensors on every layer,
/// and glibc returns them to the kernel each time (mmap/munmap), which cost the MiniLM embedder
/// a third of its wall time in system calls (docs/perf.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
        cli::Command::Bench(cli::BenchCommand::Remote(args)) => commands::bench_remote::run(args),
        cli::Command::Bench(cli::BenchCommand::Serve(args)) => commands::bench_serve::run(args),
        cli::Command::Bench(cli::BenchCommand::Harness(args)) => commands::bench_harness::run(args),
        cli::Command::Bench(cli::BenchCommand::Judge(args)) => commands::bench_judge::run(args),
        cli::Command::Bench(cli::BenchCommand::All(args)) => commands::bench_all::run(args),
        cli::Command::Bench(cli::BenchCommand::JudgeWorker(args)) => commands::bench_judge::worker(args),
        cli::Command::Cache(cmd) => commands::cache::run(cmd),
        cli::Command::Retrieve(args) => commands::retrieve::run(args),
        cli::Command::Bon(cmd) => commands::bon::run(cmd),
        cli::Command::Correlate(args) => commands::correlate::run(args),
        cli::Command::ServeReward(args) => commands::serve_reward::run(args),
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
