//! Fused attention-probability kernel: scale, optional logit soft-capping, causal + padding +
//! sliding-window mask and softmax over the keys, in one pass over the score matrix.
//!
//! transformers (`eager_attention_forward` in `modeling_<arch>.py`) computes
//! `softmax(cap(q·kᵀ · scale) + mask)` with mask = 0 or `finfo(f32).min`, so a masked key gets
//! probability exactly 0 and a query with no visible key (a padding row) gets a uniform row
//! instead of NaN. This kernel gives the same result without materialising the mask: masked
//! keys are written as 0 and only visible keys enter the max and the sum, in an order fixed by
//! their offset from the first visible key, so a row's probabilities depend only on its visible
//! keys, never on how much padding surrounds them (what makes a batch reproduce batch size 1
//! bit for bit).

use std::sync::Arc;

use candle_core::{CpuStorage, CustomOp1, Layout, Result, Shape};

use super::fastmath;
use super::mask::allowed;
use super::par::for_row_chunks;

/// The real keys of one batch row: indices `first..=last` when they form one block (left or
/// right padding), which lets a query's visible keys be a plain index range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeySpan {
    /// First real key (`usize::MAX` when the row has none).
    pub first: usize,
    /// Last real key.
    pub last: usize,
    /// Whether every key in `first..=last` is real.
    pub contiguous: bool,
}

impl KeySpan {
    /// Spans of each batch row of `key_ok` (`[batch * seq_len]`).
    pub fn of_rows(key_ok: &[bool], seq_len: usize) -> Vec<KeySpan> {
        key_ok
            .chunks(seq_len.max(1))
            .map(|row| match (row.iter().position(|&k| k), row.iter().rposition(|&k| k)) {
                (Some(first), Some(last)) => {
                    KeySpan { first, last, contiguous: row[first..=last].iter().all(|&k| k) }
                }
                _ => KeySpan { first: usize::MAX, last: 0, contiguous: true },
            })
            .collect()
    }
}

/// The attention softmax of one layer for one block of queries and keys. Input and output
/// scores are `[batch, groups, queries·n_rep, keys]` f32 contiguous: row `qi·n_rep + rep` of
/// group g is query `query_offset + qi` of head g·n_rep + rep, column j is key `key_offset + j`.
#[derive(Debug, Clone)]
pub struct MaskedSoftmax {
    /// Padded index of each query of the layer, `[batch * total_queries]`.
    pub query_index: Arc<Vec<usize>>,
    /// Queries per batch row in `query_index`.
    pub total_queries: usize,
    /// First query of this block.
    pub query_offset: usize,
    /// Query heads per key/value head.
    pub n_rep: usize,
    /// Whether each key is real, `[batch * seq_len]`.
    pub key_ok: Arc<Vec<bool>>,
    /// Padded length (keys per batch row in `key_ok`).
    pub seq_len: usize,
    /// First key of this block.
    pub key_offset: usize,
    /// [`KeySpan`] of each batch row, `[batch]`.
    pub spans: Arc<Vec<KeySpan>>,
    /// Sliding window (tokens), if this layer uses one.
    pub window: Option<usize>,
    /// Multiplier applied to the raw scores.
    pub scale: f32,
    /// Gemma 2 soft-capping: s ← c·tanh(s / c), after scaling and before masking.
    pub softcap: Option<f32>,
}

const LANES: usize = 16;

impl MaskedSoftmax {
    #[inline]
    fn transform(&self, s: f32) -> f32 {
        let s = s * self.scale;
        match self.softcap {
            Some(c) => fastmath::tanh(s / c) * c,
            None => s,
        }
    }

