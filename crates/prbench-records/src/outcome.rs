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

/// Builds an [`Outcome`] set only where it matters, so a new field of [`Outcome`] is added here
/// once rather than at every place that makes one (tests above all).
/// [`OutcomeBuilder::new`] starts from the example id and the result: subset, condition and
/// model empty, every optional field `None`, every count 0, every flag `false`, `post_ids`
/// empty; each method sets one field and [`OutcomeBuilder::build`] returns the outcome.
///
/// ```
/// use prbench_records::outcome::{OutcomeBuilder, Slot};
/// use prbench_stats::outcome::ItemResult;
///
/// let o = OutcomeBuilder::new("e1", ItemResult::Correct)
///     .subset("Art_and_Entertainment")
///     .condition("none")
///     .model("m")
///     .chosen_slot(Slot::A)
///     .build();
/// assert_eq!(o.verdict, None);
/// assert_eq!(o.input_tokens, 0);
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct OutcomeBuilder {
    outcome: Outcome,
}

impl OutcomeBuilder {
    /// An outcome of example `example_id` with primary result `result`, every other field empty
    /// (see the type's documentation).
    pub fn new(example_id: impl Into<String>, result: ItemResult) -> Self {
        Self {
            outcome: Outcome {
                example_id: example_id.into(),
                subset: String::new(),
                condition: String::new(),
                model: String::new(),
                chosen_slot: None,
                verdict: None,
                swapped_verdict: None,
                score_chosen: None,
                score_rejected: None,
                result,
                both_orders_result: None,
                debiased_result: None,
                input_tokens: 0,
                output_tokens: 0,
                truncated_tokens: 0,
                latency_ms: 0.0,
                error: None,
                posts_shown: None,
                posts_dropped: 0,
                post_ids: Vec::new(),
                planner_failed: false,
                empty_profile: false,
                empty_rubric: false,
                user_id: None,
            },
        }
    }

    /// Sets [`Outcome::subset`] (the long subset name).
    pub fn subset(mut self, subset: impl Into<String>) -> Self {
        self.outcome.subset = subset.into();
        self
    }

    /// Sets [`Outcome::condition`] (its name, e.g. `none` or `profile:10`).
    pub fn condition(mut self, condition: impl Into<String>) -> Self {
        self.outcome.condition = condition.into();
        self
    }

