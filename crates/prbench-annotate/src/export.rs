//! `prbench annotate export`: every saved rating, one row per annotator × item × answer ×
//! dimension, with the answer's true label.
//!
//! Columns, in order: `annotator, unit, dimension, score` (the input of
//! `prbench annotate agreement`: `unit` is `ITEM_ID/chosen` or `ITEM_ID/rejected`), then
//! `item_id, subset, label` (`chosen`/`rejected`), `shown_as` (the answer number, 1 or 2, the
//! rater saw), `preferred` (1 if the rater said this answer fits the user better, else 0),
//! `comment` (the rater's comment on this answer), `revision` (times saved) and `updated_at`
//! (RFC 3339, UTC). Rows come by annotator (in `--annotators` order), list position, label
//! (chosen first) and dimension ([`Dimension::ALL`] order).

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use crate::dims::Dimension;
use crate::error::AnnotateError;
use crate::store::RatedItem;

/// The export's columns, in order.
pub const COLUMNS: [&str; 12] = [
    "annotator",
    "unit",
    "dimension",
    "score",
    "item_id",
    "subset",
    "label",
    "shown_as",
    "preferred",
    "comment",
    "revision",
    "updated_at",
];

/// One exported row (module docs).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExportRow {
    /// The annotator.
    pub annotator: String,
    /// `ITEM_ID/chosen` or `ITEM_ID/rejected`: the rated answer, as agreement's unit.
    pub unit: String,
    /// The dimension's name ([`Dimension::name`]).
    pub dimension: &'static str,
    /// The score, 1–5.
    pub score: u8,
    /// The item.
    pub item_id: String,
    /// Its subset.
    pub subset: String,
    /// `chosen` or `rejected`.
    pub label: &'static str,
    /// The answer number the rater saw (1 or 2).
    pub shown_as: u8,
    /// 1 if the rater said this answer fits the user better, else 0.
    pub preferred: u8,
    /// The rater's comment on this answer ("" for none).
    pub comment: String,
    /// Times the rating was saved.
    pub revision: u32,
    /// When it was last saved (RFC 3339, UTC).
    pub updated_at: String,
}

/// The export's output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// CSV with a header row (RFC 4180 quoting).
    Csv,
    /// One JSON object per line.
    Jsonl,
}

/// A file that `prbench annotate export` or `annotate report` may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// The ratings export in this format.
    Export(Format),
    /// The human-evaluation report (Markdown).
    Report,
}

/// The first line of the human-evaluation report ([`crate::report::markdown`]).
pub const REPORT_FIRST_LINE: &str = "# Human evaluation\n";

/// Checks that `path` may be written as `what`: a new or empty file, or one this command wrote
/// before in that form (a re-export replaces the last export). A rating store or other SQLite
/// database, a run's files, data and the user's notes are refused, so a mistyped `--to`
/// destroys nothing.
///
/// # Errors
/// [`AnnotateError::Refused`] naming the path and what to do; [`AnnotateError::Io`] when an
/// existing file cannot be read.
pub fn check_output(path: &Path, what: Output) -> Result<(), AnnotateError> {
    crate::store::refuse_store_path(path)?;
    let refuse = |reason: &str| {
        Err(AnnotateError::Refused { path: path.to_path_buf(), reason: reason.into() })
    };
    if path.is_dir() {
        return refuse("is a folder; name the file to write");
    }
    let Ok(meta) = std::fs::metadata(path) else { return Ok(()) };
    if meta.len() == 0 {
        return Ok(());
    }
    let start = match what {
        // The header without its line end (the CSV writer's terminator is its own choice).
        Output::Export(Format::Csv) => COLUMNS.join(","),
        Output::Export(Format::Jsonl) => format!("{{\"{}\":", COLUMNS[0]),
        Output::Report => REPORT_FIRST_LINE.to_string(),
    };
    if prbench_files::starts_with(path, start.as_bytes())
        .map_err(|source| AnnotateError::Io { path: path.to_path_buf(), source })?
    {
        return Ok(());
    }
    let what = match what {
        Output::Export(_) => "a ratings export in this format",
        Output::Report => "a human-evaluation report",
    };
    refuse(&format!("exists and is not {what} that prbench wrote, so writing would destroy it; pass a new file with --to, or move the file away first"))
}

