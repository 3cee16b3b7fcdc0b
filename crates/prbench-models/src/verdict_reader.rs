//! Verdict readers: how a judge recipe's reply is turned into a verdict (our own `Result:` rule is
//! PROTOCOL.md §4).
//!
//! Generative reward models each write their verdict their own way, and a recipe names the
//! reader that matches its prompt:
//!
//! | reader (`recipe.toml`) | the reply ends with | as written by |
//! |---|---|---|
//! | `result` | `Result: A` | prbench's own judge prompt ([`parse_verdict`]) |
//! | `brackets` | `[[A]]`, `[[B]]` (`[[C]]` = tie) | MT-Bench's pairwise judge, Skywork-Critic |
//! | `answer-tag` | `<answer>[[A]]</answer>` | reasoning reward models such as RM-R1 |
//! | `boxed` | `\boxed{A}` | reasoning models trained on maths-style answers |
//! | `regex` | whatever one capture group finds | anything else |
//! | `rating` (pointwise) | `Rating: 7` | a judge that rates one answer at a time |
//!
//! Rules every pairwise reader shares, so that none repeats the authors' parser defects
//! (PROTOCOL.md §10, defects 2 and 3):
//! - `<think>…</think>` blocks are dropped first, as [`parse_verdict`] drops them; an
//!   unclosed `<think>` makes the reply [`Choice::Unparsed`].
//! - The **last** verdict in the reply wins (a reasoning model may quote the format, or change
//!   its mind, before its final answer).
//! - A reply without a readable verdict is [`Choice::Unparsed`], never a default letter.
//! - A verdict that echoes the instruction (`[[A]] or [[B]]`, `\boxed{A/B}`) is unparsed.

use std::sync::OnceLock;

use regex::Regex;

use crate::error::ModelError;
use crate::verdict::Choice;
use crate::verdict_parse::{
    parse_verdict, read_segment, strip_markup, strip_think_blocks, verdict_segment,
};

/// A pairwise verdict reader (see the module docs for the forms).
#[derive(Debug, Clone)]
pub enum VerdictReader {
    /// `Result: A` / `Result: B`, read by [`parse_verdict`].
    ResultLine,
    /// `[[A]]` / `[[B]]`, `[[C]]` for a tie (MT-Bench's pairwise format).
    Brackets,
    /// The last `<answer>…</answer>` block; inside it `[[A]]`, `A`, `Assistant B`, … .
    AnswerTag,
    /// The last `\boxed{…}`; inside it `A`, `\text{B}`, … .
    Boxed,
    /// A regular expression with exactly one capture group; its last match's capture, trimmed,
    /// must be `A` or `B` (any case) or `tie`.
    Regex(VerdictRegex),
}

/// A compiled [`VerdictReader::Regex`] pattern and its source text.
#[derive(Debug, Clone)]
pub struct VerdictRegex {
    source: String,
    re: Regex,
}

impl VerdictRegex {
    /// Compiles `pattern` (Rust `regex` syntax, which has no look-around).
    ///
    /// # Errors
    /// [`ModelError::Reader`] when the pattern does not compile or has not exactly one capture
    /// group (named or not).
    pub fn new(pattern: &str) -> Result<Self, ModelError> {
        let bad =
            |reason: String| ModelError::Reader { reader: format!("regex `{pattern}`"), reason };
        let re = Regex::new(pattern).map_err(|e| bad(format!("does not compile: {e}")))?;
        match re.captures_len() - 1 {
            1 => Ok(Self { source: pattern.to_string(), re }),
            n => Err(bad(format!("has {n} capture groups; it needs exactly one, around the verdict letter, e.g. `Verdict: \\[?([AB])\\]?` (use `(?:…)` for groups that capture nothing)"))),
        }
    }

    /// The pattern as written.
    pub fn source(&self) -> &str {
        &self.source
    }
}

/// The names [`VerdictReader::from_name`] and [`RatingReader`] accept, for messages.
pub const READER_NAMES: &str =
    "`result`, `brackets`, `answer-tag`, `boxed`, `regex` (with `pattern`), `rating` (pointwise)";

