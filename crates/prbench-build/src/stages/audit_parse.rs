//! The strict reader of an audit reply (`prompts/build-audit-user.jinja` asks for nine lines).
//!
//! Accepted, per line (case-insensitive; `*` emphasis, a leading bullet `-`/`*`/`#` and
//! surrounding spaces are ignored; `rubric-fit` / `rubric_fit` read as `rubric fit`):
//! - `Answer N DIMENSION: S - reason`, N in {1, 2}, DIMENSION one of `factuality`,
//!   `relevance`, `helpfulness`, `rubric fit` ([`Dimension::label`]), S an integer 1–5,
//!   optionally written `S/5` or `S out of 5`; the reason follows `-`, `–`, `—`, `:` or `.`
//!   and may be empty (counted);
//! - `Better fit: N` or `Better fit: Answer N`, N in {1, 2}, optionally followed by a reason.
//!
//! Any other line is ignored (a preamble such as "Here are my ratings:"). A reply is read only
//! when all eight ratings and the choice appear exactly once; otherwise it is unparsed, with
//! the first problem found. An unparsed reply is never given a default score.

use prbench_data::dims::Dimension;
use serde::{Deserialize, Serialize};

/// One rating: a score 1–5 and the judge's reason (possibly empty).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rating {
    /// 1 (very poor) to 5 (excellent).
    pub score: u8,
    /// The short reason given after the score; empty when the judge gave none.
    pub reason: String,
}

/// A fully read audit reply, in the judge's labels (answer 1 and answer 2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditReply {
    /// `ratings[answer - 1][dimension index]` ([`Dimension::index`]).
    pub ratings: [[Rating; 4]; 2],
    /// The answer (1 or 2) the judge says fits the user better.
    pub better: u8,
}

impl AuditReply {
    /// Ratings with an empty reason (the prompt asks for one per rating).
    pub fn missing_reasons(&self) -> usize {
        self.ratings.iter().flatten().filter(|r| r.reason.is_empty()).count()
    }
}

/// Why a reply could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuditParseError {
    /// Some of the nine lines are absent.
    #[error("missing {}", .0.join(", "))]
    Missing(Vec<String>),
    /// A line appears twice.
    #[error("`{0}` appears more than once")]
    Duplicate(String),
    /// A rating is not an integer from 1 to 5.
    #[error("`{label}` has {found:?}, not a score from 1 to 5")]
    BadScore {
        /// The rating's label (`answer 1 factuality`).
        label: String,
        /// What followed the colon.
        found: String,
    },
    /// The choice is not 1 or 2.
    #[error("`better fit` has {0:?}, not 1 or 2")]
    BadChoice(String),
}

