//! Prompt rendering: our own templates in `prompts/` (compiled in, hashed into manifests)
//! turn structured inputs into chat conversations.

use minijinja::{context, Environment};
use prbench_models::{ChatMessage, ChatPrompt, PairInput, RmInput, Role};
use sha2::{Digest, Sha256};

use std::sync::Arc;

use crate::error::EvalError;
use crate::recipe::JudgeRecipe;

/// System message of the pairwise judge (`prompts/judge-system.txt`).
pub const JUDGE_SYSTEM: &str = include_str!("../../../prompts/judge-system.txt");
/// User message of the pairwise judge (`prompts/judge-user.jinja`); variables `question`,
/// `context` (may be none), `response_a`, `response_b`.
pub const JUDGE_USER: &str = include_str!("../../../prompts/judge-user.jinja");
/// User turn of a pointwise reward model (`prompts/rm-user.jinja`); variables `question`,
/// `context`. The context comes first so left truncation cuts context, never the question.
pub const RM_USER: &str = include_str!("../../../prompts/rm-user.jinja");
/// System message of the planner (`prompts/planner-system.txt`).
pub const PLANNER_SYSTEM: &str = include_str!("../../../prompts/planner-system.txt");
/// User turn of the planner (`prompts/planner-user.jinja`); variables `question` and `posts`
/// (a list of `{rank, category, text}`, rank 1 = most relevant; may be empty).
pub const PLANNER_USER: &str = include_str!("../../../prompts/planner-user.jinja");

/// Every template text, in the fixed order [`Prompts::hash`] hashes them.
pub(crate) const TEMPLATE_TEXTS: &[&str] =
    &[JUDGE_SYSTEM, JUDGE_USER, RM_USER, PLANNER_SYSTEM, PLANNER_USER];

/// sha256 (hex) over `texts` in order, each prefixed by its byte length (u64 little-endian):
/// the template hash of a set of prompt files.
pub fn hash_texts(texts: &[&str]) -> String {
    let mut h = Sha256::new();
    for t in texts {
        h.update((t.len() as u64).to_le_bytes());
        h.update(t.as_bytes());
    }
    hex::encode(h.finalize())
}

/// A set of named minijinja templates compiled once; the eval prompts ([`Prompts`]) and the
/// Best-of-N prompts are each one such set.
pub struct Templates {
    env: Environment<'static>,
}

impl Templates {
    /// Compiles `(name, text)` pairs.
    ///
    /// # Panics
    /// If a template does not compile: the sets are built from the shipped `prompts/` files,
    /// which unit tests compile and render.
    pub fn compile(named: &[(&'static str, &'static str)]) -> Self {
        let mut env = Environment::new();
        for (name, text) in named {
            env.add_template(name, text).unwrap_or_else(|e| panic!("prompts/{name} compiles: {e}"));
        }
        Self { env }
    }

    /// Renders template `name` with `ctx`.
    ///
    /// # Errors
    /// [`EvalError::Template`] naming the template, if it is unknown or rendering fails.
    pub fn render(&self, name: &str, ctx: minijinja::Value) -> Result<String, EvalError> {
        self.env
            .get_template(name)
            .and_then(|t| t.render(ctx))
            .map_err(|e| EvalError::Template { template: name.into(), reason: e.to_string() })
    }
}

/// Profile posts as template values `{rank, category, text}`, rank 1-based in the given order
/// (most relevant first), text and category trimmed: the `posts` variable of the planner and
/// the Best-of-N policy templates.
pub fn ranked_posts(posts: &[&prbench_data::ProfilePost]) -> Vec<minijinja::Value> {
    posts
        .iter()
        .enumerate()
        .map(|(i, p)| context! { rank => i + 1, category => p.category.trim(), text => p.text.trim() })
        .collect()
}

/// A conversation of a system message (trimmed) and a user turn, then an assistant turn that
/// starts with `assistant_prefix` (empty: the model writes the whole turn).
pub fn system_and_user(system: &str, user: String, assistant_prefix: &str) -> ChatPrompt {
    ChatPrompt {
        messages: vec![
            ChatMessage::new(Role::System, system.trim()),
            ChatMessage::new(Role::User, user),
        ],
        assistant_prefix: assistant_prefix.into(),
    }
}

/// The compiled prompt templates, and the judge recipe that replaces the judge prompt when one
/// other than `default` is given ([`Prompts::with_recipe`]).
pub struct Prompts {
    templates: Templates,
    recipe: Option<Arc<JudgeRecipe>>,
}

impl Default for Prompts {
    fn default() -> Self {
        Self::new()
    }
}

impl Prompts {
    /// Compiles the built-in templates.
    ///
    /// # Panics
    /// Never for the shipped templates (a unit test compiles them).
    pub fn new() -> Self {
        Self {
            templates: Templates::compile(&[
                ("judge-user", JUDGE_USER),
                ("rm-user", RM_USER),
                ("planner-user", PLANNER_USER),
            ]),
            recipe: None,
        }
    }

    /// The built-in templates, with `recipe` rendering judge prompts ([`Prompts::judge_prompts`]).
    /// prbench's own `default` recipe is the built-in judge prompt: it changes nothing, not even
    /// the hash.
    pub fn with_recipe(recipe: Option<Arc<JudgeRecipe>>) -> Self {
        Self { recipe: recipe.filter(|r| !r.is_default()), ..Self::new() }
    }

