//! `prbench eval`: load and validate the data, load the model, run each condition, print the
//! summary and where the run files are.

use anyhow::{bail, Context, Result};
use std::path::Path;
use std::sync::Arc;

use prbench_data::load::load;
use prbench_engines::evaluate::default_judge;
use prbench_engines::generators::SpecEngines;
use prbench_engines::load::{load_model, LoadSettings, Loaded};
use prbench_engines::prepare::{
    check_trained_pairs, has_preflight, preflight, prepare_pal, PreflightOptions,
};
use prbench_eval::condition::Condition;
use prbench_eval::evaluation::{slot_balance_warning, unparsed, Evaluation, EvaluationReporter};
use prbench_eval::recipe::JudgeRecipe;
use prbench_eval::run::RunResult;
use prbench_eval::runner::Reporter;
use prbench_models::spec::ModelSpec;
use prbench_report::guide::GuideInputs;
use prbench_report::plural::count;

use crate::cli::EvalArgs;
use crate::progress::Bar;

/// Writes the HTML reports of the runs (and of the matrix) and says where. A report that cannot
/// be written is a warning naming the command that makes it: the runs themselves are complete.
/// `data` is the dataset evaluated: the reports take the items' texts from it instead of reading it again.
fn write_reports(
    args: &EvalArgs,
    result: &prbench_eval::evaluation::EvaluationResult,
    data: &prbench_data::Dataset,
) {
    let dirs: Vec<std::path::PathBuf> =
        result.runs.iter().map(|(_, id)| args.out.join(id)).collect();
    let matrix = result.matrix.as_ref().map(|m| m.json_path.as_path());
    match prbench_report::html::write_eval_reports(&dirs, matrix, &format!("prbench {}", crate::code_version()), &[data]) {
        Ok(files) => match (matrix, files.last()) {
            (Some(_), Some(last)) => eprintln!("prbench: HTML report of all {} runs in {} (one per run in each run folder, report.html); open it in a browser", dirs.len(), last.display()),
            (None, Some(last)) => eprintln!("prbench: HTML report in {}; open it in a browser", last.display()),
            _ => {}
        },
        Err(e) => {
            let paths: Vec<String> = match matrix {
                Some(m) => vec![m.display().to_string()],
                None => dirs.iter().map(|d| d.display().to_string()).collect(),
            };
            eprintln!("prbench: warning: the HTML report was not written ({e}); make it with `prbench report {} --out report.html`", paths.join(" "));
        }
    }
}

/// `psoups:DIR` for the guide's next commands: the spec `prbench data fetch psoups` prints with
/// its default folder, which the guide's fetch line writes.
fn psoups_arg() -> String {
    format!("psoups:{}", prbench_data::fetch::PSOUPS_DEFAULT_OUT)
}

/// Draws progress on stderr and prints each finished run: its table (or summary JSON) on
/// stdout, then its cache, remote and error figures on stderr.
struct Printer {
    bar: Bar,
    json: bool,
}

impl Reporter for Printer {
    fn start(&self, stage: &str, total: u64) {
        self.bar.start(stage, total);
    }

    fn advance(&self, n: u64) {
        self.bar.advance(n);
    }

    fn finish(&self) {
        self.bar.finish();
    }
}

impl EvaluationReporter for Printer {
    fn note(&self, message: &str) {
        self.bar.note(message);
    }

    fn run_reused(&self, dir: &Path, summary: &prbench_report::Summary) {
        if self.json {
            println!("{}", serde_json::to_string(summary).expect("summaries serialize"));
        } else {
            println!("{}", prbench_report::markdown::render(summary));
        }
        eprintln!(
            "prbench: run files in {}/ (summary.md, summary.json, outcomes.jsonl, manifest.json)",
            dir.display()
        );
    }

