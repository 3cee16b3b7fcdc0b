//! The models crate's error type.

use std::path::PathBuf;

/// Errors from loading or running a backend. Each variant names the file, key or input at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The model spec string could not be understood.
    #[error("invalid model spec `{spec}`: {reason}")]
    Spec {
        /// The spec as typed.
        spec: String,
        /// What is wrong and what to type instead.
        reason: String,
    },
    /// A model file is missing or unreadable.
    #[error("cannot read model file `{path}`: {reason}")]
    File {
        /// File path.
        path: PathBuf,
        /// Cause.
        reason: String,
    },
    /// A required metadata key is missing or has the wrong type.
    #[error("model `{path}`: metadata key `{key}`: {reason}")]
    Metadata {
        /// File path.
        path: PathBuf,
        /// Key name.
        key: String,
        /// Cause.
        reason: String,
    },
    /// The chat template failed to render.
    #[error("chat template: {0}")]
    Template(String),
    /// A verdict candidate is not exactly one token.
    #[error("candidate continuation `{candidate}` is {n_tokens} tokens, expected exactly 1")]
    Candidate {
        /// Candidate text.
        candidate: String,
        /// Its token count.
        n_tokens: usize,
    },
    /// The input does not fit the context window even after truncation.
    #[error(
        "input of {tokens} tokens does not fit the context window of {n_ctx} tokens: {reason}"
    )]
    ContextOverflow {
        /// Tokens after all allowed truncation.
        tokens: usize,
        /// Context window.
        n_ctx: usize,
        /// What could not be cut.
        reason: String,
    },
    /// A judge recipe's verdict reader is unknown or misconfigured.
    #[error("verdict reader {reader} {reason}")]
    Reader {
        /// The reader as the recipe names it (with its pattern for `regex`).
        reader: String,
        /// What is wrong and what to write instead.
        reason: String,
    },
    /// The engine failed.
    #[error("engine error: {0}")]
    Engine(String),
}
