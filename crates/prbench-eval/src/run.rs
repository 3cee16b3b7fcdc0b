//! One evaluation run end to end: the model under test and the control baselines on the same
//! items, then `runs/<run-id>/{manifest.json, outcomes.jsonl, summary.json, summary.md}`
//! (docs/ARCHITECTURE.md, "File formats").

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
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
use crate::slots::{assign_slots, slot_key};
use crate::summary::{accuracy_rows, both_orders, position};

pub use prbench_records::manifest::{Manifest, Resumption};

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

/// Checks that a run id is a plain folder name: non-empty, ASCII letters, digits, `.`, `_`
/// and `-` only, not starting with `.`.
///
/// # Errors
/// [`EvalError::RunDir`] saying what is wrong.
pub fn validate_run_id(id: &str) -> Result<(), EvalError> {
    let ok = !id.is_empty()
        && !id.starts_with('.')
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(EvalError::RunDir {
            path: PathBuf::from(id),
            reason: "a run id must be a plain folder name: letters, digits, `.`, `_`, `-`, not starting with `.`".into(),
        })
    }
}

/// Why a run folder is refused: it exists already.
const RUN_EXISTS: &str =
    "a run with this id already exists; pass another --run-id or remove the folder";

/// Checks, without creating anything, that `run_id` is valid and `out_dir/run_id` does not exist
/// yet; returns that path. [`create_run_dir`] makes the same check atomically when it creates it.
///
/// # Errors
/// [`EvalError::RunDir`] for an invalid id or an existing folder.
pub fn check_run_dir_free(out_dir: &Path, run_id: &str) -> Result<PathBuf, EvalError> {
    validate_run_id(run_id)?;
    let dir = out_dir.join(run_id);
    if dir.exists() {
        return Err(EvalError::RunDir { path: dir, reason: RUN_EXISTS.into() });
    }
    Ok(dir)
}

/// Creates `out_dir/run_id` as a new, empty folder. `prbench eval` checks ids with
/// [`check_run_dir_free`] before loading a model and creates the folders after.
///
/// # Errors
/// [`EvalError::RunDir`] when the id is invalid, the folder already exists (runs are never
/// overwritten) or cannot be created.
pub fn create_run_dir(out_dir: &Path, run_id: &str) -> Result<PathBuf, EvalError> {
    validate_run_id(run_id)?;
    fs::create_dir_all(out_dir)
        .map_err(|e| EvalError::RunDir { path: out_dir.to_path_buf(), reason: e.to_string() })?;
    let dir = out_dir.join(run_id);
    fs::create_dir(&dir).map_err(|e| EvalError::RunDir {
        path: dir.clone(),
        reason: if e.kind() == std::io::ErrorKind::AlreadyExists {
            RUN_EXISTS.into()
        } else {
            e.to_string()
        },
    })?;
    Ok(dir)
}

/// The first `limit` examples of each subset, in order (all when `limit` is `None`):
/// [`prbench_data::select::first_per_subset`], cloned.
pub fn limit_per_subset(examples: &[Example], limit: Option<usize>) -> Vec<Example> {
    let Some(limit) = limit else { return examples.to_vec() };
    prbench_data::select::first_per_subset(examples, Some(limit)).into_iter().cloned().collect()
}

/// A seeded random sample of `n` examples of each subset, in input order: in each subset the
/// `n` examples with the smallest sha256(seed ‖ id) key ([`slot_key`], ties by id). The draw
/// depends only on the seed and the ids, never on the order examples arrive in; since slots
/// alternate in the same key order, a sampled subset keeps chosen balanced between A and B.
pub fn sample_per_subset(examples: &[Example], n: usize, seed: u64) -> Vec<Example> {
    let mut by_subset: HashMap<&str, Vec<([u8; 32], &str)>> = HashMap::new();
    for ex in examples {
        by_subset
            .entry(ex.subset.as_str())
            .or_default()
            .push((slot_key(seed, &ex.id), ex.id.as_str()));
    }
    let mut keep: HashSet<&str> = HashSet::new();
    for keyed in by_subset.values_mut() {
        keyed.sort_unstable();
        keep.extend(keyed.iter().take(n).map(|(_, id)| *id));
    }
    examples.iter().filter(|ex| keep.contains(ex.id.as_str())).cloned().collect()
}

