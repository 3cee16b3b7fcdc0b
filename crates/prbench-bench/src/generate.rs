//! `bench generate`: text generation in prbench's GGUF engine, one sequence at a time and
//! batched (`--gen-batch`), beside llama.cpp's own HTTP server with `--parallel` slots, on the
//! same GGUF, prompts, decoding and thread count.
//!
//! The parent renders the requests of each workload from `--data` with the stage's own
//! templates and decoding (posts in dataset order, the first `k`, where the stages rank them
//! with BM25; the bench needs the same prompts on both sides, not the same ranking):
//!
//! - `build`: the answer prompts of `prbench build`, chosen and rejected of each example
//!   (temperature 0.7, top-p 0.95, seeded per example and side as `build` seeds them);
//! - `bon`: `prbench bon sample`'s policy prompt, four samples per question (temperature 1.0,
//!   top-p 0.9, seeded per question and sample index);
//! - `planner`: the planner prompt of `--condition planner` (greedy).
//!
//! Every side gets all of a workload's requests at once and is timed from then until the
//! last reply: prbench in a child process of its own (`prbench bench generate-worker`, one
//! `Generator::generate_each` call with `--gen-batch N`, after a short warm-up), the server
//! (`scripts/llama-server.sh start` with `PRBENCH_LLAMA_SERVER_PARALLEL=P`, context `P ×` the
//! longest request) with every request sent concurrently and streamed after one warm-up
//! request. Reported per side: tokens generated, tokens/s over the wall time, the median and
//! largest time to the first token (from the moment the requests were handed over), the peak
//! RSS of the process holding the model (the worker's or the server's `VmHWM`), for prbench
//! the prompt tokens it did not decode because a slot held them (the same prompt, or the
//! prefix a prompt shares with a held one), and, for prbench, how many outputs differ from
//! the reference side.
//!
//! The reference is prbench one at a time with every prompt prefilled whole
//! ([`ONE_WHOLE`], `GgufEngine::set_keep_prefix(false)`, as before prompts kept a shared
//! prefix); the other prbench sides keep it (one at a time, and each `--gen-batch`). Their
//! outputs equal the reference's on Q4_1 weights, where the engine decodes them alike; on Q4_K
//! they can differ at 8 sequences (docs/perf.md).

mod server;
mod worker;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use prbench_build::prompts::BuildPrompts;
use prbench_build::seeds::answer_seed;
use prbench_build::stages::Side;
use prbench_data::ProfilePost;
use prbench_downstream::bon::prompts::BonPrompts;
use prbench_downstream::bon::sample::sample_seed;
use prbench_models::ChatRequest;
use serde::{Deserialize, Serialize};

pub use worker::worker;

use crate::child::{machine, run_measured};

/// Posts shown in each prompt (the stages' default `k`).
const K_POSTS: usize = 10;
/// Samples per question in the `bon` workload.
const BON_SAMPLES: usize = 4;
/// The run seed the requests' seeds derive from.
const SEED: u64 = 42;

/// A generating stage whose prompts and decoding a workload reproduces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    /// `prbench build`'s answers (chosen and rejected).
    Build,
    /// `prbench bon sample`'s policy samples.
    Bon,
    /// The planner of `--condition planner`.
    Planner,
}

impl Workload {
    /// Parses `build`, `bon` or `planner`.
    ///
    /// # Errors
    /// Any other name, with the list.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "build" => Ok(Self::Build),
            "bon" => Ok(Self::Bon),
            "planner" => Ok(Self::Planner),
            other => Err(format!("unknown workload `{other}`: use build, bon or planner")),
        }
    }

    /// The name `parse` reads.
    pub fn name(self) -> &'static str {
        match self {
            Self::Build => "build",
            Self::Bon => "bon",
            Self::Planner => "planner",
        }
    }

    fn decoding(self) -> (&'static str, f32, f32) {
        match self {
            Self::Build => ("temperature 0.7, top-p 0.95", 0.7, 0.95),
            Self::Bon => ("temperature 1.0, top-p 0.9", 1.0, 0.9),
            Self::Planner => ("greedy", 0.0, 1.0),
        }
    }
}

