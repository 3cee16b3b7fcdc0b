//! One side of `bench judge`, in a child process of its own (`prbench bench judge-worker`):
//! prbench's `LogprobJudge` / `GenerateJudge` on its `GgufEngine`, or llama.cpp driven directly
//! through `llama-cpp-2` on the parent's token ids. See the parent module for what is timed.

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use prbench_llm::{backend, GgufEngine, GgufOptions};
use prbench_models::judge::{GenerateJudge, LogprobJudge};
use prbench_models::{Judge, JudgeRequest};
use serde::{Deserialize, Serialize};

use crate::child::self_hwm_mib;

/// What the parent hands a worker: the requests and, per request, the token ids the reference
/// decodes.
#[derive(Serialize, Deserialize)]
pub(crate) struct WorkerInput {
    /// Logprob-verdict requests (prompt without `Result:`, which the judge appends).
    pub(super) requests: Vec<JudgeRequest>,
    /// Token ids of each request's prompt with `Result:` appended.
    pub(super) prefill_ids: Vec<Vec<i32>>,
    /// Token ids of each generate request's prompt.
    pub(super) gen_ids: Vec<Vec<i32>>,
    /// Token ids of ` A` and ` B`.
    pub(super) slot_ids: [i32; 2],
    pub(super) gen_prompts: usize,
    pub(super) max_new_tokens: usize,
    pub(super) threads: i32,
    pub(super) ref_ctx: u32,
    pub(super) chat_template: Option<String>,
    /// prbench's shared-prefix fork (`GgufEngine::set_share_prefix`) for the `prbench` side;
    /// `None` leaves the engine's default. The `prbench-forked` / `prbench-unforked` sides
    /// set it themselves.
    #[serde(default)]
    pub(super) share_prefix: Option<bool>,
}

/// What a worker prints (one JSON line).
#[derive(Serialize, Deserialize, Debug, Clone)]
pub(crate) struct WorkerOutput {
    pub(super) side: String,
    pub(super) load_s: f64,
    pub(super) prefill_tokens: usize,
    pub(super) prefill_s: f64,
    /// log p(A) − log p(B) per request.
    pub(super) margins: Vec<f64>,
    pub(super) gen_prompt_tokens: usize,
    pub(super) gen_tokens: usize,
    pub(super) gen_s: f64,
    /// Reference only: seconds spent in single-token decode steps.
    pub(super) decode_s: Option<f64>,
    /// Tokens generated per generate request.
    pub(super) gen_counts: Vec<usize>,
    /// The worker's own peak RSS (`VmHWM` at the end), MiB. `wait4`'s `ru_maxrss` cannot be
    /// used here: Linux folds the parent's high-water mark into a spawned child's at `exec`.
    pub(super) vm_hwm_mib: f64,
    /// prbench sides: prompt tokens the engine did not decode because a shared prefix was
    /// reused (`GgufEngine::shared_prefix_tokens`), over the timed logprob calls.
    #[serde(default)]
    pub(super) shared_prefix_tokens: Option<u64>,
}

fn lse(logits: &[f32]) -> f64 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    max + logits.iter().map(|&l| (l as f64 - max).exp()).sum::<f64>().ln()
}

fn gguf_options(input: &WorkerInput) -> GgufOptions {
    GgufOptions {
        n_threads: Some(input.threads),
        chat_template: input.chat_template.clone(),
        ..GgufOptions::default()
    }
}

/// How a prbench side decodes shared prefixes (`None`: the engine's default).
#[derive(Clone, Copy)]
struct PrefixSetting {
    share: Option<bool>,
    keep: Option<bool>,
}

