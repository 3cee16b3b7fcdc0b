//! The Best-of-N steps over one folder, callable without the CLI: [`Sampling`] (`bon sample`),
//! [`Judging`] (`bon judge`), [`Scoring`] (`bon score`) and [`report`] (`bon report`).
//!
//! Each model-running step is two calls, so a caller can do its own work between them: `plan`
//! checks the options, the folder and the dataset (by hash) before any model loads and writes
//! nothing; `run` opens the cache, loads the model through `prbench_engines`, writes the step's
//! files and, after `judge` and `score`, the best-of-k tables. Progress, notes and the table go
//! to a [`BonReporter`], so the caller decides how they are shown.
//!
//! ```no_run
//! use prbench_downstream::bon::stages::{report, BonReporter};
//! use prbench_downstream::bon::options::ReportOptions;
//! use prbench_eval::evaluation::EvaluationReporter;
//! use prbench_eval::runner::Reporter;
//!
//! struct Print;
//! impl Reporter for Print { fn start(&self, _: &str, _: u64) {} fn advance(&self, _: u64) {} fn finish(&self) {} }
//! impl EvaluationReporter for Print { fn note(&self, m: &str) { eprintln!("{m}") } }
//! impl BonReporter for Print { fn set_done(&self, _: u64) {} fn table(&self, t: &str) { println!("{t}") } }
//!
//! let opts = ReportOptions { samples: "bon1".into(), judge: None, k: vec![], json: false };
//! report(&opts, &Print)?;
//! # Ok::<(), prbench_downstream::bon::BonError>(())
//! ```

mod judge;
mod sample;
mod score;
mod tables;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use prbench_data::load::load;
use prbench_data::{Dataset, Example};
use prbench_eval::cache::{Cache, CacheCounters};
use prbench_eval::evaluation::EvaluationReporter;

use super::error::BonError;
use super::files::read_jsonl;
use super::folder::{BonFolder, SamplesManifest};
use super::options::CacheOptions;
use super::sample::BonSample;

pub use judge::Judging;
pub use sample::Sampling;
pub use score::Scoring;
pub use tables::{report, write_tables};

/// Progress of a Best-of-N step: the evaluation's reporter (stages, and notes such as the
/// retriever used), plus a running total and the table.
pub trait BonReporter: EvaluationReporter {
    /// Moves the current stage to `done` items (for steps that count a running total rather
    /// than increments).
    fn set_done(&self, done: u64);
    /// The best-of-k table, markdown or JSON, for the user (the CLI prints it on stdout).
    fn table(&self, text: &str);
    /// A step's use of the run cache when it ends: lookups answered from it and model calls
    /// made (a study counts the calls; the note with the same figures is shown either way).
    fn cache_use(&self, _hits: u64, _calls: u64) {}
}

impl CacheOptions {
    /// The cache of the BoN folder `folder`: the one asked for, else `cache.sqlite` in the
    /// folder's parent, every command's rule ([`prbench_eval::cache::default_beside`]); `None`
    /// with `no_cache`.
    pub fn path(&self, folder: &Path) -> Option<PathBuf> {
        (!self.no_cache).then(|| {
            self.cache.clone().unwrap_or_else(|| prbench_eval::cache::default_beside(folder))
        })
    }

    /// Opens [`CacheOptions::path`].
    ///
    /// # Errors
    /// [`BonError::Eval`] when the cache cannot be opened.
    pub fn open(&self, folder: &Path) -> Result<Option<Arc<Cache>>, BonError> {
        match self.path(folder) {
            Some(path) => Ok(Some(Arc::new(Cache::open(&path)?))),
            None => Ok(None),
        }
    }
}

/// Start time of a step, UTC (RFC 3339), for its manifest.
fn now() -> String {
    chrono::Utc::now().to_rfc3339()
}

/// The policy and rubric judge when none is named: the pinned SmolLM2 GGUF.
fn default_gguf() -> String {
    format!("gguf:{}", prbench_models::assets::default_model_path().display())
}

/// The hits and calls of `cache`, when there is one.
fn cache_note(cache: Option<&Arc<Cache>>, counters: &CacheCounters, reporter: &dyn BonReporter) {
    if let Some(c) = cache {
        let r = counters.report(c);
        reporter.cache_use(r.hits, r.calls);
        reporter.note(&format!("cache `{}`: {} hits, {} calls", r.path, r.hits, r.calls));
    }
}

/// An error of the engine factory (`prbench_engines`), kept with its causes.
fn engine(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> BonError {
    BonError::Engine(e.into())
}

/// `context` for an I/O error.
fn io(context: String) -> impl FnOnce(std::io::Error) -> BonError {
    move |source| BonError::Io { context, source }
}

/// A BoN folder with what every later step reads: its manifest, its samples and its dataset.
struct Opened {
    folder: BonFolder,
    manifest: SamplesManifest,
    samples: Vec<BonSample>,
    data: Dataset,
}

impl Opened {
    /// The folder `dir` with its dataset from `data` or the manifest, checked by hash.
    fn open(dir: &Path, data: Option<&str>) -> Result<Self, BonError> {
        let folder = BonFolder::new(dir);
        let manifest = folder.read_manifest()?;
        let samples: Vec<BonSample> = read_jsonl(&folder.samples())?;
        let source = data.unwrap_or(&manifest.dataset);
        let dataset = load(source, &manifest.subsets).map_err(|e| BonError::Dataset {
            context: match data {
                Some(_) => format!("loading dataset `{source}` (the samples were drawn from `{}`)", manifest.dataset),
                None => format!(
                    "loading dataset `{source}`, which `{}` names as the one the samples were drawn from; if it has moved, pass --data with its path now (it is checked by hash)",
                    folder.manifest().display()
                ),
            },
            source: Box::new(e),
        })?;
        if dataset.hash != manifest.dataset_hash {
            return Err(BonError::Refused(format!(
                "the files of dataset `{source}` (subsets: {}) differ from those the samples were drawn from (sha256 {}…, now {}…): they changed since sampling, or --data names other files; pass --data with the original files",
                if manifest.subsets.is_empty() { "all".to_string() } else { manifest.subsets.join(",") },
                &manifest.dataset_hash[..12],
                &dataset.hash[..12]
            )));
        }
        Ok(Self { folder, manifest, samples, data: dataset })
    }

    /// The dataset's examples by id.
    fn by_id(&self) -> HashMap<&str, &Example> {
        self.data.examples.iter().map(|e| (e.id.as_str(), e)).collect()
    }
}

/// Refuses an existing output file of a step: pass --name for `other`, or delete it to `verb`
/// again.
fn refuse_existing(out: &Path, other: &str, verb: &str) -> Result<(), BonError> {
    if out.exists() {
        return Err(BonError::Refused(format!(
            "`{}` exists; pass --name for {other}, or delete it to {verb} again",
            out.display()
        )));
    }
    Ok(())
}
