//! Real inputs for the prefix-sharing benches: the reward-model conversations and judge prompts
//! `prbench eval` renders, from three input sets.
//!
//! - `data/sample` (the repository's sample, real text, short profiles);
//! - P-Soups at `../shared/data/alignx-psoups` (skipped, with the reason logged, when absent);
//! - PRB-length synthetic data: [`prbench_data::synthetic`] at 0.5% of full scale, whose rows
//!   have the full benchmark's mean profile size (~35 KB), so `profile:10` contexts run to
//!   thousands of tokens, as Personalized-RewardBench's do.
//!
//! Inputs are rendered through eval's own public API: profiles ranked by
//! [`prbench_eval::evaluation::prepare_inputs`] (BM25, eval's default retriever), each answer's
//! request built by [`prbench_eval::runner::rm_request`] (rendering and the leakage guard), and
//! under `profile:k` the number of posts shown fitted to the scoring model's window by
//! [`prbench_eval::runner::largest_fitting`], as eval fits them.

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use prbench_data::synthetic::SyntheticSpec;
use prbench_data::Example;
use prbench_eval::cache::Cache;
use prbench_eval::condition::Condition;
use prbench_eval::evaluation::{
    prepare_inputs, EngineError, Engines, EvaluationReporter, PlannerOptions,
};
use prbench_eval::prompt::Prompts;
use prbench_eval::retrieve::bm25::Bm25Retriever;
use prbench_eval::retrieve::Retriever;
use prbench_eval::runner::{largest_fitting, rm_request, EvalOptions, Reporter};
use prbench_eval::EvalError;
use prbench_models::{Generator, JudgeRequest, ModelError, PairInput, RmRequest};

/// Where P-Soups is read from, relative to the current folder (the repository root).
pub const PSOUPS_DIR: &str = "../shared/data/alignx-psoups";

/// Fraction of full scale of the PRB-length synthetic set: 14 rows, each with a profile of
/// the full benchmark's mean size.
const SYNTHETIC_SCALE: f64 = 0.005;

/// One input set: a name for the table and the `--data` spec it loads from.
#[derive(Debug, Clone)]
pub struct InputSet {
    /// `sample`, `psoups` or `prb-synthetic`.
    pub name: String,
    /// The data spec ([`prbench_data::load()`]).
    pub spec: String,
}

/// The input sets named in `names` (`sample`, `psoups`, `prb-synthetic`), the synthetic one
/// written under `work` when absent. P-Soups missing is logged and skipped, not an error.
///
/// # Errors
/// An unknown name; the synthetic data cannot be written.
pub fn input_sets(names: &[String], work: &Path, log: &dyn Fn(&str)) -> Result<Vec<InputSet>> {
    let mut sets = Vec::new();
    for name in names {
        let spec = match name.as_str() {
            "sample" => "data/sample".to_string(),
            "psoups" => {
                if !Path::new(PSOUPS_DIR).is_dir() {
                    log(&format!("skipped input set psoups: {PSOUPS_DIR} is absent (relative to the current folder; run from the repository root)"));
                    continue;
                }
                format!("psoups:{PSOUPS_DIR}")
            }
            "prb-synthetic" => {
                let (dir, _, _) = crate::harness::synthetic_data(
                    work,
                    &SyntheticSpec::scaled(42, SYNTHETIC_SCALE),
                    log,
                )?;
                dir.display().to_string()
            }
            other => bail!("unknown input set `{other}`; known: sample, psoups, prb-synthetic"),
        };
        sets.push(InputSet { name: name.clone(), spec });
    }
    Ok(sets)
}

/// The engines eval's preparation needs for `none` and `profile:k`: the BM25 retriever. The
/// planner's generator and quality embedder are never asked for (no `planner` condition).
struct Bm25Only;

impl Engines for Bm25Only {
    fn retriever<'c>(
        &self,
        spec: &str,
        _cache: Option<&'c Cache>,
    ) -> Result<Box<dyn Retriever + 'c>, EngineError> {
        match spec {
            "bm25" => Ok(Box::new(Bm25Retriever::default())),
            other => Err(format!("the benches rank profiles with bm25 only, not `{other}`").into()),
        }
    }
    fn generator(&self, spec: &str) -> Result<Box<dyn Generator>, EngineError> {
        Err(format!("the benches run no planner (asked for `{spec}`)").into())
    }
    fn quality_embedder(&self) -> Result<Arc<dyn prbench_models::Embedder>, EngineError> {
        Err("the benches run no planner".into())
    }
}

/// Preparation progress: silent (notes dropped; the bench logs what it renders).
struct Quiet;

impl Reporter for Quiet {
    fn start(&self, _: &str, _: u64) {}
    fn advance(&self, _: u64) {}
    fn finish(&self) {}
}

impl EvaluationReporter for Quiet {
    fn note(&self, _: &str) {}
}

