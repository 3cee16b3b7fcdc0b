//! A run's `manifest.json`: what the run used, enough to reproduce it and to tell two runs
//! apart. `prbench-eval` writes it when a run starts (again with the end time when it ends)
//! and reads it back to resume an unfinished run. The report reads it as [`PartialManifest`],
//! the same fields each allowed to be missing, since it only shows what a run recorded.

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

/// A run's `manifest.json` as a reader that only shows what the run recorded (the report) reads
/// it: the fields of [`Manifest`], with the same names and types, each `None` (a JSON value
/// `null`, a list empty) when the file lacks it, as a hand-made run folder or a manifest from
/// before a field was recorded may. A field that is present must still have its type.
/// Resuming a run reads the strict [`Manifest`], which refuses a missing field.
///
/// Built from a [`Manifest`] by [`From`], which names every field of both: a field added to
/// [`Manifest`] does not compile until it is added here.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct PartialManifest {
    /// [`Manifest::run_id`].
    pub run_id: Option<String>,
    /// [`Manifest::code_version`].
    pub code_version: Option<String>,
    /// [`Manifest::model`].
    pub model: Option<ModelIdentity>,
    /// [`Manifest::model_training_condition`].
    pub model_training_condition: Option<String>,
    /// [`Manifest::decoding`]; `null` when missing.
    pub decoding: serde_json::Value,
    /// [`Manifest::template_hash`].
    pub template_hash: Option<String>,
    /// [`Manifest::judge_recipe`].
    pub judge_recipe: Option<serde_json::Value>,
    /// [`Manifest::dataset`].
    pub dataset: Option<String>,
    /// [`Manifest::dataset_kind`].
    pub dataset_kind: Option<String>,
    /// [`Manifest::dataset_hash`].
    pub dataset_hash: Option<String>,
    /// [`Manifest::dataset_examples`].
    pub dataset_examples: Option<usize>,
    /// [`Manifest::limit_per_subset`].
    pub limit_per_subset: Option<usize>,
    /// [`Manifest::sample_per_subset`].
    pub sample_per_subset: Option<usize>,
    /// [`Manifest::subsets`].
    pub subsets: Option<Vec<String>>,
    /// [`Manifest::n_examples`].
    pub n_examples: Option<usize>,
    /// [`Manifest::condition`].
    pub condition: Option<String>,
    /// [`Manifest::oracle`].
    pub oracle: Option<bool>,
    /// [`Manifest::condition_inputs`]; `null` when missing.
    pub condition_inputs: serde_json::Value,
    /// [`Manifest::seed`].
    pub seed: Option<u64>,
    /// [`Manifest::both_orders`].
    pub both_orders: Option<bool>,
    /// [`Manifest::batch_size`].
    pub batch_size: Option<usize>,
    /// [`Manifest::bootstrap_resamples`].
    pub bootstrap_resamples: Option<usize>,
    /// [`Manifest::started`].
    pub started: Option<DateTime<Utc>>,
    /// [`Manifest::finished`].
    pub finished: Option<DateTime<Utc>>,
    /// [`Manifest::resumed`].
    pub resumed: Vec<Resumption>,
    /// [`Manifest::control_rows`].
    pub control_rows: Option<String>,
}

impl From<Manifest> for PartialManifest {
    fn from(m: Manifest) -> Self {
        let Manifest {
            run_id,
            code_version,
            model,
            model_training_condition,
            decoding,
            template_hash,
            judge_recipe,
            dataset,
            dataset_kind,
            dataset_hash,
            dataset_examples,
            limit_per_subset,
            sample_per_subset,
            subsets,
            n_examples,
            condition,
            oracle,
            condition_inputs,
            seed,
            both_orders,
            batch_size,
            bootstrap_resamples,
            started,
            finished,
            resumed,
            control_rows,
        } = m;
        PartialManifest {
            run_id: Some(run_id),
            code_version: Some(code_version),
            model: Some(model),
            model_training_condition,
            decoding,
            template_hash: Some(template_hash),
            judge_recipe,
            dataset: Some(dataset),
            dataset_kind: Some(dataset_kind),
            dataset_hash: Some(dataset_hash),
            dataset_examples: Some(dataset_examples),
            limit_per_subset,
            sample_per_subset,
            subsets: Some(subsets),
            n_examples: Some(n_examples),
            condition: Some(condition),
            oracle: Some(oracle),
            condition_inputs,
            seed: Some(seed),
            both_orders: Some(both_orders),
            batch_size: Some(batch_size),
            bootstrap_resamples: Some(bootstrap_resamples),
            started: Some(started),
            finished,
            resumed,
            control_rows,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A manifest with every optional field set.
    fn full() -> Manifest {
        let at = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
        Manifest {
            run_id: "r".into(),
            code_version: "0.1.0 (abc)".into(),
            model: ModelIdentity {
                spec: "gguf:m.gguf".into(),
                engine: "llama.cpp".into(),
                file_hash: "f".into(),
                chat_template_hash: "t".into(),
                dtype: "Q4_1".into(),
            },
            model_training_condition: Some("none".into()),
            decoding: serde_json::json!({ "verdict": "logprob" }),
            template_hash: "h".into(),
            judge_recipe: Some(serde_json::json!({ "name": "mt-bench" })),
            dataset: "/data".into(),
            dataset_kind: "prb".into(),
            dataset_hash: "d".into(),
            dataset_examples: 12,
            limit_per_subset: Some(2),
            sample_per_subset: Some(3),
            subsets: vec!["Art".into()],
            n_examples: 6,
            condition: "profile:3".into(),
            oracle: false,
            condition_inputs: serde_json::json!({ "k": 3 }),
            seed: 42,
            both_orders: true,
            batch_size: 8,
            bootstrap_resamples: 100,
            started: at("2026-12-01T12:08:14.601407792Z"),
            finished: Some(at("2026-12-01T12:10:15Z")),
            resumed: vec![Resumption {
                at: at("2026-12-01T12:09:00Z"),
                code_version: "0.1.0 (abc)".into(),
            }],
            control_rows: Some("computed".into()),
        }
    }

    /// The partial view reads a complete manifest field for field (the same names), and a
    /// manifest with nothing as nothing.
    #[test]
    fn partial_manifest_reads_every_field_of_a_manifest() {
        let text = serde_json::to_string(&full()).unwrap();
        let read: PartialManifest = serde_json::from_str(&text).unwrap();
        assert_eq!(read, PartialManifest::from(full()));
        assert_eq!(
            serde_json::from_str::<PartialManifest>("{}").unwrap(),
            PartialManifest::default()
        );
        // A field that is there must have its type.
        assert!(serde_json::from_str::<PartialManifest>(r#"{"seed": "42"}"#).is_err());
    }
}
