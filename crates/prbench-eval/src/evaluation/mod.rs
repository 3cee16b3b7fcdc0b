//! The evaluation of one model under a list of conditions, callable without the CLI: plan the run
//! folders, prepare what the conditions show (ranked profiles, the planner's aspects), run each
//! condition, and write the conditioning matrix when there are several.
//!
//! The steps are separate so that a caller can do its own work between them: [`Evaluation::plan`]
//! checks the run folders before any model loads (a run id taken by other settings or holding
//! damaged run files fails fast);
//! [`Evaluation::prepare`] opens the cache and ranks and plans; [`Evaluation::run`] scores.
//! Engines the evaluation loads on demand (retrievers, the planner's generator, the embedder
//! that measures the planner) come from an [`Engines`]; progress and notes go to an
//! [`EvaluationReporter`], so the caller decides how they are shown.
//!
//! ```no_run
//! use prbench_eval::evaluation::{Engines, EngineError, Evaluation, EvaluationOptions, EvaluationReporter};
//! use prbench_eval::condition::Condition;
//! use prbench_eval::runner::{Backend, Reporter};
//! use prbench_models::baselines::Baseline;
//!
//! struct NoEngines;
//! impl Engines for NoEngines {
//!     fn retriever<'c>(&self, _: &str, _: Option<&'c prbench_eval::cache::Cache>) -> Result<Box<dyn prbench_eval::retrieve::Retriever + 'c>, EngineError> {
//!         Ok(Box::new(prbench_eval::retrieve::bm25::Bm25Retriever::default()))
//!     }
//!     fn generator(&self, spec: &str) -> Result<Box<dyn prbench_models::Generator>, EngineError> { Err(format!("no generator `{spec}`").into()) }
//!     fn quality_embedder(&self) -> Result<std::sync::Arc<dyn prbench_models::Embedder>, EngineError> { Err("no embedder".into()) }
//! }
//! struct Quiet;
//! impl Reporter for Quiet { fn start(&self, _: &str, _: u64) {} fn advance(&self, _: u64) {} fn finish(&self) {} }
//! impl EvaluationReporter for Quiet { fn note(&self, m: &str) { eprintln!("{m}") } }
//!
//! let data = prbench_data::load::load("data/sample", &[]).unwrap();
//! let opts = EvaluationOptions::new("baseline:longer", vec![Condition::None, Condition::Profile { k: 10 }], "runs", "dev");
//! let eval = Evaluation::plan(&data, opts)?;
//! let prepared = eval.prepare(&NoEngines, &Quiet)?;
//! let result = eval.run(&prepared, Backend::RewardModel(&Baseline::Longer), &Quiet)?;
//! println!("{}", result.matrix.map(|m| m.markdown).unwrap_or_default());
//! # Ok::<(), prbench_eval::EvalError>(())
//! ```

mod matrix_files;
mod prepare;
mod run_dirs;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use prbench_data::{Dataset, Example};
use prbench_models::spec::ModelSpec;
use prbench_models::{Embedder, Generator};
use prbench_records::Summary;
use prbench_stats::bootstrap::BootstrapConfig;
use prbench_stats::outcome::ItemResult;

use crate::cache::Cache;
use crate::condition::{Condition, ConditionInputs};
use crate::controls::cache::RowsSource;
use crate::outcome::Outcome;
use crate::planner::Plan;
use crate::retrieve::Retriever;
use crate::run::{
    check_finished, check_resume, create_run_dir, run as run_condition, Found, RunConfig, RunResult,
};
use crate::runner::{Backend, ContextSource, EvalOptions, Reporter};
use crate::slots::Slot;
use crate::EvalError;

pub use matrix_files::MatrixFiles;
pub use prepare::{prepare_inputs, rank_profiles, DEFAULT_RETRIEVER};
use run_dirs::PlannedRun;

/// The error an [`Engines`] method returns; [`EvalError::Engine`] carries it unchanged.
pub type EngineError = Box<dyn std::error::Error + Send + Sync>;

