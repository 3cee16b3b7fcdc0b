//! Benchmark run folders as `correlate` inputs, and the checks that make their accuracies
//! comparable: every run must have been made on the same dataset files and have evaluated the
//! same items (a `--limit 2` run or a one-subset run beside full runs gives accuracies over
//! other items), unless `--common-items` restricts every run to the items all of them share,
//! recomputing each accuracy from its `outcomes.jsonl`. Control baselines (`--with-baselines`)
//! are taken once per condition, after checking that runs on the same items agree on them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use prbench_records::outcome::Outcome;
use prbench_records::summary::{AccuracyRow, Summary};
use prbench_stats::ItemResult;
use serde::Deserialize;

use super::inputs::read_text;
use super::{invalid, CorrelationError, Entry, Metric, Result};

/// Accuracies read from two files of the same computation are equal to the last bit; this
/// only absorbs a decimal round trip.
const SAME: f64 = 1e-12;

/// One benchmark run: its summary's figures and where they came from.
pub(super) struct BenchRun {
    /// The path as given on the command line.
    name: String,
    /// Its `summary.json`.
    file: PathBuf,
    dataset_hash: String,
    limit: Option<usize>,
    /// Position-debiased figure (else single-order accuracy).
    debiased: bool,
    /// Items and correct items of the figure's micro row.
    n: usize,
    correct: usize,
    /// The model's entry.
    model: Entry,
    /// The control baselines' entries (empty without `--with-baselines`).
    baselines: Vec<Entry>,
}

/// The micro row of `rows`: strict accuracy, items, correct items (`None` without a micro
/// row or when its accuracy is undefined).
fn micro(rows: &[AccuracyRow]) -> Option<(f64, usize, usize)> {
    let row = rows.iter().find(|r| r.label == "micro")?;
    Some((row.strict?, row.tally.n, row.tally.correct))
}

/// Reads a run folder (or its `summary.json`).
pub(super) fn read_run(path: &Path, metric: Metric, baselines: bool) -> Result<BenchRun> {
    let file = if path.is_dir() { path.join("summary.json") } else { path.to_path_buf() };
    let json: serde_json::Value = serde_json::from_str(&read_text(&file)?)
        .map_err(|source| CorrelationError::Json { path: file.clone(), source })?;
    let v = Summary::deserialize(json).map_err(|e| {
        CorrelationError::Invalid(format!("`{}`: {e}; pass a run's summary.json", file.display()))
    })?;
    let debiased_row =
        v.both_orders.as_ref().and_then(|b| b.debiased_rows.as_deref()).and_then(micro);
    let (row, debiased) = match (metric, debiased_row) {
        (Metric::Auto | Metric::Debiased, Some(d)) => (d, true),
        (Metric::Debiased, None) => invalid!("`{}`: the run did not judge both orders; rerun with --both-orders or use --metric accuracy", file.display()),
        _ => (micro(&v.rows).ok_or_else(|| CorrelationError::Invalid(format!("`{}`: no micro accuracy row", file.display())))?, false),
    };
    let figure = if debiased { "position-debiased accuracy" } else { "accuracy" };
    let condition = Some(v.condition.clone());
    let entry = |model: String, score: f64, source: String, implicit: bool| Entry {
        model,
        aliases: vec![],
        score,
        condition: condition.clone(),
        source,
        implicit,
    };
    let mut out = BenchRun {
        name: path.display().to_string(),
        dataset_hash: v.dataset_hash.clone(),
        limit: v.limit_per_subset,
        debiased,
        n: row.1,
        correct: row.2,
        model: entry(
            v.model.clone(),
            row.0,
            format!("{} ({figure}, micro)", file.display()),
            false,
        ),
        baselines: vec![],
        file: file.clone(),
    };
    if baselines {
        for b in &v.baselines {
            let Some((s, ..)) = micro(&b.rows) else {
                invalid!("`{}`: baseline `{}` has no micro row", file.display(), b.name);
            };
            out.baselines.push(entry(
                b.name.clone(),
                s,
                format!("{} (baseline accuracy, micro)", file.display()),
                true,
            ));
        }
    }
    Ok(out)
}

