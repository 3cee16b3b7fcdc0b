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
    #[error("computing the best-of-k table")]
    BestOfK(#[from] prbench_stats::best_of_k::BestOfKError),
    /// A step refuses its options or the state of its folder before it writes anything (a
    /// sampling setting out of range, an output that exists, a condition Best-of-N does not
    /// score under); the message names the flag and what to do.
    #[error("{0}")]
    Refused(String),
    /// The dataset could not be loaded.
    #[error("{context}")]
    Dataset {
        /// Which dataset, and where its spec came from.
        context: String,
        /// Cause (boxed: a data error is large).
        #[source]
        source: Box<prbench_data::DataError>,
    },
    /// A folder or file of the BoN folder could not be created or written.
    #[error("{context}")]
    Io {
        /// What was being written.
        context: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// A model spec is malformed.
    #[error(transparent)]
    Model(#[from] prbench_models::ModelError),
    /// A local GGUF model could not be loaded.
    #[error("{context}")]
    Load {
        /// Which model.
        context: String,
        /// Cause.
        #[source]
        source: prbench_models::ModelError,
    },
    /// The engine factory (`prbench_engines`) failed to load or prepare a model; shown as its own
    /// error, causes kept.
    #[error(transparent)]
    Engine(Box<dyn std::error::Error + Send + Sync>),
    /// The table could not be serialized.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}
