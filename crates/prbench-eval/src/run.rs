//! One evaluation run end to end: the model under test and the control baselines on the same
//! items, then `runs/<run-id>/{manifest.json, outcomes.jsonl, summary.json, summary.md}`
//! (docs/ARCHITECTURE.md, "File formats").

use std::borrow::Cow;
use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use chrono::Utc;
use prbench_data::{Dataset, Example};
use prbench_models::ModelIdentity;
use prbench_records::{ProfileReport, RemoteCalls, Summary};
use prbench_stats::bootstrap::BootstrapConfig;
use prbench_stats::outcome::ItemResult;
use serde::Serialize;

use crate::cache::{Cache, CacheCounters, CachedJudge, CachedRewardModel};
use crate::condition::Condition;
use crate::controls::cache::{
    build_fingerprint, rows_key, rows_through_cache, RowsInputs, RowsSource,
};
use crate::controls::control_rows;
use crate::error::EvalError;
use crate::outcome::{write_jsonl, Outcome};
use crate::prompt::Prompts;
use crate::runner::{evaluate_into, Backend, ContextSource, EvalOptions, Reporter};
use crate::slots::assign_slots;
use crate::summary::{accuracy_rows, both_orders, position};

mod folder;
mod inspect;
mod resume;
mod select;

pub use folder::{check_run_dir_free, create_run_dir, validate_run_id};
pub(crate) use inspect::{inspect_run, read_manifest_in, Found};
pub use prbench_records::manifest::{Manifest, Resumption};
use resume::read_manifest;
pub use resume::{check_finished, check_resume};
pub(crate) use resume::{check_settings_before_load, EarlySettings};
pub use select::{limit_per_subset, sample_per_subset, select_examples, selected_examples};

/// Everything a run needs besides the data and the backend.
pub struct RunConfig {
    /// Run id (the run folder's name).
    pub run_id: String,
    /// The run folder, made empty by [`create_run_dir`].
    pub dir: PathBuf,
    /// Evaluate only the first N examples of each subset (slots are still assigned over the
    /// whole dataset, so an example keeps its slot whatever the limit).
    pub limit: Option<usize>,
    /// With `limit`: take a seeded random sample of N examples per subset instead of the first
    /// N ([`sample_per_subset`], seeded with the run seed).
    pub sample: bool,
    /// Evaluation options.
    pub options: EvalOptions,
    /// Bootstrap settings for every CI.
    pub bootstrap: BootstrapConfig,
    /// prbench version and git commit.
    pub code_version: String,
    /// The run cache; `None` for `--no-cache`. Control baselines make no cached calls; their
    /// rows are stored whole ([`crate::controls::cache`]).
    pub cache: Option<std::sync::Arc<Cache>>,
    /// The folder holds an unfinished run ([`check_resume`] passed) that this run resumes: its
    /// manifest keeps the first start time and gains a [`Resumption`].
    pub resume: bool,
    /// The judge recipe rendering judge prompts (`None`: prbench's own prompt).
    pub recipe: Option<std::sync::Arc<crate::recipe::JudgeRecipe>>,
}

/// A finished run.
pub struct RunResult {
    /// Folder holding the run files.
    pub dir: PathBuf,
    /// The summary written to `summary.json`.
    pub summary: Summary,
    /// The outcomes written to `outcomes.jsonl`.
    pub outcomes: Vec<Outcome>,
    /// Where the control baselines' rows came from (the run cache holds them per data, items,
    /// condition, seed, bootstrap settings and build).
    pub control_rows: RowsSource,
}

impl RunConfig {
    /// The examples of `data` this run evaluates ([`select_examples`]; a sample is drawn with
    /// the run seed).
    pub fn examples<'d>(&self, data: &'d Dataset) -> Cow<'d, [Example]> {
        selected_examples(&data.examples, self.limit, self.sample.then_some(self.options.seed))
    }

    /// `(limit_per_subset, sample_per_subset)` as manifests and summaries record them.
    fn limits(&self) -> (Option<usize>, Option<usize>) {
        if self.sample {
            (None, self.limit)
        } else {
            (self.limit, None)
        }
    }
}

