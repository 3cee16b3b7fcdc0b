//! `prbench eval`: load and validate the data, load the model, run each condition, print the
//! summary and where the run files are.

use anyhow::{bail, Context, Result};
use std::path::Path;
use std::sync::Arc;

use prbench_candle::bt::{pair_sha256, BtRewardModel};
use prbench_candle::reward::SeqClsRewardModel;
use prbench_data::Dataset;
use prbench_eval::prompt::Prompts;
use prbench_eval::runner::rm_request;

use prbench_data::load::load;
use prbench_eval::condition::{Condition, ConditionInputs};
use prbench_eval::cache::Cache;
use prbench_eval::run::{check_finished, check_resume, check_run_dir_free, create_run_dir, run as run_eval, RunConfig};
use prbench_eval::runner::{ContextSource, EvalOptions};
use prbench_models::gguf::{default_judge_path, default_model_path};
use prbench_models::spec::ModelSpec;
use prbench_stats::bootstrap::BootstrapConfig;

use crate::cli::{EvalArgs, VerdictMode};
use prbench_report::guide::GuideInputs;
use prbench_report::plural::count;
use crate::progress::Bar;
use crate::commands::conditions::{prepare, write_plans};
use crate::commands::load::{load_model, LoadSettings, Loaded};
use prbench_eval::matrix::ConditionRun;

/// Refuses to score pairs the BT head was trained on (`bt.json` lists the sha256 of every pair
/// it used): a head evaluated on its own training pairs gives a number that means nothing.
fn check_bt_leak(rm: &BtRewardModel, data: &Dataset, spec: &str) -> Result<()> {
    let trained: std::collections::HashSet<&str> = rm.config().data.trained_pairs_sha256.iter().map(String::as_str).collect();
    let leaked: Vec<&str> = data
        .examples
        .iter()
        .filter(|ex| trained.contains(pair_sha256(&ex.question, &ex.chosen, &ex.rejected).as_str()))
        .map(|ex| ex.id.as_str())
        .collect();
    if let Some(first) = leaked.first() {
        bail!(
            "{} of the {} examples to evaluate (first: `{first}`) are pairs `{spec}` was trained on (its bt.json lists them); train on other data, or with `--exclude-data` naming this dataset",
            leaked.len(),
            data.examples.len()
        );
    }
    Ok(())
}

/// Renders and tokenizes the first example under each condition, so a template or tokenizer
/// problem stops the run before any scoring, and prints the model's exact view of it to
/// stderr (PROTOCOL.md §3), `--quiet` or not: it is what makes a scalar-RM run trustworthy.
fn preflight(
    rm: &SeqClsRewardModel,
    examples: &[prbench_data::Example],
    conditions: &[Condition],
    inputs: &Arc<ConditionInputs>,
    args: &EvalArgs,
) -> Result<()> {
    let Some(ex) = examples.first() else { return Ok(()) };
    let prompts = Prompts::new();
    for &condition in conditions {
        let opts = EvalOptions {
            condition,
            seed: args.seed,
            both_orders: false,
            batch_size: 1,
            context: ContextSource::Condition,
            inputs: inputs.clone(),
        };
        let req = rm_request(ex, &ex.chosen, &opts, &prompts, None)?;
        let p = match rm.preflight(&req) {
            Ok(p) => p,
            // An input that cannot fit is that item's error in a run (counted, never scored);
            // only an explicit --preflight stops on it.
            Err(e @ prbench_models::ModelError::ContextOverflow { .. }) if !args.preflight => {
                eprintln!("prbench preflight: condition `{condition}`, example `{}`: {e}; such items are recorded as errors", ex.id);
                continue;
            }
            Err(e) => return Err(e).with_context(|| format!("preflight of example `{}` under `{condition}`", ex.id)),
        };
        eprintln!("prbench preflight: condition `{condition}`, example `{}` (chosen answer)", ex.id);
        eprintln!("----- model input (decoded from the token ids fed) -----\n{}\n-----", p.text);
        eprintln!(
            "tokens: {} of max {}; BOS tokens: {}{}; truncated: {}",
            p.tokens,
            p.max_length,
            p.bos_count,
            if p.extra_bos_removed > 0 { format!(" ({} repeated BOS removed)", p.extra_bos_removed) } else { String::new() },
            match &p.cut_preview {
                Some(c) => format!("{} context tokens cut from the left; the kept context starts with {c:?}", p.truncated_tokens),
                None => "no".into(),
            }
        );
    }
    Ok(())
}

