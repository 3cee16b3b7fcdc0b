//! Prefill and the next-token log-probability primitive.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::token::LlamaToken;

use super::GgufEngine;
use prbench_models::error::ModelError;
use prbench_models::io::{ChatPrompt, TokenStats};
use prbench_models::traits::{ModelIdentity, NextTokenScorer};

pub(super) fn engine_err(what: &str, e: impl Into<prbench_models::BoxError>) -> ModelError {
    ModelError::engine(what, e)
}

/// Clears the KV cache and decodes `tokens` from position 0 on sequence 0 ([`prefill_seq`]).
/// Returns the batch index to pass to `get_logits_ith` for the last token's logits.
pub(super) fn prefill(
    ctx: &mut LlamaContext<'_>,
    batch: &mut LlamaBatch<'_>,
    tokens: &[LlamaToken],
) -> Result<i32, ModelError> {
    ctx.clear_kv_cache();
    prefill_seq(ctx, batch, 0, tokens)
}

/// Decodes `tokens` from position 0 on sequence `seq` (whose cache must be empty) in chunks of
/// the context's `n_batch`, asking for logits at the last token only ([`decode_seq`]). Returns
/// the batch index to pass to `get_logits_ith` for the last token's logits.
///
/// # Errors
/// [`ModelError::Engine`] for an empty prompt or when llama.cpp fails to decode.
pub(super) fn prefill_seq(
    ctx: &mut LlamaContext<'_>,
    batch: &mut LlamaBatch<'_>,
    seq: i32,
    tokens: &[LlamaToken],
) -> Result<i32, ModelError> {
    decode_seq(ctx, batch, seq, tokens, 0)
}

/// Decodes `tokens` on sequence `seq` at positions `start..` (the cache holding positions
/// `0..start` of the same sequence), in chunks of the context's `n_batch`, asking for logits
/// at the last token only. Returns the batch index to pass to `get_logits_ith` for the last
/// token's logits.
///
/// # Errors
/// [`ModelError::Engine`] for no tokens or when llama.cpp fails to decode.
pub(super) fn decode_seq(
    ctx: &mut LlamaContext<'_>,
    batch: &mut LlamaBatch<'_>,
    seq: i32,
    tokens: &[LlamaToken],
    start: usize,
) -> Result<i32, ModelError> {
    let n_batch = ctx.n_batch() as usize;
    if tokens.is_empty() {
        return Err(ModelError::Engine("cannot run the model on an empty prompt".into()));
    }
    let n = tokens.len();
    let mut last_idx = 0;
    for (ci, chunk) in tokens.chunks(n_batch).enumerate() {
        batch.clear();
        let base = ci * n_batch;
        for (j, &t) in chunk.iter().enumerate() {
            let is_last = base + j + 1 == n;
            (batch.add(t, (start + base + j) as i32, &[seq], is_last))
                .map_err(|e| engine_err("batch", e))?;
        }
        ctx.decode(batch).map_err(|e| engine_err("llama_decode (prefill)", e))?;
        last_idx = chunk.len() as i32 - 1;
    }
    Ok(last_idx)
}

/// log Σ exp(logits), in f64.
pub(super) fn log_sum_exp(logits: &[f32]) -> f64 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let sum: f64 = logits.iter().map(|&l| (l as f64 - max).exp()).sum();
    max + sum.ln()
}

/// Natural-log probabilities of `candidates` under the full-vocabulary log-softmax of `logits`
/// (`[n_vocab]`), computed in f64.
pub(super) fn logprobs_of(logits: &[f32], candidates: &[LlamaToken]) -> Vec<f32> {
    let lse = log_sum_exp(logits);
    candidates.iter().map(|t| (logits[t.0 as usize] as f64 - lse) as f32).collect()
}

