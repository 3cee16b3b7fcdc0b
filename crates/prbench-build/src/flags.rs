//! The flags of `prbench build`, as a clap group: the binary parses them and [`crate::front`]
//! does the work. The data flags are [`prbench_flags::data::DataArgs`], the remote engines'
//! [`prbench_engines::flags::RemoteArgs`]; every numeric flag has a bounded parser from
//! [`prbench_flags::bounds`].

use std::path::PathBuf;

use clap::Args;

use prbench_engines::flags::{GenBatchArgs, RemoteArgs};
use prbench_flags::bounds::{real, whole, End};
use prbench_flags::data::DataArgs;

/// `build` arguments: generate chosen/rejected pairs, audit them, filter, export.
#[derive(Args, Debug)]
pub struct BuildArgs {
    /// Input rows: any `--data` spec of eval (rows without `chosen`/`rejected` are fine), or
    /// `lampqa:DIR[#SPLIT]` for LaMP-QA's Hugging Face layout (default split `test`), or
    /// `psoups:DIR` (the persona becomes the single rubric aspect).
    #[command(flatten)]
    pub data: DataArgs,
    /// The generator of both answers: `gguf:PATH` (default: the Qwen2.5-Coder-1.5B GGUF of
    /// scripts/setup.sh) or `openai:MODEL[@BASE_URL]`.
    #[arg(long)]
    pub generator: Option<String>,
    /// The audit judge, any generator spec; default: the generator.
    #[arg(long)]
    pub judge: Option<String>,
    /// Skip the audit (help: `prbench_build::settings::SKIP_AUDIT_RULE`, the card's and the
    /// report's words).
    #[arg(long, help = format!("Skip the audit: {}; the dataset card says so", crate::settings::SKIP_AUDIT_RULE))]
    pub skip_audit: bool,
    /// The output folder (new, empty, or a previous build's, which is then resumed/rebuilt).
    #[arg(long)]
    pub out: PathBuf,
    /// The run cache (every generation and audit reply): a killed build resumes from it.
    /// Default: `cache.sqlite` beside the --out folder (in its parent, e.g. builds/cache.sqlite
    /// for `--out builds/b1`), shared by the builds there; a folder built before this rule keeps
    /// using its own `build/cache.sqlite` while that file is there.
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// Neither read nor write the cache.
    #[arg(long)]
    pub no_cache: bool,
    /// At most this many examples per subset (dataset order).
    #[arg(long, allow_negative_numbers = true, value_parser = whole::<usize>(1, 10_000_000))]
    pub limit: Option<usize>,
    /// Run seed; each answer's sampling seed is sha256(seed, example id, side).
    #[arg(long, default_value_t = 42, allow_negative_numbers = true, value_parser = prbench_flags::bounds::seed)]
    pub seed: u64,
    /// Profile posts shown to the generator (top-k by the ranking, as for `profile:k`).
    #[arg(long, default_value_t = 10, allow_negative_numbers = true, value_parser = whole::<usize>(0, 10_000))]
    pub k_posts: usize,
    /// How to rank profile posts: `bm25`, `dense[:DIR|:hf:ORG/NAME]` (default: the ranked
    /// dataset's own order, else bm25).
    #[arg(long)]
    pub retriever: Option<String>,
    /// Word limit told to the generator and checked by the filter (the paper's is 100).
    #[arg(long, default_value_t = 100, allow_negative_numbers = true, value_parser = whole::<usize>(1, 100_000))]
    pub max_words: usize,
    /// New-token budget of each answer; an answer that uses it up is truncated, never exported.
    #[arg(long, default_value_t = 256, allow_negative_numbers = true, value_parser = whole::<usize>(1, 32_768))]
    pub max_new_tokens: usize,
    /// New-token budget of each audit reply.
    #[arg(long, default_value_t = 400, allow_negative_numbers = true, value_parser = whole::<usize>(1, 32_768))]
    pub audit_max_new_tokens: usize,
    /// Keep a pair only if chosen's rubric fit minus rejected's (audit, 1–5, mean of both
    /// orders) is at least this.
    #[arg(long, default_value_t = 2.0, allow_negative_numbers = true, value_parser = real(End::Closed(-4.0), End::Closed(4.0), "a score gap"))]
    pub min_fit_gap: f64,
    /// Keep a pair only if chosen and rejected differ by at most this on each of
    /// factuality, relevance and helpfulness.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true, value_parser = real(End::Closed(0.0), End::Closed(4.0), "a score gap"))]
    pub max_quality_gap: f64,
    /// Keep a pair only if the longer answer has at most this many times the words of the
    /// shorter.
    #[arg(long, default_value_t = 1.5, allow_negative_numbers = true, value_parser = real(End::Closed(1.0), End::Closed(1000.0), "a length ratio"))]
    pub max_length_ratio: f64,
    /// Requests per backend call (progress advances per call).
    #[arg(long, default_value_t = 8, allow_negative_numbers = true, value_parser = whole::<usize>(1, 65_536))]
    pub batch_size: usize,
    /// Remote engines.
    #[command(flatten)]
    pub remote: RemoteArgs,
    /// Sequences a `gguf:` generator or audit judge decodes together.
    #[command(flatten)]
    pub gen: GenBatchArgs,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}
