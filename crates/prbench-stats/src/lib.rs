//! Statistics for prbench (PROTOCOL.md §3–5): per-item outcomes, accuracy under the three tie
//! rules, seeded stratified percentile-bootstrap confidence intervals, and position-bias figures
//! for pairwise judges. Pure logic, no engine dependencies.
#![warn(missing_docs)]

pub mod accuracy;
pub mod bootstrap;
pub mod outcome;
pub mod paired;
pub mod position;

pub use accuracy::{Ratio, Tally, TieMode};
pub use bootstrap::{
    accuracy_with_ci, bootstrap_ci, bootstrap_distribution, percentile, point, AccuracyEstimate,
    BootstrapConfig, Distribution, Interval, Stat,
};
pub use outcome::ItemResult;
pub use position::{position_bias, PositionBias, PositionItem, Slot};
