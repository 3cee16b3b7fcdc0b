//! The `export` verb: training data for TRL and OpenRLHF reward models and planner SFT from the
//! benchmark's rendered inputs ([`prbench_eval::training_export`], which renders them exactly as
//! `eval` does). Its flags ([`ExportArgs`]) and what they become, the same for every front-end:
//! [`ExportArgs::check`] refuses flag combinations that would be silently ignored,
//! [`ExportArgs::options`] resolves the defaults into the library's [`ExportOptions`] (planner,
//! cache file), and [`run`] does the export, with the planner's engines built from the flags.
//!
//! The default cache is `runs/cache.sqlite`, the one `prbench eval` uses with its default
//! `--out`, so its planner replies are reused.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use prbench_data::load::{load, Format as DataFormat};
use prbench_eval::condition::Condition;
use prbench_eval::evaluation::{EvaluationReporter, PlannerOptions};
use prbench_eval::training_export::{manifest_path, render, write, ExportOptions, Format};

use prbench_models::spec::ModelSpec;

use crate::evaluate::{default_planner, PLANNER_K, PLANNER_MAX_NEW_TOKENS};
use crate::flags::{ConnectionArgs, ConnectionWording, GenBatchArgs, RemoteArgs};
use crate::generators::SpecEngines;

/// Row formats of `export` (see `prbench_eval::training_export`).
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrainingExportFormat {
    /// TRL RewardTrainer: `chosen` and `rejected` as [user turn, answer] message lists.
    TrlReward,
    /// OpenRLHF train_rm: `prompt` ([user turn]), `chosen` and `rejected` ([answer]) message
    /// lists, for `--data.apply_chat_template --data.prompt_key prompt`.
    // This text is the `--help` line, where `[answer]` is a literal one-message list, not a link.
    #[allow(rustdoc::broken_intra_doc_links)]
    OpenrlhfReward,
    /// TRL SFTTrainer for a planner: `prompt` (the planner's system + user turns, question and
    /// top --planner-k posts), `completion` (the rubric aspect titles as a `- ` list).
    TrlSftPlanner,
}

impl TrainingExportFormat {
    /// The library's format.
    pub fn library(self) -> Format {
        match self {
            TrainingExportFormat::TrlReward => Format::TrlReward,
            TrainingExportFormat::OpenrlhfReward => Format::OpenrlhfReward,
            TrainingExportFormat::TrlSftPlanner => Format::TrlSftPlanner,
        }
    }
}

/// `export` arguments. The data flags are export's own fields (not the shared `DataArgs`) so
/// that `prbench export --help` describes what each does here; of the remote flags it takes
/// only the connection group ([`ConnectionArgs`], worded for the planner by
/// [`PlannerWording`]), not all of `RemoteArgs`, so export has no flag it would ignore (an
/// `openai:` planner reads only the connection settings: eval's planner decodes greedily, with
/// no sampling or request extras).
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// Dataset to export from, with preference pairs (and rubric aspects for trl-sft-planner and
    /// `--condition oracle`): the forms `eval --data` takes: a directory (HF layout
    /// `<config>/*.parquet` or `<config>.{parquet,json,jsonl}`), a single file (e.g. one written
    /// by `prbench build` or `prbench retrieve`), `psoups:DIR`, `synthesizeme:DIR[#SPLIT]`,
    /// `prism:DIR` or `hf:ORG/NAME[@REV]`. The default `data/sample` is looked for in the current
    /// folder, then in the source tree prbench was built from (stderr says which).
    #[arg(long, default_value = "data/sample", value_parser = prbench_flags::data::data_spec)]
    pub data: String,
    /// Subsets to export (long or short names, comma-separated); all when omitted.
    #[arg(long, value_delimiter = ',')]
    pub subset: Vec<String>,
    /// Row format.
    #[arg(long, value_enum)]
    pub format: TrainingExportFormat,
    /// Reward formats: the one condition every row's user turn is rendered under, exactly as
    /// `eval` renders it for a pointwise reward model: `none` (default), `profile` (k = 10) or
    /// `profile:K`, `planner` (runs the planner, through the cache, as eval does) or `oracle`
    /// (the true rubric: an upper bound). One condition per file: no lists or k sweeps (export
    /// once per condition). Not for trl-sft-planner, whose input is the planner's prompt.
    #[arg(long)]
    pub condition: Option<String>,
    /// The JSONL file to write, in an existing folder; its manifest goes to FILE.manifest.json
    /// beside it. Neither is ever overwritten.
    #[arg(long)]
    pub out: PathBuf,
    /// How `profile`, `planner` and trl-sft-planner rank the profile posts: `bm25` (default),
    /// `dense`, `dense:DIR` or `dense:hf:ORG/NAME[@REV]`; a dataset file written by
    /// `prbench retrieve` keeps its own order unless this is given (as in `eval`).
    #[arg(long)]
    pub retriever: Option<String>,
    /// The `planner` condition's generator: `gguf:PATH` or `openai:MODEL[@BASE_URL]` (default:
    /// the SmolLM2-135M-Instruct GGUF, as in `eval`); it decodes greedily, as in `eval`.
    #[arg(long)]
    pub planner: Option<String>,
    /// Profile posts a planner prompt shows (top-ranked), 1 to 10000: the `planner` condition
    /// and trl-sft-planner's input [default: 10].
    #[arg(long, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<usize>(1, 10_000))]
    pub planner_k: Option<usize>,
    /// Token budget of each planner reply (`planner` condition) [default: 128].
    #[arg(long, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<usize>(1, 32_768))]
    pub planner_max_new_tokens: Option<usize>,
    /// Seed of --sample and of the planner's requests (part of their cache key: keep eval's
    /// --seed to reuse its planner replies).
    #[arg(long, default_value_t = 42, allow_negative_numbers = true, value_parser = prbench_flags::bounds::seed)]
    pub seed: u64,
    /// Export only the first N examples of each subset, 1 to 1,000,000.
    #[arg(long, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<usize>(1, 1_000_000))]
    pub limit: Option<usize>,
    /// With --limit N: a seeded random sample of N examples per subset (as `eval --sample`).
    #[arg(long)]
    pub sample: bool,
    /// The run cache the planner's replies and dense embeddings are read from and stored in
    /// (`planner` condition and dense retrievers only) [default: runs/cache.sqlite, the cache
    /// `prbench eval` uses with its default --out, so its planner replies are reused].
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// Neither read nor write the cache.
    #[arg(long, conflicts_with = "cache")]
    pub no_cache: bool,
    /// The planner server's connection (`--planner openai:…` only).
    #[command(flatten)]
    pub connection: ConnectionArgs<PlannerWording>,
    /// Sequences a `gguf:` planner decodes together.
    #[command(flatten)]
    pub gen: GenBatchArgs,
    /// No progress bar (the closing summary of what was written still goes to stderr).
    #[arg(long)]
    pub quiet: bool,
}

