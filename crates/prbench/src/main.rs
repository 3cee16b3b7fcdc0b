//! The `prbench` binary: parses flags, calls the libraries, prints results (stdout) and
//! progress and errors (stderr).

mod bounds;
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

/// Exit status for output cut short by a closed pipe: 128 + SIGPIPE, what a shell reports for
/// a tool that the signal ended (`yes | head` under `set -o pipefail`).
const BROKEN_PIPE_EXIT: i32 = 141;

/// Makes a broken pipe on stdout or stderr a quiet exit: `prbench … | head` ends without a
/// panic message and backtrace (exit 101) when `head` stops reading. `println!` panics on a
/// closed pipe because the Rust runtime ignores SIGPIPE; restoring SIGPIPE's default instead
/// would also let a peer that closes an HTTP connection (remote engines, `serve-reward`) kill
/// the process, so only the print panics are caught. Every other panic keeps the default hook.
fn quiet_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info.payload_as_str().unwrap_or("");
        if msg.starts_with("failed printing to std")
            && (msg.contains("Broken pipe") || msg.contains("os error 32"))
        {
            std::process::exit(BROKEN_PIPE_EXIT);
        }
        default(info);
    }));
}

fn main() -> ExitCode {
    quiet_broken_pipe();
    let cli = cli::Cli::parse();
    let result = match cli.command {
        cli::Command::Eval(args) => commands::eval::run(args),
        cli::Command::Data(cmd) => commands::data::run(cmd),
        cli::Command::Train(cmd) => commands::train::run(cmd),
        cli::Command::Bench(cmd) => commands::bench::run(cmd),
        cli::Command::Cache(cmd) => commands::cache::run(cmd),
        cli::Command::Retrieve(args) => commands::retrieve::run(args),
        cli::Command::Bon(cmd) => commands::bon::run(cmd),
        cli::Command::Correlate(args) => commands::correlate::run(args),
        cli::Command::Report(args) => commands::report::run(args),
        cli::Command::Leaderboard(args) => commands::report::leaderboard(args),
        cli::Command::Build(args) => commands::build::run(args),
        cli::Command::Annotate(cmd) => commands::annotate::run(cmd),
        cli::Command::ServeReward(args) => commands::serve_reward::run(args),
        cli::Command::Export(args) => commands::export::run(args),
        cli::Command::Study(args) => commands::study::run(args),
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
