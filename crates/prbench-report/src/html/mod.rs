//! The self-contained HTML report (`prbench report PATH... --out FILE.html`): one file with
//! its data, styles and scripts inlined and no request to any host, so it opens from
//! `file://` offline.
//!
//! The leaderboard, the charts, the matrices and the provenance are rendered here, in the
//! page's HTML, so they read without JavaScript (the floor simple-evals sets); the item browser
//! and the run-vs-run view are drawn by the page's script from an inlined JSON payload
//! ([`payload`]), lazily: a filter lists at most a page of rows and an item's texts enter the
//! DOM only when it is opened.
//!
//! Escaping: the template is rendered by minijinja with HTML auto-escaping; the charts come
//! from plotters, which escapes its text; the payload is JSON with `<`, `>` and `&` escaped
//! ([`payload::to_script_json`]); the script writes data only through `textContent`.
//!
//! ```no_run
//! let sources = prbench_report::sources::load(&["runs/demo-matrix.json".into()])?;
//! let html = prbench_report::html::render(&sources, &prbench_report::html::ReportOptions::default())?;
//! std::fs::write("report.html", html).unwrap();
//! # Ok::<(), prbench_report::error::ReportError>(())
//! ```

mod datasets;
pub mod markdown;
pub mod payload;

use minijinja::value::Serde;
use minijinja::{context, Environment, Value};
use serde::Serialize;

use crate::error::{ReportError, Result};
use crate::leaderboard::{self, LeaderRow, Leaderboard, RowKind};
use crate::plots;
use crate::sources::Sources;

const TEMPLATE: &str = include_str!("report.html");
const CSS: &str = include_str!("report.css");
const JS: &str = include_str!("report.js");

/// Options of [`render`].
#[derive(Debug, Clone, Default)]
pub struct ReportOptions {
    /// Where datasets the runs were made on are now (`--data`, one per dataset), when they
    /// moved since the runs; each run takes the one whose content hash its manifest records,
    /// and runs none matches read their recorded location. Every entry must serve some run.
    pub data: Vec<String>,
    /// Page title; default `prbench report`.
    pub title: Option<String>,
    /// Who wrote the page (`prbench 0.1.0 (abc123)`), shown in its footer.
    pub generator: String,
    /// Tables shown first, in their own section (a study's reward-model, conditioning and
    /// proxy-gap tables); cells render as text.
    pub study: Vec<ReportTable>,
}

/// A titled table of text cells for [`ReportOptions::study`].
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ReportTable {
    /// Its title.
    pub title: String,
    /// Column headers.
    pub header: Vec<String>,
    /// Rows, each as long as the header.
    pub rows: Vec<Vec<String>>,
    /// Commands that reproduce the table's figures, shown under it as code (text, never
    /// markup).
    pub commands: Vec<ReportCommand>,
}

/// A shell command shown under a [`ReportTable`]: `LABEL reproduced by:` and the command.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ReportCommand {
    /// What it reproduces (`Leg bon`), shown as text.
    pub label: String,
    /// The command line, as a user would type it.
    pub command: String,
}

/// A piece of a table title: text, or a `code` span (written between backticks in the title,
/// as in Markdown).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
struct TitlePart {
    text: String,
    code: bool,
}

/// A [`ReportTable`] as the template reads it: its title cut at backticks, so that
/// ``gain over `none` `` shows `none` as code. Every part renders as text.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
struct StudyTableView<'a> {
    title: Vec<TitlePart>,
    header: &'a [String],
    rows: &'a [Vec<String>],
    commands: &'a [ReportCommand],
}

impl<'a> From<&'a ReportTable> for StudyTableView<'a> {
    fn from(t: &'a ReportTable) -> Self {
        // An unpaired backtick stays as text.
        let pieces: Vec<&str> = t.title.split('`').collect();
        let paired = pieces.len() % 2 == 1;
        let title = if paired {
            pieces
                .iter()
                .enumerate()
                .filter(|(_, p)| !p.is_empty())
                .map(|(i, p)| TitlePart { text: (*p).to_string(), code: i % 2 == 1 })
                .collect()
        } else {
            vec![TitlePart { text: t.title.clone(), code: false }]
        };
        Self { title, header: &t.header, rows: &t.rows, commands: &t.commands }
    }
}

