//! Sequence-classification reward models in the Hugging Face layout
//! (`<Arch>ForSequenceClassification` = transformers `modeling_layers.py`
//! `GenericForSequenceClassification`): the [`crate::decoder`] stack, a bias-free score head
//! `score.weight` `[num_labels, hidden]`, and the logits read at one token per row
//! ([`pooled_index`]). Computed in f32 on CPU whatever the stored dtype.
//!
//! ```no_run
//! # fn main() -> Result<(), prbench_models::ModelError> {
//! use prbench_rm::seqcls::SeqClsModel;
//! let rm = SeqClsModel::load(std::path::Path::new("models/my-rm"))?;
//! let scores = rm.score_batch(&[vec![1, 42, 7], vec![1, 9]])?; // [2][num_labels]
//! # Ok(()) }
//! ```

use std::path::{Path, PathBuf};

use candle_core::{DType, Tensor};
use prbench_models::ModelError;

use crate::decoder::config::DecoderConfig;
use crate::decoder::linear::Linear;
use crate::decoder::mask::BatchLayout;
use crate::decoder::model::DecoderModel;
use crate::decoder::prefix::{pad_rows, PrefixKv, SharedLayout};
use crate::decoder::weights::Weights;

pub use crate::decoder::config::Architecture;
pub use crate::decoder::mask::{pooled_index, Positions};
pub use crate::decoder::prefix::PaddingSide;

/// A token prefix run once through the decoder ([`SeqClsModel::prefix_cache`]): every layer's
/// keys and values, to score any number of suffixes after it ([`SeqClsModel::score_suffixes`]).
#[derive(Debug, Clone)]
pub struct PrefixCache {
    ids: Vec<u32>,
    kv: PrefixKv,
}

impl PrefixCache {
    /// The prefix's token ids.
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }
}

/// A loaded sequence-classification model.
#[derive(Debug)]
pub struct SeqClsModel {
    cfg: DecoderConfig,
    decoder: DecoderModel,
    score: Linear,
    dtype: String,
    sha256: String,
    params: usize,
    files: Vec<PathBuf>,
    unread: Vec<String>,
}

/// Shortest padded length fed to the decoder (see [`SeqClsModel::logits`]).
const MIN_KEYS: usize = 3;

fn engine(e: candle_core::Error) -> ModelError {
    ModelError::engine("candle forward pass", e)
}

impl SeqClsModel {
    /// Loads `dir/config.json` and the safetensors weights of `dir` (`model.safetensors`, or
    /// `model.safetensors.index.json` and its shards), converting every tensor to f32, and
    /// hashes the weight files (see [`SeqClsModel::weights_sha256`]).
    ///
    /// # Errors
    /// - [`ModelError::Metadata`] naming `config.json` and the key: an architecture other than
    ///   [`Architecture::SUPPORTED`] (the message lists them), a missing required key, a value
    ///   of the wrong type, an unsupported RoPE type or activation;
    /// - [`ModelError::FileReason`]: no weights, a shard listed in the index but missing
    ///   (named); [`ModelError::File`]: an unreadable file;
    /// - [`ModelError::Metadata`] naming the weights file and tensor: a missing tensor, a
    ///   shape that disagrees with `config.json`, a dtype other than F32/BF16/F16.
    pub fn load(dir: &Path) -> Result<Self, ModelError> {
        let cfg = DecoderConfig::from_dir(dir)?;
        let mut w = Weights::open(dir)?;
        let decoder = DecoderModel::load(&mut w, &cfg)?;
        let score = Linear::load(&mut w, "score", cfg.hidden_size, cfg.num_labels, false)?;
        Ok(Self {
            dtype: w.dtype_label(),
            sha256: w.sha256().to_string(),
            params: w.param_count(),
            files: w.files().to_vec(),
            unread: w.unread(),
            decoder,
            score,
            cfg,
        })
    }

