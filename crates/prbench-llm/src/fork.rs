//! Shared-prefix scoring: a prompt that begins with the same tokens as the one scored before
//! it (the two orders of one judge pair share the system prompt, the context and the question
//! up to the first answer; every prompt of a run shares the judge's system prompt and fixed
//! instructions) has those tokens' cells kept in the KV cache: the cells after them are
//! removed (`llama_memory_seq_rm`) and only the prompt's remaining tokens decoded, its
//! last-token logits read ([`resume_at`], [`decode_group`]). The cache keeps the last prompt
//! whole across calls, so a run's fixed prefix is decoded once per run.
//!
//! With [`GgufEngine::keep_prefix`] off, each call is split into groups of consecutive prompts
//! ([`group_by_prefix`]) that each start from a cleared cache and share their members' common
//! prefix; keeping the previous prompt never keeps fewer tokens than such a group shares.
//!
//! Causal attention makes this exact in exact arithmetic: a cell's keys and values depend only
//! on its token, its position and the cells before it. In floating point, llama.cpp (the CPU
//! build prbench uses) gives bit-identical results only when every token is computed by the
//! same kernels over the same KV cell layout as in a prompt decoded alone, which fixes three
//! choices here (each measured on SmolLM2-135M, where breaking it moved logits by up to 0.7):
//! - everything is decoded on one sequence, a piece reusing the cells the previous one freed,
//!   so every prompt's tokens sit in cells 0..n as when it is decoded alone (forking with
//!   `llama_memory_seq_cp` and decoding the suffixes on sequences 1..n puts a later sequence's
//!   suffix after the earlier ones' cells, which changed its logits);
//! - every piece decoded has at least [`MIN_PIECE`] tokens: the CPU flash-attention kernel
//!   switches from its tiled path to a per-row path below 64 query rows (`GGML_FA_TILE_Q`),
//!   and the two do not agree to the bit. A kept or shared prefix is never a piece of its own
//!   (its cells were computed as part of an earlier prompt), so it may be of any length; what
//!   a prompt decodes after it is at least [`MIN_PIECE`] tokens;
//! - a piece is decoded in one micro-batch (`n_ubatch` = `n_batch`, see `engine.rs`), so the
//!   prompt decoded alone never has a short last micro-batch either; prompts longer than
//!   `n_batch` are never grouped and keep nothing;
//! - every piece starts at a multiple of [`ROW_BLOCK`] tokens: for weights llama.cpp repacks
//!   for its CPU kernels (Q4_K and Q4_0 on AVX2, for instance) a micro-batch's rows are
//!   multiplied in blocks of four (gemm) and the last `rows % 4` one by one (gemv), which round
//!   differently. Alone, a prompt of n tokens has rows `n - n % 4..n` on the one-by-one path; a
//!   piece starting at a multiple of four puts exactly those rows there too, and every kept row
//!   (before the piece) was in a block of four in the prompt that computed it. Breaking this
//!   moved a Qwen2.5-1.5B Q4_K_M judge's margins by up to 0.058 and changed 2 verdicts of 6.
//!
//! Exactness is tested on SmolLM2-135M's Q4_1 file (bit-identical margins, the `gguf_fork`
//! tests); `bench judge-orders` checks it on any GGUF file against the 1e-5 tolerance.

use std::sync::atomic::Ordering;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::token::LlamaToken;

use super::forward::{decode_seq, engine_err, logprobs_of};
use super::GgufEngine;
use prbench_models::error::ModelError;
use prbench_models::io::{ChatPrompt, TokenStats};

/// Most prompts decoded as one group (bounds the grouping search; any size is exact).
pub(super) const MAX_GROUP: usize = 16;

/// Fewest tokens in a shared prefix and in each suffix: `GGML_FA_TILE_Q` of llama.cpp's CPU
/// flash attention, below which it takes a per-row path that disagrees with its tiled path.
pub(super) const MIN_PIECE: usize = 64;

/// Multiple of tokens every piece starts at: the rows llama.cpp's repacked CPU matrix kernels
/// take together (`forward_mul_mat` in ggml's `repack.cpp` runs gemm over `rows - rows % 4`
/// and gemv over the rest).
pub(super) const ROW_BLOCK: usize = 4;

