//! The Best-of-N prompts: our own templates in `prompts/` (compiled in, hashed into the BoN
//! manifests) for the policy, the rubric judge and the pointwise rating of a judge model.

use minijinja::context;
use prbench_data::{ProfilePost, RubricAspect};
use prbench_eval::prompt::{hash_texts, ranked_posts, system_and_user, Templates};
use prbench_eval::EvalError;
use prbench_models::ChatPrompt;

/// System message of the BoN policy (`prompts/bon-policy-system.txt`).
pub const POLICY_SYSTEM: &str = include_str!("../../../../prompts/bon-policy-system.txt");
/// User turn of the BoN policy (`prompts/bon-policy-user.jinja`); variables `question` and
/// `posts` (a list of `{rank, category, text}`, rank 1 = most relevant; may be empty).
pub const POLICY_USER: &str = include_str!("../../../../prompts/bon-policy-user.jinja");
/// System message of the rubric judge (`prompts/rubric-system.txt`).
pub const RUBRIC_SYSTEM: &str = include_str!("../../../../prompts/rubric-system.txt");
/// User turn of the rubric judge reading every aspect at once (`prompts/rubric-user.jinja`);
/// variables `question`, `aspects` (list of `{aspect, reason}`), `answer`.
pub const RUBRIC_USER: &str = include_str!("../../../../prompts/rubric-user.jinja");
/// User turn of the rubric judge scoring one aspect by next-token probabilities
/// (`prompts/rubric-aspect-user.jinja`); variables `question`, `aspect`, `answer`.
pub const RUBRIC_ASPECT_USER: &str = include_str!("../../../../prompts/rubric-aspect-user.jinja");
/// System message of the pointwise rating a judge model gives (`prompts/rating-system.txt`).
pub const RATING_SYSTEM: &str = include_str!("../../../../prompts/rating-system.txt");
/// User turn of the pointwise rating (`prompts/rating-user.jinja`); variables `question`,
/// `context` (may be none), `answer`.
pub const RATING_USER: &str = include_str!("../../../../prompts/rating-user.jinja");

/// The assistant prefix after which the rubric judge's next token is read, in logprob mode.
pub const RUBRIC_ASPECT_PREFIX: &str = "Score: ";
/// The assistant prefix after which a rating's next token is read, in logprob mode.
pub const RATING_PREFIX: &str = "Rating: ";

/// The policy templates' hash (sha256 hex), recorded in the samples manifest.
pub fn policy_hash() -> String {
    hash_texts(&[POLICY_SYSTEM, POLICY_USER])
}

/// The rubric judge templates' hash (sha256 hex), recorded with every judgement file.
pub fn rubric_hash() -> String {
    hash_texts(&[RUBRIC_SYSTEM, RUBRIC_USER, RUBRIC_ASPECT_USER, RUBRIC_ASPECT_PREFIX])
}

/// The rating templates' hash (sha256 hex), recorded with the scores of a judge model.
pub fn rating_hash() -> String {
    hash_texts(&[RATING_SYSTEM, RATING_USER, RATING_PREFIX])
}

/// The compiled BoN templates.
pub struct BonPrompts {
    templates: Templates,
}

impl Default for BonPrompts {
    fn default() -> Self {
        Self::new()
    }
}

impl BonPrompts {
    /// Compiles the built-in templates.
    ///
    /// # Panics
    /// Never for the shipped templates (a unit test compiles and renders them).
    pub fn new() -> Self {
        Self {
            templates: Templates::compile(&[
                ("policy-user", POLICY_USER),
                ("rubric-user", RUBRIC_USER),
                ("rubric-aspect-user", RUBRIC_ASPECT_USER),
                ("rating-user", RATING_USER),
            ]),
        }
    }

    fn render(&self, name: &str, ctx: minijinja::Value) -> Result<String, EvalError> {
        self.templates.render(name, ctx)
    }

    /// The policy conversation: system + user turn (the shown posts, best first, then the
    /// question), empty assistant prefix.
    ///
    /// # Errors
    /// [`EvalError::Template`] if rendering fails.
    pub fn policy(&self, question: &str, posts: &[&ProfilePost]) -> Result<ChatPrompt, EvalError> {
        let posts = ranked_posts(posts);
        let user =
            self.render("policy-user", context! { question => question.trim(), posts => posts })?;
        Ok(system_and_user(POLICY_SYSTEM, user, ""))
    }

