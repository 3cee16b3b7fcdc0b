//! Benchmark construction: from rows of questions with a user profile and rubric aspects (LaMP-QA's
//! shape, or any PRB-schema data), write a Personalized-RewardBench-style benchmark:
//!
//! 1. [`stages::answers`]: a generator answers each question twice, told to meet the user's
//!    aspects (chosen) and, from the same inputs, to avoid them keeping general quality
//!    (rejected), the two requests side by side;
//! 2. [`stages::audit`]: a judge rates both answers 1–5 on factuality, relevance,
//!    helpfulness and rubric fit, and picks the better fit, in both orders;
//! 3. [`stages::filter`]: keep the pairs that differ in rubric fit and not in general quality;
//! 4. [`stages::export`]: the Hugging Face PRB layout, a dataset card, `build/build.json`
//!    and the build report ([`report`]).
//!
//! Every model call goes through the run cache (key: model identity, the stage's template
//! hash, decoding, seed and rendered prompt), so a killed build resumes with no call
//! repeated. Entry point: [`run`]. `prbench build`'s flags are [`flags`], and the work behind
//! them (checks, model loading, the closing notes) is [`front`].
#![deny(missing_docs)]

pub mod error;
pub mod flags;
pub mod front;
pub mod manifest;
pub mod prompts;
pub mod report;
pub mod seeds;
pub mod settings;
pub mod stages;

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use prbench_data::{Dataset, Example, ProfilePost};
use prbench_eval::cache::{Cache, CacheCounters};
use prbench_eval::planner::CachedGenerator;
use prbench_eval::runner::Reporter;
use prbench_models::Generator;

pub use error::BuildError;
pub use manifest::BuildManifest;
pub use settings::BuildSettings;

use manifest::{InputInfo, PromptHashes, StageTimes};
use prompts::{answer_hash, audit_hash, BuildPrompts};
use stages::answers::AnswerRecord;
use stages::audit::AuditRecord;
use stages::filter::Decision;
use stages::{Side, StageContext};

/// What a build reads.
pub struct BuildInput<'a> {
    /// The loaded dataset (`prbench_data::load_questions`).
    pub data: &'a Dataset,
    /// The examples to build, in dataset order ([`select`]).
    pub examples: Vec<&'a Example>,
    /// `--limit` as given (recorded).
    pub limit: Option<usize>,
    /// Example id → profile posts best first, for every example built.
    pub ranked: &'a HashMap<String, Vec<ProfilePost>>,
    /// How the profiles were ranked (recorded).
    pub retriever: String,
}

/// The models of a build.
pub struct BuildEngines<'a> {
    /// Writes both answers.
    pub generator: &'a dyn Generator,
    /// Audits the pairs; `None` only with `skip_audit`.
    pub judge: Option<&'a dyn Generator>,
}

/// One build.
pub struct BuildRun<'a> {
    /// What to build from.
    pub input: BuildInput<'a>,
    /// The models.
    pub engines: BuildEngines<'a>,
    /// The run cache; `None` runs every call.
    pub cache: Option<&'a Cache>,
    /// Settings.
    pub settings: BuildSettings,
    /// The output folder.
    pub out: &'a Path,
    /// prbench version and commit (recorded).
    pub code_version: &'a str,
}

/// Everything a build produced, as also written to the output folder.
pub struct BuildOutcome {
    /// `build/build.json`.
    pub manifest: BuildManifest,
    /// The filter's decision per pair.
    pub decisions: Vec<Decision>,
    /// The build report (`build-report.md`).
    pub report: String,
}

/// The examples to build: in dataset order, at most `per_subset` from each subset (all when
/// `None`): [`prbench_data::select::first_per_subset`].
pub fn select(examples: &[Example], per_subset: Option<usize>) -> Vec<&Example> {
    prbench_data::select::first_per_subset(examples, per_subset)
}

/// Wraps `inner` in the cache with the stage's template hash, or passes it through.
fn cached<'a>(
    inner: &'a dyn Generator,
    cache: Option<&'a Cache>,
    counters: &'a CacheCounters,
    template_hash: String,
) -> Box<dyn Generator + 'a> {
    match cache {
        Some(c) => {
            Box::new(CachedGenerator::new(inner, c, counters).with_template_hash(template_hash))
        }
        None => Box::new(inner),
    }
}

