//! Reading a planner reply as a list of aspects ([`parse_plan`]).

/// In a reply without list markers, a plain line counts as an aspect only up to this many
/// characters; a longer line means the reply is prose and the parse fails.
pub const MAX_PLAIN_LINE_CHARS: usize = 200;

/// Parses a planner reply into its aspects, in reply order.
///
/// Rules, in order:
/// 1. Reasoning blocks `<think>…</think>` are dropped (case-insensitive); text before a lone
///    `</think>` is dropped too; an unclosed `<think>` is an error (the reply was cut inside its
///    reasoning).
/// 2. Each line is trimmed; blank lines, code-fence lines (```` ``` ````), horizontal rules
///    (`---`, `***`, `___`, `===`) and markdown headings (`# …` to `###### …`) are skipped;
///    leading `>` quote marks are removed.
/// 3. A **list item** is a line starting with a bullet (`-`, `*` or `+` followed by a space;
///    `•`, `◦`, `‣`, `▪`, `–`, `—` with or without one) or a number of at most 3 digits followed
///    by `.` or `)` (or written `(1)`), not followed by another digit (so `3.5 stars` is not an
///    item). A line wholly in bold (`**1. Budget**`) is read through its bold marks. Nested
///    items count like top-level ones.
/// 4. Item text is cleaned: `**`/`__` removed, a wrapping single `*…*`/`_…_` or pair of quotes
///    removed, a leading checkbox `[ ]`/`[x]` removed, whitespace runs collapsed, a trailing
///    `:` removed. Items without a letter or digit are dropped, and so are items that only
///    name a post (`**Post 1**`, `Post 1:`, `[Post 2 · category: Art]`, `Post #3`): the
///    prompt labels posts that way and small models echo the labels as headings.
/// 5. When the reply has at least one usable list item, only list items count: every other
///    line (a preamble such as `Here are the aspects:`, a closing remark, a continuation line
///    under an item) is ignored.
/// 6. Otherwise (no list markers at all) the plain lines are read as an unmarked list: lines
///    ending in `:` are dropped as labels or preambles, and so is a first line that is a
///    preamble (`Here are …`, `Sure`, `Certainly`, `Of course`, `Okay`, `Absolutely`). Each
///    remaining line is split into sentences (after `.`, `!` or `?` followed by whitespace), so
///    a small model's short prose ("The user prefers a friendly tone. They like jokes.") gives
///    one aspect per sentence. If any sentence is longer than [`MAX_PLAIN_LINE_CHARS`]
///    characters the reply is an error (a run-on paragraph is not a list); otherwise each
///    sentence, cleaned as in 4, is an aspect if it has at least two words: an unmarked single
///    word (`The`, `Yes.`, a reply cut after its first token) is a fragment, not an aspect. (A
///    one-word list item such as `- Budget` stays: the marker says it is an item.)
/// 7. Exact duplicates, compared case-insensitively after cleaning, are dropped (the first
///    occurrence stays). Nothing else is dropped or cut: there is no cap on the number or
///    length of items.
///
/// # Errors
/// A one-line reason when the reply is empty, only reasoning, prose, or holds no usable item;
/// never an empty `Ok`.
pub fn parse_plan(raw: &str) -> Result<Vec<String>, String> {
    parse_plan_form(raw).map(|(aspects, _)| aspects)
}

/// [`parse_plan`], also saying whether the aspects came from list items (`true`) or from
/// unmarked lines and sentences (rule 6, `false`): callers count the latter, since a reply
/// that ignored the list format is weaker evidence of a plan.
///
/// # Errors
/// As [`parse_plan`].
pub fn parse_plan_form(raw: &str) -> Result<(Vec<String>, bool), String> {
    if raw.trim().is_empty() {
        return Err("empty reply".into());
    }
    let text = strip_reasoning(raw)?;
    if text.trim().is_empty() {
        return Err("nothing left after dropping the reasoning block".into());
    }
    let mut items = Vec::new();
    let mut plain = Vec::new();
    for line in text.lines() {
        let mut t = line.trim();
        while let Some(rest) = t.strip_prefix('>') {
            t = rest.trim_start();
        }
        if t.is_empty() || t.starts_with("```") || is_rule(t) || is_heading(t) {
            continue;
        }
        match list_body(t) {
            Some(body) => {
                let c = clean(body);
                if usable(&c) && !names_only_a_post(&c) {
                    items.push(c);
                }
            }
            None => plain.push(t),
        }
    }
    let marked = !items.is_empty();
    let aspects = if marked { items } else { plain_lines(&plain)? };
    let mut seen = std::collections::HashSet::new();
    let out: Vec<String> = aspects.into_iter().filter(|a| seen.insert(a.to_lowercase())).collect();
    debug_assert!(!out.is_empty());
    Ok((out, marked))
}

