//! Text generation.

use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::token::LlamaToken;

use super::forward::prefill;
use super::sampler::{argmax, sample_top_p, SplitMix64};
use super::GgufEngine;
use prbench_models::error::ModelError;
use prbench_models::io::{ChatPrompt, ChatRequest, ChatResponse, TokenStats};
use prbench_models::traits::{Generator, ItemDone, ModelIdentity};

impl GgufEngine {
    /// Continues one conversation; see [`Generator::generate`] for the decoding rules.
    ///
    /// # Errors
    /// [`ModelError::Template`] / [`ModelError::ContextOverflow`] from [`Self::tokenize`];
    /// [`ModelError::Engine`] when llama.cpp fails to decode.
    pub fn generate_one(&self, req: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let tokens = self.tokenize_prompt(&req.prompt)?;
        let mut stats = TokenStats { input_tokens: tokens.len(), ..TokenStats::default() };
        if req.max_new_tokens == 0 {
            return Ok(ChatResponse {
                text: String::new(),
                tokens: stats,
                finish_reason: Some("length".into()),
            });
        }
        let vocab = self.model.vocab();
        let greedy = req.temperature.is_nan() || req.temperature <= 0.0;
        let mut rng = SplitMix64::new(req.seed);

        let mut ctx = self.lock_ctx((tokens.len() + req.max_new_tokens).min(self.n_ctx))?;
        let mut batch = LlamaBatch::new(self.n_batch, 1);
        let mut idx = prefill(&mut ctx, &mut batch, &tokens)?;
        let mut pos = tokens.len();
        let mut out: Vec<LlamaToken> = Vec::new();
        let mut finish = "length";
        loop {
            let logits = ctx.get_logits_ith(idx);
            let next = if greedy {
                argmax(logits)
            } else {
                sample_top_p(logits, req.temperature, req.top_p, &mut rng)
            };
            let next = LlamaToken(next as i32);
            if vocab.is_eog(next) {
                finish = "stop";
                break;
            }
            out.push(next);
            // Stop at the budget, or when the context window is full.
            if out.len() >= req.max_new_tokens || pos >= self.n_ctx {
                break;
            }
            batch.clear();
            batch.add(next, pos as i32, &[0], true).map_err(|e| ModelError::engine("batch", e))?;
            ctx.decode(&mut batch)
                .map_err(|e| ModelError::engine("llama_decode (generation)", e))?;
            idx = 0;
            pos += 1;
        }
        drop(ctx);
        stats.output_tokens = out.len();
        Ok(ChatResponse {
            text: self.detokenize_llama(&out, false),
            tokens: stats,
            finish_reason: Some(finish.into()),
        })
    }
}

impl Generator for GgufEngine {
    /// Continues each conversation, one at a time. `temperature <= 0` (or NaN) decodes
    /// greedily (argmax, lowest id on ties); otherwise tokens are drawn from
    /// softmax(logits / temperature) cut to the `top_p` nucleus, with a PRNG seeded by
    /// `seed`, so equal requests give equal outputs. Generation stops at an end-of-generation
    /// token (EOS, `<|im_end|>`, … — not included in the output), after `max_new_tokens`
    /// tokens, or when the context window is full. The text is detokenized with control
    /// tokens not rendered. `TokenStats`: `input_tokens` = prompt tokens, `output_tokens` =
    /// generated tokens (excluding the stop token); `finish_reason` is `stop` after an
    /// end-of-generation token and `length` when the budget or the context window ran out.
    fn generate(&self, items: &[ChatRequest]) -> Result<Vec<ChatResponse>, ModelError> {
        items.iter().map(|r| self.generate_one(r)).collect()
    }

    /// One request at a time, each reply handed to `done` as soon as it is decoded.
    fn generate_each(
        &self,
        items: &[ChatRequest],
        done: ItemDone<'_, ChatResponse>,
    ) -> Vec<Result<ChatResponse, ModelError>> {
        items
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let reply = self.generate_one(r);
                if let Ok(ok) = &reply {
                    done(i, ok);
                }
                reply
            })
            .collect()
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
