//! Several benchmarks side by side against one downstream ranking: the paper's comparison of
//! Personalized RewardBench with Chatbot Arena-Personalized and PRISM-Personalized.
//!
//! Each named benchmark set is read exactly as `correlate`'s `--benchmark` list (run folders,
//! summary.json, CSVs `model,score`; `--metric`, `--with-baselines` and `--common-items` apply per
//! set). Models are matched to the downstream by spec (and condition, when both sides name one);
//! the comparison uses the models every set and the downstream score, and records which models
//! each set lacked. Every set is then scored on those models in one order (the first set's), so
//! one bootstrap draw of models serves all sets and the difference between two sets is paired
//! ([`prbench_stats::rank::bootstrap_comparison`]).

use std::fmt::Write as _;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use prbench_stats::rank::{
    bootstrap_comparison, correlations, PairedDifference, PerStatistic, StatInterval, DEFAULT_RBO_P,
};

use super::{
    check_benchmark_flags, check_common_items, check_shared_options, explain, finish, invalid,
    is_csv, matches, read_benchmark, read_downstream_entries, report_models, Correlation,
    CorrelationError, CorrelationOptions, Entry, Result,
};

/// The level of every interval of the comparison.
const LEVEL: f64 = 0.95;

/// One named benchmark: the inputs `correlate --benchmark` would take for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchmarkSet {
    /// Its name in the tables (e.g. `Personalized RewardBench`).
    pub name: String,
    /// Run folders, their summary.json, or CSVs `model,score`.
    pub paths: Vec<PathBuf>,
}

impl BenchmarkSet {
    /// Parses `NAME=PATH[,PATH...]` (the form of `correlate --benchmark-set`).
    ///
    /// # Errors
    /// No `=`, an empty name, or an empty path (e.g. a trailing comma); the message shows the
    /// expected form.
    pub fn parse(text: &str) -> std::result::Result<Self, String> {
        let form = "expected NAME=PATH[,PATH...], e.g. PRB=runs/a,runs/b or Arena=arena.csv";
        let Some((name, paths)) = text.split_once('=') else {
            return Err(format!("`{text}` has no `=`: {form}"));
        };
        let name = name.trim();
        if name.is_empty() {
            return Err(format!("`{text}` has no name before `=`: {form}"));
        }
        let paths: Vec<&str> = paths.split(',').map(str::trim).collect();
        if paths.iter().any(|p| p.is_empty()) {
            return Err(format!(
                "`{text}` has an empty path (a comma too many, or none after `=`): {form}"
            ));
        }
        Ok(Self { name: name.to_string(), paths: paths.into_iter().map(PathBuf::from).collect() })
    }
}

/// What to compare and how (`correlate --benchmark-set ...`).
#[derive(Debug, Clone)]
pub struct ComparisonOptions {
    /// The benchmarks, at least one, with distinct names; listed in this order everywhere.
    pub sets: Vec<BenchmarkSet>,
    /// The downstream ranking's name in the tables; default: its file names.
    pub downstream_name: Option<String>,
    /// Everything else, as for one benchmark (its `benchmark` must be empty: the sets replace it).
    pub options: CorrelationOptions,
}

impl ComparisonOptions {
    /// The given sets and downstream inputs with `correlate`'s defaults.
    pub fn new(sets: Vec<BenchmarkSet>, downstream: Vec<PathBuf>) -> Self {
        Self { sets, downstream_name: None, options: CorrelationOptions::new(vec![], downstream) }
    }
}

/// The downstream ranking every set is compared against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DownstreamInfo {
    /// Its name in the tables.
    pub name: String,
    /// Its input files.
    pub inputs: Vec<String>,
}

/// The bootstrap every interval of a comparison comes from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ComparisonSettings {
    /// Resamples of models.
    pub resamples: usize,
    /// Seed of the draw (and of rho's permutation test).
    pub seed: u64,
    /// Coverage of the percentile intervals.
    pub level: f64,
    /// RBO persistence.
    pub rbo_p: f64,
}

