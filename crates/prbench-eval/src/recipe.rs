//! Judge recipes: a generative reward model's own prompt and verdict format.
//!
//! A recipe is a folder of three files:
//!
//! - `system.txt`: the system message (trimmed; an empty file sends no system message, for
//!   models whose chat template has no system role);
//! - `user.jinja`: the user turn, a minijinja template. A **pairwise** recipe sees `question`,
//!   `context` (the condition's context: none under `none`, the ranked posts under
//!   `profile:k`, the planned or true aspects under `planner`/`oracle`), `response_a` and
//!   `response_b`; a **pointwise** recipe sees `question`, `context` and `response`, and is
//!   rendered once per answer. Any other variable is an error when the template renders
//!   (strict undefined), never an empty string;
//! - `recipe.toml`:
//!
//! ```toml
//! kind = "pairwise"          # or "pointwise" (default "pairwise")
//! reader = "brackets"        # result | brackets | answer-tag | boxed | regex | rating
//! # pattern = 'Winner: ([AB])'   # regex only: one capture group around the letter
//!
//! [logprob]                  # optional, pairwise only: how a local judge reads its verdict
//! prefix = "[["              # in one forward pass, from the assistant turn primed with this
//! candidates = ["A", "B"]    # one token each: A's, then B's
//!
//! # [rating]                 # pointwise only (reader = "rating")
//! # min = 1
//! # max = 10
//! ```
//!
//! The readers are [`prbench_models::verdict_reader`]'s. Unknown keys are errors (a typo must
//! not silently fall back to a default).
//!
//! Built-in recipes ([`BUILTIN`]): `default` (prbench's own prompt, `prompts/judge-*`, reader
//! `result`, logprob prefix `Result:`) and `rating` (our pointwise prompt,
//! `prompts/recipes/rating/`, ratings 1–10).
//!
//! What the recipe changes is recorded: [`JudgeRecipe::hash`] (over the three files' texts)
//! goes into the run's template hash and [`JudgeRecipe::manifest_entry`] into the manifest; the
//! judge's decoding record names the reader, so cache keys keep recipes apart (the rendered
//! prompt is part of the key as well). Every rendered input passes the leakage guard as
//! prbench's own prompts do.

use std::path::{Path, PathBuf};

use minijinja::{context, Environment, UndefinedBehavior};
use prbench_models::verdict_reader::{RatingReader, VerdictReader};
use prbench_models::{ChatMessage, ChatPrompt, PairInput, Role};
use serde::Deserialize;

use crate::error::EvalError;
use crate::prompt::{hash_texts, JUDGE_SYSTEM, JUDGE_USER};

/// The built-in recipe names.
pub const BUILTIN: [&str; 2] = ["default", "rating"];

const DEFAULT_TOML: &str = include_str!("../../../prompts/recipes/default.toml");
const RATING_SYSTEM: &str = include_str!("../../../prompts/recipes/rating/system.txt");
const RATING_USER: &str = include_str!("../../../prompts/recipes/rating/user.jinja");
const RATING_TOML: &str = include_str!("../../../prompts/recipes/rating/recipe.toml");

/// The files of a recipe folder.
pub const RECIPE_FILES: [&str; 3] = ["system.txt", "user.jinja", "recipe.toml"];

/// How a recipe's replies become verdicts.
#[derive(Debug, Clone)]
pub enum RecipeReader {
    /// A pairwise recipe: one prompt shows both answers; the reply names the better slot.
    Pairwise(VerdictReader),
    /// A pointwise recipe: each answer is rated alone; the higher rating wins.
    Rating(RatingReader),
}

/// A recipe's `[logprob]` section: the verdict of a local judge is read in one forward pass
/// from the assistant turn primed with `prefix`, as the two-way softmax over the next-token
/// log-probabilities of `candidates` (A's, then B's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogprobVerdict {
    /// Text the assistant turn starts with.
    pub prefix: String,
    /// The single-token continuations for A and for B.
    pub candidates: [String; 2],
}

/// `[logprob]` as written; the candidate list's length is checked after parsing (a fixed-size
/// array would silently ignore a third entry).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LogprobToml {
    prefix: String,
    candidates: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecipeToml {
    #[serde(default = "pairwise")]
    kind: String,
    reader: String,
    #[serde(default)]
    pattern: Option<String>,
    #[serde(default)]
    logprob: Option<LogprobToml>,
    #[serde(default)]
    rating: Option<RatingToml>,
}

