//! `prbench bench judge`: the local GGUF judge against llama.cpp driven directly, same file,
//! same prompts, same threads, each side in its own child process (issue 7).
//!
//! The parent renders real judge prompts (chosen in slot A and in slot B) from each `--data`
//! source under `--condition`, tokenizes them once with prbench's engine (the ids the reference
//! gets), and then, for `--rounds` rounds with the order of the two sides alternating, runs
//! `prbench bench judge-worker` once per side. A worker loads the model, warms up on one
//! prompt, then times:
//!
//! - **prefill** (the logprob verdict): every prompt once, `Result:` appended. prbench runs its
//!   `LogprobJudge` (template rendering, segment-safe tokenization, one forward pass, log-softmax
//!   over the vocabulary); the reference clears the KV cache, decodes the parent's token ids in
//!   one batch and reads the last logits (`llama-cpp-2`, the crate prbench itself uses, so the
//!   same llama.cpp build). tokens/s = prompt tokens / wall seconds.
//! - **generate** (the generate verdict): the first `--gen-prompts` prompts, greedy, at most
//!   `--max-new-tokens`, stopping at end of generation. prbench runs its `GenerateJudge`; the
//!   reference runs the same greedy loop. tokens/s = generated tokens / wall seconds of the
//!   calls (prefill included, as a user waits for it); the reference also reports decode-only.
//!
//! Peak RSS is each worker's own `VmHWM`, model and KV cache included. The reference
//! context holds `--ref-ctx` tokens (default: the longest prompt plus `--max-new-tokens`,
//! what one would size a llama.cpp context to for this workload); prbench's holds what
//! `prbench eval` gives it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use prbench_models::gguf::{backend, models_dir, GgufEngine, GgufOptions};
use prbench_models::judge::{GenerateJudge, LogprobJudge, RESULT_PREFIX, SLOT_TOKENS};
use prbench_models::{Judge, JudgeRequest, PairInput};
use serde::{Deserialize, Serialize};

use crate::cli::{BenchJudgeArgs, JudgeWorkerArgs};
use crate::commands::bench_child::{machine, median, run_measured, self_hwm_mib, ChildRun};

/// Gemma 3's turn format, used only when a GGUF has no chat template (the Gemma-3-270M base
/// file): `<start_of_turn>user … <end_of_turn>` then `<start_of_turn>model`. A system turn is
/// folded into the first user turn, as Gemma's own template does.
pub const GEMMA_TURN_TEMPLATE: &str = "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{% set first = messages[0]['content'] + '\n\n' %}{% set loop_messages = messages[1:] %}{% else %}{% set first = '' %}{% set loop_messages = messages %}{% endif %}{% for m in loop_messages %}<start_of_turn>{{ 'model' if m['role'] == 'assistant' else 'user' }}\n{{ first if loop.first else '' }}{{ m['content'] }}<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}";

/// What the parent hands a worker: the requests and, per request, the token ids the reference
/// decodes.
#[derive(Serialize, Deserialize)]
struct WorkerInput {
    /// Logprob-verdict requests (prompt without `Result:`, which the judge appends).
    requests: Vec<JudgeRequest>,
    /// Token ids of each request's prompt with `Result:` appended.
    prefill_ids: Vec<Vec<i32>>,
    /// Token ids of each generate request's prompt.
    gen_ids: Vec<Vec<i32>>,
    /// Token ids of ` A` and ` B`.
    slot_ids: [i32; 2],
    gen_prompts: usize,
    max_new_tokens: usize,
    threads: i32,
    ref_ctx: u32,
    chat_template: Option<String>,
}

/// What a worker prints (one JSON line).
#[derive(Serialize, Deserialize, Debug, Clone)]
struct WorkerOutput {
    side: String,
    load_s: f64,
    prefill_tokens: usize,
    prefill_s: f64,
    /// log p(A) − log p(B) per request.
    margins: Vec<f64>,
    gen_prompt_tokens: usize,
    gen_tokens: usize,
    gen_s: f64,
    /// Reference only: seconds spent in single-token decode steps.
    decode_s: Option<f64>,
    /// Tokens generated per generate request.
    gen_counts: Vec<usize>,
    /// The worker's own peak RSS (`VmHWM` at the end), MiB. `wait4`'s `ru_maxrss` cannot be
    /// used here: Linux folds the parent's high-water mark into a spawned child's at `exec`.
    vm_hwm_mib: f64,
}


