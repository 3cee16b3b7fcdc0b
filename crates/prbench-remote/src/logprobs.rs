//! Logprob verdicts from a chat reply: where the verdict letter that
//! [`prbench_models::verdict_parse::parse_verdict`] read sits among the reply's tokens, and the
//! log-probabilities of A and B at that token (PROTOCOL.md §4, "Logprob verdict", applied to a
//! generated reply instead of a primed prefix).
//!
//! The token list is the OpenAI chat shape `choices[0].logprobs.content`: one
//! `{token, logprob, top_logprobs: [{token, logprob}]}` per generated token, natural logs.

use prbench_models::judge::two_way_p_a;
use prbench_models::verdict_parse::parse_verdict;
use prbench_models::Choice;
use serde::{Deserialize, Deserializer, Serialize};

/// One generated token with its log-probability (nats) and the most likely alternatives at
/// its position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenLogprob {
    /// Token text as the server decodes it (may start with a space: ` B`).
    pub token: String,
    /// Natural-log probability of this token.
    pub logprob: f64,
    /// The `top_logprobs` alternatives at this position, this token usually among them.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub top_logprobs: Vec<TopLogprob>,
}

/// One alternative at a token position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopLogprob {
    /// Token text.
    pub token: String,
    /// Natural-log probability.
    pub logprob: f64,
}

fn null_as_empty<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// The A/B log-probabilities at the verdict token.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LetterLogprobs {
    /// Index of the verdict token in the token list.
    pub token_index: usize,
    /// log p(A) (nats): log-sum-exp over the alternatives that are `A` once whitespace is
    /// trimmed (`A`, ` A`, `A\n`, …).
    pub logp_a: f32,
    /// log p(B) (nats), the same way.
    pub logp_b: f32,
    /// `logp_a − logp_b` (nats).
    pub margin: f32,
    /// `sigmoid(margin)`: p(A) renormalized over the two letters.
    pub p_a: f32,
}

/// Why no [`LetterLogprobs`] could be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Miss {
    /// The reply holds no A/B verdict (unparsed or tie), so there is no letter to look at.
    NoVerdictLetter,
    /// The token texts do not spell the reply, so the letter's token cannot be located.
    TokensDoNotSpellReply,
    /// The letter's position has no A alternative among the top log-probabilities.
    MissingA,
    /// The letter's position has no B alternative among the top log-probabilities.
    MissingB,
}

/// Byte offset in `reply` of the verdict letter `parse_verdict` used, if its verdict is A or B.
///
/// Found by elimination rather than by re-implementing the parser: the used letter is the one
/// standalone `A`/`a` (or `B`/`b`) whose swap for the other letter flips the parsed verdict.
/// Swapping a letter the parser skipped (inside `<think>`, under an earlier `result:` label,
/// after the deciding word, an article `a`) leaves the verdict as it was.
pub fn verdict_letter_offset(reply: &str) -> Option<usize> {
    verdict_letter_offset_with(reply, &parse_verdict)
}

/// [`verdict_letter_offset`] for any verdict reader `read` (a judge recipe's), by the same
/// elimination.
pub fn verdict_letter_offset_with(reply: &str, read: &dyn Fn(&str) -> Choice) -> Option<usize> {
    let (choice, other) = match read(reply) {
        Choice::A => (Choice::A, Choice::B),
        Choice::B => (Choice::B, Choice::A),
        _ => return None,
    };
    let chars: Vec<(usize, char)> = reply.char_indices().collect();
    let standalone = |k: usize| {
        let before = k.checked_sub(1).map(|j| chars[j].1);
        let after = chars.get(k + 1).map(|&(_, c)| c);
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    };
    // The deciding label is the last one, so the used letter is usually near the end.
    (0..chars.len()).rev().find_map(|k| {
        let (off, c) = chars[k];
        let swapped = match (choice, c) {
            (Choice::A, 'A') => 'B',
            (Choice::A, 'a') => 'b',
            (Choice::B, 'B') => 'A',
            (Choice::B, 'b') => 'a',
            _ => return None,
        };
        if !standalone(k) {
            return None;
        }
        let mut flipped = String::with_capacity(reply.len());
        flipped.push_str(&reply[..off]);
        flipped.push(swapped);
        flipped.push_str(&reply[off + c.len_utf8()..]);
        (read(&flipped) == other).then_some(off)
    })
}

/// Index of the token covering byte `offset` of `reply`. The tokens' texts must spell the
/// reply, possibly with extra text before it (servers that strip leading whitespace from
/// `content` but not from the tokens).
pub fn token_at(tokens: &[TokenLogprob], reply: &str, offset: usize) -> Option<usize> {
    let spelled: String = tokens.iter().map(|t| t.token.as_str()).collect();
    let shift =
        if spelled == reply { 0 } else { spelled.find(reply).filter(|_| !reply.is_empty())? };
    let target = offset + shift;
    let mut start = 0;
    for (i, t) in tokens.iter().enumerate() {
        let end = start + t.token.len();
        if (start..end).contains(&target) {
            return Some(i);
        }
        start = end;
    }
    None
}

