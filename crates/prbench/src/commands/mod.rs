//! One module per verb.

pub mod data;
pub mod eval;
