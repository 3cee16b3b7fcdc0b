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
use std::sync::OnceLock;

use prbench_models::chat_template::{segments_text, ChatTemplate};
use prbench_models::{
    CallStats, ChatPrompt, ItemDone, ModelError, ModelIdentity, RewardModel, RmRequest, Score,
    TokenStats,
};
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
    /// Whether a multi-output head's output can be chosen (`--label-index`).
    const LABEL_INDEX: bool;
    /// For an engine that replies with [`Outputs::ByLabel`]: the `GET` path whose reply maps
    /// label ids to label names ([`TextEndpoint::label_name`]).
    const LABELS_PATH: Option<&'static str> = None;
    /// What the server does with the text it gets (tokenization, truncation), in words, for the
    /// preflight ([`TextPreflight`]): the part of the model's view prbench cannot show.
    const SERVER_SIDE: &'static str = "the server tokenizes the text";

    /// The request body scoring one text.
    fn body(text: &str) -> Value;

    /// The head's outputs (raw) and the prompt tokens the server counted (if it says) from a
    /// 2xx reply; the error names the field that is missing or wrong.
    ///
    /// # Errors
    /// A message naming the field and what was found.
    fn read(reply: &Value) -> Result<(Outputs, Option<u64>), String>;

    /// The name of label id `index` in the reply of `GET` [`TextEndpoint::LABELS_PATH`].
    ///
    /// # Errors
    /// A message saying what is missing.
    fn label_name(_labels: &Value, _index: usize) -> Result<String, String> {
        Err("this engine does not name its labels".into())
    }

    /// Engine-specific settings recorded next to the common ones (e.g. `raw_scores`).
    fn settings() -> Value {
        json!({})
    }
}

/// What `prbench eval --preflight` shows for one input of a reward model whose server takes
/// rendered text: the exact text sent, where its template came from and what happened to the
/// template's BOS. The tokens are the server's to count, so none are shown. `Display` gives the
/// report, text first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextPreflight {
    /// The text sent to the server, byte for byte.
    pub text: String,
    /// Where the chat template came from ([`ChatRenderer::origin`]).
    pub template_origin: String,
    /// The template's `bos_token` string (empty when it has none).
    pub bos_token: String,
    /// The rendering started with `bos_token` and it was dropped before sending, because the
    /// server's tokenizer adds its own.
    pub bos_dropped: bool,
    /// What the server does with the text ([`TextEndpoint::SERVER_SIDE`]).
    pub server_side: &'static str,
}

impl std::fmt::Display for TextPreflight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let bos = if self.bos_token.is_empty() {
            "the template has no BOS token".to_string()
        } else if self.bos_dropped {
            format!(
                "the template's `{}` dropped before sending (the server adds its own)",
                self.bos_token
            )
        } else if self.text.starts_with(&self.bos_token) {
            format!("`{}` sent as the template wrote it", self.bos_token)
        } else {
            format!("the template wrote no `{}` here", self.bos_token)
        };
        writeln!(
            f,
            "----- text sent to the server (rendered here with the chat template of {}) -----",
            self.template_origin
        )?;
        writeln!(f, "{}", self.text)?;
        writeln!(f, "-----")?;
        write!(
            f,
            "characters: {}; BOS: {bos}; tokens: counted by the server, not here: {}",
            self.text.chars().count(),
            self.server_side
        )
    }
}

/// A reward model whose conversations prbench renders to text before sending
/// (`sglang-classify:`, `tei:`, `openrlhf:`), whatever its engine: it scores like any reward
/// model, and shows the exact text an item sends ([`TextPreflight`]) for `prbench eval
/// --preflight`.
pub trait RenderedRewardModel: RewardModel {
    /// The text `item` would send, and how it was made. Sends nothing.
    ///
    /// # Errors
    /// [`ModelError::Template`] when the template fails to render the item.
    fn preflight(&self, item: &RmRequest) -> Result<TextPreflight, ModelError>;
}

impl<E: TextEndpoint> RenderedRewardModel for TemplatedRewardModel<E> {
    fn preflight(&self, item: &RmRequest) -> Result<TextPreflight, ModelError> {
        let rendered = self.renderer.render(&item.prompt, false)?;
        let text = self.text_for(item)?;
        Ok(TextPreflight {
            bos_dropped: text.len() < rendered.len(),
            text,
            template_origin: self.renderer.origin().to_string(),
            bos_token: self.renderer.template().bos_token().to_string(),
            server_side: E::SERVER_SIDE,
        })
    }
}

/// The outputs of a reward model's head in one reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Outputs {
    /// In label-id order: output `i` is label `i` (SGLang's `embedding`, OpenRLHF's one reward).
    ByIndex(Vec<f64>),
    /// Each with its label name, in an order that says nothing about the label id (TEI's
    /// predictions, sorted by score).
    ByLabel(Vec<(String, f64)>),
}

