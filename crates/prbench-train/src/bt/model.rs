//! A trained BT head on disk (`head.safetensors` + `bt.json`) and the [`RewardModel`] that scores
//! with it.

use std::path::{Path, PathBuf};

use prbench_files::readable_by_all;
use prbench_models::{ModelError, ModelIdentity, RewardModel, RmRequest, Score};

use super::compose::{compose, composition_sha256, COMPOSITION};
use super::config::{BtConfig, EmbedderRecord, BT_FORMAT, CONFIG_FILE, HEAD_FILE};
use super::head::BtHead;
use prbench_models::file_hash::sha256_file;
use prbench_rm::embed::{EmbedderOptions, MiniLmEmbedder};

/// Engine name in manifests.
pub const BT_ENGINE: &str = "candle bt-head on all-MiniLM-L6-v2";

/// Writes `dir/head.safetensors` and `dir/bt.json` (creating `dir`).
///
/// # Errors
/// [`ModelError::File`] when a file cannot be written; [`ModelError::Spec`] when the config does
/// not match the head.
pub fn save(dir: &Path, head: &BtHead, config: &BtConfig) -> Result<(), ModelError> {
    if config.hidden != head.hidden() || config.embedder.dim != head.dim() {
        return Err(ModelError::Spec {
            spec: dir.display().to_string(),
            reason: format!(
                "config says hidden {} / dim {}, head has {} / {}",
                config.hidden,
                config.embedder.dim,
                head.hidden(),
                head.dim()
            ),
        });
    }
    std::fs::create_dir_all(dir).map_err(|e| ModelError::file(dir, "", e))?;
    head.save(&dir.join(HEAD_FILE))?;
    // safetensors writes through a 0600 temporary file: readable by the other users, as bt.json.
    readable_by_all(&dir.join(HEAD_FILE))
        .map_err(|e| ModelError::file(dir.join(HEAD_FILE), "cannot make it readable by all", e))?;
    let mut config = config.clone();
    config.head_sha256 = sha256_file(&dir.join(HEAD_FILE))?;
    let path = dir.join(CONFIG_FILE);
    let text =
        serde_json::to_string_pretty(&config).map_err(|e| ModelError::engine("bt.json", e))?;
    std::fs::write(&path, text + "\n").map_err(|e| ModelError::file(path, "", e))
}

/// The frozen embedder in `embedder_dir` that a model (`trained`: `head` for BT, `model` for
/// PAL) was trained on, loaded with the recorded `max_length`: its weights must have the
/// sha256 `record` holds and its output the dimension `dim.1` (the config key `dim.0`). One
/// loader for BT and PAL, so both refuse a different embedder the same way.
///
/// # Errors
/// [`ModelError::Metadata`] naming `config_path` and the key (`embedder.model_safetensors_sha256`
/// or `dim.0`) when the weights or the dimension differ; as [`MiniLmEmbedder::load_with`].
pub(crate) fn load_trained_embedder(
    config_path: &Path,
    embedder_dir: &Path,
    record: &EmbedderRecord,
    max_length: usize,
    dim: (&str, usize),
    trained: &str,
) -> Result<MiniLmEmbedder, ModelError> {
    let meta = |key: &str, reason: String| ModelError::Metadata {
        path: config_path.to_path_buf(),
        key: key.into(),
        reason,
    };
    let weights = embedder_dir.join("model.safetensors");
    let have = sha256_file(&weights)?;
    if have != record.model_safetensors_sha256 {
        return Err(meta(
            "embedder.model_safetensors_sha256",
            format!(
                "the {trained} was trained on embedder weights with sha256 {}, but {} has sha256 {have}; \
                 pass the embedder it was trained on",
                record.model_safetensors_sha256,
                weights.display()
            ),
        ));
    }
    let embedder = MiniLmEmbedder::load_with(
        embedder_dir,
        &EmbedderOptions { max_length: Some(max_length), batch_size: None },
    )?;
    if embedder.dim() != dim.1 {
        return Err(meta(dim.0, format!("{} but the embedder gives {}", dim.1, embedder.dim())));
    }
    Ok(embedder)
}

/// Reads and checks `dir/bt.json` (format and composition).
///
/// # Errors
/// [`ModelError::File`] / [`ModelError::Metadata`] naming the file and key at fault.
pub fn read_config(dir: &Path) -> Result<BtConfig, ModelError> {
    let path = dir.join(CONFIG_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        ModelError::file(&path, "a BT model directory holds bt.json and head.safetensors, as written by `prbench train bt`", e)
    })?;
    let config: BtConfig = serde_json::from_str(&text).map_err(|e| ModelError::Metadata {
        path: path.clone(),
        key: "(bt.json)".into(),
        reason: e.to_string(),
    })?;
    if config.format != BT_FORMAT {
        return Err(ModelError::Metadata {
            path,
            key: "format".into(),
            reason: format!("`{}`, this version reads `{BT_FORMAT}`", config.format),
        });
    }
    if config.composition_sha256 != super::composition_sha256() {
        return Err(ModelError::Metadata {
            path,
            key: "composition_sha256".into(),
            reason: format!(
                "{} does not match this version's composition ({})",
                config.composition_sha256,
                super::composition_sha256()
            ),
        });
    }
    if config.composition != COMPOSITION {
        return Err(ModelError::Metadata {
            path,
            key: "composition".into(),
            reason: "the head was trained on a different text composition than this version's; retrain it".into(),
        });
    }
    Ok(config)
}

