//! Batched generation with continuous batching: up to `slots` requests are decoded together,
//! one llama.cpp sequence each in its own KV stream, and every decode step computes the next
//! position of all of them in one `llama_decode` call (the weights are read once per step for
//! all sequences instead of once per sequence: on CPU, decoding is bound by that read). A
//! sequence that stops frees its slot, and the next request is prefilled into it while the
//! others go on, as llama.cpp's server does with `--parallel N`. One request at a time is the
//! same loop with one slot.
//!
//! **A prompt already decoded is not decoded again.** A slot keeps the KV cache of the last
//! prompt it decoded (and that prompt's last-position logits) after its request stops; a
//! request whose prompt is exactly one a slot holds takes that KV (the slot's own, or a copy of
//! another slot's stream, `llama_memory_seq_cp`) and that logits vector instead of a prefill,
//! as llama.cpp's server does with `cache_prompt` (best-of-N's samples of one question share
//! their prompt). Both are bit copies of what a prefill of that prompt computes, and the copied
//! prompt sits in the same cells, so the request decodes exactly as if it had prefilled.
//!
//! **Nor is a prefix it shares with a held prompt** ([`super::GgufEngine::keep_prefix`]): a
//! request whose prompt begins like one a slot holds (the chosen and rejected prompts of one
//! build item share the posts, the question and the aspects) keeps those cells, its own
//! slot's or a copy of the other slot's stream cut after them, and prefills only the rest,
//! by the rules that make the judge's kept prefix exact (`fork.rs`: at least 64 tokens
//! decoded after it, starting at a multiple of four, the prompt in one micro-batch). The
//! copied cells sit where a prefill would put them, so the logits are those of the prompt
//! prefilled whole (`tests/gguf_batch.rs` checks the outputs).
//!
//! **A token's logits do not depend on its batch neighbours.** llama.cpp's CPU flash attention
//! computes a sequence decoded alone in its micro-batch differently (to the last bits) from
//! one decoded beside others, which moved greedy outputs (docs/perf.md), and the matrix kernels
//! of weights llama.cpp repacks (Q4_K, for one) take a step's rows in blocks of four and the
//! rest one by one, which round differently. So [`LlamaSteps`] pads every step to a run of
//! consecutive sequences whose count is a multiple of [`STEP_ROWS`], every row asking for
//! logits. With that, and each request prefilled alone, what a request generates depends on
//! its own prompt and sampler only, whatever `slots` is and whichever requests share its steps
//! (checked on the stage-sized prompts by `tests/gguf_batch.rs`).
//!
//! The loop ([`run`]) is written against [`StepModel`], so that it can be checked with logits
//! held fixed (the tests below): each request keeps its own [`Decoding`] (its own seeded
//! sampler), so a request's tokens depend on its own logits only, never on its neighbours or on
//! the order requests were admitted in.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::token::LlamaToken;

use super::decoding::Decoding;

/// Rows of every decode step are a multiple of this: ggml's repacked CPU matrix kernels
/// (`forward_mul_mat` in `repack.cpp`) take rows in blocks of four and the remainder one by
/// one, and the two round differently; with whole blocks every row takes the block path.
pub(super) const STEP_ROWS: usize = 4;

/// Sequences a context for `slots` slots needs: a step's rows span up to `slots` consecutive
/// sequence ids, padded to a multiple of [`STEP_ROWS`].
pub(super) fn sequences_for(slots: usize) -> usize {
    slots.max(1).div_ceil(STEP_ROWS) * STEP_ROWS
}

/// The sequence ids a step's rows go to: the run from `lo` to `hi` padded to a multiple of
/// [`STEP_ROWS`] (extended upward, or downward where the context's `n_seq` sequences end).
fn step_window(lo: i32, hi: i32, n_seq: i32) -> std::ops::Range<i32> {
    let rows = sequences_for((hi - lo + 1).max(1) as usize) as i32;
    let start = lo.min(n_seq - rows).max(0);
    start..start + rows
}
use super::fork::{resume_at, MIN_PIECE, ROW_BLOCK};
use super::forward::{decode_seq, engine_err};
use prbench_models::error::ModelError;

