//! The embedding cache: an [`Embedder`] wrapper that answers texts from the run cache
//! ([`crate::cache::Cache`], entries of kind [`EntryKind::Embedding`]) and sends only the misses
//! to the wrapped embedder, in one batch.
//!
//! Key = sha256 (hex) over a canonical JSON of the key layout version, the entry kind
//! (`embedding`), the embedder identity's `engine` (which for the candle BERT embedder names the
//! pooling, normalisation, length limit and truncation side), `file_hash` (the weights' sha256)
//! and `dtype`, and the text. The spec is not part of the key (moving the model directory keeps
//! the hits); it labels the entry for `prbench cache stats`. The value is the
//! [`Embedding`] (vector and truncated-token count) as JSON, which reads back bit-exact for f32.
//!
//! An entry that no longer reads back counts as a miss (recomputed and replaced); a failed cache
//! write is counted ([`CachedEmbedder::write_errors`]) and the embedding still returned.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use prbench_models::{Embedder, Embedding, ModelError, ModelIdentity, Similarity};
use sha2::{Digest, Sha256};

use crate::cache::{Cache, EntryKind};

/// Version of the embedding key layout; bumping it makes every old embedding entry a miss.
const EMBED_KEY_VERSION: u32 = 1;

/// The cache key of `text` under embedder `identity` (see the module docs).
pub fn embedding_key(identity: &ModelIdentity, text: &str) -> String {
    let doc = serde_json::json!({
        "v": EMBED_KEY_VERSION,
        "kind": "embedding",
        "engine": identity.engine,
        "model": identity.file_hash,
        "dtype": identity.dtype,
        "text": text,
    });
    // serde_json's Map is ordered by key here, so this text is canonical.
    hex::encode(Sha256::digest(doc.to_string().as_bytes()))
}

/// An [`Embedder`] that reads and fills the run cache.
pub struct CachedEmbedder<'a> {
    inner: Arc<dyn Embedder + 'a>,
    cache: &'a Cache,
    identity: ModelIdentity,
    hits: AtomicU64,
    misses: AtomicU64,
    write_errors: AtomicU64,
    first_write_error: Mutex<Option<String>>,
}

impl std::fmt::Debug for CachedEmbedder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedEmbedder")
            .field("identity", &self.identity)
            .field("cache", &self.cache.path())
            .finish()
    }
}

impl<'a> CachedEmbedder<'a> {
    /// Wraps `inner`; embeddings are read from and stored in `cache`.
    pub fn new(inner: Arc<dyn Embedder + 'a>, cache: &'a Cache) -> Self {
        Self {
            identity: inner.identity(),
            inner,
            cache,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            write_errors: AtomicU64::new(0),
            first_write_error: Mutex::new(None),
        }
    }

    /// The cache key of `text` (see [`embedding_key`]).
    pub fn key(&self, text: &str) -> String {
        embedding_key(&self.identity, text)
    }

    /// Texts answered from the cache so far.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// Texts sent to the wrapped embedder so far.
    pub fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }

    /// Cache writes that failed so far, and the first failure's message.
    pub fn write_errors(&self) -> (u64, Option<String>) {
        (
            self.write_errors.load(Ordering::Relaxed),
            self.first_write_error.lock().unwrap_or_else(|p| p.into_inner()).clone(),
        )
    }
}

