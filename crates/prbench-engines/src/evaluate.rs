//! The `eval` verb's flags ([`EvalArgs`]) and what they become, the same for every front-end:
//! [`EvalArgs::check`] refuses flag combinations that would be silently ignored,
//! [`EvalArgs::options`] resolves the defaults into the library's [`EvaluationOptions`]
//! (batch size, cache file, planner), [`EvalArgs::load_settings`] gives the model loader's
//! settings, and [`EvalArgs::retry_hint`] says what to run to retry failed items.
//!
//! The default cache is `<--out>/cache.sqlite`: the cache sits in the folder that holds the
//! command's outputs (the run folders).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Result};
use clap::Args;
use prbench_eval::condition::Condition;
use prbench_eval::evaluation::{EvaluationOptions, PlannerOptions};
use prbench_eval::recipe::JudgeRecipe;
use prbench_flags::data::DataArgs;
use prbench_models::assets::{default_judge_path, default_model_path};
use prbench_models::spec::{ModelSpec, TextEngine};
use prbench_records::plural::count;

use crate::flags::{GenBatchArgs, RemoteArgs, ScalarRmArgs, TransportArg, VerdictMode};
use crate::load::LoadSettings;

/// The planner's generator when `--planner` is not given (`eval` and `export`): the
/// SmolLM2-135M-Instruct GGUF of `scripts/setup.sh`.
pub fn default_planner() -> String {
    format!("gguf:{}", default_model_path().display())
}

/// Profile posts the planner reads when `--planner-k` is not given.
pub const PLANNER_K: usize = 10;
/// Token budget of a planner reply when `--planner-max-new-tokens` is not given.
pub const PLANNER_MAX_NEW_TOKENS: usize = 128;