/// The output to read of a head with `n` outputs: `label_index` (`--label-index`) when given and
/// in range, else the only one.
///
/// # Errors
/// [`ModelError::Engine`] starting with `what`, for a head with several outputs and no label
/// index, or an index out of range; both name `--label-index`.
pub(crate) fn pick_index(
    label_index: Option<usize>,
    n: usize,
    what: &str,
) -> Result<usize, ModelError> {
    match (label_index, n) {
        (_, 0) => Err(ModelError::Engine(format!("{what}: the head has no outputs"))),
        (Some(i), n) if i < n => Ok(i),
        (Some(i), n) => Err(ModelError::Engine(format!("{what}: `--label-index {i}` is out of range for a head with {n} outputs (0 to {})", n - 1))),
        (None, 1) => Ok(0),
        (None, n) => Err(ModelError::Engine(format!(
            "{what}: the head has {n} outputs; a reward model has one, so name the output to read with `--label-index N` (0 to {}, the label id in the model's config.json `id2label`)",
            n - 1
        ))),
    }
}

/// A reply decoded by `E::read`; a wrong shape becomes a serde data error, which the HTTP core
/// reports with the URL and does not retry (the server would send it again).
struct Parsed<E> {
    outputs: Outputs,
    prompt_tokens: Option<u64>,
    _e: PhantomData<E>,
}

impl<'de, E: TextEndpoint> Deserialize<'de> for Parsed<E> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let (outputs, prompt_tokens) = E::read(&v).map_err(serde::de::Error::custom)?;
        Ok(Self { outputs, prompt_tokens, _e: PhantomData })
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
    label_index: Option<usize>,
    /// The name of label `label_index`, for engines that reply [`Outputs::ByLabel`]; read by
    /// [`TemplatedRewardModel::probe`].
    label_name: OnceLock<String>,
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
    pub fn new(
        model: &str,
        base_urls: Vec<String>,
        renderer: ChatRenderer,
        opts: RemoteOptions,
    ) -> Result<Self, ModelError> {
        if model.is_empty() {
            return Err(ModelError::Engine("the model name is empty".into()));
        }
        let client = RemoteClient::new(&base_urls, opts)?;
        let spec = format!("{}:{model}@{}", E::KIND, client.urls().join(","));
        Ok(Self {
            model: model.to_string(),
            spec,
            renderer,
            client,
            label_index: None,
            label_name: OnceLock::new(),
            _e: PhantomData,
        })
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

    /// Reads output `index` of a multi-output head (`--label-index`, the label id). For an
    /// engine whose reply names labels instead of ordering them (TEI), the id's name is read
    /// from the server by [`TemplatedRewardModel::probe`], which must run before scoring.
    ///
    /// # Errors
    /// [`ModelError::Engine`] for an engine whose head has one output by design (OpenRLHF).
    pub fn with_label_index(mut self, index: usize) -> Result<Self, ModelError> {
        if !E::LABEL_INDEX {
            return Err(ModelError::Engine(format!(
                "`{}:` serves a value head with one output; --label-index does not apply",
                E::KIND
            )));
        }
        self.label_index = Some(index);
        Ok(self)
    }

    /// Checks that every server URL serves this endpoint as prbench reads it: one request for the
    /// probe item ([`crate::probe`]), rendered with the chat template, to each URL in turn
    /// (retried as any request is), whose reply is read as an item's is. With a label index
    /// and an engine that names labels, it first reads the label's name from each URL (they
    /// must agree). Called at load so that a dead or wrong URL stops the run before it starts.
    /// Not counted in [`RewardModel::call_stats`].
    ///
    /// # Errors
    /// [`ModelError::Engine`] naming the URL, what went wrong and what to check;
    /// [`ModelError::Template`] when the template fails to render the probe item.
    pub fn probe(&self) -> Result<(), ModelError> {
        let item = crate::probe::probe_request();
        let body = E::body(&self.text_for(&item)?);
        let root = format!("the server's root (where `{}` hangs, e.g. http://127.0.0.1:8000 for a server listening on port 8000)", E::PATH);
        let server = format!("`{}:` server", E::KIND);
        crate::probe::each_url(&self.client, &server, &root, |one| {
            if let (Some(index), Some(path)) = (self.label_index, E::LABELS_PATH) {
                let labels: Value = one.block_on(one.get_json(path))?;
                let name = E::label_name(&labels, index)
                    .map_err(|e| ModelError::Engine(format!("GET …{path}: cannot read the name of label {index} (`--label-index {index}`): {e}")))?;
                let known = self.label_name.get_or_init(|| name.clone());
                if *known != name {
                    return Err(ModelError::Engine(format!("GET …{path}: label {index} is `{name}` here but `{known}` on an earlier URL; replicas must serve the same model")).into());
                }
            }
            let reply: Parsed<E> = one.block_on(one.post_json(E::PATH, &body))?;
            self.pick(reply.outputs, &item)?;
            Ok(())
        })
    }

    /// The output the label index selects (see [`pick_index`]).
    fn pick(&self, outputs: Outputs, item: &RmRequest) -> Result<f64, ModelError> {
        let what = format!("POST …{} (example `{}`)", E::PATH, item.input.example_id);
        match (outputs, self.label_index) {
            (Outputs::ByIndex(v), index) => Ok(v[pick_index(index, v.len(), &what)?]),
            (Outputs::ByLabel(v), None) => {
                let names: Vec<&str> = v.iter().map(|(l, _)| l.as_str()).collect();
                pick_index(None, v.len(), &what).map(|i| v[i].1).map_err(|e| match e {
                    ModelError::Engine(m) => {
                        ModelError::Engine(format!("{m}; the reply's labels: {}", names.join(", ")))
                    }
                    other => other,
                })
            }
            (Outputs::ByLabel(v), Some(index)) => {
                let Some(name) = self.label_name.get() else {
                    return Err(ModelError::Engine(format!("{what}: the name of label {index} is not known; call `probe()` before scoring with a label index")));
                };
                v.iter().find(|(l, _)| l == name).map(|(_, s)| *s).ok_or_else(|| {
                    let names: Vec<&str> = v.iter().map(|(l, _)| l.as_str()).collect();
                    ModelError::Engine(format!("{what}: no output labelled `{name}` (label {index}) in the reply; its labels: {}", names.join(", ")))
                })
            }
        }
    }

    async fn score_one(&self, item: &RmRequest) -> Result<Score, ModelError> {
        let text = self.text_for(item)?;
        let reply: Parsed<E> =
            self.client.post_json(E::PATH, &E::body(&text)).await.map_err(|e| {
                ModelError::Engine(format!("{} (example `{}`)", e.message, item.input.example_id))
            })?;
        let raw = self.pick(reply.outputs, item)?;
        let value = raw as f32;
        if !value.is_finite() {
            return Err(ModelError::Engine(format!(
                "POST …{} (example `{}`): the score {} does not fit a finite f32",
                E::PATH,
                item.input.example_id,
                raw
            )));
        }
        self.client.add_usage(reply.prompt_tokens, Some(0));
        Ok(Score {
            value,
            tokens: TokenStats {
                input_tokens: reply.prompt_tokens.unwrap_or(0) as usize,
                truncated_tokens: 0,
                output_tokens: 0,
            },
        })
    }
}

