//! Does the benchmark rank reward models the way a downstream use ranks them (PROTOCOL.md §8)?
//! Spearman's rho, Kendall's tau-b, weighted tau, NDCG and RBO between benchmark scores and
//! downstream scores, with bootstrap CIs over models, a permutation p-value for rho, and
//! leave-one-model-out stability ([`correlate`]), and the Markdown table of the result
//! ([`render`]). Benchmark runs must be comparable (same dataset files, same items; see
//! `runs`).
//!
//! Several named benchmarks against one downstream ranking, side by side with the paired
//! difference of every statistic between every two of them: [`compare()`] and
//! [`render_comparison`].
//!
//! Inputs are files only: run folders (their `summary.json` and `outcomes.jsonl`, read as
//! plain JSON so this crate needs no engine), `prbench bon` tables, and CSVs `model,score`.
//!
//! ```no_run
//! use prbench_report::correlation::{correlate, render, CorrelationOptions};
//! let opts = CorrelationOptions::new(vec!["bench.csv".into()], vec!["down.csv".into()]);
//! let report = correlate(&opts, &mut |note| eprintln!("{note}"))?;
//! println!("{}", render(&report, opts.rbo_p));
//! # Ok::<(), prbench_report::correlation::CorrelationError>(())
//! ```

mod compare;
mod inputs;
mod runs;
pub use runs::run_figure;

pub use compare::{
    compare, difference_table, difference_text, interval_text, paper_columns, paper_table,
    render_comparison, undefined_table, BenchmarkSet, Comparison, ComparisonOptions,
    ComparisonSettings, DownstreamInfo, PairResult, PaperColumn, SetResult,
};

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use prbench_stats::rank::{
    bootstrap_correlations, correlations, leave_one_out, spearman_permutation_p,
    CorrelationBootstrap, CorrelationSet, LeaveOneOut, PermutationTest, RankError, DEFAULT_RBO_P,
};

/// Which benchmark figure of a run summary to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Metric {
    /// Position-debiased accuracy when the run judged both orders, else accuracy.
    #[default]
    Auto,
    /// Single-order strict accuracy (ties count as not correct), micro over examples.
    Accuracy,
    /// Position-debiased strict accuracy (both orders must be in the run).
    Debiased,
}

/// What to correlate and how (the `correlate` command's settings, already validated for range).
#[derive(Debug, Clone)]
pub struct CorrelationOptions {
    /// Benchmark results: run folders or their summary.json, or CSVs `model,score`.
    pub benchmark: Vec<PathBuf>,
    /// Downstream results: `prbench bon` tables (`bon-<judge>.json`), or CSVs `model,score`.
    pub downstream: Vec<PathBuf>,
    /// Which benchmark figure to read from run summaries.
    pub metric: Metric,
    /// Also take each run summary's control baselines as benchmark entries, once per condition.
    pub with_baselines: bool,
    /// Recompute every run's accuracy on the items all runs evaluated instead of refusing runs
    /// made on different items.
    pub common_items: bool,
    /// From BoN tables: the k whose expected rubric score is the downstream score (default N).
    pub k: Option<usize>,
    /// RBO persistence p in (0, 1).
    pub rbo_p: f64,
    /// Bootstrap resamples over models.
    pub bootstrap: usize,
    /// Permutation resamples for rho's p-value (exact when n! is at most this).
    pub permutations: usize,
    /// Seed of the bootstrap and the permutations.
    pub seed: u64,
}

impl CorrelationOptions {
    /// The given inputs with the command's defaults (metric auto, RBO p = [`DEFAULT_RBO_P`],
    /// 10,000 bootstrap resamples, 100,000 permutations, seed 42).
    pub fn new(benchmark: Vec<PathBuf>, downstream: Vec<PathBuf>) -> Self {
        Self {
            benchmark,
            downstream,
            metric: Metric::Auto,
            with_baselines: false,
            common_items: false,
            k: None,
            rbo_p: DEFAULT_RBO_P,
            bootstrap: 10_000,
            permutations: 100_000,
            seed: 42,
        }
    }
}

