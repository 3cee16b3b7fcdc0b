//! The agreement report as a Markdown table (readable as plain text too).

use std::fmt::Write;

use super::alpha::Level;
use super::summary::{AgreementReport, LevelAgreement};

/// The report as Markdown: a caption naming the source and the bootstrap, one row per dimension
/// (pairable units, single-rated units, ratings, annotators, then alpha with its interval at the
/// interval, ordinal and nominal levels, three decimals), and after the table a line for each
/// undefined alpha or interval and each level with dropped resamples (one line for a dimension
/// when all three levels have the same note), then the ignored columns.
pub fn markdown_table(report: &AgreementReport) -> String {
    let b = &report.config.bootstrap;
    let pct = (b.confidence() * 100.0 * 1e6).round() / 1e6;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Krippendorff's alpha per dimension of `{}`; {pct}% CI: percentile bootstrap over units \
         ({} resamples, seed {}).\n",
        report.source,
        b.resamples(),
        b.seed()
    );
    out.push_str("| dimension | units (≥2 ratings) | single-rated | ratings | annotators |");
    for level in Level::ALL {
        let _ = write!(out, " α {} [{pct}% CI] |", level.name());
    }
    out.push_str("\n|---|---:|---:|---:|---:|---|---|---|\n");
    let mut notes = Vec::new();
    for (name, d) in &report.dimensions {
        let _ = write!(
            out,
            "| {} | {} | {} | {} | {} |",
            escape(name),
            d.n_units,
            d.n_single,
            d.n_ratings,
            d.n_annotators
        );
        let mut dim_notes = Vec::new();
        for level in Level::ALL {
            let r = d.level(level);
            let _ = write!(out, " {} |", cell(r));
            dim_notes.extend(note(r, b.resamples()).map(|n| (level, n)));
        }
        out.push('\n');
        let what = format!("`{}`", name.replace('`', "'"));
        if dim_notes.len() == Level::ALL.len()
            && dim_notes.iter().all(|(_, n)| *n == dim_notes[0].1)
        {
            notes.push(format!("{what}, every level: {}", dim_notes[0].1));
        } else {
            notes.extend(dim_notes.into_iter().map(|(l, n)| format!("{what}, {}: {n}", l.name())));
        }
    }
    if !notes.is_empty() {
        out.push('\n');
        for n in notes {
            let _ = writeln!(out, "- {n}");
        }
    }
    if !report.ignored_columns.is_empty() {
        let cols: Vec<String> = report.ignored_columns.iter().map(|c| format!("`{c}`")).collect();
        let _ = writeln!(out, "\nIgnored columns: {}.", cols.join(", "));
    }
    out
}

fn cell(r: &LevelAgreement) -> String {
    match (&r.alpha, &r.bootstrap.interval) {
        (Err(_), _) => "undefined".into(),
        (Ok(a), Ok(ci)) => format!("{:.3} [{:.3}, {:.3}]", a.alpha, ci.lo, ci.hi),
        (Ok(a), Err(_)) => format!("{:.3} [no CI]", a.alpha),
    }
}

/// What to say under the table about one level, if anything.
fn note(r: &LevelAgreement, resamples: usize) -> Option<String> {
    match (&r.alpha, &r.bootstrap.interval) {
        (Err(e), _) => Some(format!("alpha undefined: {e}.")),
        (Ok(_), Err(e)) => Some(format!("no CI: {e}.")),
        (Ok(_), Ok(_)) if r.bootstrap.dropped > 0 => Some(format!(
            "{} of {resamples} resamples dropped (alpha undefined on them: all their values equal).",
            r.bootstrap.dropped
        )),
        _ => None,
    }
}

/// A table cell's text with `|` escaped and line breaks flattened.
fn escape(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}
