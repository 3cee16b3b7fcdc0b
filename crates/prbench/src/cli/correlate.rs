//! `correlate` command-line types.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use prbench_report::correlation::BenchmarkSet;
use prbench_stats::rank::DEFAULT_RBO_P;

/// `--benchmark-set NAME=PATH[,PATH...]`.
fn parse_set(s: &str) -> Result<BenchmarkSet, String> {
    BenchmarkSet::parse(s)
}

/// Which benchmark figure of a run summary to use.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Position-debiased accuracy when the run judged both orders, else accuracy.
    Auto,
    /// Single-order strict accuracy (ties count as not correct), micro over examples.
    Accuracy,
    /// Position-debiased strict accuracy (both orders must be in the run).
    Debiased,
}

/// `correlate` arguments.
#[derive(Args, Debug)]
pub struct CorrelateArgs {
    /// Benchmark results: run folders or their summary.json, or a CSV `model,score`.
    #[arg(long, num_args = 1.., required_unless_present = "benchmark_set", conflicts_with = "benchmark_set")]
    pub benchmark: Vec<PathBuf>,
    /// A named benchmark to compare side by side with others against the one downstream
    /// ranking: `NAME=PATH[,PATH...]`, the paths as --benchmark takes them. Repeat per benchmark.
    #[arg(long, value_name = "NAME=PATH[,PATH...]", value_parser = parse_set)]
    pub benchmark_set: Vec<BenchmarkSet>,
    /// With --benchmark-set: the downstream ranking's name in the tables (default: its file names).
    #[arg(long)]
    pub downstream_name: Option<String>,
    /// Downstream results: `prbench bon` tables (`bon-<judge>.json`), or a CSV `model,score`.
    #[arg(long, num_args = 1.., required = true)]
    pub downstream: Vec<PathBuf>,
    /// Which benchmark figure to read from run summaries.
    #[arg(long, value_enum, default_value_t = Metric::Auto)]
    pub metric: Metric,
    /// Also take the control baselines each run summary reports (longer, shorter, …) as
    /// benchmark entries, once per condition (runs under one condition must agree on them).
    #[arg(long)]
    pub with_baselines: bool,
    /// Runs made on different items (another --limit or --subset) are refused; with this flag
    /// every run's accuracy is recomputed from its outcomes.jsonl on the items all runs
    /// evaluated, and how many were kept is printed.
    #[arg(long)]
    pub common_items: bool,
    /// From BoN tables: the k whose expected rubric score is the downstream score (default N).
    #[arg(long, allow_negative_numbers = true, value_parser = crate::bounds::whole::<usize>(1, 256))]
    pub k: Option<usize>,
    /// RBO persistence p in (0, 1).
    #[arg(long, default_value_t = DEFAULT_RBO_P, allow_negative_numbers = true, value_parser = crate::bounds::real(crate::bounds::End::Open(0.0), crate::bounds::End::Open(1.0), "the RBO persistence p"))]
    pub rbo_p: f64,
    /// Bootstrap resamples over models (at least 1,000).
    #[arg(long, default_value_t = 10_000, allow_negative_numbers = true, value_parser = crate::bounds::whole::<usize>(1000, 1_000_000))]
    pub bootstrap: usize,
    /// Permutation resamples for rho's p-value (exact when n! is at most this; at least 1,000).
    #[arg(long, default_value_t = 100_000, allow_negative_numbers = true, value_parser = crate::bounds::whole::<usize>(1000, 10_000_000))]
    pub permutations: usize,
    /// Seed of the bootstrap and the permutations.
    #[arg(long, default_value_t = 42, allow_negative_numbers = true, value_parser = crate::bounds::seed)]
    pub seed: u64,
    /// Write the report as markdown here (and the data as JSON next to it).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print JSON instead of markdown.
    #[arg(long)]
    pub json: bool,
}
