//! [`CachedGenerator`]: the run cache in front of any [`Generator`].

use prbench_models::{ChatRequest, ChatResponse, Generator, ModelError, ModelIdentity};

use crate::cache::{cache_key, Cache, CacheCounters, EntryKind};

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
}

impl<'a> CachedGenerator<'a> {
    /// Wraps `inner`; replies go to `cache`, counts to `counters`.
    pub fn new(inner: &'a dyn Generator, cache: &'a Cache, counters: &'a CacheCounters) -> Self {
        Self { identity: inner.identity(), inner, cache, counters }
    }

    /// The cache key of one request: sha256 (hex), see [`cache_key`]; the example id slot is
    /// empty (a request carries none: the example enters through the prompt and the seed).
    pub fn key(&self, item: &ChatRequest) -> String {
        let decoding = serde_json::json!({
            "max_new_tokens": item.max_new_tokens,
            "temperature": item.temperature,
            "top_p": item.top_p,
            "seed": item.seed,
        });
        cache_key(EntryKind::Generation, &self.identity, &decoding, "", &item.prompt, &serde_json::Value::Null)
    }
}

impl Generator for CachedGenerator<'_> {
    /// Stored replies for the requests whose key is in the cache; one call of the inner
    /// generator for all the others, each reply stored as soon as the call returns. An
    /// unreadable cache entry counts as a miss (the call is repeated and the entry replaced); a
    /// failed cache write is counted in the counters and does not fail the call.
    ///
    /// # Errors
    /// The inner generator's error for the misses (nothing is stored then), or
    /// [`ModelError::Engine`] when it returns the wrong number of replies.
    fn generate(&self, items: &[ChatRequest]) -> Result<Vec<ChatResponse>, ModelError> {
        let keys: Vec<String> = items.iter().map(|it| self.key(it)).collect();
        let mut out: Vec<Option<ChatResponse>> = Vec::with_capacity(items.len());
        let mut misses = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            match self.cache.get::<ChatResponse>(key) {
                Ok(Some(hit)) => {
                    self.counters.count_hit();
                    out.push(Some(hit));
                }
                Ok(None) | Err(_) => {
                    misses.push(i);
                    out.push(None);
                }
            }
        }
        if !misses.is_empty() {
            let requests: Vec<ChatRequest> = misses.iter().map(|&i| items[i].clone()).collect();
            self.counters.count_calls(requests.len() as u64);
            let replies = self.inner.generate(&requests)?;
            if replies.len() != requests.len() {
                return Err(ModelError::Engine(format!(
                    "generator returned {} replies for {} requests",
                    replies.len(),
                    requests.len()
                )));
            }
            for (&i, reply) in misses.iter().zip(replies) {
                match self.cache.put(&keys[i], EntryKind::Generation, &self.identity.spec, &reply) {
                    Ok(()) => self.counters.count_stored(),
                    Err(e) => self.counters.count_write_error(e),
                }
                out[i] = Some(reply);
            }
        }
        Ok(out.into_iter().map(|r| r.expect("every item is a hit or a stored miss")).collect())
    }

    fn identity(&self) -> ModelIdentity {
        self.identity.clone()
    }
}
