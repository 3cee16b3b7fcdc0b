//! A Best-of-N table, `bon-<judge>.json` in a Best-of-N folder (PROTOCOL.md §6): written by
//! `prbench-downstream` (`bon::report::build`, which computes it), read by the report and by
//! `correlate`. For k in {1, 2, 4, …, N}, the expected rubric score of the best-of-k choice of
//! each reward model, with the two reference rows (`random pick`, `oracle`).

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

/// One point of a scaling curve: the expected rubric score (0–2) of best-of-k.
///
/// A mean over no example (a row whose examples were all left out) is NaN; JSON has no NaN, so
/// `serde_json` writes it as `null`, and `overall`, `overall_normalized` and `macro_mean` read
/// `null` back as NaN.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BonPoint {
    /// Samples drawn (k).
    pub k: usize,
    /// Mean over the subset's examples, per subset (in dataset order of first appearance).
    pub per_subset: BTreeMap<String, f64>,
    /// Mean over all examples (micro), on 0–2; NaN (`null` in the file) without examples.
    #[serde(deserialize_with = "nan_for_null")]
    pub overall: f64,
    /// `overall / 2`, on 0–1; NaN (`null`) without examples.
    #[serde(deserialize_with = "nan_for_null")]
    pub overall_normalized: f64,
    /// Mean of the subset means (macro), on 0–2; NaN (`null`) without examples.
    #[serde(deserialize_with = "nan_for_null")]
    pub macro_mean: f64,
    /// Seeded percentile-bootstrap 95% CI of `overall` on 0–2 ([`prbench_stats::bootstrap`]:
    /// 10,000 resamples, seed 42, examples resampled within each subset); `None` in tables
    /// written before this field existed or when the row has no example. The report draws it
    /// as the curve's band.
    #[serde(default)]
    pub overall_ci: Option<[f64; 2]>,
}

/// One row of the table: a reward model or a reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BonRow {
    /// Reward model name (its scores file's stem) or the reference's name.
    pub name: String,
    /// `reward model` or `reference`.
    pub kind: String,
    /// The reward model's spec (as `prbench eval --model` takes it), for matching with its
    /// benchmark result; `None` for references.
    pub spec: Option<String>,
    /// The condition the reward model scored under (from its scores manifest); `None` for
    /// references.
    pub condition: Option<String>,
    /// Examples in the row: those whose N samples are all judged and scored by every reward
    /// model of the table, so that every row is computed on the same examples.
    pub examples: usize,
    /// The same per subset.
    pub subset_examples: BTreeMap<String, usize>,
    /// Judged examples this reward model has no score for on some sample (left out of every
    /// row, see [`Exclusions::no_reward`]).
    pub excluded_for_score_errors: usize,
    /// One point per k.
    pub curve: Vec<BonPoint>,
}

/// Why judged examples are missing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exclusions {
    /// Examples with a sample whose generation failed.
    pub sample_failed: usize,
    /// Examples with a sample whose rubric judgement was unparsed.
    pub judge_unparsed: usize,
    /// Examples with a sample the judge failed on (engine error).
    pub judge_failed: usize,
    /// Judged examples left out of every row because some reward model has no reward for one
    /// of their samples (each model's own count is its row's `excluded_for_score_errors`).
    pub no_reward: usize,
}

/// The Best-of-N table for one rubric judge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BonTable {
    /// Samples per question.
    pub n: usize,
    /// The k values, ascending.
    pub ks: Vec<usize>,
    /// The rubric judge (its judgements file's stem).
    pub judge: String,
    /// Subsets in order of first appearance.
    pub subsets: Vec<String>,
    /// Examples sampled.
    pub examples: usize,
    /// Examples whose N samples all have a rubric score.
    pub judged_examples: usize,
    /// Why the others are missing (an example is counted under its first reason only).
    pub excluded: Exclusions,
    /// Sample-level judgement counts: unparsed and failed, over all samples.
    pub unparsed_judgements: usize,
    /// Judge engine failures over all samples.
    pub failed_judgements: usize,
    /// Reference rows first (random pick, oracle), then one row per reward model in the order
    /// given.
    pub rows: Vec<BonRow>,
}

/// Reads a number, or `null` as NaN: the reverse of `serde_json`'s writing of a non-finite
/// `f64` as `null`, so that a table with an empty row reads back as it was computed.
///
/// # Errors
/// The deserializer's error for anything but a number or `null`.
fn nan_for_null<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(f64::NAN))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A point over no example is written with `null` means and reads back with NaN ones; a
    /// finite point reads back unchanged.
    #[test]
    fn non_finite_means_round_trip_through_null() {
        let empty = BonPoint {
            k: 2,
            per_subset: BTreeMap::new(),
            overall: f64::NAN,
            overall_normalized: f64::NAN,
            macro_mean: f64::NAN,
            overall_ci: None,
        };
        let text = serde_json::to_string(&empty).unwrap();
        assert_eq!(
            text,
            r#"{"k":2,"per_subset":{},"overall":null,"overall_normalized":null,"macro_mean":null,"overall_ci":null}"#
        );
        let back: BonPoint = serde_json::from_str(&text).unwrap();
        assert!(back.overall.is_nan() && back.overall_normalized.is_nan());
        assert!(back.macro_mean.is_nan());
        let full = BonPoint {
            per_subset: BTreeMap::from([("Art".to_string(), 1.5)]),
            overall: 1.5,
            overall_normalized: 0.75,
            macro_mean: 1.5,
            overall_ci: Some([1.0, 2.0]),
            ..empty
        };
        let back: BonPoint = serde_json::from_str(&serde_json::to_string(&full).unwrap()).unwrap();
        assert_eq!(back, full);
        // Only numbers and null: a string is still an error.
        let text = r#"{"k":2,"per_subset":{},"overall":"x","overall_normalized":1,"macro_mean":1}"#;
        assert!(serde_json::from_str::<BonPoint>(text).is_err());
    }
}