/// Lowercases, drops `*`, a leading bullet and repeated spaces, and reads `-`/`_` inside
/// `rubric fit` as a space.
fn normalize(line: &str) -> String {
    let no_stars: String = line.chars().filter(|c| *c != '*').collect();
    let trimmed = no_stars.trim().trim_start_matches(['-', '#', '•']).trim();
    let lower = trimmed
        .to_lowercase()
        .replace("rubric-fit", "rubric fit")
        .replace("rubric_fit", "rubric fit");
    lower.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Splits `S - reason` into the score text and the reason.
fn split_value(value: &str) -> (&str, &str) {
    let value = value.trim();
    let end = value
        .find(|c: char| c.is_whitespace() || matches!(c, '-' | '–' | '—' | ',' | ';'))
        .unwrap_or(value.len());
    let (mut score, mut rest) = value.split_at(end);
    // `S/5` and `S out of 5` keep the denominator with the score.
    let r = rest.trim_start();
    if let Some(after) = r.strip_prefix("out of 5") {
        score = &value[..value.len() - r.len() + "out of 5".len()];
        rest = after;
    }
    let reason = rest.trim_start().trim_start_matches(['-', '–', '—', ':', '.', ',', ';']).trim();
    (score.trim(), reason)
}

/// `4 or 5`, `1 or 2`: an undecided value (or an echo of the template), never read as its
/// first number.
fn offers_alternative(after: &str) -> bool {
    after == "or" || after.starts_with("or ")
}

fn read_score(text: &str) -> Option<u8> {
    let core =
        text.strip_suffix("/5").or_else(|| text.strip_suffix(" out of 5")).unwrap_or(text).trim();
    let core = core.trim_end_matches('.');
    match core {
        "1" | "2" | "3" | "4" | "5" => core.parse().ok(),
        _ => None,
    }
}

/// Reads one audit reply; see the [module docs](self) for what is accepted.
///
/// # Errors
/// [`AuditParseError`] with the first problem: a bad score or choice, a repeated line, or the
/// list of missing lines.
pub fn parse_audit(reply: &str) -> Result<AuditReply, AuditParseError> {
    let mut ratings: [[Option<Rating>; 4]; 2] = Default::default();
    let mut better: Option<u8> = None;
    for raw in reply.lines() {
        let line = normalize(raw);
        if let Some(rest) = line.strip_prefix("better fit:") {
            if better.is_some() {
                return Err(AuditParseError::Duplicate("better fit".into()));
            }
            let rest = rest.trim();
            let rest = rest.strip_prefix("answer").map(str::trim_start).unwrap_or(rest);
            let (choice, after) = split_value(rest);
            better = Some(match choice.trim_end_matches('.') {
                "1" if !offers_alternative(after) => 1,
                "2" if !offers_alternative(after) => 2,
                _ => return Err(AuditParseError::BadChoice(rest.to_string())),
            });
            continue;
        }
        let Some(rest) = line.strip_prefix("answer ") else { continue };
        let Some((label, value)) = rest.split_once(':') else { continue };
        let Some((number, dim)) = label.split_once(' ') else { continue };
        let answer = match number {
            "1" => 0,
            "2" => 1,
            _ => continue,
        };
        let Some(d) = Dimension::from_label(dim.trim()) else { continue };
        let full = format!("answer {} {}", answer + 1, d.label());
        let (score_text, after) = split_value(value);
        let score =
            read_score(score_text).filter(|_| !offers_alternative(after)).ok_or_else(|| {
                AuditParseError::BadScore { label: full.clone(), found: value.trim().to_string() }
            })?;
        // The reason as written (case kept): the text after the score in the raw line.
        let reason = raw_reason(raw);
        let slot = &mut ratings[answer][d.index()];
        if slot.is_some() {
            return Err(AuditParseError::Duplicate(full));
        }
        *slot = Some(Rating { score, reason });
    }
    let mut missing = Vec::new();
    for (a, row) in ratings.iter().enumerate() {
        for (d, r) in row.iter().enumerate() {
            if r.is_none() {
                missing.push(format!("answer {} {}", a + 1, Dimension::ALL[d].label()));
            }
        }
    }
    if better.is_none() {
        missing.push("better fit".into());
    }
    if !missing.is_empty() {
        return Err(AuditParseError::Missing(missing));
    }
    let take = |row: &mut [Option<Rating>; 4]| -> [Rating; 4] {
        std::array::from_fn(|i| row[i].take().expect("checked"))
    };
    let [mut r1, mut r2] = ratings;
    Ok(AuditReply { ratings: [take(&mut r1), take(&mut r2)], better: better.expect("checked") })
}

/// The reason of a rating line in its original case: what follows the score after the colon.
fn raw_reason(raw: &str) -> String {
    let no_stars: String = raw.chars().filter(|c| *c != '*').collect();
    let value = no_stars.split_once(':').map(|(_, v)| v).unwrap_or("");
    split_value(value).1.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLEAN: &str = "Answer 1 factuality: 5 - All correct.\nAnswer 1 relevance: 4 - On topic.\nAnswer 1 helpfulness: 5 - Useful.\n\
Answer 1 rubric fit: 5 - Meets every point.\nAnswer 2 factuality: 4 - Mostly right.\nAnswer 2 relevance: 4 - On topic.\n\
Answer 2 helpfulness: 4 - Fine.\nAnswer 2 rubric fit: 1 - Ignores the user.\nBetter fit: 1";

    fn scores(r: &AuditReply) -> Vec<u8> {
        r.ratings.iter().flatten().map(|x| x.score).collect()
    }

    #[test]
    fn reads_the_requested_format() {
        let r = parse_audit(CLEAN).unwrap();
        assert_eq!(scores(&r), [5, 4, 5, 5, 4, 4, 4, 1]);
        assert_eq!(r.better, 1);
        assert_eq!(r.ratings[0][0].reason, "All correct.");
        assert_eq!(r.ratings[1][3].reason, "Ignores the user.");
        assert_eq!(r.missing_reasons(), 0);
    }

    #[test]
    fn tolerates_markdown_a_preamble_and_other_score_spellings() {
        let reply = "Here are my ratings:\n\n- **Answer 1 Factuality:** 5/5 – correct\n* Answer 1 relevance: 4 out of 5. ok\n\
**Answer 1 helpfulness**: 3\nAnswer 1 Rubric-Fit: 2 — misses the budget\nanswer 2 factuality:4\nANSWER 2 RELEVANCE: 4 - fine\n\
Answer 2 helpfulness: 4, fine\nAnswer 2 rubric_fit: 5 - all points\n**Better fit:** Answer 2 - it names the budget.";
        let r = parse_audit(reply).unwrap();
        assert_eq!(scores(&r), [5, 4, 3, 2, 4, 4, 4, 5]);
        assert_eq!(r.better, 2);
        assert_eq!(r.ratings[0][3].reason, "misses the budget");
        assert_eq!(r.ratings[0][1].reason, "ok");
        assert_eq!(
            r.missing_reasons(),
            2,
            "helpfulness of answer 1 and factuality of answer 2 have none"
        );
    }

    #[test]
    fn refuses_out_of_range_fractional_and_placeholder_scores() {
        for bad in ["6", "0", "4.5", "<1-5>", "N/A", "5/10", "four", "-3", "45"] {
            let reply = CLEAN.replace(
                "Answer 2 rubric fit: 1 - Ignores the user.",
                &format!("Answer 2 rubric fit: {bad} - x"),
            );
            let err = parse_audit(&reply).unwrap_err();
            assert!(
                matches!(&err, AuditParseError::BadScore { label, .. } if label == "answer 2 rubric fit"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn an_echoed_template_line_is_unparsed_not_skipped() {
        let reply = format!("Answer 1 factuality: <1-5> - <reason>\n{CLEAN}");
        assert!(matches!(parse_audit(&reply), Err(AuditParseError::BadScore { .. })));
    }

    #[test]
    fn refuses_missing_duplicate_and_undecided() {
        let missing =
            CLEAN.replace("Answer 1 relevance: 4 - On topic.\n", "").replace("\nBetter fit: 1", "");
        assert_eq!(
            parse_audit(&missing).unwrap_err(),
            AuditParseError::Missing(vec!["answer 1 relevance".into(), "better fit".into()])
        );
        let dup = format!("{CLEAN}\nAnswer 2 helpfulness: 4 - again");
        assert_eq!(
            parse_audit(&dup).unwrap_err(),
            AuditParseError::Duplicate("answer 2 helpfulness".into())
        );
        let twice = format!("{CLEAN}\nBetter fit: 1");
        assert_eq!(
            parse_audit(&twice).unwrap_err(),
            AuditParseError::Duplicate("better fit".into())
        );
        for undecided in ["Both", "tie", "3", "1 or 2", ""] {
            let reply = CLEAN.replace("Better fit: 1", &format!("Better fit: {undecided}"));
            assert!(
                matches!(parse_audit(&reply), Err(AuditParseError::BadChoice(_))),
                "{undecided:?}"
            );
        }
        assert!(matches!(parse_audit(""), Err(AuditParseError::Missing(m)) if m.len() == 9));
        assert!(matches!(
            parse_audit("I think answer 1 is better."),
            Err(AuditParseError::Missing(_))
        ));
    }
}
