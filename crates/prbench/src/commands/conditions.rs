//! Prepares what the `profile:k` and `planner` conditions show, before any scoring: ranked
//! profiles (from a ranked dataset file, or a retriever run now) and the planner's aspects
//! (generated now, through the run cache), plus the planner's quality against the hidden rubric.

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};

use prbench_candle::embed::{default_embedder_dir, EmbedderOptions};
use prbench_candle::embedder::load_embedder;
use prbench_data::hub::HubOptions;
use prbench_data::{Dataset, Example, ProfilePost};
use prbench_eval::cache::{Cache, CacheCounters};
use prbench_eval::condition::{Condition, ConditionInputs, PlannedAspects};
use prbench_eval::planner::{plan_quality_all, CachedGenerator, Plan, Planner};
use prbench_eval::prompt::Prompts;
use prbench_eval::retrieve::embed_cache::CachedEmbedder;
use prbench_eval::runner::Reporter;
use prbench_models::gguf::{default_model_path, GgufEngine, GgufOptions};
use prbench_models::spec::ModelSpec;
use prbench_models::{Embedder, Generator};
use prbench_remote::OpenAiChat;
use prbench_report::PlannerReport;

use crate::cli::EvalArgs;
use crate::commands::retrieve::retriever_from_spec;
use crate::progress::Bar;

/// Default retriever when the data is not a ranked dataset file.
pub const DEFAULT_RETRIEVER: &str = "bm25";

/// Examples per planner progress step.
const PLAN_CHUNK: usize = 8;

/// What [`prepare`] made.
pub struct Prepared {
    /// Ranked posts and plans for the runner.
    pub inputs: ConditionInputs,
    /// The planner's output per example (written to the `planner` run's planner.jsonl).
    pub plans: Vec<Plan>,
}

/// Loads a generator (the planner, the BoN policy, a rubric judge): `gguf:PATH` or
/// `openai:MODEL[@URL…]` with the given remote settings; `role` names it in messages (e.g.
/// `planner`, `--planner`).
pub(crate) fn load_generator(spec: &str, remote: &crate::cli::RemoteArgs, role: &str, flag: &str) -> Result<Box<dyn Generator>> {
    match ModelSpec::parse(spec)? {
        ModelSpec::Gguf(path) => {
            if !path.is_file() {
                bail!("{role} model file `{}` not found; run scripts/fetch-models.sh, or pass {flag} gguf:PATH or {flag} openai:MODEL@URL", path.display());
            }
            Ok(Box::new(GgufEngine::load(&path, GgufOptions::default()).with_context(|| format!("loading {role} `{spec}`"))?))
        }
        ModelSpec::OpenAi { model, base_urls } => {
            let opts = super::load::remote_options(remote)?;
            let chat = OpenAiChat::new(&model, base_urls, opts)?.with_spec(spec);
            // One test request checks URL, model and key before any generation (as for judges).
            chat.probe_logprobs().with_context(|| format!("connecting to {role} `{spec}`"))?;
            Ok(Box::new(chat))
        }
        _ => bail!("{flag} `{spec}` is not a generator; use gguf:PATH or openai:MODEL[@BASE_URL]"),
    }
}