/// One benchmark set's result.
#[derive(Debug, Serialize)]
pub struct SetResult {
    /// Its name.
    pub name: String,
    /// Its inputs as given.
    pub inputs: Vec<String>,
    /// Downstream models this set has no score for (left out of every set's statistics).
    pub lacked: Vec<String>,
    /// This set's models without a downstream score (left out).
    pub without_downstream: Vec<String>,
    /// Its statistics on the compared models, as `correlate --benchmark` reports them; the
    /// bootstrap is the draw shared by all sets.
    pub correlation: Correlation,
}

/// The paired difference of every statistic between two sets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairResult {
    /// The first set's name.
    pub a: String,
    /// The second set's name.
    pub b: String,
    /// `a − b` per statistic, with its percentile interval over the shared resamples and the
    /// resamples on which it is undefined for either set.
    pub difference: PerStatistic<PairedDifference>,
}

/// The report of a comparison (`correlate --benchmark-set ... --json`, and the JSON beside
/// `--out X.md`).
#[derive(Debug, Serialize)]
pub struct Comparison {
    /// Always [`Comparison::KIND`]: how `prbench report` recognises the file.
    pub kind: &'static str,
    /// The downstream ranking.
    pub downstream: DownstreamInfo,
    /// The compared models (every set and the downstream score them), in the order of every
    /// set's statistics, labelled as the downstream names them.
    pub models: Vec<String>,
    /// One result per set, in the order given.
    pub sets: Vec<SetResult>,
    /// Every two sets `(a, b)`, `a` before `b` in the order given.
    pub pairs: Vec<PairResult>,
    /// The shared bootstrap.
    pub bootstrap: ComparisonSettings,
}

impl Comparison {
    /// The value of [`Comparison::kind`].
    pub const KIND: &'static str = "benchmark comparison";
}

/// Refuses sets and flags that do not fit (before any file is read).
fn check(opts: &ComparisonOptions) -> Result<()> {
    let o = &opts.options;
    if !o.benchmark.is_empty() {
        invalid!("give the benchmark either as one list (--benchmark) or as named sets (--benchmark-set), not both");
    }
    if opts.sets.is_empty() {
        invalid!(
            "no benchmark set given: name each benchmark with --benchmark-set NAME=PATH[,PATH...]"
        );
    }
    for (i, s) in opts.sets.iter().enumerate() {
        if opts.sets[..i].iter().any(|t| t.name == s.name) {
            invalid!("--benchmark-set: the name `{}` is given twice; give each set once, with all its paths (NAME=PATH,PATH,...)", s.name);
        }
        if s.paths.is_empty() {
            invalid!("--benchmark-set `{}` names no path", s.name);
        }
    }
    check_shared_options(o)?;
    check_benchmark_flags(
        opts.sets.iter().flat_map(|s| s.paths.iter()),
        o,
        "every input of every --benchmark-set is a CSV",
    )?;
    if o.common_items {
        // Per set: a set of CSVs alone is taken as it is, a set of run folders restricted to
        // the items its runs share, and a set mixing both refused as for one benchmark.
        let mut restricted = 0;
        for s in &opts.sets {
            if s.paths.iter().all(|p| is_csv(p)) {
                continue;
            }
            check_common_items(&s.paths).map_err(|e| in_set(&s.name, e))?;
            restricted += usize::from(s.paths.len() >= 2);
        }
        if restricted == 0 {
            invalid!("--common-items restricts the run folders of a set to the items they share; no --benchmark-set has two run folders");
        }
    }
    Ok(())
}

/// `e`, said to be about set `name`.
fn in_set(name: &str, e: CorrelationError) -> CorrelationError {
    CorrelationError::InSet { set: name.to_string(), source: Box::new(e) }
}

/// The default name of the downstream ranking: its input files' names.
fn downstream_name(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| {
            p.file_name()
                .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())
        })
        .collect::<Vec<_>>()
        .join(" + ")
}