impl<E: TextEndpoint> RewardModel for TemplatedRewardModel<E> {
    /// Fails with the first (in input order) item's error if any item fails after its retries.
    fn score(&self, items: &[RmRequest]) -> Result<Vec<Score>, ModelError> {
        self.score_each(items, &|_, _| {}).into_iter().collect()
    }

    /// One request per item, concurrently; `done` gets each score as it arrives.
    fn score_each(
        &self,
        items: &[RmRequest],
        done: ItemDone<'_, Score>,
    ) -> Vec<Result<Score, ModelError>> {
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

    /// `{"endpoint", "chat_template" (origin), "strip_bos", "engine": {…}}`, plus
    /// `"label_index"` (and `"label"`, its name, where the engine names labels) when a label
    /// index is set; keys sorted.
    fn settings(&self) -> Value {
        let mut v = json!({
            "endpoint": E::PATH,
            "chat_template": self.renderer.origin(),
            "strip_bos": E::STRIP_BOS,
            "engine": E::settings(),
        });
        if let Some(i) = self.label_index {
            v["label_index"] = json!(i);
            if let Some(name) = self.label_name.get() {
                v["label"] = json!(name);
            }
        }
        crate::sorted(v)
    }
}

/// `v[key]` as a finite number, or a message naming `key`.
pub(crate) fn number_at(v: &Value, key: &str) -> Result<f64, String> {
    match v.get(key) {
        Some(Value::Number(n)) => {
            n.as_f64().ok_or_else(|| format!("`{key}` = {n} is not a finite number"))
        }
        None | Some(Value::Null) => Err(format!("no `{key}` in the reply")),
        Some(other) => Err(format!("`{key}` = {other} is not a number")),
    }
}

/// The numbers of a non-empty list at `v[key]` (a head's outputs, in label order).
pub(crate) fn numbers_at(v: &Value, key: &str) -> Result<Vec<f64>, String> {
    match v.get(key) {
        Some(Value::Array(a)) if a.is_empty() => Err(format!("`{key}` is an empty list")),
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .map(|(i, x)| match x {
                Value::Number(n) => {
                    n.as_f64().ok_or_else(|| format!("`{key}[{i}]` = {n} is not a finite number"))
                }
                other => Err(format!("`{key}[{i}]` = {other} is not a number")),
            })
            .collect(),
        None | Some(Value::Null) => Err(format!("no `{key}` in the reply")),
        Some(other) => Err(format!("`{key}` = {other} is not a list of numbers")),
    }
}
