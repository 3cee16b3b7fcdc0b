//! Command-line types (clap only; no work happens here).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod annotate;
mod bench;
mod bon;
mod build;
mod correlate;
mod export;
mod train;
pub use annotate::*;
pub use bench::*;
pub use bon::*;
pub use build::*;
pub use correlate::*;
pub use export::*;
pub use train::*;
// Model-loading flags are defined with the loader that reads them.
pub use prbench_engines::flags::{RemoteArgs, ScalarRmArgs, VerdictMode};
pub use prbench_flags::data::DataArgs;

/// prbench: does a reward model prefer the answer that fits this user?
#[derive(Parser, Debug)]
#[command(name = "prbench", version = crate::code_version(), about, long_about = None)]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Top-level verbs.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Evaluate a judge or reward model on a benchmark dataset.
    Eval(EvalArgs),
    /// Inspect and validate datasets.
    #[command(subcommand)]
    Data(DataCommand),
    /// Train a reward model (`train bt`: the personalized Bradley-Terry head on MiniLM).
    #[command(subcommand)]
    Train(TrainCommand),
    /// Performance, side by side with a reference engine in the same run.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Inspect or prune the run cache (every score and verdict a model engine returned).
    #[command(subcommand)]
    Cache(CacheCommand),
    /// Rank each example's profile posts by relevance to its question (BM25 or a dense
    /// embedder) and write the dataset, profiles in ranked order, as JSONL.
    Retrieve(RetrieveArgs),
    /// Best-of-N: sample N answers per question, judge them against the hidden rubric, score
    /// them with reward models, and tabulate best-of-k for k = 1, 2, 4, … N.
    #[command(subcommand)]
    Bon(BonCommand),
    /// Rank correlation between benchmark accuracy and a downstream score (BoN or a CSV).
    Correlate(CorrelateArgs),
    /// One self-contained HTML report (leaderboard, plots, item browser, run vs run,
    /// provenance) of run folders, conditioning matrices, Best-of-N folders and correlate
    /// results; it opens from file:// with no network.
    Report(HtmlReportArgs),
    /// The leaderboard of run folders (the report's rows) as Markdown, CSV, JSON or LaTeX.
    Leaderboard(LeaderboardArgs),
    /// Build a benchmark: a generator writes a `chosen` answer told to meet each user's rubric
    /// aspects and a `rejected` one told to avoid them; a judge audits both (1–5 on
    /// factuality, relevance, helpfulness, rubric fit, in both orders); the pairs that differ
    /// only in personal fit are exported in the Hugging Face layout with a dataset card.
    Build(BuildArgs),
    /// Human evaluation of the pairs: a rating page for annotators (`serve`), the ratings
    /// with their true labels (`export`), Krippendorff's alpha (`agreement`) and the
    /// human-evaluation report (`report`).
    #[command(subcommand)]
    Annotate(AnnotateCommand),
    /// Serve a reward model over HTTP for PPO trainers such as verl (PROTOCOL.md §7):
    /// `POST /score`, `POST /score/batch`, `GET /health`. Stops on Ctrl-C or SIGTERM after
    /// answering the requests in flight.
    ServeReward(ServeRewardArgs),
    /// Training data from the benchmark's own rendered inputs: `trl-reward` and
    /// `openrlhf-reward` preference rows under a condition (the user turn eval shows a reward
    /// model), or `trl-sft-planner` pairs (the planner's prompt → the rubric aspects), as JSONL
    /// with a manifest; the leakage guard checks every row.
    Export(ExportArgs),
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
    #[arg(long, default_value_t = 42, allow_negative_numbers = true, value_parser = crate::bounds::seed)]
    pub seed: u64,
    /// Scalar reward model flags.
    #[command(flatten)]
    pub scalar: ScalarRmArgs,
}

