//! The leaderboard: one row per (model, condition) run and one per control baseline, with
//! strict accuracy per subset, micro and macro, each with its bootstrap 95% CI (as
//! `summary.json` holds them; nothing is recomputed), the both-orders and position-debiased
//! figures where the run has them, and the counts of unparsed verdicts, ties, errors and
//! truncated inputs. `prbench leaderboard` prints it as Markdown, CSV, JSON or LaTeX; the HTML
//! report shows the same rows.
//!
//! Order: benchmark rows (models and baselines) by their headline accuracy, best first, then
//! the `oracle` rows, which are upper bounds and never ranked with benchmark scores. The
//! headline is the position-debiased micro accuracy when the run has it, else the strict micro
//! accuracy.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::sources::RunSource;
use crate::summary::{AccuracyRow, PositionBias};
use prbench_records::manifest::PartialManifest;

/// What a row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RowKind {
    /// A model under test.
    Model,
    /// A control baseline (`longer`, `shorter`, `random`, `slot-a`, `profile-overlap`), from a
    /// run's summary or run as the model itself.
    Baseline,
}

/// One leaderboard row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeaderRow {
    /// Model spec (`baseline:NAME` for baselines).
    pub model: String,
    /// The condition the run was made under. A control baseline reported with the same
    /// figures by runs under several conditions is one row, whose condition lists them in the
    /// order met, comma-separated (`none, oracle`).
    pub condition: String,
    /// What a control baseline sees (`answer only`, `slot order only`, `answer + full
    /// profile`), from the summary that reported it; `None` for models (and for a baseline run
    /// as the model whose summary does not list it).
    pub sees: Option<String>,
    /// Model or control baseline.
    pub kind: RowKind,
    /// `oracle` rows: the model saw the ground-truth rubric; an upper bound, not a score.
    pub upper_bound: bool,
    /// The run folder's name (for a baseline from a summary: the first run that reported it).
    pub run_id: String,
    /// Dataset source.
    pub dataset: String,
    /// Dataset kind (`prb`, `psoups`, …).
    pub dataset_kind: String,
    /// Index into [`Leaderboard::groups`]: rows are ranked only against rows on the same
    /// dataset (content hash) and the same items (example ids).
    pub group: usize,
    /// A control baseline read from a run's summary (not a run of its own).
    pub from_summary: bool,
    /// Items.
    pub n: usize,
    /// Strict accuracy per subset, then `micro` and `macro` (from summary.json).
    pub rows: Vec<AccuracyRow>,
    /// Both-orders strict accuracy rows, when the run judged both orders.
    pub both_orders: Option<Vec<AccuracyRow>>,
    /// Position-debiased rows, when the run has them.
    pub debiased: Option<Vec<AccuracyRow>>,
    /// Both-orders consistency (share of items whose two verdicts agree), in [0, 1].
    pub consistency: Option<f64>,
    /// Position bias of a judge.
    pub position_bias: Option<PositionBias>,
    /// Unparsed verdicts (primary order).
    pub unparsed: usize,
    /// Ties.
    pub ties: usize,
    /// Backend errors.
    pub errors: usize,
    /// Items whose input was truncated.
    pub truncated: usize,
}

impl LeaderRow {
    /// The row labelled `label` (`micro`, `macro` or a short subset name) of `rows`.
    pub fn row<'a>(rows: &'a [AccuracyRow], label: &str) -> Option<&'a AccuracyRow> {
        rows.iter().find(|r| r.label == label)
    }

    /// The headline accuracy in [0, 1]: position-debiased micro when present, else strict micro.
    pub fn headline(&self) -> Option<f64> {
        self.debiased
            .as_deref()
            .and_then(|d| Self::row(d, "micro"))
            .and_then(|r| r.strict)
            .or_else(|| Self::row(&self.rows, "micro").and_then(|r| r.strict))
    }

    /// What the headline is.
    pub fn headline_metric(&self) -> &'static str {
        if self
            .debiased
            .as_deref()
            .and_then(|d| Self::row(d, "micro"))
            .and_then(|r| r.strict)
            .is_some()
        {
            "position-debiased"
        } else {
            "strict"
        }
    }
}

