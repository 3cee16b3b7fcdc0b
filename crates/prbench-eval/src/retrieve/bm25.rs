//! BM25 over one user's profile, computed as the `bm25` crate (2.3) computes it, over interned
//! token ids: the crate's `Embedder` hashes every token string of every post and keeps a hash
//! map of counts per post and an inverted index, where only the question's tokens count. The
//! scores are the crate's, bit for bit (tested against it on every text of the sample, P-Soups
//! and a synthetic set, ties included).
//!
//! # Formula (as the crate computes it, in f32, in this order)
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
//! - In f32 as the crate writes it: `avgdl = (Σ|d| as f64 / N as f64) as f32`;
//!   `tf·(k1 + 1) / (tf + k1·((1 − b) + b·(|d| / avgdl)))`;
//!   `ln(1 + ((N − n) + 0.5) / (n + 0.5))`; the sum accumulated in f32 in the question's token
//!   order, a token absent from `d` adding `idf·0`.
//!
//! # Tokenization (the crate's `DefaultTokenizer`, English, fixed)
//!
//! 1. Unicode → ASCII transliteration (`deunicode`: `é` → `e`, unknown symbols → `[?]`);
//! 2. lowercase;
//! 3. split into words at Unicode (UAX #29) word boundaries, dropping punctuation and spaces;
//! 4. drop English stop words (NLTK's list);
//! 5. stem each word with the Snowball English (Porter2) stemmer (`drums` → `drum`).
//!
//! Tokens are interned per thread (`super::bm25_tokens`): two tokens are the same term when
//! their stems are equal strings. The crate compares 64-bit `fxhash` values of the strings
//! instead, so it would merge two distinct stems of one profile whose hashes collide; no such
//! collision occurs on the texts the equality test covers.

use prbench_data::Example;
use rayon::prelude::*;

use super::bm25_tokens::{tokenize, with_vocab};
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

/// The crate's own English tokenizer: the reference the interned tokens are tested against.
#[cfg(test)]
pub(super) fn crate_tokenizer() -> ::bm25::DefaultTokenizer {
    ::bm25::DefaultTokenizer::builder()
        .language_mode(::bm25::Language::English)
        .normalization(true)
        .stopwords(true)
        .stemming(true)
        .build()
}

/// The crate's `avgdl` when the corpus has no tokens.
const FALLBACK_AVGDL: f32 = 256.0;

impl Bm25Retriever {
    /// A retriever with the given parameters.
    pub fn new(k1: f32, b: f32) -> Self {
        Self { k1, b }
    }

    /// The tokens BM25 sees for `text` (see the module docs), in text order.
    pub fn tokenize(text: &str) -> Vec<String> {
        tokenize(text)
    }