/// Why a correlation could not be computed. Messages name the file (and line) at fault and,
/// for inputs that do not fit together, what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CorrelationError {
    /// A file could not be read.
    #[error("reading `{}`", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A file that must be JSON is not.
    #[error("`{}` is not JSON", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// A line of a JSON Lines file is not the record it must be.
    #[error("`{}` line {line}: {what}", path.display())]
    Line {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What the line should have been.
        what: &'static str,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// A CSV score is not a number.
    #[error("`{}` line {line}: score `{text}` is not a number", path.display())]
    Score {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The text found.
        text: String,
        /// The parse error.
        #[source]
        source: std::num::ParseFloatError,
    },
    /// A rank statistic failed.
    #[error(transparent)]
    Rank(#[from] RankError),
    /// Inputs that are malformed or do not fit together (the message says which and why).
    #[error("{0}")]
    Invalid(String),
    /// An error in one benchmark set of a comparison ([`compare()`]).
    #[error("benchmark set `{set}`")]
    InSet {
        /// The set's name.
        set: String,
        /// What went wrong in it.
        #[source]
        source: Box<CorrelationError>,
    },
}

/// Shorthand for an [`CorrelationError::Invalid`] early return.
macro_rules! invalid {
    ($($t:tt)*) => { return Err($crate::correlation::CorrelationError::Invalid(format!($($t)*))) };
}
use invalid;

/// The result of this module's fallible functions.
pub type Result<T, E = CorrelationError> = std::result::Result<T, E>;

/// One model's score from one input.
#[derive(Debug, Clone)]
struct Entry {
    /// The model spec or name as the file gives it.
    model: String,
    /// Other names it may be matched by (a BoN row's file name).
    aliases: Vec<String>,
    /// The score.
    score: f64,
    /// The condition the score was obtained under (run summaries and BoN rows); `None` for a
    /// CSV, which matches any.
    condition: Option<String>,
    /// Where it came from (file and figure).
    source: String,
    /// Added by `--with-baselines` rather than named: skipped with a note when the other side
    /// lacks it.
    implicit: bool,
}

/// The report (`correlate --json`, and the JSON beside `correlate --out X.md`).
#[derive(Debug, Serialize)]
pub struct Correlation {
    /// Models in benchmark order as (label, benchmark score, downstream score); the label is
    /// the spec, followed by the condition in parentheses when the inputs name one.
    pub models: Vec<(String, f64, f64)>,
    /// The five statistics.
    pub statistics: CorrelationSet,
    /// Permutation test of rho.
    pub permutation: PermutationTest,
    /// Bootstrap over models.
    pub bootstrap: CorrelationBootstrap,
    /// Leave-one-model-out.
    pub leave_one_out: LeaveOneOut,
    /// Benchmark and downstream sources.
    pub sources: Vec<String>,
}

fn is_csv(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "csv")
}

/// Refuses flag combinations that would be silently ignored.
fn check_options(opts: &CorrelationOptions) -> Result<()> {
    check_shared_options(opts)?;
    check_benchmark_flags(opts.benchmark.iter(), opts, "every --benchmark input is a CSV")?;
    if opts.common_items {
        check_common_items(&opts.benchmark)?;
    }
    Ok(())
}

/// The checks that do not depend on the benchmark inputs: `--rbo-p`, and `--k` against the
/// downstream inputs.
fn check_shared_options(opts: &CorrelationOptions) -> Result<()> {
    if !(opts.rbo_p > 0.0 && opts.rbo_p < 1.0) {
        invalid!("--rbo-p is the RBO persistence, strictly between 0 and 1 (got {})", opts.rbo_p);
    }
    if opts.k.is_some() && opts.downstream.iter().all(|p| is_csv(p)) {
        invalid!("--k picks a column of `prbench bon` tables; every --downstream input is a CSV, whose scores are taken as they are");
    }
    Ok(())
}

/// `--metric` and `--with-baselines` read run summaries: refused when every benchmark input
/// (`paths`) is a CSV; `all_csv` says so in the error.
fn check_benchmark_flags<'a>(
    mut paths: impl Iterator<Item = &'a PathBuf>,
    opts: &CorrelationOptions,
    all_csv: &str,
) -> Result<()> {
    if paths.all(|p| is_csv(p)) {
        if opts.metric != Metric::Auto {
            invalid!("--metric picks the figure read from run summaries; {all_csv}, whose scores are taken as they are");
        }
        if opts.with_baselines {
            invalid!("--with-baselines reads the control baselines of run summaries; {all_csv}");
        }
    }
    Ok(())
}