/// Rows on one dataset and one set of items: the only rows a row is ranked against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// Dataset source.
    pub dataset: String,
    /// Dataset kind (`prb`, `psoups`, …).
    pub dataset_kind: String,
    /// Dataset content hash.
    pub dataset_hash: String,
    /// Items.
    pub n: usize,
}

impl Group {
    /// `data/sample, 12 items` (with ` — not Personalized-RewardBench` for adapted data).
    pub fn label(&self) -> String {
        let kind = if self.dataset_kind == "prb" {
            String::new()
        } else {
            format!(" ({}: not Personalized-RewardBench)", self.dataset_kind)
        };
        format!("{}{kind}, {} items", self.dataset, self.n)
    }
}

/// The leaderboard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Leaderboard {
    /// The datasets and item sets, in order of first appearance; rows are ranked within each.
    pub groups: Vec<Group>,
    /// Subset labels in column order (short names as the summaries give them).
    pub subsets: Vec<String>,
    /// Rows, in leaderboard order.
    pub rows: Vec<LeaderRow>,
}

/// Builds the leaderboard from run folders. A control baseline reported by several runs on the
/// same dataset and items (equal figures) is one row, whose condition lists the conditions of
/// those runs; differing figures (other items, or a condition that blocks items, such as
/// `planner`'s failed plans) give one row per distinct result.
///
/// A baseline run as the model (`eval --model baseline:longer`) replaces the same baseline's
/// summary row on the same items, so it is listed once.
pub fn build(runs: &[RunSource]) -> Leaderboard {
    let mut subsets: Vec<String> = Vec::new();
    let mut rows: Vec<LeaderRow> = Vec::new();
    let mut groups: Vec<Group> = Vec::new();
    let mut group_keys: Vec<(String, Vec<String>)> = Vec::new();
    for run in runs {
        let s = &run.summary;
        let mut ids: Vec<String> = run.outcomes.iter().map(|o| o.example_id.clone()).collect();
        ids.sort();
        let key = (s.dataset_hash.clone(), ids);
        let group = match group_keys.iter().position(|k| *k == key) {
            Some(g) => g,
            None => {
                group_keys.push(key);
                groups.push(Group {
                    dataset: s.dataset.clone(),
                    dataset_kind: s.dataset_kind.clone(),
                    dataset_hash: s.dataset_hash.clone(),
                    n: run.outcomes.len(),
                });
                groups.len() - 1
            }
        };
        for r in &s.rows {
            if r.label != "micro" && r.label != "macro" && !subsets.contains(&r.label) {
                subsets.push(r.label.clone());
            }
        }
        let micro = LeaderRow::row(&s.rows, "micro");
        let tally = micro.map(|r| r.tally).unwrap_or_default();
        let run_id = run
            .dir
            .file_name()
            .map_or_else(|| s.run_id.clone(), |n| n.to_string_lossy().into_owned());
        rows.push(LeaderRow {
            model: model_label(&s.model, &run.manifest),
            condition: s.condition.clone(),
            sees: if run.is_baseline() {
                s.baselines.iter().find(|b| b.name == s.model).map(|b| b.sees.clone())
            } else {
                None
            },
            kind: if run.is_baseline() { RowKind::Baseline } else { RowKind::Model },
            // A control baseline reads no rubric, so under `oracle` it is no upper bound.
            upper_bound: s.oracle && !run.is_baseline(),
            run_id: run_id.clone(),
            dataset: s.dataset.clone(),
            dataset_kind: s.dataset_kind.clone(),
            group,
            from_summary: false,
            n: tally.n,
            rows: s.rows.clone(),
            both_orders: s.both_orders.as_ref().map(|b| b.rows.clone()),
            debiased: s.both_orders.as_ref().and_then(|b| b.debiased_rows.clone()),
            consistency: s.both_orders.as_ref().and_then(|b| b.consistency),
            position_bias: s.position_bias.clone(),
            unparsed: tally.unparsed,
            ties: tally.ties,
            errors: tally.errors,
            truncated: micro.map_or(0, |r| r.truncated),
        });
        for b in &s.baselines {
            let same = rows.iter_mut().find(|x| {
                x.kind == RowKind::Baseline
                    && x.model == b.name
                    && x.group == group
                    && x.from_summary
                    && x.rows == b.rows
                    && x.sees.as_deref() == Some(b.sees.as_str())
            });
            if let Some(x) = same {
                if !x.condition.split(", ").any(|c| c == s.condition) {
                    x.condition = format!("{}, {}", x.condition, s.condition);
                }
                continue;
            }
            let t = LeaderRow::row(&b.rows, "micro").map(|r| r.tally).unwrap_or_default();
            rows.push(LeaderRow {
                model: b.name.clone(),
                condition: s.condition.clone(),
                sees: Some(b.sees.clone()),
                kind: RowKind::Baseline,
                upper_bound: false,
                run_id: run_id.clone(),
                dataset: s.dataset.clone(),
                dataset_kind: s.dataset_kind.clone(),
                group,
                from_summary: true,
                n: t.n,
                rows: b.rows.clone(),
                both_orders: None,
                debiased: None,
                consistency: None,
                position_bias: None,
                unparsed: t.unparsed,
                ties: t.ties,
                errors: t.errors,
                truncated: LeaderRow::row(&b.rows, "micro").map_or(0, |r| r.truncated),
            });
        }
    }
    // A baseline evaluated as the model stands for its summary rows on the same items.
    let runs_of: Vec<(String, usize)> = rows
        .iter()
        .filter(|r| r.kind == RowKind::Baseline && !r.from_summary)
        .map(|r| (r.model.clone(), r.group))
        .collect();
    rows.retain(|r| !(r.from_summary && runs_of.contains(&(r.model.clone(), r.group))));
    // Stable: equal headlines keep input order. Groups never mix.
    rows.sort_by(|a, b| {
        a.group.cmp(&b.group).then(a.upper_bound.cmp(&b.upper_bound)).then_with(|| {
            let (x, y) = (a.headline().unwrap_or(-1.0), b.headline().unwrap_or(-1.0));
            y.partial_cmp(&x).unwrap_or(std::cmp::Ordering::Equal)
        })
    });
    Leaderboard { groups, subsets, rows }
}

