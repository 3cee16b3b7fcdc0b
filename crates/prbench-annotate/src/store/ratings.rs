//! What raters see and what they saved: the page's views of an item and of progress, the
//! ratings with their labels for export and report, and the store's reads and writes of them.

use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

use prbench_data::Example;

use super::Store;
use crate::dims::Dimension;
use crate::error::AnnotateError;
use crate::submission::{AnswerRating, Submission};

/// One annotator's progress.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    /// The annotator.
    pub annotator: String,
    /// Items assigned.
    pub total: usize,
    /// Items rated.
    pub done: usize,
    /// The first unrated position (1-based), `None` when all are rated.
    pub next: Option<usize>,
    /// For each position 1..=total, whether it is rated.
    pub rated: Vec<bool>,
}

/// A profile post as the page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PostView {
    /// Post id.
    pub id: String,
    /// Forum category ("" when the data has none).
    pub category: String,
    /// Post text.
    pub text: String,
}

/// A rubric aspect as the page shows it: its title and why it matters (no evidence).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AspectView {
    /// The aspect.
    pub aspect: String,
    /// Why it matters to the user ("" when the data has none).
    pub reason: String,
}

/// One item as one annotator sees it: no label, the answers in that annotator's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemView {
    /// Position on the annotator's list, 1-based.
    pub position: usize,
    /// Items on the list.
    pub total: usize,
    /// The item id.
    pub item_id: String,
    /// Its subset.
    pub subset: String,
    /// The user's question.
    pub question: String,
    /// The user's posts, in dataset order.
    pub posts: Vec<PostView>,
    /// The user's rubric aspects.
    pub rubric_aspects: Vec<AspectView>,
    /// Answer 1 and answer 2.
    pub answers: [String; 2],
    /// The annotator's saved rating of this item, if any.
    pub saved: Option<Submission>,
}

/// One annotator's saved rating of one item, with the labels (for export and report).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RatedItem {
    /// The annotator.
    pub annotator: String,
    /// The item.
    pub item_id: String,
    /// Its subset.
    pub subset: String,
    /// Position on the annotator's list, 1-based.
    pub position: usize,
    /// The answer label (1 or 2) the chosen answer had on the page.
    pub chosen_shown_as: u8,
    /// The rating as submitted (answers as shown).
    pub submission: Submission,
    /// How many times it was saved (1 = never changed).
    pub revision: u32,
    /// When it was last saved (RFC 3339, UTC).
    pub updated_at: String,
}

impl RatedItem {
    /// The rating of the chosen (`true`) or rejected answer.
    pub fn answer(&self, chosen: bool) -> &AnswerRating {
        let shown = if chosen { self.chosen_shown_as } else { 3 - self.chosen_shown_as };
        &self.submission.answers[usize::from(shown - 1)]
    }

    /// Whether the rater said the chosen answer fits the user better.
    pub fn prefers_chosen(&self) -> bool {
        self.submission.better == self.chosen_shown_as
    }
}

/// An item with its labels, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredItem {
    /// The example, as loaded when the folder was made.
    pub example: Example,
}

