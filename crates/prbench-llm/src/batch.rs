//! Batched generation with continuous batching: up to `slots` requests are decoded together,
//! one llama.cpp sequence each in one KV cache, and every decode step computes the next
//! position of all of them in one `llama_decode` call (the weights are read once per step for
//! all sequences instead of once per sequence: on CPU, decoding is bound by that read). A
//! sequence that stops frees its slot, and the next request is prefilled into it while the
//! others go on, as llama.cpp's server does with `--parallel N`.
//!
//! The loop ([`run`]) is written against [`StepModel`], so that it can be checked with logits
//! held fixed (the tests below): each request keeps its own [`Decoding`] (its own seeded
//! sampler), so a request's tokens depend on its own logits only, never on its neighbours or on
//! the order requests were admitted in. Whether llama.cpp's kernels give a sequence decoded
//! beside others the same logits as decoded alone is measured, not assumed (docs/perf.md).

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::token::LlamaToken;

use super::decoding::Decoding;
use super::forward::engine_err;
use prbench_models::error::ModelError;

/// What the batching loop needs from a model.
pub(super) trait StepModel {
    /// Decodes `tokens` (a whole prompt, from position 0) on sequence `seq`, whose cache is
    /// empty; returns the last position's logits (`[n_vocab]`).
    fn prefill(&mut self, seq: i32, tokens: &[LlamaToken]) -> Result<Vec<f32>, ModelError>;
    /// Decodes one token for each `(sequence, token, position)` in one step; returns each
    /// one's logits (`[n_vocab]`), in order.
    fn decode(&mut self, step: &[(i32, LlamaToken, usize)]) -> Result<Vec<Vec<f32>>, ModelError>;
    /// Empties sequence `seq`'s cache for the next request.
    fn free(&mut self, seq: i32) -> Result<(), ModelError>;
}

/// A request waiting for a slot: its index among the caller's requests, its prompt tokens and
/// its decoding state.
pub(super) struct Pending {
    pub(super) item: usize,
    pub(super) tokens: Vec<LlamaToken>,
    pub(super) decoding: Decoding,
}

/// A request in a slot: what to decode next for it.
struct Active {
    item: usize,
    decoding: Decoding,
    next: (LlamaToken, usize),
}

/// Decodes `pending` in order with up to `slots` sequences at once (sequence ids
/// `0..slots`), calling `finished(item, decoding)` for each request as soon as it stops.
/// `is_eog` and `n_ctx` are [`Decoding::step`]'s.
///
/// # Errors
/// The first error of a prefill, a decode step or a cache clear; requests that had not
/// finished by then get no call to `finished`.
pub(super) fn run(
    model: &mut impl StepModel,
    pending: Vec<Pending>,
    slots: usize,
    is_eog: &dyn Fn(LlamaToken) -> bool,
    n_ctx: usize,
    finished: &mut dyn FnMut(usize, Decoding),
) -> Result<(), ModelError> {
    let mut queue = pending.into_iter();
    let mut active: Vec<Option<Active>> = (0..slots.max(1)).map(|_| None).collect();
    loop {
        // Fill every free slot; a request that stops at its first token frees it again.
        for (seq, slot) in active.iter_mut().enumerate() {
            while slot.is_none() {
                let Some(mut p) = queue.next() else { break };
                let logits = model.prefill(seq as i32, &p.tokens)?;
                match p.decoding.step(&logits, is_eog, n_ctx) {
                    Some(next) => {
                        *slot = Some(Active { item: p.item, decoding: p.decoding, next });
                    }
                    None => {
                        model.free(seq as i32)?;
                        finished(p.item, p.decoding);
                    }
                }
            }
        }
        let step: Vec<(i32, LlamaToken, usize)> = active
            .iter()
            .enumerate()
            .filter_map(|(seq, a)| a.as_ref().map(|a| (seq as i32, a.next.0, a.next.1)))
            .collect();
        if step.is_empty() {
            return Ok(());
        }
        let logits = model.decode(&step)?;
        for ((seq, _, _), logits) in step.iter().zip(&logits) {
            let slot = &mut active[*seq as usize];
            let a = slot.as_mut().expect("a slot in the step is active");
            match a.decoding.step(logits, is_eog, n_ctx) {
                Some(next) => a.next = next,
                None => {
                    let a = slot.take().expect("active");
                    model.free(*seq)?;
                    finished(a.item, a.decoding);
                }
            }
        }
    }
}

/// [`StepModel`] on a llama.cpp context created with at least as many sequences as slots.
pub(super) struct LlamaSteps<'c, 'm> {
    pub(super) ctx: &'c mut LlamaContext<'m>,
    pub(super) batch: LlamaBatch<'static>,
}

impl StepModel for LlamaSteps<'_, '_> {
    fn prefill(&mut self, seq: i32, tokens: &[LlamaToken]) -> Result<Vec<f32>, ModelError> {
        let n_batch = self.ctx.n_batch() as usize;
        let mut last = 0;
        for (ci, chunk) in tokens.chunks(n_batch).enumerate() {
            self.batch.clear();
            for (j, &t) in chunk.iter().enumerate() {
                let pos = ci * n_batch + j;
                let is_last = pos + 1 == tokens.len();
                self.batch
                    .add(t, pos as i32, &[seq], is_last)
                    .map_err(|e| engine_err("batch", e))?;
            }
            self.ctx
                .decode(&mut self.batch)
                .map_err(|e| engine_err("llama_decode (batched prefill)", e))?;
            last = chunk.len() as i32 - 1;
        }
        Ok(self.ctx.get_logits_ith(last).to_vec())
    }