fn lse(logits: &[f32]) -> f64 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    max + logits.iter().map(|&l| (l as f64 - max).exp()).sum::<f64>().ln()
}

fn gguf_options(input: &WorkerInput) -> GgufOptions {
    GgufOptions { n_threads: Some(input.threads), chat_template: input.chat_template.clone(), ..GgufOptions::default() }
}

fn prbench_side(model: &Path, input: &WorkerInput) -> Result<WorkerOutput> {
    let t = Instant::now();
    let engine = GgufEngine::load(model, gguf_options(input))?;
    let load_s = t.elapsed().as_secs_f64();
    let judge = LogprobJudge::new(&engine);
    judge.judge(&input.requests[..1])?;
    let t = Instant::now();
    let verdicts = judge.judge(&input.requests)?;
    let prefill_s = t.elapsed().as_secs_f64();
    let gen = GenerateJudge::new(&engine, input.max_new_tokens);
    let reqs = &input.requests[..input.gen_prompts];
    let t = Instant::now();
    let replies = gen.judge(reqs)?;
    let gen_s = t.elapsed().as_secs_f64();
    Ok(WorkerOutput {
        side: format!("prbench {} (LogprobJudge / GenerateJudge on GgufEngine)", crate::code_version()),
        load_s,
        prefill_tokens: verdicts.iter().map(|v| v.tokens.input_tokens).sum(),
        prefill_s,
        margins: verdicts.iter().map(|v| f64::from(v.margin.unwrap_or(f32::NAN))).collect(),
        gen_prompt_tokens: replies.iter().map(|v| v.tokens.input_tokens).sum(),
        gen_tokens: replies.iter().map(|v| v.tokens.output_tokens).sum(),
        gen_s,
        decode_s: None,
        gen_counts: replies.iter().map(|v| v.tokens.output_tokens).collect(),
        vm_hwm_mib: self_hwm_mib(),
    })
}

/// Decodes `ids` from position 0 (KV cache cleared) in batches of `n_batch`; returns the batch
/// index of the last token's logits.
fn ref_prefill(ctx: &mut llama_cpp_2::context::LlamaContext<'_>, batch: &mut LlamaBatch<'_>, ids: &[i32], n_batch: usize) -> Result<i32> {
    ctx.clear_kv_cache();
    let mut last = 0;
    for (c, chunk) in ids.chunks(n_batch).enumerate() {
        batch.clear();
        for (j, &t) in chunk.iter().enumerate() {
            let pos = c * n_batch + j;
            batch.add(LlamaToken(t), pos as i32, &[0], pos + 1 == ids.len())?;
        }
        ctx.decode(batch)?;
        last = chunk.len() as i32 - 1;
    }
    Ok(last)
}

