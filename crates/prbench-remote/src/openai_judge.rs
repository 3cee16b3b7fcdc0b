//! A pairwise judge over [`OpenAiChat`]: each pair's rendered prompt is sent as is, the verdict
//! is read from the reply with [`prbench_models::verdict_parse::parse_verdict`] (or a judge recipe's reader) (PROTOCOL.md §4), and, when the server returns
//! per-token log-probabilities, p(A) is read at the verdict letter ([`crate::logprobs`]).

use std::sync::atomic::{AtomicU64, Ordering};

use prbench_models::verdict_reader::VerdictReader;
use prbench_models::{
    CallStats, ItemDone, Judge, JudgeRequest, ModelError, ModelIdentity, Verdict,
};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::logprobs::letter_logprobs_with;
use crate::openai::{OpenAiChat, Sampling};

/// Alternatives requested per token in logprob mode (OpenAI's maximum).
pub const TOP_LOGPROBS: u32 = 20;

/// Where a verdict's p(A) comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum VerdictSource {
    /// Probe the server once at construction and use log-probabilities if it returns them.
    #[default]
    Auto,
    /// Always request log-probabilities (`logprobs: true, top_logprobs: 20`).
    Logprobs,
    /// Text only: `p_a` and `margin` stay empty.
    Text,
}

/// Decoding settings of an [`OpenAiJudge`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JudgeConfig {
    /// Sampling temperature (default 0.0: greedy).
    pub temperature: f32,
    /// Nucleus mass in (0, 1] (default 1.0).
    pub top_p: f32,
    /// Most tokens in one reply (default 512).
    pub max_tokens: usize,
    /// Run seed; each pair's request seed is [`pair_seed`]`(seed, example_id)` (default 42,
    /// PROTOCOL.md §4's default seed).
    pub seed: u64,
    /// Where p(A) comes from (default [`VerdictSource::Auto`]).
    pub verdict: VerdictSource,
}

impl Default for JudgeConfig {
    fn default() -> Self {
        Self {
            temperature: 0.0,
            top_p: 1.0,
            max_tokens: 512,
            seed: 42,
            verdict: VerdictSource::Auto,
        }
    }
}

/// The request seed for one pair: the first four bytes of
/// `sha256(seed as 8 little-endian bytes ‖ example_id as UTF-8)`, big-endian, top bit cleared
/// (31 bits, which every server's seed type accepts). It depends on neither order nor batch.
pub fn pair_seed(seed: u64, example_id: &str) -> u32 {
    let mut h = Sha256::new();
    h.update(seed.to_le_bytes());
    h.update(example_id.as_bytes());
    let d = h.finalize();
    u32::from_be_bytes([d[0], d[1], d[2], d[3]]) & 0x7FFF_FFFF
}

/// A judge served by an OpenAI-compatible chat endpoint.
#[derive(Debug)]
pub struct OpenAiJudge {
    chat: OpenAiChat,
    cfg: JudgeConfig,
    /// Whether requests ask for log-probabilities.
    logprobs: bool,
    /// Whether `logprobs` was decided by the construction probe ([`VerdictSource::Auto`]).
    detected: bool,
    misses: AtomicU64,
    reader: VerdictReader,
}

impl OpenAiJudge {
    /// A judge over `chat`. With [`VerdictSource::Auto`] this sends one probe request
    /// ([`OpenAiChat::probe_logprobs`]); otherwise nothing.
    ///
    /// # Errors
    /// [`ModelError::Engine`] when the probe cannot reach the server after its retries.
    pub fn new(chat: OpenAiChat, cfg: JudgeConfig) -> Result<Self, ModelError> {
        let (logprobs, detected) = match cfg.verdict {
            VerdictSource::Auto => (chat.probe_logprobs()?, true),
            VerdictSource::Logprobs => (true, false),
            VerdictSource::Text => (false, false),
        };
        Ok(Self {
            chat,
            cfg,
            logprobs,
            detected,
            misses: AtomicU64::new(0),
            reader: VerdictReader::ResultLine,
        })
    }

    /// Reads replies with a judge recipe's `reader` instead of the `Result:` rule; p(A) is then
    /// read at the letter that reader used.
    pub fn with_reader(mut self, reader: VerdictReader) -> Self {
        self.reader = reader;
        self
    }

    /// True when verdicts carry p(A) from log-probabilities (requested or detected).
    pub fn uses_logprobs(&self) -> bool {
        self.logprobs
    }