    /// The rubric judge conversation scoring every aspect of `aspects` at once (generate mode).
    ///
    /// # Errors
    /// [`EvalError::Template`] if rendering fails.
    pub fn rubric(
        &self,
        question: &str,
        aspects: &[RubricAspect],
        answer: &str,
    ) -> Result<ChatPrompt, EvalError> {
        let aspects: Vec<minijinja::Value> = aspects
            .iter()
            .map(|a| context! { aspect => a.aspect.trim(), reason => a.reason.trim() })
            .collect();
        let user = self.render(
            "rubric-user",
            context! { question => question.trim(), aspects => aspects, answer => answer.trim() },
        )?;
        Ok(system_and_user(RUBRIC_SYSTEM, user, ""))
    }

    /// The rubric judge conversation for one aspect (logprob mode), ending in
    /// [`RUBRIC_ASPECT_PREFIX`] inside the assistant turn.
    ///
    /// # Errors
    /// [`EvalError::Template`] if rendering fails.
    pub fn rubric_aspect(
        &self,
        question: &str,
        aspect: &RubricAspect,
        answer: &str,
    ) -> Result<ChatPrompt, EvalError> {
        let aspect = context! { aspect => aspect.aspect.trim(), reason => aspect.reason.trim() };
        let user = self.render(
            "rubric-aspect-user",
            context! { question => question.trim(), aspect => aspect, answer => answer.trim() },
        )?;
        Ok(system_and_user(RUBRIC_SYSTEM, user, RUBRIC_ASPECT_PREFIX))
    }

    /// The rating conversation for one answer; `logprob` ends it in [`RATING_PREFIX`] inside
    /// the assistant turn (the next token is the rating), otherwise the assistant turn is empty.
    ///
    /// # Errors
    /// [`EvalError::Template`] if rendering fails.
    pub fn rating(
        &self,
        question: &str,
        context: Option<&str>,
        answer: &str,
        logprob: bool,
    ) -> Result<ChatPrompt, EvalError> {
        let user = self.render(
            "rating-user",
            context! { question => question.trim(), context => context, answer => answer.trim() },
        )?;
        Ok(system_and_user(RATING_SYSTEM, user, if logprob { RATING_PREFIX } else { "" }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aspect(a: &str, r: &str) -> RubricAspect {
        RubricAspect { aspect: a.into(), evidence: "e".into(), reason: r.into() }
    }

    #[test]
    fn policy_shows_posts_best_first_then_the_question() {
        let p = BonPrompts::new();
        let posts = [
            ProfilePost { id: "7".into(), category: "music".into(), text: "I play jazz.".into() },
            ProfilePost { id: "2".into(), category: "".into(), text: "Cats!".into() },
        ];
        let refs: Vec<&ProfilePost> = posts.iter().collect();
        let user = &p.policy("  What guitar?  ", &refs).unwrap().messages[1].content;
        assert_eq!(
            user,
            "Some posts I wrote before, most relevant to my question first:\n\n[Post 1 | category: music]\nI play jazz.\n\n[Post 2]\nCats!\n\nMy question:\nWhat guitar?"
        );
        assert_eq!(p.policy("Q?", &[]).unwrap().messages[1].content, "Q?");
    }

    #[test]
    fn rubric_numbers_aspects_and_asks_for_that_many_lines() {
        let p = BonPrompts::new();
        let prompt = p
            .rubric("Q?", &[aspect("Friendly", "likes warmth"), aspect("Short", "")], "Hi.")
            .unwrap();
        let user = &prompt.messages[1].content;
        assert!(user.contains("\n1. Friendly (likes warmth)\n2. Short\n"), "{user}");
        assert!(user.contains("Reply with exactly 2 lines"), "{user}");
        let one = p.rubric("Q?", &[aspect("Friendly", "")], "Hi.").unwrap();
        assert!(one.messages[1].content.contains("Reply with exactly 1 line,"));
        let a = p.rubric_aspect("Q?", &aspect("Friendly", ""), "Hi.").unwrap();
        assert_eq!(a.assistant_prefix, RUBRIC_ASPECT_PREFIX);
    }

    #[test]
    fn rating_shows_context_only_when_given() {
        let p = BonPrompts::new();
        let with = p.rating("Q?", Some("likes jazz"), "A.", true).unwrap();
        assert!(with.messages[1].content.contains("### What we know about this user\nlikes jazz"));
        assert_eq!(with.assistant_prefix, RATING_PREFIX);
        let without = p.rating("Q?", None, "A.", false).unwrap();
        assert!(!without.messages[1].content.contains("What we know"));
        assert_eq!(without.assistant_prefix, "");
    }

    #[test]
    fn template_hashes_differ_per_role() {
        assert_ne!(policy_hash(), rubric_hash());
        assert_ne!(rubric_hash(), rating_hash());
        assert_eq!(policy_hash().len(), 64);
    }
}
