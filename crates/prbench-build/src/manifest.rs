//! `build/build.json`: what a build used and what it produced, enough to reproduce it. The
//! record types are `prbench_records::build`'s, one definition for the writer (this crate) and
//! the report.

pub use prbench_records::build::{BuildManifest, InputInfo, PromptHashes, StageCounts, StageTimes};
