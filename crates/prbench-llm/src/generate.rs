//! Text generation.

use llama_cpp_2::llama_batch::LlamaBatch;

use super::batch::{self, LlamaSteps, Pending};
use super::decoding::Decoding;
use super::forward::prefill;
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
        let stats = TokenStats { input_tokens: tokens.len(), ..TokenStats::default() };
        let mut dec = Decoding::new(req, tokens.len());
        if dec.finish.is_some() {
            return Ok(self.response(stats, &dec));
        }
        let vocab = self.model.vocab();
        let mut ctx = self.lock_ctx((tokens.len() + req.max_new_tokens).min(self.n_ctx))?;
        let mut batch = LlamaBatch::new(self.n_batch, 1);
        let mut idx = prefill(&mut ctx, &mut batch, &tokens)?;
        while let Some((next, pos)) =
            dec.step(ctx.get_logits_ith(idx), |t| vocab.is_eog(t), self.n_ctx)
        {
            batch.clear();
            batch.add(next, pos as i32, &[0], true).map_err(|e| ModelError::engine("batch", e))?;
            ctx.decode(&mut batch)
                .map_err(|e| ModelError::engine("llama_decode (generation)", e))?;
            idx = 0;
        }
        drop(ctx);
        Ok(self.response(stats, &dec))
    }

    /// Continues each conversation with up to [`Self::gen_batch`] decoded together, each
    /// request on its own KV stream with its own sampler (`batch.rs`); `done` gets each
    /// reply as soon as its sequence stops. The decoding rules are
    /// [`Generator::generate`]'s. A prompt that does not render or fit fails alone; if a
    /// batched decode step fails, the requests not yet finished are decoded one at a time, so
    /// each gets its own result or error.
    pub fn generate_batched(
        &self,
        items: &[ChatRequest],
        done: ItemDone<'_, ChatResponse>,
    ) -> Vec<Result<ChatResponse, ModelError>> {
        let mut results: Vec<Option<Result<ChatResponse, ModelError>>> =
            items.iter().map(|_| None).collect();
        let mut pending = Vec::new();
        let mut stats = vec![TokenStats::default(); items.len()];
        for (i, req) in items.iter().enumerate() {
            match self.tokenize_prompt(&req.prompt) {
                Err(e) => results[i] = Some(Err(e)),
                Ok(tokens) => {
                    stats[i].input_tokens = tokens.len();
                    let decoding = Decoding::new(req, tokens.len());
                    if decoding.finish.is_some() {
                        let reply = self.response(stats[i], &decoding);
                        done(i, &reply);
                        results[i] = Some(Ok(reply));
                    } else {
                        pending.push(Pending { item: i, tokens, decoding });
                    }
                }
            }
        }
        if !pending.is_empty() {
            let need = pending
                .iter()
                .map(|p| (p.tokens.len() + items[p.item].max_new_tokens).min(self.n_ctx))
                .max()
                .unwrap_or(1);
            let slots = self.gen_batch().min(pending.len());
            let vocab = self.model.vocab();
            let outcome = self.lock_gen_ctx(need, slots).and_then(|mut guard| {
                let g = guard.as_mut().expect("lock_gen_ctx made the context");
                let n_batch = g.ctx.n_batch() as usize;
                let mut steps = LlamaSteps { ctx: &mut g.ctx, batch: LlamaBatch::new(n_batch, 1) };
                batch::run(
                    &mut steps,
                    pending,
                    slots,
                    &|t| vocab.is_eog(t),
                    self.n_ctx,
                    &mut |item, dec| {
                        let reply = self.response(stats[item], &dec);
                        done(item, &reply);
                        results[item] = Some(Ok(reply));
                    },
                )
            });
            if outcome.is_err() {
                for (i, slot) in results.iter_mut().enumerate().filter(|(_, r)| r.is_none()) {
                    *slot = Some(self.generate_one(&items[i]));
                }
            }
        }
        results.into_iter().map(|r| r.expect("every request has a result")).collect()
    }

    /// The reply of a finished sequence.
    pub(super) fn response(&self, mut stats: TokenStats, dec: &Decoding) -> ChatResponse {
        stats.output_tokens = dec.out.len();
        if let Some(at) = dec.first_token_at {
            let mut g = self.first_tokens.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(v) = g.as_mut() {
                v.push(at);
            }
        }
        ChatResponse {
            text: self.detokenize_llama(&dec.out, false),
            tokens: stats,
            finish_reason: dec.finish.map(String::from),
        }
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
    ///
    /// With [`GgufEngine::gen_batch`] > 1, up to that many requests are decoded together (see
    /// [`GgufEngine::generate_batched`]).
    fn generate(&self, items: &[ChatRequest]) -> Result<Vec<ChatResponse>, ModelError> {
        self.generate_each(items, &|_, _| {}).into_iter().collect()
    }

    /// Each reply handed to `done` as soon as it is decoded: one request at a time, or, with
    /// [`GgufEngine::gen_batch`] > 1, up to that many together.
    fn generate_each(
        &self,
        items: &[ChatRequest],
        done: ItemDone<'_, ChatResponse>,
    ) -> Vec<Result<ChatResponse, ModelError>> {
        if self.gen_batch() > 1 && items.len() > 1 {
            return self.generate_batched(items, done);
        }
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

    /// [`GgufEngine::identity`]; with [`GgufEngine::gen_batch`] > 1 the engine string also
    /// names the batch size, so generations decoded in batches are cached and recorded apart
    /// from one-at-a-time ones: llama.cpp's CPU kernels for some weight types (measured on
    /// Q4_K_M) compute a token decoded beside others with another matrix kernel than a token
    /// decoded alone, and greedy outputs then diverge (docs/perf.md).
    fn identity(&self) -> ModelIdentity {
        let mut id = GgufEngine::identity(self);
        if self.gen_batch() > 1 {
            id.engine += &format!(", batched decoding of up to {} sequences", self.gen_batch());
        }
        id
    }
}
