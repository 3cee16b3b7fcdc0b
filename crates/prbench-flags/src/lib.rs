//! The command-line pieces every verb shares, so that each library can keep its own clap group
//! next to the code that reads it: [`bounds`], the value parsers that give every numeric flag a
//! range, and [`data`], the data-selection flags (`--data`, `--subset`) with the default
//! `data/sample` resolved against the source tree.
//!
//! A foundation crate: it depends on clap only, so a library of any stage may use it.

#![deny(missing_docs)]

pub mod bounds;
pub mod data;
