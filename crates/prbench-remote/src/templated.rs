//! Reward models behind engines that take the conversation as text with the chat template
//! already applied: SGLang's `/classify` ([`crate::sglang`]), text-embeddings-inference's
//! `/predict` ([`crate::tei`]) and OpenRLHF's `/get_reward` ([`crate::openrlhf`]).
//!
//! Unlike vLLM's chat form of `/classify`, these servers never see the messages: prbench renders
//! the reward-model conversation (PROTOCOL.md §3: user turn = `prompts/rm-user.jinja`,
//! assistant turn = the answer, `add_generation_prompt = false`) with the model's own chat
//! template, here, with [`ChatRenderer`], and sends the text. One renderer and one client core
//! ([`TemplatedRewardModel`]) serve all three engines; an engine contributes only its
//! [`TextEndpoint`]: the path, the request body for one text and how to read the score out of
//! the reply.
//!
//! The template's sha256 is the identity's `chat_template_hash`, so two runs with different
//! templates never share cache entries.

use std::fmt::Debug;
use std::marker::PhantomData;

use prbench_models::chat_template::{segments_text, ChatTemplate};
use prbench_models::{CallStats, ChatPrompt, ItemDone, ModelError, ModelIdentity, RewardModel, RmRequest, Score, TokenStats};
use serde::{Deserialize, Deserializer};
use serde_json::{json, Value};

use crate::client::RemoteClient;
use crate::options::RemoteOptions;

/// Renders a reward-model conversation to the text an engine scores, with the model's chat
/// template.
#[derive(Debug)]
pub struct ChatRenderer {
    template: ChatTemplate,
    origin: String,
}

impl ChatRenderer {
    /// A renderer with `template`; `origin` says where it came from (e.g. `dir:/m/rm` or
    /// `hf:org/rm@<commit>`) and is recorded in the settings.
    pub fn new(template: ChatTemplate, origin: impl Into<String>) -> Self {
        Self { template, origin: origin.into() }
    }

    /// The template.
    pub fn template(&self) -> &ChatTemplate {
        &self.template
    }

    /// Where the template came from, as given to [`ChatRenderer::new`].
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The finished conversation as text: the template rendered with
    /// `add_generation_prompt = false`, then `prompt.assistant_prefix` (empty for reward-model
    /// prompts). With `strip_bos`, a leading `bos_token` string is dropped, for engines whose
    /// tokenizer adds BOS itself (the model then sees one BOS, as `transformers`'
    /// `apply_chat_template(tokenize=True)` gives it).
    ///
    /// # Errors
    /// [`ModelError::Template`] when the template fails to render (e.g. `raise_exception`).
    pub fn render(&self, prompt: &ChatPrompt, strip_bos: bool) -> Result<String, ModelError> {
        let text = segments_text(&self.template.render_segments_with(prompt, false)?);
        let bos = self.template.bos_token();
        Ok(match text.strip_prefix(bos) {
            Some(rest) if strip_bos && !bos.is_empty() => rest.to_string(),
            _ => text,
        })
    }
}

/// What one engine contributes to a [`TemplatedRewardModel`]: a stateless description of its
/// scoring endpoint.
pub trait TextEndpoint: Debug + Send + Sync + 'static {
    /// Engine name in [`ModelIdentity::engine`].
    const ENGINE: &'static str;
    /// Spec kind, e.g. `tei` for `tei:MODEL@URL`.
    const KIND: &'static str;
    /// Path of the endpoint under each server URL.
    const PATH: &'static str;
    /// Whether the server's tokenizer adds special tokens to the text (so a leading BOS the
    /// template wrote is dropped, see [`ChatRenderer::render`]).
    const STRIP_BOS: bool;

    /// The request body scoring one text.
    fn body(text: &str) -> Value;

    /// The score (raw head output) and the prompt tokens the server counted (if it says) from a
    /// 2xx reply; the error names the field that is missing or wrong.
    ///
    /// # Errors
    /// A message naming the field and what was found.
    fn read(reply: &Value) -> Result<(f64, Option<u64>), String>;

    /// Engine-specific settings recorded next to the common ones (e.g. `raw_scores`).
    fn settings() -> Value {
        json!({})
    }
}

/// A reply decoded by `E::read`; a wrong shape becomes a serde data error, which the HTTP core
/// reports with the URL and does not retry (the server would send it again).
struct Parsed<E> {
    value: f64,
    prompt_tokens: Option<u64>,
    _e: PhantomData<E>,
}

impl<'de, E: TextEndpoint> Deserialize<'de> for Parsed<E> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let (value, prompt_tokens) = E::read(&v).map_err(serde::de::Error::custom)?;
        Ok(Self { value, prompt_tokens, _e: PhantomData })
    }
}

/// A reward model behind a text-scoring endpoint `E` (see the module docs). One request per
/// item, concurrently, through the shared HTTP core (replicas, retries, redaction).
#[derive(Debug)]
pub struct TemplatedRewardModel<E: TextEndpoint> {
    model: String,
    spec: String,
    renderer: ChatRenderer,
    client: RemoteClient,
    _e: PhantomData<E>,
}

