//! Human evaluation of benchmark pairs (`prbench annotate`): the paper's check that
//! a pair differs only in personal fit (Personalized RewardBench §3.3, arXiv 2604.07343).
//! Raters score each answer 1–5 on four dimensions ([`dims::Dimension`]) and say which answer
//! fits the user better, on a page that never shows which answer is chosen.
//!
//! - [`assign`]: which annotator rates which item (balanced, seeded), and the answer order;
//! - [`store`]: the SQLite store (items, hashed tokens, assignment, ratings);
//! - `server` (the default feature `server`): the axum server and its compiled-in rating page;
//! - [`export`]: one row per annotator × item × answer × dimension, with the true label;
//! - [`report`]: the human-evaluation report (the paper's table, agreement, label checks);
//! - [`agreement`]: Krippendorff's alpha (nominal, ordinal, interval) with a bootstrap CI over
//!   units, from `prbench-stats`;
//! - [`flags`]: the command-line flags of `prbench annotate` (clap groups);
//! - [`front`]: each sub-verb's work behind those flags (options in; notes, links and files out).
#![deny(missing_docs)]

pub mod assign;
pub mod dims;
pub mod error;
pub mod export;
pub mod flags;
pub mod front;
pub mod report;
#[cfg(feature = "server")]
pub mod server;
pub mod store;
pub mod submission;

pub use error::AnnotateError;
/// Krippendorff's alpha and its report, defined in `prbench-stats` (agreement is statistics,
/// for ratings from any source).
pub use prbench_stats::agreement;
pub use store::{Opened, Store, StoreSpec};
pub use submission::{AnswerRating, Submission};
