//! A Best-of-N table, `bon-<judge>.json` in a Best-of-N folder (PROTOCOL.md §6): written by
//! `prbench-downstream` (`bon::report::build`, which computes it), read by the report and by
//! `correlate`. For k in {1, 2, 4, …, N}, the expected rubric score of the best-of-k choice of
//! each reward model, with the two reference rows (`random pick`, `oracle`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One point of a scaling curve: the expected rubric score (0–2) of best-of-k.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BonPoint {
    /// Samples drawn (k).
    pub k: usize,
    /// Mean over the subset's examples, per subset (in dataset order of first appearance).
    pub per_subset: BTreeMap<String, f64>,
    /// Mean over all examples (micro), on 0–2.
    pub overall: f64,
    /// `overall / 2`, on 0–1.
    pub overall_normalized: f64,
    /// Mean of the subset means (macro), on 0–2.
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
