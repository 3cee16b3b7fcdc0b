//! Sentence embeddings from a BERT encoder in the Hugging Face layout (all-MiniLM-L6-v2 by
//! default): candle-transformers' [`BertModel`], mean pooling over the attention mask, then L2
//! normalisation (what sentence-transformers does for this model).
//!
//! An input is one text or a `(context, text)` pair, encoded as BERT's sentence pair
//! `[CLS] context [SEP] text [SEP]` (token types 0 and 1). When an input is longer than the
//! maximum length, tokens are cut from the LEFT of the context (the oldest text first) and never
//! from the text; how many were cut is returned per input. A text that does not fit on its own is
//! an error naming the input and the lengths.
//!
//! Inputs are tokenized one by one, sorted by length, run in padded batches (right padding, with
//! the attention mask passed to BERT: for an encoder the non-causal padding mask is the right
//! one) and put back in input order, so results do not depend on the batch size beyond float
//! rounding (tested to 1e-6).

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use crate::batch::by_length;
use prbench_models::file_hash::sha256_file;
use prbench_models::{ModelError, TokenStats};
use tokenizers::{Encoding, PostProcessor, Tokenizer, TruncationDirection};

/// Directory name of the default embedder under the models directory.
pub const DEFAULT_EMBEDDER_DIR: &str = "all-MiniLM-L6-v2";

/// The default embedder directory: `$PRBENCH_MODELS/all-MiniLM-L6-v2` (default
/// `~/.cache/prbench/models/all-MiniLM-L6-v2`, where `scripts/fetch-models.sh` puts it).
pub fn default_embedder_dir() -> PathBuf {
    prbench_models::gguf::models_dir().join(DEFAULT_EMBEDDER_DIR)
}

/// One input to embed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EmbedInput {
    /// A single text; it must fit in the maximum length (nothing is cut).
    Text(String),
    /// A sentence pair: `context` is cut from the left when the pair is too long; `text` never.
    Pair {
        /// First sequence, truncatable from the left.
        context: String,
        /// Second sequence, never cut.
        text: String,
    },
}

/// Loading options.
#[derive(Debug, Clone, Default)]
pub struct EmbedderOptions {
    /// Maximum tokens per input, special tokens included. Default (and upper bound): the
    /// model's `max_position_embeddings`.
    pub max_length: Option<usize>,
    /// Inputs per forward pass (default 16).
    pub batch_size: Option<usize>,
}

/// A BERT sentence embedder (mean pooling, L2-normalised), loaded from a local directory holding
/// `config.json`, `model.safetensors` and `tokenizer.json`.
pub struct MiniLmEmbedder {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
    dir: PathBuf,
    weights_sha256: String,
    hidden: usize,
    max_length: usize,
    model_max_length: usize,
    batch_size: usize,
    n_special_single: usize,
    n_special_pair: usize,
}

impl std::fmt::Debug for MiniLmEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniLmEmbedder")
            .field("dir", &self.dir)
            .field("weights_sha256", &self.weights_sha256)
            .field("hidden", &self.hidden)
            .field("max_length", &self.max_length)
            .field("batch_size", &self.batch_size)
            .finish()
    }
}

fn file_err(path: &Path, reason: impl std::fmt::Display) -> ModelError {
    ModelError::File { path: path.to_path_buf(), reason: reason.to_string() }
}

fn engine(e: impl std::fmt::Display) -> ModelError {
    ModelError::Engine(e.to_string())
}

/// A tokenized input ready for a batch.
struct Prepared {
    ids: Vec<u32>,
    type_ids: Vec<u32>,
    stats: TokenStats,
}

impl MiniLmEmbedder {
    /// Loads the embedder in `dir` with default options.
    ///
    /// # Errors
    /// [`ModelError::File`] naming a missing or unreadable file; [`ModelError::Metadata`] for a
    /// config that is not a BERT config.
    pub fn load(dir: &Path) -> Result<Self, ModelError> {
        Self::load_with(dir, &EmbedderOptions::default())
    }

