//! Reports for prbench runs: the [`Summary`] data that `summary.json` holds and its Markdown
//! rendering (`summary.md`). No engine dependencies (DESIGN.md, workspace).
#![warn(missing_docs)]

pub mod correlation;
pub mod guide;
pub mod markdown;
pub mod matrix;
pub mod plural;
pub mod summary;

pub use summary::*;