/// The examples a run evaluates: all (`limit` `None`), the first `limit` of each subset, or
/// with `sample_seed` a random sample of `limit` per subset drawn with that seed
/// ([`sample_per_subset`]).
pub fn select_examples(
    examples: &[Example],
    limit: Option<usize>,
    sample_seed: Option<u64>,
) -> Vec<Example> {
    selected_examples(examples, limit, sample_seed).into_owned()
}

/// [`select_examples`], borrowing `examples` when all are evaluated (at full scale they hold
/// ~100 MB of profile text, which a copy would double).
pub fn selected_examples(
    examples: &[Example],
    limit: Option<usize>,
    sample_seed: Option<u64>,
) -> Cow<'_, [Example]> {
    match (limit, sample_seed) {
        (None, _) => Cow::Borrowed(examples),
        (Some(n), Some(seed)) => Cow::Owned(sample_per_subset(examples, n, seed)),
        (limit, None) => Cow::Owned(limit_per_subset(examples, limit)),
    }
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

/// Checks that the run in `cfg.dir` (one `inspect_run` found unfinished, or finished with
/// errored items or a missing file) was started with the same model, decoding, prompts, data,
/// condition, condition inputs, seed, order mode, limit and bootstrap as `cfg`, so resuming it
/// into the same folder gives the same outcomes.
///
/// # Errors
/// [`EvalError::RunDir`] naming the first field that differs (or an unreadable manifest) and
/// what to do.
pub fn check_resume(
    data: &Dataset,
    backend: Backend<'_>,
    cfg: &RunConfig,
) -> Result<(), EvalError> {
    same_settings(data, backend, cfg).map(drop)
}

/// Checks that the finished run in `cfg.dir` has the settings of `cfg` (as [`check_resume`]
/// does for runs to resume): the same command run again with the same `--run-id` reuses it.
///
/// # Errors
/// [`EvalError::RunDir`] when the run is unfinished, unreadable, or differs in a setting.
pub fn check_finished(
    data: &Dataset,
    backend: Backend<'_>,
    cfg: &RunConfig,
) -> Result<(), EvalError> {
    let old = same_settings(data, backend, cfg)?;
    if old.finished.is_none() {
        return Err(EvalError::RunDir {
            path: cfg.dir.clone(),
            reason: "it is unfinished; resume it instead".into(),
        });
    }
    Ok(())
}

/// The manifest in `cfg.dir`.
fn read_manifest(cfg: &RunConfig) -> Result<Manifest, EvalError> {
    read_manifest_in(&cfg.dir)
}

/// The manifest in `dir`, or an error saying it cannot be used and what to do.
pub(crate) fn read_manifest_in(dir: &Path) -> Result<Manifest, EvalError> {
    let path = dir.join("manifest.json");
    let text = fs::read_to_string(&path)
        .map_err(|e| damaged(dir, "manifest.json", "cannot be read".into(), MANIFEST_TODO, e))?;
    serde_json::from_str(&text).map_err(|e| {
        damaged(dir, "manifest.json", describe_unparsed(&text, "a run manifest"), MANIFEST_TODO, e)
    })
}

/// What to do about a run folder whose manifest cannot be read: without it the settings the
/// run was made with are unknown, so nothing in the folder can be trusted.
const MANIFEST_TODO: &str =
    "without it the run's settings are unknown: remove the folder and rerun this command (the cache answers every call the run completed), or pass another --run-id";

/// What to do about a finished run whose outcomes or summary cannot be used: the manifest still
/// says how the run was made, so the same command can redo it into the folder once the file is
/// out of the way (a missing file makes it resume), with every completed call from the cache.
const FILE_TODO: &str = "move the file out of the folder and rerun this command: the run is redone into the folder, every call it completed answered by the cache (or pass another --run-id)";

/// The error for a run file that cannot be used: names the folder, the file and what is
/// wrong, says what to do, and keeps the cause.
fn damaged(
    dir: &Path,
    file: &str,
    what: String,
    todo: &str,
    source: impl std::error::Error + Send + Sync + 'static,
) -> EvalError {
    EvalError::evaluation_with(format!("run folder `{}`: its {file} {what}, so the run can be neither reused nor resumed; {todo}", dir.display()), source)
}

