//! Judges built on engine primitives, shared by every engine (local GGUF now, remote later):
//! a logprob judge over any [`NextTokenScorer`] and a generate-and-parse judge over any
//! [`Generator`] (PROTOCOL.md §4).

use crate::error::ModelError;
use crate::io::{ChatPrompt, ChatRequest, ChatResponse, JudgeRequest, TokenStats};
use crate::traits::{
    each_with_fallback, Generator, ItemDone, Judge, ModelIdentity, NextTokenScorer,
};
use crate::verdict::{Choice, Verdict};
use crate::verdict_reader::{RatingReader, VerdictReader};

/// Text the assistant turn is primed with for a logprob verdict.
pub const RESULT_PREFIX: &str = "Result:";
/// The two candidate next tokens after [`RESULT_PREFIX`]: a space then the slot letter, as
/// BPE vocabularies spell the word after a colon.
pub const SLOT_TOKENS: [&str; 2] = [" A", " B"];

/// Logprob verdict: renders the judge prompt plus `Result:` in the assistant turn and reads the
/// next-token log-probabilities of ` A` and ` B` in one forward pass (items of one call go to
/// the scorer together, so a common prefix can be decoded once). p_A = softmax over the
/// two; margin = log p(A) − log p(B). Deterministic; never unparsed. Exactly equal
/// log-probabilities give [`Choice::Tie`].
pub struct LogprobJudge<S> {
    scorer: S,
    prefix: String,
    candidates: [String; 2],
}

impl<S: NextTokenScorer> LogprobJudge<S> {
    /// Wraps an engine, reading the verdict after [`RESULT_PREFIX`] from [`SLOT_TOKENS`].
    pub fn new(scorer: S) -> Self {
        Self { scorer, prefix: RESULT_PREFIX.into(), candidates: SLOT_TOKENS.map(String::from) }
    }

    /// Reads the verdict after `prefix` instead (appended to the prompt's assistant prefix),
    /// from the next-token log-probabilities of `candidates` (A's token, then B's; each must be
    /// exactly one token of the model's vocabulary), as a judge recipe's `[logprob]` section
    /// gives them (e.g. prefix `[[` with candidates `A`, `B`).
    pub fn with_verdict_prefix(mut self, prefix: &str, candidates: [String; 2]) -> Self {
        self.prefix = prefix.into();
        self.candidates = candidates;
        self
    }

    fn primed(&self, item: &JudgeRequest) -> ChatPrompt {
        let mut prompt = item.prompt.clone();
        prompt.assistant_prefix.push_str(&self.prefix);
        prompt
    }
}

/// p_A from log p(A) and log p(B) (natural logs): the two-way softmax, computed stably.
pub fn two_way_p_a(logp_a: f32, logp_b: f32) -> f32 {
    let m = (logp_a - logp_b) as f64;
    (1.0 / (1.0 + (-m).exp())) as f32
}

/// The logprob verdict from log p(A) and log p(B) (`logprobs`, natural logs, A's first).
fn logprob_verdict(logprobs: &[f32], tokens: TokenStats) -> Result<Verdict, ModelError> {
    let &[la, lb] = logprobs else {
        return Err(ModelError::Engine(format!(
            "the scorer returned {} log-probabilities for 2 candidates",
            logprobs.len()
        )));
    };
    let margin = la - lb;
    let choice = if margin > 0.0 {
        Choice::A
    } else if margin < 0.0 {
        Choice::B
    } else {
        Choice::Tie
    };
    Ok(Verdict {
        choice,
        p_a: Some(two_way_p_a(la, lb)),
        margin: Some(margin),
        raw: format!("logp(A)={la:.4} logp(B)={lb:.4}"),
        tokens,
    })
}

impl<S: NextTokenScorer> Judge for LogprobJudge<S> {
    /// One call of the scorer's [`NextTokenScorer::next_token_logprobs_many`] over all items,
    /// so an engine that shares common prefixes (the GGUF engine) decodes the two orders of a
    /// pair — adjacent requests with the same system prompt, context and question — with that
    /// prefix once.
    fn judge(&self, items: &[JudgeRequest]) -> Result<Vec<Verdict>, ModelError> {
        let prompts: Vec<ChatPrompt> = items.iter().map(|item| self.primed(item)).collect();
        let refs: Vec<&ChatPrompt> = prompts.iter().collect();
        let candidates = [self.candidates[0].as_str(), self.candidates[1].as_str()];
        let scored = self.scorer.next_token_logprobs_many(&refs, &candidates)?;
        if scored.len() != items.len() {
            return Err(ModelError::Engine(format!(
                "the scorer returned {} results for {} prompts",
                scored.len(),
                items.len()
            )));
        }
        scored.into_iter().map(|(lp, tokens)| logprob_verdict(&lp, tokens)).collect()
    }