/// `eval` arguments.
#[derive(Args, Debug)]
pub struct EvalArgs {
    /// Data selection.
    #[command(flatten)]
    pub data: DataArgs,
    /// Model under test: `gguf:PATH` (judge), `openai:MODEL[@BASE_URL[,BASE_URL…]]` (remote
    /// judge; several URLs = replicas), `hf:ORG/NAME[@REV]` or `dir:PATH` (sequence-classification
    /// reward model in the Hugging Face layout), `vllm-classify:MODEL@BASE_URL`,
    /// `sglang-classify:MODEL@BASE_URL`, `tei:MODEL@BASE_URL`, `openrlhf:MODEL@BASE_URL`
    /// (servers taking text rendered here with MODEL's chat template, see --chat-template) and
    /// `reward-server:URL` (remote reward models), `bt:PATH` (a head from `prbench train bt`),
    /// `pal:PATH` (a PAL model from `prbench train pal`) or `baseline:NAME`. Default: the
    /// Qwen2.5-Coder-1.5B-Instruct GGUF judge fetched by scripts/setup.sh (the tests' fast 135M
    /// model is SmolLM2-135M-Instruct.Q4_1.gguf beside it).
    #[arg(long)]
    pub model: Option<String>,
    /// Conditions, comma-separated: `none`; `profile` or `profile:K` (the user's top-K profile
    /// posts, default 10; `profile:k=1,3,5,10` is a k sweep); `planner` (aspects a planner model
    /// inferred from the question and the top posts); `oracle` (the true rubric aspects: an
    /// upper bound). One run per condition; with several, a conditioning matrix
    /// (`<out>/<id>-matrix.md`) compares each with `none` (exact McNemar, Holm).
    #[arg(long, value_delimiter = ',', default_value = "none")]
    pub condition: Vec<String>,
    /// How `profile` and `planner` rank the profile posts: `bm25` (default), `dense`
    /// (all-MiniLM-L6-v2), `dense:DIR` or `dense:hf:ORG/NAME[@REV]`. A dataset file written by
    /// `prbench retrieve` is already ranked and is used as it is unless this is given.
    #[arg(long)]
    pub retriever: Option<String>,
    /// The `planner` condition's generator: `gguf:PATH` or `openai:MODEL[@BASE_URL]`
    /// (default: the SmolLM2-135M-Instruct GGUF).
    #[arg(long)]
    pub planner: Option<String>,
    /// Profile posts the planner reads (top-ranked), 1 to 10000 [default: 10].
    #[arg(long, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<usize>(1, 10_000))]
    pub planner_k: Option<usize>,
    /// Token budget of each planner reply [default: 128].
    #[arg(long, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<usize>(1, 32_768))]
    pub planner_max_new_tokens: Option<usize>,
    /// Verdict mode [default: logprob]. `logprob` reads the next-token log-probabilities of A
    /// and B after `Result:` (one forward pass, nothing generated): in process for `gguf:`
    /// judges; for `openai:` judges, given explicitly, through the server (the prompt plus
    /// `Result:` as the start of the assistant turn, one token, the top 20 log-probabilities;
    /// see --logprob-transport); a letter missing from them leaves the verdict unparsed, never
    /// guessed. `generate` decodes a reply and parses its `Result:` line. An `openai:` judge
    /// without the flag generates and parses, with p_A read at the reply's letter when the
    /// server returns log-probabilities.
    #[arg(long, value_enum)]
    pub verdict: Option<VerdictMode>,
    /// How an `openai:` judge with `--verdict logprob` asks the server for the next-token
    /// log-probabilities: `chat-prefill` (the chat endpoint continuing an assistant message
    /// holding `Result:`, the server's own chat template), `completions` (`/completions` with
    /// the prompt rendered by prbench from `--chat-template`, or else from the template the
    /// server reports at `GET /props`, as llama.cpp's does), or `auto` (chat-prefill if the
    /// server offers it, else completions; decided once at load and recorded in the manifest)
    /// [default: auto].
    #[arg(long, value_enum)]
    pub logprob_transport: Option<TransportArg>,
    /// The judge's prompt and verdict format (`gguf:` and `openai:` judges): a built-in recipe
    /// (`default`: prbench's own; `rating`: each answer rated 1-10 alone, the higher wins) or a
    /// folder holding `system.txt`, `user.jinja` and `recipe.toml`
    /// (docs/guide/src/judge-recipes.md).
    #[arg(long, value_name = "NAME|DIR")]
    pub judge_recipe: Option<String>,
    /// Judge each pair in both orders (consistency and position-debiased figures).
    #[arg(long)]
    pub both_orders: bool,
    /// New-token budget of a generated verdict, 1 to 32768: `--verdict generate`, and `openai:`
    /// judges without `--verdict logprob` [default: 256].
    #[arg(long, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<usize>(1, 32_768))]
    pub max_new_tokens: Option<usize>,
    /// Run seed: slot assignment, random baseline, bootstrap.
    #[arg(long, default_value_t = 42, allow_negative_numbers = true, value_parser = prbench_flags::bounds::seed)]
    pub seed: u64,
    /// Bootstrap resamples per CI, 100 to 1,000,000 (each keeps 8 bytes per statistic per
    /// core in flight, and time grows with it).
    #[arg(long, default_value_t = 10_000, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<usize>(100, prbench_stats::bootstrap::MAX_RESAMPLES as u64))]
    pub bootstrap: usize,
    /// Examples per backend call, 1 to 65536 (default 8; for remote engines 4 × --concurrency,
    /// so the requests in flight stay near the limit).
    #[arg(long, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<usize>(1, 65_536))]
    pub batch_size: Option<usize>,
    /// Evaluate only the first N examples of each subset, 1 to 1,000,000 (quick looks; recorded
    /// in the manifest).
    #[arg(long, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<usize>(1, 1_000_000))]
    pub limit: Option<usize>,
    /// With --limit N: evaluate a seeded random sample of N examples per subset instead of the
    /// first N (the N with the smallest sha256(--seed, id); independent of file order; recorded
    /// in the manifest and summary).
    #[arg(long)]
    pub sample: bool,
    /// Folder for run folders.
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
    /// Run id (folder name); default: UTC time, model and condition. Given again with the same
    /// settings, a finished run is reused (no item scored again) and a killed one, or one with items
    /// the backend failed on, is resumed from the cache; other settings are refused.
    #[arg(long)]
    pub run_id: Option<String>,
    /// Scalar reward models: render the first example of each condition, print the model's view
    /// of it and stop before scoring. `hf:`/`dir:`: the text decoded from the token ids, token
    /// count, BOS count and where truncation would cut; `sglang-classify:`/`tei:`/`openrlhf:`: the
    /// exact text sent and what became of the template's BOS, without contacting the server. (The
    /// same preflight is printed at the start of every such run.)
    #[arg(long)]
    pub preflight: bool,
    /// Scalar reward model flags.
    #[command(flatten)]
    pub scalar: ScalarRmArgs,
    /// Remote engines.
    #[command(flatten)]
    pub remote: RemoteArgs,
    /// Sequences a `gguf:` judge (generated verdicts) or planner decodes together.
    #[command(flatten)]
    pub gen: GenBatchArgs,
    /// The run cache: every model score and verdict is stored here under a hash of (model,
    /// decoding, example, rendered input), so a rerun or a resumed run repeats no call
    /// (default: `<--out>/cache.sqlite`).
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// Neither read nor write the cache (every call is made again).
    #[arg(long, conflicts_with = "cache")]
    pub no_cache: bool,
    /// Exit non-zero when more than this share of items, in [0, 1], failed in the backend
    /// (after retries); the run files are written either way.
    #[arg(long, default_value_t = 0.01, allow_negative_numbers = true, value_parser = prbench_flags::bounds::real(prbench_flags::bounds::End::Closed(0.0), prbench_flags::bounds::End::Closed(1.0), "a share of items (0.01 = 1%)"))]
    pub max_error_rate: f64,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Print each run's summary.json to stdout as one JSON line (one line per condition)
    /// instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Do not write the HTML reports (`report.html` in each run folder, `<id>-report.html`
    /// beside the matrix); `prbench report` makes them later.
    #[arg(long)]
    pub no_report: bool,
}

