//! Loading a model from its spec ([`prbench_models::spec::ModelSpec`]), shared by `eval`,
//! `bon score`, `serve-reward` and the benches: local GGUF judges, sequence-classification,
//! Bradley-Terry and PAL reward models, control baselines and remote engines.

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context, Result};

use prbench_data::hub::HubOptions;
use prbench_eval::condition::Condition;
use prbench_eval::recipe::{JudgeRecipe, RecipeReader};
use prbench_eval::runner::Backend;
use prbench_llm::{GgufEngine, GgufOptions};
use prbench_models::baselines::{Baseline, SlotA};
use prbench_models::judge::{GenerateJudge, LogprobJudge, RatingJudge};
use prbench_models::spec::{ModelSpec, TextEngine};
use prbench_models::verdict_reader::VerdictReader;
use prbench_models::{Judge, RewardModel};
use prbench_remote::{
    ChatRenderer, JudgeConfig, NextTokenConfig, OpenAiChat, OpenAiJudge, OpenRlhfReward,
    RemoteOptions, RenderedRewardModel, RewardServer, ServerLogprobJudge, SglangClassify,
    TeiPredict, TemplatedRewardModel, TextEndpoint, VerdictSource, VllmClassify,
};
use prbench_rm::embed::default_embedder_dir;
use prbench_rm::hub::{fetch_chat_template, fetch_model};
use prbench_rm::reward::{SeqClsOptions, SeqClsRewardModel};
use prbench_train::bt::BtRewardModel;
use prbench_train::pal::PalRewardModel;

use crate::flags::{GenBatchArgs, RemoteArgs, ScalarRmArgs, TransportArg, VerdictMode};

/// The flags model loading reads, whichever command parsed them.
pub struct LoadSettings<'a> {
    /// How a local or remote judge gives its verdict.
    pub verdict: VerdictMode,
    /// `Some` when `--verdict logprob` was given: an `openai:` judge then reads its verdict from
    /// the server's next-token log-probabilities through this transport choice
    /// ([`ServerLogprobJudge`]); `None`: it generates a reply and parses it.
    pub server_logprob: Option<TransportArg>,
    /// New-token budget of a generating judge.
    pub max_new_tokens: usize,
    /// Run seed (seeded baselines, remote sampling).
    pub seed: u64,
    /// Conditions the model will see (a BT or PAL model trained under another one prints a note).
    pub conditions: Vec<Condition>,
    /// Remote engine flags.
    pub remote: &'a RemoteArgs,
    /// Sequences a `gguf:` judge decodes together when it generates its verdicts.
    pub gen: GenBatchArgs,
    /// Scalar reward model flags (label index, token limit, batch, BT embedder).
    pub scalar: ScalarRmArgs,
    /// The judge recipe of a `gguf:` or `openai:` judge (`None`: prbench's own prompt and
    /// `Result:` reader).
    pub recipe: Option<Arc<JudgeRecipe>>,
    /// `eval --preflight`: the run stops before scoring, so a served RM whose conversations
    /// prbench renders is not probed (its preflight is local: the text it would send).
    pub preflight: bool,
}

impl<'a> LoadSettings<'a> {
    /// The settings of a command that needs a pointwise reward model (`bon score`,
    /// `serve-reward`, `bench serve`): judge flags do not apply, so the verdict mode and the
    /// new-token budget are left at inert values.
    pub fn for_reward_model(
        seed: u64,
        conditions: Vec<Condition>,
        remote: &'a RemoteArgs,
        scalar: &ScalarRmArgs,
    ) -> Self {
        LoadSettings {
            verdict: VerdictMode::Logprob,
            server_logprob: None,
            max_new_tokens: 0,
            seed,
            conditions,
            remote,
            gen: GenBatchArgs::default(),
            scalar: scalar.clone(),
            recipe: None,
            preflight: false,
        }
    }
}

