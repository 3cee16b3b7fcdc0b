//! `prbench eval`: load and validate the data, load the model, run each condition, print the
//! summary and where the run files are.

use anyhow::{bail, Context, Result};
use std::path::Path;
use std::sync::Arc;

use prbench_data::load::load;
use prbench_eval::condition::Condition;
use prbench_eval::evaluation::{
    slot_balance_warning, unparsed, Evaluation, EvaluationOptions, EvaluationReporter,
    PlannerOptions,
};
use prbench_eval::recipe::JudgeRecipe;
use prbench_eval::run::RunResult;
use prbench_eval::runner::Reporter;
use prbench_models::assets::{default_judge_path, default_model_path};
use prbench_models::spec::{ModelSpec, TextEngine};
use prbench_report::guide::GuideInputs;
use prbench_report::plural::count;

use crate::cli::{EvalArgs, VerdictMode};
use crate::progress::Bar;
use prbench_engines::generators::SpecEngines;
use prbench_engines::load::{load_model, LoadSettings, Loaded};
use prbench_engines::prepare::{
    check_trained_pairs, has_preflight, preflight, prepare_pal, PreflightOptions,
};

/// Flag combinations that would be silently ignored are errors instead.
fn check_flags(
    args: &EvalArgs,
    spec: &ModelSpec,
    conditions: &[Condition],
    recipe: Option<&JudgeRecipe>,
) -> Result<()> {
    let is_judge = spec.is_judge();
    let generative = matches!(spec, ModelSpec::Gguf(_) | ModelSpec::OpenAi { .. });
    if args.judge_recipe.is_some() && !generative {
        bail!(
            "--judge-recipe applies to generative judges (`gguf:` and `openai:`), not `{}`",
            args.model.as_deref().unwrap_or("")
        );
    }
    let pointwise = recipe.is_some_and(JudgeRecipe::is_pointwise);
    if pointwise && args.both_orders {
        bail!("--both-orders: judge recipe `{}` is pointwise (each answer is rated alone), so the order of the answers cannot matter; drop the flag", recipe.map(JudgeRecipe::name).unwrap_or_default());
    }
    if pointwise {
        for (flag, given) in [
            ("--temperature", args.remote.temperature.is_some()),
            ("--top-p", args.remote.top_p.is_some()),
        ] {
            if given {
                bail!("{flag}: a pointwise recipe's ratings are decoded greedily; drop the flag");
            }
        }
    }
    let is_seqcls = matches!(spec, ModelSpec::Hf(_) | ModelSpec::Dir(_));
    let takes_label = matches!(
        spec,
        ModelSpec::VllmClassify { .. }
            | ModelSpec::Templated { engine: TextEngine::Sglang | TextEngine::Tei, .. }
    );
    if args.scalar.label_index.is_some() && !(is_seqcls || takes_label) {
        bail!("--label-index applies to sequence-classification reward models (`hf:`, `dir:`, `vllm-classify:`, `sglang-classify:`, `tei:`), not `{}`", args.model.as_deref().unwrap_or("the default judge"));
    }
    if args.preflight && !is_seqcls && !matches!(spec, ModelSpec::Templated { .. }) {
        bail!(
            "--preflight applies to sequence-classification reward models (`hf:`, `dir:`) and to served ones whose conversations prbench renders (`sglang-classify:`, `tei:`, `openrlhf:`), not `{}`",
            args.model.as_deref().unwrap_or("the default judge")
        );
    }
    if !is_seqcls {
        for (flag, given) in [
            ("--max-length", args.scalar.max_length.is_some()),
            ("--rm-batch", args.scalar.rm_batch.is_some()),
        ] {
            if given {
                bail!("{flag} applies to sequence-classification reward models (`hf:` or `dir:`), not `{}`", args.model.as_deref().unwrap_or("the default judge"));
            }
        }
    }
    if args.scalar.embedder.is_some() && !matches!(spec, ModelSpec::Bt(_) | ModelSpec::Pal(_)) {
        bail!("--embedder applies to `bt:` and `pal:` models only");
    }
    if args.both_orders && !is_judge {
        bail!(
            "--both-orders applies to pairwise judges; `{}` is a pointwise reward model",
            args.model.as_deref().unwrap_or("")
        );
    }
    if args.verdict == VerdictMode::Generate
        && !matches!(spec, ModelSpec::Gguf(_) | ModelSpec::OpenAi { .. })
    {
        bail!("--verdict generate applies to `gguf:` and `openai:` judges only");
    }
    let planner_remote =
        args.planner.as_deref().is_some_and(|p| ModelSpec::parse(p).is_ok_and(|s| s.is_remote()));
    if !spec.is_remote() && !planner_remote {
        if let Some(flag) = args.remote.given().first() {
            bail!("{flag} applies to remote engines (`openai:`, `vllm-classify:`, `sglang-classify:`, `tei:`, `openrlhf:`, `reward-server:`), not `{}`", args.model.as_deref().unwrap_or("the default judge"));
        }
    }
    if args.remote.chat_template.is_some() && !matches!(spec, ModelSpec::Templated { .. }) {
        bail!("--chat-template applies to `sglang-classify:`, `tei:` and `openrlhf:` models (servers that take rendered text), not `{}`", args.model.as_deref().unwrap_or("the default judge"));
    }
    if !matches!(spec, ModelSpec::OpenAi { .. }) {
        for (flag, given) in [
            ("--temperature", args.remote.temperature.is_some()),
            ("--top-p", args.remote.top_p.is_some()),
            ("--request-extra", args.remote.request_extra.is_some()),
        ] {
            if given && spec.is_remote() {
                bail!("{flag} applies to `openai:` judges only");
            }
        }
    }
    if let Some(t) = args.remote.temperature.filter(|t| !(t.is_finite() && *t >= 0.0)) {
        bail!("--temperature must be 0 (greedy) or more; got {t}");
    }
    if let Some(p) = args.remote.top_p.filter(|p| !(*p > 0.0 && *p <= 1.0)) {
        bail!("--top-p is a probability mass in (0, 1]; got {p}");
    }
    // Ranges (--max-new-tokens ≥ 1, --max-error-rate in [0, 1], --limit ≥ 1, …) are checked
    // while the flags are parsed (crate::bounds).
    let generates = matches!(spec, ModelSpec::OpenAi { .. })
        || (matches!(spec, ModelSpec::Gguf(_))
            && (args.verdict == VerdictMode::Generate || pointwise));
    if args.max_new_tokens.is_some() && !generates {
        bail!(
            "--max-new-tokens applies to generated verdicts (`--verdict generate` with a `gguf:` judge, or an `openai:` judge); `{}` {}",
            args.model.as_deref().unwrap_or("the default judge"),
            if matches!(spec, ModelSpec::Gguf(_)) { "gives a logprob verdict here (one forward pass, nothing generated): add --verdict generate or drop the flag" } else { "generates nothing" }
        );
    }
    let ranked = conditions.iter().any(|c| c.profile_k().is_some() || *c == Condition::Planner);
    if args.retriever.is_some() && !ranked {
        bail!(
            "--retriever applies to the `profile` and `planner` conditions; none is in --condition"
        );
    }
    if args.sample && args.limit.is_none() {
        bail!("--sample draws a seeded random sample of N examples per subset and needs --limit N (e.g. --limit 20 --sample)");
    }
    if !conditions.contains(&Condition::Planner) {
        for (flag, given) in [
            ("--planner", args.planner.is_some()),
            ("--planner-k", args.planner_k != 10),
            ("--planner-max-new-tokens", args.planner_max_new_tokens != 128),
        ] {
            if given {
                bail!("{flag} applies to the `planner` condition; add `planner` to --condition");
            }
        }
    }
    Ok(())
}

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