    /// Softmax of the visible keys `src` (all visible) into `dst`: max, then e^(s − max) summed
    /// in 16 fixed lanes (the lane of a key is its offset from the first visible key, so the
    /// same visible keys give the same sum wherever padding puts them), then normalised.
    fn dense(&self, src: &[f32], dst: &mut [f32]) {
        match self.softcap {
            None => {
                for (d, s) in dst.iter_mut().zip(src) {
                    *d = *s * self.scale;
                }
            }
            Some(_) => {
                for (d, s) in dst.iter_mut().zip(src) {
                    *d = self.transform(*s);
                }
            }
        }
        let mut lanes = [f32::NEG_INFINITY; LANES];
        let mut chunks = dst.chunks_exact(LANES);
        for c in &mut chunks {
            for (l, v) in lanes.iter_mut().zip(c) {
                *l = l.max(*v);
            }
        }
        let max = chunks
            .remainder()
            .iter()
            .fold(lanes.iter().copied().fold(f32::NEG_INFINITY, f32::max), |a, &b| a.max(b));
        let mut sums = [0f32; LANES];
        let mut chunks = dst.chunks_exact_mut(LANES);
        for c in &mut chunks {
            for (l, v) in sums.iter_mut().zip(c.iter_mut()) {
                *v = fastmath::exp(*v - max);
                *l += *v;
            }
        }
        for (l, v) in sums.iter_mut().zip(chunks.into_remainder()) {
            *v = fastmath::exp(*v - max);
            *l += *v;
        }
        let sum = sums.iter().sum::<f32>();
        let inv = 1.0 / sum;
        for d in dst.iter_mut() {
            *d *= inv;
        }
    }

    /// Probabilities of one row of the block (`src`/`dst` are its key scores); `qi` counts from
    /// `query_offset`.
    fn row(&self, b: usize, qi: usize, src: &[f32], dst: &mut [f32]) {
        let tk = src.len();
        let ko = self.key_offset;
        let q = self.query_index[b * self.total_queries + self.query_offset + qi];
        let keys = &self.key_ok[b * self.seq_len..(b + 1) * self.seq_len];
        let span = self.spans[b];
        // Visible keys, absolute indices: causal, window, and this block's key range.
        let lo = self.window.map_or(0, |w| (q + 1).saturating_sub(w)).max(ko);
        let hi = q.min(ko + tk - 1);
        dst.fill(0.0);
        if span.contiguous {
            let (lo, hi) = (lo.max(span.first), hi.min(span.last));
            if span.first == usize::MAX || lo > hi {
                dst.fill(1.0 / tk as f32);
            } else {
                self.dense(&src[lo - ko..=hi - ko], &mut dst[lo - ko..=hi - ko]);
            }
            return;
        }
        // Arbitrary mask: per-key checks.
        let mut max = f32::NEG_INFINITY;
        let mut any = false;
        for k in lo..=hi {
            if allowed(q, k, keys[k], self.window) {
                let s = self.transform(src[k - ko]);
                dst[k - ko] = s;
                max = max.max(s);
                any = true;
            }
        }
        if !any {
            dst.fill(1.0 / tk as f32);
            return;
        }
        let mut sum = 0.0f32;
        for k in lo..=hi {
            if keys[k] {
                let e = fastmath::exp(dst[k - ko] - max);
                dst[k - ko] = e;
                sum += e;
            }
        }
        let inv = 1.0 / sum;
        for k in lo..=hi {
            if keys[k] {
                dst[k - ko] *= inv;
            }
        }
    }
}

