//! A reward model served by SGLang, through its native `/classify` endpoint.
//!
//! Checked against SGLang's source (`python/sglang/srt/entrypoints/http_server.py`, stored
//! commit 0025436e, SGLang 0.5.x) and its docs ("SGLang Native APIs" → `/classify` (reward
//! model); "Reward Models", launched with `--is-embedding`):
//!
//! - `POST {base}/classify` takes an `EmbeddingReqInput` (`python/sglang/srt/managers/io_struct.py`):
//!   `{"text": "…"}` with the chat template **already applied** (SGLang's reward-model example
//!   renders with `tokenizer.apply_chat_template(…, tokenize=False)` before sending). prbench
//!   renders it locally with the model's template ([`crate::templated::ChatRenderer`]).
//! - Reply for one text: `{"embedding": [f32; num_labels], "meta_info": {"prompt_tokens", …}}`.
//!   For `*ForSequenceClassification` reward models the pooler takes the last token without
//!   normalization and `embedding` holds the score head's raw outputs (logits; e.g.
//!   `python/sglang/srt/models/llama_reward.py`: `Pooler(LAST, normalize=False)` then
//!   `self.score`). A reward model has one output; with more, `--label-index` names the one to
//!   read (`embedding` is in label-id order), and without it the item fails.
//! - A request SGLang cannot serve (no `text`, a generation model) answers 400 with
//!   `{"object": "error", "message", …}` (`_create_error_response`), which fails every item at
//!   once with the server's message.
//! - The leading BOS string the template writes is dropped before sending (as SGLang's
//!   reward-model examples for Llama-3 models do), since the server's tokenizer adds its own.

use serde_json::{json, Value};

use crate::templated::{number_at, numbers_at, Outputs, TemplatedRewardModel, TextEndpoint};

/// SGLang's `/classify` (see the module docs).
#[derive(Debug)]
pub struct SglangEndpoint;

impl TextEndpoint for SglangEndpoint {
    const ENGINE: &'static str = "sglang classify";
    const KIND: &'static str = "sglang-classify";
    const PATH: &'static str = "/classify";
    const STRIP_BOS: bool = true;
    const LABEL_INDEX: bool = true;
    const SERVER_SIDE: &'static str = "SGLang tokenizes it adding the tokenizer's special tokens, and reports the count per reply";

    /// `{"text": TEXT}`.
    fn body(text: &str) -> Value {
        json!({ "text": text })
    }

    /// `embedding` (raw logits, in label order) and `meta_info.prompt_tokens`.
    fn read(reply: &Value) -> Result<(Outputs, Option<u64>), String> {
        if reply.is_array() {
            return Err("expected one result object for one `text`, got a list".into());
        }
        let value = Outputs::ByIndex(numbers_at(reply, "embedding")?);
        let tokens = reply
            .get("meta_info")
            .map(|m| number_at(m, "prompt_tokens").map(|t| t as u64))
            .transpose()
            .ok()
            .flatten();
        Ok((value, tokens))
    }
}

/// A reward model behind SGLang's `/classify`.
pub type SglangClassify = TemplatedRewardModel<SglangEndpoint>;
