//! OpenAI-compatible chat completions (`POST {base}/chat/completions`, the OpenAI API reference
//! "Chat Completions" shape that vLLM, SGLang, llama.cpp's server, Ollama and others serve) as a
//! [`Generator`].

use crate::stats::LatencySummary;
use prbench_models::{
    CallStats, ChatMessage, ChatRequest, ChatResponse, Generator, ItemDone, ModelError,
    ModelIdentity, TokenStats,
};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::client::{CallError, RemoteClient};
use crate::logprobs::TokenLogprob;
use crate::options::RemoteOptions;

/// Request keys that `extra` may not set: the engine owns them.
pub const RESERVED_KEYS: [&str; 11] = [
    "model",
    "messages",
    "stream",
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "seed",
    "logprobs",
    "top_logprobs",
    "n",
];

/// Engine name in [`ModelIdentity::engine`].
pub const ENGINE: &str = "openai-compatible chat";

/// One reply of the chat endpoint, with what [`ChatResponse`] has no room for.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatReply {
    /// `choices[0].message.content`; a `null` or missing content is the empty string (a valid
    /// reply, which a verdict parser marks unparsed).
    pub text: String,
    /// `usage.prompt_tokens` as `input_tokens` and `usage.completion_tokens` as
    /// `output_tokens` (0 when the server reports no usage); `truncated_tokens` is always 0
    /// (truncation, if any, happens server-side and is not reported).
    pub tokens: TokenStats,
    /// `choices[0].finish_reason` (`stop`, `length`, …), when given.
    pub finish_reason: Option<String>,
    /// `choices[0].logprobs.content` when log-probabilities were requested and returned.
    pub logprobs: Option<Vec<TokenLogprob>>,
}

/// Sampling settings of one request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Sampling {
    pub temperature: f32,
    pub top_p: f32,
    pub max_tokens: usize,
    /// Sent as is; see [`fold_seed`].
    pub seed: u32,
    /// `Some(n)`: ask for `logprobs: true, top_logprobs: n`.
    pub top_logprobs: Option<u32>,
}

/// Folds a 64-bit seed into 31 bits (XOR of its 31-bit pieces), so that every server's seed
/// type accepts it: llama.cpp samplers take a `uint32`, vLLM and OpenAI a signed 64-bit int.
pub fn fold_seed(seed: u64) -> u32 {
    ((seed ^ (seed >> 31) ^ (seed >> 62)) & 0x7FFF_FFFF) as u32
}

#[derive(Debug, Deserialize)]
struct Completion {
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Debug, Deserialize)]
struct WireChoice {
    #[serde(default)]
    message: Option<WireMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default)]
    logprobs: Option<WireLogprobs>,
}

#[derive(Debug, Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireLogprobs {
    #[serde(default)]
    content: Option<Vec<TokenLogprob>>,
}

/// `usage` of an OpenAI-style reply (also vLLM's pooling replies).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Usage {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
}

/// The conversation as the chat API's `messages`.
///
/// # Errors
/// [`ModelError::Engine`] when the prompt has an `assistant_prefix`: chat endpoints cannot
/// continue an assistant turn.
pub(crate) fn wire_messages(
    messages: &[ChatMessage],
    assistant_prefix: &str,
) -> Result<Value, ModelError> {
    if !assistant_prefix.is_empty() {
        return Err(ModelError::Engine(format!(
            "the prompt asks to continue an assistant turn (assistant_prefix {:?}); chat endpoints cannot continue an assistant turn: use a text verdict",
            assistant_prefix.chars().take(40).collect::<String>()
        )));
    }
    Ok(Value::Array(
        messages.iter().map(|m| json!({ "role": m.role.as_str(), "content": m.content })).collect(),
    ))
}

/// A chat model behind an OpenAI-compatible endpoint, with one or more replicas.
#[derive(Debug)]
pub struct OpenAiChat {
    model: String,
    spec: String,
    extra: Map<String, Value>,
    client: RemoteClient,
}

