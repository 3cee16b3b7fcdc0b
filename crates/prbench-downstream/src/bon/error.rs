//! The Best-of-N error type.

use prbench_eval::EvalError;

/// Errors from sampling, judging, scoring or reporting Best-of-N.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BonError {
    /// Rendering, leakage, retrieval or backend-shape errors from the evaluation crate.
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// The samples, judgements or scores do not fit together or with the dataset.
    #[error("{what}: {reason}")]
    Mismatch {
        /// What was being matched (e.g. `sample 3 of example \`x\``).
        what: String,
        /// What is wrong and what to do.
        reason: String,
    },
    /// A BoN file (samples, judgements, scores, manifest) is unreadable or malformed.
    #[error("`{path}`{}: {reason}", if *line > 0 { format!(" line {line}") } else { String::new() })]
    File {
        /// The file.
        path: String,
        /// 1-based line (0 for the whole file).
        line: usize,
        /// What is wrong and what to do.
        reason: String,
    },
    /// An expected best-of-k value could not be computed.
    #[error("best-of-k: {0}")]
    BestOfK(#[from] prbench_stats::best_of_k::BestOfKError),
}
