//! Conditions: what a reward model may see besides the question and the answer
//! (PROTOCOL.md §2). Only [`Condition::Oracle`] lets hidden rubric text through.

use std::fmt;

use prbench_data::Example;

use crate::error::EvalError;

/// What extra text the model under test sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// Question and answer only (the authors' released evaluators run only this).
    None,
    /// The ground-truth rubric aspect titles: an upper bound, flagged in every output.
    Oracle,
}

impl Condition {
    /// Parses a `--condition` value (`none`, `oracle`).
    ///
    /// # Errors
    /// [`EvalError::Condition`] for anything else; `profile:k` and `planner` are named as
    /// not yet available rather than silently mapped to another condition.
    pub fn parse(s: &str) -> Result<Self, EvalError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "none" => Ok(Self::None),
            "oracle" => Ok(Self::Oracle),
            other if other.starts_with("profile") || other == "planner" => Err(EvalError::Condition {
                given: s.into(),
                reason: "the profile and planner conditions are not implemented in this version; use `none` or `oracle`".into(),
            }),
            _ => Err(EvalError::Condition { given: s.into(), reason: "expected `none` or `oracle`".into() }),
        }
    }

    /// Whether this condition shows the hidden scoring standard (an upper bound, not a score).
    pub fn is_oracle(self) -> bool {
        matches!(self, Self::Oracle)
    }

    /// One sentence saying what the model sees under this condition (printed in reports).
    pub fn meaning(self) -> &'static str {
        match self {
            Self::None => "the model sees the question and the answers only, nothing about the user: it cannot personalize, so this measures the non-personalized baseline",
            Self::Oracle => "the model also sees the ground-truth rubric aspect titles of this user: an upper bound, not a benchmark score",
        }
    }

    /// The context text this condition adds for `example`, or `None` when it adds nothing.
    /// Oracle: the ground-truth aspect titles as a bulleted list under a label.
    pub fn context(self, example: &Example) -> Option<String> {
        match self {
            Self::None => None,
            Self::Oracle => {
                let mut s = String::from("This user expects an answer with these qualities:");
                for a in &example.rubric_aspects {
                    s.push_str("\n- ");
                    s.push_str(a.aspect.trim());
                }
                Some(s)
            }
        }
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::None => "none",
            Self::Oracle => "oracle",
        })
    }
}

/// The user's whole profile rendered as a numbered list with categories: the context the
/// `profile-overlap` control baseline reads, whatever the condition under test.
pub fn full_profile_text(example: &Example) -> String {
    example
        .profile
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{}. [{}] {}", i + 1, p.category, p.text))
        .collect::<Vec<_>>()
        .join("\n")
}
