//! A reward model behind the HTTP reward protocol of PROTOCOL.md §7: `POST {url}/score` with
//! JSON `{"query": question, "profile": context or "", "response_text": answer}` →
//! `{"score": number}`, the model's raw score. A reply without a finite score fails the item;
//! there is never a default reward (PROTOCOL.md §10: the authors returned 0.5 on any error).

use prbench_models::{
    CallStats, ItemDone, ModelError, ModelIdentity, RewardModel, RmRequest, Score, TokenStats,
};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::client::RemoteClient;
use crate::options::RemoteOptions;

/// Engine name in [`ModelIdentity::engine`].
pub const ENGINE: &str = "reward server (PROTOCOL.md §7)";

/// Path of the scoring endpoint under each server URL.
pub const SCORE_PATH: &str = "/score";

/// The item [`RewardServer::probe`] sends as `(query, profile, response_text)`: the shared
/// probe item ([`crate::probe::probe_request`]), short, no profile, nothing from any dataset.
pub const PROBE_ITEM: (&str, &str, &str) =
    (crate::probe::PROBE_QUESTION, "", crate::probe::PROBE_ANSWER);

#[derive(Debug, Deserialize)]
struct ScoreReply {
    #[serde(default)]
    score: Value,
}

/// A reward model served over the PROTOCOL.md §7 protocol, one request per item.
#[derive(Debug)]
pub struct RewardServer {
    spec: String,
    client: RemoteClient,
}

impl RewardServer {
    /// A reward model at `urls` (several = replicas of the same model; `/score` is appended).
    ///
    /// # Errors
    /// [`ModelError::Engine`] when `urls` is empty, a URL is not `http(s)://`, or the HTTP
    /// runtime cannot start. No request is sent.
    pub fn new(urls: Vec<String>, opts: RemoteOptions) -> Result<Self, ModelError> {
        let client = RemoteClient::new(&urls, opts)?;
        Ok(Self { spec: format!("reward-server:{}", client.urls().join(",")), client })
    }

    /// Sets the spec recorded in [`ModelIdentity::spec`] (default `reward-server:URL,…`).
    pub fn with_spec(mut self, spec: impl Into<String>) -> Self {
        self.spec = spec.into();
        self
    }

    /// Checks that every server URL answers the protocol: one `POST {url}/score` with
    /// [`PROBE_ITEM`] to each URL in turn (retried as any request is), whose reply must carry a
    /// finite `score` ([`crate::probe`], shared with the other served reward models). Called at
    /// load so that a dead or wrong URL stops the run before it starts, instead of filling it
    /// with error outcomes. The probe's requests are not counted in [`RewardModel::call_stats`].
    ///
    /// The protocol (PROTOCOL.md §7) guarantees only `POST /score`, so that is what is probed;
    /// `GET /health` is our own server's extra and other servers need not have it.
    ///
    /// # Errors
    /// [`ModelError::Engine`] naming the URL, what went wrong and what to check.
    pub fn probe(&self) -> Result<(), ModelError> {
        let item = crate::probe::probe_request();
        let root = format!("the server's root (where `{SCORE_PATH}` hangs, e.g. http://127.0.0.1:8000 for `prbench serve-reward --port 8000`)");
        crate::probe::each_url(&self.client, "reward server", &root, |one| {
            let reply: ScoreReply = one.block_on(one.post_json(SCORE_PATH, &Self::body(&item)))?;
            Self::read(reply, &item)?;
            Ok(())
        })
    }

    fn body(item: &RmRequest) -> Value {
        json!({
            "query": item.input.question,
            "profile": item.input.context.as_deref().unwrap_or(""),
            "response_text": item.input.answer,
        })
    }

    fn read(reply: ScoreReply, item: &RmRequest) -> Result<Score, ModelError> {
        let value = reply.score.as_f64().map(|v| v as f32).filter(|v| v.is_finite()).ok_or_else(|| {
            let got = if reply.score.is_null() { "no `score`".to_string() } else { format!("`score` = {}", reply.score) };
            ModelError::Engine(format!("POST …{SCORE_PATH} (example `{}`): the reply has {got}; a finite number is required", item.input.example_id))
        })?;
        Ok(Score { value, tokens: TokenStats::default() })
    }

    async fn score_one(&self, item: &RmRequest) -> Result<Score, ModelError> {
        let reply: ScoreReply = self.client.post_json(SCORE_PATH, &Self::body(item)).await?;
        let score = Self::read(reply, item)?;
        // The protocol's reply carries no token count.
        self.client.add_usage(None, Some(0));
        Ok(score)
    }
}

impl RewardModel for RewardServer {
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

    /// Spec, engine [`ENGINE`], the sorted server URLs as `file_hash` (the protocol names no model),
    /// no template hash, dtype `n/a`.
    fn identity(&self) -> ModelIdentity {
        ModelIdentity {
            spec: self.spec.clone(),
            engine: ENGINE.to_string(),
            file_hash: {
                let mut urls = self.client.urls();
                urls.sort();
                urls.join(",")
            },
            chat_template_hash: String::new(),
            dtype: "n/a".to_string(),
        }
    }

    fn call_stats(&self) -> Option<CallStats> {
        Some(self.client.stats())
    }

    /// `{"endpoint": "/score", "normalization": "none"}`: the protocol's raw score.
    fn settings(&self) -> Value {
        json!({ "endpoint": SCORE_PATH, "normalization": "none" })
    }
}
