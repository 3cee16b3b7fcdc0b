//! The on-disk records of prbench, one typed definition per file format, used by every crate
//! that writes or reads them: a run's `outcomes.jsonl` ([`outcome`]), `summary.json` and its
//! Markdown form `summary.md` ([`summary`], [`markdown`]) and `manifest.json` ([`manifest`]),
//! the conditioning matrix `<id>-matrix.{json,md}` ([`matrix`]), a Best-of-N table
//! `bon-<judge>.json` ([`bon`]) and a build folder's `build/build.json` ([`build`]). No engine,
//! no server: a reader of these files compiles only this and the foundations' value types
//! (`prbench-stats`, `prbench-models`, `prbench-data`).
#![deny(missing_docs)]

pub mod bon;
pub mod build;
pub mod manifest;
pub mod markdown;
pub mod matrix;
pub mod outcome;
pub mod plural;
pub mod summary;

pub use summary::*;
