//! Benchmark ↔ downstream rank statistics (PROTOCOL.md §8).
//!
//! Every function takes two equal-length slices over the same `n` models, in the same order:
//! `x` = **benchmark** score (e.g. accuracy of each reward model) and `y` = **downstream** score
//! (e.g. mean rubric score after best-of-n with that reward model). Higher is better in both.
//!
//! | statistic | reference implementation it matches (to ~1e-15 in practice, tested to 1e-9) |
//! |---|---|
//! | [`spearman`] | `scipy.stats.spearmanr(x, y).statistic` |
//! | [`kendall_tau_b`] | `scipy.stats.kendalltau(x, y).statistic` (tau-b) |
//! | [`weighted_tau`] | `scipy.stats.weightedtau(x, y).statistic` (defaults) |
//! | [`ndcg`] | `sklearn.metrics.ndcg_score([y], [x])` (defaults) |
//! | [`rbo_ext`] | `rbo.RankingSimilarity(S, T).rbo_ext(p)` (PyPI `rbo` 0.1.3) |
//!
//! The parity fixture is written by `tools/correlation_reference.py` and checked by
//! `tests/rank_parity.rs`.
//!
//! **Definedness.** All statistics need at least [`MIN_MODELS`] = 3 models (with two models
//! every rank correlation is ±1 or undefined and carries no information; one floor for all five
//! keeps a [`CorrelationSet`] over the same models) and finite values. Spearman, Kendall and
//! weighted tau are undefined when an input is constant (scipy returns nan): we return
//! [`RankError::ConstantInput`] naming the constant input. NDCG refuses negative relevance
//! ([`RankError::NegativeRelevance`], sklearn raises). RBO is always defined (ties are broken
//! by model index, see [`rbo_ext`]).
//!
//! **Uncertainty.** [`spearman_permutation_p`] (exact or seeded Monte-Carlo permutation test of
//! rho), [`bootstrap_correlations`] (seeded percentile bootstrap over models, undefined
//! resamples counted per statistic) and [`leave_one_out`] (each statistic without each model).
//!
//! **Several benchmarks.** [`bootstrap_comparison`] scores several benchmarks' rankings of the
//! same models against one downstream ranking on one shared bootstrap draw, with the paired
//! difference of every statistic between every two benchmarks.

use std::fmt;

use serde::{Deserialize, Serialize};
use thiserror::Error;

mod compare;
mod statistics;
mod uncertainty;

pub use compare::{
    bootstrap_comparison, comparison_on_resamples, BootstrapComparison, PairComparison,
    PairedDifference, ResampledComparison,
};
#[cfg(test)]
use statistics::doubled_average_ranks;
use statistics::{check_p, validate};
pub use statistics::{kendall_tau_b, ndcg, rbo_ext, spearman, weighted_tau};
use uncertainty::percentile_interval;
pub use uncertainty::{
    bootstrap_correlations, leave_one_out, spearman_permutation_p, CorrelationBootstrap, DropRange,
    LeaveOneOut, LeaveOneOutDrop, PermutationTest, StatInterval,
};

/// The fewest models on which any statistic of this module is computed.
pub const MIN_MODELS: usize = 3;

/// Default RBO persistence `p` (PROTOCOL.md §8): the weight of depth `d` is `(1 − p)·p^(d−1)`, so
/// with 0.9 the top 10 ranks carry about 86% of the weight (Webber, Moffat & Zobel 2010, eq. 21).
pub const DEFAULT_RBO_P: f64 = 0.9;

/// Which input an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Input {
    /// `x`: the benchmark score (for [`ndcg`]: `scores`).
    Benchmark,
    /// `y`: the downstream score (for [`ndcg`]: `relevance`).
    Downstream,
    /// Both inputs.
    Both,
}

impl fmt::Display for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Input::Benchmark => "benchmark",
            Input::Downstream => "downstream",
            Input::Both => "benchmark and downstream",
        })
    }
}

