//! Strict reading of a rubric judge's reply (PROTOCOL.md §6): exactly one coverage score,
//! 0 (absent), 1 (partly) or 2 (well), for each ground-truth aspect, or the reply is unparsed.
//!
//! The authors' script accepted any list of numbers of any length and scored a failure as 0
//! (PROTOCOL.md §10, defect 8). Here a reply is read line by line:
//!
//! - A **score line** is `<index><sep> <score>` where `<index>` is the aspect's 1-based number,
//!   `<sep>` is one of `:` `.` `)` `-` `=`, and `<score>` is the integer 0, 1 or 2, optionally
//!   written `<score>/2` and optionally followed by a space or punctuation and a comment
//!   (`1: 2 (covers it well)`). The line may start with `Aspect`/`Quality` and markdown
//!   emphasis (`**1:** 2`) or a list bullet (`- 1: 2`).
//! - A line whose first word is an aspect index followed by a separator but whose score is not
//!   0, 1 or 2 (`1: 3`, `2: 1.5`, `1. The answer is …`) makes the reply unparsed: it claims to
//!   score an aspect and does not.
//! - Every other line (a preamble, a blank line) is ignored.
//! - With exactly one aspect, `Score: <s>` and a reply that is only `<s>` also count.
//!
//! The reply is unparsed unless every index 1..=n has exactly one score line: a missing index,
//! a repeated index or an index above n is an error naming it.

/// Why a reply could not be read as one score per aspect.
pub type ParseFailure = String;

/// Reads one coverage score (0, 1 or 2) per aspect, in aspect order, from `reply`.
///
/// # Errors
/// A message naming what is wrong (no score lines, a missing, repeated or out-of-range aspect
/// index, a score that is not 0, 1 or 2) when the reply does not hold exactly one score for each
/// of the `n_aspects` aspects. `n_aspects == 0` is an error too (nothing to score).
pub fn parse_rubric_reply(reply: &str, n_aspects: usize) -> Result<Vec<u8>, ParseFailure> {
    if n_aspects == 0 {
        return Err("the example has no rubric aspects to score".into());
    }
    let mut scores: Vec<Option<u8>> = vec![None; n_aspects];
    let mut seen_any = false;
    for line in reply.lines() {
        let Some((index, score)) = score_line(line, n_aspects)? else { continue };
        seen_any = true;
        if index == 0 || index > n_aspects {
            return Err(format!(
                "a score for aspect {index}, but the rubric has {n_aspects} aspect{}",
                plural(n_aspects)
            ));
        }
        if scores[index - 1].replace(score).is_some() {
            return Err(format!("aspect {index} is scored twice"));
        }
    }
    if !seen_any {
        return Err(format!(
            "no score line (`<aspect number>: <0|1|2>`) for any of the {n_aspects} aspect{}",
            plural(n_aspects)
        ));
    }
    let missing: Vec<String> = scores
        .iter()
        .enumerate()
        .filter(|(_, s)| s.is_none())
        .map(|(i, _)| (i + 1).to_string())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "no score for aspect{} {} of {n_aspects}",
            plural(missing.len()),
            missing.join(", ")
        ));
    }
    Ok(scores.into_iter().map(|s| s.expect("checked above")).collect())
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// `Ok(Some((index, score)))` for a score line, `Ok(None)` for a line to ignore, `Err` for a
/// line that scores an aspect with something other than 0, 1 or 2.
fn score_line(line: &str, n_aspects: usize) -> Result<Option<(usize, u8)>, ParseFailure> {
    let original = line.trim();
    let mut rest = strip_decoration(original);
    let mut labelled = false;
    for word in ["aspect", "quality", "item"] {
        if rest.len() > word.len() && rest[..word.len()].eq_ignore_ascii_case(word) {
            rest = rest[word.len()..].trim_start();
            labelled = true;
            break;
        }
    }
    if n_aspects == 1 && !labelled {
        // `Score: 2`, or a reply that is only the score.
        for word in ["score", "rating"] {
            if rest.len() > word.len() && rest[..word.len()].eq_ignore_ascii_case(word) {
                let after = strip_decoration(rest[word.len()..].trim_start());
                if let Some(after) = after.strip_prefix(':') {
                    return read_score(strip_decoration(after.trim_start()), original)
                        .map(|s| Some((1, s)));
                }
            }
        }
        if original.len() == 1 {
            if let Ok(s) = read_score(original, original) {
                return Ok(Some((1, s)));
            }
        }
    }
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 || digits > 3 {
        return Ok(None);
    }
    let index: usize = rest[..digits].parse().expect("ascii digits");
    let after = strip_decoration(&rest[digits..]);
    let Some(sep) = after.chars().next().filter(|c| matches!(c, ':' | '.' | ')' | '-' | '='))
    else {
        return Ok(None);
    };
    let value = strip_decoration(after[sep.len_utf8()..].trim_start());
    read_score(value, original).map(|s| Some((index, s)))
}

