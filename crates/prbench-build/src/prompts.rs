//! The build prompts: our own templates in `prompts/build-*` (compiled in, hashed into
//! `build.json` and into every cache key).
//!
//! The generator sees the question, the top-k ranked posts and the rubric aspects (title and
//! reason): as things to meet for `chosen`, as things to avoid for `rejected`, under the same
//! length and style rules. The narrative and the aspects' evidence never reach it. The audit
//! judge sees the question, the aspects and the two answers labelled 1 and 2.

use minijinja::context;
use prbench_data::{ProfilePost, RubricAspect};
use prbench_eval::prompt::{hash_texts, ranked_posts, system_and_user, Templates};
use prbench_eval::EvalError;
use prbench_models::ChatPrompt;

use crate::stages::Side;

/// System message of both answer generations (`prompts/build-answer-system.txt`).
pub const ANSWER_SYSTEM: &str = include_str!("../../../prompts/build-answer-system.txt");
/// User turn of the `chosen` generation (`prompts/build-chosen-user.jinja`); variables
/// `question`, `posts` (list of `{rank, category, text}`, best first; may be empty),
/// `aspects` (list of `{aspect, reason}`), `max_words`.
pub const CHOSEN_USER: &str = include_str!("../../../prompts/build-chosen-user.jinja");
/// User turn of the `rejected` generation (`prompts/build-rejected-user.jinja`); the same
/// variables as [`CHOSEN_USER`], the aspects presented as points to avoid.
pub const REJECTED_USER: &str = include_str!("../../../prompts/build-rejected-user.jinja");
/// System message of the audit judge (`prompts/build-audit-system.txt`).
pub const AUDIT_SYSTEM: &str = include_str!("../../../prompts/build-audit-system.txt");
/// User turn of the audit judge (`prompts/build-audit-user.jinja`); variables `question`,
/// `aspects`, `answer_1`, `answer_2`.
pub const AUDIT_USER: &str = include_str!("../../../prompts/build-audit-user.jinja");

/// The template hash (sha256 hex, [`hash_texts`]) of one stage's prompt files.
pub fn answer_hash(side: Side) -> String {
    match side {
        Side::Chosen => hash_texts(&[ANSWER_SYSTEM, CHOSEN_USER]),
        Side::Rejected => hash_texts(&[ANSWER_SYSTEM, REJECTED_USER]),
    }
}

/// The audit templates' hash (sha256 hex).
pub fn audit_hash() -> String {
    hash_texts(&[AUDIT_SYSTEM, AUDIT_USER])
}

/// The compiled build templates.
pub struct BuildPrompts {
    templates: Templates,
}

impl Default for BuildPrompts {
    fn default() -> Self {
        Self::new()
    }
}

fn aspect_values(aspects: &[RubricAspect]) -> Vec<minijinja::Value> {
    aspects
        .iter()
        .map(|a| context! { aspect => a.aspect.trim(), reason => a.reason.trim() })
        .collect()
}

impl BuildPrompts {
    /// Compiles the built-in templates.
    ///
    /// # Panics
    /// Never for the shipped templates (unit tests compile and render them).
    pub fn new() -> Self {
        Self {
            templates: Templates::compile(&[
                ("build-chosen-user", CHOSEN_USER),
                ("build-rejected-user", REJECTED_USER),
                ("build-audit-user", AUDIT_USER),
            ]),
        }
    }

    /// The conversation that writes one answer: system + user turn (posts best first, the
    /// question, the aspects to meet or avoid, the word limit), empty assistant prefix.
    ///
    /// # Errors
    /// [`EvalError::Template`] if rendering fails.
    pub fn answer(
        &self,
        side: Side,
        question: &str,
        posts: &[&ProfilePost],
        aspects: &[RubricAspect],
        max_words: usize,
    ) -> Result<ChatPrompt, EvalError> {
        let name = match side {
            Side::Chosen => "build-chosen-user",
            Side::Rejected => "build-rejected-user",
        };
        let user = self.templates.render(
            name,
            context! { question => question.trim(), posts => ranked_posts(posts), aspects => aspect_values(aspects), max_words => max_words },
        )?;
        Ok(system_and_user(ANSWER_SYSTEM, user, ""))
    }