/// The benchmark figure `correlate` reads from the run folder `path` under `metric`: micro
/// strict accuracy, or the position-debiased one, with whether it is debiased. A study writes
/// its benchmark CSVs with it, so they hold exactly what `correlate` would read from the runs.
///
/// # Errors
/// As [`super::correlate`] for a run input: unreadable or invalid summary, no micro row,
/// `Debiased` for a run in one order.
pub fn run_figure(path: &Path, metric: Metric) -> Result<(f64, bool)> {
    let run = read_run(path, metric, false)?;
    Ok((run.model.score, run.debiased))
}

impl BenchRun {
    /// The result of every evaluated item under the run's figure, from the `outcomes.jsonl`
    /// beside its summary, checked against the summary's counts.
    fn items(&self) -> Result<BTreeMap<String, ItemResult>> {
        let path = self.file.with_file_name("outcomes.jsonl");
        if !path.is_file() {
            invalid!(
                "`{}` is missing: correlate reads which items each run evaluated from it (runs on other items are not comparable); pass the run folder as `prbench eval` wrote it",
                path.display()
            );
        }
        let mut items = BTreeMap::new();
        for (i, line) in read_text(&path)?.lines().enumerate().filter(|(_, l)| !l.trim().is_empty())
        {
            let o: Outcome =
                serde_json::from_str(line).map_err(|source| CorrelationError::Line {
                    path: path.clone(),
                    line: i + 1,
                    what: "not an outcome record",
                    source,
                })?;
            let r = if self.debiased {
                let Some(r) = o.debiased_result else {
                    invalid!("`{}` line {}: no `debiased_result`, although the summary reports the position-debiased figure", path.display(), i + 1);
                };
                r
            } else {
                o.result
            };
            if items.insert(o.example_id.clone(), r).is_some() {
                invalid!("`{}` line {}: example `{}` appears twice; the file was edited or two runs were merged", path.display(), i + 1, o.example_id);
            }
        }
        let correct = items.values().filter(|&&r| r == ItemResult::Correct).count();
        if (items.len(), correct) != (self.n, self.correct) {
            invalid!(
                "`{}` holds {} outcome records ({correct} correct) but `{}` counts {} items ({} correct): the run is unfinished or a file was changed; rerun it",
                path.display(),
                items.len(),
                self.file.display(),
                self.n,
                self.correct
            );
        }
        Ok(items)
    }

    fn describe(&self, items: usize) -> String {
        match self.limit {
            Some(l) => format!("{items} items (--limit {l} per subset)"),
            None => format!("{items} items"),
        }
    }
}

/// The example ids of a run's items.
fn ids(items: &BTreeMap<String, ItemResult>) -> BTreeSet<&String> {
    items.keys().collect()
}

/// A few ids of `set`, for a message.
fn some(set: &BTreeSet<&String>) -> String {
    let shown: Vec<String> = set.iter().take(3).map(|id| format!("`{id}`")).collect();
    shown.join(", ") + if set.len() > 3 { ", …" } else { "" }
}