/// The engines an evaluation loads only when a condition needs them. The caller builds them
/// (they live in engine crates this one does not depend on: candle embedders, remote clients).
pub trait Engines {
    /// The retriever `spec` names (`bm25`, `dense`, …), reading and storing embeddings in
    /// `cache` when there is one.
    fn retriever<'c>(
        &self,
        spec: &str,
        cache: Option<&'c Cache>,
    ) -> Result<Box<dyn Retriever + 'c>, EngineError>;
    /// The planner's generator that `spec` names (`gguf:PATH`, `openai:…`).
    fn generator(&self, spec: &str) -> Result<Box<dyn Generator>, EngineError>;
    /// The embedder the planner's aspects are compared with the hidden rubric by (its failure
    /// becomes the planner report's quality note, not an error).
    fn quality_embedder(&self) -> Result<Arc<dyn Embedder>, EngineError>;
}

/// Progress of an evaluation: the runner's [`Reporter`] for stages, plus notes and finished runs.
pub trait EvaluationReporter: Reporter {
    /// A line for the user: what was decided (runs reused or resumed, where files went), notes
    /// and warnings (these start with `note:` or `warning:`).
    fn note(&self, message: &str);
    /// A condition's run finished and its files are written.
    fn run_finished(&self, _result: &RunResult) {}
    /// A condition's run in `dir` had finished before with these settings and every item
    /// answered: it is reused as it is (no item scored again), with the summary it wrote.
    fn run_reused(&self, _dir: &Path, _summary: &Summary) {}
}

/// The `planner` condition's settings.
#[derive(Debug, Clone)]
pub struct PlannerOptions {
    /// The generator's spec (`gguf:PATH`, `openai:MODEL[@URL]`).
    pub model: String,
    /// Profile posts the planner reads (top-ranked).
    pub k: usize,
    /// Token budget of each planner reply.
    pub max_new_tokens: usize,
}

/// How one model is evaluated under a list of conditions (the `prbench eval` flags, resolved).
#[derive(Debug, Clone)]
pub struct EvaluationOptions {
    /// The model's spec as given (run ids, manifests, the matrix).
    pub model: String,
    /// Conditions, one run each, in this order.
    pub conditions: Vec<Condition>,
    /// Folder for run folders and matrix files.
    pub out: PathBuf,
    /// Run id; `None`: UTC time, model and condition. With several conditions each run gets
    /// `<id>-<condition>`.
    pub run_id: Option<String>,
    /// Run seed: slots, seeded baselines, bootstrap, planner.
    pub seed: u64,
    /// Judge each pair in both orders.
    pub both_orders: bool,
    /// Examples per backend call.
    pub batch_size: usize,
    /// Evaluate only N examples of each subset.
    pub limit: Option<usize>,
    /// With `limit`: a seeded random sample instead of the first N.
    pub sample: bool,
    /// Bootstrap resamples per CI.
    pub bootstrap: usize,
    /// The run cache; `None` means no cache (no resuming either).
    pub cache: Option<PathBuf>,
    /// Stop after preparing: no run folders are planned, no cache is opened.
    pub preflight: bool,
    /// Share of backend errors above which a run is reported in [`EvaluationResult::over_limit`].
    pub max_error_rate: f64,
    /// How `profile` and `planner` rank posts; `None`: a ranked dataset's own order, else
    /// [`DEFAULT_RETRIEVER`].
    pub retriever: Option<String>,
    /// The `planner` condition's settings.
    pub planner: PlannerOptions,
    /// prbench version and git commit, for manifests.
    pub code_version: String,
    /// The judge recipe (`--judge-recipe`); `None`: prbench's own judge prompt.
    pub judge_recipe: Option<Arc<crate::recipe::JudgeRecipe>>,
}

impl EvaluationOptions {
    /// `model` under `conditions` into `out` with `prbench eval`'s defaults: seed 42, one order,
    /// batches of 8, every example, 10,000 bootstrap resamples, the cache `<out>/cache.sqlite`,
    /// 1% error rate, the default planner (SmolLM2-135M, 10 posts, 128 tokens).
    pub fn new(
        model: &str,
        conditions: Vec<Condition>,
        out: impl Into<PathBuf>,
        code_version: &str,
    ) -> Self {
        let out = out.into();
        Self {
            model: model.to_string(),
            conditions,
            cache: Some(out.join("cache.sqlite")),
            out,
            run_id: None,
            seed: 42,
            both_orders: false,
            batch_size: 8,
            limit: None,
            sample: false,
            bootstrap: 10_000,
            preflight: false,
            max_error_rate: 0.01,
            retriever: None,
            planner: PlannerOptions {
                model: format!("gguf:{}", prbench_models::assets::default_model_path().display()),
                k: 10,
                max_new_tokens: 128,
            },
            code_version: code_version.to_string(),
            judge_recipe: None,
        }
    }

