//! Shared-prefix scoring: a token prefix common to several sequences is run through the decoder
//! once, each layer's keys and values (after k norm and RoPE) are kept ([`PrefixKv`]), and then
//! a padded batch of suffixes is run with its queries attending to the prefix's keys followed
//! by its own ([`SharedLayout`]).
//!
//! Why this is exact: attention is causal, so the hidden states of the prefix tokens do not
//! depend on what follows them; a suffix token at position P + i sees the same keys and values,
//! at the same RoPE positions, as it does in the full sequence `prefix ++ suffix`. Only the
//! order of some sums can change (the prefix is computed in a batch of one row), so scores
//! agree with the unshared path to float rounding (the tests check ≤ 1e-5).
//!
//! Layout: each suffix row, padded on the left or the right, is seen as the full row
//! `prefix ++ suffix` padded on the same side, and the masks, positions and pooling are those of
//! that full padded batch ([`super::mask::BatchLayout`]). Suffix index j is key index P + j in
//! both cases: right padding gives `prefix, suffix, pads`, left padding `pads, prefix, suffix`
//! (the prefix is inserted after the row's pads, [`LayerKv::join`]), so the real keys of a row
//! are one block and distances between real tokens (the sliding window) are the unpadded ones.

use candle_core::{Result, Tensor};

use super::mask::{BatchLayout, Positions};

/// Which side of a row the padding goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PaddingSide {
    /// Real tokens first, padding after (what [`crate::seqcls::SeqClsModel::score_batch`] does).
    #[default]
    Right,
    /// Padding first, real tokens after (transformers' `padding_side="left"`).
    Left,
}

/// Pads rows to their longest length on `side` with `pad`: `([rows * seq_len] ids, [rows *
/// seq_len] attention mask (1 = real), seq_len)`.
pub fn pad_rows<'a>(
    rows: impl IntoIterator<Item = &'a [u32]> + Clone,
    side: PaddingSide,
    pad: u32,
) -> (Vec<u32>, Vec<u32>, usize) {
    let t = rows.clone().into_iter().map(<[u32]>::len).max().unwrap_or(0);
    let (mut ids, mut mask) = (Vec::new(), Vec::new());
    for r in rows {
        let n = t - r.len();
        let (pads, pad_mask) = (std::iter::repeat_n(pad, n), std::iter::repeat_n(0u32, n));
        match side {
            PaddingSide::Right => {
                ids.extend(r.iter().copied().chain(pads));
                mask.extend(std::iter::repeat_n(1u32, r.len()).chain(pad_mask));
            }
            PaddingSide::Left => {
                ids.extend(pads.chain(r.iter().copied()));
                mask.extend(pad_mask.chain(std::iter::repeat_n(1u32, r.len())));
            }
        }
    }
    (ids, mask, t)
}

/// One layer's keys and values.
#[derive(Debug, Clone)]
pub struct LayerKv {
    /// kᵀ after k norm and RoPE, `[batch, kv_heads, head_dim, tokens]`.
    pub kt: Tensor,
    /// v, `[batch, kv_heads, tokens, head_dim]`.
    pub v: Tensor,
}

