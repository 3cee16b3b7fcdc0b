//! `bench judge`: the local GGUF judge against llama.cpp driven directly, same file, same prompts,
//! same threads, each side in its own child process.
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

pub mod orders;
mod worker;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use prbench_llm::{GgufEngine, GgufOptions};
use prbench_models::assets::models_dir;
use prbench_models::judge::{RESULT_PREFIX, SLOT_TOKENS};
use prbench_models::{JudgeRequest, PairInput};

pub use worker::worker;
pub(crate) use worker::{WorkerInput, WorkerOutput};

use crate::child::{machine, median, run_measured, ChildRun};

/// What `bench judge` measures and with what.
#[derive(Debug, Clone)]
pub struct JudgeOptions {
    /// GGUF files (empty: SmolLM2-135M-Instruct, plus gemma-3-270m-q4_k_m.gguf when it is in the
    /// models folder).
    pub models: Vec<PathBuf>,
    /// Datasets whose examples give the judge prompts (empty: [`default_data`]).
    pub data: Vec<String>,
    /// Condition the prompts are rendered under: `none` or `profile:k` (first k posts).
    pub condition: String,
    /// Judge prompts per dataset.
    pub prompts: usize,
    /// Prompts the generate verdict is timed on (the first ones).
    pub gen_prompts: usize,
    /// Generate verdict: most new tokens per prompt.
    pub max_new_tokens: usize,
    /// Alternating rounds.
    pub rounds: usize,
    /// CPU threads for both sides.
    pub threads: usize,
    /// The reference's context size in tokens (default: longest prompt + max_new_tokens + 1).
    pub ref_ctx: Option<u32>,
    /// Folder for the worker inputs and logs.
    pub work: PathBuf,
}

/// Gemma 3's turn format, used only when a GGUF has no chat template (the Gemma-3-270M base
/// file): `<start_of_turn>user … <end_of_turn>` then `<start_of_turn>model`. A system turn is
/// folded into the first user turn, as Gemma's own template does.
pub const GEMMA_TURN_TEMPLATE: &str = "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{% set first = messages[0]['content'] + '\n\n' %}{% set loop_messages = messages[1:] %}{% else %}{% set first = '' %}{% set loop_messages = messages %}{% endif %}{% for m in loop_messages %}<start_of_turn>{{ 'model' if m['role'] == 'assistant' else 'user' }}\n{{ first if loop.first else '' }}{{ m['content'] }}<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}";

