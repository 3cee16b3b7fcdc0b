//! Stage 1, the answers: for each example, the generator writes a `chosen` answer told to
//! meet every rubric aspect (`prompts/build-chosen-user.jinja`) and a `rejected` one with the
//! same inputs, the aspects presented as points to avoid, under the same length and style
//! rules (`prompts/build-rejected-user.jinja`). Both see the question, the top-k ranked posts
//! (dropped from the bottom of the ranking until the prompt fits the generator) and the
//! aspects' titles and reasons; the rubric reaches the rejected prompt in no other form.
//!
//! The two requests of an example go to the generator side by side, chosen first, in one
//! call: the two prompts begin with the same system prompt, posts and question, and a
//! batching engine (`gguf:` with `--gen-batch` > 1) keeps the chosen prompt's KV for that part
//! of the rejected one instead of prefilling it again. Each answer is cached under its own
//! side's template hash, so the cache is the one the two sides wrote when they ran apart.

use prbench_data::{Example, ProfilePost};
use prbench_eval::condition::Condition;
use prbench_eval::leakage;
use prbench_models::{ChatRequest, ChatResponse, Generator, ModelError, TokenStats};
use serde::{Deserialize, Serialize};

use prbench_eval::planner::CachedGenerator;

use super::{in_calls, Side, StageContext};
use crate::error::BuildError;
use crate::prompts::answer_hash;
use crate::seeds::answer_seed;
use crate::settings::word_count;

/// Whether an answer can go into a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerStatus {
    /// A complete, non-empty answer.
    Ok,
    /// The generator returned only whitespace.
    Empty,
    /// The generation used up its token budget (`finish_reason: length`): it may stop
    /// mid-sentence. Never exported.
    Truncated,
    /// The generator failed on this request (after its retries).
    Failed,
}

/// One generated answer; one line of `build/chosen.jsonl` or `build/rejected.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerRecord {
    /// The example it answers.
    pub example_id: String,
    /// The example's subset.
    pub subset: String,
    /// Which answer this is.
    pub side: Side,
    /// The answer, trimmed (empty when failed).
    pub text: String,
    /// Whitespace-separated words of `text`.
    pub words: usize,
    /// Whether the answer is usable.
    pub status: AnswerStatus,
    /// Profile posts in the prompt.
    pub posts_shown: usize,
    /// Lowest-ranked posts dropped so the prompt plus the token budget fits the context.
    pub posts_dropped: usize,
    /// The sampling seed ([`answer_seed`]).
    pub seed: u64,
    /// Prompt and generated tokens.
    pub tokens: TokenStats,
    /// Why generation stopped, as the engine says (`stop`, `length`), if it says.
    pub finish_reason: Option<String>,
    /// The failure, when `status` is `failed`.
    pub error: Option<String>,
}

/// The request for one example's answer on `side`, and the posts shown / dropped. The
/// rendered prompt passes the leakage guard with only the aspects' titles and reasons
/// allowed: the narrative and the evidence never reach the generator.
///
/// # Errors
/// Template and leakage errors; an example without a ranking.
pub fn request_for(
    ctx: &StageContext<'_>,
    generator: &dyn Generator,
    side: Side,
    example: &Example,
) -> Result<(ChatRequest, usize, usize), BuildError> {
    let s = ctx.settings;
    let ranked: &[ProfilePost] = ctx.posts(example)?;
    let available = ranked.len().min(s.k_posts);
    let mut n = available;
    let prompt = loop {
        let shown: Vec<&ProfilePost> = ranked[..n].iter().collect();
        let prompt = ctx.prompts.answer(
            side,
            &example.question,
            &shown,
            &example.rubric_aspects,
            s.max_words,
        )?;
        let over = generator.prompt_overflow(&prompt, s.max_new_tokens).ok().flatten().unwrap_or(0);
        if over == 0 || n == 0 {
            break prompt;
        }
        n -= 1;
    };
    let shown_aspects: Vec<&str> = example
        .rubric_aspects
        .iter()
        .flat_map(|a| [a.aspect.as_str(), a.reason.as_str()])
        .collect();
    leakage::check_with(
        example,
        Condition::Profile { k: s.k_posts },
        &prompt.all_text(),
        &shown_aspects,
    )?;
    let request = ChatRequest {
        prompt,
        max_new_tokens: s.max_new_tokens,
        temperature: s.temperature,
        top_p: s.top_p,
        seed: answer_seed(s.seed, &example.id, side),
    };
    Ok((request, n, available - n))
}