impl LayerKv {
    /// Joins this prefix (batch 1, P tokens) with a batch's own keys (`kt` `[b, kv_heads, d,
    /// T]`, `v` `[b, kv_heads, T, d]`): row r becomes its tokens `..at[r]`, the prefix, then its
    /// tokens `at[r]..` — `[b, kv_heads, d, P + T]` and `[b, kv_heads, P + T, d]`. `at[r]` is 0
    /// for right padding and the row's pad count for left padding.
    ///
    /// # Errors
    /// A candle error on mismatched shapes or an `at` entry beyond T.
    pub fn join(&self, kt: &Tensor, v: &Tensor, at: &[usize]) -> Result<(Tensor, Tensor)> {
        let (b, nkv, d, t) = kt.dims4()?;
        if at.len() != b || at.iter().any(|&a| a > t) {
            candle_core::bail!("prefix join: {} split points for {b} rows of {t} tokens", at.len());
        }
        let p = self.kt.dim(3)?;
        // Contiguous operands throughout, so that candle's cat copies rows (copy2d) and the
        // results are contiguous for the attention matmuls.
        if at.iter().all(|&a| a == 0) {
            let kt_p = self.kt.broadcast_as((b, nkv, d, p))?.contiguous()?;
            let v_p = self.v.broadcast_as((b, nkv, p, d))?.contiguous()?;
            return Ok((
                Tensor::cat(&[&kt_p, kt], 3)?.contiguous()?,
                Tensor::cat(&[&v_p, v], 2)?.contiguous()?,
            ));
        }
        let mut kts = Vec::with_capacity(b);
        let mut vs = Vec::with_capacity(b);
        for (r, &a) in at.iter().enumerate() {
            let row = |x: &Tensor, dim: usize, prefix: &Tensor| -> Result<Tensor> {
                let x = x.narrow(0, r, 1)?;
                let mut parts = Vec::with_capacity(3);
                if a > 0 {
                    parts.push(x.narrow(dim, 0, a)?.contiguous()?);
                }
                parts.push(prefix.contiguous()?);
                if a < t {
                    parts.push(x.narrow(dim, a, t - a)?.contiguous()?);
                }
                Tensor::cat(&parts, dim)
            };
            kts.push(row(kt, 3, &self.kt)?);
            vs.push(row(v, 2, &self.v)?);
        }
        Ok((Tensor::cat(&kts, 0)?.contiguous()?, Tensor::cat(&vs, 0)?.contiguous()?))
    }
}

/// The keys and values of every layer for one token prefix (batch 1).
#[derive(Debug, Clone)]
pub struct PrefixKv {
    /// Per layer, in order.
    pub layers: Vec<LayerKv>,
    /// Prefix tokens.
    pub len: usize,
}

/// The layout of a batch of suffixes after a shared prefix of `prefix_len` tokens: that of
/// the full rows `prefix ++ suffix` padded on one side (see the module notes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedLayout {
    /// Rows.
    pub batch: usize,
    /// Prefix tokens (P).
    pub prefix_len: usize,
    /// Padded suffix length (T).
    pub seq_len: usize,
    /// Suffix token ids, padded, `[batch * seq_len]`.
    pub ids: Vec<u32>,
    /// Whether each key of the full rows is real, `[batch * (P + T)]`.
    pub key_ok: Vec<bool>,
    /// RoPE position of each suffix token, `[batch * seq_len]` (P + its index among the real
    /// suffix tokens; 0 for padding).
    pub positions: Vec<u32>,
    /// Where each row's keys take the prefix ([`LayerKv::join`]), `[batch]`.
    pub join_at: Vec<usize>,
    /// Per row, the suffix index of the pooled token, or `None` when the full row's pooled
    /// token ([`super::mask::pooled_index`]) is not a suffix token (a suffix made only of pad
    /// tokens): such a row cannot be scored from the suffix and must be scored unshared.
    pub pooled: Vec<Option<usize>>,
}

