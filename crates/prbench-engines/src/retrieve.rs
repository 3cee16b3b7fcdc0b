//! The retriever a `--retriever` value names (`bm25`, `dense`, `dense:DIR`,
//! `dense:hf:ORG/NAME[@REV]`), for `prbench eval`, `prbench retrieve` and any other front-end.

use std::sync::Arc;

use anyhow::{bail, Context, Result};

use prbench_data::hub::HubOptions;
use prbench_eval::cache::Cache;
use prbench_eval::retrieve::bm25::Bm25Retriever;
use prbench_eval::retrieve::dense::DenseRetriever;
use prbench_eval::retrieve::Retriever;
use prbench_models::Embedder;
use prbench_rm::embed::{default_embedder_dir, EmbedderOptions};
use prbench_rm::embedder::load_embedder;

/// The `--retriever` forms, for messages.
pub const RETRIEVER_FORMS: &str = "bm25, dense, dense:DIR or dense:hf:ORG/NAME[@REV]";

/// Builds the retriever `spec` names:
///
/// | spec | retriever |
/// |---|---|
/// | `bm25` | [`Bm25Retriever`] with k1 = 1.2, b = 0.75 |
/// | `dense` | [`DenseRetriever`] over all-MiniLM-L6-v2 in the models directory ([`default_embedder_dir`]) |
/// | `dense:DIR` (or `dense:dir:DIR`) | a BERT embedder directory in the Hugging Face layout |
/// | `dense:hf:ORG/NAME[@REV]` | the same through the hf-hub cache (`HF_HUB_OFFLINE` honoured) |
///
/// Dense embedders normalise and compare as their own files say (modules.json: Normalize →
/// cosine, otherwise dot product). With `cache`, dense embeddings are read from and stored in it;
/// BM25 never uses it.
///
/// # Errors
/// An unknown form, or an embedder that cannot be found or loaded (the message names the path or
/// repo and what to do).
pub fn retriever_from_spec<'a>(
    spec: &str,
    cache: Option<&'a Cache>,
) -> Result<Box<dyn Retriever + 'a>> {
    let spec = spec.trim();
    let Some(model) = dense_model(spec)? else {
        return Ok(Box::new(Bm25Retriever::default()));
    };
    let embedder = load_embedder(&model, &EmbedderOptions::default(), &HubOptions::from_env())
        .with_context(|| loading_embedder(spec, &model))?;
    let embedder: Arc<dyn Embedder + 'a> = Arc::new(embedder);
    Ok(Box::new(match cache {
        Some(c) => DenseRetriever::with_cache(embedder, c),
        None => DenseRetriever::new(embedder),
    }))
}

/// The embedder a `--retriever` value names: `None` for `bm25`.
fn dense_model(spec: &str) -> Result<Option<String>> {
    if spec == "bm25" {
        return Ok(None);
    }
    match spec.strip_prefix("dense") {
        Some("") => Ok(Some(default_embedder_dir().display().to_string())),
        Some(rest) if rest.starts_with(':') && rest.len() > 1 => Ok(Some(rest[1..].to_string())),
        _ => bail!("unknown retriever `{spec}`; use {RETRIEVER_FORMS}"),
    }
}

fn loading_embedder(spec: &str, model: &str) -> String {
    if spec == "dense" {
        format!("loading the default dense embedder `{model}` (run scripts/setup.sh, or pass --retriever dense:DIR)")
    } else {
        format!("loading the embedder of `--retriever {spec}`")
    }
}

/// Checks a `--retriever` value without loading anything: a known form and, for a local
/// embedder, a folder that is there (a hub one is looked up when it loads). For commands that
/// must refuse a bad value before they create files or load other models.
pub fn check_retriever_spec(spec: &str) -> Result<()> {
    let spec = spec.trim();
    match dense_model(spec)? {
        Some(model) if !model.starts_with("hf:") => {
            prbench_rm::embedder::resolve_embedder_dir(&model, &HubOptions::from_env())
                .with_context(|| loading_embedder(spec, &model))?;
            Ok(())
        }
        _ => Ok(()),
    }
}

/// True for the dense forms (`dense`, `dense:…`).
pub fn is_dense(spec: &str) -> bool {
    spec.trim().starts_with("dense")
}
