//! Runs a study's steps in order, each through the verb's library call and the run caches, and
//! keeps one record per finished step in `OUT/steps/`, so that a rerun of a finished study
//! makes no model call, a killed study resumes where it stopped (the verbs resume their own
//! half-done work from the caches), and a step added to the plan is the only one that runs.
//!
//! A step's record holds a fingerprint of its command line: a plan that changes a finished
//! step's settings is refused, naming the step and the folder to delete, rather than mixing two
//! settings in one study.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use prbench_downstream::bon::files::read_jsonl;
use prbench_downstream::bon::folder::BonFolder;
use prbench_downstream::bon::rubric::RubricJudgement;
use prbench_downstream::bon::stages::{BonReporter, Judging, Sampling, Scoring};
use prbench_engines::flags::VerdictMode;
use prbench_eval::evaluation::EvaluationReporter;
use prbench_eval::run::RunResult;
use prbench_eval::runner::Reporter;
use prbench_records::Summary;
use prbench_train::bt::pipeline::TrainReporter;

use crate::graph::{Action, Step, Study};

/// What a finished step left, in `OUT/steps/<id>.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepRecord {
    /// The step id.
    pub id: String,
    /// sha256 of its command line: a changed plan is detected by it.
    pub fingerprint: String,
    /// Its command line, for the reader.
    pub command: String,
    /// Model calls it made (cache misses: scores, verdicts, samples, judgements; 0 for a
    /// training step, which has no cache).
    pub calls: u64,
    /// Seconds it took.
    pub seconds: f64,
    /// What it produced, by name: `run:<condition>` → run folder (eval), `mean` → the mean
    /// rubric score (an RL leg's judge step), `unjudged` → answers without a score.
    pub outputs: BTreeMap<String, String>,
}

/// The state of a step, for the progress lines and `--status`.
#[derive(Debug, Clone, PartialEq)]
pub enum StepState {
    /// Not run yet.
    Pending,
    /// Finished in an earlier invocation with the same settings (nothing to do).
    Cached,
    /// Running now.
    Running,
    /// Finished now: model calls made, seconds.
    Done {
        /// Model calls made.
        calls: u64,
        /// Seconds.
        seconds: f64,
    },
    /// Finished before with other settings: the plan changed under it.
    Changed,
    /// Failed, with the reason.
    Failed(String),
}

/// Progress of a study: the steps' own progress (bars, notes), and each step's state.
pub trait StudyReporter: BonReporter {
    /// Step `id` (running `command`) moved to `state`.
    fn step(&self, id: &str, command: &str, state: &StepState);
}

/// What a study run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StudyCounts {
    /// Steps run in this invocation.
    pub steps_run: usize,
    /// Steps found finished.
    pub steps_cached: usize,
    /// Model calls made in this invocation (cache misses).
    pub model_calls: u64,
}

/// The record file of step `id`.
pub fn record_path(out: &Path, id: &str) -> PathBuf {
    out.join("steps").join(format!("{}.json", id.replace('/', "__")))
}

/// sha256 of the step's command line and of the fingerprints of the steps it needs, so that a
/// step whose inputs were made again with other settings (new samples, a retrained model) is
/// "changed" too, even when its own command line is the same.
fn fingerprint(study: &Study, step: &Step) -> String {
    let mut h = Sha256::new();
    // The study folder itself is left out, so a study folder moved or copied elsewhere is
    // still the same study.
    let out = study.out.display().to_string();
    h.update(step.command.replace(&out, "<OUT>").as_bytes());
    for need in &step.after {
        if let Some(s) = study.step(need) {
            h.update(b"\0");
            h.update(fingerprint(study, s).as_bytes());
        }
    }
    hex::encode(h.finalize())
}

/// Reads step `id`'s record, if it has one.
///
/// # Errors
/// A record that cannot be read or parsed (naming the file).
pub fn read_record(out: &Path, id: &str) -> Result<Option<StepRecord>> {
    let path = record_path(out, id);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some(serde_json::from_str(&text).with_context(|| {
            format!("step record `{}` is damaged; delete it to run the step again", path.display())
        })?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading `{}`", path.display())),
    }
}