impl SharedLayout {
    /// The layout of `suffixes` (each non-empty) after `prefix`, padded on `side` with
    /// `pad_token_id` (0 when `None`); pooling follows [`super::mask::pooled_index`] on the
    /// full rows and positions [`Positions::FromMask`].
    pub fn new(
        prefix: &[u32],
        suffixes: &[Vec<u32>],
        side: PaddingSide,
        pad_token_id: Option<u32>,
    ) -> Self {
        let pad = pad_token_id.unwrap_or(0);
        let p = prefix.len();
        let (ids, _, t) = pad_rows(suffixes.iter().map(Vec::as_slice), side, pad);
        let full: Vec<Vec<u32>> = suffixes.iter().map(|s| [prefix, s].concat()).collect();
        let (full_ids, full_mask, full_t) = pad_rows(full.iter().map(Vec::as_slice), side, pad);
        debug_assert_eq!(full_t, p + t);
        let b = suffixes.len();
        let full =
            BatchLayout::new(&full_ids, &full_mask, b, p + t, pad_token_id, Positions::FromMask);
        let mut positions = Vec::with_capacity(b * t);
        let mut join_at = Vec::with_capacity(b);
        let mut pooled = Vec::with_capacity(b);
        for (r, s) in suffixes.iter().enumerate() {
            let pads = t - s.len();
            let at = match side {
                PaddingSide::Right => 0,
                PaddingSide::Left => pads,
            };
            join_at.push(at);
            let row = &full.positions[r * (p + t)..(r + 1) * (p + t)];
            // Suffix index j is key P + j, except left padding, whose pads stay at 0..pads.
            positions.extend((0..t).map(|j| if j < at { row[j] } else { row[p + j] }));
            let fp = full.pooled[r];
            pooled.push((fp >= p + at).then(|| fp - p));
        }
        Self {
            batch: b,
            prefix_len: p,
            seq_len: t,
            ids,
            key_ok: full.key_ok,
            positions,
            join_at,
            pooled,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn layouts_are_the_full_rows() {
        // pad 0; prefix [7, 8]; suffixes [5] and [5, 6, 9].
        let s = [vec![5], vec![5, 6, 9]];
        let r = SharedLayout::new(&[7, 8], &s, PaddingSide::Right, Some(0));
        assert_eq!(r.ids, vec![5, 0, 0, 5, 6, 9]);
        assert_eq!(r.key_ok, [1, 1, 1, 0, 0, 1, 1, 1, 1, 1].map(|x| x == 1));
        assert_eq!(r.positions, vec![2, 0, 0, 2, 3, 4]);
        assert_eq!((r.join_at.clone(), r.pooled.clone()), (vec![0, 0], vec![Some(0), Some(2)]));
        let l = SharedLayout::new(&[7, 8], &s, PaddingSide::Left, Some(0));
        assert_eq!(l.ids, vec![0, 0, 5, 5, 6, 9]);
        assert_eq!(l.key_ok, [0, 0, 1, 1, 1, 1, 1, 1, 1, 1].map(|x| x == 1));
        assert_eq!(l.positions, vec![0, 0, 2, 2, 3, 4]);
        assert_eq!((l.join_at, l.pooled), (vec![2, 0], vec![Some(2), Some(2)]));
        // A suffix of pad tokens pools into the prefix.
        let x = SharedLayout::new(&[7, 8], &[vec![0, 0]], PaddingSide::Right, Some(0));
        assert_eq!(x.pooled, vec![None]);
    }

    #[test]
    fn join_inserts_the_prefix_after_each_rows_split_point() {
        let dev = Device::Cpu;
        // kᵀ [1, 1, 1, 2] prefix keys 10, 11; batch keys [2, 1, 1, 3].
        let prefix = LayerKv {
            kt: Tensor::new(&[10f32, 11.], &dev).unwrap().reshape((1, 1, 1, 2)).unwrap(),
            v: Tensor::new(&[10f32, 11.], &dev).unwrap().reshape((1, 1, 2, 1)).unwrap(),
        };
        let kt =
            Tensor::new(&[1f32, 2., 3., 4., 5., 6.], &dev).unwrap().reshape((2, 1, 1, 3)).unwrap();
        let v = kt.reshape((2, 1, 3, 1)).unwrap();
        let flat = |t: Tensor| t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        let (k, vv) = prefix.join(&kt, &v, &[0, 0]).unwrap();
        assert_eq!(flat(k), vec![10., 11., 1., 2., 3., 10., 11., 4., 5., 6.]);
        assert_eq!(flat(vv), vec![10., 11., 1., 2., 3., 10., 11., 4., 5., 6.]);
        let (k, vv) = prefix.join(&kt, &v, &[2, 0]).unwrap();
        assert_eq!(flat(k), vec![1., 2., 10., 11., 3., 10., 11., 4., 5., 6.]);
        assert_eq!(flat(vv), vec![1., 2., 10., 11., 3., 10., 11., 4., 5., 6.]);
        assert!(prefix.join(&kt, &v, &[4, 0]).is_err());
    }
}