impl VerdictReader {
    /// The reader called `name` in a recipe; `pattern` is the regex of `regex` and must be
    /// absent for the others.
    ///
    /// # Errors
    /// [`ModelError::Reader`] for an unknown name (`rating` is pointwise: see
    /// [`RatingReader`]), a missing or superfluous pattern, or a bad regex.
    pub fn from_name(name: &str, pattern: Option<&str>) -> Result<Self, ModelError> {
        let reader = match name {
            "result" => Self::ResultLine,
            "brackets" => Self::Brackets,
            "answer-tag" => Self::AnswerTag,
            "boxed" => Self::Boxed,
            "regex" => {
                let p = pattern.ok_or_else(|| ModelError::Reader {
                    reader: format!("`{name}`"),
                    reason: "needs a `pattern` with one capture group around the verdict letter"
                        .into(),
                })?;
                return Ok(Self::Regex(VerdictRegex::new(p)?));
            }
            "rating" => {
                return Err(ModelError::Reader {
                    reader: format!("`{name}`"),
                    reason: "is a pointwise reader: set `kind = \"pointwise\"` in recipe.toml"
                        .into(),
                })
            }
            other => {
                return Err(ModelError::Reader {
                    reader: format!("`{other}`"),
                    reason: format!("is not a known reader; known: {READER_NAMES}"),
                })
            }
        };
        if pattern.is_some() {
            return Err(ModelError::Reader {
                reader: format!("`{name}`"),
                reason: "takes no `pattern` (only `regex` does)".into(),
            });
        }
        Ok(reader)
    }

    /// The name as a recipe writes it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::ResultLine => "result",
            Self::Brackets => "brackets",
            Self::AnswerTag => "answer-tag",
            Self::Boxed => "boxed",
            Self::Regex(_) => "regex",
        }
    }

    /// What the manifest and the cache key record: `{"reader": NAME}` plus `pattern` for
    /// `regex`.
    pub fn describe(&self) -> serde_json::Value {
        match self {
            Self::Regex(r) => serde_json::json!({ "reader": self.name(), "pattern": r.source() }),
            _ => serde_json::json!({ "reader": self.name() }),
        }
    }

    /// Reads the verdict of `reply`.
    pub fn read(&self, reply: &str) -> Choice {
        if let Self::ResultLine = self {
            return parse_verdict(reply);
        }
        let Some(text) = strip_think_blocks(reply) else {
            return Choice::Unparsed;
        };
        match self {
            Self::ResultLine => unreachable!("handled above"),
            Self::Brackets => read_brackets(&text),
            Self::AnswerTag => read_answer_tag(&text),
            Self::Boxed => read_boxed(&text),
            Self::Regex(r) => read_regex(r, &text),
        }
    }
}

/// A verdict word (`A`, `B`, or `C`/`tie` for a tie) inside double brackets, with optional
/// spaces: `[[A]]`, `[[ b ]]`, `[[C]]`, `[[Tie]]`.
fn bracket_tokens(text: &str) -> Vec<(usize, usize, Choice)> {
    BRACKET
        .get_or_init(|| static_regex(r"(?i)\[\[\s*(a|b|c|tie)\s*\]\]"))
        .captures_iter(text)
        .map(|c| {
            let m = c.get(0).expect("group 0");
            let choice = match c[1].to_ascii_lowercase().as_str() {
                "a" => Choice::A,
                "b" => Choice::B,
                _ => Choice::Tie,
            };
            (m.start(), m.end(), choice)
        })
        .collect()
}

/// Whether the text between two verdicts of different letters makes them an echo of the
/// format (`[[A]] or [[B]]`, `\boxed{A} vs \boxed{B}`) rather than a change of mind.
fn is_echo_gap(gap: &str) -> bool {
    matches!(
        gap,
        "" | ";"
            | "or"
            | "/"
            | "|"
            | ","
            | ", or"
            | "and"
            | "vs"
            | "vs."
            | "versus"
            | "v."
            | "-"
            | "–"
            | "$ or $"
            | "$ or"
            | "or $"
    )
}