/// The line a report carries near its start (the template's second tag in `<head>`), by which
/// [`check_out`] knows a file as one prbench wrote and may overwrite.
pub const MARK: &str = "<meta name=\"generator\" content=\"prbench report\">";

/// How every report written before [`MARK`] existed begins: the template's lines up to its
/// Content-Security-Policy, which no other file has by chance.
const UNMARKED_START: &str = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src 'none'; connect-src 'none'; font-src 'none'; frame-src 'none'; form-action 'none'\">\n";

/// True when `head` (a file's first bytes) is the start of a report prbench wrote.
fn is_report_start(head: &[u8]) -> bool {
    let marked = TEMPLATE.split_once(MARK).map(|(before, _)| format!("{before}{MARK}"));
    marked.is_some_and(|m| head.starts_with(m.as_bytes()))
        || head.starts_with(UNMARKED_START.as_bytes())
}

/// Checks that a report may be written to `out` before anything is read or rendered: `out`
/// must name a file in an existing folder, and be new or a report prbench wrote (its start is
/// the template's, with [`MARK`]; reports from before the mark by their unchanged first
/// lines). Anything else there (a run's `summary.json`, a `*-matrix.json`, a data file, another
/// page) would be destroyed, so it is refused.
///
/// # Errors
/// [`ReportError::Out`] saying what is at `out` and what to do; [`ReportError::Io`] when an
/// existing file there cannot be read.
pub fn check_out(out: &std::path::Path) -> Result<()> {
    let refuse = |reason: String| Err(ReportError::Out { path: out.to_path_buf(), reason });
    if out.is_dir() {
        return refuse(format!(
            "is a folder; name the HTML file to write, e.g. {}",
            out.join("report.html").display()
        ));
    }
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty() && !p.is_dir()) {
        return refuse(format!(
            "folder `{}` does not exist; create it or name a file in an existing folder",
            parent.display()
        ));
    }
    if !out.exists() {
        // A new file must be named as a page, so a report never lands in a data folder as
        // `Art.jsonl` (which the folder's loader would then read as a subset).
        let html = out
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"));
        if !html {
            return refuse("is not named .html; the report is one HTML page: name a file ending in .html (e.g. report.html)".into());
        }
        return Ok(());
    }
    if !out.is_file() {
        return refuse("exists and is not a regular file; name a new HTML file".into());
    }
    let head = prbench_files::read_head(out, 1024).map_err(crate::error::io(out))?;
    if is_report_start(&head) {
        return Ok(());
    }
    refuse("exists and is not a report prbench wrote, so writing would destroy it; name a new HTML file (e.g. report.html), or move the file away first".into())
}

#[derive(Serialize)]
struct Cell {
    text: String,
    /// Hover text (the full model spec when `text` shortens it).
    title: String,
    /// Sort key: the number behind the text (a fraction in [0, 1] printed in full, a count), or
    /// the text; empty when there is no value.
    v: String,
    col: String,
}

#[derive(Serialize)]
struct Row {
    cells: Vec<Cell>,
    kind: &'static str,
    upper: bool,
    run_id: String,
    model: String,
    condition: String,
    headline_metric: &'static str,
}

#[derive(Serialize)]
struct Figure {
    title: String,
    svg: Value,
    caption: String,
}

fn num(v: Option<f64>) -> String {
    // `{}` on f64 prints the shortest text that parses back to the same number.
    v.map_or_else(String::new, |v| format!("{v}"))
}

fn acc_cell(col: &str, r: Option<&crate::summary::AccuracyRow>) -> Cell {
    Cell {
        title: String::new(),
        text: plots::acc_text(r),
        v: num(r.and_then(|r| r.strict)),
        col: col.into(),
    }
}

