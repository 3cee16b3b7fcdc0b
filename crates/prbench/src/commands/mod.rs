//! One module per verb.

pub mod annotate;
pub mod bench;
pub mod bon;
pub mod build;
pub mod cache;
pub mod correlate;
pub mod data;
pub mod eval;
pub mod export;
pub mod report;
pub mod retrieve;
pub mod serve_reward;
pub mod study;
pub mod train;

/// Prints what a loaded dataset holds that changes what some conditions show (empty profiles,
/// empty rubrics: [`prbench_data::dataset_warnings`]) to stderr; commands call it right after
/// loading, before any model loads.
pub(crate) fn print_data_warnings(data: &prbench_data::Dataset) {
    for w in prbench_data::dataset_warnings(data) {
        eprintln!("prbench: {w}");
    }
}
