//! The decoder stack, `<Arch>Model.forward` (transformers `modeling_<arch>.py`): token
//! embeddings (× √hidden for Gemma 2), pre-norm layers, final norm. It returns the final hidden
//! state of the pooled token of each row only; the last layer computes its queries, MLP and
//! norms for those tokens alone, since no other position reaches the head.
//!
//! The same stack also runs a token prefix once, keeping every layer's keys and values
//! ([`DecoderModel::prefix_kv`]), and batches of suffixes against it
//! ([`DecoderModel::forward_pooled_shared`]); see [`super::prefix`].

use std::sync::Arc;

use candle_core::{Device, Result, Tensor};
use prbench_models::ModelError;

use super::attention::{Attention, Kv, PassInputs, Queries, QUERY_BLOCK};
use super::config::DecoderConfig;
use super::mask::{BatchLayout, Positions};
use super::mlp::Mlp;
use super::norm::RmsNorm;
use super::prefix::{PrefixKv, SharedLayout};
use super::rope::Rope;
use super::softmax::KeySpan;
use super::weights::Weights;

/// One decoder layer (`<Arch>DecoderLayer.forward`).
///
/// Llama / Qwen / Mistral: x += attn(norm_in(x)); x += mlp(norm_post_attn(x)).
/// Gemma 2: x += norm_post_attn(attn(norm_in(x))); x += norm_post_ff(mlp(norm_pre_ff(x))).
#[derive(Debug, Clone)]
pub struct DecoderLayer {
    attn: Attention,
    mlp: Mlp,
    input_norm: RmsNorm,
    post_attn_norm: RmsNorm,
    /// Gemma 2 only.
    ff_norms: Option<(RmsNorm, RmsNorm)>,
}

impl DecoderLayer {
    fn load(
        w: &mut Weights,
        i: usize,
        cfg: &DecoderConfig,
    ) -> std::result::Result<Self, ModelError> {
        let p = format!("model.layers.{i}");
        let (h, eps, g) = (cfg.hidden_size, cfg.rms_norm_eps, cfg.gemma_layout);
        let attn = Attention::load(w, &format!("{p}.self_attn"), cfg, cfg.layer_types[i])?;
        let mlp = Mlp::load(w, &format!("{p}.mlp"), cfg)?;
        let input_norm = RmsNorm::load(w, &format!("{p}.input_layernorm.weight"), h, eps, g)?;
        let post_attn_norm =
            RmsNorm::load(w, &format!("{p}.post_attention_layernorm.weight"), h, eps, g)?;
        let ff_norms = if g {
            Some((
                RmsNorm::load(w, &format!("{p}.pre_feedforward_layernorm.weight"), h, eps, g)?,
                RmsNorm::load(w, &format!("{p}.post_feedforward_layernorm.weight"), h, eps, g)?,
            ))
        } else {
            None
        };
        Ok(Self { attn, mlp, input_norm, post_attn_norm, ff_norms })
    }

    /// `x`: `[batch * seq_len, hidden]`. Returns `[batch * seq_len, hidden]` for
    /// [`Queries::All`], `[batch, hidden]` (pooled tokens) for [`Queries::Pooled`]; `kv` as
    /// [`Attention::forward`].
    fn forward(&self, x: &Tensor, p: &PassInputs, queries: Queries, kv: Kv<'_>) -> Result<Tensor> {
        let a = self.attn.forward(&self.input_norm.forward(x)?, p, queries, kv)?;
        let residual = match queries {
            Queries::All => x.clone(),
            Queries::Pooled => x.index_select(&p.pooled_rows, 0)?,
        };
        match &self.ff_norms {
            None => {
                let x = (residual + a)?;
                let m = self.mlp.forward(&self.post_attn_norm.forward(&x)?)?;
                x + m
            }
            Some((pre, post)) => {
                let x = (residual + self.post_attn_norm.forward(&a)?)?;
                let m = self.mlp.forward(&pre.forward(&x)?)?;
                x + post.forward(&m)?
            }
        }
    }
}

/// The decoder without a head.
#[derive(Debug)]
pub struct DecoderModel {
    embed: Tensor,
    embed_scale: Option<f64>,
    layers: Vec<DecoderLayer>,
    norm: RmsNorm,
    rope: Rope,
    hidden: usize,
    query_block: usize,
}

