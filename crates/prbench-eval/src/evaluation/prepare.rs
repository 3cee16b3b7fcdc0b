//! What the `profile:k` and `planner` conditions show, prepared before any scoring: ranked
//! profiles (from a ranked dataset file, or a retriever run now) and the planner's aspects
//! (generated now, through the run cache), plus the planner's quality against the hidden rubric.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use prbench_data::{Dataset, Example, ProfilePost};
use prbench_models::{Embedder, Generator};
use prbench_records::PlannerReport;

use super::{Engines, EvaluationReporter, PlannerOptions};
use crate::cache::{Cache, CacheCounters};
use crate::condition::{Condition, ConditionInputs, PlannedAspects};
use crate::planner::{plan_quality_all, CachedGenerator, Plan, Planner};
use crate::prompt::Prompts;
use crate::retrieve::embed_cache::CachedEmbedder;
use crate::EvalError;

/// Default retriever when the data is not a ranked dataset file.
pub const DEFAULT_RETRIEVER: &str = "bm25";

/// Examples per planner progress step.
const PLAN_CHUNK: usize = 8;

/// What [`prepare`] made.
pub(super) struct Prepared {
    /// Ranked posts and plans for the runner.
    pub(super) inputs: ConditionInputs,
    /// The planner's output per example (written to the `planner` run's planner.jsonl).
    pub(super) plans: Vec<Plan>,
}

/// Ranks the profile posts of `examples`: the ranked dataset file's own order when `data` is
/// one and `retriever` is `None`, otherwise with the retriever `retriever` names (default
/// [`DEFAULT_RETRIEVER`]), built by `engines`. Returns example id → posts best first, and a
/// description of the ranking.
///
/// # Errors
/// A retriever that cannot be built or fails; cache failures.
pub fn rank_profiles(
    retriever: Option<&str>,
    data: &Dataset,
    examples: &[Example],
    cache: Option<&Arc<Cache>>,
    engines: &dyn Engines,
    reporter: &dyn EvaluationReporter,
) -> Result<(HashMap<String, Vec<ProfilePost>>, String), EvalError> {
    let mut ranked = HashMap::with_capacity(examples.len());
    match (retriever, &data.profile_ranking) {
        (None, Some(by)) => {
            reporter.note(&format!("profiles come ranked in the dataset file (by {by}); pass --retriever to rank them again"));
            for ex in examples {
                ranked.insert(ex.id.clone(), ex.profile.clone());
            }
            Ok((ranked, format!("{by} (ranked dataset file)")))
        }
        (spec, _) => {
            let spec = spec.unwrap_or(DEFAULT_RETRIEVER);
            let retriever =
                engines.retriever(spec, cache.map(Arc::as_ref)).map_err(EvalError::Engine)?;
            reporter.start(&format!("retrieve · {spec}"), examples.len() as u64);
            for chunk in examples.chunks(64) {
                for (ex, ranking) in chunk.iter().zip(retriever.rank_all(chunk)?) {
                    let posts: Vec<ProfilePost> = ranking.posts(ex)?.into_iter().cloned().collect();
                    ranked.insert(ex.id.clone(), posts);
                }
                reporter.advance(chunk.len() as u64);
            }
            reporter.finish();
            let st = retriever.stats();
            if st.truncated_texts > 0 {
                reporter.note(&format!(
                    "retrieval: {} of {} texts were longer than the embedder's limit and were cut at the end ({} tokens in all)",
                    st.truncated_texts, st.texts, st.truncated_tokens
                ));
            }
            Ok((ranked, retriever.describe()))
        }
    }
}

/// Ranks the profiles of `examples` (the ranked dataset's own order when `data` is one and no
/// retriever is given) and, when `conditions` include `planner`, runs the planner and scores
/// it against the hidden rubric.
///
/// # Errors
/// A retriever or planner that cannot be loaded; a leak in a planner prompt; cache failures.
#[allow(clippy::too_many_arguments)]
pub(super) fn prepare(
    retriever: Option<&str>,
    planner: &PlannerOptions,
    seed: u64,
    data: &Dataset,
    examples: &[Example],
    conditions: &[Condition],
    cache: Option<&Arc<Cache>>,
    engines: &dyn Engines,
    reporter: &dyn EvaluationReporter,
) -> Result<Prepared, EvalError> {
    let mut inputs = ConditionInputs::default();
    let mut plans = Vec::new();
    let wants_planner = conditions.contains(&Condition::Planner);
    if !conditions.iter().any(|c| c.profile_k().is_some()) && !wants_planner {
        return Ok(Prepared { inputs, plans });
    }
    let (ranked, by) = rank_profiles(retriever, data, examples, cache, engines, reporter)?;
    inputs.ranked = ranked;
    inputs.retriever = Some(by);
    if wants_planner {
        let (p, report, manifest) =
            run_planner(planner, seed, examples, &inputs, cache, engines, reporter)?;
        for plan in &p {
            let aspects = if plan.is_usable() { plan.aspects.clone() } else { Vec::new() };
            inputs.plans.insert(
                plan.example_id.clone(),
                PlannedAspects {
                    aspects,
                    failure: plan.parse_error.clone(),
                    error: plan.error.clone(),
                },
            );
        }
        inputs.planner = Some(manifest);
        inputs.planner_report = Some(report);
        plans = p;
    }
    Ok(Prepared { inputs, plans })
}