impl Store {
    /// `annotator`'s progress.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn progress(&self, annotator: &str) -> Result<Progress, AnnotateError> {
        let conn = self.conn.lock().expect("store mutex");
        let mut stmt = conn
            .prepare(
                "SELECT a.position, r.position IS NOT NULL FROM assignments a
                 LEFT JOIN ratings r ON r.annotator = a.annotator AND r.position = a.position
                 WHERE a.annotator = ?1 ORDER BY a.position",
            )
            .map_err(|e| self.sql(e))?;
        let rated: Vec<bool> = stmt
            .query_map([annotator], |r| r.get::<_, bool>(1))
            .and_then(|r| r.collect())
            .map_err(|e| self.sql(e))?;
        Ok(Progress {
            annotator: annotator.to_string(),
            total: rated.len(),
            done: rated.iter().filter(|r| **r).count(),
            next: rated.iter().position(|r| !*r).map(|p| p + 1),
            rated,
        })
    }

    fn decode<T: for<'de> Deserialize<'de>>(
        &self,
        json: &str,
        what: &str,
    ) -> Result<T, AnnotateError> {
        serde_json::from_str(json).map_err(|e| AnnotateError::Corrupt {
            path: self.path.clone(),
            detail: format!("{what} does not decode: {e}"),
        })
    }

    /// Item `position` (1-based) of `annotator`'s list, as the page shows it; `None` when
    /// the list has no such position.
    ///
    /// # Errors
    /// SQLite errors; [`AnnotateError::Corrupt`] for a stored row that does not decode.
    pub fn item(
        &self,
        annotator: &str,
        position: usize,
    ) -> Result<Option<ItemView>, AnnotateError> {
        let row: Option<(String, u8, String, Option<String>, i64)> = {
            let conn = self.conn.lock().expect("store mutex");
            conn.query_row(
                "SELECT a.item_id, a.chosen_shown_as, i.example, r.submission,
                        (SELECT COUNT(*) FROM assignments WHERE annotator = ?1)
                 FROM assignments a JOIN items i ON i.item_id = a.item_id
                 LEFT JOIN ratings r ON r.annotator = a.annotator AND r.position = a.position
                 WHERE a.annotator = ?1 AND a.position = ?2",
                params![annotator, position as i64],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )
            .optional()
            .map_err(|e| self.sql(e))?
        };
        let Some((item_id, chosen_shown_as, example, saved, total)) = row else {
            return Ok(None);
        };
        let total = total as usize;
        let e: Example = self.decode(&example, &format!("item `{item_id}`"))?;
        let saved: Option<Submission> = match saved {
            Some(s) => Some(self.decode(&s, &format!("{annotator}'s rating of item `{item_id}`"))?),
            None => None,
        };
        let answers =
            if chosen_shown_as == 1 { [e.chosen, e.rejected] } else { [e.rejected, e.chosen] };
        Ok(Some(ItemView {
            position,
            total,
            item_id,
            subset: e.subset,
            question: e.question,
            posts: e
                .profile
                .into_iter()
                .map(|p| PostView { id: p.id, category: p.category, text: p.text })
                .collect(),
            rubric_aspects: e
                .rubric_aspects
                .into_iter()
                .map(|a| AspectView { aspect: a.aspect, reason: a.reason })
                .collect(),
            answers,
            saved,
        }))
    }

    /// Saves `annotator`'s rating of item `position`, replacing an earlier one, and commits
    /// before returning. `None` when the list has no such position.
    ///
    /// # Errors
    /// [`AnnotateError::Items`] if the submission fails [`Submission::check`]; SQLite errors.
    pub fn submit(
        &self,
        annotator: &str,
        position: usize,
        sub: &Submission,
    ) -> Result<Option<Progress>, AnnotateError> {
        sub.check().map_err(AnnotateError::Items)?;
        let json = serde_json::to_string(sub).expect("a Submission serializes");
        let now = chrono::Utc::now().to_rfc3339();
        {
            let mut conn = self.conn.lock().expect("store mutex");
            let tx = conn.transaction().map_err(|e| self.sql(e))?;
            let assigned: bool = tx
                .query_row(
                    "SELECT COUNT(*) FROM assignments WHERE annotator = ?1 AND position = ?2",
                    params![annotator, position as i64],
                    |r| r.get::<_, i64>(0),
                )
                .map_err(|e| self.sql(e))?
                == 1;
            if !assigned {
                return Ok(None);
            }
            tx.execute(
                "INSERT INTO ratings VALUES (?1, ?2, ?3, ?4, 1, ?5, ?5)
                 ON CONFLICT (annotator, position) DO UPDATE SET
                   submission = excluded.submission, better = excluded.better,
                   revision = revision + 1, updated_at = excluded.updated_at",
                params![annotator, position as i64, json, sub.better, now],
            )
            .map_err(|e| self.sql(e))?;
            tx.commit().map_err(|e| self.sql(e))?;
        }
        self.progress(annotator).map(Some)
    }

    /// Every item, in dataset order, with its labels.
    ///
    /// # Errors
    /// SQLite errors; [`AnnotateError::Corrupt`] for a row that does not decode.
    pub fn items(&self) -> Result<Vec<Example>, AnnotateError> {
        let rows: Vec<(String, String)> = {
            let conn = self.conn.lock().expect("store mutex");
            let mut stmt = conn
                .prepare("SELECT item_id, example FROM items ORDER BY item_index")
                .map_err(|e| self.sql(e))?;
            let rows = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .and_then(|r| r.collect())
                .map_err(|e| self.sql(e))?;
            rows
        };
        rows.iter().map(|(id, json)| self.decode(json, &format!("item `{id}`"))).collect()
    }

    /// Every saved rating, by annotator (in `--annotators` order) then list position.
    ///
    /// # Errors
    /// SQLite errors; [`AnnotateError::Corrupt`] for a row that does not decode.
    pub fn ratings(&self) -> Result<Vec<RatedItem>, AnnotateError> {
        type Row = (String, String, String, i64, u8, String, u32, String);
        let rows: Vec<Row> = {
            let conn = self.conn.lock().expect("store mutex");
            let mut stmt = conn
                .prepare(
                    "SELECT r.annotator, a.item_id, i.subset, r.position, a.chosen_shown_as, r.submission, r.revision, r.updated_at
                     FROM ratings r
                     JOIN assignments a ON a.annotator = r.annotator AND a.position = r.position
                     JOIN items i ON i.item_id = a.item_id
                     JOIN annotators n ON n.name = r.annotator
                     ORDER BY n.list_index, r.position",
                )
                .map_err(|e| self.sql(e))?;
            let rows = stmt
                .query_map([], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                        r.get(7)?,
                    ))
                })
                .and_then(|r| r.collect())
                .map_err(|e| self.sql(e))?;
            rows
        };
        rows.into_iter()
            .map(
                |(
                    annotator,
                    item_id,
                    subset,
                    position,
                    chosen_shown_as,
                    json,
                    revision,
                    updated_at,
                )| {
                    let submission =
                        self.decode(&json, &format!("{annotator}'s rating of item `{item_id}`"))?;
                    Ok(RatedItem {
                        annotator,
                        item_id,
                        subset,
                        position: position as usize,
                        chosen_shown_as,
                        submission,
                        revision,
                        updated_at,
                    })
                },
            )
            .collect()
    }
}

/// The dimension scores of an [`AnswerRating`] with their dimensions.
pub fn scored(a: &AnswerRating) -> impl Iterator<Item = (Dimension, u8)> + '_ {
    Dimension::ALL.into_iter().map(|d| (d, a.score(d)))
}
