//! Backends for prbench: the role traits ([`RewardModel`], [`Judge`], [`Generator`],
//! [`NextTokenScorer`]), the values that cross the backend boundary, the verdict parser,
//! the local GGUF engine (llama.cpp) and the control baselines.
#![warn(missing_docs)]

pub mod baselines;
pub mod chat_template;
pub mod error;
pub mod file_hash;
pub mod gguf;
pub mod io;
pub mod judge;
pub mod spec;
pub mod template_files;
pub mod traits;
pub mod verdict;
pub mod verdict_parse;
pub mod verdict_reader;

pub use error::ModelError;
pub use io::*;
pub use traits::*;
pub use verdict::{Choice, Verdict};