/// What the batching loop needs from a model.
pub(super) trait StepModel {
    /// Decodes `tokens[start..]` (the rest of a prompt) at positions `start..` on sequence
    /// `seq`, whose cache holds exactly positions `0..start` of `tokens` (nothing when `start`
    /// is 0); returns the last position's logits (`[n_vocab]`).
    fn prefill(
        &mut self,
        seq: i32,
        tokens: &[LlamaToken],
        start: usize,
    ) -> Result<Vec<f32>, ModelError>;
    /// How many leading tokens of `prompt` a sequence holding the prompt `held` can keep, the
    /// rest decoded by [`Self::prefill`] with exactly the logits of `prompt` prefilled whole (0
    /// when nothing can be kept that way).
    fn keepable(&self, held: &[LlamaToken], prompt: &[LlamaToken]) -> usize;
    /// Decodes one token for each `(sequence, token, position)` in one step; returns each
    /// one's logits (`[n_vocab]`), in order.
    fn decode(&mut self, step: &[(i32, LlamaToken, usize)]) -> Result<Vec<Vec<f32>>, ModelError>;
    /// Empties sequence `seq`'s cache.
    fn free(&mut self, seq: i32) -> Result<(), ModelError>;
    /// Makes sequence `dst`'s cache hold positions `0..keep` of sequence `src`'s (a prompt
    /// `src` prefilled; `src == dst` drops the positions from `keep` on). `dst`'s own cache
    /// is replaced.
    fn reuse(&mut self, src: i32, dst: i32, keep: usize) -> Result<(), ModelError>;
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

/// The prompt whose KV a slot holds (positions `0..tokens.len()`) and its last position's
/// logits (`[n_vocab]`).
struct Held {
    tokens: Vec<LlamaToken>,
    logits: Vec<f32>,
}

/// Decodes `pending` in order with up to `slots` sequences at once (sequence ids
/// `0..slots`), calling `finished(item, decoding)` for each request as soon as it stops.
/// `is_eog` and `n_ctx` are [`Decoding::step`]'s. Returns the prompt tokens not decoded
/// because a slot already held the same prompt (see the module docs).
///
/// # Errors
/// The first error of a prefill, a decode step or a cache operation; requests that had not
/// finished by then get no call to `finished`.
pub(super) fn run(
    model: &mut impl StepModel,
    pending: Vec<Pending>,
    slots: usize,
    is_eog: &dyn Fn(LlamaToken) -> bool,
    n_ctx: usize,
    finished: &mut dyn FnMut(usize, Decoding),
) -> Result<u64, ModelError> {
    let slots = slots.max(1);
    let mut queue = pending.into_iter();
    let mut active: Vec<Option<Active>> = (0..slots).map(|_| None).collect();
    let mut held: Vec<Option<Held>> = (0..slots).map(|_| None).collect();
    let mut reused = 0u64;
    loop {
        // Fill every free slot; a request that stops at its first token frees it again. A
        // request goes to a free slot holding its prompt, else to an empty one, else to the
        // first free one.
        loop {
            let free: Vec<usize> = (0..slots).filter(|&s| active[s].is_none()).collect();
            if free.is_empty() {
                break;
            }
            let Some(mut p) = queue.next() else { break };
            let seq = (free.iter().copied())
                .find(|&s| holds(&held[s], &p.tokens))
                .or_else(|| free.iter().copied().find(|&s| held[s].is_none()))
                .unwrap_or(free[0]);
            admit(model, &mut held, seq, &p.tokens, &mut reused)?;
            let logits = &held[seq].as_ref().expect("admit leaves the prompt held").logits;
            match p.decoding.step(logits, is_eog, n_ctx) {
                Some(next) => {
                    active[seq] = Some(Active { item: p.item, decoding: p.decoding, next });
                }
                None => finished(p.item, p.decoding),
            }
        }
        let step: Vec<(i32, LlamaToken, usize)> = active
            .iter()
            .enumerate()
            .filter_map(|(seq, a)| a.as_ref().map(|a| (seq as i32, a.next.0, a.next.1)))
            .collect();
        if step.is_empty() {
            return Ok(reused);
        }
        let logits = model.decode(&step)?;
        for ((seq, _, _), logits) in step.iter().zip(&logits) {
            let slot = &mut active[*seq as usize];
            let a = slot.as_mut().expect("a slot in the step is active");
            match a.decoding.step(logits, is_eog, n_ctx) {
                Some(next) => a.next = next,
                None => {
                    let a = slot.take().expect("active");
                    finished(a.item, a.decoding);
                }
            }
        }
    }
}

/// Whether a slot holding `held` holds the prompt `tokens`.
fn holds(held: &Option<Held>, tokens: &[LlamaToken]) -> bool {
    held.as_ref().is_some_and(|h| h.tokens == tokens)
}

/// Puts the prompt `tokens` in slot `seq`'s cache, and makes `held[seq]` hold it with its last
/// position's logits: from the slot itself or another slot holding the same prompt when there
/// is one (the slot's own first); else the most leading tokens any slot's held prompt lets it
/// keep ([`StepModel::keepable`]; the slot's own first on a tie), the rest prefilled; else by a
/// prefill of the whole prompt. Adds the tokens not decoded to `reused`.
fn admit(
    model: &mut impl StepModel,
    held: &mut [Option<Held>],
    seq: usize,
    tokens: &[LlamaToken],
    reused: &mut u64,
) -> Result<(), ModelError> {
    let source = if holds(&held[seq], tokens) {
        Some(seq)
    } else {
        held.iter().position(|h| holds(h, tokens))
    };
    if let Some(src) = source {
        model.reuse(src as i32, seq as i32, tokens.len())?;
        *reused += tokens.len() as u64;
        if src != seq {
            let logits = held[src].as_ref().expect("the source holds the prompt").logits.clone();
            held[seq] = Some(Held { tokens: tokens.to_vec(), logits });
        }
        return Ok(());
    }
    // The slot's own held prompt first, so a tie keeps its cells rather than copying a stream.
    let (src, keep) = std::iter::once(seq)
        .chain((0..held.len()).filter(|&s| s != seq))
        .filter_map(|s| held[s].as_ref().map(|h| (s, model.keepable(&h.tokens, tokens))))
        .fold((seq, 0), |best, c| if c.1 > best.1 { c } else { best });
    if keep > 0 {
        model.reuse(src as i32, seq as i32, keep)?;
        *reused += keep as u64;
    } else if held[seq].is_some() {
        model.free(seq as i32)?;
    }
    // The slot holds no whole prompt until the prefill has succeeded.
    held[seq] = None;
    let logits = model.prefill(seq as i32, tokens, keep)?;
    held[seq] = Some(Held { tokens: tokens.to_vec(), logits });
    Ok(())
}

/// [`StepModel`] on a llama.cpp context with a KV stream per sequence (`kv_unified` off) and
/// [`sequences_for`] the slots.
///
/// llama.cpp splits a step into micro-batches of consecutive sequence ids, and its CPU flash
/// attention takes another path (the KV split across threads, partial sums reduced) for a
/// micro-batch of one stream with one query row over 512 cells or more
/// (`ggml_compute_forward_flash_attn_ext_f16`, `use_split_kv_path`), which rounds
/// differently: a sequence decoded alone, or cut off from the others by an idle slot, drew
/// other greedy tokens than decoded beside them; and repacked weights' matrix kernels round a
/// step's last `rows % 4` rows differently from the others. So a step always decodes a run of
/// consecutive sequence ids from its lowest to its highest, padded to a multiple of
/// [`STEP_ROWS`] ([`step_window`]): an idle slot or a spare sequence gets a padding row after
/// its cache, removed after the step (its held prompt untouched), and every row asks for
/// logits (the output layer's rows are whole blocks too). Every token then goes through the
/// same kernels whatever its neighbours.
pub(super) struct LlamaSteps<'c, 'm> {
    pub(super) ctx: &'c mut LlamaContext<'m>,
    pub(super) batch: LlamaBatch<'static>,
    /// Sequences of the context (at least [`sequences_for`] the slots).
    pub(super) n_seq: i32,
    /// Whether a request keeps the leading tokens it shares with a prompt a slot holds
    /// ([`super::GgufEngine::keep_prefix`]); an identical prompt is reused either way.
    pub(super) keep_prefix: bool,
}

impl StepModel for LlamaSteps<'_, '_> {
    fn prefill(
        &mut self,
        seq: i32,
        tokens: &[LlamaToken],
        start: usize,
    ) -> Result<Vec<f32>, ModelError> {
        let last = decode_seq(self.ctx, &mut self.batch, seq, &tokens[start..], start)?;
        Ok(self.ctx.get_logits_ith(last).to_vec())
    }

