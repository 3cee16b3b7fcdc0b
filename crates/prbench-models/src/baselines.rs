//! Control baselines (PROTOCOL.md §5): `longer`, `shorter`, `random`, `profile-overlap`
//! as pointwise reward models, and `slot-a` as a judge. They show what accuracy a trivial rule
//! gets on the same items, so a model's figure can be read against them.

use std::collections::HashSet;

use rustc_hash::FxHashSet;

use sha2::{Digest, Sha256};

use crate::error::ModelError;
use crate::io::{JudgeRequest, RmRequest, Score, TokenStats};
use crate::traits::{Judge, ModelIdentity, RewardModel};
use crate::verdict::{Choice, Verdict};

/// A pointwise control baseline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Baseline {
    /// Score = answer length in characters (Unicode scalar values): prefers the longer answer.
    Longer,
    /// Score = minus the answer length in characters: prefers the shorter answer.
    Shorter,
    /// Score = a uniform draw in [0, 1) from sha256(seed, example id, answer): seeded, and
    /// independent of batch size, order and threads.
    Random {
        /// Run seed.
        seed: u64,
    },
    /// Score = share of the answer's distinct content words (lowercased alphanumeric runs of
    /// 3+ characters, minus a short stopword list) that occur in the request's context.
    /// The runner gives it the user's whole profile as context, whatever the condition.
    ProfileOverlap,
}

impl Baseline {
    /// Parses a `baseline:NAME` name (`longer`, `shorter`, `random`, `profile-overlap`).
    ///
    /// # Errors
    /// [`ModelError::Spec`] for an unknown name (`slot-a` is a judge: see [`SlotA`]).
    pub fn from_name(name: &str, seed: u64) -> Result<Self, ModelError> {
        match name {
            "longer" => Ok(Self::Longer),
            "shorter" => Ok(Self::Shorter),
            "random" => Ok(Self::Random { seed }),
            "profile-overlap" => Ok(Self::ProfileOverlap),
            other => Err(ModelError::Spec {
                spec: format!("baseline:{other}"),
                reason: "known pointwise baselines: longer, shorter, random, profile-overlap (slot-a is a judge)".into(),
            }),
        }
    }

    /// The baseline's name as in `baseline:NAME`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Longer => "longer",
            Self::Shorter => "shorter",
            Self::Random { .. } => "random",
            Self::ProfileOverlap => "profile-overlap",
        }
    }

    fn score_one(&self, item: &RmRequest) -> f32 {
        let answer = &item.input.answer;
        match self {
            Self::Longer => answer.chars().count() as f32,
            Self::Shorter => -(answer.chars().count() as f32),
            Self::Random { seed } => uniform_draw(*seed, &item.input.example_id, answer),
            Self::ProfileOverlap => {
                profile_overlaps(&[answer], item.input.context.as_deref().unwrap_or(""))[0]
            }
        }
    }
}

/// A uniform number in [0, 1) from sha256 of (seed, key, text): the first 8 bytes of the digest
/// as a big-endian u64, top 24 bits used so the value is exact in f32.
pub fn uniform_draw(seed: u64, key: &str, text: &str) -> f32 {
    let mut h = Sha256::new();
    h.update(seed.to_le_bytes());
    h.update((key.len() as u64).to_le_bytes());
    h.update(key.as_bytes());
    h.update(text.as_bytes());
    let d = h.finalize();
    let x = u64::from_be_bytes(d[..8].try_into().expect("8 bytes"));
    (x >> 40) as f32 / (1u64 << 24) as f32
}

const STOPWORDS: &[&str] = &[
    "the", "and", "for", "are", "but", "not", "you", "your", "with", "that", "this", "have", "has",
    "was", "were", "will", "would", "can", "could", "should", "from", "they", "them", "their",
    "there", "what", "which", "who", "when", "where", "how", "all", "any", "some", "one", "its",
    "into", "about", "than", "then", "also", "just", "more", "most", "very", "our", "out", "too",
    "if", "use", "using", "been", "being", "each", "these", "those", "such", "may", "might",
];

/// Distinct lowercased alphanumeric words of 3+ characters, minus stopwords.
pub fn content_words(text: &str) -> HashSet<String> {
    content_word_iter(text).collect()
}

/// The words [`content_words`] collects, in text order, with repeats.
fn content_word_iter(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(|w| w.to_lowercase())
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
}

/// `|content_words(a) ∩ content_words(context)| / |content_words(a)|` for each answer `a`
/// (0 when `a` has no content word). The context (a whole profile, tens of KB) is scanned once
/// for all the answers' words, without building its own word set, stopping when every word
/// is found; the answers of one example share their context, so they share the scan.
fn profile_overlaps(answers: &[&str], context: &str) -> Vec<f32> {
    let sets: Vec<FxHashSet<String>> =
        answers.iter().map(|a| content_word_iter(a).collect()).collect();
    let wanted: FxHashSet<&str> = sets.iter().flatten().map(String::as_str).collect();
    let mut found: FxHashSet<&str> = FxHashSet::default();
    let mut buf = String::new();
    if !wanted.is_empty() {
        for w in context.split(|c: char| !c.is_alphanumeric()).filter(|w| w.chars().count() >= 3) {
            buf.clear();
            if w.is_ascii() {
                buf.push_str(w);
                buf.make_ascii_lowercase();
            } else {
                buf.push_str(&w.to_lowercase());
            }
            if let Some(&hit) = wanted.get(buf.as_str()) {
                found.insert(hit);
                if found.len() == wanted.len() {
                    break;
                }
            }
        }
    }
    sets.iter()
        .map(|set| {
            if set.is_empty() {
                0.0
            } else {
                set.iter().filter(|w| found.contains(w.as_str())).count() as f32 / set.len() as f32
            }
        })
        .collect()
}

