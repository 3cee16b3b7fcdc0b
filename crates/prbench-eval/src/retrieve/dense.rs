//! Dense retrieval: embed the question and each of the user's posts with an [`Embedder`] and
//! rank the posts by the embedder's own similarity ([`Embedder::similarity`]: cosine for an
//! L2-normalised model such as all-MiniLM-L6-v2, dot product for Contriever).
//!
//! Each example's texts (question first, then the posts in profile order) go to the embedder in
//! one call, which batches them. Texts the embedder had to cut are counted
//! ([`RetrievalStats::truncated_texts`]) so the caller can report them; they are never dropped.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use prbench_data::Example;
use prbench_models::{Embedder, Embedding, ModelError};

use super::embed_cache::CachedEmbedder;
use super::{Ranking, RetrievalStats, Retriever};
use crate::cache::Cache;
use crate::error::EvalError;

/// Ranks profile posts by embedding similarity to the question.
pub struct DenseRetriever<'a> {
    embedder: Arc<dyn Embedder + 'a>,
    cached: Option<Arc<CachedEmbedder<'a>>>,
    texts: AtomicU64,
    truncated_texts: AtomicU64,
    truncated_tokens: AtomicU64,
}

impl std::fmt::Debug for DenseRetriever<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DenseRetriever").field("identity", &self.embedder.identity()).finish()
    }
}

impl<'a> DenseRetriever<'a> {
    /// A retriever that calls `embedder` for every text.
    pub fn new(embedder: Arc<dyn Embedder + 'a>) -> Self {
        Self {
            embedder,
            cached: None,
            texts: AtomicU64::new(0),
            truncated_texts: AtomicU64::new(0),
            truncated_tokens: AtomicU64::new(0),
        }
    }

    /// A retriever whose embeddings go through the run cache (see
    /// [`super::embed_cache`]): only texts not cached reach `embedder`.
    pub fn with_cache(embedder: Arc<dyn Embedder + 'a>, cache: &'a Cache) -> Self {
        let cached = Arc::new(CachedEmbedder::new(embedder, cache));
        let mut r = Self::new(cached.clone());
        r.cached = Some(cached);
        r
    }

    /// Texts cut by the embedder so far (each counted once per time it was embedded).
    pub fn truncated_texts(&self) -> u64 {
        self.truncated_texts.load(Ordering::Relaxed)
    }

    /// Similarity of `question` to each of `posts` (input order), as f64, and the embeddings'
    /// truncation counts.
    ///
    /// # Errors
    /// The embedder's errors; [`ModelError::Engine`] when it returns the wrong number of vectors.
    pub fn score_posts(&self, question: &str, posts: &[&str]) -> Result<Vec<f64>, ModelError> {
        let mut texts = Vec::with_capacity(posts.len() + 1);
        texts.push(question);
        texts.extend_from_slice(posts);
        let emb: Vec<Embedding> = self.embedder.embed(&texts)?;
        if emb.len() != texts.len() {
            return Err(ModelError::Engine(format!(
                "embedder returned {} embeddings for {} texts",
                emb.len(),
                texts.len()
            )));
        }
        self.texts.fetch_add(emb.len() as u64, Ordering::Relaxed);
        for e in &emb {
            if e.truncated_tokens > 0 {
                self.truncated_texts.fetch_add(1, Ordering::Relaxed);
                self.truncated_tokens.fetch_add(e.truncated_tokens as u64, Ordering::Relaxed);
            }
        }
        let sim = self.embedder.similarity();
        let q = &emb[0].vector;
        Ok(emb[1..].iter().map(|e| f64::from(sim.score(q, &e.vector))).collect())
    }
}

/// A short name for a model spec: the repo (with the commit shortened) for `hf:`, the last path
/// component otherwise.
fn model_name(spec: &str) -> String {
    if let Some(repo) = spec.strip_prefix("hf:") {
        return match repo.split_once('@') {
            Some((name, rev)) => format!("hf:{name}@{}", rev.chars().take(12).collect::<String>()),
            None => format!("hf:{repo}"),
        };
    }
    let path = spec.strip_prefix("dir:").unwrap_or(spec).trim_end_matches('/');
    path.rsplit('/').next().filter(|s| !s.is_empty()).unwrap_or(path).to_string()
}