/// The model under test, owned.
pub enum Loaded {
    /// A pairwise judge (`gguf:`, `openai:`, `baseline:slot-a`).
    Judge(Box<dyn Judge>),
    /// A pointwise reward model with nothing more to it (baselines, `vllm-classify:`,
    /// `reward-server:`).
    RewardModel(Box<dyn RewardModel>),
    /// A sequence-classification RM: scored like any RM, plus a preflight view.
    SeqCls(Box<SeqClsRewardModel>),
    /// A Bradley-Terry head: scored like any RM, plus a training-data leak check.
    Bt(Box<BtRewardModel>),
    /// A PAL model: scored like any RM, plus the leak check and few-shot adaptation of the
    /// evaluated users it was not trained on.
    Pal(Box<PalRewardModel>),
    /// A served RM whose conversations prbench renders (`sglang-classify:`, `tei:`,
    /// `openrlhf:`): scored like any RM, plus a preflight view of the text it sends.
    Rendered(Box<dyn RenderedRewardModel>),
}

impl Loaded {
    /// The backend the runner calls.
    pub fn backend(&self) -> Backend<'_> {
        match self {
            Loaded::Judge(j) => Backend::Judge(j.as_ref()),
            Loaded::RewardModel(r) => Backend::RewardModel(r.as_ref()),
            Loaded::SeqCls(r) => Backend::RewardModel(r.as_ref()),
            Loaded::Bt(r) => Backend::RewardModel(r.as_ref()),
            Loaded::Pal(r) => Backend::RewardModel(r.as_ref()),
            Loaded::Rendered(r) => Backend::RewardModel(r.as_ref()),
        }
    }

    /// The model as a pointwise reward model (`serve-reward`, `bench serve`); a pairwise judge is
    /// refused: it compares two answers and has no reward for one.
    pub fn into_reward_model(self) -> Result<Box<dyn RewardModel>> {
        match self {
            Loaded::RewardModel(r) => Ok(r),
            Loaded::SeqCls(r) => Ok(r),
            Loaded::Bt(r) => Ok(r),
            Loaded::Pal(r) => Ok(r),
            Loaded::Rendered(r) => Ok(r),
            Loaded::Judge(j) => Err(not_pointwise(&j.identity().spec)),
        }
    }
}

/// The error for a pairwise judge given where a pointwise reward model is needed.
pub fn not_pointwise(spec: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "`{spec}` is a pairwise judge: it picks the better of two answers and gives no reward for one; use a pointwise reward model instead (`hf:`, `dir:`, `bt:`, `pal:`, `vllm-classify:`, `reward-server:`, or `baseline:longer|shorter|random|profile-overlap`)"
    )
}

fn load_seqcls(
    dir: &Path,
    spec: &str,
    revision: Option<String>,
    args: &LoadSettings<'_>,
) -> Result<Loaded> {
    if !dir.is_dir() {
        bail!("`{}` is not a directory; `dir:PATH` takes a model directory in the Hugging Face layout (config.json, tokenizer.json, *.safetensors)", dir.display());
    }
    let opts = SeqClsOptions {
        max_length: args.scalar.max_length,
        label_index: args.scalar.label_index,
        max_batch: args.scalar.rm_batch(),
        ..SeqClsOptions::default()
    };
    let rm = SeqClsRewardModel::load(dir, spec, revision, &opts)
        .with_context(|| format!("loading `{spec}`"))?;
    Ok(Loaded::SeqCls(Box::new(rm)))
}