/// What `bench generate` measures and with what.
#[derive(Debug, Clone)]
pub struct GenerateOptions {
    /// GGUF files (empty: SmolLM2-135M-Instruct, plus the main job's
    /// Qwen2.5-Coder-1.5B-Instruct Q4_K_M when it is in the models folder).
    pub models: Vec<PathBuf>,
    /// The workloads, in order.
    pub workloads: Vec<Workload>,
    /// Dataset whose examples give the prompts.
    pub data: String,
    /// Requests per workload.
    pub requests: usize,
    /// Most new tokens per request (every workload; the stages' own budgets are larger).
    pub max_new_tokens: usize,
    /// prbench's `--gen-batch` values; 1 is one at a time (always measured, after the
    /// reference [`ONE_WHOLE`] the others are compared with).
    pub batches: Vec<usize>,
    /// llama.cpp server slot counts (`--parallel`); empty: no server side.
    pub parallel: Vec<usize>,
    /// CPU threads of every side.
    pub threads: usize,
    /// `scripts/llama-server.sh` (relative to the current folder by default).
    pub server_script: PathBuf,
    /// Folder for the worker inputs and logs.
    pub work: PathBuf,
}

/// One measured side of one workload on one model.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GenerateRow {
    /// The GGUF's file name.
    pub model: String,
    /// The workload's name.
    pub workload: String,
    /// [`ONE_WHOLE`], `prbench, one at a time`, `prbench, --gen-batch N` or `llama.cpp
    /// server, --parallel P`.
    pub side: String,
    /// Requests sent.
    pub requests: usize,
    /// Prompt tokens over all requests (as the side counted them).
    pub prompt_tokens: usize,
    /// Tokens generated over all requests.
    pub gen_tokens: usize,
    /// Seconds from handing over the requests to the last reply.
    pub wall_s: f64,
    /// `gen_tokens / wall_s`.
    pub tok_s: f64,
    /// Median time to the first token, seconds, from handing over the requests.
    pub ttft_p50_s: f64,
    /// Largest time to the first token, seconds.
    pub ttft_max_s: f64,
    /// Peak RSS of the process holding the model, MiB.
    pub peak_rss_mib: f64,
    /// `tok_s` over the reference's ([`ONE_WHOLE`]) on the same workload.
    pub vs_one_at_a_time: f64,
    /// prbench, but the reference: outputs that differ from the reference's (of `requests`).
    pub differ: Option<usize>,
    /// prbench: prompt tokens not decoded because a slot held the same prompt (`None` for the
    /// server, which does not say).
    pub reused_prompt_tokens: Option<u64>,
    /// Requests that failed (their error in the side's log).
    pub failed: usize,
}

/// What a worker or the server side measured, before the parent compares it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SideOutput {
    pub(crate) prompt_tokens: usize,
    pub(crate) gen_tokens: usize,
    pub(crate) wall_s: f64,
    /// Time to the first token of each request that drew one, seconds.
    pub(crate) ttft_s: Vec<f64>,
    /// Each request's text (empty for a failed one), in request order.
    pub(crate) texts: Vec<String>,
    pub(crate) failed: usize,
    pub(crate) vm_hwm_mib: f64,
    /// prbench's prompt tokens reused ([`prbench_llm::GgufEngine::reused_prompt_tokens`]);
    /// `None` for the server.
    #[serde(default)]
    pub(crate) reused_prompt_tokens: Option<u64>,
}

/// The reference side: one request at a time, every prompt prefilled whole.
pub const ONE_WHOLE: &str = "prbench, one at a time, prompts whole";

/// What the parent hands a worker.
#[derive(Serialize, Deserialize)]
pub(crate) struct WorkerInput {
    pub(crate) requests: Vec<ChatRequest>,
    pub(crate) threads: i32,
    pub(crate) gen_batch: usize,
    /// [`prbench_llm::GgufEngine::set_keep_prefix`]: off, each prompt is prefilled whole
    /// unless a slot holds the very same prompt.
    pub(crate) keep_prefix: bool,
}

/// `models`, or SmolLM2 plus the 1.5B Q4_K_M judge when it is in the models folder (its
/// absence logged).
fn models_or_default(models: &[PathBuf], log: &dyn Fn(&str)) -> Vec<PathBuf> {
    if !models.is_empty() {
        return models.to_vec();
    }
    let mut v = vec![prbench_models::assets::default_model_path()];
    let big = prbench_models::assets::default_judge_path();
    if big.is_file() {
        v.push(big);
    } else {
        log(&format!(
            "bench generate: {} absent (scripts/setup.sh without --tests fetches it); measuring SmolLM2 only",
            big.display()
        ));
    }
    v
}

fn first_posts(posts: &[ProfilePost]) -> Vec<&ProfilePost> {
    posts.iter().take(K_POSTS).collect()
}