/// Runs `backend` and the control baselines on `data`, writing the run files into
/// `cfg.dir`: `manifest.json` first (without an end time), `outcomes.jsonl` batch by batch,
/// then `summary.json`, `summary.md` and the completed manifest.
///
/// # Errors
/// Evaluation errors (leakage, template) and I/O errors naming the path.
pub fn run(
    data: &Dataset,
    backend: Backend<'_>,
    cfg: &RunConfig,
    reporter: &dyn Reporter,
) -> Result<RunResult, EvalError> {
    let prompts = Prompts::with_recipe(cfg.recipe.clone());
    if let Some(recipe) = prompts.recipe() {
        recipe.check_hidden_text(&data.examples, cfg.options.condition)?;
    }
    let examples = cfg.examples(data);
    let (identity, decoding) = match backend {
        Backend::Judge(j) => (j.identity(), j.decoding()),
        Backend::RewardModel(r) => (r.identity(), r.settings()),
    };
    let slots = assign_slots(&data.examples, cfg.options.seed);
    let training_condition = backend.training_condition();
    let mut manifest = manifest_for(
        data,
        &examples,
        &identity,
        training_condition.as_deref(),
        &decoding,
        cfg,
        &prompts,
    );
    if cfg.resume {
        let old = read_manifest(cfg)?;
        manifest.started = old.started;
        manifest.resumed = old.resumed;
        manifest
            .resumed
            .push(Resumption { at: Utc::now(), code_version: cfg.code_version.clone() });
    }
    write_json(&cfg.dir.join("manifest.json"), &manifest)?;

    // The control baselines do not depend on the model: they run on a second thread while the
    // model is evaluated (with a zero-cost model this halves the harness's wall time; next to
    // a local judge they take a few seconds of one core).
    let (model_part, baselines) = std::thread::scope(|scope| {
        let baselines = scope.spawn(|| {
            let inputs = RowsInputs {
                dataset_hash: &data.hash,
                examples: &examples,
                options: &cfg.options,
                bootstrap: &cfg.bootstrap,
                code_version: &cfg.code_version,
            };
            // No key without a cache, or when the executable cannot be identified: computed.
            let key = cfg
                .cache
                .as_ref()
                .and_then(|_| build_fingerprint())
                .map(|build| rows_key(&inputs, &build));
            rows_through_cache(cfg.cache.as_deref(), key.as_deref(), || {
                control_rows(&examples, &slots, &cfg.options, &cfg.bootstrap)
            })
        });
        let model_part = (|| -> Result<_, EvalError> {
            let path = cfg.dir.join("outcomes.jsonl");
            let mut w = BufWriter::new(fs::File::create(&path).map_err(io_err(&path))?);
            let mut outcomes = Vec::with_capacity(examples.len());
            let counters = CacheCounters::default();
            let (cached_judge, cached_rm);
            let cached = match (backend, cfg.cache.as_deref()) {
                (Backend::Judge(j), Some(cache)) if j.cacheable() => {
                    cached_judge = CachedJudge::new(j, cache, &counters);
                    Some(Backend::Judge(&cached_judge))
                }
                (Backend::RewardModel(r), Some(cache)) if r.cacheable() => {
                    cached_rm = CachedRewardModel::new(r, cache, &counters);
                    Some(Backend::RewardModel(&cached_rm))
                }
                _ => None,
            };
            let calls_before = backend.call_stats();
            let clock = Instant::now();
            evaluate_into(
                &examples,
                &slots,
                cached.unwrap_or(backend),
                &cfg.options,
                &prompts,
                reporter,
                &mut |batch| {
                    write_jsonl(&mut w, batch).and_then(|()| w.flush()).map_err(io_err(&path))?;
                    outcomes.extend_from_slice(batch);
                    Ok(())
                },
            )?;
            let wall_seconds = clock.elapsed().as_secs_f64();
            drop(w);
            let remote = backend.call_stats().map(|after| {
                let before = calls_before.unwrap_or_default();
                RemoteCalls {
                    requests: after.requests - before.requests,
                    retries: after.retries - before.retries,
                    failures: after.failures - before.failures,
                    // A reply without a count makes the run's total unknown, never a short sum.
                    prompt_tokens: (after.unreported_prompt_tokens
                        == before.unreported_prompt_tokens)
                        .then(|| after.prompt_tokens - before.prompt_tokens),
                    completion_tokens: (after.unreported_completion_tokens
                        == before.unreported_completion_tokens)
                        .then(|| after.completion_tokens - before.completion_tokens),
                }
            });
            let cache = match (&cached, cfg.cache.as_deref()) {
                (Some(_), Some(c)) => Some(counters.report(c)),
                _ => None,
            };
            Ok((outcomes, wall_seconds, remote, cache))
        })();
        (model_part, baselines.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
    });
    let (outcomes, wall_seconds, remote, cache) = model_part?;
    let (baselines, control_source) = baselines?;

    let results: Vec<ItemResult> = outcomes.iter().map(|o| o.result).collect();
    let summary = Summary {
        run_id: cfg.run_id.clone(),
        model: identity.spec.clone(),
        model_training_condition: training_condition,
        engine: identity.engine.clone(),
        decoding,
        condition: cfg.options.condition.to_string(),
        condition_meaning: cfg.options.condition.meaning(),
        oracle: cfg.options.condition.is_oracle(),
        dataset: data.source.clone(),
        dataset_kind: data.kind.clone(),
        dataset_hash: data.hash.clone(),
        limit_per_subset: cfg.limits().0.filter(|_| examples.len() < data.examples.len()),
        sample_per_subset: cfg.limits().1.filter(|_| examples.len() < data.examples.len()),
        seed: cfg.options.seed,
        bootstrap_resamples: cfg.bootstrap.resamples,
        bootstrap_users: crate::summary::user_count(&outcomes),
        rows: accuracy_rows(&outcomes, &results, &cfg.bootstrap),
        position_bias: position(&outcomes),
        both_orders: both_orders(&outcomes, &cfg.bootstrap),
        baselines,
        input_tokens: outcomes.iter().map(|o| o.input_tokens).sum(),
        truncated_tokens: outcomes.iter().map(|o| o.truncated_tokens).sum(),
        output_tokens: outcomes.iter().map(|o| o.output_tokens).sum(),
        wall_seconds,
        cache,
        remote,
        profile: profile_report(&cfg.options, &outcomes),
        planner: match cfg.options.condition {
            Condition::Planner => cfg.options.inputs.planner_report.clone(),
            _ => None,
        },
        empty_rubric: (cfg.options.condition.is_oracle()
            && cfg.options.context == ContextSource::Condition)
            .then(|| outcomes.iter().filter(|o| o.empty_rubric).count()),
    };
    write_json(&cfg.dir.join("summary.json"), &summary)?;
    let md = cfg.dir.join("summary.md");
    fs::write(&md, prbench_records::markdown::render(&summary)).map_err(io_err(&md))?;
    manifest.finished = Some(Utc::now());
    manifest.control_rows = Some(control_source.describe());
    write_json(&cfg.dir.join("manifest.json"), &manifest)?;
    Ok(RunResult { dir: cfg.dir.clone(), summary, outcomes, control_rows: control_source })
}

/// Posts shown and dropped in a `profile:k` run; `None` under other conditions.
fn profile_report(options: &EvalOptions, outcomes: &[Outcome]) -> Option<ProfileReport> {
    // The profile-overlap baseline reads the whole profile whatever the condition.
    if options.context != ContextSource::Condition {
        return None;
    }
    let k = options.condition.profile_k()?;
    Some(profile_figures(
        k,
        options.inputs.retriever.clone().unwrap_or_else(|| "unknown".into()),
        outcomes,
    ))
}

/// The profile figures of a `profile:k` run's outcomes: mean posts shown (over outcomes that
/// record it), posts dropped to fit the context, examples that lost at least one post, and
/// examples with an empty profile (rendered as under `none`).
/// `retriever` describes how the posts were ranked.
pub fn profile_figures(k: usize, retriever: String, outcomes: &[Outcome]) -> ProfileReport {
    let shown: Vec<usize> = outcomes.iter().filter_map(|o| o.posts_shown).collect();
    ProfileReport {
        k,
        retriever,
        mean_posts_shown: if shown.is_empty() {
            0.0
        } else {
            shown.iter().sum::<usize>() as f64 / shown.len() as f64
        },
        posts_dropped: outcomes.iter().map(|o| o.posts_dropped).sum(),
        examples_with_drops: outcomes.iter().filter(|o| o.posts_dropped > 0).count(),
        empty_profile: outcomes.iter().filter(|o| o.empty_profile).count(),
    }
}

/// The manifest a run of `cfg` on `examples` writes at its start.
fn manifest_for(
    data: &Dataset,
    examples: &[Example],
    identity: &ModelIdentity,
    training_condition: Option<&str>,
    decoding: &serde_json::Value,
    cfg: &RunConfig,
    prompts: &Prompts,
) -> Manifest {
    let mut subsets: Vec<String> = Vec::new();
    for ex in examples {
        if !subsets.contains(&ex.subset) {
            subsets.push(ex.subset.clone());
        }
    }
    Manifest {
        run_id: cfg.run_id.clone(),
        code_version: cfg.code_version.clone(),
        model: identity.clone(),
        model_training_condition: training_condition.map(str::to_string),
        decoding: decoding.clone(),
        template_hash: prompts.hash(),
        judge_recipe: prompts.recipe().map(|r| r.manifest_entry()),
        dataset: prbench_data::spec::absolute(&data.source),
        dataset_kind: data.kind.clone(),
        dataset_hash: data.hash.clone(),
        dataset_examples: data.examples.len(),
        limit_per_subset: cfg.limits().0,
        sample_per_subset: cfg.limits().1,
        subsets,
        n_examples: examples.len(),
        condition: cfg.options.condition.to_string(),
        oracle: cfg.options.condition.is_oracle(),
        condition_inputs: cfg.options.inputs.manifest_entry(cfg.options.condition),
        seed: cfg.options.seed,
        both_orders: cfg.options.both_orders,
        batch_size: cfg.options.batch_size,
        bootstrap_resamples: cfg.bootstrap.resamples,
        started: Utc::now(),
        finished: None,
        resumed: Vec::new(),
        control_rows: None,
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> EvalError {
    let path = path.to_path_buf();
    move |source| EvalError::Io { path, source }
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), EvalError> {
    let text = serde_json::to_string_pretty(value).expect("run files serialize") + "\n";
    fs::write(path, text).map_err(io_err(path))
}