    fn bootstrap_config(&self) -> BootstrapConfig {
        BootstrapConfig { resamples: self.bootstrap, seed: self.seed, ..BootstrapConfig::default() }
    }
}

/// An evaluation whose run folders are planned ([`Evaluation::plan`]).
pub struct Evaluation<'d> {
    data: &'d Dataset,
    opts: EvaluationOptions,
    examples: std::borrow::Cow<'d, [Example]>,
    runs: Vec<PlannedRun>,
    matrix_base: Option<String>,
    rerun_id: Option<String>,
}

/// What [`Evaluation::prepare`] made: the run cache and what the conditions show.
pub struct Prepared {
    cache: Option<Arc<Cache>>,
    inputs: Arc<ConditionInputs>,
    plans: Vec<Plan>,
}

impl Prepared {
    /// Ranked posts and planned aspects per example, for rendering inputs outside a run (a
    /// reward model's preflight view).
    pub fn inputs(&self) -> &Arc<ConditionInputs> {
        &self.inputs
    }
}

/// What [`Evaluation::run`] did.
#[derive(Debug)]
pub struct EvaluationResult {
    /// Each condition and its run id, in order (runs reused from an earlier command included).
    pub runs: Vec<(Condition, String)>,
    /// The share of A verdicts each condition's run reports (`None` for reward models or an
    /// unreadable summary), for the guide.
    pub share_a: Vec<(String, Option<f64>)>,
    /// The matrix files, with several conditions.
    pub matrix: Option<MatrixFiles>,
    /// Runs whose backend failed on more items than `max_error_rate` allows, as
    /// `condition: errors of items (percent)`.
    pub over_limit: Vec<String>,
    /// Items the backend failed on, over the runs this command ran (a reused run has none):
    /// running the same command again retries exactly these ([`Evaluation::rerun_id`]).
    pub errors: usize,
}

impl<'d> Evaluation<'d> {
    /// Selects the examples and picks each condition's run folder: with an explicit run id, a
    /// folder holding a run of the same settings is reused when it finished with every item
    /// answered and resumed otherwise (unfinished, errored items, a missing file); checks that
    /// explicit run ids and matrix names are free or this command's own. Writes nothing but the
    /// removal of a folder a killed command left empty.
    ///
    /// # Errors
    /// `oracle` over examples that all lack a rubric
    /// ([`crate::condition::check_oracle_material`]); run folders or matrix files taken by other
    /// runs or commands, or by a run with other settings (data, condition, seed, order mode,
    /// limit, bootstrap: the setting is named); run files that cannot be read or disagree; a
    /// run to resume without a cache.
    pub fn plan(data: &'d Dataset, opts: EvaluationOptions) -> Result<Self, EvalError> {
        let examples = crate::run::selected_examples(
            &data.examples,
            opts.limit,
            opts.sample.then_some(opts.seed),
        );
        crate::condition::check_oracle_material(&opts.conditions, &examples, &data.kind)?;
        // The check depends on the condition only through oracle or not: once, with the first
        // condition that is not oracle, fails before any model loads.
        if let (Some(recipe), Some(&condition)) =
            (&opts.judge_recipe, opts.conditions.iter().find(|c| !c.is_oracle()))
        {
            recipe.check_hidden_text(&data.examples, condition)?;
        }
        let stamp = chrono::Utc::now().format("%Y%m%d-%H%M%S").to_string();
        let (runs, matrix_base) = if opts.preflight {
            (Vec::new(), None)
        } else {
            // The matrix first: a command whose run id names another command's matrix is told
            // so, rather than which setting of one of its runs differs.
            let base = if opts.conditions.len() > 1 {
                Some(run_dirs::matrix_base(
                    &opts.out,
                    opts.run_id.as_deref(),
                    &opts.model,
                    &opts.conditions,
                    &stamp,
                )?)
            } else {
                None
            };
            (run_dirs::plan_run_dirs(&opts, data, &examples, &stamp)?, base)
        };
        let rerun_id = match (&opts.run_id, runs.as_slice()) {
            (Some(id), _) => Some(id.clone()),
            (None, [single]) => Some(single.id.clone()),
            (None, []) => None,
            // Default ids are `<stamp>-<model>-<condition>` and the matrix `<stamp>-<model>-matrix`:
            // `--run-id <stamp>-<model>` names them all again unless a clash added a suffix.
            (None, _) => {
                let stem = format!("{stamp}-{}", run_dirs::slug(&opts.model));
                let same = opts
                    .conditions
                    .iter()
                    .zip(&runs)
                    .all(|(c, r)| r.id == format!("{stem}-{}", c.slug()))
                    && matrix_base.as_deref() == Some(format!("{stem}-matrix").as_str());
                same.then_some(stem)
            }
        };
        Ok(Self { data, opts, examples, runs, matrix_base, rerun_id })
    }

