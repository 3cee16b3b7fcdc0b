//! `prbench build`: flags → [`prbench_build::run`].

use std::sync::Arc;

use anyhow::{bail, Context, Result};
use prbench_build::stages::export::{check_folder, CARD_FILE, MANIFEST_FILE, REPORT_FILE};
use prbench_build::{BuildEngines, BuildInput, BuildRun, BuildSettings};
use prbench_data::{load_questions, Example};
use prbench_eval::cache::Cache;
use prbench_eval::evaluation::rank_profiles;
use prbench_models::assets::{default_judge_path, default_model_path};
use prbench_models::Generator;

use crate::cli::BuildArgs;
use crate::progress::Bar;
use prbench_engines::generators::{check_generator_spec, load_generator, SpecEngines};
use prbench_engines::retrieve::check_retriever_spec;

/// The default generator's spec, or an error that says how to get it or what to pass.
fn default_generator() -> Result<String> {
    let path = default_judge_path();
    if !path.is_file() {
        bail!(
            "the default generator, Qwen2.5-Coder-1.5B-Instruct (1.1 GB), is not at `{}`: run scripts/setup.sh once to fetch it, or name one with --generator (the 135M model of the tests: --generator gguf:{})",
            path.display(),
            default_model_path().display()
        );
    }
    Ok(format!("gguf:{}", path.display()))
}

/// Runs `prbench build`.
pub fn run(args: BuildArgs) -> Result<()> {
    if args.remote.request_extra.is_some() {
        bail!("--request-extra applies to `openai:` judges in `eval`; build's generator and audit judge do not take it (it would not be part of their cache keys)");
    }
    if args.skip_audit && args.judge.is_some() {
        bail!("--judge names the audit judge, and --skip-audit skips the audit: pass one or the other");
    }
    if args.no_cache && args.cache.is_some() {
        bail!("--no-cache and --cache contradict each other: pass one or the other");
    }
    let data = load_questions(&args.data.data, &args.data.subset)
        .with_context(|| format!("loading dataset `{}`", args.data.data))?;
    super::print_data_warnings(&data);
    let selected: Vec<&Example> = prbench_build::select(&data.examples, args.limit);
    let mut subsets: Vec<&str> = selected.iter().map(|e| e.subset.as_str()).collect();
    subsets.dedup();
    // Every model spec and the folder are checked before anything is created or loaded, so a
    // mistyped flag leaves no folder, cache or lock behind and costs no model load.
    let gen_spec = match &args.generator {
        Some(s) => s.clone(),
        None => default_generator()?,
    };
    check_generator_spec(&gen_spec, "generator", "--generator")?;
    prbench_engines::load::remote_options(&args.remote)?;
    let judge_spec = args.judge.clone().unwrap_or_else(|| gen_spec.clone());
    if !args.skip_audit && judge_spec != gen_spec {
        check_generator_spec(&judge_spec, "audit judge", "--judge")?;
    }
    if let Some(r) = &args.retriever {
        check_retriever_spec(r)?;
    }
    check_folder(&args.out, &subsets)?;
    // The models load before the folder's cache is made: a generator whose server does not
    // answer, or a file that does not load, leaves no folder behind.
    eprintln!(
        "prbench: building {} from `{}`; loading generator `{gen_spec}`",
        prbench_report::plural::count(selected.len(), "pair", "pairs"),
        data.source
    );
    let generator = load_generator(&gen_spec, &args.remote, "generator", "--generator")?;
    let separate_judge: Option<Box<dyn Generator>> = if args.skip_audit || judge_spec == gen_spec {
        None
    } else {
        eprintln!("prbench: loading audit judge `{judge_spec}`");
        Some(load_generator(&judge_spec, &args.remote, "audit judge", "--judge")?)
    };
    let cache = if args.no_cache {
        None
    } else {
        let path = args.cache.clone().unwrap_or_else(|| args.out.join("build/cache.sqlite"));
        Some(Arc::new(Cache::open(&path)?))
    };
    let bar = Bar::new(args.quiet);
    let owned: Vec<Example> = selected.iter().map(|e| (*e).clone()).collect();
    let (ranked, retriever) = rank_profiles(
        args.retriever.as_deref(),
        &data,
        &owned,
        cache.as_ref(),
        &SpecEngines { remote: &args.remote },
        &bar,
    )?;

    let judge: Option<&dyn Generator> = if args.skip_audit {
        None
    } else {
        Some(separate_judge.as_deref().unwrap_or(generator.as_ref()))
    };

    let settings = BuildSettings {
        k_posts: args.k_posts,
        max_words: args.max_words,
        max_new_tokens: args.max_new_tokens,
        temperature: args.remote.temperature.unwrap_or(0.7),
        top_p: args.remote.top_p.unwrap_or(0.95),
        audit_max_new_tokens: args.audit_max_new_tokens,
        seed: args.seed,
        min_fit_gap: args.min_fit_gap,
        max_quality_gap: args.max_quality_gap,
        max_length_ratio: args.max_length_ratio,
        skip_audit: args.skip_audit,
        batch: args.batch_size,
    };
    let build = BuildRun {
        input: BuildInput {
            data: &data,
            examples: selected,
            limit: args.limit,
            ranked: &ranked,
            retriever,
        },
        engines: BuildEngines { generator: generator.as_ref(), judge },
        cache: cache.as_deref(),
        settings,
        out: &args.out,
        code_version: crate::code_version(),
    };
    let outcome = prbench_build::run(&build, &bar)?;
    let m = &outcome.manifest;
    for c in &m.counts {
        let dropped: Vec<String> =
            c.dropped_by_reason.iter().map(|(k, v)| format!("{k} {v}")).collect();
        eprintln!(
            "prbench: {}: {} built, {} kept{}",
            c.subset,
            c.examples,
            c.kept,
            if dropped.is_empty() {
                String::new()
            } else {
                format!(" (dropped: {})", dropped.join(", "))
            }
        );
    }
    let all = m.counts.iter().find(|c| c.subset == "all").cloned().unwrap_or_default();
    if all.failed > 0 || all.audit_failed_calls > 0 {
        eprintln!(
            "prbench: warning: {} and {} failed, and their pairs were dropped; rerun the same command to retry only those calls (every success is cached)",
            prbench_report::plural::count(all.failed, "generation", "generations"),
            prbench_report::plural::count(all.audit_failed_calls, "audit call", "audit calls"),
        );
    }
    if let Some(c) = &m.cache {
        eprintln!("prbench: cache `{}`: {} hits, {} calls", c.path, c.hits, c.calls);
    }
    let out = args.out.display();
    println!("{}", outcome.report);
    eprintln!("prbench: wrote {out}/{REPORT_FILE}, {out}/{CARD_FILE} and {out}/{MANIFEST_FILE}");
    if m.files.is_empty() {
        bail!("no pair survived the filter, so nothing was exported; {out}/{REPORT_FILE} lists why each pair was dropped");
    }
    eprintln!(
        "prbench: exported {} to {out}; evaluate them with `prbench eval --data {out}`",
        prbench_report::plural::count(all.kept, "pair", "pairs")
    );
    Ok(())
}
