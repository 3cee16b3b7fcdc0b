//! `prbench correlate`: does the benchmark rank reward models the way a downstream use ranks
//! them (PROTOCOL.md §8)? Spearman's rho, Kendall's tau-b, weighted tau, NDCG and RBO between
//! benchmark scores and downstream scores, with bootstrap CIs over models, a permutation
//! p-value for rho, and leave-one-model-out stability. Benchmark runs must be comparable
//! (same dataset files, same items; [`runs`]).

mod runs;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use serde::Serialize;

use prbench_stats::rank::{bootstrap_correlations, correlations, leave_one_out, spearman_permutation_p, CorrelationBootstrap, CorrelationSet, LeaveOneOut, PermutationTest, DEFAULT_RBO_P};

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
    #[arg(long, num_args = 1.., required = true)]
    pub benchmark: Vec<PathBuf>,
    /// Downstream results: `prbench bon` tables (bon-<judge>.json), or a CSV `model,score`.
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

/// One model's score from one input.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    /// The model spec or name as the file gives it.
    pub model: String,
    /// Other names it may be matched by (a BoN row's file name).
    #[serde(skip)]
    pub aliases: Vec<String>,
    /// The score.
    pub score: f64,
    /// The condition the score was obtained under (run summaries and BoN rows); `None` for a
    /// CSV, which matches any.
    pub condition: Option<String>,
    /// Where it came from (file and figure).
    pub source: String,
    /// Added by `--with-baselines` rather than named: skipped with a note when the other side
    /// lacks it.
    #[serde(skip)]
    pub implicit: bool,
}

/// The report.
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

/// Runs `prbench correlate`.
pub fn run(args: CorrelateArgs) -> Result<()> {
    if let Some(out) = &args.out {
        if out.extension().is_some_and(|e| e == "json") {
            bail!("--out names the markdown report (e.g. corr.md); the JSON goes next to it with the extension .json");
        }
        if out.exists() {
            bail!("`{}` exists; choose another --out (reports are never overwritten)", out.display());
        }
        if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty() && !p.is_dir()) {
            bail!("--out: folder `{}` does not exist", parent.display());
        }
    }
    if !(args.rbo_p > 0.0 && args.rbo_p < 1.0) {
        bail!("--rbo-p is the RBO persistence, strictly between 0 and 1 (got {})", args.rbo_p);
    }
    let is_csv = |p: &PathBuf| p.extension().is_some_and(|e| e == "csv");
    if args.benchmark.iter().all(is_csv) {
        if args.metric != Metric::Auto {
            bail!("--metric picks the figure read from run summaries; every --benchmark input is a CSV, whose scores are taken as they are");
        }
        if args.with_baselines {
            bail!("--with-baselines reads the control baselines of run summaries; every --benchmark input is a CSV");
        }
    }
    if args.common_items {
        if let Some(csv) = args.benchmark.iter().find(|p| is_csv(p)) {
            bail!("--common-items restricts run folders to the items they share; `{}` holds scores only and cannot be restricted (pass run folders only)", csv.display());
        }
    }
    if args.k.is_some() && args.downstream.iter().all(is_csv) {
        bail!("--k picks a column of `prbench bon` tables; every --downstream input is a CSV, whose scores are taken as they are");
    }
    let mut bench = Vec::new();
    let mut bench_runs = Vec::new();
    for p in &args.benchmark {
        if is_csv(p) {
            bench.extend(read_csv(p)?);
        } else {
            bench_runs.push(runs::read_run(p, args.metric, args.with_baselines)?);
        }
    }
    bench.extend(runs::entries(bench_runs, args.common_items)?);
    let mut down = Vec::new();
    for p in &args.downstream {
        down.extend(read_downstream(p, args.k)?);
    }
    check_unique(&bench, "--benchmark")?;
    check_unique(&down, "--downstream")?;
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
            None if b.implicit => eprintln!("prbench: note: control baseline `{}` has no downstream score; left out", b.model),
            None => unmatched.push(b.label()),
        }
    }
    let extra: Vec<String> = down.iter().filter(|d| !bench.iter().any(|b| matches(b, d))).map(Entry::label).collect();
    if !unmatched.is_empty() || !extra.is_empty() {
        bail!(
            "every model needs both scores. Only benchmark: {}. Only downstream: {}. Models are matched by spec (as given to --model) or by a BoN scores file name, and by condition when both sides name one",
            if unmatched.is_empty() { "(no model)".into() } else { unmatched.join(", ") },
            if extra.is_empty() { "(no model)".into() } else { extra.join(", ") }
        );
    }
    let x: Vec<f64> = models.iter().map(|m| m.1).collect();
    let y: Vec<f64> = models.iter().map(|m| m.2).collect();
    let statistics = correlations(&x, &y, args.rbo_p).map_err(|e| explain(e, &report_models(&models)))?;
    let permutation = spearman_permutation_p(&x, &y, args.permutations, args.seed)?;
    let bootstrap = bootstrap_correlations(&x, &y, args.rbo_p, args.bootstrap, args.seed, 0.95)?;
    let loo = leave_one_out(&x, &y, args.rbo_p)?;
    let report = Correlation { models, statistics, permutation, bootstrap, leave_one_out: loo, sources };
    let md = render(&report, args.rbo_p);
    if let Some(out) = &args.out {
        std::fs::write(out, &md).with_context(|| format!("writing `{}`", out.display()))?;
        let json_path = out.with_extension("json");
        std::fs::write(&json_path, serde_json::to_string_pretty(&report)? + "\n").with_context(|| format!("writing `{}`", json_path.display()))?;
        eprintln!("prbench: correlation report in {} and {}", out.display(), json_path.display());
    }
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!("{md}");
    }
    Ok(())
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
    (d.model == b.model || d.aliases.contains(&b.model)) && (b.condition.is_none() || d.condition.is_none() || b.condition == d.condition)
}

