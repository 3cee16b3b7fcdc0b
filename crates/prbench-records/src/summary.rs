//! The run summary as data (`summary.json`): every figure a table shows, computed by the
//! eval crate, rendered here without any engine dependency.

use prbench_stats::Tally;
use serde::{Deserialize, Serialize};

/// Accuracy of one row (a subset, micro or macro) under one tie mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccuracyRow {
    /// Row label: short subset name, `micro` or `macro`.
    pub label: String,
    /// Counts: items, correct, wrong, ties, unparsed (never counted as a choice), errors.
    #[serde(flatten)]
    pub tally: Tally,
    /// Items whose input was truncated.
    pub truncated: usize,
    /// Accuracy in [0, 1] under strict ties (tie/unparsed/error = not correct); `None` if n = 0.
    pub strict: Option<f64>,
    /// Seeded bootstrap 95% CI of `strict`, [lo, hi].
    pub strict_ci: Option<[f64; 2]>,
    /// Accuracy with half credit for ties.
    pub half: Option<f64>,
    /// Accuracy over decided items only (ties, unparsed and errors excluded).
    pub excluded: Option<f64>,
}

/// Position-bias figures of a judge (PROTOCOL.md §4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PositionBias {
    /// Items with chosen in slot A.
    pub n_chosen_in_a: usize,
    /// Strict accuracy on them.
    pub accuracy_chosen_in_a: Option<f64>,
    /// Items with chosen in slot B.
    pub n_chosen_in_b: usize,
    /// Strict accuracy on them.
    pub accuracy_chosen_in_b: Option<f64>,
    /// Share of parsed A/B verdicts that picked A.
    pub share_a_verdicts: Option<f64>,
}

/// Both-orders figures (PROTOCOL.md §4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BothOrders {
    /// Strict accuracy when correct requires both orders to pick chosen.
    pub rows: Vec<AccuracyRow>,
    /// Share of items whose two verdicts (both parsed) picked the same answer.
    pub consistency: Option<f64>,
    /// Position-debiased margin comparison (logprob verdicts only).
    pub debiased_rows: Option<Vec<AccuracyRow>>,
}

/// A control baseline's figures on the same items.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineRow {
    /// `baseline:NAME`.
    pub name: String,
    /// What it sees, e.g. `none` or `full profile`.
    pub sees: String,
    /// Rows per subset, then micro and macro.
    pub rows: Vec<AccuracyRow>,
}

/// Everything `summary.json` and `summary.md` report for one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Run id.
    pub run_id: String,
    /// Model spec.
    pub model: String,
    /// The condition a model prbench trained (`bt:`, `pal:`) was trained under, as in
    /// `manifest.json`; absent for other models and in summaries written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_training_condition: Option<String>,
    /// Engine description.
    pub engine: String,
    /// Decoding parameters (verdict mode etc.).
    pub decoding: serde_json::Value,
    /// Condition name.
    pub condition: String,
    /// What the model sees under this condition, in one sentence.
    pub condition_meaning: String,
    /// True when the condition shows the ground-truth rubric (an upper bound).
    pub oracle: bool,
    /// Dataset source.
    pub dataset: String,
    /// Dataset kind (`prb`, `psoups`, …).
    pub dataset_kind: String,
    /// Dataset hash (sha256 hex).
    pub dataset_hash: String,
    /// `--limit`: only the first N examples of each subset were evaluated. Set only when the
    /// limit left out at least one example (a limit at or above every subset's size gives the
    /// full run; the manifest still records it).
    pub limit_per_subset: Option<usize>,
    /// `--limit N --sample`: a seeded random sample of N examples of each subset was evaluated
    /// (drawn from sha256(seed, id)); `limit_per_subset` is then `None`.
    #[serde(default)]
    pub sample_per_subset: Option<usize>,
    /// Run seed.
    pub seed: u64,
    /// Bootstrap resamples behind every CI.
    pub bootstrap_resamples: usize,
    /// When the examples carry user ids: how many distinct users the CIs resample (each with
    /// all their examples, within each subset; PROTOCOL.md §5). `None`: examples are resampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bootstrap_users: Option<usize>,
    /// Rows per subset, then micro and macro.
    pub rows: Vec<AccuracyRow>,
    /// Judges only.
    pub position_bias: Option<PositionBias>,
    /// Both-orders mode only.
    pub both_orders: Option<BothOrders>,
    /// Control baselines on the same items.
    pub baselines: Vec<BaselineRow>,
    /// Tokens fed to the model under test.
    pub input_tokens: usize,
    /// Tokens cut to fit the context window.
    pub truncated_tokens: usize,
    /// Tokens the model under test generated (0 for scoring and logprob verdicts).
    #[serde(default)]
    pub output_tokens: usize,
    /// Wall time of the model under test, seconds.
    pub wall_seconds: f64,
    /// What the run cache did; `None` with `--no-cache` or for control baselines.
    #[serde(default)]
    pub cache: Option<CacheReport>,
    /// What a remote engine did during this run (HTTP requests, retries, failures, billed
    /// tokens); `None` for in-process engines.
    #[serde(default)]
    pub remote: Option<RemoteCalls>,
    /// `profile:k` runs: how many posts were shown and dropped to fit.
    #[serde(default)]
    pub profile: Option<ProfileReport>,
    /// `planner` runs: the planner, its failures and its quality against the hidden rubric.
    #[serde(default)]
    pub planner: Option<PlannerReport>,
    /// `oracle` runs: examples whose rubric has no aspects, rendered as under `none`.
    #[serde(default)]
    pub empty_rubric: Option<usize>,
}

