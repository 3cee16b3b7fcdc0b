//! Scalar reward endpoints of engines that take the conversation as text with the chat template
//! already applied: SGLang's `/classify`, text-embeddings-inference's `/predict` and OpenRLHF's
//! `/get_reward`. Each scores a text `chars / 100` ([`crate::reward::length_score`]) and
//! validates requests the way the real server does, down to the status and error body it sends.
//!
//! SGLang's `/classify` is served at `/sglang/classify` (so a client's SGLang root is
//! `base_url() + "/sglang"`), because `/classify` at the root is vLLM's, whose request shape
//! differs.

use axum::http::StatusCode;
use serde_json::{json, Map, Value};

use crate::app::word_count;
use crate::reward::length_score;

/// A request the real server refuses: its status and body.
pub(crate) struct Refused {
    pub(crate) status: StatusCode,
    pub(crate) body: Vec<u8>,
}

fn refuse(status: StatusCode, body: &Value) -> Refused {
    Refused { status, body: serde_json::to_vec(body).unwrap_or_default() }
}

fn object(body: &[u8]) -> Option<Map<String, Value>> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// SGLang's error body for a request it cannot serve (`_create_error_response` /
/// the `RequestValidationError` handler in `http_server.py`: 400, `ErrorResponse`).
fn sglang_error(message: &str) -> Refused {
    refuse(
        StatusCode::BAD_REQUEST,
        &json!({"object": "error", "message": message, "type": "Bad Request", "param": null, "code": 400}),
    )
}

fn sglang_one(text: &str, seq: u64, index: usize) -> Value {
    json!({
        "embedding": [length_score(text)],
        "meta_info": {"id": format!("fault{seq}-{index}"), "prompt_tokens": word_count(text), "e2e_latency": 0.0}
    })
}

/// `POST /sglang/classify`, SGLang's native reward endpoint (`EmbeddingReqInput`): `{"text":
/// "…"}` → `{"embedding": [score], "meta_info": {"id", "prompt_tokens", "e2e_latency"}}`, or a
/// list of those for `{"text": ["…", …]}`. A body that is not a JSON object, or has no `text`
/// (this server does not take `input_ids`), or a `text` of another type answers 400.
pub(crate) fn sglang_classify(body: &[u8], seq: u64) -> Result<Value, Refused> {
    let Some(req) = object(body) else {
        return Err(sglang_error("the request body must be a JSON object"));
    };
    match req.get("text") {
        Some(Value::String(s)) => Ok(sglang_one(s, seq, 0)),
        Some(Value::Array(items)) if !items.is_empty() => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str()
                    .map(|s| sglang_one(s, seq, i))
                    .ok_or_else(|| sglang_error("`text` must be a string or a list of strings"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        None | Some(Value::Null) => {
            Err(sglang_error("Either text, input_ids or image must be provided"))
        }
        Some(_) => Err(sglang_error("`text` must be a string or a non-empty list of strings")),
    }
}

/// TEI's error body (`ErrorResponse {error, error_type}` in `router/src/http/types.rs`); 422
/// for `Validation` (a body that does not deserialize, empty inputs).
fn tei_error(message: &str) -> Refused {
    refuse(StatusCode::UNPROCESSABLE_ENTITY, &json!({"error": message, "error_type": "Validation"}))
}

fn tei_predictions(text: &str, raw: bool) -> Value {
    let logit = length_score(text);
    // Without raw_scores TEI applies the activation: a sigmoid for a one-label head.
    let score = if raw { logit } else { 1.0 / (1.0 + (-logit).exp()) };
    json!([{"score": score, "label": "LABEL_0"}])
}

/// `POST /predict`, TEI's classification endpoint (`PredictRequest`): `{"inputs": "…",
/// "raw_scores": bool?, "truncate": bool|null?, "truncation_direction": "left"|"right"?}` →
/// `[{"score", "label"}]` for one label `LABEL_0`, a list of such lists for a batch
/// `{"inputs": ["…", …]}`. Without `raw_scores: true` the score is `sigmoid(chars/100)`, as TEI
/// applies the head's activation. 422 `{"error", "error_type": "Validation"}` for a missing or
/// empty `inputs` and fields of the wrong type. Sequence pairs are not supported here.
pub(crate) fn tei_predict(body: &[u8]) -> Result<Value, Refused> {
    let Some(req) = object(body) else {
        return Err(tei_error(
            "Failed to deserialize the JSON body into the target type: expected a JSON object",
        ));
    };
    let raw = match req.get("raw_scores") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(tei_error("Failed to deserialize the JSON body into the target type: raw_scores: invalid type, expected a boolean")),
    };
    if !matches!(req.get("truncate"), None | Some(Value::Null) | Some(Value::Bool(_))) {
        return Err(tei_error("Failed to deserialize the JSON body into the target type: truncate: invalid type, expected a boolean"));
    }
    match req.get("inputs") {
        Some(Value::String(s)) if s.is_empty() => Err(tei_error("`inputs` cannot be empty")),
        Some(Value::String(s)) => Ok(tei_predictions(s, raw)),
        Some(Value::Array(items)) if !items.is_empty() => items
            .iter()
            .map(|v| match v.as_str() {
                Some(s) if !s.is_empty() => Ok(tei_predictions(s, raw)),
                _ => Err(tei_error(
                    "this test server takes `inputs` as strings only (no pairs), none empty",
                )),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        None => Err(tei_error(
            "Failed to deserialize the JSON body into the target type: missing field `inputs`",
        )),
        Some(_) => Err(tei_error("`inputs` cannot be empty")),
    }
}

/// `POST /get_reward`, OpenRLHF's `serve_rm.py`: `{"query": ["…", …]}` → `{"rewards": […],
/// "scores": […], "extra_logs": {"dummy_scores": […]}}`, one reward per query. The real server
/// does not validate: without a list `query` its handler raises and uvicorn answers a plain-text
/// `500 Internal Server Error`, which is what this one sends too.
pub(crate) fn openrlhf_reward(body: &[u8]) -> Result<Value, Refused> {
    let parsed: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let rewards: Option<Vec<f64>> = parsed
        .get("query")
        .and_then(Value::as_array)
        .filter(|q| !q.is_empty())
        .and_then(|q| q.iter().map(|t| t.as_str().map(length_score)).collect());
    let Some(rewards) = rewards else {
        return Err(Refused {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            body: b"Internal Server Error".to_vec(),
        });
    };
    Ok(json!({"rewards": rewards, "scores": rewards, "extra_logs": {"dummy_scores": rewards}}))
}

/// TEI's `GET /info` for the one-label head `/predict` serves: the parts prbench reads
/// (`model_type` with `id2label`; TEI calls a one-label classifier a reranker).
pub(crate) fn tei_info() -> Value {
    json!({
        "model_id": "fault-model",
        "model_type": {"reranker": {"id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0}}},
        "max_input_length": 8192,
    })
}