/// Why a rank statistic could not be computed. Serializes as `{"error": "<snake_case variant>",
/// …fields}`.
#[derive(Debug, Clone, PartialEq, Error, Serialize)]
#[serde(tag = "error", rename_all = "snake_case")]
pub enum RankError {
    /// The two inputs differ in length.
    #[error("benchmark has {benchmark} values but downstream has {downstream}; one per model is required")]
    LengthMismatch {
        /// Length of the benchmark input.
        benchmark: usize,
        /// Length of the downstream input.
        downstream: usize,
    },
    /// Fewer than [`MIN_MODELS`] models.
    #[error("{n} models given; rank statistics need at least {min}")]
    TooFewModels {
        /// Number of models given.
        n: usize,
        /// The minimum, [`MIN_MODELS`].
        min: usize,
    },
    /// A NaN or infinite value.
    #[error("{input} value of model {index} is not finite ({value})")]
    NonFinite {
        /// Which input.
        input: Input,
        /// Index of the model.
        index: usize,
        /// The value.
        value: f64,
    },
    /// The statistic is undefined because an input is constant (scipy returns nan).
    #[error("{input} input is constant: the statistic is undefined")]
    ConstantInput {
        /// The constant input ([`Input::Both`] when both are).
        input: Input,
    },
    /// NDCG relevance (the downstream score) must be ≥ 0 (sklearn raises on negative `y_true`).
    #[error("NDCG relevance (downstream score) of model {index} is negative ({value})")]
    NegativeRelevance {
        /// Index of the model.
        index: usize,
        /// The value.
        value: f64,
    },
    /// RBO persistence outside (0, 1).
    #[error("RBO persistence p = {p} is not strictly between 0 and 1")]
    InvalidPersistence {
        /// The value given.
        p: f64,
    },
    /// Zero resamples requested.
    #[error("the number of resamples must be positive")]
    NoResamples,
    /// Interval coverage outside (0, 1).
    #[error("interval level {level} is not strictly between 0 and 1")]
    InvalidLevel {
        /// The value given.
        level: f64,
    },
}

/// One value per statistic of this module.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PerStatistic<T> {
    /// Spearman's rho ([`spearman`]).
    pub spearman: T,
    /// Kendall's tau-b ([`kendall_tau_b`]).
    pub kendall_tau_b: T,
    /// Additive hyperbolic weighted tau ([`weighted_tau`]).
    pub weighted_tau: T,
    /// NDCG of the benchmark order against downstream relevance ([`ndcg`]).
    pub ndcg: T,
    /// Extrapolated rank-biased overlap ([`rbo_ext`]).
    pub rbo: T,
}

impl<T> PerStatistic<T> {
    /// Applies `f` to every statistic's value.
    pub fn map<U>(self, mut f: impl FnMut(T) -> U) -> PerStatistic<U> {
        PerStatistic {
            spearman: f(self.spearman),
            kendall_tau_b: f(self.kendall_tau_b),
            weighted_tau: f(self.weighted_tau),
            ndcg: f(self.ndcg),
            rbo: f(self.rbo),
        }
    }

    fn zip<U>(self, other: PerStatistic<U>) -> PerStatistic<(T, U)> {
        PerStatistic {
            spearman: (self.spearman, other.spearman),
            kendall_tau_b: (self.kendall_tau_b, other.kendall_tau_b),
            weighted_tau: (self.weighted_tau, other.weighted_tau),
            ndcg: (self.ndcg, other.ndcg),
            rbo: (self.rbo, other.rbo),
        }
    }

    fn as_mut_array(&mut self) -> [&mut T; 5] {
        [
            &mut self.spearman,
            &mut self.kendall_tau_b,
            &mut self.weighted_tau,
            &mut self.ndcg,
            &mut self.rbo,
        ]
    }
}

/// The five statistics of one benchmark/downstream pair ([`correlations`]).
pub type CorrelationSet = PerStatistic<f64>;

// ---------------------------------------------------------------------------------------------
// All five at once.

/// All five statistics of one benchmark/downstream pair: [`spearman`]`(x, y)`,
/// [`kendall_tau_b`]`(x, y)`, [`weighted_tau`]`(x, y)`, [`ndcg`]`(y, x)` (relevance = downstream,
/// order = benchmark) and [`rbo_ext`]`(x, y, rbo_p)`.
///
/// # Errors
/// The first error of any of them (checked in that order after the shared input checks and
/// `rbo_p`): use the individual functions for a statistic that is defined when another is not.
pub fn correlations(x: &[f64], y: &[f64], rbo_p: f64) -> Result<CorrelationSet, RankError> {
    validate(x, y)?;
    check_p(rbo_p)?;
    Ok(CorrelationSet {
        spearman: spearman(x, y)?,
        kendall_tau_b: kendall_tau_b(x, y)?,
        weighted_tau: weighted_tau(x, y)?,
        ndcg: ndcg(y, x)?,
        rbo: rbo_ext(x, y, rbo_p)?,
    })
}

