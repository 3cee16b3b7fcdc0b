//! A generative judge as a pointwise reward model for Best-of-N (`bon score`): our rating
//! prompt (`prompts/rating-*`) asks how well one answer fits the user, on 1–9.
//!
//! - **logprob** (local GGUF): the reward is the expected rating under the next-token
//!   distribution over `1`…`9` after `Rating: `, renormalised over those nine tokens
//!   (`Σ d·p(d) / Σ p(d)`): one forward pass, never unparsed, and rarely tied.
//! - **generate** (any generator, e.g. an OpenAI-compatible server): one greedy reply that must
//!   hold exactly one `Rating: <1-9>`; anything else fails that item (counted as an error, never
//!   a default reward).
//!
//! The authors' BoN generative scorer filled a template whose placeholders did not match, so
//! the profile never reached it (PROTOCOL.md §10, defect 6); here the rendered prompt is what
//! the leakage guard and the tests see.

use prbench_models::{
    ChatRequest, Generator, ModelError, ModelIdentity, NextTokenScorer, RewardModel, RmInput,
    RmRequest, Score,
};
use sha2::{Digest, Sha256};

use super::prompts::{rating_hash, BonPrompts};

/// The candidate next tokens of a logprob rating, in rating order (1…9).
pub const RATING_TOKENS: [&str; 9] = ["1", "2", "3", "4", "5", "6", "7", "8", "9"];

/// The engine behind a [`RatingRewardModel`].
pub enum RatingEngine {
    /// Expected rating from next-token probabilities.
    Logprob(Box<dyn NextTokenScorer>),
    /// A greedy reply read strictly.
    Generate {
        /// The judge model.
        generator: Box<dyn Generator>,
        /// New-token budget of the reply.
        max_new_tokens: usize,
    },
}

/// A judge model giving pointwise ratings; a [`RewardModel`] whose score is the rating on 1–9.
pub struct RatingRewardModel {
    engine: RatingEngine,
    prompts: BonPrompts,
    identity: ModelIdentity,
}

impl RatingRewardModel {
    /// Wraps `engine`. The identity is the engine's, with `engine` naming the rating mode and
    /// `chat_template_hash` covering both the engine's chat template and our rating prompt (so
    /// cached scores follow a prompt change).
    pub fn new(engine: RatingEngine) -> Self {
        let (inner, mode) = match &engine {
            RatingEngine::Logprob(s) => (s.identity(), "logprob"),
            RatingEngine::Generate { generator, .. } => (generator.identity(), "generate"),
        };
        let mut h = Sha256::new();
        h.update(inner.chat_template_hash.as_bytes());
        h.update(rating_hash().as_bytes());
        let identity = ModelIdentity {
            engine: format!("{} via the 1-9 rating prompt ({mode})", inner.engine),
            chat_template_hash: hex::encode(h.finalize()),
            ..inner
        };
        Self { engine, prompts: BonPrompts::new(), identity }
    }

    /// The rating prompt of one item (`logprob`: ending where the digit goes).
    fn prompt(
        &self,
        input: &RmInput,
        logprob: bool,
    ) -> Result<prbench_models::ChatPrompt, ModelError> {
        self.prompts
            .rating(&input.question, input.context.as_deref(), &input.answer, logprob)
            .map_err(|e| ModelError::Template(e.to_string()))
    }

    fn rate_all(&self, items: &[RmRequest]) -> Result<Vec<Score>, ModelError> {
        match &self.engine {
            RatingEngine::Logprob(scorer) => items
                .iter()
                .map(|it| {
                    let prompt = self.prompt(&it.input, true)?;
                    let (lp, tokens) = scorer.next_token_logprobs(&prompt, &RATING_TOKENS)?;
                    Ok(Score { value: expected_rating(&lp)? as f32, tokens })
                })
                .collect(),
            RatingEngine::Generate { generator, max_new_tokens } => {
                // All items in one call, so an engine that decodes several sequences together
                // (`--gen-batch`) can.
                let requests = items
                    .iter()
                    .map(|it| {
                        Ok(ChatRequest {
                            prompt: self.prompt(&it.input, false)?,
                            max_new_tokens: *max_new_tokens,
                            temperature: 0.0,
                            top_p: 1.0,
                            seed: 0,
                        })
                    })
                    .collect::<Result<Vec<_>, ModelError>>()?;
                let replies = generator.generate(&requests)?;
                if replies.len() != items.len() {
                    return Err(ModelError::Engine(format!(
                        "the judge returned {} replies for {} prompts",
                        replies.len(),
                        items.len()
                    )));
                }
                replies
                    .into_iter()
                    .map(|reply| {
                        let rating = parse_rating(&reply.text)
                            .map_err(|why| ModelError::Engine(format!("unparsed rating: {why}")))?;
                        Ok(Score { value: f32::from(rating), tokens: reply.tokens })
                    })
                    .collect()
            }
        }
    }
}