impl EvalArgs {
    /// `--max-new-tokens`, or its default 256.
    pub fn max_new_tokens(&self) -> usize {
        self.max_new_tokens.unwrap_or(256)
    }

    /// Flag combinations that would be silently ignored are errors instead.
    ///
    /// # Errors
    /// The first flag that does not apply to `spec`, the recipe or the conditions, naming the
    /// flag and what to do.
    pub fn check(
        &self,
        spec: &ModelSpec,
        conditions: &[Condition],
        recipe: Option<&JudgeRecipe>,
    ) -> Result<()> {
        let is_judge = spec.is_judge();
        let generative = matches!(spec, ModelSpec::Gguf(_) | ModelSpec::OpenAi { .. });
        if self.judge_recipe.is_some() && !generative {
            bail!(
                "--judge-recipe applies to generative judges (`gguf:` and `openai:`), not `{}`",
                self.model.as_deref().unwrap_or("")
            );
        }
        let pointwise = recipe.is_some_and(JudgeRecipe::is_pointwise);
        if pointwise && self.both_orders {
            bail!("--both-orders: judge recipe `{}` is pointwise (each answer is rated alone), so the order of the answers cannot matter; drop the flag", recipe.map(JudgeRecipe::name).unwrap_or_default());
        }
        if pointwise {
            for (flag, given) in [
                ("--temperature", self.remote.temperature.is_some()),
                ("--top-p", self.remote.top_p.is_some()),
            ] {
                if given {
                    bail!(
                        "{flag}: a pointwise recipe's ratings are decoded greedily; drop the flag"
                    );
                }
            }
        }
        let is_seqcls = matches!(spec, ModelSpec::Hf(_) | ModelSpec::Dir(_));
        let takes_label = matches!(
            spec,
            ModelSpec::VllmClassify { .. }
                | ModelSpec::Templated { engine: TextEngine::Sglang | TextEngine::Tei, .. }
        );
        if self.scalar.label_index.is_some() && !(is_seqcls || takes_label) {
            bail!("--label-index applies to sequence-classification reward models (`hf:`, `dir:`, `vllm-classify:`, `sglang-classify:`, `tei:`), not `{}`", self.model.as_deref().unwrap_or("the default judge"));
        }
        if self.preflight && !is_seqcls && !matches!(spec, ModelSpec::Templated { .. }) {
            bail!(
                "--preflight applies to sequence-classification reward models (`hf:`, `dir:`) and to served ones whose conversations prbench renders (`sglang-classify:`, `tei:`, `openrlhf:`), not `{}`",
                self.model.as_deref().unwrap_or("the default judge")
            );
        }
        if !is_seqcls {
            for (flag, given) in [
                ("--max-length", self.scalar.max_length.is_some()),
                ("--rm-batch", self.scalar.rm_batch.is_some()),
            ] {
                if given {
                    bail!("{flag} applies to sequence-classification reward models (`hf:` or `dir:`), not `{}`", self.model.as_deref().unwrap_or("the default judge"));
                }
            }
        }
        if self.scalar.embedder.is_some() && !matches!(spec, ModelSpec::Bt(_) | ModelSpec::Pal(_)) {
            bail!("--embedder applies to `bt:` and `pal:` models only");
        }
        if self.both_orders && !is_judge {
            bail!(
                "--both-orders applies to pairwise judges; `{}` is a pointwise reward model",
                self.model.as_deref().unwrap_or("")
            );
        }
        if self.verdict == Some(VerdictMode::Generate)
            && !matches!(spec, ModelSpec::Gguf(_) | ModelSpec::OpenAi { .. })
        {
            bail!("--verdict generate applies to `gguf:` and `openai:` judges only");
        }
        let openai = matches!(spec, ModelSpec::OpenAi { .. });
        let server_logprob = openai && self.verdict == Some(VerdictMode::Logprob) && !pointwise;
        if self.logprob_transport.is_some() && !server_logprob {
            bail!("--logprob-transport applies to `openai:` judges with `--verdict logprob` (a pairwise recipe), not `{}`{}", self.model.as_deref().unwrap_or("the default judge"), if openai { " without it: add --verdict logprob" } else { "" });
        }
        if server_logprob {
            for (flag, given) in [
                ("--temperature", self.remote.temperature.is_some()),
                ("--top-p", self.remote.top_p.is_some()),
                ("--max-new-tokens", self.max_new_tokens.is_some()),
            ] {
                if given {
                    bail!("{flag}: `--verdict logprob` reads one token's log-probabilities at temperature 0 (nothing is sampled or generated); so it takes no {flag}, not even the value it uses; drop the flag, or use --verdict generate");
                }
            }
        }
        let planner_remote = self
            .planner
            .as_deref()
            .is_some_and(|p| ModelSpec::parse(p).is_ok_and(|s| s.is_remote()));
        if !spec.is_remote() && !planner_remote {
            if let Some(flag) = self.remote.given().first() {
                bail!("{flag} applies to remote engines (`openai:`, `vllm-classify:`, `sglang-classify:`, `tei:`, `openrlhf:`, `reward-server:`), not `{}`", self.model.as_deref().unwrap_or("the default judge"));
            }
        }
        if self.remote.chat_template.is_some()
            && !matches!(spec, ModelSpec::Templated { .. })
            && !server_logprob
        {
            bail!("--chat-template applies to `sglang-classify:`, `tei:` and `openrlhf:` models (servers that take rendered text) and to `openai:` judges with `--verdict logprob` (the completions transport), not `{}`", self.model.as_deref().unwrap_or("the default judge"));
        }
        if !matches!(spec, ModelSpec::OpenAi { .. }) {
            for (flag, given) in [
                ("--temperature", self.remote.temperature.is_some()),
                ("--top-p", self.remote.top_p.is_some()),
                ("--request-extra", self.remote.request_extra.is_some()),
            ] {
                if given && spec.is_remote() {
                    bail!("{flag} applies to `openai:` judges only");
                }
            }
        }
        if let Some(t) = self.remote.temperature.filter(|t| !(t.is_finite() && *t >= 0.0)) {
            bail!("--temperature must be 0 (greedy) or more; got {t}");
        }
        if let Some(p) = self.remote.top_p.filter(|p| !(*p > 0.0 && *p <= 1.0)) {
            bail!("--top-p is a probability mass in (0, 1]; got {p}");
        }
        // Ranges (--max-new-tokens ≥ 1, --max-error-rate in [0, 1], --limit ≥ 1, …) are checked
        // while the flags are parsed (crate::bounds).
        let generates = matches!(spec, ModelSpec::OpenAi { .. })
            || (matches!(spec, ModelSpec::Gguf(_))
                && (self.verdict == Some(VerdictMode::Generate) || pointwise));
        if self.max_new_tokens.is_some() && !generates {
            bail!(
                "--max-new-tokens applies to generated verdicts (`--verdict generate` with a `gguf:` judge, or an `openai:` judge); `{}` {}",
                self.model.as_deref().unwrap_or("the default judge"),
                if matches!(spec, ModelSpec::Gguf(_)) { "gives a logprob verdict here (one forward pass, nothing generated): add --verdict generate or drop the flag" } else { "generates nothing" }
            );
        }
        let local_planner = conditions.contains(&Condition::Planner) && !planner_remote;
        let local_generates = matches!(spec, ModelSpec::Gguf(_))
            && (self.verdict == Some(VerdictMode::Generate) || pointwise);
        if self.gen.gen_batch.is_some() && !local_generates && !local_planner {
            bail!(
                "--gen-batch applies to text a `gguf:` model generates: a `gguf:` judge with `--verdict generate` (or a pointwise recipe), or a `gguf:` planner under the `planner` condition; `{}` generates nothing locally here",
                self.model.as_deref().unwrap_or("the default judge")
            );
        }
        let ranked = conditions.iter().any(|c| c.profile_k().is_some() || *c == Condition::Planner);
        if self.retriever.is_some() && !ranked {
            bail!(
                "--retriever applies to the `profile` and `planner` conditions; none is in --condition"
            );
        }
        if self.sample && self.limit.is_none() {
            bail!("--sample draws a seeded random sample of N examples per subset and needs --limit N (e.g. --limit 20 --sample)");
        }
        if !conditions.contains(&Condition::Planner) {
            for (flag, given) in [
                ("--planner", self.planner.is_some()),
                ("--planner-k", self.planner_k.is_some()),
                ("--planner-max-new-tokens", self.planner_max_new_tokens.is_some()),
            ] {
                if given {
                    bail!(
                        "{flag} applies to the `planner` condition; add `planner` to --condition"
                    );
                }
            }
        }
        Ok(())
    }

