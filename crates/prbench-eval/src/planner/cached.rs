//! [`CachedGenerator`]: the run cache in front of any [`Generator`].

use prbench_models::{ChatRequest, ChatResponse, Generator, ItemDone, ModelError, ModelIdentity};

use crate::cache::{cache_key, cached_each, Cache, CacheCounters, EntryKind, Store};

/// A [`Generator`] that answers from the run cache when it can and stores every new reply
/// ([`EntryKind::Generation`]). Only cache misses reach the inner generator, in one call per
/// [`Generator::generate`]; hits and calls are counted in the run's [`CacheCounters`].
///
/// The key ([`CachedGenerator::key`]) covers the inner generator's identity (engine, model
/// file hash or served model name, chat-template hash, dtype) and the whole [`ChatRequest`]:
/// the rendered prompt and the decoding parameters `max_new_tokens`, `temperature`, `top_p`
/// and `seed` (so two runs with different seeds do not share replies, even greedy ones).
pub struct CachedGenerator<'a> {
    inner: &'a dyn Generator,
    cache: &'a Cache,
    counters: &'a CacheCounters,
    identity: ModelIdentity,
    template_hash: Option<String>,
}

impl<'a> CachedGenerator<'a> {
    /// Wraps `inner`; replies go to `cache`, counts to `counters`.
    pub fn new(inner: &'a dyn Generator, cache: &'a Cache, counters: &'a CacheCounters) -> Self {
        Self { identity: inner.identity(), inner, cache, counters, template_hash: None }
    }

    /// Puts `hash` (the prompt templates' hash of the stage using this generator) into every
    /// key as well, so a template edit that renders some prompt the same never reuses a reply
    /// written under the old templates (`prbench build` keys each stage so).
    pub fn with_template_hash(mut self, hash: impl Into<String>) -> Self {
        self.template_hash = Some(hash.into());
        self
    }

    /// The cache key of one request: sha256 (hex), see [`cache_key`]; the example id slot is
    /// empty (a request carries none: the example enters through the prompt and the seed).
    pub fn key(&self, item: &ChatRequest) -> String {
        self.key_under(item, self.template_hash.as_deref())
    }

    /// [`Self::key`] with `template` as the template hash instead of the one set by
    /// [`Self::with_template_hash`] (`None`: no template hash in the key).
    pub fn key_under(&self, item: &ChatRequest, template: Option<&str>) -> String {
        let mut decoding = serde_json::json!({
            "max_new_tokens": item.max_new_tokens,
            "temperature": item.temperature,
            "top_p": item.top_p,
            "seed": item.seed,
        });
        // Without a template hash the key is exactly what it was before the option existed.
        if let Some(hash) = template {
            decoding["template"] = serde_json::Value::String(hash.to_string());
        }
        cache_key(
            EntryKind::Generation,
            &self.identity,
            &decoding,
            "",
            &item.prompt,
            &serde_json::Value::Null,
        )
    }

    /// As [`Generator::generate_each`], with `items[i]` keyed under the template hash
    /// `templates[i]` ([`Self::key_under`]): the requests of several stages go to the inner
    /// generator in one call, in the order given, and each is stored and found under its own
    /// stage's key. `prbench build` sends each example's chosen and rejected requests side by
    /// side, so that a batching engine holds the chosen prompt when the rejected one, which
    /// begins with the same posts and question, is prefilled.
    ///
    /// # Panics
    /// When `templates` and `items` differ in length (a caller bug).
    pub fn generate_each_under(
        &self,
        items: &[ChatRequest],
        templates: &[&str],
        done: ItemDone<'_, ChatResponse>,
    ) -> Vec<Result<ChatResponse, ModelError>> {
        assert_eq!(items.len(), templates.len(), "one template hash per request");
        let keys: Vec<String> =
            items.iter().zip(templates).map(|(it, t)| self.key_under(it, Some(t))).collect();
        self.each_keyed(items, &keys, done)
    }

    fn each_keyed(
        &self,
        items: &[ChatRequest],
        keys: &[String],
        done: ItemDone<'_, ChatResponse>,
    ) -> Vec<Result<ChatResponse, ModelError>> {
        let store = Store {
            cache: self.cache,
            counters: self.counters,
            kind: EntryKind::Generation,
            model: &self.identity.spec,
        };
        cached_each(&store, items, keys, done, |xs, d| self.inner.generate_each(xs, d))
    }
}

impl Generator for CachedGenerator<'_> {
    /// As [`Generator::generate_each`], all items required.
    ///
    /// # Errors
    /// The first item's error when any item fails (what succeeded is stored all the same).
    fn generate(&self, items: &[ChatRequest]) -> Result<Vec<ChatResponse>, ModelError> {
        self.generate_each(items, &|_, _| {}).into_iter().collect()
    }

    /// Stored replies for the requests whose key is in the cache; the others go to the inner
    /// generator's [`Generator::generate_each`] in one call, and each reply is stored the
    /// moment the generator hands it over (a killed run keeps it). An unreadable cache entry
    /// counts as a miss; a failed cache write is counted and does not fail the item.
    fn generate_each(
        &self,
        items: &[ChatRequest],
        done: ItemDone<'_, ChatResponse>,
    ) -> Vec<Result<ChatResponse, ModelError>> {
        let keys: Vec<String> = items.iter().map(|it| self.key(it)).collect();
        self.each_keyed(items, &keys, done)
    }

    /// The inner generator's: the cache changes nothing about what fits its context.
    fn prompt_overflow(
        &self,
        prompt: &prbench_models::ChatPrompt,
        reserve: usize,
    ) -> Result<Option<usize>, ModelError> {
        self.inner.prompt_overflow(prompt, reserve)
    }

    fn identity(&self) -> ModelIdentity {
        self.identity.clone()
    }
}