    /// The judge recipe in use, when it is not `default`.
    pub fn recipe(&self) -> Option<&JudgeRecipe> {
        self.recipe.as_deref()
    }

    /// sha256 (hex) over all template texts, in a fixed order: the manifest's template hash.
    /// With a recipe, its hash ([`JudgeRecipe::hash`]) is hashed after them.
    pub fn hash(&self) -> String {
        match &self.recipe {
            None => hash_texts(TEMPLATE_TEXTS),
            Some(r) => {
                let recipe = r.hash();
                hash_texts(&[TEMPLATE_TEXTS, &[recipe.as_str()]].concat())
            }
        }
    }

    fn render(&self, name: &str, ctx: minijinja::Value) -> Result<String, EvalError> {
        self.templates.render(name, ctx)
    }

    /// The judge conversations for one pair: with the recipe if there is one
    /// ([`JudgeRecipe::render_pair`]: one conversation for a pairwise recipe, the ratings of
    /// `pair.a` and of `pair.b` for a pointwise one), else [`Prompts::judge`]'s.
    ///
    /// # Errors
    /// [`EvalError::Template`] or [`EvalError::Recipe`] if rendering fails.
    pub fn judge_prompts(
        &self,
        pair: &PairInput,
    ) -> Result<(ChatPrompt, Option<ChatPrompt>), EvalError> {
        match &self.recipe {
            Some(r) => r.render_pair(pair),
            None => Ok((self.judge_builtin(pair)?, None)),
        }
    }

    /// The judge conversation for one pair: system + user turn, empty assistant prefix (with a
    /// recipe, its first conversation: see [`Prompts::judge_prompts`]).
    ///
    /// # Errors
    /// [`EvalError::Template`] or [`EvalError::Recipe`] if rendering fails.
    pub fn judge(&self, pair: &PairInput) -> Result<ChatPrompt, EvalError> {
        self.judge_prompts(pair).map(|(p, _)| p)
    }

    fn judge_builtin(&self, pair: &PairInput) -> Result<ChatPrompt, EvalError> {
        let user = self.render(
            "judge-user",
            context! { question => pair.question.trim(), context => pair.context.as_deref(), response_a => pair.a.trim(), response_b => pair.b.trim() },
        )?;
        Ok(system_and_user(JUDGE_SYSTEM, user, ""))
    }

    /// The planner conversation for one example: system + user turn (the question, then
    /// `posts` labelled with their rank, 1-based, and category), empty assistant prefix. The
    /// caller passes only the posts to show, most relevant first; nothing hidden goes in.
    ///
    /// # Errors
    /// [`EvalError::Template`] if rendering fails.
    pub fn planner(
        &self,
        question: &str,
        posts: &[&prbench_data::ProfilePost],
    ) -> Result<ChatPrompt, EvalError> {
        let posts = ranked_posts(posts);
        let user =
            self.render("planner-user", context! { question => question.trim(), posts => posts })?;
        Ok(system_and_user(PLANNER_SYSTEM, user, ""))
    }

    /// The pointwise conversation: user turn = context (labelled) + question, assistant
    /// turn = the answer.
    ///
    /// # Errors
    /// [`EvalError::Template`] if rendering fails.
    pub fn reward_model(&self, input: &RmInput) -> Result<ChatPrompt, EvalError> {
        let user = self.render(
            "rm-user",
            context! { question => input.question.trim(), context => input.context.as_deref() },
        )?;
        Ok(ChatPrompt {
            messages: vec![
                ChatMessage::new(Role::User, user),
                ChatMessage::new(Role::Assistant, input.answer.clone()),
            ],
            assistant_prefix: String::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judge_prompt_labels_context_and_slots() {
        let p = Prompts::new();
        let pair = PairInput {
            example_id: "e".into(),
            question: "Q?".into(),
            context: Some("CTX".into()),
            a: "first".into(),
            b: "second".into(),
        };
        let chat = p.judge(&pair).unwrap();
        let user = &chat.messages[1].content;
        let ctx_at = user.find("### What we know about this user\nCTX").unwrap();
        let q_at = user.find("### The user's question\nQ?").unwrap();
        let a_at = user.find("### Response A\nfirst").unwrap();
        let b_at = user.find("### Response B\nsecond").unwrap();
        assert!(ctx_at < q_at && q_at < a_at && a_at < b_at);
        assert!(user.trim_end().ends_with("`Result: A` or `Result: B`."));
        let none = p.judge(&PairInput { context: None, ..pair }).unwrap();
        assert!(!none.messages[1].content.contains("What we know"));
    }

    #[test]
    fn rm_prompt_puts_context_before_question() {
        let p = Prompts::new();
        let input = RmInput {
            example_id: "e".into(),
            question: "Q?".into(),
            context: Some("CTX".into()),
            answer: "ans".into(),
        };
        let chat = p.reward_model(&input).unwrap();
        assert_eq!(chat.messages[0].content, "### About me\nCTX\n\n### My question\nQ?");
        assert_eq!(chat.messages[1].content, "ans");
        let bare = p.reward_model(&RmInput { context: None, ..input }).unwrap();
        assert_eq!(bare.messages[0].content, "Q?");
    }
}
