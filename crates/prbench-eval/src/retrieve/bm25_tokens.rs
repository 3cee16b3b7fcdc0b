//! The BM25 tokenizer: the `bm25` crate's `DefaultTokenizer` pipeline for English (see
//! [`super::bm25`]), step for step with the same crates, plus a per-thread memo of Snowball
//! stems. Stemming was most of BM25's cost at full benchmark scale (perf: ~15% of a whole
//! `eval --condition profile:10` run) and a profile repeats its words many times.
//!
//! Steps, as `bm25` 2.3 `DefaultTokenizer::_tokenize` does them:
//! 1. `deunicode::deunicode_with_tofu_cow(text, "[?]")`;
//! 2. `to_lowercase`;
//! 3. `unicode_words` (UAX #29), empty words dropped;
//! 4. NLTK English stop words (themselves passed through step 1) dropped;
//! 5. Snowball English stem.
//!
//! The test `cached_tokenizer_equals_the_crates` compares the two on every text of the bundled
//! sample, P-Soups when present, and Unicode edge cases.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use ::bm25::Tokenizer;
use rust_stemmers::{Algorithm, Stemmer};
use unicode_segmentation::UnicodeSegmentation;

/// Memo entries per thread before the memo is cleared (bounds its memory to tens of MB).
const MEMO_LIMIT: usize = 500_000;

fn stop_words() -> &'static HashSet<String> {
    static STOP: OnceLock<HashSet<String>> = OnceLock::new();
    STOP.get_or_init(|| {
        stop_words::get(stop_words::LANGUAGE::English)
            .iter()
            .map(|w| deunicode::deunicode_with_tofu_cow(w, "[?]").into_owned())
            .collect()
    })
}

thread_local! {
    static STEMS: RefCell<(Stemmer, HashMap<String, String>)> = RefCell::new((Stemmer::create(Algorithm::English), HashMap::new()));
}

/// The English BM25 tokenizer with memoized stems (stateless and `Sync`; the memo is
/// per thread).
#[derive(Debug, Clone, Copy, Default)]
pub struct CachedTokenizer;

impl Tokenizer for CachedTokenizer {
    fn tokenize(&self, input_text: &str) -> Vec<String> {
        if input_text.is_empty() {
            return Vec::new();
        }
        let text = deunicode::deunicode_with_tofu_cow(input_text, "[?]").to_lowercase();
        let stop = stop_words();
        STEMS.with(|cell| {
            let (stemmer, memo) = &mut *cell.borrow_mut();
            if memo.len() > MEMO_LIMIT {
                memo.clear();
            }
            text.unicode_words()
                .filter(|w| !w.is_empty() && !stop.contains(*w))
                .map(|w| match memo.get(w) {
                    Some(s) => s.clone(),
                    None => {
                        let s = stemmer.stem(w).into_owned();
                        memo.insert(w.to_string(), s.clone());
                        s
                    }
                })
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::retrieve::bm25::crate_tokenizer;

    fn repo() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    fn texts_of(data: &prbench_data::Dataset) -> Vec<String> {
        data.examples
            .iter()
            .flat_map(|e| {
                [e.question.clone(), e.chosen.clone(), e.rejected.clone(), e.narrative.clone()]
                    .into_iter()
                    .chain(e.profile.iter().map(|p| p.text.clone()))
                    .chain(e.rubric_aspects.iter().map(|a| a.aspect.clone()))
            })
            .collect()
    }

    #[test]
    fn cached_tokenizer_equals_the_crates() {
        let mut texts: Vec<String> = [
            "", " ", "The Drums, and jazz!", "Ça va? Über-cool naïve café — résumé; ÆSIR straße", "don't won't it's e.g. U.S.A. 3.14 1,000 C++ #hashtag @user",
            "日本語のテキスト 中文 한국어", "emoji 🎸🎹 and ☃ snow", "RUNNING runners ran; connection connected", "ǅemal ﬁne ﬂow Ⅻ ½",
            "tab\tnew\nline\r\nend", "Mr. O'Neil's dogs' bones", "the and for are but not you",
        ]
        .map(String::from)
        .to_vec();
        let sample = prbench_data::load(repo().join("data/sample").to_str().unwrap(), &[]).unwrap();
        texts.extend(texts_of(&sample));
        let psoups = repo().join("../shared/data/alignx-psoups");
        if psoups.is_dir() {
            let d = prbench_data::load(&format!("psoups:{}", psoups.display()), &[]).unwrap();
            texts.extend(texts_of(&d));
        } else {
            eprintln!("P-Soups part skipped: {} absent", psoups.display());
        }
        let dir = tempfile::tempdir().unwrap();
        prbench_data::synthetic::write_synthetic(dir.path(), &prbench_data::synthetic::SyntheticSpec::scaled(3, 0.002)).unwrap();
        texts.extend(texts_of(&prbench_data::load(dir.path().to_str().unwrap(), &[]).unwrap()));
        let reference = crate_tokenizer();
        // Twice: the second pass is served from the memo.
        for pass in 0..2 {
            for t in &texts {
                assert_eq!(CachedTokenizer.tokenize(t), reference.tokenize(t), "pass {pass}: {t:?}");
            }
        }
        assert!(texts.len() > 100, "{} texts", texts.len());
    }
}
