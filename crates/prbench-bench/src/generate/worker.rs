//! One prbench side of `bench generate`, in a child process of its own (`prbench bench
//! generate-worker`): the GGUF engine at the input's `--gen-batch`, one `generate_each` call on
//! every request, timed. See the parent module for what is measured.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use prbench_llm::{GgufEngine, GgufOptions};
use prbench_models::{ChatRequest, Generator};

use super::{SideOutput, WorkerInput};
use crate::child::self_hwm_mib;

/// Runs one prbench side on `model` with the worker input file `input` (what `bench generate`
/// wrote: the requests, threads and batch size); returns its JSON line
/// (the parent's `SideOutput`).
///
/// # Errors
/// An unreadable input, a model that does not load, a warm-up request that fails.
pub fn worker(model: &Path, input: &Path) -> Result<String> {
    let text =
        std::fs::read_to_string(input).with_context(|| format!("reading `{}`", input.display()))?;
    let input: WorkerInput =
        serde_json::from_str(&text).with_context(|| format!("parsing `{}`", input.display()))?;
    let opts = GgufOptions {
        n_threads: Some(input.threads),
        gen_batch: input.gen_batch,
        ..GgufOptions::default()
    };
    let engine =
        GgufEngine::load(model, opts).with_context(|| format!("loading `{}`", model.display()))?;
    engine.set_keep_prefix(input.keep_prefix);
    // Warm-up: one short request, so the first timed step does not pay for page faults and
    // the context's allocation.
    if let Some(first) = input.requests.first() {
        let warm = ChatRequest { max_new_tokens: 4, ..first.clone() };
        engine.generate_one(&warm).context("the warm-up request")?;
    }
    let prompt_tokens =
        input.requests.iter().map(|r| engine.tokenize(&r.prompt).map_or(0, |t| t.len())).sum();
    engine.record_first_tokens(true);
    let reused_before = engine.reused_prompt_tokens();
    let start = Instant::now();
    let replies = engine.generate_each(&input.requests, &|_, _| {});
    let wall_s = start.elapsed().as_secs_f64();
    let ttft_s = engine
        .take_first_tokens()
        .into_iter()
        .map(|t| t.saturating_duration_since(start).as_secs_f64())
        .collect();
    let mut out = SideOutput {
        prompt_tokens,
        gen_tokens: 0,
        wall_s,
        ttft_s,
        texts: Vec::with_capacity(replies.len()),
        failed: 0,
        vm_hwm_mib: self_hwm_mib(),
        reused_prompt_tokens: Some(engine.reused_prompt_tokens() - reused_before),
    };
    for reply in replies {
        match reply {
            Ok(r) => {
                out.gen_tokens += r.tokens.output_tokens;
                out.texts.push(r.text);
            }
            Err(e) => {
                eprintln!(
                    "bench generate-worker: a request failed: {}",
                    prbench_models::error::chain(&e)
                );
                out.failed += 1;
                out.texts.push(String::new());
            }
        }
    }
    Ok(serde_json::to_string(&out)?)
}
