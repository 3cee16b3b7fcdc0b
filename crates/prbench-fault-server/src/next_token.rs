//! Next-token requests, as a logprob verdict through a server sends them: a chat request whose
//! last message is the assistant's (a prefill to continue, vLLM's `continue_final_message`;
//! llama.cpp's server continues it without the flag), and `POST /v1/completions` with a
//! rendered `prompt`. Each is answered with one token and the log-probabilities at it: the
//! verdict letter of [`VerdictRule`](crate::VerdictRule) with ln 0.8, the other letter with
//! ln 0.2 (both with a leading space, as BPE vocabularies spell the word after `Result:`), then
//! fillers. [`VerdictRule::Garbage`](crate::VerdictRule::Garbage) gives no letter at all, and a
//! request holding a marker of [`ServerConfig::lone_letter_markers`] gets the verdict letter
//! without the other.
//!
//! The letter is decided on the concatenated message contents without the prefill, as for a
//! generated reply, so a pair gets the same letter both ways. A completions `prompt` in the
//! ChatML form of [`PROPS_TEMPLATE`] has its contents taken back out of the markup first (the
//! same letter again); any other prompt is hashed whole.
//!
//! `GET /props` answers as llama.cpp's server does, with [`PROPS_TEMPLATE`] as `chat_template`.

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::app::{word_count, BadRequest};
use crate::config::{Letter, ServerConfig};
use crate::openai::MODEL_ID;

/// The chat template `GET /props` reports: ChatML, as SmolLM2's GGUF carries it (without the
/// default system prompt).
pub const PROPS_TEMPLATE: &str = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/// The `bos_token` and `eos_token` `GET /props` reports.
pub const PROPS_SPECIAL: [&str; 2] = ["<|im_start|>", "<|im_end|>"];

/// Filler alternatives after the letters, in decreasing probability.
const FILLERS: [&str; 22] = [
    " the", " a", " and", " of", " to", " is", " it", " in", " that", " this", "\n\n", ",", " I",
    " be", " for", " on", " with", " as", " not", " but", " C", " Tie",
];

pub(crate) fn props() -> Value {
    json!({
        "chat_template": PROPS_TEMPLATE,
        "bos_token": PROPS_SPECIAL[0],
        "eos_token": PROPS_SPECIAL[1],
        "model_alias": MODEL_ID,
        "total_slots": 1,
    })
}

/// The message contents of a ChatML prompt, concatenated, without the final (open) assistant
/// turn; `None` when the prompt is not ChatML.
fn chatml_contents(prompt: &str) -> Option<String> {
    let mut turns: Vec<&str> = prompt.split("<|im_start|>").collect();
    if turns.len() < 2 || !turns[0].is_empty() {
        return None;
    }
    turns.remove(0);
    turns.pop()?;
    let mut out = String::new();
    for t in turns {
        let (_role, rest) = t.split_once('\n')?;
        out.push_str(rest.strip_suffix("<|im_end|>\n")?);
    }
    Some(out)
}

/// One next-token answer.
pub(crate) struct NextToken {
    letter: Option<Letter>,
    lone: bool,
    k: usize,
    prompt_tokens: usize,
}

impl NextToken {
    /// The answer for a prompt whose message contents are `contents`, with the prefill (or the
    /// raw prompt) `extra` also searched for markers; `k` alternatives.
    pub(crate) fn new(cfg: &ServerConfig, contents: &str, extra: &str, k: usize) -> Self {
        let lone =
            cfg.lone_letter_markers.iter().any(|m| contents.contains(m) || extra.contains(m));
        NextToken {
            letter: cfg.verdict.letter_for(contents),
            lone,
            k,
            prompt_tokens: word_count(contents) + word_count(extra),
        }
    }

    /// `(token, logprob)` alternatives, best first; the first is the generated token.
    fn top(&self) -> Vec<(String, f64)> {
        let mut top = Vec::new();
        if let Some(l) = self.letter {
            top.push((format!(" {}", l.as_str()), 0.8f64.ln()));
            if !self.lone {
                top.push((format!(" {}", l.other().as_str()), 0.2f64.ln()));
            }
        }
        let base = if top.is_empty() { -0.5 } else { -20.0 };
        for (n, f) in FILLERS.iter().enumerate() {
            top.push(((*f).to_string(), base - n as f64));
        }
        top
    }

