//! One item's outcome.

use serde::{Deserialize, Serialize};

/// The result of one benchmark item (one chosen/rejected pair) for one model.
///
/// Serialized in lowercase: `"correct"`, `"wrong"`, `"tie"`, `"unparsed"`, `"error"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ItemResult {
    /// The model preferred `chosen`.
    Correct,
    /// The model preferred `rejected`.
    Wrong,
    /// The model could not separate the pair (equal scores, or an explicit tie verdict).
    Tie,
    /// A judge reply from which no verdict could be read (PROTOCOL.md §4).
    Unparsed,
    /// The item could not be scored at all (backend failure, non-finite score).
    Error,
}

impl ItemResult {
    /// The outcome of a scalar reward model from its two scores (PROTOCOL.md §3):
    /// [`Correct`](Self::Correct) iff `chosen > rejected`, [`Wrong`](Self::Wrong) iff
    /// `chosen < rejected`, [`Tie`](Self::Tie) iff equal, and [`Error`](Self::Error) if either
    /// score is NaN or infinite.
    pub fn from_scores(chosen: f64, rejected: f64) -> Self {
        if !(chosen.is_finite() && rejected.is_finite()) {
            ItemResult::Error
        } else if chosen > rejected {
            ItemResult::Correct
        } else if chosen < rejected {
            ItemResult::Wrong
        } else {
            ItemResult::Tie
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ItemResult;
    use serde::de::{value::Error, IntoDeserializer};
    use serde::Deserialize;

    #[test]
    fn from_scores() {
        assert_eq!(ItemResult::from_scores(1.0, 0.5), ItemResult::Correct);
        assert_eq!(ItemResult::from_scores(-1.0, 0.5), ItemResult::Wrong);
        assert_eq!(ItemResult::from_scores(0.25, 0.25), ItemResult::Tie);
        assert_eq!(ItemResult::from_scores(f64::NAN, 0.25), ItemResult::Error);
        assert_eq!(ItemResult::from_scores(0.0, f64::INFINITY), ItemResult::Error);
    }

    #[test]
    fn serde_names_are_lowercase() {
        for (name, want) in [
            ("correct", ItemResult::Correct),
            ("wrong", ItemResult::Wrong),
            ("tie", ItemResult::Tie),
            ("unparsed", ItemResult::Unparsed),
            ("error", ItemResult::Error),
        ] {
            let de: serde::de::value::StrDeserializer<Error> = name.into_deserializer();
            assert_eq!(ItemResult::deserialize(de).unwrap(), want);
        }
        let de: serde::de::value::StrDeserializer<Error> = "Correct".into_deserializer();
        assert!(ItemResult::deserialize(de).is_err());
    }
}