/// What `conditions` show for `examples`, prepared exactly as [`super::Evaluation::prepare`]
/// prepares it (ranked profiles; the planner's aspects through `cache`, so replies an earlier
/// `eval` stored are reused), for callers that render inputs outside a run: the training
/// exports ([`crate::training_export`]).
///
/// # Errors
/// As [`super::Evaluation::prepare`].
#[allow(clippy::too_many_arguments)]
pub fn prepare_inputs(
    retriever: Option<&str>,
    planner: &PlannerOptions,
    seed: u64,
    data: &Dataset,
    examples: &[Example],
    conditions: &[Condition],
    cache: Option<&Arc<Cache>>,
    engines: &dyn Engines,
    reporter: &dyn EvaluationReporter,
) -> Result<ConditionInputs, EvalError> {
    prepare(retriever, planner, seed, data, examples, conditions, cache, engines, reporter)
        .map(|p| p.inputs)
}

/// Runs the planner over `examples` and measures its quality.
fn run_planner(
    opts: &PlannerOptions,
    seed: u64,
    examples: &[Example],
    inputs: &ConditionInputs,
    cache: Option<&Arc<Cache>>,
    engines: &dyn Engines,
    reporter: &dyn EvaluationReporter,
) -> Result<(Vec<Plan>, PlannerReport, serde_json::Value), EvalError> {
    let spec = opts.model.clone();
    let generator = engines.generator(&spec).map_err(EvalError::Engine)?;
    let counters = CacheCounters::default();
    let cached;
    let gen: &dyn Generator = match cache {
        Some(c) => {
            cached = CachedGenerator::new(generator.as_ref(), c, &counters);
            &cached
        }
        None => generator.as_ref(),
    };
    let mut planner = Planner::new(gen, seed, opts.k);
    planner.max_new_tokens = opts.max_new_tokens;
    let prompts = Prompts::new();
    let mut plans = Vec::with_capacity(examples.len());
    reporter.start(&format!("planner · {spec}"), examples.len() as u64);
    for chunk in examples.chunks(PLAN_CHUNK) {
        let exs: Vec<&Example> = chunk.iter().collect();
        let posts: Vec<Vec<&ProfilePost>> = chunk
            .iter()
            .map(|ex| inputs.ranked_posts(ex).map(|p| p.iter().collect()))
            .collect::<Result<_, _>>()?;
        plans.extend(planner.plan_all(&exs, &posts, &prompts)?);
        reporter.advance(chunk.len() as u64);
    }
    reporter.finish();
    if let Some(c) = cache {
        let r = counters.report(c);
        reporter.note(&format!("planner cache `{}`: {} hits, {} calls", r.path, r.hits, r.calls));
    }
    let errors = plans.iter().filter(|p| p.error.is_some()).count();
    let failed = plans.iter().filter(|p| p.error.is_none() && !p.is_usable()).count();
    let cut = plans.iter().filter(|p| p.hit_max_new_tokens).count();
    if let Some(first) = plans.iter().find_map(|p| p.error.as_deref()) {
        reporter.note(&format!("warning: the planner's generator failed on {errors} of {} examples (error outcomes under `planner`); first: {first}", plans.len()));
    }
    if let Some(first) = plans.iter().find_map(|p| p.parse_error.as_deref()) {
        reporter.note(&format!(
            "warning: the planner's reply held no usable list for {failed} of {} examples (scored with no context; see planner.jsonl); first: {first}",
            plans.len()
        ));
    }
    if cut > 0 {
        reporter.note(&format!(
            "note: {cut} planner replies used all {} new tokens (their last aspect may be cut; raise --planner-max-new-tokens)",
            opts.max_new_tokens
        ));
    }
    let usable: Vec<&Plan> = plans.iter().filter(|p| p.is_usable()).collect();
    let mean_aspects = if usable.is_empty() {
        0.0
    } else {
        usable.iter().map(|p| p.aspects.len()).sum::<usize>() as f64 / usable.len() as f64
    };
    let (quality, quality_with_failures_as_zero, quality_note) =
        match planner_quality(examples, &plans, cache, engines) {
            Ok(q) => (q.0, q.1, q.2),
            Err(e) => (None, None, Some(chain(&e))),
        };
    let mut h = Sha256::new();
    for p in &plans {
        h.update(serde_json::to_string(p).expect("plans serialize").as_bytes());
        h.update(b"\n");
    }
    let manifest = serde_json::json!({
        "model": generator.identity(),
        "k": opts.k,
        "settings": planner.settings(),
        "plans_sha256": hex::encode(h.finalize()),
    });
    let report = PlannerReport {
        model: spec,
        k: opts.k,
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

/// An error and its causes on one line, `outer: inner: …`.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cause = c.source();
    }
    s
}

/// The planner's quality: mean over examples with a plan, mean counting the others as 0, and
/// a note.
type Quality = (Option<f64>, Option<f64>, Option<String>);

/// Planner quality with the engines' quality embedder (through the cache when there is one).
fn planner_quality(
    examples: &[Example],
    plans: &[Plan],
    cache: Option<&Arc<Cache>>,
    engines: &dyn Engines,
) -> Result<Quality, EvalError> {
    let embedder: Arc<dyn Embedder> = engines.quality_embedder().map_err(EvalError::Engine)?;
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
        (q.truncated_texts > 0)
            .then(|| format!("{} texts were cut to the embedder's limit", q.truncated_texts))
    };
    Ok((q.mean, q.mean_missing_as_zero, note))
}

/// Writes one plan per line.
///
/// # Errors
/// I/O failures, naming the file.
pub(super) fn write_plans(path: &Path, plans: &[Plan]) -> Result<(), EvalError> {
    let mut text = String::new();
    for p in plans {
        text.push_str(&serde_json::to_string(p).expect("plans serialize"));
        text.push('\n');
    }
    std::fs::write(path, text)
        .map_err(|e| EvalError::evaluation_with(format!("writing `{}`", path.display()), e))
}