/// Reads every set and the downstream, matches models, and computes each set's statistics and
/// the paired differences between sets on one shared bootstrap draw (see the module docs).
/// `note` receives what the user should be told on the way: models a set lacked, models left
/// out, runs restricted.
///
/// # Errors
/// As [`super::correlate`] for any set (wrapped in [`CorrelationError::InSet`] naming it); two of
/// a set's models matching one downstream model; fewer than 3 models common to every set and
/// the downstream.
pub fn compare(opts: &ComparisonOptions, note: &mut dyn FnMut(&str)) -> Result<Comparison> {
    check(opts)?;
    let o = &opts.options;
    let down = read_downstream_entries(o)?;
    // Per set: its entries and, for each downstream model, the entry that matched it.
    let mut sets: Vec<(Vec<Entry>, Vec<Option<usize>>)> = Vec::new();
    let mut without: Vec<Vec<String>> = Vec::new();
    for s in &opts.sets {
        let in_this = |e| in_set(&s.name, e);
        let common_items = o.common_items && s.paths.iter().filter(|p| !is_csv(p)).count() >= 2;
        let mut set_note = |text: &str| note(&format!("benchmark set `{}`: {text}", s.name));
        let bench = read_benchmark(&s.paths, o, common_items, &mut set_note).map_err(in_this)?;
        super::check_unique(&bench, &format!("--benchmark-set {}", s.name)).map_err(in_this)?;
        let mut matched: Vec<Option<usize>> = vec![None; down.len()];
        let mut lost = Vec::new();
        for (i, b) in bench.iter().enumerate() {
            match down.iter().position(|d| matches(b, d)) {
                Some(j) => {
                    if let Some(other) = matched[j] {
                        return Err(in_this(CorrelationError::Invalid(format!(
                            "`{}` and `{}` both match the downstream model `{}`, which names no condition; give a downstream that names conditions (a BoN table) or one condition per model in this set",
                            bench[other].label(),
                            b.label(),
                            down[j].label()
                        ))));
                    }
                    matched[j] = Some(i);
                }
                None => {
                    set_note(&if b.implicit {
                        format!(
                            "note: control baseline `{}` has no downstream score; left out",
                            b.model
                        )
                    } else {
                        format!("`{}` has no downstream score; left out", b.label())
                    });
                    lost.push(b.label());
                }
            }
        }
        sets.push((bench, matched));
        without.push(lost);
    }
    // The compared models: matched in every set, in the first set's order.
    let common: Vec<usize> = {
        let first = &sets[0].1;
        // (first set's entry, downstream model), sorted by the entry.
        let mut order: Vec<(usize, usize)> =
            (0..down.len()).filter_map(|j| first[j].map(|i| (i, j))).collect();
        order.sort_unstable();
        order
            .into_iter()
            .map(|(_, j)| j)
            .filter(|&j| sets.iter().all(|(_, m)| m[j].is_some()))
            .collect()
    };
    let lacked: Vec<Vec<String>> = sets
        .iter()
        .map(|(_, m)| {
            (0..down.len()).filter(|&j| m[j].is_none()).map(|j| down[j].label()).collect()
        })
        .collect();
    for (s, l) in opts.sets.iter().zip(&lacked) {
        if !l.is_empty() {
            note(&format!(
                "benchmark set `{}` has no score for {} of the downstream's {} models ({}); they are left out of every set's statistics",
                s.name,
                l.len(),
                down.len(),
                l.join(", ")
            ));
        }
    }
    if common.len() < prbench_stats::MIN_MODELS {
        invalid!(
            "only {} model{} ({}) {} a score in every benchmark set and in the downstream; rank statistics need at least {}. Models are matched by spec (as given to --model) or by a BoN scores file name, and by condition when both sides name one; what each set lacked: {}",
            common.len(),
            if common.len() == 1 { "" } else { "s" },
            if common.is_empty() { "none".to_string() } else { common.iter().map(|&j| down[j].label()).collect::<Vec<_>>().join(", ") },
            if common.len() == 1 { "has" } else { "have" },
            prbench_stats::MIN_MODELS,
            opts.sets.iter().zip(&lacked).map(|(s, l)| format!("`{}`: {}", s.name, if l.is_empty() { "none".to_string() } else { l.join(", ") })).collect::<Vec<_>>().join("; ")
        );
    }
    let y: Vec<f64> = common.iter().map(|&j| down[j].score).collect();
    let mut models_per_set = Vec::new();
    let mut points = Vec::new();
    for (s, (bench, matched)) in opts.sets.iter().zip(&sets) {
        let models: Vec<(String, f64, f64)> = common
            .iter()
            .map(|&j| {
                let b = &bench[matched[j].expect("common models are matched in every set")];
                (b.label(), b.score, down[j].score)
            })
            .collect();
        let x: Vec<f64> = models.iter().map(|m| m.1).collect();
        points.push(
            correlations(&x, &y, o.rbo_p)
                .map_err(|e| in_set(&s.name, explain(e, &report_models(&models))))?,
        );
        models_per_set.push((models, x));
    }
    let xs: Vec<&[f64]> = models_per_set.iter().map(|(_, x)| x.as_slice()).collect();
    let shared = bootstrap_comparison(&xs, &y, o.rbo_p, o.bootstrap, o.seed, LEVEL)?;
    let mut results = Vec::new();
    for ((((s, (bench, matched)), (models, _)), (statistics, bootstrap)), (lacked, without)) in opts
        .sets
        .iter()
        .zip(&sets)
        .zip(models_per_set)
        .zip(points.into_iter().zip(shared.sets))
        .zip(lacked.into_iter().zip(without))
    {
        let sources = common
            .iter()
            .map(|&j| {
                let b = &bench[matched[j].expect("common")];
                format!("{}: {} ↔ {}", b.label(), b.source, down[j].source)
            })
            .collect();
        let correlation =
            finish(models, statistics, bootstrap, sources, o).map_err(|e| in_set(&s.name, e))?;
        results.push(SetResult {
            name: s.name.clone(),
            inputs: s.paths.iter().map(|p| p.display().to_string()).collect(),
            lacked,
            without_downstream: without,
            correlation,
        });
    }
    let pairs = shared
        .pairs
        .into_iter()
        .map(|p| PairResult {
            a: opts.sets[p.a].name.clone(),
            b: opts.sets[p.b].name.clone(),
            difference: p.difference,
        })
        .collect();
    Ok(Comparison {
        kind: Comparison::KIND,
        downstream: DownstreamInfo {
            name: opts.downstream_name.clone().unwrap_or_else(|| downstream_name(&o.downstream)),
            inputs: o.downstream.iter().map(|p| p.display().to_string()).collect(),
        },
        models: common.iter().map(|&j| down[j].label()).collect(),
        sets: results,
        pairs,
        bootstrap: ComparisonSettings {
            resamples: o.bootstrap,
            seed: o.seed,
            level: LEVEL,
            rbo_p: o.rbo_p,
        },
    })
}

