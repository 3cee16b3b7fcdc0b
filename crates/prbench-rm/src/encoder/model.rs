//! `BertModel` (embeddings, then post-norm encoder layers) over packed sequences, loaded from a
//! Hugging Face checkpoint directory (`config.json` and safetensors weights, read through
//! [`crate::decoder::weights::Weights`]).
//!
//! Per layer (transformers `BertLayer`): qkv = x·W_qkvᵀ + b (q, k and v in one GEMM);
//! ctx = attention; a = LayerNorm(ctx·W_oᵀ + b + x); x = LayerNorm(act(a·W_iᵀ + b)·W_2ᵀ + b + a).
//! Embeddings (`BertEmbeddings`): `LayerNorm(word[id] + type[type_id] + position[i])`, i counted
//! from 0 in each sequence (absolute positions).

use std::path::Path;

use prbench_models::ModelError;

use super::attention::{attention, Heads};
use super::config::BertConfig;
use super::gelu;
use super::layer_norm::LayerNorm;
use super::matmul::Dense;
use super::pool::mean_pool;
use crate::decoder::weights::Weights;

/// A batch of sequences laid end to end: token ids `[tokens]`, token types `[tokens]`, and
/// each sequence's `(start, len)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Packed {
    ids: Vec<u32>,
    type_ids: Vec<u32>,
    seqs: Vec<(usize, usize)>,
}

impl Packed {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends one sequence (`ids` and `type_ids` of equal length, at least one token).
    ///
    /// # Errors
    /// [`ModelError::Engine`] for an empty sequence or unequal lengths.
    pub fn push(&mut self, ids: &[u32], type_ids: &[u32]) -> Result<(), ModelError> {
        if ids.is_empty() || ids.len() != type_ids.len() {
            return Err(ModelError::Engine(format!(
                "a packed sequence needs at least one token and one token type per token (got {} ids, {} types)",
                ids.len(),
                type_ids.len()
            )));
        }
        self.seqs.push((self.ids.len(), ids.len()));
        self.ids.extend_from_slice(ids);
        self.type_ids.extend_from_slice(type_ids);
        Ok(())
    }

    /// Total tokens.
    pub fn tokens(&self) -> usize {
        self.ids.len()
    }

    /// `(start, len)` of each sequence.
    pub fn seqs(&self) -> &[(usize, usize)] {
        &self.seqs
    }
}

/// One encoder layer.
#[derive(Debug, Clone)]
struct Layer {
    qkv: Dense,
    attn_out: Dense,
    attn_norm: LayerNorm,
    inter: Dense,
    out: Dense,
    out_norm: LayerNorm,
}

/// A BERT encoder in f32.
#[derive(Clone)]
pub struct BertEncoder {
    config: BertConfig,
    word: Vec<f32>,
    position: Vec<f32>,
    token_type: Vec<f32>,
    emb_norm: LayerNorm,
    layers: Vec<Layer>,
    weights_sha256: String,
}

impl std::fmt::Debug for BertEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BertEncoder")
            .field("config", &self.config)
            .field("weights_sha256", &self.weights_sha256)
            .finish_non_exhaustive()
    }
}

struct Reader<'a> {
    w: &'a mut Weights,
    prefix: String,
}

impl Reader<'_> {
    fn vec(&mut self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        let full = format!("{}{name}", self.prefix);
        let t = self.w.tensor(&full, shape)?;
        t.flatten_all().and_then(|t| t.to_vec1::<f32>()).map_err(|e| ModelError::engine(full, e))
    }

    fn dense(&mut self, name: &str, inputs: usize, outputs: usize) -> Result<Dense, ModelError> {
        let w = self.vec(&format!("{name}.weight"), &[outputs, inputs])?;
        let b = self.vec(&format!("{name}.bias"), &[outputs])?;
        Ok(Dense::from_torch(&w, b, inputs, outputs))
    }

    fn norm(&mut self, name: &str, width: usize, eps: f32) -> Result<LayerNorm, ModelError> {
        Ok(LayerNorm::new(
            self.vec(&format!("{name}.weight"), &[width])?,
            self.vec(&format!("{name}.bias"), &[width])?,
            eps,
        ))
    }
}

impl BertEncoder {
    /// Loads `dir/config.json` and the safetensors weights of `dir` (names as `BertModel`
    /// saves them, optionally under a `bert.` or `<model_type>.` prefix, as
    /// `BertForMaskedLM` and similar checkpoints store them). F32, BF16 and F16 weights are
    /// computed in f32.
    ///
    /// # Errors
    /// As [`BertConfig::load`] and [`Weights::open`]; [`ModelError::Metadata`] naming the
    /// tensor when a weight is missing or has another shape.
    pub fn load(dir: &Path) -> Result<Self, ModelError> {
        let config = BertConfig::load(&dir.join("config.json"))?;
        let mut w = Weights::open(dir)?;
        let mut prefixes = vec![String::new(), "bert.".to_string()];
        if let Some(t) = &config.model_type {
            prefixes.push(format!("{t}."));
        }
        let prefix = prefixes
            .into_iter()
            .find(|p| w.contains(&format!("{p}embeddings.word_embeddings.weight")))
            .unwrap_or_default();
        let weights_sha256 = w.sha256().to_string();
        let (h, i, eps) = (config.hidden_size, config.intermediate_size, config.layer_norm_eps);
        let mut r = Reader { w: &mut w, prefix };
        let word = r.vec("embeddings.word_embeddings.weight", &[config.vocab_size, h])?;
        let position =
            r.vec("embeddings.position_embeddings.weight", &[config.max_position_embeddings, h])?;
        let token_type =
            r.vec("embeddings.token_type_embeddings.weight", &[config.type_vocab_size, h])?;
        let emb_norm = r.norm("embeddings.LayerNorm", h, eps)?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for l in 0..config.num_hidden_layers {
            let p = format!("encoder.layer.{l}");
            let q = r.dense(&format!("{p}.attention.self.query"), h, h)?;
            let k = r.dense(&format!("{p}.attention.self.key"), h, h)?;
            let v = r.dense(&format!("{p}.attention.self.value"), h, h)?;
            layers.push(Layer {
                qkv: Dense::concat(&[q, k, v]),
                attn_out: r.dense(&format!("{p}.attention.output.dense"), h, h)?,
                attn_norm: r.norm(&format!("{p}.attention.output.LayerNorm"), h, eps)?,
                inter: r.dense(&format!("{p}.intermediate.dense"), h, i)?,
                out: r.dense(&format!("{p}.output.dense"), i, h)?,
                out_norm: r.norm(&format!("{p}.output.LayerNorm"), h, eps)?,
            });
        }
        Ok(Self { config, word, position, token_type, emb_norm, layers, weights_sha256 })
    }