impl GgufEngine {
    /// Runs one forward pass over `tokens` and returns the last position's logits (length
    /// [`Self::n_vocab`], raw unnormalised scores).
    ///
    /// # Errors
    /// [`ModelError::ContextOverflow`] when `tokens` exceeds [`Self::n_ctx`]; decode failures.
    pub fn last_logits(&self, tokens: &[i32]) -> Result<Vec<f32>, ModelError> {
        if tokens.len() > self.n_ctx {
            return Err(ModelError::ContextOverflow {
                tokens: tokens.len(),
                n_ctx: self.n_ctx,
                reason: "the token sequence is longer than the context window".into(),
            });
        }
        let n_vocab = self.model.n_vocab();
        if let Some(bad) = tokens.iter().find(|&&t| t < 0 || t >= n_vocab) {
            return Err(ModelError::Engine(format!("token id {bad} is outside the vocabulary")));
        }
        let toks: Vec<LlamaToken> = tokens.iter().map(|&t| LlamaToken(t)).collect();
        let mut ctx = self.lock_ctx(toks.len())?;
        let mut batch = LlamaBatch::new(self.n_batch, 1);
        let idx = prefill(&mut ctx, &mut batch, &toks)?;
        Ok(ctx.get_logits_ith(idx).to_vec())
    }
}

impl NextTokenScorer for GgufEngine {
    /// One forward pass over the tokenized prompt (see [`GgufEngine::tokenize`]); returns,
    /// per candidate, the natural-log probability of its single token at the next position
    /// (full-vocabulary log-softmax computed in f64), and `TokenStats` with `input_tokens`
    /// = prompt tokens.
    fn next_token_logprobs(
        &self,
        prompt: &ChatPrompt,
        candidates: &[&str],
    ) -> Result<(Vec<f32>, TokenStats), ModelError> {
        let cand_tokens =
            candidates.iter().map(|c| self.candidate_token(c)).collect::<Result<Vec<_>, _>>()?;
        let tokens = self.tokenize_prompt(prompt)?;
        let mut ctx = self.lock_ctx(tokens.len())?;
        let mut batch = LlamaBatch::new(self.n_batch, 1);
        let idx = prefill(&mut ctx, &mut batch, &tokens)?;
        let logprobs = logprobs_of(ctx.get_logits_ith(idx), &cand_tokens);
        let stats = TokenStats { input_tokens: tokens.len(), ..TokenStats::default() };
        Ok((logprobs, stats))
    }

    /// With [`GgufEngine::share_prefix`] on (the default), each prompt keeps the KV cells of
    /// the tokens it begins with in common with the prompt scored before it (in this call or
    /// an earlier one; [`GgufEngine::keep_prefix`]) and decodes only the rest, bit-identical to
    /// scoring it alone (see `fork.rs`); off, each prompt is scored alone as
    /// [`NextTokenScorer::next_token_logprobs`]. `input_tokens` is each prompt's full length
    /// either way; the tokens not recomputed are counted in
    /// [`GgufEngine::shared_prefix_tokens`].
    fn next_token_logprobs_many(
        &self,
        prompts: &[&ChatPrompt],
        candidates: &[&str],
    ) -> Result<Vec<(Vec<f32>, TokenStats)>, ModelError> {
        if self.share_prefix() {
            self.logprobs_shared(prompts, candidates)
        } else {
            prompts.iter().map(|p| self.next_token_logprobs(p, candidates)).collect()
        }
    }

    fn prompt_overflow(
        &self,
        prompt: &ChatPrompt,
        reserve: usize,
    ) -> Result<Option<usize>, ModelError> {
        self.overflow(prompt, reserve).map(Some)
    }

    fn identity(&self) -> ModelIdentity {
        GgufEngine::identity(self)
    }
}

#[cfg(test)]
mod tests {
    use super::log_sum_exp;

    #[test]
    fn lse_is_stable() {
        let l = [1000.0f32, 1000.0];
        assert!((log_sum_exp(&l) - (1000.0 + 2f64.ln())).abs() < 1e-9);
        let l = [0.0f32, f32::NEG_INFINITY];
        assert!(log_sum_exp(&l).abs() < 1e-12);
    }
}
