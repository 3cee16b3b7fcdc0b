//! `bon judge`: every sample scored against its example's hidden rubric (0/1/2 per aspect).

use std::path::PathBuf;

use prbench_engines::flags::VerdictMode;
use prbench_engines::generators::load_generator;
use prbench_eval::cache::CacheCounters;
use prbench_eval::cached_scorer::CachedNextTokenScorer;
use prbench_eval::planner::CachedGenerator;
use prbench_llm::{GgufEngine, GgufOptions};
use prbench_models::spec::ModelSpec;
use prbench_models::{Generator, NextTokenScorer};

use super::{
    cache_note, default_gguf, engine, io, now, refuse_existing, write_tables, BonReporter, Opened,
};
use crate::bon::error::BonError;
use crate::bon::files::{write_json, write_jsonl};
use crate::bon::folder::{check_name, name_for, StageManifest};
use crate::bon::options::JudgeOptions;
use crate::bon::prompts::rubric_hash;
use crate::bon::rubric::{check_examples, judge_all, RubricEngine, RubricJudgement};

/// A `bon judge` run whose folder, dataset, rubrics and output name are checked
/// ([`Judging::plan`]).
pub struct Judging {
    opts: JudgeOptions,
    code_version: String,
    opened: Opened,
    spec: String,
    name: String,
    out: PathBuf,
}

impl Judging {
    /// Opens the BoN folder with its dataset (checked by hash), checks that every sampled
    /// example has a rubric and that the judgements file is a new, valid name. Loads no model
    /// and writes nothing.
    ///
    /// # Errors
    /// The folder's files unreadable or disagreeing ([`BonError::File`], [`BonError::Mismatch`]);
    /// the dataset not loading or changed ([`BonError::Dataset`], [`BonError::Refused`]); an
    /// example without a rubric; a bad or taken `--name`.
    pub fn plan(opts: JudgeOptions, code_version: &str) -> Result<Self, BonError> {
        let opened = Opened::open(&opts.samples, opts.data.as_deref())?;
        // Every example must have a rubric before a model loads or a sample is judged.
        check_examples(&opened.by_id(), &opened.samples)?;
        let spec = opts.judge.clone().unwrap_or_else(default_gguf);
        if opts.stage.gen.gen_batch.is_some() && opts.mode == VerdictMode::Logprob {
            return Err(BonError::Refused("--gen-batch applies to --mode generate, where the judge generates its scores; a logprob judge generates nothing".into()));
        }
        let name = opts.name.clone().unwrap_or_else(|| name_for(&spec));
        check_name(&name)?;
        let out = opened.folder.judgements(&name);
        refuse_existing(&out, "another judge", "judge")?;
        Ok(Self { opts, code_version: code_version.into(), opened, spec, name, out })
    }

    /// Opens the cache, loads the judge, judges every sample, writes the judgements and their
    /// manifest, notes the unparsed and failed ones, then writes the table when this folder has
    /// a single judge ([`write_tables`]). Returns the judgements.
    ///
    /// # Errors
    /// [`BonError::Refused`]: `logprob` with a judge that is not a local `gguf:`; the cache or
    /// the judge failing to open or load; the files not writable.
    pub fn run(&self, reporter: &dyn BonReporter) -> Result<Vec<RubricJudgement>, BonError> {
        let (opts, spec, folder) = (&self.opts, &self.spec, &self.opened.folder);
        let samples = &self.opened.samples;
        let cache = opts.stage.cache.open(&folder.dir)?;
        let counters = CacheCounters::default();
        reporter.note(&format!(
            "rubric judge `{spec}` ({:?}) on {} samples",
            opts.mode,
            samples.len()
        ));
        let parsed = ModelSpec::parse(spec)?;
        let mut gguf = None;
        let mut generator = None;
        match (opts.mode, &parsed) {
            (VerdictMode::Logprob, ModelSpec::Gguf(path)) => {
                gguf = Some(GgufEngine::load(path, GgufOptions::default()).map_err(|source| {
                    BonError::Load { context: format!("loading judge `{spec}`"), source }
                })?);
            }
            (VerdictMode::Logprob, _) => {
                return Err(BonError::Refused(format!(
                    "--mode logprob needs a local `gguf:` judge; for `{spec}` pass --mode generate"
                )))
            }
            (VerdictMode::Generate, _) => {
                generator = Some(
                    load_generator(spec, &opts.stage.remote, opts.stage.gen, "judge", "--judge")
                        .map_err(engine)?,
                )
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
                RubricEngine::Generate { generator: g, max_new_tokens: opts.max_new_tokens }
            }
            (None, None) => unreachable!("one engine is loaded above"),
        };
        let identity = match engine {
            RubricEngine::Logprob(s) => s.identity(),
            RubricEngine::Generate { generator, .. } => generator.identity(),
        };
        let stage = StageManifest {
            code_version: self.code_version.clone(),
            created: now(),
            model: identity,
            mode: engine.mode().into(),
            condition: "oracle".into(),
            template_hash: rubric_hash(),
            samples_sha256: folder.samples_sha256()?,
        };
        reporter.start("bon judge", samples.len() as u64);
        let judgements =
            judge_all(&self.opened.by_id(), samples, engine, &|_| reporter.advance(1))?;
        reporter.finish();
        cache_note(cache.as_ref(), &counters, reporter);
        let out = &self.out;
        std::fs::create_dir_all(out.parent().expect("judgements/ folder"))
            .map_err(io(format!("creating `{}`", out.display())))?;
        write_json(&out.with_extension("manifest.json"), &stage)?;
        write_jsonl(out, &judgements)?;
        let unparsed = judgements.iter().filter(|j| j.unparsed.is_some()).count();
        let failed = judgements.iter().filter(|j| j.error.is_some()).count();
        reporter.note(&format!(
            "{} judgements in {}; {unparsed} unparsed, {failed} failed",
            judgements.len(),
            out.display()
        ));
        if let Some(u) = judgements.iter().find(|j| j.unparsed.is_some()) {
            reporter.note(&format!(
                "first unparsed (example `{}`, sample {}): {}",
                u.example_id,
                u.sample_index,
                u.unparsed.as_deref().unwrap_or("")
            ));
        }
        write_tables(folder, Some(&self.name), None, false, true, reporter)?;
        Ok(judgements)
    }
}