/// Ranks the profile posts of `examples`: the ranked dataset file's own order when `data` is
/// one and `retriever` is `None`, otherwise with `retriever` (default [`DEFAULT_RETRIEVER`]).
/// Returns example id → posts best first, and a description of the ranking.
///
/// # Errors
/// A retriever that cannot be loaded or fails; cache failures.
pub(crate) fn rank_profiles(
    retriever: Option<&str>,
    data: &Dataset,
    examples: &[Example],
    cache: Option<&Arc<Cache>>,
    bar: &Bar,
) -> Result<(std::collections::HashMap<String, Vec<ProfilePost>>, String)> {
    let mut ranked = std::collections::HashMap::with_capacity(examples.len());
    match (retriever, &data.profile_ranking) {
        (None, Some(by)) => {
            eprintln!("prbench: profiles come ranked in the dataset file (by {by}); pass --retriever to rank them again");
            for ex in examples {
                ranked.insert(ex.id.clone(), ex.profile.clone());
            }
            Ok((ranked, format!("{by} (ranked dataset file)")))
        }
        (spec, _) => {
            let spec = spec.unwrap_or(DEFAULT_RETRIEVER);
            let retriever = retriever_from_spec(spec, cache.map(Arc::as_ref))?;
            bar.start(&format!("retrieve · {spec}"), examples.len() as u64);
            for chunk in examples.chunks(64) {
                for (ex, ranking) in chunk.iter().zip(retriever.rank_all(chunk)?) {
                    let posts: Vec<ProfilePost> = ranking.posts(ex)?.into_iter().cloned().collect();
                    ranked.insert(ex.id.clone(), posts);
                }
                bar.advance(chunk.len() as u64);
            }
            bar.finish();
            let st = retriever.stats();
            if st.truncated_texts > 0 {
                eprintln!(
                    "prbench: retrieval: {} of {} texts were longer than the embedder's limit and were cut at the end ({} tokens in all)",
                    st.truncated_texts, st.texts, st.truncated_tokens
                );
            }
            Ok((ranked, retriever.describe()))
        }
    }
}

/// Ranks the profiles of `examples` (the ranked dataset's own order when `data` is one and no
/// `--retriever` is given) and, when `conditions` include `planner`, runs the planner and
/// scores it against the hidden rubric.
///
/// # Errors
/// A retriever, planner or embedder that cannot be loaded; a leak in a planner prompt; cache
/// failures.
pub fn prepare(args: &EvalArgs, data: &Dataset, examples: &[Example], conditions: &[Condition], cache: Option<&Arc<Cache>>, bar: &Bar) -> Result<Prepared> {
    let mut inputs = ConditionInputs::default();
    let mut plans = Vec::new();
    let wants_planner = conditions.contains(&Condition::Planner);
    if !conditions.iter().any(|c| c.profile_k().is_some()) && !wants_planner {
        return Ok(Prepared { inputs, plans });
    }
    let (ranked, by) = rank_profiles(args.retriever.as_deref(), data, examples, cache, bar)?;
    inputs.ranked = ranked;
    inputs.retriever = Some(by);
    if wants_planner {
        let (p, report, manifest) = run_planner(args, examples, &inputs, cache, bar)?;
        for plan in &p {
            let aspects = if plan.is_usable() { plan.aspects.clone() } else { Vec::new() };
            inputs.plans.insert(
                plan.example_id.clone(),
                PlannedAspects { aspects, failure: plan.parse_error.clone(), error: plan.error.clone() },
            );
        }
        inputs.planner = Some(manifest);
        inputs.planner_report = Some(report);
        plans = p;
    }
    Ok(Prepared { inputs, plans })
}

