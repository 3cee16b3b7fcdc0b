//! One pass from the fused q/k/v projection to the attention operands: split into heads,
//! optional per-head RMSNorm (Qwen 3 `q_norm`/`k_norm`, applied before RoPE as in
//! `Qwen3Attention.forward`), RoPE (transformers `apply_rotary_pos_emb` with `rotate_half`:
//! x₁·cos − x₂·sin, x₂·cos + x₁·sin, the same products and sums in the same order), and the
//! layouts the two attention matmuls want, written once:
//!
//! - q  `[batch, kv_heads, queries, n_rep, d]` (queries = every token, or one pooled token per
//!   row; the n_rep query heads sharing key/value head g are heads g·n_rep … g·n_rep + n_rep − 1,
//!   as transformers' `repeat_kv`), so that a block of queries is a block of rows,
//! - kᵀ `[batch, kv_heads, d, seq_len]` (already transposed for q·kᵀ),
//! - v  `[batch, kv_heads, seq_len, d]`,
//!
//! concatenated in that order in one flat f32 tensor.

use std::sync::Arc;

use candle_core::{CpuStorage, CustomOp1, Layout, Result, Shape};

use super::par::for_row_chunks;

/// Per-head RMSNorm weights (`[head_dim]`) and epsilon.
#[derive(Debug, Clone)]
pub struct HeadNorm {
    /// Scale, `[head_dim]`.
    pub weight: Vec<f32>,
    /// Epsilon.
    pub eps: f32,
}

/// Which tokens get queries.
#[derive(Debug, Clone)]
pub enum QueryRows {
    /// Every token, with the per-token RoPE tables.
    All,
    /// One token per batch row: its flat row index (`b * seq_len + i`), and its RoPE cos/sin
    /// `[batch * head_dim / 2]`.
    Pooled {
        /// Flat row index per batch row.
        rows: Arc<Vec<usize>>,
        /// cos per batch row.
        cos: Arc<Vec<f32>>,
        /// sin per batch row.
        sin: Arc<Vec<f32>>,
    },
}

/// The head split of one layer for one batch; input `[batch * seq_len, (heads + 2·kv_heads)·d]`
/// contiguous f32 (q heads, then k heads, then v heads, as `Linear::concat` stacks them).
#[derive(Debug, Clone)]
pub struct SplitHeads {
    /// Rows.
    pub batch: usize,
    /// Padded length.
    pub seq_len: usize,
    /// Query heads.
    pub heads: usize,
    /// Key/value heads.
    pub kv_heads: usize,
    /// Head width (even).
    pub head_dim: usize,
    /// RoPE cos per token, `[batch * seq_len * head_dim / 2]`.
    pub cos: Arc<Vec<f32>>,
    /// RoPE sin per token.
    pub sin: Arc<Vec<f32>>,
    /// Query selection.
    pub queries: QueryRows,
    /// Qwen 3 q norm.
    pub q_norm: Option<Arc<HeadNorm>>,
    /// Qwen 3 k norm.
    pub k_norm: Option<Arc<HeadNorm>>,
}

/// Normalises (optionally) and rotates one head vector `x` (`[d]`) into `out`; `buf` is scratch
/// of length d. RMSNorm as `candle_nn::ops::rms_norm`: x / √(Σx²/d + ε) · w.
#[inline]
fn rope_head(
    x: &[f32],
    norm: Option<&HeadNorm>,
    cos: &[f32],
    sin: &[f32],
    buf: &mut [f32],
    out: &mut [f32],
) {
    let d = x.len();
    let h = d / 2;
    let x = match norm {
        Some(n) => {
            let sum2: f32 = x.iter().map(|v| v * v).sum();
            let m = (sum2 / d as f32 + n.eps).sqrt();
            for ((b, v), w) in buf.iter_mut().zip(x).zip(&n.weight) {
                *b = *v / m * *w;
            }
            &*buf
        }
        None => x,
    };
    for i in 0..h {
        out[i] = x[i] * cos[i] - x[i + h] * sin[i];
        out[i + h] = x[i] * sin[i] + x[i + h] * cos[i];
    }
}

impl SplitHeads {
    fn queries(&self) -> usize {
        match &self.queries {
            QueryRows::All => self.seq_len,
            QueryRows::Pooled { .. } => 1,
        }
    }

    /// Element counts of the q, kᵀ and v parts of the output.
    pub fn sizes(&self) -> (usize, usize, usize) {
        let kv = self.batch * self.kv_heads * self.seq_len * self.head_dim;
        (self.batch * self.heads * self.queries() * self.head_dim, kv, kv)
    }
}

impl CustomOp1 for SplitHeads {
    fn name(&self) -> &'static str {
        "prbench-split-heads"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let CpuStorage::F32(data) = storage else {
            candle_core::bail!("split heads: f32 expected")
        };
        let Some((o1, o2)) = layout.contiguous_offsets() else {
            candle_core::bail!("split heads: contiguous input expected")
        };
        let src = &data[o1..o2];
        let (b, t, nh, nkv, d) =
            (self.batch, self.seq_len, self.heads, self.kv_heads, self.head_dim);
        let width = (nh + 2 * nkv) * d;
        let half = d / 2;
        if layout.shape().dims() != [b * t, width]
            || self.cos.len() != b * t * half
            || d % 2 != 0
            || nh % nkv != 0
        {
            candle_core::bail!("split heads: input {:?} does not match the layout", layout.shape());
        }
        let tq = self.queries();
        let (qn, kn, vn) = self.sizes();
        let mut out = vec![0f32; qn + kn + vn];
        let (q_out, rest) = out.split_at_mut(qn);
        let (k_out, v_out) = rest.split_at_mut(kn);

