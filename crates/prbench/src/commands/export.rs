//! `prbench export`: training data for TRL / OpenRLHF reward models and planner SFT, rendered by
//! `prbench_eval::training_export` exactly as `eval` renders its inputs. Flags only here.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use prbench_data::load::{load, Format as DataFormat};
use prbench_eval::condition::Condition;
use prbench_eval::evaluation::PlannerOptions;
use prbench_eval::training_export::{render, write, ExportOptions, Format};
use prbench_models::assets::default_model_path;
use prbench_models::spec::ModelSpec;

use crate::cli::ExportArgs;
use crate::progress::Bar;
use prbench_engines::generators::SpecEngines;

/// `--condition`: one condition per export (every row of a file is rendered under it), so a list
/// or a k sweep is refused with the forms export takes.
fn parse_condition(text: Option<&str>) -> Result<Condition> {
    let text = text.unwrap_or("none");
    if text.contains(',') {
        bail!(
            "--condition `{text}`: export takes one condition (every row of a file is rendered under it), not a list or a k sweep; run export once per condition, each with its own --out; it accepts `none` (default), `profile` (k = 10), `profile:K`, `planner` or `oracle`"
        );
    }
    // The library's message names the value and the single forms (EXPECTED_ONE).
    Condition::parse(text).map_err(|e| anyhow::anyhow!("--condition: {e}"))
}

/// Flag combinations that would be silently ignored are errors instead.
fn check_flags(args: &ExportArgs, format: Format, condition: Condition) -> Result<()> {
    if !format.is_reward() && args.condition.is_some() {
        bail!("--condition applies to the reward formats (trl-reward, openrlhf-reward); trl-sft-planner's input is the planner's prompt (question and top --planner-k posts) and its target the rubric, whatever the condition");
    }
    let ranks =
        !format.is_reward() || condition.profile_k().is_some() || condition == Condition::Planner;
    if args.retriever.is_some() && !ranks {
        bail!("--retriever applies to the `profile` and `planner` conditions and to trl-sft-planner; `{condition}` shows no posts");
    }
    let planner_runs = format.is_reward() && condition == Condition::Planner;
    if !planner_runs {
        for (flag, given) in [
            ("--planner", args.planner.is_some()),
            ("--planner-max-new-tokens", args.planner_max_new_tokens != 128),
        ] {
            if given {
                bail!("{flag} applies to `--condition planner` (a reward format), where the planner runs");
            }
        }
    }
    if args.planner_k != 10 && !planner_runs && format.is_reward() {
        bail!("--planner-k applies to `--condition planner` and to trl-sft-planner");
    }
    let planner_remote =
        args.planner.as_deref().is_some_and(|p| ModelSpec::parse(p).is_ok_and(|s| s.is_remote()));
    if !planner_remote {
        if let Some(flag) = args.remote_given().first() {
            bail!("{flag} applies to a remote planner (`--planner openai:…`, with `--condition planner`)");
        }
    }
    if args.sample && args.limit.is_none() {
        bail!("--sample draws a seeded random sample of N examples per subset and needs --limit N");
    }
    let uses_cache =
        planner_runs || args.retriever.as_deref().is_some_and(|r| r.trim().starts_with("dense"));
    if args.cache.is_some() && !uses_cache {
        bail!("--cache applies to `--condition planner` and dense retrievers; this export computes nothing worth caching");
    }
    if DataFormat::from_path(&args.out) != Some(DataFormat::Jsonl) {
        bail!(
            "--out `{}` must be a .jsonl file (exports are JSONL, one row per line)",
            args.out.display()
        );
    }
    // As `prbench report --out` and `correlate --out`: a missing folder is more likely a typo
    // than a wish, so it is refused rather than created.
    if let Some(parent) = args.out.parent().filter(|p| !p.as_os_str().is_empty() && !p.is_dir()) {
        bail!("--out: folder `{}` does not exist; create it (e.g. `mkdir -p {}`) or name a file in an existing folder", parent.display(), parent.display());
    }
    Ok(())
}

/// Runs `prbench export`.
pub fn run(args: ExportArgs) -> Result<()> {
    let format = args.format.library();
    let condition = parse_condition(args.condition.as_deref())?;
    check_flags(&args, format, condition)?;
    let planner_runs = format.is_reward() && condition == Condition::Planner;
    let uses_cache =
        planner_runs || args.retriever.as_deref().is_some_and(|r| r.trim().starts_with("dense"));
    let cache: Option<PathBuf> = (uses_cache && !args.no_cache)
        .then(|| args.cache.clone().unwrap_or_else(|| PathBuf::from("runs/cache.sqlite")));
    // Refuse a taken --out before any work (the library refuses again when writing).
    for p in [args.out.clone(), prbench_eval::training_export::manifest_path(&args.out)] {
        if p.exists() {
            bail!("`{}` already exists; remove it or choose another --out (exports are never overwritten)", p.display());
        }
    }
    let data = load(&args.data, &args.subset)
        .with_context(|| format!("loading dataset `{}`", args.data))?;
    super::print_data_warnings(&data);
    let opts = ExportOptions {
        format,
        condition,
        retriever: args.retriever.clone(),
        planner: PlannerOptions {
            model: args
                .planner
                .clone()
                .unwrap_or_else(|| format!("gguf:{}", default_model_path().display())),
            k: args.planner_k,
            max_new_tokens: args.planner_max_new_tokens,
        },
        seed: args.seed,
        limit: args.limit,
        sample: args.sample,
        cache,
        code_version: crate::code_version().to_string(),
    };
    let bar = Bar::new(args.quiet);
    let remote = args.remote();
    let export = render(&data, &opts, &SpecEngines { remote: &remote }, &bar)?;
    let manifest = write(&args.out, &export)?;
    // What was written, on stderr (stdout stays empty: the rows are in the file).
    let c = &export.counts;
    let under = if format.is_reward() {
        format!(
            ", condition {condition}{}",
            if condition.is_oracle() {
                ", the true rubric: for upper-bound studies only"
            } else {
                ""
            }
        )
    } else {
        String::new()
    };
    let left_out = c.skipped_empty_rubric + c.skipped_planner_error;
    eprintln!(
        "prbench: wrote {} {} to {} (format {format}{under}); {left_out} {} left out",
        c.rows,
        if c.rows == 1 { "row" } else { "rows" },
        args.out.display(),
        if left_out == 1 { "example" } else { "examples" }
    );
    for (n, what) in [
        (c.skipped_empty_rubric, "left out: no rubric aspects (no planner target)"),
        (c.skipped_planner_error, "left out: the planner's generator failed on them (eval makes them error outcomes)"),
        (c.planner_failed, "written without context: the planner's reply held no usable list (as eval scores them)"),
        (c.empty_profile, "written without context: empty profile"),
        (c.empty_rubric, "written without context: empty rubric"),
    ] {
        if n > 0 {
            eprintln!("prbench:   {n} {} {what}", if n == 1 { "example" } else { "examples" });
        }
    }
    eprintln!("prbench: manifest: {}", manifest.display());
    Ok(())
}