/// What a `profile:k` run showed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileReport {
    /// Posts asked for (k).
    pub k: usize,
    /// How the posts were ranked (e.g. `bm25 (k1=1.2, b=0.75)`, or the ranked dataset's retriever).
    pub retriever: String,
    /// Mean posts shown per example.
    pub mean_posts_shown: f64,
    /// Lowest-ranked posts dropped so inputs fit the model's context, over all examples.
    pub posts_dropped: usize,
    /// Examples that lost at least one post that way.
    pub examples_with_drops: usize,
    /// Examples whose profile has no posts: rendered as under `none` (no context).
    #[serde(default)]
    pub empty_profile: usize,
}

impl ProfileReport {
    /// One line for summary.md and the matrix notes: k, ranking, posts shown and dropped.
    pub fn line(&self) -> String {
        use crate::plural::{count, noun};
        format!(
            "top {} ranked by {}; {:.2} shown per example on average; {} lowest-ranked {} dropped to fit the model's context ({})",
            count(self.k, "post", "posts"),
            self.retriever,
            self.mean_posts_shown,
            self.posts_dropped,
            noun(self.posts_dropped, "post", "posts"),
            count(self.examples_with_drops, "example", "examples")
        ) + &empty_line(self.empty_profile, "an empty profile")
    }
}

/// The note on examples a condition had nothing to add for ("; 3 examples have an empty
/// profile, rendered as under `none`"), or nothing when there are none.
pub fn empty_line(n: usize, what: &str) -> String {
    match n {
        0 => String::new(),
        1 => format!("; 1 example has {what}, rendered as under `none` (no context)"),
        n => format!("; {n} examples have {what}, rendered as under `none` (no context)"),
    }
}

/// What the planner of a `planner` run did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannerReport {
    /// Planner model spec.
    pub model: String,
    /// Profile posts the planner read per example (top-k).
    pub k: usize,
    /// Examples planned.
    pub examples: usize,
    /// Examples whose reply held no usable list (see planner.jsonl); scored with no context and
    /// flagged `planner_failed` in outcomes.jsonl.
    pub failed: usize,
    /// Examples the generator failed on (after its retries): error outcomes under `planner`.
    #[serde(default)]
    pub errors: usize,
    /// Usable plans read from unmarked lines or sentences (the reply ignored the list format).
    #[serde(default)]
    pub unmarked: usize,
    /// Replies that used the whole token budget (their last aspect may be cut).
    #[serde(default)]
    pub cut: usize,
    /// Mean aspects per planned example.
    pub mean_aspects: f64,
    /// Planner quality: per example, the mean over true rubric aspects of the best cosine
    /// similarity to a planned aspect (MiniLM embeddings), averaged over examples with a plan.
    pub quality: Option<f64>,
    /// The same mean counting examples without a plan as 0.
    pub quality_with_failures_as_zero: Option<f64>,
    /// Why quality is missing, when it is.
    pub quality_note: Option<String>,
}

impl PlannerReport {
    /// One line for summary.md and the matrix notes: the planner, its failures and its quality.
    pub fn line(&self) -> String {
        let quality = match (self.quality, self.quality_with_failures_as_zero) {
            (Some(q), Some(z)) => format!(
                "quality (per example: mean over true aspects of the best MiniLM cosine to a planned aspect) {q:.3}, {z:.3} counting failed plans as 0"
            ),
            _ => format!("quality not computed: {}", self.quality_note.as_deref().unwrap_or("no reason recorded")),
        };
        format!(
            "`{}` read up to {} top-ranked posts for each of {} examples; {:.2} aspects per usable plan ({} read from unmarked lines or sentences, {} replies cut by the token budget); {} replies held no list (scored with no context); the generator failed on {} (error outcomes); {quality}",
            self.model, self.k, self.examples, self.mean_aspects, self.unmarked, self.cut, self.failed, self.errors
        )
    }
}

/// What the run cache did during one run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheReport {
    /// The cache file.
    pub path: String,
    /// Backend results answered from the cache (no call).
    pub hits: u64,
    /// Backend results requested from the engine.
    pub calls: u64,
    /// Results written to the cache.
    pub stored: u64,
    /// Results that could not be written (the run goes on; a rerun would repeat those calls).
    pub write_errors: u64,
    /// The first write error, if any.
    pub first_error: Option<String>,
}

/// HTTP calls a remote engine made during one run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteCalls {
    /// Requests sent, retries included.
    pub requests: u64,
    /// Retries (after a 429, a 5xx, a timeout, a dropped connection or a broken body).
    pub retries: u64,
    /// Items that still failed after the last retry (error outcomes).
    pub failures: u64,
    /// Prompt tokens the server reported; `None` (JSON `null`) when a reply of the run gave no
    /// count (TEI, OpenRLHF and reward servers never do), so the total is unknown, never 0.
    pub prompt_tokens: Option<u64>,
    /// Completion tokens the server reported; `None` likewise (a chat server without `usage`).
    pub completion_tokens: Option<u64>,
}

impl RemoteCalls {
    /// `"N prompt + M completion tokens"`, each total `unknown` when the server did not report it.
    pub fn usage_text(&self) -> String {
        let n = |t: Option<u64>| t.map_or_else(|| "unknown".to_string(), |t| t.to_string());
        format!(
            "{} prompt + {} completion tokens",
            n(self.prompt_tokens),
            n(self.completion_tokens)
        )
    }
}