/// One table column: its header and the field of a [`PerStatistic`] it shows.
pub type PaperColumn<T> = (String, fn(&PerStatistic<T>) -> T);

/// The statistics in the paper's column order (NDCG, weighted tau, rho), then Kendall's tau-b and
/// RBO: (column header, field of a [`PerStatistic`]).
pub fn paper_columns<T: Copy>(rbo_p: f64) -> Vec<PaperColumn<T>> {
    vec![
        ("NDCG".to_string(), |p: &PerStatistic<T>| p.ndcg),
        ("weighted tau".to_string(), |p: &PerStatistic<T>| p.weighted_tau),
        ("rho".to_string(), |p: &PerStatistic<T>| p.spearman),
        ("tau-b".to_string(), |p: &PerStatistic<T>| p.kendall_tau_b),
        (
            if rbo_p == DEFAULT_RBO_P { "RBO".to_string() } else { format!("RBO (p = {rbo_p})") },
            |p: &PerStatistic<T>| p.rbo,
        ),
    ]
}

/// A statistic and its interval as the tables print it: `0.918 [0.71, 1.00]` (`–` for no
/// interval).
pub fn interval_text(s: &StatInterval) -> String {
    match s.ci {
        Some(c) => format!("{:.3} [{:.2}, {:.2}]", s.point, c.lo, c.hi),
        None => format!("{:.3} [–]", s.point),
    }
}

