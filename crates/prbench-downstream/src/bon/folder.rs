//! The Best-of-N folder: one sampling run and everything computed from it.
//!
//! ```text
//! <dir>/manifest.json               SamplesManifest: policy, settings, dataset, seed, code version
//! <dir>/samples.jsonl               one BonSample per line
//! <dir>/judgements/<judge>.jsonl    one RubricJudgement per sample, and <judge>.manifest.json
//! <dir>/scores/<model>.jsonl        one BonScore per sample, and <model>.manifest.json
//! <dir>/bon-<judge>.md / .json      the table and the scaling-curve data
//! ```
//!
//! Every judgements and scores manifest records the sha256 of `samples.jsonl` it was computed
//! from; the table refuses files computed from other samples.

use std::path::{Path, PathBuf};

use prbench_models::ModelIdentity;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::error::BonError;
use super::files::read_json;
use super::sample::SampleSettings;

/// What a sampling run was (`<dir>/manifest.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplesManifest {
    /// prbench version and commit.
    pub code_version: String,
    /// Start time, UTC (RFC 3339).
    pub created: String,
    /// Dataset source spec.
    pub dataset: String,
    /// The `--subset` selection the dataset was loaded with (empty: all subsets); the later
    /// stages load the same selection.
    #[serde(default)]
    pub subsets: Vec<String>,
    /// Dataset kind (`prb`, `psoups`, …).
    pub dataset_kind: String,
    /// sha256 over the dataset files.
    pub dataset_hash: String,
    /// The policy.
    pub policy: ModelIdentity,
    /// sha256 of the policy templates.
    pub template_hash: String,
    /// How profile posts were ranked.
    pub retriever: String,
    /// Sampling settings (N, k posts, temperature, top-p, token budget, seed).
    pub settings: SampleSettings,
    /// Examples per subset asked for (`None`: all).
    pub per_subset: Option<usize>,
    /// Only the first example of each question was kept.
    pub distinct_questions: bool,
    /// The sampled example ids, in order.
    pub example_ids: Vec<String>,
}

/// What a judgements or scores file was computed with (`<name>.manifest.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageManifest {
    /// prbench version and commit.
    pub code_version: String,
    /// Start time, UTC (RFC 3339).
    pub created: String,
    /// The judge or reward model.
    pub model: ModelIdentity,
    /// `generate`/`logprob` for a judge or a rating scorer, `reward model` otherwise.
    pub mode: String,
    /// The condition the reward model saw (`none`, `profile:k`, `oracle`); `oracle` for the
    /// rubric judge, which reads the hidden rubric by design.
    pub condition: String,
    /// sha256 of the templates used.
    pub template_hash: String,
    /// sha256 of the `samples.jsonl` this was computed from.
    pub samples_sha256: String,
}

/// Paths inside a BoN folder.
#[derive(Debug, Clone)]
pub struct BonFolder {
    /// The folder.
    pub dir: PathBuf,
}

impl BonFolder {
    /// The folder at `dir` (not checked).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }
    /// `<dir>/manifest.json`.
    pub fn manifest(&self) -> PathBuf {
        self.dir.join("manifest.json")
    }
    /// `<dir>/samples.jsonl`.
    pub fn samples(&self) -> PathBuf {
        self.dir.join("samples.jsonl")
    }
    /// `<dir>/judgements/<name>.jsonl`.
    pub fn judgements(&self, name: &str) -> PathBuf {
        self.dir.join("judgements").join(format!("{name}.jsonl"))
    }
    /// `<dir>/scores/<name>.jsonl`.
    pub fn scores(&self, name: &str) -> PathBuf {
        self.dir.join("scores").join(format!("{name}.jsonl"))
    }
    /// `<dir>/bon-<judge>.md` and `.json`.
    pub fn table(&self, judge: &str) -> (PathBuf, PathBuf) {
        (self.dir.join(format!("bon-{judge}.md")), self.dir.join(format!("bon-{judge}.json")))
    }

    /// The sampling manifest.
    ///
    /// # Errors
    /// [`BonError::File`] when the folder holds no finished sampling run.
    pub fn read_manifest(&self) -> Result<SamplesManifest, BonError> {
        if !self.dir.is_dir() {
            let what = if self.dir.exists() { "a file, not a folder" } else { "no such folder" };
            return Err(BonError::File {
                path: self.dir.display().to_string(),
                line: 0,
                reason: format!("{what}; pass the --out folder of `prbench bon sample`"),
            });
        }
        if !self.samples().is_file() {
            return Err(BonError::File {
                path: self.samples().display().to_string(),
                line: 0,
                reason: "no samples here; run `prbench bon sample --out <dir>` first (or finish it: a killed run resumes from the cache)".into(),
            });
        }
        read_json(&self.manifest())
    }