/// How the reward server batches, queues and turns scores into rewards.
#[derive(Args, Debug, Clone)]
pub struct ServeTuningArgs {
    /// Most items per model call.
    #[arg(long, default_value_t = 16, allow_negative_numbers = true, value_parser = crate::bounds::whole::<usize>(1, 65_536))]
    pub max_batch: usize,
    /// Milliseconds the server waits for a batch to fill once an item has arrived (0 = never
    /// wait); a lone request waits at most this long.
    #[arg(long, default_value_t = 5, allow_negative_numbers = true, value_parser = crate::bounds::whole::<u64>(0, 60_000))]
    pub batch_wait_ms: u64,
    /// Items that may wait in the queue. A request that does not fit is answered 503 with
    /// `Retry-After: 1`; a batch request with more items than this, 413.
    #[arg(long, default_value_t = 1024, allow_negative_numbers = true, value_parser = crate::bounds::whole::<usize>(1, 1_000_000))]
    pub queue: usize,
    /// Largest request body in bytes (default 1 MiB); larger bodies are answered 413.
    #[arg(long, default_value_t = 1_048_576, allow_negative_numbers = true, value_parser = crate::bounds::whole::<usize>(1, 1 << 30))]
    pub max_body_bytes: usize,
    /// How the raw score becomes the reward: `none` (the reward model's raw score), `sigmoid`
    /// (1 / (1 + e^-score)) or `affine:SCALE,SHIFT` (score × SCALE + SHIFT). Shown by /health.
    #[arg(long, default_value = "none", value_parser = |s: &str| s.parse::<prbench_downstream::serve::Normalize>())]
    pub normalize: prbench_downstream::serve::Normalize,
}

