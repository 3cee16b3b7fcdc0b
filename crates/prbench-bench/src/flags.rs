//! The `prbench bench` flags: one clap group per sub-verb ([`BenchCommand`]), defined beside the
//! benches that read them. [`crate::command::run`] turns them into each bench's options; the
//! binary only parses them and hands them over. `bench serve` flattens the reward server's own
//! groups ([`RmModelArgs`], [`ServeTuningArgs`]), so its model and server flags are
//! `serve-reward`'s, word for word.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use prbench_downstream::serve::flags::ServeTuningArgs;
use prbench_engines::flags::RmModelArgs;
use prbench_flags::bounds::{real, seed, whole, End};
use prbench_flags::data::data_spec;

/// `bench serve` arguments.
#[derive(Args, Debug)]
pub struct BenchServeArgs {
    /// The model.
    #[command(flatten)]
    pub model: RmModelArgs,
    /// Server batching, queue, body limit, normalization.
    #[command(flatten)]
    pub serve: ServeTuningArgs,
    /// `POST /score` requests per wave.
    #[arg(long, default_value_t = 1000, allow_negative_numbers = true, value_parser = whole::<usize>(1, 1_000_000))]
    pub requests: usize,
    /// Requests in flight at once (each holds a connection; mind `ulimit -n`).
    #[arg(long, default_value_t = 1000, allow_negative_numbers = true, value_parser = whole::<usize>(1, 10_000))]
    pub concurrency: usize,
    /// Identical waves, one after the other (memory after the second shows whether it grows).
    #[arg(long, default_value_t = 2, allow_negative_numbers = true, value_parser = whole::<usize>(1, 100))]
    pub waves: usize,
    /// Seconds before a request without an answer counts as dropped.
    #[arg(long, default_value_t = 300, allow_negative_numbers = true, value_parser = whole::<u64>(1, 86_400))]
    pub timeout: u64,
    /// Dataset whose examples fill the requests (cycled; each question is numbered, so no two
    /// bodies are equal).
    #[arg(long, default_value = "data/sample", value_parser = data_spec)]
    pub data: String,
    /// Profile posts per request, rendered as the `profile:k` condition renders them (in the
    /// dataset's order).
    #[arg(long, default_value_t = 10, allow_negative_numbers = true, value_parser = whole::<usize>(0, 10_000))]
    pub posts: usize,
    /// Print one JSON line instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// `bench annotate` arguments.
#[derive(Args, Debug)]
pub struct BenchAnnotateArgs {
    /// Simulated annotators submitting at once.
    #[arg(long, default_value_t = 50, allow_negative_numbers = true, value_parser = whole::<usize>(1, 10_000))]
    pub annotators: usize,
    /// Seconds they submit for.
    #[arg(long, default_value_t = 60.0, allow_negative_numbers = true, value_parser = real(End::Open(0.0), End::Closed(86_400.0), "a duration in seconds"))]
    pub seconds: f64,
    /// Items in the store (each rated by 2 annotators).
    #[arg(long, default_value_t = 500, allow_negative_numbers = true, value_parser = whole::<usize>(1, 1_000_000))]
    pub items: usize,
    /// Seconds of the reference run (the same saves straight into the store, no HTTP); 0
    /// skips it.
    #[arg(long, default_value_t = 10.0, allow_negative_numbers = true, value_parser = real(End::Closed(0.0), End::Closed(86_400.0), "a duration in seconds"))]
    pub reference_seconds: f64,
    /// Print one JSON line instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// Bench sub-verbs.
#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Scalar reward-model throughput: prbench vs PyTorch/transformers on the same token ids
    /// (needs python3 with torch and transformers; see docs/perf.md).
    Rm(BenchRmArgs),
    /// The `openai:` judge client under load: requests/s, latency p50/p99 and memory, against
    /// the loopback fault server in fast mode (or `--url`).
    Remote(BenchRemoteArgs),
    /// The reward server under load: an in-process `serve-reward` on loopback, waves of
    /// concurrent `POST /score` requests; requests/s, latency p50/p99/max, answers by status,
    /// memory per wave.
    Serve(BenchServeArgs),
    /// The rating server of `annotate serve` under load: simulated annotators on loopback
    /// load and save ratings for --seconds; save latency p50/p99 beside direct store commits,
    /// and a check that every acknowledged rating is in the export.
    Annotate(BenchAnnotateArgs),
    /// The harness at full benchmark scale with a zero-cost backend: a synthetic benchmark the
    /// size of the real one (2,830 rows, ~100 MB of profile text), then load + validate,
    /// render, retrieve (BM25) and write, each workload a child process timed and measured
    /// for peak RSS.
    Harness(SyntheticBenchArgs),
    /// The local GGUF judge against llama.cpp driven directly (same file, same prompts, same
    /// threads), each side a child process: prefill tokens/s of the logprob verdict, tokens/s
    /// of the generate verdict, peak RSS.
    Judge(BenchJudgeArgs),
    /// The scalar reward model on eval's and best-of-N's real inputs (data/sample, P-Soups,
    /// PRB-length synthetic; `none` and `profile:k`): prbench with shared-prefix scoring vs
    /// without vs transformers on the same token ids, with the score agreement checks.
    RmPrefix(BenchRmPrefixArgs),
    /// The logprob judge in both orders on eval's prompts: prbench keeping each prompt's common
    /// prefix with the one before (forked) vs prbench per group (each group of prompts from a
    /// cleared cache) vs prbench unforked vs llama.cpp decoding each full prompt, each a child
    /// process; margins and verdicts checked.
    JudgeOrders(BenchJudgeOrdersArgs),
    /// Every bench (judge, judge in both orders, scalar RM on real inputs, MiniLM, harness) in
    /// one run, one table: workload, prbench, reference, ratio, agreement check, target, command,
    /// machine. `--short` for a check of a minute or so per bench.
    All(BenchAllArgs),
    /// The HTML report at full scale: a synthetic 2,830-row benchmark evaluated by three
    /// control baselines under four conditions, the report of the twelve runs rendered and
    /// opened in headless Chromium (needs `chromium`: `scripts/setup.sh --tests`); file size,
    /// render time, time to open, time of one filter.
    Report(SyntheticBenchArgs),
    /// Text generation: prbench's GGUF engine one sequence at a time and batched
    /// (--gen-batch 2/4/8/16) beside llama.cpp's own server with --parallel 1/4/8, on the
    /// prompts of `build`, `bon sample` and the planner; tokens/s, time to the first token,
    /// peak RSS, prompt tokens reused, and how many outputs differ from the reference (one at
    /// a time with every prompt prefilled whole).
    Generate(BenchGenerateArgs),
    /// One side of `bench judge` (run by it; not for direct use).
    #[command(hide = true)]
    JudgeWorker(JudgeWorkerArgs),
    /// One prbench side of `bench generate` (run by it; not for direct use).
    #[command(hide = true)]
    GenerateWorker(GenerateWorkerArgs),
}

/// `bench generate` arguments.
#[derive(Args, Debug)]
pub struct BenchGenerateArgs {
    /// GGUF files (default: SmolLM2-135M-Instruct, plus the main job's
    /// Qwen2.5-Coder-1.5B-Instruct Q4_K_M when it is in the models folder).
    #[arg(long, value_delimiter = ',')]
    pub models: Vec<PathBuf>,
    /// Workloads: `build` (the answers), `bon` (policy samples, 4 per question), `planner`.
    #[arg(long, value_delimiter = ',', default_value = "build,bon,planner", value_parser = crate::generate::Workload::parse)]
    pub workloads: Vec<crate::generate::Workload>,
    /// Dataset whose examples give the prompts (relative to the current folder: run from the
    /// repository root).
    #[arg(long, default_value = "data/sample", value_parser = data_spec)]
    pub data: String,
    /// Requests per workload, all handed over at once.
    #[arg(long, default_value_t = 12, allow_negative_numbers = true, value_parser = whole::<usize>(1, 10_000))]
    pub requests: usize,
    /// Most new tokens per request.
    #[arg(long, default_value_t = 128, allow_negative_numbers = true, value_parser = whole::<usize>(1, 32_768))]
    pub max_new_tokens: usize,
    /// prbench's --gen-batch values besides 1 (one at a time, always measured, with and
    /// without keeping a shared prompt prefix; without is the reference).
    #[arg(long, value_delimiter = ',', default_value = "2,4,8,16", allow_negative_numbers = true, value_parser = whole::<usize>(1, 64))]
    pub batches: Vec<usize>,
    /// llama.cpp server slot counts (its --parallel), or `none` to leave the server out.
    #[arg(long, value_delimiter = ',', default_value = "1,4,8", allow_negative_numbers = true, value_parser = parallel_slots)]
    pub parallel: Vec<ServerSlots>,
    /// CPU threads of every side (1 to 1024).
    #[arg(long, default_value_t = std::thread::available_parallelism().map_or(1, |n| n.get().min(1024)), allow_negative_numbers = true, value_parser = whole::<usize>(1, 1024))]
    pub threads: usize,
    /// The script that starts llama.cpp's server (the pinned xllamacpp wheel).
    #[arg(long, default_value = "scripts/llama-server.sh")]
    pub server_script: PathBuf,
    /// Folder for the worker inputs and logs (default: `$PRBENCH_MODELS/bench`).
    #[arg(long, default_value_os_t = crate::default_work_dir())]
    pub work: PathBuf,
    /// Print one JSON line instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// A `bench generate --parallel` value: a slot count, or `None` for `none`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerSlots(pub Option<usize>);

/// Parses a `--parallel` value: a slot count from 1 to 64, or `none`.
fn parallel_slots(s: &str) -> Result<ServerSlots, String> {
    if s == "none" {
        return Ok(ServerSlots(None));
    }
    whole::<usize>(1, 64)(s).map(|n| ServerSlots(Some(n)))
}

/// `bench generate-worker` arguments.
#[derive(Args, Debug)]
pub struct GenerateWorkerArgs {
    /// The GGUF file.
    #[arg(long)]
    pub model: PathBuf,
    /// The input file `bench generate` wrote.
    #[arg(long)]
    pub input: PathBuf,
}

/// `bench judge` arguments.
#[derive(Args, Debug)]
pub struct BenchJudgeArgs {
    /// GGUF files (default: SmolLM2-135M-Instruct, plus gemma-3-270m-q4_k_m.gguf when it is in
    /// the models folder).
    #[arg(long, value_delimiter = ',')]
    pub models: Vec<PathBuf>,
    /// Datasets whose examples give the judge prompts (each example twice: chosen in A, in B).
    /// Default: `data/sample`, plus `psoups:../shared/data/alignx-psoups` when that folder
    /// exists (paths are relative to the current folder: run from the repository root).
    #[arg(long, value_delimiter = ',')]
    pub data: Vec<String>,
    /// Condition the prompts are rendered under: `none` or `profile:k` (first k posts).
    #[arg(long, default_value = "none")]
    pub condition: String,
    /// Judge prompts per dataset.
    #[arg(long, default_value_t = 24, allow_negative_numbers = true, value_parser = whole::<usize>(1, 100_000))]
    pub prompts: usize,
    /// Prompts the generate verdict is timed on (the first ones).
    #[arg(long, default_value_t = 4, allow_negative_numbers = true, value_parser = whole::<usize>(1, 100_000))]
    pub gen_prompts: usize,
    /// Generate verdict: most new tokens per prompt (greedy, stops at end of generation).
    #[arg(long, default_value_t = 64, allow_negative_numbers = true, value_parser = whole::<usize>(1, 32_768))]
    pub max_new_tokens: usize,
    /// Alternating rounds (the side that goes first alternates).
    #[arg(long, default_value_t = 3, allow_negative_numbers = true, value_parser = whole::<usize>(1, 100))]
    pub rounds: usize,
    /// CPU threads for both sides (1 to 1024).
    #[arg(long, default_value_t = std::thread::available_parallelism().map_or(1, |n| n.get().min(1024)), allow_negative_numbers = true, value_parser = whole::<usize>(1, 1024))]
    pub threads: usize,
    /// The reference's context size in tokens (default: longest prompt + --max-new-tokens + 1).
    #[arg(long, allow_negative_numbers = true, value_parser = whole::<u32>(1, 1_048_576))]
    pub ref_ctx: Option<u32>,
    /// Folder for the worker inputs and logs (default: `$PRBENCH_MODELS/bench`).
    #[arg(long, default_value_os_t = crate::default_work_dir())]
    pub work: PathBuf,
    /// Print one JSON line instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// `bench rm-prefix` arguments.
#[derive(Args, Debug)]
pub struct BenchRmPrefixArgs {
    /// Input sets: `sample` (data/sample), `psoups` (../shared/data/alignx-psoups, skipped with
    /// a note when absent), `prb-synthetic` (synthetic rows of the full benchmark's profile size,
    /// written under --work).
    #[arg(long, value_delimiter = ',', default_value = "sample,psoups,prb-synthetic")]
    pub sets: Vec<String>,
    /// Conditions of the chosen/rejected pair workloads (`none`, `profile:k`).
    #[arg(long, value_delimiter = ',', default_value = "none,profile:10")]
    pub conditions: Vec<String>,
    /// Examples per input set in the pair workloads.
    #[arg(long, default_value_t = 8, allow_negative_numbers = true, value_parser = whole::<usize>(1, 100_000))]
    pub pairs: usize,
    /// Conditions of the best-of-N workloads (empty: no best-of-N).
    #[arg(long, value_delimiter = ',', default_value = "profile:10")]
    pub bon_conditions: Vec<String>,
    /// Prompts per input set in the best-of-N workloads.
    #[arg(long, default_value_t = 2, allow_negative_numbers = true, value_parser = whole::<usize>(0, 10_000))]
    pub bon_prompts: usize,
    /// Answers per best-of-N prompt (the set's other examples' chosen and rejected texts).
    #[arg(long, default_value_t = 16, allow_negative_numbers = true, value_parser = whole::<usize>(1, 1024))]
    pub bon_n: usize,
    /// Examples per `score` call in the pair workloads (eval's batch).
    #[arg(long, default_value_t = 8, allow_negative_numbers = true, value_parser = whole::<usize>(1, 4096))]
    pub per_call: usize,
    /// Sequences per forward pass (the model's max batch, and transformers' batches).
    #[arg(long, default_value_t = 8, allow_negative_numbers = true, value_parser = whole::<usize>(1, 4096))]
    pub max_batch: usize,
    /// Timed passes per round.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = whole::<usize>(1, 1000))]
    pub repeats: usize,
    /// Rounds (the order of the sides alternates).
    #[arg(long, default_value_t = 3, allow_negative_numbers = true, value_parser = whole::<usize>(1, 100))]
    pub rounds: usize,
    /// A sequence-classification model folder (default: the bench decoder, a 6-layer Qwen2
    /// with MiniLM's tokenizer written once by tools/bench_rm.py; the committed parity
    /// fixture when it cannot be written).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Threads, the PyTorch reference and the working folder.
    #[command(flatten)]
    pub reference: RmReferenceArgs,
    /// Print one JSON line instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// `bench judge-orders` arguments.
#[derive(Args, Debug)]
pub struct BenchJudgeOrdersArgs {
    /// GGUF files (default: SmolLM2-135M-Instruct, plus gemma-3-270m-q4_k_m.gguf when it is in
    /// the models folder).
    #[arg(long, value_delimiter = ',')]
    pub models: Vec<PathBuf>,
    /// Input sets: `sample`, `psoups`, `prb-synthetic` (as `bench rm-prefix`).
    #[arg(long, value_delimiter = ',', default_value = "sample,psoups,prb-synthetic")]
    pub sets: Vec<String>,
    /// Condition the prompts are rendered under: `none` or `profile:k`.
    #[arg(long, default_value = "profile:10")]
    pub condition: String,
    /// Examples per input set (each judged in both orders).
    #[arg(long, default_value_t = 3, allow_negative_numbers = true, value_parser = whole::<usize>(1, 100_000))]
    pub examples: usize,
    /// The judge's window for the bench, in prompt tokens: under `profile:k` the posts shown
    /// are fitted to it as eval fits them (2,048 keeps PRB-length contexts near ~1,500 tokens).
    #[arg(long, default_value_t = 2048, allow_negative_numbers = true, value_parser = whole::<usize>(16, 1_048_576))]
    pub max_prompt_tokens: usize,
    /// Rounds (the side that goes first rotates).
    #[arg(long, default_value_t = 3, allow_negative_numbers = true, value_parser = whole::<usize>(1, 100))]
    pub rounds: usize,
    /// CPU threads for every side (1 to 1024).
    #[arg(long, default_value_t = std::thread::available_parallelism().map_or(1, |n| n.get().min(1024)), allow_negative_numbers = true, value_parser = whole::<usize>(1, 1024))]
    pub threads: usize,
    /// Folder for the worker inputs, logs and synthetic data (default: `$PRBENCH_MODELS/bench`).
    #[arg(long, default_value_os_t = crate::default_work_dir())]
    pub work: PathBuf,
    /// Print one JSON line instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// `bench all` arguments.
#[derive(Args, Debug)]
pub struct BenchAllArgs {
    /// A few inputs, one round (seconds): checks that every bench runs, measures little.
    #[arg(long)]
    pub short: bool,
    /// Alternating rounds of each bench.
    #[arg(long, default_value_t = 3, allow_negative_numbers = true, value_parser = whole::<usize>(1, 100))]
    pub rounds: usize,
    /// Judge prompts per dataset (data/sample, and P-Soups when ../shared holds it).
    #[arg(long, default_value_t = 12, allow_negative_numbers = true, value_parser = whole::<usize>(1, 100_000))]
    pub judge_prompts: usize,
    /// Threads, the PyTorch reference and the working folder.
    #[command(flatten)]
    pub reference: RmReferenceArgs,
}

/// `bench judge-worker` arguments.
#[derive(Args, Debug)]
pub struct JudgeWorkerArgs {
    /// `prbench`, `prbench-forked`, `prbench-unforked` or `llama.cpp`.
    #[arg(long)]
    pub side: String,
    /// The GGUF file.
    #[arg(long)]
    pub model: PathBuf,
    /// The input file `bench judge` wrote.
    #[arg(long)]
    pub input: PathBuf,
}

/// `bench harness` and `bench report` arguments: both measure workloads on the synthetic
/// full-scale benchmark.
#[derive(Args, Debug)]
pub struct SyntheticBenchArgs {
    /// Size as a fraction of the real benchmark, in [0.001, 1] (1 = 2,830 rows and 100 MB of
    /// profile text; 0.01 for a quick check).
    #[arg(long, default_value_t = 1.0, value_parser = parse_scale, allow_negative_numbers = true)]
    pub scale: f64,
    /// Rounds: each measured workload is repeated this many times (`harness`: the three
    /// workloads, median wall time and max peak RSS; `report`: opening the report, medians).
    #[arg(long, default_value_t = 3, allow_negative_numbers = true, value_parser = whole::<usize>(1, 100))]
    pub rounds: usize,
    /// Seed of the synthetic data and the runs.
    #[arg(long, default_value_t = 42, allow_negative_numbers = true, value_parser = seed)]
    pub seed: u64,
    /// Folder for the synthetic data, the runs, the child logs and the report (default:
    /// `$PRBENCH_MODELS/bench`).
    #[arg(long, default_value_os_t = crate::default_work_dir())]
    pub work: PathBuf,
    /// Print one JSON line instead of the table.
    #[arg(long)]
    pub json: bool,
}

fn parse_scale(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|e| format!("not a number: {e}"))?;
    if (0.001..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err("the scale must be in [0.001, 1] (smaller leaves profiles empty, so BM25 would measure nothing)".into())
    }
}

/// `bench remote` arguments.
#[derive(Args, Debug)]
pub struct BenchRemoteArgs {
    /// Judge requests to send.
    #[arg(long, default_value_t = 2000, allow_negative_numbers = true, value_parser = whole::<usize>(1, 1_000_000))]
    pub requests: usize,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 64, allow_negative_numbers = true, value_parser = whole::<usize>(1, 4096))]
    pub concurrency: usize,
    /// An OpenAI-compatible base URL to load instead of the in-process fault server (loopback
    /// only, please: this sends every request as fast as it can).
    #[arg(long)]
    pub url: Option<String>,
    /// Model name sent in each request.
    #[arg(long, default_value = "fault-model")]
    pub model: String,
    /// Dataset whose examples fill the prompts (cycled).
    #[arg(long, default_value = "data/sample", value_parser = data_spec)]
    pub data: String,
    /// Print one JSON line instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// `bench rm` arguments.
#[derive(Args, Debug)]
pub struct BenchRmArgs {
    /// Models to measure: `decoder` (6-layer Qwen2-shaped sequence classifier, hidden 384,
    /// random weights) and `minilm` (all-MiniLM-L6-v2, the BT backbone).
    #[arg(long, value_delimiter = ',', default_value = "decoder,minilm")]
    pub models: Vec<String>,
    /// Sequences per forward pass.
    #[arg(long, default_value_t = 8, allow_negative_numbers = true, value_parser = whole::<usize>(1, 4096))]
    pub batch: usize,
    /// Tokens per sequence.
    #[arg(long, default_value_t = 256, allow_negative_numbers = true, value_parser = whole::<usize>(1, 512))]
    pub seq_len: usize,
    /// Distinct batches.
    #[arg(long, default_value_t = 4, allow_negative_numbers = true, value_parser = whole::<usize>(1, 10_000))]
    pub batches: usize,
    /// Timed passes over all batches (after one warm-up pass).
    #[arg(long, default_value_t = 3, allow_negative_numbers = true, value_parser = whole::<usize>(1, 1000))]
    pub repeats: usize,
    /// Alternating rounds (prbench, then transformers); the table reports medians.
    #[arg(long, default_value_t = 3, allow_negative_numbers = true, value_parser = whole::<usize>(1, 100))]
    pub rounds: usize,
    /// Seed of the random token ids.
    #[arg(long, default_value_t = 42, allow_negative_numbers = true, value_parser = seed)]
    pub seed: u64,
    /// Threads, the PyTorch reference and the working folder.
    #[command(flatten)]
    pub reference: RmReferenceArgs,
    /// MiniLM directory (default: the one scripts/fetch-models.sh caches).
    #[arg(long)]
    pub embedder: Option<PathBuf>,
}

/// Threads, the PyTorch reference and the working folder, shared by `bench rm` and `bench all`.
#[derive(Args, Debug, Clone)]
pub struct RmReferenceArgs {
    /// CPU threads, 1 to 1024, for both sides of a comparison: torch's and prbench's (its
    /// compute pool and candle's kernels); under `bench all`, every engine's.
    #[arg(long, default_value_t = std::thread::available_parallelism().map_or(1, |n| n.get().min(1024)), allow_negative_numbers = true, value_parser = whole::<usize>(1, 1024))]
    pub threads: usize,
    /// Python interpreter with torch and transformers (`bench rm`'s reference).
    #[arg(long, default_value = "python3")]
    pub python: String,
    /// The folder holding bench_rm.py (the repository's `tools/`).
    #[arg(long, default_value = "tools")]
    pub tools: PathBuf,
    /// Working folder for the bench model, inputs and logs (default: `$PRBENCH_MODELS/bench`).
    #[arg(long, default_value_os_t = crate::default_work_dir())]
    pub work: PathBuf,
}
