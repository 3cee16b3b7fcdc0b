//! Grouped-query self-attention, `<Arch>Attention.forward` + `eager_attention_forward`
//! (transformers `modeling_<arch>.py`):
//!
//! q, k, v = x·W_qᵀ, x·W_kᵀ, x·W_vᵀ (one GEMM over the stacked weights, optional biases);
//! Qwen 3 RMS-normalises q and k per head; RoPE on q and k; scores = q·kᵀ · scale (soft-capped
//! for Gemma 2), masked, softmax over keys, times v; out = concat_heads · W_oᵀ.
//!
//! GQA without copying K/V: the `n_rep` query heads that share one key/value head are adjacent
//! (`repeat_kv` expands head j into heads j·n_rep … j·n_rep + n_rep − 1), so q is laid out
//! `[b, kv_heads, t, n_rep, d]` and each key/value head is multiplied once by all its queries in
//! a single batched matmul. The head split, q/k norms and RoPE are one pass ([`SplitHeads`]),
//! the mask and softmax another ([`MaskedSoftmax`]). Queries are processed in causal blocks
//! ([`query_blocks`]): a block of queries is multiplied only by the keys it can see, which skips
//! most of the masked upper triangle and bounds the score matrix's memory.

use std::sync::Arc;

use candle_core::{Result, Tensor};
use prbench_models::ModelError;

use super::config::{DecoderConfig, LayerKind};
use super::linear::Linear;
use super::prefix::LayerKv;
use super::qkv::{HeadNorm, QueryRows, SplitHeads};
use super::softmax::{KeySpan, MaskedSoftmax};
use super::weights::Weights;

/// Per-forward-pass inputs shared by every attention layer.
#[derive(Debug, Clone)]
pub struct PassInputs {
    /// Query tokens per attention block.
    pub query_block: usize,
    /// Rows.
    pub batch: usize,
    /// Padded length (tokens per row computed in this pass).
    pub seq_len: usize,
    /// Keys per row: `seq_len`, or prefix length + `seq_len` when the rows continue a cached
    /// prefix ([`Kv::Prefix`]).
    pub key_len: usize,
    /// Key index of each row's token 0 (0, or the prefix length when continuing a prefix):
    /// token j of a row is key `query_base + j`.
    pub query_base: usize,
    /// Where the cached prefix goes in each row's keys, `[batch]` (see
    /// [`LayerKv::join`]); empty when there is no prefix.
    pub join_at: Arc<Vec<usize>>,
    /// RoPE cos of every token, `[batch * seq_len * head_dim / 2]`.
    pub cos: Arc<Vec<f32>>,
    /// RoPE sin of every token.
    pub sin: Arc<Vec<f32>>,
    /// Whether each key is real, `[batch * key_len]`.
    pub key_ok: Arc<Vec<bool>>,
    /// Real-key span of each batch row.
    pub spans: Arc<Vec<KeySpan>>,
    /// Key index of every token (`query_base + 0..seq_len` per row), `[batch * seq_len]`.
    pub all_queries: Arc<Vec<usize>>,
    /// Flat row index of each pooled token, u32 `[batch]` (for `index_select`).
    pub pooled_rows: Tensor,
    /// Flat row index of each pooled token, `[batch]`.
    pub pooled_flat: Arc<Vec<usize>>,
    /// Key index of each pooled token, `[batch]`.
    pub pooled_queries: Arc<Vec<usize>>,
    /// RoPE cos of the pooled tokens, `[batch * head_dim / 2]`.
    pub pooled_cos: Arc<Vec<f32>>,
    /// RoPE sin of the pooled tokens.
    pub pooled_sin: Arc<Vec<f32>>,
}

/// Default query tokens per attention block (see [`Attention::forward`]).
pub const QUERY_BLOCK: usize = 64;

/// Query blocks `[s, e)` covering `0..n`, `block` long (one block when n ≤ 2·block, where
/// splitting saves little).
pub fn query_blocks(n: usize, block: usize) -> Vec<(usize, usize)> {
    let block = block.max(1);
    if n <= 2 * block {
        return vec![(0, n)];
    }
    (0..n).step_by(block).map(|s| (s, (s + block).min(n))).collect()
}

/// Which queries an attention layer computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queries {
    /// Every token (all layers but the last).
    All,
    /// Only the pooled token of each row (the last layer: nothing else reaches the head).
    Pooled,
}