/// The module's fixed patterns, each compiled once on first use (a reader runs once per reply).
static BRACKET: OnceLock<Regex> = OnceLock::new();
static LATEX_COMMAND: OnceLock<Regex> = OnceLock::new();
static RATING_LABEL: OnceLock<Regex> = OnceLock::new();
static RATING_NUMBER: OnceLock<Regex> = OnceLock::new();

/// Compiles one of this module's fixed patterns.
fn static_regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("the module's own patterns compile")
}

/// The last bracketed verdict; unparsed when it echoes the instruction (`[[A]] or [[B]]`,
/// `[[A]]/[[B]]`, `[[A]], [[B]]`), i.e. the previous bracket is joined to it by `or`, `/`, `|`
/// or `,` and holds the other letter.
fn read_brackets(text: &str) -> Choice {
    last_unless_echo(text, &bracket_tokens(text))
}

/// The last of `verdicts` (each `(start, end, choice)` in `text`, in order), or
/// [`Choice::Unparsed`] when there is none or when the last two are different readable verdicts
/// joined by an [echo gap](is_echo_gap): the reply repeated its format (`[[A]] or [[B]]`)
/// instead of choosing; also when the last verdict's line holds all three verdicts A, B and
/// tie (MT-Bench's format sentence, `"[[A]]" if assistant A is better, "[[B]]" if …, and
/// "[[C]]" for a tie`, repeated). Every reader that can see several verdicts applies this rule.
fn last_unless_echo(text: &str, verdicts: &[(usize, usize, Choice)]) -> Choice {
    let Some(&(start, _, last)) = verdicts.last() else {
        return Choice::Unparsed;
    };
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let on_line = |c: Choice| verdicts.iter().any(|&(s, _, v)| s >= line_start && v == c);
    if on_line(Choice::A) && on_line(Choice::B) && on_line(Choice::Tie) {
        return Choice::Unparsed;
    }
    if let Some(&(_, prev_end, prev)) = verdicts.len().checked_sub(2).map(|i| &verdicts[i]) {
        let readable = |c: Choice| c != Choice::Unparsed;
        let gap = text[prev_end..start].trim().to_ascii_lowercase();
        if readable(prev) && readable(last) && prev != last && is_echo_gap(&gap) {
            return Choice::Unparsed;
        }
    }
    last
}

/// The last `<answer>…</answer>` block (tags in any case). Inside it a bracketed verdict
/// decides if there is one; otherwise the words are read as a `Result:` line's segment is
/// (`A`, `Assistant B`, `tie`; `A or B` is unparsed). An `<answer>` without its closing tag
/// after the last complete block, or no block at all, is unparsed; so is a last block joined to
/// the one before it by an echo gap with the other verdict (`<answer>A</answer> or
/// <answer>B</answer>`, the format repeated).
fn read_answer_tag(text: &str) -> Choice {
    const OPEN: &str = "<answer>";
    const CLOSE: &str = "</answer>";
    let lower = text.to_ascii_lowercase();
    let mut blocks: Vec<(usize, usize, Choice)> = Vec::new();
    let mut from = 0;
    while let Some(open) = lower[from..].find(OPEN).map(|i| i + from) {
        let body_start = open + OPEN.len();
        let Some(close) = lower[body_start..].find(CLOSE).map(|i| i + body_start) else {
            // An unclosed block after the last complete one: cut off, so no verdict.
            return Choice::Unparsed;
        };
        blocks.push((open, close + CLOSE.len(), read_inner(&text[body_start..close])));
        from = close + CLOSE.len();
    }
    last_unless_echo(text, &blocks)
}

/// A verdict inside a tag or a box: brackets first, else the words.
fn read_inner(inner: &str) -> Choice {
    if !bracket_tokens(inner).is_empty() {
        return read_brackets(inner);
    }
    let cleaned = strip_markup(inner);
    read_segment(cleaned.trim())
}