/// Rule 1 of [`parse_plan`].
fn strip_reasoning(raw: &str) -> Result<String, String> {
    const OPEN: &str = "<think>";
    const CLOSE: &str = "</think>";
    let mut s = raw.to_string();
    loop {
        // ASCII lowercasing keeps byte offsets.
        let lower = s.to_ascii_lowercase();
        match (lower.find(OPEN), lower.find(CLOSE)) {
            (None, None) => return Ok(s),
            (Some(o), Some(c)) if o < c => s.replace_range(o..c + CLOSE.len(), "\n"),
            (_, Some(c)) => s.replace_range(..c + CLOSE.len(), ""),
            (Some(_), None) => {
                return Err("unclosed <think> block: the reply ended inside its reasoning".into())
            }
        }
    }
}

/// `---`, `***`, `___`, `===` (three or more of one character, spaces allowed).
fn is_rule(t: &str) -> bool {
    let chars: Vec<char> = t.chars().filter(|c| !c.is_whitespace()).collect();
    chars.len() >= 3
        && matches!(chars[0], '-' | '*' | '_' | '=')
        && chars.iter().all(|&c| c == chars[0])
}

/// `#` to `######` followed by a space or the end of the line.
fn is_heading(t: &str) -> bool {
    let hashes = t.chars().take_while(|&c| c == '#').count();
    (1..=6).contains(&hashes) && t[hashes..].chars().next().is_none_or(char::is_whitespace)
}

/// The text of a list item (rule 3), or `None` when `t` is not one.
fn list_body(t: &str) -> Option<&str> {
    if let Some(body) = marker_body(t) {
        return Some(body);
    }
    // A wholly bold item: `**1. Budget**`.
    let unbold = t.strip_prefix("**").or_else(|| t.strip_prefix("__"))?;
    marker_body(unbold)
}

fn marker_body(t: &str) -> Option<&str> {
    let first = t.chars().next()?;
    match first {
        '-' | '*' | '+' => {
            let rest = &t[1..];
            (rest.is_empty() || rest.starts_with(char::is_whitespace)).then(|| rest.trim_start())
        }
        '•' | '◦' | '‣' | '▪' | '–' | '—' => Some(t[first.len_utf8()..].trim_start()),
        '0'..='9' => {
            let digits = t.bytes().take_while(u8::is_ascii_digit).count();
            if digits > 3 {
                return None;
            }
            let rest = &t[digits..];
            let rest = rest.strip_prefix('.').or_else(|| rest.strip_prefix(')'))?;
            (!rest.starts_with(|c: char| c.is_ascii_digit())).then(|| rest.trim_start())
        }
        '(' => {
            let digits = t[1..].bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 || digits > 3 {
                return None;
            }
            t[1 + digits..].strip_prefix(')').map(str::trim_start)
        }
        _ => None,
    }
}

/// Rule 4 of [`parse_plan`].
fn clean(s: &str) -> String {
    let s = s.replace("**", "").replace("__", "");
    let mut t = s.trim();
    for (open, close) in [("*", "*"), ("_", "_"), ("\"", "\""), ("“", "”"), ("'", "'")] {
        if t.len() >= open.len() + close.len() {
            if let Some(inner) = t.strip_prefix(open).and_then(|x| x.strip_suffix(close)) {
                t = inner.trim();
            }
        }
    }
    for boxed in ["[ ]", "[x]", "[X]"] {
        if let Some(rest) = t.strip_prefix(boxed) {
            t = rest.trim_start();
        }
    }
    let collapsed = t.split_whitespace().collect::<Vec<_>>().join(" ");
    collapsed.trim_end_matches(':').trim_end().to_string()
}

fn usable(s: &str) -> bool {
    s.chars().any(char::is_alphanumeric)
}