/// Like [`damaged`] for a file that reads but disagrees with the rest of the run.
fn inconsistent(dir: &Path, file: &str, what: String) -> EvalError {
    EvalError::evaluation(format!("run folder `{}`: its {file} {what}, so the run can be neither reused nor resumed; {FILE_TODO}", dir.display()))
}

/// Why `text` did not parse as `expected`: an HTML page (what a report written over a run file
/// leaves) is named as such.
fn describe_unparsed(text: &str, expected: &str) -> String {
    let head = text.trim_start().get(..64).unwrap_or(text.trim_start()).to_ascii_lowercase();
    if head.starts_with("<!doctype html") || head.starts_with("<html") {
        format!("holds an HTML page, not {expected} (a report written over it?)")
    } else if text.trim().is_empty() {
        format!("is empty, not {expected}")
    } else {
        format!("does not parse as {expected}")
    }
}

/// What an existing run folder holds, as [`inspect_run`] finds it: what rerunning the command
/// that made it does with it.
#[derive(Debug)]
pub(crate) enum Found {
    /// Killed before its end (no end time in the manifest): resumed; `written` outcome lines
    /// were kept.
    Unfinished {
        /// Outcome lines in `outcomes.jsonl`.
        written: usize,
    },
    /// Finished, but the backend failed on `errors` of its `items`: resumed, which retries
    /// exactly those (the cache answers the rest).
    Errored {
        /// Items whose outcome carries an error.
        errors: usize,
        /// Items of the run.
        items: usize,
    },
    /// Finished, but `file` is missing: resumed, which writes every run file again from the
    /// cache.
    Missing {
        /// The missing file's name.
        file: &'static str,
    },
    /// Finished with every item answered and its files consistent: reused as it is.
    Complete(Box<Summary>),
}

/// Says what the run folder `dir` (named `run_id`, whose manifest is `manifest`) holds, without
/// a model: for a finished run, whether its outcomes and summary are there, read, and agree with
/// the manifest and each other.
///
/// # Errors
/// An `outcomes.jsonl` or `summary.json` that cannot be read or parsed, or that disagree
/// (another run's summary, a count that does not match): the message names the file and what is
/// wrong, and says what to do.
pub(crate) fn inspect_run(
    dir: &Path,
    run_id: &str,
    manifest: &Manifest,
) -> Result<Found, EvalError> {
    if manifest.finished.is_none() {
        // A killed run may have left a half-written last line: resuming rewrites the file, so
        // its lines are only counted.
        let written = fs::read_to_string(dir.join("outcomes.jsonl"))
            .map_or(0, |t| t.lines().filter(|l| !l.trim().is_empty()).count());
        return Ok(Found::Unfinished { written });
    }
    let read = |file: &'static str| match fs::read_to_string(dir.join(file)) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(damaged(dir, file, "cannot be read".into(), FILE_TODO, e)),
    };
    let Some(text) = read("outcomes.jsonl")? else {
        return Ok(Found::Missing { file: "outcomes.jsonl" });
    };
    let mut outcomes = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let o: Outcome = serde_json::from_str(line).map_err(|e| {
            damaged(
                dir,
                "outcomes.jsonl",
                format!("line {}: {}", i + 1, describe_unparsed(line, "an outcome")),
                FILE_TODO,
                e,
            )
        })?;
        if o.condition != manifest.condition {
            return Err(inconsistent(
                dir,
                "outcomes.jsonl",
                format!(
                    "line {} is an outcome under `{}`, not the manifest's `{}`",
                    i + 1,
                    o.condition,
                    manifest.condition
                ),
            ));
        }
        outcomes.push(o);
    }
    if outcomes.len() != manifest.n_examples {
        return Err(inconsistent(
            dir,
            "outcomes.jsonl",
            format!(
                "holds {} outcomes where the manifest records {} examples",
                outcomes.len(),
                manifest.n_examples
            ),
        ));
    }
    let errors = outcomes.iter().filter(|o| o.error.is_some()).count();
    let Some(text) = read("summary.json")? else {
        return Ok(Found::Missing { file: "summary.json" });
    };
    let summary: Summary = serde_json::from_str(&text).map_err(|e| {
        damaged(dir, "summary.json", describe_unparsed(&text, "a run summary"), FILE_TODO, e)
    })?;
    if summary.run_id != run_id {
        return Err(inconsistent(
            dir,
            "summary.json",
            format!("is the summary of run `{}`", summary.run_id),
        ));
    }
    let fields = [
        ("model", &summary.model, &manifest.model.spec),
        ("condition", &summary.condition, &manifest.condition),
        ("dataset_hash", &summary.dataset_hash, &manifest.dataset_hash),
    ];
    if let Some((name, theirs, mine)) = fields.into_iter().find(|(_, a, b)| a != b) {
        return Err(inconsistent(
            dir,
            "summary.json",
            format!("has `{name}` {theirs} where the manifest has {mine}"),
        ));
    }
    if summary.seed != manifest.seed {
        return Err(inconsistent(
            dir,
            "summary.json",
            format!("has seed {} where the manifest has {}", summary.seed, manifest.seed),
        ));
    }
    // The micro row is recounted from the outcomes: a summary whose figures were edited, or
    // that belongs to other outcomes, is not shown as this run's result.
    let recount =
        prbench_stats::Tally::from_results(&outcomes.iter().map(|o| o.result).collect::<Vec<_>>());
    match summary.rows.iter().find(|r| r.label == "micro") {
        Some(micro) if micro.tally != recount => {
            let t = |t: &prbench_stats::Tally| {
                format!(
                    "{} items: {} correct, {} wrong, {} ties, {} unparsed, {} errors",
                    t.n, t.correct, t.wrong, t.ties, t.unparsed, t.errors
                )
            };
            return Err(inconsistent(
                dir,
                "summary.json",
                format!("counts {} where outcomes.jsonl holds {}", t(&micro.tally), t(&recount)),
            ));
        }
        Some(micro) => {
            let strict = (recount.n > 0).then(|| recount.correct as f64 / recount.n as f64);
            let agrees = match (micro.strict, strict) {
                (Some(a), Some(b)) => (a - b).abs() <= 1e-9,
                (a, b) => a.is_none() && b.is_none(),
            };
            if !agrees {
                return Err(inconsistent(
                    dir,
                    "summary.json",
                    format!(
                        "gives micro accuracy {:?} where its own counts give {strict:?}",
                        micro.strict
                    ),
                ));
            }
        }
        None => return Err(inconsistent(dir, "summary.json", "has no `micro` row".into())),
    }
    if errors > 0 {
        return Ok(Found::Errored { errors, items: outcomes.len() });
    }
    Ok(Found::Complete(Box::new(summary)))
}

