//! The models crate's error type.
//!
//! An error that has an underlying cause (an I/O error, a JSON parse error, a candle or
//! tokenizer failure, a hub fetch) keeps it as its [`std::error::Error::source`], and its own
//! message says only what prbench was doing: the cause is printed once, by whoever walks the
//! chain (the binary prints each cause on a `caused by:` line; [`chain`] joins them on one
//! line for a record). Failures with no underlying error carry a plain message.

use std::path::PathBuf;

/// An underlying error kept as a [`ModelError`]'s source.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// `error` and its causes on one line, `outer: cause: cause's cause`, for a message stored as
/// text (an outcome's `error` field) where no chain printer will walk the sources.
pub fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    format!("{error}{}", causes(error))
}

/// The causes of `error` (not its own message), each after `": "`: `": cause: cause's cause"`,
/// or empty. For an outer message that already shows `error`'s own message.
pub fn causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = String::new();
    let mut cause = error.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// `": context"`, or nothing for an empty context.
fn colon(context: &str) -> String {
    if context.is_empty() {
        String::new()
    } else {
        format!(": {context}")
    }
}

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
    /// A model file could not be read, written or parsed; `source` says why (an
    /// [`std::io::Error`], a JSON, safetensors, tokenizer or GGUF loader error).
    #[error("cannot read model file `{path}`{}", colon(.context))]
    File {
        /// File path.
        path: PathBuf,
        /// What was being done or what the file should be (`not valid JSON`, a hint naming the
        /// files a model directory holds); empty when the path and the source say it all.
        context: String,
        /// The underlying error.
        #[source]
        source: BoxError,
    },
    /// A model file is missing or its content is wrong, with no underlying error (a missing
    /// file, a JSON document without a required object).
    #[error("cannot read model file `{path}`: {reason}")]
    FileReason {
        /// File path.
        path: PathBuf,
        /// What is wrong and, where it helps, what to do.
        reason: String,
    },
    /// A model could not be fetched from the Hugging Face hub, or is not in the local cache
    /// offline. Distinct from [`ModelError::Spec`]: the spec is valid, getting the files failed.
    #[error("cannot fetch `{spec}` from the Hugging Face hub{}", colon(.context))]
    Hub {
        /// The spec, `hf:ORG/NAME[@REV]`.
        spec: String,
        /// What the repo must hold, or empty.
        context: String,
        /// The hub client's error (the repo, revision, file and cache directory).
        #[source]
        source: BoxError,
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
    /// The engine failed, as the message alone says (a shape mismatch, a reply without a
    /// score, a refused request).
    #[error("engine error: {0}")]
    Engine(String),
    /// The engine failed with an underlying error (candle, the tokenizer, the HTTP runtime).
    #[error("engine error: {context}")]
    EngineFailed {
        /// What the engine was doing (`candle forward pass`, the tensor's name).
        context: String,
        /// The underlying error.
        #[source]
        source: BoxError,
    },
}

impl ModelError {
    /// A [`ModelError::File`] for `path` caused by `source`, with an optional `context`
    /// (empty for none).
    pub fn file(
        path: impl Into<PathBuf>,
        context: impl Into<String>,
        source: impl Into<BoxError>,
    ) -> Self {
        Self::File { path: path.into(), context: context.into(), source: source.into() }
    }

    /// A [`ModelError::Hub`]: fetching `spec` failed because of `source`.
    pub fn hub(spec: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Self::Hub { spec: spec.into(), context: String::new(), source: source.into() }
    }

    /// A [`ModelError::FileReason`]: `path` is missing or wrong as `reason` says.
    pub fn file_reason(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        Self::FileReason { path: path.into(), reason: reason.into() }
    }

    /// A [`ModelError::EngineFailed`]: the engine failed doing `context` because of `source`.
    pub fn engine(context: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Self::EngineFailed { context: context.into(), source: source.into() }
    }
}