impl OpenAiChat {
    /// A chat engine for `model` (the name sent in each request) served at `base_urls` (each
    /// ending where `/chat/completions` hangs, usually `…/v1`; several = replicas).
    ///
    /// # Errors
    /// [`ModelError::Engine`] when `model` or `base_urls` is empty, a URL is not `http(s)://`,
    /// or the HTTP runtime cannot start. No request is sent.
    pub fn new(
        model: &str,
        base_urls: Vec<String>,
        opts: RemoteOptions,
    ) -> Result<Self, ModelError> {
        if model.is_empty() {
            return Err(ModelError::Engine("the model name is empty".into()));
        }
        let client = RemoteClient::new(&base_urls, opts)?;
        Ok(Self {
            model: model.to_string(),
            spec: format!("openai:{model}"),
            extra: Map::new(),
            client,
        })
    }

    /// Sets the spec recorded in [`ModelIdentity::spec`] (default `openai:MODEL`).
    pub fn with_spec(mut self, spec: impl Into<String>) -> Self {
        self.spec = spec.into();
        self
    }

    /// Keys merged into every request body, e.g. `{"repeat_penalty": 1.0}` for llama.cpp
    /// servers or `{"chat_template_kwargs": {...}}` for vLLM. They override the engine's own
    /// sampling keys (`temperature`, `seed`, …) and are recorded in the judge's decoding record.
    ///
    /// # Errors
    /// [`ModelError::Engine`] when a key is one of [`RESERVED_KEYS`].
    pub fn with_extra(mut self, extra: Map<String, Value>) -> Result<Self, ModelError> {
        if let Some(k) = extra.keys().find(|k| RESERVED_KEYS.contains(&k.as_str())) {
            return Err(ModelError::Engine(format!(
                "extra request key `{k}` is reserved: extra keys may not override {RESERVED_KEYS:?} (set decoding with prbench's own flags, e.g. --temperature, --top-p, --max-new-tokens, --seed, so the manifest records it)"
            )));
        }
        self.extra = extra;
        Ok(self)
    }

    /// The model name sent in each request.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The keys merged into every request body.
    pub fn extra(&self) -> &Map<String, Value> {
        &self.extra
    }

    /// The HTTP core, shared with the judge built on this engine.
    pub(crate) fn client(&self) -> &RemoteClient {
        &self.client
    }

    /// Requests, retries, failures and server-reported tokens since construction.
    pub fn call_stats(&self) -> CallStats {
        self.client.stats()
    }

    /// Item latency percentiles since construction (first attempt to final result, retries
    /// included); `None` before the first item. Used by `prbench bench remote`.
    pub fn latency(&self) -> Option<LatencySummary> {
        self.client.latency()
    }

    /// Runs `items` concurrently. `top_logprobs: Some(n)` asks for `logprobs: true,
    /// top_logprobs: n`. One result per item, in order; `done(i, &reply)` is called as soon as
    /// item `i` succeeds. A failed item is an `Err` in its place; the others are unaffected.
    ///
    /// Each item's `seed` is sent folded into 31 bits ([`fold_seed`]); `max_new_tokens` is
    /// sent as `max_tokens`.
    pub fn chat_each(
        &self,
        items: &[ChatRequest],
        top_logprobs: Option<u32>,
        done: ItemDone<'_, ChatReply>,
    ) -> Vec<Result<ChatReply, ModelError>> {
        self.client.run_each(items, done, |_, item| async move {
            let sampling = Sampling {
                temperature: item.temperature,
                top_p: item.top_p,
                max_tokens: item.max_new_tokens,
                seed: fold_seed(item.seed),
                top_logprobs,
            };
            self.call(&item.prompt.messages, &item.prompt.assistant_prefix, &sampling).await
        })
    }

    /// [`OpenAiChat::chat_each`] without log-probabilities, as [`ChatResponse`]s.
    pub fn generate_each(
        &self,
        items: &[ChatRequest],
        done: ItemDone<'_, ChatResponse>,
    ) -> Vec<Result<ChatResponse, ModelError>> {
        let to_response = |r: &ChatReply| ChatResponse {
            text: r.text.clone(),
            tokens: r.tokens,
            finish_reason: r.finish_reason.clone(),
        };
        self.chat_each(items, None, &|i, r| done(i, &to_response(r)))
            .into_iter()
            .map(|r| r.map(|r| to_response(&r)))
            .collect()
    }

