//! Remote engines for prbench: backends reached over HTTP (model specs `openai:`, `vllm-classify:`,
//! `sglang-classify:`, `tei:`, `openrlhf:` and `reward-server:`; docs/guide/src/models.md).
//!
//! - [`OpenAiChat`]: an OpenAI-compatible chat endpoint as a [`prbench_models::Generator`];
//!   [`OpenAiJudge`] makes it a pairwise [`prbench_models::Judge`] (PROTOCOL.md §4), with
//!   p(A) from the server's log-probabilities when it returns them.
//! - [`ServerLogprobJudge`]: the logprob verdict of the in-process judge through a server: the
//!   prompt plus `Result:` as the start of the assistant turn, one token, log p(A) and log p(B)
//!   from the top log-probabilities (chat prefill or the completions endpoint, [`next_token`]).
//! - [`VllmClassify`]: a sequence-classification reward model served by vLLM's `/classify`.
//! - [`RewardServer`]: a reward model behind the HTTP reward protocol of PROTOCOL.md §7.
//! - [`SglangClassify`], [`TeiPredict`], [`OpenRlhfReward`]: reward models behind SGLang's
//!   `/classify`, text-embeddings-inference's `/predict` and OpenRLHF's `/get_reward`, which take
//!   the conversation as text: prbench renders it with the model's chat template
//!   ([`ChatRenderer`], one [`TemplatedRewardModel`] core for the three).
//!
//! All of them share one HTTP core: several base URLs per model (replicas, least outstanding
//! requests first), at most [`RemoteOptions::concurrency`] requests in flight, a per-request
//! timeout, retries with exponential backoff and full jitter on 408/429/5xx, timeouts, dropped
//! connections and truncated bodies (honouring `Retry-After`), no retry on other 4xx, and an API
//! key taken only from an environment variable and redacted from every message. Each backend
//! owns a small tokio runtime; its methods are synchronous and must not be called from inside
//! another tokio runtime. Per-item methods (`judge_each`, `score_each`, `chat_each`) call their
//! `done` hook the moment an item succeeds, so a cache keeps every paid result even if the run
//! is killed mid-batch.
//!
//! ```no_run
//! use prbench_remote::{JudgeConfig, OpenAiChat, OpenAiJudge, RemoteOptions, VerdictSource};
//!
//! let opts = RemoteOptions { api_key_env: Some("OPENAI_API_KEY".into()), ..RemoteOptions::default() };
//! let chat = OpenAiChat::new("smollm2", vec!["http://127.0.0.1:18080/v1".into()], opts)?
//!     .with_spec("openai:smollm2@http://127.0.0.1:18080/v1");
//! let judge = OpenAiJudge::new(chat, JudgeConfig { verdict: VerdictSource::Auto, ..JudgeConfig::default() })?;
//! # Ok::<(), prbench_models::ModelError>(())
//! ```
#![deny(missing_docs)]

mod client;
pub mod logprobs;
pub mod next_token;
pub mod openai;
pub mod openai_judge;
pub mod openrlhf;
pub mod options;
pub mod probe;
pub mod redact;
mod replicas;
pub mod retry;
pub mod reward_server;
pub mod sglang;
mod stats;
pub mod tei;
pub mod templated;
pub mod vllm;

pub use next_token::{LogprobTransport, NextTokenConfig, ServerLogprobJudge};
pub use openai::{fold_seed, ChatReply, OpenAiChat};
pub use openai_judge::{pair_seed, JudgeConfig, OpenAiJudge, VerdictSource};
pub use openrlhf::OpenRlhfReward;
pub use options::RemoteOptions;
pub use reward_server::RewardServer;
pub use sglang::SglangClassify;
pub use stats::LatencySummary;
pub use tei::TeiPredict;
pub use templated::{
    ChatRenderer, RenderedRewardModel, TemplatedRewardModel, TextEndpoint, TextPreflight,
};
pub use vllm::VllmClassify;

/// What names a served model in cache keys and manifests: `MODEL @ URL,URL` with the replica
/// URLs sorted. The URLs are part of it because servers such as llama.cpp's ignore the model
/// name: two servers answering to the same name must not share cache entries. Adding or
/// removing a replica therefore starts a fresh set of entries.
pub fn served_model_id(model: &str, urls: &[String]) -> String {
    let mut urls = urls.to_vec();
    urls.sort();
    format!("{model} @ {}", urls.join(","))
}

/// An `f32` setting as the JSON number a person would write (`0.7`, not
/// `0.699999988079071`): the shortest decimal that reads back as the same `f32`.
pub(crate) fn json_f32(x: f32) -> serde_json::Value {
    x.to_string()
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(serde_json::Value::Null, serde_json::Value::Number)
}

/// `v` with every object's keys in sorted order, whichever map serde_json was built with, so
/// records that feed cache keys serialize the same way every time.
pub(crate) fn sorted(v: serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(m) => {
            let mut entries: Vec<(String, serde_json::Value)> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            serde_json::Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        serde_json::Value::Array(a) => {
            serde_json::Value::Array(a.into_iter().map(sorted).collect())
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f32_settings_print_as_written() {
        assert_eq!(json_f32(0.7).to_string(), "0.7");
        assert_eq!(json_f32(1.0).to_string(), "1.0");
        assert_eq!(json_f32(f32::NAN), serde_json::Value::Null);
    }

    #[test]
    fn keys_are_sorted_recursively() {
        let v = sorted(serde_json::json!({"b": 1, "a": {"d": [ {"z": 1, "y": 2} ], "c": 0}}));
        assert_eq!(v.to_string(), r#"{"a":{"c":0,"d":[{"y":2,"z":1}]},"b":1}"#);
    }
}