    /// Loads the embedder in `dir`.
    ///
    /// # Errors
    /// As [`MiniLmEmbedder::load`]; also [`ModelError::Spec`] for a `max_length` below 4 or above
    /// the model's `max_position_embeddings`, or a zero batch size.
    pub fn load_with(dir: &Path, opts: &EmbedderOptions) -> Result<Self, ModelError> {
        let config_path = dir.join("config.json");
        let weights_path = dir.join("model.safetensors");
        let tokenizer_path = dir.join("tokenizer.json");
        for p in [&config_path, &weights_path, &tokenizer_path] {
            if !p.is_file() {
                return Err(file_err(
                    p,
                    "not found (an embedder directory holds config.json, model.safetensors and \
                     tokenizer.json; scripts/fetch-models.sh puts all-MiniLM-L6-v2 in \
                     ~/.cache/prbench/models/all-MiniLM-L6-v2)",
                ));
            }
        }
        let text = std::fs::read_to_string(&config_path).map_err(|e| file_err(&config_path, e))?;
        let config: Config = serde_json::from_str(&text).map_err(|e| ModelError::Metadata {
            path: config_path.clone(),
            key: "(config)".into(),
            reason: format!("not a BERT config: {e}"),
        })?;
        let model_max_length = config.max_position_embeddings;
        let max_length = opts.max_length.unwrap_or(model_max_length);
        if max_length < 4 || max_length > model_max_length {
            return Err(ModelError::Spec {
                spec: format!("max_length={max_length}"),
                reason: format!(
                    "the maximum length must be between 4 and the model's \
                     max_position_embeddings ({model_max_length})"
                ),
            });
        }
        let batch_size = opts.batch_size.unwrap_or(16);
        if batch_size == 0 {
            return Err(ModelError::Spec { spec: "batch_size=0".into(), reason: "must be at least 1".into() });
        }
        let weights_sha256 = sha256_file(&weights_path)?;
        let device = Device::Cpu;
        // SAFETY: the file is memory-mapped read-only; it must not be modified while loaded
        // (the same contract as every safetensors mmap loader).
        let vb = unsafe { VarBuilder::from_mmaped_safetensors(&[&weights_path], DType::F32, &device) }
            .map_err(|e| file_err(&weights_path, e))?;
        let model = BertModel::load(vb, &config).map_err(|e| file_err(&weights_path, e))?;
        let mut tokenizer = Tokenizer::from_file(&tokenizer_path).map_err(|e| file_err(&tokenizer_path, e))?;
        // The file ships fixed padding and right truncation at 128 tokens: we pad and cut ourselves.
        tokenizer.with_padding(None);
        tokenizer.with_truncation(None).map_err(|e| file_err(&tokenizer_path, e))?;
        // Untrusted text: a literal "[SEP]" inside an answer stays plain text.
        tokenizer.set_encode_special_tokens(true);
        let (n_special_single, n_special_pair) = match tokenizer.get_post_processor() {
            Some(pp) => (pp.added_tokens(false), pp.added_tokens(true)),
            None => (0, 0),
        };
        Ok(Self {
            model,
            tokenizer,
            device,
            dir: dir.to_path_buf(),
            weights_sha256,
            hidden: config.hidden_size,
            max_length,
            model_max_length,
            batch_size,
            n_special_single,
            n_special_pair,
        })
    }

    /// Embedding dimension (384 for MiniLM-L6).
    pub fn dim(&self) -> usize {
        self.hidden
    }

    /// Maximum tokens per input in use (special tokens included).
    pub fn max_length(&self) -> usize {
        self.max_length
    }

    /// The model's own limit (`max_position_embeddings`).
    pub fn model_max_length(&self) -> usize {
        self.model_max_length
    }

    /// The directory the embedder was loaded from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// sha256 (hex) of `model.safetensors`: the embedder's identity.
    pub fn weights_sha256(&self) -> &str {
        &self.weights_sha256
    }

    /// Inputs per forward pass.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// Sets the number of inputs per forward pass (at least 1).
    pub fn set_batch_size(&mut self, n: usize) {
        self.batch_size = n.max(1);
    }

    fn encode_plain(&self, text: &str) -> Result<Encoding, ModelError> {
        self.tokenizer.encode(text, false).map_err(|e| ModelError::Engine(format!("tokenizer: {e}")))
    }

    fn prepare(&self, index: usize, input: &EmbedInput) -> Result<Prepared, ModelError> {
        let (first, second, n_special) = match input {
            EmbedInput::Text(t) => (self.encode_plain(t)?, None, self.n_special_single),
            EmbedInput::Pair { context, text } => {
                (self.encode_plain(context)?, Some(self.encode_plain(text)?), self.n_special_pair)
            }
        };
        let (mut first, second) = (first, second);
        let fixed = n_special + second.as_ref().map_or(0, |s| s.len());
        let full = fixed + first.len();
        let mut truncated = 0;
        if full > self.max_length {
            match &second {
                None => {
                    return Err(ModelError::ContextOverflow {
                        tokens: full,
                        n_ctx: self.max_length,
                        reason: format!(
                            "input {index}: a single text of {} tokens (+{n_special} special) \
                             has no context to cut",
                            first.len()
                        ),
                    })
                }
                Some(s) if fixed > self.max_length => {
                    return Err(ModelError::ContextOverflow {
                        tokens: fixed,
                        n_ctx: self.max_length,
                        reason: format!(
                            "input {index}: the text alone is {} tokens (+{n_special} special), \
                             more than the maximum length even with all {} context tokens cut",
                            s.len(),
                            first.len()
                        ),
                    })
                }
                Some(_) => {
                    let keep = self.max_length - fixed;
                    truncated = first.len() - keep;
                    first.truncate(keep, 0, TruncationDirection::Left);
                }
            }
        }
        let enc = self
            .tokenizer
            .post_process(first, second, true)
            .map_err(|e| ModelError::Engine(format!("tokenizer post-processing: {e}")))?;
        debug_assert_eq!(enc.len(), full - truncated);
        Ok(Prepared {
            ids: enc.get_ids().to_vec(),
            type_ids: enc.get_type_ids().to_vec(),
            stats: TokenStats { input_tokens: enc.len(), truncated_tokens: truncated, output_tokens: 0 },
        })
    }

