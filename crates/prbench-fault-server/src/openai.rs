//! `GET /v1/models` and `POST /v1/chat/completions` in the shape of llama.cpp's server.

use serde::Deserialize;
use serde_json::{json, Value};

use crate::app::{word_count, BadRequest};
use crate::config::{Letter, ServerConfig};

/// Model id the server reports and echoes when a request names none.
pub(crate) const MODEL_ID: &str = "fault-model";

/// Reply of [`VerdictRule::Garbage`](crate::VerdictRule::Garbage): no `Result:` line at all.
pub const GARBAGE_REPLY: &str = "I cannot decide between these two.";

/// The reply text for a verdict: `"Looks fine.\nResult: A"` / `"…B"`.
pub fn verdict_reply(letter: Letter) -> &'static str {
    match letter {
        Letter::A => "Looks fine.\nResult: A",
        Letter::B => "Looks fine.\nResult: B",
    }
}

pub(crate) fn models() -> Value {
    json!({
        "object": "list",
        "data": [{"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "prbench-fault-server"}]
    })
}

#[derive(Deserialize)]
pub(crate) struct Message {
    #[serde(default)]
    pub(crate) role: String,
    #[serde(default)]
    pub(crate) content: Value,
}

impl Message {
    /// The text of the message: a string content, or the concatenated `text` of content parts.
    pub(crate) fn text(&self) -> String {
        content_text(&self.content)
    }
}

fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => {
            parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect()
        }
        _ => String::new(),
    }
}

#[derive(Deserialize)]
struct ChatRequest {
    #[serde(default)]
    model: Option<String>,
    messages: Vec<Message>,
    #[serde(default)]
    logprobs: Option<bool>,
    #[serde(default)]
    top_logprobs: Option<u32>,
}

pub(crate) fn chat(
    cfg: &ServerConfig,
    body: &[u8],
    seq: u64,
    created: u64,
) -> Result<Value, BadRequest> {
    let req: ChatRequest = serde_json::from_slice(body).map_err(BadRequest::json)?;
    if req.messages.is_empty() {
        return Err(BadRequest::new("'messages' must not be empty"));
    }
    if req.messages.last().is_some_and(|m| m.role == "assistant") {
        if !cfg.prefill {
            return Err(BadRequest::new(
                "the last message must be the user's: continuing an assistant message is not supported",
            ));
        }
        let (prefill, messages) = req.messages.split_last().expect("not empty");
        let prompt: String = messages.iter().map(Message::text).collect();
        let k = req.top_logprobs.unwrap_or(0).min(20) as usize;
        let one = crate::next_token::NextToken::new(cfg, &prompt, &prefill.text(), k);
        return Ok(one.chat_reply(
            cfg,
            req.model.as_deref(),
            req.logprobs == Some(true),
            seq,
            created,
        ));
    }
    let texts: Vec<String> = req.messages.iter().map(Message::text).collect();
    let concatenated: String = texts.concat();
    let scripted = cfg.replies.iter().find(|r| concatenated.contains(&r.marker));
    let letter = if scripted.is_some() { None } else { cfg.verdict.letter_for(&concatenated) };
    let reply = match scripted {
        Some(r) => r.text.as_str(),
        None => letter.map(verdict_reply).unwrap_or(GARBAGE_REPLY),
    };
    let finish_reason = scripted.map_or("stop", |r| r.finish_reason.as_str());

    let prompt_tokens: usize = texts.iter().map(|t| word_count(t)).sum();
    let completion_tokens = word_count(reply);

    let logprobs = if cfg.logprobs && req.logprobs == Some(true) {
        let k = req.top_logprobs.unwrap_or(0).min(20) as usize;
        json!({ "content": logprob_content(reply, letter, k) })
    } else {
        Value::Null
    };

    Ok(json!({
        "id": format!("chatcmpl-fault{seq}"),
        "object": "chat.completion",
        "created": created,
        "model": req.model.as_deref().unwrap_or(MODEL_ID),
        "system_fingerprint": "prbench-fault-server",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": reply},
            "logprobs": logprobs,
            "finish_reason": finish_reason,
        }],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }))
}

