//! The build's settings and their defaults (the paper's construction).

use serde::{Deserialize, Serialize};

/// What skipping the audit (`--skip-audit`) keeps, in the words the command's help, the dataset
/// card, the build report and the guide (`docs/guide/src/build.md`) all use (the filter's
/// `pre_audit` is the code it describes).
pub const SKIP_AUDIT_RULE: &str = "only pairs with a failed, empty or truncated answer, or with two identical answers, are dropped; the word limit (--max-words), the length ratio (--max-length-ratio) and the audit's checks are not applied";

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
    /// Run seed: each answer's sampling seed is [`crate::seeds::answer_seed`] of it.
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
    /// Skip the audit: [`SKIP_AUDIT_RULE`]; the card says so.
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

/// Whitespace-separated words of `text`: the unit of `max_words` and of the length ratio.
pub fn word_count(text: &str) -> usize {
    text.split_whitespace().count()
}
