//! A reward model served by Hugging Face text-embeddings-inference (TEI), through `/predict`.
//!
//! Checked against TEI v1.9.3 (stored commit 0d124dc9): `router/src/http/types.rs`
//! (`PredictRequest`, `PredictInput`, `Prediction`, `PredictResponse`),
//! `router/src/http/server.rs` (`predict`, error statuses) and `core/src/infer.rs` (`predict`:
//! the activation):
//!
//! - `POST {base}/predict` with `{"inputs": "TEXT", "raw_scores": true, "truncate": false}`.
//!   `inputs` is one string (a single sequence; a pair or a list would be other shapes). TEI
//!   does not apply chat templates: prbench sends the conversation rendered with the model's
//!   template ([`crate::templated::ChatRenderer`]).
//! - `raw_scores: true` returns the head's logits. Without it TEI applies a sigmoid (one label)
//!   or softmax (several) — PROTOCOL.md §3 wants the logit.
//! - `truncate: false`: a text longer than the model's maximum fails with 413/422 instead of
//!   being cut silently (TEI's default is not to truncate either; sent to be explicit).
//! - Reply for one input: `[{"score": f32, "label": "LABEL_0"}, …]`, one entry per label,
//!   **sorted by score, highest first** (so the position is not the label index). A reward
//!   model has one label; a reply with several fails the item.
//! - Errors: 422 for a request that does not parse or a text that does not tokenize (the
//!   `Validation`/`Tokenizer` error types), 424 for a backend failure (not retried: a model
//!   that fails on a text fails again), 429 when TEI's queue is full (retried), 503 unhealthy.
//! - TEI tokenizes `/predict` inputs with special tokens added (`core/src/tokenization.rs`,
//!   `encode_input` → `tokenize_input(…, true, …)`), so a leading BOS string the template
//!   writes is dropped before sending, leaving one BOS.

use serde_json::{json, Value};

use crate::templated::{number_at, TemplatedRewardModel, TextEndpoint};

/// TEI's `/predict` (see the module docs).
#[derive(Debug)]
pub struct TeiEndpoint;

impl TextEndpoint for TeiEndpoint {
    const ENGINE: &'static str = "text-embeddings-inference predict";
    const KIND: &'static str = "tei";
    const PATH: &'static str = "/predict";
    const STRIP_BOS: bool = true;

    /// `{"inputs": TEXT, "raw_scores": true, "truncate": false}`.
    fn body(text: &str) -> Value {
        json!({ "inputs": text, "raw_scores": true, "truncate": false })
    }

    /// The one prediction's `score` (a raw logit); TEI reports no token count.
    fn read(reply: &Value) -> Result<(f64, Option<u64>), String> {
        let list = reply.as_array().ok_or_else(|| format!("expected a list of predictions `[{{\"score\", \"label\"}}]`, got {}", short(reply)))?;
        match list.as_slice() {
            [one] => Ok((number_at(one, "score").map_err(|e| format!("prediction 0: {e}"))?, None)),
            [] => Err("the list of predictions is empty".into()),
            many => Err(format!("{} predictions (labels); a reward model's head has one output", many.len())),
        }
    }

    fn settings() -> Value {
        json!({ "raw_scores": true, "truncate": false })
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 80 {
        format!("{}…", s.chars().take(80).collect::<String>())
    } else {
        s
    }
}

/// A reward model behind TEI's `/predict`.
pub type TeiPredict = TemplatedRewardModel<TeiEndpoint>;
