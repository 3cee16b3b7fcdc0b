//! BM25 over one user's profile, through the `bm25` crate (2.3; its `Embedder` computes the
//! per-document term weights and its `Scorer` the idf and the sum).
//!
//! # Formula (as the crate computes it, in f32)
//!
//! For a question `q` and a post `d` of a profile of `N` posts:
//!
//! ```text
//! score(d, q) = Σ_{t in q} idf(t) · tf(t,d)·(k1 + 1) / (tf(t,d) + k1·(1 − b + b·|d| / avgdl))
//! idf(t)      = ln(1 + (N − n(t) + 0.5) / (n(t) + 0.5))
//! ```
//!
//! - `tf(t,d)`: occurrences of token `t` in `d`; `|d|`: tokens in `d`; `avgdl`: mean `|d|` over
//!   this profile's posts (256 when it is 0, the crate's fallback); `n(t)`: posts of this
//!   profile containing `t`.
//! - The sum runs over the question's token *occurrences*: a token the question repeats counts
//!   once per occurrence (as in `rank_bm25`, which LaMP uses).
//! - The idf is the Lucene form `ln(1 + …)`, always positive; `rank_bm25`'s `BM25Okapi` uses
//!   `ln((N − n + 0.5)/(n + 0.5))` with a floor instead, so absolute scores differ from LaMP's.
//! - k1 = 1.2, b = 0.75 by default ([`Bm25Retriever::default`]).
//!
//! # Tokenization (the crate's `DefaultTokenizer`, English, fixed)
//!
//! 1. Unicode → ASCII transliteration (`deunicode`: `é` → `e`, unknown symbols → `[?]`);
//! 2. lowercase;
//! 3. split into words at Unicode (UAX #29) word boundaries, dropping punctuation and spaces;
//! 4. drop English stop words (NLTK's list);
//! 5. stem each word with the Snowball English (Porter2) stemmer (`drums` → `drum`).
//!
//! Tokens are hashed to 64-bit ids (`fxhash`) inside the crate; a collision between two distinct
//! tokens of one profile is possible in principle and would merge their counts (negligible at
//! 64 bits).

use std::collections::HashMap;

use ::bm25::{EmbedderBuilder, Scorer, Tokenizer};
#[cfg(test)]
use ::bm25::{DefaultTokenizer, Language};
use prbench_data::Example;
use rayon::prelude::*;

use super::bm25_tokens::CachedTokenizer;
use super::{Ranking, Retriever};
use crate::error::EvalError;

/// BM25 ranking of each example's profile posts against its question (per-user corpus).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25Retriever {
    /// Term-frequency saturation (default 1.2).
    pub k1: f32,
    /// Length normalisation, 0 (none) to 1 (full) (default 0.75).
    pub b: f32,
}

impl Default for Bm25Retriever {
    fn default() -> Self {
        Self { k1: 1.2, b: 0.75 }
    }
}

/// The crate's own English tokenizer: the reference [`CachedTokenizer`] is tested against.
#[cfg(test)]
pub(super) fn crate_tokenizer() -> DefaultTokenizer {
    DefaultTokenizer::builder()
        .language_mode(Language::English)
        .normalization(true)
        .stopwords(true)
        .stemming(true)
        .build()
}

/// [`CachedTokenizer`] with each post's tokens computed once: the crate tokenizes every
/// document twice (once to fit `avgdl`, once to embed it), and tokenizing (Snowball stemming
/// above all) is most of BM25's cost. Texts not in the map (the question) are tokenized on the
/// spot.
struct Pretokenized<'a> {
    inner: CachedTokenizer,
    known: HashMap<&'a str, Vec<String>>,
}

impl<'a> Pretokenized<'a> {
    fn new(posts: &[&'a str]) -> Self {
        let inner = CachedTokenizer;
        let known = posts.iter().map(|&p| (p, inner.tokenize(p))).collect();
        Self { inner, known }
    }
}

impl Tokenizer for Pretokenized<'_> {
    fn tokenize(&self, input_text: &str) -> Vec<String> {
        match self.known.get(input_text) {
            Some(tokens) => tokens.clone(),
            None => self.inner.tokenize(input_text),
        }
    }
}

impl Bm25Retriever {
    /// A retriever with the given parameters.
    pub fn new(k1: f32, b: f32) -> Self {
        Self { k1, b }
    }

    /// The tokens BM25 sees for `text` (see the module docs), in text order.
    pub fn tokenize(text: &str) -> Vec<String> {
        CachedTokenizer.tokenize(text)
    }

    /// BM25 score of each of `posts` (one user's whole profile, which is also the corpus) for
    /// `question`, in input order.
    pub fn score_posts(&self, question: &str, posts: &[&str]) -> Vec<f64> {
        if posts.is_empty() {
            return Vec::new();
        }
        let embedder = EmbedderBuilder::<u64, Pretokenized<'_>>::with_tokenizer_and_fit_to_corpus(Pretokenized::new(posts), posts)
            .k1(self.k1)
            .b(self.b)
            .build();
        let mut scorer = Scorer::<usize, u64>::new();
        for (i, p) in posts.iter().enumerate() {
            scorer.upsert(&i, embedder.embed(p));
        }
        let query = embedder.embed(question);
        (0..posts.len()).map(|i| f64::from(scorer.score(&i, &query).unwrap_or(0.0))).collect()
    }
}

