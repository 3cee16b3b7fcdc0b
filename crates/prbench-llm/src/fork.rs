//! Shared-prefix scoring: prompts that begin with the same tokens (the two orders of one judge
//! pair share the system prompt, the context and the question up to the first answer) have that
//! prefix decoded once into the KV cache; each prompt's remaining tokens (its suffix) are then
//! decoded after it, the prompt's last-token logits read, and the suffix removed from the cache
//! (`llama_memory_seq_rm`) before the next one.
//!
//! Causal attention makes this exact in exact arithmetic. In floating point, llama.cpp (the
//! CPU build prbench uses) gives bit-identical results only when every token is computed by
//! the same kernels over the same KV cell layout as in a prompt decoded alone, which fixes
//! three choices here (each measured on SmolLM2-135M, where breaking it moved logits by up to
//! 0.7):
//! - suffixes are decoded one after another on one sequence, reusing the cells the previous
//!   suffix freed, so every prompt's tokens sit in cells 0..n as when it is decoded alone
//!   (forking with `llama_memory_seq_cp` and decoding the suffixes on sequences 1..n puts a
//!   later sequence's suffix after the earlier ones' cells, which changed its logits);
//! - the prefix and every suffix have at least [`MIN_PIECE`] tokens: the CPU flash-attention
//!   kernel switches from its tiled path to a per-row path below 64 query rows
//!   (`GGML_FA_TILE_Q`), and the two do not agree to the bit;
//! - a prompt is decoded in one micro-batch (`n_ubatch` = `n_batch`, see `engine.rs`), so the
//!   prompt decoded alone never has a short last micro-batch either; prompts longer than
//!   `n_batch` are never grouped.

use std::sync::atomic::Ordering;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::token::LlamaToken;

use super::forward::{engine_err, logprobs_of, prefill};
use super::GgufEngine;
use prbench_models::error::ModelError;
use prbench_models::io::{ChatPrompt, TokenStats};

/// Most prompts decoded as one group (bounds the grouping search; any size is exact).
pub(super) const MAX_GROUP: usize = 16;

