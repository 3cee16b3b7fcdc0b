//! `prbench retrieve`: rank every example's profile posts by relevance to its question and write
//! the dataset with ranked profiles as JSONL (see `prbench_eval::retrieve::ranked` for the file
//! format; `--data FILE.jsonl` loads it back with the ranking checked).
//!
//! [`retriever_from_spec`] builds the retriever a `--retriever` value names; `prbench eval` uses
//! the same function.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};

use prbench_rm::embed::{default_embedder_dir, EmbedderOptions};
use prbench_rm::embedder::load_embedder;
use prbench_data::hub::HubOptions;
use prbench_data::load::{load, Format};
use prbench_eval::cache::Cache;
use prbench_eval::retrieve::bm25::Bm25Retriever;
use prbench_eval::retrieve::dense::DenseRetriever;
use prbench_eval::retrieve::ranked::write_ranked_jsonl;
use prbench_eval::retrieve::{Ranking, Retriever};
use prbench_eval::runner::Reporter;
use prbench_models::Embedder;

use crate::cli::RetrieveArgs;
use crate::progress::Bar;

/// The `--retriever` forms, for messages.
pub const RETRIEVER_FORMS: &str = "bm25, dense, dense:DIR or dense:hf:ORG/NAME[@REV]";

/// Default cache file of dense retrieval: `cache.sqlite` in the folder of `--out`, so the cache
/// sits beside what the command wrote (as `prbench eval`'s sits beside its run folders) and
/// `retrieve --out runs/ranked.jsonl` shares `runs/cache.sqlite` with `prbench eval`.
pub fn default_cache(out: &Path) -> PathBuf {
    out.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .join("cache.sqlite")
}

/// Examples ranked per progress-bar step.
const CHUNK: usize = 8;

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
pub(crate) fn check_retriever_spec(spec: &str) -> Result<()> {
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

fn is_dense(spec: &str) -> bool {
    spec.trim().starts_with("dense")
}

/// Runs `prbench retrieve`.
pub fn run(args: RetrieveArgs) -> Result<()> {
    if Format::from_path(&args.out) != Some(Format::Jsonl) {
        bail!(
            "--out `{}` must be a .jsonl file (the ranked dataset is written as JSONL)",
            args.out.display()
        );
    }
    if args.out.exists() {
        bail!("--out `{}` already exists; remove it or choose another file (ranked datasets are never overwritten)", args.out.display());
    }
    if !is_dense(&args.retriever) && args.cache.is_some() {
        bail!(
            "--cache applies to dense retrievers only (`{}` computes nothing worth caching)",
            args.retriever
        );
    }
    let dataset = load(&args.data.data, &args.data.subset)
        .with_context(|| format!("loading `{}`", args.data.data))?;
    super::print_data_warnings(&dataset);
    let cache_path: Option<PathBuf> = match (&args.cache, args.no_cache, is_dense(&args.retriever))
    {
        (_, true, _) | (_, _, false) => None,
        (Some(p), false, true) => Some(p.clone()),
        (None, false, true) => Some(default_cache(&args.out)),
    };
    let cache = cache_path.as_deref().map(Cache::open).transpose()?;
    let retriever = retriever_from_spec(&args.retriever, cache.as_ref())?;
    let describe = retriever.describe();
    if !args.quiet {
        eprintln!(
            "prbench: ranking {} with {describe}",
            prbench_report::plural::count(dataset.examples.len(), "profile", "profiles")
        );
    }

    let bar = Bar::new(args.quiet);
    bar.start("retrieve", dataset.examples.len() as u64);
    let mut rankings: Vec<Ranking> = Vec::with_capacity(dataset.examples.len());
    for chunk in dataset.examples.chunks(CHUNK) {
        rankings.extend(retriever.rank_all(chunk)?);
        bar.advance(chunk.len() as u64);
    }
    bar.finish();
    write_ranked_jsonl(&args.out, &dataset, &rankings, &describe)?;

    let stats = retriever.stats();
    let posts: usize = dataset.examples.iter().map(|e| e.profile.len()).sum();
    println!("retriever: {describe}");
    println!("examples: {}", dataset.examples.len());
    println!("posts: {posts}");
    if is_dense(&args.retriever) {
        println!(
            "texts truncated by the embedder: {} of {} ({} tokens cut from the end)",
            stats.truncated_texts, stats.texts, stats.truncated_tokens
        );
    } else {
        println!("texts truncated by the embedder: 0 (bm25 reads whole texts)");
    }
    match &cache_path {
        Some(p) => println!(
            "embedding cache: {} hits, {} misses ({})",
            stats.cache_hits,
            stats.cache_misses,
            p.display()
        ),
        None if is_dense(&args.retriever) => {
            println!("embedding cache: off (--no-cache); {} texts embedded", stats.cache_misses)
        }
        None => println!("embedding cache: not used"),
    }
    if stats.cache_write_errors > 0 {
        eprintln!("prbench: warning: {} embeddings could not be written to the cache (they were used; a rerun recomputes them)", stats.cache_write_errors);
    }
    println!("wrote {}", display(&args.out));
    Ok(())
}

fn display(p: &Path) -> String {
    p.display().to_string()
}