/// `serve-reward` arguments.
#[derive(Args, Debug)]
pub struct ServeRewardArgs {
    /// The model.
    #[command(flatten)]
    pub model: RmModelArgs,
    /// Address to listen on. The server has no authentication: anything but a loopback
    /// address (e.g. `0.0.0.0`) prints a warning.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: std::net::IpAddr,
    /// TCP port; 0 = any free port (the address is printed on stderr either way).
    #[arg(long, default_value_t = 8000, allow_negative_numbers = true, value_parser = crate::bounds::whole::<u16>(0, 65_535))]
    pub port: u16,
    /// Batching, queue, body limit, normalization.
    #[command(flatten)]
    pub serve: ServeTuningArgs,
    /// No request log (one JSON line per request on stderr, without request text); the start
    /// line and errors still print.
    #[arg(long)]
    pub quiet: bool,
    /// Remote engines (`vllm-classify:`, `sglang-classify:`, `tei:`, `openrlhf:`, `reward-server:`).
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// Cache sub-verbs.
#[derive(Subcommand, Debug)]
pub enum CacheCommand {
    /// Entries per model and kind, size on disk.
    Stats(CacheStatsArgs),
    /// Delete entries (by model, by age, or all) and compact the file.
    Prune(CachePruneArgs),
}

/// `cache stats` arguments.
#[derive(Args, Debug)]
pub struct CacheStatsArgs {
    /// The cache file (`prbench eval` uses `<--out>/cache.sqlite`, i.e. runs/cache.sqlite);
    /// read only: a missing file is an error, never created.
    #[arg(long, default_value = "runs/cache.sqlite")]
    pub cache: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `cache prune` arguments. At least one selector is required.
#[derive(Args, Debug)]
pub struct CachePruneArgs {
    /// The cache file.
    #[arg(long, default_value = "runs/cache.sqlite")]
    pub cache: PathBuf,
    /// Entries of models whose spec contains this text (e.g. `openai:gpt-4o`; not empty).
    #[arg(long, value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub model: Option<String>,
    /// Entries not used (written or read) for at least this many days.
    #[arg(long, allow_negative_numbers = true, value_parser = crate::bounds::whole::<u32>(0, 36_500))]
    pub older_than_days: Option<u32>,
    /// Every entry.
    #[arg(long, conflicts_with_all = ["model", "older_than_days"])]
    pub all: bool,
    /// Count what would be deleted, delete nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// Data sub-verbs.
#[derive(Subcommand, Debug)]
pub enum DataCommand {
    /// Load and validate a dataset; print counts or the first error.
    Validate(ValidateArgs),
    /// Per-subset counts and lengths (tokens with --tokenizer, else words).
    Stats(StatsArgs),
}

/// `data validate` arguments.
#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Data selection.
    #[command(flatten)]
    pub data: DataArgs,
    /// The command the rows are meant for: `eval` (benchmark pairs: `chosen` and `rejected`
    /// required, non-empty and different) or `build` (questions: `chosen`/`rejected` optional,
    /// at least one rubric aspect per row; also takes `lampqa:DIR[#SPLIT]`).
    #[arg(long = "for", value_enum, default_value_t = ValidateFor::Eval)]
    pub purpose: ValidateFor,
}

/// What `data validate --for` checks the rows for.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValidateFor {
    /// `prbench eval` (and every other command that reads pairs).
    Eval,
    /// `prbench build`.
    Build,
}

/// `data stats` arguments.
#[derive(Args, Debug)]
pub struct StatsArgs {
    /// Data selection.
    #[command(flatten)]
    pub data: DataArgs,
    /// Count tokens with this model's tokenizer instead of words: `gguf:PATH`, or a Hugging
    /// Face model's tokenizer.json (`dir:PATH`, `hf:ORG/NAME[@REV]`).
    #[arg(long)]
    pub tokenizer: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

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
    /// Profile posts the planner reads (top-ranked), 1 to 10000.
    #[arg(long, default_value_t = 10, allow_negative_numbers = true, value_parser = crate::bounds::whole::<usize>(1, 10_000))]
    pub planner_k: usize,
    /// Token budget of each planner reply.
    #[arg(long, default_value_t = 128, allow_negative_numbers = true, value_parser = crate::bounds::whole::<usize>(1, 32_768))]
    pub planner_max_new_tokens: usize,
    /// Verdict mode. Local (`gguf:`) judges: `logprob` reads the next-token log-probabilities
    /// of A and B after `Result:` (one forward pass, never unparsed); `generate` decodes a
    /// reply and parses its `Result:` line. `openai:` judges always generate and parse (a chat
    /// endpoint cannot continue an assistant turn); with `logprob` they also ask for
    /// log-probabilities (if the server gives them, checked once at load) to add p_A, and
    /// `generate` skips that.
    #[arg(long, value_enum, default_value_t = VerdictMode::Logprob)]
    pub verdict: VerdictMode,
    /// The judge's prompt and verdict format (`gguf:` and `openai:` judges): a built-in recipe
    /// (`default`: prbench's own; `rating`: each answer rated 1-10 alone, the higher wins) or a
    /// folder holding `system.txt`, `user.jinja` and `recipe.toml`
    /// (docs/guide/src/judge-recipes.md).
    #[arg(long, value_name = "NAME|DIR")]
    pub judge_recipe: Option<String>,
    /// Judge each pair in both orders (consistency and position-debiased figures).
    #[arg(long)]
    pub both_orders: bool,
    /// New-token budget of a generated verdict, 1 to 32768: `--verdict generate` and `openai:`
    /// judges (which always generate) [default: 256].
    #[arg(long, allow_negative_numbers = true, value_parser = crate::bounds::whole::<usize>(1, 32_768))]
    pub max_new_tokens: Option<usize>,
    /// Run seed: slot assignment, random baseline, bootstrap.
    #[arg(long, default_value_t = 42, allow_negative_numbers = true, value_parser = crate::bounds::seed)]
    pub seed: u64,
    /// Bootstrap resamples per CI, 100 to 1,000,000 (each keeps 8 bytes per statistic per
    /// core in flight, and time grows with it).
    #[arg(long, default_value_t = 10_000, allow_negative_numbers = true, value_parser = crate::bounds::whole::<usize>(100, prbench_stats::bootstrap::MAX_RESAMPLES as u64))]
    pub bootstrap: usize,
    /// Examples per backend call, 1 to 65536 (default 8; for remote engines 4 × --concurrency,
    /// so the requests in flight stay near the limit).
    #[arg(long, allow_negative_numbers = true, value_parser = crate::bounds::whole::<usize>(1, 65_536))]
    pub batch_size: Option<usize>,
    /// Evaluate only the first N examples of each subset, 1 to 1,000,000 (quick looks; recorded
    /// in the manifest).
    #[arg(long, allow_negative_numbers = true, value_parser = crate::bounds::whole::<usize>(1, 1_000_000))]
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
    #[arg(long, default_value_t = 0.01, allow_negative_numbers = true, value_parser = crate::bounds::real(crate::bounds::End::Closed(0.0), crate::bounds::End::Closed(1.0), "a share of items (0.01 = 1%)"))]
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
}

/// `retrieve` arguments.
#[derive(Args, Debug)]
pub struct RetrieveArgs {
    /// Data selection.
    #[command(flatten)]
    pub data: DataArgs,
    /// `bm25` (k1 = 1.2, b = 0.75, over each user's own posts), `dense` (all-MiniLM-L6-v2 from
    /// the models directory), `dense:DIR` (a BERT embedder directory) or
    /// `dense:hf:ORG/NAME[@REV]` (through the hf-hub cache, e.g. `dense:hf:facebook/contriever-msmarco`).
    #[arg(long, default_value = "bm25")]
    pub retriever: String,
    /// The ranked dataset file to write (`.jsonl`); `--data FILE` loads it back.
    #[arg(long)]
    pub out: PathBuf,
    /// Dense retrievers: the cache embeddings are read from and stored in [default:
    /// `cache.sqlite` next to --out, e.g. runs/cache.sqlite for `--out runs/ranked.jsonl`, the
    /// file `prbench eval` uses by default]. BM25 uses no cache and creates none.
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// Dense retrievers: neither read nor write the embedding cache.
    #[arg(long, conflicts_with = "cache")]
    pub no_cache: bool,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// `report` arguments.
#[derive(Args, Debug)]
pub struct HtmlReportArgs {
    /// Run folders (or their summary.json), `<run-id>-matrix.json` files (their runs are read
    /// from beside them), Best-of-N folders, `prbench correlate` results (the .json its `--out`
    /// writes, or its `--json` saved to a file), or folders holding any of these (e.g. `runs`).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// The HTML file to write. A file already there is replaced only when it is a report
    /// prbench wrote; anything else (a run's summary.json, data, another page) is refused.
    #[arg(long, default_value = "report.html")]
    pub out: PathBuf,
    /// Where a dataset the runs were made on is now, when it moved since (or the runs' manifests
    /// hold a relative path, from before prbench recorded absolute ones). Repeat it for runs on
    /// several datasets: each run takes the --data whose content hash is the one its manifest
    /// records; runs no --data matches read the dataset where their manifest says. Same specs
    /// as `eval --data`.
    #[arg(long)]
    pub data: Vec<String>,
    /// Page title.
    #[arg(long)]
    pub title: Option<String>,
}

/// Output formats of `leaderboard`.
#[derive(ValueEnum, Debug, Clone, Copy)]
pub enum LeaderboardFormat {
    /// Markdown table.
    Md,
    /// CSV, fractions in [0, 1] and CI ends in their own columns.
    Csv,
    /// JSON.
    Json,
    /// LaTeX tabular (booktabs).
    Latex,
}

/// `leaderboard` arguments.
#[derive(Args, Debug)]
pub struct LeaderboardArgs {
    /// Run folders, matrices or folders holding them (as for `report`).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = LeaderboardFormat::Md)]
    pub format: LeaderboardFormat,
    /// Write to this file instead of stdout: a new file, or a leaderboard prbench wrote before
    /// (any other file is refused, so a mistyped path destroys nothing).
    #[arg(long)]
    pub out: Option<PathBuf>,
}
