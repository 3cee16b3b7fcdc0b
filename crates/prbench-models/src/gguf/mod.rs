//! The local GGUF engine: llama.cpp through the `llama-cpp-2` crate (DESIGN.md, engine notes:
//! the reference engine for the performance bar).
//!
//! [`GgufEngine`] loads one GGUF file, takes its chat template from the metadata key
//! `tokenizer.chat_template` (or an override), tokenizes prompts so that untrusted text never
//! becomes special tokens ([`crate::chat_template::Segment`]), and implements
//! [`crate::NextTokenScorer`] (one forward pass, full-vocabulary log-softmax; several prompts
//! that begin alike have that prefix decoded once, see [`GgufEngine::share_prefix`]) and
//! [`crate::Generator`] (greedy or seeded temperature + top-p sampling).
//!
//! llama.cpp's log output is silenced unless the environment variable `PRBENCH_LLAMA_LOG=1`
//! is set when the first engine is loaded.

mod backend;
mod engine;
mod fork;
mod forward;
mod generate;
mod meta;
mod sampler;
mod tokenize;

use std::path::PathBuf;

pub use backend::backend;
pub use engine::GgufEngine;
pub use meta::ftype_name;

/// File name of the default local judge / generator model (DESIGN.md, assets).
pub const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// File name of the default judge of `prbench eval`: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M
/// (DESIGN.md, assets), fetched by `scripts/setup.sh`. Large enough to show the
/// personalization gap between `none` and `oracle`; the tests use [`DEFAULT_MODEL_FILE`].
pub const DEFAULT_JUDGE_FILE: &str = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf";

/// Engine string recorded in manifests ([`crate::ModelIdentity::engine`]) and part of every
/// cache key. "one micro-batch per prompt": since issue 22 a prompt of up to `n_batch` tokens
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
    /// [`crate::NextTokenScorer::next_token_logprobs_many`] (the two orders of a judge pair)
    /// and each prompt's suffix after it. Default: true. Can be changed after load
    /// with [`GgufEngine::set_share_prefix`].
    pub share_prefix: bool,
}

impl Default for GgufOptions {
    fn default() -> Self {
        Self { n_ctx: None, n_threads: None, chat_template: None, share_prefix: true }
    }
}

/// Directory of the local model files: `$PRBENCH_MODELS` if set, else
/// `~/.cache/prbench/models` (where `scripts/fetch-models.sh` puts them).
pub fn models_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("PRBENCH_MODELS").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    home.join(".cache").join("prbench").join("models")
}

/// Path of the default judge of `prbench eval`: [`models_dir`] joined with [`DEFAULT_JUDGE_FILE`].
pub fn default_judge_path() -> PathBuf {
    models_dir().join(DEFAULT_JUDGE_FILE)
}

/// Path of the default model: [`models_dir`] joined with [`DEFAULT_MODEL_FILE`].
pub fn default_model_path() -> PathBuf {
    models_dir().join(DEFAULT_MODEL_FILE)
}
