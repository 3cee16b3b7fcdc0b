//! The decoder stack, `<Arch>Model.forward` (transformers `modeling_<arch>.py`): token
//! embeddings (× √hidden for Gemma 2), pre-norm layers, final norm. It returns the final hidden
//! state of the pooled token of each row only; the last layer computes its queries, MLP and
//! norms for those tokens alone, since no other position reaches the head.

use std::sync::Arc;

use candle_core::{Device, Result, Tensor};
use prbench_models::ModelError;

use super::attention::{Attention, PassInputs, Queries, QUERY_BLOCK};
use super::config::DecoderConfig;
use super::mask::BatchLayout;
use super::mlp::Mlp;
use super::norm::RmsNorm;
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
    fn load(w: &mut Weights, i: usize, cfg: &DecoderConfig) -> std::result::Result<Self, ModelError> {
        let p = format!("model.layers.{i}");
        let (h, eps, g) = (cfg.hidden_size, cfg.rms_norm_eps, cfg.gemma_layout);
        let attn = Attention::load(w, &format!("{p}.self_attn"), cfg, cfg.layer_types[i])?;
        let mlp = Mlp::load(w, &format!("{p}.mlp"), cfg)?;
        let input_norm = RmsNorm::load(w, &format!("{p}.input_layernorm.weight"), h, eps, g)?;
        let post_attn_norm = RmsNorm::load(w, &format!("{p}.post_attention_layernorm.weight"), h, eps, g)?;
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
    /// [`Queries::All`], `[batch, hidden]` (pooled tokens) for [`Queries::Pooled`].
    fn forward(&self, x: &Tensor, p: &PassInputs, queries: Queries) -> Result<Tensor> {
        let a = self.attn.forward(&self.input_norm.forward(x)?, p, queries)?;
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
        let layers = (0..cfg.num_hidden_layers).map(|i| DecoderLayer::load(w, i, cfg)).collect::<std::result::Result<_, _>>()?;
        let norm = RmsNorm::load(w, "model.norm.weight", cfg.hidden_size, cfg.rms_norm_eps, cfg.gemma_layout)?;
        // Gemma2TextScaledWordEmbedding: `torch.tensor(hidden ** 0.5)` (f32) cast to the
        // weights' dtype; in f32 compute that is √hidden rounded once to f32.
        let embed_scale = cfg.gemma_layout.then(|| f64::from((cfg.hidden_size as f64).sqrt() as f32));
        Ok(Self { embed, embed_scale, layers, norm, rope: Rope::new(cfg), hidden: cfg.hidden_size, query_block: QUERY_BLOCK })
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
        let (b, t) = (layout.batch, layout.seq_len);
        let dev = Device::Cpu;
        let ids = Tensor::from_slice(input_ids, b * t, &dev)?;
        let mut x = self.embed.index_select(&ids, 0)?;
        if let Some(s) = self.embed_scale {
            x = (x * s)?;
        }
        let (cos, sin) = self.rope.cos_sin_vec(&layout.positions);
        let (pooled_cos, pooled_sin) = self.rope.cos_sin_vec(&layout.pooled_positions());
        let pooled_rows = layout.pooled_rows();
        let p = PassInputs {
            query_block: self.query_block,
            batch: b,
            seq_len: t,
            cos: Arc::new(cos),
            sin: Arc::new(sin),
            spans: Arc::new(KeySpan::of_rows(&layout.key_ok, t)),
            key_ok: Arc::new(layout.key_ok.clone()),
            all_queries: Arc::new((0..b).flat_map(|_| 0..t).collect()),
            pooled_flat: Arc::new(pooled_rows.iter().map(|&r| r as usize).collect()),
            pooled_rows: Tensor::from_vec(pooled_rows, b, &dev)?,
            pooled_queries: Arc::new(layout.pooled.clone()),
            pooled_cos: Arc::new(pooled_cos),
            pooled_sin: Arc::new(pooled_sin),
        };
        let last = self.layers.len() - 1;
        for (i, layer) in self.layers.iter().enumerate() {
            x = layer.forward(&x, &p, if i == last { Queries::Pooled } else { Queries::All })?;
        }
        let x = self.norm.forward(&x)?;
        debug_assert_eq!(x.dims(), &[b, self.hidden]);
        Ok(x)
    }
}
