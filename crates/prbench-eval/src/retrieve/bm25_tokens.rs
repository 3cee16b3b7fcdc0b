//! The BM25 tokenizer: the `bm25` crate's `DefaultTokenizer` pipeline for English (see
//! [`super::bm25`]), step for step with the same crates, giving each token as an interned id.
//!
//! Steps, as `bm25` 2.3 `DefaultTokenizer::_tokenize` does them:
//! 1. `deunicode::deunicode_with_tofu_cow(text, "[?]")`;
//! 2. `to_lowercase`;
//! 3. `unicode_words` (UAX #29), empty words dropped;
//! 4. NLTK English stop words (themselves passed through step 1) dropped;
//! 5. Snowball English stem.
//!
//! Steps 4 and 5 depend on the word alone, so a per-thread [`Vocab`] maps each word to its
//! outcome once: a stop word, or the id of its stem (words with the same stem share the id, as
//! the crate's tokens are equal strings). A token then costs one hash lookup of its word, with
//! no string built. When step 1 gives ASCII (it always transliterates to ASCII; anything else
//! takes the literal pipeline), step 2 is done per word on a miss: ASCII case does not move a
//! UAX #29 boundary (letters of either case are `ALetter`, and no other class has case), so the
//! words of the text and of its lowercase are the same, letter case aside.
//!
//! The test `token_ids_equal_the_crates_tokens` compares the stems behind the ids with the
//! crate's tokens on every text of the bundled sample, P-Soups when present, a synthetic set and
//! Unicode edge cases.

use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};
use rustc_hash::FxHashMap;
use unicode_segmentation::UnicodeSegmentation;

/// Words a [`Vocab`] holds before [`Vocab::trim`] clears it (bounds its memory to tens of MB
/// per thread).
const VOCAB_LIMIT: usize = 500_000;

/// The id [`Vocab`] gives a stop word.
const STOP: u32 = u32::MAX;

fn stop_words() -> &'static HashSet<String> {
    static STOP_WORDS: OnceLock<HashSet<String>> = OnceLock::new();
    STOP_WORDS.get_or_init(|| {
        stop_words::get(stop_words::LANGUAGE::English)
            .iter()
            .map(|w| deunicode::deunicode_with_tofu_cow(w, "[?]").into_owned())
            .collect()
    })
}

/// Token ids of one thread: word → stem id (or [`STOP`]), and the stems by id. Ids are dense
/// from 0 and stay valid until [`Vocab::trim`] clears the vocabulary, which callers do only
/// between rankings.
pub(super) struct Vocab {
    stemmer: Stemmer,
    /// A word as segmented (ASCII words in their original case) → its stem's id or [`STOP`].
    words: FxHashMap<Box<str>, u32>,
    /// Stem → id.
    ids: FxHashMap<Box<str>, u32>,
    /// Id → stem.
    stems: Vec<Box<str>>,
    /// Scratch for lowercasing a word.
    lower: String,
}

thread_local! {
    static VOCAB: RefCell<Vocab> = RefCell::new(Vocab::new());
}

/// Runs `f` with this thread's [`Vocab`].
pub(super) fn with_vocab<R>(f: impl FnOnce(&mut Vocab) -> R) -> R {
    VOCAB.with(|cell| f(&mut cell.borrow_mut()))
}

impl Vocab {
    fn new() -> Self {
        Self {
            stemmer: Stemmer::create(Algorithm::English),
            words: FxHashMap::default(),
            ids: FxHashMap::default(),
            stems: Vec::new(),
            lower: String::new(),
        }
    }

    /// Clears the vocabulary when it holds more than [`VOCAB_LIMIT`] words. Ids given before
    /// are then void: call it only where no id is held.
    pub(super) fn trim(&mut self) {
        if self.words.len() > VOCAB_LIMIT {
            self.words.clear();
            self.ids.clear();
            self.stems.clear();
        }
    }

    /// The stem behind `id`.
    pub(super) fn stem(&self, id: u32) -> &str {
        &self.stems[id as usize]
    }

    /// The id of the stem of `lower` (a lowercase word), or [`STOP`] for a stop word.
    fn id_of_lowercase(&mut self, lower: &str) -> u32 {
        if stop_words().contains(lower) {
            return STOP;
        }
        let stem = self.stemmer.stem(lower);
        if let Some(&id) = self.ids.get(stem.as_ref()) {
            return id;
        }
        let id =
            u32::try_from(self.stems.len()).expect("fewer stems than VOCAB_LIMIT + words per text");
        self.stems.push(stem.as_ref().into());
        self.ids.insert(stem.as_ref().into(), id);
        id
    }

    /// The id of an ASCII `word` as segmented (any case), memoized.
    fn id_of_ascii_word(&mut self, word: &str) -> u32 {
        if let Some(&id) = self.words.get(word) {
            return id;
        }
        let mut lower = std::mem::take(&mut self.lower);
        lower.clear();
        lower.push_str(word);
        lower.make_ascii_lowercase();
        let id = self.id_of_lowercase(&lower);
        self.lower = lower;
        self.words.insert(word.into(), id);
        id
    }