    fn decode(&mut self, step: &[(i32, LlamaToken, usize)]) -> Result<Vec<Vec<f32>>, ModelError> {
        self.batch.clear();
        for &(seq, t, pos) in step {
            self.batch.add(t, pos as i32, &[seq], true).map_err(|e| engine_err("batch", e))?;
        }
        self.ctx
            .decode(&mut self.batch)
            .map_err(|e| engine_err("llama_decode (batched generation)", e))?;
        Ok((0..step.len()).map(|i| self.ctx.get_logits_ith(i as i32).to_vec()).collect())
    }

    fn free(&mut self, seq: i32) -> Result<(), ModelError> {
        self.ctx
            .clear_kv_cache_seq(Some(seq as u32), None, None)
            .map(|_| ())
            .map_err(|e| engine_err("llama_memory_seq_rm", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prbench_models::io::{ChatPrompt, ChatRequest};

    const VOCAB: usize = 50;
    const EOS: i32 = 0;

    /// Logits that depend only on a sequence's own tokens (a hash of them), as a model's
    /// would; the model checks that every step's sequences were prefilled and not freed.
    #[derive(Default)]
    struct Fixed {
        seqs: std::collections::BTreeMap<i32, Vec<LlamaToken>>,
        steps: Vec<usize>,
    }

    fn logits_of(tokens: &[LlamaToken]) -> Vec<f32> {
        let mut h: u64 = 1469598103934665603;
        for t in tokens {
            h = (h ^ t.0 as u64).wrapping_mul(1099511628211);
        }
        (0..VOCAB)
            .map(|v| {
                let x = (h ^ (v as u64).wrapping_mul(0x9E3779B97F4A7C15))
                    .wrapping_mul(0xBF58476D1CE4E5B9);
                (x >> 40) as f32 / (1u64 << 24) as f32 * 6.0
            })
            .collect()
    }

    impl StepModel for Fixed {
        fn prefill(&mut self, seq: i32, tokens: &[LlamaToken]) -> Result<Vec<f32>, ModelError> {
            assert!(self.seqs.insert(seq, tokens.to_vec()).is_none(), "seq {seq} not freed");
            Ok(logits_of(tokens))
        }
        fn decode(
            &mut self,
            step: &[(i32, LlamaToken, usize)],
        ) -> Result<Vec<Vec<f32>>, ModelError> {
            self.steps.push(step.len());
            Ok(step
                .iter()
                .map(|(seq, t, pos)| {
                    let s = self.seqs.get_mut(seq).expect("prefilled");
                    assert_eq!(*pos, s.len(), "position of the next token");
                    s.push(*t);
                    logits_of(s)
                })
                .collect())
        }
        fn free(&mut self, seq: i32) -> Result<(), ModelError> {
            self.seqs.remove(&seq).expect("freed once");
            Ok(())
        }
    }

    fn request(i: usize, temperature: f32) -> (Vec<LlamaToken>, ChatRequest) {
        let tokens: Vec<LlamaToken> =
            (0..3 + i % 4).map(|k| LlamaToken((1 + i * 7 + k) as i32 % VOCAB as i32)).collect();
        let req = ChatRequest {
            prompt: ChatPrompt::default(),
            max_new_tokens: 4 + (i * 5) % 13,
            temperature,
            top_p: 0.9,
            seed: 1000 + i as u64,
        };
        (tokens, req)
    }

    /// Every request's tokens and finish reason, decoding `order` with `slots` sequences.
    fn decode_all(
        order: &[usize],
        slots: usize,
        temperature: f32,
    ) -> Vec<(Vec<i32>, Option<&'static str>)> {
        let pending = order
            .iter()
            .map(|&i| {
                let (tokens, req) = request(i, temperature);
                let decoding = Decoding::new(&req, tokens.len());
                Pending { item: i, tokens, decoding }
            })
            .collect();
        let mut model = Fixed::default();
        let mut out = vec![(vec![], None); order.len()];
        run(&mut model, pending, slots, &|t| t.0 == EOS, 64, &mut |item, d| {
            out[item] = (d.out.iter().map(|t| t.0).collect(), d.finish);
        })
        .unwrap();
        assert!(model.seqs.is_empty(), "every sequence freed");
        assert!(model.steps.iter().all(|&n| n <= slots));
        out
    }

    #[test]
    fn a_request_draws_the_same_tokens_whatever_its_batch() {
        let n = 11;
        let order: Vec<usize> = (0..n).collect();
        let reversed: Vec<usize> = (0..n).rev().collect();
        for temperature in [0.0, 1.0] {
            let alone = decode_all(&order, 1, temperature);
            assert!(alone.iter().any(|(t, _)| t.len() > 1), "the fixture generates");
            for slots in [2, 3, 8, 16] {
                assert_eq!(decode_all(&order, slots, temperature), alone, "slots {slots}");
                assert_eq!(
                    decode_all(&reversed, slots, temperature),
                    alone,
                    "slots {slots}, reversed"
                );
            }
        }
    }

    #[test]
    fn stops_by_the_rules_of_one_sequence() {
        // Reference: the one-sequence rules applied by hand to the same logits.
        for i in 0..11 {
            let (tokens, req) = request(i, 1.0);
            let mut d = Decoding::new(&req, tokens.len());
            let mut seq = tokens.clone();
            let mut logits = logits_of(&seq);
            while let Some((t, pos)) = d.step(&logits, |t| t.0 == EOS, 64) {
                assert_eq!(pos, seq.len());
                seq.push(t);
                logits = logits_of(&seq);
            }
            let got = &decode_all(&(0..11).collect::<Vec<_>>(), 4, 1.0)[i];
            assert_eq!(got.0, d.out.iter().map(|t| t.0).collect::<Vec<_>>());
            assert_eq!(got.1, d.finish);
            assert!(d.out.len() <= req.max_new_tokens);
        }
    }
}
