//! Reports for prbench runs: the [`Summary`] data that `summary.json` holds and its Markdown
//! rendering (`summary.md`), the conditioning matrix, the leaderboard across runs
//! ([`leaderboard`]) and the self-contained HTML report ([`html`]). No engine dependencies
//! (docs/ARCHITECTURE.md, "Crates").
#![deny(missing_docs)]

pub mod correlation;
pub mod error;
pub mod guide;
pub mod html;
pub mod leaderboard;
pub mod plots;
pub mod sources;

// The run records and their Markdown forms, defined once in prbench-records.
pub use prbench_records::{markdown, matrix, plural, summary};
pub use summary::*;
