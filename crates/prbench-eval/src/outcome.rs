//! One record per (example, condition, model): what the backend returned and how it was
//! scored (DESIGN.md `Outcome`). Written as JSONL.

use std::io::Write;

use prbench_models::{Choice, Verdict};
use prbench_stats::outcome::ItemResult;
use serde::{Deserialize, Serialize};

use crate::slots::Slot;

/// One scored item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// Example id.
    pub example_id: String,
    /// Long subset name.
    pub subset: String,
    /// Condition name (`none`, `profile:10`, `planner`, `oracle`).
    pub condition: String,
    /// Model spec.
    pub model: String,
    /// Judges: the slot that held `chosen` in the primary order.
    pub chosen_slot: Option<Slot>,
    /// Judges: verdict with chosen in `chosen_slot`.
    pub verdict: Option<Verdict>,
    /// Judges in both-orders mode: verdict with chosen in the other slot.
    pub swapped_verdict: Option<Verdict>,
    /// Reward models: score of `chosen`.
    pub score_chosen: Option<f32>,
    /// Reward models: score of `rejected`.
    pub score_rejected: Option<f32>,
    /// The primary result (single order for judges; score(chosen) vs score(rejected) for RMs).
    pub result: ItemResult,
    /// Both-orders mode: correct only when both verdicts pick `chosen`.
    pub both_orders_result: Option<ItemResult>,
    /// Both-orders mode with logprob verdicts: correct iff margin(chosen in A) > margin(chosen in B).
    pub debiased_result: Option<ItemResult>,
    /// Tokens fed to the backend for this item, summed over its calls.
    pub input_tokens: usize,
    /// Tokens the backend generated for this item, summed over its calls (0 for scoring and
    /// logprob verdicts).
    #[serde(default)]
    pub output_tokens: usize,
    /// Tokens cut to fit the context, summed over its calls.
    pub truncated_tokens: usize,
    /// Wall time attributed to this item (its batch's time divided evenly), milliseconds.
    pub latency_ms: f64,
    /// Why the backend failed on this item (result `error`); `None` otherwise.
    pub error: Option<String>,
    /// `profile:k`: profile posts shown (at most k; fewer when the profile is shorter or posts
    /// were dropped to fit); `None` under other conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub posts_shown: Option<usize>,
    /// `profile:k`: lowest-ranked posts dropped so the input fits the model's context.
    #[serde(default)]
    pub posts_dropped: usize,
    /// `profile:k`: ids of the top-k ranked posts, best first; the first `posts_shown` were
    /// shown and the next `posts_dropped` were dropped to fit (what the report's item browser
    /// lists). Empty under other conditions and in runs written before this field existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub post_ids: Vec<String>,
    /// `planner`: the planner produced no usable aspects for this example (generator error or
    /// unparsable reply, see planner.jsonl); it was scored with no context.
    #[serde(default)]
    pub planner_failed: bool,
    /// `profile:k`: the example's profile has no posts, so it was rendered as under `none`.
    #[serde(default)]
    pub empty_profile: bool,
    /// `oracle`: the example's rubric has no aspects, so it was rendered as under `none`.
    #[serde(default)]
    pub empty_rubric: bool,
    /// The example's user, when the dataset has user ids ([`prbench_data::Example::user_id`]):
    /// the bootstrap then resamples users. Written only when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
}

/// Scores one verdict against the slot holding `chosen`.
pub fn judge_result(choice: Choice, chosen_slot: Slot) -> ItemResult {
    match (choice, chosen_slot) {
        (Choice::A, Slot::A) | (Choice::B, Slot::B) => ItemResult::Correct,
        (Choice::A, Slot::B) | (Choice::B, Slot::A) => ItemResult::Wrong,
        (Choice::Tie, _) => ItemResult::Tie,
        (Choice::Unparsed, _) => ItemResult::Unparsed,
    }
}

/// Both-orders result from the two single-order results: unparsed if either is unparsed,
/// correct if both are correct, wrong if either is wrong, otherwise a tie.
pub fn both_orders_result(first: ItemResult, second: ItemResult) -> ItemResult {
    use ItemResult::*;
    match (first, second) {
        (Error, _) | (_, Error) => Error,
        (Unparsed, _) | (_, Unparsed) => Unparsed,
        (Correct, Correct) => Correct,
        (Wrong, _) | (_, Wrong) => Wrong,
        _ => Tie,
    }
}

/// Position-debiased result (PROTOCOL.md §4): with m = log p(A) − log p(B), the judge prefers
/// `chosen` iff m(chosen in A) > m(chosen in B).
pub fn debiased_result(margin_chosen_in_a: f32, margin_chosen_in_b: f32) -> ItemResult {
    ItemResult::from_scores(f64::from(margin_chosen_in_a), f64::from(margin_chosen_in_b))
}

/// Writes outcomes as JSON lines.
///
/// # Errors
/// Any write error.
pub fn write_jsonl(out: &mut impl Write, outcomes: &[Outcome]) -> std::io::Result<()> {
    for o in outcomes {
        serde_json::to_writer(&mut *out, o)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ItemResult::*;

    #[test]
    fn verdicts_score_against_the_chosen_slot() {
        assert_eq!(judge_result(Choice::A, Slot::A), Correct);
        assert_eq!(judge_result(Choice::A, Slot::B), Wrong);
        assert_eq!(judge_result(Choice::B, Slot::B), Correct);
        assert_eq!(judge_result(Choice::Tie, Slot::A), Tie);
        assert_eq!(judge_result(Choice::Unparsed, Slot::B), Unparsed);
    }

    #[test]
    fn both_orders_needs_both_correct() {
        assert_eq!(both_orders_result(Correct, Correct), Correct);
        assert_eq!(both_orders_result(Correct, Wrong), Wrong);
        assert_eq!(both_orders_result(Correct, Tie), Tie);
        assert_eq!(both_orders_result(Unparsed, Correct), Unparsed);
        assert_eq!(both_orders_result(Tie, Wrong), Wrong);
    }

    #[test]
    fn debiased_compares_margins() {
        // A-biased judge: prefers A in both orders but more strongly when chosen is in A.
        assert_eq!(debiased_result(2.0, 0.5), Correct);
        assert_eq!(debiased_result(0.5, 2.0), Wrong);
        assert_eq!(debiased_result(1.0, 1.0), Tie);
    }
}