    fn run_finished(&self, result: &RunResult) {
        if self.json {
            println!("{}", serde_json::to_string(&result.summary).expect("summaries serialize"));
        } else {
            println!("{}", prbench_report::markdown::render(&result.summary));
        }
        if let Some(c) = &result.summary.cache {
            eprintln!(
                "prbench: cache `{}`: {}, {}{}",
                c.path,
                count(c.hits, "hit", "hits"),
                count(c.calls, "call", "calls"),
                if c.write_errors > 0 {
                    format!(
                        ", {} results NOT stored (first: {})",
                        c.write_errors,
                        c.first_error.as_deref().unwrap_or("")
                    )
                } else {
                    String::new()
                }
            );
        }
        if let Some(r) = &result.summary.remote {
            eprintln!(
                "prbench: remote: {} requests, {} retries, {}; {}",
                r.requests,
                r.retries,
                count(r.failures, "call failed", "calls failed"),
                r.usage_text()
            );
        }
        if let Some(w) = slot_balance_warning(
            &result.outcomes,
            result.summary.sample_per_subset.is_some(),
            result.summary.both_orders.is_some(),
        ) {
            eprintln!("prbench: warning: {w}");
        }
        let errors: Vec<&str> = result.outcomes.iter().filter_map(|o| o.error.as_deref()).collect();
        if let Some(first) = errors.first() {
            eprintln!("prbench: warning: the backend failed on {}, counted as errors, never scored; first: {first}", count(errors.len(), "item", "items"));
        }
        let unparsed = unparsed(result);
        if unparsed > 0 {
            eprintln!(
                "prbench: warning: {unparsed} of {} could not be parsed ({}); they count as not correct, never as a choice (see `verdict.raw` in outcomes.jsonl)",
                count(result.outcomes.len(), "verdict", "verdicts"),
                prbench_report::markdown::unparsed_reason(&result.summary.decoding)
            );
        }
        eprintln!(
            "prbench: run files in {}/ (summary.md, summary.json, outcomes.jsonl, manifest.json)",
            result.dir.display()
        );
    }
}

/// Runs `prbench eval`.
pub fn run(args: EvalArgs) -> Result<()> {
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
        eprintln!("prbench: note: {note}");
    }
    crate::commands::refuse_file_as_folder("--out", &args.out, "run folders")?;
    let data = load(&args.data.data, &args.data.subset)
        .with_context(|| format!("loading dataset `{}`", args.data.data))?;
    super::print_data_warnings(&data);
    // Run folders are checked before the model loads, so an id taken by other settings or by
    // damaged run files fails fast.
    let eval = Evaluation::plan(
        &data,
        args.options(&spec, &parsed, conditions.clone(), recipe.clone(), crate::code_version()),
    )?;
    let n_eval = eval.examples().len();
    if n_eval == data.examples.len() {
        eprintln!(
            "prbench: {} from `{}`; loading model `{spec}`",
            count(data.examples.len(), "example", "examples"),
            data.source
        );
    } else {
        eprintln!(
            "prbench: {n_eval} of {} from `{}` ({} {} per subset{}); loading model `{spec}`",
            count(data.examples.len(), "example", "examples"),
            data.source,
            if args.sample { "a random sample of" } else { "--limit" },
            args.limit.unwrap_or_default(),
            if args.sample { format!(", seed {}", args.seed) } else { String::new() }
        );
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
            eprintln!("prbench: {note}");
        }
        _ => {}
    }
    let printer = Printer { bar: Bar::new(args.quiet), json: args.json };
    let prepared = eval.prepare(&SpecEngines { remote: &args.remote }, &printer)?;
    if has_preflight(&model) {
        let opts = PreflightOptions { seed: args.seed, stop_on_overflow: args.preflight };
        preflight(&model, eval.examples(), &conditions, prepared.inputs(), opts, &mut |line| {
            eprintln!("{line}")
        })?;
        if args.preflight {
            let untouched = if matches!(model, Loaded::Rendered(_)) {
                " (the server was not contacted)"
            } else {
                ""
            };
            eprintln!("prbench: --preflight: stopping before scoring{untouched}");
            return Ok(());
        }
    }
    let result = eval.run(&prepared, model.backend(), &printer)?;
    if !args.no_report {
        write_reports(&args, &result, &data);
    }
    if let (Some(m), false) = (&result.matrix, args.json) {
        println!("{}", m.markdown);
        let guide = GuideInputs {
            share_a: result.share_a.clone(),
            data_arg: args.data.data.clone(),
            psoups_arg: psoups_arg(),
        };
        println!("{}", prbench_report::guide::render(&m.matrix, &guide));
    }
    let retry = args.retry_hint(eval.rerun_id(), result.errors);
    if !result.over_limit.is_empty() {
        bail!(
            "the backend failed on more items than --max-error-rate {} allows: {} (the errors are listed in outcomes.jsonl). {retry}",
            args.max_error_rate,
            result.over_limit.join("; "),
        );
    }
    if result.errors > 0 {
        eprintln!("prbench: {retry}");
    }
    Ok(())
}