fn reference_side(model_path: &Path, input: &WorkerInput) -> Result<WorkerOutput> {
    let t = Instant::now();
    let be = backend()?;
    let model = LlamaModel::load_from_file(be, model_path, &LlamaModelParams::default())?;
    let ctx_len = std::num::NonZeroU32::new(input.ref_ctx).context("--ref-ctx must be > 0")?;
    let params = LlamaContextParams::default()
        .with_n_ctx(Some(ctx_len))
        .with_n_batch(input.ref_ctx)
        .with_n_threads(input.threads)
        .with_n_threads_batch(input.threads);
    let mut ctx = model.new_context(be, params)?;
    let n_batch = ctx.n_batch() as usize;
    let mut batch = LlamaBatch::new(n_batch, 1);
    let load_s = t.elapsed().as_secs_f64();
    let margin = |ctx: &mut llama_cpp_2::context::LlamaContext<'_>, batch: &mut LlamaBatch<'_>, ids: &[i32]| -> Result<f64> {
        let idx = ref_prefill(ctx, batch, ids, n_batch)?;
        let logits = ctx.get_logits_ith(idx);
        let l = lse(logits);
        let [a, b] = input.slot_ids.map(|s| logits[s as usize] as f64 - l);
        Ok(a - b)
    };
    margin(&mut ctx, &mut batch, &input.prefill_ids[0])?;
    let t = Instant::now();
    let margins = input.prefill_ids.iter().map(|ids| margin(&mut ctx, &mut batch, ids)).collect::<Result<Vec<_>>>()?;
    let prefill_s = t.elapsed().as_secs_f64();
    let vocab = model.vocab();
    let mut decode_s = 0.0;
    let mut gen_counts = Vec::new();
    let t = Instant::now();
    for ids in &input.gen_ids {
        let mut idx = ref_prefill(&mut ctx, &mut batch, ids, n_batch)?;
        let d = Instant::now();
        let mut n = 0;
        let mut pos = ids.len();
        loop {
            let logits = ctx.get_logits_ith(idx);
            let next = logits.iter().enumerate().fold((0, f32::NEG_INFINITY), |(bi, bv), (i, &v)| if v > bv { (i, v) } else { (bi, bv) }).0;
            let next = LlamaToken(next as i32);
            if vocab.is_eog(next) {
                break;
            }
            n += 1;
            if n >= input.max_new_tokens {
                break;
            }
            batch.clear();
            batch.add(next, pos as i32, &[0], true)?;
            ctx.decode(&mut batch)?;
            idx = 0;
            pos += 1;
        }
        decode_s += d.elapsed().as_secs_f64();
        gen_counts.push(n);
    }
    let gen_s = t.elapsed().as_secs_f64();
    Ok(WorkerOutput {
        side: format!("llama.cpp via llama-cpp-2 {}, n_ctx {}", prbench_models::gguf::ENGINE_NAME, input.ref_ctx),
        load_s,
        prefill_tokens: input.prefill_ids.iter().map(Vec::len).sum(),
        prefill_s,
        margins,
        gen_prompt_tokens: input.gen_ids.iter().map(Vec::len).sum(),
        gen_tokens: gen_counts.iter().sum(),
        gen_s,
        decode_s: Some(decode_s),
        gen_counts,
        vm_hwm_mib: self_hwm_mib(),
    })
}

/// Runs the hidden `prbench bench judge-worker` (one side, one model, one round).
pub fn worker(args: JudgeWorkerArgs) -> Result<()> {
    let input: WorkerInput = serde_json::from_str(&std::fs::read_to_string(&args.input).with_context(|| format!("reading `{}`", args.input.display()))?)?;
    let out = match args.side.as_str() {
        "prbench" => prbench_side(&args.model, &input)?,
        "llama.cpp" => reference_side(&args.model, &input)?,
        other => bail!("unknown side `{other}`: prbench or llama.cpp"),
    };
    println!("{}", serde_json::to_string(&out)?);
    Ok(())
}

/// `data/sample`, plus P-Soups when `../shared/data/alignx-psoups` exists (relative to the
/// current folder).
pub fn default_data() -> Vec<String> {
    let psoups = "../shared/data/alignx-psoups";
    let mut data = vec!["data/sample".to_string()];
    if Path::new(psoups).is_dir() {
        data.push(format!("psoups:{psoups}"));
    } else {
        eprintln!("bench judge: {psoups} absent; judge prompts come from data/sample only");
    }
    data
}

/// Judge requests from a dataset: each of the first `n` examples with chosen in A and in B.
fn requests_from(spec: &str, condition: &str, n: usize) -> Result<Vec<JudgeRequest>> {
    let data = prbench_data::load(spec, &[]).with_context(|| format!("loading `{spec}`"))?;
    let cond = prbench_eval::condition::Condition::parse(condition)?;
    if !(cond == prbench_eval::condition::Condition::None || cond.profile_k().is_some()) {
        bail!("bench judge renders `none` or `profile:k` prompts (posts in dataset order); got `{condition}`");
    }
    let prompts = prbench_eval::prompt::Prompts::new();
    let mut out = Vec::new();
    for ex in data.examples.iter().take(n.div_ceil(2)) {
        let context = match cond.profile_k() {
            Some(k) => {
                let posts: Vec<_> = ex.profile.iter().take(k).cloned().collect();
                Some(prbench_eval::condition::profile_context(&posts))
            }
            None => None,
        };
        for (a, b) in [(&ex.chosen, &ex.rejected), (&ex.rejected, &ex.chosen)] {
            let pair = PairInput { example_id: ex.id.clone(), question: ex.question.clone(), context: context.clone(), a: a.clone(), b: b.clone() };
            let prompt = prompts.judge(&pair)?;
            out.push(JudgeRequest { pair, prompt });
        }
    }
    out.truncate(n);
    Ok(out)
}

