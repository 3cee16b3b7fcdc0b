//! The leakage guard: proves on every rendered input that the hidden scoring standard
//! (narrative, rubric aspects) reaches a backend only under the oracle condition
//! (PROTOCOL.md §1–2).
//!
//! Rule: outside `oracle`, a hidden text leaks when it occurs in the rendered input but in
//! none of the texts the condition legitimately shows (question, answers, profile posts, and
//! under `planner` the planned aspects, which are themselves built only from question and
//! profile: the planner's prompt passes this guard as a `none` input).
//! A short rubric title such as "Budget" that an answer happens to contain is therefore not
//! a leak; the narrative pasted into a prompt is.

use std::cell::RefCell;
use std::collections::HashMap;

use aho_corasick::{AhoCorasick, AhoCorasickKind};
use prbench_data::Example;

use crate::condition::Condition;
use crate::error::EvalError;

/// Hidden texts shorter than this (in characters, after trimming) are not checked: they are
/// too generic to identify the scoring standard.
pub const MIN_HIDDEN_CHARS: usize = 4;

/// Automata per example, per thread: an example's hidden texts are searched for in several
/// inputs (both orders, both answers, every control baseline), and building the automaton
/// cost as much as the search. Entries are keyed by example id and checked against the
/// needles themselves, so a different example under a reused id just rebuilds.
struct AutomatonMemo {
    entries: HashMap<String, (Vec<String>, AhoCorasick)>,
}

/// Entries per thread before the memo is cleared. Calls for one example come together (both
/// orders, both answers), so a small memo gets the hits; a memo of every example held
/// ~50 KB of automaton per example per thread (+270 MB peak RSS at full scale).
const MEMO_LIMIT: usize = 256;

impl AutomatonMemo {
    fn get(&mut self, id: &str, needles: &[&str]) -> &AhoCorasick {
        let fresh = match self.entries.get(id) {
            Some((stored, _)) => {
                stored.len() != needles.len() || stored.iter().zip(needles).any(|(a, b)| a != b)
            }
            None => true,
        };
        if fresh {
            if self.entries.len() >= MEMO_LIMIT {
                self.entries.clear();
            }
            // An NFA: built in microseconds for a few dozen patterns (a DFA's build dominated).
            let automaton = AhoCorasick::builder()
                .kind(Some(AhoCorasickKind::ContiguousNFA))
                .build(needles)
                .expect("hidden texts are valid patterns");
            self.entries.insert(
                id.to_string(),
                (needles.iter().map(|s| s.to_string()).collect(), automaton),
            );
        }
        &self.entries[id].1
    }
}

thread_local! {
    static AUTOMATA: RefCell<AutomatonMemo> = RefCell::new(AutomatonMemo { entries: HashMap::new() });
}

/// Checks one rendered input (all text a backend receives for one call).
///
/// # Errors
/// [`EvalError::Leakage`] naming the example, condition and hidden field that leaked.
pub fn check(example: &Example, condition: Condition, rendered: &str) -> Result<(), EvalError> {
    check_with(example, condition, rendered, &[])
}

