//! `prbench bon {sample,judge,score,report}`: Best-of-N (PROTOCOL.md §6) over one folder.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};

use prbench_data::load::load;
use prbench_data::{Dataset, Example};
use prbench_downstream::bon::files::{read_jsonl, write_json, write_jsonl};
use prbench_downstream::bon::folder::{
    check_name, name_for, BonFolder, SamplesManifest, StageManifest,
};
use prbench_downstream::bon::prompts::{policy_hash, rating_hash, rubric_hash};
use prbench_downstream::bon::rating::{RatingEngine, RatingRewardModel};
use prbench_downstream::bon::report::{build, render, ModelScores};
use prbench_downstream::bon::rubric::{check_examples, judge_all, RubricEngine, RubricJudgement};
use prbench_downstream::bon::sample::{sample_all, select, BonSample, SampleSettings};
use prbench_downstream::bon::score::{sample_item_id, score_all, BonContext, BonScore};
use prbench_eval::cache::{Cache, CacheCounters, CachedRewardModel};
use prbench_eval::cached_scorer::CachedNextTokenScorer;
use prbench_eval::condition::{Condition, ConditionInputs};
use prbench_eval::planner::CachedGenerator;
use prbench_eval::prompt::Prompts;
use prbench_eval::runner::Reporter;
use prbench_llm::{GgufEngine, GgufOptions};
use prbench_models::assets::default_model_path;
use prbench_models::spec::ModelSpec;
use prbench_models::{Generator, NextTokenScorer, RewardModel};

use crate::cli::{
    BonCommand, CacheArgs, JudgeArgs, ReportArgs, SampleArgs, ScoreArgs, VerdictMode,
};
use crate::progress::Bar;
use prbench_engines::generators::{load_generator, SpecEngines};
use prbench_engines::load::{load_model, LoadSettings, Loaded};
use prbench_engines::prepare::prepare_pal;
use prbench_eval::evaluation::rank_profiles;

impl CacheArgs {
    /// The cache of the BoN folder `folder` (see [`default_cache`]), unless `--no-cache`.
    fn open(&self, folder: &Path) -> Result<Option<Arc<Cache>>> {
        if self.no_cache {
            return Ok(None);
        }
        let path = self.cache.clone().unwrap_or_else(|| default_cache(folder));
        Ok(Some(Arc::new(Cache::open(&path)?)))
    }
}

/// The default cache of a BoN folder: `cache.sqlite` in the folder's parent (the current
/// folder for a bare name such as `bon1`), never a path that depends on where the command runs.
pub fn default_cache(folder: &Path) -> PathBuf {
    match folder.parent() {
        Some(parent) => parent.join("cache.sqlite"),
        None => folder.join("cache.sqlite"),
    }
}

/// Refuses an `--out` that is, or lies under, a file: a BoN folder must be a folder.
fn check_out_folder(out: &Path) -> Result<()> {
    if let Some(file) = out
        .ancestors()
        .filter(|a| !a.as_os_str().is_empty())
        .find(|a| a.exists())
        .filter(|a| !a.is_dir())
    {
        let what = if file == out {
            "is a file".to_string()
        } else {
            format!("lies under `{}`, which is a file", file.display())
        };
        bail!("--out `{}` {what}; `bon sample` writes a folder of files (manifest.json, samples.jsonl, …): pass a new folder path", out.display());
    }
    Ok(())
}