fn leaderboard_rows(lb: &Leaderboard) -> (Vec<String>, Vec<Row>) {
    let grouped = lb.groups.len() > 1;
    let mut cols = vec!["model".to_string(), "condition".into()];
    if lb.has_sees() {
        cols.push("sees".into());
    }
    if grouped {
        cols.push("dataset".into());
    }
    cols.extend(["n", "debiased", "micro", "macro"].map(String::from));
    cols.extend(lb.subsets.iter().cloned());
    cols.extend(
        ["both orders", "consistency", "unparsed", "ties", "errors", "truncated"].map(String::from),
    );
    let plain = |text: String, v: String, col: &str| Cell {
        title: String::new(),
        text,
        v,
        col: col.into(),
    };
    let rows = lb
        .rows
        .iter()
        .map(|r| {
            let (model, condition) = leaderboard::row_label(r);
            let mut cells = vec![
                Cell {
                    text: plots::short_model(&model),
                    title: model,
                    v: r.model.clone(),
                    col: "model".into(),
                },
                plain(condition, r.condition.clone(), "condition"),
            ];
            if lb.has_sees() {
                cells.push(plain(
                    leaderboard::sees_text(r),
                    r.sees.clone().unwrap_or_default(),
                    "sees",
                ));
            }
            if grouped {
                // Sorting by this column keeps each dataset's rows together, in group order.
                cells.push(plain(lb.groups[r.group].label(), r.group.to_string(), "dataset"));
            }
            cells.push(plain(r.n.to_string(), r.n.to_string(), "n"));
            cells.push(acc_cell(
                "debiased",
                r.debiased.as_deref().and_then(|b| LeaderRow::row(b, "micro")),
            ));
            cells.push(acc_cell("micro", LeaderRow::row(&r.rows, "micro")));
            cells.push(acc_cell("macro", LeaderRow::row(&r.rows, "macro")));
            for s in &lb.subsets {
                cells.push(acc_cell(s, LeaderRow::row(&r.rows, s)));
            }
            cells.push(acc_cell(
                "both orders",
                r.both_orders.as_deref().and_then(|b| LeaderRow::row(b, "micro")),
            ));
            cells.push(plain(
                r.consistency.map_or("—".into(), |c| format!("{:.1}", c * 100.0)),
                num(r.consistency),
                "consistency",
            ));
            for (col, v) in [
                ("unparsed", r.unparsed),
                ("ties", r.ties),
                ("errors", r.errors),
                ("truncated", r.truncated),
            ] {
                cells.push(plain(v.to_string(), v.to_string(), col));
            }
            Row {
                cells,
                kind: match r.kind {
                    RowKind::Model => "model",
                    RowKind::Baseline => "baseline",
                },
                upper: r.upper_bound,
                run_id: r.run_id.clone(),
                model: r.model.clone(),
                condition: r.condition.clone(),
                headline_metric: r.headline_metric(),
            }
        })
        .collect();
    (cols, rows)
}

fn figure(
    title: impl Into<String>,
    drawn: std::result::Result<String, String>,
    caption: impl Into<String>,
) -> Figure {
    let title = title.into();
    match drawn {
        Ok(svg) => Figure { title, svg: Value::from_safe_string(svg), caption: caption.into() },
        Err(why) => Figure {
            title,
            svg: Value::from(format!("(chart not drawn: {why})")),
            caption: caption.into(),
        },
    }
}

