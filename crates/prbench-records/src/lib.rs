//! The on-disk records of prbench, one typed definition per file format, used by every crate
//! that writes or reads them: a run's `outcomes.jsonl` ([`outcome`]), `summary.json` and its
//! Markdown form `summary.md` ([`summary`], [`markdown`]), and the conditioning matrix
//! `<id>-matrix.{json,md}` ([`matrix`]). No engine, no server: a reader of run files compiles
//! only this, `prbench-stats` and `prbench-models`' value types.
#![deny(missing_docs)]

pub mod markdown;
pub mod matrix;
pub mod outcome;
pub mod plural;
pub mod summary;

pub use summary::*;