/// Each step's state without running anything.
///
/// # Errors
/// A damaged record.
pub fn status(study: &Study) -> Result<Vec<(String, String, StepState)>> {
    if study.out.exists() && !study.out.is_dir() {
        bail!(
            "the study folder `{}` is a file; give --out (or the plan's `out`) a folder",
            study.out.display()
        );
    }
    study
        .steps
        .iter()
        .map(|s| {
            let state = match read_record(&study.out, &s.id)? {
                Some(r) if r.fingerprint == fingerprint(study, s) => StepState::Cached,
                Some(_) => StepState::Changed,
                None => StepState::Pending,
            };
            Ok((s.id.clone(), s.command.clone(), state))
        })
        .collect()
}

/// Counts the model calls the steps report while forwarding everything to the caller's
/// reporter.
struct Counting<'a> {
    inner: &'a dyn StudyReporter,
    calls: AtomicU64,
    /// Draw progress bars (off for steps running beside others: their notes carry the id).
    bars: bool,
    id: &'a str,
}

impl Reporter for Counting<'_> {
    fn start(&self, stage: &str, total: u64) {
        if self.bars {
            self.inner.start(stage, total)
        }
    }
    fn advance(&self, n: u64) {
        if self.bars {
            self.inner.advance(n)
        }
    }
    fn finish(&self) {
        if self.bars {
            self.inner.finish()
        }
    }
}

impl EvaluationReporter for Counting<'_> {
    fn note(&self, message: &str) {
        if self.bars {
            self.inner.note(message)
        } else {
            self.inner.note(&format!("[{}] {message}", self.id))
        }
    }
    fn run_finished(&self, result: &RunResult) {
        if let Some(c) = &result.summary.cache {
            self.calls.fetch_add(c.calls, Ordering::Relaxed);
        }
        self.inner.run_finished(result)
    }
    fn run_reused(&self, dir: &Path, summary: &Summary) {
        self.inner.run_reused(dir, summary)
    }
}

impl BonReporter for Counting<'_> {
    fn set_done(&self, done: u64) {
        if self.bars {
            self.inner.set_done(done)
        }
    }
    /// The study writes its own tables: a step's best-of-k table is not shown.
    fn table(&self, _text: &str) {}
    fn cache_use(&self, hits: u64, calls: u64) {
        self.calls.fetch_add(calls, Ordering::Relaxed);
        self.inner.cache_use(hits, calls)
    }
}

impl TrainReporter for Counting<'_> {
    fn progress(&self, line: &str) {
        self.inner.note(line)
    }
    fn warning(&self, line: &str) {
        self.inner.note(&format!("warning: {line}"))
    }
}

