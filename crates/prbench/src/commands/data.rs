//! `prbench data {validate,stats}`.

use anyhow::{Context, Result};
use prbench_data::load::load;
use prbench_data::stats::dataset_stats;
use prbench_models::gguf::{GgufEngine, GgufOptions};
use prbench_models::spec::ModelSpec;

use crate::cli::DataCommand;

/// Runs a `data` sub-verb.
pub fn run(cmd: DataCommand) -> Result<()> {
    match cmd {
        DataCommand::Validate(args) => {
            let data = load(&args.data, &args.subset).with_context(|| format!("validating `{}`", args.data))?;
            let mut per: Vec<(String, usize)> = Vec::new();
            for ex in &data.examples {
                match per.iter_mut().find(|(s, _)| *s == ex.subset) {
                    Some((_, n)) => *n += 1,
                    None => per.push((ex.subset.clone(), 1)),
                }
            }
            let parts: Vec<String> = per.iter().map(|(s, n)| format!("{s}: {n}")).collect();
            println!("ok: {} ({}); sha256 {}", prbench_report::plural::count(data.examples.len(), "example", "examples"), parts.join(", "), data.hash);
            Ok(())
        }
        DataCommand::Stats(args) => {
            let data = load(&args.data.data, &args.data.subset).with_context(|| format!("loading `{}`", args.data.data))?;
            let engine = match &args.tokenizer {
                Some(spec) => match ModelSpec::parse(spec)? {
                    ModelSpec::Gguf(path) => Some(GgufEngine::load(&path, GgufOptions::default())?),
                    _ => anyhow::bail!("--tokenizer takes `gguf:PATH`"),
                },
                None => None,
            };
            let counter = engine.as_ref().map(|e| move |t: &str| e.count_tokens(t));
            let stats = dataset_stats(&data, counter.as_ref().map(|c| c as &dyn Fn(&str) -> usize));
            if args.json {
                println!("{}", serde_json::to_string_pretty(&stats)?);
            } else {
                println!("{}", stats.to_markdown());
            }
            Ok(())
        }
    }
}
