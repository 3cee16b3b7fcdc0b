//! One evaluation run end to end: the model under test and the control baselines on the same
//! items, then `runs/<run-id>/{manifest.json, outcomes.jsonl, summary.json, summary.md}`
//! (DESIGN.md, files a run writes).

use std::fs;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Instant;

use chrono::{DateTime, Utc};
use prbench_data::Dataset;
use prbench_models::baselines::{Baseline, SlotA};
use prbench_models::ModelIdentity;
use prbench_report::{BaselineRow, Summary};
use prbench_stats::bootstrap::BootstrapConfig;
use prbench_stats::outcome::ItemResult;
use serde::{Deserialize, Serialize};

use crate::error::EvalError;
use crate::outcome::{write_jsonl, Outcome};
use crate::prompt::Prompts;
use crate::runner::{evaluate, Backend, ContextSource, EvalOptions, Reporter, Silent};
use crate::summary::{accuracy_rows, both_orders, position};

/// What `manifest.json` records: enough to reproduce the run and to tell two runs apart.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    /// Run id (the folder name).
    pub run_id: String,
    /// prbench version and git commit.
    pub code_version: String,
    /// Model under test.
    pub model: ModelIdentity,
    /// Decoding parameters (verdict mode etc.).
    pub decoding: serde_json::Value,
    /// sha256 of prbench's prompt templates.
    pub template_hash: String,
    /// Dataset source spec.
    pub dataset: String,
    /// Dataset kind.
    pub dataset_kind: String,
    /// sha256 of the dataset files.
    pub dataset_hash: String,
    /// Subsets evaluated (long names).
    pub subsets: Vec<String>,
    /// Examples evaluated.
    pub n_examples: usize,
    /// Condition.
    pub condition: String,
    /// True for the oracle condition (an upper bound).
    pub oracle: bool,
    /// Run seed.
    pub seed: u64,
    /// Both-orders mode.
    pub both_orders: bool,
    /// Examples per backend call.
    pub batch_size: usize,
    /// Bootstrap resamples.
    pub bootstrap_resamples: usize,
    /// Start time (UTC).
    pub started: DateTime<Utc>,
    /// End time (UTC).
    pub finished: DateTime<Utc>,
}

/// Everything a run needs besides the data and the backend.
pub struct RunConfig {
    /// Run id (folder name under `out_dir`).
    pub run_id: String,
    /// Parent folder of run folders (`runs/` by default).
    pub out_dir: PathBuf,
    /// Evaluation options.
    pub options: EvalOptions,
    /// Bootstrap settings for every CI.
    pub bootstrap: BootstrapConfig,
    /// prbench version and git commit.
    pub code_version: String,
}

/// A finished run.
pub struct RunResult {
    /// Folder holding the run files.
    pub dir: PathBuf,
    /// The summary written to `summary.json`.
    pub summary: Summary,
    /// The outcomes written to `outcomes.jsonl`.
    pub outcomes: Vec<Outcome>,
}

