//! Loading a sentence embedder ([`MiniLmEmbedder`], any BERT encoder in the Hugging Face layout)
//! from a spec, for dense retrieval:
//!
//! | spec | meaning |
//! |---|---|
//! | `PATH` or `dir:PATH` | a local model directory (`config.json`, `tokenizer.json`, `model.safetensors`, optionally the sentence-transformers files `modules.json`, `1_Pooling/config.json`, `sentence_bert_config.json`) |
//! | `hf:ORG/NAME[@REV]` | the same files through the hf-hub cache ([`crate::hub::fetch_model`] plus the sentence-transformers files the repo has), e.g. `hf:facebook/contriever-msmarco` |
//!
//! Whether embeddings are L2-normalised (cosine) or not (dot product) follows the directory's
//! `modules.json` (see [`crate::embed`]). The spec ends up in [`prbench_models::ModelIdentity::spec`]
//! (for `hf:` with the resolved commit).

use std::path::{Path, PathBuf};

use prbench_data::hub::{parse_repo, HubOptions, HubRepo, RepoKind};
use prbench_models::ModelError;

use crate::embed::{EmbedderOptions, MiniLmEmbedder};
use crate::hub::{fetch_model, HubModel};

/// Sentence-transformers files fetched from a hub repo when it has them.
pub const ST_FILES: [&str; 2] = ["modules.json", "sentence_bert_config.json"];

fn spec_err(spec: &str, reason: String) -> ModelError {
    ModelError::Spec { spec: spec.to_string(), reason }
}

/// Fetches (or, offline, finds in the cache) an embedder repo: the base model files
/// ([`fetch_model`]: config, tokenizer, safetensors weights), then `modules.json`,
/// `sentence_bert_config.json` and each Pooling module's `config.json` when the repo has them.
/// `repo_spec` is the part after `hf:`.
///
/// # Errors
/// [`ModelError::Hub`] saying what a dense embedder repo must hold, its source naming the
/// repo, revision and file, when a required file cannot be fetched or is not cached offline;
/// [`ModelError::Spec`] for an unusable repo id.
pub fn fetch_embedder(repo_spec: &str, opts: &HubOptions) -> Result<HubModel, ModelError> {
    let spec = format!("hf:{repo_spec}");
    let hint = "a dense embedder repo must hold config.json, tokenizer.json and model.safetensors \
                (a repo with only pytorch_model.bin needs converting to safetensors first, then load \
                the directory with dense:DIR)";
    let model = fetch_model(repo_spec, opts).map_err(|e| match e {
        ModelError::Spec { spec, reason } => spec_err(&spec, format!("{reason}; {hint}")),
        ModelError::Hub { spec, source, .. } => {
            ModelError::Hub { spec, context: hint.to_string(), source }
        }
        other => other,
    })?;
    let hub_err = |e| crate::hub::hub_err(&spec, e);
    let (repo, _) = parse_repo(repo_spec, &spec).map_err(hub_err)?;
    // Pinned to the snapshot fetch_model resolved, so every file comes from one commit.
    let hub = HubRepo::open(RepoKind::Model, &repo, Some(&model.commit), opts).map_err(hub_err)?;
    for f in ST_FILES {
        hub.get_optional(f).map_err(hub_err)?;
    }
    for rel in pooling_configs(&model.dir.join("modules.json"))? {
        // Missing here is reported by the loader, which names the module.
        hub.get_optional(&rel).map_err(hub_err)?;
    }
    Ok(model)
}

/// Repo-relative `config.json` of each Pooling module a `modules.json` lists (none when the
/// file is absent).
fn pooling_configs(modules: &Path) -> Result<Vec<String>, ModelError> {
    if !modules.is_file() {
        return Ok(Vec::new());
    }
    let text = std::fs::read_to_string(modules).map_err(|e| ModelError::file(modules, "", e))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| ModelError::file(modules, "not valid JSON", e))?;
    Ok(v.as_array()
        .into_iter()
        .flatten()
        .filter(|m| {
            m.get("type").and_then(serde_json::Value::as_str)
                == Some("sentence_transformers.models.Pooling")
        })
        .map(|m| match m.get("path").and_then(serde_json::Value::as_str) {
            Some(p) if !p.is_empty() => format!("{p}/config.json"),
            _ => "config.json".to_string(),
        })
        .collect())
}

/// Where an embedder spec points: the local directory and the spec to record. A local path
/// starting with `~/` is read from `$HOME`, as in model specs
/// ([`prbench_models::spec::expand_home`]).
///
/// # Errors
/// [`ModelError::Spec`] for an empty spec or a `~/` path without `$HOME`; as
/// [`fetch_embedder`] for `hf:`; [`ModelError::FileReason`] when a local directory does not
/// exist.
pub fn resolve_embedder_dir(
    spec: &str,
    opts: &HubOptions,
) -> Result<(PathBuf, String), ModelError> {
    if let Some(repo) = spec.strip_prefix("hf:") {
        let model = fetch_embedder(repo, opts)?;
        let (name, _) = parse_repo(repo, spec).map_err(|e| spec_err(spec, e.to_string()))?;
        return Ok((model.dir, format!("hf:{name}@{}", model.commit)));
    }
    let path = spec.strip_prefix("dir:").unwrap_or(spec);
    if path.is_empty() {
        return Err(spec_err(
            spec,
            "empty path; give a model directory, dir:PATH or hf:ORG/NAME[@REV]".into(),
        ));
    }
    let dir = prbench_models::spec::expand_home(path).map_err(|e| spec_err(spec, e))?;
    if !dir.is_dir() {
        let exists = dir.exists();
        return Err(ModelError::FileReason {
            path: dir,
            reason: format!(
                "{}; an embedder is a model directory in the Hugging Face layout (config.json, tokenizer.json, \
                 model.safetensors), given as a path, dir:PATH or hf:ORG/NAME[@REV] (with --retriever: dense:PATH or dense:hf:ORG/NAME)",
                if exists { "not a directory" } else { "no such directory" }
            ),
        });
    }
    let label = format!("dir:{}", dir.display());
    Ok((dir, label))
}

/// Loads the embedder `spec` names (see the module docs) with `opts`.
///
/// # Errors
/// As [`resolve_embedder_dir`] and [`MiniLmEmbedder::load_with`].
pub fn load_embedder(
    spec: &str,
    opts: &EmbedderOptions,
    hub: &HubOptions,
) -> Result<MiniLmEmbedder, ModelError> {
    let (dir, label) = resolve_embedder_dir(spec, hub)?;
    Ok(MiniLmEmbedder::load_with(&dir, opts)?.with_spec(label))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_embedder_path_starting_with_tilde_is_read_from_home() {
        let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) else {
            let err = resolve_embedder_dir("~/prbench-absent-embedder", &HubOptions::default())
                .unwrap_err()
                .to_string();
            assert!(err.contains("$HOME is not set"), "{err}");
            return;
        };
        for spec in ["~/prbench-absent-embedder", "dir:~/prbench-absent-embedder"] {
            match resolve_embedder_dir(spec, &HubOptions::default()) {
                Err(ModelError::FileReason { path, reason }) => {
                    assert_eq!(
                        path,
                        PathBuf::from(&home).join("prbench-absent-embedder"),
                        "{spec}"
                    );
                    assert!(reason.starts_with("no such directory"), "{reason}");
                }
                other => panic!("{spec}: {other:?}"),
            }
        }
    }
}
