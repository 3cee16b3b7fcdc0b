//! Statistics for prbench (PROTOCOL.md §3–5): per-item outcomes, accuracy under the three tie
//! rules, seeded stratified percentile-bootstrap confidence intervals, and position-bias figures
//! for pairwise judges, rank correlation of model rankings, and inter-annotator agreement
//! (Krippendorff's alpha, [`agreement`]), and latency summaries with one percentile rule
//! ([`latency`]). Pure logic, no engine dependencies.
#![deny(missing_docs)]

pub mod accuracy;
pub mod agreement;
pub mod best_of_k;
pub mod bootstrap;
pub mod latency;
pub mod outcome;
pub mod paired;
pub mod position;
pub mod rank;

pub use accuracy::{Ratio, Tally, TieMode};
pub use best_of_k::{
    best_of_k_curve, default_ks, expected_best_of_k, BestOfKError, CurvePoint, ScoreList,
};
pub use bootstrap::{
    accuracy_with_ci, bootstrap_ci, bootstrap_distribution, percentile, point, AccuracyEstimate,
    BootstrapConfig, Distribution, Interval, Stat,
};
pub use latency::LatencySummary;
pub use outcome::ItemResult;
pub use position::{position_bias, PositionBias, PositionItem, Slot};
pub use rank::{
    bootstrap_comparison, bootstrap_correlations, comparison_on_resamples, correlations,
    kendall_tau_b, leave_one_out, ndcg, rbo_ext, spearman, spearman_permutation_p, weighted_tau,
    BootstrapComparison, CorrelationBootstrap, CorrelationSet, DropRange, Input, LeaveOneOut,
    LeaveOneOutDrop, PairComparison, PairedDifference, PerStatistic, PermutationTest, RankError,
    ResampledComparison, StatInterval, DEFAULT_RBO_P, MIN_MODELS,
};