fn check_unique(entries: &[Entry], flag: &str) -> Result<()> {
    for (i, e) in entries.iter().enumerate() {
        if let Some(other) = entries[..i].iter().find(|o| o.model == e.model && o.condition == e.condition) {
            bail!("{flag}: model {} appears twice ({} and {}); give each model once", e.label(), other.source, e.source);
        }
    }
    Ok(())
}

fn report_models(models: &[(String, f64, f64)]) -> String {
    models.iter().map(|(m, b, d)| format!("{m}: {b} / {d}")).collect::<Vec<_>>().join("; ")
}

/// A statistics error with the models and scores, and what to do.
fn explain(e: prbench_stats::rank::RankError, models: &str) -> anyhow::Error {
    use prbench_stats::rank::RankError as E;
    let hint = match &e {
        E::NegativeRelevance { .. } => "NDCG uses the downstream scores as gains, which must not be negative; shift or normalize them",
        E::ConstantInput { .. } => "rank correlation is undefined when every model has the same score on one side",
        E::TooFewModels { .. } => "give at least 3 models",
        _ => "",
    };
    anyhow::anyhow!("{e}. {hint} (benchmark / downstream: {models})")
}

/// A file's text, the error naming it.
fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading `{}`", path.display()))
}

/// A CSV `model,score` (header required; quotes not supported; blank lines skipped).
fn read_csv(path: &Path) -> Result<Vec<Entry>> {
    let text = read_text(path)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    match lines.next() {
        Some((_, h)) if h.split(',').map(str::trim).collect::<Vec<_>>() == ["model", "score"] => {}
        _ => bail!("`{}`: the first line must be the header `model,score`", path.display()),
    }
    let mut out = Vec::new();
    for (i, line) in lines {
        let (model, score) = line.rsplit_once(',').with_context(|| format!("`{}` line {}: expected `model,score`", path.display(), i + 1))?;
        let score: f64 = score.trim().parse().with_context(|| format!("`{}` line {}: score `{}` is not a number", path.display(), i + 1, score.trim()))?;
        if !score.is_finite() {
            bail!("`{}` line {}: score must be finite", path.display(), i + 1);
        }
        out.push(Entry { model: model.trim().to_string(), aliases: vec![], score, condition: None, source: format!("{} line {}", path.display(), i + 1), implicit: false });
    }
    Ok(out)
}

fn read_downstream(path: &Path, k: Option<usize>) -> Result<Vec<Entry>> {
    if path.extension().is_some_and(|e| e == "csv") {
        return read_csv(path);
    }
    let v: serde_json::Value = serde_json::from_str(&read_text(path)?).with_context(|| format!("`{}` is not JSON", path.display()))?;
    let n = v.get("n").and_then(|n| n.as_u64()).with_context(|| format!("`{}`: not a `prbench bon` table (no `n`)", path.display()))? as usize;
    let k = k.unwrap_or(n);
    let mut out = Vec::new();
    for row in v["rows"].as_array().into_iter().flatten() {
        if row.get("kind").and_then(|k| k.as_str()) != Some("reward model") {
            continue;
        }
        let name = row["name"].as_str().unwrap_or_default().to_string();
        let point = row["curve"].as_array().into_iter().flatten().find(|p| p["k"].as_u64() == Some(k as u64));
        let Some(score) = point.and_then(|p| p["overall"].as_f64()) else {
            bail!("`{}`: row `{name}` has no finite best-of-{k} score (is k in the table's k values, and does the row have examples?)", path.display());
        };
        let spec = row.get("spec").and_then(|s| s.as_str()).map(String::from);
        out.push(Entry {
            model: spec.clone().unwrap_or_else(|| name.clone()),
            aliases: vec![name],
            score,
            condition: row.get("condition").and_then(|c| c.as_str()).map(String::from),
            source: format!("{} (best-of-{k} rubric score)", path.display()),
            implicit: false,
        });
    }
    if out.is_empty() {
        bail!("`{}` has no reward-model rows; score samples with `prbench bon score` first", path.display());
    }
    Ok(out)
}

fn render(r: &Correlation, rbo_p: f64) -> String {
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
    for (name, v, ci, lo) in rows.into_iter().chain(std::iter::once((rbo_label.as_str(), r.statistics.rbo, &b.rbo, &l.rbo))) {
        let ci_text = ci.ci.map_or("–".into(), |c| format!("[{:.4}, {:.4}]", c.lo, c.hi));
        let loo = match (lo.min, lo.max) {
            (Some(a), Some(z)) => format!("{a:.4} … {z:.4}"),
            _ => "–".into(),
        } + &if lo.undefined > 0 { format!(" ({} drop{} undefined)", lo.undefined, if lo.undefined == 1 { "" } else { "s" }) } else { String::new() };
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