/// The verdict of the last `\boxed{…}` (braces balanced inside). LaTeX commands in a box
/// (`\text`, `\mathrm`, `\textbf`) and braces are dropped before its words are read. As for
/// brackets, a last box joined to the box before it by `or`, `/`, `|`, `,` or `and` and holding
/// the other letter (`\boxed{A} or \boxed{B}`) echoes the format and is unparsed; an unclosed
/// box is unparsed, and no box after it counts.
fn read_boxed(text: &str) -> Choice {
    const BOXED: &str = "\\boxed";
    let mut boxes: Vec<(usize, usize, Choice)> = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(BOXED).map(|i| i + from) {
        from = at + BOXED.len();
        let rest = &text[from..];
        let skipped = rest.len() - rest.trim_start().len();
        let Some(body) = rest[skipped..].strip_prefix('{') else {
            continue;
        };
        let body_start = from + skipped + 1;
        let mut depth = 1usize;
        let mut end = None;
        for (i, c) in body.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(i);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else {
            boxes.push((at, text.len(), Choice::Unparsed));
            break;
        };
        let inner = LATEX_COMMAND
            .get_or_init(|| static_regex(r"\\[A-Za-z]+"))
            .replace_all(&body[..end], " ");
        boxes.push((at, body_start + end + 1, read_inner(&inner.replace(['{', '}'], " "))));
        from = body_start + end + 1;
    }
    last_unless_echo(text, &boxes)
}

/// The last match's capture: `A`/`B` in any case, or `tie`; anything else is unparsed, and so
/// is a last match joined to the match before it by an echo gap with the other verdict
/// (`Winner: A or Winner: B`, the format repeated).
fn read_regex(r: &VerdictRegex, text: &str) -> Choice {
    let verdicts: Vec<(usize, usize, Choice)> =
        r.re.captures_iter(text)
            .map(|caps| {
                let whole = caps.get(0).expect("group 0");
                let choice = caps.get(1).map_or(Choice::Unparsed, |m| {
                    match m.as_str().trim().to_ascii_lowercase().as_str() {
                        "a" => Choice::A,
                        "b" => Choice::B,
                        "tie" => Choice::Tie,
                        _ => Choice::Unparsed,
                    }
                });
                (whole.start(), whole.end(), choice)
            })
            .collect();
    last_unless_echo(text, &verdicts)
}

/// The pointwise reader: the last `Rating:` label (any case, not part of a longer word, `:` or
/// `：`), then a number on the rest of its line, or on the next non-blank line when the rest of
/// the line holds no letter or digit. Markdown emphasis and brackets around the number are
/// skipped (`**Rating:** [[7]]`), a `/10` after it is ignored, and a value outside
/// `[min, max]`, a placeholder (`Rating: N`) or no label at all reads as no rating.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RatingReader {
    /// Lowest rating the prompt allows.
    pub min: f64,
    /// Highest rating the prompt allows.
    pub max: f64,
}

impl RatingReader {
    /// A reader for ratings in `[min, max]`.
    ///
    /// # Errors
    /// [`ModelError::Reader`] when the bounds are not finite or `min >= max`.
    pub fn new(min: f64, max: f64) -> Result<Self, ModelError> {
        if !(min.is_finite() && max.is_finite() && min < max) {
            return Err(ModelError::Reader {
                reader: "`rating`".into(),
                reason: format!("needs finite bounds with min < max; got min {min}, max {max}"),
            });
        }
        Ok(Self { min, max })
    }

    /// What the manifest and the cache key record.
    pub fn describe(&self) -> serde_json::Value {
        serde_json::json!({ "reader": "rating", "min": self.min, "max": self.max })
    }

    /// The rating in `reply`, or `None` when there is none that reads (see the type's docs).
    pub fn read(&self, reply: &str) -> Option<f64> {
        let text = strip_markup(&strip_think_blocks(reply)?);
        let lower = text.to_ascii_lowercase();
        let label =
            RATING_LABEL.get_or_init(|| static_regex(r"(?:^|[^a-z0-9])rating[ \t]*[:\u{FF1A}]"));
        let end = label.find_iter(&lower).last()?.end();
        let segment = verdict_segment(&text[end..]);
        let number = RATING_NUMBER.get_or_init(|| static_regex(r"^[\s\[\(]*([+-]?(?:\d+(?:\.\d+)?|\.\d+))(?:\s*/\s*\d+(?:\.\d+)?)?[\s\]\)\.,;]*(?:$|\s)"));
        let value: f64 = number.captures(segment)?.get(1)?.as_str().parse().ok()?;
        (value.is_finite() && value >= self.min && value <= self.max).then_some(value)
    }
}

