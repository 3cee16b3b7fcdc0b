//! The verdict parser for generative (pairwise) judges (PROTOCOL.md §4).
//!
//! A judge is told to end its reply with a line `Result: A` or `Result: B`.
//! [`parse_verdict`] reads that line back. It replaces the authors' parser, which took the
//! first character after the *first* `result:` and counted every unreadable reply as "A"
//! (PROTOCOL.md §10, defects 2 and 3): here the *last* label wins and an unreadable reply is
//! [`Choice::Unparsed`], never a choice.

use crate::verdict::Choice;

/// Reads a judge's verdict from its raw reply.
///
/// The rule (PROTOCOL.md §4; it fixes defects 2 and 3 of PROTOCOL.md §10), step by step:
///
/// 1. **Reasoning blocks are dropped.** Everything from `<think>` to the next `</think>`
///    (tags matched case-insensitively) is removed, so a verdict inside a reasoning block is
///    ignored. A `<think>` with no closing tag makes the whole reply [`Choice::Unparsed`]
///    (the model never finished reasoning). A `</think>` with no opening tag (chat templates
///    that put `<think>` in the prompt) drops everything before it.
/// 2. **Markdown emphasis and quotes are dropped.** `*`, `_`, `` ` ``, `#`, the quotes
///    `"` `'` `“` `”` `‘` `’`, and `>` blockquote markers at the start of a line are each
///    replaced by a space (a space, not nothing, so `B's` stays the letter `B` and no two
///    words merge).
/// 3. **The last `result:` label is taken.** A label is the word `result` (any case, not
///    preceded by a letter or digit, so `Final Result:` counts and `subresult:` does not),
///    then optional spaces or tabs, then `:` (or the full-width `：`). `Results:` is not a
///    label. No label at all → [`Choice::Unparsed`].
/// 4. **The verdict is read from the label's segment**: the rest of the label's line, or, if
///    that holds no letter or digit, the next non-blank line (`Result:\nB`). Nothing further
///    is read, so prose after the verdict line cannot leak in.
/// 5. **In that segment, the first verdict word decides.** Words are maximal runs of letters
///    and digits; a *standalone letter* is a one-character word `A`, `a`, `B` or `b` (so
///    `Answer B`, `[[B]]`, `(B)` and `B.` give B, while `AB`, `Bob` and `Both` hold none).
///    Scanning left to right:
///    - the word `tie` (any case) → [`Choice::Tie`];
///    - a standalone `B`/`b` → [`Choice::B`];
///    - a standalone `A`/`a` → [`Choice::A`], except where it is the English article and
///      skipped: a lowercase `a` followed by a space and another word (`it's a close call,
///      but B` → B), or an `A`/`a` followed by the word `tie` (`A tie` → Tie);
///    - a letter echoing the instruction, i.e. followed by the other letter with only joining
///      text between (`A or B`, `A/B`, `A, B`, `A and B`, `A vs B`, `A (or B)`, `A B`; see
///      `echoes_instruction`), → [`Choice::Unparsed`] (the first-letter rule would read it
///      as a choice of A).
///
///    A segment with no verdict word (`Neither`, `Both`, empty) → [`Choice::Unparsed`].
/// 6. **The format line echoed is no verdict.** When the label before the last one holds only
///    the other letter and is joined to the last label by `or`, `/`, `|`, `,` or `and`
///    (`…reads exactly Result: A or Result: B.`, a reply that repeats its instruction), the
///    reply is [`Choice::Unparsed`]; reading the last label alone would count it as B.
pub fn parse_verdict(reply: &str) -> Choice {
    let Some(text) = strip_think_blocks(reply) else {
        return Choice::Unparsed;
    };
    let text = strip_markup(&text);
    let labels = label_spans(&text);
    let Some(&(last_start, last_end)) = labels.last() else {
        return Choice::Unparsed;
    };
    let choice = read_segment(verdict_segment(&text[last_end..]));
    if let Some(&(_, prev_end)) = labels.len().checked_sub(2).map(|i| &labels[i]) {
        if echoes_format_line(&text[prev_end..last_start], choice) {
            return Choice::Unparsed;
        }
    }
    choice
}

/// Whether the text between the last two labels makes them the format line echoed
/// (`Result: A or Result: B`, as in "end with a line that reads exactly `Result: A` or
/// `Result: B`"): the earlier label holds only the other letter, joined to the last label by
/// `or`, `/`, `|`, `,` or `and`. A change of mind (`Result: A … Result: B` with prose
/// between) is not an echo.
fn echoes_format_line(between: &str, last: Choice) -> bool {
    let other = match last {
        Choice::A => "b",
        Choice::B => "a",
        _ => return false,
    };
    let between = between.trim();
    let Some(letter_end) =
        between.char_indices().find(|(_, c)| !c.is_alphanumeric()).map(|(i, _)| i)
    else {
        return false;
    };
    let (letter, gap) = between.split_at(letter_end);
    letter.eq_ignore_ascii_case(other)
        && matches!(
            gap.trim().to_ascii_lowercase().as_str(),
            "or" | "/" | "|" | "," | ", or" | "and"
        )
}