    /// The `--run-id` under which running this command again finds these runs (and resumes or
    /// reuses them): the one given, or the name the default ids share (`None` when a default
    /// id had to take a `-2` suffix, or under preflight).
    pub fn rerun_id(&self) -> Option<&str> {
        self.rerun_id.as_deref()
    }

    /// The examples evaluated: all, or `limit` per subset (first or sampled).
    pub fn examples(&self) -> &[Example] {
        &self.examples
    }

    /// The options planned with.
    pub fn options(&self) -> &EvaluationOptions {
        &self.opts
    }

    /// Opens the run cache (none under preflight) and prepares what the conditions show: ranked
    /// profiles for `profile:k` and `planner`, the planner's aspects and quality.
    ///
    /// # Errors
    /// A cache that cannot be opened; retrievers, planner or embedder failing; a leak in a
    /// planner prompt.
    pub fn prepare(
        &self,
        engines: &dyn Engines,
        reporter: &dyn EvaluationReporter,
    ) -> Result<Prepared, EvalError> {
        let cache = match (&self.opts.cache, self.opts.preflight) {
            (Some(path), false) => Some(Arc::new(Cache::open(path)?)),
            _ => None,
        };
        let p = prepare::prepare(
            self.opts.retriever.as_deref(),
            &self.opts.planner,
            self.opts.seed,
            self.data,
            &self.examples,
            &self.opts.conditions,
            cache.as_ref(),
            engines,
            reporter,
        )?;
        Ok(Prepared { cache, inputs: Arc::new(p.inputs), plans: p.plans })
    }