/// The personalized Bradley-Terry reward model: frozen MiniLM embedding of
/// `compose(context, question, answer)`, scored by the trained head.
#[derive(Debug)]
pub struct BtRewardModel {
    embedder: MiniLmEmbedder,
    head: BtHead,
    config: BtConfig,
    dir: PathBuf,
    head_sha256: String,
    spec: String,
}

impl BtRewardModel {
    /// Loads the model in `path` (a directory written by [`save`]) on the embedder in
    /// `embedder_dir`, with the maximum length it was trained with.
    ///
    /// # Errors
    /// [`ModelError::Metadata`] when `embedder_dir/model.safetensors` is not the file the head was
    /// trained on (sha256 differs); file and format errors as [`read_config`] and
    /// [`MiniLmEmbedder::load`].
    pub fn load(path: &Path, embedder_dir: &Path) -> Result<Self, ModelError> {
        let config = read_config(path)?;
        let embedder = load_trained_embedder(
            &path.join(CONFIG_FILE),
            embedder_dir,
            &config.embedder,
            config.max_length,
            ("embedder.dim", config.embedder.dim),
            "head",
        )?;
        let head_path = path.join(HEAD_FILE);
        let head = BtHead::load(&head_path, config.embedder.dim, config.hidden)?;
        let head_sha256 = sha256_file(&head_path)?;
        if !config.head_sha256.is_empty() && config.head_sha256 != head_sha256 {
            return Err(ModelError::Metadata {
                path: path.join(CONFIG_FILE),
                key: "head_sha256".into(),
                reason: format!(
                    "{} has sha256 {head_sha256}, but bt.json was written for {}: the head and its config do not belong together",
                    head_path.display(),
                    config.head_sha256
                ),
            });
        }
        Ok(Self {
            embedder,
            head,
            config,
            dir: path.to_path_buf(),
            head_sha256,
            spec: format!("bt:{}", path.display()),
        })
    }

    /// Replaces the spec recorded in the identity (default `bt:PATH`).
    pub fn with_spec(mut self, spec: impl Into<String>) -> Self {
        self.spec = spec.into();
        self
    }

    /// The loaded `bt.json` (e.g. to check that the evaluation condition equals
    /// `config().condition`).
    pub fn config(&self) -> &BtConfig {
        &self.config
    }

    /// The model directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The embedder in use.
    pub fn embedder(&self) -> &MiniLmEmbedder {
        &self.embedder
    }

    /// The head.
    pub fn head(&self) -> &BtHead {
        &self.head
    }
}

impl RewardModel for BtRewardModel {
    fn score(&self, items: &[RmRequest]) -> Result<Vec<Score>, ModelError> {
        let inputs: Vec<_> = items
            .iter()
            .map(|r| compose(r.input.context.as_deref(), &r.input.question, &r.input.answer))
            .collect();
        let (vecs, stats) = self.embedder.embed(&inputs).map_err(|e| match e {
            ModelError::ContextOverflow { tokens, n_ctx, reason } => {
                let named = reason
                    .strip_prefix("input ")
                    .and_then(|r| r.split_once(':'))
                    .and_then(|(n, rest)| {
                        n.parse::<usize>().ok().filter(|&n| n < items.len()).map(|n| (n, rest))
                    })
                    .map(|(n, rest)| format!("example `{}`:{rest}", items[n].input.example_id))
                    .unwrap_or(reason);
                ModelError::ContextOverflow { tokens, n_ctx, reason: named }
            }
            other => other,
        })?;
        let values = self.head.score_rows(&vecs)?;
        Ok(values.into_iter().zip(stats).map(|(value, tokens)| Score { value, tokens }).collect())
    }

    /// The context tokens the embedder would cut from the left.
    fn input_overflow(&self, item: &RmRequest) -> Result<Option<usize>, ModelError> {
        let input =
            compose(item.input.context.as_deref(), &item.input.question, &item.input.answer);
        let stats = self.embedder.token_stats(std::slice::from_ref(&input))?;
        Ok(stats.first().map(|t| t.truncated_tokens))
    }

    fn identity(&self) -> ModelIdentity {
        ModelIdentity {
            spec: self.spec.clone(),
            engine: BT_ENGINE.to_string(),
            file_hash: self.head_sha256.clone(),
            chat_template_hash: composition_sha256(),
            dtype: "f32".to_string(),
        }
    }

    /// `bt.json`'s `condition`.
    fn training_condition(&self) -> Option<String> {
        Some(self.config().condition.clone())
    }
}