    /// The request body for one conversation.
    fn body(&self, messages: Value, s: &Sampling) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        body.insert("messages".into(), messages);
        body.insert("temperature".into(), json!(crate::json_f32(s.temperature)));
        body.insert("top_p".into(), json!(crate::json_f32(s.top_p)));
        body.insert("max_tokens".into(), json!(s.max_tokens));
        body.insert("seed".into(), json!(s.seed));
        if let Some(n) = s.top_logprobs {
            body.insert("logprobs".into(), json!(true));
            body.insert("top_logprobs".into(), json!(n));
        }
        for (k, v) in &self.extra {
            body.insert(k.clone(), v.clone());
        }
        Value::Object(body)
    }

    /// One chat completion, retried per the options.
    pub(crate) async fn call(
        &self,
        messages: &[ChatMessage],
        assistant_prefix: &str,
        s: &Sampling,
    ) -> Result<ChatReply, ModelError> {
        let body = self.body(wire_messages(messages, assistant_prefix)?, s);
        let reply: Completion = self.client.post_json("/chat/completions", &body).await?;
        let usage = reply.usage.unwrap_or_default();
        let (p, c) = (usage.prompt_tokens.unwrap_or(0), usage.completion_tokens.unwrap_or(0));
        let counted = (usage.prompt_tokens, usage.completion_tokens);
        let choice = reply.choices.into_iter().next().ok_or_else(|| {
            ModelError::Engine(
                "POST …/chat/completions: the reply has an empty `choices` list".into(),
            )
        })?;
        self.client.add_usage(counted.0, counted.1);
        Ok(ChatReply {
            // A server that echoes the API key into a reply must not get it into outcomes or the cache.
            text: self.client.redact(&choice.message.and_then(|m| m.content).unwrap_or_default()),
            tokens: TokenStats {
                input_tokens: p as usize,
                truncated_tokens: 0,
                output_tokens: c as usize,
            },
            finish_reason: choice.finish_reason,
            logprobs: choice.logprobs.and_then(|l| l.content),
        })
    }

    /// Whether the server returns per-token log-probabilities: one chat request with
    /// `max_tokens: 1, logprobs: true, top_logprobs: 2`; true iff the reply carries a non-empty
    /// `choices[0].logprobs.content` whose first token has `top_logprobs`. A server that
    /// rejects the request with a 4xx (unknown parameter) does not.
    ///
    /// # Errors
    /// [`ModelError::Engine`] when the server cannot be reached (after the retries), saying to
    /// check that it is up and that the URL is right; when it refuses the request with 401, 403
    /// or 404.
    pub fn probe_logprobs(&self) -> Result<bool, ModelError> {
        let messages = json!([{ "role": "user", "content": "Reply with the letter A." }]);
        let s = Sampling {
            temperature: 0.0,
            top_p: 1.0,
            max_tokens: 1,
            seed: 0,
            top_logprobs: Some(2),
        };
        let body = self.body(messages, &s);
        let outcome: Result<Completion, CallError> =
            self.client.block_on(self.client.post_json("/chat/completions", &body));
        match outcome {
            Ok(reply) => {
                let u = reply.usage.unwrap_or_default();
                self.client.add_usage(u.prompt_tokens, u.completion_tokens);
                Ok(reply
                    .choices
                    .first()
                    .and_then(|c| c.logprobs.as_ref())
                    .and_then(|l| l.content.as_ref())
                    .and_then(|c| c.first())
                    .is_some_and(|t| !t.top_logprobs.is_empty()))
            }
            // Wrong key, wrong path or unknown model: say so now rather than fail every item later.
            Err(CallError { fatal_status: Some(s @ (401 | 403 | 404)), message, .. }) => Err(ModelError::Engine(format!(
                "a test request was refused with HTTP {s}; check the base URL (it must end where `/chat/completions` hangs, usually `/v1`), the model name and the API key's environment variable: {message}"
            ))),
            // Any other 4xx: the server does not take `logprobs` (an unknown parameter).
            Err(CallError { fatal_status: Some(s), .. }) if (400..500).contains(&s) => Ok(false),
            // Nothing answered (refused, reset, timed out): the same "is the server up" error as
            // the reward models' load-time checks.
            Err(CallError { answered: false, message, .. }) => Err(crate::probe::did_not_answer(
                "OpenAI-compatible server",
                &self.client.urls().join(","),
                &message,
                "the base URL where `/chat/completions` hangs (usually ending in `/v1`, e.g. http://127.0.0.1:8080/v1 for `llama-server --port 8080`)",
            )),
            Err(e) => Err(e.into()),
        }
    }

    /// Identity for the manifest: the spec, engine [`ENGINE`], the model name and the sorted
    /// server URLs as `file_hash` ([`crate::served_model_id`]: part of every cache key, since
    /// some servers ignore the model name), no template hash (the server applies its own),
    /// dtype `n/a`.
    pub fn model_identity(&self) -> ModelIdentity {
        ModelIdentity {
            spec: self.spec.clone(),
            engine: ENGINE.to_string(),
            file_hash: crate::served_model_id(&self.model, &self.client.urls()),
            chat_template_hash: String::new(),
            dtype: "n/a".to_string(),
        }
    }
}