/// `export`'s wording of the connection flags: they apply to its planner only.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlannerWording;

impl ConnectionWording for PlannerWording {
    const CONCURRENCY: &'static str = "`--planner openai:…` only: planner requests in flight at once, over all replicas, 1 to 4096 [default: 16]";
    const TIMEOUT: &'static str = "`--planner openai:…` only: seconds before a planner request is abandoned and retried, more than 0 and at most 86400 (a day) [default: 120]";
    const MAX_RETRIES: &'static str = "`--planner openai:…` only: retries of a planner request after a 429, a 5xx, a timeout or a dropped connection (exponential backoff with jitter, honouring Retry-After) before its example is left out (counted), 0 to 100 [default: 6]";
    const API_KEY_ENV: &'static str = "`--planner openai:…` only: the environment variable holding the planner server's API key, sent as a Bearer token and never logged or written; unset or empty means no Authorization header [default: OPENAI_API_KEY]";
}

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

impl ExportArgs {
    /// The planner's remote settings as the shared engine loader takes them.
    pub fn remote(&self) -> RemoteArgs {
        RemoteArgs { connection: self.connection.reworded(), ..RemoteArgs::default() }
    }

    /// The remote flags given, by name.
    pub fn remote_given(&self) -> Vec<&'static str> {
        self.connection.given()
    }

    /// Whether the planner runs: a reward format under `--condition planner`.
    fn planner_runs(format: Format, condition: Condition) -> bool {
        format.is_reward() && condition == Condition::Planner
    }

    /// Whether the export computes something worth caching: the planner's replies, or dense
    /// embeddings.
    fn uses_cache(&self, format: Format, condition: Condition) -> bool {
        Self::planner_runs(format, condition)
            || self.retriever.as_deref().is_some_and(|r| r.trim().starts_with("dense"))
    }

    /// The library's format and the condition, after refusing flag combinations that would be
    /// silently ignored, an `--out` that is not a `.jsonl` file in an existing folder, and an
    /// `--out` (or its manifest) that exists already (exports are never overwritten).
    ///
    /// # Errors
    /// The first flag that does not apply, with the one it needs.
    pub fn check(&self) -> Result<(Format, Condition)> {
        let format = self.format.library();
        let condition = parse_condition(self.condition.as_deref())?;
        if !format.is_reward() && self.condition.is_some() {
            bail!("--condition applies to the reward formats (trl-reward, openrlhf-reward); trl-sft-planner's input is the planner's prompt (question and top --planner-k posts) and its target the rubric, whatever the condition");
        }
        let ranks = !format.is_reward()
            || condition.profile_k().is_some()
            || condition == Condition::Planner;
        if self.retriever.is_some() && !ranks {
            bail!("--retriever applies to the `profile` and `planner` conditions and to trl-sft-planner; `{condition}` shows no posts");
        }
        let planner_runs = Self::planner_runs(format, condition);
        if !planner_runs {
            for (flag, given) in [
                ("--planner", self.planner.is_some()),
                ("--planner-max-new-tokens", self.planner_max_new_tokens.is_some()),
                ("--gen-batch", self.gen.gen_batch.is_some()),
            ] {
                if given {
                    bail!("{flag} applies to `--condition planner` (a reward format), where the planner runs");
                }
            }
        }
        if self.planner_k.is_some() && !planner_runs && format.is_reward() {
            bail!("--planner-k applies to `--condition planner` and to trl-sft-planner");
        }
        let planner_remote = self
            .planner
            .as_deref()
            .is_some_and(|p| ModelSpec::parse(p).is_ok_and(|s| s.is_remote()));
        if !planner_remote {
            if let Some(flag) = self.remote_given().first() {
                bail!("{flag} applies to a remote planner (`--planner openai:…`, with `--condition planner`)");
            }
        } else if self.gen.gen_batch.is_some() {
            bail!("--gen-batch applies to a `gguf:` planner; a server batches the requests it gets on its own (--concurrency sets how many are in flight)");
        }
        if self.sample && self.limit.is_none() {
            bail!(
                "--sample draws a seeded random sample of N examples per subset and needs --limit N"
            );
        }
        if self.cache.is_some() && !self.uses_cache(format, condition) {
            bail!("--cache applies to `--condition planner` and dense retrievers; this export computes nothing worth caching");
        }
        if DataFormat::from_path(&self.out) != Some(DataFormat::Jsonl) {
            bail!(
                "--out `{}` must be a .jsonl file (exports are JSONL, one row per line)",
                self.out.display()
            );
        }
        // As `prbench report --out` and `correlate --out`: a missing folder is more likely a
        // typo than a wish, so it is refused rather than created.
        if let Some(parent) = self.out.parent().filter(|p| !p.as_os_str().is_empty() && !p.is_dir())
        {
            bail!("--out: folder `{}` does not exist; create it (e.g. `mkdir -p {}`) or name a file in an existing folder", parent.display(), parent.display());
        }
        // Refuse a taken --out before any work (the library refuses again when writing).
        for p in [self.out.clone(), manifest_path(&self.out)] {
            if p.exists() {
                bail!("`{}` already exists; remove it or choose another --out (exports are never overwritten)", p.display());
            }
        }
        Ok((format, condition))
    }

    /// The library's options for `format` under `condition` (from [`ExportArgs::check`]):
    /// the planner defaults to the SmolLM2-135M-Instruct GGUF, the cache to
    /// `runs/cache.sqlite` when the export uses one.
    pub fn options(
        &self,
        format: Format,
        condition: Condition,
        code_version: &str,
    ) -> ExportOptions {
        let cache: Option<PathBuf> = (self.uses_cache(format, condition) && !self.no_cache)
            .then(|| self.cache.clone().unwrap_or_else(|| PathBuf::from("runs/cache.sqlite")));
        ExportOptions {
            format,
            condition,
            retriever: self.retriever.clone(),
            planner: PlannerOptions {
                model: self.planner.clone().unwrap_or_else(default_planner),
                k: self.planner_k.unwrap_or(PLANNER_K),
                max_new_tokens: self.planner_max_new_tokens.unwrap_or(PLANNER_MAX_NEW_TOKENS),
            },
            seed: self.seed,
            limit: self.limit,
            sample: self.sample,
            cache,
            code_version: code_version.to_string(),
        }
    }
}

