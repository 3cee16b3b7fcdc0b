//! Judge verdicts and the verdict parser (PROTOCOL.md §4).

use serde::{Deserialize, Serialize};

use crate::io::TokenStats;

/// Which slot a judge picked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Choice {
    /// Slot A.
    A,
    /// Slot B.
    B,
    /// Explicit tie (equal log-probabilities, or a baseline that cannot separate the pair).
    Tie,
    /// No verdict could be read from the reply; never counted as a choice.
    Unparsed,
}

/// One judge verdict for one pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The pick.
    pub choice: Choice,
    /// Probability of A (softmax over the A and B tokens) for logprob verdicts.
    pub p_a: Option<f32>,
    /// log p(A) − log p(B) in nats for logprob verdicts (the debiasing margin, PROTOCOL.md §4).
    pub margin: Option<f32>,
    /// Raw reply text (generate verdicts) or a short description (logprob verdicts).
    pub raw: String,
    /// Token accounting.
    pub tokens: TokenStats,
}