/// The settings of a run known before its model loads: what [`check_settings_before_load`]
/// compares with an existing run's manifest.
pub(crate) struct EarlySettings<'a> {
    /// The dataset as loaded.
    pub(crate) data: &'a Dataset,
    /// The examples the run evaluates.
    pub(crate) examples: &'a [Example],
    /// The run's condition.
    pub(crate) condition: Condition,
    /// Run seed.
    pub(crate) seed: u64,
    /// Both-orders mode.
    pub(crate) both_orders: bool,
    /// `--limit`.
    pub(crate) limit: Option<usize>,
    /// `--sample` (with `limit`).
    pub(crate) sample: bool,
    /// Bootstrap resamples.
    pub(crate) bootstrap_resamples: usize,
}

/// Compares the settings that do not need the model (data, condition, seed, order mode, limit,
/// bootstrap) with the manifest `old` of the run in `dir`, so that a rerun with another one is
/// refused before any model loads; the model, decoding, prompts and condition inputs are
/// compared once they are known ([`check_resume`], [`check_finished`]).
///
/// # Errors
/// [`EvalError::RunDir`] naming the first setting that differs.
pub(crate) fn check_settings_before_load(
    dir: &Path,
    old: &Manifest,
    new: &EarlySettings<'_>,
) -> Result<(), EvalError> {
    check_ranges(dir, old)?;
    let (limit_per_subset, sample_per_subset) =
        if new.sample { (None, new.limit) } else { (new.limit, None) };
    let expected = Manifest {
        dataset_hash: new.data.hash.clone(),
        condition: new.condition.to_string(),
        seed: new.seed,
        both_orders: new.both_orders,
        limit_per_subset,
        sample_per_subset,
        n_examples: new.examples.len(),
        bootstrap_resamples: new.bootstrap_resamples,
        ..old.clone()
    };
    match first_difference(old, &expected) {
        Some(difference) => Err(differs(dir, old, difference)),
        None => Ok(()),
    }
}

