//! Padding, positions and pooling of one batch: which keys each query may see (causal, padding
//! and an optional sliding window, as transformers `masking_utils.py` builds it), the RoPE position
//! of every token, and the position whose hidden state the score head reads.

/// How RoPE positions are assigned to a padded batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Positions {
    /// Real tokens are numbered 0, 1, 2, … in order, skipping padding (`cumsum(mask) − 1`;
    /// padding gets 0). A left-padded row then sees exactly the positions it would see alone,
    /// so a batch reproduces batch size 1. This is what `generate` does in transformers.
    #[default]
    FromMask,
    /// Position = index in the padded row, 0..seq_len, for every row: what transformers'
    /// `GenericForSequenceClassification.forward` does when `position_ids` is not passed. RoPE
    /// is relative, so for a left-padded row this only changes float rounding.
    Arange,
}

/// The index whose hidden state the score head reads, for one row: transformers'
/// `GenericForSequenceClassification.forward` (`modeling_layers.py`) rule exactly.
///
/// With `pad_token_id = Some(p)`: the rightmost index whose token id is not `p`
/// (`(arange * (ids != p)).argmax(-1)`), which is 0 when every token is `p`. This works for
/// left and right padding; note that when the pad token equals EOS, a trailing EOS is skipped
/// too and the head reads the token before it, even in an unpadded sequence.
/// With `pad_token_id = None`: transformers reads the last index and refuses batches larger
/// than 1; here the rightmost index with `attention_mask = 1` is used (the last index for an
/// unpadded row, so batch size 1 agrees), or the last index when the mask is all zeros.
///
/// `input_ids` and `attention_mask` have the same length (the padded row); `attention_mask` is
/// read only when `pad_token_id` is `None`.
pub fn pooled_index(input_ids: &[u32], attention_mask: &[u32], pad_token_id: Option<u32>) -> usize {
    match pad_token_id {
        Some(p) => input_ids.iter().rposition(|&t| t != p).unwrap_or(0),
        None => attention_mask
            .iter()
            .rposition(|&m| m != 0)
            .unwrap_or(input_ids.len().saturating_sub(1)),
    }
}

/// Per-batch layout shared by all layers of one forward pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchLayout {
    /// Rows.
    pub batch: usize,
    /// Padded length.
    pub seq_len: usize,
    /// `[batch * seq_len]`: whether the token is real (`attention_mask != 0`), i.e. may be
    /// attended to as a key.
    pub key_ok: Vec<bool>,
    /// `[batch * seq_len]`: RoPE position of each token.
    pub positions: Vec<u32>,
    /// `[batch]`: the pooled index of each row ([`pooled_index`]).
    pub pooled: Vec<usize>,
}

impl BatchLayout {
    /// Builds the layout of a padded batch; `input_ids` and `attention_mask` are
    /// `[batch * seq_len]`, row-major.
    ///
    /// # Panics
    /// If the slices are not `batch * seq_len` long (callers validate first).
    pub fn new(
        input_ids: &[u32],
        attention_mask: &[u32],
        batch: usize,
        seq_len: usize,
        pad_token_id: Option<u32>,
        positions: Positions,
    ) -> Self {
        assert_eq!(input_ids.len(), batch * seq_len);
        assert_eq!(attention_mask.len(), batch * seq_len);
        let key_ok: Vec<bool> = attention_mask.iter().map(|&m| m != 0).collect();
        let mut pos = Vec::with_capacity(batch * seq_len);
        let mut pooled = Vec::with_capacity(batch);
        for b in 0..batch {
            let row = b * seq_len..(b + 1) * seq_len;
            match positions {
                Positions::Arange => pos.extend(0..seq_len as u32),
                Positions::FromMask => {
                    let mut next = 0u32;
                    for &ok in &key_ok[row.clone()] {
                        pos.push(if ok { next } else { 0 });
                        next += u32::from(ok);
                    }
                }
            }
            pooled.push(pooled_index(&input_ids[row.clone()], &attention_mask[row], pad_token_id));
        }
        Self { batch, seq_len, key_ok, positions: pos, pooled }
    }