/// log-sum-exp of `xs` (natural logs); `None` when empty.
fn log_sum_exp(xs: &[f64]) -> Option<f64> {
    let m = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if xs.is_empty() || !m.is_finite() {
        return (!xs.is_empty()).then_some(m);
    }
    Some(m + xs.iter().map(|x| (x - m).exp()).sum::<f64>().ln())
}

/// The A/B log-probabilities at the verdict letter of `reply`.
///
/// The letter is the one [`verdict_letter_offset`] finds; its token is located by walking the
/// token texts ([`token_at`]). At that position, every distinct alternative (the
/// `top_logprobs`, plus the generated token itself in case the server left it out) whose text,
/// with whitespace trimmed, is the letter `A` counts toward log p(A) by log-sum-exp, and
/// likewise for `B`. The letters are matched in the case the reply used (`Result: b` reads
/// `a`/`b`).
///
/// # Errors
/// A [`Miss`] saying which step failed; the caller counts it and leaves `p_a` empty.
pub fn letter_logprobs(reply: &str, tokens: &[TokenLogprob]) -> Result<LetterLogprobs, Miss> {
    letter_logprobs_with(reply, tokens, &parse_verdict)
}

/// [`letter_logprobs`] with the verdict letter found for the reader `read` (a judge recipe's).
///
/// # Errors
/// As [`letter_logprobs`].
pub fn letter_logprobs_with(
    reply: &str,
    tokens: &[TokenLogprob],
    read: &dyn Fn(&str) -> Choice,
) -> Result<LetterLogprobs, Miss> {
    let offset = verdict_letter_offset_with(reply, read).ok_or(Miss::NoVerdictLetter)?;
    let token_index = token_at(tokens, reply, offset).ok_or(Miss::TokensDoNotSpellReply)?;
    let upper = reply[offset..].starts_with(|c: char| c.is_ascii_uppercase());
    let (a, b) = if upper { ("A", "B") } else { ("a", "b") };
    let at = &tokens[token_index];
    let mut seen: Vec<(&str, f64)> = Vec::new();
    for (text, lp) in at
        .top_logprobs
        .iter()
        .map(|t| (t.token.as_str(), t.logprob))
        .chain([(at.token.as_str(), at.logprob)])
    {
        if !seen.iter().any(|(s, _)| *s == text) {
            seen.push((text, lp));
        }
    }
    let pick = |letter: &str| -> Vec<f64> {
        seen.iter().filter(|(s, _)| s.trim() == letter).map(|&(_, lp)| lp).collect()
    };
    let logp_a = log_sum_exp(&pick(a)).ok_or(Miss::MissingA)? as f32;
    let logp_b = log_sum_exp(&pick(b)).ok_or(Miss::MissingB)? as f32;
    Ok(LetterLogprobs {
        token_index,
        logp_a,
        logp_b,
        margin: logp_a - logp_b,
        p_a: two_way_p_a(logp_a, logp_b),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tok(token: &str, logprob: f64, top: &[(&str, f64)]) -> TokenLogprob {
        TokenLogprob {
            token: token.into(),
            logprob,
            top_logprobs: top
                .iter()
                .map(|&(t, l)| TopLogprob { token: t.into(), logprob: l })
                .collect(),
        }
    }

    /// Tokens for `pieces`, each without alternatives except the one at `at`.
    fn spell(pieces: &[&str], at: usize, top: &[(&str, f64)]) -> Vec<TokenLogprob> {
        pieces
            .iter()
            .enumerate()
            .map(|(i, p)| tok(p, -0.1, if i == at { top } else { &[] }))
            .collect()
    }

    fn close(x: f32, want: f64) {
        assert!((x as f64 - want).abs() < 1e-5, "{x} vs {want}");
    }

    #[test]
    fn llama_cpp_sample_letter_without_space() {
        // The llama.cpp reply from the brief: "A) steak\nResult: B", letter token "B".
        let pieces = ["A", ")", " steak", "\n", "Result", ":", " ", "B"];
        let toks = spell(&pieces, 7, &[("B", -0.2), ("A", -1.9), ("The", -3.0)]);
        let r = letter_logprobs("A) steak\nResult: B", &toks).unwrap();
        assert_eq!(r.token_index, 7);
        close(r.margin, -1.9 + 0.2);
        close(r.p_a, 1.0 / (1.0 + (1.7f64).exp()));
    }

    #[test]
    fn letter_with_leading_space_or_trailing_newline() {
        let toks = spell(&["Result", ":", " B"], 2, &[(" B", -0.5), (" A", -1.5)]);
        let r = letter_logprobs("Result: B", &toks).unwrap();
        assert_eq!(r.token_index, 2);
        close(r.margin, -1.0);
        let toks =
            spell(&["Result", ":", " ", "B\n", "Thanks"], 3, &[("B\n", -0.3), ("A\n", -2.3)]);
        let r = letter_logprobs("Result: B\nThanks", &toks).unwrap();
        assert_eq!(r.token_index, 3);
        close(r.margin, -2.0);
    }

    #[test]
    fn the_verdict_after_the_last_label_is_read() {
        // The first label's letter has different alternatives; only the last one's count.
        let pieces = ["Result", ":", " A", "\n", "Wait", ".", " Result", ":", " B"];
        let mut toks = spell(&pieces, 8, &[(" B", -0.1), (" A", -2.6)]);
        toks[2].top_logprobs = vec![
            TopLogprob { token: " A".into(), logprob: -0.01 },
            TopLogprob { token: " B".into(), logprob: -5.0 },
        ];
        let r = letter_logprobs("Result: A\nWait. Result: B", &toks).unwrap();
        assert_eq!(r.token_index, 8);
        close(r.margin, -2.5);
        // A letter inside a reasoning block, after the label, is skipped by the parser.
        let reply = "Result: A <think>Result: B</think>";
        let toks = spell(
            &["Result", ":", " A", " <think>", "Result", ":", " B", "</think>"],
            2,
            &[(" A", -0.4), (" B", -1.4)],
        );
        let r = letter_logprobs(reply, &toks).unwrap();
        assert_eq!(r.token_index, 2);
        close(r.margin, 1.0);
    }

    #[test]
    fn several_variants_are_summed_by_log_sum_exp() {
        let top = [(" A", -1.0), ("A", -2.0), (" B", -0.5), (" a", -0.7), ("The", -3.0)];
        let toks = spell(&["Result", ":", " B"], 2, &top);
        let r = letter_logprobs("Result: B", &toks).unwrap();
        let la = ((-1.0f64).exp() + (-2.0f64).exp()).ln();
        close(r.logp_a, la);
        close(r.logp_b, -0.5);
        close(r.margin, la + 0.5);
    }

    #[test]
    fn the_generated_token_counts_when_top_logprobs_omit_it() {
        let mut toks = spell(&["Result", ":", " B"], 2, &[(" A", -1.2)]);
        toks[2].logprob = -0.2;
        let r = letter_logprobs("Result: B", &toks).unwrap();
        close(r.margin, -1.0);
    }

    #[test]
    fn misses() {
        let toks = spell(&["Result", ":", " B"], 2, &[(" B", -0.1), ("The", -2.0)]);
        assert_eq!(letter_logprobs("Result: B", &toks), Err(Miss::MissingA));
        let toks = spell(&["Result", ":", " A"], 2, &[(" A", -0.1)]);
        assert_eq!(letter_logprobs("Result: A", &toks), Err(Miss::MissingB));
        let toks = spell(&["I", " cannot", " tell"], 2, &[]);
        assert_eq!(letter_logprobs("I cannot tell", &toks), Err(Miss::NoVerdictLetter));
        assert_eq!(letter_logprobs("Result: tie", &toks), Err(Miss::NoVerdictLetter));
        let toks = spell(&["Something", " else"], 1, &[]);
        assert_eq!(letter_logprobs("Result: B", &toks), Err(Miss::TokensDoNotSpellReply));
    }

    #[test]
    fn lowercase_verdicts_read_lowercase_letters() {
        let toks = spell(&["result", ":", " b"], 2, &[(" b", -0.3), (" a", -1.3), (" A", -0.1)]);
        let r = letter_logprobs("result: b", &toks).unwrap();
        close(r.margin, -1.0);
    }

    #[test]
    fn offsets_survive_stripped_leading_whitespace_and_multibyte_text() {
        // Server stripped the leading "\n" from content but not from the tokens.
        let toks =
            spell(&["\n", "Résumé", " → ", "Result", ":", " B"], 5, &[(" B", -0.1), (" A", -0.6)]);
        let r = letter_logprobs("Résumé → Result: B", &toks).unwrap();
        assert_eq!(r.token_index, 5);
        close(r.margin, -0.5);
    }

    #[test]
    fn letter_offset_skips_articles_and_unused_letters() {
        let reply = "it's a close call. Result: a close call, but B";
        let off = verdict_letter_offset(reply).unwrap();
        assert_eq!(&reply[off..], "B");
        let reply = "Result: B\nResult: A\nA is generic";
        let off = verdict_letter_offset(reply).unwrap();
        assert_eq!(off, reply.find("A\n").unwrap());
        assert_eq!(verdict_letter_offset("Result: A or B"), None);
    }

    #[test]
    fn top_logprobs_null_is_empty() {
        let t: TokenLogprob = serde_json::from_str(
            r#"{"token":"B","logprob":-0.1,"bytes":null,"top_logprobs":null}"#,
        )
        .unwrap();
        assert!(t.top_logprobs.is_empty());
    }
}