/// Each statistic separately, with its own error.
fn each(x: &[f64], y: &[f64], rbo_p: f64) -> PerStatistic<Result<f64, RankError>> {
    PerStatistic {
        spearman: spearman(x, y),
        kendall_tau_b: kendall_tau_b(x, y),
        weighted_tau: weighted_tau(x, y),
        ndcg: ndcg(y, x),
        rbo: rbo_ext(x, y, rbo_p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubled_ranks_match_rankdata() {
        // scipy.stats.rankdata([3, 1, 3, 2, 3]) = [4, 1, 4, 2, 4] → doubled [8, 2, 8, 4, 8].
        assert_eq!(doubled_average_ranks(&[3.0, 1.0, 3.0, 2.0, 3.0]), vec![8, 2, 8, 4, 8]);
        // rankdata([0.5, -0.0, 0.0]) = [3, 1.5, 1.5]: -0.0 and 0.0 tie.
        assert_eq!(doubled_average_ranks(&[0.5, -0.0, 0.0]), vec![6, 3, 3]);
    }

    #[test]
    fn hand_values() {
        // Perfect agreement and reversal.
        let x = [1.0, 2.0, 3.0, 4.0];
        let r = [4.0, 3.0, 2.0, 1.0];
        let close = |a: f64, b: f64| (a - b).abs() < 1e-15;
        // (Rounding: scipy's spearmanr of identical inputs is 0.9999999999999999 too.)
        assert!(close(spearman(&x, &x).unwrap(), 1.0));
        assert!(close(spearman(&x, &r).unwrap(), -1.0));
        assert!(close(kendall_tau_b(&x, &r).unwrap(), -1.0));
        assert!(close(weighted_tau(&x, &r).unwrap(), -1.0));
        assert!(close(rbo_ext(&x, &x, 0.9).unwrap(), 1.0));
        // Kendall, one discordant pair of 3: (2 − 1) / 3.
        assert!(
            (kendall_tau_b(&[1.0, 2.0, 3.0], &[1.0, 3.0, 2.0]).unwrap() - 1.0 / 3.0).abs() < 1e-15
        );
        // NDCG: relevance [3, 2, 1] shown in order [1, 2, 3] (reversed): DCG = 1 + 2/log2(3) +
        // 3/2; ideal = 3 + 2/log2(3) + 1/2.
        let l3 = 3f64.log2();
        let want = (1.0 + 2.0 / l3 + 1.5) / (3.0 + 2.0 / l3 + 0.5);
        assert!((ndcg(&[3.0, 2.0, 1.0], &[1.0, 2.0, 3.0]).unwrap() - want).abs() < 1e-15);
        // RBO of a top swap of 3 items, p = 0.5: A = 0, 1, 1 → 0.5·(0 + 0.5 + 0.25) + 0.125.
        let got = rbo_ext(&[3.0, 2.0, 1.0], &[2.0, 3.0, 1.0], 0.5).unwrap();
        assert!((got - 0.5).abs() < 1e-15, "{got}");
    }

    #[test]
    fn errors() {
        let x = [1.0, 2.0, 3.0];
        assert_eq!(
            spearman(&x, &[1.0, 2.0]),
            Err(RankError::LengthMismatch { benchmark: 3, downstream: 2 })
        );
        assert_eq!(
            kendall_tau_b(&[1.0, 2.0], &[1.0, 2.0]),
            Err(RankError::TooFewModels { n: 2, min: 3 })
        );
        assert!(matches!(
            weighted_tau(&x, &[1.0, f64::NAN, 2.0]),
            Err(RankError::NonFinite { input: Input::Downstream, index: 1, .. })
        ));
        assert_eq!(
            spearman(&[2.0; 3], &x),
            Err(RankError::ConstantInput { input: Input::Benchmark })
        );
        assert_eq!(
            ndcg(&[1.0, -1.0, 0.0], &x),
            Err(RankError::NegativeRelevance { index: 1, value: -1.0 })
        );
        for p in [0.0, 1.0, -0.5, f64::NAN] {
            assert!(matches!(rbo_ext(&x, &x, p), Err(RankError::InvalidPersistence { .. })));
        }
        assert_eq!(ndcg(&[0.0; 3], &x), Ok(0.0));
    }

    #[test]
    fn error_messages() {
        let e = RankError::ConstantInput { input: Input::Downstream };
        assert_eq!(e.to_string(), "downstream input is constant: the statistic is undefined");
    }

    #[test]
    fn leave_one_out_minimum_size() {
        let loo = leave_one_out(&[1.0, 2.0, 3.0], &[1.0, 3.0, 2.0], DEFAULT_RBO_P).unwrap();
        assert_eq!(loo.drops.len(), 3);
        assert!(loo
            .drops
            .iter()
            .all(|d| d.stats.rbo == Err(RankError::TooFewModels { n: 2, min: 3 })));
        assert_eq!(loo.range.spearman, DropRange { min: None, max: None, undefined: 3 });
    }
}
