//! A `prbench build` output folder's manifest, `build/build.json` ([`MANIFEST_FILE`]): what a
//! build used and what it produced, enough to reproduce it. `prbench-build` computes and writes
//! it; the report reads it to describe the folder beside its `build-report.md`
//! ([`REPORT_FILE`]).

use std::collections::BTreeMap;

use prbench_data::export::ExportedConfig;
use prbench_models::ModelIdentity;
use serde::{Deserialize, Serialize};

use crate::CacheReport;

/// The manifest, relative to the build's output folder.
pub const MANIFEST_FILE: &str = "build/build.json";
/// The build's own report (Markdown), relative to the output folder.
pub const REPORT_FILE: &str = "build-report.md";

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
///
/// Builds before the chosen and rejected answers were generated side by side timed the two
/// apart (`chosen`, `rejected`); such a `build.json` still reads, with `answers` their sum.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "StageTimesFile")]
pub struct StageTimes {
    /// The answers, chosen and rejected together.
    pub answers: f64,
    /// The audit.
    pub audit: f64,
    /// The whole build, ranking and export included.
    pub total: f64,
}

/// [`StageTimes`] as either form of `build.json` has it.
#[derive(Deserialize)]
struct StageTimesFile {
    answers: Option<f64>,
    chosen: Option<f64>,
    rejected: Option<f64>,
    audit: f64,
    total: f64,
}

impl TryFrom<StageTimesFile> for StageTimes {
    type Error = String;
    fn try_from(f: StageTimesFile) -> Result<Self, String> {
        let answers = match (f.answers, f.chosen, f.rejected) {
            (Some(a), _, _) => a,
            (None, Some(c), Some(r)) => c + r,
            _ => {
                return Err("`wall_seconds` needs `answers` (or, from older builds, `chosen` \
                            and `rejected`)"
                    .into())
            }
        };
        Ok(Self { answers, audit: f.audit, total: f.total })
    }
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

/// Everything that decides what a build generates and keeps. Recorded in `build.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildSettings {
    /// Profile posts shown to the generator: the top k by the ranking (as for `profile:k`),
    /// fewer when the profile is shorter or posts were dropped to fit the context. Default 10.
    pub k_posts: usize,
    /// Word limit told to the generator and checked by the filter (whitespace-separated
    /// words). Default 100, the paper's limit.
    pub max_words: usize,
    /// New-token budget of each answer. A reply that uses it up is truncated and never
    /// exported. Default 256 (about 190 words of English).
    pub max_new_tokens: usize,
    /// Sampling temperature of the answers (0 = greedy). Default 0.7.
    pub temperature: f32,
    /// Nucleus mass of the answers. Default 0.95.
    pub top_p: f32,
    /// New-token budget of each audit reply (nine lines with reasons). Default 400.
    pub audit_max_new_tokens: usize,
    /// Run seed: each answer's sampling seed is prbench-build's `seeds::answer_seed` of it.
    pub seed: u64,
    /// Keep a pair only if the audit's rubric fit of chosen minus that of rejected is at least
    /// this (on the 1–5 scale, mean of the two orders). Default 2.
    pub min_fit_gap: f64,
    /// Keep a pair only if, on each general dimension (factuality, relevance, helpfulness),
    /// the audit's scores of chosen and rejected differ by at most this. Default 1.
    pub max_quality_gap: f64,
    /// Keep a pair only if the longer answer has at most this many times the words of the
    /// shorter. Default 1.5.
    pub max_length_ratio: f64,
    /// Skip the audit: prbench-build's `settings::SKIP_AUDIT_RULE` says what is then dropped;
    /// the card says so.
    pub skip_audit: bool,
    /// Requests per backend call (progress is reported after each call). Default 8.
    pub batch: usize,
}

impl Default for BuildSettings {
    fn default() -> Self {
        Self {
            k_posts: 10,
            max_words: 100,
            max_new_tokens: 256,
            temperature: 0.7,
            top_p: 0.95,
            audit_max_new_tokens: 400,
            seed: 0,
            min_fit_gap: 2.0,
            max_quality_gap: 1.0,
            max_length_ratio: 1.5,
            skip_audit: false,
            batch: 8,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::StageTimes;

    #[test]
    fn stage_times_read_both_forms_of_build_json() {
        let now: StageTimes =
            serde_json::from_str(r#"{"answers": 7.5, "audit": 2.0, "total": 10.0}"#).unwrap();
        assert_eq!(now, StageTimes { answers: 7.5, audit: 2.0, total: 10.0 });
        // Written back, it reads the same.
        let again: StageTimes =
            serde_json::from_str(&serde_json::to_string(&now).unwrap()).unwrap();
        assert_eq!(again, now);
        // An older build timed the two sides apart: 3.25 + 4.5 s.
        let old: StageTimes = serde_json::from_str(
            r#"{"chosen": 3.25, "rejected": 4.5, "audit": 2.0, "total": 10.0}"#,
        )
        .unwrap();
        assert_eq!(old.answers, 7.75);
        // Neither form: refused, not read as 0 s.
        let err =
            serde_json::from_str::<StageTimes>(r#"{"chosen": 3.0, "audit": 2.0, "total": 10.0}"#)
                .unwrap_err()
                .to_string();
        assert!(err.contains("`wall_seconds` needs `answers`"), "{err}");
    }
}
