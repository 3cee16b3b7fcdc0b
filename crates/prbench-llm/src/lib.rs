//! The local language-model engine: GGUF files run by llama.cpp through the `llama-cpp-2` crate,
//! as a judge ([`prbench_models::NextTokenScorer`]) and a generator ([`prbench_models::Generator`]).
//! It is also the reference engine of the performance bar (`prbench bench judge`).
//!
//! [`GgufEngine`] loads one GGUF file, takes its chat template from the metadata key
//! `tokenizer.chat_template` (or an override), tokenizes prompts so that untrusted text never
//! becomes special tokens ([`prbench_models::chat_template::Segment`]), and implements
//! [`prbench_models::NextTokenScorer`] (one forward pass, full-vocabulary log-softmax; several prompts
//! that begin alike have that prefix decoded once, see [`GgufEngine::share_prefix`]) and
//! [`prbench_models::Generator`] (greedy or seeded temperature + top-p sampling).
//!
//! llama.cpp's log output is silenced unless the environment variable `PRBENCH_LLAMA_LOG=1`
//! is set when the first engine is loaded.

#![deny(missing_docs)]

mod backend;
mod batch;
mod decoding;
mod engine;
mod fork;
mod forward;
mod generate;
mod meta;
mod sampler;
mod tokenize;

pub use backend::backend;
pub use engine::GgufEngine;
pub use generate::GENERATION;
pub use meta::ftype_name;

/// Engine string recorded in manifests ([`prbench_models::ModelIdentity::engine`]) and part of every
/// cache key. "one micro-batch per prompt": a prompt of up to `n_batch` tokens
/// is decoded in one llama.cpp micro-batch (`n_ubatch = n_batch`), where it used to be cut
/// into micro-batches of 512. llama.cpp's CPU attention takes another kernel for the rows of a
/// short micro-batch, so prompts over 512 tokens get slightly different logits than before;
/// the changed name keeps verdicts and generations cached by older builds from mixing in.
pub const ENGINE_NAME: &str = "llama.cpp (llama-cpp-2 0.1.160, one micro-batch per prompt)";

/// Options for [`GgufEngine::load`]. `Default` gives the documented defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GgufOptions {
    /// Context window in tokens (prompt + generated tokens). Default: the model's training
    /// context (`n_ctx_train`) capped at 8192.
    pub n_ctx: Option<u32>,
    /// CPU threads for prefill and decode. Default: the available cores.
    pub n_threads: Option<i32>,
    /// Jinja chat template to use instead of the file's `tokenizer.chat_template` (required for
    /// base models that ship none, e.g. Gemma-3-270M base).
    pub chat_template: Option<String>,
    /// Decode the common token prefix of consecutive prompts once in
    /// [`prbench_models::NextTokenScorer::next_token_logprobs_many`] (the two orders of a judge pair)
    /// and each prompt's suffix after it. Default: true. Can be changed after load
    /// with [`GgufEngine::set_share_prefix`].
    pub share_prefix: bool,
    /// Most sequences a [`prbench_models::Generator`] call decodes together, each on its own
    /// KV stream, every decode step computing one token of each (continuous batching: a
    /// sequence that stops frees its slot for the next request). 1 decodes one request at a
    /// time. Default: [`DEFAULT_GEN_BATCH`]. Can be changed after load with
    /// [`GgufEngine::set_gen_batch`].
    pub gen_batch: usize,
}

/// The default [`GgufOptions::gen_batch`]: 4, chosen from one `prbench bench generate` run over
/// `build`, `bon sample` and planner prompts on 2 threads (docs/perf.md, "Prompt prefixes kept
/// in generation, and the full `bench generate` table"). On the 1.5B Q4_K_M model, 4 was faster
/// than 8 on all three workloads (1.10× to 1.23×) and, unlike 8, gave outputs equal to one at a
/// time; on SmolLM2 4 and 8 were within 11% of each other (0.89× to 1.02×), with equal
/// outputs. It also holds about 100 MiB less KV than 8.
pub const DEFAULT_GEN_BATCH: usize = 4;

impl Default for GgufOptions {
    fn default() -> Self {
        Self {
            n_ctx: None,
            n_threads: None,
            chat_template: None,
            share_prefix: true,
            gen_batch: DEFAULT_GEN_BATCH,
        }
    }
}
