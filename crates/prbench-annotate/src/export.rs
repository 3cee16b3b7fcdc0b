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

/// The rows of `ratings` (module docs for order and columns).
pub fn rows(ratings: &[RatedItem]) -> Vec<ExportRow> {
    let mut out = Vec::with_capacity(ratings.len() * 8);
    for r in ratings {
        for chosen in [true, false] {
            let label = if chosen { "chosen" } else { "rejected" };
            let shown_as = if chosen {
                r.chosen_shown_as
            } else {
                3 - r.chosen_shown_as
            };
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
    let io = |source: std::io::Error| AnnotateError::Io {
        path: name.to_path_buf(),
        source,
    };
    match format {
        Format::Csv => {
            // The header is written even with no row, so an empty export still reads as CSV.
            let mut w = csv::WriterBuilder::new()
                .has_headers(false)
                .from_writer(out);
            w.write_record(COLUMNS)
                .map_err(|e| io(std::io::Error::other(e)))?;
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