/// Whether a cleaned item only names a post, as the planner prompt labels them: `Post 1`,
/// `Post #2`, `[Post 3 · category: Art]`, `(Post 4)`, any case (rule 4).
fn names_only_a_post(s: &str) -> bool {
    let t = s
        .trim_matches(|c: char| matches!(c, '[' | ']' | '(' | ')' | ':') || c.is_whitespace())
        .to_lowercase();
    let Some(rest) = t.strip_prefix("post") else { return false };
    let rest = rest.trim_start().trim_start_matches('#').trim_start();
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return false;
    }
    let tail = rest[digits..]
        .trim_start_matches(|c: char| matches!(c, ':' | ']' | ')') || c.is_whitespace());
    tail.is_empty() || tail.starts_with('·')
}

/// Rule 6 of [`parse_plan`]: an unmarked fragment needs at least two words to be an aspect.
fn has_two_words(s: &str) -> bool {
    s.split_whitespace().filter(|w| w.chars().any(char::is_alphanumeric)).count() >= 2
}

/// The sentences of one line: split after `.`, `!` or `?` when whitespace follows; trimmed,
/// empty pieces dropped.
fn sentences(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if matches!(c, '.' | '!' | '?') && chars.peek().is_some_and(|(_, n)| n.is_whitespace()) {
            out.push(line[start..i + c.len_utf8()].trim());
            start = i + c.len_utf8();
        }
    }
    out.push(line[start..].trim());
    out.retain(|s| !s.is_empty());
    out
}