/// The requests of `workload` from the examples of `data`: `n` of them (fewer when the data
/// has too few examples, which is logged by the caller).
///
/// # Errors
/// Data loading or template failures.
pub fn requests(
    workload: Workload,
    data: &prbench_data::Dataset,
    n: usize,
    max_new_tokens: usize,
) -> Result<Vec<ChatRequest>> {
    let (_, temperature, top_p) = workload.decoding();
    let req = |prompt, seed| ChatRequest { prompt, max_new_tokens, temperature, top_p, seed };
    let mut out = Vec::with_capacity(n);
    match workload {
        Workload::Build => {
            let prompts = BuildPrompts::new();
            'outer: for ex in &data.examples {
                for side in [Side::Chosen, Side::Rejected] {
                    if out.len() == n {
                        break 'outer;
                    }
                    let p = prompts.answer(
                        side,
                        &ex.question,
                        &first_posts(&ex.profile),
                        &ex.rubric_aspects,
                        100,
                    )?;
                    out.push(req(p, answer_seed(SEED, &ex.id, side)));
                }
            }
        }
        Workload::Bon => {
            let prompts = BonPrompts::new();
            'outer: for ex in &data.examples {
                let p = prompts.policy(&ex.question, &first_posts(&ex.profile))?;
                for i in 0..BON_SAMPLES {
                    if out.len() == n {
                        break 'outer;
                    }
                    out.push(req(p.clone(), sample_seed(SEED, &ex.id, i)));
                }
            }
        }
        Workload::Planner => {
            let prompts = prbench_eval::prompt::Prompts::new();
            for ex in data.examples.iter().take(n) {
                let p = prompts.planner(&ex.question, &first_posts(&ex.profile))?;
                out.push(req(p, prbench_eval::planner::planner_seed(SEED, &ex.id)));
            }
        }
    }
    Ok(out)
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    crate::child::median(std::mem::take(&mut v))
}

fn row(
    model: &str,
    workload: Workload,
    side: String,
    out: &SideOutput,
    reference: Option<&SideOutput>,
) -> GenerateRow {
    let tok_s = out.gen_tokens as f64 / out.wall_s;
    let (vs, differ) = match reference {
        Some(r) => (
            tok_s / (r.gen_tokens as f64 / r.wall_s),
            Some(out.texts.iter().zip(&r.texts).filter(|(a, b)| a != b).count()),
        ),
        None => (1.0, None),
    };
    GenerateRow {
        model: model.to_string(),
        workload: workload.name().to_string(),
        side,
        requests: out.texts.len(),
        prompt_tokens: out.prompt_tokens,
        gen_tokens: out.gen_tokens,
        wall_s: out.wall_s,
        tok_s,
        ttft_p50_s: median(out.ttft_s.clone()),
        ttft_max_s: out.ttft_s.iter().copied().fold(f64::NAN, f64::max),
        peak_rss_mib: out.vm_hwm_mib,
        vs_one_at_a_time: vs,
        differ,
        reused_prompt_tokens: out.reused_prompt_tokens,
        failed: out.failed,
    }
}

/// Runs `prbench bench generate-worker` on `model` with `input`; returns its output line.
fn run_worker(exe: &Path, model: &Path, input: &Path, log: &Path) -> Result<SideOutput> {
    let mut cmd = Command::new(exe);
    cmd.args(["bench", "generate-worker", "--model"]).arg(model).arg("--input").arg(input);
    let child = run_measured(&mut cmd, log)?;
    let line = child
        .stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .context("the generate worker printed no JSON line")?;
    Ok(serde_json::from_str(line)?)
}

/// The command line equivalent to `args`, for tables.
pub fn command_line(args: &GenerateOptions) -> String {
    let join = |v: &[usize]| v.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
    let mut c = format!(
        "prbench bench generate --data {} --workloads {} --requests {} --max-new-tokens {} --batches {} --parallel {} --threads {}",
        args.data,
        args.workloads.iter().map(|w| w.name()).collect::<Vec<_>>().join(","),
        args.requests,
        args.max_new_tokens,
        join(&args.batches),
        if args.parallel.is_empty() { "none".into() } else { join(&args.parallel) },
        args.threads
    );
    if !args.models.is_empty() {
        c.push_str(&format!(
            " --models {}",
            args.models.iter().map(|m| m.display().to_string()).collect::<Vec<_>>().join(",")
        ));
    }
    c
}