/// Markdown emphasis and list bullets around a token: `**`, `*`, `_`, `` ` ``, and a leading
/// `- ` or `• `.
fn strip_decoration(s: &str) -> &str {
    let mut s = s.trim();
    loop {
        let before = s;
        s = s.trim_start_matches(['*', '_', '`']).trim_end_matches(['*', '_', '`']).trim();
        for bullet in ["- ", "• "] {
            if let Some(r) = s.strip_prefix(bullet) {
                s = r.trim_start();
            }
        }
        if s == before {
            return s;
        }
    }
}

/// The integer score 0, 1 or 2 at the start of `value` (optionally `/2`), followed by the end,
/// a space or punctuation other than a decimal point.
fn read_score(value: &str, line: &str) -> Result<u8, ParseFailure> {
    let bad = || format!("line `{line}`: the score must be 0, 1 or 2");
    let digits = value.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 {
        return Err(bad());
    }
    let score: u32 = value[..digits].parse().map_err(|_| bad())?;
    let mut tail = &value[digits..];
    if let Some(t) = tail.strip_prefix("/2") {
        tail = t;
    }
    let tail = tail.trim_start_matches(['*', '_', '`']);
    let clean_end = match tail.chars().next() {
        None => true,
        Some('.') => !tail[1..].starts_with(|c: char| c.is_ascii_digit()),
        Some('/') => false,
        Some(c) => c.is_whitespace() || c.is_ascii_punctuation(),
    };
    if !clean_end || score > 2 {
        return Err(bad());
    }
    Ok(score as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_one_score_per_aspect_in_any_line_order() {
        assert_eq!(parse_rubric_reply("1: 2\n2: 0\n3: 1", 3), Ok(vec![2, 0, 1]));
        assert_eq!(parse_rubric_reply("3: 1\n1: 2\n2: 0", 3), Ok(vec![2, 0, 1]));
        assert_eq!(parse_rubric_reply("Here are my scores.\n\n1. 2\n2) 1\n", 2), Ok(vec![2, 1]));
        assert_eq!(
            parse_rubric_reply("**Aspect 1:** 2/2 — covered\n- Quality 2 = 0", 2),
            Ok(vec![2, 0])
        );
        assert_eq!(parse_rubric_reply("1: 2 (covers it well)\n2: 1.", 2), Ok(vec![2, 1]));
    }

    #[test]
    fn one_aspect_also_takes_score_or_a_bare_digit() {
        assert_eq!(parse_rubric_reply("Score: 1", 1), Ok(vec![1]));
        assert_eq!(parse_rubric_reply(" 2 ", 1), Ok(vec![2]));
        assert_eq!(parse_rubric_reply("**Rating:** 0", 1), Ok(vec![0]));
        // Not with several aspects: a bare digit says nothing about which aspect.
        assert!(parse_rubric_reply("2", 2).is_err());
        assert!(parse_rubric_reply("Score: 2", 2).is_err());
    }

    #[test]
    fn refuses_anything_but_exactly_one_score_each() {
        let err = |r: &str, n: usize| parse_rubric_reply(r, n).unwrap_err();
        assert!(err("1: 2", 2).contains("no score for aspect 2 of 2"), "{}", err("1: 2", 2));
        assert!(err("1: 2\n1: 1\n2: 0", 2).contains("aspect 1 is scored twice"));
        assert!(err("1: 2\n2: 0\n3: 1", 2)
            .contains("a score for aspect 3, but the rubric has 2 aspects"));
        assert!(err("1: 3", 1).contains("must be 0, 1 or 2"));
        assert!(err("1: 1.5", 1).contains("must be 0, 1 or 2"));
        assert!(err("1: 2/3", 1).contains("must be 0, 1 or 2"));
        assert!(err("1. The answer is friendly.", 1).contains("must be 0, 1 or 2"));
        assert!(err("The answer covers everything well.", 1).contains("no score line"));
        assert!(err("", 1).contains("no score line"));
        assert!(err("0: 2", 1).contains("a score for aspect 0"));
        assert!(parse_rubric_reply("1: 2", 0).unwrap_err().contains("no rubric aspects"));
        // A list of numbers of the wrong length (the authors' script took any list).
        assert!(err("2, 1, 2, 0", 3).contains("no score line"));
        assert!(err("Score: 12", 1).contains("must be 0, 1 or 2"));
    }
}