/// Loads the model `spec` (its text form `text`, kept for manifests and messages).
pub fn load_model(spec: &ModelSpec, text: &str, args: &LoadSettings<'_>) -> Result<Loaded> {
    match spec.clone() {
        ModelSpec::Gguf(path) => {
            if path.is_dir() {
                bail!("`{}` is a directory; --model gguf:PATH takes a .gguf file", path.display());
            }
            if !path.is_file() {
                bail!(
                    "model file `{}` not found; run `scripts/setup.sh` to fetch the default models, or pass --model gguf:PATH",
                    path.display()
                );
            }
            let opts = GgufOptions { gen_batch: args.gen.gen_batch(), ..Default::default() };
            let engine = GgufEngine::load(&path, opts)
                .with_context(|| format!("loading `{}`", path.display()))?;
            Ok(Loaded::Judge(local_judge(engine, args)?))
        }
        ModelSpec::Baseline(name) if name == "slot-a" => Ok(Loaded::Judge(Box::new(SlotA))),
        ModelSpec::Baseline(name) => {
            Ok(Loaded::RewardModel(Box::new(Baseline::from_name(&name, args.seed)?)))
        }
        ModelSpec::Dir(dir) => load_seqcls(&dir, text, None, args),
        ModelSpec::Hf(repo) => {
            let hub = fetch_model(&repo, &HubOptions::from_env())?;
            load_seqcls(&hub.dir, text, Some(hub.commit), args)
        }
        ModelSpec::Bt(path) => {
            let rm = BtRewardModel::load(
                &path,
                &args.scalar.embedder.clone().unwrap_or_else(default_embedder_dir),
            )
            .map(|m| m.with_spec(text))
            .with_context(|| format!("loading `{text}`"))?;
            note_other_conditions(text, &rm.config().condition, &args.conditions);
            Ok(Loaded::Bt(Box::new(rm)))
        }
        ModelSpec::Pal(path) => {
            let rm = PalRewardModel::load(
                &path,
                &args.scalar.embedder.clone().unwrap_or_else(default_embedder_dir),
            )
            .map(|m| m.with_spec(text))
            .with_context(|| format!("loading `{text}`"))?;
            note_other_conditions(text, &rm.config().condition, &args.conditions);
            Ok(Loaded::Pal(Box::new(rm)))
        }
        ModelSpec::OpenAi { model, base_urls } => {
            let mut chat =
                OpenAiChat::new(&model, base_urls, remote_options(args.remote)?)?.with_spec(text);
            if let Some(extra) = request_extra(args.remote)? {
                chat = chat.with_extra(extra)?;
            }
            let rating = matches!(
                args.recipe.as_deref().map(JudgeRecipe::reader),
                Some(RecipeReader::Rating(_))
            );
            if let (Some(transport), false) = (args.server_logprob, rating) {
                return Ok(Loaded::Judge(Box::new(server_logprob_judge(
                    chat, &model, text, transport, args,
                )?)));
            }
            let cfg = JudgeConfig {
                temperature: args.remote.temperature.unwrap_or(0.0),
                top_p: args.remote.top_p.unwrap_or(1.0),
                max_tokens: args.max_new_tokens,
                seed: args.seed,
                verdict: match args.verdict {
                    VerdictMode::Logprob => VerdictSource::Auto,
                    VerdictMode::Generate => VerdictSource::Text,
                },
            };
            // A judge that reads text only, or rates, sends no log-probability probe of its own:
            // one test request still checks URL, model and key, so a dead or wrong URL stops
            // here, with the same hint as for the other engines, not after a run of errors.
            if cfg.verdict != VerdictSource::Auto || rating {
                chat.probe_logprobs().with_context(|| format!("connecting to `{text}`"))?;
            }
            let reader = match args.recipe.as_deref().map(JudgeRecipe::reader) {
                Some(RecipeReader::Rating(rating)) => {
                    return Ok(Loaded::Judge(Box::new(RatingJudge::new(
                        chat,
                        args.max_new_tokens,
                        *rating,
                    ))))
                }
                Some(RecipeReader::Pairwise(reader)) => reader.clone(),
                None => VerdictReader::ResultLine,
            };
            let judge = OpenAiJudge::new(chat, cfg)
                .with_context(|| format!("connecting to `{text}`"))?
                .with_reader(reader);
            if args.verdict == VerdictMode::Logprob && !judge.uses_logprobs() {
                eprintln!("prbench: `{text}` returns no log-probabilities: verdicts are parsed from the text only (no p_A, no debiased figure)");
            }
            Ok(Loaded::Judge(Box::new(judge)))
        }
        ModelSpec::VllmClassify { model, base_urls } => {
            let mut rm =
                VllmClassify::new(&model, base_urls, remote_options(args.remote)?)?.with_spec(text);
            if let Some(i) = args.scalar.label_index {
                rm = rm.with_label_index(i);
            }
            // As for `openai:` and `reward-server:`: a dead or wrong URL stops here, not after a
            // run of error outcomes.
            rm.probe().with_context(|| format!("connecting to `{text}`"))?;
            Ok(Loaded::RewardModel(Box::new(rm)))
        }
        ModelSpec::Templated { engine, model, base_urls } => {
            let renderer = chat_renderer(text, &model, args.remote.chat_template.as_deref())?;
            let opts = remote_options(args.remote)?;
            let rm: Box<dyn RenderedRewardModel> = match engine {
                TextEngine::Sglang => Box::new(templated(
                    SglangClassify::new(&model, base_urls, renderer, opts)?.with_spec(text),
                    text,
                    args,
                )?),
                TextEngine::Tei => Box::new(templated(
                    TeiPredict::new(&model, base_urls, renderer, opts)?.with_spec(text),
                    text,
                    args,
                )?),
                TextEngine::OpenRlhf => Box::new(templated(
                    OpenRlhfReward::new(&model, base_urls, renderer, opts)?.with_spec(text),
                    text,
                    args,
                )?),
            };
            Ok(Loaded::Rendered(rm))
        }
        ModelSpec::RewardServer(urls) => {
            let rm = RewardServer::new(urls, remote_options(args.remote)?)?.with_spec(text);
            // As for `openai:`: a dead or wrong URL stops here, not after a run of error outcomes.
            rm.probe().with_context(|| format!("connecting to `{text}`"))?;
            Ok(Loaded::RewardModel(Box::new(rm)))
        }
    }
}