/// A paired difference as the tables print it: `+0.260 [0.05, 0.41]`.
pub fn difference_text(d: &PairedDifference) -> String {
    match d.ci {
        Some(c) => format!("{:+.3} [{:.2}, {:.2}]", d.point, c.lo, c.hi),
        None => format!("{:+.3} [–]", d.point),
    }
}

/// The paper-form table: header, then one row per set, `[benchmark, downstream, NDCG, weighted
/// tau, rho, tau-b, RBO]`, each statistic with its interval ([`interval_text`]).
pub fn paper_table(
    downstream: &str,
    sets: &[(&str, &PerStatistic<StatInterval>)],
    rbo_p: f64,
) -> (Vec<String>, Vec<Vec<String>>) {
    let columns = paper_columns::<StatInterval>(rbo_p);
    let mut header = vec!["benchmark".to_string(), "downstream".to_string()];
    header.extend(columns.iter().map(|c| c.0.clone()));
    let rows = sets
        .iter()
        .map(|(name, stats)| {
            let mut row = vec![name.to_string(), downstream.to_string()];
            row.extend(columns.iter().map(|c| interval_text(&(c.1)(stats))));
            row
        })
        .collect();
    (header, rows)
}

/// The paired-difference table: header, then one row per pair, `[a − b, NDCG, …, RBO]`
/// ([`difference_text`]).
pub fn difference_table(
    pairs: &[(&str, &str, &PerStatistic<PairedDifference>)],
    rbo_p: f64,
) -> (Vec<String>, Vec<Vec<String>>) {
    let columns = paper_columns::<PairedDifference>(rbo_p);
    let mut header = vec!["difference".to_string()];
    header.extend(columns.iter().map(|c| c.0.clone()));
    let rows = pairs
        .iter()
        .map(|(a, b, d)| {
            let mut row = vec![format!("{a} − {b}")];
            row.extend(columns.iter().map(|c| difference_text(&(c.1)(d))));
            row
        })
        .collect();
    (header, rows)
}

/// The resamples on which each statistic is undefined, per set and per pair (`[label, NDCG, …,
/// RBO]`), or `None` when there is none anywhere.
pub fn undefined_table(
    sets: &[(&str, &PerStatistic<StatInterval>)],
    pairs: &[(&str, &str, &PerStatistic<PairedDifference>)],
    rbo_p: f64,
) -> Option<(Vec<String>, Vec<Vec<String>>)> {
    let set_cols = paper_columns::<StatInterval>(rbo_p);
    let pair_cols = paper_columns::<PairedDifference>(rbo_p);
    let mut any = false;
    let mut rows = Vec::new();
    for (name, stats) in sets {
        let counts: Vec<usize> = set_cols.iter().map(|c| (c.1)(stats).undefined).collect();
        any |= counts.iter().any(|&u| u > 0);
        rows.push(
            std::iter::once(name.to_string()).chain(counts.iter().map(usize::to_string)).collect(),
        );
    }
    for (a, b, d) in pairs {
        let counts: Vec<usize> = pair_cols.iter().map(|c| (c.1)(d).undefined).collect();
        any |= counts.iter().any(|&u| u > 0);
        rows.push(
            std::iter::once(format!("{a} − {b}"))
                .chain(counts.iter().map(usize::to_string))
                .collect(),
        );
    }
    let mut header = vec![String::new()];
    header.extend(set_cols.into_iter().map(|c| c.0));
    any.then_some((header, rows))
}

/// A Markdown table cell: `|` escaped, line breaks as spaces (names and labels come from files
/// and flags).
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

