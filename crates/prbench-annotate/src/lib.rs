//! Human evaluation of benchmark pairs (`prbench annotate`, issue 19): the paper's check that
//! a pair differs only in personal fit (Personalized RewardBench §3.3, arXiv 2604.07343).
//! Raters score each answer 1–5 on four dimensions ([`dims::Dimension`]) and say which answer
//! fits the user better, on a page that never shows which answer is chosen.
//!
//! - [`assign`]: which annotator rates which item (balanced, seeded), and the answer order;
//! - [`store`]: the SQLite store (items, hashed tokens, assignment, ratings);
//! - [`server`]: the axum server and its compiled-in rating page;
//! - [`export`]: one row per annotator × item × answer × dimension, with the true label;
//! - [`load`]: the server under load (`prbench bench annotate`);
//! - [`report`]: the human-evaluation report (the paper's table, agreement, label checks);
//! - [`agreement`]: Krippendorff's alpha (nominal, ordinal, interval) with a bootstrap CI over
//!   units, for ratings from any source (`annotator,unit,dimension,score` CSV).
#![warn(missing_docs)]

pub mod agreement;
pub mod assign;
pub mod dims;
pub mod error;
pub mod export;
pub mod load;
pub mod report;
pub mod server;
pub mod store;
pub mod submission;

pub use error::AnnotateError;
pub use store::{Opened, Store, StoreSpec};
pub use submission::{AnswerRating, Submission};