impl Retriever for Bm25Retriever {
    /// Examples are ranked in parallel (rayon); each ranking depends on its example only.
    fn rank_all(&self, examples: &[Example]) -> Result<Vec<Ranking>, EvalError> {
        examples
            .par_iter()
            .map(|ex| {
                let posts: Vec<&str> = ex.profile.iter().map(|p| p.text.as_str()).collect();
                Ranking::from_scores(ex, &self.score_posts(&ex.question, &posts))
            })
            .collect()
    }

    fn describe(&self) -> String {
        format!(
            "bm25 (k1={}, b={}; bm25 crate 2.3, idf ln(1+(N-n+0.5)/(n+0.5)) over the user's own posts; \
             English tokens: ascii-folded, lowercased, stop words dropped, Porter2-stemmed)",
            self.k1, self.b
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizer_folds_case_drops_stop_words_and_stems() {
        assert_eq!(Bm25Retriever::tokenize("The Drums, and jazz!"), ["drum", "jazz"]);
    }

    /// Hand-computed BM25 (k1 = 1.2, b = 0.75) on a four-post profile.
    ///
    /// Tokens (stop words `the`, `and` dropped, `drums` stemmed to `drum`):
    ///   d0 "The drum."            → [drum]                 |d| = 1
    ///   d1 "Jazz guitar, guitar." → [jazz, guitar, guitar] |d| = 3
    ///   d2 "Drums, drums!"        → [drum, drum]           |d| = 2
    ///   d3 "Piano and jazz"       → [piano, jazz]          |d| = 2
    ///   query "Jazz guitar?"      → [jazz, guitar]
    /// N = 4, avgdl = (1 + 3 + 2 + 2) / 4 = 2.
    /// idf(jazz)   = ln(1 + (4 − 2 + 0.5)/(2 + 0.5)) = ln 2      = 0.693147…  (n = 2: d1, d3)
    /// idf(guitar) = ln(1 + (4 − 1 + 0.5)/(1 + 0.5)) = ln(10/3)  = 1.203973…  (n = 1: d1)
    /// Length factor K(d) = k1·(1 − b + b·|d|/avgdl): K(d1) = 1.2·(0.25 + 0.75·1.5) = 1.65,
    /// K(d3) = 1.2·(0.25 + 0.75·1) = 1.2.
    /// tf terms tf·(k1+1)/(tf+K):
    ///   d1: jazz tf 1 → 2.2/2.65 = 0.830189; guitar tf 2 → 4.4/3.65 = 1.205479
    ///   d3: jazz tf 1 → 2.2/2.2  = 1
    /// score(d1) = ln2·2.2/2.65 + ln(10/3)·4.4/3.65 = 2.026807…
    /// score(d3) = ln2 = 0.693147…;  score(d0) = score(d2) = 0 (no query token).
    /// Ranking: d1, d3, then the tie d0, d2 by post id.
    #[test]
    fn hand_computed_scores_and_ranking() {
        let texts = ["The drum.", "Jazz guitar, guitar.", "Drums, drums!", "Piano and jazz"];
        let ln2 = 2f64.ln();
        let s1 = ln2 * 2.2 / 2.65 + (10f64 / 3.0).ln() * 4.4 / 3.65;
        let want = [0.0, s1, 0.0, ln2];
        let got = Bm25Retriever::default().score_posts("Jazz guitar?", &texts);
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!((g - w).abs() < 1e-6, "post {i}: bm25 {g} vs hand {w}");
        }
        assert!((s1 - 2.026_807_418_8).abs() < 1e-9);

        let ids: Vec<String> = (0..texts.len()).map(|i| format!("d{i}")).collect();
        let posts: Vec<(&str, &str)> = ids.iter().map(String::as_str).zip(texts.iter().copied()).collect();
        let ex = super::super::test_example("Jazz guitar?", &posts);
        let r = Bm25Retriever::default().rank_all(std::slice::from_ref(&ex)).unwrap();
        assert_eq!(r[0].post_ids, ["d1", "d3", "d0", "d2"]);
        let posts = r[0].posts(&ex).unwrap();
        assert_eq!(posts[0].text, "Jazz guitar, guitar.");
        assert_eq!(posts[1].text, "Piano and jazz");
        assert!((r[0].scores[0] - s1).abs() < 1e-6 && (r[0].scores[1] - ln2).abs() < 1e-6);
    }

    #[test]
    fn empty_profile_gives_empty_ranking() {
        assert!(Bm25Retriever::default().score_posts("q", &[]).is_empty());
    }
}