fn write_table(s: &mut String, header: &[String], rows: &[Vec<String>], numeric_from: usize) {
    let _ = writeln!(s, "| {} |", header.iter().map(|h| cell(h)).collect::<Vec<_>>().join(" | "));
    let _ = writeln!(
        s,
        "|{}|",
        (0..header.len())
            .map(|i| if i >= numeric_from { "---:" } else { "---" })
            .collect::<Vec<_>>()
            .join("|")
    );
    for r in rows {
        let _ = writeln!(s, "| {} |", r.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | "));
    }
}

/// The comparison as Markdown: the paper-form table, the paired differences, the undefined
/// resamples (when any), every set's scores, rho's permutation p-values, the models left out,
/// and how to read the intervals.
pub fn render_comparison(c: &Comparison) -> String {
    let mut s = String::new();
    let b = &c.bootstrap;
    let n = c.models.len();
    let sets: Vec<(&str, &PerStatistic<StatInterval>)> =
        c.sets.iter().map(|r| (r.name.as_str(), &r.correlation.bootstrap.stats)).collect();
    let pairs: Vec<(&str, &str, &PerStatistic<PairedDifference>)> =
        c.pairs.iter().map(|p| (p.a.as_str(), p.b.as_str(), &p.difference)).collect();
    let _ = writeln!(
        s,
        "{} benchmark{} against the downstream ranking `{}`, on the {n} models that every set and the downstream score. Each statistic with its {}% percentile bootstrap CI over models ({} resamples, seed {}; one draw of models shared by every set).\n",
        c.sets.len(),
        if c.sets.len() == 1 { "" } else { "s" },
        cell(&c.downstream.name),
        b.level * 100.0,
        b.resamples,
        b.seed
    );
    let (header, rows) = paper_table(&c.downstream.name, &sets, b.rbo_p);
    write_table(&mut s, &header, &rows, 2);
    if pairs.is_empty() {
        let _ = writeln!(s, "\nOne set: no paired differences.");
    } else {
        let _ = writeln!(s, "\nPaired differences (first set minus second, on the same resampled models each time):\n");
        let (header, rows) = difference_table(&pairs, b.rbo_p);
        write_table(&mut s, &header, &rows, 1);
    }
    match undefined_table(&sets, &pairs, b.rbo_p) {
        Some((header, rows)) => {
            let _ = writeln!(
                s,
                "\nResamples (of {}) on which a statistic is undefined (every drawn model has the same score on one side), left out of that interval:\n",
                b.resamples
            );
            write_table(&mut s, &header, &rows, 1);
        }
        None => {
            let _ = writeln!(s, "\nEvery statistic is defined on every resample.");
        }
    }
    let _ = writeln!(s, "\nScores of the compared models:\n");
    let mut header = vec!["model".to_string()];
    header.extend(c.sets.iter().map(|r| r.name.clone()));
    header.push(format!("downstream ({})", c.downstream.name));
    let rows: Vec<Vec<String>> = c
        .models
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mut row = vec![format!("`{m}`")];
            row.extend(c.sets.iter().map(|r| format!("{:.4}", r.correlation.models[i].1)));
            row.push(format!("{:.4}", c.sets[0].correlation.models[i].2));
            row
        })
        .collect();
    write_table(&mut s, &header, &rows, 1);
    let perms: Vec<String> = c
        .sets
        .iter()
        .map(|r| {
            let p = &r.correlation.permutation;
            format!(
                "{} {:.4} ({})",
                r.name,
                p.p_value,
                if p.exact {
                    format!("exact over all {} pairings", p.permutations)
                } else {
                    format!("{} random pairings", p.permutations)
                }
            )
        })
        .collect();
    let _ = writeln!(s, "\nrho's two-sided permutation p-value: {}.", perms.join("; "));
    for r in &c.sets {
        if !r.lacked.is_empty() {
            let _ = writeln!(
                s,
                "\nSet `{}` has no score for: {} (left out of every set's statistics).",
                r.name,
                r.lacked.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ")
            );
        }
        if !r.without_downstream.is_empty() {
            let _ = writeln!(
                s,
                "\nSet `{}`: no downstream score for {} (left out).",
                r.name,
                r.without_downstream
                    .iter()
                    .map(|m| format!("`{m}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    let wide = if n < 10 { " (fewer than 10 models: very wide)" } else { "" };
    if pairs.is_empty() {
        let _ = writeln!(s, "\nReading the intervals: with {n} models they are wide{wide}; an interval that contains 0 does not show that the benchmark ranks the models like the downstream.");
    } else {
        let _ = writeln!(
            s,
            "\nReading the intervals: with {n} models they are wide{wide}. A paired difference whose interval contains 0 does not show that one benchmark ranks the models more like the downstream than the other; the intervals are not adjusted for the {} comparisons.",
            pairs.len() * 5
        );
    }
    s
}