    /// The architecture.
    pub fn config(&self) -> &BertConfig {
        &self.config
    }

    /// sha256 (hex) of the weights ([`Weights::sha256`]: for one file, `sha256sum model.safetensors`).
    pub fn weights_sha256(&self) -> &str {
        &self.weights_sha256
    }

    /// Checks ids, token types and lengths against the model.
    fn check(&self, batch: &Packed) -> Result<(), ModelError> {
        let c = &self.config;
        for (s, &(start, len)) in batch.seqs.iter().enumerate() {
            if len > c.max_position_embeddings {
                return Err(ModelError::ContextOverflow {
                    tokens: len,
                    n_ctx: c.max_position_embeddings,
                    reason: format!(
                        "sequence {s} is longer than the model's max_position_embeddings"
                    ),
                });
            }
            let range = start..start + len;
            if let Some(id) =
                batch.ids[range.clone()].iter().find(|&&id| id as usize >= c.vocab_size)
            {
                return Err(ModelError::Engine(format!(
                    "sequence {s}: token id {id} is outside the vocabulary of {}",
                    c.vocab_size
                )));
            }
            if let Some(t) =
                batch.type_ids[range].iter().find(|&&t| t as usize >= c.type_vocab_size)
            {
                return Err(ModelError::Engine(format!(
                    "sequence {s}: token type {t} is outside type_vocab_size {}",
                    c.type_vocab_size
                )));
            }
        }
        Ok(())
    }

    /// The last hidden states of every token, `[tokens, hidden_size]` in `batch` order
    /// (transformers' `last_hidden_state` without the padding rows).
    ///
    /// # Errors
    /// [`ModelError::ContextOverflow`] for a sequence longer than `max_position_embeddings`;
    /// [`ModelError::Engine`] for a token id or type outside the model's tables.
    pub fn forward(&self, batch: &Packed) -> Result<Vec<f32>, ModelError> {
        self.check(batch)?;
        let c = &self.config;
        let (h, inter_w, tokens) = (c.hidden_size, c.intermediate_size, batch.tokens());
        let mut x = vec![0f32; tokens * h];
        for &(start, len) in &batch.seqs {
            for pos in 0..len {
                let t = start + pos;
                let (id, ty) = (batch.ids[t] as usize, batch.type_ids[t] as usize);
                let row = &mut x[t * h..(t + 1) * h];
                let word = &self.word[id * h..(id + 1) * h];
                let ty = &self.token_type[ty * h..(ty + 1) * h];
                let p = &self.position[pos * h..(pos + 1) * h];
                for (((r, w), t), p) in row.iter_mut().zip(word).zip(ty).zip(p) {
                    *r = w + t + p;
                }
            }
        }
        self.emb_norm.forward(&mut x);
        let heads = Heads { heads: c.num_attention_heads, head_dim: c.head_dim() };
        let mut qkv = vec![0f32; tokens * 3 * h];
        let mut ctx = vec![0f32; tokens * h];
        let mut scratch = vec![0f32; tokens * h];
        let mut a = vec![0f32; tokens * h];
        let mut inter = vec![0f32; tokens * inter_w];
        for layer in &self.layers {
            layer.qkv.forward_into(&x, tokens, None, &mut qkv);
            attention(&qkv, &batch.seqs, heads, &mut scratch, &mut ctx);
            layer.attn_out.forward_into(&ctx, tokens, Some(&x), &mut a);
            layer.attn_norm.forward(&mut a);
            layer.inter.forward_into(&a, tokens, None, &mut inter);
            gelu::apply(c.hidden_act, &mut inter);
            layer.out.forward_into(&inter, tokens, Some(&a), &mut x);
            layer.out_norm.forward(&mut x);
        }
        Ok(x)
    }

    /// Mean-pooled vectors of each sequence, `[sequences][hidden_size]`, L2-normalised when
    /// `normalize` (see [`mean_pool`]).
    ///
    /// # Errors
    /// As [`BertEncoder::forward`].
    pub fn mean_pooled(
        &self,
        batch: &Packed,
        normalize: bool,
    ) -> Result<Vec<Vec<f32>>, ModelError> {
        let states = self.forward(batch)?;
        Ok(mean_pool(&states, self.config.hidden_size, &batch.seqs, normalize))
    }
}