    /// Sets the query tokens per attention block (default 64; see
    /// [`DecoderModel::set_query_block`]). Scores do not depend on it; memory and speed do.
    pub fn set_query_block(&mut self, block: usize) {
        self.decoder.set_query_block(block);
    }

    /// The resolved `config.json`.
    pub fn config(&self) -> &DecoderConfig {
        &self.cfg
    }

    /// The transformers class, e.g. `Qwen2ForSequenceClassification`.
    pub fn architecture(&self) -> &'static str {
        self.cfg.architecture.hf_name()
    }

    /// Logits per input (the score head's rows).
    pub fn num_labels(&self) -> usize {
        self.cfg.num_labels
    }

    /// Label names by index (`id2label`, or `LABEL_i`).
    pub fn label_names(&self) -> &[String] {
        &self.cfg.label_names
    }

    /// `pad_token_id` from `config.json` (drives pooling), if any.
    pub fn pad_token_id(&self) -> Option<u32> {
        self.cfg.pad_token_id
    }

    /// `bos_token_id` from `config.json`, if any.
    pub fn bos_token_id(&self) -> Option<u32> {
        self.cfg.bos_token_id
    }

    /// `eos_token_id` from `config.json` (a list; may be empty).
    pub fn eos_token_ids(&self) -> &[u32] {
        &self.cfg.eos_token_ids
    }

    /// Context length the model was configured for, in tokens.
    pub fn max_position_embeddings(&self) -> usize {
        self.cfg.max_position_embeddings
    }

    /// Rows of the embedding matrix; valid token ids are `0..vocab_size`.
    pub fn vocab_size(&self) -> usize {
        self.decoder.vocab_size()
    }

    /// Stored dtype of the weights as loaded: `f32`, `bf16`, `f16`, or e.g. `bf16+f32` when
    /// mixed. Compute is f32 regardless.
    pub fn weights_dtype(&self) -> &str {
        &self.dtype
    }

    /// sha256 (hex) of the weights: for `model.safetensors`, the plain sha256 of the file; for
    /// shards, one digest over the shards in file-name order, each as name, NUL, 8-byte
    /// little-endian length, bytes (see [`Weights::sha256`]).
    pub fn weights_sha256(&self) -> &str {
        &self.sha256
    }

    /// Parameters used by the model (elements of every tensor read, before any fusion).
    pub fn param_count(&self) -> usize {
        self.params
    }

    /// The weight files read, in hashing order.
    pub fn weight_files(&self) -> &[PathBuf] {
        &self.files
    }

    /// Tensors in the files that the model does not use (sorted).
    pub fn unused_tensors(&self) -> &[String] {
        &self.unread
    }

    /// Logits of a padded batch as a tensor: `input_ids` and `attention_mask` are `[batch,
    /// seq_len]` of any integer (or 0/1 float) dtype, mask 1 = real token, 0 = padding (left or
    /// right). Returns `[batch, num_labels]` f32. Positions follow [`Positions::FromMask`].
    ///
    /// # Errors
    /// As [`SeqClsModel::logits`]; mismatched or non-2-D shapes as [`ModelError::Engine`].
    pub fn forward(
        &self,
        input_ids: &Tensor,
        attention_mask: &Tensor,
    ) -> Result<Tensor, ModelError> {
        self.forward_with(input_ids, attention_mask, Positions::FromMask)
    }

    /// [`SeqClsModel::forward`] with a chosen position rule.
    ///
    /// # Errors
    /// As [`SeqClsModel::forward`].
    pub fn forward_with(
        &self,
        input_ids: &Tensor,
        attention_mask: &Tensor,
        positions: Positions,
    ) -> Result<Tensor, ModelError> {
        let (b, t) = input_ids.dims2().map_err(engine)?;
        if attention_mask.dims() != [b, t] {
            return Err(ModelError::Engine(format!(
                "attention_mask shape {:?} differs from input_ids shape [{b}, {t}]",
                attention_mask.dims()
            )));
        }
        let flat = |x: &Tensor| -> Result<Vec<i64>, ModelError> {
            x.to_dtype(DType::I64)
                .and_then(|x| x.flatten_all())
                .and_then(|x| x.to_vec1::<i64>())
                .map_err(engine)
        };
        let to_u32 = |v: Vec<i64>, what: &str| -> Result<Vec<u32>, ModelError> {
            v.into_iter()
                .map(|x| {
                    u32::try_from(x)
                        .map_err(|_| ModelError::Engine(format!("{what} holds {x}, not a u32")))
                })
                .collect()
        };
        let ids = to_u32(flat(input_ids)?, "input_ids")?;
        let mask = to_u32(flat(attention_mask)?, "attention_mask")?;
        let logits = self.logits(&ids, &mask, b, positions)?;
        Tensor::from_vec(logits.concat(), (b, self.num_labels()), &candle_core::Device::Cpu)
            .map_err(engine)
    }

    /// Logits of a padded batch: `input_ids` and `attention_mask` are `[batch * seq_len]`
    /// row-major (mask 1 = real, 0 = padding, either side). Returns `[batch][num_labels]`: the
    /// score head at each row's [`pooled_index`] (transformers'
    /// `GenericForSequenceClassification` rule, with the mask standing in when
    /// `pad_token_id` is null).
    ///
    /// # Errors
    /// [`ModelError::Engine`] for an empty batch, lengths that are not `batch * seq_len`, a
    /// mask value other than 0/1, a token id outside the vocabulary, or a candle failure;
    /// [`ModelError::ContextOverflow`] when a position reaches `max_position_embeddings`.
    pub fn logits(
        &self,
        input_ids: &[u32],
        attention_mask: &[u32],
        batch: usize,
        positions: Positions,
    ) -> Result<Vec<Vec<f32>>, ModelError> {
        if batch == 0 || input_ids.is_empty() || !input_ids.len().is_multiple_of(batch) {
            return Err(ModelError::Engine(format!(
                "{} token ids do not form {batch} non-empty rows",
                input_ids.len()
            )));
        }
        if attention_mask.len() != input_ids.len() {
            return Err(ModelError::Engine(format!(
                "attention_mask has {} entries, input_ids {}",
                attention_mask.len(),
                input_ids.len()
            )));
        }
        let seq_len = input_ids.len() / batch;
        if let Some(m) = attention_mask.iter().find(|&&m| m > 1) {
            return Err(ModelError::Engine(format!(
                "attention_mask holds {m}; only 0 and 1 are allowed"
            )));
        }
        let vocab = self.vocab_size();
        if let Some((i, id)) = input_ids.iter().enumerate().find(|(_, &id)| id as usize >= vocab) {
            return Err(ModelError::Engine(format!(
                "token id {id} (row {}, position {}) is outside the vocabulary of {vocab}",
                i / seq_len,
                i % seq_len
            )));
        }
        if seq_len < MIN_KEYS {
            // gemm computes products with an inner dimension of 1 or 2 keys by another kernel
            // (outer products); padding to 3 masked keys keeps short rows bit-identical to the
            // same rows inside a longer batch. Padding keys get probability 0: no effect.
            let pad = self.cfg.pad_token_id.unwrap_or(0);
            let mut ids = Vec::with_capacity(batch * MIN_KEYS);
            let mut mask = Vec::with_capacity(batch * MIN_KEYS);
            for (row_ids, row_mask) in
                input_ids.chunks_exact(seq_len).zip(attention_mask.chunks_exact(seq_len))
            {
                ids.extend(
                    row_ids.iter().copied().chain(std::iter::repeat_n(pad, MIN_KEYS - seq_len)),
                );
                mask.extend(
                    row_mask.iter().copied().chain(std::iter::repeat_n(0, MIN_KEYS - seq_len)),
                );
            }
            return self.logits(&ids, &mask, batch, positions);
        }
        let layout = BatchLayout::new(
            input_ids,
            attention_mask,
            batch,
            seq_len,
            self.cfg.pad_token_id,
            positions,
        );
        let max_pos = layout.positions.iter().copied().max().unwrap_or(0) as usize;
        if max_pos >= self.cfg.max_position_embeddings {
            return Err(ModelError::ContextOverflow {
                tokens: max_pos + 1,
                n_ctx: self.cfg.max_position_embeddings,
                reason:
                    "the sequence is longer than max_position_embeddings; cut it before scoring"
                        .into(),
            });
        }
        let hidden = self.decoder.forward_pooled(input_ids, &layout).map_err(engine)?;
        let logits = self.score.forward_dot(&hidden).map_err(engine)?;
        logits.to_vec2::<f32>().map_err(engine)
    }

    /// Scores unpadded token sequences: right-pads them (with `pad_token_id`, or 0 when it is
    /// null), masks the padding, and returns `[seqs.len()][num_labels]` in input order. Each
    /// row equals scoring that sequence alone: padding never enters a sum, and every kernel
    /// sums a token's terms in an order that does not depend on the batch (bit-identical in
    /// the tests; with more than 512 keys gemm's k-blocking may still differ by an ulp).
    ///
    /// # Errors
    /// [`ModelError::Engine`] for an empty sequence; otherwise as [`SeqClsModel::logits`].
    pub fn score_batch(&self, seqs: &[Vec<u32>]) -> Result<Vec<Vec<f32>>, ModelError> {
        self.score_batch_padded(seqs, PaddingSide::Right)
    }

    /// [`SeqClsModel::score_batch`] with the padding on a chosen side (the scores do not depend
    /// on it beyond rounding).
    ///
    /// # Errors
    /// As [`SeqClsModel::score_batch`].
    pub fn score_batch_padded(
        &self,
        seqs: &[Vec<u32>],
        side: PaddingSide,
    ) -> Result<Vec<Vec<f32>>, ModelError> {
        if seqs.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(i) = seqs.iter().position(Vec::is_empty) {
            return Err(ModelError::Engine(format!("sequence {i} is empty")));
        }
        let (ids, mask, _) =
            pad_rows(seqs.iter().map(Vec::as_slice), side, self.cfg.pad_token_id.unwrap_or(0));
        self.logits(&ids, &mask, seqs.len(), Positions::FromMask)
    }

    /// Scores `prefix ++ suffix` for each suffix, running the shared prefix once: raw head
    /// logits `[suffixes.len()][num_labels]`, in input order, equal to
    /// [`SeqClsModel::score_batch`] of the concatenations up to float rounding (the summation
    /// order of some terms differs; the tests bound it by 1e-5 on every fixture architecture).
    /// The suffixes form one right-padded batch; see [`SeqClsModel::score_suffixes`] to batch
    /// them yourself or pad on the left.
    ///
    /// # Errors
    /// As [`SeqClsModel::prefix_cache`] and [`SeqClsModel::score_suffixes`].
    pub fn score_shared_prefix(
        &self,
        prefix: &[u32],
        suffixes: &[Vec<u32>],
    ) -> Result<Vec<Vec<f32>>, ModelError> {
        if suffixes.is_empty() {
            return Ok(Vec::new());
        }
        let cache = self.prefix_cache(prefix)?;
        self.score_suffixes(&cache, suffixes, PaddingSide::Right)
    }

    /// Runs `prefix` (≥ 1 token) once through every layer and keeps each layer's keys (after
    /// k norm and RoPE) and values, `2 × layers × kv_heads × head_dim × prefix.len()` floats.
    ///
    /// # Errors
    /// [`ModelError::Engine`] for an empty prefix, a token id outside the vocabulary or a
    /// candle failure; [`ModelError::ContextOverflow`] when the prefix alone reaches
    /// `max_position_embeddings`.
    pub fn prefix_cache(&self, prefix: &[u32]) -> Result<PrefixCache, ModelError> {
        if prefix.is_empty() {
            return Err(ModelError::Engine("the shared prefix is empty".into()));
        }
        self.check_ids(prefix, "the prefix")?;
        self.check_length(prefix.len())?;
        let kv = self.decoder.prefix_kv(prefix).map_err(engine)?;
        Ok(PrefixCache { ids: prefix.to_vec(), kv })
    }

    /// Scores `cache.ids() ++ suffix` for each suffix (each ≥ 1 token) as one batch padded on
    /// `side`: `[suffixes.len()][num_labels]` in input order. Masks, positions and pooling are
    /// those of the full padded rows ([`SeqClsModel::logits`]); a row whose pooled token is
    /// not in its suffix (a suffix made only of pad tokens, when `pad_token_id` is set) cannot
    /// be read from the suffix pass and is scored unshared, in full.
    ///
    /// # Errors
    /// [`ModelError::Engine`] for an empty suffix, a token id outside the vocabulary or a
    /// candle failure; [`ModelError::ContextOverflow`] when a full row reaches
    /// `max_position_embeddings`.
    pub fn score_suffixes(
        &self,
        cache: &PrefixCache,
        suffixes: &[Vec<u32>],
        side: PaddingSide,
    ) -> Result<Vec<Vec<f32>>, ModelError> {
        if suffixes.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(i) = suffixes.iter().position(Vec::is_empty) {
            return Err(ModelError::Engine(format!("suffix {i} is empty")));
        }
        for (i, s) in suffixes.iter().enumerate() {
            self.check_ids(s, &format!("suffix {i}"))?;
        }
        self.check_length(cache.ids.len() + suffixes.iter().map(Vec::len).max().unwrap_or(0))?;
        let layout = SharedLayout::new(&cache.ids, suffixes, side, self.cfg.pad_token_id);
        let (shared, unshared): (Vec<usize>, Vec<usize>) =
            (0..suffixes.len()).partition(|&r| layout.pooled[r].is_some());
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); suffixes.len()];
        if !shared.is_empty() {
            let layout = if unshared.is_empty() {
                layout
            } else {
                let rows: Vec<Vec<u32>> = shared.iter().map(|&r| suffixes[r].clone()).collect();
                SharedLayout::new(&cache.ids, &rows, side, self.cfg.pad_token_id)
            };
            let hidden = self.decoder.forward_pooled_shared(&cache.kv, &layout).map_err(engine)?;
            let logits = self
                .score
                .forward_dot(&hidden)
                .map_err(engine)?
                .to_vec2::<f32>()
                .map_err(engine)?;
            for (&r, l) in shared.iter().zip(logits) {
                out[r] = l;
            }
        }
        if !unshared.is_empty() {
            let full: Vec<Vec<u32>> =
                unshared.iter().map(|&r| [cache.ids.as_slice(), &suffixes[r]].concat()).collect();
            for (&r, l) in unshared.iter().zip(self.score_batch_padded(&full, side)?) {
                out[r] = l;
            }
        }
        Ok(out)
    }

    fn check_ids(&self, ids: &[u32], what: &str) -> Result<(), ModelError> {
        let vocab = self.vocab_size();
        match ids.iter().enumerate().find(|(_, &id)| id as usize >= vocab) {
            Some((i, id)) => Err(ModelError::Engine(format!(
                "token id {id} ({what}, position {i}) is outside the vocabulary of {vocab}"
            ))),
            None => Ok(()),
        }
    }

    /// Refuses a row of `tokens` real tokens whose last position reaches `max_position_embeddings`.
    fn check_length(&self, tokens: usize) -> Result<(), ModelError> {
        if tokens > self.cfg.max_position_embeddings {
            return Err(ModelError::ContextOverflow {
                tokens,
                n_ctx: self.cfg.max_position_embeddings,
                reason:
                    "the sequence is longer than max_position_embeddings; cut it before scoring"
                        .into(),
            });
        }
        Ok(())
    }
}