/// A `sglang-classify:`/`tei:`/`openrlhf:` model with `--label-index` applied, probed: a dead or
/// wrong URL stops the load (and TEI's label names are read). Under `--preflight` nothing is
/// sent: the preflight shows the rendered text, which needs no server.
fn templated<E: TextEndpoint>(
    mut rm: TemplatedRewardModel<E>,
    text: &str,
    args: &LoadSettings<'_>,
) -> Result<TemplatedRewardModel<E>> {
    if let Some(i) = args.scalar.label_index {
        rm = rm.with_label_index(i)?;
    }
    if !args.preflight {
        rm.probe().with_context(|| format!("connecting to `{text}`"))?;
    }
    Ok(rm)
}

/// The chat template a `sglang-classify:`/`tei:`/`openrlhf:` model's conversations are rendered
/// with: `--chat-template dir:PATH|hf:ORG/NAME[@REV]`, or by default the served model's own
/// (`hf:MODEL` through the hub cache, only its template files). The origin recorded in the
/// settings names the hub commit.
fn chat_renderer(text: &str, model: &str, flag: Option<&str>) -> Result<ChatRenderer> {
    let source = flag.map_or_else(|| format!("hf:{model}"), str::to_string);
    let hint = "give the template with `--chat-template dir:PATH` (a directory holding chat_template.jinja or a tokenizer_config.json with `chat_template`) or `--chat-template hf:ORG/NAME[@REV]`";
    let (dir, origin) = if let Some(path) = source.strip_prefix("dir:").filter(|p| !p.is_empty()) {
        let dir = prbench_models::spec::expand_home(path)
            .map_err(|e| anyhow::anyhow!("--chat-template `{source}`: {e}"))?;
        if !dir.exists() {
            bail!("--chat-template `{source}`: folder `{}` does not exist; {hint}", dir.display());
        }
        if !dir.is_dir() {
            bail!("--chat-template `{source}`: `{}` is a file; `dir:PATH` must be a folder (the model's folder, holding chat_template.jinja or tokenizer_config.json), not the file itself", dir.display());
        }
        (dir, source.clone())
    } else if let Some(repo) = source.strip_prefix("hf:").filter(|r| !r.is_empty()) {
        let opts = HubOptions::from_env();
        let hub = match fetch_chat_template(repo, &opts) {
            Ok(hub) => hub,
            // Getting the files failed (offline and not cached, hub unreachable, no such repo): a
            // network/offline failure, not an invalid spec.
            Err(e @ prbench_models::ModelError::Hub { .. }) => {
                let why = if opts.offline {
                    "HF_HUB_OFFLINE is set and the template is not in the local hub cache"
                } else {
                    "the Hugging Face hub could not be reached, or the repo is not there (offline? hub unreachable?)"
                };
                return Err(anyhow::Error::new(e).context(format!("`{text}` needs the model's chat template to render each conversation (the server takes rendered text), but it could not be fetched from `{source}`: {why}. Pass the template with `--chat-template dir:PATH` (a directory holding chat_template.jinja or a tokenizer_config.json with `chat_template`), or `--chat-template hf:ORG/NAME[@REV]` for a repo in the cache or reachable")));
            }
            Err(e) => return Err(anyhow::Error::new(e).context(format!("`{text}` needs the model's chat template to render each conversation (the server takes rendered text); fetching it from `{source}` failed; {hint}"))),
        };
        (hub.dir, format!("{source} (commit {})", hub.commit))
    } else {
        bail!("--chat-template takes `dir:PATH` or `hf:ORG/NAME[@REV]`; got `{source}`");
    };
    let (template, _) = prbench_models::template_files::load_dir_template(&dir)
        .with_context(|| format!("`{text}` needs a chat template to render each conversation; `{source}` has none usable; {hint}"))?;
    Ok(ChatRenderer::new(template, origin))
}