fn provenance(sources: &Sources) -> Vec<(String, Vec<(String, String)>)> {
    // A recorded value as shown: text as it is, other JSON as JSON, "—" when not recorded.
    let json = |v: Option<&serde_json::Value>| -> String {
        match v {
            Some(serde_json::Value::String(s)) => s.clone(),
            None | Some(serde_json::Value::Null) => "—".into(),
            Some(other) => other.to_string(),
        }
    };
    let text = |v: Option<&str>| v.map_or_else(|| "—".to_string(), str::to_string);
    // A time as the manifest writes it (RFC 3339, UTC).
    let time = |t| json(serde_json::to_value(t).ok().as_ref());
    sources
        .runs
        .iter()
        .map(|r| {
            let m = &r.manifest;
            let (model, recipe) = (m.model.as_ref(), m.judge_recipe.as_ref());
            let id = r
                .dir
                .file_name()
                .map_or_else(|| r.summary.run_id.clone(), |n| n.to_string_lossy().into_owned());
            let fields = vec![
                ("folder".to_string(), r.dir.display().to_string()),
                ("model".into(), text(model.map(|i| i.spec.as_str()))),
                ("engine".into(), text(model.map(|i| i.engine.as_str()))),
                ("model hash".into(), text(model.map(|i| i.file_hash.as_str()))),
                ("chat template hash".into(), text(model.map(|i| i.chat_template_hash.as_str()))),
                ("template hash".into(), text(m.template_hash.as_deref())),
                ("judge recipe".into(), json(recipe.and_then(|r| r.get("name")))),
                ("judge recipe reader".into(), json(recipe.and_then(|r| r.get("reader")))),
                ("condition".into(), text(m.condition.as_deref())),
                ("dataset".into(), text(m.dataset.as_deref())),
                ("dataset hash".into(), text(m.dataset_hash.as_deref())),
                ("seed".into(), m.seed.map_or_else(|| "—".into(), |s| s.to_string())),
                ("decoding".into(), json(Some(&m.decoding))),
                ("code version".into(), text(m.code_version.as_deref())),
                ("started".into(), time(m.started)),
                ("finished".into(), time(m.finished)),
            ];
            (id, fields.into_iter().filter(|(_, v)| v != "—").collect())
        })
        .collect()
}

/// Renders the report of `sources`.
///
/// # Errors
/// [`ReportError::Dataset`] when a run's dataset cannot be loaded or has changed (the item
/// browser shows the items' texts); [`ReportError::UnusedData`] for a `--data` no run was made
/// on; [`ReportError::Layout`] when there is nothing to report.
pub fn render(sources: &Sources, opts: &ReportOptions) -> Result<String> {
    render_with(sources, opts, &mut Vec::new()).map(Page::concat)
}

/// A rendered report in pieces, the page being `head`, the `payload` pieces and `tail` in
/// order: the payload (the item data, most of the bytes) is not copied into the template's
/// output nor into one string ([`render_with`]).
struct Page {
    head: String,
    payload: Vec<String>,
    tail: String,
}

impl Page {
    fn parts(&self) -> impl Iterator<Item = &String> {
        std::iter::once(&self.head).chain(&self.payload).chain(std::iter::once(&self.tail))
    }

    fn concat(self) -> String {
        let mut out = String::with_capacity(self.parts().map(String::len).sum());
        for part in self.parts() {
            out.push_str(part);
        }
        out
    }

    fn write(&self, path: &std::path::Path) -> Result<()> {
        use std::io::Write;
        let mut f = std::fs::File::create(path).map_err(crate::error::io(path))?;
        for part in self.parts() {
            f.write_all(part.as_bytes()).map_err(crate::error::io(path))?;
        }
        Ok(())
    }
}

/// Stands for the payload while the template renders: NULs never come out of the template's
/// HTML escaping of text, and the page is rendered again with the payload itself if the mark
/// is not found exactly once.
const PAYLOAD_MARK: &str = "\u{0}prbench payload\u{0}";

