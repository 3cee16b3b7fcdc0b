//! The `planner` condition's aspect generator (PROTOCOL.md §2): a generator model reads the
//! user's question and their top-k profile posts and writes the aspects this user likely
//! expects from an answer; those aspects are then shown to the reward model under test.
//!
//! The hidden rubric and narrative never reach the planner: every planner prompt goes through
//! the leakage guard as a `none`-condition input. Planner quality against the hidden rubric is
//! measured afterwards, evaluation-side ([`plan_quality`], [`plan_quality_all`]).
//!
//! Flow: [`Planner::plan_all`] renders one prompt per example ([`Prompts::planner`]), calls the
//! generator in batches of [`Planner::batch_size`] (a failing batch is retried item by item), and
//! parses each reply ([`parse_plan`]) into a [`Plan`]. Wrap the generator in a
//! [`CachedGenerator`] to reuse replies across runs.

mod cached;
mod parse;
mod quality;

pub use cached::CachedGenerator;
pub use parse::{parse_plan, parse_plan_form, MAX_PLAIN_LINE_CHARS};
pub use quality::{plan_quality, plan_quality_all, ExampleQuality, PlanQuality};

use prbench_data::{Example, ProfilePost};
use prbench_models::{ChatRequest, ChatResponse, Generator, TokenStats};
use serde::{Deserialize, Serialize};

use crate::condition::Condition;
use crate::error::EvalError;
use crate::leakage;
use crate::prompt::Prompts;
use crate::slots::slot_key;

/// The planner's sampling seed for one example: the first 8 bytes, little-endian, of
/// [`slot_key`]`(run_seed, example_id)` = sha256(run seed as little-endian u64 ‖ id). Depends
/// only on the run seed and the id, never on batching or order.
pub fn planner_seed(run_seed: u64, example_id: &str) -> u64 {
    let key = slot_key(run_seed, example_id);
    u64::from_le_bytes(key[..8].try_into().expect("32-byte key"))
}

/// The planner's output for one example; written one per line to `planner.jsonl`.
///
/// Exactly one of three states: a usable plan (`aspects` non-empty, both errors `None`), an
/// unparsable reply (`parse_error` set, `aspects` empty, `raw` kept), or a generator failure
/// (`error` set, `aspects` empty, `raw` empty).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// Example id.
    pub example_id: String,
    /// Parsed aspects in reply order, one short line each ([`parse_plan`]); empty on failure.
    pub aspects: Vec<String>,
    /// The generator's reply as returned (empty when the generator failed).
    pub raw: String,
    /// Why the reply could not be read as a list, when it could not.
    pub parse_error: Option<String>,
    /// Generator failure for this item (after the per-item retry), when it failed.
    pub error: Option<String>,
    /// Profile posts shown in the prompt: min(k, posts ranked for the example).
    pub posts_shown: usize,
    /// Token accounting of the generation (zeros when the generator failed).
    #[serde(default)]
    pub tokens: TokenStats,
    /// The reply used all `max_new_tokens`: it may have been cut, so its last aspect may be
    /// incomplete.
    #[serde(default)]
    pub hit_max_new_tokens: bool,
    /// The aspects were read from unmarked lines or sentences (the reply ignored the list
    /// format; [`parse::parse_plan_form`]), counted in reports.
    #[serde(default)]
    pub unmarked: bool,
}

impl Plan {
    /// Whether the plan has aspects to show (no generator error, at least one aspect).
    pub fn is_usable(&self) -> bool {
        self.error.is_none() && !self.aspects.is_empty()
    }

    fn from_reply(
        example_id: &str,
        posts_shown: usize,
        reply: ChatResponse,
        max_new_tokens: usize,
    ) -> Self {
        let (aspects, parse_error, unmarked) = match parse_plan_form(&reply.text) {
            Ok((a, marked)) => (a, None, !marked),
            Err(e) => (Vec::new(), Some(e), false),
        };
        Plan {
            example_id: example_id.into(),
            aspects,
            raw: reply.text,
            parse_error,
            error: None,
            posts_shown,
            hit_max_new_tokens: max_new_tokens > 0 && reply.tokens.output_tokens >= max_new_tokens,
            tokens: reply.tokens,
            unmarked,
        }
    }
}

/// Writes plans for examples with a generator model.
pub struct Planner<'a> {
    /// The generator (wrap it in a [`CachedGenerator`] to reuse replies).
    pub generator: &'a dyn Generator,
    /// Maximum new tokens per reply (default [`Planner::DEFAULT_MAX_NEW_TOKENS`]).
    pub max_new_tokens: usize,
    /// Sampling temperature; 0 (the default) is greedy.
    pub temperature: f32,
    /// Nucleus mass in (0, 1]; default 1.
    pub top_p: f32,
    /// The run seed; each example's seed is [`planner_seed`]`(seed, id)`.
    pub seed: u64,
    /// Posts shown: the first `k` of each example's ranked list (fewer when it is shorter).
    pub k: usize,
    /// Requests per generator call (default [`Planner::DEFAULT_BATCH_SIZE`]; 0 acts as 1).
    pub batch_size: usize,
}