    /// Runs every condition with `backend` (after checking their settings: reusing finished
    /// runs, resuming unfinished ones and retrying the errored items of finished ones),
    /// reporting each run as it finishes or is reused, then writes the matrix when there are
    /// several conditions.
    ///
    /// # Errors
    /// Settings that differ from a run being reused or resumed; run failures; matrix files that
    /// cannot be written.
    pub fn run(
        &self,
        prepared: &Prepared,
        backend: Backend<'_>,
        reporter: &dyn EvaluationReporter,
    ) -> Result<EvaluationResult, EvalError> {
        let opts = &self.opts;
        // The lexical profile-overlap rule reads the whole profile whatever the condition; as the
        // model under test it gets the same input as in the baselines table.
        let context = if ModelSpec::parse(&opts.model)
            .is_ok_and(|s| s == ModelSpec::Baseline("profile-overlap".into()))
        {
            ContextSource::FullProfile
        } else {
            ContextSource::Condition
        };
        let mut cfgs = Vec::with_capacity(self.runs.len());
        let mut runs = Vec::with_capacity(self.runs.len());
        for (&condition, planned) in opts.conditions.iter().zip(&self.runs) {
            runs.push((condition, planned.id.clone()));
            let cfg = RunConfig {
                dir: opts.out.join(&planned.id),
                run_id: planned.id.clone(),
                limit: opts.limit,
                sample: opts.sample,
                options: EvalOptions {
                    condition,
                    seed: opts.seed,
                    both_orders: opts.both_orders,
                    batch_size: opts.batch_size,
                    context,
                    inputs: prepared.inputs.clone(),
                },
                bootstrap: opts.bootstrap_config(),
                code_version: opts.code_version.clone(),
                cache: prepared.cache.clone(),
                resume: planned.resumed(),
                recipe: opts.judge_recipe.clone(),
            };
            // Every run's settings are checked before any runs, so a mismatch in a later
            // condition stops the command before it writes anything.
            let mut reused = None;
            match &planned.found {
                None => {}
                Some(Found::Complete(summary)) => {
                    check_finished(self.data, backend, &cfg)?;
                    reporter.note(&format!("condition `{condition}`: run `{}` finished already with these settings; reusing it (no item scored again)", cfg.run_id));
                    reused = Some(summary.as_ref());
                }
                Some(found) => {
                    check_resume(self.data, backend, &cfg)?;
                    reporter.note(&match found {
                        Found::Unfinished { written } => format!(
                            "resuming unfinished run `{}` ({} written before it stopped); calls it completed come from the cache",
                            cfg.run_id,
                            if *written == 1 { "1 outcome was".to_string() } else { format!("{written} outcomes were") }
                        ),
                        Found::Errored { errors, items } => format!(
                            "run `{}` finished with the backend failing on {errors} of its {items} items; running it again in its folder retries {}, the other {} come from the cache",
                            cfg.run_id,
                            if *errors == 1 { "that item" } else { "those items" },
                            items - errors
                        ),
                        _ => format!("run `{}`: {}; running it again in its folder, every call it completed from the cache", cfg.run_id, run_dirs::describe(found)),
                    });
                }
            }
            cfgs.push((cfg, reused));
        }
        let mut over_limit = Vec::new();
        let mut all_errors = 0;
        for (cfg, reused) in cfgs {
            if let Some(summary) = reused {
                reporter.run_reused(&cfg.dir, summary);
                continue;
            }
            let condition = cfg.options.condition;
            if !cfg.resume {
                create_run_dir(&opts.out, &cfg.run_id)?;
            }
            if condition == Condition::Planner {
                prepare::write_plans(&cfg.dir.join("planner.jsonl"), &prepared.plans)?;
            }
            let result = run_condition(self.data, backend, &cfg, reporter)?;
            match &result.control_rows {
                RowsSource::Hit | RowsSource::Stored(Some(_)) => reporter.note(&format!(
                    "condition `{condition}`: control baselines {}",
                    result.control_rows.describe()
                )),
                RowsSource::Computed | RowsSource::Stored(None) => {}
            }
            reporter.run_finished(&result);
            let errors = result.outcomes.iter().filter(|o| o.error.is_some()).count();
            all_errors += errors;
            let rate = if result.outcomes.is_empty() {
                0.0
            } else {
                errors as f64 / result.outcomes.len() as f64
            };
            if rate > opts.max_error_rate {
                over_limit.push(format!(
                    "{condition}: {errors} of {} ({:.1}%)",
                    result.outcomes.len(),
                    rate * 100.0
                ));
            }
        }
        let matrix = match &self.matrix_base {
            Some(base) => {
                let files = matrix_files::write_matrix(
                    &opts.out,
                    &opts.model,
                    base,
                    self.data,
                    &runs,
                    &prepared.inputs,
                    opts.seed,
                    &opts.bootstrap_config(),
                )?;
                reporter.note(&format!(
                    "conditioning matrix in {} and {}",
                    files.md_path.display(),
                    files.json_path.display()
                ));
                Some(files)
            }
            None => None,
        };
        let share_a = runs
            .iter()
            .map(|(c, id)| (c.to_string(), matrix_files::share_a_verdicts(&opts.out.join(id))))
            .collect();
        Ok(EvaluationResult { runs, share_a, matrix, over_limit, errors: all_errors })
    }
}

/// A warning when the evaluated items hold `chosen` in one slot far more often than in the
/// other: single-order accuracy then mostly measures the judge's slot lean. It counts every
/// item the run evaluated, errored ones included, since the lean comes from which items were
/// selected (`--limit` keeps each example's slot from the full run, so the first N of a subset
/// can all have chosen in B); the backend's errors have their own warning. `sampled`: the run
/// evaluated a `--limit N --sample` sample, balanced to within one item per subset, so only
/// more items per subset can help; `both_orders`: the run has the position-debiased figure.
/// `None` when balanced within one item, or for reward models (no slots).
pub fn slot_balance_warning(
    outcomes: &[Outcome],
    sampled: bool,
    both_orders: bool,
) -> Option<String> {
    let a = outcomes.iter().filter(|o| o.chosen_slot == Some(Slot::A)).count();
    let b = outcomes.iter().filter(|o| o.chosen_slot == Some(Slot::B)).count();
    // Slots are balanced within each subset, so a full run can differ by one per subset
    // (1,416 vs 1,414 on 2,830 items): that is no lean. Warn only when one slot holds at least
    // 60% of the items.
    slots_unbalanced(a, b).then(|| {
        let (why, remedy) = if sampled {
            ("a --sample balances the slots only to within one item per subset", "or sample more items per subset (a larger --limit)")
        } else {
            ("slots are drawn over the whole dataset and --limit keeps them", "or use --limit N --sample for a seeded random sample")
        };
        format!(
            "the {} evaluated items (errored ones included) hold `chosen` in slot A {a} times and in slot B {b} times ({why}), so single-order accuracy mostly measures the judge's slot lean; read the position-debiased figure{}, {remedy}",
            a + b,
            if both_orders { "" } else { " (add --both-orders)" }
        )
    })
}