impl<E: TextEndpoint> TemplatedRewardModel<E> {
    /// The reward model `model` (the name recorded in the identity; the repo its chat template
    /// came from) served at `base_urls` (server roots; several = replicas), its conversations
    /// rendered by `renderer`.
    ///
    /// # Errors
    /// [`ModelError::Engine`] when `model` or `base_urls` is empty, a URL is not `http(s)://`,
    /// or the HTTP runtime cannot start. No request is sent.
    pub fn new(model: &str, base_urls: Vec<String>, renderer: ChatRenderer, opts: RemoteOptions) -> Result<Self, ModelError> {
        if model.is_empty() {
            return Err(ModelError::Engine("the model name is empty".into()));
        }
        let client = RemoteClient::new(&base_urls, opts)?;
        let spec = format!("{}:{model}@{}", E::KIND, client.urls().join(","));
        Ok(Self { model: model.to_string(), spec, renderer, client, _e: PhantomData })
    }

    /// Sets the spec recorded in [`ModelIdentity::spec`] (default `KIND:MODEL@URL,…`).
    pub fn with_spec(mut self, spec: impl Into<String>) -> Self {
        self.spec = spec.into();
        self
    }

    /// The text sent for `item` (the rendered conversation).
    ///
    /// # Errors
    /// As [`ChatRenderer::render`].
    pub fn text_for(&self, item: &RmRequest) -> Result<String, ModelError> {
        self.renderer.render(&item.prompt, E::STRIP_BOS)
    }

    async fn score_one(&self, item: &RmRequest) -> Result<Score, ModelError> {
        let text = self.text_for(item)?;
        let reply: Parsed<E> = self.client.post_json(E::PATH, &E::body(&text)).await.map_err(|e| {
            ModelError::Engine(format!("{} (example `{}`)", e.message, item.input.example_id))
        })?;
        let value = reply.value as f32;
        if !value.is_finite() {
            return Err(ModelError::Engine(format!(
                "POST …{} (example `{}`): the score {} does not fit a finite f32",
                E::PATH,
                item.input.example_id,
                reply.value
            )));
        }
        let prompt_tokens = reply.prompt_tokens.unwrap_or(0);
        self.client.add_usage(prompt_tokens, 0);
        Ok(Score { value, tokens: TokenStats { input_tokens: prompt_tokens as usize, truncated_tokens: 0, output_tokens: 0 } })
    }
}

impl<E: TextEndpoint> RewardModel for TemplatedRewardModel<E> {
    /// Fails with the first (in input order) item's error if any item fails after its retries.
    fn score(&self, items: &[RmRequest]) -> Result<Vec<Score>, ModelError> {
        self.score_each(items, &|_, _| {}).into_iter().collect()
    }

    /// One request per item, concurrently; `done` gets each score as it arrives.
    fn score_each(&self, items: &[RmRequest], done: ItemDone<'_, Score>) -> Vec<Result<Score, ModelError>> {
        self.client.run_each(items, done, |_, item| self.score_one(item))
    }

    /// Spec, engine `E::ENGINE`, the model name and sorted server URLs as `file_hash`
    /// ([`crate::served_model_id`]), the sha256 of the chat template prbench rendered with,
    /// dtype `n/a`.
    fn identity(&self) -> ModelIdentity {
        ModelIdentity {
            spec: self.spec.clone(),
            engine: E::ENGINE.to_string(),
            file_hash: crate::served_model_id(&self.model, &self.client.urls()),
            chat_template_hash: self.renderer.template().hash(),
            dtype: "n/a".to_string(),
        }
    }

    fn call_stats(&self) -> Option<CallStats> {
        Some(self.client.stats())
    }

    /// `{"endpoint", "chat_template" (origin), "strip_bos", "engine": {…}}`, keys sorted.
    fn settings(&self) -> Value {
        crate::sorted(json!({
            "endpoint": E::PATH,
            "chat_template": self.renderer.origin(),
            "strip_bos": E::STRIP_BOS,
            "engine": E::settings(),
        }))
    }
}

/// `v[key]` as a finite number, or a message naming `key`.
pub(crate) fn number_at(v: &Value, key: &str) -> Result<f64, String> {
    match v.get(key) {
        Some(Value::Number(n)) => n.as_f64().ok_or_else(|| format!("`{key}` = {n} is not a finite number")),
        None | Some(Value::Null) => Err(format!("no `{key}` in the reply")),
        Some(other) => Err(format!("`{key}` = {other} is not a number")),
    }
}

/// The single number of a one-element list at `v[key]`; a longer list is a head with several
/// outputs, which a reward model does not have.
pub(crate) fn single_at(v: &Value, key: &str) -> Result<f64, String> {
    match v.get(key) {
        Some(Value::Array(a)) if a.len() == 1 => match &a[0] {
            Value::Number(n) => n.as_f64().ok_or_else(|| format!("`{key}[0]` = {n} is not a finite number")),
            other => Err(format!("`{key}[0]` = {other} is not a number")),
        },
        Some(Value::Array(a)) => Err(format!(
            "`{key}` has {} values; a reward model's head has one output (the server serves a classifier with {} labels?)",
            a.len(),
            a.len()
        )),
        None | Some(Value::Null) => Err(format!("no `{key}` in the reply")),
        Some(other) => Err(format!("`{key}` = {other} is not a list of numbers")),
    }
}
