//! `export` arguments: training data for TRL and OpenRLHF from the benchmark's rendered inputs.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::{DataArgs, RemoteArgs};

/// Row formats of `export` (see `prbench_eval::training_export`).
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrainingExportFormat {
    /// TRL RewardTrainer: `chosen` and `rejected` as [user turn, answer] message lists.
    TrlReward,
    /// OpenRLHF train_rm: `prompt` ([user turn]), `chosen` and `rejected` ([answer]) message
    /// lists, for `--data.apply_chat_template --data.prompt_key prompt`.
    OpenrlhfReward,
    /// TRL SFTTrainer for a planner: `prompt` (the planner's system + user turns, question and
    /// top --planner-k posts), `completion` (the rubric aspect titles as a `- ` list).
    TrlSftPlanner,
}

impl TrainingExportFormat {
    /// The library's format.
    pub fn library(self) -> prbench_eval::training_export::Format {
        use prbench_eval::training_export::Format;
        match self {
            TrainingExportFormat::TrlReward => Format::TrlReward,
            TrainingExportFormat::OpenrlhfReward => Format::OpenrlhfReward,
            TrainingExportFormat::TrlSftPlanner => Format::TrlSftPlanner,
        }
    }
}

/// `export` arguments.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// Data selection.
    #[command(flatten)]
    pub data: DataArgs,
    /// Row format.
    #[arg(long, value_enum)]
    pub format: TrainingExportFormat,
    /// Reward formats: the condition the user turn is rendered under, exactly as `eval`
    /// renders it for a pointwise reward model: `none` (default), `profile` / `profile:K`,
    /// `planner` (runs the planner, through the cache, as eval does) or `oracle` (the true
    /// rubric: an upper bound). Not for trl-sft-planner, whose input is the planner's prompt.
    #[arg(long)]
    pub condition: Option<String>,
    /// The JSONL file to write; its manifest goes to FILE.manifest.json beside it. Neither is
    /// ever overwritten.
    #[arg(long)]
    pub out: PathBuf,
    /// How `profile`, `planner` and trl-sft-planner rank the profile posts: `bm25` (default),
    /// `dense`, `dense:DIR` or `dense:hf:ORG/NAME[@REV]`; a dataset file written by
    /// `prbench retrieve` keeps its own order unless this is given (as in `eval`).
    #[arg(long)]
    pub retriever: Option<String>,
    /// The `planner` condition's generator: `gguf:PATH` or `openai:MODEL[@BASE_URL]` (default:
    /// the SmolLM2-135M-Instruct GGUF, as in `eval`).
    #[arg(long)]
    pub planner: Option<String>,
    /// Profile posts a planner prompt shows (top-ranked), 1 to 10000: the `planner` condition
    /// and trl-sft-planner's input.
    #[arg(long, default_value_t = 10, allow_negative_numbers = true, value_parser = crate::bounds::whole::<usize>(1, 10_000))]
    pub planner_k: usize,
    /// Token budget of each planner reply (`planner` condition).
    #[arg(long, default_value_t = 128, allow_negative_numbers = true, value_parser = crate::bounds::whole::<usize>(1, 32_768))]
    pub planner_max_new_tokens: usize,
    /// Seed of the planner's sampling (as `eval --seed`) and of --sample.
    #[arg(long, default_value_t = 42, allow_negative_numbers = true, value_parser = crate::bounds::seed)]
    pub seed: u64,
    /// Export only the first N examples of each subset, 1 to 1,000,000.
    #[arg(long, allow_negative_numbers = true, value_parser = crate::bounds::whole::<usize>(1, 1_000_000))]
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
    /// Remote engines (an `openai:` planner).
    #[command(flatten)]
    pub remote: RemoteArgs,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}
