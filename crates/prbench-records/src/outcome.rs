//! One record per (example, condition, model): what the backend returned and how it was
//! scored: one line of a run's `outcomes.jsonl`.

use std::io::Write;

use prbench_stats::outcome::ItemResult;
use serde::{Deserialize, Serialize};

/// The judge verdict an outcome holds, and its pick (`prbench-models`' value types, re-exported
/// so a reader of outcomes needs no other crate).
pub use prbench_models::{Choice, Verdict};
/// The slot that held `chosen`.
pub use prbench_stats::Slot;

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
    /// The example's user, when the dataset has user ids (`Example::user_id` in `prbench-data`):
    /// the bootstrap then resamples users. Written only when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
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