/// The answers of every example, `(chosen, rejected)`, each in example order. All requests
/// are built (and checked by the leakage guard) before the first call. They go out as
/// chosen₀, rejected₀, chosen₁, rejected₁, … in calls of `batch` requests rounded up to a
/// whole number of pairs, through `cache` when given (each keyed under its side's
/// [`answer_hash`]), else straight to `generator`; a progress bar `answers` advances per call.
///
/// # Errors
/// As [`request_for`]; [`BuildError::BackendShape`].
pub fn generate_pairs(
    ctx: &StageContext<'_>,
    generator: &dyn Generator,
    cache: Option<&CachedGenerator<'_>>,
) -> Result<(Vec<AnswerRecord>, Vec<AnswerRecord>), BuildError> {
    const SIDES: [Side; 2] = [Side::Chosen, Side::Rejected];
    let mut planned = Vec::with_capacity(2 * ctx.examples.len());
    for ex in ctx.examples {
        for side in SIDES {
            planned.push(request_for(ctx, generator, side, ex)?);
        }
    }
    let requests: Vec<ChatRequest> = planned.iter().map(|p| p.0.clone()).collect();
    let hashes = SIDES.map(answer_hash);
    let templates: Vec<&str> = (0..requests.len()).map(|i| hashes[i % 2].as_str()).collect();
    let model = generator.identity().spec;
    let per_call = ctx.settings.batch.max(1).div_ceil(2) * 2;
    ctx.reporter.start("answers", requests.len() as u64);
    let results = in_calls(&model, requests.len(), per_call, ctx.reporter, |r| match cache {
        Some(c) => c.generate_each_under(&requests[r.clone()], &templates[r], &|_, _| {}),
        None => generator.generate_each(&requests[r], &|_, _| {}),
    });
    ctx.reporter.finish();
    let mut chosen = Vec::with_capacity(ctx.examples.len());
    let mut rejected = Vec::with_capacity(ctx.examples.len());
    let mut planned = planned.into_iter();
    for (i, result) in results?.into_iter().enumerate() {
        let (req, shown, dropped) = planned.next().expect("one plan per result");
        let (ex, side) = (ctx.examples[i / 2], SIDES[i % 2]);
        let rec = record(ex, side, &req, shown, dropped, result, &model);
        match side {
            Side::Chosen => chosen.push(rec),
            Side::Rejected => rejected.push(rec),
        }
    }
    Ok((chosen, rejected))
}

fn record(
    ex: &Example,
    side: Side,
    req: &ChatRequest,
    shown: usize,
    dropped: usize,
    result: Result<ChatResponse, ModelError>,
    model: &str,
) -> AnswerRecord {
    let base = AnswerRecord {
        example_id: ex.id.clone(),
        subset: ex.subset.clone(),
        side,
        text: String::new(),
        words: 0,
        status: AnswerStatus::Failed,
        posts_shown: shown,
        posts_dropped: dropped,
        seed: req.seed,
        tokens: TokenStats::default(),
        finish_reason: None,
        error: None,
    };
    match result {
        Ok(reply) => {
            let text = reply.text.trim().to_string();
            let status = if reply.hit_length_limit(req.max_new_tokens) {
                AnswerStatus::Truncated
            } else if text.is_empty() {
                AnswerStatus::Empty
            } else {
                AnswerStatus::Ok
            };
            AnswerRecord {
                words: word_count(&text),
                text,
                status,
                tokens: reply.tokens,
                finish_reason: reply.finish_reason,
                ..base
            }
        }
        Err(e) => AnswerRecord {
            error: Some(format!(
                "`{model}` on example `{}`: {}",
                ex.id,
                prbench_models::error::chain(&e)
            )),
            ..base
        },
    }
}