impl RewardModel for RatingRewardModel {
    /// One rating per item, in order: `logprob` reads each item's digit on its own; `generate`
    /// sends all items to the generator in one call.
    ///
    /// # Errors
    /// The first item's engine error, template error or (generate mode) unparsed rating.
    fn score(&self, items: &[RmRequest]) -> Result<Vec<Score>, ModelError> {
        self.rate_all(items)
    }

    fn identity(&self) -> ModelIdentity {
        self.identity.clone()
    }
}

/// `Σ d·p(d) / Σ p(d)` over d = 1…9 from the nine natural-log probabilities (in order).
///
/// # Errors
/// [`ModelError::Engine`] when there are not nine values or all are −∞ / not finite.
pub fn expected_rating(logprobs: &[f32]) -> Result<f64, ModelError> {
    if logprobs.len() != RATING_TOKENS.len() {
        return Err(ModelError::Engine(format!(
            "{} log-probabilities for {} rating tokens",
            logprobs.len(),
            RATING_TOKENS.len()
        )));
    }
    let m = logprobs.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(f64::from(x)));
    if !m.is_finite() {
        return Err(ModelError::Engine("no finite log-probability for any rating token".into()));
    }
    let (mut num, mut den) = (0.0, 0.0);
    for (d, &lp) in logprobs.iter().enumerate() {
        let p = (f64::from(lp) - m).exp();
        num += (d + 1) as f64 * p;
        den += p;
    }
    Ok(num / den)
}

/// The rating in a generated reply: exactly one `Rating:` (any case, markdown emphasis
/// allowed) followed by one integer from 1 to 9 that is not part of a longer number.
///
/// # Errors
/// A message saying what was found instead.
pub fn parse_rating(reply: &str) -> Result<u8, String> {
    let lower = reply.to_ascii_lowercase();
    let found: Vec<usize> = lower.match_indices("rating").map(|(i, _)| i).collect();
    let mut ratings = Vec::new();
    for &i in &found {
        let rest = reply[i + "rating".len()..].trim_start_matches(['*', '_', ' ']);
        let Some(rest) = rest.strip_prefix(':') else { continue };
        let rest = rest.trim_start_matches(['*', '_', ' ']);
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        let tail = &rest[digits..];
        let decimal = tail.starts_with('.') && tail[1..].starts_with(|c: char| c.is_ascii_digit());
        match rest[..digits].parse::<u32>() {
            Ok(r) if (1..=9).contains(&r) && !decimal && !tail.starts_with('/') => {
                ratings.push(r as u8)
            }
            _ => {
                return Err(format!(
                    "`Rating:` is followed by `{}`, not an integer from 1 to 9",
                    rest.chars().take(12).collect::<String>()
                ))
            }
        }
    }
    match ratings.as_slice() {
        [r] => Ok(*r),
        [] => Err("no `Rating: <1-9>` in the reply".into()),
        more => Err(format!("{} ratings in the reply", more.len())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_rating_by_hand() {
        // p(3) = 0.5, p(7) = 0.25, p(9) = 0.25 (the rest ~0): 1.5 + 1.75 + 2.25 = 5.5.
        let mut lp = [f32::NEG_INFINITY; 9];
        lp[2] = 0.5f32.ln();
        lp[6] = 0.25f32.ln();
        lp[8] = 0.25f32.ln();
        assert!((expected_rating(&lp).unwrap() - 5.5).abs() < 1e-6);
        // Renormalised: mass outside the nine tokens does not matter.
        let half: Vec<f32> = lp.iter().map(|x| x + 0.5f32.ln()).collect();
        assert!((expected_rating(&half).unwrap() - 5.5).abs() < 1e-6);
        assert!(expected_rating(&[f32::NEG_INFINITY; 9]).is_err());
        assert!(expected_rating(&[0.0; 3]).is_err());
    }

    #[test]
    fn parse_rating_is_strict() {
        assert_eq!(parse_rating("Rating: 7"), Ok(7));
        assert_eq!(parse_rating("It fits well.\n**Rating:** 8."), Ok(8));
        assert_eq!(parse_rating("rating: 1"), Ok(1));
        assert!(parse_rating("Rating: 10").is_err());
        assert!(parse_rating("Rating: 0").is_err());
        assert!(parse_rating("Rating: 7.5").is_err());
        assert!(parse_rating("Rating: 7/9").is_err());
        assert!(parse_rating("Rating: seven").is_err());
        assert!(parse_rating("7").is_err());
        assert!(parse_rating("Rating: 3\nRating: 4").unwrap_err().contains("2 ratings"));
        // The word alone, without a colon, is not a rating line.
        assert_eq!(parse_rating("My rating for this: see below. Rating: 5"), Ok(5));
    }
}