    /// Verdicts in logprob mode that got no p(A): the reply had no A/B verdict (unparsed or
    /// tie), carried no log-probabilities, its tokens did not spell it, or A or B was missing
    /// from the top alternatives at the letter.
    pub fn logprob_misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }

    /// The chat engine underneath.
    pub fn chat(&self) -> &OpenAiChat {
        &self.chat
    }

    async fn judge_one(&self, item: &JudgeRequest) -> Result<Verdict, ModelError> {
        let sampling = Sampling {
            temperature: self.cfg.temperature,
            top_p: self.cfg.top_p,
            max_tokens: self.cfg.max_tokens,
            seed: pair_seed(self.cfg.seed, &item.pair.example_id),
            top_logprobs: self.logprobs.then_some(TOP_LOGPROBS),
        };
        let reply =
            self.chat.call(&item.prompt.messages, &item.prompt.assistant_prefix, &sampling).await?;
        let mut verdict = Verdict {
            choice: self.reader.read(&reply.text),
            p_a: None,
            margin: None,
            raw: String::new(),
            tokens: reply.tokens,
        };
        if self.logprobs {
            let read = |text: &str| self.reader.read(text);
            match reply
                .logprobs
                .as_deref()
                .map(|toks| letter_logprobs_with(&reply.text, toks, &read))
            {
                Some(Ok(l)) => {
                    verdict.p_a = Some(l.p_a);
                    verdict.margin = Some(l.margin);
                }
                _ => {
                    self.misses.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        verdict.raw = reply.text;
        Ok(verdict)
    }
}

impl Judge for OpenAiJudge {
    /// Fails with the first (in input order) item's error if any item fails after its retries.
    fn judge(&self, items: &[JudgeRequest]) -> Result<Vec<Verdict>, ModelError> {
        self.judge_each(items, &|_, _| {}).into_iter().collect()
    }

    /// Items run concurrently (up to the options' `concurrency`); `done` gets each verdict as it
    /// arrives.
    fn judge_each(
        &self,
        items: &[JudgeRequest],
        done: ItemDone<'_, Verdict>,
    ) -> Vec<Result<Verdict, ModelError>> {
        self.chat.client().run_each(items, done, |_, item| self.judge_one(item))
    }

    fn identity(&self) -> ModelIdentity {
        self.chat.model_identity()
    }

    fn call_stats(&self) -> Option<CallStats> {
        Some(self.chat.call_stats())
    }

    /// `{"verdict": "logprob"|"text", "detected", "temperature", "top_p", "max_tokens", "seed",
    /// "seed_per_pair", "top_logprobs" (logprob mode only), "extra"}`, keys sorted; no URL or key.
    fn decoding(&self) -> Value {
        let mut d = Map::new();
        d.insert("verdict".into(), json!(if self.logprobs { "logprob" } else { "text" }));
        d.insert("detected".into(), json!(self.detected));
        d.insert("temperature".into(), json!(crate::json_f32(self.cfg.temperature)));
        d.insert("top_p".into(), json!(crate::json_f32(self.cfg.top_p)));
        d.insert("max_tokens".into(), json!(self.cfg.max_tokens));
        d.insert("seed".into(), json!(self.cfg.seed));
        d.insert(
            "seed_per_pair".into(),
            json!("sha256(seed_le8 || example_id)[0..4] & 0x7fffffff"),
        );
        if self.logprobs {
            d.insert("top_logprobs".into(), json!(TOP_LOGPROBS));
        }
        d.insert("extra".into(), Value::Object(self.chat.extra().clone()));
        let mut d = Value::Object(d);
        prbench_models::judge::with_reader(&mut d, &self.reader);
        crate::sorted(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_seeds_are_stable_and_per_example() {
        let a = pair_seed(42, "ex-1");
        assert_eq!(a, pair_seed(42, "ex-1"));
        assert_ne!(a, pair_seed(42, "ex-2"));
        assert_ne!(a, pair_seed(43, "ex-1"));
        assert!(a <= 0x7FFF_FFFF);
        // Independent recomputation of the documented rule.
        let d = Sha256::digest([42u64.to_le_bytes().as_slice(), b"ex-1"].concat());
        assert_eq!(a, u32::from_be_bytes([d[0], d[1], d[2], d[3]]) & 0x7FFF_FFFF);
    }
}