/// `psoups:DIR` for the guide's next command: the P-Soups copy beside the source tree the binary
/// was built from (`<repo>/../shared/data/alignx-psoups`) as an absolute path when it is there,
/// so the command works from any folder; else the relative path the guide uses.
fn psoups_arg() -> String {
    let beside = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/alignx-psoups");
    match beside.canonicalize() {
        Ok(p) if p.is_dir() => format!("psoups:{}", p.display()),
        _ => "psoups:../shared/data/alignx-psoups".into(),
    }
}

/// The default judge's spec, or an error that says how to get it or what to pass instead.
fn default_judge() -> Result<String> {
    let path = default_judge_path();
    if !path.is_file() {
        bail!(
            "the default judge, Qwen2.5-Coder-1.5B-Instruct (1.1 GB), is not at `{}`: run scripts/setup.sh once to fetch it, or name a model with --model (the 135M model of the tests: --model gguf:{})",
            path.display(),
            default_model_path().display()
        );
    }
    Ok(format!("gguf:{}", path.display()))
}

/// The library's options from the flags (defaults resolved: batch size, cache file, planner).
fn options(
    args: &EvalArgs,
    spec: &str,
    parsed: &ModelSpec,
    conditions: Vec<Condition>,
    recipe: Option<Arc<JudgeRecipe>>,
) -> EvaluationOptions {
    EvaluationOptions {
        model: spec.to_string(),
        conditions,
        out: args.out.clone(),
        run_id: args.run_id.clone(),
        seed: args.seed,
        both_orders: args.both_orders,
        batch_size: args.batch_size.unwrap_or(if parsed.is_remote() {
            4 * args.remote.concurrency()
        } else {
            8
        }),
        limit: args.limit,
        sample: args.sample,
        bootstrap: args.bootstrap,
        cache: (!args.no_cache)
            .then(|| args.cache.clone().unwrap_or_else(|| args.out.join("cache.sqlite"))),
        preflight: args.preflight,
        max_error_rate: args.max_error_rate,
        retriever: args.retriever.clone(),
        planner: PlannerOptions {
            model: args
                .planner
                .clone()
                .unwrap_or_else(|| format!("gguf:{}", default_model_path().display())),
            k: args.planner_k,
            max_new_tokens: args.planner_max_new_tokens,
        },
        code_version: crate::code_version().to_string(),
        judge_recipe: recipe,
    }
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
    check_flags(&args, &parsed, &conditions, recipe.as_deref())?;
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
        options(&args, &spec, &parsed, conditions.clone(), recipe.clone()),
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
    let mut model = load_model(
        &parsed,
        &spec,
        &LoadSettings { recipe, ..eval_load_settings(&args, &conditions) },
    )?;
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
    let retry = retry_hint(&args, eval.rerun_id(), result.errors);
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

/// What to run to retry the items the backend failed on: the same command finds its runs again
/// by their id and calls exactly those items, the cache answering the rest.
fn retry_hint(args: &EvalArgs, rerun_id: Option<&str>, errors: usize) -> String {
    let items = count(errors, "failed item", "failed items");
    if args.no_cache {
        return format!(
            "Rerun without --no-cache to retry the {items} and keep what succeeds from then on."
        );
    }
    match (&args.run_id, rerun_id) {
        (Some(_), _) => format!("Rerun the same command to retry exactly the {items} in the same run folder: the items that succeeded come from the cache."),
        (None, Some(id)) => format!("Rerun the same command with `--run-id {id}` to retry exactly the {items} in the same run folder: the items that succeeded come from the cache."),
        (None, None) => format!("Rerun the same command to retry the {items} in a new run folder: the items that succeeded come from the cache."),
    }
}

/// The model-loading settings of `prbench eval`.
pub(crate) fn eval_load_settings<'a>(
    args: &'a EvalArgs,
    conditions: &[Condition],
) -> LoadSettings<'a> {
    LoadSettings {
        verdict: args.verdict,
        max_new_tokens: args.max_new_tokens(),
        seed: args.seed,
        conditions: conditions.to_vec(),
        remote: &args.remote,
        scalar: args.scalar.clone(),
        recipe: None,
        preflight: args.preflight,
    }
}