    /// [`Judge::judge`] on the whole slice (so prefixes are shared across it); verdicts go to
    /// `done` when the slice is scored. If the call fails, each item is judged alone, so a
    /// failure stays that item's ([`each_with_fallback`]).
    fn judge_each(
        &self,
        items: &[JudgeRequest],
        done: ItemDone<'_, Verdict>,
    ) -> Vec<Result<Verdict, ModelError>> {
        each_with_fallback(items, done, |xs| self.judge(xs))
    }

    /// Over the window by the prompt with the prefix the verdict is read after.
    fn input_overflow(&self, item: &JudgeRequest) -> Result<Option<usize>, ModelError> {
        self.scorer.prompt_overflow(&self.primed(item), 0)
    }

    fn identity(&self) -> ModelIdentity {
        self.scorer.identity()
    }

    fn decoding(&self) -> serde_json::Value {
        serde_json::json!({ "verdict": "logprob", "prefix": self.prefix, "candidates": self.candidates })
    }
}

/// Generate verdict: greedy decoding of a short reasoning ending in `Result: A|B`, parsed with
/// [`crate::verdict_parse::parse_verdict`] (or, with [`GenerateJudge::with_reader`], a recipe's own form); an
/// unreadable reply is [`Choice::Unparsed`].
pub struct GenerateJudge<G> {
    generator: G,
    max_new_tokens: usize,
    reader: VerdictReader,
}

impl<G: Generator> GenerateJudge<G> {
    /// Wraps a generator; `max_new_tokens` bounds the reply (tokens).
    pub fn new(generator: G, max_new_tokens: usize) -> Self {
        Self { generator, max_new_tokens, reader: VerdictReader::ResultLine }
    }

    /// Reads replies with `reader` instead of the `Result:` rule.
    pub fn with_reader(mut self, reader: VerdictReader) -> Self {
        self.reader = reader;
        self
    }
}

impl<G: Generator> Judge for GenerateJudge<G> {
    fn judge(&self, items: &[JudgeRequest]) -> Result<Vec<Verdict>, ModelError> {
        let requests: Vec<ChatRequest> = items
            .iter()
            .map(|item| ChatRequest {
                prompt: item.prompt.clone(),
                max_new_tokens: self.max_new_tokens,
                temperature: 0.0,
                top_p: 1.0,
                seed: 0,
            })
            .collect();
        let replies = self.generator.generate(&requests)?;
        Ok(replies
            .into_iter()
            .map(|r| Verdict {
                choice: self.reader.read(&r.text),
                p_a: None,
                margin: None,
                raw: r.text,
                tokens: r.tokens,
            })
            .collect())
    }

    /// Over the window by the prompt plus room for `max_new_tokens` of reply.
    fn input_overflow(&self, item: &JudgeRequest) -> Result<Option<usize>, ModelError> {
        self.generator.prompt_overflow(&item.prompt, self.max_new_tokens)
    }

    fn identity(&self) -> ModelIdentity {
        self.generator.identity()
    }

    fn decoding(&self) -> serde_json::Value {
        let mut d = serde_json::json!({ "verdict": "generate", "temperature": 0.0, "max_new_tokens": self.max_new_tokens });
        with_reader(&mut d, &self.reader);
        d
    }
}

/// Adds a recipe's reader to a decoding record (`reader`, and `pattern` for `regex`). The
/// default `result` reader adds nothing, so records, cache keys and resumable runs written
/// before recipes existed stay valid.
pub fn with_reader(decoding: &mut serde_json::Value, reader: &VerdictReader) {
    if let (VerdictReader::ResultLine, _) | (_, None) = (reader, decoding.as_object()) {
        return;
    }
    if let (Some(d), serde_json::Value::Object(r)) = (decoding.as_object_mut(), reader.describe()) {
        d.extend(r);
    }
}

/// A pointwise judge (a recipe of kind `pointwise`): each answer is rated on its own, with the
/// request's [`JudgeRequest::prompt`] (answer A) and [`JudgeRequest::prompt_b`] (answer B),
/// by greedy decoding read with a [`RatingReader`]. The higher rating wins; equal ratings are a
/// [`Choice::Tie`]; a reply without a readable rating makes the verdict [`Choice::Unparsed`].
/// The verdict's `raw` holds both replies; `p_a` and `margin` stay empty (the ratings are not
/// log-probabilities).
pub struct RatingJudge<G> {
    generator: G,
    max_new_tokens: usize,
    reader: RatingReader,
}