/// Where a layer's keys and values come from.
#[derive(Debug)]
pub enum Kv<'a> {
    /// The tokens of this pass only.
    Own,
    /// The tokens of this pass only, and the layer's kᵀ and v are appended to the vector
    /// (the prefix pass of [`super::prefix`]).
    Record(&'a mut Vec<LayerKv>),
    /// A cached prefix's keys and values followed by this pass's, joined per row at
    /// [`PassInputs::join_at`].
    Prefix(&'a LayerKv),
}

/// One attention layer.
#[derive(Debug, Clone)]
pub struct Attention {
    qkv: Linear,
    o: Linear,
    q_norm: Option<Arc<HeadNorm>>,
    k_norm: Option<Arc<HeadNorm>>,
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    scale: f32,
    softcap: Option<f32>,
    window: Option<usize>,
}

impl Attention {
    /// Reads `{prefix}.{q,k,v,o}_proj` (biases per the configuration) and, for Qwen 3,
    /// `{prefix}.{q,k}_norm`.
    ///
    /// # Errors
    /// As [`Weights::tensor`].
    pub fn load(
        w: &mut Weights,
        prefix: &str,
        cfg: &DecoderConfig,
        kind: LayerKind,
    ) -> std::result::Result<Self, ModelError> {
        let (h, nh, nkv, d) =
            (cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim);
        let q = Linear::load(w, &format!("{prefix}.q_proj"), h, nh * d, cfg.qkv_bias)?;
        let k = Linear::load(w, &format!("{prefix}.k_proj"), h, nkv * d, cfg.qkv_bias)?;
        let v = Linear::load(w, &format!("{prefix}.v_proj"), h, nkv * d, cfg.qkv_bias)?;
        let o = Linear::load(w, &format!("{prefix}.o_proj"), nh * d, h, cfg.o_bias)?;
        let qkv = Linear::concat(&[q, k, v]).map_err(|e| ModelError::engine(prefix, e))?;
        let mut head_norm = |name: &str| -> std::result::Result<Arc<HeadNorm>, ModelError> {
            let t = w.tensor(&format!("{prefix}.{name}.weight"), &[d])?;
            let weight = t
                .to_vec1::<f32>()
                .map_err(|e| ModelError::engine(format!("{prefix}.{name}"), e))?;
            Ok(Arc::new(HeadNorm { weight, eps: cfg.rms_norm_eps as f32 }))
        };
        let (q_norm, k_norm) = if cfg.qk_norm {
            (Some(head_norm("q_norm")?), Some(head_norm("k_norm")?))
        } else {
            (None, None)
        };
        Ok(Self {
            qkv,
            o,
            q_norm,
            k_norm,
            heads: nh,
            kv_heads: nkv,
            head_dim: d,
            scale: cfg.attn_scale as f32,
            softcap: cfg.attn_logit_softcapping.map(|c| c as f32),
            window: if kind == LayerKind::Sliding { cfg.sliding_window } else { None },
        })
    }

    /// `x`: normalised hidden states `[batch * seq_len, hidden]`. Returns the attention output
    /// after `o_proj`: `[batch * seq_len, hidden]` for [`Queries::All`], `[batch, hidden]` for
    /// [`Queries::Pooled`] (row b = the pooled token of batch row b). `kv` says which keys the
    /// queries see (see [`Kv`]).
    ///
    /// # Errors
    /// A candle error on a shape mismatch.
    pub fn forward(
        &self,
        x: &Tensor,
        p: &PassInputs,
        queries: Queries,
        kv: Kv<'_>,
    ) -> Result<Tensor> {
        let (q, kt, v) = self.project(x, p, queries)?;
        let (kt, v) = match kv {
            Kv::Own => (kt, v),
            Kv::Record(store) => {
                store.push(LayerKv { kt: kt.clone(), v: v.clone() });
                (kt, v)
            }
            Kv::Prefix(prefix) => prefix.join(&kt, &v, &p.join_at)?,
        };
        self.attend(&q, &kt, &v, p, queries)
    }

    /// This layer's kᵀ `[batch, kv_heads, head_dim, seq_len]` and v `[batch, kv_heads,
    /// seq_len, head_dim]` (after k norm and RoPE) of the normalised hidden states `x`
    /// (`[batch * seq_len, hidden]`), without attending: the last layer of a prefix pass.
    ///
    /// # Errors
    /// A candle error on a shape mismatch.
    pub fn keys_values(&self, x: &Tensor, p: &PassInputs) -> Result<LayerKv> {
        let (_, kt, v) = self.project(x, p, Queries::Pooled)?;
        Ok(LayerKv { kt, v })
    }

    /// The fused projection split into q `[batch, kv_heads, queries·n_rep, d]`, kᵀ `[batch,
    /// kv_heads, d, seq_len]` and v `[batch, kv_heads, seq_len, d]` ([`SplitHeads`]).
    fn project(
        &self,
        x: &Tensor,
        p: &PassInputs,
        queries: Queries,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        let (b, t, d) = (p.batch, p.seq_len, self.head_dim);
        let (nh, nkv) = (self.heads, self.kv_heads);
        let qkv = self.qkv.forward(x)?;
        let (rows, tq) = match queries {
            Queries::All => (QueryRows::All, t),
            Queries::Pooled => (
                QueryRows::Pooled {
                    rows: p.pooled_flat.clone(),
                    cos: p.pooled_cos.clone(),
                    sin: p.pooled_sin.clone(),
                },
                1,
            ),
        };
        let split = SplitHeads {
            batch: b,
            seq_len: t,
            heads: nh,
            kv_heads: nkv,
            head_dim: d,
            cos: p.cos.clone(),
            sin: p.sin.clone(),
            queries: rows,
            q_norm: self.q_norm.clone(),
            k_norm: self.k_norm.clone(),
        };
        let (qn, kn, vn) = split.sizes();
        let parts = qkv.apply_op1_no_bwd(&split)?;
        let n_rep = nh / nkv;
        let q = parts.narrow(0, 0, qn)?.reshape((b, nkv, tq * n_rep, d))?;
        let kt = parts.narrow(0, qn, kn)?.reshape((b, nkv, d, t))?;
        let v = parts.narrow(0, qn + kn, vn)?.reshape((b, nkv, t, d))?;
        Ok((q, kt, v))
    }

    /// Masked softmax(q·kᵀ)·v and `o_proj`; kᵀ and v hold `p.key_len` keys per row.
    fn attend(
        &self,
        q: &Tensor,
        kt: &Tensor,
        v: &Tensor,
        p: &PassInputs,
        queries: Queries,
    ) -> Result<Tensor> {
        let (b, d, nh, nkv) = (p.batch, self.head_dim, self.heads, self.kv_heads);
        let n_rep = nh / nkv;
        let (tq, query_index) = match queries {
            Queries::All => (p.seq_len, p.all_queries.clone()),
            Queries::Pooled => (1, p.pooled_queries.clone()),
        };
        let tk = p.key_len;
        // Causal blocks: queries s..e (keys base + s .. base + e) only need keys ..base + e
        // (and, with a window, from base + s + 1 − w), so the score matrix is computed block by
        // block, skipping most of its masked upper triangle and bounding its memory. kᵀ is
        // contiguous, so gemm takes its general kernel, whose per-element sums (sequential over
        // d, and over keys for p·v) do not depend on the block or the batch: a sequence scores
        // the same alone and in a padded batch.
        let mut outs = Vec::new();
        for (s, e) in query_blocks(tq, p.query_block) {
            let (klo, khi) = match queries {
                Queries::All => {
                    let (s, e) = (p.query_base + s, p.query_base + e);
                    (self.window.map_or(0, |w| (s + 1).saturating_sub(w)), e)
                }
                Queries::Pooled => (0, tk),
            };
            let qb = q.narrow(2, s * n_rep, (e - s) * n_rep)?;
            let scores = qb.matmul(&kt.narrow(3, klo, khi - klo)?)?;
            let probs = scores.apply_op1_no_bwd(&MaskedSoftmax {
                query_index: query_index.clone(),
                total_queries: tq,
                query_offset: s,
                n_rep,
                key_ok: p.key_ok.clone(),
                seq_len: tk,
                key_offset: klo,
                spans: p.spans.clone(),
                window: self.window,
                scale: self.scale,
                softcap: self.softcap,
            })?;
            outs.push(probs.matmul(&v.narrow(2, klo, khi - klo)?)?); // [b, nkv, (e − s)·n_rep, d]
        }
        let out = if outs.len() == 1 { outs.remove(0) } else { Tensor::cat(&outs, 2)? };
        // [b, nkv, tq, n_rep·d] → [b, tq, nkv, n_rep·d] = [b·tq, heads·d] (head g·n_rep + rep).
        let out = out
            .reshape((b, nkv, tq, n_rep * d))?
            .transpose(1, 2)?
            .contiguous()?
            .reshape((b * tq, nh * d))?;
        self.o.forward(&out)
    }
}
