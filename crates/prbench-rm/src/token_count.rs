//! Counting the tokens of plain text with a Hugging Face model's `tokenizer.json` (for
//! `prbench data stats --tokenizer dir:PATH|hf:ORG/NAME`): no chat template or weights needed.
//!
//! A text is encoded as a message content is ([`crate::tokenize`]): special-token strings in it
//! stay plain text, no special tokens are added, and the file's own truncation and padding
//! settings are switched off, so the count is the text's full length.

use std::path::Path;

use prbench_data::hub::{parse_repo, HubOptions, HubRepo, RepoKind};
use prbench_models::ModelError;
use tokenizers::Tokenizer;

/// A tokenizer that counts the tokens of plain text.
pub struct TokenCounter {
    tokenizer: Tokenizer,
}

impl TokenCounter {
    /// Loads `dir/tokenizer.json`.
    ///
    /// # Errors
    /// [`ModelError::FileReason`] naming the file when it is missing; [`ModelError::File`] when
    /// it is not a tokenizer.
    pub fn load(dir: &Path) -> Result<Self, ModelError> {
        let path = dir.join("tokenizer.json");
        if !path.is_file() {
            return Err(ModelError::file_reason(&path, "missing: `dir:PATH` takes a model directory in the Hugging Face layout, with tokenizer.json"));
        }
        let mut tokenizer = Tokenizer::from_file(&path)
            .map_err(|e| ModelError::file(&path, "not a tokenizer", e))?;
        tokenizer.set_encode_special_tokens(true);
        tokenizer.with_truncation(None).map_err(|e| ModelError::file(&path, "", e))?;
        tokenizer.with_padding(None);
        Ok(Self { tokenizer })
    }

    /// Fetches (or, offline, finds in the hub cache) only `tokenizer.json` of the model repo
    /// `repo_spec` (the text after `hf:`, `ORG/NAME[@REV]`) and loads it.
    ///
    /// # Errors
    /// [`ModelError::Hub`] when the file cannot be fetched or is not cached offline; as
    /// [`TokenCounter::load`].
    pub fn from_hub(repo_spec: &str, opts: &HubOptions) -> Result<Self, ModelError> {
        let spec = format!("hf:{repo_spec}");
        let hub_err = |e| crate::hub::hub_err(&spec, e);
        let (repo, revision) = parse_repo(repo_spec, &spec).map_err(hub_err)?;
        let hub =
            HubRepo::open(RepoKind::Model, &repo, revision.as_deref(), opts).map_err(hub_err)?;
        let file = hub.get("tokenizer.json").map_err(hub_err)?;
        Self::load(file.parent().unwrap_or(Path::new(".")))
    }

    /// Tokens of `text`.
    ///
    /// # Errors
    /// [`ModelError::Engine`] when the tokenizer fails on the text.
    pub fn count(&self, text: &str) -> Result<usize, ModelError> {
        self.tokenizer
            .encode(text, false)
            .map(|e| e.len())
            .map_err(|e| ModelError::engine(format!("tokenizing a {}-byte text", text.len()), e))
    }
}