/// [`check`] with extra texts the condition legitimately shows (`allowed`, e.g. the planner's
/// aspects from [`Condition::allowed_texts`]).
///
/// # Errors
/// As [`check`].
pub fn check_with(
    example: &Example,
    condition: Condition,
    rendered: &str,
    allowed: &[&str],
) -> Result<(), EvalError> {
    if condition.is_oracle() {
        return Ok(());
    }
    let visible: Vec<&str> =
        [example.question.as_str(), example.chosen.as_str(), example.rejected.as_str()]
            .into_iter()
            .chain(example.profile.iter().map(|p| p.text.as_str()))
            .chain(allowed.iter().copied())
            .collect();
    let mut hidden: Vec<(&str, &str)> = vec![("narrative", example.narrative.as_str())];
    for a in &example.rubric_aspects {
        hidden.push(("rubric aspect", a.aspect.as_str()));
        hidden.push(("rubric evidence", a.evidence.as_str()));
        hidden.push(("rubric reason", a.reason.as_str()));
    }
    hidden.retain(|(_, text)| text.trim().chars().count() >= MIN_HIDDEN_CHARS);
    if hidden.is_empty() {
        return Ok(());
    }
    // One pass over the rendered input finds every hidden text it contains (overlapping
    // matches, so a hidden text inside another is found too); then, in field order, the first
    // one no visible text accounts for is the leak.
    let needles: Vec<&str> = hidden.iter().map(|(_, t)| t.trim()).collect();
    let present = AUTOMATA.with(|cell| {
        let mut memo = cell.borrow_mut();
        let automaton = memo.get(&example.id, &needles);
        let mut present = vec![false; needles.len()];
        for m in automaton.find_overlapping_iter(rendered) {
            present[m.pattern().as_usize()] = true;
        }
        present
    });
    for (((field, _), text), _) in hidden.iter().zip(&needles).zip(&present).filter(|(_, &p)| p) {
        if visible.iter().any(|v| v.contains(text)) {
            continue;
        }
        return Err(EvalError::Leakage {
            example_id: example.id.clone(),
            condition: condition.to_string(),
            field: (*field).into(),
            snippet: text.chars().take(60).collect(),
        });
    }
    Ok(())
}

/// Shortest run of characters [`check_static`] looks for.
pub const STATIC_RUN_CHARS: usize = 32;

/// Checks text that enters every input unchanged (a judge recipe's system message, the literal
/// text of its template) against the hidden texts of every example, once, before any model
/// loads. The per-input guard ([`check`]) only finds a hidden text pasted whole; this finds any
/// verbatim run of [`STATIC_RUN_CHARS`] or more characters of a narrative or a rubric aspect,
/// evidence or reason, unless that run is also in the example's visible texts (question,
/// answers, profile). Under `oracle` nothing is checked.
///
/// Every window of [`STATIC_RUN_CHARS`] characters of `text` (at every character offset) is
/// searched for in the hidden texts, so a common run of that length or longer cannot be missed.
///
/// # Errors
/// [`EvalError::Recipe`] naming `recipe`, `file`, the example and the hidden field, with the
/// start of the run.
pub fn check_static(
    recipe: &str,
    file: &str,
    text: &str,
    examples: &[Example],
    condition: Condition,
) -> Result<(), EvalError> {
    if condition.is_oracle() {
        return Ok(());
    }
    let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).chain([text.len()]).collect();
    let mut windows: Vec<&str> = (0..bounds.len().saturating_sub(STATIC_RUN_CHARS))
        .map(|i| &text[bounds[i]..bounds[i + STATIC_RUN_CHARS]])
        .collect();
    windows.sort_unstable();
    windows.dedup();
    if windows.is_empty() {
        return Ok(());
    }
    let automaton = AhoCorasick::new(&windows).expect("windows are valid patterns");
    for ex in examples {
        let mut hidden: Vec<(&str, &str)> = vec![("narrative", ex.narrative.as_str())];
        for a in &ex.rubric_aspects {
            hidden.extend([
                ("rubric aspect", a.aspect.as_str()),
                ("rubric evidence", a.evidence.as_str()),
                ("rubric reason", a.reason.as_str()),
            ]);
        }
        for (field, h) in hidden {
            for m in automaton.find_overlapping_iter(h) {
                let run = &h[m.range()];
                let visible = [ex.question.as_str(), ex.chosen.as_str(), ex.rejected.as_str()]
                    .into_iter()
                    .chain(ex.profile.iter().map(|p| p.text.as_str()))
                    .any(|v| v.contains(run));
                if !visible {
                    return Err(EvalError::Recipe {
                        recipe: recipe.into(),
                        reason: format!(
                            "{file} holds text of example `{}`'s hidden {field} (`{run}…`) under condition `{condition}`: the scoring standard may reach a judge only under `oracle`; remove it from {file}",
                            ex.id
                        ),
                    });
                }
            }
        }
    }
    Ok(())
}
