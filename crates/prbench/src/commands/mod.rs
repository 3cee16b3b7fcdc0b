//! One module per verb.

pub mod bench;
pub mod bench_all;
pub mod bench_child;
pub mod bench_harness;
pub mod bench_judge;
pub mod bench_remote;
pub mod bench_serve;
pub mod bon;
pub mod cache;
pub mod conditions;
pub mod correlate;
pub mod data;
pub mod eval;
pub mod load;
pub mod retrieve;
pub mod serve_reward;
pub mod train;