struct Side {
    runs: Vec<(WorkerOutput, ChildRun)>,
}

impl Side {
    fn med(&self, f: impl Fn(&WorkerOutput) -> f64) -> f64 {
        median(self.runs.iter().map(|(o, _)| f(o)).collect())
    }
    fn rss(&self) -> f64 {
        self.runs.iter().map(|(o, _)| o.vm_hwm_mib).fold(0.0, f64::max)
    }
}

/// The command line equivalent to `args`, for tables.
pub fn command_line(args: &BenchJudgeArgs) -> String {
    let mut c = format!(
        "prbench bench judge --data {} --condition {} --prompts {} --gen-prompts {} --max-new-tokens {} --rounds {} --threads {}",
        if args.data.is_empty() { default_data() } else { args.data.clone() }.join(","),
        args.condition,
        args.prompts,
        args.gen_prompts,
        args.max_new_tokens,
        args.rounds,
        args.threads
    );
    if !args.models.is_empty() {
        c.push_str(&format!(" --models {}", args.models.iter().map(|m| m.display().to_string()).collect::<Vec<_>>().join(",")));
    }
    if let Some(n) = args.ref_ctx {
        c.push_str(&format!(" --ref-ctx {n}"));
    }
    c
}

/// Measures (see the module docs) and returns `{machine, command, models: [...]}`, one entry
/// per GGUF with both sides' medians, ratios (median of the per-round ratios), peak RSS (MiB)
/// and the checks.
///
/// # Errors
/// Data or model loading failures, a worker that fails, sides that disagree on the tokens.
pub fn measure(args: &BenchJudgeArgs) -> Result<serde_json::Value> {
    std::fs::create_dir_all(&args.work).with_context(|| format!("creating `{}`", args.work.display()))?;
    let models: Vec<PathBuf> = if args.models.is_empty() {
        let dir = models_dir();
        let mut v = vec![dir.join(prbench_models::gguf::DEFAULT_MODEL_FILE)];
        let gemma = dir.join("gemma-3-270m-q4_k_m.gguf");
        if gemma.is_file() {
            v.push(gemma);
        } else {
            eprintln!("bench judge: {} absent (PRBENCH_FETCH_GEMMA=1 scripts/fetch-models.sh fetches it); measuring SmolLM2 only", gemma.display());
        }
        v
    } else {
        args.models.clone()
    };
    let data = if args.data.is_empty() { default_data() } else { args.data.clone() };
    let mut requests = Vec::new();
    for spec in &data {
        let got = requests_from(spec, &args.condition, args.prompts)
            .with_context(|| format!("reading judge prompts from `{spec}` (paths are relative to the current folder: run from the repository root or pass --data)"))?;
        if got.len() < args.prompts {
            eprintln!("bench judge: `{spec}` gives {} prompts, not --prompts {}: it has too few examples", got.len(), args.prompts);
        }
        requests.extend(got);
    }
    if args.prompts % 2 == 1 {
        eprintln!("bench judge: --prompts {} is odd: the last example is measured with chosen in slot A only", args.prompts);
    }
    if requests.is_empty() {
        bail!("no judge prompts: --data gave no examples");
    }
    let gen_prompts = args.gen_prompts.min(requests.len());
    if gen_prompts < args.gen_prompts {
        eprintln!("bench judge: --gen-prompts {} is more than the {} prompts; generating on {gen_prompts}", args.gen_prompts, requests.len());
    }
    let exe = std::env::current_exe().context("locating the prbench binary")?;
    let logs = args.work.join("judge-logs");
    std::fs::create_dir_all(&logs)?;
    let mut table = Vec::new();
    for model in &models {
        let name = model.file_name().map_or_else(|| model.display().to_string(), |n| n.to_string_lossy().into_owned());
        let engine = match GgufEngine::load(model, GgufOptions::default()) {
            Ok(e) => e,
            Err(prbench_models::ModelError::Metadata { .. }) => GgufEngine::load(model, GgufOptions { chat_template: Some(GEMMA_TURN_TEMPLATE.into()), ..Default::default() })?,
            Err(e) => return Err(e).with_context(|| format!("loading `{}`", model.display())),
        };
        let chat_template = engine.meta("tokenizer.chat_template").is_none().then(|| GEMMA_TURN_TEMPLATE.to_string());
        let with_prefix = |r: &JudgeRequest| {
            let mut p = r.prompt.clone();
            p.assistant_prefix.push_str(RESULT_PREFIX);
            p
        };
        let prefill_ids = requests.iter().map(|r| engine.tokenize(&with_prefix(r))).collect::<Result<Vec<_>, _>>()?;
        let gen_ids = requests[..gen_prompts].iter().map(|r| engine.tokenize(&r.prompt)).collect::<Result<Vec<_>, _>>()?;
        let slot = |s: &str| -> Result<i32> {
            match engine.tokenize_text(s).as_slice() {
                [t] => Ok(*t),
                other => bail!("`{s}` is {} tokens in {name}", other.len()),
            }
        };
        let longest = prefill_ids.iter().chain(&gen_ids).map(Vec::len).max().unwrap_or(0);
        let needed = longest + args.max_new_tokens + 1;
        if let Some(n) = args.ref_ctx.filter(|&n| (n as usize) < needed) {
            bail!("--ref-ctx {n} is too small for {name}: the longest prompt is {longest} tokens, so the reference needs at least {needed} (prompt + --max-new-tokens + 1)");
        }
        let input = WorkerInput {
            requests: requests.clone(),
            prefill_ids,
            gen_ids,
            slot_ids: [slot(SLOT_TOKENS[0])?, slot(SLOT_TOKENS[1])?],
            gen_prompts,
            max_new_tokens: args.max_new_tokens,
            threads: args.threads as i32,
            ref_ctx: args.ref_ctx.unwrap_or((longest + args.max_new_tokens + 1) as u32),
            chat_template,
        };
        drop(engine);
        let input_path = args.work.join(format!("judge-input-{name}.json"));
        std::fs::write(&input_path, serde_json::to_string(&input)?)?;
        let mut ours = Side { runs: Vec::new() };
        let mut theirs = Side { runs: Vec::new() };
        for round in 0..args.rounds {
            let order: [&str; 2] = if round % 2 == 0 { ["prbench", "llama.cpp"] } else { ["llama.cpp", "prbench"] };
            for side in order {
                let mut cmd = Command::new(&exe);
                cmd.args(["bench", "judge-worker", "--side", side, "--model"]).arg(model).arg("--input").arg(&input_path);
                let child = run_measured(&mut cmd, &logs.join(format!("{name}-{side}-r{round}")))?;
                let line = child.stdout.lines().rev().find(|l| l.starts_with('{')).context("the worker printed no JSON line")?;
                let out: WorkerOutput = serde_json::from_str(line)?;
                eprintln!(
                    "  {name} round {}: {side}: prefill {:.0} tok/s, generate {:.1} tok/s ({} tokens), peak RSS {:.0} MiB",
                    round + 1,
                    out.prefill_tokens as f64 / out.prefill_s,
                    out.gen_tokens as f64 / out.gen_s,
                    out.gen_tokens,
                    out.vm_hwm_mib
                );
                if side == "prbench" { ours.runs.push((out, child)) } else { theirs.runs.push((out, child)) }
            }
        }
        let (o, t) = (&ours.runs[0].0, &theirs.runs[0].0);
        if o.prefill_tokens != t.prefill_tokens {
            bail!("{name}: prbench prefilled {} tokens, the reference {}", o.prefill_tokens, t.prefill_tokens);
        }
        let max_dm = o.margins.iter().zip(&t.margins).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        let per_round = |f: &dyn Fn(&WorkerOutput) -> f64| median(ours.runs.iter().zip(&theirs.runs).map(|((a, _), (b, _))| f(a) / f(b)).collect());
        let prefill = |w: &WorkerOutput| w.prefill_tokens as f64 / w.prefill_s;
        let generate = |w: &WorkerOutput| w.gen_tokens as f64 / w.gen_s;
        table.push(serde_json::json!({
            "model": name,
            "prompts": requests.len(),
            "prefill_tokens": o.prefill_tokens,
            "mean_prompt_tokens": o.prefill_tokens as f64 / requests.len() as f64,
            "prefill_tok_s": [ours.med(prefill), theirs.med(prefill)],
            "prefill_ratio": per_round(&prefill),
            "gen_prompts": gen_prompts,
            "gen_tokens": [o.gen_tokens, t.gen_tokens],
            "gen_tok_s": [ours.med(generate), theirs.med(generate)],
            "gen_ratio": per_round(&generate),
            "ref_decode_only_tok_s": theirs.med(|w| w.gen_tokens as f64 / w.decode_s.unwrap_or(f64::NAN)),
            "peak_rss_mib": [ours.rss(), theirs.rss()],
            "rss_ratio": ours.rss() / theirs.rss(),
            "load_s": [ours.med(|w| w.load_s), theirs.med(|w| w.load_s)],
            "max_abs_margin_diff": max_dm,
            "ref_ctx": input.ref_ctx,
            "max_new_tokens": args.max_new_tokens,
        }));
    }
    Ok(serde_json::json!({ "machine": machine(), "command": command_line(args), "models": table }))
}