impl<'a> Planner<'a> {
    /// Default [`Planner::max_new_tokens`]: room for six short lines.
    pub const DEFAULT_MAX_NEW_TOKENS: usize = 128;
    /// Default [`Planner::batch_size`].
    pub const DEFAULT_BATCH_SIZE: usize = 8;

    /// A greedy planner (temperature 0, top-p 1, 128 new tokens, batches of 8) showing `k`
    /// posts, seeded from the run seed `seed`.
    pub fn new(generator: &'a dyn Generator, seed: u64, k: usize) -> Self {
        Self {
            generator,
            max_new_tokens: Self::DEFAULT_MAX_NEW_TOKENS,
            temperature: 0.0,
            top_p: 1.0,
            seed,
            k,
            batch_size: Self::DEFAULT_BATCH_SIZE,
        }
    }

    /// The settings for the run manifest: `{"k", "max_new_tokens", "temperature", "top_p",
    /// "seed", "batch_size"}`.
    pub fn settings(&self) -> serde_json::Value {
        serde_json::json!({
            "k": self.k,
            "max_new_tokens": self.max_new_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "seed": self.seed,
            "batch_size": self.batch_size,
        })
    }

    /// The generation request for one example, showing the first `k` of `ranked_posts` (most
    /// relevant first; they must be the example's own posts); the rendered prompt has passed
    /// the leakage guard. Returns the request and the number of posts shown.
    ///
    /// # Errors
    /// [`EvalError::Template`] if rendering fails; [`EvalError::Leakage`] if the prompt holds
    /// hidden text of `example` (narrative, rubric) that no visible text contains.
    pub fn request(
        &self,
        example: &Example,
        ranked_posts: &[&ProfilePost],
        prompts: &Prompts,
    ) -> Result<(ChatRequest, usize), EvalError> {
        let shown = &ranked_posts[..ranked_posts.len().min(self.k)];
        let prompt = prompts.planner(&example.question, shown)?;
        leakage::check(example, Condition::None, &prompt.all_text())?;
        let request = ChatRequest {
            prompt,
            max_new_tokens: self.max_new_tokens,
            temperature: self.temperature,
            top_p: self.top_p,
            seed: planner_seed(self.seed, &example.id),
        };
        Ok((request, shown.len()))
    }

    /// One [`Plan`] per example, in order. `ranked_posts[i]` holds example `i`'s profile posts
    /// ranked most relevant first; only the first `k` are shown. All prompts are rendered and
    /// checked before the first generator call. The generator is called on batches of
    /// `batch_size` requests through [`Generator::generate_each`] (one result per item, each
    /// handed over as soon as it exists); a request that fails becomes [`Plan::error`] (the
    /// other plans are unaffected). An unparsable reply becomes
    /// [`Plan::parse_error`].
    ///
    /// # Errors
    /// [`EvalError::Template`] or [`EvalError::Leakage`] from [`Planner::request`] (a leak is a
    /// bug, never an item failure); no generator call is made then.
    ///
    /// # Panics
    /// If `examples` and `ranked_posts` differ in length (a programming error).
    pub fn plan_all(
        &self,
        examples: &[&Example],
        ranked_posts: &[Vec<&ProfilePost>],
        prompts: &Prompts,
    ) -> Result<Vec<Plan>, EvalError> {
        assert_eq!(examples.len(), ranked_posts.len(), "one ranked post list per example");
        let mut requests = Vec::with_capacity(examples.len());
        let mut shown = Vec::with_capacity(examples.len());
        for (ex, posts) in examples.iter().zip(ranked_posts) {
            let (req, n) = self.request(ex, posts, prompts)?;
            requests.push(req);
            shown.push(n);
        }
        let model = self.generator.identity().spec;
        let batch = self.batch_size.max(1);
        let mut plans = Vec::with_capacity(examples.len());
        for (b, chunk) in requests.chunks(batch).enumerate() {
            let results = self.generator.generate_each(chunk, &|_, _| {});
            if results.len() != chunk.len() {
                return Err(EvalError::BackendShape {
                    model,
                    got: results.len(),
                    expected: chunk.len(),
                });
            }
            for (j, result) in results.into_iter().enumerate() {
                let i = b * batch + j;
                let id = examples[i].id.as_str();
                plans.push(match result {
                    Ok(reply) => Plan::from_reply(id, shown[i], reply, self.max_new_tokens),
                    Err(source) => Plan {
                        example_id: id.into(),
                        aspects: Vec::new(),
                        raw: String::new(),
                        parse_error: None,
                        // The message with its causes: no chain printer reads a plan.
                        error: Some(prbench_models::error::chain(&EvalError::Backend {
                            model: model.clone(),
                            example_id: id.into(),
                            source,
                        })),
                        posts_shown: shown[i],
                        tokens: TokenStats::default(),
                        hit_max_new_tokens: false,
                        unmarked: false,
                    },
                });
            }
        }
        Ok(plans)
    }
}

#[cfg(test)]
mod tests;