    /// Token accounting for each input without running the model (same tokenization and
    /// truncation as [`MiniLmEmbedder::embed`]).
    ///
    /// # Errors
    /// As [`MiniLmEmbedder::embed`] for inputs that do not fit.
    pub fn token_stats(&self, inputs: &[EmbedInput]) -> Result<Vec<TokenStats>, ModelError> {
        inputs.iter().enumerate().map(|(i, x)| self.prepare(i, x).map(|p| p.stats)).collect()
    }

    /// Embeds `inputs`: one L2-normalised, mean-pooled vector of [`MiniLmEmbedder::dim`] floats
    /// per input, and its token accounting, in input order.
    ///
    /// # Errors
    /// [`ModelError::ContextOverflow`] naming the input index and lengths when a single text, or
    /// the text of a pair, does not fit in the maximum length; engine failures.
    pub fn embed(&self, inputs: &[EmbedInput]) -> Result<(Vec<Vec<f32>>, Vec<TokenStats>), ModelError> {
        let prepared: Vec<Prepared> =
            inputs.iter().enumerate().map(|(i, x)| self.prepare(i, x)).collect::<Result<_, _>>()?;
        let lens: Vec<usize> = prepared.iter().map(|p| p.ids.len()).collect();
        let out = by_length(&lens, self.batch_size, |idx| {
            let batch: Vec<&Prepared> = idx.iter().map(|&i| &prepared[i]).collect();
            self.forward(&batch)
        })?;
        Ok((out, prepared.into_iter().map(|p| p.stats).collect()))
    }

    /// Embeds token-id sequences exactly as given (no special tokens added, token type 0), in
    /// padded batches of [`MiniLmEmbedder::batch_size`] taken in input order (for benchmarks
    /// against a reference engine fed the same ids).
    ///
    /// # Errors
    /// [`ModelError::ContextOverflow`] for an empty sequence or one longer than the maximum
    /// length; engine failures.
    pub fn embed_ids(&self, ids: &[Vec<u32>]) -> Result<Vec<Vec<f32>>, ModelError> {
        let prepared: Vec<Prepared> = ids
            .iter()
            .enumerate()
            .map(|(i, s)| {
                if s.is_empty() || s.len() > self.max_length {
                    return Err(ModelError::ContextOverflow {
                        tokens: s.len(),
                        n_ctx: self.max_length,
                        reason: format!("id sequence {i} must hold 1 to {} ids", self.max_length),
                    });
                }
                Ok(Prepared {
                    ids: s.clone(),
                    type_ids: vec![0; s.len()],
                    stats: TokenStats { input_tokens: s.len(), truncated_tokens: 0, output_tokens: 0 },
                })
            })
            .collect::<Result<_, _>>()?;
        let mut out = Vec::with_capacity(prepared.len());
        for chunk in prepared.chunks(self.batch_size) {
            out.extend(self.forward(&chunk.iter().collect::<Vec<_>>())?);
        }
        Ok(out)
    }

    fn forward(&self, batch: &[&Prepared]) -> Result<Vec<Vec<f32>>, ModelError> {
        let b = batch.len();
        let t = batch.iter().map(|p| p.ids.len()).max().unwrap_or(0);
        let mut ids = vec![0u32; b * t];
        let mut types = vec![0u32; b * t];
        let mut mask = vec![0u32; b * t];
        for (r, p) in batch.iter().enumerate() {
            let n = p.ids.len();
            ids[r * t..r * t + n].copy_from_slice(&p.ids);
            types[r * t..r * t + n].copy_from_slice(&p.type_ids);
            mask[r * t..r * t + n].iter_mut().for_each(|m| *m = 1);
        }
        let ids = Tensor::from_vec(ids, (b, t), &self.device).map_err(engine)?;
        let types = Tensor::from_vec(types, (b, t), &self.device).map_err(engine)?;
        let mask = Tensor::from_vec(mask, (b, t), &self.device).map_err(engine)?;
        let pooled = (|| -> candle_core::Result<Tensor> {
            let hidden = self.model.forward(&ids, &types, Some(&mask))?; // (b, t, h)
            let m = mask.to_dtype(DType::F32)?.unsqueeze(2)?; // (b, t, 1)
            let summed = hidden.broadcast_mul(&m)?.sum(1)?; // (b, h)
            let counts = m.sum(1)?.clamp(1e-9, f64::INFINITY)?; // (b, 1)
            let mean = summed.broadcast_div(&counts)?;
            let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f64::INFINITY)?;
            mean.broadcast_div(&norm)
        })()
        .map_err(engine)?;
        pooled.to_vec2::<f32>().map_err(engine)
    }
}