/// Measures (see the module docs): one row per model, workload and side.
///
/// # Errors
/// Data or model loading failures, a worker that fails, a server that does not start.
pub fn measure(args: &GenerateOptions, log: &dyn Fn(&str)) -> Result<Vec<GenerateRow>> {
    if args.workloads.is_empty() {
        bail!("no workload: --workloads takes build, bon and/or planner");
    }
    std::fs::create_dir_all(&args.work)
        .with_context(|| format!("creating `{}`", args.work.display()))?;
    let data = prbench_data::load(&args.data, &[]).with_context(|| {
        format!("loading `{}` (paths are relative to the current folder: run from the repository root or pass --data)", args.data)
    })?;
    if !args.parallel.is_empty() && !args.server_script.is_file() {
        bail!(
            "`{}` not found: the llama.cpp server side is started by it (run from the repository root, or --parallel none to leave the server out)",
            args.server_script.display()
        );
    }
    let mut batches: Vec<usize> = args.batches.iter().copied().filter(|&n| n > 1).collect();
    batches.sort_unstable();
    batches.dedup();
    let exe = crate::prbench_exe()?;
    let logs = args.work.join("generate-logs");
    std::fs::create_dir_all(&logs)?;
    let mut rows = Vec::new();
    for model in &models_or_default(&args.models, log) {
        let name = model
            .file_name()
            .map_or_else(|| model.display().to_string(), |n| n.to_string_lossy().into_owned());
        if !model.is_file() {
            bail!("`{}` not found (scripts/setup.sh fetches the default models)", model.display());
        }
        // The parent tokenizes once per model, to size the server's slots: each holds the
        // longest request (prbench's own context grows to what a call needs).
        let engine = prbench_llm::GgufEngine::load(model, prbench_llm::GgufOptions::default())
            .with_context(|| format!("loading `{}`", model.display()))?;
        for &workload in &args.workloads {
            let reqs = requests(workload, &data, args.requests, args.max_new_tokens)?;
            let longest = reqs
                .iter()
                .map(|r| engine.tokenize(&r.prompt).map(|t| t.len()))
                .collect::<Result<Vec<_>, _>>()?
                .into_iter()
                .max()
                .unwrap_or(0);
            let slot_ctx = (longest + args.max_new_tokens + 16).next_multiple_of(256);
            if reqs.len() < args.requests {
                log(&format!(
                    "bench generate: `{}` gives {} {} requests, not --requests {}",
                    args.data,
                    reqs.len(),
                    workload.name(),
                    args.requests
                ));
            }
            // The reference: one at a time, every prompt prefilled whole (as before prompts
            // kept a shared prefix); then one at a time and batched with it kept.
            let mut reference: Option<SideOutput> = None;
            let sides = std::iter::once((1, false))
                .chain(std::iter::once(1).chain(batches.iter().copied()).map(|n| (n, true)));
            for (n, keep_prefix) in sides {
                let input = WorkerInput {
                    requests: reqs.clone(),
                    threads: args.threads as i32,
                    gen_batch: n,
                    keep_prefix,
                };
                let whole = if keep_prefix { "" } else { "-whole" };
                let stem = format!("{name}-{}-batch{n}{whole}", workload.name());
                let input_path = args.work.join(format!("generate-input-{stem}.json"));
                std::fs::write(&input_path, serde_json::to_string(&input)?)?;
                let out = run_worker(&exe, model, &input_path, &logs.join(&stem))?;
                let side = match (n, keep_prefix) {
                    (1, false) => ONE_WHOLE.to_string(),
                    (1, true) => "prbench, one at a time".into(),
                    (n, _) => format!("prbench, --gen-batch {n}"),
                };
                let r = row(&name, workload, side, &out, reference.as_ref());
                log(&progress(&r));
                rows.push(r);
                if reference.is_none() {
                    reference = Some(out);
                }
            }
            for &p in &args.parallel {
                let out =
                    server::measure(&args.server_script, model, p, slot_ctx, args.threads, &reqs)
                        .with_context(|| format!("llama.cpp server, --parallel {p}, on {name}"))?;
                let mut r = row(
                    &name,
                    workload,
                    format!("llama.cpp server, --parallel {p}"),
                    &out,
                    reference.as_ref(),
                );
                // The server samples with its own sampler chain: its texts are not comparable.
                r.differ = None;
                log(&progress(&r));
                rows.push(r);
            }
        }
    }
    Ok(rows)
}

