//! Sentence embeddings from a BERT encoder in the Hugging Face layout (all-MiniLM-L6-v2 by
//! default): prbench's own encoder ([`crate::encoder::BertEncoder`], packed sequences, no
//! padding rows), mean pooling over each input's tokens, then L2 normalisation (what
//! sentence-transformers does for this model).
//!
//! An input is one text or a `(context, text)` pair, encoded as BERT's sentence pair
//! `[CLS] context [SEP] text [SEP]` (token types 0 and 1). When an input is longer than the
//! maximum length, tokens are cut from the LEFT of the context (the oldest text first) and never
//! from the text; how many were cut is returned per input. A text that does not fit on its own is
//! an error naming the input and the lengths.
//!
//! Inputs are tokenized one by one, sorted by length, run in batches of packed sequences (each
//! input attends to its own tokens only, so nothing needs a padding mask) and put back in input
//! order, so results do not depend on the batch size beyond float rounding (tested to 1e-6).
//!
//! # As a [`prbench_models::Embedder`] (dense retrieval)
//!
//! The trait implementation embeds plain texts the way sentence-transformers does, following the
//! model directory's own files:
//! - **Truncation**: a text longer than the limit is cut at the END (right), keeping
//!   `[CLS] first tokens [SEP]`; the number of cut tokens is returned in
//!   [`Embedding::truncated_tokens`] (never silent). The limit is [`EmbedderOptions::max_length`]
//!   when given, else `max_seq_length` from `sentence_bert_config.json` (256 for
//!   all-MiniLM-L6-v2), else the model's `max_position_embeddings`; see
//!   [`MiniLmEmbedder::text_max_length`]. `do_lower_case: true` there lowercases texts first.
//! - **Normalisation and similarity**: when `modules.json` lists a
//!   `sentence_transformers.models.Normalize` module, vectors are L2-normalised and compared with
//!   [`Similarity::Cosine`]; otherwise (no `modules.json`, or one without Normalize) they are left
//!   as mean-pooled and compared with [`Similarity::Dot`] — what Contriever's card prescribes
//!   (mean pooling, dot product).
//! - **Pooling**: only mean pooling is implemented. A `modules.json` whose Pooling module asks for
//!   another mode (CLS, max, …), or that lists a module prbench does not run (e.g. `Dense`), is
//!   refused at load time rather than embedded wrongly.
//!
//! The inherent [`MiniLmEmbedder::embed`] (text or pair inputs, left-cut context, error on an
//! over-long single text) keeps its contract for its existing callers (the Bradley-Terry head):
//! always L2-normalised, limit [`MiniLmEmbedder::max_length`]. Note that with a `MiniLmEmbedder`
//! value, `emb.embed(..)` resolves to the inherent method; call the trait one as
//! `Embedder::embed(&emb, texts)` or through `&dyn Embedder`.

use std::path::{Path, PathBuf};

use crate::batch::by_length;
use crate::encoder::{BertEncoder, Packed};
use prbench_models::{Embedder, Embedding, ModelError, ModelIdentity, Similarity, TokenStats};
use tokenizers::{Encoding, PostProcessor, Tokenizer, TruncationDirection};

/// Directory name of the default embedder under the models directory.
pub const DEFAULT_EMBEDDER_DIR: &str = "all-MiniLM-L6-v2";

/// The default embedder directory: `$PRBENCH_MODELS/all-MiniLM-L6-v2` (default
/// `~/.cache/prbench/models/all-MiniLM-L6-v2`, where `scripts/fetch-models.sh` puts it).
pub fn default_embedder_dir() -> PathBuf {
    prbench_models::assets::models_dir().join(DEFAULT_EMBEDDER_DIR)
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
    model: BertEncoder,
    tokenizer: Tokenizer,
    dir: PathBuf,
    weights_sha256: String,
    hidden: usize,
    max_length: usize,
    model_max_length: usize,
    batch_size: usize,
    n_special_single: usize,
    n_special_pair: usize,
    /// `modules.json` lists a Normalize module (trait path only; the inherent path always
    /// normalises).
    normalize: bool,
    /// Limit of the trait path (see the module docs).
    text_max_length: usize,
    /// `sentence_bert_config.json` `do_lower_case`.
    lowercase: bool,
    /// The spec recorded in the identity (`dir:PATH` by default).
    spec: String,
}

