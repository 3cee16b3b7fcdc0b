//! What each Best-of-N step is asked to do: the options of [`super::stages`], one struct per
//! step. They are also the `prbench bon` flags (clap argument groups, as the model-loading flags
//! of `prbench_engines::flags` are), so a flag and the option it sets are one definition.
//! Values a caller may leave out are `Option`s; a `None` takes the default the field names.

use std::path::PathBuf;

use clap::Args;
use prbench_engines::flags::{GenBatchArgs, RemoteArgs, ScalarRmArgs, VerdictMode};
use prbench_flags::bounds::{seed, whole};
use prbench_flags::data::DataArgs;

/// The cache flags shared by the BoN verbs.
#[derive(Args, Debug, Clone, Default)]
pub struct CacheOptions {
    /// The run cache (policy samples, rubric judgements, scores): a killed run resumes from it.
    /// Default: `cache.sqlite` next to the BoN folder (in its parent folder), so BoN folders
    /// side by side share one cache, as eval's run folders share `<--out>/cache.sqlite`.
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// Neither read nor write the cache.
    #[arg(long)]
    pub no_cache: bool,
}

/// The flags every model-running BoN stage (`sample`, `judge`, `score`) takes.
#[derive(Args, Debug, Clone, Default)]
pub struct StageOptions {
    /// Cache.
    #[command(flatten)]
    pub cache: CacheOptions,
    /// Remote engines.
    #[command(flatten)]
    pub remote: RemoteArgs,
    /// Sequences a `gguf:` policy or judge decodes together.
    #[command(flatten)]
    pub gen: GenBatchArgs,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// `bon sample` arguments.
#[derive(Args, Debug, Clone)]
pub struct SampleOptions {
    /// Data selection.
    #[command(flatten)]
    pub data: DataArgs,
    /// The new BoN folder (must not hold samples yet).
    #[arg(long)]
    pub out: PathBuf,
    /// The policy: `gguf:PATH` (default: the SmolLM2 GGUF) or `openai:MODEL[@BASE_URL]`.
    #[arg(long)]
    pub policy: Option<String>,
    /// Samples per question (N).
    #[arg(long, default_value_t = 16, allow_negative_numbers = true, value_parser = whole::<usize>(1, 256))]
    pub n: usize,
    /// Profile posts in the policy's prompt (top-k by the ranking).
    #[arg(long, default_value_t = 10, allow_negative_numbers = true, value_parser = whole::<usize>(0, 10_000))]
    pub k_posts: usize,
    /// New-token budget per sample.
    #[arg(long, default_value_t = 512, allow_negative_numbers = true, value_parser = whole::<usize>(1, 32_768))]
    pub max_new_tokens: usize,
    /// Run seed; sample i of example e is seeded by sha256(seed, e, i).
    #[arg(long, default_value_t = 42, allow_negative_numbers = true, value_parser = seed)]
    pub seed: u64,
    /// At most this many examples per subset (dataset order).
    #[arg(long, allow_negative_numbers = true, value_parser = whole::<usize>(1, 1_000_000))]
    pub limit: Option<usize>,
    /// Keep only the first example of each question text (P-Soups asks one question of
    /// several users).
    #[arg(long)]
    pub distinct_questions: bool,
    /// How to rank profile posts: `bm25`, `dense[:DIR|:hf:ORG/NAME]` (default: the ranked
    /// dataset's own order, else bm25).
    #[arg(long)]
    pub retriever: Option<String>,
    /// Requests per generator call.
    #[arg(long, default_value_t = 8, allow_negative_numbers = true, value_parser = whole::<usize>(1, 65_536))]
    pub batch_size: usize,
    /// Cache, remote engines, progress.
    #[command(flatten)]
    pub stage: StageOptions,
}

/// `bon judge` arguments.
#[derive(Args, Debug, Clone)]
pub struct JudgeOptions {
    /// The BoN folder.
    #[arg(long)]
    pub samples: PathBuf,
    /// The dataset the samples were drawn from (default: the one in the folder's manifest,
    /// checked by hash).
    #[arg(long)]
    pub data: Option<String>,
    /// The rubric judge: `gguf:PATH` (default: the SmolLM2 GGUF) or `openai:MODEL[@BASE_URL]`.
    #[arg(long)]
    pub judge: Option<String>,
    /// How the rubric judge scores each hidden rubric aspect's coverage, 0 (absent), 1 (partly)
    /// or 2 (well); an answer's score is the mean over aspects. `logprob`: one prompt per aspect
    /// ending in `Score: `, the most probable of the next tokens 0/1/2 (GGUF only; never
    /// unparsed). `generate`: one greedy reply listing every aspect's 0/1/2 score, read strictly
    /// (not exactly one score per aspect: unparsed and counted, never 0).
    #[arg(long, value_enum, hide_possible_values = true, default_value_t = VerdictMode::Logprob)]
    pub mode: VerdictMode,
    /// New-token budget of a `generate` reply.
    #[arg(long, default_value_t = 64, allow_negative_numbers = true, value_parser = whole::<usize>(1, 32_768))]
    pub max_new_tokens: usize,
    /// File name for the judgements (default: from the judge spec).
    #[arg(long)]
    pub name: Option<String>,
    /// Cache, remote engines, progress.
    #[command(flatten)]
    pub stage: StageOptions,
}

/// `bon score` arguments.
#[derive(Args, Debug, Clone)]
pub struct ScoreOptions {
    /// The BoN folder.
    #[arg(long)]
    pub samples: PathBuf,
    /// The dataset the samples were drawn from (default: the one in the folder's manifest).
    #[arg(long)]
    pub data: Option<String>,
    /// The reward model under test (any `eval` spec; a `gguf:` or `openai:` judge rates each
    /// answer on 1–9 through our rating prompt).
    #[arg(long)]
    pub model: String,
    /// What the reward model sees besides question and answer: `none`, `profile:k`, `oracle`.
    #[arg(long, default_value = "none")]
    pub condition: String,
    /// How to rank profile posts under `profile:k` (as for `eval`).
    #[arg(long)]
    pub retriever: Option<String>,
    /// How a `gguf:` or `openai:` judge rates each answer on 1–9 through our rating prompt:
    /// `logprob` = the expected rating under the next-token probabilities of 1…9 after
    /// `Rating: ` (GGUF only; one forward pass, never unparsed); `generate` = one greedy reply
    /// holding exactly one `Rating: <1-9>` (anything else is that item's error). Reward models
    /// give their own score.
    #[arg(long, value_enum, hide_possible_values = true, default_value_t = VerdictMode::Logprob)]
    pub mode: VerdictMode,
    /// New-token budget of a `generate` rating.
    #[arg(long, default_value_t = 32, allow_negative_numbers = true, value_parser = whole::<usize>(1, 32_768))]
    pub max_new_tokens: usize,
    /// File name for the scores (default: from the model spec).
    #[arg(long)]
    pub name: Option<String>,
    /// Samples per reward-model call.
    #[arg(long, default_value_t = 16, allow_negative_numbers = true, value_parser = whole::<usize>(1, 65_536))]
    pub batch_size: usize,
    /// Run seed (seeded baselines).
    #[arg(long, default_value_t = 42, allow_negative_numbers = true, value_parser = seed)]
    pub seed: u64,
    /// Scalar reward model flags.
    #[command(flatten)]
    pub scalar: ScalarRmArgs,
    /// Cache, remote engines, progress.
    #[command(flatten)]
    pub stage: StageOptions,
}

/// `bon report` arguments.
#[derive(Args, Debug, Clone)]
pub struct ReportOptions {
    /// The BoN folder.
    #[arg(long)]
    pub samples: PathBuf,
    /// The judgements to use (their file name); default: the only one present.
    #[arg(long)]
    pub judge: Option<String>,
    /// The k values (comma-separated, each 1..=N); default 1, 2, 4, … N.
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true, value_parser = whole::<usize>(1, 256))]
    pub k: Vec<usize>,
    /// Print the table as JSON instead of markdown.
    #[arg(long)]
    pub json: bool,
}