fn progress(r: &GenerateRow) -> String {
    format!(
        "  {} {} {}: {} tokens in {:.1} s = {:.1} tok/s ({:.2}× the reference), first token p50 {:.2} s, peak RSS {:.0} MiB",
        r.model,
        r.workload,
        r.side,
        r.gen_tokens,
        r.wall_s,
        r.tok_s,
        r.vs_one_at_a_time,
        r.ttft_p50_s,
        r.peak_rss_mib
    )
}

/// The `bench generate` table of [`measure`]'s rows.
pub fn table(args: &GenerateOptions, rows: &[GenerateRow]) -> String {
    let mut s = format!(
        "Generate bench: {}; {} threads every side; `{}`\n",
        machine(),
        args.threads,
        command_line(args)
    );
    s += "| model | workload | side | requests | prompt tokens (mean) | tokens generated | tok/s | × the reference (one at a time, prompts whole) | first token p50 / max, s | peak RSS MiB | prompt tokens reused | outputs ≠ the reference |\n|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|---|\n";
    for r in rows {
        let workload = Workload::parse(&r.workload).map(|w| w.decoding().0).unwrap_or("");
        s += &format!(
            "| {} | {} ({workload}) | {} | {}{} | {:.0} | {} | {:.1} | {:.2}× | {:.2} / {:.2} | {:.0} | {} | {} |\n",
            r.model,
            r.workload,
            r.side,
            r.requests,
            if r.failed > 0 { format!(" ({} failed)", r.failed) } else { String::new() },
            r.prompt_tokens as f64 / r.requests.max(1) as f64,
            r.gen_tokens,
            r.tok_s,
            r.vs_one_at_a_time,
            r.ttft_p50_s,
            r.ttft_max_s,
            r.peak_rss_mib,
            r.reused_prompt_tokens.map_or_else(|| "–".into(), |n| n.to_string()),
            r.differ.map_or_else(|| "–".into(), |d| format!("{d} of {}", r.requests)),
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(tokens: usize, wall: f64, texts: &[&str]) -> SideOutput {
        SideOutput {
            prompt_tokens: 10,
            gen_tokens: tokens,
            wall_s: wall,
            ttft_s: vec![0.5, 0.1, 0.3],
            texts: texts.iter().map(|t| t.to_string()).collect(),
            failed: 0,
            vm_hwm_mib: 100.0,
            reused_prompt_tokens: Some(7),
        }
    }

    #[test]
    fn a_row_compares_throughput_and_texts_with_one_at_a_time() {
        let one = out(100, 10.0, &["a", "b", "c"]);
        let batched = out(120, 6.0, &["a", "x", "c"]);
        let r = row("m", Workload::Bon, "b".into(), &batched, Some(&one));
        assert_eq!(r.tok_s, 20.0);
        // 20 tok/s against 10 tok/s.
        assert!((r.vs_one_at_a_time - 2.0).abs() < 1e-12);
        assert_eq!(r.differ, Some(1));
        assert_eq!(r.reused_prompt_tokens, Some(7));
        assert_eq!(r.ttft_p50_s, 0.3);
        assert_eq!(r.ttft_max_s, 0.5);
        let r = row("m", Workload::Bon, "one".into(), &one, None);
        assert_eq!((r.vs_one_at_a_time, r.differ), (1.0, None));
    }

    #[test]
    fn workloads_render_the_stages_prompts_with_their_decoding() {
        let data =
            prbench_data::load(concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/sample"), &[])
                .unwrap();
        let ex = &data.examples[0];
        let build = requests(Workload::Build, &data, 3, 32).unwrap();
        assert_eq!(build.len(), 3);
        // Chosen then rejected of the first example, then chosen of the second.
        assert_eq!(build[0].seed, answer_seed(SEED, &ex.id, Side::Chosen));
        assert_eq!(build[1].seed, answer_seed(SEED, &ex.id, Side::Rejected));
        assert_ne!(build[0].prompt, build[1].prompt);
        assert_eq!(
            (build[0].temperature, build[0].top_p, build[0].max_new_tokens),
            (0.7, 0.95, 32)
        );
        let bon = requests(Workload::Bon, &data, 5, 32).unwrap();
        assert_eq!(bon[0].prompt, bon[3].prompt);
        assert_ne!(bon[3].prompt, bon[4].prompt);
        assert_eq!(bon[3].seed, sample_seed(SEED, &ex.id, 3));
        let planner = requests(Workload::Planner, &data, 100, 32).unwrap();
        assert_eq!(planner.len(), data.examples.len());
        assert_eq!(planner[0].temperature, 0.0);
        assert!(planner[0].prompt.all_text().contains(ex.question.trim()));
    }
}