    /// Flat row indices (`b * seq_len + pooled[b]`) of the pooled tokens, `[batch]`.
    pub fn pooled_rows(&self) -> Vec<u32> {
        self.pooled.iter().enumerate().map(|(b, &i)| (b * self.seq_len + i) as u32).collect()
    }

    /// RoPE positions of the pooled tokens, `[batch]`.
    pub fn pooled_positions(&self) -> Vec<u32> {
        self.pooled.iter().enumerate().map(|(b, &i)| self.positions[b * self.seq_len + i]).collect()
    }
}

/// Whether query index `q` may attend to key index `k` (both indices in the padded row):
/// causal (`k <= q`), the key is real, and within the sliding window when one applies
/// (`q - k < window`, transformers `sliding_window_overlay`: `kv_idx > q_idx - sliding_window`).
#[inline]
pub fn allowed(q: usize, k: usize, key_ok: bool, window: Option<usize>) -> bool {
    key_ok && k <= q && window.is_none_or(|w| q - k < w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pooling_right_padding() {
        // pad = 0, right padded.
        assert_eq!(pooled_index(&[5, 6, 7, 0, 0], &[1, 1, 1, 0, 0], Some(0)), 2);
    }

    #[test]
    fn pooling_left_padding() {
        assert_eq!(pooled_index(&[0, 0, 5, 6, 7], &[0, 0, 1, 1, 1], Some(0)), 4);
    }

    #[test]
    fn pooling_pad_equals_eos_skips_trailing_eos() {
        // pad == eos == 2, sequence ends with its own eos: the head reads the token before it,
        // with or without padding (transformers' rule; batch and single agree).
        assert_eq!(pooled_index(&[1, 5, 6, 2], &[1, 1, 1, 1], Some(2)), 2);
        assert_eq!(pooled_index(&[1, 5, 6, 2, 2, 2], &[1, 1, 1, 1, 0, 0], Some(2)), 2);
        assert_eq!(pooled_index(&[2, 2, 1, 5, 6, 2], &[0, 0, 1, 1, 1, 1], Some(2)), 4);
    }

    #[test]
    fn pooling_all_pad_is_zero_like_argmax() {
        assert_eq!(pooled_index(&[2, 2, 2], &[1, 1, 1], Some(2)), 0);
    }

    #[test]
    fn pooling_without_pad_uses_mask() {
        assert_eq!(pooled_index(&[5, 6, 7], &[1, 1, 1], None), 2);
        assert_eq!(pooled_index(&[5, 6, 7, 9], &[1, 1, 0, 0], None), 1);
        assert_eq!(pooled_index(&[9, 5, 6, 7], &[0, 1, 1, 1], None), 3);
    }

    #[test]
    fn positions_from_mask_and_arange() {
        let ids = [0, 0, 5, 6, 5, 6, 7, 0];
        let mask = [0, 0, 1, 1, 1, 1, 1, 0];
        let l = BatchLayout::new(&ids, &mask, 2, 4, Some(0), Positions::FromMask);
        assert_eq!(l.positions, vec![0, 0, 0, 1, 0, 1, 2, 0]);
        assert_eq!(l.pooled, vec![3, 2]);
        assert_eq!(l.pooled_rows(), vec![3, 6]);
        assert_eq!(l.pooled_positions(), vec![1, 2]);
        let l = BatchLayout::new(&ids, &mask, 2, 4, Some(0), Positions::Arange);
        assert_eq!(l.positions, vec![0, 1, 2, 3, 0, 1, 2, 3]);
    }

    #[test]
    fn mask_rule() {
        assert!(allowed(3, 3, true, None));
        assert!(!allowed(3, 4, true, None));
        assert!(!allowed(3, 1, false, None));
        assert!(allowed(3, 2, true, Some(2)));
        assert!(!allowed(3, 1, true, Some(2)));
    }
}