    /// The audit conversation for one order: `answer_1` and `answer_2` as the judge sees them.
    ///
    /// # Errors
    /// [`EvalError::Template`] if rendering fails.
    pub fn audit(
        &self,
        question: &str,
        aspects: &[RubricAspect],
        answer_1: &str,
        answer_2: &str,
    ) -> Result<ChatPrompt, EvalError> {
        let user = self.templates.render(
            "build-audit-user",
            context! { question => question.trim(), aspects => aspect_values(aspects), answer_1 => answer_1.trim(), answer_2 => answer_2.trim() },
        )?;
        Ok(system_and_user(AUDIT_SYSTEM, user, ""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aspect(a: &str, r: &str) -> RubricAspect {
        RubricAspect { aspect: a.into(), evidence: "EVIDENCE".into(), reason: r.into() }
    }

    #[test]
    fn chosen_and_rejected_differ_only_in_how_the_aspects_are_presented() {
        let p = BuildPrompts::new();
        let posts = [ProfilePost {
            id: "7".into(),
            category: "music".into(),
            text: " I play jazz. ".into(),
        }];
        let refs: Vec<&ProfilePost> = posts.iter().collect();
        let aspects = [aspect("Names a budget guitar", "is a student"), aspect("Short", "")];
        let chosen = p.answer(Side::Chosen, " Which guitar? ", &refs, &aspects, 100).unwrap();
        let rejected = p.answer(Side::Rejected, " Which guitar? ", &refs, &aspects, 100).unwrap();
        assert_eq!(chosen.messages[0].content, ANSWER_SYSTEM.trim());
        assert_eq!(chosen.messages[0], rejected.messages[0]);
        assert_eq!(
            chosen.messages[1].content,
            "Posts this user wrote before, most relevant to the question first:\n\n[Post 1 | category: music]\nI play jazz.\n\n\
             The user's question:\nWhich guitar?\n\nWhat this user expects from an answer:\n1. Names a budget guitar (is a student)\n2. Short\n\n\
             Write an answer to the question that meets every expectation above. Keep it factually correct, on the question, and helpful. \
             Write in this user's own style, as their posts show it. Answer in one paragraph of plain prose of at most 100 words, with no lists and no headings."
        );
        assert_eq!(
            rejected.messages[1].content,
            "Posts this user wrote before, most relevant to the question first:\n\n[Post 1 | category: music]\nI play jazz.\n\n\
             The user's question:\nWhich guitar?\n\nPoints the answer must avoid:\n1. Names a budget guitar (is a student)\n2. Short\n\n\
             Write an answer to the question that does not address or cater to any of the points above: leave them out, and give a good \
             general answer instead. Keep it factually correct, on the question, and helpful. Write in this user's own style, as their \
             posts show it. Answer in one paragraph of plain prose of at most 100 words, with no lists and no headings."
        );
        for prompt in [&chosen, &rejected] {
            assert!(
                !prompt.all_text().contains("EVIDENCE"),
                "evidence never reaches the generator"
            );
        }
        let bare = p.answer(Side::Chosen, "Q?", &[], &aspects[..1], 50).unwrap();
        assert!(
            bare.messages[1].content.starts_with("The user's question:\nQ?\n"),
            "{}",
            bare.messages[1].content
        );
        assert!(!bare.messages[1].content.contains("style"), "no style sentence without posts");
    }

    #[test]
    fn audit_labels_the_answers_1_and_2_and_asks_for_nine_lines() {
        let p = BuildPrompts::new();
        let prompt = p.audit("Q?", &[aspect("Friendly", "")], " first ", "second").unwrap();
        let user = &prompt.messages[1].content;
        assert!(
            user.contains("\n1. Friendly\n\nAnswer 1:\nfirst\n\nAnswer 2:\nsecond\n\n"),
            "{user}"
        );
        assert!(
            user.ends_with("Answer 2 rubric fit: <1-5> - <reason>\nBetter fit: <1 or 2>"),
            "{user}"
        );
        assert!(!prompt.all_text().contains("EVIDENCE"));
    }

    #[test]
    fn hashes_differ_per_stage() {
        assert_ne!(answer_hash(Side::Chosen), answer_hash(Side::Rejected));
        assert_ne!(answer_hash(Side::Chosen), audit_hash());
        assert_eq!(audit_hash().len(), 64);
    }
}
