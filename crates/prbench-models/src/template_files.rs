//! The chat template of a model directory in the Hugging Face layout, read the way
//! `transformers` reads it: `chat_template.jinja` when present (newer repos), otherwise the
//! `chat_template` key of `tokenizer_config.json`; the `bos_token` / `eos_token` strings the
//! template sees come from `tokenizer_config.json`.
//!
//! Shared by the local sequence-classification engine (prbench-rm's tokenizer) and the
//! remote engines that take pre-rendered text (SGLang, TEI, OpenRLHF in prbench-remote), so a
//! model's conversation is rendered from the same files whichever engine scores it.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::chat_template::ChatTemplate;
use crate::error::ModelError;

/// File holding the template in newer repos; wins over `tokenizer_config.json`.
pub const JINJA_FILE: &str = "chat_template.jinja";

/// Tokenizer settings file (`bos_token`, `eos_token`, maybe `chat_template`).
pub const TOKENIZER_CONFIG: &str = "tokenizer_config.json";

/// Where a chat template came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateSource {
    /// `chat_template.jinja`.
    JinjaFile(PathBuf),
    /// The `chat_template` key of `tokenizer_config.json`.
    TokenizerConfig(PathBuf),
}

impl TemplateSource {
    /// The file the template text was read from.
    pub fn path(&self) -> &Path {
        match self {
            TemplateSource::JinjaFile(p) | TemplateSource::TokenizerConfig(p) => p,
        }
    }
}

fn file_err(path: &Path, context: &str, source: impl Into<crate::error::BoxError>) -> ModelError {
    ModelError::file(path, context, source)
}

fn meta_err(path: &Path, key: &str, reason: impl Into<String>) -> ModelError {
    ModelError::Metadata { path: path.to_path_buf(), key: key.into(), reason: reason.into() }
}

/// A special-token entry of `tokenizer_config.json`: a string, or an AddedToken map with
/// `content`; `null`/absent = none (empty string).
///
/// # Errors
/// [`ModelError::Metadata`] for any other JSON shape.
pub fn token_string(cfg: &Value, key: &str, path: &Path) -> Result<String, ModelError> {
    match cfg.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Object(m)) => match m.get("content") {
            Some(Value::String(s)) => Ok(s.clone()),
            _ => Err(meta_err(path, key, "an AddedToken map without a string `content`")),
        },
        Some(_) => Err(meta_err(path, key, "expected a string or an AddedToken map")),
    }
}

/// The `chat_template` value of `tokenizer_config.json`: a string, or a list of
/// `{name, template}` from which the one named `default` is taken (transformers' rule).
///
/// # Errors
/// [`ModelError::Metadata`] for a list without `default` or another JSON shape.
pub fn config_template(cfg: &Value, path: &Path) -> Result<Option<String>, ModelError> {
    match cfg.get("chat_template") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Array(list)) => {
            for t in list {
                if t.get("name").and_then(Value::as_str) == Some("default") {
                    if let Some(s) = t.get("template").and_then(Value::as_str) {
                        return Ok(Some(s.to_string()));
                    }
                }
            }
            Err(meta_err(
                path,
                "chat_template",
                "a list of named templates without one named `default`",
            ))
        }
        Some(_) => {
            Err(meta_err(path, "chat_template", "expected a string or a list of {name, template}"))
        }
    }
}

/// `tokenizer_config.json` of `dir` as JSON (an empty object when the file is absent).
///
/// # Errors
/// [`ModelError::File`] when the file exists but cannot be read or is not JSON.
pub fn read_tokenizer_config(dir: &Path) -> Result<Value, ModelError> {
    let path = dir.join(TOKENIZER_CONFIG);
    if !path.is_file() {
        return Ok(Value::Object(Default::default()));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| file_err(&path, "", e))?;
    serde_json::from_str(&text).map_err(|e| file_err(&path, "not valid JSON", e))
}

/// The chat template of the model directory `dir` (see the module docs) and where it came from.
///
/// # Errors
/// [`ModelError::FileReason`] when `dir` has neither `chat_template.jinja` nor a `chat_template` key
/// in `tokenizer_config.json` (the message names both); [`ModelError::File`] when a file is
/// unreadable;
/// [`ModelError::Metadata`] for malformed keys; [`ModelError::Template`] when the template does
/// not compile.
pub fn load_dir_template(dir: &Path) -> Result<(ChatTemplate, TemplateSource), ModelError> {
    let cfg_path = dir.join(TOKENIZER_CONFIG);
    let cfg = read_tokenizer_config(dir)?;
    let bos = token_string(&cfg, "bos_token", &cfg_path)?;
    let eos = token_string(&cfg, "eos_token", &cfg_path)?;
    let jinja_path = dir.join(JINJA_FILE);
    let (source, from) = if jinja_path.is_file() {
        let s = std::fs::read_to_string(&jinja_path).map_err(|e| file_err(&jinja_path, "", e))?;
        (s, TemplateSource::JinjaFile(jinja_path))
    } else if let Some(s) = config_template(&cfg, &cfg_path)? {
        (s, TemplateSource::TokenizerConfig(cfg_path))
    } else {
        return Err(ModelError::file_reason(dir, "no chat template: expected chat_template.jinja or a `chat_template` key in tokenizer_config.json"));
    };
    Ok((ChatTemplate::new(source, bos, eos)?, from))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_jinja_file_wins_and_a_missing_template_names_both_places() {
        let tmp =
            std::env::temp_dir().join(format!("prbench-template-files-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        let err = load_dir_template(&tmp).unwrap_err().to_string();
        assert!(
            err.contains("chat_template.jinja") && err.contains("tokenizer_config.json"),
            "{err}"
        );
        std::fs::write(
            tmp.join(TOKENIZER_CONFIG),
            r#"{"chat_template": "cfg", "bos_token": {"content": "<s>"}}"#,
        )
        .unwrap();
        let (t, from) = load_dir_template(&tmp).unwrap();
        assert_eq!((t.source(), t.bos_token(), t.eos_token()), ("cfg", "<s>", ""));
        assert!(matches!(from, TemplateSource::TokenizerConfig(_)));
        std::fs::write(tmp.join(JINJA_FILE), "jinja").unwrap();
        let (t, from) = load_dir_template(&tmp).unwrap();
        assert_eq!(t.source(), "jinja");
        assert_eq!(from.path(), tmp.join(JINJA_FILE));
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