    /// What `fork.rs` keeps of a judge's previous prompt ([`resume_at`]: pieces of at least
    /// [`MIN_PIECE`] tokens starting at a multiple of [`ROW_BLOCK`], prompts in one
    /// micro-batch), when [`Self::keep_prefix`] is on: a copied stream puts the kept cells where
    /// a prefill of the prompt would, so the rest decodes as in that prefill.
    fn keepable(&self, held: &[LlamaToken], prompt: &[LlamaToken]) -> usize {
        if !self.keep_prefix || prompt.len() > self.ctx.n_batch() as usize {
            return 0;
        }
        resume_at(held, prompt, MIN_PIECE, ROW_BLOCK)
    }

    fn decode(&mut self, step: &[(i32, LlamaToken, usize)]) -> Result<Vec<Vec<f32>>, ModelError> {
        // The rows, by sequence id: a run of consecutive ids holding the step's, a multiple of
        // STEP_ROWS long (see the struct's docs); an id not in the step gets a padding row
        // after its cache.
        let lo = step.iter().map(|s| s.0).min().expect("a step has a row");
        let hi = step.iter().map(|s| s.0).max().expect("a step has a row");
        let window = step_window(lo, hi, self.n_seq);
        if window.start > lo || window.end <= hi {
            return Err(ModelError::Engine(format!(
                "a decode step over sequences {lo}..={hi} does not fit the context's {} sequences",
                self.n_seq
            )));
        }
        let mut rows = Vec::with_capacity(window.len());
        let mut pads = Vec::new();
        self.batch.clear();
        for seq in window {
            let (t, pos, real) = match step.iter().position(|s| s.0 == seq) {
                Some(i) => (step[i].1, step[i].2, Some(i)),
                None => {
                    let pos = (self.ctx.kv_cache_seq_pos_max(seq) + 1).max(0) as usize;
                    pads.push((seq, pos));
                    (step[0].1, pos, None)
                }
            };
            // Logits for every row, so the output layer's rows are whole blocks as well.
            (self.batch.add(t, pos as i32, &[seq], true)).map_err(|e| engine_err("batch", e))?;
            rows.push(real);
        }
        self.ctx
            .decode(&mut self.batch)
            .map_err(|e| engine_err("llama_decode (batched generation)", e))?;
        let mut logits = vec![Vec::new(); step.len()];
        for (row, real) in rows.iter().enumerate() {
            if let Some(i) = real {
                logits[*i] = self.ctx.get_logits_ith(row as i32).to_vec();
            }
        }
        for (seq, pos) in pads {
            self.ctx
                .clear_kv_cache_seq(Some(seq as u32), Some(pos as u32), None)
                .map_err(|e| engine_err("llama_memory_seq_rm (padding row)", e))?;
        }
        Ok(logits)
    }

