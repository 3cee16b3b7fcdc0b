//! The flags every front-end that loads a model shares, as clap argument groups: the scalar
//! reward model's ([`ScalarRmArgs`]), the remote engines' ([`RemoteArgs`]) and a judge's verdict
//! mode ([`VerdictMode`]). The connection flags of a remote server ([`ConnectionArgs`]) are one
//! group, flattened into [`RemoteArgs`] and into `export`'s flags, each worded for its command
//! by a [`ConnectionWording`]. Every value is optional, so a flag that was given can be told
//! from one that was not; the defaults are in the accessors.

use std::path::PathBuf;

use clap::builder::TypedValueParser as _;
use clap::{Args, ValueEnum};
use prbench_models::spec::ModelSpec;
use prbench_models::RewardModel;

use crate::load::{load_model, not_pointwise, LoadSettings};

/// Flags of scalar reward models (sequence classifiers, BT heads), shared by every command that
/// loads one (`eval`, `bon score`, `serve-reward`, `bench serve`).
#[derive(Args, Debug, Clone, Default)]
pub struct ScalarRmArgs {
    /// Scalar reward models with a multi-label head: the logit to read (0-based).
    #[arg(long, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<usize>(0, 65_535))]
    pub label_index: Option<usize>,
    /// Scalar reward models: token limit per input (default: the model's own); longer inputs
    /// lose context from the left, never the answer, and are counted as truncated.
    #[arg(long, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<usize>(1, 1_048_576))]
    pub max_length: Option<usize>,
    /// Sequence-classification models (`hf:`, `dir:`): sequences per forward pass (sorted by
    /// length), 1 to 4096 [default: 8].
    #[arg(long, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<usize>(1, 4096))]
    pub rm_batch: Option<usize>,
    /// `bt:` and `pal:` models: the MiniLM embedder directory (default: the one
    /// scripts/fetch-models.sh caches); it must be the embedder the model was trained on
    /// (checked by hash).
    #[arg(long)]
    pub embedder: Option<PathBuf>,
}

impl ScalarRmArgs {
    /// `--rm-batch`, or its default 8.
    pub fn rm_batch(&self) -> usize {
        self.rm_batch.unwrap_or(8)
    }
}

/// How a local (`gguf:`) generator decodes: how many sequences one llama.cpp step decodes
/// together. One definition for every command that generates text (`build`, `bon sample`,
/// `bon judge`, `bon score` with a rating recipe, `eval` with a generating judge or a `gguf:`
/// planner, `export`'s planner).
#[derive(Args, Debug, Clone, Copy, Default)]
pub struct GenBatchArgs {
    /// `gguf:` generators: sequences decoded together, each on its own KV stream with its own
    /// seeded sampler (continuous batching), 1 to 64 (1: one at a time) [default: 4]. Only requests
    /// of one call share steps, so at most --batch-size. On Q4_1 weights (SmolLM2) the outputs
    /// are the same whatever N; on Q4_K weights they are the same up to 4 but not at 8
    /// (docs/perf.md), so N is part of the generator's identity: the cache key and the manifest.
    #[arg(long, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<usize>(1, 64))]
    pub gen_batch: Option<usize>,
}

impl GenBatchArgs {
    /// `--gen-batch`, or its default [`prbench_llm::DEFAULT_GEN_BATCH`].
    pub fn gen_batch(&self) -> usize {
        self.gen_batch.unwrap_or(prbench_llm::DEFAULT_GEN_BATCH)
    }
}

/// How remote engines (`openai:`, `vllm-classify:`, `sglang-classify:`, `tei:`, `openrlhf:`,
/// `reward-server:`) are driven. Every field
/// is optional so that giving one to a local engine is an error rather than silently ignored;
/// the defaults are in the accessors.
#[derive(Args, Debug, Clone, Default)]
pub struct RemoteArgs {
    /// The connection to the servers (concurrency, timeout, retries, API key).
    #[command(flatten)]
    pub connection: ConnectionArgs<EngineWording>,
    /// Sampling temperature in [0, 2] (the OpenAI API's range): `openai:` judges default to 0 (greedy);
    /// `bon sample` uses it for the policy (any engine) and defaults to 1.0; `build` for the
    /// answers (any engine; the audit is greedy) and defaults to 0.7.
    #[arg(long, allow_negative_numbers = true, value_parser = prbench_flags::bounds::real(prbench_flags::bounds::End::Closed(0.0), prbench_flags::bounds::End::Closed(2.0), "a sampling temperature").map(|v| v as f32))]
    pub temperature: Option<f32>,
    /// Nucleus sampling mass in (0, 1]: `openai:` judges default to 1; `bon sample` uses it for the
    /// policy (any engine) and defaults to 0.9; `build` for the answers, default 0.95.
    #[arg(long, allow_negative_numbers = true, value_parser = prbench_flags::bounds::real(prbench_flags::bounds::End::Open(0.0), prbench_flags::bounds::End::Closed(1.0), "a probability mass").map(|v| v as f32))]
    pub top_p: Option<f32>,
    /// `openai:` judges: extra JSON fields merged into every request body, e.g.
    /// `'{"repeat_penalty":1.0}'` for llama.cpp servers (recorded in the manifest and the cache key).
    #[arg(long)]
    pub request_extra: Option<String>,
    /// `sglang-classify:`, `tei:` and `openrlhf:` reward models (servers that take rendered
    /// text): the chat template prbench renders each conversation with, `dir:PATH` (a model
    /// directory's chat_template.jinja, else the `chat_template` of its tokenizer_config.json)
    /// or `hf:ORG/NAME[@REV]` (those files only, through the hub cache). Default: `hf:MODEL`,
    /// the served model's own. Its hash is part of the model identity and cache key. Also the
    /// template an `openai:` judge with `--verdict logprob` renders for the `completions`
    /// transport (default there: the one the server reports at `GET /props`).
    #[arg(long)]
    pub chat_template: Option<String>,
}

