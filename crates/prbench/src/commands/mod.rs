//! One module per verb.

pub mod bench;
pub mod bench_remote;
pub mod cache;
pub mod conditions;
pub mod data;
pub mod eval;
pub mod load;
pub mod retrieve;
pub mod train;