/// Rule 6 of [`parse_plan`].
fn plain_lines(lines: &[&str]) -> Result<Vec<String>, String> {
    const OPENERS: [&str; 6] = ["sure", "certainly", "of course", "okay", "ok,", "absolutely"];
    let mut kept = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let bare = line.replace("**", "").replace("__", "");
        let bare = bare.trim();
        if bare.ends_with(':') {
            continue;
        }
        let lower = bare.to_lowercase();
        let preamble =
            lower.contains("here are") || lower.contains("here is") || lower.contains("here's");
        if i == 0 && (preamble || OPENERS.iter().any(|o| lower.starts_with(o))) {
            continue;
        }
        kept.extend(sentences(line));
    }
    if let Some(long) = kept.iter().find(|l| l.chars().count() > MAX_PLAIN_LINE_CHARS) {
        return Err(format!(
            "no list items, and the reply is prose (a sentence of {} characters; unmarked sentences count as aspects only up to {MAX_PLAIN_LINE_CHARS})",
            long.chars().count()
        ));
    }
    let out: Vec<String> = kept
        .into_iter()
        .map(clean)
        .filter(|c| usable(c) && has_two_words(c) && !names_only_a_post(c))
        .collect();
    if out.is_empty() {
        return Err("no usable list item in the reply (single words and post labels such as `Post 1:` are not aspects)".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(raw: &str) -> Vec<String> {
        parse_plan(raw).unwrap_or_else(|e| panic!("{raw:?} should parse: {e}"))
    }

    #[test]
    fn realistic_replies() {
        let table: &[(&str, &[&str])] = &[
            // Plain dash bullets, as the prompt asks.
            ("- Budget-friendly options\n- Vegetarian recipes\n- Quick to cook", &["Budget-friendly options", "Vegetarian recipes", "Quick to cook"]),
            // Numbered with both separators, a preamble and a closing remark.
            (
                "Here are the aspects this user expects:\n\n1. Practical steps\n2) Mentions safety\n3. Friendly tone\n\nThese reflect the user's posts.",
                &["Practical steps", "Mentions safety", "Friendly tone"],
            ),
            // Big-model style: bold titles with explanations, a heading, star bullets.
            (
                "### Aspects\n* **Budget**: prefers cheap gear\n* **Experience level:** beginner\n* *Outdoor focus*",
                &["Budget: prefers cheap gear", "Experience level: beginner", "Outdoor focus"],
            ),
            // Unicode bullets without a space, a wholly bold numbered line, a trailing colon.
            ("• Concise answer\n•Cites sources\n**4. Historical context**\n- Examples:", &["Concise answer", "Cites sources", "Historical context", "Examples"]),
            // Duplicates differing only in case and spacing; the first spelling stays.
            ("- Budget focus\n- budget  FOCUS\n- Time saving\n- Budget focus", &["Budget focus", "Time saving"]),
            // Nested items count; a continuation line under an item is ignored.
            ("1. Fitness goals\n   - Strength training\n   The user lifts weights.\n2. Diet", &["Fitness goals", "Strength training", "Diet"]),
            // A reasoning block is dropped, the list after it is read.
            ("<think>\n- not this\n</think>\n- Detailed gear list\n- Mentions weather", &["Detailed gear list", "Mentions weather"]),
            // `3.5 stars` and a year are not list items; the real item is.
            ("3.5 stars is fine\n2024 was busy\n(1) Honest opinion", &["Honest opinion"]),
            // No list markers: short plain lines are an unmarked list; the label and the
            // preamble first line are dropped.
            ("Sure, here is what they expect\nAspects:\nStep-by-step instructions\nAffordable tools", &["Step-by-step instructions", "Affordable tools"]),
            // Items are never cut, however many or long.
            (
                "- a1\n- a2\n- a3\n- a4\n- a5\n- a6\n- a7\n- a8",
                &["a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8"],
            ),
        ];
        for (raw, want) in table {
            assert_eq!(
                ok(raw),
                want.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                "reply {raw:?}"
            );
        }
        // Only the unmarked reply is reported as such.
        for (raw, _) in table {
            let unmarked = raw.starts_with("Sure,");
            assert_eq!(parse_plan_form(raw).unwrap().1, !unmarked, "reply {raw:?}");
        }
    }

    #[test]
    fn unusable_replies_are_errors_with_reasons() {
        let prose = "The user seems to enjoy hiking in the mountains and has asked several times about lightweight gear, so an answer should probably focus on weight, price and durability, and also mention where to buy the equipment locally.";
        assert!(prose.chars().count() > MAX_PLAIN_LINE_CHARS);
        let table: &[(&str, &str)] = &[
            ("", "empty reply"),
            ("  \n\t\n", "empty reply"),
            (prose, "prose"),
            ("Here are the aspects:\n", "no usable list item"),
            ("- \n- ***\n---\n- :", "no usable list item"),
            ("<think>\nThe user wants", "unclosed <think>"),
            ("<think>only thinking</think>\n", "reasoning block"),
        ];
        for (raw, reason) in table {
            let err = parse_plan(raw).expect_err(raw);
            assert!(err.contains(reason), "reply {raw:?}: error {err:?} should mention {reason:?}");
        }
    }

    #[test]
    fn a_long_unmarked_line_fails_but_a_long_list_item_is_kept() {
        let long = "x".repeat(MAX_PLAIN_LINE_CHARS + 1);
        assert!(parse_plan(&format!("Short line\n{long}")).unwrap_err().contains("prose"));
        assert_eq!(ok(&format!("- {long}")), vec![long.clone()]);
        // Short prose is read sentence by sentence.
        assert_eq!(
            ok("The user prefers a friendly tone. They like jokes! Do they want examples? Yes."),
            vec!["The user prefers a friendly tone.", "They like jokes!", "Do they want examples?"]
        );
        assert_eq!(
            ok("Version 2.5 is fine.  Keep it short"),
            vec!["Version 2.5 is fine.", "Keep it short"]
        );
        // Exactly at the limit an unmarked line is still an aspect.
        let edge = format!("y {}", "y".repeat(MAX_PLAIN_LINE_CHARS - 2));
        assert_eq!(edge.chars().count(), MAX_PLAIN_LINE_CHARS);
        assert_eq!(ok(&edge), vec![edge.clone()]);
    }

    #[test]
    fn post_headings_and_single_word_fragments_are_not_aspects() {
        // A small model echoing the prompt's post labels as headings, unmarked.
        assert_eq!(
            ok("**Post 1**\nLikes long hikes\nPost 2:\nPrefers cheap gear\n[Post 3 · category: Travel]\nPost #4"),
            vec!["Likes long hikes", "Prefers cheap gear"]
        );
        // The same labels as list items are dropped; real items stay, one-word items included.
        assert_eq!(
            ok("1. **Post 1**\n2. Post 2:\n- (Post 3)\n- Budget\n- Post-workout meals"),
            vec!["Budget", "Post-workout meals"]
        );
        // A one-word reply (cut after its first token) holds no aspect.
        for raw in ["The", "The.", "**Post 1**", "Post 1:\nThe"] {
            let err = parse_plan(raw).expect_err(raw);
            assert!(
                err.contains("no usable list item") && err.contains("single words"),
                "{raw:?}: {err}"
            );
        }
        // Not post labels: text after the number, or words starting with "post".
        assert_eq!(
            ok("- Post 1 shows they like maps\n- Postcards from trips"),
            vec!["Post 1 shows they like maps", "Postcards from trips"]
        );
    }
}
