//! One `prbench eval` from its flags to its run files, for every front-end (the binary's `eval`
//! verb, a study plan, a test): load and validate the data, pick the run folders, load the model
//! (leak check, PAL adaptation), prepare the conditions' inputs, print the preflight of scalar
//! reward models, score. Presentation (tables, HTML, the guide) is the caller's: it gets the
//! [`EvalDone`] and the [`EvaluationReporter`] calls.

use std::sync::Arc;

use anyhow::{bail, Context, Result};

use prbench_data::Dataset;
use prbench_eval::condition::Condition;
use prbench_eval::evaluation::{Evaluation, EvaluationReporter, EvaluationResult};
use prbench_eval::recipe::JudgeRecipe;
use prbench_models::spec::ModelSpec;
use prbench_records::plural::count;

use crate::evaluate::{default_judge, EvalArgs};
use crate::generators::SpecEngines;
use crate::load::{load_model, LoadSettings, Loaded};
use crate::prepare::{
    check_trained_pairs, has_preflight, preflight, prepare_pal, PreflightOptions,
};

/// What an evaluation left: the data it read and, unless `--preflight` stopped it before
/// scoring, its result.
pub struct EvalDone {
    /// The dataset evaluated (the reports take the items' texts from it).
    pub data: Dataset,
    /// The runs, matrix and error counts; `None` when `--preflight` stopped before scoring.
    pub result: Option<EvaluationResult>,
    /// What to run to retry the items the backend failed on ([`EvalArgs::retry_hint`]).
    pub retry: String,
}

impl EvalDone {
    /// Refuses a result with more backend failures than `--max-error-rate` allows (the run
    /// files are written either way).
    ///
    /// # Errors
    /// The runs over the limit, with the retry command.
    pub fn check_error_rate(&self, max_error_rate: f64) -> Result<()> {
        if let Some(r) = self.result.as_ref().filter(|r| !r.over_limit.is_empty()) {
            bail!(
                "the backend failed on more items than --max-error-rate {max_error_rate} allows: {} (the errors are listed in outcomes.jsonl). {}",
                r.over_limit.join("; "),
                self.retry
            );
        }
        Ok(())
    }
}

/// Refuses a folder flag (`--out`) that names an existing file, before anything is written
/// (creating a folder under it would fail later with a bare "File exists").
///
/// # Errors
/// `path` exists and is not a folder; the message names `flag` and what it `holds`.
pub fn refuse_file_as_folder(flag: &str, path: &std::path::Path, holds: &str) -> Result<()> {
    if path.exists() && !path.is_dir() {
        bail!("{flag} `{}` is a file; pass a folder for {holds}", path.display());
    }
    Ok(())
}

/// Runs one evaluation as `prbench eval` does. Lines for the user (data warnings, what loads,
/// PAL's adaptation) go to `reporter.note`; the scalar reward models' preflight view (the
/// model input, its token count) goes to `preflight_line` as it is, one line per call.
///
/// # Errors
/// Flags that do not fit the model ([`EvalArgs::check`]), data that cannot be loaded, run
/// folders taken by other settings, a model that cannot load or was trained on the evaluated
/// pairs, a backend that fails outright. Items the backend failed on are not an error here (see
/// [`EvalDone::check_error_rate`]).
pub fn run_eval(
    args: &EvalArgs,
    version: &str,
    reporter: &dyn EvaluationReporter,
    preflight_line: &mut dyn FnMut(&str),
) -> Result<EvalDone> {
    let conditions = Condition::parse_list(&args.condition)?;
    let spec = match &args.model {
        Some(m) => m.clone(),
        None => default_judge()?,
    };
    let parsed = ModelSpec::parse(&spec)?;
    let recipe = match &args.judge_recipe {
        Some(r) => Some(Arc::new(JudgeRecipe::load(r)?)),
        None => None,
    };
    args.check(&parsed, &conditions, recipe.as_deref())?;
    for note in recipe.as_deref().map(JudgeRecipe::notes).unwrap_or_default() {
        reporter.note(&format!("note: {note}"));
    }
    refuse_file_as_folder("--out", &args.out, "run folders")?;
    let data = prbench_data::load::load(&args.data.data, &args.data.subset)
        .with_context(|| format!("loading dataset `{}`", args.data.data))?;
    for w in prbench_data::dataset_warnings(&data) {
        reporter.note(&w);
    }
    // Run folders are checked before the model loads, so an id taken by other settings or by
    // damaged run files fails fast.
    let eval = Evaluation::plan(
        &data,
        args.options(&spec, &parsed, conditions.clone(), recipe.clone(), version),
    )?;
    let n_eval = eval.examples().len();
    if n_eval == data.examples.len() {
        reporter.note(&format!(
            "{} from `{}`; loading model `{spec}`",
            count(data.examples.len(), "example", "examples"),
            data.source
        ));
    } else {
        reporter.note(&format!(
            "{n_eval} of {} from `{}` ({} {} per subset{}); loading model `{spec}`",
            count(data.examples.len(), "example", "examples"),
            data.source,
            if args.sample { "a random sample of" } else { "--limit" },
            args.limit.unwrap_or_default(),
            if args.sample { format!(", seed {}", args.seed) } else { String::new() }
        ));
    }
    let mut model =
        load_model(&parsed, &spec, &LoadSettings { recipe, ..args.load_settings(&conditions) })?;
    match &mut model {
        Loaded::Bt(rm) => {
            check_trained_pairs(&rm.config().data.trained_pairs_sha256, "bt.json", &data, &spec)?
        }
        Loaded::Pal(rm) => {
            check_trained_pairs(&rm.config().data.trained_pairs_sha256, "pal.json", &data, &spec)?;
            let note = prepare_pal(rm, &args.data.data, &args.data.subset, eval.examples())?;
            reporter.note(&note);
        }
        _ => {}
    }
    let prepared = eval.prepare(&SpecEngines { remote: &args.remote, gen: args.gen }, reporter)?;
    if has_preflight(&model) {
        let opts = PreflightOptions { seed: args.seed, stop_on_overflow: args.preflight };
        preflight(&model, eval.examples(), &conditions, prepared.inputs(), opts, preflight_line)?;
        if args.preflight {
            let untouched = if matches!(model, Loaded::Rendered(_)) {
                " (the server was not contacted)"
            } else {
                ""
            };
            reporter.note(&format!("--preflight: stopping before scoring{untouched}"));
            let retry = args.retry_hint(eval.rerun_id(), 0);
            drop(prepared);
            drop(eval);
            return Ok(EvalDone { data, result: None, retry });
        }
    }
    let result = eval.run(&prepared, model.backend(), reporter)?;
    let retry = args.retry_hint(eval.rerun_id(), result.errors);
    drop(prepared);
    drop(eval);
    Ok(EvalDone { data, result: Some(result), retry })
}
