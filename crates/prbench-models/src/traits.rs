//! One small trait per role (docs/ARCHITECTURE.md, "Role traits"). Every engine implements the
//! roles it can.

use serde::{Deserialize, Serialize};

use crate::error::ModelError;
use crate::io::{
    CallStats, ChatPrompt, ChatRequest, ChatResponse, JudgeRequest, RmRequest, Score, TokenStats,
};
use crate::verdict::Verdict;

/// What a run manifest records about a backend.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelIdentity {
    /// The spec the user gave (`gguf:PATH`, `baseline:longer`, …).
    pub spec: String,
    /// Engine name and version (e.g. `llama.cpp (llama-cpp-2 0.1.160)`, `baseline`).
    pub engine: String,
    /// sha256 (hex) of the model file, or a repo revision; for remote engines the model name
    /// sent to the server (`openai:`, `vllm-classify:`) or the server URL (`reward-server:`);
    /// empty for baselines. Part of every cache key.
    pub file_hash: String,
    /// sha256 (hex) of the chat template text the engine applies; empty when none.
    pub chat_template_hash: String,
    /// Weight type as loaded (e.g. `Q4_1`), or `n/a`.
    pub dtype: String,
}

/// Called once per item as soon as that item's result exists: `(index into the request slice,
/// result)`. It may run on another thread than the caller and before the batch call returns; a
/// cache uses it to keep every finished (possibly paid) call when a run is killed mid-batch.
pub type ItemDone<'a, T> = &'a (dyn Fn(usize, &T) + Sync);

/// Runs `whole` on all `items`; if it fails, or returns the wrong number of results, runs it
/// again on each item alone, so one failing item costs only itself. Calls `done` for each
/// success. The fallback behind [`RewardModel::score_each`] and [`Judge::judge_each`].
pub fn each_with_fallback<I, T>(
    items: &[I],
    done: ItemDone<'_, T>,
    whole: impl Fn(&[I]) -> Result<Vec<T>, ModelError>,
) -> Vec<Result<T, ModelError>> {
    let results: Vec<Result<T, ModelError>> = match whole(items) {
        Ok(v) if v.len() == items.len() => v.into_iter().map(Ok).collect(),
        first => {
            if items.len() == 1 {
                vec![match first {
                    Ok(v) => Err(ModelError::Engine(format!(
                        "backend returned {} results for 1 input",
                        v.len()
                    ))),
                    Err(e) => Err(e),
                }]
            } else {
                items
                    .iter()
                    .map(|item| match whole(std::slice::from_ref(item)) {
                        Ok(mut v) if v.len() == 1 => Ok(v.pop().expect("one result")),
                        Ok(v) => Err(ModelError::Engine(format!(
                            "backend returned {} results for 1 input",
                            v.len()
                        ))),
                        Err(e) => Err(e),
                    })
                    .collect()
            }
        }
    };
    for (i, r) in results.iter().enumerate() {
        if let Ok(t) = r {
            done(i, t);
        }
    }
    results
}