/// The benchmark entries of `runs` (each model, then the baselines once per condition),
/// refusing runs that are not comparable, or with `common_items` restricting every run to the
/// items all of them evaluated (what was kept is printed). See the module docs.
///
/// # Errors
/// Runs on other dataset files or other items (without `common_items`), disagreeing
/// baselines, baselines that cannot be restricted, unreadable or inconsistent outcomes.
pub(super) fn entries(
    mut runs: Vec<BenchRun>,
    common_items: bool,
    note: &mut dyn FnMut(&str),
) -> Result<Vec<Entry>> {
    if common_items && runs.len() < 2 {
        invalid!("--common-items restricts several benchmark run folders to the items they share; give at least two");
    }
    let mut restricted = vec![false; runs.len()];
    if runs.len() >= 2 {
        let first = &runs[0];
        if let Some(other) = runs.iter().find(|r| r.dataset_hash != first.dataset_hash) {
            let pair = format!(
                "`{}` (dataset sha256 {}…) and `{}` ({}…) were made on different dataset files (another dataset or version, or another --subset selection)",
                first.name,
                first.dataset_hash.get(..12).unwrap_or(&first.dataset_hash),
                other.name,
                other.dataset_hash.get(..12).unwrap_or(&other.dataset_hash)
            );
            if !common_items {
                invalid!("{pair}: their accuracies are over different items. Rerun them on the same data, or pass --common-items to compare every run on the examples all of them evaluated (matched by example id)");
            }
            note(&format!("note: {pair}; --common-items matches their items by example id, which is right only when the files are selections of one dataset"));
        }
        let items: Vec<BTreeMap<String, ItemResult>> =
            runs.iter().map(BenchRun::items).collect::<Result<_>>()?;
        let mut common = ids(&items[0]);
        for (run, its) in runs.iter().zip(&items).skip(1) {
            let these = ids(its);
            if these != ids(&items[0]) && !common_items {
                let reference = ids(&items[0]);
                let only_first: BTreeSet<&String> = reference.difference(&these).copied().collect();
                let only_other: BTreeSet<&String> = these.difference(&reference).copied().collect();
                invalid!(
                    "`{}` evaluated {} and `{}` {}: {} only in the first{}, {} only in the second{}. Accuracies over other items are not comparable: rerun with the same --limit and --subset, or pass --common-items to recompute every run's accuracy on the items all runs share",
                    runs[0].name,
                    runs[0].describe(reference.len()),
                    run.name,
                    run.describe(these.len()),
                    only_first.len(),
                    if only_first.is_empty() { String::new() } else { format!(" ({})", some(&only_first)) },
                    only_other.len(),
                    if only_other.is_empty() { String::new() } else { format!(" ({})", some(&only_other)) },
                );
            }
            common = common.intersection(&these).copied().collect();
        }
        if common.is_empty() {
            invalid!(
                "--common-items: no example was evaluated by all {} runs; nothing to compare",
                runs.len()
            );
        }
        let common: BTreeSet<String> = common.into_iter().cloned().collect();
        if common_items {
            for (i, (run, its)) in runs.iter_mut().zip(&items).enumerate() {
                if its.len() == common.len() {
                    continue;
                }
                restricted[i] = true;
                let correct = common.iter().filter(|id| its[*id] == ItemResult::Correct).count();
                let score = correct as f64 / common.len() as f64;
                note(&format!("`{}`: {} of its {} items kept; accuracy {:.4} on all, {score:.4} on the common items", run.name, common.len(), its.len(), run.model.score));
                run.model.score = score;
                run.model.source = run.model.source.replace(
                    ", micro)",
                    &format!(
                        ", micro, recomputed on the {} common items from outcomes.jsonl)",
                        common.len()
                    ),
                );
            }
            note(&format!(
                "--common-items: {} items common to all {} runs kept ({} run{} restricted)",
                common.len(),
                runs.len(),
                restricted.iter().filter(|&&r| r).count(),
                if restricted.iter().filter(|&&r| r).count() == 1 { "" } else { "s" }
            ));
        }
    }
    let mut out: Vec<Entry> = runs.iter().map(|r| r.model.clone()).collect();
    let mut taken: Vec<(&Entry, &BenchRun)> = Vec::new();
    for (run, &cut) in runs.iter().zip(&restricted) {
        if cut && !run.baselines.is_empty() {
            invalid!(
                "--with-baselines: the baselines of `{}` are over all its {} items, and run folders keep no per-item baseline results to restrict them to the common items; drop --with-baselines, or rerun on the common items (same --limit and --subset)",
                run.name,
                run.n
            );
        }
        for b in &run.baselines {
            match taken.iter().find(|(t, _)| t.model == b.model && t.condition == b.condition) {
                // Runs under one condition on the same items carry the same baseline rows: one entry.
                Some((t, _)) if (t.score - b.score).abs() <= SAME => {}
                Some((t, other)) => invalid!(
                    "--with-baselines: `{}` under condition `{}` has accuracy {} in `{}` but {} in `{}`, on the same items: the runs differ in a setting the baselines depend on (--seed draws the slots and `random`'s picks); correlate runs made with one seed, or drop --with-baselines",
                    b.model,
                    b.condition.as_deref().unwrap_or("?"),
                    t.score,
                    other.name,
                    b.score,
                    run.name
                ),
                None => taken.push((b, run)),
            }
        }
    }
    out.extend(taken.into_iter().map(|(b, _)| b.clone()));
    Ok(out)
}
