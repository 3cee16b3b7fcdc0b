//! What a rater sends for one item, and its checks.

use serde::{Deserialize, Serialize};

use crate::dims::{Dimension, MAX_SCORE, MIN_SCORE};

/// The longest comment accepted, in characters (Unicode scalar values).
pub const MAX_COMMENT_CHARS: usize = 2_000;

/// One answer's ratings: each dimension 1–5, and an optional comment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerRating {
    /// [`Dimension::Factuality`], 1–5.
    pub factuality: u8,
    /// [`Dimension::Relevance`], 1–5.
    pub relevance: u8,
    /// [`Dimension::Helpfulness`], 1–5.
    pub helpfulness: u8,
    /// [`Dimension::RubricFit`], 1–5.
    pub rubric_fit: u8,
    /// Free text, at most [`MAX_COMMENT_CHARS`]; empty when the rater wrote none.
    #[serde(default)]
    pub comment: String,
}

impl AnswerRating {
    /// The score of `dim`.
    pub fn score(&self, dim: Dimension) -> u8 {
        match dim {
            Dimension::Factuality => self.factuality,
            Dimension::Relevance => self.relevance,
            Dimension::Helpfulness => self.helpfulness,
            Dimension::RubricFit => self.rubric_fit,
        }
    }

    /// The four scores in [`Dimension::ALL`] order.
    pub fn scores(&self) -> [u8; 4] {
        Dimension::ALL.map(|d| self.score(d))
    }
}

/// A rater's judgement of one item: the answers as shown (`answers[0]` is answer 1), and
/// which of them (1 or 2) fits the user better.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Submission {
    /// Ratings of answer 1 and answer 2, in that order.
    pub answers: [AnswerRating; 2],
    /// The answer (1 or 2) that fits the user better.
    pub better: u8,
}

impl Submission {
    /// Checks every score is 1–5, `better` is 1 or 2 and each comment is at most
    /// [`MAX_COMMENT_CHARS`].
    ///
    /// # Errors
    /// A message naming the field (`answers[1].rubric_fit`) and the value.
    pub fn check(&self) -> Result<(), String> {
        for (i, a) in self.answers.iter().enumerate() {
            for d in Dimension::ALL {
                let s = a.score(d);
                if !(MIN_SCORE..=MAX_SCORE).contains(&s) {
                    return Err(format!(
                        "answers[{i}].{} is {s}: scores are {MIN_SCORE} to {MAX_SCORE}",
                        d.name()
                    ));
                }
            }
            let n = a.comment.chars().count();
            if n > MAX_COMMENT_CHARS {
                return Err(format!(
                    "answers[{i}].comment has {n} characters: at most {MAX_COMMENT_CHARS} are kept"
                ));
            }
        }
        if !matches!(self.better, 1 | 2) {
            return Err(format!("better is {}: it names answer 1 or 2", self.better));
        }
        Ok(())
    }
}