impl Embedder for CachedEmbedder<'_> {
    /// Cached texts come from the cache; the others go to the wrapped embedder in one call (in
    /// input order) and are stored. Output in input order.
    ///
    /// # Errors
    /// The wrapped embedder's errors; [`ModelError::Engine`] when it returns the wrong number of
    /// embeddings.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Embedding>, ModelError> {
        let keys: Vec<String> = texts.iter().map(|t| self.key(t)).collect();
        let mut out: Vec<Option<Embedding>> = Vec::with_capacity(texts.len());
        let mut miss = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            match self.cache.get::<Embedding>(key) {
                Ok(Some(e)) => out.push(Some(e)),
                // An unreadable entry is a miss: recomputed and replaced.
                Ok(None) | Err(_) => {
                    miss.push(i);
                    out.push(None);
                }
            }
        }
        self.hits.fetch_add((texts.len() - miss.len()) as u64, Ordering::Relaxed);
        if !miss.is_empty() {
            self.misses.fetch_add(miss.len() as u64, Ordering::Relaxed);
            let batch: Vec<&str> = miss.iter().map(|&i| texts[i]).collect();
            let computed = self.inner.embed(&batch)?;
            if computed.len() != batch.len() {
                return Err(ModelError::Engine(format!(
                    "embedder returned {} embeddings for {} texts",
                    computed.len(),
                    batch.len()
                )));
            }
            for (&i, e) in miss.iter().zip(computed) {
                if let Err(err) =
                    self.cache.put(&keys[i], EntryKind::Embedding, &self.identity.spec, &e)
                {
                    self.write_errors.fetch_add(1, Ordering::Relaxed);
                    let mut first =
                        self.first_write_error.lock().unwrap_or_else(|p| p.into_inner());
                    first.get_or_insert_with(|| err.to_string());
                }
                out[i] = Some(e);
            }
        }
        Ok(out.into_iter().map(|e| e.expect("every text answered")).collect())
    }

    fn similarity(&self) -> Similarity {
        self.inner.similarity()
    }

    fn identity(&self) -> ModelIdentity {
        self.identity.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A fake embedder that counts the texts it is asked to embed: vector = [len, vowels].
    struct Counting {
        calls: AtomicUsize,
        texts: AtomicUsize,
    }

    impl Embedder for Counting {
        fn embed(&self, texts: &[&str]) -> Result<Vec<Embedding>, ModelError> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            self.texts.fetch_add(texts.len(), Ordering::Relaxed);
            Ok(texts
                .iter()
                .map(|t| Embedding {
                    vector: vec![
                        t.len() as f32 * 0.1,
                        t.chars().filter(|c| "aeiou".contains(*c)).count() as f32 / 3.0,
                    ],
                    truncated_tokens: usize::from(t.len() > 5),
                })
                .collect())
        }
        fn similarity(&self) -> Similarity {
            Similarity::Dot
        }
        fn identity(&self) -> ModelIdentity {
            ModelIdentity {
                spec: "fake:counting".into(),
                engine: "fake".into(),
                file_hash: "abc".into(),
                chat_template_hash: String::new(),
                dtype: "f32".into(),
            }
        }
    }

    #[test]
    fn second_call_hits_the_cache() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::open(&tmp.path().join("c.sqlite")).unwrap();
        let inner = Arc::new(Counting { calls: AtomicUsize::new(0), texts: AtomicUsize::new(0) });
        let cached = CachedEmbedder::new(inner.clone(), &cache);
        let first = cached.embed(&["alpha", "beta gamma"]).unwrap();
        assert_eq!(
            (inner.calls.load(Ordering::Relaxed), inner.texts.load(Ordering::Relaxed)),
            (1, 2)
        );
        assert_eq!((cached.hits(), cached.misses()), (0, 2));

        // Same texts again (and in another order): no call to the model, same values.
        let second = cached.embed(&["beta gamma", "alpha"]).unwrap();
        assert_eq!(
            (inner.calls.load(Ordering::Relaxed), inner.texts.load(Ordering::Relaxed)),
            (1, 2)
        );
        assert_eq!((cached.hits(), cached.misses()), (2, 2));
        assert_eq!(second, vec![first[1].clone(), first[0].clone()]);
        assert_eq!(second[0].truncated_tokens, 1);

        // One new text among cached ones: only it reaches the model, in one call.
        let third = cached.embed(&["alpha", "delta", "beta gamma"]).unwrap();
        assert_eq!(
            (inner.calls.load(Ordering::Relaxed), inner.texts.load(Ordering::Relaxed)),
            (2, 3)
        );
        assert_eq!((cached.hits(), cached.misses()), (4, 3));
        assert_eq!(third[1].vector, vec![0.5, 2.0 / 3.0]);
        assert_eq!(cached.write_errors().0, 0);

        // A fresh wrapper on the same file (a rerun) hits too; the entries are labelled by spec.
        let rerun = CachedEmbedder::new(inner.clone(), &cache);
        rerun.embed(&["alpha"]).unwrap();
        assert_eq!((rerun.hits(), inner.texts.load(Ordering::Relaxed)), (1, 3));
        let stats = cache.stats().unwrap();
        assert_eq!(
            (stats[0].model.as_str(), stats[0].kind.as_str(), stats[0].entries),
            ("fake:counting", "embedding", 3)
        );
    }

    #[test]
    fn key_depends_on_identity_and_text_not_spec() {
        let mut id = Counting { calls: AtomicUsize::new(0), texts: AtomicUsize::new(0) }.identity();
        let k = embedding_key(&id, "t");
        assert_eq!(k.len(), 64);
        assert_ne!(k, embedding_key(&id, "u"));
        id.spec = "elsewhere".into();
        assert_eq!(k, embedding_key(&id, "t"));
        for change in [
            |i: &mut ModelIdentity| i.engine.push('x'),
            |i: &mut ModelIdentity| i.file_hash.push('x'),
            |i: &mut ModelIdentity| i.dtype.push('x'),
        ] {
            let mut other = id.clone();
            change(&mut other);
            assert_ne!(k, embedding_key(&other, "t"));
        }
    }
}