impl std::fmt::Debug for MiniLmEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniLmEmbedder")
            .field("dir", &self.dir)
            .field("weights_sha256", &self.weights_sha256)
            .field("hidden", &self.hidden)
            .field("max_length", &self.max_length)
            .field("batch_size", &self.batch_size)
            .field("normalize", &self.normalize)
            .field("text_max_length", &self.text_max_length)
            .finish()
    }
}

fn file_err(path: &Path, reason: &str) -> ModelError {
    ModelError::file_reason(path, reason)
}

/// The sentence-transformers module types prbench runs (anything else in `modules.json` is
/// refused: it would change the embedding in a way prbench does not reproduce).
const ST_TRANSFORMER: &str = "sentence_transformers.models.Transformer";
const ST_POOLING: &str = "sentence_transformers.models.Pooling";
const ST_NORMALIZE: &str = "sentence_transformers.models.Normalize";

/// What a model directory's own sentence-transformers files say about embedding (all optional:
/// a plain Hugging Face BERT directory such as Contriever's has none of them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SentenceTransformersConfig {
    /// `modules.json` exists.
    pub has_modules: bool,
    /// `modules.json` lists a `sentence_transformers.models.Normalize` module: embeddings are
    /// L2-normalised and compared by cosine.
    pub normalize: bool,
    /// `sentence_bert_config.json` `max_seq_length` (tokens, special tokens included), if given.
    pub max_seq_length: Option<usize>,
    /// `sentence_bert_config.json` `do_lower_case` (false when absent).
    pub do_lower_case: bool,
    /// Repo-relative files the listed modules need beyond the base model (each Pooling
    /// module's `<path>/config.json`), for fetching from the hub.
    pub module_files: Vec<String>,
}

fn read_json(path: &Path) -> Result<serde_json::Value, ModelError> {
    let text = std::fs::read_to_string(path).map_err(|e| ModelError::file(path, "", e))?;
    serde_json::from_str(&text).map_err(|e| ModelError::file(path, "not valid JSON", e))
}