impl DecoderModel {
    /// Reads `model.embed_tokens.weight` `[vocab, hidden]`, `model.layers.{i}.*` and
    /// `model.norm.weight`.
    ///
    /// # Errors
    /// As [`Weights::tensor`] (a `vocab_size` in `config.json` that disagrees with the
    /// embedding matrix is a shape error).
    pub fn load(w: &mut Weights, cfg: &DecoderConfig) -> std::result::Result<Self, ModelError> {
        let name = "model.embed_tokens.weight";
        let vocab = match cfg.vocab_size {
            Some(v) => v,
            None => w.shape(name).and_then(|s| s.first().copied()).unwrap_or(0),
        };
        let embed = w.tensor(name, &[vocab, cfg.hidden_size])?;
        let layers = (0..cfg.num_hidden_layers)
            .map(|i| DecoderLayer::load(w, i, cfg))
            .collect::<std::result::Result<_, _>>()?;
        let norm = RmsNorm::load(
            w,
            "model.norm.weight",
            cfg.hidden_size,
            cfg.rms_norm_eps,
            cfg.gemma_layout,
        )?;
        // Gemma2TextScaledWordEmbedding: `torch.tensor(hidden ** 0.5)` (f32) cast to the
        // weights' dtype; in f32 compute that is √hidden rounded once to f32.
        let embed_scale =
            cfg.gemma_layout.then(|| f64::from((cfg.hidden_size as f64).sqrt() as f32));
        Ok(Self {
            embed,
            embed_scale,
            layers,
            norm,
            rope: Rope::new(cfg),
            hidden: cfg.hidden_size,
            query_block: QUERY_BLOCK,
        })
    }

    /// Sets the query tokens per attention block (default [`QUERY_BLOCK`]): the score matrix
    /// of a layer is computed `block` queries at a time, over the keys they can see, so its
    /// memory is `batch × heads × block × seq_len` floats. Results do not depend on it.
    pub fn set_query_block(&mut self, block: usize) {
        self.query_block = block.max(1);
    }

    /// Rows of the embedding matrix.
    pub fn vocab_size(&self) -> usize {
        self.embed.dim(0).unwrap_or(0)
    }

    /// Final hidden state (after the final norm) of each row's pooled token, `[batch, hidden]`.
    /// `input_ids` is `[batch * seq_len]`.
    ///
    /// # Errors
    /// A candle error on inconsistent shapes.
    pub fn forward_pooled(&self, input_ids: &[u32], layout: &BatchLayout) -> Result<Tensor> {
        let rows = PassRows {
            batch: layout.batch,
            seq_len: layout.seq_len,
            positions: &layout.positions,
            key_ok: layout.key_ok.clone(),
            query_base: 0,
            join_at: Vec::new(),
            pooled: layout.pooled.clone(),
        };
        self.run(input_ids, &rows, None)
    }

    /// Runs `ids` (one row, every token real) through every layer and keeps each layer's kᵀ
    /// and v ([`PrefixKv`]); the last layer computes its keys and values only.
    ///
    /// # Errors
    /// A candle error on an empty prefix or inconsistent shapes.
    pub fn prefix_kv(&self, ids: &[u32]) -> Result<PrefixKv> {
        let n = ids.len();
        if n == 0 {
            candle_core::bail!("prefix_kv: empty prefix");
        }
        // At least 3 keys (right-padded, masked), as SeqClsModel::logits does: gemm's p·v takes
        // another kernel for 1 or 2 keys. Padding keys are never seen by the real tokens.
        let t = n.max(3);
        let mask: Vec<u32> = (0..t).map(|i| u32::from(i < n)).collect();
        let padded: Vec<u32> = (0..t).map(|i| if i < n { ids[i] } else { 0 }).collect();
        let layout = BatchLayout::new(&padded, &mask, 1, t, None, Positions::FromMask);
        let rows = PassRows {
            batch: 1,
            seq_len: t,
            positions: &layout.positions,
            key_ok: layout.key_ok,
            query_base: 0,
            join_at: Vec::new(),
            pooled: vec![n - 1],
        };
        let (mut x, p) = self.embed_and_inputs(&padded, &rows)?;
        let mut layers = Vec::with_capacity(self.layers.len());
        let last = self.layers.len() - 1;
        for (i, layer) in self.layers.iter().enumerate() {
            if i == last {
                layers.push(layer.attn.keys_values(&layer.input_norm.forward(&x)?, &p)?);
            } else {
                x = layer.forward(&x, &p, Queries::All, Kv::Record(&mut layers))?;
            }
        }
        for l in &mut layers {
            l.kt = l.kt.narrow(3, 0, n)?.contiguous()?;
            l.v = l.v.narrow(2, 0, n)?.contiguous()?;
        }
        Ok(PrefixKv { layers, len: n })
    }

