//! What a model is to prbench, apart from any engine: the role traits ([`RewardModel`],
//! [`Judge`], [`Generator`], [`NextTokenScorer`]), the values that cross the backend boundary,
//! model specs, chat templates, the verdict readers, where the pinned model files live, and the
//! control baselines. Engines (llama.cpp, candle, HTTP servers) live in their own crates and
//! implement these traits; nothing here compiles an engine.
#![deny(missing_docs)]

pub mod assets;
pub mod baselines;
pub mod chat_template;
pub mod error;
pub mod file_hash;
pub mod io;
pub mod judge;
pub mod spec;
pub mod template_files;
pub mod traits;
pub mod verdict;
pub mod verdict_parse;
pub mod verdict_reader;

pub use error::{BoxError, ModelError};
pub use io::*;
pub use traits::*;
pub use verdict::{Choice, Verdict};