    fn free(&mut self, seq: i32) -> Result<(), ModelError> {
        self.ctx
            .clear_kv_cache_seq(Some(seq as u32), None, None)
            .map(|_| ())
            .map_err(|e| engine_err("llama_memory_seq_rm", e))
    }

    fn reuse(&mut self, src: i32, dst: i32, keep: usize) -> Result<(), ModelError> {
        if src != dst {
            // Across KV streams llama.cpp copies the whole stream (at the next decode), cells
            // and all, so the prompt sits in the cells a prefill would have put it in.
            self.free(dst)?;
            self.ctx
                .copy_kv_cache_seq(src, dst, None, None)
                .map_err(|e| engine_err("llama_memory_seq_cp", e))?;
        }
        let dropped = self
            .ctx
            .clear_kv_cache_seq(Some(dst as u32), Some(keep as u32), None)
            .map_err(|e| engine_err("llama_memory_seq_rm", e))?;
        if dropped {
            Ok(())
        } else {
            Err(ModelError::Engine(format!(
                "llama.cpp refused to drop positions from {keep} of sequence {dst}"
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prbench_models::io::{ChatPrompt, ChatRequest};

    #[test]
    fn a_step_spans_whole_row_blocks_of_consecutive_sequences() {
        assert_eq!([1, 2, 4, 5, 8, 9].map(sequences_for), [4, 4, 4, 8, 8, 12]);
        // One slot alone: its row and three padding rows.
        assert_eq!(step_window(0, 0, 4), 0..4);
        // A run of three at the context's end extends downward.
        assert_eq!(step_window(5, 7, 8), 4..8);
        assert_eq!(step_window(1, 3, 8), 1..5);
        // Five rows: two blocks.
        assert_eq!(step_window(2, 6, 8), 0..8);
        assert_eq!(step_window(0, 4, 12), 0..8);
        assert_eq!(step_window(7, 7, 8), 4..8);
    }

    const VOCAB: usize = 50;
    const EOS: i32 = 0;

    /// Logits that depend only on a sequence's own tokens (a hash of them), as a model's
    /// would; the model checks that every step's sequences were prefilled and not freed.
    #[derive(Default)]
    struct Fixed {
        seqs: std::collections::BTreeMap<i32, Vec<LlamaToken>>,
        steps: Vec<usize>,
        reused: usize,
        prefilled: usize,
    }

    /// The mock's fewest tokens prefilled after a kept prefix.
    const MIN_REST: usize = 3;

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
        fn prefill(
            &mut self,
            seq: i32,
            tokens: &[LlamaToken],
            start: usize,
        ) -> Result<Vec<f32>, ModelError> {
            let kept = self.seqs.insert(seq, tokens.to_vec()).unwrap_or_default();
            assert_eq!(kept, tokens[..start], "seq {seq} holds exactly the kept tokens");
            self.prefilled += tokens.len() - start;
            Ok(logits_of(tokens))
        }
        /// The engine's rule ([`resume_at`]) with small stand-in bounds: at least `MIN_REST`
        /// tokens left to prefill, the kept part an even count.
        fn keepable(&self, held: &[LlamaToken], prompt: &[LlamaToken]) -> usize {
            resume_at(held, prompt, MIN_REST, 2)
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
        fn reuse(&mut self, src: i32, dst: i32, keep: usize) -> Result<(), ModelError> {
            let mut kept = self.seqs.get(&src).expect("the source holds a prompt").clone();
            assert!(kept.len() >= keep, "the source holds at least the prompt");
            kept.truncate(keep);
            self.seqs.insert(dst, kept);
            self.reused += 1;
            Ok(())
        }
    }

    /// Request `i`: its own prompt, or (`shared`) the prompt of every third request, as
    /// best-of-N's samples of one question; its own budget and seed either way.
    fn request(i: usize, temperature: f32, shared: bool) -> (Vec<LlamaToken>, ChatRequest) {
        let p = if shared { i / 3 } else { i };
        let tokens: Vec<LlamaToken> =
            (0..3 + p % 4).map(|k| LlamaToken((1 + p * 7 + k) as i32 % VOCAB as i32)).collect();
        let req = ChatRequest {
            prompt: ChatPrompt::default(),
            max_new_tokens: 4 + (i * 5) % 13,
            temperature,
            top_p: 0.9,
            seed: 1000 + i as u64,
        };
        (tokens, req)
    }

    type Outputs = Vec<(Vec<i32>, Option<&'static str>)>;

    /// Every request's tokens and finish reason, decoding `order` with `slots` sequences, and
    /// the prompt tokens reused.
    fn decode_all(order: &[usize], slots: usize, temperature: f32, shared: bool) -> (Outputs, u64) {
        let pending = order
            .iter()
            .map(|&i| {
                let (tokens, req) = request(i, temperature, shared);
                let decoding = Decoding::new(&req, tokens.len());
                Pending { item: i, tokens, decoding }
            })
            .collect();
        let mut model = Fixed::default();
        let mut out = vec![(vec![], None); order.len()];
        let reused = run(&mut model, pending, slots, &|t| t.0 == EOS, 64, &mut |item, d| {
            out[item] = (d.out.iter().map(|t| t.0).collect(), d.finish);
        })
        .unwrap();
        assert!(model.seqs.len() <= slots, "only the slots' sequences are used");
        assert!(model.steps.iter().all(|&n| n <= slots));
        (out, reused)
    }

    #[test]
    fn a_request_draws_the_same_tokens_whatever_its_batch() {
        let n = 11;
        let order: Vec<usize> = (0..n).collect();
        let reversed: Vec<usize> = (0..n).rev().collect();
        for shared in [false, true] {
            for temperature in [0.0, 1.0] {
                let (alone, _) = decode_all(&order, 1, temperature, shared);
                assert!(alone.iter().any(|(t, _)| t.len() > 1), "the fixture generates");
                for slots in [2, 3, 8, 16] {
                    let (got, _) = decode_all(&order, slots, temperature, shared);
                    assert_eq!(got, alone, "slots {slots}, shared prompts {shared}");
                    let (got, _) = decode_all(&reversed, slots, temperature, shared);
                    assert_eq!(got, alone, "slots {slots}, reversed, shared prompts {shared}");
                }
            }
        }
    }

    #[test]
    fn a_prompt_held_by_a_slot_is_not_prefilled_again() {
        // Requests 0-2 share a prompt, 3-5 the next one, ..., 9-10 the last (11 requests).
        let order: Vec<usize> = (0..11).collect();
        let prompt_len = |i: usize| request(i, 1.0, true).0.len() as u64;
        // One slot, in order: each prompt is prefilled once and reused by the requests after
        // it; by hand, every request but the first of its three.
        let by_hand: u64 = order.iter().filter(|&&i| i % 3 != 0).map(|&i| prompt_len(i)).sum();
        assert_eq!(decode_all(&order, 1, 1.0, true).1, by_hand);
        // Any slot count reuses the same (a slot copies the prompt from another slot).
        for slots in [2, 4, 16] {
            assert_eq!(decode_all(&order, slots, 1.0, true).1, by_hand, "slots {slots}");
        }
        // Distinct prompts: nothing reused.
        assert_eq!(decode_all(&order, 4, 1.0, false).1, 0);
        // One slot, the groups interleaved (0, 3, 6, 9, 1, 4, ...): the slot holds only the
        // last prompt, so nothing is reused; four slots hold four prompts, so some are.
        let interleaved: Vec<usize> = (0..3).flat_map(|r| (r..11).step_by(3)).collect();
        assert_eq!(decode_all(&interleaved, 1, 1.0, true).1, 0);
        let some = decode_all(&interleaved, 4, 1.0, true).1;
        assert!(some > 0 && some <= by_hand, "{some} of {by_hand}");
    }

    /// Prompts that begin alike (a shared head of 9 tokens, then each request's own tail of 2
    /// to 7 tokens, as the chosen and rejected prompts of one build item): each request keeps
    /// the leading tokens it may keep of a prompt a slot holds and prefills only the rest; the
    /// outputs are those of one slot, every prompt token is either kept or prefilled, and with
    /// one slot in order the kept tokens are the rule applied by hand to consecutive prompts.
    #[test]
    fn a_prompt_keeps_what_it_shares_with_a_held_one() {
        let n = 10;
        let head: Vec<LlamaToken> = (10..19).map(LlamaToken).collect();
        let prompt = |i: usize| -> Vec<LlamaToken> {
            let tail = (0..2 + i % 6).map(|k| LlamaToken((20 + i * 3 + k) as i32 % VOCAB as i32));
            head.iter().copied().chain(tail).collect()
        };
        let run_with = |slots: usize| {
            let pending = (0..n)
                .map(|i| {
                    let (_, req) = request(i, 1.0, false);
                    let tokens = prompt(i);
                    Pending { item: i, decoding: Decoding::new(&req, tokens.len()), tokens }
                })
                .collect();
            let mut model = Fixed::default();
            let mut out = vec![(vec![], None); n];
            let reused = run(&mut model, pending, slots, &|t| t.0 == EOS, 64, &mut |i, d| {
                out[i] = (d.out.iter().map(|t| t.0).collect::<Vec<_>>(), d.finish);
            })
            .unwrap();
            (out, reused, model.prefilled)
        };
        let total: usize = (0..n).map(|i| prompt(i).len()).sum();
        let (alone, reused, prefilled) = run_with(1);
        // By hand: request i keeps min(9 shared, its length - 3) rounded down to even of the
        // prompt before it (the slot holds only the last one): 8 for i ≥ 1 except the tails
        // of two tokens (length 11: min(9, 8) = 8 as well).
        let by_hand: usize = (1..n).map(|i| (9usize.min(prompt(i).len() - MIN_REST)) / 2 * 2).sum();
        assert_eq!(by_hand, 8 * (n - 1));
        assert_eq!((reused as usize, prefilled), (by_hand, total - by_hand));
        for slots in [2, 3, 8] {
            let (got, reused, prefilled) = run_with(slots);
            assert_eq!(got, alone, "slots {slots}");
            assert_eq!(reused as usize + prefilled, total, "slots {slots}");
            assert!(reused > 0, "slots {slots}: a held prompt was kept from");
        }
    }

    #[test]
    fn stops_by_the_rules_of_one_sequence() {
        // Reference: the one-sequence rules applied by hand to the same logits.
        for i in 0..11 {
            let (tokens, req) = request(i, 1.0, false);
            let mut d = Decoding::new(&req, tokens.len());
            let mut seq = tokens.clone();
            let mut logits = logits_of(&seq);
            while let Some((t, pos)) = d.step(&logits, |t| t.0 == EOS, 64) {
                assert_eq!(pos, seq.len());
                seq.push(t);
                logits = logits_of(&seq);
            }
            let got = &decode_all(&(0..11).collect::<Vec<_>>(), 4, 1.0, false).0[i];
            assert_eq!(got.0, d.out.iter().map(|t| t.0).collect::<Vec<_>>());
            assert_eq!(got.1, d.finish);
            assert!(d.out.len() <= req.max_new_tokens);
        }
    }
}