/// Removes `<think>…</think>` blocks; `None` when a block is never closed.
pub(crate) fn strip_think_blocks(reply: &str) -> Option<String> {
    const OPEN: &str = "<think>";
    const CLOSE: &str = "</think>";
    let mut rest = reply;
    let mut out = String::with_capacity(reply.len());
    loop {
        // ASCII lowercasing keeps byte offsets, so positions found in `lower` index `rest`.
        let lower = rest.to_ascii_lowercase();
        let open = lower.find(OPEN);
        let stray_close = lower.find(CLOSE).filter(|&c| open.is_none_or(|o| c < o));
        if let Some(c) = stray_close {
            // A closing tag before any opening tag: everything before it was reasoning.
            out.clear();
            out.push(' ');
            rest = &rest[c + CLOSE.len()..];
        } else if let Some(o) = open {
            let body = o + OPEN.len();
            let c = lower[body..].find(CLOSE)? + body;
            out.push_str(&rest[..o]);
            out.push(' ');
            rest = &rest[c + CLOSE.len()..];
        } else {
            out.push_str(rest);
            return Some(out);
        }
    }
}

/// Replaces markdown emphasis, quotes and line-leading blockquote markers by spaces.
pub(crate) fn strip_markup(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut line_start = true;
        for ch in line.chars() {
            let drop = match ch {
                '*' | '_' | '`' | '#' | '"' | '\'' | '\u{201C}' | '\u{201D}' | '\u{2018}'
                | '\u{2019}' => true,
                '>' => line_start,
                _ => false,
            };
            if !(drop || ch.is_whitespace()) {
                line_start = false;
            }
            out.push(if drop { ' ' } else { ch });
        }
    }
    out
}

/// Every `result:` label as (byte offset of the word, byte offset just past the colon), in
/// order.
fn label_spans(text: &str) -> Vec<(usize, usize)> {
    const WORD: &str = "result";
    let lower = text.to_ascii_lowercase();
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(pos) = lower[from..].find(WORD).map(|p| p + from) {
        from = pos + WORD.len();
        let boundary_before = text[..pos].chars().next_back().is_none_or(|c| !c.is_alphanumeric());
        if !boundary_before {
            continue;
        }
        let tail = &text[from..];
        let skipped = tail.len() - tail.trim_start_matches([' ', '\t']).len();
        let tail = &tail[skipped..];
        if let Some(colon) = tail.chars().next().filter(|c| matches!(c, ':' | '\u{FF1A}')) {
            found.push((pos, from + skipped + colon.len_utf8()));
        }
    }
    found
}

/// The text the verdict is read from: the rest of the label's line, or the next non-blank
/// line when the rest of the label's line holds no letter or digit.
pub(crate) fn verdict_segment(after: &str) -> &str {
    let mut lines = after.split('\n');
    let first = lines.next().unwrap_or("");
    if first.chars().any(char::is_alphanumeric) {
        return first;
    }
    lines.find(|l| !l.trim().is_empty()).unwrap_or("")
}

/// Applies step 5 of the [`parse_verdict`] rule to one segment.
pub(crate) fn read_segment(segment: &str) -> Choice {
    // Words (maximal alphanumeric runs) as byte ranges into `segment`.
    let mut words: Vec<(usize, usize)> = Vec::new();
    let mut start = None;
    for (i, c) in segment.char_indices() {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                words.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        words.push((s, segment.len()));
    }
    let word = |k: usize| &segment[words[k].0..words[k].1];
    // Word k together with the text between it and word k - 1.
    let with_gap =
        |k: usize| words.get(k).map(|&(s, e)| (&segment[words[k - 1].1..s], &segment[s..e]));

    for k in 0..words.len() {
        let w = word(k);
        if w.eq_ignore_ascii_case("tie") {
            return Choice::Tie;
        }
        let letter = match w {
            "A" | "a" => Choice::A,
            "B" | "b" => Choice::B,
            _ => continue,
        };
        if letter == Choice::A {
            if let Some((gap, nw)) = with_gap(k + 1) {
                let spaced = !gap.is_empty() && gap.chars().all(char::is_whitespace);
                let article = spaced
                    && (nw.eq_ignore_ascii_case("tie")
                        || (w == "a" && nw.chars().next().is_some_and(char::is_alphabetic)));
                if article {
                    continue;
                }
            }
        }
        if echoes_instruction(letter, segment, &words, k) {
            return Choice::Unparsed;
        }
        return letter;
    }
    Choice::Unparsed
}

