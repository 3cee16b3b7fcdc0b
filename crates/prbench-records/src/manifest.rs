//! A run's `manifest.json`: what the run used, enough to reproduce it and to tell two runs
//! apart. `prbench-eval` writes it when a run starts (again with the end time when it ends)
//! and reads it back to resume an unfinished run.

use chrono::{DateTime, Utc};
use prbench_models::ModelIdentity;
use serde::{Deserialize, Serialize};

/// What `manifest.json` records: enough to reproduce the run and to tell two runs apart.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    /// Run id (the folder name).
    pub run_id: String,
    /// prbench version and git commit.
    pub code_version: String,
    /// Model under test.
    pub model: ModelIdentity,
    /// The condition a model prbench trained (`bt:`, `pal:`) was trained under
    /// ([`prbench_models::RewardModel::training_condition`]); absent for other models and in
    /// manifests written before it was recorded. When it differs from `condition`, the model
    /// scored inputs unlike its training data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_training_condition: Option<String>,
    /// Decoding parameters (verdict mode etc.).
    pub decoding: serde_json::Value,
    /// sha256 of prbench's prompt templates (and of the judge recipe, with one).
    pub template_hash: String,
    /// The judge recipe, when one other than `default` was given (prbench-eval's
    /// `JudgeRecipe::manifest_entry`: name, folder, hash, reader).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_recipe: Option<serde_json::Value>,
    /// Dataset source spec, its path absolute (prbench-data's `spec::absolute`) so later
    /// commands (`prbench report`) find the data from any folder. Manifests written before hold
    /// the path as typed, relative to the folder the run was made in.
    pub dataset: String,
    /// Dataset kind.
    pub dataset_kind: String,
    /// sha256 of the dataset files.
    pub dataset_hash: String,
    /// Examples in the dataset as loaded.
    pub dataset_examples: usize,
    /// `--limit`: only the first N examples of each subset were evaluated.
    pub limit_per_subset: Option<usize>,
    /// `--limit N --sample`: a seeded random sample of N examples of each subset was evaluated
    /// (the N with the smallest sha256(seed, id), prbench-eval's `run::sample_per_subset`);
    /// `limit_per_subset` is then `None`.
    #[serde(default)]
    pub sample_per_subset: Option<usize>,
    /// Subsets evaluated (long names).
    pub subsets: Vec<String>,
    /// Examples evaluated.
    pub n_examples: usize,
    /// Condition.
    pub condition: String,
    /// True for the oracle condition (an upper bound).
    pub oracle: bool,
    /// What the condition's prepared inputs were: retriever and k for `profile:k`; planner
    /// spec, k, decoding and a hash of its plans for `planner`; `null` otherwise.
    #[serde(default)]
    pub condition_inputs: serde_json::Value,
    /// Run seed.
    pub seed: u64,
    /// Both-orders mode.
    pub both_orders: bool,
    /// Examples per backend call.
    pub batch_size: usize,
    /// Bootstrap resamples.
    pub bootstrap_resamples: usize,
    /// Start time (UTC).
    pub started: DateTime<Utc>,
    /// End time (UTC); absent while the run is going or when it was killed.
    pub finished: Option<DateTime<Utc>>,
    /// Every time a killed run was resumed into this folder, in order (absent when never).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resumed: Vec<Resumption>,
    /// Where the control baselines' rows came from (prbench-eval's
    /// `controls::cache::RowsSource::describe`: computed, stored in the cache, or read from it);
    /// written with the end time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_rows: Option<String>,
}

/// One resumption of an unfinished run (`manifest.json` → `resumed`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resumption {
    /// When the resumed run started (UTC).
    pub at: DateTime<Utc>,
    /// prbench version and git commit of the resuming binary.
    pub code_version: String,
}
