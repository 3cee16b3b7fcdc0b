//! Judges built on engine primitives, shared by every engine (local GGUF now, remote later):
//! a logprob judge over any [`NextTokenScorer`] and a generate-and-parse judge over any
//! [`Generator`] (PROTOCOL.md §4).

use crate::error::ModelError;
use crate::io::{ChatRequest, JudgeRequest};
use crate::traits::{Generator, ItemDone, Judge, ModelIdentity, NextTokenScorer};
use crate::verdict::{Choice, Verdict};
use crate::verdict_parse::parse_verdict;

/// Text the assistant turn is primed with for a logprob verdict.
pub const RESULT_PREFIX: &str = "Result:";
/// The two candidate next tokens after [`RESULT_PREFIX`]: a space then the slot letter, as
/// BPE vocabularies spell the word after a colon.
pub const SLOT_TOKENS: [&str; 2] = [" A", " B"];

/// Logprob verdict: renders the judge prompt plus `Result:` in the assistant turn and reads the
/// next-token log-probabilities of ` A` and ` B` in one forward pass. p_A = softmax over the
/// two; margin = log p(A) − log p(B). Deterministic; never unparsed. Exactly equal
/// log-probabilities give [`Choice::Tie`].
pub struct LogprobJudge<S> {
    scorer: S,
}

impl<S: NextTokenScorer> LogprobJudge<S> {
    /// Wraps an engine.
    pub fn new(scorer: S) -> Self {
        Self { scorer }
    }
}

/// p_A from log p(A) and log p(B) (natural logs): the two-way softmax, computed stably.
pub fn two_way_p_a(logp_a: f32, logp_b: f32) -> f32 {
    let m = (logp_a - logp_b) as f64;
    (1.0 / (1.0 + (-m).exp())) as f32
}

impl<S: NextTokenScorer> LogprobJudge<S> {
    fn judge_one(&self, item: &JudgeRequest) -> Result<Verdict, ModelError> {
        let mut prompt = item.prompt.clone();
        prompt.assistant_prefix.push_str(RESULT_PREFIX);
        let (lp, tokens) = self.scorer.next_token_logprobs(&prompt, &SLOT_TOKENS)?;
        let (la, lb) = (lp[0], lp[1]);
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
}

impl<S: NextTokenScorer> Judge for LogprobJudge<S> {
    fn judge(&self, items: &[JudgeRequest]) -> Result<Vec<Verdict>, ModelError> {
        items.iter().map(|item| self.judge_one(item)).collect()
    }

    /// One forward pass per item, so each verdict is handed to `done` (and a failure stays that
    /// item's) as soon as it exists.
    fn judge_each(&self, items: &[JudgeRequest], done: ItemDone<'_, Verdict>) -> Vec<Result<Verdict, ModelError>> {
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let r = self.judge_one(item);
                if let Ok(v) = &r {
                    done(i, v);
                }
                r
            })
            .collect()
    }

    /// Over the window by the prompt with the `Result:` prefix the verdict is read after.
    fn input_overflow(&self, item: &JudgeRequest) -> Result<Option<usize>, ModelError> {
        let mut prompt = item.prompt.clone();
        prompt.assistant_prefix.push_str(RESULT_PREFIX);
        self.scorer.prompt_overflow(&prompt, 0)
    }

    fn identity(&self) -> ModelIdentity {
        self.scorer.identity()
    }

    fn decoding(&self) -> serde_json::Value {
        serde_json::json!({ "verdict": "logprob", "prefix": RESULT_PREFIX, "candidates": SLOT_TOKENS })
    }
}

/// Generate verdict: greedy decoding of a short reasoning ending in `Result: A|B`, parsed with
/// [`parse_verdict`]; an unreadable reply is [`Choice::Unparsed`].
pub struct GenerateJudge<G> {
    generator: G,
    max_new_tokens: usize,
}

impl<G: Generator> GenerateJudge<G> {
    /// Wraps a generator; `max_new_tokens` bounds the reply (tokens).
    pub fn new(generator: G, max_new_tokens: usize) -> Self {
        Self { generator, max_new_tokens }
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
            .map(|r| Verdict { choice: parse_verdict(&r.text), p_a: None, margin: None, raw: r.text, tokens: r.tokens })
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
        serde_json::json!({ "verdict": "generate", "temperature": 0.0, "max_new_tokens": self.max_new_tokens })
    }
}