/// `data/sample`, plus P-Soups when `../shared/data/alignx-psoups` exists (relative to the
/// current folder).
pub fn default_data(log: &dyn Fn(&str)) -> Vec<String> {
    let psoups = "../shared/data/alignx-psoups";
    let mut data = vec!["data/sample".to_string()];
    if Path::new(psoups).is_dir() {
        data.push(format!("psoups:{psoups}"));
    } else {
        log(&format!("bench judge: {psoups} absent; judge prompts come from data/sample only"));
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
            let pair = PairInput {
                example_id: ex.id.clone(),
                question: ex.question.clone(),
                context: context.clone(),
                a: a.clone(),
                b: b.clone(),
            };
            let prompt = prompts.judge(&pair)?;
            out.push(JudgeRequest { pair, prompt, prompt_b: None });
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

/// `models`, or the default GGUFs: SmolLM2-135M-Instruct, plus gemma-3-270m-q4_k_m.gguf when
/// it is in the models folder (its absence logged).
pub(crate) fn models_or_default(models: &[PathBuf], log: &dyn Fn(&str)) -> Vec<PathBuf> {
    if !models.is_empty() {
        return models.to_vec();
    }
    let dir = models_dir();
    let mut v = vec![dir.join(prbench_models::assets::DEFAULT_MODEL_FILE)];
    let gemma = dir.join("gemma-3-270m-q4_k_m.gguf");
    if gemma.is_file() {
        v.push(gemma);
    } else {
        log(&format!("bench judge: {} absent (PRBENCH_FETCH_GEMMA=1 scripts/fetch-models.sh fetches it); measuring SmolLM2 only", gemma.display()));
    }
    v
}

/// Loads a judge GGUF as the workers will (the Gemma turn template when the file has none);
/// returns the engine and the template override the workers need.
///
/// # Errors
/// Model loading failures.
pub(crate) fn load_engine(model: &Path) -> Result<(GgufEngine, Option<String>)> {
    let engine = match GgufEngine::load(model, GgufOptions::default()) {
        Ok(e) => e,
        Err(prbench_models::ModelError::Metadata { .. }) => GgufEngine::load(
            model,
            GgufOptions { chat_template: Some(GEMMA_TURN_TEMPLATE.into()), ..Default::default() },
        )?,
        Err(e) => return Err(e).with_context(|| format!("loading `{}`", model.display())),
    };
    let chat_template =
        engine.meta("tokenizer.chat_template").is_none().then(|| GEMMA_TURN_TEMPLATE.to_string());
    Ok((engine, chat_template))
}

/// Token ids of each request's prompt with `Result:` appended: what the logprob verdict
/// decodes, and what the llama.cpp reference is given.
///
/// # Errors
/// Template or tokenizer failures.
pub(crate) fn prefill_ids(engine: &GgufEngine, requests: &[JudgeRequest]) -> Result<Vec<Vec<i32>>> {
    requests
        .iter()
        .map(|r| {
            let mut p = r.prompt.clone();
            p.assistant_prefix.push_str(RESULT_PREFIX);
            Ok(engine.tokenize(&p)?)
        })
        .collect()
}

/// The token ids of ` A` and ` B` in `engine`'s vocabulary.
///
/// # Errors
/// When either is not exactly one token.
pub(crate) fn slot_ids(engine: &GgufEngine, name: &str) -> Result<[i32; 2]> {
    let slot = |s: &str| -> Result<i32> {
        match engine.tokenize_text(s).as_slice() {
            [t] => Ok(*t),
            other => bail!("`{s}` is {} tokens in {name}", other.len()),
        }
    };
    Ok([slot(SLOT_TOKENS[0])?, slot(SLOT_TOKENS[1])?])
}

/// Runs `prbench bench judge-worker --side SIDE` on `model` with `input`, logs under `log`;
/// returns the worker's output line and the measured child.
///
/// # Errors
/// The worker failing or printing no JSON line.
pub(crate) fn run_worker(
    exe: &Path,
    side: &str,
    model: &Path,
    input: &Path,
    log: &Path,
) -> Result<(WorkerOutput, ChildRun)> {
    let mut cmd = Command::new(exe);
    cmd.args(["bench", "judge-worker", "--side", side, "--model"])
        .arg(model)
        .arg("--input")
        .arg(input);
    let child = run_measured(&mut cmd, log)?;
    let line = child
        .stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .context("the worker printed no JSON line")?;
    Ok((serde_json::from_str(line)?, child))
}

/// The command line equivalent to `args`, for tables.
pub fn command_line(args: &JudgeOptions, log: &dyn Fn(&str)) -> String {
    let mut c = format!(
        "prbench bench judge --data {} --condition {} --prompts {} --gen-prompts {} --max-new-tokens {} --rounds {} --threads {}",
        if args.data.is_empty() { default_data(log) } else { args.data.clone() }.join(","),
        args.condition,
        args.prompts,
        args.gen_prompts,
        args.max_new_tokens,
        args.rounds,
        args.threads
    );
    if !args.models.is_empty() {
        c.push_str(&format!(
            " --models {}",
            args.models.iter().map(|m| m.display().to_string()).collect::<Vec<_>>().join(",")
        ));
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
pub fn measure(args: &JudgeOptions, log: &dyn Fn(&str)) -> Result<serde_json::Value> {
    std::fs::create_dir_all(&args.work)
        .with_context(|| format!("creating `{}`", args.work.display()))?;
    let models = models_or_default(&args.models, log);
    let data = if args.data.is_empty() { default_data(log) } else { args.data.clone() };
    let mut requests = Vec::new();
    for spec in &data {
        let got = requests_from(spec, &args.condition, args.prompts)
            .with_context(|| format!("reading judge prompts from `{spec}` (paths are relative to the current folder: run from the repository root or pass --data)"))?;
        if got.len() < args.prompts {
            log(&format!(
                "bench judge: `{spec}` gives {} prompts, not --prompts {}: it has too few examples",
                got.len(),
                args.prompts
            ));
        }
        requests.extend(got);
    }
    if args.prompts % 2 == 1 {
        log(&format!("bench judge: --prompts {} is odd: the last example is measured with chosen in slot A only", args.prompts));
    }
    if requests.is_empty() {
        bail!("no judge prompts: --data gave no examples");
    }
    let gen_prompts = args.gen_prompts.min(requests.len());
    if gen_prompts < args.gen_prompts {
        log(&format!("bench judge: --gen-prompts {} is more than the {} prompts; generating on {gen_prompts}", args.gen_prompts, requests.len()));
    }
    let exe = crate::prbench_exe()?;
    let logs = args.work.join("judge-logs");
    std::fs::create_dir_all(&logs)?;
    let mut table = Vec::new();
    for model in &models {
        let name = model
            .file_name()
            .map_or_else(|| model.display().to_string(), |n| n.to_string_lossy().into_owned());
        let (engine, chat_template) = load_engine(model)?;
        let prefill_ids = prefill_ids(&engine, &requests)?;
        let gen_ids = requests[..gen_prompts]
            .iter()
            .map(|r| engine.tokenize(&r.prompt))
            .collect::<Result<Vec<_>, _>>()?;
        let longest = prefill_ids.iter().chain(&gen_ids).map(Vec::len).max().unwrap_or(0);
        let needed = longest + args.max_new_tokens + 1;
        if let Some(n) = args.ref_ctx.filter(|&n| (n as usize) < needed) {
            bail!("--ref-ctx {n} is too small for {name}: the longest prompt is {longest} tokens, so the reference needs at least {needed} (prompt + --max-new-tokens + 1)");
        }
        let input = WorkerInput {
            requests: requests.clone(),
            prefill_ids,
            gen_ids,
            slot_ids: slot_ids(&engine, &name)?,
            gen_prompts,
            max_new_tokens: args.max_new_tokens,
            threads: args.threads as i32,
            ref_ctx: args.ref_ctx.unwrap_or((longest + args.max_new_tokens + 1) as u32),
            chat_template,
            // This bench measures prbench's cost around llama.cpp on the same work: each
            // prompt decoded alone (`bench judge-orders` measures the shared prefix).
            share_prefix: Some(false),
        };
        drop(engine);
        let input_path = args.work.join(format!("judge-input-{name}.json"));
        std::fs::write(&input_path, serde_json::to_string(&input)?)?;
        let mut ours = Side { runs: Vec::new() };
        let mut theirs = Side { runs: Vec::new() };
        for round in 0..args.rounds {
            let order: [&str; 2] =
                if round % 2 == 0 { ["prbench", "llama.cpp"] } else { ["llama.cpp", "prbench"] };
            for side in order {
                let (out, child) = run_worker(
                    &exe,
                    side,
                    model,
                    &input_path,
                    &logs.join(format!("{name}-{side}-r{round}")),
                )?;
                log(&format!(
                    "  {name} round {}: {side}: prefill {:.0} tok/s, generate {:.1} tok/s ({} tokens), peak RSS {:.0} MiB",
                    round + 1,
                    out.prefill_tokens as f64 / out.prefill_s,
                    out.gen_tokens as f64 / out.gen_s,
                    out.gen_tokens,
                    out.vm_hwm_mib
                ));
                if side == "prbench" {
                    ours.runs.push((out, child))
                } else {
                    theirs.runs.push((out, child))
                }
            }
        }
        let (o, t) = (&ours.runs[0].0, &theirs.runs[0].0);
        if o.prefill_tokens != t.prefill_tokens {
            bail!(
                "{name}: prbench prefilled {} tokens, the reference {}",
                o.prefill_tokens,
                t.prefill_tokens
            );
        }
        let max_dm =
            o.margins.iter().zip(&t.margins).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        let per_round = |f: &dyn Fn(&WorkerOutput) -> f64| {
            median(ours.runs.iter().zip(&theirs.runs).map(|((a, _), (b, _))| f(a) / f(b)).collect())
        };
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
    Ok(
        serde_json::json!({ "machine": machine(), "command": command_line(args, log), "models": table }),
    )
}

/// The `bench judge` table of a [`measure`] report made with `args`.
pub fn table(args: &JudgeOptions, report: &serde_json::Value, log: &dyn Fn(&str)) -> String {
    let mut s = String::new();
    let table = report["models"].as_array().cloned().unwrap_or_default();
    s += &format!(
        "Judge bench: {}; {} rounds, sides alternating; {} threads; `{}`\n",
        machine(),
        args.rounds,
        args.threads,
        command_line(args, log)
    );
    s += "| model | workload | prbench tok/s | llama.cpp tok/s | ratio (median of rounds) | peak RSS MiB prbench / llama.cpp (ratio) | check |\n|---|---|---|---|---|---|---|\n";
    for r in &table {
        let f = |k: &str, i: usize| r[k][i].as_f64().unwrap_or(f64::NAN);
        s += &format!(
            "| {} | prefill, logprob verdict: {} prompts, {} tokens (mean {:.0}) | {:.0} | {:.0} | {:.2}× | {:.0} / {:.0} ({:.2}×) | max abs Δ margin {:.1e} |\n",
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
        s += &format!(
            "| {} | generate verdict: {} prompts, ≤ {} new tokens, prefill included | {:.1} | {:.1} | {:.2}× | (same processes) | tokens generated {} / {}; llama.cpp decode-only {:.1} tok/s |\n",
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
    s
}
