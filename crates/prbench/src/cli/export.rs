//! `export` arguments: training data for TRL and OpenRLHF from the benchmark's rendered inputs.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::RemoteArgs;

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
    pub fn library(self) -> prbench_eval::training_export::Format {
        use prbench_eval::training_export::Format;
        match self {
            TrainingExportFormat::TrlReward => Format::TrlReward,
            TrainingExportFormat::OpenrlhfReward => Format::OpenrlhfReward,
            TrainingExportFormat::TrlSftPlanner => Format::TrlSftPlanner,
        }
    }
}

/// `export` arguments. The data and remote flags are export's own fields (not the shared
/// `DataArgs`/`RemoteArgs`) so that `prbench export --help` describes what each does here, and
/// export has no flag it would ignore (an `openai:` planner reads only the connection settings:
/// eval's planner decodes greedily, with no sampling or request extras).
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// Dataset to export from, with preference pairs (and rubric aspects for trl-sft-planner and
    /// `--condition oracle`): the forms `eval --data` takes: a directory (HF layout
    /// `<config>/*.parquet` or `<config>.{parquet,json,jsonl}`), a single file (e.g. one written
    /// by `prbench build` or `prbench retrieve`), `psoups:DIR`, `synthesizeme:DIR[#SPLIT]`,
    /// `prism:DIR` or `hf:ORG/NAME[@REV]`. The default `data/sample` is looked for in the current
    /// folder, then in the source tree prbench was built from (stderr says which).
    #[arg(long, default_value = "data/sample", value_parser = crate::bounds::data_spec)]
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
    /// and trl-sft-planner's input.
    #[arg(long, default_value_t = 10, allow_negative_numbers = true, value_parser = crate::bounds::whole::<usize>(1, 10_000))]
    pub planner_k: usize,
    /// Token budget of each planner reply (`planner` condition).
    #[arg(long, default_value_t = 128, allow_negative_numbers = true, value_parser = crate::bounds::whole::<usize>(1, 32_768))]
    pub planner_max_new_tokens: usize,
    /// Seed of --sample and of the planner's requests (part of their cache key: keep eval's
    /// --seed to reuse its planner replies).
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
    /// `--planner openai:…` only: planner requests in flight at once, over all replicas, 1 to
    /// 4096 [default: 16].
    #[arg(long, allow_negative_numbers = true, value_parser = crate::bounds::whole::<usize>(1, 4096))]
    pub concurrency: Option<usize>,
    /// `--planner openai:…` only: seconds before a planner request is abandoned and retried,
    /// more than 0 and at most 86400 (a day) [default: 120].
    #[arg(long, allow_negative_numbers = true, value_parser = crate::bounds::real(crate::bounds::End::Open(0.0), crate::bounds::End::Closed(86_400.0), "seconds"))]
    pub timeout: Option<f64>,
    /// `--planner openai:…` only: retries of a planner request after a 429, a 5xx, a timeout or
    /// a dropped connection (exponential backoff with jitter, honouring Retry-After) before its
    /// example is left out (counted), 0 to 100 [default: 6].
    #[arg(long, allow_negative_numbers = true, value_parser = crate::bounds::whole::<u32>(0, 100))]
    pub max_retries: Option<u32>,
    /// `--planner openai:…` only: the environment variable holding the planner server's API
    /// key, sent as a Bearer token and never logged or written; unset or empty means no
    /// Authorization header [default: OPENAI_API_KEY].
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// No progress bar (the closing summary of what was written still goes to stderr).
    #[arg(long)]
    pub quiet: bool,
}

impl ExportArgs {
    /// The planner's remote settings as the shared engine loader takes them.
    pub fn remote(&self) -> RemoteArgs {
        RemoteArgs {
            concurrency: self.concurrency,
            timeout: self.timeout,
            max_retries: self.max_retries,
            api_key_env: self.api_key_env.clone(),
            ..RemoteArgs::default()
        }
    }

    /// The remote flags given, by name.
    pub fn remote_given(&self) -> Vec<&'static str> {
        self.remote().given()
    }
}
