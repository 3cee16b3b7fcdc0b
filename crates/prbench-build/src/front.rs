//! The work of `prbench build` behind its flags ([`crate::flags`]), for any front-end: the
//! caller turns the flags into [`BuildOptions`], calls [`build`], and prints the notes of
//! [`summary`], the report, and [`written`] / [`exported`]. Notes for the user are one line
//! each without the `prbench: ` prefix; progress goes to the caller's reporter.
//!
//! Every model spec and the folder are checked before anything is created or loaded, so a
//! mistyped flag leaves no folder, cache or lock behind and costs no model load; the models
//! load before the folder's cache is made, so a generator that does not answer leaves no
//! folder behind.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use prbench_data::{load_questions, Example};
use prbench_engines::flags::{GenBatchArgs, RemoteArgs};
use prbench_engines::generators::{check_generator_spec, load_generator, SpecEngines};
use prbench_engines::retrieve::check_retriever_spec;
use prbench_eval::cache::Cache;
use prbench_eval::evaluation::{rank_profiles, EvaluationReporter};
use prbench_eval::EvalError;
use prbench_models::assets::{default_judge_path, default_model_path};
use prbench_models::Generator;
use prbench_records::plural::count;

use crate::stages::export::{check_folder, CARD_FILE, MANIFEST_FILE, REPORT_FILE};
use crate::{BuildEngines, BuildError, BuildInput, BuildOutcome, BuildRun, BuildSettings};

