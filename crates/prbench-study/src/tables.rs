//! The reward-model and conditioning tables, from the run files the study's eval steps wrote
//! (`summary.json`, `matrix.json`); nothing is recomputed.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use prbench_records::matrix::Matrix;
use prbench_records::Summary;

use crate::execute::StepRecord;
use crate::graph::{Entry, Study};
use crate::plan::Family;
use crate::table::Table;

/// An entry with the run folder that scored it and its summary.
pub struct ScoredEntry<'a> {
    /// The entry.
    pub entry: &'a Entry,
    /// Its run folder.
    pub dir: PathBuf,
    /// Its `summary.json`.
    pub summary: Summary,
}

/// Reads a JSON file as `T`, naming the file in the error.
pub fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading `{}`", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing `{}`", path.display()))
}

/// Each entry's run folder (from its eval step's record) and summary.
///
/// # Errors
/// An eval step without a record or without the entry's condition, an unreadable summary.
pub fn scored<'a>(
    study: &'a Study,
    record: &dyn Fn(&str) -> Result<StepRecord>,
) -> Result<Vec<ScoredEntry<'a>>> {
    study
        .entries
        .iter()
        .map(|e| {
            let r = record(&e.eval_step)?;
            let dir =
                r.outputs.get(&format!("run:{}", e.condition)).map(PathBuf::from).with_context(
                    || {
                        format!(
                            "step `{}` recorded no run for condition `{}`",
                            e.eval_step, e.condition
                        )
                    },
                )?;
            let summary = read_json(&dir.join("summary.json"))?;
            Ok(ScoredEntry { entry: e, dir, summary })
        })
        .collect()
}

/// `67.2 [64.5, 69.8]` (percent) or `–`.
fn pct(acc: Option<f64>, ci: Option<[f64; 2]>) -> String {
    match (acc, ci) {
        (Some(a), Some([lo, hi])) => {
            format!("{:.1} [{:.1}, {:.1}]", a * 100.0, lo * 100.0, hi * 100.0)
        }
        (Some(a), None) => format!("{:.1}", a * 100.0),
        _ => "–".into(),
    }
}

/// The reward-model table of one benchmark: one row per (model, condition), grouped by family
/// in the order scalar, generative, personalized, baselines (plan order within a family);
/// strict accuracy per subset, then over all items with its bootstrap CI, the
/// position-debiased figure when the run judged both orders, and the ties, unparsed verdicts
/// and errors counted as not correct.
pub fn reward_model_table(title: &str, scored: &[&ScoredEntry<'_>]) -> Table {
    let mut subsets: Vec<String> = Vec::new();
    for s in scored {
        for r in &s.summary.rows {
            if r.label != "micro" && r.label != "macro" && !subsets.contains(&r.label) {
                subsets.push(r.label.clone());
            }
        }
    }
    let mut header = vec!["family".to_string(), "model".into(), "condition".into()];
    header.extend(subsets.iter().cloned());
    header.extend([
        "all [95% CI]".to_string(),
        "debiased [95% CI]".into(),
        "n".into(),
        "ties".into(),
        "unparsed".into(),
        "errors".into(),
    ]);
    let mut order: Vec<&&ScoredEntry<'_>> = scored.iter().collect();
    order.sort_by_key(|s| s.entry.family);
    let rows = order
        .iter()
        .map(|s| {
            let rows = &s.summary.rows;
            let micro = rows.iter().find(|r| r.label == "micro");
            // `oracle` shows the hidden rubric: an upper bound, never a benchmark score.
            let condition = if s.summary.oracle {
                format!("{} (upper bound)", s.entry.condition)
            } else {
                s.entry.condition.clone()
            };
            let mut row =
                vec![family_name(s.entry.family).to_string(), s.entry.model.clone(), condition];
            for sub in &subsets {
                let r = rows.iter().find(|r| &r.label == sub);
                row.push(pct(r.and_then(|r| r.strict), None));
            }
            row.push(pct(micro.and_then(|r| r.strict), micro.and_then(|r| r.strict_ci)));
            let debiased = s
                .summary
                .both_orders
                .as_ref()
                .and_then(|b| b.debiased_rows.as_deref())
                .and_then(|d| d.iter().find(|r| r.label == "micro"));
            row.push(pct(debiased.and_then(|r| r.strict), debiased.and_then(|r| r.strict_ci)));
            let t = micro.map(|r| r.tally).unwrap_or_default();
            row.extend([t.n, t.ties, t.unparsed, t.errors].map(|v| v.to_string()));
            row
        })
        .collect();
    Table {
        title: format!("Reward models on {title}: strict accuracy, %"),
        header,
        rows,
        numeric_from: 3,
    }
}

/// A family's name in the table's first column.
pub fn family_name(f: Family) -> &'static str {
    match f {
        Family::Scalar => "scalar",
        Family::Generative => "generative",
        Family::Personalized => "personalized",
        Family::Baseline => "baseline",
    }
}