/// Runs the whole build and writes the output folder (see [`stages::export`] for its files).
///
/// # Errors
/// [`BuildError::Input`] for a build without examples, without a judge when the audit is on,
/// or into a folder that holds something other than a previous build; template, leakage,
/// cache and I/O errors. Failed generations and unreadable audit replies are not errors:
/// they are recorded and their pairs dropped with that reason.
pub fn run(build: &BuildRun<'_>, reporter: &dyn Reporter) -> Result<BuildOutcome, BuildError> {
    let started_at = chrono::Utc::now().to_rfc3339();
    let start = Instant::now();
    let s = &build.settings;
    let examples = &build.input.examples;
    if examples.is_empty() {
        return Err(BuildError::Input(format!(
            "no examples selected from `{}`",
            build.input.data.source
        )));
    }
    let judge = match (build.engines.judge, s.skip_audit) {
        (_, true) => None,
        (Some(j), false) => Some(j),
        (None, false) => {
            return Err(BuildError::Input(
                "the audit needs a judge; pass one, or skip the audit".into(),
            ))
        }
    };
    let mut subsets: Vec<&str> = examples.iter().map(|e| e.subset.as_str()).collect();
    subsets.dedup();
    let _lock = stages::export::prepare_folder(build.out, &subsets)?;
    let prompts = BuildPrompts::new();
    let ctx = StageContext {
        examples,
        ranked: build.input.ranked,
        prompts: &prompts,
        settings: s,
        reporter,
    };
    let counters = CacheCounters::default();
    let mut times = StageTimes::default();

    let t = Instant::now();
    let answer_cache =
        build.cache.map(|c| CachedGenerator::new(build.engines.generator, c, &counters));
    let (chosen, rejected) =
        stages::answers::generate_pairs(&ctx, build.engines.generator, answer_cache.as_ref())?;
    times.answers = t.elapsed().as_secs_f64();
    stages::export::write_jsonl(&build.out.join(stages::export::CHOSEN_FILE), &chosen)?;
    stages::export::write_jsonl(&build.out.join(stages::export::REJECTED_FILE), &rejected)?;

    let pairs: Vec<(&Example, &AnswerRecord, &AnswerRecord)> =
        examples.iter().zip(chosen.iter().zip(&rejected)).map(|(ex, (c, r))| (*ex, c, r)).collect();
    let to_audit: Vec<(&Example, &str, &str)> = pairs
        .iter()
        .filter(|(_, c, r)| stages::filter::pre_audit(c, r, s).is_empty())
        .map(|(ex, c, r)| (*ex, c.text.as_str(), r.text.as_str()))
        .collect();
    let audits: Vec<AuditRecord> = match judge {
        Some(j) => {
            let t = Instant::now();
            let audits = stages::audit::run(
                &ctx,
                cached(j, build.cache, &counters, audit_hash()).as_ref(),
                &to_audit,
            )?;
            times.audit = t.elapsed().as_secs_f64();
            audits
        }
        None => Vec::new(),
    };
    stages::export::write_jsonl(&build.out.join(stages::export::AUDIT_FILE), &audits)?;

    let by_id: HashMap<&str, &AuditRecord> =
        audits.iter().map(|a| (a.example_id.as_str(), a)).collect();
    let decisions: Vec<Decision> = pairs
        .iter()
        .map(|(ex, c, r)| stages::filter::decide(c, r, by_id.get(ex.id.as_str()).copied(), s))
        .collect();
    stages::export::write_jsonl(&build.out.join(stages::export::FILTER_FILE), &decisions)?;

    let kept: Vec<Example> = pairs
        .iter()
        .zip(&decisions)
        .filter(|(_, d)| d.kept)
        .map(|((ex, c, r), _)| Example {
            chosen: c.text.clone(),
            rejected: r.text.clone(),
            ..(*ex).clone()
        })
        .collect();
    let files = stages::export::write_dataset(build.out, &kept)?;
    times.total = start.elapsed().as_secs_f64();
    let data = build.input.data;
    let manifest = BuildManifest {
        code_version: build.code_version.to_string(),
        started: started_at,
        finished: chrono::Utc::now().to_rfc3339(),
        input: InputInfo {
            source: data.source.clone(),
            kind: data.kind.clone(),
            hash: data.hash.clone(),
            rows: data.examples.len(),
            built: examples.len(),
            limit: build.input.limit,
        },
        retriever: build.input.retriever.clone(),
        generator: build.engines.generator.identity(),
        judge: judge.map(|j| j.identity()),
        prompts: PromptHashes {
            chosen: answer_hash(Side::Chosen),
            rejected: answer_hash(Side::Rejected),
            audit: audit_hash(),
        },
        settings: s.clone(),
        counts: report::stage_counts(examples, &chosen, &rejected, &audits, &decisions),
        cache: build.cache.map(|c| counters.report(c)),
        wall_seconds: times,
        files,
    };
    let report = report::render(
        &manifest,
        &report::ReportInput {
            examples,
            chosen: &chosen,
            rejected: &rejected,
            audits: &audits,
            decisions: &decisions,
            kept: &kept,
        },
    );
    stages::export::write_metadata(build.out, &manifest, &report)?;
    Ok(BuildOutcome { manifest, decisions, report })
}