/// An output format of `prbench leaderboard`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A Markdown table.
    Markdown,
    /// CSV, one row per leaderboard row, numbers in [0, 1] (RFC 4180 quoting).
    Csv,
    /// The [`Leaderboard`] as JSON.
    Json,
    /// A LaTeX `tabular` (booktabs), percentages, CIs in brackets.
    Latex,
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "—".into(), |v| format!("{:.1}", v * 100.0))
}

fn pct_ci(r: Option<&AccuracyRow>) -> String {
    match r {
        Some(r) => match r.strict_ci {
            Some([lo, hi]) => format!("{} [{:.1}, {:.1}]", pct(r.strict), lo * 100.0, hi * 100.0),
            None => pct(r.strict),
        },
        None => "—".into(),
    }
}

/// A run's model as the leaderboard names it: the spec; the judge recipe when the run used
/// one other than prbench's own (`gguf:… [recipe mt-bench]`, the recipe folder's last name), so
/// two recipes on one model are two rows that say which is which; and the condition a model
/// prbench trained was trained under (`bt:m (trained: none)`, manifest.json's
/// `model_training_condition`), so a row under another condition shows the mismatch.
fn model_label(spec: &str, manifest: &PartialManifest) -> String {
    let recipe = manifest.judge_recipe.as_ref().and_then(|r| r["name"].as_str());
    let mut label = match recipe {
        Some(name) => {
            let short = std::path::Path::new(name)
                .file_name()
                .map_or_else(|| name.to_string(), |n| n.to_string_lossy().into_owned());
            format!("{spec} [recipe {short}]")
        }
        None => spec.to_string(),
    };
    if let Some(trained) = &manifest.model_training_condition {
        label.push_str(&format!(" (trained: {trained})"));
    }
    label
}

/// The label a table shows for a row's model and condition, with its marks.
pub fn row_label(r: &LeaderRow) -> (String, String) {
    let model = match r.kind {
        RowKind::Baseline => format!("{} (control baseline)", r.model),
        RowKind::Model => r.model.clone(),
    };
    let condition =
        if r.upper_bound { format!("{} (upper bound)", r.condition) } else { r.condition.clone() };
    (model, condition)
}

impl Leaderboard {
    /// True when some row is a control baseline, so the tables have a `sees` column.
    pub fn has_sees(&self) -> bool {
        self.rows.iter().any(|r| r.sees.is_some())
    }
}

