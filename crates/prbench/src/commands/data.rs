//! `prbench data {validate,stats,fetch}`.

use std::cell::RefCell;

use anyhow::{Context, Result};
use prbench_data::hub::HubOptions;
use prbench_data::load::{load, load_questions};
use prbench_data::stats::dataset_stats;
use prbench_data::DataError;
use prbench_llm::{GgufEngine, GgufOptions};
use prbench_models::spec::ModelSpec;
use prbench_rm::token_count::TokenCounter;

use crate::cli::{DataCommand, FetchArgs, ValidateFor};

/// The tokenizer of `data stats --tokenizer`: a GGUF model's, or a Hugging Face model's
/// `tokenizer.json` (`dir:PATH`, `hf:ORG/NAME[@REV]`).
enum Counter {
    Gguf(Box<GgufEngine>),
    Hf(Box<TokenCounter>),
}

impl Counter {
    fn load(spec: &str) -> Result<Self> {
        Ok(match ModelSpec::parse(spec)? {
            ModelSpec::Gguf(path) => Counter::Gguf(Box::new(GgufEngine::load(&path, GgufOptions::default())?)),
            ModelSpec::Dir(dir) => Counter::Hf(Box::new(TokenCounter::load(&dir)?)),
            ModelSpec::Hf(repo) => Counter::Hf(Box::new(TokenCounter::from_hub(&repo, &HubOptions::from_env())?)),
            _ => anyhow::bail!("--tokenizer takes `gguf:PATH`, `dir:PATH` or `hf:ORG/NAME[@REV]` (a model with a tokenizer); got `{spec}`"),
        })
    }

    fn count(&self, text: &str) -> Result<usize> {
        match self {
            Counter::Gguf(e) => Ok(e.count_tokens(text)),
            Counter::Hf(t) => Ok(t.count(text)?),
        }
    }
}

/// `data fetch`: the library fetches; this prints each file and then the `--data` spec.
fn fetch(args: FetchArgs) -> Result<()> {
    let mut opts = prbench_data::fetch::FetchOptions::from_env(args.out);
    if let Some(url) = args.github_raw {
        opts.github_raw = url;
    }
    let mode = if opts.offline { " (offline: HF_HUB_OFFLINE is set)" } else { "" };
    eprintln!("prbench: fetching {}{mode}", args.name);
    let got = prbench_data::fetch::fetch_reporting(&args.name, &opts, &mut |line| {
        eprintln!("prbench: {line}")
    })
    .with_context(|| format!("fetching `{}`", args.name))?;
    let downloaded = got.files.iter().filter(|f| f.downloaded).count();
    for f in &got.files {
        let check = match &f.sha256 {
            Some(sha) => format!("sha256 {sha}"),
            None => "size checked".into(),
        };
        let how = if f.downloaded { "downloaded" } else { "already there" };
        eprintln!("  {}  {} bytes, {check}, {how}", f.path.display(), f.size);
    }
    eprintln!(
        "prbench: {}: {} from commit {} in {} ({downloaded} downloaded)",
        got.name,
        prbench_report::plural::count(got.files.len(), "file", "files"),
        got.commit,
        got.dir.display()
    );
    // `hf:` specs read the default cache; a fetch into another one needs it named.
    let cache_note = match (&opts.out, got.spec.starts_with("hf:")) {
        (Some(dir), true) => Some(format!("with HF_HUB_CACHE={}", dir.display())),
        _ => None,
    };
    match cache_note.as_deref().or(got.note) {
        Some(note) => println!("--data {}   # {note}", got.spec),
        None => println!("--data {}", got.spec),
    }
    Ok(())
}

/// Runs a `data` sub-verb.
pub fn run(cmd: DataCommand) -> Result<()> {
    match cmd {
        DataCommand::Fetch(args) => fetch(args),
        DataCommand::Validate(args) => {
            let (spec, subsets) = (&args.data.data, &args.data.subset);
            let (loaded, what, unit) = match args.purpose {
                ValidateFor::Eval => (
                    load(spec, subsets),
                    "as benchmark pairs (`--for eval`)",
                    ("example", "examples"),
                ),
                ValidateFor::Build => (
                    load_questions(spec, subsets),
                    "as `prbench build` input (`--for build`)",
                    ("question", "questions"),
                ),
            };
            let data = loaded.map_err(|e| {
                let answer_missing = matches!(&e, DataError::MissingField { field, .. } if field == "chosen" || field == "rejected");
                let hint = if args.purpose == ValidateFor::Eval && answer_missing {
                    "; rows without chosen/rejected are `prbench build` input: check them with `--for build`"
                } else {
                    ""
                };
                anyhow::Error::new(e).context(format!("validating `{spec}` {what}{hint}"))
            })?;
            super::print_data_warnings(&data);
            let mut per: Vec<(String, usize)> = Vec::new();
            for ex in &data.examples {
                match per.iter_mut().find(|(s, _)| *s == ex.subset) {
                    Some((_, n)) => *n += 1,
                    None => per.push((ex.subset.clone(), 1)),
                }
            }
            let parts: Vec<String> = per.iter().map(|(s, n)| format!("{s}: {n}")).collect();
            println!(
                "ok: {} ({}); sha256 {}",
                prbench_report::plural::count(data.examples.len(), unit.0, unit.1),
                parts.join(", "),
                data.hash
            );
            Ok(())
        }
        DataCommand::Stats(args) => {
            let data = load(&args.data.data, &args.data.subset)
                .with_context(|| format!("loading `{}`", args.data.data))?;
            let counter = args.tokenizer.as_deref().map(Counter::load).transpose()?;
            let failed: RefCell<Option<anyhow::Error>> = RefCell::new(None);
            let count = |t: &str| match counter.as_ref().map(|c| c.count(t)) {
                Some(Ok(n)) => n,
                Some(Err(e)) => {
                    let mut first = failed.borrow_mut();
                    if first.is_none() {
                        *first = Some(e);
                    }
                    0
                }
                None => 0,
            };
            let stats =
                dataset_stats(&data, counter.is_some().then_some(&count as &dyn Fn(&str) -> usize));
            if let Some(e) = failed.into_inner() {
                return Err(e.context(format!(
                    "counting tokens with `{}`",
                    args.tokenizer.unwrap_or_default()
                )));
            }
            if args.json {
                println!("{}", serde_json::to_string_pretty(&stats)?);
            } else {
                println!("{}", stats.to_markdown());
            }
            Ok(())
        }
    }
}