/// Separates the two replies in a [`RatingJudge`] verdict's `raw` text.
pub const RATING_REPLY_SEPARATOR: &str = "\n----- rating of response B -----\n";

impl<G: Generator> RatingJudge<G> {
    /// Wraps a generator; `max_new_tokens` bounds each reply (tokens).
    pub fn new(generator: G, max_new_tokens: usize, reader: RatingReader) -> Self {
        Self { generator, max_new_tokens, reader }
    }

    fn request(&self, prompt: &ChatPrompt) -> ChatRequest {
        ChatRequest {
            prompt: prompt.clone(),
            max_new_tokens: self.max_new_tokens,
            temperature: 0.0,
            top_p: 1.0,
            seed: 0,
        }
    }

    fn prompt_b(item: &JudgeRequest) -> Result<&ChatPrompt, ModelError> {
        item.prompt_b.as_ref().ok_or_else(|| {
            ModelError::Engine(format!("pointwise judge: example `{}` has no prompt for answer B (a pairwise recipe's request reached a pointwise judge)", item.pair.example_id))
        })
    }

    /// The verdict from the two replies.
    fn verdict(&self, a: ChatResponse, b: ChatResponse) -> Verdict {
        let choice = match (self.reader.read(&a.text), self.reader.read(&b.text)) {
            (Some(ra), Some(rb)) if ra > rb => Choice::A,
            (Some(ra), Some(rb)) if ra < rb => Choice::B,
            (Some(_), Some(_)) => Choice::Tie,
            _ => Choice::Unparsed,
        };
        let tokens = TokenStats {
            input_tokens: a.tokens.input_tokens + b.tokens.input_tokens,
            output_tokens: a.tokens.output_tokens + b.tokens.output_tokens,
            truncated_tokens: a.tokens.truncated_tokens + b.tokens.truncated_tokens,
        };
        Verdict {
            choice,
            p_a: None,
            margin: None,
            raw: format!("{}{RATING_REPLY_SEPARATOR}{}", a.text, b.text),
            tokens,
        }
    }
}

impl<G: Generator> Judge for RatingJudge<G> {
    fn judge(&self, items: &[JudgeRequest]) -> Result<Vec<Verdict>, ModelError> {
        self.judge_each(items, &|_, _| {}).into_iter().collect()
    }

    /// Both answers of every item are generated in one call of the generator's
    /// `generate_each` (concurrent for remote engines); an item fails when either reply fails.
    fn judge_each(
        &self,
        items: &[JudgeRequest],
        done: ItemDone<'_, Verdict>,
    ) -> Vec<Result<Verdict, ModelError>> {
        let mut requests = Vec::with_capacity(items.len() * 2);
        let mut missing = Vec::new();
        for item in items {
            match Self::prompt_b(item) {
                Ok(b) => {
                    requests.push(self.request(&item.prompt));
                    requests.push(self.request(b));
                    missing.push(None);
                }
                Err(e) => missing.push(Some(e)),
            }
        }
        let mut replies = self.generator.generate_each(&requests, &|_, _| {}).into_iter();
        missing
            .into_iter()
            .enumerate()
            .map(|(i, missing)| {
                if let Some(e) = missing {
                    return Err(e);
                }
                let (a, b) = (
                    replies.next().expect("two replies per item"),
                    replies.next().expect("two replies per item"),
                );
                let v = self.verdict(a?, b?);
                done(i, &v);
                Ok(v)
            })
            .collect()
    }

    /// The larger overflow of the two prompts, each with room for `max_new_tokens`.
    fn input_overflow(&self, item: &JudgeRequest) -> Result<Option<usize>, ModelError> {
        let a = self.generator.prompt_overflow(&item.prompt, self.max_new_tokens)?;
        let b = self.generator.prompt_overflow(Self::prompt_b(item)?, self.max_new_tokens)?;
        Ok(match (a, b) {
            (Some(a), Some(b)) => Some(a.max(b)),
            _ => None,
        })
    }

    fn identity(&self) -> ModelIdentity {
        self.generator.identity()
    }

    fn decoding(&self) -> serde_json::Value {
        let mut d = serde_json::json!({ "verdict": "rating", "temperature": 0.0, "max_new_tokens": self.max_new_tokens });
        if let (Some(d), serde_json::Value::Object(r)) = (d.as_object_mut(), self.reader.describe())
        {
            d.extend(r);
        }
        d
    }
}
