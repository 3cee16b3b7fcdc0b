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
//!   **sorted by score, highest first** (`router/src/http/server.rs`, `predict`: each score is
//!   paired with `id2label[i]`, then the list is sorted and reversed), so the position is not
//!   the label id. A reward model has one label; a reply with several fails the item unless
//!   `--label-index N` names one.
//! - `--label-index N` is the label id, as for every other engine (the row of the head, key
//!   `"N"` of the model's `config.json` `id2label`). Since the reply is ordered by score, the
//!   prediction is chosen by its `label`: at load, `GET {base}/info` gives the served model's
//!   `id2label` (`model_type: {"classifier"|"reranker": {"id2label": {"0": …}, …}}`; TEI refuses
//!   to start a classifier whose config has no `id2label`), the name of id N is looked up
//!   there (every replica must agree), and each item reads the prediction with that `label`.
//! - Errors: 422 for a request that does not parse or a text that does not tokenize (the
//!   `Validation`/`Tokenizer` error types), 424 for a backend failure (not retried: a model
//!   that fails on a text fails again), 429 when TEI's queue is full (retried), 503 unhealthy.
//! - TEI tokenizes `/predict` inputs with special tokens added (`core/src/tokenization.rs`,
//!   `encode_input` → `tokenize_input(…, true, …)`), so a leading BOS string the template
//!   writes is dropped before sending, leaving one BOS.

use serde_json::{json, Value};

use crate::templated::{number_at, Outputs, TemplatedRewardModel, TextEndpoint};

/// TEI's `/predict` (see the module docs).
#[derive(Debug)]
pub struct TeiEndpoint;

impl TextEndpoint for TeiEndpoint {
    const ENGINE: &'static str = "text-embeddings-inference predict";
    const KIND: &'static str = "tei";
    const PATH: &'static str = "/predict";
    const STRIP_BOS: bool = true;
    const LABEL_INDEX: bool = true;
    const LABELS_PATH: Option<&'static str> = Some("/info");
    const SERVER_SIDE: &'static str = "TEI tokenizes it adding the tokenizer's special tokens and refuses a text over the model's limit (`truncate: false`), which fails that item";

    /// `{"inputs": TEXT, "raw_scores": true, "truncate": false}`.
    fn body(text: &str) -> Value {
        json!({ "inputs": text, "raw_scores": true, "truncate": false })
    }

    /// Every prediction's `label` and `score` (raw logits); TEI reports no token count.
    fn read(reply: &Value) -> Result<(Outputs, Option<u64>), String> {
        let list = reply.as_array().ok_or_else(|| {
            format!(
                "expected a list of predictions `[{{\"score\", \"label\"}}]`, got {}",
                short(reply)
            )
        })?;
        if list.is_empty() {
            return Err("the list of predictions is empty".into());
        }
        let outputs = list
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let score = number_at(p, "score").map_err(|e| format!("prediction {i}: {e}"))?;
                let label = match p.get("label") {
                    Some(Value::String(l)) => l.clone(),
                    // One prediction needs no name to be read.
                    None | Some(Value::Null) if list.len() == 1 => String::new(),
                    _ => return Err(format!("prediction {i}: no string `label`")),
                };
                Ok((label, score))
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok((Outputs::ByLabel(outputs), None))
    }

    /// `model_type.<kind>.id2label["INDEX"]` of `GET /info`.
    fn label_name(info: &Value, index: usize) -> Result<String, String> {
        let kinds = info
            .get("model_type")
            .and_then(Value::as_object)
            .ok_or_else(|| format!("no `model_type` object in {}", short(info)))?;
        let id2label = kinds
            .values()
            .find_map(|k| k.get("id2label").and_then(Value::as_object))
            .ok_or_else(|| {
                format!(
                    "`model_type` has no `id2label` (is the served model a classifier?): {}",
                    short(info)
                )
            })?;
        match id2label.get(&index.to_string()) {
            Some(Value::String(name)) => {
                let mut same: Vec<&str> = id2label
                    .iter()
                    .filter(|(_, v)| v.as_str() == Some(name))
                    .map(|(k, _)| k.as_str())
                    .collect();
                if same.len() > 1 {
                    same.sort_by_key(|k| k.parse::<u64>().unwrap_or(u64::MAX));
                    return Err(format!(
                        "labels {} of the model's `id2label` are all named `{name}` (ambiguous label name); TEI names each prediction by its label and sorts them by score, so which `{name}` is label {index} cannot be known. Serve the model with a config whose `id2label` gives each label a distinct name",
                        same.join(", ")
                    ));
                }
                Ok(name.clone())
            }
            _ => Err(format!(
                "the model's `id2label` has no label {index}; its labels: {}",
                short(&Value::Object(id2label.clone()))
            )),
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
