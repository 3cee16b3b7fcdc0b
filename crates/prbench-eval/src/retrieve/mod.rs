//! Profile retrieval: rank one user's own profile posts by relevance to the question
//! (PROTOCOL.md §1–2). The query is the example's question; the documents are that user's posts
//! only (a per-user corpus, as LaMP does), so corpus statistics such as BM25's idf and average
//! length are computed per example. The `profile:k` and `planner` conditions read the top k.
//!
//! Retrievers: [`bm25::Bm25Retriever`] (lexical, the no-model default) and
//! [`dense::DenseRetriever`] over any [`prbench_models::Embedder`] (the authors used Contriever
//! fine-tuned on MS MARCO: mean pooling, dot product), optionally through the embedding cache
//! [`embed_cache::CachedEmbedder`]. [`ranked`] writes a ranked dataset file that the data loader
//! reads back with [`prbench_data::Dataset::profile_ranking`] set.
//!
//! A [`Ranking`] names posts by **id** and [`ranked_posts`] looks each id up in the example's own
//! profile, so every post stays attached to its own text (the authors' script re-attached ids in
//! the original order after ranking: PROTOCOL.md §10, defect 10). **Ties** are broken by post id
//! (shorter first, then alphabetical), never by the order a file lists the posts in, so ranking
//! a ranked file again changes nothing.

pub mod bm25;
mod bm25_tokens;
pub mod dense;
pub mod embed_cache;
pub mod ranked;

use std::collections::HashMap;

use prbench_data::{Example, ProfilePost};
use serde::{Deserialize, Serialize};

use crate::error::EvalError;

/// One example's profile in ranked order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ranking {
    /// The example's id.
    pub example_id: String,
    /// Every profile post's id, best first (each id exactly once).
    pub post_ids: Vec<String>,
    /// The retriever's score of each post, same order as `post_ids` (non-increasing; the scale
    /// is the retriever's own: BM25 sums, cosine in [-1, 1], or raw dot products).
    pub scores: Vec<f64>,
}

impl Ranking {
    /// Ranks `example`'s posts given one score per post in profile order: highest score first,
    /// ties by post id (shorter id first, then alphabetical, so `p2` precedes `p10`). Ties do
    /// not depend on the order the file lists the posts in, so ranking an already ranked file
    /// again gives the same ranking.
    ///
    /// # Errors
    /// [`EvalError::Retrieval`] when `scores` has the wrong length or holds a NaN or infinity, or
    /// the profile repeats a post id (ids must be unique within a profile to name posts).
    pub fn from_scores(example: &Example, scores: &[f64]) -> Result<Ranking, EvalError> {
        let err = |reason: String| EvalError::Retrieval { example_id: example.id.clone(), reason };
        if scores.len() != example.profile.len() {
            return Err(err(format!(
                "{} scores for {} profile posts",
                scores.len(),
                example.profile.len()
            )));
        }
        if let Some(i) = scores.iter().position(|s| !s.is_finite()) {
            return Err(err(format!(
                "post `{}` has the non-finite score {}",
                example.profile[i].id, scores[i]
            )));
        }
        unique_ids(example)?;
        let mut order: Vec<usize> = (0..scores.len()).collect();
        let id = |i: usize| (example.profile[i].id.len(), example.profile[i].id.as_str());
        order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then_with(|| id(a).cmp(&id(b))));
        Ok(Ranking {
            example_id: example.id.clone(),
            post_ids: order.iter().map(|&i| example.profile[i].id.clone()).collect(),
            scores: order.iter().map(|&i| scores[i]).collect(),
        })
    }

    /// The example's posts in this ranking's order; see [`ranked_posts`].
    ///
    /// # Errors
    /// As [`ranked_posts`].
    pub fn posts<'a>(&self, example: &'a Example) -> Result<Vec<&'a ProfilePost>, EvalError> {
        ranked_posts(example, self)
    }
}

