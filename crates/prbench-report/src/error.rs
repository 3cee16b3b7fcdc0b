//! What can go wrong reading results for a report: each error names the file (and line) and
//! says what to do.

use std::path::PathBuf;

/// An error of [`crate::sources`], [`crate::leaderboard`] or [`crate::html`].
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file or folder could not be read.
    #[error("cannot read `{path}`: {cause}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause (in the message, not chained, so it prints once).
        cause: std::io::Error,
    },
    /// A JSON or JSONL file did not parse as the record it should hold.
    #[error("`{path}`{}: {cause}; the file is damaged or was written by something else: rerun the command that wrote it", line.map(|l| format!(" line {l}")).unwrap_or_default())]
    Json {
        /// The file.
        path: PathBuf,
        /// 1-based line for JSONL files.
        line: Option<usize>,
        /// The parse error (it names the field).
        cause: serde_json::Error,
    },
    /// A path is not something a report can show, or its files disagree.
    #[error("`{path}`: {reason}")]
    Layout {
        /// The path.
        path: PathBuf,
        /// What is wrong and what to do.
        reason: String,
    },
    /// `prbench report --out` or `prbench leaderboard --out` names a path that must not be
    /// written to.
    #[error("--out `{path}`: {reason}")]
    Out {
        /// The path.
        path: PathBuf,
        /// What is there and what to do.
        reason: String,
    },
    /// A `prbench report --data` that is the dataset of none of the runs.
    #[error("--data `{spec}`: {reason}")]
    UnusedData {
        /// The spec given.
        spec: String,
        /// What it was compared with and what to do.
        reason: String,
    },
    /// The dataset a run was made on could not be loaded for the item browser.
    #[error("run `{run}`: dataset `{source_spec}`: {reason}")]
    Dataset {
        /// The run folder.
        run: PathBuf,
        /// The dataset spec its manifest records.
        source_spec: String,
        /// What is wrong and what to do.
        reason: String,
    },
}

/// Shorthand for `Result<T, ReportError>`.
pub type Result<T> = std::result::Result<T, ReportError>;

pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> ReportError {
    let path = path.into();
    move |cause| ReportError::Io { path, cause }
}

pub(crate) fn layout(path: impl Into<PathBuf>, reason: impl Into<String>) -> ReportError {
    ReportError::Layout { path: path.into(), reason: reason.into() }
}
