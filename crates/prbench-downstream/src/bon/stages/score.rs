//! `bon score`: every sample scored by a reward model under test (a generative judge rates each
//! answer on 1–9 through the rating prompt).

use std::path::PathBuf;

use prbench_data::Example;
use prbench_engines::flags::VerdictMode;
use prbench_engines::generators::{load_generator, SpecEngines};
use prbench_engines::load::{load_model, LoadSettings, Loaded};
use prbench_engines::prepare::prepare_pal;
use prbench_eval::cache::{CacheCounters, CachedRewardModel};
use prbench_eval::condition::{Condition, ConditionInputs};
use prbench_eval::evaluation::rank_profiles;
use prbench_eval::prompt::Prompts;
use prbench_llm::{GgufEngine, GgufOptions};
use prbench_models::spec::ModelSpec;
use prbench_models::RewardModel;

use super::{engine, io, now, refuse_existing, write_tables, BonReporter, Opened};
use crate::bon::error::BonError;
use crate::bon::files::{write_json, write_jsonl};
use crate::bon::folder::{check_name, name_for, StageManifest};
use crate::bon::options::ScoreOptions;
use crate::bon::prompts::rating_hash;
use crate::bon::rating::{RatingEngine, RatingRewardModel};
use crate::bon::score::{sample_item_id, score_all, BonContext, BonScore};

/// A `bon score` run whose folder, dataset, condition and output name are checked
/// ([`Scoring::plan`]).
pub struct Scoring {
    opts: ScoreOptions,
    code_version: String,
    opened: Opened,
    condition: Condition,
    out: PathBuf,
}

impl Scoring {
    /// Opens the BoN folder with its dataset (checked by hash), parses the condition and checks
    /// that the scores file is a new, valid name. Loads no model and writes nothing.
    ///
    /// # Errors
    /// The folder's files unreadable or disagreeing; the dataset not loading or changed; an
    /// unknown condition or `planner` ([`BonError::Refused`]); a bad or taken `--name`.
    pub fn plan(opts: ScoreOptions, code_version: &str) -> Result<Self, BonError> {
        let opened = Opened::open(&opts.samples, opts.data.as_deref())?;
        let condition = Condition::parse(&opts.condition)?;
        if condition == Condition::Planner {
            return Err(BonError::Refused("`bon score` scores under --condition none, profile:k or oracle; `planner` is not supported for Best-of-N".into()));
        }
        let generating_gguf = opts.mode == VerdictMode::Generate
            && matches!(ModelSpec::parse(&opts.model)?, ModelSpec::Gguf(_));
        if opts.stage.gen.gen_batch.is_some() && !generating_gguf {
            return Err(BonError::Refused(format!("--gen-batch applies to a `gguf:` rater with --mode generate, which generates its ratings; `{}` generates nothing here", opts.model)));
        }
        let name = opts.name.clone().unwrap_or_else(|| name_for(&opts.model));
        check_name(&name)?;
        let out = opened.folder.scores(&name);
        refuse_existing(&out, "another file", "score")?;
        Ok(Self { opts, code_version: code_version.into(), opened, condition, out })
    }