impl RemoteArgs {
    /// Requests in flight.
    pub fn concurrency(&self) -> usize {
        self.connection.concurrency.unwrap_or(16)
    }

    /// The flags given, by name (for "applies to remote engines only" errors).
    pub fn given(&self) -> Vec<&'static str> {
        let mut v = self.connection.given();
        for (name, set) in [
            ("--temperature", self.temperature.is_some()),
            ("--top-p", self.top_p.is_some()),
            ("--request-extra", self.request_extra.is_some()),
            ("--chat-template", self.chat_template.is_some()),
        ] {
            if set {
                v.push(name);
            }
        }
        v
    }
}

/// The wording of the connection flags ([`ConnectionArgs`]) for the command that flattens
/// them: each text is one line of `--help`, without a closing period.
pub trait ConnectionWording {
    /// `--concurrency`.
    const CONCURRENCY: &'static str;
    /// `--timeout`.
    const TIMEOUT: &'static str;
    /// `--max-retries`.
    const MAX_RETRIES: &'static str;
    /// `--api-key-env`.
    const API_KEY_ENV: &'static str;
}

/// The wording of [`RemoteArgs`]: the connection of every remote engine.
#[derive(Debug, Clone, Copy, Default)]
pub struct EngineWording;

impl ConnectionWording for EngineWording {
    const CONCURRENCY: &'static str =
        "Remote engines: requests in flight at once, over all replicas, 1 to 4096 [default: 16]";
    const TIMEOUT: &'static str = "Remote engines: seconds before a request is abandoned and retried, more than 0 and at most 86400 (a day) [default: 120]";
    const MAX_RETRIES: &'static str = "Remote engines: retries after a 429, a 5xx, a timeout or a dropped connection (with exponential backoff and jitter, honouring Retry-After) before the item is an error, 0 to 100 [default: 6]";
    const API_KEY_ENV: &'static str = "Remote engines: the environment variable holding the API key, sent as a Bearer token and never logged or written; unset or empty means no Authorization header [default: OPENAI_API_KEY]";
}

/// How prbench connects to a remote server: requests in flight, timeout, retries and the API
/// key's variable, one definition (names, bounds, defaults) for every command that takes them.
/// `W` words their help for the command ([`EngineWording`] in [`RemoteArgs`]; `export` words
/// them for its planner). Every value is optional, so a flag that was given can be told from
/// one that was not; the defaults are applied by [`crate::load::remote_options`].
#[derive(Args, Debug, Clone, Default)]
pub struct ConnectionArgs<W: ConnectionWording> {
    /// `--concurrency` (help: [`ConnectionWording::CONCURRENCY`]).
    #[arg(long, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<usize>(1, 4096), help = W::CONCURRENCY)]
    pub concurrency: Option<usize>,
    /// `--timeout` in seconds (help: [`ConnectionWording::TIMEOUT`]).
    #[arg(long, allow_negative_numbers = true, value_parser = prbench_flags::bounds::real(prbench_flags::bounds::End::Open(0.0), prbench_flags::bounds::End::Closed(86_400.0), "seconds"), help = W::TIMEOUT)]
    pub timeout: Option<f64>,
    /// `--max-retries` (help: [`ConnectionWording::MAX_RETRIES`]).
    #[arg(long, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<u32>(0, 100), help = W::MAX_RETRIES)]
    pub max_retries: Option<u32>,
    /// `--api-key-env` (help: [`ConnectionWording::API_KEY_ENV`]).
    #[arg(long, help = W::API_KEY_ENV)]
    pub api_key_env: Option<String>,
    #[arg(skip)]
    wording: std::marker::PhantomData<W>,
}