/// Runs the planner over `examples` and measures its quality.
fn run_planner(
    args: &EvalArgs,
    examples: &[Example],
    inputs: &ConditionInputs,
    cache: Option<&Arc<Cache>>,
    bar: &Bar,
) -> Result<(Vec<Plan>, PlannerReport, serde_json::Value)> {
    let spec = args.planner.clone().unwrap_or_else(|| format!("gguf:{}", default_model_path().display()));
    let generator = load_generator(&spec, &args.remote, "planner", "--planner")?;
    let counters = CacheCounters::default();
    let cached;
    let gen: &dyn Generator = match cache {
        Some(c) => {
            cached = CachedGenerator::new(generator.as_ref(), c, &counters);
            &cached
        }
        None => generator.as_ref(),
    };
    let mut planner = Planner::new(gen, args.seed, args.planner_k);
    planner.max_new_tokens = args.planner_max_new_tokens;
    let prompts = Prompts::new();
    let mut plans = Vec::with_capacity(examples.len());
    bar.start(&format!("planner · {spec}"), examples.len() as u64);
    for chunk in examples.chunks(PLAN_CHUNK) {
        let exs: Vec<&Example> = chunk.iter().collect();
        let posts: Vec<Vec<&ProfilePost>> = chunk.iter().map(|ex| inputs.ranked_posts(ex).map(|p| p.iter().collect())).collect::<Result<_, _>>()?;
        plans.extend(planner.plan_all(&exs, &posts, &prompts)?);
        bar.advance(chunk.len() as u64);
    }
    bar.finish();
    if let Some(c) = cache {
        let r = counters.report(c);
        eprintln!("prbench: planner cache `{}`: {} hits, {} calls", r.path, r.hits, r.calls);
    }
    let errors = plans.iter().filter(|p| p.error.is_some()).count();
    let failed = plans.iter().filter(|p| p.error.is_none() && !p.is_usable()).count();
    let cut = plans.iter().filter(|p| p.hit_max_new_tokens).count();
    if let Some(first) = plans.iter().find_map(|p| p.error.as_deref()) {
        eprintln!("prbench: warning: the planner's generator failed on {errors} of {} examples (error outcomes under `planner`); first: {first}", plans.len());
    }
    if let Some(first) = plans.iter().find_map(|p| p.parse_error.as_deref()) {
        eprintln!("prbench: warning: the planner's reply held no usable list for {failed} of {} examples (scored with no context; see planner.jsonl); first: {first}", plans.len());
    }
    if cut > 0 {
        eprintln!("prbench: note: {cut} planner replies used all {} new tokens (their last aspect may be cut; raise --planner-max-new-tokens)", args.planner_max_new_tokens);
    }
    let usable: Vec<&Plan> = plans.iter().filter(|p| p.is_usable()).collect();
    let mean_aspects = if usable.is_empty() { 0.0 } else { usable.iter().map(|p| p.aspects.len()).sum::<usize>() as f64 / usable.len() as f64 };
    let (quality, quality_with_failures_as_zero, quality_note) = match planner_quality(examples, &plans, cache) {
        Ok(q) => (q.0, q.1, q.2),
        Err(e) => (None, None, Some(format!("{e:#}"))),
    };
    let mut h = Sha256::new();
    for p in &plans {
        h.update(serde_json::to_string(p).expect("plans serialize").as_bytes());
        h.update(b"\n");
    }
    let manifest = serde_json::json!({
        "model": generator.identity(),
        "k": args.planner_k,
        "settings": planner.settings(),
        "plans_sha256": hex::encode(h.finalize()),
    });
    let report = PlannerReport {
        model: spec,
        k: args.planner_k,
        examples: plans.len(),
        failed,
        errors,
        unmarked: plans.iter().filter(|p| p.is_usable() && p.unmarked).count(),
        cut,
        mean_aspects,
        quality,
        quality_with_failures_as_zero,
        quality_note,
    };
    Ok((plans, report, manifest))
}

/// Planner quality with the default MiniLM embedder (through the cache when there is one):
/// (mean over examples with a plan, mean counting the others as 0, note).
fn planner_quality(examples: &[Example], plans: &[Plan], cache: Option<&Arc<Cache>>) -> Result<(Option<f64>, Option<f64>, Option<String>)> {
    let dir = default_embedder_dir();
    if !dir.join("model.safetensors").is_file() {
        bail!("the MiniLM embedder is not at `{}` (run scripts/fetch-models.sh)", dir.display());
    }
    let embedder: Arc<dyn Embedder> = Arc::new(load_embedder(&dir.display().to_string(), &EmbedderOptions::default(), &HubOptions::from_env())?);
    let cached;
    let e: &dyn Embedder = match cache {
        Some(c) => {
            cached = CachedEmbedder::new(embedder.clone(), c);
            &cached
        }
        None => embedder.as_ref(),
    };
    let refs: Vec<&Example> = examples.iter().collect();
    let q = plan_quality_all(&refs, plans, e)?;
    let note = if q.mean.is_none() {
        Some(format!("none of the {} examples has a usable plan", q.n_examples))
    } else {
        (q.truncated_texts > 0).then(|| format!("{} texts were cut to the embedder's limit", q.truncated_texts))
    };
    Ok((q.mean, q.mean_missing_as_zero, note))
}

/// Writes one plan per line.
///
/// # Errors
/// I/O failures, naming the file.
pub fn write_plans(path: &Path, plans: &[Plan]) -> Result<()> {
    let mut text = String::new();
    for p in plans {
        text.push_str(&serde_json::to_string(p)?);
        text.push('\n');
    }
    std::fs::write(path, text).with_context(|| format!("writing `{}`", path.display()))
}