/// Whether a letter is followed by the other letter with nothing but joining text between:
/// spaces, the marks `, ; / | \\ ( ) [ ] < > -` and the words `or`, `and`, `vs`, `versus`, `v`
/// (`A or B`, `A/B`, `A, B`, `A and B`, `A (or B)`, `A vs B`, `A B`): the instruction echoed,
/// not a choice. A full stop, `!`, `?` or `:` between them ends the echo (`A. B's answer …` is
/// a choice of A). `words` are the segment's word ranges and `k` the letter's index.
fn echoes_instruction(letter: Choice, segment: &str, words: &[(usize, usize)], k: usize) -> bool {
    let other = |w: &str| match letter {
        Choice::A => w.eq_ignore_ascii_case("b"),
        _ => w.eq_ignore_ascii_case("a"),
    };
    let joining_gap =
        |gap: &str| gap.chars().all(|c| c.is_whitespace() || ",;/|\\()[]<>-".contains(c));
    let connective =
        |w: &str| ["or", "and", "vs", "versus", "v"].iter().any(|c| w.eq_ignore_ascii_case(c));
    for j in k + 1..words.len() {
        if !joining_gap(&segment[words[j - 1].1..words[j].0]) {
            return false;
        }
        let w = &segment[words[j].0..words[j].1];
        if other(w) {
            // A lowercase `a` followed by a word is the article (`B (a tie would be unfair)`).
            let article = w == "a"
                && words.get(j + 1).is_some_and(|&(s2, _)| {
                    let gap = &segment[words[j].1..s2];
                    !gap.is_empty() && gap.chars().all(char::is_whitespace)
                });
            return !article;
        }
        if !connective(w) {
            return false;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    //! Every expectation below is written by hand from the rule in [`parse_verdict`]'s docs.
    use super::parse_verdict;
    use crate::verdict::Choice::{self, Tie, Unparsed, A, B};

    fn check(reply: &str, want: Choice) {
        assert_eq!(parse_verdict(reply), want, "reply: {reply:?}");
    }

    #[test]
    fn plain_labels() {
        check("Response B fits the user better.\nResult: B", B);
        check("Response A fits the user better.\nResult: A", A);
        check("Result: A", A);
    }

    #[test]
    fn case_and_spacing_of_the_label() {
        check("RESULT: B", B);
        check("result: b", B);
        check("Result: a", A);
        check("Result : B", B);
        check("Result\t:\tA", A);
        check("Result:B", B);
        check("Result\u{FF1A}B", B);
    }

    #[test]
    fn label_must_be_the_word_result() {
        check("Results: B", Unparsed);
        check("Subresult: A", Unparsed);
        check("Final Result: B", B);
        check("final result:A", A);
        check("The verdict is B.", Unparsed);
    }

    #[test]
    fn no_label_at_all_is_unparsed_never_a() {
        check("", Unparsed);
        check("I prefer A.", Unparsed);
        check("A", Unparsed);
        check("Answer: B", Unparsed);
    }

    #[test]
    fn the_last_label_wins() {
        check("Result: A\nOn second thought, the user is vegan.\nResult: B", B);
        check("Result: B\nResult: A", A);
        // The last label decides even when it holds no verdict.
        check("Result: B\nResult: unclear", Unparsed);
        check("Result: A\nResult:", Unparsed);
    }

    #[test]
    fn reasoning_blocks_are_ignored() {
        check("<think>Maybe Result: A</think>\nResponse B matches.\nResult: B", B);
        check("<think>Result: A</think>\nI cannot decide.", Unparsed);
        check("<THINK>Result: A</Think>Result: B", B);
        check("<think>a</think>Result: A<think>Result: B</think>", A);
    }

    #[test]
    fn an_unclosed_reasoning_block_is_unparsed() {
        check("<think>The user likes hiking. Result: B", Unparsed);
        check("Result: A\n<think>hmm", Unparsed);
        check("<think>x</think>Result: A<think>Result: B", Unparsed);
    }

    #[test]
    fn a_stray_closing_tag_drops_the_reasoning_before_it() {
        check("Result: A seems tempting\n</think>\nResult: B", B);
        check("Result: A\n</think>\nNo verdict here.", Unparsed);
    }

    #[test]
    fn letter_inside_a_longer_answer() {
        check("Result: Answer B", B);
        check("Result: Response A.", A);
        check("Result: Assistant B's reply", B);
        check("Result: [[B]]", B);
        check("Result: (A)", A);
        check("Result: Option-B", B);
    }

    #[test]
    fn no_standalone_letter() {
        check("Result: Both", Unparsed);
        check("Result: Neither", Unparsed);
        check("Result: AB", Unparsed);
        check("Result: Bob", Unparsed);
        check("Result: A1", Unparsed);
        check("Result: none", Unparsed);
    }

    #[test]
    fn trailing_punctuation_and_text_after_the_letter() {
        check("Result: B.", B);
        check("Result: A!", A);
        check("Result: B because it mentions the user's vegan diet.", B);
        check("Result: B (Response A ignores the diet)", B);
        check("Result: B\n\nExplanation: A is generic.", B);
    }

    #[test]
    fn markdown_emphasis() {
        check("**Result:** **A**", A);
        check("**Result**: B", B);
        check("## Result: B", B);
        check("`Result: A`", A);
        check("_Result_: *B*", B);
        check("***Result:*** __B__", B);
    }

    #[test]
    fn quotes_and_blockquotes() {
        check("Result: \"B\"", B);
        check("Result: 'A'", A);
        check("Result: \u{201C}B\u{201D}", B);
        check("Result: \u{2018}A\u{2019}", A);
        check("> Result: A", A);
        check("> > **Result:** B", B);
    }

    #[test]
    fn letter_on_the_next_line() {
        check("Result:\nB", B);
        check("Result:\n\n**A**", A);
        check("**Result:**\n> B", B);
        // The next non-blank line is the segment; it holds no letter, so nothing further is read.
        check("Result:\nBoth are good.\nA", Unparsed);
        // A segment on the label's line is final: the next line is not read.
        check("Result: neither\nB", Unparsed);
    }

    #[test]
    fn ties() {
        check("Result: Tie", Tie);
        check("Result: TIE", Tie);
        check("Result: tie, A and B are equally good", Tie);
        check("Result: a tie", Tie);
        check("Result: A tie.", Tie);
        check("Result: It's a tie", Tie);
        // The first verdict word decides.
        check("Result: B (a tie would be unfair)", B);
        check("Result: tied", Unparsed);
    }

    #[test]
    fn the_article_a_is_not_a_verdict() {
        check("Result: it's a close call, but B", B);
        check("Result: a close call", Unparsed);
        // An uppercase A followed by a word is a verdict.
        check("Result: A is better", A);
        check("Result: a.", A);
        check("Result: a", A);
    }

    #[test]
    fn echoed_instruction_is_unparsed() {
        check("Result: A or B", Unparsed);
        check("Result: A/B", Unparsed);
        check("Result: B or A", Unparsed);
        check("Result: [A|B]", Unparsed);
        // A letter not echoing the template still counts.
        check("Result: A, or so I think", A);
        check("Result: A or maybe not", A);
    }

    #[test]
    fn echoed_format_line_with_two_labels_is_unparsed() {
        // The judge prompt's own format sentence, repeated at the end of a reply (seen from a
        // small judge behind llama.cpp's server): the last label alone would read B.
        check(
            "Response B fits better. I will end with a final line that reads exactly `Result: A` or `Result: B`.",
            Unparsed,
        );
        check("Result: A or Result: B", Unparsed);
        check("Result: B or Result: A", Unparsed);
        check("**Result: A** / **Result: B**", Unparsed);
        check("Result: A | Result: B", Unparsed);
        check("Result: A, Result: B", Unparsed);
        check("\"Result: A\" and \"Result: B\"", Unparsed);
        // The format quoted first, then a verdict of its own: the verdict counts.
        check("The format is `Result: A` or `Result: B`.\nResult: A", A);
        check("The format is `Result: A` or `Result: B`.\nResult: B", B);
        // A change of mind is not an echo, nor the same letter twice.
        check("Result: A\nOn reflection the second fits better.\nResult: B", B);
        check("Result: B or Result: B", B);
    }

    #[test]
    fn both_letters_joined_in_one_result_line_are_unparsed() {
        for reply in [
            "Result: A, B",
            "Result: A,B",
            "Result: A and B",
            "Result: A (or B)",
            "Result: A vs B",
            "Result: A; B",
            "Result: A B",
            "Result: A, or B",
            "Result: A-or-B",
            "Result: A\\|B",
            "Result: A, B, or tie",
            "Result: B versus A",
            "Result: [A] or [B]",
        ] {
            check(reply, Unparsed);
        }
        // A sentence after the verdict that names the other answer is a choice.
        check("Result: A. B misses the user's wish for brevity.", A);
        check("Result: B! A was close.", B);
        check("Result: A, since B ignores the profile", A);
    }

    #[test]
    fn multibyte_text_does_not_break_offsets() {
        check("Ergebnis – Résultat → Result: B ✓", B);
        check("Ünïcödé <think>Résultat: A</think> Result: ‘B’", B);
    }
}