    /// Sets [`Outcome::model`] (the model spec).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.outcome.model = model.into();
        self
    }

    /// Sets [`Outcome::chosen_slot`] to `Some(slot)`.
    pub fn chosen_slot(mut self, slot: Slot) -> Self {
        self.outcome.chosen_slot = Some(slot);
        self
    }

    /// Sets [`Outcome::verdict`] to `Some(verdict)`.
    pub fn verdict(mut self, verdict: Verdict) -> Self {
        self.outcome.verdict = Some(verdict);
        self
    }

    /// Sets [`Outcome::swapped_verdict`] to `Some(verdict)`.
    pub fn swapped_verdict(mut self, verdict: Verdict) -> Self {
        self.outcome.swapped_verdict = Some(verdict);
        self
    }

    /// Sets [`Outcome::score_chosen`] and [`Outcome::score_rejected`] to `Some`.
    pub fn scores(mut self, chosen: f32, rejected: f32) -> Self {
        self.outcome.score_chosen = Some(chosen);
        self.outcome.score_rejected = Some(rejected);
        self
    }

    /// Sets [`Outcome::both_orders_result`] to `Some(result)`.
    pub fn both_orders_result(mut self, result: ItemResult) -> Self {
        self.outcome.both_orders_result = Some(result);
        self
    }

    /// Sets [`Outcome::debiased_result`] to `Some(result)`.
    pub fn debiased_result(mut self, result: ItemResult) -> Self {
        self.outcome.debiased_result = Some(result);
        self
    }

    /// Sets [`Outcome::input_tokens`], [`Outcome::output_tokens`] and
    /// [`Outcome::truncated_tokens`], in that order.
    pub fn tokens(mut self, input: usize, output: usize, truncated: usize) -> Self {
        self.outcome.input_tokens = input;
        self.outcome.output_tokens = output;
        self.outcome.truncated_tokens = truncated;
        self
    }

    /// Sets [`Outcome::latency_ms`] (milliseconds).
    pub fn latency_ms(mut self, ms: f64) -> Self {
        self.outcome.latency_ms = ms;
        self
    }

    /// Sets [`Outcome::error`] to `Some(message)`.
    pub fn error(mut self, message: impl Into<String>) -> Self {
        self.outcome.error = Some(message.into());
        self
    }

    /// Sets [`Outcome::posts_shown`] to `Some(shown)` and [`Outcome::posts_dropped`].
    pub fn posts(mut self, shown: usize, dropped: usize) -> Self {
        self.outcome.posts_shown = Some(shown);
        self.outcome.posts_dropped = dropped;
        self
    }

    /// Replaces [`Outcome::post_ids`] with `ids`, in the order given.
    pub fn post_ids<S: Into<String>>(mut self, ids: impl IntoIterator<Item = S>) -> Self {
        self.outcome.post_ids = ids.into_iter().map(Into::into).collect();
        self
    }

    /// Sets [`Outcome::planner_failed`].
    pub fn planner_failed(mut self, failed: bool) -> Self {
        self.outcome.planner_failed = failed;
        self
    }

    /// Sets [`Outcome::empty_profile`].
    pub fn empty_profile(mut self, empty: bool) -> Self {
        self.outcome.empty_profile = empty;
        self
    }

    /// Sets [`Outcome::empty_rubric`].
    pub fn empty_rubric(mut self, empty: bool) -> Self {
        self.outcome.empty_rubric = empty;
        self
    }

    /// Sets [`Outcome::user_id`] to `Some(user)`.
    pub fn user_id(mut self, user: impl Into<String>) -> Self {
        self.outcome.user_id = Some(user.into());
        self
    }

    /// The outcome.
    #[must_use]
    pub fn build(self) -> Outcome {
        self.outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_method_sets_its_own_field_and_nothing_else() {
        let verdict = |choice| Verdict {
            choice,
            p_a: Some(0.25),
            margin: None,
            raw: "A".into(),
            tokens: Default::default(),
        };
        let o = OutcomeBuilder::new("e", ItemResult::Wrong)
            .subset("s")
            .condition("profile:2")
            .model("m")
            .chosen_slot(Slot::B)
            .verdict(verdict(Choice::A))
            .swapped_verdict(verdict(Choice::B))
            .scores(1.5, -2.0)
            .both_orders_result(ItemResult::Tie)
            .debiased_result(ItemResult::Correct)
            .tokens(3, 4, 5)
            .latency_ms(6.5)
            .error("boom")
            .posts(2, 1)
            .post_ids(["p1", "p2", "p3"])
            .planner_failed(true)
            .empty_profile(true)
            .empty_rubric(true)
            .user_id("u")
            .build();
        assert_eq!(
            o,
            Outcome {
                example_id: "e".into(),
                subset: "s".into(),
                condition: "profile:2".into(),
                model: "m".into(),
                chosen_slot: Some(Slot::B),
                verdict: Some(verdict(Choice::A)),
                swapped_verdict: Some(verdict(Choice::B)),
                score_chosen: Some(1.5),
                score_rejected: Some(-2.0),
                result: ItemResult::Wrong,
                both_orders_result: Some(ItemResult::Tie),
                debiased_result: Some(ItemResult::Correct),
                input_tokens: 3,
                output_tokens: 4,
                truncated_tokens: 5,
                latency_ms: 6.5,
                error: Some("boom".into()),
                posts_shown: Some(2),
                posts_dropped: 1,
                post_ids: vec!["p1".into(), "p2".into(), "p3".into()],
                planner_failed: true,
                empty_profile: true,
                empty_rubric: true,
                user_id: Some("u".into()),
            }
        );
        let bare = OutcomeBuilder::new("e", ItemResult::Error).build();
        assert_eq!(
            (bare.subset.as_str(), bare.condition.as_str(), bare.model.as_str()),
            ("", "", "")
        );
        assert_eq!(
            (bare.verdict, bare.error, bare.posts_shown, bare.user_id),
            (None, None, None, None)
        );
    }
}
