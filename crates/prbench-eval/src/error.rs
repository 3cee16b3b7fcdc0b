//! The eval crate's error type.

use prbench_models::ModelError;

/// Errors from conditioning, rendering or running an evaluation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// A `--condition` value could not be understood.
    #[error("invalid condition `{given}`: {reason}")]
    Condition {
        /// The value as typed.
        given: String,
        /// What is wrong and what to type instead.
        reason: String,
    },
    /// A prompt template failed to render.
    #[error("prompt template `{template}`: {reason}")]
    Template {
        /// Template name.
        template: String,
        /// Cause.
        reason: String,
    },
    /// A judge recipe cannot be loaded or rendered.
    #[error("judge recipe `{recipe}` {reason}")]
    Recipe {
        /// The recipe as given (`--judge-recipe`).
        recipe: String,
        /// What is wrong and what to do.
        reason: String,
    },
    /// Hidden scoring text (narrative or rubric) was about to reach a backend outside the
    /// oracle condition (PROTOCOL.md §1: the scoring standard never reaches a reward model).
    #[error("leakage guard: example `{example_id}`, condition `{condition}`: hidden {field} text `{snippet}` appears in the rendered input; with a judge recipe, look for it in the recipe's files, otherwise this is a bug in prbench, please report it")]
    Leakage {
        /// Example id.
        example_id: String,
        /// Condition name.
        condition: String,
        /// Which hidden field leaked (`narrative`, `rubric aspect`, …).
        field: String,
        /// The start of the leaked text.
        snippet: String,
    },
    /// A backend failed.
    #[error("backend `{model}` failed on example `{example_id}`")]
    Backend {
        /// Model spec.
        model: String,
        /// First example of the failing batch.
        example_id: String,
        /// Cause.
        #[source]
        source: ModelError,
    },
    /// A backend returned the wrong number of results.
    #[error("backend `{model}` returned {got} results for {expected} inputs")]
    BackendShape {
        /// Model spec.
        model: String,
        /// Results returned.
        got: usize,
        /// Inputs sent.
        expected: usize,
    },
    /// The run folder cannot be used.
    #[error("run folder `{path}`: {reason}")]
    RunDir {
        /// Folder (or the offending id).
        path: std::path::PathBuf,
        /// What is wrong and what to do.
        reason: String,
    },
    /// The run cache cannot be opened, read or written.
    #[error("cache `{path}`: {reason}")]
    Cache {
        /// The cache file.
        path: std::path::PathBuf,
        /// What went wrong and what to do.
        reason: String,
    },
    /// Profile retrieval failed or produced a ranking that does not fit the example's profile
    /// (unknown, missing or duplicated post ids; non-finite scores).
    #[error("retrieval, example `{example_id}`: {reason}")]
    Retrieval {
        /// Example id.
        example_id: String,
        /// What is wrong.
        reason: String,
    },
    /// Writing run files failed.
    #[error("cannot write `{path}`")]
    Io {
        /// Path.
        path: std::path::PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// An evaluation that cannot start or finish as asked (a run folder or matrix file taken by
    /// another command, run files that cannot be read back); the message says what and what to do.
    #[error("{message}")]
    Evaluation {
        /// What is wrong and what to do.
        message: String,
        /// The underlying failure, when there is one.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// An engine an evaluation loads on demand through [`crate::evaluation::Engines`] (a
    /// retriever, the planner's generator, the quality embedder) failed; shown as its own error.
    #[error(transparent)]
    Engine(Box<dyn std::error::Error + Send + Sync>),
}

impl EvalError {
    /// An [`EvalError::Evaluation`] without a cause.
    pub(crate) fn evaluation(message: impl Into<String>) -> Self {
        EvalError::Evaluation { message: message.into(), source: None }
    }

    /// An [`EvalError::Evaluation`] caused by `source`.
    pub(crate) fn evaluation_with(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        EvalError::Evaluation { message: message.into(), source: Some(Box::new(source)) }
    }
}