impl CustomOp1 for MaskedSoftmax {
    fn name(&self) -> &'static str {
        "prbench-masked-softmax"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let CpuStorage::F32(data) = storage else {
            candle_core::bail!("masked softmax: f32 scores expected")
        };
        let Some((o1, o2)) = layout.contiguous_offsets() else {
            candle_core::bail!("masked softmax: contiguous scores expected")
        };
        let src = &data[o1..o2];
        let (batch, groups, rows, tk) = layout.shape().dims4()?;
        if self.n_rep == 0
            || rows % self.n_rep != 0
            || self.query_offset + rows / self.n_rep > self.total_queries
            || self.query_index.len() != batch * self.total_queries
            || self.key_ok.len() != batch * self.seq_len
            || self.key_offset + tk > self.seq_len
            || self.spans.len() != batch
            || tk == 0
        {
            candle_core::bail!(
                "masked softmax: scores {:?} do not match the batch layout",
                layout.shape()
            );
        }
        let per_batch = groups * rows;
        let mut dst = vec![0f32; src.len()];
        for_row_chunks(&mut dst, tk, |first, chunk| {
            for (i, d) in chunk.chunks_exact_mut(tk).enumerate() {
                let r = first + i;
                self.row(r / per_batch, (r % rows) / self.n_rep, &src[r * tk..(r + 1) * tk], d);
            }
        });
        Ok((CpuStorage::F32(dst), layout.shape().clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Tensor};

    fn reference(
        scores: &[f32],
        q: usize,
        key_ok: &[bool],
        window: Option<usize>,
        scale: f32,
        cap: Option<f32>,
    ) -> Vec<f32> {
        // transformers: softmax(cap(s * scale) + mask), mask = f32::MIN where not allowed.
        let s: Vec<f32> = scores
            .iter()
            .enumerate()
            .map(|(k, &x)| {
                let x = x * scale;
                let x = cap.map_or(x, |c| (x / c).tanh() * c);
                x + if allowed(q, k, key_ok[k], window) { 0.0 } else { f32::MIN }
            })
            .collect();
        let max = s.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let e: Vec<f32> = s.iter().map(|&x| (x - max).exp()).collect();
        let sum: f32 = e.iter().sum();
        e.iter().map(|&x| x / sum).collect()
    }

    #[test]
    fn matches_additive_mask_softmax() {
        let tk = 5;
        // Contiguous (left padding) and non-contiguous real keys; with and without softcap.
        for key_ok in [vec![false, true, true, true, true], vec![true, false, true, true, true]] {
            for (softcap, window) in [(None, None), (None, Some(2)), (Some(1.5f32), None)] {
                let scores: Vec<f32> = (0..2 * tk).map(|i| (i as f32 * 0.7).sin() * 3.0).collect();
                let t = Tensor::from_vec(scores.clone(), (1, 1, 2, tk), &Device::Cpu).unwrap();
                let op = MaskedSoftmax {
                    query_index: Arc::new(vec![0, 4]),
                    total_queries: 2,
                    query_offset: 0,
                    n_rep: 1,
                    spans: Arc::new(KeySpan::of_rows(&key_ok, tk)),
                    key_ok: Arc::new(key_ok.clone()),
                    seq_len: tk,
                    key_offset: 0,
                    window,
                    scale: 0.5,
                    softcap,
                };
                let out = t
                    .apply_op1_no_bwd(&op)
                    .unwrap()
                    .flatten_all()
                    .unwrap()
                    .to_vec1::<f32>()
                    .unwrap();
                for (qi, q) in [0usize, 4].into_iter().enumerate() {
                    let want = reference(
                        &scores[qi * tk..(qi + 1) * tk],
                        q,
                        &key_ok,
                        window,
                        0.5,
                        softcap,
                    );
                    for (a, b) in out[qi * tk..(qi + 1) * tk].iter().zip(&want) {
                        assert!(
                            (a - b).abs() < 3e-7,
                            "{key_ok:?} {softcap:?} {window:?} q {q}: {a} vs {b}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn key_blocks_give_the_same_rows() {
        // Query 3 of a 6-key row, computed over keys 0..6 and over the block 2..4 (window 2).
        let key_ok = vec![true; 6];
        let scores: Vec<f32> = (0..6).map(|i| i as f32 * 0.37 - 1.0).collect();
        let mk = |key_offset: usize, n: usize| {
            let op = MaskedSoftmax {
                query_index: Arc::new(vec![3]),
                total_queries: 1,
                query_offset: 0,
                n_rep: 1,
                spans: Arc::new(KeySpan::of_rows(&key_ok, 6)),
                key_ok: Arc::new(key_ok.clone()),
                seq_len: 6,
                key_offset,
                window: Some(2),
                scale: 1.0,
                softcap: None,
            };
            let t = Tensor::from_vec(
                scores[key_offset..key_offset + n].to_vec(),
                (1, 1, 1, n),
                &Device::Cpu,
            )
            .unwrap();
            t.apply_op1_no_bwd(&op).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap()
        };
        let full = mk(0, 6);
        let block = mk(2, 2);
        assert_eq!(&full[2..4], &block[..]);
        assert!((full.iter().sum::<f32>() - 1.0).abs() < 1e-6);
    }
}