impl RewardModel for Baseline {
    /// `profile-overlap` scores runs of consecutive items with the same context (an example's
    /// two answers) with one scan of it; the scores are those of one item at a time.
    fn score(&self, items: &[RmRequest]) -> Result<Vec<Score>, ModelError> {
        let score = |value| Score { value, tokens: TokenStats::default() };
        if *self != Self::ProfileOverlap {
            return Ok(items.iter().map(|i| score(self.score_one(i))).collect());
        }
        fn context(i: &RmRequest) -> &str {
            i.input.context.as_deref().unwrap_or("")
        }
        let mut out = Vec::with_capacity(items.len());
        let mut start = 0;
        while start < items.len() {
            let mut end = start + 1;
            while end < items.len() && context(&items[end]) == context(&items[start]) {
                end += 1;
            }
            let answers: Vec<&str> =
                items[start..end].iter().map(|i| i.input.answer.as_str()).collect();
            out.extend(profile_overlaps(&answers, context(&items[start])).into_iter().map(score));
            start = end;
        }
        Ok(out)
    }

    fn cacheable(&self) -> bool {
        false
    }

    fn identity(&self) -> ModelIdentity {
        ModelIdentity {
            spec: format!("baseline:{}", self.name()),
            engine: "baseline".into(),
            dtype: "n/a".into(),
            ..Default::default()
        }
    }
}

/// The slot-A judge: always answers A. Its accuracy is the share of items with chosen in A.
#[derive(Debug, Clone, Copy, Default)]
pub struct SlotA;

impl Judge for SlotA {
    fn judge(&self, items: &[JudgeRequest]) -> Result<Vec<Verdict>, ModelError> {
        Ok(items
            .iter()
            .map(|_| Verdict {
                choice: Choice::A,
                p_a: None,
                margin: None,
                raw: "A".into(),
                tokens: TokenStats::default(),
            })
            .collect())
    }

    fn cacheable(&self) -> bool {
        false
    }

    fn identity(&self) -> ModelIdentity {
        ModelIdentity {
            spec: "baseline:slot-a".into(),
            engine: "baseline".into(),
            dtype: "n/a".into(),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{ChatPrompt, RmInput};

    fn req(id: &str, answer: &str, context: Option<&str>) -> RmRequest {
        RmRequest {
            input: RmInput {
                example_id: id.into(),
                question: "q".into(),
                context: context.map(Into::into),
                answer: answer.into(),
            },
            prompt: ChatPrompt::default(),
        }
    }

    #[test]
    fn longer_and_shorter_count_characters() {
        let items = [req("x", "héllo", None), req("x", "hi", None)];
        let l = Baseline::Longer.score(&items).unwrap();
        assert_eq!((l[0].value, l[1].value), (5.0, 2.0));
        let s = Baseline::Shorter.score(&items).unwrap();
        assert_eq!((s[0].value, s[1].value), (-5.0, -2.0));
    }

    #[test]
    fn profile_overlap_is_share_of_answer_content_words_in_profile() {
        // answer content words: {budget, tripod, carbon, fiber} (the, a, is dropped) -> 4;
        // in profile: {budget, tripod} -> 2/4 = 0.5
        let item = req(
            "x",
            "The budget tripod is carbon fiber",
            Some("My budget is tight; I need a tripod."),
        );
        let v = Baseline::ProfileOverlap.score(&[item]).unwrap()[0].value;
        assert_eq!(v, 0.5);
    }

    /// The scan equals the definition (intersection of the two word sets), on ASCII and
    /// non-ASCII words, repeats, stop words, and an answer whose words all occur early.
    #[test]
    fn profile_overlap_scan_equals_set_intersection() {
        let cases = [
            ("Über das ÉCOLE film, the Film and jazz!", "über école — films, FILM jazz the"),
            ("Jazz jazz JAZZ piano", "I play piano. Jazz is fine; jazz again."),
            ("Nothing here matches", "completely different words entirely"),
            ("the and for", "the and for"),
            ("Ǆemal straße", "ǆemal STRASSE straße"),
        ];
        for (answer, context) in cases {
            let words = content_words(answer);
            let want = if words.is_empty() {
                0.0
            } else {
                words.intersection(&content_words(context)).count() as f32 / words.len() as f32
            };
            assert_eq!(profile_overlaps(&[answer], context), [want], "{answer:?} vs {context:?}");
        }
        // Several answers scanned together score as each alone.
        let (answers, context): (Vec<&str>, &str) =
            (cases.iter().map(|c| c.0).collect(), "über école films jazz piano straße");
        let alone: Vec<f32> = answers.iter().map(|a| profile_overlaps(&[a], context)[0]).collect();
        assert_eq!(profile_overlaps(&answers, context), alone);
        // And through `score`: consecutive items with one context are grouped.
        let items: Vec<RmRequest> = answers
            .iter()
            .map(|a| req("e1", a, Some(context)))
            .chain([req("e2", "jazz", Some("rock"))])
            .collect();
        let got: Vec<f32> =
            Baseline::ProfileOverlap.score(&items).unwrap().iter().map(|s| s.value).collect();
        let want: Vec<f32> = alone.iter().copied().chain([0.0]).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn random_depends_only_on_seed_id_and_text() {
        let a = Baseline::Random { seed: 42 };
        let one = a.score(&[req("e1", "ans", None)]).unwrap()[0].value;
        let batch = a.score(&[req("e0", "zzz", None), req("e1", "ans", None)]).unwrap()[1].value;
        assert_eq!(one, batch);
        assert!((0.0..1.0).contains(&one));
        let other_seed =
            Baseline::Random { seed: 7 }.score(&[req("e1", "ans", None)]).unwrap()[0].value;
        assert_ne!(one, other_seed);
    }
}
