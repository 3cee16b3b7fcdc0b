//! The four rating dimensions of the paper's human evaluation (Personalized RewardBench §3.3,
//! arXiv 2604.07343): every answer gets each one, 1–5.

use serde::{Deserialize, Serialize};

/// One rating dimension.
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
    /// All four, in the order the page asks for them and tables show them.
    pub const ALL: [Dimension; 4] =
        [Dimension::Factuality, Dimension::Relevance, Dimension::Helpfulness, Dimension::RubricFit];

    /// The name in files and JSON (`factuality`, `relevance`, `helpfulness`, `rubric_fit`).
    pub fn name(self) -> &'static str {
        match self {
            Dimension::Factuality => "factuality",
            Dimension::Relevance => "relevance",
            Dimension::Helpfulness => "helpfulness",
            Dimension::RubricFit => "rubric_fit",
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

    /// The dimension named `name` ([`Dimension::name`]), if any.
    pub fn from_name(name: &str) -> Option<Dimension> {
        Dimension::ALL.into_iter().find(|d| d.name() == name)
    }
}

/// The lowest score of every dimension.
pub const MIN_SCORE: u8 = 1;
/// The highest score of every dimension.
pub const MAX_SCORE: u8 = 5;