fn prbench_side(
    model: &Path,
    input: &WorkerInput,
    prefix: PrefixSetting,
    code_version: &str,
) -> Result<WorkerOutput> {
    let t = Instant::now();
    let engine = GgufEngine::load(model, gguf_options(input))?;
    if let Some(on) = prefix.share {
        engine.set_share_prefix(on);
    }
    if let Some(on) = prefix.keep {
        engine.set_keep_prefix(on);
    }
    let load_s = t.elapsed().as_secs_f64();
    let judge = LogprobJudge::new(&engine);
    judge.judge(&input.requests[..1])?;
    // The warm-up's prompt scored alone, so the timed call keeps nothing from it.
    engine.last_logits(&input.prefill_ids[0])?;
    let reused_before = engine.shared_prefix_tokens();
    let t = Instant::now();
    let verdicts = judge.judge(&input.requests)?;
    let prefill_s = t.elapsed().as_secs_f64();
    let shared_prefix_tokens = engine.shared_prefix_tokens() - reused_before;
    let gen = GenerateJudge::new(&engine, input.max_new_tokens);
    let reqs = &input.requests[..input.gen_prompts];
    let t = Instant::now();
    let replies = gen.judge(reqs)?;
    let gen_s = t.elapsed().as_secs_f64();
    Ok(WorkerOutput {
        side: format!(
            "prbench {code_version} (LogprobJudge / GenerateJudge on GgufEngine, shared prefix {})",
            match (engine.share_prefix(), engine.keep_prefix()) {
                (false, _) => "off",
                (true, false) => "per group",
                (true, true) => "forked, kept across groups",
            }
        ),
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
        shared_prefix_tokens: Some(shared_prefix_tokens),
    })
}

/// Decodes `ids` from position 0 (KV cache cleared) in batches of `n_batch`; returns the batch
/// index of the last token's logits.
fn ref_prefill(
    ctx: &mut llama_cpp_2::context::LlamaContext<'_>,
    batch: &mut LlamaBatch<'_>,
    ids: &[i32],
    n_batch: usize,
) -> Result<i32> {
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
    let margin = |ctx: &mut llama_cpp_2::context::LlamaContext<'_>,
                  batch: &mut LlamaBatch<'_>,
                  ids: &[i32]|
     -> Result<f64> {
        let idx = ref_prefill(ctx, batch, ids, n_batch)?;
        let logits = ctx.get_logits_ith(idx);
        let l = lse(logits);
        let [a, b] = input.slot_ids.map(|s| logits[s as usize] as f64 - l);
        Ok(a - b)
    };
    margin(&mut ctx, &mut batch, &input.prefill_ids[0])?;
    let t = Instant::now();
    let margins = input
        .prefill_ids
        .iter()
        .map(|ids| margin(&mut ctx, &mut batch, ids))
        .collect::<Result<Vec<_>>>()?;
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
            let next = logits
                .iter()
                .enumerate()
                .fold(
                    (0, f32::NEG_INFINITY),
                    |(bi, bv), (i, &v)| if v > bv { (i, v) } else { (bi, bv) },
                )
                .0;
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
        side: format!(
            "llama.cpp via llama-cpp-2 {}, n_ctx {}",
            prbench_llm::ENGINE_NAME,
            input.ref_ctx
        ),
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
        shared_prefix_tokens: None,
    })
}

/// One worker run (`prbench bench judge-worker`): `side` on `model` with the input file the
/// parent wrote; returns the JSON line the worker prints. Sides: `prbench` (the engine's
/// shared-prefix setting from the input), `prbench-forked` / `prbench-unforked` (shared prefix
/// on / off), `prbench-groups` (shared prefix on, each group from a cleared cache),
/// `llama.cpp` (each prompt decoded alone from a cleared cache).
///
/// # Errors
/// An unreadable input, an unknown side, model loading or decoding failures.
pub fn worker(side: &str, model: &Path, input: &Path, code_version: &str) -> Result<String> {
    let input: WorkerInput = serde_json::from_str(
        &std::fs::read_to_string(input)
            .with_context(|| format!("reading `{}`", input.display()))?,
    )?;
    let out = match side {
        "prbench" => prbench_side(
            model,
            &input,
            PrefixSetting { share: input.share_prefix, keep: None },
            code_version,
        )?,
        "prbench-forked" => prbench_side(
            model,
            &input,
            PrefixSetting { share: Some(true), keep: Some(true) },
            code_version,
        )?,
        "prbench-groups" => prbench_side(
            model,
            &input,
            PrefixSetting { share: Some(true), keep: Some(false) },
            code_version,
        )?,
        "prbench-unforked" => prbench_side(
            model,
            &input,
            PrefixSetting { share: Some(false), keep: None },
            code_version,
        )?,
        "llama.cpp" => reference_side(model, &input)?,
        other => {
            bail!("unknown side `{other}`: prbench, prbench-forked, prbench-groups, prbench-unforked or llama.cpp")
        }
    };
    Ok(serde_json::to_string(&out)?)
}