/// Fewest tokens in a shared prefix and in each suffix: `GGML_FA_TILE_Q` of llama.cpp's CPU
/// flash attention, below which it takes a per-row path that disagrees with its tiled path.
pub(super) const MIN_PIECE: usize = 64;

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
/// fewest: dynamic programming over where each group starts, so that, e.g., both orders of two
/// pairs that share only a system prompt form two groups, each sharing its pair's whole
/// prefix. A group has at most `max_group` members; its shared prefix is its members' longest
/// common prefix, capped so every member keeps at least `min_suffix` tokens after it (≥ 1: its
/// logits come from its own last token), and has at least `min_shared` tokens. Prompts longer
/// than `max_len` are groups of one, as are prompts with too little in common.
pub(super) fn group_by_prefix<T: PartialEq>(
    prompts: &[&[T]],
    max_group: usize,
    min_shared: usize,
    min_suffix: usize,
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
            let shared = common.min(shortest.saturating_sub(min_suffix.max(1)));
            if shared < min_shared.max(1) || longest > max_len {
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

/// Decodes one group: `shared` leading tokens (common to every prompt in `prompts`) once,
/// then each prompt's remaining tokens after them, in order, each in batches of the context's
/// `n_batch` tokens with logits at the prompt's last token only, removing each suffix from the
/// cache before the next. Calls `read(i, logits)` with prompt i's last-token logits
/// (`[n_vocab]`). The KV cache is cleared first.
///
/// # Errors
/// [`ModelError::Engine`] when a prompt has no token after the prefix or llama.cpp fails.
fn decode_shared(
    ctx: &mut LlamaContext<'_>,
    batch: &mut LlamaBatch<'_>,
    prompts: &[&[LlamaToken]],
    shared: usize,
    mut read: impl FnMut(usize, &[f32]),
) -> Result<(), ModelError> {
    if let Some(p) = prompts.iter().find(|p| p.len() <= shared) {
        return Err(ModelError::Engine(format!(
            "a prompt of {} tokens has no token after its {shared}-token shared prefix",
            p.len()
        )));
    }
    ctx.clear_kv_cache();
    decode_from(ctx, batch, &prompts[0][..shared], 0, false)?;
    for (i, p) in prompts.iter().enumerate() {
        let idx = decode_from(ctx, batch, &p[shared..], shared, true)?;
        read(i, ctx.get_logits_ith(idx));
        let removed = ctx
            .clear_kv_cache_seq(Some(0), Some(shared as u32), None)
            .map_err(|e| engine_err("KV cache", e))?;
        if !removed {
            return Err(ModelError::Engine(
                "llama.cpp could not remove a suffix from the KV cache".into(),
            ));
        }
    }
    Ok(())
}

/// Decodes `tokens` on sequence 0 at positions `start..`, in batches of the context's
/// `n_batch`, with logits at the last token when `last_logits`; returns the last token's index
/// in the final batch.
fn decode_from(
    ctx: &mut LlamaContext<'_>,
    batch: &mut LlamaBatch<'_>,
    tokens: &[LlamaToken],
    start: usize,
    last_logits: bool,
) -> Result<i32, ModelError> {
    let n_batch = ctx.n_batch() as usize;
    let mut last = 0;
    for (ci, chunk) in tokens.chunks(n_batch).enumerate() {
        batch.clear();
        for (j, &t) in chunk.iter().enumerate() {
            let k = ci * n_batch + j;
            batch
                .add(t, (start + k) as i32, &[0], last_logits && k + 1 == tokens.len())
                .map_err(|e| engine_err("batch", e))?;
        }
        ctx.decode(batch).map_err(|e| engine_err("llama_decode", e))?;
        last = chunk.len() as i32 - 1;
    }
    Ok(last)
}

impl GgufEngine {
    /// [`prbench_models::NextTokenScorer::next_token_logprobs_many`] with shared prefixes: tokenizes
    /// every prompt, groups consecutive prompts by common token prefix ([`group_by_prefix`]:
    /// at most [`MAX_GROUP`] per group, prefix and suffixes of at least [`MIN_PIECE`] tokens,
    /// prompts of at most `n_batch` tokens), and decodes each group's prefix once. Groups of
    /// one take the plain path.
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
        for g in group_by_prefix(&slices, MAX_GROUP, MIN_PIECE, MIN_PIECE, self.n_batch) {
            let members: Vec<&[LlamaToken]> = g.members.iter().map(|&i| slices[i]).collect();
            let mut ctx = self.lock_ctx(members.iter().map(|m| m.len()).max().unwrap_or(0))?;
            let mut batch = LlamaBatch::new(self.n_batch, 1);
            if let [only] = members.as_slice() {
                let idx = prefill(&mut ctx, &mut batch, only)?;
                out[g.members[0]] = Some(logprobs_of(ctx.get_logits_ith(idx), &cand));
            } else {
                decode_shared(&mut ctx, &mut batch, &members, g.shared, |k, logits| {
                    out[g.members[k]] = Some(logprobs_of(logits, &cand));
                })?;
                let reused = (g.members.len() - 1) * g.shared;
                self.shared_prefix_tokens.fetch_add(reused as u64, Ordering::Relaxed);
            }
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
        assert_eq!(group_by_prefix(&p, 8, 1, 3, 1000), [g(&[0, 1, 2, 3, 4], 2)]);
        // A prefix shorter than min_shared is not shared.
        assert_eq!(
            group_by_prefix(&p, 8, 3, 3, 1000),
            [g(&[0], 0), g(&[1], 0), g(&[2], 0), g(&[3], 0), g(&[4], 0)]
        );
    }

    #[test]
    fn empty_input_no_groups() {
        let p: [&[u8]; 0] = [];
        assert!(group_by_prefix(&p, 8, 1, 1, 1000).is_empty());
    }
}