    /// BM25 score of each of `posts` (one user's whole profile, which is also the corpus) for
    /// `question`, in input order (see the module docs for the formula).
    pub fn score_posts(&self, question: &str, posts: &[&str]) -> Vec<f64> {
        if posts.is_empty() {
            return Vec::new();
        }
        with_vocab(|vocab| {
            vocab.trim();
            let query = vocab.token_ids(question);
            if query.is_empty() {
                return vec![0.0; posts.len()];
            }
            // The question's distinct tokens; only their counts in each post matter.
            let mut terms = query.clone();
            terms.sort_unstable();
            terms.dedup();
            let slots: Vec<usize> =
                query.iter().map(|t| terms.binary_search(t).expect("a query term")).collect();
            let (lo, hi) = (terms[0], terms[terms.len() - 1]);
            let width = terms.len();
            // tf[i * width + s]: occurrences of term s in post i; lens[i]: tokens in post i.
            let mut tf = vec![0u32; posts.len() * width];
            let mut lens = Vec::with_capacity(posts.len());
            for (i, post) in posts.iter().enumerate() {
                let counts = &mut tf[i * width..(i + 1) * width];
                let mut len = 0usize;
                vocab.for_each_token(post, |id| {
                    len += 1;
                    if (lo..=hi).contains(&id) {
                        if let Ok(s) = terms.binary_search(&id) {
                            counts[s] += 1;
                        }
                    }
                });
                lens.push(len);
            }
            let n = posts.len();
            let total: u64 = lens.iter().map(|&l| l as u64).sum();
            let avgdl = match (total as f64 / n as f64) as f32 {
                a if a <= 0.0 => FALLBACK_AVGDL,
                a => a,
            };
            let idf: Vec<f32> = (0..width)
                .map(|s| {
                    let df = (0..n).filter(|&i| tf[i * width + s] > 0).count() as f32;
                    (1f32 + ((n as f32 - df + 0.5) / (df + 0.5))).ln()
                })
                .collect();
            let (k1, b) = (self.k1, self.b);
            (0..n)
                .map(|i| {
                    let length = k1 * (1.0 - b + b * (lens[i] as f32 / avgdl));
                    let mut score = 0f32;
                    for &s in &slots {
                        let count = tf[i * width + s];
                        let weight = if count == 0 {
                            0f32
                        } else {
                            let t = count as f32;
                            t * (k1 + 1.0) / (t + length)
                        };
                        score += idf[s] * weight;
                    }
                    f64::from(score)
                })
                .collect()
        })
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
    use ::bm25::{DefaultTokenizer, EmbedderBuilder, Scorer};

    use super::*;

    /// The `bm25` crate's scores (what prbench used before scoring itself): its `Embedder`
    /// fitted to the posts with its own tokenizer, its `Scorer` over 64-bit token hashes.
    fn crate_scores(k1: f32, b: f32, question: &str, posts: &[&str]) -> Vec<f64> {
        if posts.is_empty() {
            return Vec::new();
        }
        let embedder = EmbedderBuilder::<u64, DefaultTokenizer>::with_tokenizer_and_fit_to_corpus(
            crate_tokenizer(),
            posts,
        )
        .k1(k1)
        .b(b)
        .build();
        let mut scorer = Scorer::<usize, u64>::new();
        for (i, p) in posts.iter().enumerate() {
            scorer.upsert(&i, embedder.embed(p));
        }
        let query = embedder.embed(question);
        (0..posts.len()).map(|i| f64::from(scorer.score(&i, &query).unwrap_or(0.0))).collect()
    }

    fn assert_same_as_crate(k1: f32, b: f32, question: &str, posts: &[&str]) {
        let ours = Bm25Retriever::new(k1, b).score_posts(question, posts);
        let theirs = crate_scores(k1, b, question, posts);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&ours),
            bits(&theirs),
            "k1 {k1}, b {b}, question {question:?}: {ours:?} vs {theirs:?}"
        );
    }

    /// Bit-identical scores on hand-made profiles: ties (equal and empty posts, posts of stop
    /// words only), repeated question tokens, a question of stop words only, question tokens in
    /// no post, one-post profiles, and non-ASCII text.
    #[test]
    fn scores_equal_the_crates_on_varied_texts() {
        let cases: [(&str, &[&str]); 9] = [
            (
                "Jazz guitar?",
                &["The drum.", "Jazz guitar, guitar.", "Drums, drums!", "Piano and jazz"],
            ),
            (
                "jazz jazz JAZZ piano",
                &["jazz", "jazz", "piano piano piano", "", "the and of", "Jazz piano, jazz piano."],
            ),
            ("the and of", &["jazz", "the"]),
            ("violin", &["jazz guitar", "drum"]),
            ("guitar", &["guitar"]),
            ("café naïve Über", &["Cafe naive uber", "Café, café!", "über alles", "日本語 text"]),
            (
                "running runner runs",
                &["I run daily", "Runners running", "ran", "run run run run run run"],
            ),
            ("", &["something", "else"]),
            ("U.S.A. e.g. 3.14 don't", &["usa eg 3.14", "U.S.A. don't", "don't stop", "3.14 3.14"]),
        ];
        for (k1, b) in [(1.2, 0.75), (0.5, 0.3), (2.0, 1.0), (1.5, 0.0)] {
            for (q, posts) in cases {
                assert_same_as_crate(k1, b, q, posts);
            }
        }
    }

    /// Bit-identical scores, hence identical rankings, on every example of the bundled sample,
    /// P-Soups when present and a small synthetic benchmark, each question against its own
    /// profile; and every text of those sets as a question against the first profile.
    #[test]
    fn scores_equal_the_crates_on_real_profiles() {
        let repo = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut sets =
            vec![prbench_data::load(repo.join("data/sample").to_str().unwrap(), &[]).unwrap()];
        let psoups = repo.join("../shared/data/alignx-psoups");
        if psoups.is_dir() {
            sets.push(prbench_data::load(&format!("psoups:{}", psoups.display()), &[]).unwrap());
        } else {
            prbench_testkit::unavailable(format!("the P-Soups part: {} absent", psoups.display()));
        }
        let dir = tempfile::tempdir().unwrap();
        prbench_data::synthetic::write_synthetic(
            dir.path(),
            &prbench_data::synthetic::SyntheticSpec::scaled(5, 0.01),
        )
        .unwrap();
        sets.push(prbench_data::load(dir.path().to_str().unwrap(), &[]).unwrap());
        let mut compared = 0;
        for data in &sets {
            for ex in &data.examples {
                let posts: Vec<&str> = ex.profile.iter().map(|p| p.text.as_str()).collect();
                assert_same_as_crate(1.2, 0.75, &ex.question, &posts);
                compared += 1;
            }
        }
        assert!(compared > 20, "{compared} profiles");
        let first = &sets[0].examples[0];
        let posts: Vec<&str> = first.profile.iter().map(|p| p.text.as_str()).collect();
        for q in super::super::bm25_tokens::test_texts().iter().step_by(7) {
            assert_same_as_crate(1.2, 0.75, q, &posts);
        }
    }

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
        let posts: Vec<(&str, &str)> =
            ids.iter().map(String::as_str).zip(texts.iter().copied()).collect();
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