    /// sha256 (hex) of `samples.jsonl`.
    ///
    /// # Errors
    /// [`BonError::File`] when unreadable.
    pub fn samples_sha256(&self) -> Result<String, BonError> {
        file_sha256(&self.samples())
    }

    /// The names of the stage files (`judgements` or `scores`) present, sorted.
    pub fn stage_names(&self, stage: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.dir.join(stage))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                e.file_name().to_str().and_then(|n| n.strip_suffix(".jsonl")).map(String::from)
            })
            .collect();
        names.sort();
        names
    }

    /// Reads a stage manifest and checks it was computed from this folder's samples.
    ///
    /// # Errors
    /// [`BonError::File`] when missing; [`BonError::Mismatch`] when computed from other samples.
    pub fn checked_stage(&self, stage_file: &Path) -> Result<StageManifest, BonError> {
        let m: StageManifest = read_json(&stage_file.with_extension("manifest.json"))?;
        let now = self.samples_sha256()?;
        if m.samples_sha256 != now {
            return Err(BonError::Mismatch {
                what: format!("`{}`", stage_file.display()),
                reason: "it was computed from other samples than this folder's samples.jsonl; delete it and run that stage again".into(),
            });
        }
        Ok(m)
    }
}

/// A file name for a model spec: for a spec with a path (`gguf:`, `bt:`, `dir:`) its kind and
/// the last path component (without `.gguf`), otherwise the whole spec; lower-case letters,
/// digits, `-`, `.` and `_` kept, everything else `-`, runs of `-` collapsed, at most 80
/// characters (e.g. `gguf:/x/SmolLM2.Q4_1.gguf` → `gguf-smollm2.q4_1`).
pub fn name_for(spec: &str) -> String {
    let short = match spec.split_once(':') {
        Some((kind @ ("gguf" | "bt" | "dir"), path)) => {
            let last = std::path::Path::new(path.trim_end_matches('/'))
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or(path);
            format!("{kind}-{}", last.strip_suffix(".gguf").unwrap_or(last))
        }
        _ => spec.to_string(),
    };
    let mut out = String::new();
    for c in short.chars().flat_map(char::to_lowercase) {
        let c = if c.is_ascii_alphanumeric() || matches!(c, '.' | '_') { c } else { '-' };
        if !(c == '-' && out.ends_with('-')) {
            out.push(c);
        }
    }
    let t = out.trim_matches('-');
    t.chars().take(80).collect()
}

/// Checks a `--name` for a judgements or scores file: letters, digits, `.`, `_` and `-` only
/// (no path separators), not starting with `.`, at most 100 characters.
///
/// # Errors
/// [`BonError::Mismatch`] saying what is allowed.
pub fn check_name(name: &str) -> Result<(), BonError> {
    let ok = !name.is_empty()
        && name.len() <= 100
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(BonError::Mismatch {
            what: format!("--name `{name}`"),
            reason: "a file name of letters, digits, `.`, `_` and `-` (no `/`, not starting with `.`, at most 100 characters)".into(),
        })
    }
}

/// sha256 (hex) of a file's bytes.
///
/// # Errors
/// [`BonError::File`] when unreadable.
pub fn file_sha256(path: &Path) -> Result<String, BonError> {
    let bytes = std::fs::read(path).map_err(|e| BonError::File {
        path: path.display().to_string(),
        line: 0,
        reason: e.to_string(),
    })?;
    Ok(hex::encode(Sha256::digest(&bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_file_safe() {
        assert_eq!(name_for("gguf:/x/SmolLM2.Q4_1.gguf"), "gguf-smollm2.q4_1");
        assert_eq!(name_for("bt:runs/bt-none/"), "bt-bt-none");
        assert_eq!(name_for("hf:Org/RM-7B@main"), "hf-org-rm-7b-main");
        assert_eq!(name_for("baseline:longer"), "baseline-longer");
        assert_eq!(name_for("openai:gpt@http://h:8/v1"), "openai-gpt-http-h-8-v1");
        assert_eq!(name_for(&"a".repeat(100)).len(), 80);
        assert!(check_name("smol-1.q4_1").is_ok());
        for bad in ["../x", "a/b", "", ".hidden", "a b"] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