impl Retriever for DenseRetriever<'_> {
    fn rank_all(&self, examples: &[Example]) -> Result<Vec<Ranking>, EvalError> {
        let id = self.embedder.identity();
        examples
            .iter()
            .map(|ex| {
                let posts: Vec<&str> = ex.profile.iter().map(|p| p.text.as_str()).collect();
                if posts.is_empty() {
                    return Ranking::from_scores(ex, &[]);
                }
                let scores = self.score_posts(&ex.question, &posts).map_err(|source| {
                    EvalError::Backend { model: id.spec.clone(), example_id: ex.id.clone(), source }
                })?;
                Ranking::from_scores(ex, &scores)
            })
            .collect()
    }

    /// `dense <name> sha256:<weights hash> <cosine|dot> (<engine>)`.
    fn describe(&self) -> String {
        let id = self.embedder.identity();
        let sim = match self.embedder.similarity() {
            prbench_models::Similarity::Cosine => "cosine",
            prbench_models::Similarity::Dot => "dot",
        };
        format!("dense {} sha256:{} {sim} ({})", model_name(&id.spec), id.file_hash, id.engine)
    }

    fn stats(&self) -> RetrievalStats {
        let (hits, misses, write_errors) = match &self.cached {
            Some(c) => (c.hits(), c.misses(), c.write_errors().0),
            None => (0, self.texts.load(Ordering::Relaxed), 0),
        };
        RetrievalStats {
            texts: self.texts.load(Ordering::Relaxed),
            truncated_texts: self.truncated_texts.load(Ordering::Relaxed),
            truncated_tokens: self.truncated_tokens.load(Ordering::Relaxed),
            cache_hits: hits,
            cache_misses: misses,
            cache_write_errors: write_errors,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prbench_models::{ModelIdentity, Similarity};

    /// Fixed 2-d vectors per text; `sim` chooses cosine or dot.
    struct Fixed {
        sim: Similarity,
    }

    impl Embedder for Fixed {
        fn embed(&self, texts: &[&str]) -> Result<Vec<Embedding>, ModelError> {
            texts
                .iter()
                .map(|t| {
                    let v = match *t {
                        "q" => vec![1.0, 0.0],
                        "east" => vec![2.0, 0.0],
                        "north-east" => vec![3.0, 3.0],
                        "north" => vec![0.0, 0.5],
                        "long west" => vec![-1.0, 0.0],
                        other => return Err(ModelError::Engine(format!("no vector for {other}"))),
                    };
                    Ok(Embedding {
                        vector: v,
                        truncated_tokens: if *t == "long west" { 7 } else { 0 },
                    })
                })
                .collect()
        }
        fn similarity(&self) -> Similarity {
            self.sim
        }
        fn identity(&self) -> ModelIdentity {
            ModelIdentity {
                spec: "dir:/models/fixed-2d".into(),
                engine: "fake".into(),
                file_hash: "f1xed".into(),
                chat_template_hash: String::new(),
                dtype: "f32".into(),
            }
        }
    }

    fn example() -> Example {
        super::super::test_example(
            "q",
            &[("p0", "north"), ("p1", "long west"), ("p2", "north-east"), ("p3", "east")],
        )
    }

    /// q = (1,0). Cosine by hand: east (2,0) → 1; north-east (3,3) → 3/(1·3√2) = 1/√2 = 0.707107;
    /// north (0,0.5) → 0; long west (−1,0) → −1. Dot by hand: north-east 3, east 2, north 0,
    /// long west −1 — so the two similarities give different rankings.
    #[test]
    fn ranks_by_hand_computed_cosine_and_dot() {
        let ex = example();
        let cos = DenseRetriever::new(Arc::new(Fixed { sim: Similarity::Cosine }));
        let r = &cos.rank_all(std::slice::from_ref(&ex)).unwrap()[0];
        assert_eq!(r.post_ids, ["p3", "p2", "p0", "p1"]);
        let want = [1.0, std::f64::consts::FRAC_1_SQRT_2, 0.0, -1.0];
        for (g, w) in r.scores.iter().zip(want) {
            assert!((g - w).abs() < 1e-6, "{g} vs {w}");
        }
        let texts: Vec<&str> = r.posts(&ex).unwrap().iter().map(|p| p.text.as_str()).collect();
        assert_eq!(texts, ["east", "north-east", "north", "long west"]);
        // One of five texts (question + 4 posts) was cut, 7 tokens.
        let st = cos.stats();
        assert_eq!((st.texts, st.truncated_texts, st.truncated_tokens), (5, 1, 7));
        assert_eq!(cos.truncated_texts(), 1);
        assert_eq!(cos.describe(), "dense fixed-2d sha256:f1xed cosine (fake)");

        let dot = DenseRetriever::new(Arc::new(Fixed { sim: Similarity::Dot }));
        let r = &dot.rank_all(std::slice::from_ref(&ex)).unwrap()[0];
        assert_eq!(r.post_ids, ["p2", "p3", "p0", "p1"]);
        assert_eq!(r.scores, [3.0, 2.0, 0.0, -1.0]);
    }

    #[test]
    fn embedder_failure_names_the_example() {
        let mut ex = example();
        ex.profile[0].text = "unknown".into();
        // The message a user reads: the error and its causes (the binary prints each once).
        let e = prbench_models::error::chain(
            &DenseRetriever::new(Arc::new(Fixed { sim: Similarity::Dot }))
                .rank_all(&[ex])
                .unwrap_err(),
        );
        assert!(e.contains("`e1`") && e.contains("no vector for unknown"), "{e}");
    }

    #[test]
    fn cached_retriever_counts_hits() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::open(&tmp.path().join("c.sqlite")).unwrap();
        let r = DenseRetriever::with_cache(Arc::new(Fixed { sim: Similarity::Cosine }), &cache);
        let ex = example();
        let a = r.rank_all(std::slice::from_ref(&ex)).unwrap();
        let b = r.rank_all(std::slice::from_ref(&ex)).unwrap();
        assert_eq!(a, b);
        let st = r.stats();
        assert_eq!((st.cache_hits, st.cache_misses, st.texts, st.truncated_texts), (5, 5, 10, 2));
    }

    #[test]
    fn model_names() {
        assert_eq!(
            model_name("dir:/home/u/.cache/prbench/models/all-MiniLM-L6-v2/"),
            "all-MiniLM-L6-v2"
        );
        assert_eq!(
            model_name("hf:facebook/contriever-msmarco@0123456789abcdef"),
            "hf:facebook/contriever-msmarco@0123456789ab"
        );
        assert_eq!(model_name("hf:org/m"), "hf:org/m");
    }
}
