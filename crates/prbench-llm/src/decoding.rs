//! Decoding one request: its own sampler, the tokens drawn so far and when it stops. Each
//! request in the generation loop ([`super::batch`], one slot or many) has its own, so every
//! request picks tokens and stops by the same rules.

use std::time::Instant;

use llama_cpp_2::token::LlamaToken;

use super::sampler::{argmax, sample_top_p, SplitMix64};
use prbench_models::io::ChatRequest;

/// Why a sequence stopped: `stop` after an end-of-generation token, `length` when the budget
/// or the context window ran out.
pub(super) type Finish = &'static str;

/// The decoding state of one request. Its sampler is seeded from the request's `seed` alone
/// (callers derive it from the run seed, the item id and the sample index), and it reads only
/// the logits of its own sequence, so what it draws never depends on which other sequences were
/// decoded beside it.
#[derive(Debug, Clone)]
pub(super) struct Decoding {
    rng: SplitMix64,
    greedy: bool,
    temperature: f32,
    top_p: f32,
    max_new_tokens: usize,
    /// Position (in the sequence, tokens) of the next token to decode.
    pos: usize,
    /// Tokens drawn so far (without the stop token).
    pub(super) out: Vec<LlamaToken>,
    /// Set once the sequence has stopped.
    pub(super) finish: Option<Finish>,
    /// When the first token was drawn (`bench generate`'s time to the first token).
    pub(super) first_token_at: Option<Instant>,
}

impl Decoding {
    /// The state after a prompt of `prompt_len` tokens has been decoded. A request with no
    /// token budget is finished (`length`) before any is drawn.
    pub(super) fn new(req: &ChatRequest, prompt_len: usize) -> Self {
        Self {
            rng: SplitMix64::new(req.seed),
            greedy: req.temperature.is_nan() || req.temperature <= 0.0,
            temperature: req.temperature,
            top_p: req.top_p,
            max_new_tokens: req.max_new_tokens,
            pos: prompt_len,
            out: Vec::new(),
            finish: (req.max_new_tokens == 0).then_some("length"),
            first_token_at: None,
        }
    }

    /// Draws the next token from `logits` (`[n_vocab]`, the last decoded position's raw
    /// scores): greedy (argmax, lowest id on ties) or softmax(logits / temperature) cut to the
    /// top-p nucleus. Returns the token and the position to decode it at, or `None` when the
    /// sequence stops here: at an end-of-generation token (`is_eog`, not kept), at
    /// `max_new_tokens` tokens, or when the next position would not fit `n_ctx` tokens.
    pub(super) fn step(
        &mut self,
        logits: &[f32],
        is_eog: impl Fn(LlamaToken) -> bool,
        n_ctx: usize,
    ) -> Option<(LlamaToken, usize)> {
        let next = if self.greedy {
            argmax(logits)
        } else {
            sample_top_p(logits, self.temperature, self.top_p, &mut self.rng)
        };
        let next = LlamaToken(next as i32);
        self.first_token_at.get_or_insert_with(Instant::now);
        if is_eog(next) {
            self.finish = Some("stop");
            return None;
        }
        self.out.push(next);
        if self.out.len() >= self.max_new_tokens || self.pos >= n_ctx {
            self.finish = Some("length");
            return None;
        }
        let at = self.pos;
        self.pos += 1;
        Some((next, at))
    }
}
