//! Command-line types (clap only; no work happens here).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod bon;
mod correlate;
pub use bon::*;
pub use correlate::*;
// Each verb's flags are defined with the library that reads them.
pub use prbench_annotate::flags::*;
pub use prbench_bench::flags::*;
pub use prbench_build::flags::*;
pub use prbench_downstream::serve::flags::ServeRewardArgs;
pub use prbench_engines::evaluate::EvalArgs;
pub use prbench_engines::export::ExportArgs;
pub use prbench_flags::data::DataArgs;
pub use prbench_train::flags::*;

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
    /// The whole study from one plan file (PLAN.toml): reward models and judges on the
    /// benchmarks under their conditions (training the ones the plan trains first), the
    /// Best-of-N and RL legs, and the proxy-gap table (benchmark vs downstream rankings), each
    /// step through the run caches: a rerun makes no model call, a killed study resumes.
    Study(StudyArgs),
}

/// `study` arguments.
#[derive(Args, Debug)]
pub struct StudyArgs {
    /// The plan file (docs/guide/src/study.md; examples/study/*.toml).
    pub plan: PathBuf,
    /// Study folder (default: the plan's `out`, else `runs/study-<plan file name>`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print each step's state (done, cached, pending, changed) and stop: nothing runs.
    #[arg(long)]
    pub status: bool,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
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
    /// Download a named data set from where its authors publish it, check each file's size
    /// and sha256, put it where `--data` reads it, and print the `--data` spec.
    Fetch(FetchArgs),
}

/// `data fetch` arguments.
#[derive(Args, Debug)]
pub struct FetchArgs {
    /// The data set.
    #[arg(value_parser = clap::builder::PossibleValuesParser::new(
        prbench_data::fetch::SOURCES
            .iter()
            .map(|s| clap::builder::PossibleValue::new(s.name).help(s.about)),
    ))]
    pub name: String,
    /// `psoups`: the folder the two files go into [default: data/psoups]. Hub data sets: the
    /// Hugging Face cache directory [default: hf-hub's: HF_HUB_CACHE, else HF_HOME/hub, else
    /// ~/.cache/huggingface/hub], which `--data hf:` then reads when HF_HUB_CACHE names the same
    /// folder.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Base URL of raw GitHub files (`psoups`), for a mirror [default: $PRBENCH_GITHUB_RAW,
    /// else `https://raw.githubusercontent.com`]. The hub's is HF_ENDPOINT.
    #[arg(long, value_name = "URL")]
    pub github_raw: Option<String>,
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