/// Runs `export`: checks the flags ([`ExportArgs::check`]), loads the data, renders and writes
/// the rows and the manifest. Notes (one line each, without the `prbench: ` prefix): the data's
/// warnings, then what was written and what was left out and why; progress on `reporter`.
/// Nothing goes to stdout (the rows are in the file).
///
/// # Errors
/// A flag that does not apply, data that does not load, the planner's engine, the cache, or
/// writing the file.
pub fn run(
    args: &ExportArgs,
    code_version: &str,
    reporter: &dyn EvaluationReporter,
    note: &mut dyn FnMut(&str),
) -> Result<()> {
    let (format, condition) = args.check()?;
    let data = load(&args.data, &args.subset)
        .with_context(|| format!("loading dataset `{}`", args.data))?;
    for w in prbench_data::dataset_warnings(&data) {
        note(&w);
    }
    let opts = args.options(format, condition, code_version);
    let remote = args.remote();
    let export = render(&data, &opts, &SpecEngines { remote: &remote, gen: args.gen }, reporter)?;
    let manifest = write(&args.out, &export)?;
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
    note(&format!(
        "wrote {} {} to {} (format {format}{under}); {left_out} {} left out",
        c.rows,
        if c.rows == 1 { "row" } else { "rows" },
        args.out.display(),
        if left_out == 1 { "example" } else { "examples" }
    ));
    for (n, what) in [
        (c.skipped_empty_rubric, "left out: no rubric aspects (no planner target)"),
        (c.skipped_planner_error, "left out: the planner's generator failed on them (eval makes them error outcomes)"),
        (c.planner_failed, "written without context: the planner's reply held no usable list (as eval scores them)"),
        (c.empty_profile, "written without context: empty profile"),
        (c.empty_rubric, "written without context: empty rubric"),
    ] {
        if n > 0 {
            note(&format!("  {n} {} {what}", if n == 1 { "example" } else { "examples" }));
        }
    }
    note(&format!("manifest: {}", manifest.display()));
    Ok(())
}
