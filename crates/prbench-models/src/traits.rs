//! One small trait per role (DESIGN.md, core types). Every engine implements the roles it can.

use serde::{Deserialize, Serialize};

use crate::error::ModelError;
use crate::io::{ChatPrompt, ChatRequest, ChatResponse, JudgeRequest, RmRequest, Score, TokenStats};
use crate::verdict::Verdict;

/// What a run manifest records about a backend.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelIdentity {
    /// The spec the user gave (`gguf:PATH`, `baseline:longer`, …).
    pub spec: String,
    /// Engine name and version (e.g. `llama.cpp (llama-cpp-2 0.1.160)`, `baseline`).
    pub engine: String,
    /// sha256 (hex) of the model file, or a repo revision; empty for baselines.
    pub file_hash: String,
    /// sha256 (hex) of the chat template text the engine applies; empty when none.
    pub chat_template_hash: String,
    /// Weight type as loaded (e.g. `Q4_1`), or `n/a`.
    pub dtype: String,
}

/// A pointwise reward model: one scalar per input, higher is better.
pub trait RewardModel: Send + Sync {
    /// Scores each request; the output has the same length and order as `items`.
    ///
    /// # Errors
    /// Engine failures (tokenization, forward pass, I/O) as [`ModelError`].
    fn score(&self, items: &[RmRequest]) -> Result<Vec<Score>, ModelError>;
    /// Identity for the manifest.
    fn identity(&self) -> ModelIdentity;
    /// Settings that change scores (e.g. `{"max_length": 512, "label_index": 0}`), recorded in
    /// the manifest's `decoding` field; `null` when there are none.
    fn settings(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}

/// A pairwise judge: picks slot A or B for each pair.
pub trait Judge: Send + Sync {
    /// Judges each request; the output has the same length and order as `items`.
    ///
    /// # Errors
    /// Engine failures as [`ModelError`]; an unreadable reply is *not* an error but a
    /// [`crate::verdict::Choice::Unparsed`] verdict.
    fn judge(&self, items: &[JudgeRequest]) -> Result<Vec<Verdict>, ModelError>;
    /// Identity for the manifest.
    fn identity(&self) -> ModelIdentity;
    /// Decoding parameters the manifest records (e.g. `{"verdict":"logprob"}`).
    fn decoding(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}

/// A text generator (planner, Best-of-N policy, generate-verdict judge).
pub trait Generator: Send + Sync {
    /// Continues each conversation.
    ///
    /// # Errors
    /// Engine failures as [`ModelError`].
    fn generate(&self, items: &[ChatRequest]) -> Result<Vec<ChatResponse>, ModelError>;
    /// Identity for the manifest.
    fn identity(&self) -> ModelIdentity;
}

/// Next-token log-probabilities after a prompt: the primitive behind logprob verdicts.
pub trait NextTokenScorer: Send + Sync {
    /// For one prompt (rendered with the engine's chat template, `assistant_prefix` appended),
    /// returns the natural-log probability (full-vocabulary log-softmax) of each candidate
    /// continuation string, which must each be exactly one token.
    ///
    /// # Errors
    /// [`ModelError::Candidate`] when a candidate is not a single token; engine failures.
    fn next_token_logprobs(
        &self,
        prompt: &ChatPrompt,
        candidates: &[&str],
    ) -> Result<(Vec<f32>, TokenStats), ModelError>;
    /// Identity for the manifest.
    fn identity(&self) -> ModelIdentity;
}