/// An optional flag's value as the user would type it: `--limit 2`, or `no --limit`.
fn flag_value(flag: &str, value: Option<impl std::fmt::Display>) -> String {
    value.map_or_else(|| format!("no {flag}"), |v| format!("{flag} {v}"))
}

/// The first setting that decides a run's outcomes or figures in which `new` differs from
/// `old`: its manifest name, its value there and here (as the user would type it).
fn first_difference(old: &Manifest, new: &Manifest) -> Option<(&'static str, String, String)> {
    let both = |on: bool| if on { "--both-orders" } else { "no --both-orders" }.to_string();
    let sample = |n: Option<usize>| {
        n.map_or_else(|| "no --sample".to_string(), |n| format!("--limit {n} --sample"))
    };
    let fields: [(&str, String, String); 12] = [
        (
            "model",
            serde_json::to_string(&old.model).unwrap_or_default(),
            serde_json::to_string(&new.model).unwrap_or_default(),
        ),
        ("decoding", old.decoding.to_string(), new.decoding.to_string()),
        ("template_hash", old.template_hash.clone(), new.template_hash.clone()),
        ("dataset_hash", old.dataset_hash.clone(), new.dataset_hash.clone()),
        ("condition", old.condition.clone(), new.condition.clone()),
        ("condition_inputs", old.condition_inputs.to_string(), new.condition_inputs.to_string()),
        ("seed", format!("--seed {}", old.seed), format!("--seed {}", new.seed)),
        ("both_orders", both(old.both_orders), both(new.both_orders)),
        (
            "limit_per_subset",
            flag_value("--limit", old.limit_per_subset),
            flag_value("--limit", new.limit_per_subset),
        ),
        ("sample_per_subset", sample(old.sample_per_subset), sample(new.sample_per_subset)),
        ("n_examples", old.n_examples.to_string(), new.n_examples.to_string()),
        (
            "bootstrap_resamples",
            format!("--bootstrap {}", old.bootstrap_resamples),
            format!("--bootstrap {}", new.bootstrap_resamples),
        ),
    ];
    fields.into_iter().find(|(_, a, b)| a != b)
}

/// Checks that the values of the manifest `old` (of the run in `dir`) are in the ranges prbench
/// accepts: a manifest written before the ranges were checked, e.g. with `--bootstrap
/// 4294967295`, would make the resumed run fail the same way.
fn check_ranges(dir: &Path, old: &Manifest) -> Result<(), EvalError> {
    let max = prbench_stats::bootstrap::MAX_RESAMPLES;
    if old.bootstrap_resamples > max {
        return Err(EvalError::RunDir {
            path: dir.to_path_buf(),
            reason: format!(
                "its manifest.json holds `bootstrap_resamples` {}, more than the {max} prbench allows (it would not fit in memory); pass another --run-id, or remove the folder",
                old.bootstrap_resamples
            ),
        });
    }
    Ok(())
}

/// The refusal of a run whose `name` setting differs.
fn differs(dir: &Path, old: &Manifest, (name, was, now): (&str, String, String)) -> EvalError {
    let state = if old.finished.is_some() { "a finished" } else { "an unfinished" };
    EvalError::RunDir {
        path: dir.to_path_buf(),
        reason: format!("it is {state} run with another `{name}` ({was} there, {now} now); rerun the command that started it, or pass another --run-id"),
    }
}

/// The manifest in `cfg.dir`, if every setting that decides the outcomes matches `cfg` and
/// its own values are in the ranges prbench accepts ([`check_ranges`]).
fn same_settings(
    data: &Dataset,
    backend: Backend<'_>,
    cfg: &RunConfig,
) -> Result<Manifest, EvalError> {
    let old = read_manifest(cfg)?;
    check_ranges(&cfg.dir, &old)?;
    let (identity, decoding) = match backend {
        Backend::Judge(j) => (j.identity(), j.decoding()),
        Backend::RewardModel(r) => (r.identity(), r.settings()),
    };
    let examples = cfg.examples(data);
    let new = manifest_for(
        data,
        &examples,
        &identity,
        backend.training_condition().as_deref(),
        &decoding,
        cfg,
        &Prompts::with_recipe(cfg.recipe.clone()),
    );
    match first_difference(&old, &new) {
        Some(difference) => Err(differs(&cfg.dir, &old, difference)),
        None => Ok(old),
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
