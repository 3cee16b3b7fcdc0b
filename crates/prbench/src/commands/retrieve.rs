//! `prbench retrieve`: rank every example's profile posts by relevance to its question and write
//! the dataset with ranked profiles as JSONL (see `prbench_eval::retrieve::ranked` for the file
//! format; `--data FILE.jsonl` loads it back with the ranking checked).
//!
//! The retriever a `--retriever` value names is built by
//! [`prbench_engines::retrieve::retriever_from_spec`], as for `prbench eval`.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use prbench_data::load::{load, Format};
use prbench_engines::retrieve::{is_dense, retriever_from_spec};
use prbench_eval::cache::Cache;
use prbench_eval::retrieve::ranked::write_ranked_jsonl;
use prbench_eval::retrieve::Ranking;
use prbench_eval::runner::Reporter;

use crate::cli::RetrieveArgs;
use crate::progress::Bar;

/// Examples ranked per progress-bar step.
const CHUNK: usize = 8;

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
        (None, false, true) => Some(prbench_eval::cache::default_beside(&args.out)),
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
