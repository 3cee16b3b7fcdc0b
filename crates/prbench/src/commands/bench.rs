//! `prbench bench …`: the flags are [`prbench_bench::flags`]; [`prbench_bench::command::run`]
//! turns them into the bench's options and runs it. Here the result (table or JSON line) goes
//! to stdout and progress lines to stderr.

use anyhow::Result;
use prbench_bench::command::{Caller, Output};

use crate::cli::BenchCommand;

/// The benches' output on the terminal: results on stdout, progress lines on stderr.
struct Terminal;

impl Output for Terminal {
    fn log(&self, line: &str) {
        eprintln!("{line}");
    }

    fn result(&self, text: &str) {
        print!("{text}");
    }
}

/// Runs one `prbench bench` sub-verb.
pub fn run(cmd: BenchCommand) -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let caller = Caller { code_version: crate::code_version(), args: &args };
    prbench_bench::command::run(&cmd, &caller, &Terminal)
}
