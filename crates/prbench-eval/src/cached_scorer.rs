//! [`CachedNextTokenScorer`]: the run cache in front of any [`NextTokenScorer`], so commands
//! built on next-token log-probabilities (the Best-of-N rubric judge in logprob mode) keep every
//! result the moment it is computed and a killed run resumes without repeating a call.

use prbench_models::{ChatPrompt, ModelError, ModelIdentity, NextTokenScorer, TokenStats};
use serde::{Deserialize, Serialize};

use crate::cache::{cache_key, cached_each, Cache, CacheCounters, EntryKind, Store};

/// What one scorer call returns, as the cache stores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Stored {
    logprobs: Vec<f32>,
    tokens: TokenStats,
}

/// A [`NextTokenScorer`] that answers from the run cache when it can and stores every new
/// result ([`EntryKind::NextToken`]). Hits and calls are counted in the run's
/// [`CacheCounters`]; an unreadable entry is a miss, a failed write is counted and does not
/// fail the call.
///
/// The key ([`CachedNextTokenScorer::key`]) covers the inner scorer's identity (engine, model
/// file hash, chat-template hash, dtype), the candidate strings in order and the rendered
/// prompt.
pub struct CachedNextTokenScorer<'a> {
    inner: &'a dyn NextTokenScorer,
    cache: &'a Cache,
    counters: &'a CacheCounters,
    identity: ModelIdentity,
}

impl<'a> CachedNextTokenScorer<'a> {
    /// Wraps `inner`; results go to `cache`, counts to `counters`.
    pub fn new(
        inner: &'a dyn NextTokenScorer,
        cache: &'a Cache,
        counters: &'a CacheCounters,
    ) -> Self {
        Self { identity: inner.identity(), inner, cache, counters }
    }

    /// The cache key of one call: sha256 (hex), see [`cache_key`]; the candidates are its
    /// decoding record, the example id slot is empty (the example enters through the prompt).
    pub fn key(&self, prompt: &ChatPrompt, candidates: &[&str]) -> String {
        let decoding = serde_json::json!({ "candidates": candidates });
        cache_key(
            EntryKind::NextToken,
            &self.identity,
            &decoding,
            "",
            prompt,
            &serde_json::Value::Null,
        )
    }
}

impl NextTokenScorer for CachedNextTokenScorer<'_> {
    fn next_token_logprobs(
        &self,
        prompt: &ChatPrompt,
        candidates: &[&str],
    ) -> Result<(Vec<f32>, TokenStats), ModelError> {
        let keys = [self.key(prompt, candidates)];
        let store = Store {
            cache: self.cache,
            counters: self.counters,
            kind: EntryKind::NextToken,
            model: &self.identity.spec,
        };
        let mut out = cached_each(
            &store,
            std::slice::from_ref(prompt),
            &keys,
            &|_, _| {},
            |prompts, done| {
                let r = self
                    .inner
                    .next_token_logprobs(&prompts[0], candidates)
                    .map(|(logprobs, tokens)| Stored { logprobs, tokens });
                if let Ok(v) = &r {
                    done(0, v);
                }
                vec![r]
            },
        );
        out.pop().expect("one result per prompt").map(|s| (s.logprobs, s.tokens))
    }

    fn prompt_overflow(
        &self,
        prompt: &ChatPrompt,
        reserve: usize,
    ) -> Result<Option<usize>, ModelError> {
        self.inner.prompt_overflow(prompt, reserve)
    }

    fn identity(&self) -> ModelIdentity {
        self.identity.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prbench_models::{ChatMessage, Role};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Log-probabilities from the prompt's length, counting its calls.
    struct Counting(AtomicUsize);

    impl NextTokenScorer for Counting {
        fn next_token_logprobs(
            &self,
            prompt: &ChatPrompt,
            candidates: &[&str],
        ) -> Result<(Vec<f32>, TokenStats), ModelError> {
            self.0.fetch_add(1, Ordering::Relaxed);
            let n = prompt.all_text().len() as f32;
            let tokens = TokenStats { input_tokens: n as usize, ..TokenStats::default() };
            Ok(((0..candidates.len()).map(|i| -0.1 * n - i as f32 / 3.0).collect(), tokens))
        }
        fn identity(&self) -> ModelIdentity {
            ModelIdentity {
                spec: "counting".into(),
                engine: "test".into(),
                file_hash: "f".into(),
                ..ModelIdentity::default()
            }
        }
    }

    fn prompt(user: &str) -> ChatPrompt {
        ChatPrompt {
            messages: vec![ChatMessage::new(Role::User, user)],
            assistant_prefix: "Score: ".into(),
        }
    }

    #[test]
    fn next_token_scores_are_cached_per_prompt_and_candidates() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(&dir.path().join("c.sqlite")).unwrap();
        let counters = CacheCounters::default();
        let inner = Counting(AtomicUsize::new(0));
        let cached = CachedNextTokenScorer::new(&inner, &cache, &counters);
        let first = cached.next_token_logprobs(&prompt("abc"), &["0", "1", "2"]).unwrap();
        assert_eq!(first, inner.next_token_logprobs(&prompt("abc"), &["0", "1", "2"]).unwrap());
        inner.0.store(0, Ordering::Relaxed);
        // The same call again is a hit with the identical result; other candidates or another
        // prompt are new calls.
        assert_eq!(cached.next_token_logprobs(&prompt("abc"), &["0", "1", "2"]).unwrap(), first);
        assert_eq!(inner.0.load(Ordering::Relaxed), 0);
        cached.next_token_logprobs(&prompt("abc"), &["1", "2"]).unwrap();
        cached.next_token_logprobs(&prompt("abcd"), &["0", "1", "2"]).unwrap();
        assert_eq!(inner.0.load(Ordering::Relaxed), 2);
        let r = counters.report(&cache);
        assert_eq!((r.hits, r.calls, r.stored), (1, 3, 3));
        assert_eq!(cache.stats().unwrap()[0].kind, "next-token");
    }
}