/// The text a table shows for what a row sees (`—` for a model).
pub fn sees_text(r: &LeaderRow) -> String {
    r.sees.clone().unwrap_or_else(|| "—".into())
}

/// How many leading columns of [`columns`] hold text (left-aligned); the rest are numbers.
fn text_columns(cols: &[String]) -> usize {
    cols.iter().position(|c| c == "n").unwrap_or(2)
}

fn columns(lb: &Leaderboard) -> Vec<String> {
    let mut c = vec!["model".to_string(), "condition".into()];
    if lb.has_sees() {
        c.push("sees".into());
    }
    if lb.groups.len() > 1 {
        c.push("dataset".into());
    }
    c.extend(["n".into(), "debiased %".into(), "micro %".into(), "macro %".into()]);
    c.extend(lb.subsets.iter().map(|s| format!("{s} %")));
    c.extend([
        "both orders %".into(),
        "consistency %".into(),
        "unparsed".into(),
        "ties".into(),
        "errors".into(),
        "truncated".into(),
    ]);
    c
}

fn cells(lb: &Leaderboard, r: &LeaderRow) -> Vec<String> {
    let (model, condition) = row_label(r);
    let mut c = vec![model, condition];
    if lb.has_sees() {
        c.push(sees_text(r));
    }
    if lb.groups.len() > 1 {
        c.push(lb.groups[r.group].label());
    }
    c.push(r.n.to_string());
    c.push(pct_ci(r.debiased.as_deref().and_then(|b| LeaderRow::row(b, "micro"))));
    c.push(pct_ci(LeaderRow::row(&r.rows, "micro")));
    c.push(pct_ci(LeaderRow::row(&r.rows, "macro")));
    for s in &lb.subsets {
        c.push(pct_ci(LeaderRow::row(&r.rows, s)));
    }
    c.push(pct_ci(r.both_orders.as_deref().and_then(|b| LeaderRow::row(b, "micro"))));
    c.push(pct(r.consistency));
    c.extend([r.unparsed, r.ties, r.errors, r.truncated].map(|v| v.to_string()));
    c
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// A CSV cell (RFC 4180): quoted, with quotes doubled, when it holds a comma, a quote or a
/// line break.
pub fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A LaTeX table cell: the ten special characters escaped, an em dash as `--`. Line breaks
/// are the caller's (a cell from a file may hold one: replace it first).
pub fn latex_cell(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '\\' => o.push_str("\\textbackslash{}"),
            '&' | '%' | '$' | '#' | '_' | '{' | '}' => {
                o.push('\\');
                o.push(ch);
            }
            '~' => o.push_str("\\textasciitilde{}"),
            '^' => o.push_str("\\textasciicircum{}"),
            '—' => o.push_str("--"),
            _ => o.push(ch),
        }
    }
    o
}

/// The first bytes each [`Format`] of [`render`] starts with, so that [`check_out`] can tell a
/// leaderboard this module wrote from any other file.
const RENDERED_STARTS: [&str; 4] = [
    "Strict accuracy % (ties, unparsed and errors are not correct)",
    "model,condition,",
    "% prbench leaderboard:",
    "{\n  \"groups\": [",
];

/// Checks that `prbench leaderboard --out` may write `out`: a new file, or a leaderboard that
/// [`render`] wrote before (in any format). Anything else (a run's `summary.json`, a matrix, a
/// data file, the user's own notes) is refused, so a mistyped `--out` destroys nothing.
///
/// # Errors
/// [`ReportError::Out`](crate::error::ReportError::Out) naming the path and what to do;
/// [`ReportError::Io`](crate::error::ReportError::Io) when an existing file cannot be read.
pub fn check_out(out: &std::path::Path) -> Result<(), crate::error::ReportError> {
    let refuse =
        |reason: String| Err(crate::error::ReportError::Out { path: out.to_path_buf(), reason });
    if out.is_dir() {
        return refuse(format!(
            "is a folder; name the file to write, e.g. {}",
            out.join("leaderboard.md").display()
        ));
    }
    if !out.exists() {
        return Ok(());
    }
    if !out.is_file() {
        return refuse("exists and is not a regular file; name a new file".into());
    }
    let head = prbench_files::read_head(out, 128).map_err(crate::error::io(out))?;
    if RENDERED_STARTS.iter().any(|start| head.starts_with(start.as_bytes())) {
        return Ok(());
    }
    refuse("exists and is not a leaderboard prbench wrote, so writing would destroy it; name a new file (e.g. leaderboard.md), or move the file away first".into())
}