    /// Calls `f` with the id of each token of `text`, in text order (repeats included).
    pub(super) fn for_each_token(&mut self, text: &str, mut f: impl FnMut(u32)) {
        if text.is_empty() {
            return;
        }
        let folded = deunicode::deunicode_with_tofu_cow(text, "[?]");
        if folded.is_ascii() {
            for word in folded.unicode_words() {
                let id = self.id_of_ascii_word(word);
                if id != STOP {
                    f(id);
                }
            }
        } else {
            // The literal pipeline (not reached with deunicode's ASCII output; kept exact).
            let lower = folded.to_lowercase();
            for word in lower.unicode_words().filter(|w| !w.is_empty()) {
                let id = self.id_of_lowercase(word);
                if id != STOP {
                    f(id);
                }
            }
        }
    }

    /// The token ids of `text`, in text order.
    pub(super) fn token_ids(&mut self, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        self.for_each_token(text, |id| out.push(id));
        out
    }
}

/// The tokens BM25 sees for `text`, in text order, as strings.
pub(super) fn tokenize(text: &str) -> Vec<String> {
    with_vocab(|v| {
        v.trim();
        let ids = v.token_ids(text);
        ids.into_iter().map(|id| v.stem(id).to_string()).collect()
    })
}

/// Texts for the BM25 tests: edge cases, every text of the bundled sample, of P-Soups when
/// present, and of a small synthetic benchmark.
#[cfg(test)]
pub(super) fn test_texts() -> Vec<String> {
    let repo = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let texts_of = |data: &prbench_data::Dataset| -> Vec<String> {
        data.examples
            .iter()
            .flat_map(|e| {
                [e.question.clone(), e.chosen.clone(), e.rejected.clone(), e.narrative.clone()]
                    .into_iter()
                    .chain(e.profile.iter().map(|p| p.text.clone()))
                    .chain(e.rubric_aspects.iter().map(|a| a.aspect.clone()))
            })
            .collect()
    };
    let mut texts: Vec<String> = [
        "",
        " ",
        "The Drums, and jazz!",
        "Ça va? Über-cool naïve café — résumé; ÆSIR straße",
        "don't won't it's e.g. U.S.A. 3.14 1,000 C++ #hashtag @user",
        "日本語のテキスト 中文 한국어",
        "emoji 🎸🎹 and ☃ snow",
        "RUNNING runners ran; connection connected",
        "ǅemal ﬁne ﬂow Ⅻ ½",
        "tab\tnew\nline\r\nend",
        "Mr. O'Neil's dogs' bones",
        "the and for are but not you",
        "THE And FOR",
        "__init__ a_b _x_ ___ 1_000",
        "a.b.c a..b a:b 1:2 1.a a.1 3.14.15 x'y' 'quoted' \"dq\" http://example.com/a-b?c=d",
    ]
    .map(String::from)
    .to_vec();
    let sample = prbench_data::load(repo.join("data/sample").to_str().unwrap(), &[]).unwrap();
    texts.extend(texts_of(&sample));
    let psoups = repo.join("../shared/data/alignx-psoups");
    if psoups.is_dir() {
        let d = prbench_data::load(&format!("psoups:{}", psoups.display()), &[]).unwrap();
        texts.extend(texts_of(&d));
    } else {
        prbench_testkit::unavailable(format!("the P-Soups part: {} absent", psoups.display()));
    }
    let dir = tempfile::tempdir().unwrap();
    prbench_data::synthetic::write_synthetic(
        dir.path(),
        &prbench_data::synthetic::SyntheticSpec::scaled(3, 0.002),
    )
    .unwrap();
    texts.extend(texts_of(&prbench_data::load(dir.path().to_str().unwrap(), &[]).unwrap()));
    texts
}

#[cfg(test)]
mod tests {
    use ::bm25::Tokenizer;

    use super::*;
    use crate::retrieve::bm25::crate_tokenizer;

    #[test]
    fn token_ids_equal_the_crates_tokens() {
        let texts = test_texts();
        let reference = crate_tokenizer();
        // Twice: the second pass is served from the vocabulary.
        for pass in 0..2 {
            for t in &texts {
                assert_eq!(tokenize(t), reference.tokenize(t), "pass {pass}: {t:?}");
            }
        }
        assert!(texts.len() > 100, "{} texts", texts.len());
    }

    #[test]
    fn equal_stems_share_an_id_and_case_does_not_matter() {
        with_vocab(|v| {
            let ids = v.token_ids("Drums drum DRUMMING the Jazz jazz");
            assert_eq!(ids.len(), 5, "`the` is a stop word");
            assert_eq!(ids[0], ids[1], "drums and drum stem to drum");
            assert_eq!(v.stem(ids[0]), "drum");
            assert_eq!(v.stem(ids[2]), "drum", "drumming stems to drum too");
            assert_eq!(ids[3], ids[4]);
            assert_eq!(v.stem(ids[3]), "jazz");
        });
    }
}
