//! prbench's performance harnesses and load testers (docs/perf.md): each of prbench's engines measured
//! side by side with a reference engine in the same run, and the harness itself at full
//! benchmark scale.
//!
//! - [`rm`]: scalar reward models vs PyTorch/transformers (`tools/bench_rm.py`);
//! - [`rm_prefix`]: the scalar RM on eval's and best-of-N's real inputs, shared-prefix vs
//!   unshared vs transformers ([`inputs`] renders them);
//! - [`judge`]: the GGUF judge vs llama.cpp driven directly, each side a child process, and
//!   ([`judge::orders`]) in both orders with the shared prefix forked, on inputs [`inputs`]
//!   renders as eval does;
//! - [`generate`]: text generation, one sequence at a time and batched, vs llama.cpp's own
//!   HTTP server with `--parallel` slots, on the generating stages' prompts;
//! - [`harness`]: load, render, retrieve and write on a synthetic 2,830-row benchmark;
//! - [`remote`]: the `openai:` judge client against the loopback fault server;
//! - [`serve`]: the reward server under waves of concurrent requests ([`serve_load`] drives it);
//! - [`annotate_load`]: the rating server of `prbench annotate` under simulated annotators;
//! - [`report`]: the HTML report of a full-scale synthetic benchmark, opened in Chromium;
//! - [`all`]: every bench above but remote, serve and report, in one table.
//!
//! Each module turns its options into a report (`measure`) and the report into the table the
//! `prbench bench` command prints (`table`); progress lines go to a `log` callback, so the
//! binary decides where they are drawn. The command line is here too: [`flags`] holds the
//! `prbench bench` flags (clap groups) and [`command::run`] turns a parsed sub-verb into its
//! options, runs it and hands the result to an [`command::Output`], so the binary only parses
//! and prints. The judge and harness benches run the `prbench` binary itself as child
//! processes ([`prbench_exe`]), so that each side's memory is its own.
//!
//! Errors are `anyhow` errors: every one ends as a message of `prbench bench`, and most wrap a
//! failing child process, script or engine whose own error is the cause.
//!
//! ```no_run
//! let opts = prbench_bench::harness::HarnessOptions { scale: 0.01, rounds: 1, seed: 42, work: prbench_bench::default_work_dir() };
//! let report = prbench_bench::harness::measure(&opts, &|line| eprintln!("{line}"))?;
//! print!("{}", prbench_bench::harness::table(&report));
//! # Ok::<(), anyhow::Error>(())
//! ```
#![deny(missing_docs)]

pub mod all;
pub mod annotate_load;
pub mod child;
pub mod command;
pub mod flags;
pub mod generate;
pub mod harness;
pub mod inputs;
pub mod judge;
pub mod remote;
pub mod report;
pub mod rm;
pub mod rm_prefix;
pub mod serve;
pub mod serve_load;

use std::path::PathBuf;

/// Default working folder for bench models, inputs and logs: `$PRBENCH_MODELS/bench`.
pub fn default_work_dir() -> PathBuf {
    prbench_models::assets::models_dir().join("bench")
}

/// The `prbench` binary the child-process benches run (`prbench eval`, `prbench data
/// validate`, `prbench bench judge-worker`): the running executable, as these benches are
/// only reached through it.
///
/// # Errors
/// When the running executable cannot be located.
pub fn prbench_exe() -> anyhow::Result<PathBuf> {
    use anyhow::Context as _;
    std::env::current_exe().context("locating the prbench binary")
}

/// Limits this process's compute threads to `threads`, so that prbench's side of a
/// comparison runs on as many cores as the reference it is compared with (torch's
/// `--threads`): the rayon pool and candle's kernels (which read `RAYON_NUM_THREADS` on
/// every call) both take `threads`. Call it first, before anything has started the rayon pool.
///
/// # Errors
/// `threads` is 0, or the rayon pool was already started with another thread count.
pub fn use_threads(threads: usize) -> anyhow::Result<()> {
    anyhow::ensure!(threads > 0, "--threads takes a whole number of at least 1");
    // `set_var` races with readers on other threads; this runs at the start of a bench
    // command, before the process has started any.
    std::env::set_var("RAYON_NUM_THREADS", threads.to_string());
    if let Err(e) = rayon::ThreadPoolBuilder::new().num_threads(threads).build_global() {
        let running = rayon::current_num_threads();
        anyhow::ensure!(
            running == threads,
            "the compute thread pool already runs {running} threads, not --threads {threads}: {e}"
        );
    }
    Ok(())
}

/// `Ok` when `failed` (a bench's failed agreement checks, one line each) is empty, else an
/// error naming every one: a fast path that disagrees with its exact one is a bug, so the
/// command exits non-zero after printing its table.
///
/// # Errors
/// Any failed check.
pub fn agreement_passed(failed: &[String]) -> anyhow::Result<()> {
    anyhow::ensure!(
        failed.is_empty(),
        "{} agreement check(s) failed: a fast path disagrees with its exact one:\n  {}",
        failed.len(),
        failed.join("\n  ")
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn agreement_passed_names_every_failed_check() {
        assert!(super::agreement_passed(&[]).is_ok());
        let err = super::agreement_passed(&["a: Δ 0.2".into(), "b: 1 verdict differing".into()])
            .unwrap_err()
            .to_string();
        assert_eq!(err, "2 agreement check(s) failed: a fast path disagrees with its exact one:\n  a: Δ 0.2\n  b: 1 verdict differing");
    }
}