#[cfg(test)]
mod tests {
    //! Every expectation is written by hand from the rules in the docs above.
    use super::*;
    use crate::verdict::Choice::{Tie, Unparsed, A, B};

    fn check(reader: &VerdictReader, reply: &str, want: Choice) {
        assert_eq!(reader.read(reply), want, "{} on {reply:?}", reader.name());
    }

    #[test]
    fn result_reader_is_our_parser() {
        let r = VerdictReader::from_name("result", None).unwrap();
        check(&r, "Both are fine.\nResult: B", B);
        check(&r, "Result: A or B", Unparsed);
        check(&r, "[[A]]", Unparsed);
    }

    #[test]
    fn brackets_last_wins_and_echoes_are_unparsed() {
        let r = VerdictReader::Brackets;
        check(&r, "Assistant B follows the user's wishes. [[B]]", B);
        check(&r, "[[A]]", A);
        check(&r, "[[ b ]]", B);
        check(&r, "It is a tie: [[C]]", Tie);
        // The format quoted first, then the verdict.
        check(&r, "I must answer [[A]] or [[B]]. After comparing, my verdict: [[A]]", A);
        // Changing its mind: the last verdict counts.
        check(&r, "At first [[A]] seemed right, but on reflection [[B]]", B);
        // Only the echo, nothing after it.
        check(&r, "Output [[A]] or [[B]]", Unparsed);
        check(&r, "Output [[A]]/[[B]]", Unparsed);
        check(&r, "Final: [[A]], [[B]]", Unparsed);
        check(&r, "[[A]] vs [[B]]", Unparsed);
        check(&r, "[[A]] versus [[B]]", Unparsed);
        // The same letter twice is not an echo.
        check(&r, "[[A]] and again [[A]]", A);
        // Single brackets, a bare letter or a reasoning-only verdict do not count.
        check(&r, "[A] is better", Unparsed);
        check(&r, "A is better", Unparsed);
        check(&r, "<think>[[A]]</think> I cannot decide.", Unparsed);
        check(&r, "<think>[[A]]</think> [[B]]", B);
        check(&r, "<think>still thinking [[A]]", Unparsed);
        check(&r, "[[D]]", Unparsed);
        check(&r, "[[AB]]", Unparsed);
    }

    #[test]
    fn answer_tag_reads_the_last_complete_block() {
        let r = VerdictReader::AnswerTag;
        check(&r, "<think>A has more detail</think><answer>[[B]]</answer>", B);
        check(&r, "The rubric favours the first.\n<answer>[[A]]</answer>", A);
        check(&r, "<ANSWER> Chatbot B </ANSWER>", B);
        check(&r, "<answer>A</answer>", A);
        check(&r, "<answer>[[A]]</answer> wait, no: <answer>[[B]]</answer>", B);
        check(&r, "Format: <answer>[[A]] or [[B]]</answer>", Unparsed);
        check(&r, "<answer>A or B</answer>", Unparsed);
        check(&r, "<answer>tie</answer>", Tie);
        // A block cut off by the token limit, or no block at all.
        check(&r, "<answer>[[A]]</answer> then <answer>[[B", Unparsed);
        check(&r, "[[A]]", Unparsed);
        check(&r, "<answer></answer>", Unparsed);
        // A verdict only inside the reasoning does not count.
        check(&r, "<think><answer>[[A]]</answer></think>", Unparsed);
        // The article inside prose is skipped, as in a `Result:` line.
        check(&r, "<answer>a close call, but B</answer>", B);
    }