/// Renders the leaderboard.
///
/// # Errors
/// Only for [`Format::Json`], when serialisation fails (it does not for these types).
pub fn render(lb: &Leaderboard, format: Format) -> Result<String, serde_json::Error> {
    let cols = columns(lb);
    let mut s = String::new();
    match format {
        Format::Json => return serde_json::to_string_pretty(lb).map(|j| j + "\n"),
        Format::Markdown => {
            s.push_str("Strict accuracy % (ties, unparsed and errors are not correct) with seeded bootstrap 95% CIs; `debiased`: position-debiased (both orders, logprob verdicts). Rows by headline accuracy (debiased when present); `oracle` rows are upper bounds, listed last.");
            if lb.has_sees() {
                s.push_str(" Control baselines: `condition` is the condition of the runs that reported them, `sees` what the rule reads.");
            }
            if lb.groups.len() > 1 {
                let _ = write!(s, " The runs are on {} datasets or item sets; rows are ranked only within each (column `dataset`), never across.", lb.groups.len());
            }
            s.push_str("\n\n");
            let _ = writeln!(s, "| {} |", cols.join(" | "));
            let text = text_columns(&cols);
            let _ = writeln!(s, "|{}{}", "---|".repeat(text), "---:|".repeat(cols.len() - text));
            for r in &lb.rows {
                let c: Vec<String> = cells(lb, r).iter().map(|c| md_cell(c)).collect();
                let _ = writeln!(s, "| {} |", c.join(" | "));
            }
        }
        Format::Csv => {
            // Machine-readable: fractions and CI ends as separate columns, no marks in labels.
            let mut head = vec![
                "model",
                "condition",
                "sees",
                "kind",
                "upper_bound",
                "run_id",
                "dataset",
                "dataset_hash",
                "group",
                "n",
            ]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>();
            for sc in lb.subsets.iter().map(String::as_str).chain(["micro", "macro"]) {
                head.extend([sc.to_string(), format!("{sc}_ci_lo"), format!("{sc}_ci_hi")]);
            }
            head.extend(
                [
                    "both_orders",
                    "debiased",
                    "debiased_ci_lo",
                    "debiased_ci_hi",
                    "unparsed",
                    "ties",
                    "errors",
                    "truncated",
                ]
                .map(String::from),
            );
            let _ = writeln!(s, "{}", head.join(","));
            let num = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v}"));
            for r in &lb.rows {
                let mut c = vec![
                    csv_cell(&r.model),
                    csv_cell(&r.condition),
                    csv_cell(r.sees.as_deref().unwrap_or_default()),
                    match r.kind {
                        RowKind::Model => "model".into(),
                        RowKind::Baseline => "baseline".into(),
                    },
                    r.upper_bound.to_string(),
                    csv_cell(&r.run_id),
                    csv_cell(&r.dataset),
                    lb.groups[r.group].dataset_hash.clone(),
                    r.group.to_string(),
                    r.n.to_string(),
                ];
                for sc in lb.subsets.iter().map(String::as_str).chain(["micro", "macro"]) {
                    let row = LeaderRow::row(&r.rows, sc);
                    c.push(num(row.and_then(|r| r.strict)));
                    c.push(num(row.and_then(|r| r.strict_ci).map(|c| c[0])));
                    c.push(num(row.and_then(|r| r.strict_ci).map(|c| c[1])));
                }
                let micro_of = |rows: Option<&[AccuracyRow]>| {
                    rows.and_then(|b| LeaderRow::row(b, "micro")).cloned()
                };
                c.push(num(micro_of(r.both_orders.as_deref()).and_then(|r| r.strict)));
                let d = micro_of(r.debiased.as_deref());
                c.push(num(d.as_ref().and_then(|r| r.strict)));
                c.push(num(d.as_ref().and_then(|r| r.strict_ci).map(|c| c[0])));
                c.push(num(d.as_ref().and_then(|r| r.strict_ci).map(|c| c[1])));
                c.extend([r.unparsed, r.ties, r.errors, r.truncated].map(|v| v.to_string()));
                let _ = writeln!(s, "{}", c.join(","));
            }
        }
        Format::Latex => {
            let _ = writeln!(s, "% prbench leaderboard: strict accuracy %, bootstrap 95% CI in brackets; debiased = position-debiased; oracle rows are upper bounds.");
            let _ = writeln!(
                s,
                "% needs \\usepackage{{booktabs}} (\\toprule, \\midrule, \\bottomrule)."
            );
            let text = text_columns(&cols);
            let _ = writeln!(
                s,
                "\\begin{{tabular}}{{{}{}}}",
                "l".repeat(text),
                "r".repeat(cols.len() - text)
            );
            s.push_str("\\toprule\n");
            let _ = writeln!(
                s,
                "{} \\\\",
                cols.iter().map(|c| latex_cell(c)).collect::<Vec<_>>().join(" & ")
            );
            s.push_str("\\midrule\n");
            for r in &lb.rows {
                let _ = writeln!(
                    s,
                    "{} \\\\",
                    cells(lb, r).iter().map(|c| latex_cell(c)).collect::<Vec<_>>().join(" & ")
                );
            }
            s.push_str("\\bottomrule\n\\end{tabular}\n");
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::{csv_cell, latex_cell, md_cell, model_label};
    use prbench_records::manifest::PartialManifest;

    /// A `manifest.json` of these fields, read as the report reads one.
    fn manifest(fields: serde_json::Value) -> PartialManifest {
        serde_json::from_value(fields).unwrap()
    }

    #[test]
    fn a_trained_models_label_names_its_training_condition() {
        let m = manifest(serde_json::json!({ "model_training_condition": "profile:2" }));
        assert_eq!(model_label("bt:runs/m", &m), "bt:runs/m (trained: profile:2)");
        // Manifests written before the field, and models prbench did not train, have none.
        assert_eq!(model_label("bt:runs/m", &manifest(serde_json::json!({}))), "bt:runs/m");
        assert_eq!(
            model_label(
                "gguf:j.gguf",
                &manifest(serde_json::json!({ "judge_recipe": { "name": "recipes/mt-bench" } }))
            ),
            "gguf:j.gguf [recipe mt-bench]"
        );
    }

    #[test]
    fn leaderboard_out_replaces_only_a_leaderboard_prbench_wrote() {
        use super::{check_out, render, Format, Leaderboard};
        let tmp = tempfile::tempdir().unwrap();
        let lb = Leaderboard { groups: vec![], subsets: vec!["Art".into()], rows: vec![] };
        for (i, format) in
            [Format::Markdown, Format::Csv, Format::Json, Format::Latex].into_iter().enumerate()
        {
            let path = tmp.path().join(format!("lb{i}"));
            assert!(check_out(&path).is_ok(), "a new file may be written");
            std::fs::write(&path, render(&lb, format).unwrap()).unwrap();
            assert!(
                check_out(&path).is_ok(),
                "a leaderboard written before may be replaced: {}",
                std::fs::read_to_string(&path).unwrap()
            );
        }
        // A run's summary, a matrix, a user's notes: refused, and left as they were.
        for (name, body) in [
            ("summary.json", "{\n  \"model\": \"baseline:longer\"\n}\n"),
            ("none-matrix.md", "| condition | Art |\n"),
            ("notes.md", "my notes\n"),
        ] {
            let path = tmp.path().join(name);
            std::fs::write(&path, body).unwrap();
            let err = check_out(&path).unwrap_err().to_string();
            assert!(err.contains("is not a leaderboard prbench wrote"), "{err}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), body);
        }
        assert!(check_out(tmp.path()).unwrap_err().to_string().contains("is a folder"));
    }

    #[test]
    fn cells_are_escaped_for_each_format() {
        assert_eq!(csv_cell("a,b \"c\""), "\"a,b \"\"c\"\"\"");
        assert_eq!(csv_cell("plain"), "plain");
        assert_eq!(
            latex_cell("50% & x_1 {#} ~^\\"),
            "50\\% \\& x\\_1 \\{\\#\\} \\textasciitilde{}\\textasciicircum{}\\textbackslash{}"
        );
        assert_eq!(md_cell("a|b\nc"), "a\\|b c");
    }
}