/// `--common-items` restricts run folders: refused for a benchmark list holding a CSV.
fn check_common_items(benchmark: &[PathBuf]) -> Result<()> {
    if let Some(csv) = benchmark.iter().find(|p| is_csv(p)) {
        invalid!(
            "--common-items restricts run folders to the items they share; `{}` holds scores only and cannot be restricted (pass run folders only)",
            csv.display()
        );
    }
    Ok(())
}

/// Reads the inputs, matches models across them and computes the statistics. `note` receives
/// what the caller should tell the user on the way (inputs left out, runs restricted).
///
/// # Errors
/// Unreadable or malformed inputs, runs that are not comparable, models with only one score,
/// and statistics that are undefined for these scores.
pub fn correlate(opts: &CorrelationOptions, note: &mut dyn FnMut(&str)) -> Result<Correlation> {
    check_options(opts)?;
    let bench = read_benchmark(&opts.benchmark, opts, opts.common_items, note)?;
    check_unique(&bench, "--benchmark")?;
    let down = read_downstream_entries(opts)?;
    let mut models = Vec::new();
    let mut sources = Vec::new();
    let mut unmatched = Vec::new();
    for b in &bench {
        match down.iter().find(|d| matches(b, d)) {
            Some(d) => {
                // The label names the condition: one spec under several conditions is several models.
                models.push((b.label(), b.score, d.score));
                sources.push(format!("{}: {} ↔ {}", b.label(), b.source, d.source));
            }
            None if b.implicit => note(&format!(
                "note: control baseline `{}` has no downstream score; left out",
                b.model
            )),
            None => unmatched.push(b.label()),
        }
    }
    let extra: Vec<String> =
        down.iter().filter(|d| !bench.iter().any(|b| matches(b, d))).map(Entry::label).collect();
    if !unmatched.is_empty() || !extra.is_empty() {
        invalid!(
            "every model needs both scores. Only benchmark: {}. Only downstream: {}. Models are matched by spec (as given to --model) or by a BoN scores file name, and by condition when both sides name one",
            if unmatched.is_empty() { "(no model)".into() } else { unmatched.join(", ") },
            if extra.is_empty() { "(no model)".into() } else { extra.join(", ") }
        );
    }
    let x: Vec<f64> = models.iter().map(|m| m.1).collect();
    let y: Vec<f64> = models.iter().map(|m| m.2).collect();
    let statistics =
        correlations(&x, &y, opts.rbo_p).map_err(|e| explain(e, &report_models(&models)))?;
    let bootstrap = bootstrap_correlations(&x, &y, opts.rbo_p, opts.bootstrap, opts.seed, 0.95)?;
    finish(models, statistics, bootstrap, sources, opts)
}

/// The benchmark entries of `paths` (CSVs, then run folders as [`runs::entries`] takes them),
/// with `common_items` restricting the run folders to their shared items. The options' checks
/// must have passed.
fn read_benchmark(
    paths: &[PathBuf],
    opts: &CorrelationOptions,
    common_items: bool,
    note: &mut dyn FnMut(&str),
) -> Result<Vec<Entry>> {
    let mut bench = Vec::new();
    let mut bench_runs = Vec::new();
    for p in paths {
        if is_csv(p) {
            bench.extend(inputs::read_csv(p)?);
        } else {
            bench_runs.push(runs::read_run(p, opts.metric, opts.with_baselines)?);
        }
    }
    bench.extend(runs::entries(bench_runs, common_items, note)?);
    Ok(bench)
}

/// The downstream entries of every `--downstream` input, each model once.
fn read_downstream_entries(opts: &CorrelationOptions) -> Result<Vec<Entry>> {
    let mut down = Vec::new();
    for p in &opts.downstream {
        down.extend(inputs::read_downstream(p, opts.k)?);
    }
    check_unique(&down, "--downstream")?;
    Ok(down)
}

/// A [`Correlation`] from its matched models, statistics and bootstrap: adds rho's permutation
/// test and leave-one-out (both seeded or exact, from `opts`).
fn finish(
    models: Vec<(String, f64, f64)>,
    statistics: CorrelationSet,
    bootstrap: CorrelationBootstrap,
    sources: Vec<String>,
    opts: &CorrelationOptions,
) -> Result<Correlation> {
    let x: Vec<f64> = models.iter().map(|m| m.1).collect();
    let y: Vec<f64> = models.iter().map(|m| m.2).collect();
    let permutation = spearman_permutation_p(&x, &y, opts.permutations, opts.seed)?;
    let loo = leave_one_out(&x, &y, opts.rbo_p)?;
    Ok(Correlation { models, statistics, permutation, bootstrap, leave_one_out: loo, sources })
}