/// [`render`] reusing datasets already in memory ([`payload::build_with`]).
fn render_with(
    sources: &Sources,
    opts: &ReportOptions,
    datasets: &mut Vec<std::borrow::Cow<'_, prbench_data::Dataset>>,
) -> Result<Page> {
    if sources.runs.is_empty()
        && sources.bons.is_empty()
        && sources.correlations.is_empty()
        && sources.comparisons.is_empty()
        && sources.builds.is_empty()
        && sources.annotations.is_empty()
    {
        return Err(ReportError::Layout { path: ".".into(), reason: "nothing to report: give run folders, matrices, Best-of-N folders, build folders, annotation folders or correlate results".into() });
    }
    let lb = leaderboard::build(&sources.runs);
    let (columns, rows) = leaderboard_rows(&lb);
    let mut plots_out = Vec::new();
    if !lb.rows.is_empty() {
        plots_out.push(figure(
            "Accuracy per subset",
            plots::accuracy_forest(&lb),
            "Headline accuracy (%) per subset and over all items, with seeded bootstrap 95% CIs: position-debiased for judges judged in both orders (marked), else strict. One row per run, one colour per model, control baselines in grey, upper bounds (oracle) in orange; dashed: chance.",
        ));
    }
    if let Some(pb) = plots::position_bias(&lb) {
        plots_out.push(figure(
            "Position bias",
            pb,
            "Judges only: strict single-order accuracy (%) on the items with chosen in slot A (circle) and in slot B (square), and the share of parsed verdicts that picked A (cross). An unbiased judge has the two accuracies close and its A share near 50%.",
        ));
    }
    let mut matrices = Vec::new();
    for m in &sources.matrices {
        let figs: Vec<Figure> = m
            .matrix
            .blocks
            .iter()
            .map(|b| {
                figure(b.metric.clone(), plots::matrix_heatmap(&m.matrix, b), b.meaning.clone())
            })
            .collect();
        matrices.push(context! { title => format!("{} on {}", m.matrix.model, m.matrix.dataset), path => m.path.display().to_string(), figures => Value::from(Serde(&figs)) });
    }
    let mut bons = Vec::new();
    for b in &sources.bons {
        for t in &b.tables {
            let has_ci = t.rows.iter().all(|r| r.curve.iter().all(|p| p.overall_ci.is_some()));
            bons.push(figure(
                format!("Best-of-N: {} (judge {})", b.dir.display(), t.judge),
                plots::bon_curves(t),
                format!(
                    "Expected rubric score (0–2) of the sample each reward model ranks first among k, averaged exactly over all k-subsets of the N = {} samples, on {} examples; grey: random pick and oracle (the rubric score picks).{}",
                    t.n,
                    t.rows.first().map_or(0, |r| r.examples),
                    if has_ci { " Bands: bootstrap 95% CIs over examples." } else { " This table predates CIs: rerun `prbench bon report` on the folder to add them." }
                ),
            ));
        }
    }
    let mut correlations = Vec::new();
    for c in &sources.correlations {
        correlations.push(context! {
            figure => Value::from(Serde(&figure(format!("Benchmark vs downstream: {}", c.path.display()), plots::correlation_scatter(&c.correlation), plots::correlation_caption(&c.correlation)))),
            models => c.correlation.models.iter().map(|m| (m.0.clone(), format!("{:.1}", m.1 * 100.0), format!("{:.4}", m.2))).collect::<Vec<_>>(),
            sources => c.correlation.sources.clone(),
        });
    }
    let comparisons: Vec<Value> = sources.comparisons.iter().map(comparison_section).collect();
    let builds: Vec<Value> = sources.builds.iter().map(build_section).collect();
    let annotations: Vec<Value> = sources
        .annotations
        .iter()
        .map(|a| context! { dir => a.dir.display().to_string(), summary => a.summary.clone(), html => Value::from_safe_string(markdown::to_safe_html_anchored(&nested(&a.report))) })
        .collect();
    let payload = payload::build_with(&sources.runs, &opts.data, datasets)?;
    let json = payload::payload_script_parts(&payload).map_err(|e| ReportError::Layout {
        path: ".".into(),
        reason: format!("serialising the report data: {e}"),
    })?;
    let mut notes = sources.skipped.clone();
    if lb.groups.len() > 1 {
        notes.push(format!(
            "The runs are on {} datasets or item sets ({}); the leaderboard ranks rows only within each (column `dataset`), never across.",
            lb.groups.len(),
            lb.groups.iter().map(|g| g.label()).collect::<Vec<_>>().join("; ")
        ));
    }
    if lb.rows.iter().any(|r| r.upper_bound) {
        notes.push("Rows under `oracle` are upper bounds: the model was shown the ground-truth rubric aspects. They are not benchmark scores and are listed last.".to_string());
    }
    for kind in lb
        .rows
        .iter()
        .map(|r| r.dataset_kind.as_str())
        .filter(|k| *k != "prb")
        .collect::<std::collections::BTreeSet<_>>()
    {
        notes.push(format!("Some runs are on data converted from `{kind}`, not Personalized-RewardBench: their figures are not comparable with the paper's."));
    }
    let mut env = Environment::new();
    env.add_template("report.html", TEMPLATE)
        .map_err(|e| ReportError::Layout { path: "report.html".into(), reason: e.to_string() })?;
    let tmpl = env
        .get_template("report.html")
        .map_err(|e| ReportError::Layout { path: "report.html".into(), reason: e.to_string() })?;
    let base = context! {
        title => opts.title.clone().unwrap_or_else(|| "prbench report".into()),
        generator => opts.generator.clone(),
        notes => notes,
        columns => columns,
        rows => Value::from(Serde(&rows)),
        plots => Value::from(Serde(&plots_out)),
        matrices => matrices,
        bons => Value::from(Serde(&bons)),
        correlations => correlations,
        comparisons => comparisons,
        study => Value::from(Serde(&opts.study.iter().map(StudyTableView::from).collect::<Vec<_>>())),
        builds => builds,
        annotations => annotations,
        provenance => provenance(sources),
        n_runs => sources.runs.len(),
        n_outcomes => payload.outcomes.len(),
        css => Value::from_safe_string(CSS.to_string()),
        js => Value::from_safe_string(JS.to_string()),
    };
    let render = |payload_text: Value| {
        tmpl.render(context! { payload => payload_text, ..base.clone() }).map_err(|e| {
            ReportError::Layout { path: "report.html".into(), reason: format!("rendering: {e}") }
        })
    };
    let page = render(Value::from_safe_string(PAYLOAD_MARK.to_string()))?;
    let mut parts = page.split(PAYLOAD_MARK);
    Ok(match (parts.next(), parts.next(), parts.next()) {
        (Some(head), Some(tail), None) => {
            Page { head: head.to_string(), payload: json, tail: tail.to_string() }
        }
        _ => Page {
            head: render(Value::from_safe_string(json.concat()))?,
            payload: Vec::new(),
            tail: String::new(),
        },
    })
}