/// Whether `a` items with chosen in slot A and `b` in slot B are unbalanced enough for
/// [`slot_balance_warning`]: more than one apart and one slot holding at least 60% of them.
pub fn slots_unbalanced(a: usize, b: usize) -> bool {
    a.abs_diff(b) > 1 && a.max(b) * 5 >= (a + b) * 3
}

/// Items of `result` the model could not parse a verdict from.
pub fn unparsed(result: &RunResult) -> usize {
    result.outcomes.iter().filter(|o| o.result == ItemResult::Unparsed).count()
}

#[cfg(test)]
mod slot_balance_tests {
    use super::{slot_balance_warning, slots_unbalanced};
    use crate::outcome::Outcome;
    use crate::slots::Slot;
    use prbench_records::outcome::OutcomeBuilder;
    use prbench_stats::outcome::ItemResult;

    /// A judge outcome with chosen in `slot` (the warning reads nothing else), errored or
    /// correct.
    fn item(i: usize, slot: Slot, errored: bool) -> Outcome {
        let result = if errored { ItemResult::Error } else { ItemResult::Correct };
        let o = OutcomeBuilder::new(format!("e{i}"), result)
            .subset("Art_and_Entertainment")
            .condition("none")
            .model("test")
            .chosen_slot(slot);
        if errored { o.error("backend failed") } else { o }.build()
    }

    #[test]
    fn slot_warning_counts_errored_items_and_never_suggests_sample_to_a_sampled_run() {
        // A --limit 2 --sample draw: 3 items with chosen in A, 3 in B. The backend failed on two
        // of the A items, so the scored items alone would be 1 A and 3 B (75%).
        let mut outcomes: Vec<Outcome> = (0..3).map(|i| item(i, Slot::A, i < 2)).collect();
        outcomes.extend((3..6).map(|i| item(i, Slot::B, false)));
        assert_eq!(
            slot_balance_warning(&outcomes, true, false),
            None,
            "3 A and 3 B evaluated: balanced"
        );
        // A --limit 1 --sample over three subsets: each subset's first key holds chosen in A.
        let sampled: Vec<Outcome> = (0..3).map(|i| item(i, Slot::A, i == 0)).collect();
        let w = slot_balance_warning(&sampled, true, false).expect("3 A and 0 B");
        assert!(w.contains("the 3 evaluated items (errored ones included) hold `chosen` in slot A 3 times and in slot B 0 times"), "{w}");
        assert!(!w.contains("--sample for"), "a sampled run is not told to sample: {w}");
        assert!(w.contains("a larger --limit") && w.contains("(add --both-orders)"), "{w}");
        // The first N of each subset: the --sample suggestion stands; with both orders the
        // debiased figure is already there.
        let w = slot_balance_warning(&sampled, false, true).expect("3 A and 0 B");
        assert!(w.contains("use --limit N --sample") && !w.contains("add --both-orders"), "{w}");
    }

    #[test]
    fn a_full_run_balanced_per_subset_is_not_unbalanced() {
        assert!(!slots_unbalanced(1416, 1414)); // 2,830 items, 3 subsets balanced within one
        assert!(!slots_unbalanced(3, 3));
        assert!(!slots_unbalanced(5, 4));
        assert!(!slots_unbalanced(2, 1)); // one apart
        assert!(slots_unbalanced(4, 2)); // 4 of 6 = 67%
        assert!(slots_unbalanced(3, 0));
        assert!(slots_unbalanced(0, 12));
        assert!(!slots_unbalanced(590, 410)); // 59%
        assert!(slots_unbalanced(600, 400)); // exactly 60%
    }
}