/// A local judge over `engine` as the verdict mode and the judge recipe ask: prbench's own
/// prompt read by log-probabilities after `Result:` or by generating; a pairwise recipe read by
/// log-probabilities after its `[logprob]` prefix or by generating and its reader; a pointwise
/// recipe by rating each answer.
fn local_judge(engine: GgufEngine, args: &LoadSettings<'_>) -> Result<Box<dyn Judge>> {
    let Some(recipe) = args.recipe.as_deref() else {
        return Ok(match args.verdict {
            VerdictMode::Logprob => Box::new(LogprobJudge::new(engine)),
            VerdictMode::Generate => Box::new(GenerateJudge::new(engine, args.max_new_tokens)),
        });
    };
    Ok(match (recipe.reader(), args.verdict) {
        (RecipeReader::Rating(rating), _) => {
            Box::new(RatingJudge::new(engine, args.max_new_tokens, *rating))
        }
        (RecipeReader::Pairwise(reader), VerdictMode::Generate) => {
            Box::new(GenerateJudge::new(engine, args.max_new_tokens).with_reader(reader.clone()))
        }
        (RecipeReader::Pairwise(reader), VerdictMode::Logprob) => {
            let Some(lp) = recipe.logprob() else {
                bail!(
                    "judge recipe `{}` has no `[logprob]` section, so a local judge cannot read its verdict in one forward pass; add `--verdict generate` (replies are then read with its `{}` reader), or give recipe.toml a `[logprob]` prefix and candidates",
                    recipe.name(),
                    reader.name()
                );
            };
            // A candidate that is not one token of this model's vocabulary would fail every item:
            // one forward pass now says so before the run starts.
            let probe = prbench_models::ChatPrompt {
                messages: vec![prbench_models::ChatMessage::new(prbench_models::Role::User, "Hi")],
                assistant_prefix: lp.prefix.clone(),
            };
            prbench_models::NextTokenScorer::next_token_logprobs(&engine, &probe, &[lp.candidates[0].as_str(), lp.candidates[1].as_str()]).with_context(|| {
                format!("judge recipe `{}`: each `[logprob] candidates` entry must be exactly one token of this model's vocabulary (often with a leading space, e.g. \" A\")", recipe.name())
            })?;
            Box::new(
                LogprobJudge::new(engine).with_verdict_prefix(&lp.prefix, lp.candidates.clone()),
            )
        }
    })
}