fn pairwise() -> String {
    "pairwise".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RatingToml {
    min: f64,
    max: f64,
}

/// The variables a pairwise and a pointwise template see.
const PAIRWISE_VARS: [&str; 4] = ["question", "context", "response_a", "response_b"];
const POINTWISE_VARS: [&str; 3] = ["question", "context", "response"];

/// Refuses a template that reads a variable the recipe's kind does not have (naming it, before
/// any model loads; strict rendering would only say "undefined value") or that never shows the
/// answers it is to judge.
fn check_variables(env: &Environment<'static>, pointwise: bool) -> Result<(), String> {
    let known: &[&str] = if pointwise { &POINTWISE_VARS } else { &PAIRWISE_VARS };
    let used =
        env.get_template("user.jinja").map_err(|e| e.to_string())?.undeclared_variables(false);
    let mut unknown: Vec<&String> = used
        .iter()
        .filter(|v| !known.contains(&v.as_str()) && env.globals().all(|(g, _)| g != v.as_str()))
        .collect();
    unknown.sort();
    let kind = if pointwise { "a pointwise" } else { "a pairwise" };
    if let Some(first) = unknown.first() {
        return Err(format!(
            "user.jinja uses `{first}`, which {kind} recipe does not have; its variables are {}",
            known.join(", ")
        ));
    }
    let answers: &[&str] = if pointwise { &["response"] } else { &["response_a", "response_b"] };
    if let Some(missing) = answers.iter().find(|a| !used.contains(**a)) {
        return Err(format!(
            "user.jinja never shows `{missing}`: {kind} judge must see the answer{} it judges",
            if pointwise { "" } else { "s" }
        ));
    }
    Ok(())
}

/// A loaded judge recipe (see the module docs).
#[derive(Debug)]
pub struct JudgeRecipe {
    name: String,
    folder: Option<PathBuf>,
    system: String,
    user: String,
    toml: String,
    reader: RecipeReader,
    logprob: Option<LogprobVerdict>,
    env: Environment<'static>,
}

impl JudgeRecipe {
    /// The recipe `name_or_dir` names: a built-in name ([`BUILTIN`]) or a recipe folder.
    ///
    /// # Errors
    /// [`EvalError::Recipe`] naming the folder or file and what is wrong: an unknown name that
    /// is no folder either, a missing or unreadable file, a `recipe.toml` that does not parse or
    /// is inconsistent (a pairwise reader in a pointwise recipe, `[logprob]` on a pointwise
    /// one, `[rating]` missing or out of order), or a template that does not compile.
    pub fn load(name_or_dir: &str) -> Result<Self, EvalError> {
        match name_or_dir {
            "default" => Self::from_texts("default", None, JUDGE_SYSTEM, JUDGE_USER, DEFAULT_TOML),
            "rating" => Self::from_texts("rating", None, RATING_SYSTEM, RATING_USER, RATING_TOML),
            other => {
                let dir = Path::new(other);
                if !dir.is_dir() {
                    return Err(EvalError::Recipe {
                        recipe: other.into(),
                        reason: format!("is neither a built-in recipe ({}) nor a folder; a recipe folder holds {}", BUILTIN.join(", "), RECIPE_FILES.join(", ")),
                    });
                }
                let read = |file: &str| {
                    let path = dir.join(file);
                    std::fs::read_to_string(&path).map_err(|e| EvalError::Recipe {
                        recipe: other.into(),
                        reason: format!(
                            "cannot read `{}`: {e}; a recipe folder holds {}",
                            path.display(),
                            RECIPE_FILES.join(", ")
                        ),
                    })
                };
                let (system, user, toml) =
                    (read("system.txt")?, read("user.jinja")?, read("recipe.toml")?);
                // The manifest records the folder as an absolute path, wherever the run was started.
                let folder = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
                Self::from_texts(other, Some(folder), &system, &user, &toml)
            }
        }
    }

    /// A recipe from the three files' texts; `name` is how messages and the manifest name it.
    ///
    /// # Errors
    /// As [`JudgeRecipe::load`], for the texts.
    pub fn from_texts(
        name: &str,
        folder: Option<PathBuf>,
        system: &str,
        user: &str,
        toml_text: &str,
    ) -> Result<Self, EvalError> {
        let bad = |reason: String| EvalError::Recipe { recipe: name.into(), reason };
        // What an editor may add and no model should see: a byte-order mark, Windows line ends.
        let (system, user) = (&normalized(system), &normalized(user));
        let spec: RecipeToml = toml::from_str(toml_text)
            .map_err(|e| bad(format!("recipe.toml: {}", e.to_string().trim())))?;
        let reader = match spec.kind.as_str() {
            "pairwise" => {
                if spec.rating.is_some() {
                    return Err(bad("recipe.toml: `[rating]` belongs to pointwise recipes (`kind = \"pointwise\"`, `reader = \"rating\"`)".into()));
                }
                RecipeReader::Pairwise(
                    VerdictReader::from_name(&spec.reader, spec.pattern.as_deref())
                        .map_err(|e| bad(format!("recipe.toml: {e}")))?,
                )
            }
            "pointwise" => {
                if spec.reader != "rating" {
                    return Err(bad(format!("recipe.toml: a pointwise recipe reads a rating (`reader = \"rating\"`), not `{}`", spec.reader)));
                }
                if spec.logprob.is_some() || spec.pattern.is_some() {
                    return Err(bad(
                        "recipe.toml: `[logprob]` and `pattern` belong to pairwise recipes".into(),
                    ));
                }
                let r = spec.rating.ok_or_else(|| bad("recipe.toml: a pointwise recipe needs `[rating]` with `min` and `max`, the scale its prompt asks for".into()))?;
                RecipeReader::Rating(
                    RatingReader::new(r.min, r.max)
                        .map_err(|e| bad(format!("recipe.toml: {e}")))?,
                )
            }
            other => {
                return Err(bad(format!(
                    "recipe.toml: `kind` is `pairwise` or `pointwise`, not `{other}`"
                )))
            }
        };
        let logprob = match spec.logprob {
            None => None,
            Some(LogprobToml { prefix, candidates }) => match <[String; 2]>::try_from(candidates) {
                Ok(c) if c[0].trim() == "B" && c[1].trim() == "A" => {
                    return Err(bad("recipe.toml: `[logprob] candidates` are A's token first, then B's; `[\"B\", \"A\"]` would invert every verdict".into()))
                }
                Ok(c) if c[0] != c[1] && c.iter().all(|s| !s.is_empty()) => Some(LogprobVerdict { prefix, candidates: c }),
                _ => return Err(bad("recipe.toml: `[logprob] candidates` are exactly two different non-empty strings, A's token then B's, e.g. `candidates = [\"A\", \"B\"]`".into())),
            },
        };
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        // Python's string and list methods (`.split()`, `.strip()`, …) and the common filters
        // (`truncate`, …), as in Hugging Face chat templates, which prompts are often ported from.
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        minijinja_contrib::add_to_environment(&mut env);
        env.add_template_owned("user.jinja", user.to_string())
            .map_err(|e| bad(format!("user.jinja does not compile: {e}")))?;
        check_variables(&env, matches!(reader, RecipeReader::Rating(_))).map_err(bad)?;
        let recipe = Self {
            name: name.into(),
            folder,
            system: system.into(),
            user: user.into(),
            toml: toml_text.into(),
            reader,
            logprob,
            env,
        };
        recipe.check_renders()?;
        Ok(recipe)
    }

    /// Renders the template once without a context (as under `none`) and once with one (as
    /// under the other conditions), so a template error that only some inputs reach (a method
    /// of `context`, a filter) stops the recipe at load, not midway through a run.
    fn check_renders(&self) -> Result<(), EvalError> {
        let context = "1. [category] A first profile post.\n2. [category] A second one.";
        for ctx in [None, Some(context)] {
            let pair = PairInput {
                example_id: "test pair".into(),
                question: "A question?".into(),
                context: ctx.map(str::to_string),
                a: "The first answer.".into(),
                b: "The second answer.".into(),
            };
            self.render_pair(&pair).map_err(|e| match e {
                EvalError::Recipe { recipe, reason } => EvalError::Recipe {
                    recipe,
                    reason: format!(
                        "{reason}; found rendering a test pair {} context",
                        if ctx.is_some() { "with a" } else { "without a" }
                    ),
                },
                other => other,
            })?;
        }
        Ok(())
    }

    /// Notes on what the template leaves out that a researcher may not intend: the question or
    /// the condition's context never shown (under `profile`, `planner` and `oracle` the judge
    /// would then see no more than under `none`). Empty when it uses them all.
    pub fn notes(&self) -> Vec<String> {
        let used = self
            .env
            .get_template("user.jinja")
            .map(|t| t.undeclared_variables(false))
            .unwrap_or_default();
        let mut notes = Vec::new();
        if !used.contains("question") {
            notes.push(format!("judge recipe `{}`: user.jinja never shows `question`", self.name));
        }
        if !used.contains("context") {
            notes.push(format!("judge recipe `{}`: user.jinja never shows `context`, so under `profile`, `planner` and `oracle` the judge sees what it sees under `none`", self.name));
        }
        notes
    }

    /// The recipe's name: a built-in name or the folder as given.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// True for prbench's own `default` recipe (whose runs keep the template hash and decoding
    /// record they had before recipes existed).
    pub fn is_default(&self) -> bool {
        self.folder.is_none() && self.name == "default"
    }

    /// Refuses a recipe whose own text (system message, template) holds hidden text of any of
    /// `examples` under `condition` ([`crate::leakage::check_static`]): the per-input guard only
    /// sees a hidden text pasted whole, and a recipe's text reaches every input.
    ///
    /// # Errors
    /// [`EvalError::Recipe`] naming the file, the example and the hidden field.
    pub fn check_hidden_text(
        &self,
        examples: &[prbench_data::Example],
        condition: crate::condition::Condition,
    ) -> Result<(), EvalError> {
        crate::leakage::check_static(&self.name, "system.txt", &self.system, examples, condition)?;
        crate::leakage::check_static(&self.name, "user.jinja", &self.user, examples, condition)
    }

    /// The reader.
    pub fn reader(&self) -> &RecipeReader {
        &self.reader
    }

    /// True for a pointwise (rating) recipe.
    pub fn is_pointwise(&self) -> bool {
        matches!(self.reader, RecipeReader::Rating(_))
    }

    /// The `[logprob]` section, if the recipe has one.
    pub fn logprob(&self) -> Option<&LogprobVerdict> {
        self.logprob.as_ref()
    }

    /// sha256 (hex) over the three files' texts ([`hash_texts`], in the order system, user,
    /// toml).
    pub fn hash(&self) -> String {
        hash_texts(&[&self.system, &self.user, &self.toml])
    }

    /// The manifest's record: `{name, folder (absolute; absent for built-ins), hash, kind,
    /// reader…, logprob}`.
    pub fn manifest_entry(&self) -> serde_json::Value {
        let mut m = serde_json::json!({
            "name": self.name,
            "hash": self.hash(),
            "kind": if self.is_pointwise() { "pointwise" } else { "pairwise" },
        });
        let reader = match &self.reader {
            RecipeReader::Pairwise(r) => r.describe(),
            RecipeReader::Rating(r) => r.describe(),
        };
        let obj = m.as_object_mut().expect("an object");
        if let serde_json::Value::Object(r) = reader {
            obj.extend(r);
        }
        if let Some(dir) = &self.folder {
            obj.insert("folder".into(), serde_json::json!(dir.display().to_string()));
        }
        if let Some(lp) = &self.logprob {
            obj.insert(
                "logprob".into(),
                serde_json::json!({ "prefix": lp.prefix, "candidates": lp.candidates }),
            );
        }
        m
    }

    fn conversation(&self, user: String) -> ChatPrompt {
        let mut messages = Vec::with_capacity(2);
        if !self.system.trim().is_empty() {
            messages.push(ChatMessage::new(Role::System, self.system.trim()));
        }
        messages.push(ChatMessage::new(Role::User, user));
        ChatPrompt { messages, assistant_prefix: String::new() }
    }

    fn render(&self, ctx: minijinja::Value) -> Result<String, EvalError> {
        self.env
            .get_template("user.jinja")
            .and_then(|t| t.render(ctx))
            .map_err(|e| EvalError::Recipe { recipe: self.name.clone(), reason: format!("user.jinja: {e} (a pairwise recipe sees question, context, response_a, response_b; a pointwise one question, context, response)") })
    }

    /// The conversations for one pair: for a pairwise recipe, one showing both answers (and
    /// `None`); for a pointwise recipe, the one rating `pair.a` and the one rating `pair.b`.
    /// Texts are trimmed as prbench's own prompts trim them.
    ///
    /// # Errors
    /// [`EvalError::Recipe`] when the template fails to render (e.g. an unknown variable).
    pub fn render_pair(
        &self,
        pair: &PairInput,
    ) -> Result<(ChatPrompt, Option<ChatPrompt>), EvalError> {
        // No context (`none`) is the empty string, so `{{ context }}` shows nothing (never
        // "None") and `{% if context %}` is false.
        let (question, context) = (pair.question.trim(), pair.context.as_deref().unwrap_or(""));
        let shows = |user: &str, answer: &str, name: &str| {
            if user.contains(answer) {
                Ok(())
            } else {
                Err(EvalError::Recipe {
                    recipe: self.name.clone(),
                    reason: format!("user.jinja rendered example `{}` without `{name}` (the answer it is to judge); a judge must see the answers whatever the condition", pair.example_id),
                })
            }
        };
        match self.reader {
            RecipeReader::Pairwise(_) => {
                let (a, b) = (pair.a.trim(), pair.b.trim());
                let user = self.render(context! { question => question, context => context, response_a => a, response_b => b })?;
                shows(&user, a, "response_a")?;
                shows(&user, b, "response_b")?;
                Ok((self.conversation(user), None))
            }
            RecipeReader::Rating(_) => {
                let one = |answer: &str| {
                    let answer = answer.trim();
                    let user = self.render(
                        context! { question => question, context => context, response => answer },
                    )?;
                    shows(&user, answer, "response")?;
                    Ok::<_, EvalError>(self.conversation(user))
                };
                Ok((one(&pair.a)?, Some(one(&pair.b)?)))
            }
        }
    }
}

/// A recipe file's text as a model should see it: without a leading byte-order mark, with
/// `\n` line ends.
fn normalized(text: &str) -> String {
    text.strip_prefix('\u{feff}').unwrap_or(text).replace("\r\n", "\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leakage::STATIC_RUN_CHARS;

    fn pair() -> PairInput {
        PairInput {
            example_id: "e".into(),
            question: " Q? ".into(),
            context: Some("CTX".into()),
            a: "first".into(),
            b: "second".into(),
        }
    }

    #[test]
    fn default_recipe_renders_as_prbench_prompts() {
        let r = JudgeRecipe::load("default").unwrap();
        assert!(r.is_default() && !r.is_pointwise());
        let (p, b) = r.render_pair(&pair()).unwrap();
        assert!(b.is_none());
        assert_eq!(p, crate::prompt::Prompts::new().judge(&pair()).unwrap());
        assert_eq!(
            r.logprob().unwrap(),
            &LogprobVerdict { prefix: "Result:".into(), candidates: [" A".into(), " B".into()] }
        );
        assert_eq!(r.manifest_entry()["reader"], "result");
    }

    #[test]
    fn rating_recipe_renders_each_answer() {
        let r = JudgeRecipe::load("rating").unwrap();
        assert!(r.is_pointwise());
        let (a, b) = r.render_pair(&pair()).unwrap();
        let b = b.unwrap();
        assert!(a.messages[1].content.contains("### The response\nfirst"));
        assert!(b.messages[1].content.contains("### The response\nsecond"));
        assert!(!a.messages[1].content.contains("second"));
        assert!(a.messages[1].content.contains("### What we know about this user\nCTX"));
        assert_eq!(r.manifest_entry()["min"], 1.0);
    }

    fn from(user: &str, toml: &str) -> Result<JudgeRecipe, EvalError> {
        JudgeRecipe::from_texts("t", None, "", user, toml)
    }

    #[test]
    fn bad_recipes_are_refused_with_the_reason() {
        const T: &str = "{{ question }} {{ response_a }} {{ response_b }}";
        let err = |user: &str, toml: &str| from(user, toml).unwrap_err().to_string();
        assert!(err(T, "reader = \"brackets\"\ntypo = 1").contains("unknown field `typo`"));
        assert!(err(T, "kind = \"listwise\"\nreader = \"brackets\"")
            .contains("`pairwise` or `pointwise`"));
        assert!(err(T, "kind = \"pointwise\"\nreader = \"brackets\"").contains("reads a rating"));
        assert!(err(T, "kind = \"pointwise\"\nreader = \"rating\"").contains("needs `[rating]`"));
        assert!(err(T, "reader = \"rating\"").contains("pointwise reader"));
        assert!(err(T, "reader = \"brackets\"\n[rating]\nmin = 1\nmax = 2")
            .contains("belongs to pointwise"));
        assert!(err(T, "reader = \"regex\"").contains("needs a `pattern`"));
        for c in ["[\"A\", \"A\"]", "[\"A\"]", "[\"A\", \"B\", \"C\"]", "[\"A\", \"\"]"] {
            let e = err(
                T,
                &format!("reader = \"brackets\"\n[logprob]\nprefix = \"[[\"\ncandidates = {c}"),
            );
            assert!(e.contains("exactly two different"), "{c}: {e}");
        }
        assert!(err("{% if %}", "reader = \"brackets\"").contains("does not compile"));
        // A variable the kind does not have is named when the recipe loads, before any model.
        let e = err("{{ profile }} {{ response_a }} {{ response_b }}", "reader = \"brackets\"");
        assert!(e.contains("uses `profile`") && e.contains("response_a"), "{e}");
        let e = err(
            "{{ response_a }}",
            "kind = \"pointwise\"\nreader = \"rating\"\n[rating]\nmin = 1\nmax = 5",
        );
        assert!(e.contains("uses `response_a`") && e.contains("a pointwise recipe"), "{e}");
        // A template that never shows an answer cannot judge it.
        assert!(err("{{ question }} {{ response_a }}", "reader = \"brackets\"")
            .contains("never shows `response_b`"));
        assert!(err("", "reader = \"brackets\"").contains("never shows `response_a`"));
        // Globals (range, namespace) and the template's own variables are not unknown.
        let ok = from("{% set n = namespace(k=0) %}{% for i in range(2) %}{{ i }}{% endfor %}{% set q = question %}{{ q }} {{ response_a }} {{ response_b }}", "reader = \"brackets\"").unwrap();
        assert_eq!(ok.notes().len(), 1, "context is never shown: {:?}", ok.notes());
        assert!(from(T, "reader = \"brackets\"").unwrap().notes()[0].contains("`context`"));
    }

    #[test]
    fn hidden_text_in_a_recipe_is_found_in_part_and_allowed_under_oracle() {
        use crate::condition::Condition;
        let data = prbench_data::load::load(
            concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/sample"),
            &[],
        )
        .unwrap();
        let ex = &data.examples[0];
        let chars: Vec<char> = ex.narrative.chars().collect();
        let piece = |from: usize, n: usize| chars[from..from + n].iter().collect::<String>();
        const T: &str = "{{ question }} {{ response_a }} {{ response_b }}";
        let with_system = |system: &str| {
            JudgeRecipe::from_texts("t", None, system, T, "reader = \"brackets\"").unwrap()
        };
        // A run of 32 characters from the middle of the narrative, inside other text: refused.
        let r = with_system(&format!(
            "Keep in mind that {} when judging.",
            piece(20, STATIC_RUN_CHARS)
        ));
        let e = r.check_hidden_text(&data.examples, Condition::None).unwrap_err().to_string();
        assert!(e.contains("system.txt") && e.contains(&ex.id) && e.contains("narrative"), "{e}");
        assert!(r.check_hidden_text(&data.examples, Condition::Profile { k: 3 }).is_err());
        assert!(r.check_hidden_text(&data.examples, Condition::Oracle).is_ok());
        // One character shorter is not a run the check looks for.
        let r = with_system(&format!(
            "Keep in mind that {} when judging.",
            piece(20, STATIC_RUN_CHARS - 1)
        ));
        assert!(r.check_hidden_text(&data.examples, Condition::None).is_ok());
        // In the template too.
        let user = format!("{T} {}", piece(0, 40));
        let r = JudgeRecipe::from_texts("t", None, "", &user, "reader = \"brackets\"").unwrap();
        assert!(r
            .check_hidden_text(&data.examples, Condition::None)
            .unwrap_err()
            .to_string()
            .contains("user.jinja"));
        // prbench's own recipes hold nothing of the sample's hidden texts.
        for name in BUILTIN {
            JudgeRecipe::load(name)
                .unwrap()
                .check_hidden_text(&data.examples, Condition::None)
                .unwrap();
        }
    }

    #[test]
    fn templates_are_tried_at_load_and_render_as_written() {
        const T: &str = "{{ question }} {{ response_a }} {{ response_b }}";
        let load = |user: &str| from(user, "reader = \"brackets\"");
        // No context renders as nothing, never as "None".
        let r = load("[{{ context }}] {{ question }} {{ response_a }} {{ response_b }}").unwrap();
        let (p, _) = r.render_pair(&PairInput { context: None, ..pair() }).unwrap();
        assert_eq!(p.messages[0].content, "[] Q? first second");
        // Answers shown only with a context are refused at load: under `none` the judge would
        // see neither.
        let e = load("{{ question }}{% if context %} {{ response_a }} {{ response_b }}{% endif %}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("without `response_a`") && e.contains("without a context"), "{e}");
        assert!(load("{% set x = response_a %}{{ question }} {{ response_b }}")
            .unwrap_err()
            .to_string()
            .contains("without `response_a`"));
        // An error only a context reaches is found at load.
        let e = load("{% if context %}{{ context.no_such_method() }}{% endif %}{{ response_a }} {{ response_b }}").unwrap_err().to_string();
        assert!(e.contains("with a context"), "{e}");
        // Python's string methods and the common filters work, as in chat templates.
        let r = load("{% for line in context.split('\\n') %}- {{ line.strip() }}\n{% endfor %}{{ question | truncate(length=40) }} {{ response_a }} {{ response_b }}").unwrap();
        let (p, _) = r.render_pair(&pair()).unwrap();
        assert_eq!(p.messages[0].content, "- CTX\nQ? first second");
        // A byte-order mark and Windows line ends never reach the model.
        let r = JudgeRecipe::from_texts(
            "t",
            None,
            "\u{feff}Judge.\r\nCarefully.",
            &format!("\u{feff}{T}\r\n"),
            "reader = \"brackets\"",
        )
        .unwrap();
        let (p, _) = r.render_pair(&pair()).unwrap();
        assert_eq!(
            (p.messages[0].content.as_str(), p.messages[1].content.as_str()),
            ("Judge.\nCarefully.", "Q? first second")
        );
        // Candidates in the wrong order would invert every verdict.
        let e = from(
            T,
            "reader = \"brackets\"\n[logprob]\nprefix = \"[[\"\ncandidates = [\" B\", \" A\"]",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("invert"), "{e}");
    }

    #[test]
    fn folders_load_and_hash_their_texts() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("system.txt"), "").unwrap();
        std::fs::write(dir.path().join("user.jinja"), "Q: {{ question }}\n{% if context %}C: {{ context }}\n{% endif %}1: {{ response_a }}\n2: {{ response_b }}\nAnswer [[A]] or [[B]].").unwrap();
        std::fs::write(
            dir.path().join("recipe.toml"),
            "reader = \"brackets\"\n[logprob]\nprefix = \"[[\"\ncandidates = [\"A\", \"B\"]\n",
        )
        .unwrap();
        let spec = dir.path().to_str().unwrap();
        let r = JudgeRecipe::load(spec).unwrap();
        let (p, _) = r.render_pair(&pair()).unwrap();
        // An empty system.txt sends no system message.
        assert_eq!(p.messages.len(), 1);
        assert_eq!(
            p.messages[0].content,
            "Q: Q?\nC: CTX\n1: first\n2: second\nAnswer [[A]] or [[B]]."
        );
        let texts = [
            "",
            &std::fs::read_to_string(dir.path().join("user.jinja")).unwrap(),
            &std::fs::read_to_string(dir.path().join("recipe.toml")).unwrap(),
        ];
        assert_eq!(r.hash(), hash_texts(&texts));
        assert_eq!(
            r.manifest_entry()["folder"],
            dir.path().canonicalize().unwrap().display().to_string()
        );
        assert_eq!(r.manifest_entry()["reader"], "brackets");
        std::fs::remove_file(dir.path().join("user.jinja")).unwrap();
        assert!(JudgeRecipe::load(spec).unwrap_err().to_string().contains("user.jinja"));
        assert!(JudgeRecipe::load("no-such-recipe")
            .unwrap_err()
            .to_string()
            .contains("neither a built-in recipe"));
    }
}