    #[test]
    fn boxed_reads_the_last_box() {
        let r = VerdictReader::Boxed;
        check(&r, "So the answer is \\boxed{A}.", A);
        check(&r, "\\boxed{\\text{B}}", B);
        check(&r, "\\boxed{\\textbf{Response B}}", B);
        check(&r, "First \\boxed{A}, corrected: \\boxed{B}", B);
        check(&r, "\\boxed{A/B}", Unparsed);
        check(&r, "\\boxed{}", Unparsed);
        check(&r, "\\boxed{A", Unparsed);
        check(&r, "\\boxed A", Unparsed);
        check(&r, "The answer is A.", Unparsed);
        check(&r, "<think>\\boxed{A}</think>", Unparsed);
        check(&r, "\\boxed{[[B]]}", B);
        // The format echoed is unparsed, as for the other readers; a verdict after it counts.
        check(&r, "Answer \\boxed{A} or \\boxed{B}", Unparsed);
        check(&r, "\\boxed{A}/\\boxed{B}", Unparsed);
        check(&r, "\\boxed{\\text{A}} or \\boxed{\\text{B}}", Unparsed);
        check(&r, "I must write \\boxed{A} or \\boxed{B}. Final: \\boxed{B}", B);
        check(&r, "\\boxed{A} and again \\boxed{A}", A);
        check(&r, "\\boxed{A} then \\boxed{B", Unparsed);
        check(&r, "\\boxed A then \\boxed{B}", B);
        check(&r, "\\boxed{A} vs \\boxed{B}", Unparsed);
        check(&r, "$\\boxed{B}$ or $\\boxed{A}$", Unparsed);
    }

    #[test]
    fn regex_takes_the_last_capture() {
        let r = VerdictReader::from_name("regex", Some(r"(?i)winner:\s*(\w+)")).unwrap();
        check(&r, "Winner: A", A);
        check(&r, "winner: a ... Winner: B", B);
        check(&r, "Winner: tie", Tie);
        check(&r, "Winner: Both", Unparsed);
        check(&r, "no verdict here", Unparsed);
        check(&r, "<think>Winner: A</think>", Unparsed);
        // An optional group that did not take part in the match is no verdict.
        let opt = VerdictReader::from_name("regex", Some(r"pick(?:ed)?(?: ([AB]))?")).unwrap();
        check(&opt, "picked", Unparsed);
        check(&opt, "picked B", B);
    }

    /// Each reader on the format line its own prompt would give, repeated at the end of a reply
    /// with nothing after it: no verdict. The same line followed by a verdict of the reply's own
    /// gives that verdict.
    #[test]
    fn every_reader_reads_its_echoed_format_line_as_unparsed() {
        let regex = VerdictReader::from_name("regex", Some(r"(?i)winner:\s*(\w+)")).unwrap();
        let cases: [(&VerdictReader, &str, &str, Choice); 5] = [
            (&VerdictReader::ResultLine, "I will end with a final line that reads exactly `Result: A` or `Result: B`.", "Result: B", B),
            (&VerdictReader::Brackets, "Output your final verdict strictly in this format: \"[[A]]\" if assistant A is better, \"[[B]]\" if assistant B is better, and \"[[C]]\" for a tie.", "[[A]]", A),
            (&VerdictReader::AnswerTag, "Put the answer in tags: <answer>[[A]]</answer> or <answer>[[B]]</answer>", "<answer>[[A]]</answer>", A),
            (&VerdictReader::Boxed, "Write \\boxed{A} or \\boxed{B}.", "\\boxed{B}", B),
            (&regex, "End with Winner: A or Winner: B", "Winner: A", A),
        ];
        for (reader, echo, verdict, want) in cases {
            check(reader, echo, Unparsed);
            check(reader, &format!("Both answers are short. {echo}"), Unparsed);
            check(reader, &format!("{echo}\nAfter comparing them: {verdict}"), want);
        }
        check(&VerdictReader::Brackets, "[[A]], [[B]] or [[C]]", Unparsed);
        // Two different verdicts side by side, with nothing or only a line break between.
        check(&VerdictReader::Brackets, "[[A]] [[B]]", Unparsed);
        check(&VerdictReader::Brackets, "[[A]]\n[[B]]", Unparsed);
        check(&VerdictReader::Boxed, "\\boxed{A}\\boxed{B}", Unparsed);
        // A line with all three options is the format; a tie alone on its line is a verdict.
        check(&VerdictReader::Brackets, "Format: [[A]] wins, [[B]] wins, [[C]] tie.\n[[C]]", Tie);
        // The rating prompts' own format lines hold no number, so they are no rating.
        let rating = RatingReader::new(1.0, 10.0).unwrap();
        assert_eq!(
            rating.read("Reply with a single line that reads exactly `Rating: <1-9>`."),
            None
        );
        assert_eq!(rating.read("end with a final line that reads exactly `Rating: ` followed by a whole number from 1 to 10."), None);
        assert_eq!(rating.read("The format is `Rating: <1-9>`.\nRating: 6"), Some(6.0));
    }