/// An `openai:` judge reading its logprob verdict from the server's next-token
/// log-probabilities: after `Result:`, or after a pairwise recipe's `[logprob]` prefix with its
/// candidates (a recipe without one is refused, as for a local judge). The transport is
/// probed now (or forced); the completions transport renders with `--chat-template` when given.
fn server_logprob_judge(
    chat: OpenAiChat,
    model: &str,
    text: &str,
    transport: TransportArg,
    args: &LoadSettings<'_>,
) -> Result<ServerLogprobJudge> {
    let mut cfg = NextTokenConfig { transport: transport.forced(), ..NextTokenConfig::default() };
    if let Some(recipe) = args.recipe.as_deref() {
        let Some(lp) = recipe.logprob() else {
            bail!(
                "judge recipe `{}` has no `[logprob]` section, so `{text}` cannot read its verdict from one token's log-probabilities; add `--verdict generate` (replies are then generated and parsed), or give recipe.toml a `[logprob]` prefix and candidates",
                recipe.name()
            );
        };
        cfg.prefix = lp.prefix.clone();
        cfg.candidates = lp.candidates.clone();
    }
    if let Some(flag) = args.remote.chat_template.as_deref() {
        cfg.template = Some(chat_renderer(text, model, Some(flag))?);
    }
    let judge =
        ServerLogprobJudge::new(chat, cfg).with_context(|| format!("connecting to `{text}`"))?;
    eprintln!(
        "prbench: `{text}`: logprob verdicts through the {} transport{}",
        judge.transport().name(),
        if judge.detected() { " (the first the server offers)" } else { "" }
    );
    Ok(judge)
}

/// The HTTP settings of a remote engine, from the flags.
pub fn remote_options(r: &RemoteArgs) -> Result<RemoteOptions> {
    let timeout = r.connection.timeout.unwrap_or(120.0);
    if !(timeout.is_finite() && timeout > 0.0 && timeout <= 86_400.0) {
        bail!("--timeout is in seconds, more than 0 and at most 86400 (a day); got {timeout}");
    }
    Ok(RemoteOptions {
        concurrency: r.concurrency(),
        timeout: std::time::Duration::from_secs_f64(timeout),
        max_retries: r.connection.max_retries.unwrap_or(6),
        api_key_env: Some(
            r.connection.api_key_env.clone().unwrap_or_else(|| "OPENAI_API_KEY".into()),
        ),
        ..RemoteOptions::default()
    })
}

/// `--request-extra` as a JSON object.
pub fn request_extra(r: &RemoteArgs) -> Result<Option<serde_json::Map<String, serde_json::Value>>> {
    let Some(text) = &r.request_extra else { return Ok(None) };
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(m)) => Ok(Some(m)),
        Ok(other) => bail!(
            "--request-extra must be a JSON object like '{{\"repeat_penalty\":1.0}}'; got {other}"
        ),
        Err(e) => Err(anyhow::Error::new(e).context(
            "--request-extra is not valid JSON; pass an object like '{\"repeat_penalty\":1.0}'",
        )),
    }
}

/// Says, for each condition the run will use other than the one a trained model (`bt:`, `pal:`)
/// was trained under, that the model will read inputs unlike its training data.
fn note_other_conditions(text: &str, trained: &str, conditions: &[Condition]) {
    for c in conditions.iter().filter(|c| c.to_string() != trained) {
        eprintln!(
            "prbench: note: `{text}` was trained under condition `{trained}`; under `{c}` it scores inputs unlike its training data (as an off-the-shelf reward model would)"
        );
    }
}