/// Runs every step that has no record, in order, and writes its record when it finishes.
///
/// # Errors
/// A step whose record says it ran with other settings (the plan changed: the message names
/// the folder to delete); the first step that fails (its error, with the step id). Steps
/// finished before the failure keep their records, so the next invocation resumes after them.
pub fn run(study: &Study, version: &str, reporter: &dyn StudyReporter) -> Result<StudyCounts> {
    let mut counts = StudyCounts::default();
    // Refuse a changed plan before anything runs, naming every changed step.
    let changed: Vec<String> = status(study)?
        .into_iter()
        .filter(|(_, _, state)| *state == StepState::Changed)
        .map(|(id, _, _)| id)
        .collect();
    if !changed.is_empty() {
        let mut text = String::new();
        for id in &changed {
            let step = study.step(id).expect("status lists the study's steps");
            let old = read_record(&study.out, id)?.map(|r| r.command).unwrap_or_default();
            let delete = format!(
                "delete `{}` and {}",
                record_path(&study.out, id).display(),
                outputs_of(step)
            );
            if old == step.command {
                let needs: Vec<&str> =
                    step.after.iter().filter(|a| changed.contains(a)).map(String::as_str).collect();
                text += &format!(
                    "\nstep `{id}`: same settings, but it read the outputs of `{}`, which changed; {delete}",
                    needs.join("`, `")
                );
            } else {
                text += &format!(
                    "\nstep `{id}` finished before with other settings:\n  was: {old}\n  now: {}\n  {delete}",
                    step.command
                );
            }
        }
        bail!("the plan changed under {} finished step(s); their outputs were made with the old settings. To run them again, for each:{text}\nor give the study another --out", changed.len());
    }
    let mut finished: BTreeSet<&str> = BTreeSet::new();
    let mut pending: Vec<&Step> = Vec::new();
    for step in &study.steps {
        match read_record(&study.out, &step.id)? {
            Some(r) if r.fingerprint == fingerprint(study, step) => {
                counts.steps_cached += 1;
                finished.insert(&step.id);
                reporter.step(&step.id, &step.command, &StepState::Cached);
            }
            _ => pending.push(step),
        }
    }
    let limit = study.file.plan.remote_steps.max(1);
    if !pending.is_empty() {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        reporter.note(&format!(
            "study: {} to run; steps with a local engine run one at a time, each on {threads} threads (every core), with up to {limit} steps that only call servers beside",
            pending.len()
        ));
    }
    while !pending.is_empty() {
        // The steps whose needs are finished: at most one that runs a local engine (two
        // llama.cpp or candle processes on the same cores slow each other badly), and up to
        // `remote-steps` that only call servers, all at once.
        let ready: Vec<&Step> = pending
            .iter()
            .copied()
            .filter(|s| s.after.iter().all(|a| finished.contains(a.as_str())))
            .collect();
        let mut batch: Vec<&Step> = ready.iter().copied().filter(|s| s.local).take(1).collect();
        batch.extend(ready.iter().copied().filter(|s| !s.local).take(limit));
        assert!(!batch.is_empty(), "steps come needs first, so some step is always ready");
        let with_bars = batch.len() == 1;
        let results: Vec<(&Step, Result<(u64, f64)>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = batch
                .iter()
                .map(|&step| {
                    // Progress bars only for a step running alone (or the local one of a batch).
                    let bars = with_bars || step.local;
                    (step, scope.spawn(move || run_recorded(study, step, version, reporter, bars)))
                })
                .collect();
            handles
                .into_iter()
                .map(|(s, h)| (s, h.join().expect("a study step panicked")))
                .collect()
        });
        let mut first_error = None;
        for (step, result) in results {
            match result {
                Ok((calls, _)) => {
                    counts.steps_run += 1;
                    counts.model_calls += calls;
                    finished.insert(&step.id);
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        pending.retain(|s| !finished.contains(s.id.as_str()));
    }
    Ok(counts)
}

/// Runs one step and writes its record; returns its model calls and seconds.
fn run_recorded(
    study: &Study,
    step: &Step,
    version: &str,
    reporter: &dyn StudyReporter,
    bars: bool,
) -> Result<(u64, f64)> {
    reporter.step(&step.id, &step.command, &StepState::Running);
    let counting = Counting { inner: reporter, calls: AtomicU64::new(0), bars, id: &step.id };
    let started = Instant::now();
    let outputs = match run_step(step, version, &counting) {
        Ok(o) => o,
        Err(e) => {
            reporter.step(&step.id, &step.command, &StepState::Failed(format!("{e:#}")));
            return Err(e.context(format!("study step `{}`", step.id)));
        }
    };
    let calls = counting.calls.load(Ordering::Relaxed);
    let seconds = started.elapsed().as_secs_f64();
    let record = StepRecord {
        id: step.id.clone(),
        fingerprint: fingerprint(study, step),
        command: step.command.clone(),
        calls,
        seconds,
        outputs,
    };
    let path = record_path(&study.out, &step.id);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating `{}`", dir.display()))?;
    }
    prbench_files::write_json_pretty(&path, &record)
        .with_context(|| format!("writing the step record `{}`", path.display()))?;
    reporter.step(&step.id, &step.command, &StepState::Done { calls, seconds });
    Ok((calls, seconds))
}

/// The policy and rubric judge when a plan names none: the pinned SmolLM2 GGUF (as the
/// `bon` verbs default).
fn default_gguf() -> String {
    format!("gguf:{}", prbench_models::assets::default_model_path().display())
}

/// Whether the judgements or scores file `path` that a Best-of-N stage refuses to overwrite can
/// stand for this step: it exists (the study was killed after the verb wrote it and before the
/// record, or an RL policy folder was judged by another study) and its manifest names the same
/// spec, condition and (for judges) mode, computed from the folder's present samples. A file
/// made otherwise is an error saying what to delete; no file is `false`.
fn reuse_stage(
    folder: &BonFolder,
    path: &Path,
    spec: &str,
    mode: Option<&str>,
    condition: &str,
) -> Result<bool> {
    if !path.exists() {
        return Ok(false);
    }
    let m = folder.checked_stage(path)?;
    if m.model.spec == spec && m.condition == condition && mode.is_none_or(|x| x == m.mode) {
        return Ok(true);
    }
    bail!(
        "`{}` exists, made by `{}` ({}, condition `{}`), not by this step's `{spec}`{}; delete it (and its .manifest.json) to make it again",
        path.display(),
        m.model.spec,
        m.mode,
        m.condition,
        mode.map(|x| format!(" ({x})")).unwrap_or_default()
    )
}

/// What a step writes, for the "delete it" advice.
fn outputs_of(step: &Step) -> String {
    match &step.action {
        Action::TrainBt(a) => format!("`{}`", a.input.out.display()),
        Action::TrainPal(a) => format!("`{}`", a.input.out.display()),
        Action::Eval(a) => {
            format!("the run folders `{}/{}*`", a.out.display(), a.run_id.as_deref().unwrap_or(""))
        }
        Action::BonSample(o) => format!("`{}`", o.out.display()),
        Action::BonJudge(o) => format!("the judgements in `{}`", o.samples.display()),
        Action::BonScore(o) => format!("the scores in `{}`", o.samples.display()),
        Action::ImportSamples { to, .. } => format!("`{}`", to.display()),
    }
}

/// Copies a `bon sample` folder's samples and manifest from `from` into `to`. A `to` that
/// already holds these very samples is left as it is (a study killed after the copy).
///
/// # Errors
/// `from` is not a samples folder; `to` holds other samples (delete it to import again); an
/// I/O error.
fn import_samples(from: &std::path::Path, to: &std::path::Path) -> Result<()> {
    let src = BonFolder::new(from);
    let dst = BonFolder::new(to);
    let samples = std::fs::read(src.samples())
        .with_context(|| format!("reading `{}`", src.samples().display()))?;
    let manifest = std::fs::read(src.manifest())
        .with_context(|| format!("reading `{}`", src.manifest().display()))?;
    if dst.samples().exists() {
        let held = std::fs::read(dst.samples())
            .with_context(|| format!("reading `{}`", dst.samples().display()))?;
        if held == samples {
            return Ok(());
        }
        bail!(
            "`{}` holds other samples than `{}` (from an earlier plan?); delete `{}` to import them",
            dst.samples().display(),
            src.samples().display(),
            to.display()
        );
    }
    std::fs::create_dir_all(to).with_context(|| format!("creating `{}`", to.display()))?;
    // The manifest first: a folder with samples and no manifest would not read as a folder.
    prbench_files::write_atomic(&dst.manifest(), &manifest)
        .with_context(|| format!("writing `{}`", dst.manifest().display()))?;
    prbench_files::write_atomic(&dst.samples(), &samples)
        .with_context(|| format!("writing `{}`", dst.samples().display()))?;
    Ok(())
}

fn run_step(
    step: &Step,
    version: &str,
    reporter: &Counting<'_>,
) -> Result<BTreeMap<String, String>> {
    let mut outputs = BTreeMap::new();
    match &step.action {
        Action::TrainBt(args) => {
            // A model whose training finished but whose record was not written (killed in
            // between) is not trained again.
            if !args.input.out.join(prbench_train::bt::config::CONFIG_FILE).exists() {
                let line = prbench_engines::train::train_bt(args, version, reporter)?;
                reporter.note(&line);
            }
        }
        Action::TrainPal(args) => {
            if !prbench_train::pal::pipeline::holds_model(&args.input.out) {
                let line = prbench_engines::train::train_pal(args, version, reporter)?;
                reporter.note(&line);
            }
        }
        Action::Eval(args) => {
            let done = prbench_engines::run_eval::run_eval(args, version, reporter, &mut |line| {
                reporter.note(line)
            })?;
            let result = done.result.as_ref().expect("a study never asks for --preflight");
            done.check_error_rate(args.max_error_rate)?;
            // Within `max-error-rate` (eval's default 1%), failed items count as not correct, as
            // in `prbench eval`, and the tables' `errors` column shows them; the step is finished.
            if result.errors > 0 {
                reporter.note(&format!(
                    "warning: the backend failed on {} items, counted as errors (not correct) in the tables; {}",
                    result.errors, done.retry
                ));
                outputs.insert("errors".into(), result.errors.to_string());
            }
            for (condition, id) in &result.runs {
                outputs.insert(format!("run:{condition}"), args.out.join(id).display().to_string());
            }
            if let Some(m) = &result.matrix {
                outputs.insert("matrix".into(), m.json_path.display().to_string());
            }
        }
        Action::ImportSamples { from, to } => import_samples(from, to)?,
        Action::BonSample(opts) => {
            // Samples written but no record (killed in between): the folder is finished.
            if !BonFolder::new(&opts.out).samples().exists() {
                let sampling = Sampling::plan((**opts).clone(), version, reporter)?;
                let samples = sampling.run(reporter)?;
                let failed = samples.iter().filter(|s| s.error.is_some()).count();
                if failed > 0 {
                    bail!("{failed} samples failed (see samples.jsonl in `{}`); delete the folder and run the study again to retry them", opts.out.display());
                }
            }
        }
        Action::BonJudge(opts) => {
            let folder = BonFolder::new(&opts.samples);
            let name = opts.name.as_deref().expect("the study names its judgements");
            let path = folder.judgements(name);
            let spec = opts.judge.clone().unwrap_or_else(default_gguf);
            let mode = match opts.mode {
                VerdictMode::Logprob => "logprob",
                VerdictMode::Generate => "generate",
            };
            let judgements: Vec<RubricJudgement> =
                if reuse_stage(&folder, &path, &spec, Some(mode), "oracle")? {
                    reporter.note(&format!(
                        "reusing `{}`: the same judge, mode and samples",
                        path.display()
                    ));
                    read_jsonl(&path)?
                } else {
                    Judging::plan((**opts).clone(), version)?.run(reporter)?
                };
            let scores: Vec<f64> = judgements.iter().filter_map(|j| j.mean()).collect();
            let unjudged = judgements.len() - scores.len();
            if scores.is_empty() {
                bail!(
                    "no answer in `{}` got a rubric score ({unjudged} unparsed or failed)",
                    opts.samples.display()
                );
            }
            let mean = scores.iter().sum::<f64>() / scores.len() as f64;
            outputs.insert("mean".into(), format!("{mean:?}"));
            outputs.insert("judged".into(), scores.len().to_string());
            outputs.insert("unjudged".into(), unjudged.to_string());
        }
        Action::BonScore(opts) => {
            let folder = BonFolder::new(&opts.samples);
            let name = opts.name.as_deref().expect("the study names its scores");
            let path = folder.scores(name);
            if reuse_stage(&folder, &path, &opts.model, None, &opts.condition)? {
                reporter.note(&format!(
                    "reusing `{}`: the same model, condition and samples",
                    path.display()
                ));
            } else {
                Scoring::plan((**opts).clone(), version)?.run(reporter)?;
            }
        }
    }
    Ok(outputs)
}