/// The conditioning table of one benchmark: for every model run under `none` and other
/// conditions, each condition's gain over `none` on the paired items, with the exact McNemar
/// p-value and its Holm adjustment, as the model's `matrix.json` holds them.
///
/// # Errors
/// A matrix file that cannot be read.
pub fn conditioning_table(
    study: &Study,
    bench: &str,
    record: &dyn Fn(&str) -> Result<StepRecord>,
) -> Result<Option<Table>> {
    let header = [
        "model",
        "metric",
        "condition",
        "scope",
        "paired",
        "gain (points)",
        "only condition",
        "only none",
        "p",
        "p (Holm)",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    let mut seen = Vec::new();
    for e in study.entries.iter().filter(|e| e.benchmark == bench) {
        if seen.contains(&e.eval_step) {
            continue;
        }
        seen.push(e.eval_step.clone());
        let r = record(&e.eval_step)?;
        let Some(path) = r.outputs.get("matrix") else { continue };
        let m: Matrix = read_json(Path::new(path))?;
        for b in &m.blocks {
            for g in &b.gains {
                rows.push(vec![
                    e.model.clone(),
                    b.metric.clone(),
                    g.condition.clone(),
                    g.scope.clone(),
                    g.n_paired.to_string(),
                    format!("{:+.1}", g.gain * 100.0),
                    g.only_condition.to_string(),
                    g.only_none.to_string(),
                    format!("{:.3}", g.p_value),
                    format!("{:.3}", g.p_holm),
                ]);
            }
        }
    }
    let title =
        study.benchmarks.iter().find(|b| b.name == bench).map_or(bench, |b| b.title.as_str());
    Ok((!rows.is_empty()).then(|| Table {
        title: format!("Conditioning on {title}: gain over `none` (exact McNemar, Holm within each model's matrix)"),
        header,
        rows,
        numeric_from: 4,
    }))
}

/// The `q`-quantile of sorted `v` (linear interpolation between order statistics, numpy's
/// default).
fn quantile(v: &[f64], q: f64) -> f64 {
    let pos = q * (v.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
}

/// The per-user table of one benchmark whose examples carry user ids: for each entry, the
/// distribution of per-user strict accuracy (the headline figure per item: position-debiased
/// when the run has it), and for PAL models the mean per-user accuracy of users seen in
/// training (rows of `W`) and of unseen users, as the meta-reward-modeling work reports it.
/// `None` when no example of the benchmark has a user id.
///
/// # Errors
/// The data, an `outcomes.jsonl` or a `pal.json` that cannot be read.
pub fn per_user_table(
    study: &Study,
    bench: &str,
    scored: &[&ScoredEntry<'_>],
) -> Result<Option<Table>> {
    use std::collections::BTreeMap;
    let b = study.benchmarks.iter().find(|b| b.name == bench).context("benchmark of the table")?;
    let subsets = &study.file.plan.benchmarks[bench].get_ref().subsets;
    let data =
        prbench_data::load(&b.data, subsets).with_context(|| format!("loading `{}`", b.data))?;
    let users: BTreeMap<&str, &str> =
        data.examples.iter().filter_map(|e| Some((e.id.as_str(), e.user_id.as_deref()?))).collect();
    if users.is_empty() {
        return Ok(None);
    }
    let header = [
        "model",
        "condition",
        "users",
        "mean",
        "p25",
        "median",
        "p75",
        "users at 0%",
        "users at 100%",
        "seen users (mean)",
        "unseen users (mean)",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    for s in scored {
        let path = s.dir.join("outcomes.jsonl");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading `{}`", path.display()))?;
        let mut per_user: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let o: prbench_records::outcome::Outcome = serde_json::from_str(line)
                .with_context(|| format!("`{}`, line {}: not an outcome", path.display(), i + 1))?;
            let Some(user) = users.get(o.example_id.as_str()) else { continue };
            let result = o.debiased_result.unwrap_or(o.result);
            let e = per_user.entry(user).or_default();
            e.0 += 1;
            e.1 += usize::from(result == prbench_stats::outcome::ItemResult::Correct);
        }
        let accuracy = |(n, c): &(usize, usize)| *c as f64 / *n as f64;
        let mut accs: Vec<f64> = per_user.values().map(accuracy).collect();
        if accs.is_empty() {
            continue;
        }
        accs.sort_by(f64::total_cmp);
        let mean = |v: &[f64]| {
            if v.is_empty() {
                "–".to_string()
            } else {
                format!("{:.1}", v.iter().sum::<f64>() / v.len() as f64 * 100.0)
            }
        };
        let (mut seen, mut unseen) = (String::from("–"), String::from("–"));
        if let Some(dir) = s.entry_spec_dir("pal:") {
            let config: prbench_train::pal::config::PalConfig =
                read_json(&dir.join(prbench_train::pal::config::CONFIG_FILE))?;
            let (a, b): (Vec<_>, Vec<_>) =
                per_user.iter().partition(|(u, _)| config.users.contains_key(**u));
            seen = mean(&a.iter().map(|(_, t)| accuracy(t)).collect::<Vec<_>>());
            unseen = mean(&b.iter().map(|(_, t)| accuracy(t)).collect::<Vec<_>>());
        }
        rows.push(vec![
            s.entry.model.clone(),
            s.entry.condition.clone(),
            accs.len().to_string(),
            mean(&accs),
            format!("{:.1}", quantile(&accs, 0.25) * 100.0),
            format!("{:.1}", quantile(&accs, 0.5) * 100.0),
            format!("{:.1}", quantile(&accs, 0.75) * 100.0),
            accs.iter().filter(|&&a| a == 0.0).count().to_string(),
            accs.iter().filter(|&&a| a == 1.0).count().to_string(),
            seen,
            unseen,
        ]);
    }
    Ok(Some(Table {
        title: format!("Per-user accuracy on {}: strict accuracy of each user's items, %", b.title),
        header,
        rows,
        numeric_from: 2,
    }))
}

impl ScoredEntry<'_> {
    /// The model folder of a `scheme` spec (`pal:DIR`) as the run's summary names it.
    fn entry_spec_dir(&self, scheme: &str) -> Option<PathBuf> {
        self.summary.model.strip_prefix(scheme).map(PathBuf::from)
    }
}