/// What `prbench build` can fail on, each with the message the command prints (the cause
/// below it).
#[derive(Debug, thiserror::Error)]
pub enum FrontError {
    /// Two flags contradict each other, or a flag does not apply.
    #[error("{0}")]
    Flags(&'static str),
    /// The dataset did not load.
    #[error("loading dataset `{spec}`")]
    Data {
        /// The `--data` spec.
        spec: String,
        /// Why (boxed: the data errors are large).
        #[source]
        source: Box<prbench_data::DataError>,
    },
    /// No `--generator`, and the default one is not on disk.
    #[error("the default generator, Qwen2.5-Coder-1.5B-Instruct (1.1 GB), is not at `{}`: run scripts/setup.sh once to fetch it, or name one with --generator (the 135M model of the tests: --generator gguf:{})", path.display(), small.display())]
    DefaultGenerator {
        /// Where the default generator should be.
        path: PathBuf,
        /// The tests' small model, suggested instead.
        small: PathBuf,
    },
    /// A model spec, the remote flags or a model load failed (the engine factory's errors).
    #[error(transparent)]
    Engine(#[from] anyhow::Error),
    /// The cache or the ranking of profiles failed.
    #[error(transparent)]
    Eval(#[from] Box<EvalError>),
    /// The folder, or the build itself, failed.
    #[error(transparent)]
    Build(#[from] Box<BuildError>),
    /// The filter kept no pair.
    #[error("no pair survived the filter, so nothing was exported; {}/{REPORT_FILE} lists why each pair was dropped", out.display())]
    NothingExported {
        /// The output folder.
        out: PathBuf,
    },
}

impl From<EvalError> for FrontError {
    fn from(e: EvalError) -> Self {
        FrontError::Eval(Box::new(e))
    }
}

impl From<BuildError> for FrontError {
    fn from(e: BuildError) -> Self {
        FrontError::Build(Box::new(e))
    }
}

/// `prbench build`'s settings (the flags of [`crate::flags::BuildArgs`]).
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// The input rows' spec (`prbench_data::load_questions`).
    pub data: String,
    /// Subsets to load; all when empty.
    pub subset: Vec<String>,
    /// The generator's spec; `None`: the default GGUF of scripts/setup.sh.
    pub generator: Option<String>,
    /// The audit judge's spec; `None`: the generator.
    pub judge: Option<String>,
    /// Skip the audit ([`crate::settings::SKIP_AUDIT_RULE`]).
    pub skip_audit: bool,
    /// The output folder.
    pub out: PathBuf,
    /// The run cache; `None`: [`default_cache`] of `out`.
    pub cache: Option<PathBuf>,
    /// Neither read nor write the cache.
    pub no_cache: bool,
    /// At most this many examples per subset; `None`: all.
    pub limit: Option<usize>,
    /// Run seed.
    pub seed: u64,
    /// Profile posts shown to the generator.
    pub k_posts: usize,
    /// How to rank profile posts; `None`: the dataset's own order, else BM25.
    pub retriever: Option<String>,
    /// Word limit told to the generator and checked by the filter.
    pub max_words: usize,
    /// New-token budget of each answer.
    pub max_new_tokens: usize,
    /// New-token budget of each audit reply.
    pub audit_max_new_tokens: usize,
    /// The filter's least rubric-fit gap.
    pub min_fit_gap: f64,
    /// The filter's largest quality gap.
    pub max_quality_gap: f64,
    /// The filter's largest length ratio.
    pub max_length_ratio: f64,
    /// Requests per backend call.
    pub batch_size: usize,
    /// Remote engines' settings (temperature and top-p of the answers: 0.7 and 0.95 when
    /// `None`).
    pub remote: RemoteArgs,
    /// Sequences a `gguf:` generator or audit judge decodes together.
    pub gen: GenBatchArgs,
    /// prbench version and commit (recorded).
    pub code_version: String,
}

/// The default generator's spec, or an error that says how to get it or what to pass.
fn default_generator() -> Result<String, FrontError> {
    let path = default_judge_path();
    if !path.is_file() {
        return Err(FrontError::DefaultGenerator { path, small: default_model_path() });
    }
    Ok(format!("gguf:{}", path.display()))
}

/// Builds the benchmark of `opts` ([`crate::run`]), after checking every flag, spec and the
/// folder. Notes: the data's warnings and the models loaded; progress on `reporter`.
///
/// # Errors
/// Contradicting flags ([`FrontError::Flags`]), data that does not load, a bad spec or folder,
/// a model that does not load, the cache, the build's own errors.
pub fn build<R: EvaluationReporter>(
    opts: &BuildOptions,
    reporter: &R,
    note: &mut dyn FnMut(&str),
) -> Result<BuildOutcome, FrontError> {
    if opts.remote.request_extra.is_some() {
        return Err(FrontError::Flags("--request-extra applies to `openai:` judges in `eval`; build's generator and audit judge do not take it (it would not be part of their cache keys)"));
    }
    if opts.skip_audit && opts.judge.is_some() {
        return Err(FrontError::Flags(
            "--judge names the audit judge, and --skip-audit skips the audit: pass one or the other",
        ));
    }
    if opts.no_cache && opts.cache.is_some() {
        return Err(FrontError::Flags(
            "--no-cache and --cache contradict each other: pass one or the other",
        ));
    }
    let data = load_questions(&opts.data, &opts.subset)
        .map_err(|e| FrontError::Data { spec: opts.data.clone(), source: Box::new(e) })?;
    for w in prbench_data::dataset_warnings(&data) {
        note(&w);
    }
    let selected: Vec<&Example> = crate::select(&data.examples, opts.limit);
    let mut subsets: Vec<&str> = selected.iter().map(|e| e.subset.as_str()).collect();
    subsets.dedup();
    let gen_spec = match &opts.generator {
        Some(s) => s.clone(),
        None => default_generator()?,
    };
    check_generator_spec(&gen_spec, "generator", "--generator")?;
    prbench_engines::load::remote_options(&opts.remote)?;
    let judge_spec = opts.judge.clone().unwrap_or_else(|| gen_spec.clone());
    if !opts.skip_audit && judge_spec != gen_spec {
        check_generator_spec(&judge_spec, "audit judge", "--judge")?;
    }
    if let Some(r) = &opts.retriever {
        check_retriever_spec(r)?;
    }
    check_folder(&opts.out, &subsets)?;
    note(&format!(
        "building {} from `{}`; loading generator `{gen_spec}`",
        count(selected.len(), "pair", "pairs"),
        data.source
    ));
    let generator = load_generator(&gen_spec, &opts.remote, opts.gen, "generator", "--generator")?;
    let separate_judge: Option<Box<dyn Generator>> = if opts.skip_audit || judge_spec == gen_spec {
        None
    } else {
        note(&format!("loading audit judge `{judge_spec}`"));
        Some(load_generator(&judge_spec, &opts.remote, opts.gen, "audit judge", "--judge")?)
    };
    let cache = if opts.no_cache {
        None
    } else {
        let path = match &opts.cache {
            Some(p) => p.clone(),
            None => default_cache(&opts.out, note),
        };
        Some(Arc::new(Cache::open(&path)?))
    };
    let owned: Vec<Example> = selected.iter().map(|e| (*e).clone()).collect();
    let (ranked, retriever) = rank_profiles(
        opts.retriever.as_deref(),
        &data,
        &owned,
        cache.as_ref(),
        &SpecEngines { remote: &opts.remote, gen: opts.gen },
        reporter,
    )?;
    let judge: Option<&dyn Generator> = if opts.skip_audit {
        None
    } else {
        Some(separate_judge.as_deref().unwrap_or(generator.as_ref()))
    };
    let settings = BuildSettings {
        k_posts: opts.k_posts,
        max_words: opts.max_words,
        max_new_tokens: opts.max_new_tokens,
        temperature: opts.remote.temperature.unwrap_or(0.7),
        top_p: opts.remote.top_p.unwrap_or(0.95),
        audit_max_new_tokens: opts.audit_max_new_tokens,
        seed: opts.seed,
        min_fit_gap: opts.min_fit_gap,
        max_quality_gap: opts.max_quality_gap,
        max_length_ratio: opts.max_length_ratio,
        skip_audit: opts.skip_audit,
        batch: opts.batch_size,
    };
    let run = BuildRun {
        input: BuildInput {
            data: &data,
            examples: selected,
            limit: opts.limit,
            ranked: &ranked,
            retriever,
        },
        engines: BuildEngines { generator: generator.as_ref(), judge },
        cache: cache.as_deref(),
        settings,
        out: &opts.out,
        code_version: &opts.code_version,
    };
    Ok(crate::run(&run, reporter)?)
}

/// The notes after a build, before its report: per subset what was built and kept (and
/// dropped, by reason), a warning when calls failed, and the cache's hits.
pub fn summary(outcome: &BuildOutcome) -> Vec<String> {
    let m = &outcome.manifest;
    let mut lines = Vec::new();
    for c in &m.counts {
        let dropped: Vec<String> =
            c.dropped_by_reason.iter().map(|(k, v)| format!("{k} {v}")).collect();
        lines.push(format!(
            "{}: {} built, {} kept{}",
            c.subset,
            c.examples,
            c.kept,
            if dropped.is_empty() {
                String::new()
            } else {
                format!(" (dropped: {})", dropped.join(", "))
            }
        ));
    }
    let all = m.counts.iter().find(|c| c.subset == "all").cloned().unwrap_or_default();
    if all.failed > 0 || all.audit_failed_calls > 0 {
        lines.push(format!(
            "warning: {} and {} failed, and their pairs were dropped; rerun the same command to retry only those calls (every success is cached)",
            count(all.failed, "generation", "generations"),
            count(all.audit_failed_calls, "audit call", "audit calls"),
        ));
    }
    if let Some(c) = &m.cache {
        lines.push(format!("cache `{}`: {} hits, {} calls", c.path, c.hits, c.calls));
    }
    lines
}

/// The note naming the files a build wrote in `out` (report, card, manifest).
pub fn written(out: &Path) -> String {
    let out = out.display();
    format!("wrote {out}/{REPORT_FILE}, {out}/{CARD_FILE} and {out}/{MANIFEST_FILE}")
}

/// The closing note: how many pairs were exported to `out` and how to evaluate them.
///
/// # Errors
/// [`FrontError::NothingExported`] when the filter kept no pair.
pub fn exported(out: &Path, outcome: &BuildOutcome) -> Result<String, FrontError> {
    let m = &outcome.manifest;
    if m.files.is_empty() {
        return Err(FrontError::NothingExported { out: out.to_path_buf() });
    }
    let all = m.counts.iter().find(|c| c.subset == "all").cloned().unwrap_or_default();
    Ok(format!(
        "exported {} to {}; evaluate them with `prbench eval --data {}`",
        count(all.kept, "pair", "pairs"),
        out.display(),
        out.display()
    ))
}

/// Where a build whose `--cache` is not given keeps its run cache: `cache.sqlite` beside the
/// build folder `out`, the rule of every command ([`prbench_eval::cache::default_beside`]).
/// A folder built before that rule kept its cache inside, at `build/cache.sqlite`; while that
/// file is there it is used (with a note), so resuming such a build repeats no call.
pub fn default_cache(out: &Path, note: &mut dyn FnMut(&str)) -> PathBuf {
    let inside = out.join("build").join(prbench_eval::cache::FILE_NAME);
    if inside.is_file() {
        note(&format!(
            "using this folder's own cache `{}`, made before builds kept theirs beside the folder; pass --cache to choose another",
            inside.display()
        ));
        return inside;
    }
    prbench_eval::cache::default_beside(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_cache_is_beside_the_build_folder_unless_the_folder_holds_an_older_one() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("b1");
        let mut notes = Vec::new();
        let got = default_cache(&out, &mut |n| notes.push(n.to_string()));
        assert_eq!(got, tmp.path().join("cache.sqlite"));
        assert!(notes.is_empty(), "{notes:?}");
        std::fs::create_dir_all(out.join("build")).unwrap();
        std::fs::write(out.join("build/cache.sqlite"), b"").unwrap();
        let got = default_cache(&out, &mut |n| notes.push(n.to_string()));
        assert_eq!(got, out.join("build/cache.sqlite"));
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("made before builds kept theirs beside the folder"), "{notes:?}");
    }
}