fn slug(s: &str) -> String {
    let tail = s.rsplit(['/', ':']).next().unwrap_or(s);
    let tail = tail.strip_suffix(".gguf").unwrap_or(tail);
    tail.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).collect()
}

/// Flag combinations that would be silently ignored are errors instead.
fn check_flags(args: &EvalArgs, spec: &ModelSpec, conditions: &[Condition]) -> Result<()> {
    let is_judge = spec.is_judge();
    let is_seqcls = matches!(spec, ModelSpec::Hf(_) | ModelSpec::Dir(_));
    if args.scalar.label_index.is_some() && !(is_seqcls || matches!(spec, ModelSpec::VllmClassify { .. })) {
        bail!("--label-index applies to sequence-classification reward models (`hf:`, `dir:`, `vllm-classify:`), not `{}`", args.model.as_deref().unwrap_or("the default judge"));
    }
    if !is_seqcls {
        for (flag, given) in [("--preflight", args.preflight), ("--max-length", args.scalar.max_length.is_some()), ("--rm-batch", args.scalar.rm_batch.is_some())] {
            if given {
                bail!("{flag} applies to sequence-classification reward models (`hf:` or `dir:`), not `{}`", args.model.as_deref().unwrap_or("the default judge"));
            }
        }
    }
    if args.scalar.embedder.is_some() && !matches!(spec, ModelSpec::Bt(_)) {
        bail!("--embedder applies to `bt:` models only");
    }
    if args.both_orders && !is_judge {
        bail!("--both-orders applies to pairwise judges; `{}` is a pointwise reward model", args.model.as_deref().unwrap_or(""));
    }
    if args.verdict == VerdictMode::Generate && !matches!(spec, ModelSpec::Gguf(_) | ModelSpec::OpenAi { .. }) {
        bail!("--verdict generate applies to `gguf:` and `openai:` judges only");
    }
    let planner_remote = args.planner.as_deref().is_some_and(|p| ModelSpec::parse(p).is_ok_and(|s| s.is_remote()));
    if !spec.is_remote() && !planner_remote {
        if let Some(flag) = args.remote.given().first() {
            bail!("{flag} applies to remote engines (`openai:`, `vllm-classify:`, `reward-server:`), not `{}`", args.model.as_deref().unwrap_or("the default judge"));
        }
    }
    if !matches!(spec, ModelSpec::OpenAi { .. }) {
        for (flag, given) in [("--temperature", args.remote.temperature.is_some()), ("--top-p", args.remote.top_p.is_some()), ("--request-extra", args.remote.request_extra.is_some())] {
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
    let generates = matches!(spec, ModelSpec::OpenAi { .. }) || (matches!(spec, ModelSpec::Gguf(_)) && args.verdict == VerdictMode::Generate);
    if args.max_new_tokens.is_some() && !generates {
        bail!(
            "--max-new-tokens applies to generated verdicts (`--verdict generate` with a `gguf:` judge, or an `openai:` judge); `{}` {}",
            args.model.as_deref().unwrap_or("the default judge"),
            if matches!(spec, ModelSpec::Gguf(_)) { "gives a logprob verdict here (one forward pass, nothing generated): add --verdict generate or drop the flag" } else { "generates nothing" }
        );
    }
    let ranked = conditions.iter().any(|c| c.profile_k().is_some() || *c == Condition::Planner);
    if args.retriever.is_some() && !ranked {
        bail!("--retriever applies to the `profile` and `planner` conditions; none is in --condition");
    }
    if args.sample && args.limit.is_none() {
        bail!("--sample draws a seeded random sample of N examples per subset and needs --limit N (e.g. --limit 20 --sample)");
    }
    if !conditions.contains(&Condition::Planner) {
        for (flag, given) in [("--planner", args.planner.is_some()), ("--planner-k", args.planner_k != 10), ("--planner-max-new-tokens", args.planner_max_new_tokens != 128)] {
            if given {
                bail!("{flag} applies to the `planner` condition; add `planner` to --condition");
            }
        }
    }
    Ok(())
}

/// One run folder to write: a fresh id, or an unfinished run to resume.
struct PlannedRun {
    id: String,
    /// The folder exists with a manifest that has no end time (a killed run): resume into it.
    resume: bool,
    /// The folder holds a finished run of this condition, part of a multi-condition run run
    /// again with the same `--run-id`: skip it (its settings are checked) and reuse its outcomes.
    done: bool,
}

/// A folder a killed multi-condition command left before its run started: no manifest, at
/// most the planner's `planner.jsonl`. It holds nothing a run needs.
fn not_started(dir: &Path) -> bool {
    !dir.join("manifest.json").exists()
        && std::fs::read_dir(dir).is_ok_and(|entries| entries.flatten().all(|e| e.file_name() == "planner.jsonl"))
}

/// Picks one run id per condition and checks, before any model loads, that its folder is free
/// (default ids get a `-2`, `-3`, … suffix when two runs start in the same second). An explicit
/// `--run-id` whose folder holds an unfinished run (killed before its end time was written) is
/// resumed: its settings are checked against this command once the model has loaded, and the
/// cache answers every call it had completed. In a multi-condition command, a condition whose
/// folder holds a finished run is skipped (settings checked likewise), and a folder left empty
/// by a kill is reused. New folders are created only when their run starts, so a failed load
/// or a kill leaves nothing half-made behind.
fn plan_run_dirs(args: &EvalArgs, spec: &str, conditions: &[Condition], stamp: &str) -> Result<Vec<PlannedRun>> {
    conditions
        .iter()
        .map(|condition| {
            let explicit = match &args.run_id {
                Some(id) if conditions.len() == 1 => Some(id.clone()),
                Some(id) => Some(format!("{id}-{}", condition.slug())),
                None => None,
            };
            if let Some(id) = explicit {
                let dir = args.out.join(&id);
                if dir.join("manifest.json").is_file() && !dir.join("summary.json").exists() {
                    if args.no_cache {
                        bail!("run folder `{}` holds an unfinished run; resuming it needs the cache (drop --no-cache), or pass another --run-id", dir.display());
                    }
                    return Ok(PlannedRun { id, resume: true, done: false });
                }
                if conditions.len() > 1 && dir.join("summary.json").is_file() {
                    return Ok(PlannedRun { id, resume: false, done: true });
                }
                if dir.is_dir() && not_started(&dir) {
                    std::fs::remove_dir_all(&dir).with_context(|| format!("removing the unstarted run folder `{}`", dir.display()))?;
                }
                check_run_dir_free(&args.out, &id)?;
                return Ok(PlannedRun { id, resume: false, done: false });
            }
            let base = format!("{stamp}-{}-{}", slug(spec), condition.slug());
            for n in 1..1000 {
                let id = if n == 1 { base.clone() } else { format!("{base}-{n}") };
                if !args.out.join(&id).exists() {
                    return Ok(PlannedRun { id, resume: false, done: false });
                }
            }
            bail!("too many runs named `{base}-*` in `{}`", args.out.display())
        })
        .collect()
}

/// The matrix files' name (without extension) for a multi-condition command: `<run-id>-matrix`,
/// or `<time>-<model>-matrix[-N]` for default ids (never an existing file). An explicit id whose
/// matrix file belongs to another command (other model or conditions) is refused, so a matrix
/// is only ever replaced by the same command run again.
fn matrix_base(args: &EvalArgs, spec: &str, conditions: &[Condition], stamp: &str) -> Result<String> {
    match &args.run_id {
        Some(id) => {
            let base = format!("{id}-matrix");
            let path = args.out.join(format!("{base}.json"));
            if let Ok(text) = std::fs::read_to_string(&path) {
                let old: prbench_report::matrix::Matrix =
                    serde_json::from_str(&text).with_context(|| format!("`{}` is not a matrix file; pass another --run-id", path.display()))?;
                let mine: Vec<String> = conditions.iter().map(ToString::to_string).collect();
                let theirs: Vec<String> = old.conditions.iter().map(|c| c.condition.clone()).collect();
                if old.model != spec || theirs != mine {
                    bail!(
                        "`{}` holds the matrix of another command (model `{}`, conditions {}); pass another --run-id",
                        path.display(),
                        old.model,
                        theirs.join(",")
                    );
                }
            }
            Ok(base)
        }
        None => {
            let base = format!("{stamp}-{}-matrix", slug(spec));
            (1..1000)
                .map(|n| if n == 1 { base.clone() } else { format!("{base}-{n}") })
                .find(|b| !args.out.join(format!("{b}.md")).exists() && !args.out.join(format!("{b}.json")).exists())
                .with_context(|| format!("too many matrices named `{base}-*` in `{}`", args.out.display()))
        }
    }
}

/// `psoups:DIR` for the guide's next command: the P-Soups copy beside the source tree the binary
/// was built from (`<repo>/../shared/data/alignx-psoups`) as an absolute path when it is there,
/// so the command works from any folder; else the README's relative path.
fn psoups_arg() -> String {
    let beside = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/alignx-psoups");
    match beside.canonicalize() {
        Ok(p) if p.is_dir() => format!("psoups:{}", p.display()),
        _ => "psoups:../shared/data/alignx-psoups".into(),
    }
}

/// The share of A verdicts a finished run's `summary.json` reports (`None` when it has none or
/// cannot be read: the guide then leaves the figure out).
fn share_a_verdicts(dir: &Path) -> Option<f64> {
    let text = std::fs::read_to_string(dir.join("summary.json")).ok()?;
    let summary: prbench_report::Summary = serde_json::from_str(&text).ok()?;
    summary.position_bias?.share_a_verdicts
}

/// Reads back every condition's outcomes (finished earlier or now) and writes the conditioning
/// matrix next to the run folders: `<out>/<run-id or time-model>-matrix.{md,json}`.
fn write_matrix(args: &EvalArgs, spec: &str, base: &str, data: &Dataset, runs: &[(Condition, String)], inputs: &ConditionInputs) -> Result<()> {
    let mut condition_runs = Vec::with_capacity(runs.len());
    for (condition, id) in runs {
        let path = args.out.join(id).join("outcomes.jsonl");
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading `{}` for the matrix", path.display()))?;
        let outcomes = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .enumerate()
            .map(|(i, l)| serde_json::from_str(l).with_context(|| format!("`{}` line {}: not an outcome", path.display(), i + 1)))
            .collect::<Result<Vec<_>>>()?;
        condition_runs.push(ConditionRun { condition: *condition, run_id: id.clone(), outcomes });
    }
    let mut notes = Vec::new();
    let retriever = inputs.retriever.clone().unwrap_or_else(|| "unknown".into());
    for cr in &condition_runs {
        if let (Condition::Profile { k }, true) = (cr.condition, cr.outcomes.iter().any(|o| o.posts_shown.is_some())) {
            notes.push(format!("`profile:{k}`: {}", prbench_eval::run::profile_figures(k, retriever.clone(), &cr.outcomes).line()));
        }
    }
    if let Some(p) = &inputs.planner_report {
        notes.push(format!("`planner`: {}", p.line()));
    }
    let boot = BootstrapConfig { resamples: args.bootstrap, seed: args.seed, ..BootstrapConfig::default() };
    let matrix = prbench_eval::matrix::build(&condition_runs, spec, &data.source, &data.kind, args.seed, &boot, notes);
    let md_path = args.out.join(format!("{base}.md"));
    let md = prbench_report::matrix::render(&matrix);
    std::fs::write(&md_path, &md).with_context(|| format!("writing `{}`", md_path.display()))?;
    let json_path = args.out.join(format!("{base}.json"));
    std::fs::write(&json_path, serde_json::to_string_pretty(&matrix)? + "\n").with_context(|| format!("writing `{}`", json_path.display()))?;
    eprintln!("prbench: conditioning matrix in {} and {}", md_path.display(), json_path.display());
    if !args.json {
        println!("{md}");
        let share_a = runs.iter().map(|(c, id)| (c.to_string(), share_a_verdicts(&args.out.join(id)))).collect();
        let guide = GuideInputs { share_a, data_arg: args.data.data.clone(), psoups_arg: psoups_arg() };
        println!("{}", prbench_report::guide::render(&matrix, &guide));
    }
    Ok(())
}

/// A warning when the evaluated items hold `chosen` in one slot far more often than in the
/// other (`--limit` keeps each example's slot from the full run, so the first N of a subset can
/// all have chosen in B): single-order accuracy then mostly measures the judge's slot lean.
/// `None` when balanced within one item, or for reward models (no position figures).
pub(crate) fn slot_balance_warning(summary: &prbench_report::Summary) -> Option<String> {
    let p = summary.position_bias.as_ref()?;
    let (a, b) = (p.n_chosen_in_a, p.n_chosen_in_b);
    (a.abs_diff(b) > 1).then(|| {
        format!(
            "the evaluated items hold `chosen` in slot A {a} times and in slot B {b} times (slots are drawn over the whole dataset and --limit keeps them), so single-order accuracy mostly measures the judge's slot lean; read the position-debiased figure (--both-orders), or use --limit N --sample for a seeded random sample"
        )
    })
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

/// The examples `eval` evaluates: all, the first `--limit` of each subset, or with `--sample`
/// a seeded random sample of `--limit` per subset (as [`RunConfig::examples`] picks them).
fn selected(args: &EvalArgs, data: &prbench_data::Dataset) -> Vec<prbench_data::Example> {
    prbench_eval::run::select_examples(&data.examples, args.limit, args.sample.then_some(args.seed))
}

/// Runs `prbench eval`.
pub fn run(args: EvalArgs) -> Result<()> {
    let conditions = Condition::parse_list(&args.condition)?;
    let spec = match &args.model {
        Some(m) => m.clone(),
        None => default_judge()?,
    };
    let parsed = ModelSpec::parse(&spec)?;
    check_flags(&args, &parsed, &conditions)?;
    crate::commands::refuse_file_as_folder("--out", &args.out, "run folders")?;
    let data = load(&args.data.data, &args.data.subset).with_context(|| format!("loading dataset `{}`", args.data.data))?;
    super::print_data_warnings(&data);
    // Run ids are checked before the model loads, so a taken --run-id fails fast.
    let stamp = chrono::Utc::now().format("%Y%m%d-%H%M%S").to_string();
    let run_ids = if args.preflight { Vec::new() } else { plan_run_dirs(&args, &spec, &conditions, &stamp)? };
    let matrix_name = if conditions.len() > 1 && !args.preflight { Some(matrix_base(&args, &spec, &conditions, &stamp)?) } else { None };
    let n_eval = selected(&args, &data).len();
    if n_eval == data.examples.len() {
        eprintln!("prbench: {} from `{}`; loading model `{spec}`", count(data.examples.len(), "example", "examples"), data.source);
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
    let model = load_model(&parsed, &spec, &LoadSettings::of_eval(&args, &conditions))?;
    if let Loaded::Bt(rm) = &model {
        check_bt_leak(rm, &data, &spec)?;
    }

    // The lexical profile-overlap rule reads the whole profile whatever the condition; as the
    // model under test it gets the same input as in the baselines table.
    let context = if parsed == ModelSpec::Baseline("profile-overlap".into()) {
        ContextSource::FullProfile
    } else {
        ContextSource::Condition
    };
    let reporter = Bar::new(args.quiet);
    // --preflight stops before scoring and must leave nothing behind: no cache file either.
    let cache = if args.no_cache || args.preflight {
        None
    } else {
        let path = args.cache.clone().unwrap_or_else(|| args.out.join("cache.sqlite"));
        Some(Arc::new(Cache::open(&path)?))
    };
    let examples = selected(&args, &data);
    let prepared = prepare(&args, &data, &examples, &conditions, cache.as_ref(), &reporter)?;
    let inputs = Arc::new(prepared.inputs);
    if let Loaded::SeqCls(rm) = &model {
        preflight(rm, &examples, &conditions, &inputs, &args)?;
        if args.preflight {
            eprintln!("prbench: --preflight: stopping before scoring");
            return Ok(());
        }
    }
    let batch_size = args.batch_size.unwrap_or(if parsed.is_remote() { 4 * args.remote.concurrency() } else { 8 });
    let mut cfgs = Vec::with_capacity(conditions.len());
    let mut all_runs = Vec::with_capacity(conditions.len());
    for (&condition, planned) in conditions.iter().zip(run_ids) {
        all_runs.push((condition, planned.id.clone()));
        let cfg = RunConfig {
            dir: args.out.join(&planned.id),
            run_id: planned.id,
            limit: args.limit,
            sample: args.sample,
            options: EvalOptions { condition, seed: args.seed, both_orders: args.both_orders, batch_size, context, inputs: inputs.clone() },
            bootstrap: BootstrapConfig { resamples: args.bootstrap, seed: args.seed, ..BootstrapConfig::default() },
            code_version: crate::code_version().to_string(),
            cache: cache.clone(),
            resume: planned.resume,
        };
        if planned.done {
            check_finished(&data, model.backend(), &cfg)?;
            eprintln!("prbench: condition `{condition}`: run `{}` finished already with these settings; reusing it", cfg.run_id);
            continue;
        }
        if planned.resume {
            let written = check_resume(&data, model.backend(), &cfg)?;
            eprintln!(
                "prbench: resuming unfinished run `{}` ({} written before it stopped); calls it completed come from the cache",
                cfg.run_id,
                if written == 1 { "1 outcome was".to_string() } else { format!("{written} outcomes were") }
            );
        }
        cfgs.push((cfg, planned.resume));
    }
    let mut over_limit = Vec::new();
    for (cfg, resume) in cfgs {
        let condition = cfg.options.condition;
        if !resume {
            create_run_dir(&args.out, &cfg.run_id)?;
        }
        if condition == Condition::Planner {
            write_plans(&cfg.dir.join("planner.jsonl"), &prepared.plans)?;
        }
        let result = run_eval(&data, model.backend(), &cfg, &reporter)?;
        if args.json {
            println!("{}", serde_json::to_string(&result.summary)?);
        } else {
            println!("{}", prbench_report::markdown::render(&result.summary));
        }
        if let Some(c) = &result.summary.cache {
            eprintln!(
                "prbench: cache `{}`: {}, {}{}",
                c.path,
                count(c.hits, "hit", "hits"),
                count(c.calls, "call", "calls"),
                if c.write_errors > 0 { format!(", {} results NOT stored (first: {})", c.write_errors, c.first_error.as_deref().unwrap_or("")) } else { String::new() }
            );
        }
        if let Some(r) = &result.summary.remote {
            eprintln!(
                "prbench: remote: {} requests, {} retries, {} calls failed after retries; {} prompt + {} completion tokens",
                r.requests, r.retries, r.failures, r.prompt_tokens, r.completion_tokens
            );
        }
        if let Some(w) = slot_balance_warning(&result.summary) {
            eprintln!("prbench: warning: {w}");
        }
        let errors: Vec<&str> = result.outcomes.iter().filter_map(|o| o.error.as_deref()).collect();
        if let Some(first) = errors.first() {
            eprintln!("prbench: warning: the backend failed on {}, counted as errors, never scored; first: {first}", count(errors.len(), "item", "items"));
        }
        let unparsed = result.outcomes.iter().filter(|o| o.result == prbench_stats::outcome::ItemResult::Unparsed).count();
        if unparsed > 0 {
            eprintln!(
                "prbench: warning: {unparsed} of {} could not be parsed (no `Result: A|B` line); they count as not correct, never as a choice (see `verdict.raw` in outcomes.jsonl)",
                count(result.outcomes.len(), "verdict", "verdicts")
            );
        }
        let rate = if result.outcomes.is_empty() { 0.0 } else { errors.len() as f64 / result.outcomes.len() as f64 };
        if rate > args.max_error_rate {
            over_limit.push(format!("{condition}: {} of {} ({:.1}%)", errors.len(), result.outcomes.len(), rate * 100.0));
        }
        eprintln!("prbench: run files in {}/ (summary.md, summary.json, outcomes.jsonl, manifest.json)", result.dir.display());
    }
    if let Some(base) = &matrix_name {
        write_matrix(&args, &spec, base, &data, &all_runs, &inputs)?;
    }
    if !over_limit.is_empty() {
        bail!(
            "the backend failed on more items than --max-error-rate {} allows: {} (the errors are listed in outcomes.jsonl). {}",
            args.max_error_rate,
            over_limit.join("; "),
            if args.no_cache {
                "Rerun without --no-cache to keep what succeeds from then on."
            } else {
                "Rerun with a new --run-id (or none): the items that succeeded come from the cache and only the failed ones are called again."
            }
        );
    }
    Ok(())
}