/// A dataset's first examples with what a condition shows them, prepared as eval prepares it.
pub struct Rendered {
    /// The examples, in dataset order.
    pub examples: Vec<Example>,
    /// The condition with its prepared inputs (ranked profiles).
    pub opts: EvalOptions,
    prompts: Prompts,
}

/// Loads `set`, keeps its first `n` examples and prepares `condition` (`none` or
/// `profile:k`) for them.
///
/// # Errors
/// Data loading, an unsupported condition, retrieval failures.
pub fn prepare(set: &InputSet, condition: &str, n: usize) -> Result<Rendered> {
    let data = prbench_data::load(&set.spec, &[]).with_context(|| {
        format!(
            "loading `{}` (paths are relative to the current folder: run from the repository root)",
            set.spec
        )
    })?;
    let cond = Condition::parse(condition)?;
    if !(cond == Condition::None || cond.profile_k().is_some()) {
        bail!("the prefix benches render `none` or `profile:k`; got `{condition}`");
    }
    let examples: Vec<Example> = data.examples.iter().take(n).cloned().collect();
    if examples.is_empty() {
        bail!("`{}` has no examples", set.spec);
    }
    let planner = PlannerOptions { model: String::new(), k: 0, max_new_tokens: 0 };
    let inputs =
        prepare_inputs(None, &planner, 42, &data, &examples, &[cond], None, &Bm25Only, &Quiet)?;
    let opts = EvalOptions { inputs: Arc::new(inputs), ..EvalOptions::new(cond) };
    Ok(Rendered { examples, opts, prompts: Prompts::new() })
}

impl Rendered {
    /// What `build(n_posts)` builds, with the posts shown under `profile:k` fitted as eval's
    /// runner fits them: the most posts for which `overflow` says every built request fits
    /// (`Some(0)`); `None` or an error from `overflow` (cannot tell) counts as fitting.
    /// Without `profile:k`, `build(None)`.
    fn fitted<R>(
        &self,
        ex: &Example,
        build: impl Fn(Option<usize>) -> Result<Vec<R>, EvalError>,
        overflow: &dyn Fn(&R) -> Result<Option<usize>, ModelError>,
    ) -> Result<Vec<R>> {
        let Some(k) = self.opts.condition.profile_k() else { return Ok(build(None)?) };
        let available = self.opts.inputs.ranked_posts(ex)?.len().min(k);
        let (_, requests) = largest_fitting(available, |n| {
            let requests = build(Some(n))?;
            let fits = requests.iter().all(|r| !matches!(overflow(r), Ok(Some(over)) if over > 0));
            Ok((fits, requests))
        })?;
        Ok(requests)
    }

    /// The requests eval sends a reward model for `answers` of `ex` (one per answer, all after
    /// the same context and question), posts fitted to `overflow` (see `Rendered::fitted`;
    /// pass the model's [`prbench_models::RewardModel::input_overflow`]).
    ///
    /// # Errors
    /// Rendering or the leakage guard ([`rm_request`]).
    pub fn rm_requests(
        &self,
        ex: &Example,
        answers: &[&str],
        overflow: &dyn Fn(&RmRequest) -> Result<Option<usize>, ModelError>,
    ) -> Result<Vec<RmRequest>> {
        self.fitted(
            ex,
            |n| answers.iter().map(|a| rm_request(ex, a, &self.opts, &self.prompts, n)).collect(),
            overflow,
        )
    }

    /// The judge requests of `ex` in both orders (chosen in slot A, then in slot B) as eval's
    /// `--both-orders` builds them: the context eval shows (through [`rm_request`], which also
    /// runs the leakage guard on it) and eval's built-in judge template; posts fitted to
    /// `overflow` (pass the judge's [`prbench_models::Judge::input_overflow`]).
    ///
    /// # Errors
    /// Rendering or the leakage guard.
    pub fn judge_requests(
        &self,
        ex: &Example,
        overflow: &dyn Fn(&JudgeRequest) -> Result<Option<usize>, ModelError>,
    ) -> Result<Vec<JudgeRequest>> {
        let build = |n: Option<usize>| -> Result<Vec<JudgeRequest>, EvalError> {
            let context = rm_request(ex, &ex.chosen, &self.opts, &self.prompts, n)?.input.context;
            [(&ex.chosen, &ex.rejected), (&ex.rejected, &ex.chosen)]
                .into_iter()
                .map(|(a, b)| {
                    let pair = PairInput {
                        example_id: ex.id.clone(),
                        question: ex.question.clone(),
                        context: context.clone(),
                        a: a.clone(),
                        b: b.clone(),
                    };
                    let prompt = self.prompts.judge(&pair)?;
                    Ok(JudgeRequest { pair, prompt, prompt_b: None })
                })
                .collect()
        };
        self.fitted(ex, build, overflow)
    }
}