    /// The library's options from the flags (defaults resolved: batch size, cache file, planner).
    /// `spec` is the model spec as typed (or the default judge's), `parsed` its parsed form,
    /// `code_version` the version the manifest records.
    pub fn options(
        &self,
        spec: &str,
        parsed: &ModelSpec,
        conditions: Vec<Condition>,
        recipe: Option<Arc<JudgeRecipe>>,
        code_version: &str,
    ) -> EvaluationOptions {
        EvaluationOptions {
            model: spec.to_string(),
            conditions,
            out: self.out.clone(),
            run_id: self.run_id.clone(),
            seed: self.seed,
            both_orders: self.both_orders,
            batch_size: self.batch_size.unwrap_or(if parsed.is_remote() {
                4 * self.remote.concurrency()
            } else {
                8
            }),
            limit: self.limit,
            sample: self.sample,
            bootstrap: self.bootstrap,
            cache: (!self.no_cache).then(|| {
                self.cache.clone().unwrap_or_else(|| prbench_eval::cache::default_in(&self.out))
            }),
            preflight: self.preflight,
            max_error_rate: self.max_error_rate,
            retriever: self.retriever.clone(),
            planner: PlannerOptions {
                model: self.planner.clone().unwrap_or_else(default_planner),
                k: self.planner_k.unwrap_or(PLANNER_K),
                max_new_tokens: self.planner_max_new_tokens.unwrap_or(PLANNER_MAX_NEW_TOKENS),
            },
            code_version: code_version.to_string(),
            judge_recipe: recipe,
        }
    }

