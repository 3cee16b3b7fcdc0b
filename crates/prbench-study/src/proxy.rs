//! The proxy-gap table: for each downstream leg, every benchmark's ranking of the entries
//! against the leg's ranking, through [`prbench_report::correlation::compare`] itself (the
//! computation of `prbench correlate --benchmark-set`), on inputs the study writes as files so
//! that the same command reproduces each figure:
//!
//! - `proxy/<leg>-<benchmark>.csv`: `model,score`, the figure of each entry the leg ranks, as
//!   `correlate` reads it from the run folder ([`prbench_report::correlation::run_figure`]),
//!   under the entry's name;
//! - Best-of-N: the leg's `bon-study-rubric.json` table, whose rows `bon score --name` named
//!   after the entries; RL: `proxy/<leg>-downstream.csv`, each entry's mean rubric score.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use prbench_downstream::bon::folder::BonFolder;
use prbench_report::correlation::{
    self, difference_text, interval_text, BenchmarkSet, Comparison, ComparisonOptions,
    CorrelationOptions, Metric,
};
use prbench_stats::rank::{PairedDifference, PerStatistic, StatInterval, DEFAULT_RBO_P};

use prbench_report::leaderboard::csv_cell;

use crate::execute::StepRecord;
use crate::graph::{LegKind, Study, JUDGEMENTS};
use crate::table::Table;

/// The statistics a plan may list, in the paper's column order.
pub const STATISTICS: &[&str] = &["ndcg", "weighted-tau", "spearman", "kendall-tau-b", "rbo"];

/// One leg's comparison and the inputs it read.
pub struct LegComparison {
    /// The leg's name.
    pub leg: String,
    /// The comparison (`correlate --benchmark-set`'s report), or why it is undefined (every
    /// entry's downstream score equal, say): the reason, with its cause chain.
    pub comparison: Result<Comparison, String>,
    /// The leg's name in the tables.
    pub title: String,
    /// The entries compared.
    pub entries: usize,
    /// The equivalent command line.
    pub command: String,
}

fn metric(study: &Study) -> Metric {
    match study
        .file
        .plan
        .correlation
        .as_ref()
        .and_then(|c| c.get_ref().metric.as_ref())
        .map(|m| m.get_ref().as_str())
    {
        Some("accuracy") => Metric::Accuracy,
        Some("debiased") => Metric::Debiased,
        _ => Metric::Auto,
    }
}

/// The correlation options of the plan (bootstrap, permutations, RBO p, seed).
pub fn options(study: &Study) -> CorrelationOptions {
    let mut o = CorrelationOptions::new(vec![], vec![]);
    let c = study.file.plan.correlation.as_ref().map(|c| c.get_ref());
    if let Some(b) = c.and_then(|c| c.bootstrap) {
        o.bootstrap = b;
    }
    if let Some(p) = c.and_then(|c| c.permutations) {
        o.permutations = p;
    }
    o.rbo_p = c.and_then(|c| c.rbo_p).unwrap_or(DEFAULT_RBO_P);
    o.seed = study.file.plan.seed;
    o
}

/// Writes `proxy/<leg>-<benchmark>.csv` for every leg and benchmark and compares each leg with
/// the benchmarks.
///
/// A comparison `correlate` refuses (fewer than 2 entries in common, a side whose scores are
/// all equal) is kept as its reason ([`LegComparison::comparison`]) and noted as a warning.
///
/// # Errors
/// A run folder or record that cannot be read.
pub fn compare_legs(
    study: &Study,
    record: &dyn Fn(&str) -> Result<StepRecord>,
    note: &mut dyn FnMut(&str),
) -> Result<Vec<LegComparison>> {
    let dir = study.out.join("proxy");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating `{}`", dir.display()))?;
    let m = metric(study);
    let mut out = Vec::new();
    for leg in &study.legs {
        // Each benchmark's figures of the entries this leg ranks, under their names.
        let mut sets = Vec::new();
        for b in &study.benchmarks {
            let mut csv = String::from("model,score\n");
            for e in study.entries.iter().filter(|e| e.benchmark == b.name) {
                if !leg.entries.iter().any(|(name, _)| *name == e.name) {
                    continue;
                }
                let r = record(&e.eval_step)?;
                let run = r.outputs.get(&format!("run:{}", e.condition)).with_context(|| {
                    format!("step `{}` recorded no run for `{}`", e.eval_step, e.condition)
                })?;
                let (score, _) = correlation::run_figure(Path::new(run), m)?;
                csv += &format!("{},{score:?}\n", csv_cell(&e.name));
            }
            let path = dir.join(format!("{}-{}.csv", leg.name, b.name));
            prbench_files::write_atomic(&path, csv.as_bytes())
                .with_context(|| format!("writing `{}`", path.display()))?;
            sets.push(BenchmarkSet { name: b.title.clone(), paths: vec![path] });
        }
        let mut opts = options(study);
        let downstream: PathBuf = match leg.kind {
            LegKind::BestOfN => {
                opts.k = leg.k;
                BonFolder::new(leg.folder.as_ref().expect("a best-of-n leg has a folder"))
                    .table(JUDGEMENTS)
                    .1
            }
            LegKind::Rl => {
                let mut csv = String::from("model,score\n");
                for (entry, step) in &leg.entries {
                    let r = record(step)?;
                    let mean = r
                        .outputs
                        .get("mean")
                        .with_context(|| format!("step `{step}` recorded no mean rubric score"))?;
                    csv += &format!("{},{mean}\n", csv_cell(entry));
                }
                let path = dir.join(format!("{}-downstream.csv", leg.name));
                prbench_files::write_atomic(&path, csv.as_bytes())
                    .with_context(|| format!("writing `{}`", path.display()))?;
                path
            }
        };
        opts.downstream = vec![downstream.clone()];
        let command = format!(
            "prbench correlate {} --downstream {} --downstream-name {}{} --bootstrap {} --permutations {} --rbo-p {} --seed {}",
            sets.iter().map(|s| format!("--benchmark-set {}", shell_word(&format!("{}={}", s.name, s.paths[0].display())))).collect::<Vec<_>>().join(" "),
            shell_word(&downstream.display().to_string()),
            shell_word(&leg.title),
            opts.k.map(|k| format!(" --k {k}")).unwrap_or_default(),
            opts.bootstrap,
            opts.permutations,
            opts.rbo_p,
            opts.seed
        );
        // A comparison correlate refuses (a constant side, too few entries in common) is a
        // fact about the results, not a failed study: the other tables are still written, and
        // the leg's row says why it has no figures.
        let comparison = correlation::compare(
            &ComparisonOptions {
                sets: sets.clone(),
                downstream_name: Some(leg.title.clone()),
                options: opts,
            },
            note,
        )
        // One line: the reason sits in a table cell.
        .map_err(|e| {
            prbench_models::error::chain(&e).split_whitespace().collect::<Vec<_>>().join(" ")
        });
        if let Err(why) = &comparison {
            note(&format!(
                "warning: downstream leg `{}` cannot be compared with the benchmarks: {why}",
                leg.name
            ));
        }
        out.push(LegComparison {
            leg: leg.name.clone(),
            comparison,
            command,
            title: leg.title.clone(),
            entries: leg.entries.len(),
        });
    }
    Ok(out)
}