    fn usage(&self) -> Value {
        json!({"prompt_tokens": self.prompt_tokens, "completion_tokens": 1, "total_tokens": self.prompt_tokens + 1})
    }

    /// A chat completion of one token (the content is the new token only, as vLLM answers a
    /// continued message); `logprobs.content` when asked for and the server gives them.
    pub(crate) fn chat_reply(
        &self,
        cfg: &ServerConfig,
        model: Option<&str>,
        logprobs: bool,
        seq: u64,
        created: u64,
    ) -> Value {
        let top = self.top();
        let (token, lp) = top[0].clone();
        let shown: Vec<Value> = top
            .iter()
            .take(self.k)
            .map(|(t, l)| json!({"token": t, "logprob": l, "bytes": null}))
            .collect();
        let lps = if cfg.logprobs && logprobs {
            json!({"content": [{"token": token, "logprob": lp, "bytes": null, "top_logprobs": shown}]})
        } else {
            Value::Null
        };
        json!({
            "id": format!("chatcmpl-fault{seq}"),
            "object": "chat.completion",
            "created": created,
            "model": model.unwrap_or(MODEL_ID),
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": token},
                "logprobs": lps,
                "finish_reason": "length",
            }],
            "usage": self.usage(),
        })
    }
}

#[derive(Deserialize)]
struct CompletionRequest {
    #[serde(default)]
    model: Option<String>,
    prompt: Value,
    #[serde(default)]
    logprobs: Option<u32>,
}

/// `POST /v1/completions`: one token, with the OpenAI completions shape of log-probabilities
/// (`tokens`, `token_logprobs`, `top_logprobs` as `{token: logprob}`) when `logprobs: N` asks.
pub(crate) fn completions(
    cfg: &ServerConfig,
    body: &[u8],
    seq: u64,
    created: u64,
) -> Result<Value, BadRequest> {
    let req: CompletionRequest = serde_json::from_slice(body).map_err(BadRequest::json)?;
    let Some(prompt) = req.prompt.as_str() else {
        return Err(BadRequest::new("'prompt' must be a string"));
    };
    let contents = chatml_contents(prompt).unwrap_or_else(|| prompt.to_string());
    let one = NextToken::new(cfg, &contents, prompt, req.logprobs.unwrap_or(0).min(20) as usize);
    let top = one.top();
    let (token, lp) = top[0].clone();
    let lps = match req.logprobs {
        Some(k) if cfg.logprobs => {
            let mut m = Map::new();
            for (t, l) in top.iter().take(k.min(20) as usize) {
                m.insert(t.clone(), json!(l));
            }
            json!({"tokens": [token], "token_logprobs": [lp], "top_logprobs": [m], "text_offset": [prompt.len()]})
        }
        _ => Value::Null,
    };
    Ok(json!({
        "id": format!("cmpl-fault{seq}"),
        "object": "text_completion",
        "created": created,
        "model": req.model.as_deref().unwrap_or(MODEL_ID),
        "choices": [{"index": 0, "text": token, "logprobs": lps, "finish_reason": "length"}],
        "usage": one.usage(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chatml_contents_come_back_out() {
        let p = "<|im_start|>system\nBe fair.<|im_end|>\n<|im_start|>user\nWhich?<|im_end|>\n<|im_start|>assistant\nResult:";
        assert_eq!(chatml_contents(p).as_deref(), Some("Be fair.Which?"));
        assert_eq!(chatml_contents("plain text"), None);
    }

    #[test]
    fn letters_lead_and_a_lone_letter_drops_the_other() {
        let cfg = ServerConfig::default().with_lone_letter("LONE");
        let one = NextToken::new(&cfg, "x", "", 20);
        let top = one.top();
        assert!(top[0].0 == " A" || top[0].0 == " B");
        assert!(top[1].0 == " A" || top[1].0 == " B");
        let lone = NextToken::new(&cfg, "x LONE", "", 20).top();
        assert_eq!(lone.iter().filter(|(t, _)| t == " A" || t == " B").count(), 1);
    }
}