/// Splits a reply into tokens the way a BPE tokenizer roughly would: a word with at most one
/// leading space (`" fine"`), each punctuation mark alone (`"."`, `":"`), a newline alone.
/// The tokens concatenate back to the reply exactly.
pub fn tokenize(reply: &str) -> Vec<&str> {
    let mut tokens = Vec::new();
    let idx: Vec<(usize, char)> = reply.char_indices().collect();
    let end_of = |i: usize| idx.get(i).map_or(reply.len(), |&(b, _)| b);
    let mut i = 0;
    while i < idx.len() {
        let (start, c) = idx[i];
        let mut j = i + 1;
        let word_start = if c == ' ' && idx.get(i + 1).is_some_and(|&(_, n)| n.is_alphanumeric()) {
            j = i + 2;
            true
        } else {
            c.is_alphanumeric()
        };
        if word_start {
            while j < idx.len() && idx[j].1.is_alphanumeric() {
                j += 1;
            }
        }
        tokens.push(&reply[start..end_of(j)]);
        i = j;
    }
    tokens
}

/// Filler alternatives for `top_logprobs`, in decreasing probability.
const FILLERS: [&str; 24] = [
    " the", " a", " and", " of", " to", " is", " it", " in", " that", " this", "\n\n", ",", " I",
    " be", " for", " on", " with", " as", " not", " but", " C", " Tie", " both", " neither",
];

fn alt(token: &str, logprob: f64) -> Value {
    json!({"token": token, "logprob": logprob, "bytes": null})
}

/// `choices[0].logprobs.content` for a reply: one entry per token; at the verdict position (the
/// letter after `Result:`) the chosen letter has logprob ln 0.8 and the other ln 0.2, elsewhere
/// the token has logprob −0.01. `top_logprobs` has exactly `k` entries, best first.
fn logprob_content(reply: &str, letter: Option<Letter>, k: usize) -> Vec<Value> {
    let tokens = tokenize(reply);
    let verdict_pos = letter.map(|_| tokens.len() - 1);
    tokens
        .iter()
        .enumerate()
        .map(|(pos, &token)| {
            let (logprob, mut top, filler_base) = match (verdict_pos, letter) {
                (Some(vp), Some(l)) if vp == pos => {
                    let chosen = 0.8f64.ln();
                    let other = format!(" {}", l.other().as_str());
                    (chosen, vec![alt(token, chosen), alt(&other, 0.2f64.ln())], -20.0)
                }
                _ => (-0.01, vec![alt(token, -0.01)], -6.0),
            };
            let taken: Vec<String> =
                top.iter().filter_map(|v| v["token"].as_str().map(str::to_owned)).collect();
            let mut n = 0.0;
            for filler in FILLERS.iter().filter(|f| !taken.iter().any(|t| t == *f)) {
                if top.len() >= k {
                    break;
                }
                top.push(alt(filler, filler_base - n));
                n += 1.0;
            }
            top.truncate(k);
            json!({"token": token, "logprob": logprob, "bytes": null, "top_logprobs": top})
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenize_verdict_reply() {
        assert_eq!(
            tokenize("Looks fine.\nResult: A"),
            vec!["Looks", " fine", ".", "\n", "Result", ":", " A"]
        );
        assert_eq!(tokenize(GARBAGE_REPLY).concat(), GARBAGE_REPLY);
        assert_eq!(tokenize("a  b é!"), vec!["a", " ", " b", " é", "!"]);
    }

    #[test]
    fn top_logprobs_have_k_distinct_entries() {
        for k in [0, 1, 2, 5, 20] {
            let content = logprob_content(verdict_reply(Letter::B), Some(Letter::B), k);
            for entry in &content {
                let top = entry["top_logprobs"].as_array().unwrap();
                assert_eq!(top.len(), k);
                let mut toks: Vec<&str> =
                    top.iter().map(|t| t["token"].as_str().unwrap()).collect();
                toks.sort();
                toks.dedup();
                assert_eq!(toks.len(), k);
            }
            if k >= 2 {
                let last = &content.last().unwrap()["top_logprobs"];
                assert_eq!(last[0]["token"], " B");
                assert_eq!(last[1]["token"], " A");
            }
        }
    }
}