/// Position of each post id in the profile.
///
/// # Errors
/// [`EvalError::Retrieval`] naming a repeated id.
fn unique_ids(example: &Example) -> Result<HashMap<&str, usize>, EvalError> {
    let mut index = HashMap::with_capacity(example.profile.len());
    for (i, p) in example.profile.iter().enumerate() {
        if let Some(first) = index.insert(p.id.as_str(), i) {
            return Err(EvalError::Retrieval {
                example_id: example.id.clone(),
                reason: format!(
                    "the profile repeats post id `{}` (positions {first} and {i}); post ids must be unique \
                     within a profile so that a ranking can name each post",
                    p.id
                ),
            });
        }
    }
    Ok(index)
}

/// `example`'s profile posts in `ranking`'s order, each looked up **by id** in the example's own
/// profile (never by position), so each id stays attached to its own text.
///
/// # Errors
/// [`EvalError::Retrieval`] when the ranking is for another example, names an id the profile
/// does not have or names one twice, leaves a post out, has a score count unlike its id count,
/// or the profile itself repeats an id.
pub fn ranked_posts<'a>(
    example: &'a Example,
    ranking: &Ranking,
) -> Result<Vec<&'a ProfilePost>, EvalError> {
    let err = |reason: String| EvalError::Retrieval { example_id: example.id.clone(), reason };
    if ranking.example_id != example.id {
        return Err(err(format!("the ranking is for example `{}`", ranking.example_id)));
    }
    if ranking.scores.len() != ranking.post_ids.len() {
        return Err(err(format!(
            "the ranking has {} scores for {} post ids",
            ranking.scores.len(),
            ranking.post_ids.len()
        )));
    }
    let index = unique_ids(example)?;
    let mut used = vec![false; example.profile.len()];
    let mut out = Vec::with_capacity(ranking.post_ids.len());
    for id in &ranking.post_ids {
        let &i = index.get(id.as_str()).ok_or_else(|| {
            err(format!("the ranking names post id `{id}`, which the profile does not have"))
        })?;
        if std::mem::replace(&mut used[i], true) {
            return Err(err(format!("the ranking names post id `{id}` twice")));
        }
        out.push(&example.profile[i]);
    }
    if let Some(i) = used.iter().position(|u| !u) {
        return Err(err(format!("the ranking leaves out post id `{}`", example.profile[i].id)));
    }
    Ok(out)
}

/// What a retriever did so far (for the end-of-run report); zero for retrievers without a model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetrievalStats {
    /// Texts (questions and posts) embedded, from the model or the cache.
    pub texts: u64,
    /// Of those, texts the embedder had to cut at the end (too long for its maximum length).
    pub truncated_texts: u64,
    /// Tokens cut from those texts, in all.
    pub truncated_tokens: u64,
    /// Embeddings answered by the cache.
    pub cache_hits: u64,
    /// Embeddings computed by the model (cache misses, or every text without a cache).
    pub cache_misses: u64,
    /// Cache writes that failed (the embedding was still used; the next run recomputes it).
    pub cache_write_errors: u64,
}

/// Ranks each example's profile posts by relevance to its question.
pub trait Retriever: Send + Sync {
    /// One [`Ranking`] per example, in input order; each holds every post of that example's
    /// profile exactly once, best first (ties by post id, see [`Ranking::from_scores`]).
    ///
    /// # Errors
    /// [`EvalError::Backend`] when an embedder fails; [`EvalError::Retrieval`] for a profile
    /// whose post ids repeat or a non-finite score.
    fn rank_all(&self, examples: &[Example]) -> Result<Vec<Ranking>, EvalError>;
    /// What ranked the posts, with its parameters and model hash (recorded in ranked dataset
    /// files and manifests), e.g. `bm25 (k1=1.2, b=0.75, …)` or
    /// `dense all-MiniLM-L6-v2 sha256:53aa… cosine …`.
    fn describe(&self) -> String;
    /// Counts since construction (texts embedded and truncated, cache hits and misses).
    fn stats(&self) -> RetrievalStats {
        RetrievalStats::default()
    }
}