/// Reads `modules.json`, each Pooling module's config and `sentence_bert_config.json` in `dir`
/// (each optional).
///
/// # Errors
/// [`ModelError::File`] for an unreadable or malformed file ([`ModelError::FileReason`] for
/// a `modules.json` that is not a list); [`ModelError::Metadata`] naming the
/// file and key when `modules.json` lists a module prbench does not run (e.g. `Dense`), a
/// Pooling module's config is missing, or its mode is not mean pooling.
pub fn read_sentence_transformers_config(
    dir: &Path,
) -> Result<SentenceTransformersConfig, ModelError> {
    let mut out = SentenceTransformersConfig::default();
    let modules_path = dir.join("modules.json");
    if modules_path.is_file() {
        out.has_modules = true;
        let v = read_json(&modules_path)?;
        let list = v
            .as_array()
            .ok_or_else(|| file_err(&modules_path, "must be a JSON list of modules"))?;
        for (i, m) in list.iter().enumerate() {
            let ty = m.get("type").and_then(serde_json::Value::as_str).unwrap_or("");
            let path = m.get("path").and_then(serde_json::Value::as_str).unwrap_or("");
            let meta = |reason: String| ModelError::Metadata {
                path: modules_path.clone(),
                key: format!("[{i}].type"),
                reason,
            };
            match ty {
                ST_TRANSFORMER => {}
                ST_NORMALIZE => out.normalize = true,
                ST_POOLING => {
                    let rel = if path.is_empty() { "config.json".to_string() } else { format!("{path}/config.json") };
                    let cfg_path = dir.join(&rel);
                    if !cfg_path.is_file() {
                        return Err(meta(format!(
                            "lists a Pooling module whose config `{rel}` is missing from the model directory"
                        )));
                    }
                    let cfg = read_json(&cfg_path)?;
                    let flag = |k: &str| cfg.get(k).and_then(serde_json::Value::as_bool).unwrap_or(false);
                    let others = [
                        "pooling_mode_cls_token",
                        "pooling_mode_max_tokens",
                        "pooling_mode_mean_sqrt_len_tokens",
                        "pooling_mode_weightedmean_tokens",
                        "pooling_mode_lasttoken",
                    ];
                    if !flag("pooling_mode_mean_tokens") || others.iter().any(|k| flag(k)) {
                        return Err(ModelError::Metadata {
                            path: cfg_path,
                            key: "pooling_mode_*".into(),
                            reason: "prbench's BERT embedder implements mean pooling only; this model asks for                                      another pooling mode"
                                .into(),
                        });
                    }
                    out.module_files.push(rel);
                }
                other => {
                    return Err(meta(format!(
                        "module type `{other}` is not run by prbench's BERT embedder (it runs Transformer,                          mean Pooling and Normalize only); embedding without it would be wrong"
                    )))
                }
            }
        }
    }
    let sbert_path = dir.join("sentence_bert_config.json");
    if sbert_path.is_file() {
        let v = read_json(&sbert_path)?;
        out.max_seq_length =
            v.get("max_seq_length").and_then(serde_json::Value::as_u64).map(|n| n as usize);
        out.do_lower_case =
            v.get("do_lower_case").and_then(serde_json::Value::as_bool).unwrap_or(false);
    }
    Ok(out)
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
    /// [`ModelError::FileReason`] naming a missing file, [`ModelError::File`] an unreadable one; [`ModelError::Metadata`] for a
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
                     tokenizer.json; scripts/setup.sh puts all-MiniLM-L6-v2 in \
                     ~/.cache/prbench/models/all-MiniLM-L6-v2)",
                ));
            }
        }
        let model = BertEncoder::load(dir)?;
        let model_max_length = model.config().max_position_embeddings;
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
            return Err(ModelError::Spec {
                spec: "batch_size=0".into(),
                reason: "must be at least 1".into(),
            });
        }
        let weights_sha256 = model.weights_sha256().to_string();
        let hidden = model.config().hidden_size;
        let mut tokenizer = Tokenizer::from_file(&tokenizer_path)
            .map_err(|e| ModelError::file(&tokenizer_path, "", e))?;
        // The file ships fixed padding and right truncation at 128 tokens: we pad and cut ourselves.
        tokenizer.with_padding(None);
        tokenizer.with_truncation(None).map_err(|e| ModelError::file(&tokenizer_path, "", e))?;
        // Untrusted text: a literal "[SEP]" inside an answer stays plain text.
        tokenizer.set_encode_special_tokens(true);
        let (n_special_single, n_special_pair) = match tokenizer.get_post_processor() {
            Some(pp) => (pp.added_tokens(false), pp.added_tokens(true)),
            None => (0, 0),
        };
        let st = read_sentence_transformers_config(dir)?;
        let text_max_length = match opts.max_length {
            Some(m) => m,
            None => st.max_seq_length.map_or(model_max_length, |m| m.min(model_max_length)),
        };
        if text_max_length <= n_special_single {
            return Err(ModelError::Spec {
                spec: format!("max_seq_length={text_max_length}"),
                reason: format!(
                    "leaves no room for text after the {n_special_single} special tokens"
                ),
            });
        }
        Ok(Self {
            model,
            tokenizer,
            dir: dir.to_path_buf(),
            weights_sha256,
            hidden,
            max_length,
            model_max_length,
            batch_size,
            n_special_single,
            n_special_pair,
            normalize: st.normalize,
            text_max_length,
            lowercase: st.do_lower_case,
            spec: format!("dir:{}", dir.display()),
        })
    }

    /// Sets the spec recorded in [`Embedder::identity`] (e.g. `hf:facebook/contriever-msmarco@<commit>`;
    /// default `dir:<dir>`). The spec labels cache entries; it is not part of cache keys.
    pub fn with_spec(mut self, spec: impl Into<String>) -> Self {
        self.spec = spec.into();
        self
    }

    /// Maximum tokens per text of the [`Embedder`] path, special tokens included (longer texts are
    /// cut at the end): [`EmbedderOptions::max_length`] if given, else `sentence_bert_config.json`'s
    /// `max_seq_length` (capped at the model's limit), else `max_position_embeddings`.
    pub fn text_max_length(&self) -> usize {
        self.text_max_length
    }

    /// Whether the [`Embedder`] path L2-normalises (the directory's `modules.json` lists a
    /// Normalize module); then [`Embedder::similarity`] is cosine, otherwise dot product.
    pub fn normalizes(&self) -> bool {
        self.normalize
    }

    /// Tokenizes one text for the [`Embedder`] path: `[CLS] text [SEP]`, the text cut at the end
    /// to fit [`MiniLmEmbedder::text_max_length`].
    fn prepare_text(&self, text: &str) -> Result<Prepared, ModelError> {
        let lowered;
        let text = if self.lowercase {
            lowered = text.to_lowercase();
            lowered.as_str()
        } else {
            text
        };
        let mut enc = self.encode_plain(text)?;
        let keep = self.text_max_length - self.n_special_single;
        let truncated = enc.len().saturating_sub(keep);
        if truncated > 0 {
            enc.truncate(keep, 0, TruncationDirection::Right);
        }
        let enc = self
            .tokenizer
            .post_process(enc, None, true)
            .map_err(|e| ModelError::engine("tokenizer post-processing", e))?;
        Ok(Prepared {
            ids: enc.get_ids().to_vec(),
            type_ids: enc.get_type_ids().to_vec(),
            stats: TokenStats {
                input_tokens: enc.len(),
                truncated_tokens: truncated,
                output_tokens: 0,
            },
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
        self.tokenizer.encode(text, false).map_err(|e| ModelError::engine("tokenizer", e))
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
            .map_err(|e| ModelError::engine("tokenizer post-processing", e))?;
        debug_assert_eq!(enc.len(), full - truncated);
        Ok(Prepared {
            ids: enc.get_ids().to_vec(),
            type_ids: enc.get_type_ids().to_vec(),
            stats: TokenStats {
                input_tokens: enc.len(),
                truncated_tokens: truncated,
                output_tokens: 0,
            },
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
    pub fn embed(
        &self,
        inputs: &[EmbedInput],
    ) -> Result<(Vec<Vec<f32>>, Vec<TokenStats>), ModelError> {
        let prepared: Vec<Prepared> =
            inputs.iter().enumerate().map(|(i, x)| self.prepare(i, x)).collect::<Result<_, _>>()?;
        let lens: Vec<usize> = prepared.iter().map(|p| p.ids.len()).collect();
        let out = by_length(&lens, self.batch_size, |idx| {
            let batch: Vec<&Prepared> = idx.iter().map(|&i| &prepared[i]).collect();
            self.forward(&batch, true)
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
                    stats: TokenStats {
                        input_tokens: s.len(),
                        truncated_tokens: 0,
                        output_tokens: 0,
                    },
                })
            })
            .collect::<Result<_, _>>()?;
        let mut out = Vec::with_capacity(prepared.len());
        for chunk in prepared.chunks(self.batch_size) {
            out.extend(self.forward(&chunk.iter().collect::<Vec<_>>(), true)?);
        }
        Ok(out)
    }

    /// Mean-pooled vectors of a batch (packed, no padding), L2-normalised when `normalize`.
    fn forward(&self, batch: &[&Prepared], normalize: bool) -> Result<Vec<Vec<f32>>, ModelError> {
        let mut packed = Packed::new();
        for p in batch {
            packed.push(&p.ids, &p.type_ids)?;
        }
        self.model.mean_pooled(&packed, normalize)
    }
}

/// The sentence-embedding path (dense retrieval); see the module docs for the truncation,
/// normalisation and similarity rules.
impl Embedder for MiniLmEmbedder {
    /// One vector of [`MiniLmEmbedder::dim`] floats per text, in input order; texts run in padded
    /// batches sorted by length.
    ///
    /// # Errors
    /// Tokenizer or forward-pass failures as [`ModelError::Engine`]. Over-long texts are not an
    /// error: they are cut at the end and the cut is counted.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Embedding>, ModelError> {
        let prepared: Vec<Prepared> =
            texts.iter().map(|t| self.prepare_text(t)).collect::<Result<_, _>>()?;
        let lens: Vec<usize> = prepared.iter().map(|p| p.ids.len()).collect();
        let vectors = by_length(&lens, self.batch_size, |idx| {
            let batch: Vec<&Prepared> = idx.iter().map(|&i| &prepared[i]).collect();
            self.forward(&batch, self.normalize)
        })?;
        Ok(vectors
            .into_iter()
            .zip(&prepared)
            .map(|(vector, p)| Embedding { vector, truncated_tokens: p.stats.truncated_tokens })
            .collect())
    }

    fn similarity(&self) -> Similarity {
        if self.normalize {
            Similarity::Cosine
        } else {
            Similarity::Dot
        }
    }

    /// `file_hash` = sha256 of `model.safetensors`; `engine` names the pooling, normalisation,
    /// length limit and truncation side, so embeddings computed under other settings never share
    /// a cache key; `dtype` = `f32`.
    fn identity(&self) -> ModelIdentity {
        ModelIdentity {
            spec: self.spec.clone(),
            engine: format!(
                "{} (bert sentence embedder: mean pooling, {}, max {} tokens cut right{})",
                crate::encoder::ENGINE,
                if self.normalize { "l2-normalised" } else { "not normalised" },
                self.text_max_length,
                if self.lowercase { ", lowercased" } else { "" },
            ),
            file_hash: self.weights_sha256.clone(),
            chat_template_hash: String::new(),
            dtype: "f32".into(),
        }
    }
}
