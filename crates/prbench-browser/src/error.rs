//! The one error type of this crate.

use std::path::PathBuf;
use std::time::Duration;

/// Everything that can go wrong while driving Chromium.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BrowserError {
    /// No Chromium binary was found.
    #[error("chromium not found ({tried}); run `scripts/setup.sh --tests` to install it, or set `PRBENCH_CHROMIUM` to its path")]
    NotFound {
        /// The places that were looked at.
        tried: String,
    },
    /// Chromium was found but did not start, or did not answer on the DevTools pipe.
    #[error("chromium `{binary}` did not start: {message}")]
    Launch {
        /// The binary that was run.
        binary: PathBuf,
        /// What went wrong, with the tail of Chromium's stderr when there is one.
        message: String,
    },
    /// Reading or writing a file (a screenshot, the profile directory).
    #[error("I/O error on `{}`", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A DevTools command returned an error.
    #[error("DevTools `{method}` failed: {message}")]
    Protocol {
        /// The command, e.g. `Page.navigate`.
        method: String,
        /// Chromium's message.
        message: String,
    },
    /// Navigation failed (e.g. `net::ERR_FILE_NOT_FOUND`).
    #[error("navigation to `{url}` failed: {message}")]
    Navigation {
        /// The URL.
        url: String,
        /// Chromium's error text.
        message: String,
    },
    /// The evaluated JavaScript threw (or its promise rejected).
    #[error("JavaScript threw: {message}")]
    Js {
        /// The exception's description.
        message: String,
    },
    /// No element matches the selector.
    #[error("no element matches `{selector}`")]
    NoElement {
        /// The CSS selector.
        selector: String,
    },
    /// Something did not happen in time.
    #[error("timed out after {after:?} waiting for {what}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long was waited.
        after: Duration,
    },
    /// Chromium closed the DevTools pipe (it exited or crashed).
    #[error("chromium closed the DevTools pipe (it exited or crashed)")]
    Closed,
}
