//! The build error type.

use prbench_data::DataError;
use prbench_eval::EvalError;

/// Errors from building a benchmark. A failed generation or an unreadable audit reply is not
/// an error: it is counted and recorded, and the pair is dropped with that reason.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// Rendering, leakage or cache errors from the evaluation crate.
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// Writing the exported dataset failed.
    #[error(transparent)]
    Data(#[from] DataError),
    /// The input cannot be built from (no rows, an example without ranked posts, …).
    #[error("{0}")]
    Input(String),
    /// A file of the build folder could not be written or read. The message names the file;
    /// the I/O error is the cause (printed once, as the cause).
    #[error("cannot read or write `{path}`")]
    Io {
        /// The file.
        path: String,
        /// What went wrong.
        #[source]
        cause: std::io::Error,
    },
    /// A backend returned the wrong number of results for a batch.
    #[error("`{model}` returned {got} results for {expected} requests")]
    BackendShape {
        /// The model spec.
        model: String,
        /// Results returned.
        got: usize,
        /// Requests sent.
        expected: usize,
    },
}

impl BuildError {
    /// An I/O error on `path`.
    pub fn io(path: &std::path::Path, cause: std::io::Error) -> Self {
        BuildError::Io { path: path.display().to_string(), cause }
    }
}
