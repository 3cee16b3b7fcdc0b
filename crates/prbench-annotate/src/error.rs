//! Errors of `prbench annotate`.

use std::path::PathBuf;

/// What went wrong, with the file or value at fault and what to do.
#[derive(Debug, thiserror::Error)]
pub enum AnnotateError {
    /// `--annotators` or `--per-item` cannot be used.
    #[error("{0}")]
    Annotators(String),
    /// `--public-url` cannot start the printed links.
    #[error("--public-url `{url}` {reason}; give the address annotators reach, e.g. `https://rate.example.org` or `https://host/prefix`")]
    PublicUrl {
        /// The address as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
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
    /// The SQLite store failed. The message names the file; the SQLite error is the cause
    /// (printed once, as the cause).
    #[error("annotation store `{path}` failed")]
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
    /// The folder or a file cannot be used as asked (no store in it, being served by another
    /// process, would overwrite ratings, holds files this command did not make); `reason` says
    /// why and what to do. There is no underlying error.
    #[error("`{path}`: {reason}")]
    Refused {
        /// The folder or file.
        path: PathBuf,
        /// Why, and what to do instead.
        reason: String,
    },
    /// Reading or writing a file failed. The message names the file; the I/O error is the
    /// cause (printed once, as the cause).
    #[error("cannot read or write `{path}`")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}