/// The rows of `ratings` (module docs for order and columns).
pub fn rows(ratings: &[RatedItem]) -> Vec<ExportRow> {
    let mut out = Vec::with_capacity(ratings.len() * 8);
    for r in ratings {
        for chosen in [true, false] {
            let label = if chosen { "chosen" } else { "rejected" };
            let shown_as = if chosen { r.chosen_shown_as } else { 3 - r.chosen_shown_as };
            let answer = r.answer(chosen);
            for d in Dimension::ALL {
                out.push(ExportRow {
                    annotator: r.annotator.clone(),
                    unit: format!("{}/{label}", r.item_id),
                    dimension: d.name(),
                    score: answer.score(d),
                    item_id: r.item_id.clone(),
                    subset: r.subset.clone(),
                    label,
                    shown_as,
                    preferred: u8::from(r.submission.better == shown_as),
                    comment: answer.comment.clone(),
                    revision: r.revision,
                    updated_at: r.updated_at.clone(),
                });
            }
        }
    }
    out
}

/// Writes `rows` to `out` in `format`.
///
/// # Errors
/// [`AnnotateError::Io`] naming `name` (the file, or `-` for stdout).
pub fn write(
    rows: &[ExportRow],
    format: Format,
    out: impl Write,
    name: &Path,
) -> Result<(), AnnotateError> {
    let io = |source: std::io::Error| AnnotateError::Io { path: name.to_path_buf(), source };
    match format {
        Format::Csv => {
            // The header is written even with no row, so an empty export still reads as CSV.
            let mut w = csv::WriterBuilder::new().has_headers(false).from_writer(out);
            w.write_record(COLUMNS).map_err(|e| io(std::io::Error::other(e)))?;
            for r in rows {
                w.serialize(r).map_err(|e| io(std::io::Error::other(e)))?;
            }
            w.flush().map_err(io)?;
        }
        Format::Jsonl => {
            let mut w = std::io::BufWriter::new(out);
            for r in rows {
                serde_json::to_writer(&mut w, r).map_err(|e| io(std::io::Error::other(e)))?;
                w.write_all(b"\n").map_err(io)?;
            }
            w.flush().map_err(io)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{check_output, write, Format, Output, REPORT_FIRST_LINE};

    #[test]
    fn annotate_outputs_replace_only_what_this_command_wrote() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        // New and empty files may be written.
        assert!(check_output(&dir.join("new.csv"), Output::Export(Format::Csv)).is_ok());
        std::fs::write(dir.join("empty.md"), b"").unwrap();
        assert!(check_output(&dir.join("empty.md"), Output::Report).is_ok());
        // A previous export (even with no row) and a previous report may be replaced.
        let csv = dir.join("ratings.csv");
        write(&[], Format::Csv, std::fs::File::create(&csv).unwrap(), &csv).unwrap();
        assert!(check_output(&csv, Output::Export(Format::Csv)).is_ok());
        let report = dir.join("annotate-report.md");
        std::fs::write(&report, format!("{REPORT_FIRST_LINE}\nDataset `d` …\n")).unwrap();
        assert!(check_output(&report, Output::Report).is_ok());
        // Anything else is refused and left as it was: a run's summary, the user's notes, a
        // report where an export goes, a JSONL export written as if it were CSV.
        let jsonl = dir.join("ratings.jsonl");
        std::fs::write(&jsonl, "{\"annotator\":\"ann\"}\n").unwrap();
        assert!(check_output(&jsonl, Output::Export(Format::Jsonl)).is_ok());
        let summary = dir.join("summary.json");
        std::fs::write(&summary, "{\"model\": \"baseline:longer\"}\n").unwrap();
        let notes = dir.join("notes.md");
        std::fs::write(&notes, "my notes\n").unwrap();
        for (path, what) in [
            (&summary, Output::Export(Format::Csv)),
            (&summary, Output::Report),
            (&notes, Output::Report),
            (&report, Output::Export(Format::Csv)),
            (&jsonl, Output::Export(Format::Csv)),
        ] {
            let before = std::fs::read(path).unwrap();
            let err = check_output(path, what).unwrap_err().to_string();
            assert!(err.contains("that prbench wrote, so writing would destroy it"), "{err}");
            assert_eq!(std::fs::read(path).unwrap(), before);
        }
        assert!(check_output(dir, Output::Report).is_err());
    }
}