/// `n` rounded down to a multiple of `block` (≥ 1).
fn aligned(n: usize, block: usize) -> usize {
    n - n % block.max(1)
}

/// Consecutive prompts decoded together: their indices into the caller's prompts and the
/// number of leading tokens they all share, decoded once (0 for a group of one, which is
/// decoded as a plain prefill).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Group {
    pub(super) members: Vec<usize>,
    pub(super) shared: usize,
}

/// Length of the longest common prefix of `a` and `b`.
fn common_prefix<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Splits `prompts` (token sequences) into groups of consecutive prompts, in order, so that
/// the tokens decoded in all (each group's shared prefix once plus every member's suffix) are
/// fewest: dynamic programming over where each group starts. A group has at most `max_group`
/// members; its shared prefix is its members' longest common prefix, capped so every member
/// keeps at least `min_suffix` tokens after it (≥ 1: its logits come from its own last token)
/// and rounded down to a multiple of `block` ([`ROW_BLOCK`]). Prompts longer than `max_len`
/// are groups of one, as are prompts with nothing in common.
pub(super) fn group_by_prefix<T: PartialEq>(
    prompts: &[&[T]],
    max_group: usize,
    min_suffix: usize,
    block: usize,
    max_len: usize,
) -> Vec<Group> {
    let n = prompts.len();
    // adjacent[k]: common prefix of prompts k and k + 1. A run's common prefix is the minimum
    // over its adjacent pairs.
    let adjacent: Vec<usize> = prompts.windows(2).map(|w| common_prefix(w[0], w[1])).collect();
    // best[i]: (fewest tokens to decode prompts[..i], start of the last group, its prefix).
    let mut best: Vec<(usize, usize, usize)> = vec![(0, 0, 0); n + 1];
    for i in 1..=n {
        let last = prompts[i - 1].len();
        let mut choice = (best[i - 1].0 + last, i - 1, 0);
        let (mut common, mut shortest, mut longest, mut total) = (usize::MAX, last, last, last);
        // Longer groups (start j further back) only shrink the prefix.
        for j in (i.saturating_sub(max_group)..i - 1).rev() {
            common = common.min(adjacent[j]);
            shortest = shortest.min(prompts[j].len());
            longest = longest.max(prompts[j].len());
            total += prompts[j].len();
            let shared = aligned(common.min(shortest.saturating_sub(min_suffix.max(1))), block);
            if shared == 0 || longest > max_len {
                break;
            }
            let cost = best[j].0 + total - (i - j - 1) * shared;
            if cost < choice.0 {
                choice = (cost, j, shared);
            }
        }
        best[i] = choice;
    }
    let mut groups = Vec::new();
    let mut i = n;
    while i > 0 {
        let (_, start, shared) = best[i];
        groups.push(Group { members: (start..i).collect(), shared });
        i = start;
    }
    groups.reverse();
    groups
}

/// Where `prompt` can continue from a cache holding `held` (cells `0..held.len()`): the
/// tokens both begin with, leaving at least `min_piece` of the prompt to decode (the piece
/// stays on the tiled kernel path), rounded down to a multiple of `block` ([`ROW_BLOCK`]); 0
/// when that leaves nothing to keep.
pub(super) fn resume_at<T: PartialEq>(
    held: &[T],
    prompt: &[T],
    min_piece: usize,
    block: usize,
) -> usize {
    aligned(common_prefix(held, prompt).min(prompt.len().saturating_sub(min_piece.max(1))), block)
}

/// Empties cells `from..` of sequence 0 (all of them when `from` is 0).
fn truncate_cache(ctx: &mut LlamaContext<'_>, from: usize) -> Result<(), ModelError> {
    if from == 0 {
        ctx.clear_kv_cache();
        return Ok(());
    }
    let removed = ctx
        .clear_kv_cache_seq(Some(0), Some(from as u32), None)
        .map_err(|e| engine_err("KV cache", e))?;
    if removed {
        Ok(())
    } else {
        Err(ModelError::Engine("llama.cpp could not remove cells from the KV cache".into()))
    }
}