/// A one-example fixture for the retrieval tests: `question` and `(post id, text)` pairs.
#[cfg(test)]
pub(crate) fn test_example(question: &str, posts: &[(&str, &str)]) -> Example {
    prbench_data::ExampleBuilder::new("e1")
        .subset("Art_and_Entertainment")
        .question(question)
        .profile(posts.iter().map(|(id, text)| ProfilePost::new(*id, "c", *text)))
        .narrative("n")
        .category("c")
        .chosen("a")
        .rejected("b")
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_are_broken_by_post_id_whatever_the_file_order() {
        // p10, p2 and p1 tie at 0.5 below p3: shorter id first, then alphabetical.
        let a = test_example("q", &[("p10", "x"), ("p3", "y"), ("p2", "z"), ("p1", "w")]);
        let r = Ranking::from_scores(&a, &[0.5, 0.9, 0.5, 0.5]).unwrap();
        assert_eq!(r.post_ids, ["p3", "p1", "p2", "p10"]);
        // The same posts listed in another order rank the same.
        let b = test_example("q", &[("p1", "w"), ("p2", "z"), ("p3", "y"), ("p10", "x")]);
        assert_eq!(Ranking::from_scores(&b, &[0.5, 0.5, 0.9, 0.5]).unwrap().post_ids, r.post_ids);
    }

    #[test]
    fn reversed_ranking_keeps_each_id_on_its_own_text() {
        let ex = test_example("q", &[("p1", "text one"), ("p2", "text two"), ("p3", "text three")]);
        // Scores rising with profile position: the ranking is the profile reversed.
        let r = Ranking::from_scores(&ex, &[0.1, 0.2, 0.3]).unwrap();
        assert_eq!(r.post_ids, ["p3", "p2", "p1"]);
        assert_eq!(r.scores, [0.3, 0.2, 0.1]);
        let posts = ranked_posts(&ex, &r).unwrap();
        let got: Vec<(&str, &str)> =
            posts.iter().map(|p| (p.id.as_str(), p.text.as_str())).collect();
        assert_eq!(got, [("p3", "text three"), ("p2", "text two"), ("p1", "text one")]);
    }

    #[test]
    fn ties_keep_profile_order() {
        let ex = test_example("q", &[("a", "1"), ("b", "2"), ("c", "3"), ("d", "4")]);
        let r = Ranking::from_scores(&ex, &[0.0, 1.0, 0.0, 1.0]).unwrap();
        assert_eq!(r.post_ids, ["b", "d", "a", "c"]);
    }

    #[test]
    fn bad_rankings_are_errors() {
        let ex = test_example("q", &[("p1", "x"), ("p2", "y")]);
        let mk = |ids: &[&str]| Ranking {
            example_id: "e1".into(),
            post_ids: ids.iter().map(|s| s.to_string()).collect(),
            scores: vec![0.0; ids.len()],
        };
        for (ids, want) in [
            (&["p1", "p9"][..], "does not have"),
            (&["p1", "p1"][..], "twice"),
            (&["p2"][..], "leaves out post id `p1`"),
        ] {
            let e = ranked_posts(&ex, &mk(ids)).unwrap_err().to_string();
            assert!(e.contains(want) && e.contains("e1"), "{ids:?}: {e}");
        }
        let mut other = mk(&["p1", "p2"]);
        other.example_id = "e2".into();
        assert!(ranked_posts(&ex, &other).unwrap_err().to_string().contains("for example `e2`"));
        let dup = test_example("q", &[("p1", "x"), ("p1", "y")]);
        assert!(Ranking::from_scores(&dup, &[1.0, 0.0])
            .unwrap_err()
            .to_string()
            .contains("repeats post id `p1`"));
        assert!(Ranking::from_scores(&ex, &[f64::NAN, 0.0])
            .unwrap_err()
            .to_string()
            .contains("non-finite"));
        assert!(Ranking::from_scores(&ex, &[0.0]).is_err());
    }
}