/// Runs `prbench bon`.
pub fn run(cmd: BonCommand) -> Result<()> {
    match cmd {
        BonCommand::Sample(a) => sample(a),
        BonCommand::Judge(a) => judge(a),
        BonCommand::Score(a) => score(a),
        BonCommand::Report(a) => report(a),
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339()
}

fn default_gguf() -> String {
    format!("gguf:{}", default_model_path().display())
}

fn sample(args: SampleArgs) -> Result<()> {
    // Sampling defaults of PROTOCOL.md §6 (the remote flags' own defaults are for judges).
    let temperature = args.stage.remote.temperature.unwrap_or(1.0);
    let top_p = args.stage.remote.top_p.unwrap_or(0.9);
    if !(temperature > 0.0 && temperature.is_finite()) {
        bail!("--temperature must be a finite number above 0 for sampling (got {temperature}); Best-of-N needs N different answers");
    }
    if !(top_p > 0.0 && top_p <= 1.0) {
        bail!("--top-p must be in (0, 1] (got {top_p})");
    }
    check_out_folder(&args.out)?;
    let folder = BonFolder::new(&args.out);
    if folder.samples().exists() {
        bail!("`{}` already holds samples; choose a new --out folder (judge and score it with `prbench bon judge/score --samples {}`)", folder.samples().display(), args.out.display());
    }
    let data = load(&args.data.data, &args.data.subset)
        .with_context(|| format!("loading dataset `{}`", args.data.data))?;
    super::print_data_warnings(&data);
    let examples: Vec<Example> =
        select(&data.examples, args.limit, args.distinct_questions).into_iter().cloned().collect();
    if examples.is_empty() {
        bail!("no examples selected from `{}`", data.source);
    }
    let spec = args.policy.clone().unwrap_or_else(default_gguf);
    let settings = SampleSettings {
        n: args.n,
        k_posts: args.k_posts,
        temperature,
        top_p,
        max_new_tokens: args.max_new_tokens,
        seed: args.seed,
    };
    let bar = Bar::new(args.stage.quiet);
    let cache = args.stage.cache.open(&args.out)?;
    let (ranked, retriever) = rank_profiles(
        args.retriever.as_deref(),
        &data,
        &examples,
        cache.as_ref(),
        &SpecEngines { remote: &args.stage.remote },
        &bar,
    )?;
    let inputs = ConditionInputs {
        ranked,
        retriever: Some(retriever.clone()),
        ..ConditionInputs::default()
    };
    eprintln!(
        "prbench: {} examples × {} samples from `{}`; loading policy `{spec}`",
        examples.len(),
        args.n,
        data.source
    );
    let policy = load_generator(&spec, &args.stage.remote, "policy", "--policy")?;
    let manifest = SamplesManifest {
        code_version: crate::code_version().into(),
        created: now(),
        // Paths absolute, so later stages find the data from any working folder.
        dataset: prbench_data::spec::absolute(&args.data.data),
        subsets: args.data.subset.clone(),
        dataset_kind: data.kind.clone(),
        dataset_hash: data.hash.clone(),
        policy: policy.identity(),
        template_hash: policy_hash(),
        retriever,
        settings: settings.clone(),
        per_subset: args.limit,
        distinct_questions: args.distinct_questions,
        example_ids: examples.iter().map(|e| e.id.clone()).collect(),
    };
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating `{}`", args.out.display()))?;
    write_json(&folder.manifest(), &manifest)?;
    let counters = CacheCounters::default();
    let cached;
    let generator: &dyn Generator = match &cache {
        Some(c) => {
            cached = CachedGenerator::new(policy.as_ref(), c, &counters);
            &cached
        }
        None => policy.as_ref(),
    };
    let refs: Vec<&Example> = examples.iter().collect();
    bar.start("bon sample", (refs.len() * args.n) as u64);
    let samples = sample_all(&refs, &inputs, &settings, generator, args.batch_size, &|done| {
        bar.set_done(done as u64)
    })?;
    bar.finish();
    write_jsonl(&folder.samples(), &samples)?;
    let failed = samples.iter().filter(|s| s.error.is_some()).count();
    let cut = samples.iter().filter(|s| s.hit_max_new_tokens).count();
    let dropped = samples.iter().filter(|s| s.sample_index == 0 && s.posts_dropped > 0).count();
    if let Some(c) = &cache {
        let r = counters.report(c);
        eprintln!("prbench: cache `{}`: {} hits, {} calls", r.path, r.hits, r.calls);
    }
    eprintln!(
        "prbench: {} samples in {}; {failed} failed, {cut} used all {} new tokens, {dropped} examples lost posts to fit the policy's context",
        samples.len(),
        folder.samples().display(),
        args.max_new_tokens
    );
    if failed > 0 {
        eprintln!("prbench: warning: examples with a failed sample are left out of best-of-k tables (rerun the same command into a new folder: finished samples come from the cache)");
    }
    Ok(())
}

/// The folder's manifest, its samples and its dataset (from `--data` or the manifest, checked
/// by hash), and the examples by id.
fn open_folder(
    dir: &Path,
    data: Option<&str>,
) -> Result<(BonFolder, SamplesManifest, Vec<BonSample>, Dataset)> {
    let folder = BonFolder::new(dir);
    let manifest = folder.read_manifest()?;
    let samples: Vec<BonSample> = read_jsonl(&folder.samples())?;
    let source = data.unwrap_or(&manifest.dataset);
    let dataset = load(source, &manifest.subsets).with_context(|| match data {
        Some(_) => format!("loading dataset `{source}` (the samples were drawn from `{}`)", manifest.dataset),
        None => format!(
            "loading dataset `{source}`, which `{}` names as the one the samples were drawn from; if it has moved, pass --data with its path now (it is checked by hash)",
            folder.manifest().display()
        ),
    })?;
    if dataset.hash != manifest.dataset_hash {
        bail!(
            "the files of dataset `{source}` (subsets: {}) differ from those the samples were drawn from (sha256 {}…, now {}…): they changed since sampling, or --data names other files; pass --data with the original files",
            if manifest.subsets.is_empty() { "all".to_string() } else { manifest.subsets.join(",") },
            &manifest.dataset_hash[..12],
            &dataset.hash[..12]
        );
    }
    Ok((folder, manifest, samples, dataset))
}

fn by_id(data: &Dataset) -> HashMap<&str, &Example> {
    data.examples.iter().map(|e| (e.id.as_str(), e)).collect()
}

fn judge(args: JudgeArgs) -> Result<()> {
    let (folder, _, samples, data) = open_folder(&args.samples, args.data.as_deref())?;
    let examples = by_id(&data);
    // Every example must have a rubric before a model loads or a sample is judged.
    check_examples(&examples, &samples)?;
    let spec = args.judge.clone().unwrap_or_else(default_gguf);
    let name = args.name.clone().unwrap_or_else(|| name_for(&spec));
    check_name(&name)?;
    let out = folder.judgements(&name);
    if out.exists() {
        bail!(
            "`{}` exists; pass --name for another judge, or delete it to judge again",
            out.display()
        );
    }
    let bar = Bar::new(args.stage.quiet);
    let cache = args.stage.cache.open(&folder.dir)?;
    let counters = CacheCounters::default();
    eprintln!("prbench: rubric judge `{spec}` ({:?}) on {} samples", args.mode, samples.len());
    let parsed = ModelSpec::parse(&spec)?;
    let mut gguf = None;
    let mut generator = None;
    match (args.mode, &parsed) {
        (VerdictMode::Logprob, ModelSpec::Gguf(path)) => {
            gguf = Some(
                GgufEngine::load(path, GgufOptions::default())
                    .with_context(|| format!("loading judge `{spec}`"))?,
            );
        }
        (VerdictMode::Logprob, _) => {
            bail!("--mode logprob needs a local `gguf:` judge; for `{spec}` pass --mode generate")
        }
        (VerdictMode::Generate, _) => {
            generator = Some(load_generator(&spec, &args.stage.remote, "judge", "--judge")?)
        }
    }
    let (cached, cached_scorer);
    let engine = match (&gguf, generator.as_deref()) {
        (Some(e), _) => {
            let scorer: &dyn NextTokenScorer = match &cache {
                Some(c) => {
                    cached_scorer = CachedNextTokenScorer::new(e, c, &counters);
                    &cached_scorer
                }
                None => e,
            };
            RubricEngine::Logprob(scorer)
        }
        (None, Some(g)) => {
            let g: &dyn Generator = match &cache {
                Some(c) => {
                    cached = CachedGenerator::new(g, c, &counters);
                    &cached
                }
                None => g,
            };
            RubricEngine::Generate { generator: g, max_new_tokens: args.max_new_tokens }
        }
        (None, None) => unreachable!("one engine is loaded above"),
    };
    let identity = match engine {
        RubricEngine::Logprob(s) => s.identity(),
        RubricEngine::Generate { generator, .. } => generator.identity(),
    };
    let stage = StageManifest {
        code_version: crate::code_version().into(),
        created: now(),
        model: identity,
        mode: engine.mode().into(),
        condition: "oracle".into(),
        template_hash: rubric_hash(),
        samples_sha256: folder.samples_sha256()?,
    };
    bar.start("bon judge", samples.len() as u64);
    let judgements = judge_all(&examples, &samples, engine, &|_| bar.advance(1))?;
    bar.finish();
    if let Some(c) = &cache {
        let r = counters.report(c);
        eprintln!("prbench: cache `{}`: {} hits, {} calls", r.path, r.hits, r.calls);
    }
    std::fs::create_dir_all(out.parent().expect("judgements/ folder"))
        .with_context(|| format!("creating `{}`", out.display()))?;
    write_json(&out.with_extension("manifest.json"), &stage)?;
    write_jsonl(&out, &judgements)?;
    let unparsed = judgements.iter().filter(|j| j.unparsed.is_some()).count();
    let failed = judgements.iter().filter(|j| j.error.is_some()).count();
    eprintln!(
        "prbench: {} judgements in {}; {unparsed} unparsed, {failed} failed",
        judgements.len(),
        out.display()
    );
    if let Some(u) = judgements.iter().find(|j| j.unparsed.is_some()) {
        eprintln!(
            "prbench: first unparsed (example `{}`, sample {}): {}",
            u.example_id,
            u.sample_index,
            u.unparsed.as_deref().unwrap_or("")
        );
    }
    write_tables(&folder, Some(&name), None, false, true)
}

fn score(args: ScoreArgs) -> Result<()> {
    let (folder, manifest, samples, data) = open_folder(&args.samples, args.data.as_deref())?;
    let condition = Condition::parse(&args.condition)?;
    if condition == Condition::Planner {
        bail!("`bon score` scores under --condition none, profile:k or oracle; `planner` is not supported for Best-of-N");
    }
    let name = args.name.clone().unwrap_or_else(|| name_for(&args.model));
    check_name(&name)?;
    let out = folder.scores(&name);
    if out.exists() {
        bail!(
            "`{}` exists; pass --name for another file, or delete it to score again",
            out.display()
        );
    }
    let bar = Bar::new(args.stage.quiet);
    let cache = args.stage.cache.open(&folder.dir)?;
    let parsed = ModelSpec::parse(&args.model)?;
    // The examples the samples answer (PAL's users; the profiles `profile:k` ranks).
    let examples: Vec<Example> =
        data.examples.iter().filter(|e| manifest.example_ids.contains(&e.id)).cloned().collect();
    let (rm, mode, template_hash): (Box<dyn RewardModel>, &str, String) = match (&parsed, args.mode)
    {
        (ModelSpec::Gguf(path), VerdictMode::Logprob) => {
            let e = GgufEngine::load(path, GgufOptions::default())
                .with_context(|| format!("loading `{}`", args.model))?;
            (
                Box::new(RatingRewardModel::new(RatingEngine::Logprob(Box::new(e)))),
                "logprob",
                rating_hash(),
            )
        }
        (ModelSpec::Gguf(_) | ModelSpec::OpenAi { .. }, VerdictMode::Generate) => {
            let g = load_generator(&args.model, &args.stage.remote, "judge", "--model")?;
            (
                Box::new(RatingRewardModel::new(RatingEngine::Generate {
                    generator: g,
                    max_new_tokens: args.max_new_tokens,
                })),
                "generate",
                rating_hash(),
            )
        }
        (ModelSpec::OpenAi { .. }, VerdictMode::Logprob) => {
            bail!("a remote judge rates answers with --mode generate (one `Rating: <1-9>` reply per answer)")
        }
        _ => {
            let settings = LoadSettings::for_reward_model(
                args.seed,
                vec![condition],
                &args.stage.remote,
                &args.scalar,
            );
            let mut loaded = load_model(&parsed, &args.model, &settings)?;
            if let Loaded::Pal(pal) = &mut loaded {
                // PAL scores each sample for its example's user: the users it was not trained on
                // are adapted from their history pairs first, as in `eval`.
                let spec = args.data.as_deref().unwrap_or(&manifest.dataset);
                let note = prepare_pal(pal, spec, &manifest.subsets, &examples)?;
                eprintln!("prbench: {note}");
                let items: Vec<(String, String)> = samples
                    .iter()
                    .map(|s| {
                        (
                            sample_item_id(&s.example_id, s.sample_index),
                            pal.user_of(&s.example_id).to_string(),
                        )
                    })
                    .collect();
                pal.add_example_users(items);
            }
            (loaded.into_reward_model()?, "reward model", Prompts::new().hash())
        }
    };
    let mut inputs = ConditionInputs::default();
    if condition.profile_k().is_some() {
        let (ranked, by) = rank_profiles(
            args.retriever.as_deref(),
            &data,
            &examples,
            cache.as_ref(),
            &SpecEngines { remote: &args.stage.remote },
            &bar,
        )?;
        inputs.ranked = ranked;
        inputs.retriever = Some(by);
    }
    let counters = CacheCounters::default();
    let cached;
    let scorer: &dyn RewardModel = match &cache {
        Some(c) if rm.cacheable() => {
            cached = CachedRewardModel::new(rm.as_ref(), c, &counters);
            &cached
        }
        _ => rm.as_ref(),
    };
    // The lexical profile-overlap baseline reads the whole profile whatever the condition.
    let context = if parsed == ModelSpec::Baseline("profile-overlap".into()) {
        BonContext::FullProfile
    } else {
        BonContext::Condition(condition)
    };
    let stage = StageManifest {
        code_version: crate::code_version().into(),
        created: now(),
        model: rm.identity(),
        mode: match context {
            BonContext::FullProfile => {
                format!("{mode} (reads the whole profile whatever the condition, as in eval)")
            }
            BonContext::Condition(_) => mode.into(),
        },
        condition: condition.to_string(),
        template_hash,
        samples_sha256: folder.samples_sha256()?,
    };
    eprintln!(
        "prbench: scoring {} samples with `{}` under `{condition}`",
        samples.len(),
        args.model
    );
    bar.start("bon score", samples.len() as u64);
    let scores =
        score_all(&by_id(&data), &samples, scorer, context, &inputs, args.batch_size, &|done| {
            bar.set_done(done as u64)
        })?;
    bar.finish();
    std::fs::create_dir_all(out.parent().expect("scores/ folder"))
        .with_context(|| format!("creating `{}`", out.display()))?;
    write_json(&out.with_extension("manifest.json"), &stage)?;
    write_jsonl(&out, &scores)?;
    if let Some(c) = cache.as_ref().filter(|_| rm.cacheable()) {
        let r = counters.report(c);
        eprintln!("prbench: cache `{}`: {} hits, {} calls", r.path, r.hits, r.calls);
    }
    let failed = scores.iter().filter(|s| s.error.is_some()).count();
    let truncated = scores.iter().filter(|s| s.tokens.truncated_tokens > 0).count();
    eprintln!(
        "prbench: {} scores in {}; {failed} without a score, {truncated} inputs truncated",
        scores.len(),
        out.display()
    );
    if let Some(f) = scores.iter().find(|s| s.error.is_some()) {
        eprintln!(
            "prbench: first failure (example `{}`, sample {}): {}",
            f.example_id,
            f.sample_index,
            f.error.as_deref().unwrap_or("")
        );
    }
    write_tables(&folder, None, None, false, true)
}

fn report(args: ReportArgs) -> Result<()> {
    let folder = BonFolder::new(&args.samples);
    folder.read_manifest()?;
    let ks = if args.k.is_empty() { None } else { Some(args.k.as_slice()) };
    write_tables(&folder, args.judge.as_deref(), ks, args.json, false)
}

/// Writes `bon-<judge>.{md,json}` for the chosen judge (or the only one) with every scores
/// file present, and prints the table. Does nothing (with a note) when no judgement exists yet.
///
/// `auto` (after `judge` or `score`) turns "which judge?" into a note instead of an error. With
/// `ks` the table is printed only: the files keep the default k values other commands read.
fn write_tables(
    folder: &BonFolder,
    judge: Option<&str>,
    ks: Option<&[usize]>,
    json: bool,
    auto: bool,
) -> Result<()> {
    let judges = folder.stage_names("judgements");
    let judge = match (judge, judges.as_slice()) {
        (Some(j), _) if judges.iter().any(|x| x == j) => j.to_string(),
        (Some(j), _) => bail!(
            "no judgements named `{j}` in `{}` (present: {})",
            folder.dir.display(),
            list(&judges)
        ),
        (None, []) => {
            eprintln!("prbench: no rubric judgements yet: run `prbench bon judge --samples {}` for the table", folder.dir.display());
            return Ok(());
        }
        (None, [one]) => one.clone(),
        (None, _) if auto => {
            eprintln!("prbench: several judgements in `{}` ({}): see the table with `prbench bon report --samples {} --judge NAME`", folder.dir.display(), list(&judges), folder.dir.display());
            return Ok(());
        }
        (None, _) => bail!(
            "several judgements in `{}` ({}); pass --judge NAME",
            folder.dir.display(),
            list(&judges)
        ),
    };
    let manifest = folder.read_manifest()?;
    let samples: Vec<BonSample> = read_jsonl(&folder.samples())?;
    let jpath = folder.judgements(&judge);
    folder.checked_stage(&jpath)?;
    let judgements: Vec<RubricJudgement> = read_jsonl(&jpath)?;
    let mut models = Vec::new();
    for name in folder.stage_names("scores") {
        let path = folder.scores(&name);
        let stage = folder.checked_stage(&path)?;
        let scores: Vec<BonScore> = read_jsonl(&path)?;
        models.push(ModelScores {
            name,
            spec: stage.model.spec,
            condition: stage.condition,
            scores,
        });
    }
    let table = build(&samples, manifest.settings.n, &judge, &judgements, &models, ks)?;
    let md = render(&table);
    if json {
        println!("{}", serde_json::to_string(&table)?);
    } else {
        println!("{md}");
    }
    if ks.is_some() {
        eprintln!("prbench: table for the k values asked printed only; bon-{judge}.md/json keep the default k values");
        return Ok(());
    }
    let (md_path, json_path) = folder.table(&judge);
    std::fs::write(&md_path, &md).with_context(|| format!("writing `{}`", md_path.display()))?;
    write_json(&json_path, &table)?;
    eprintln!("prbench: best-of-k table in {} and {}", md_path.display(), json_path.display());
    Ok(())
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "nothing".into()
    } else {
        names.join(", ")
    }
}