/// Decodes one group: the first prompt from cell `keep` on (its first `keep` tokens are in the
/// cache already, the rest of the cache is emptied), then, for each later prompt, removes the
/// cells after the `shared` leading tokens all prompts begin with and decodes the prompt's
/// remaining tokens; each piece in batches of the context's `n_batch` tokens with logits at the
/// prompt's last token only. Calls `read(i, logits)` with prompt i's last-token logits
/// (`[n_vocab]`). Leaves the last prompt whole in the cache.
///
/// # Errors
/// [`ModelError::Engine`] when a prompt has no token after the prefix or llama.cpp fails.
fn decode_group(
    ctx: &mut LlamaContext<'_>,
    batch: &mut LlamaBatch<'_>,
    prompts: &[&[LlamaToken]],
    keep: usize,
    shared: usize,
    mut read: impl FnMut(usize, &[f32]),
) -> Result<(), ModelError> {
    let prefixes = std::iter::once(keep).chain(std::iter::repeat(shared));
    if let Some((n, prefix)) =
        prompts.iter().map(|p| p.len()).zip(prefixes).find(|&(n, prefix)| n <= prefix)
    {
        return Err(ModelError::Engine(format!(
            "a prompt of {n} tokens has no token after its {prefix}-token shared prefix"
        )));
    }
    truncate_cache(ctx, keep)?;
    let idx = decode_seq(ctx, batch, 0, &prompts[0][keep..], keep)?;
    read(0, ctx.get_logits_ith(idx));
    for (i, p) in prompts.iter().enumerate().skip(1) {
        truncate_cache(ctx, shared)?;
        let idx = decode_seq(ctx, batch, 0, &p[shared..], shared)?;
        read(i, ctx.get_logits_ith(idx));
    }
    Ok(())
}

