//! The four rating dimensions of the paper's human evaluation (Personalized RewardBench §3.3,
//! arXiv 2604.07343): every answer gets each one, scored [`MIN_SCORE`]–[`MAX_SCORE`].
//!
//! One definition for every place that names them: human raters (`prbench-annotate`: the
//! rating page, its store, export and report) and the LLM audit of a built benchmark
//! (`prbench-build`: the reply the audit prompt asks for, and the filter on its scores).
//! Each dimension has three spellings:
//!
//! | dimension | [`name`](Dimension::name) (files, JSON, serde) | [`label`](Dimension::label) (audit replies, build report) | [`title`](Dimension::title) (raters, tables) |
//! |---|---|---|---|
//! | [`Factuality`](Dimension::Factuality) | `factuality` | `factuality` | Factuality |
//! | [`Relevance`](Dimension::Relevance) | `relevance` | `relevance` | Relevance and instruction following |
//! | [`Helpfulness`](Dimension::Helpfulness) | `helpfulness` | `helpfulness` | Helpfulness and harmlessness |
//! | [`RubricFit`](Dimension::RubricFit) | `rubric_fit` | `rubric fit` | Rubric fit |

use serde::{Deserialize, Serialize};

/// One rating dimension. Serialized as its [`name`](Dimension::name) (`snake_case`); ordered
/// as [`Dimension::ALL`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dimension {
    /// Factuality: is what the answer says true?
    Factuality,
    /// Relevance and instruction following: does it answer this question as asked?
    Relevance,
    /// Helpfulness and harmlessness.
    Helpfulness,
    /// Rubric fit: does it meet this user's rubric aspects?
    RubricFit,
}

impl Dimension {
    /// All four, in the order the rating page and the audit prompt ask for them and tables show
    /// them; the first three are general quality, the last is personalization.
    pub const ALL: [Dimension; 4] =
        [Dimension::Factuality, Dimension::Relevance, Dimension::Helpfulness, Dimension::RubricFit];

    /// The name in files and JSON (`factuality`, `relevance`, `helpfulness`, `rubric_fit`), as
    /// serde writes it.
    pub fn name(self) -> &'static str {
        match self {
            Dimension::Factuality => "factuality",
            Dimension::Relevance => "relevance",
            Dimension::Helpfulness => "helpfulness",
            Dimension::RubricFit => "rubric_fit",
        }
    }

    /// The label as an audit reply writes it and the build report shows it (`factuality`, …,
    /// `rubric fit`, with a space).
    pub fn label(self) -> &'static str {
        match self {
            Dimension::RubricFit => "rubric fit",
            d => d.name(),
        }
    }

    /// The title raters and tables see.
    pub fn title(self) -> &'static str {
        match self {
            Dimension::Factuality => "Factuality",
            Dimension::Relevance => "Relevance and instruction following",
            Dimension::Helpfulness => "Helpfulness and harmlessness",
            Dimension::RubricFit => "Rubric fit",
        }
    }

    /// Position in [`Dimension::ALL`] (0–3).
    pub fn index(self) -> usize {
        self as usize
    }

    /// The dimension named `name` ([`Dimension::name`]), if any; exact match.
    pub fn from_name(name: &str) -> Option<Dimension> {
        Dimension::ALL.into_iter().find(|d| d.name() == name)
    }

    /// The dimension labelled `label` ([`Dimension::label`]), if any; exact match (callers
    /// normalize case and spacing first).
    pub fn from_label(label: &str) -> Option<Dimension> {
        Dimension::ALL.into_iter().find(|d| d.label() == label)
    }
}

/// The lowest score of every dimension.
pub const MIN_SCORE: u8 = 1;
/// The highest score of every dimension.
pub const MAX_SCORE: u8 = 5;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip_and_follow_the_order() {
        for (i, d) in Dimension::ALL.into_iter().enumerate() {
            assert_eq!(d.index(), i);
            assert_eq!(Dimension::from_name(d.name()), Some(d));
            assert_eq!(Dimension::from_label(d.label()), Some(d));
            assert_eq!(serde_json::to_string(&d).unwrap(), format!("\"{}\"", d.name()));
        }
        assert!(Dimension::ALL.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(Dimension::RubricFit.label(), "rubric fit");
        assert_eq!(Dimension::from_name("rubric fit"), None);
    }
}