impl Entry {
    /// The model, with its condition when known.
    fn label(&self) -> String {
        match &self.condition {
            Some(c) => format!("{} ({c})", self.model),
            None => self.model.clone(),
        }
    }
}

/// Same model (spec, or a BoN file name), and same condition when both sides name one.
fn matches(b: &Entry, d: &Entry) -> bool {
    (d.model == b.model || d.aliases.contains(&b.model))
        && (b.condition.is_none() || d.condition.is_none() || b.condition == d.condition)
}

fn check_unique(entries: &[Entry], flag: &str) -> Result<()> {
    for (i, e) in entries.iter().enumerate() {
        if let Some(other) =
            entries[..i].iter().find(|o| o.model == e.model && o.condition == e.condition)
        {
            invalid!(
                "{flag}: model {} appears twice ({} and {}); give each model once",
                e.label(),
                other.source,
                e.source
            );
        }
    }
    Ok(())
}

fn report_models(models: &[(String, f64, f64)]) -> String {
    models.iter().map(|(m, b, d)| format!("{m}: {b} / {d}")).collect::<Vec<_>>().join("; ")
}

/// A statistics error with the models and scores, and what to do.
fn explain(e: RankError, models: &str) -> CorrelationError {
    use RankError as E;
    let hint = match &e {
        E::NegativeRelevance { .. } => "NDCG uses the downstream scores as gains, which must not be negative; shift or normalize them",
        E::ConstantInput { .. } => "rank correlation is undefined when every model has the same score on one side",
        E::TooFewModels { .. } => "give at least 3 models",
        _ => "",
    };
    CorrelationError::Invalid(format!("{e}. {hint} (benchmark / downstream: {models})"))
}

/// The report as Markdown: the models' scores, then one row per statistic with its bootstrap
/// CI and leave-one-out range, then the permutation p-value. `rbo_p` labels the RBO row.
pub fn render(r: &Correlation, rbo_p: f64) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "| model | benchmark | downstream |\n|---|---:|---:|");
    for (m, b, d) in &r.models {
        let _ = writeln!(s, "| `{m}` | {b:.4} | {d:.4} |");
    }
    let _ = writeln!(
        s,
        "\n| statistic | value | 95% CI (bootstrap over models) | undefined resamples | leave-one-out min … max |\n|---|---:|---|---:|---|"
    );
    let b = &r.bootstrap.stats;
    let l = &r.leave_one_out.range;
    let rows = [
        ("Spearman rho", r.statistics.spearman, &b.spearman, &l.spearman),
        ("Kendall tau-b", r.statistics.kendall_tau_b, &b.kendall_tau_b, &l.kendall_tau_b),
        ("weighted tau (hyperbolic)", r.statistics.weighted_tau, &b.weighted_tau, &l.weighted_tau),
        ("NDCG (relevance = downstream)", r.statistics.ndcg, &b.ndcg, &l.ndcg),
    ];
    let rbo_label = format!("RBO (extrapolated, p = {rbo_p})");
    for (name, v, ci, lo) in rows.into_iter().chain(std::iter::once((
        rbo_label.as_str(),
        r.statistics.rbo,
        &b.rbo,
        &l.rbo,
    ))) {
        let ci_text = ci.ci.map_or("–".into(), |c| format!("[{:.4}, {:.4}]", c.lo, c.hi));
        let loo = match (lo.min, lo.max) {
            (Some(a), Some(z)) => format!("{a:.4} … {z:.4}"),
            _ => "–".into(),
        } + &if lo.undefined > 0 {
            format!(
                " ({} drop{} undefined)",
                lo.undefined,
                if lo.undefined == 1 { "" } else { "s" }
            )
        } else {
            String::new()
        };
        let _ = writeln!(s, "| {name} | {v:.4} | {ci_text} | {} | {loo} |", ci.undefined);
    }
    let _ = writeln!(
        s,
        "\nrho's two-sided permutation p-value: {:.4} ({}). {} models; bootstrap: {} resamples, seed {}.",
        r.permutation.p_value,
        if r.permutation.exact { format!("exact over all {} pairings", r.permutation.permutations) } else { format!("{} random pairings", r.permutation.permutations) },
        r.models.len(),
        r.bootstrap.resamples,
        r.bootstrap.seed
    );
    s
}