impl GgufEngine {
    /// [`prbench_models::NextTokenScorer::next_token_logprobs_many`] with shared prefixes: tokenizes
    /// every prompt, groups consecutive prompts by common token prefix ([`group_by_prefix`]:
    /// at most [`MAX_GROUP`] per group, suffixes of at least [`MIN_PIECE`] tokens, prompts of
    /// at most `n_batch` tokens), and decodes each group's prefix once ([`decode_group`]).
    /// With [`GgufEngine::keep_prefix`], a group first keeps what the previous group (of this
    /// call or an earlier one) left in the cache ([`resume_at`]); a group of one that keeps
    /// nothing is a plain prefill.
    pub(super) fn logprobs_shared(
        &self,
        prompts: &[&ChatPrompt],
        candidates: &[&str],
    ) -> Result<Vec<(Vec<f32>, TokenStats)>, ModelError> {
        let cand =
            candidates.iter().map(|c| self.candidate_token(c)).collect::<Result<Vec<_>, _>>()?;
        let tokens =
            prompts.iter().map(|p| self.tokenize_prompt(p)).collect::<Result<Vec<_>, _>>()?;
        let slices: Vec<&[LlamaToken]> = tokens.iter().map(Vec::as_slice).collect();
        if let Some(i) = slices.iter().position(|t| t.is_empty()) {
            return Err(ModelError::Engine(format!(
                "prompt {i} has no tokens; cannot run the model on an empty prompt"
            )));
        }
        let mut out: Vec<Option<Vec<f32>>> = vec![None; prompts.len()];
        let keep_prefix = self.keep_prefix();
        // Keeping, each prompt continues from the one before, whole: never fewer kept tokens
        // than any group's shared prefix would give it.
        let groups = if keep_prefix {
            (0..slices.len()).map(|i| Group { members: vec![i], shared: 0 }).collect()
        } else {
            group_by_prefix(&slices, MAX_GROUP, MIN_PIECE, ROW_BLOCK, self.n_batch)
        };
        for g in groups {
            let members: Vec<&[LlamaToken]> = g.members.iter().map(|&i| slices[i]).collect();
            let mut ctx = self.lock_ctx_held(members.iter().map(|m| m.len()).max().unwrap_or(0))?;
            // Until this group is decoded the cache holds nothing a later one may trust.
            let held = std::mem::take(ctx.held_mut());
            let (first, last) = (members[0], members[members.len() - 1]);
            // A lone prompt longer than a batch is prefilled in chunks, as alone.
            let keep = if keep_prefix && first.len() <= self.n_batch {
                resume_at(&held, first, MIN_PIECE, ROW_BLOCK)
            } else {
                0
            };
            let mut batch = LlamaBatch::new(self.n_batch, 1);
            decode_group(&mut ctx, &mut batch, &members, keep, g.shared, |k, logits| {
                out[g.members[k]] = Some(logprobs_of(logits, &cand));
            })?;
            if last.len() <= self.n_batch {
                *ctx.held_mut() = last.to_vec();
            }
            let reused = keep + (g.members.len() - 1) * g.shared;
            self.shared_prefix_tokens.fetch_add(reused as u64, Ordering::Relaxed);
        }
        out.into_iter()
            .zip(&tokens)
            .map(|(lp, t)| {
                let lp = lp.ok_or_else(|| {
                    ModelError::Engine(
                        "llama.cpp returned no logits for a prompt's last token".into(),
                    )
                })?;
                Ok((lp, TokenStats { input_tokens: t.len(), ..TokenStats::default() }))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::{group_by_prefix, Group};

    fn g(members: &[usize], shared: usize) -> Group {
        Group { members: members.to_vec(), shared }
    }

    #[test]
    fn both_orders_of_a_pair_share_everything_before_the_answers() {
        // Two pairs: each pair's orders share 5 tokens, the pairs share 2 (a system prompt).
        let p: [&[u8]; 4] = [b"ssqqqAB", b"ssqqqBA", b"ssrrrCD", b"ssrrrDC"];
        assert_eq!(group_by_prefix(&p, 8, 1, 1, 1000), [g(&[0, 1], 5), g(&[2, 3], 5)]);
    }

    #[test]
    fn a_short_common_prefix_still_groups_when_it_saves_tokens() {
        // Without both orders: consecutive prompts sharing only a system prompt.
        let p: [&[u8]; 3] = [b"ssabc", b"ssdef", b"ssghi"];
        assert_eq!(group_by_prefix(&p, 8, 1, 1, 1000), [g(&[0, 1, 2], 2)]);
        // Joining shrinks a pair's prefix from 5 to 3 tokens: 3 + 4 + 4 + 3 = 14 cells against
        // 5 + 2 + 2 = 9 plus 6 alone = 15, so the third prompt joins; shrinking it to 2 gives
        // 2 + 5 + 5 + 4 = 16 > 15, so it does not.
        let p: [&[u8]; 3] = [b"sssqqAB", b"sssqqBA", b"sssxxx"];
        assert_eq!(group_by_prefix(&p, 8, 1, 1, 1000), [g(&[0, 1, 2], 3)]);
        let p: [&[u8]; 3] = [b"ssqqqAB", b"ssqqqBA", b"ssxxxx"];
        assert_eq!(group_by_prefix(&p, 8, 1, 1, 1000), [g(&[0, 1], 5), g(&[2], 0)]);
    }

    #[test]
    fn the_fewest_tokens_not_the_greedy_merge() {
        // Pair 1 shares 3 tokens, pair 2 shares 6, across pairs only 2. Pairs: (3 + 2 + 2) +
        // (6 + 2 + 2) = 17 cells; all four: 2 + 3 + 3 + 6 + 6 = 20 (what merging prompt by
        // prompt while each merge saves would reach).
        let p: [&[u8]; 4] = [b"ssqAB", b"ssqBA", b"ssrrrrCD", b"ssrrrrDC"];
        assert_eq!(group_by_prefix(&p, 8, 1, 1, 1000), [g(&[0, 1], 3), g(&[2, 3], 6)]);
    }

    #[test]
    fn no_common_prefix_one_group_each() {
        let p: [&[u8]; 3] = [b"abc", b"def", b"ghi"];
        assert_eq!(group_by_prefix(&p, 8, 1, 1, 1000), [g(&[0], 0), g(&[1], 0), g(&[2], 0)]);
    }

    #[test]
    fn every_member_keeps_a_suffix_token() {
        // Identical prompts, and one that is a prefix of the other: the last token stays.
        let p: [&[u8]; 2] = [b"abcd", b"abcd"];
        assert_eq!(group_by_prefix(&p, 8, 1, 1, 1000), [g(&[0, 1], 3)]);
        let p: [&[u8]; 2] = [b"abcdef", b"abc"];
        assert_eq!(group_by_prefix(&p, 8, 1, 1, 1000), [g(&[0, 1], 2)]);
        // A one-token prompt has no prefix to share.
        let p: [&[u8]; 2] = [b"a", b"a"];
        assert_eq!(group_by_prefix(&p, 8, 1, 1, 1000), [g(&[0], 0), g(&[1], 0)]);
    }

    #[test]
    fn groups_are_bounded_in_members_length_and_pieces() {
        let p: [&[u8]; 5] = [b"aaaab", b"aaaac", b"aaaad", b"aaaae", b"aaaaf"];
        assert_eq!(group_by_prefix(&p, 2, 1, 1, 1000), [g(&[0, 1], 4), g(&[2, 3], 4), g(&[4], 0)]);
        // Prompts longer than max_len stay alone.
        assert_eq!(
            group_by_prefix(&p, 8, 1, 1, 4),
            [g(&[0], 0), g(&[1], 0), g(&[2], 0), g(&[3], 0), g(&[4], 0)]
        );
        // Each suffix keeps min_suffix tokens: the prefix shrinks to 5 − 3 = 2.
        assert_eq!(group_by_prefix(&p, 8, 3, 1, 1000), [g(&[0, 1, 2, 3, 4], 2)]);
    }

    #[test]
    fn a_group_continues_from_the_held_prefix_leaving_a_whole_piece() {
        use super::resume_at;
        let held = b"sssssssxyz";
        // Common prefix 7 ("sssssss"), 8 tokens left to decode.
        assert_eq!(resume_at(held, b"sssssssabcdefgh", 2, 1), 7);
        // The piece left must be min_piece long: 15 − 10 = 5 kept.
        assert_eq!(resume_at(held, b"sssssssabcdefgh", 10, 1), 5);
        assert_eq!(resume_at(held, b"sssssssabcdefgh", 15, 1), 0);
        assert_eq!(resume_at(held, b"sssssssabcdefgh", 20, 1), 0);
        // Nothing held, or nothing in common, keeps nothing.
        assert_eq!(resume_at(b"", b"sssssss", 1, 1), 0);
        assert_eq!(resume_at(held, b"tsssssss", 1, 1), 0);
        // The whole held prompt again: all but the last min_piece tokens (at least one).
        assert_eq!(resume_at(held, held, 3, 1), 7);
        assert_eq!(resume_at(held, held, 0, 1), 9);
        // Rounded down to whole row blocks.
        assert_eq!(resume_at(held, b"sssssssabcdefgh", 2, 4), 4);
        assert_eq!(resume_at(held, b"sssabcdefgh", 2, 4), 0);
    }

    #[test]
    fn shared_prefixes_are_whole_row_blocks() {
        // 7 tokens in common, 6 after rounding down to blocks of 2, 4 in blocks of 4.
        let p: [&[u8]; 2] = [b"sssssssAB", b"sssssssBA"];
        assert_eq!(group_by_prefix(&p, 8, 1, 2, 1000), [g(&[0, 1], 6)]);
        assert_eq!(group_by_prefix(&p, 8, 1, 4, 1000), [g(&[0, 1], 4)]);
        // Under one block in common: nothing shared.
        let p: [&[u8]; 2] = [b"sssAB", b"sssBA"];
        assert_eq!(group_by_prefix(&p, 8, 1, 4, 1000), [g(&[0], 0), g(&[1], 0)]);
    }

    #[test]
    fn empty_input_no_groups() {
        let p: [&[u8]; 0] = [];
        assert!(group_by_prefix(&p, 8, 1, 1, 1000).is_empty());
    }
}