        // q: output row (bi, g, qi, rep) ← head h = g·n_rep + rep of that query's token.
        let n_rep = nh / nkv;
        for_row_chunks(q_out, d, |first, chunk| {
            let mut buf = vec![0f32; d];
            for (i, o) in chunk.chunks_exact_mut(d).enumerate() {
                let r = first + i;
                let (bi, g, qi, rep) =
                    (r / (nkv * tq * n_rep), (r / (tq * n_rep)) % nkv, (r / n_rep) % tq, r % n_rep);
                let h = g * n_rep + rep;
                let (row, cos, sin) = match &self.queries {
                    QueryRows::All => {
                        let row = bi * t + qi;
                        (
                            row,
                            &self.cos[row * half..(row + 1) * half],
                            &self.sin[row * half..(row + 1) * half],
                        )
                    }
                    QueryRows::Pooled { rows, cos, sin } => (
                        rows[bi],
                        &cos[bi * half..(bi + 1) * half],
                        &sin[bi * half..(bi + 1) * half],
                    ),
                };
                let x = &src[row * width + h * d..row * width + (h + 1) * d];
                rope_head(x, self.q_norm.as_deref(), cos, sin, &mut buf, o);
            }
        });
        // kᵀ: one (bi, g) block [d, t] per chunk row.
        for_row_chunks(k_out, d * t, |first, chunk| {
            let (mut buf, mut rot) = (vec![0f32; d], vec![0f32; d]);
            for (i, block) in chunk.chunks_exact_mut(d * t).enumerate() {
                let (bi, g) = ((first + i) / nkv, (first + i) % nkv);
                for j in 0..t {
                    let row = bi * t + j;
                    let col = (nh + g) * d;
                    let x = &src[row * width + col..row * width + col + d];
                    let (cos, sin) = (
                        &self.cos[row * half..(row + 1) * half],
                        &self.sin[row * half..(row + 1) * half],
                    );
                    rope_head(x, self.k_norm.as_deref(), cos, sin, &mut buf, &mut rot);
                    for (e, v) in rot.iter().enumerate() {
                        block[e * t + j] = *v;
                    }
                }
            }
        });
        // v: output row (bi, g, j) ← input row bi·t + j, columns (nh + nkv + g)·d…
        for_row_chunks(v_out, d, |first, chunk| {
            for (i, o) in chunk.chunks_exact_mut(d).enumerate() {
                let r = first + i;
                let (bi, g, j) = (r / (nkv * t), (r / t) % nkv, r % t);
                let row = bi * t + j;
                let col = (nh + nkv + g) * d;
                o.copy_from_slice(&src[row * width + col..row * width + col + d]);
            }
        });
        let n = out.len();
        Ok((CpuStorage::F32(out), Shape::from_dims(&[n])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Tensor};

    #[test]
    fn matches_candle_rope_and_transposes() {
        let (b, t, nh, nkv, d) = (2usize, 3usize, 4usize, 2usize, 4usize);
        let width = (nh + 2 * nkv) * d;
        let src: Vec<f32> =
            (0..b * t * width).map(|i| ((i * 37 % 101) as f32 - 50.0) / 17.0).collect();
        let half = d / 2;
        let cos: Vec<f32> = (0..b * t * half).map(|i| (i as f32 * 0.3).cos()).collect();
        let sin: Vec<f32> = (0..b * t * half).map(|i| (i as f32 * 0.3).sin()).collect();
        let op = SplitHeads {
            batch: b,
            seq_len: t,
            heads: nh,
            kv_heads: nkv,
            head_dim: d,
            cos: Arc::new(cos.clone()),
            sin: Arc::new(sin.clone()),
            queries: QueryRows::All,
            q_norm: None,
            k_norm: None,
        };
        let dev = Device::Cpu;
        let x = Tensor::from_vec(src, (b * t, width), &dev).unwrap();
        let out = x.apply_op1_no_bwd(&op).unwrap();
        let (qn, kn, _) = op.sizes();
        let cos_t = Tensor::from_vec(cos, (b, t, half), &dev).unwrap();
        let sin_t = Tensor::from_vec(sin, (b, t, half), &dev).unwrap();
        let heads = |from: usize, n: usize| {
            x.narrow(1, from * d, n * d)
                .unwrap()
                .reshape((b, t, n, d))
                .unwrap()
                .transpose(1, 2)
                .unwrap()
                .contiguous()
                .unwrap()
        };
        let q_ref = candle_nn::rotary_emb::rope(&heads(0, nh), &cos_t, &sin_t).unwrap();
        let q_ref = q_ref
            .reshape((b, nkv, nh / nkv, t, d))
            .unwrap()
            .transpose(2, 3)
            .unwrap()
            .contiguous()
            .unwrap();
        let k_ref = candle_nn::rotary_emb::rope(&heads(nh, nkv), &cos_t, &sin_t).unwrap();
        let v_ref = heads(nh + nkv, nkv);
        let flat = |t: &Tensor| t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        let got = flat(&out);
        assert_eq!(got[..qn], flat(&q_ref)[..]);
        assert_eq!(got[qn..qn + kn], flat(&k_ref.t().unwrap().contiguous().unwrap())[..]);
        assert_eq!(got[qn + kn..], flat(&v_ref)[..]);
    }
}
