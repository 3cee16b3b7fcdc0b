//! Text generation.

use std::sync::atomic::Ordering;

use llama_cpp_2::llama_batch::LlamaBatch;

use super::batch::{self, LlamaSteps, Pending};
use super::decoding::Decoding;
use super::GgufEngine;
use prbench_models::error::ModelError;
use prbench_models::io::{ChatPrompt, ChatRequest, ChatResponse, TokenStats};
use prbench_models::traits::{Generator, ItemDone, ModelIdentity};

impl GgufEngine {
    /// Continues one conversation; see [`Generator::generate`] for the decoding rules. The
    /// same decoding as a request among others in [`Self::generate_batched`], with one slot.
    ///
    /// # Errors
    /// [`ModelError::Template`] / [`ModelError::ContextOverflow`] from [`Self::tokenize`];
    /// [`ModelError::Engine`] when llama.cpp fails to decode.
    pub fn generate_one(&self, req: &ChatRequest) -> Result<ChatResponse, ModelError> {
        self.generate_batched(std::slice::from_ref(req), &|_, _| {}, 1)
            .pop()
            .expect("one result per request")
    }

    /// Continues each conversation with up to `slots` decoded together, each request on its
    /// own KV stream with its own sampler, a prompt already held by a slot not decoded again
    /// (`batch.rs`); `done` gets each reply as soon as its sequence stops. The decoding rules
    /// are [`Generator::generate`]'s. On Q4_1 weights the outputs do not depend on `slots` or on
    /// which requests are decoded together; on Q4_K weights they can (see
    /// [`Generator::identity`]). A prompt that does not render or fit fails alone; if a batched
    /// decode step fails, the requests not yet finished are decoded one at a time, so each
    /// gets its own result or error.
    pub fn generate_batched(
        &self,
        items: &[ChatRequest],
        done: ItemDone<'_, ChatResponse>,
        slots: usize,
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
            // One cell more than the longest request, for a padding row after it.
            let need = pending
                .iter()
                .map(|p| (p.tokens.len() + items[p.item].max_new_tokens + 1).min(self.n_ctx))
                .max()
                .unwrap_or(1);
            let slots = slots.clamp(1, pending.len());
            let vocab = self.model.vocab();
            // Sequences for a step's rows padded to whole row blocks.
            let n_seq = batch::sequences_for(slots);
            let outcome = self.lock_gen_ctx(need, n_seq).and_then(|mut guard| {
                let g = guard.as_mut().expect("lock_gen_ctx made the context");
                let n_batch = g.ctx.n_batch() as usize;
                let mut steps = LlamaSteps {
                    ctx: &mut g.ctx,
                    batch: LlamaBatch::new(n_batch, 1),
                    n_seq: g.n_seq as i32,
                    keep_prefix: self.keep_prefix(),
                };
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
            match outcome {
                Ok(reused) => {
                    self.reused_prompt_tokens.fetch_add(reused, Ordering::Relaxed);
                }
                Err(e) if items.len() == 1 => results[0] = Some(Err(e)),
                Err(_) => {
                    for (i, slot) in results.iter_mut().enumerate().filter(|(_, r)| r.is_none()) {
                        *slot = Some(self.generate_one(&items[i]));
                    }
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

    /// Each reply handed to `done` as soon as it is decoded, up to [`GgufEngine::gen_batch`]
    /// requests decoded together (1: one at a time).
    fn generate_each(
        &self,
        items: &[ChatRequest],
        done: ItemDone<'_, ChatResponse>,
    ) -> Vec<Result<ChatResponse, ModelError>> {
        self.generate_batched(items, done, self.gen_batch())
    }

    fn prompt_overflow(
        &self,
        prompt: &ChatPrompt,
        reserve: usize,
    ) -> Result<Option<usize>, ModelError> {
        self.overflow(prompt, reserve).map(Some)
    }

    /// [`GgufEngine::identity`] with [`GENERATION`] added to the engine string, and, with
    /// [`GgufEngine::gen_batch`] > 1, the batch size: the outputs are the same at every batch
    /// size on SmolLM2's Q4_1 weights (`tests/gguf_batch.rs`), and at 4 on a Q4_K_M file, but
    /// not yet at 8 on that file (docs/perf.md), so generations decoded at different batch
    /// sizes are cached and recorded apart.
    fn identity(&self) -> ModelIdentity {
        let mut id = GgufEngine::identity(self);
        id.engine = format!("{}, {GENERATION}", id.engine);
        if self.gen_batch() > 1 {
            id.engine += &format!(", batched decoding of up to {} sequences", self.gen_batch());
        }
        id
    }
}

/// How generations are decoded, part of the generator's identity (cache key, manifests): every
/// decode step's rows are a multiple of four, all with logits (`batch.rs`). Older builds
/// decoded with one-row steps, then with steps of two rows or more, whose logits differ in the
/// last bits on weights llama.cpp repacks, so their cached generations are kept apart.
pub const GENERATION: &str = "generation in decode steps of whole four-row blocks";
