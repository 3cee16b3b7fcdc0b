//! The values that cross the Prompt → Backend boundary (docs/ARCHITECTURE.md, "Data flow").

use serde::{Deserialize, Serialize};

/// Speaker of one chat turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// System instruction.
    System,
    /// The user (question, context, judge task).
    User,
    /// The model.
    Assistant,
}

impl Role {
    /// The role name chat templates expect (`system`, `user`, `assistant`).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One chat turn. `content` is untrusted text (profiles, answers): engines tokenize it so
/// that special-token strings inside it stay plain text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Speaker.
    pub role: Role,
    /// Turn text.
    pub content: String,
}

impl ChatMessage {
    /// A turn with the given role and text.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self { role, content: content.into() }
    }
}

/// A rendered conversation as an engine receives it: the messages, plus text the assistant
/// turn starts with (e.g. `Result:` for a logprob verdict; empty for free generation).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatPrompt {
    /// Turns in order.
    pub messages: Vec<ChatMessage>,
    /// Text appended after the generation prompt, inside the assistant turn.
    pub assistant_prefix: String,
}

impl ChatPrompt {
    /// All text of the prompt, for the leakage guard and hashing.
    pub fn all_text(&self) -> String {
        let mut s = String::new();
        for m in &self.messages {
            s.push_str(m.role.as_str());
            s.push('\n');
            s.push_str(&m.content);
            s.push('\n');
        }
        s.push_str(&self.assistant_prefix);
        s
    }
}

/// Pointwise input: one answer to score.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RmInput {
    /// Example the input belongs to (seeds per-example random choices).
    pub example_id: String,
    /// The user's question.
    pub question: String,
    /// The condition's extra text (profile posts, planned or oracle aspects), if any.
    pub context: Option<String>,
    /// The answer to score.
    pub answer: String,
}

/// A pointwise request: the structured input (for baselines) and the rendered conversation
/// (user turn = question + context, assistant turn = answer) for model engines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RmRequest {
    /// Structured input.
    pub input: RmInput,
    /// Rendered conversation.
    pub prompt: ChatPrompt,
}

/// Pairwise input: two answers in slots A and B.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairInput {
    /// Example the pair belongs to (seeds per-example random choices).
    pub example_id: String,
    /// The user's question.
    pub question: String,
    /// The condition's extra text, if any.
    pub context: Option<String>,
    /// Answer in slot A.
    pub a: String,
    /// Answer in slot B.
    pub b: String,
}

/// A pairwise request: the structured pair (for baselines) and the rendered judge prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JudgeRequest {
    /// Structured pair.
    pub pair: PairInput,
    /// Rendered judge conversation; for a logprob verdict its `assistant_prefix` ends at
    /// `Result:`. For a pointwise recipe, the conversation that rates answer A.
    pub prompt: ChatPrompt,
    /// Pointwise recipes only: the conversation that rates answer B (`None` for pairwise
    /// judges, which see both answers in `prompt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_b: Option<ChatPrompt>,
}

/// Token accounting for one engine call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenStats {
    /// Tokens fed to the model (after truncation).
    pub input_tokens: usize,
    /// Tokens cut to fit the context window (0 when nothing was cut).
    pub truncated_tokens: usize,
    /// Tokens generated (0 for scoring and logprob calls).
    pub output_tokens: usize,
}

/// A scalar score for one pointwise request; higher is better.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Score {
    /// Reward (logit for sequence classifiers; baseline-specific units otherwise).
    pub value: f32,
    /// Token accounting.
    pub tokens: TokenStats,
}

/// A generation request (planner, BoN policy, generate-verdict judge).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// Conversation to continue.
    pub prompt: ChatPrompt,
    /// Maximum new tokens.
    pub max_new_tokens: usize,
    /// Sampling temperature; 0 means greedy.
    pub temperature: f32,
    /// Nucleus sampling mass in (0, 1].
    pub top_p: f32,
    /// Sampling seed (derive it from the run seed and the example id).
    pub seed: u64,
}

/// A generation result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// Generated text (without the prompt or `assistant_prefix`).
    pub text: String,
    /// Token accounting.
    pub tokens: TokenStats,
    /// Why generation stopped, in OpenAI's terms: `stop` (an end-of-generation token or a stop
    /// string), `length` (the `max_new_tokens` budget or the context window ran out: the text
    /// may be cut mid-sentence), or what a server reports; `None` when the engine does not say
    /// (and in cache entries written before this field existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
}

impl ChatResponse {
    /// True when the reply was cut by a token budget: `finish_reason` is `length`, or, when
    /// the engine gave no reason, `output_tokens` reached `max_new_tokens`.
    pub fn hit_length_limit(&self, max_new_tokens: usize) -> bool {
        match self.finish_reason.as_deref() {
            Some(reason) => reason == "length",
            None => self.tokens.output_tokens >= max_new_tokens,
        }
    }
}

/// What a remote engine did to get its results, for the run summary: requests sent (first tries
/// and retries), retries alone, and requests that failed for good (after every retry).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallStats {
    /// HTTP requests sent, retries included.
    pub requests: u64,
    /// Of those, retries (after a 429, a 5xx, a timeout, a dropped connection or a broken body).
    pub retries: u64,
    /// Items that still failed after the last retry (each became an error outcome).
    pub failures: u64,
    /// Prompt tokens the server reported (`usage.prompt_tokens`), summed over the replies that
    /// reported them.
    pub prompt_tokens: u64,
    /// Completion tokens the server reported (`usage.completion_tokens`), summed likewise.
    pub completion_tokens: u64,
    /// Successful replies that gave no prompt-token count (TEI, OpenRLHF and reward servers never
    /// do): while it is above 0, `prompt_tokens` is not the total and the total is unknown.
    #[serde(default)]
    pub unreported_prompt_tokens: u64,
    /// Successful replies that gave no completion-token count (a chat server without `usage`);
    /// likewise for `completion_tokens`. Reward models generate nothing and report 0.
    #[serde(default)]
    pub unreported_completion_tokens: u64,
}