impl<W: ConnectionWording> ConnectionArgs<W> {
    /// The same values under another wording (the help differs, never the values).
    pub fn reworded<V: ConnectionWording>(&self) -> ConnectionArgs<V> {
        ConnectionArgs {
            concurrency: self.concurrency,
            timeout: self.timeout,
            max_retries: self.max_retries,
            api_key_env: self.api_key_env.clone(),
            wording: std::marker::PhantomData,
        }
    }

    /// The flags given, by name.
    pub fn given(&self) -> Vec<&'static str> {
        [
            ("--concurrency", self.concurrency.is_some()),
            ("--timeout", self.timeout.is_some()),
            ("--max-retries", self.max_retries.is_some()),
            ("--api-key-env", self.api_key_env.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
        .collect()
    }
}

/// How a local judge gives its verdict.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerdictMode {
    /// Next-token log-probabilities of A vs B after `Result:` (one forward pass; unparsed only
    /// when a server's top log-probabilities lack a letter).
    Logprob,
    /// Greedy generation of a short reasoning ending in `Result: A|B`, then parsing.
    Generate,
}

/// How an `openai:` judge's logprob verdict reaches the next-token log-probabilities
/// (`--logprob-transport`; [`prbench_remote::next_token`]).
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportArg {
    /// The chat prefill if the server offers it, else the completions endpoint.
    Auto,
    /// The chat endpoint continuing an assistant message that holds the verdict prefix.
    ChatPrefill,
    /// The completions endpoint with the prompt rendered by prbench.
    Completions,
}

impl TransportArg {
    /// The transport forced, `None` for `auto`.
    pub fn forced(self) -> Option<prbench_remote::LogprobTransport> {
        match self {
            TransportArg::Auto => None,
            TransportArg::ChatPrefill => Some(prbench_remote::LogprobTransport::ChatPrefill),
            TransportArg::Completions => Some(prbench_remote::LogprobTransport::Completions),
        }
    }
}

/// The reward model a server loads (`serve-reward`, `bench serve`).
#[derive(Args, Debug, Clone)]
pub struct RmModelArgs {
    /// Reward model to serve: `hf:ORG/NAME[@REV]` or `dir:PATH` (sequence-classification
    /// reward model in the Hugging Face layout), `bt:PATH` (a head from `prbench train bt`),
    /// `pal:PATH` (a PAL model from `prbench train pal`; users it was not trained on are
    /// refused), `vllm-classify:MODEL@BASE_URL`, `sglang-classify:MODEL@BASE_URL`,
    /// `tei:MODEL@BASE_URL`, `openrlhf:MODEL@BASE_URL`, `reward-server:URL`, or `baseline:NAME`
    /// (`longer`, `shorter`, `random`, `profile-overlap`). Pairwise judges (`gguf:`, `openai:`,
    /// `baseline:slot-a`) give no reward for a single answer and are refused.
    #[arg(long)]
    pub model: String,
    /// Seed of `baseline:random` (each draw also depends on the request's `id`).
    #[arg(long, default_value_t = 42, allow_negative_numbers = true, value_parser = prbench_flags::bounds::seed)]
    pub seed: u64,
    /// Scalar reward model flags.
    #[command(flatten)]
    pub scalar: ScalarRmArgs,
}

impl RmModelArgs {
    /// Loads `--model` as a pointwise reward model (judges are refused before anything loads).
    ///
    /// # Errors
    /// A pairwise judge, a remote or sampling flag that does not apply to the spec, or the
    /// loader's error.
    pub fn load(&self, remote: &RemoteArgs) -> anyhow::Result<Box<dyn RewardModel>> {
        let m = self;
        let spec = ModelSpec::parse(&m.model)?;
        if spec.is_judge() {
            return Err(not_pointwise(&m.model));
        }
        if !spec.is_remote() {
            if let Some(flag) = remote.given().first() {
                anyhow::bail!(
                    "{flag} applies to remote engines (`vllm-classify:`, `sglang-classify:`, `tei:`, `openrlhf:`, `reward-server:`), not `{}`",
                    m.model
                );
            }
        }
        for (flag, given) in [
            ("--temperature", remote.temperature.is_some()),
            ("--top-p", remote.top_p.is_some()),
            ("--request-extra", remote.request_extra.is_some()),
        ] {
            if given {
                anyhow::bail!(
                    "{flag} applies to `openai:` judges only, which cannot be served as reward models"
                );
            }
        }
        load_model(
            &spec,
            &m.model,
            &LoadSettings::for_reward_model(m.seed, Vec::new(), remote, &m.scalar),
        )?
        .into_reward_model()
    }
}