impl Generator for OpenAiChat {
    /// Generates concurrently; fails with the first (in input order) item's error if any item
    /// fails after its retries.
    fn generate(&self, items: &[ChatRequest]) -> Result<Vec<ChatResponse>, ModelError> {
        OpenAiChat::generate_each(self, items, &|_, _| {}).into_iter().collect()
    }

    /// Items run concurrently with per-item retries; a failure costs only its item.
    fn generate_each(
        &self,
        items: &[ChatRequest],
        done: ItemDone<'_, ChatResponse>,
    ) -> Vec<Result<ChatResponse, ModelError>> {
        OpenAiChat::generate_each(self, items, done)
    }

    fn identity(&self) -> ModelIdentity {
        self.model_identity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_fold_into_31_bits() {
        assert_eq!(fold_seed(0), 0);
        assert_eq!(fold_seed(42), 42);
        assert_eq!(fold_seed(0x7FFF_FFFF), 0x7FFF_FFFF);
        assert!(fold_seed(u64::MAX) <= 0x7FFF_FFFF);
        assert_ne!(fold_seed(1 << 40), fold_seed(1 << 41));
    }

    #[test]
    fn extra_may_not_override_model_or_messages() {
        let chat =
            OpenAiChat::new("m", vec!["http://127.0.0.1:9/v1".into()], RemoteOptions::default())
                .unwrap();
        let mut extra = Map::new();
        extra.insert("messages".into(), json!([]));
        assert!(chat.with_extra(extra).unwrap_err().to_string().contains("`messages`"));
        assert!(OpenAiChat::new("", vec!["http://h".into()], RemoteOptions::default()).is_err());
        assert!(OpenAiChat::new("m", vec![], RemoteOptions::default()).is_err());
        assert!(OpenAiChat::new("m", vec!["ftp://h".into()], RemoteOptions::default()).is_err());
    }

    #[test]
    fn body_merges_extra_beside_sampling_keys() {
        let mut extra = Map::new();
        extra.insert("repeat_penalty".into(), json!(1.0));
        let chat =
            OpenAiChat::new("m", vec!["http://127.0.0.1:9/v1".into()], RemoteOptions::default())
                .unwrap()
                .with_extra(extra)
                .unwrap();
        let s = Sampling {
            temperature: 0.7,
            top_p: 0.9,
            max_tokens: 5,
            seed: 3,
            top_logprobs: Some(20),
        };
        let b = chat.body(json!([]), &s);
        assert_eq!(b["temperature"], json!(0.7));
        assert_eq!(b["top_p"], json!(0.9));
        assert_eq!(b["repeat_penalty"], json!(1.0));
        assert_eq!(b["logprobs"], json!(true));
        assert_eq!(b["top_logprobs"], json!(20));
        assert_eq!(b["seed"], json!(3));
    }

    #[test]
    fn an_assistant_prefix_is_refused() {
        let m = [ChatMessage::new(prbench_models::Role::User, "hi")];
        let e = wire_messages(&m, "Result:").unwrap_err().to_string();
        assert!(e.contains("cannot continue an assistant turn"), "{e}");
        assert_eq!(wire_messages(&m, "").unwrap(), json!([{ "role": "user", "content": "hi" }]));
    }
}
