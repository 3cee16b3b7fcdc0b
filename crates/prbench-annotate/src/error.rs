//! Errors of `prbench annotate`.

use std::path::PathBuf;

/// What went wrong, with the file or value at fault and what to do.
#[derive(Debug, thiserror::Error)]
pub enum AnnotateError {
    /// `--annotators` or `--per-item` cannot be used.
    #[error("{0}")]
    Annotators(String),
    /// The items cannot be rated (none, or repeated ids).
    #[error("{0}")]
    Items(String),
    /// The annotation folder was made for other data or settings.
    #[error("`{path}` was started with {what}: {hint}")]
    Mismatch {
        /// The store file.
        path: PathBuf,
        /// What differs, both values.
        what: String,
        /// What to do.
        hint: String,
    },
    /// The SQLite store failed.
    #[error("annotation store `{path}`: {source}")]
    Store {
        /// The store file.
        path: PathBuf,
        /// The SQLite error.
        #[source]
        source: rusqlite::Error,
    },
    /// The store holds something it should not (a row that fails to decode).
    #[error("annotation store `{path}`: {detail}")]
    Corrupt {
        /// The store file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// Reading or writing a file failed.
    #[error("`{path}`: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}