    /// Opens the cache, loads the model (a `gguf:` or `openai:` judge as a 1–9 rater, any other
    /// spec through `prbench_engines`, PAL adapted to the unseen users first), ranks profiles
    /// under `profile:k`, scores every sample, writes the scores and their manifest, notes the
    /// failures, then writes the table when this folder has a single judge ([`write_tables`]).
    /// Returns the scores.
    ///
    /// # Errors
    /// [`BonError::Refused`]: `logprob` with a remote judge; the cache, the model or the
    /// retriever failing to open or load; the files not writable.
    pub fn run(&self, reporter: &dyn BonReporter) -> Result<Vec<BonScore>, BonError> {
        let (opts, condition, folder) = (&self.opts, self.condition, &self.opened.folder);
        let (manifest, samples, data) =
            (&self.opened.manifest, &self.opened.samples, &self.opened.data);
        let cache = opts.stage.cache.open(&folder.dir)?;
        let parsed = ModelSpec::parse(&opts.model)?;
        // The examples the samples answer (PAL's users; the profiles `profile:k` ranks).
        let examples: Vec<Example> = data
            .examples
            .iter()
            .filter(|e| manifest.example_ids.contains(&e.id))
            .cloned()
            .collect();
        let (rm, mode, template_hash): (Box<dyn RewardModel>, &str, String) =
            match (&parsed, opts.mode) {
                (ModelSpec::Gguf(path), VerdictMode::Logprob) => {
                    let e = GgufEngine::load(path, GgufOptions::default()).map_err(|source| {
                        BonError::Load { context: format!("loading `{}`", opts.model), source }
                    })?;
                    (
                        Box::new(RatingRewardModel::new(RatingEngine::Logprob(Box::new(e)))),
                        "logprob",
                        rating_hash(),
                    )
                }
                (ModelSpec::Gguf(_) | ModelSpec::OpenAi { .. }, VerdictMode::Generate) => {
                    let g = load_generator(&opts.model, &opts.stage.remote, opts.stage.gen, "judge", "--model")
                        .map_err(engine)?;
                    (
                        Box::new(RatingRewardModel::new(RatingEngine::Generate {
                            generator: g,
                            max_new_tokens: opts.max_new_tokens,
                        })),
                        "generate",
                        rating_hash(),
                    )
                }
                (ModelSpec::OpenAi { .. }, VerdictMode::Logprob) => {
                    return Err(BonError::Refused("a remote judge rates answers with --mode generate (one `Rating: <1-9>` reply per answer)".into()))
                }
                _ => {
                    let settings = LoadSettings::for_reward_model(
                        opts.seed,
                        vec![condition],
                        &opts.stage.remote,
                        &opts.scalar,
                    );
                    let mut loaded =
                        load_model(&parsed, &opts.model, &settings).map_err(engine)?;
                    if let Loaded::Pal(pal) = &mut loaded {
                        // PAL scores each sample for its example's user: the users it was not
                        // trained on are adapted from their history pairs first, as in `eval`.
                        let spec = opts.data.as_deref().unwrap_or(&manifest.dataset);
                        let note = prepare_pal(pal, spec, &manifest.subsets, &examples)
                            .map_err(engine)?;
                        reporter.note(&note);
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
                    (loaded.into_reward_model().map_err(engine)?, "reward model", Prompts::new().hash())
                }
            };
        let mut inputs = ConditionInputs::default();
        if condition.profile_k().is_some() {
            let (ranked, by) = rank_profiles(
                opts.retriever.as_deref(),
                data,
                &examples,
                cache.as_ref(),
                &SpecEngines { remote: &opts.stage.remote, gen: opts.stage.gen },
                reporter,
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
            code_version: self.code_version.clone(),
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
        reporter.note(&format!(
            "scoring {} samples with `{}` under `{condition}`",
            samples.len(),
            opts.model
        ));
        reporter.start("bon score", samples.len() as u64);
        let scores = score_all(
            &self.opened.by_id(),
            samples,
            scorer,
            context,
            &inputs,
            opts.batch_size,
            &|done| reporter.set_done(done as u64),
        )?;
        reporter.finish();
        let out = &self.out;
        std::fs::create_dir_all(out.parent().expect("scores/ folder"))
            .map_err(io(format!("creating `{}`", out.display())))?;
        write_json(&out.with_extension("manifest.json"), &stage)?;
        write_jsonl(out, &scores)?;
        super::cache_note(cache.as_ref().filter(|_| rm.cacheable()), &counters, reporter);
        let failed = scores.iter().filter(|s| s.error.is_some()).count();
        let truncated = scores.iter().filter(|s| s.tokens.truncated_tokens > 0).count();
        reporter.note(&format!(
            "{} scores in {}; {failed} without a score, {truncated} inputs truncated",
            scores.len(),
            out.display()
        ));
        if let Some(f) = scores.iter().find(|s| s.error.is_some()) {
            reporter.note(&format!(
                "first failure (example `{}`, sample {}): {}",
                f.example_id,
                f.sample_index,
                f.error.as_deref().unwrap_or("")
            ));
        }
        write_tables(folder, None, None, false, true, reporter)?;
        Ok(scores)
    }
}