/// A pointwise reward model: one scalar per input, higher is better.
pub trait RewardModel: Send + Sync {
    /// Scores each request; the output has the same length and order as `items`.
    ///
    /// # Errors
    /// Engine failures (tokenization, forward pass, I/O) as [`ModelError`].
    fn score(&self, items: &[RmRequest]) -> Result<Vec<Score>, ModelError>;
    /// Scores each request on its own account: one result per item, in order, and `done` called
    /// for every success as soon as it exists. An item that fails (after the engine's own
    /// retries) is an `Err` in its place; the others still get scores.
    ///
    /// The default runs [`RewardModel::score`] on the slice and, if that fails, on each item
    /// alone ([`each_with_fallback`]); remote engines override it to run items concurrently.
    fn score_each(
        &self,
        items: &[RmRequest],
        done: ItemDone<'_, Score>,
    ) -> Vec<Result<Score, ModelError>> {
        each_with_fallback(items, done, |xs| self.score(xs))
    }
    /// How many tokens `item` is over this engine's input limit (0 when it fits), before any
    /// truncation; `None` when the engine cannot tell (remote engines, baselines). The runner
    /// uses it to drop the lowest-ranked profile posts until an input fits.
    ///
    /// # Errors
    /// Tokenization or template failures as [`ModelError`].
    fn input_overflow(&self, _item: &RmRequest) -> Result<Option<usize>, ModelError> {
        Ok(None)
    }
    /// Identity for the manifest.
    fn identity(&self) -> ModelIdentity;
    /// False when results cost nothing to recompute (control baselines): the run cache skips them.
    fn cacheable(&self) -> bool {
        true
    }
    /// Counters since load for remote engines (requests, retries, failures, server-reported
    /// tokens); `None` for in-process engines.
    fn call_stats(&self) -> Option<CallStats> {
        None
    }
    /// Settings that change scores (e.g. `{"max_length": 512, "label_index": 0}`), recorded in
    /// the manifest's `decoding` field; `null` when there are none.
    fn settings(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
    /// The evaluation condition (`none`, `profile:2`, `oracle`) whose inputs this model was
    /// trained on, for models prbench trains (`bt:`, `pal:`); recorded in the manifest's
    /// `model_training_condition` so a run under another condition says so. `None` for models
    /// trained elsewhere, whose training inputs prbench does not know.
    fn training_condition(&self) -> Option<String> {
        None
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
    /// Judges each request on its own account: one result per item, in order, and `done` called
    /// for every verdict as soon as it exists. An item that fails (after the engine's own
    /// retries) is an `Err` in its place; an unreadable reply is still an `Ok` verdict
    /// ([`crate::verdict::Choice::Unparsed`]).
    ///
    /// The default runs [`Judge::judge`] on the slice and, if that fails, on each item alone
    /// ([`each_with_fallback`]); remote engines override it to run items concurrently.
    fn judge_each(
        &self,
        items: &[JudgeRequest],
        done: ItemDone<'_, Verdict>,
    ) -> Vec<Result<Verdict, ModelError>> {
        each_with_fallback(items, done, |xs| self.judge(xs))
    }
    /// How many tokens `item` is over this engine's input limit (0 when it fits), before any
    /// truncation; `None` when the engine cannot tell (remote engines, baselines). The runner
    /// uses it to drop the lowest-ranked profile posts until an input fits.
    ///
    /// # Errors
    /// Tokenization or template failures as [`ModelError`].
    fn input_overflow(&self, _item: &JudgeRequest) -> Result<Option<usize>, ModelError> {
        Ok(None)
    }
    /// Identity for the manifest.
    fn identity(&self) -> ModelIdentity;
    /// False when verdicts cost nothing to recompute (control baselines): the run cache skips them.
    fn cacheable(&self) -> bool {
        true
    }
    /// Counters since load for remote engines (requests, retries, failures, server-reported
    /// tokens); `None` for in-process engines.
    fn call_stats(&self) -> Option<CallStats> {
        None
    }
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
    /// Continues each conversation on its own account: one result per item, in order, and
    /// `done` called for every reply as soon as it exists (a cache stores it then, so a killed
    /// run keeps it). An item that fails (after the engine's own retries) is an `Err` in its
    /// place. The default runs [`Generator::generate`] on the slice and, if that fails, on each
    /// item alone ([`each_with_fallback`]); engines that retry per item override it so a
    /// failing item is not retried twice.
    fn generate_each(
        &self,
        items: &[ChatRequest],
        done: ItemDone<'_, ChatResponse>,
    ) -> Vec<Result<ChatResponse, ModelError>> {
        each_with_fallback(items, done, |xs| self.generate(xs))
    }
    /// How many tokens `prompt` (rendered as this engine feeds it) plus `reserve` more
    /// (tokens to generate) is over the context window (0 when it fits); `None` when the engine
    /// cannot tell.
    ///
    /// # Errors
    /// Template failures as [`ModelError`].
    fn prompt_overflow(
        &self,
        _prompt: &ChatPrompt,
        _reserve: usize,
    ) -> Result<Option<usize>, ModelError> {
        Ok(None)
    }
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
    /// [`Self::next_token_logprobs`] for each of `prompts`, in order: one `(log-probabilities
    /// [candidates.len()], TokenStats)` per prompt. Engines that can share work between
    /// prompts override it (the GGUF engine decodes a common token prefix once, e.g. the two
    /// orders of one judge pair); an override must agree with scoring each prompt alone up to
    /// floating-point summation order, and report each prompt's full length as its
    /// `input_tokens`. The default scores each prompt alone.
    ///
    /// # Errors
    /// As [`Self::next_token_logprobs`]; the first failing prompt fails the whole call.
    fn next_token_logprobs_many(
        &self,
        prompts: &[&ChatPrompt],
        candidates: &[&str],
    ) -> Result<Vec<(Vec<f32>, TokenStats)>, ModelError> {
        prompts.iter().map(|p| self.next_token_logprobs(p, candidates)).collect()
    }
    /// How many tokens `prompt` (rendered as this engine feeds it) plus `reserve` more
    /// (tokens to generate) is over the context window (0 when it fits); `None` when the engine
    /// cannot tell.
    ///
    /// # Errors
    /// Template failures as [`ModelError`].
    fn prompt_overflow(
        &self,
        _prompt: &ChatPrompt,
        _reserve: usize,
    ) -> Result<Option<usize>, ModelError> {
        Ok(None)
    }
    /// Identity for the manifest.
    fn identity(&self) -> ModelIdentity;
}

/// A borrowed engine is an engine (e.g. one `GgufEngine` behind both a logprob and a generate
/// judge).
impl<T: NextTokenScorer + ?Sized> NextTokenScorer for &T {
    fn next_token_logprobs(
        &self,
        prompt: &ChatPrompt,
        candidates: &[&str],
    ) -> Result<(Vec<f32>, TokenStats), ModelError> {
        (**self).next_token_logprobs(prompt, candidates)
    }
    fn next_token_logprobs_many(
        &self,
        prompts: &[&ChatPrompt],
        candidates: &[&str],
    ) -> Result<Vec<(Vec<f32>, TokenStats)>, ModelError> {
        (**self).next_token_logprobs_many(prompts, candidates)
    }
    fn prompt_overflow(
        &self,
        prompt: &ChatPrompt,
        reserve: usize,
    ) -> Result<Option<usize>, ModelError> {
        (**self).prompt_overflow(prompt, reserve)
    }
    fn identity(&self) -> ModelIdentity {
        (**self).identity()
    }
}

/// A borrowed generator is a generator.
impl<T: Generator + ?Sized> Generator for &T {
    fn generate(&self, items: &[ChatRequest]) -> Result<Vec<ChatResponse>, ModelError> {
        (**self).generate(items)
    }
    fn generate_each(
        &self,
        items: &[ChatRequest],
        done: ItemDone<'_, ChatResponse>,
    ) -> Vec<Result<ChatResponse, ModelError>> {
        (**self).generate_each(items, done)
    }
    fn prompt_overflow(
        &self,
        prompt: &ChatPrompt,
        reserve: usize,
    ) -> Result<Option<usize>, ModelError> {
        (**self).prompt_overflow(prompt, reserve)
    }
    fn identity(&self) -> ModelIdentity {
        (**self).identity()
    }
}

/// How two embeddings of an [`Embedder`] are compared, as the model's card prescribes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Similarity {
    /// Cosine similarity (for an L2-normalised embedder this equals the dot product).
    Cosine,
    /// Raw dot product (e.g. Contriever: mean pooling, no normalisation).
    Dot,
}

impl Similarity {
    /// The similarity of `a` and `b` (same length). Cosine of a zero vector is 0.
    ///
    /// # Panics
    /// If the lengths differ (a programming error: both come from one embedder).
    pub fn score(self, a: &[f32], b: &[f32]) -> f32 {
        assert_eq!(a.len(), b.len(), "embeddings of different dimension");
        let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        match self {
            Similarity::Dot => dot,
            Similarity::Cosine => {
                let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
                let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
                if na == 0.0 || nb == 0.0 {
                    0.0
                } else {
                    dot / (na * nb)
                }
            }
        }
    }
}

/// One text's embedding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Embedding {
    /// The vector, `[dim]`.
    pub vector: Vec<f32>,
    /// Tokens cut from the end of the text because it exceeded the encoder's maximum length
    /// (0 when it fit); counted and reported by callers, never silent.
    pub truncated_tokens: usize,
}

/// A sentence embedder (dense retrieval, planner quality).
pub trait Embedder: Send + Sync {
    /// Embeds each text; the output has the same length and order as `texts`, each vector
    /// `[dim]`.
    ///
    /// # Errors
    /// Engine failures (tokenization, forward pass) as [`ModelError`].
    fn embed(&self, texts: &[&str]) -> Result<Vec<Embedding>, ModelError>;
    /// How this model's embeddings are compared.
    fn similarity(&self) -> Similarity;
    /// Identity for the manifest and the embedding cache key.
    fn identity(&self) -> ModelIdentity;
}
