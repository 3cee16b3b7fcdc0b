//! `build/build.json`: what a build used and what it produced, enough to reproduce it.

use std::collections::BTreeMap;

use prbench_data::export::ExportedConfig;
use prbench_eval::cache::CacheReport;
use prbench_models::ModelIdentity;
use serde::{Deserialize, Serialize};

use crate::settings::BuildSettings;

/// The dataset a build read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputInfo {
    /// The `--data` spec as given.
    pub source: String,
    /// Its kind (`prb`, `psoups`, `lampqa`).
    pub kind: String,
    /// sha256 over the files read (see `prbench_data::Dataset::hash`).
    pub hash: String,
    /// Rows in the dataset as loaded (after `--subset`).
    pub rows: usize,
    /// Rows built (after `--limit`).
    pub built: usize,
    /// `--limit` (rows per subset), if given.
    pub limit: Option<usize>,
}

/// Template hashes of the three prompt sets (sha256 hex of `prompts/build-*`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptHashes {
    /// `build-answer-system.txt` + `build-chosen-user.jinja`.
    pub chosen: String,
    /// `build-answer-system.txt` + `build-rejected-user.jinja`.
    pub rejected: String,
    /// `build-audit-system.txt` + `build-audit-user.jinja`.
    pub audit: String,
}

/// Counts of one subset (or of all, under the name `all`) through the stages.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StageCounts {
    /// Subset name, or `all`.
    pub subset: String,
    /// Examples built.
    pub examples: usize,
    /// Chosen answers usable (generated, non-empty, not truncated).
    pub chosen_ok: usize,
    /// Rejected answers usable.
    pub rejected_ok: usize,
    /// Answers (both sides) that came back empty.
    pub empty: usize,
    /// Answers cut at the token budget.
    pub truncated: usize,
    /// Answers whose generation failed.
    pub failed: usize,
    /// Pairs sent to the audit (both answers usable and within the length rules).
    pub audited: usize,
    /// Audited pairs whose two replies were both read.
    pub audit_parsed: usize,
    /// Audit replies that could not be read (of `2 × audited`).
    pub audit_unparsed_replies: usize,
    /// Audit calls that failed.
    pub audit_failed_calls: usize,
    /// Ratings given without a reason, in read replies.
    pub audit_missing_reasons: usize,
    /// Pairs exported.
    pub kept: usize,
    /// Dropped pairs per reason code (a pair with several reasons counts under each).
    pub dropped_by_reason: BTreeMap<String, usize>,
}

/// Wall time of each stage, in seconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StageTimes {
    /// The `chosen` generations.
    pub chosen: f64,
    /// The `rejected` generations.
    pub rejected: f64,
    /// The audit.
    pub audit: f64,
    /// The whole build, ranking and export included.
    pub total: f64,
}

/// The content of `build/build.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildManifest {
    /// prbench version and git commit.
    pub code_version: String,
    /// Start time (RFC 3339, UTC).
    pub started: String,
    /// End time (RFC 3339, UTC).
    pub finished: String,
    /// The input dataset.
    pub input: InputInfo,
    /// How each profile was ranked for the generator's top-k posts.
    pub retriever: String,
    /// The generator of both answers.
    pub generator: ModelIdentity,
    /// The audit judge; `None` with `skip_audit`.
    pub judge: Option<ModelIdentity>,
    /// Template hashes.
    pub prompts: PromptHashes,
    /// Every setting (seed included).
    pub settings: BuildSettings,
    /// Counts per subset, then `all`.
    pub counts: Vec<StageCounts>,
    /// What the run cache did; `None` without a cache.
    pub cache: Option<CacheReport>,
    /// Wall times.
    pub wall_seconds: StageTimes,
    /// The exported parquet files.
    pub files: Vec<ExportedConfig>,
}