    /// What to run to retry the items the backend failed on: the same command finds its runs again
    /// by their id and calls exactly those items, the cache answering the rest.
    pub fn retry_hint(&self, rerun_id: Option<&str>, errors: usize) -> String {
        let items = count(errors, "failed item", "failed items");
        if self.no_cache {
            return format!(
                "Rerun without --no-cache to retry the {items} and keep what succeeds from then on."
            );
        }
        match (&self.run_id, rerun_id) {
            (Some(_), _) => format!("Rerun the same command to retry exactly the {items} in the same run folder: the items that succeeded come from the cache."),
            (None, Some(id)) => format!("Rerun the same command with `--run-id {id}` to retry exactly the {items} in the same run folder: the items that succeeded come from the cache."),
            (None, None) => format!("Rerun the same command to retry the {items} in a new run folder: the items that succeeded come from the cache."),
        }
    }

    /// The model-loading settings of `prbench eval`.
    pub fn load_settings(&self, conditions: &[Condition]) -> LoadSettings<'_> {
        LoadSettings {
            verdict: self.verdict.unwrap_or(VerdictMode::Logprob),
            server_logprob: (self.verdict == Some(VerdictMode::Logprob))
                .then(|| self.logprob_transport.unwrap_or(TransportArg::Auto)),
            max_new_tokens: self.max_new_tokens(),
            seed: self.seed,
            conditions: conditions.to_vec(),
            remote: &self.remote,
            gen: self.gen,
            scalar: self.scalar.clone(),
            recipe: None,
            preflight: self.preflight,
        }
    }
}

/// The default judge's spec (`gguf:` the Qwen2.5-Coder-1.5B-Instruct file of `scripts/setup.sh`).
///
/// # Errors
/// The file is missing: the message says how to get it or what to pass instead.
pub fn default_judge() -> Result<String> {
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