/// Runs `prbench bench judge`.
pub fn run(args: BenchJudgeArgs) -> Result<()> {
    let report = measure(&args)?;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    let table = report["models"].as_array().cloned().unwrap_or_default();
    println!("Judge bench: {}; {} rounds, sides alternating; {} threads; `{}`", machine(), args.rounds, args.threads, command_line(&args));
    println!("| model | workload | prbench tok/s | llama.cpp tok/s | ratio (median of rounds) | peak RSS MiB prbench / llama.cpp (ratio) | check |\n|---|---|---|---|---|---|---|");
    for r in &table {
        let f = |k: &str, i: usize| r[k][i].as_f64().unwrap_or(f64::NAN);
        println!(
            "| {} | prefill, logprob verdict: {} prompts, {} tokens (mean {:.0}) | {:.0} | {:.0} | {:.2}× | {:.0} / {:.0} ({:.2}×) | max abs Δ margin {:.1e} |",
            r["model"].as_str().unwrap_or(""),
            r["prompts"],
            r["prefill_tokens"],
            r["mean_prompt_tokens"].as_f64().unwrap_or(f64::NAN),
            f("prefill_tok_s", 0),
            f("prefill_tok_s", 1),
            r["prefill_ratio"].as_f64().unwrap_or(f64::NAN),
            f("peak_rss_mib", 0),
            f("peak_rss_mib", 1),
            r["rss_ratio"].as_f64().unwrap_or(f64::NAN),
            r["max_abs_margin_diff"].as_f64().unwrap_or(f64::NAN),
        );
        println!(
            "| {} | generate verdict: {} prompts, ≤ {} new tokens, prefill included | {:.1} | {:.1} | {:.2}× | (same processes) | tokens generated {} / {}; llama.cpp decode-only {:.1} tok/s |",
            r["model"].as_str().unwrap_or(""),
            r["gen_prompts"],
            args.max_new_tokens,
            f("gen_tok_s", 0),
            f("gen_tok_s", 1),
            r["gen_ratio"].as_f64().unwrap_or(f64::NAN),
            r["gen_tokens"][0],
            r["gen_tokens"][1],
            r["ref_decode_only_tok_s"].as_f64().unwrap_or(f64::NAN),
        );
    }
    Ok(())
}