/// `markdown` without its first line when that is a `# ` title (the section has its own), and
/// every other heading two levels down (`## X` → `#### X`), so it nests under the section's
/// `<h2>` and the folder's `<h3>`. Lines inside fenced blocks are left alone.
fn nested(markdown: &str) -> String {
    let body = match markdown.split_once('\n') {
        Some((first, rest)) if first.starts_with("# ") => rest,
        _ => markdown,
    };
    let mut out = String::with_capacity(body.len() + 64);
    let mut fence: Option<String> = None;
    for line in body.lines() {
        let ticks: String = line.chars().take_while(|c| *c == '`').collect();
        match &fence {
            None if ticks.len() >= 3 => fence = Some(ticks),
            Some(f) if line.trim_end() == f.as_str() => fence = None,
            None if line.starts_with('#') => out.push_str("##"),
            _ => {}
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// One comparison of several benchmarks (`correlate --benchmark-set`): the paper-form table, the
/// paired differences, the undefined resamples when any, and the two plots. Every text (set
/// names, model labels, paths) goes through the template's escaping or plotters'.
fn comparison_section(c: &crate::sources::ComparisonSource) -> Value {
    use crate::correlation::{difference_table, paper_table, undefined_table};
    let r = &c.comparison;
    let b = &r.bootstrap;
    let sets: Vec<(&str, &prbench_stats::PerStatistic<prbench_stats::StatInterval>)> =
        r.sets.iter().map(|s| (s.name.as_str(), &s.correlation.bootstrap.stats)).collect();
    let pairs: Vec<(&str, &str, &prbench_stats::PerStatistic<prbench_stats::PairedDifference>)> =
        r.pairs.iter().map(|p| (p.a.as_str(), p.b.as_str(), &p.difference)).collect();
    let table = |(header, rows): (Vec<String>, Vec<Vec<String>>)| context! { header => header, rows => rows };
    let level = b.level * 100.0;
    let summary = format!(
        "{} benchmarks against the downstream ranking {} on the {} models every set and the downstream score; {level}% percentile bootstrap CIs over models ({} resamples, seed {}, one draw shared by every set).",
        r.sets.len(),
        r.downstream.name,
        r.models.len(),
        b.resamples,
        b.seed
    );
    let lacked: Vec<String> = r
        .sets
        .iter()
        .flat_map(|s| {
            let mut out = Vec::new();
            if !s.lacked.is_empty() {
                out.push(format!(
                    "{} has no score for: {} (left out of every set).",
                    s.name,
                    s.lacked.join(", ")
                ));
            }
            if !s.without_downstream.is_empty() {
                out.push(format!(
                    "{}: no downstream score for {} (left out).",
                    s.name,
                    s.without_downstream.join(", ")
                ));
            }
            out
        })
        .collect();
    let mut figures = vec![figure(
        format!("Benchmarks compared: {}", c.path.display()),
        plots::comparison_forest(r),
        format!("Each benchmark's statistic against the downstream ranking {}, with its {level}% bootstrap CI over the {} models.", r.downstream.name, r.models.len()),
    )];
    if !r.pairs.is_empty() {
        figures.push(figure(
            "Paired differences",
            plots::difference_forest(r),
            format!("First benchmark minus second, on the same resampled models; dashed: no difference. With {} models the intervals are wide: one that contains 0 does not show a difference.", r.models.len()),
        ));
    }
    context! {
        path => c.path.display().to_string(),
        summary => summary,
        paper => table(paper_table(&r.downstream.name, &sets, b.rbo_p)),
        differences => if pairs.is_empty() { Value::from(()) } else { table(difference_table(&pairs, b.rbo_p)) },
        undefined => undefined_table(&sets, &pairs, b.rbo_p).map_or(Value::from(()), table),
        resamples => b.resamples,
        lacked => lacked,
        figures => Value::from(Serde(&figures)),
    }
}

/// One build folder's part of the report: a line of what it is (from `build/build.json`) and
/// its own `build-report.md`, drawn by [`markdown::to_safe_html`].
fn build_section(b: &crate::sources::BuildSource) -> Value {
    let m = &b.manifest;
    let all = m.counts.iter().find(|c| c.subset == "all");
    let summary = format!(
        "From {} by generator {}, audited by {}: {} of {} pairs kept. prbench {}.",
        m.input.source,
        m.generator.spec,
        m.judge.as_ref().map_or("nobody (--skip-audit)", |j| j.spec.as_str()),
        all.map_or("?".into(), |a| a.kept.to_string()),
        all.map_or("?".into(), |a| a.examples.to_string()),
        m.code_version,
    );
    context! { dir => b.dir.display().to_string(), summary => summary, html => Value::from_safe_string(markdown::to_safe_html(&b.report)) }
}

/// What `eval` writes after its runs: `report.html` in each run folder and, for a
/// multi-condition command, `<base>-report.html` beside `<base>.json` (the matrix, whose runs
/// it shows together). The run folders are read once; a run's dataset is taken from `loaded`
/// when one there has its content hash (the dataset `eval` evaluated, so it is not read again),
/// else loaded once for all the reports. Returns the files written.
///
/// # Errors
/// As [`render`], or when a file cannot be written (named).
pub fn write_eval_reports(
    run_dirs: &[std::path::PathBuf],
    matrix_json: Option<&std::path::Path>,
    generator: &str,
    loaded: &[&prbench_data::Dataset],
) -> Result<Vec<std::path::PathBuf>> {
    let opts = ReportOptions { generator: generator.to_string(), ..ReportOptions::default() };
    let all = match matrix_json {
        Some(m) => crate::sources::load(&[m.to_path_buf()])?,
        None => crate::sources::load(run_dirs)?,
    };
    let mut datasets: Vec<std::borrow::Cow<'_, prbench_data::Dataset>> =
        loaded.iter().map(|&d| std::borrow::Cow::Borrowed(d)).collect();
    let mut written = Vec::new();
    let mut write = |sources: &Sources, out: std::path::PathBuf| -> Result<()> {
        render_with(sources, &opts, &mut datasets)?.write(&out)?;
        written.push(out);
        Ok(())
    };
    for run in &all.runs {
        write(
            &Sources { runs: vec![run.clone()], ..Sources::default() },
            run.dir.join("report.html"),
        )?;
    }
    if let Some(m) = matrix_json {
        let name = m.file_name().and_then(|n| n.to_str()).unwrap_or("matrix.json");
        let base = name.strip_suffix("-matrix.json").unwrap_or(name.trim_end_matches(".json"));
        write(&all, m.with_file_name(format!("{base}-report.html")))?;
    }
    Ok(written)
}
