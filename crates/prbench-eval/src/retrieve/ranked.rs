//! Ranked dataset files: the dataset as JSONL in the benchmark schema (every [`Example`] field,
//! `subset` included), each row's `profile` in ranked order (best first), plus two fields the
//! loader checks ([`prbench_data::PROFILE_RANKING_FIELD`], [`prbench_data::DATASET_KIND_FIELD`]):
//!
//! ```json
//! {"id": "...", "subset": "...", "question": "...", "profile": [/* ranked */], ...,
//!  "profile_ranking": {"retriever": "bm25 (k1=1.2, …)", "post_ids": ["p3", "p1", ...], "scores": [2.1, 0.4, ...]},
//!  "dataset_kind": "prb"}
//! ```
//!
//! Loading the file gives the same examples with reordered profiles,
//! [`prbench_data::Dataset::profile_ranking`] = the retriever description, and the original
//! [`prbench_data::Dataset::kind`] (so P-Soups data stays marked as not-PRB).

use std::path::Path;

use prbench_data::{Dataset, Example, DATASET_KIND_FIELD, PROFILE_RANKING_FIELD};
use serde_json::{json, Value};

use super::{ranked_posts, Ranking};
use crate::error::EvalError;

/// One ranked row: `example` with its profile in `ranking`'s order (posts looked up by id), the
/// ranking and the dataset kind.
///
/// # Errors
/// As [`ranked_posts`].
pub fn ranked_row(
    example: &Example,
    ranking: &Ranking,
    retriever: &str,
    kind: &str,
) -> Result<Value, EvalError> {
    let posts = ranked_posts(example, ranking)?;
    let mut ranked = example.clone();
    ranked.profile = posts.into_iter().cloned().collect();
    let mut row = serde_json::to_value(&ranked).map_err(|e| EvalError::Retrieval {
        example_id: example.id.clone(),
        reason: format!("cannot serialize the row: {e}"),
    })?;
    let obj = row.as_object_mut().expect("an Example serializes to an object");
    obj.insert(
        PROFILE_RANKING_FIELD.into(),
        json!({ "retriever": retriever, "post_ids": ranking.post_ids, "scores": ranking.scores }),
    );
    obj.insert(DATASET_KIND_FIELD.into(), Value::String(kind.to_string()));
    Ok(row)
}

/// Writes `dataset` with `rankings` (one per example, same order, from the retriever described
/// by `retriever`) to `path` as JSONL, through a temporary file renamed into place (a killed run
/// leaves no half-written file). The parent folder is created.
///
/// # Errors
/// [`EvalError::Retrieval`] when the rankings do not match the examples (count, ids, posts);
/// [`EvalError::Io`] naming the file when it cannot be written.
pub fn write_ranked_jsonl(
    path: &Path,
    dataset: &Dataset,
    rankings: &[Ranking],
    retriever: &str,
) -> Result<(), EvalError> {
    if rankings.len() != dataset.examples.len() {
        return Err(EvalError::Retrieval {
            example_id: "(all)".into(),
            reason: format!("{} rankings for {} examples", rankings.len(), dataset.examples.len()),
        });
    }
    let io = |source| EvalError::Io { path: path.to_path_buf(), source };
    let mut text = String::new();
    for (ex, r) in dataset.examples.iter().zip(rankings) {
        text.push_str(&ranked_row(ex, r, retriever, &dataset.kind)?.to_string());
        text.push('\n');
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    prbench_files::write_atomic(path, text.as_bytes()).map_err(|e| io(e.source))
}