/// `s` as one POSIX shell word: single-quoted, with each `'` as `'\''`, so that a pasted
/// command expands nothing.
fn shell_word(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+".contains(c)) {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The shown columns: every statistic, or the plan's `statistics`, in the paper's order.
fn columns<T: Copy>(study: &Study, rbo_p: f64) -> Vec<correlation::PaperColumn<T>> {
    let wanted = study
        .file
        .plan
        .correlation
        .as_ref()
        .and_then(|c| c.get_ref().statistics.as_ref())
        .map(|s| s.get_ref().clone());
    correlation::paper_columns::<T>(rbo_p)
        .into_iter()
        .zip(STATISTICS)
        .filter(|(_, name)| wanted.as_ref().is_none_or(|w| w.iter().any(|x| x == *name)))
        .map(|(c, _)| c)
        .collect()
}

/// The proxy-gap table: one row per (benchmark, downstream leg), each statistic with its 95%
/// bootstrap CI over models, and the number of models compared.
pub fn proxy_gap_table(study: &Study, legs: &[LegComparison]) -> Table {
    let rbo_p = options(study).rbo_p;
    let cols = columns::<StatInterval>(study, rbo_p);
    let mut header = vec!["benchmark".to_string(), "downstream".into(), "models".into()];
    header.extend(cols.iter().map(|c| c.0.clone()));
    let mut rows = Vec::new();
    for l in legs {
        let c = match &l.comparison {
            Ok(c) => c,
            Err(why) => {
                for b in &study.benchmarks {
                    let mut row = vec![b.title.clone(), l.title.clone(), l.entries.to_string()];
                    row.extend(cols.iter().enumerate().map(|(i, _)| {
                        if i == 0 {
                            format!("undefined: {why}")
                        } else {
                            "–".into()
                        }
                    }));
                    rows.push(row);
                }
                continue;
            }
        };
        for s in &c.sets {
            let stats: &PerStatistic<StatInterval> = &s.correlation.bootstrap.stats;
            let mut row =
                vec![s.name.clone(), c.downstream.name.clone(), c.models.len().to_string()];
            row.extend(cols.iter().map(|c| {
                let st = (c.1)(stats);
                // An interval over the resamples where the statistic is defined says so, as
                // `correlate` does: it can look certain when most resamples were skipped.
                match st.undefined {
                    0 => interval_text(&st),
                    u => format!(
                        "{} ({u} of {} resamples undefined)",
                        interval_text(&st),
                        u + st.defined
                    ),
                }
            }));
            rows.push(row);
        }
    }
    Table {
        title: "Proxy gap: benchmark ranking vs downstream ranking (95% bootstrap CI over models)"
            .into(),
        header,
        rows,
        numeric_from: 2,
    }
}

/// The paired differences between benchmarks, per leg (only with several benchmarks).
pub fn difference_table(study: &Study, legs: &[LegComparison]) -> Option<Table> {
    let rbo_p = options(study).rbo_p;
    let cols = columns::<PairedDifference>(study, rbo_p);
    let mut header = vec!["downstream".to_string(), "difference".into()];
    header.extend(cols.iter().map(|c| c.0.clone()));
    let mut rows = Vec::new();
    for l in legs.iter().filter_map(|l| l.comparison.as_ref().ok()) {
        for p in &l.pairs {
            let mut row = vec![l.downstream.name.clone(), format!("{} − {}", p.a, p.b)];
            row.extend(cols.iter().map(|c| difference_text(&(c.1)(&p.difference))));
            rows.push(row);
        }
    }
    (!rows.is_empty()).then(|| Table {
        title: "Paired differences between benchmarks (95% bootstrap CI, one draw of models)"
            .into(),
        header,
        rows,
        numeric_from: 2,
    })
}
