//! The four rating dimensions raters score every answer on, 1–5: the one definition in
//! [`prbench_data::dims`] (shared with the LLM audit of `prbench-build`), re-exported under the
//! name this crate's modules and users know.

pub use prbench_data::dims::{Dimension, MAX_SCORE, MIN_SCORE};