    /// Final hidden state (after the final norm) of each suffix row's pooled token, `[batch,
    /// hidden]`, the suffixes continuing the prefix of `prefix` (see [`super::prefix`]).
    /// Every row must pool a suffix token (`layout.pooled[r]` is `Some`).
    ///
    /// # Errors
    /// A candle error on a row without a pooled suffix token, a prefix of another length than
    /// the layout's, or inconsistent shapes.
    pub fn forward_pooled_shared(
        &self,
        prefix: &PrefixKv,
        layout: &SharedLayout,
    ) -> Result<Tensor> {
        if prefix.len != layout.prefix_len || prefix.layers.len() != self.layers.len() {
            candle_core::bail!(
                "shared pass: a {}-token prefix for a layout of {}",
                prefix.len,
                layout.prefix_len
            );
        }
        let pooled = layout
            .pooled
            .iter()
            .enumerate()
            .map(|(r, p)| {
                p.ok_or_else(|| {
                    candle_core::Error::Msg(format!("shared pass: row {r} pools a prefix token"))
                })
            })
            .collect::<Result<Vec<usize>>>()?;
        let rows = PassRows {
            batch: layout.batch,
            seq_len: layout.seq_len,
            positions: &layout.positions,
            key_ok: layout.key_ok.clone(),
            query_base: layout.prefix_len,
            join_at: layout.join_at.clone(),
            pooled,
        };
        self.run(&layout.ids, &rows, Some(prefix))
    }

    /// Embeddings of `input_ids` (`[batch * seq_len]`) and the pass inputs of `rows`.
    fn embed_and_inputs(
        &self,
        input_ids: &[u32],
        rows: &PassRows<'_>,
    ) -> Result<(Tensor, PassInputs)> {
        let (b, t) = (rows.batch, rows.seq_len);
        let dev = Device::Cpu;
        let ids = Tensor::from_slice(input_ids, b * t, &dev)?;
        let mut x = self.embed.index_select(&ids, 0)?;
        if let Some(s) = self.embed_scale {
            x = (x * s)?;
        }
        let (cos, sin) = self.rope.cos_sin_vec(rows.positions);
        let pooled_rows: Vec<u32> =
            rows.pooled.iter().enumerate().map(|(r, &i)| (r * t + i) as u32).collect();
        let pooled_positions: Vec<u32> =
            rows.pooled.iter().enumerate().map(|(r, &i)| rows.positions[r * t + i]).collect();
        let (pooled_cos, pooled_sin) = self.rope.cos_sin_vec(&pooled_positions);
        let key_len = rows.key_ok.len() / b.max(1);
        let base = rows.query_base;
        let p = PassInputs {
            query_block: self.query_block,
            batch: b,
            seq_len: t,
            key_len,
            query_base: base,
            join_at: Arc::new(rows.join_at.clone()),
            cos: Arc::new(cos),
            sin: Arc::new(sin),
            spans: Arc::new(KeySpan::of_rows(&rows.key_ok, key_len)),
            key_ok: Arc::new(rows.key_ok.clone()),
            all_queries: Arc::new((0..b).flat_map(|_| base..base + t).collect()),
            pooled_flat: Arc::new(pooled_rows.iter().map(|&r| r as usize).collect()),
            pooled_rows: Tensor::from_vec(pooled_rows, b, &dev)?,
            pooled_queries: Arc::new(rows.pooled.iter().map(|&i| base + i).collect()),
            pooled_cos: Arc::new(pooled_cos),
            pooled_sin: Arc::new(pooled_sin),
        };
        Ok((x, p))
    }

    /// The stack over one batch, with or without a cached prefix; `[batch, hidden]`.
    fn run(
        &self,
        input_ids: &[u32],
        rows: &PassRows<'_>,
        prefix: Option<&PrefixKv>,
    ) -> Result<Tensor> {
        let (mut x, p) = self.embed_and_inputs(input_ids, rows)?;
        let last = self.layers.len() - 1;
        for (i, layer) in self.layers.iter().enumerate() {
            let kv = match prefix {
                Some(pre) => Kv::Prefix(&pre.layers[i]),
                None => Kv::Own,
            };
            x = layer.forward(
                &x,
                &p,
                if i == last { Queries::Pooled } else { Queries::All },
                kv,
            )?;
        }
        let x = self.norm.forward(&x)?;
        debug_assert_eq!(x.dims(), &[rows.batch, self.hidden]);
        Ok(x)
    }
}

/// The rows of one forward pass: `batch × seq_len` tokens whose keys are `key_ok.len() /
/// batch` per row (more than `seq_len` after a prefix), token j of a row being key
/// `query_base + j`.
struct PassRows<'a> {
    batch: usize,
    seq_len: usize,
    /// RoPE position of each token, `[batch * seq_len]`.
    positions: &'a [u32],
    /// Whether each key is real, `[batch * key_len]`.
    key_ok: Vec<bool>,
    query_base: usize,
    /// Prefix split point per row (empty without a prefix).
    join_at: Vec<usize>,
    /// Token index (0..seq_len) of each row's pooled token, `[batch]`.
    pooled: Vec<usize>,
}