    #[test]
    fn reader_names_and_patterns_are_checked() {
        for name in ["result", "brackets", "answer-tag", "boxed"] {
            assert_eq!(VerdictReader::from_name(name, None).unwrap().name(), name);
            assert!(
                VerdictReader::from_name(name, Some("(x)")).is_err(),
                "{name} takes no pattern"
            );
        }
        assert!(VerdictReader::from_name("regex", None)
            .unwrap_err()
            .to_string()
            .contains("pattern"));
        assert!(VerdictReader::from_name("regex", Some("([AB]"))
            .unwrap_err()
            .to_string()
            .contains("does not compile"));
        assert!(VerdictReader::from_name("regex", Some("([AB])(x)"))
            .unwrap_err()
            .to_string()
            .contains("2 capture groups"));
        assert!(VerdictReader::from_name("regex", Some("[AB]"))
            .unwrap_err()
            .to_string()
            .contains("0 capture groups"));
        assert!(VerdictReader::from_name("regex", Some("(?P<v>[AB])")).is_ok());
        assert!(VerdictReader::from_name("rating", None)
            .unwrap_err()
            .to_string()
            .contains("pointwise"));
        assert!(VerdictReader::from_name("xml", None)
            .unwrap_err()
            .to_string()
            .contains("answer-tag"));
        assert_eq!(
            VerdictReader::from_name("regex", Some("v=([AB])")).unwrap().describe(),
            serde_json::json!({"reader": "regex", "pattern": "v=([AB])"})
        );
    }

    #[test]
    fn ratings() {
        let r = RatingReader::new(1.0, 10.0).unwrap();
        let read = |s: &str| r.read(s);
        assert_eq!(read("Clear and on point.\nRating: 8"), Some(8.0));
        assert_eq!(read("**Rating:** 7/10"), Some(7.0));
        assert_eq!(read("Rating: [[6]]"), Some(6.0));
        assert_eq!(read("rating: 7.5."), Some(7.5));
        assert_eq!(read("Rating:\n\n9"), Some(9.0));
        assert_eq!(read("Rating: 3, then Rating: 5"), Some(5.0));
        // The last label counts even when it holds no number.
        assert_eq!(read("Rating: 4\nThe format asks for Rating: N"), None);
        assert_eq!(read("Rating: 11"), None);
        assert_eq!(read("Rating: 0"), None);
        assert_eq!(read("Rating: -3"), None);
        assert_eq!(read("Rating: 7th out of ten"), None);
        assert_eq!(read("Rating: 7 out of 10"), Some(7.0));
        assert_eq!(read("Overall rating 8"), None);
        assert_eq!(read("Ratings: 8"), None);
        assert_eq!(read("Subrating: 8"), None);
        assert_eq!(read("<think>Rating: 2</think>Rating: 9"), Some(9.0));
        assert_eq!(read("<think>Rating: 2"), None);
        assert_eq!(read("I would give it 8."), None);
        assert_eq!(read("Rating\u{FF1A}10"), Some(10.0));
        assert!(RatingReader::new(5.0, 5.0).is_err());
        assert!(RatingReader::new(f64::NAN, 5.0).is_err());
    }
}
