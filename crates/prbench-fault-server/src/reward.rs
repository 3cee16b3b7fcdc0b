//! Scalar reward endpoints: the prbench reward protocol and vLLM's classify / pooling APIs.
//!
//! Every score is `number of characters of the scored text / 100`, so longer texts score higher
//! and a test can predict every value.

use serde::Deserialize;
use serde_json::{json, Value};

use crate::app::{word_count, BadRequest};
use crate::openai::{Message, MODEL_ID};

/// The score the server gives a text: `chars / 100`.
pub fn length_score(text: &str) -> f64 {
    text.chars().count() as f64 / 100.0
}

/// One item of the reward protocol (PROTOCOL.md §7). All three fields are required; `profile`
/// may be any JSON value (text or list of posts).
#[derive(Deserialize)]
#[allow(dead_code)] // query and profile are validated, not used: the score reads response_text
struct ScoreItem {
    query: String,
    profile: Value,
    response_text: String,
}

#[derive(Deserialize)]
struct ScoreBatch {
    items: Vec<ScoreItem>,
}

/// `POST /score`: `{query, profile, response_text}` → `{"score": chars(response_text)/100}`.
pub(crate) fn score(body: &[u8]) -> Result<Value, BadRequest> {
    let item: ScoreItem = serde_json::from_slice(body).map_err(BadRequest::json)?;
    Ok(json!({ "score": length_score(&item.response_text) }))
}

/// `POST /score/batch`: `{"items": [{query, profile, response_text}, …]}` → `{"scores": […]}`.
pub(crate) fn score_batch(body: &[u8]) -> Result<Value, BadRequest> {
    let batch: ScoreBatch = serde_json::from_slice(body).map_err(BadRequest::json)?;
    let scores: Vec<f64> = batch.items.iter().map(|i| length_score(&i.response_text)).collect();
    Ok(json!({ "scores": scores }))
}

/// Request of vLLM's `/classify` and `/pooling`: completion-style `input` (a string or a list of
/// strings) or chat-style `messages` (the last message is scored).
#[derive(Deserialize)]
struct VllmRequest {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    messages: Option<Vec<Message>>,
}

impl VllmRequest {
    fn texts(&self) -> Result<Vec<String>, BadRequest> {
        match (&self.input, &self.messages) {
            (Some(Value::String(s)), _) => {
                if s.is_empty() {
                    return Err(BadRequest::new("Input cannot be empty for classification"));
                }
                Ok(vec![s.clone()])
            }
            (Some(Value::Array(items)), _) => items
                .iter()
                .map(|v| {
                    v.as_str().map(str::to_owned).ok_or_else(|| {
                        BadRequest::new("this test server accepts 'input' as strings only")
                    })
                })
                .collect(),
            (Some(_), _) => Err(BadRequest::new("'input' must be a string or a list of strings")),
            (None, Some(messages)) => match messages.last() {
                Some(last) => Ok(vec![last.text()]),
                None => Err(BadRequest::new("'messages' must not be empty")),
            },
            (None, None) => Err(BadRequest::new("either 'input' or 'messages' is required")),
        }
    }

    fn model(&self) -> &str {
        self.model.as_deref().unwrap_or(MODEL_ID)
    }
}

fn vllm_usage(texts: &[String]) -> Value {
    let prompt_tokens: usize = texts.iter().map(|t| word_count(t)).sum();
    json!({
        "prompt_tokens": prompt_tokens,
        "total_tokens": prompt_tokens,
        "completion_tokens": 0,
        "prompt_tokens_details": null,
    })
}

/// `POST /classify` in vLLM's shape for a sequence-classification model with one label
/// (a reward head). Mirrors vLLM's docs, "OpenAI-Compatible Server" → "Classification API"
/// (`docs/serving/openai_compatible_server.md`, example responses; `ClassificationResponse` in
/// `vllm/entrypoints/openai/protocol.py`):
///
/// ```json
/// {"id": "classify-…", "object": "list", "created": 1745383065, "model": "…",
///  "data": [{"index": 0, "label": "LABEL_0", "probs": [0.42], "num_classes": 1}],
///  "usage": {"prompt_tokens": 7, "total_tokens": 7, "completion_tokens": 0,
///            "prompt_tokens_details": null}}
/// ```
///
/// `probs[0]` (where vLLM puts the head's single output) is `chars(text)/100`; it is not
/// squashed into (0, 1), so long texts give values above 1.
pub(crate) fn classify(body: &[u8], seq: u64, created: u64) -> Result<Value, BadRequest> {
    let req: VllmRequest = serde_json::from_slice(body).map_err(BadRequest::json)?;
    let texts = req.texts()?;
    let data: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(index, t)| {
            json!({"index": index, "label": "LABEL_0", "probs": [length_score(t)], "num_classes": 1})
        })
        .collect();
    Ok(json!({
        "id": format!("classify-fault{seq}"),
        "object": "list",
        "created": created,
        "model": req.model(),
        "data": data,
        "usage": vllm_usage(&texts),
    }))
}

/// `POST /pooling` in vLLM's shape (docs "OpenAI-Compatible Server" → "Pooling API";
/// `PoolingResponse` / `PoolingResponseData` in vLLM's protocol): for a one-label
/// classification/reward head `data[i].data` is a one-element list of floats.
///
/// ```json
/// {"id": "pool-…", "object": "list", "created": 1745383065, "model": "…",
///  "data": [{"index": 0, "object": "pooling", "data": [0.42]}],
///  "usage": {"prompt_tokens": 7, "total_tokens": 7, "completion_tokens": 0,
///            "prompt_tokens_details": null}}
/// ```
pub(crate) fn pooling(body: &[u8], seq: u64, created: u64) -> Result<Value, BadRequest> {
    let req: VllmRequest = serde_json::from_slice(body).map_err(BadRequest::json)?;
    let texts = req.texts()?;
    let data: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(index, t)| json!({"index": index, "object": "pooling", "data": [length_score(t)]}))
        .collect();
    Ok(json!({
        "id": format!("pool-fault{seq}"),
        "object": "list",
        "created": created,
        "model": req.model(),
        "data": data,
        "usage": vllm_usage(&texts),
    }))
}