/// Runs `backend` and the control baselines on `data`, writes the run files, returns the summary.
///
/// # Errors
/// Evaluation errors (leakage, backend, template) and I/O errors naming the path.
pub fn run(data: &Dataset, backend: Backend<'_>, cfg: &RunConfig, reporter: &dyn Reporter) -> Result<RunResult, EvalError> {
    let started = Utc::now();
    let prompts = Prompts::new();
    let (identity, decoding) = match backend {
        Backend::Judge(j) => (j.identity(), j.decoding()),
        Backend::RewardModel(r) => (r.identity(), serde_json::Value::Null),
    };
    let clock = Instant::now();
    let outcomes = evaluate(&data.examples, backend, &cfg.options, &prompts, reporter)?;
    let wall_seconds = clock.elapsed().as_secs_f64();
    let baselines = run_baselines(data, &cfg.options, &prompts, &cfg.bootstrap)?;

    let results: Vec<ItemResult> = outcomes.iter().map(|o| o.result).collect();
    let summary = Summary {
        run_id: cfg.run_id.clone(),
        model: identity.spec.clone(),
        engine: identity.engine.clone(),
        decoding: decoding.clone(),
        condition: cfg.options.condition.to_string(),
        oracle: cfg.options.condition.is_oracle(),
        dataset: data.source.clone(),
        dataset_kind: data.kind.clone(),
        dataset_hash: data.hash.clone(),
        seed: cfg.options.seed,
        bootstrap_resamples: cfg.bootstrap.resamples,
        rows: accuracy_rows(&outcomes, &results, &cfg.bootstrap),
        position_bias: position(&outcomes),
        both_orders: both_orders(&outcomes, &cfg.bootstrap),
        baselines,
        input_tokens: outcomes.iter().map(|o| o.input_tokens).sum(),
        truncated_tokens: outcomes.iter().map(|o| o.truncated_tokens).sum(),
        wall_seconds,
    };
    let mut subsets: Vec<String> = Vec::new();
    for ex in &data.examples {
        if !subsets.contains(&ex.subset) {
            subsets.push(ex.subset.clone());
        }
    }
    let manifest = Manifest {
        run_id: cfg.run_id.clone(),
        code_version: cfg.code_version.clone(),
        model: identity,
        decoding,
        template_hash: prompts.hash(),
        dataset: data.source.clone(),
        dataset_kind: data.kind.clone(),
        dataset_hash: data.hash.clone(),
        subsets,
        n_examples: data.examples.len(),
        condition: cfg.options.condition.to_string(),
        oracle: cfg.options.condition.is_oracle(),
        seed: cfg.options.seed,
        both_orders: cfg.options.both_orders,
        batch_size: cfg.options.batch_size,
        bootstrap_resamples: cfg.bootstrap.resamples,
        started,
        finished: Utc::now(),
    };
    let dir = cfg.out_dir.join(&cfg.run_id);
    write_run(&dir, &manifest, &outcomes, &summary)?;
    Ok(RunResult { dir, summary, outcomes })
}

/// Runs the five control baselines (PROTOCOL.md §5) on the same items and condition.
/// `profile-overlap` reads the whole profile whatever the condition (a lexical control).
///
/// # Errors
/// As [`evaluate`].
pub fn run_baselines(
    data: &Dataset,
    options: &EvalOptions,
    prompts: &Prompts,
    boot: &BootstrapConfig,
) -> Result<Vec<BaselineRow>, EvalError> {
    let sees = options.condition.to_string();
    let mut rows = Vec::new();
    let mut add = |name: String, sees: String, outcomes: Vec<Outcome>| {
        let results: Vec<ItemResult> = outcomes.iter().map(|o| o.result).collect();
        rows.push(BaselineRow { name, sees, rows: accuracy_rows(&outcomes, &results, boot) });
    };
    let single = EvalOptions { both_orders: false, batch_size: 256, ..options.clone() };
    for b in [Baseline::Longer, Baseline::Shorter, Baseline::Random { seed: options.seed }] {
        let out = evaluate(&data.examples, Backend::RewardModel(&b), &single, prompts, &Silent)?;
        add(format!("baseline:{}", b.name()), "answer only".into(), out);
    }
    let out = evaluate(&data.examples, Backend::Judge(&SlotA), &single, prompts, &Silent)?;
    add("baseline:slot-a".into(), format!("slot order ({sees})"), out);
    let overlap = EvalOptions { context: ContextSource::FullProfile, ..single };
    let out = evaluate(&data.examples, Backend::RewardModel(&Baseline::ProfileOverlap), &overlap, prompts, &Silent)?;
    add("baseline:profile-overlap".into(), "full profile".into(), out);
    Ok(rows)
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> EvalError {
    let path = path.to_path_buf();
    move |source| EvalError::Io { path, source }
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), EvalError> {
    let text = serde_json::to_string_pretty(value).expect("run files serialize") + "\n";
    fs::write(path, text).map_err(io_err(path))
}

fn write_run(dir: &Path, manifest: &Manifest, outcomes: &[Outcome], summary: &Summary) -> Result<(), EvalError> {
    fs::create_dir_all(dir).map_err(io_err(dir))?;
    write_json(&dir.join("manifest.json"), manifest)?;
    write_json(&dir.join("summary.json"), summary)?;
    let path = dir.join("outcomes.jsonl");
    let file = fs::File::create(&path).map_err(io_err(&path))?;
    let mut w = BufWriter::new(file);
    write_jsonl(&mut w, outcomes).map_err(io_err(&path))?;
    let path = dir.join("summary.md");
    fs::write(&path, prbench_report::markdown::render(summary)).map_err(io_err(&path))
}
