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

use std::cmp::Ordering;
use std::fmt;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::bootstrap::{percentile, Interval};

mod compare;
pub use compare::{
    bootstrap_comparison, comparison_on_resamples, BootstrapComparison, PairComparison,
    PairedDifference, ResampledComparison,
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
// Validation and ranking helpers.

fn cmp_f64(a: f64, b: f64) -> Ordering {
    // Inputs are validated finite; partial_cmp treats -0.0 == 0.0 like `==` does.
    a.partial_cmp(&b).unwrap_or(Ordering::Equal)
}

fn check_finite(v: &[f64], input: Input) -> Result<(), RankError> {
    match v.iter().position(|a| !a.is_finite()) {
        Some(index) => Err(RankError::NonFinite { input, index, value: v[index] }),
        None => Ok(()),
    }
}

/// Lengths, [`MIN_MODELS`], finiteness.
fn validate(x: &[f64], y: &[f64]) -> Result<usize, RankError> {
    if x.len() != y.len() {
        return Err(RankError::LengthMismatch { benchmark: x.len(), downstream: y.len() });
    }
    if x.len() < MIN_MODELS {
        return Err(RankError::TooFewModels { n: x.len(), min: MIN_MODELS });
    }
    check_finite(x, Input::Benchmark)?;
    check_finite(y, Input::Downstream)?;
    Ok(x.len())
}

fn is_constant(v: &[f64]) -> bool {
    v.iter().all(|&a| a == v[0])
}

fn check_not_constant(x: &[f64], y: &[f64]) -> Result<(), RankError> {
    match (is_constant(x), is_constant(y)) {
        (true, true) => Err(RankError::ConstantInput { input: Input::Both }),
        (true, false) => Err(RankError::ConstantInput { input: Input::Benchmark }),
        (false, true) => Err(RankError::ConstantInput { input: Input::Downstream }),
        (false, false) => Ok(()),
    }
}

fn check_p(p: f64) -> Result<(), RankError> {
    if p > 0.0 && p < 1.0 {
        Ok(())
    } else {
        Err(RankError::InvalidPersistence { p })
    }
}

/// Twice the average (1-based) rank of every value, as `scipy.stats.rankdata(v, "average")`
/// times 2: a tie group occupying sorted positions `i..=j` (0-based) gets `(i + 1) + (j + 1)`.
/// Doubled so that it is an exact integer.
fn doubled_average_ranks(v: &[f64]) -> Vec<i64> {
    let n = v.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| cmp_f64(v[a], v[b]));
    let mut ranks = vec![0i64; n];
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && v[order[j + 1]] == v[order[i]] {
            j += 1;
        }
        for &k in &order[i..=j] {
            ranks[k] = (i + j + 2) as i64;
        }
        i = j + 1;
    }
    ranks
}

/// Model indices by decreasing value, ties by ascending model index (a stable sort).
fn order_desc(v: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&a, &b| cmp_f64(v[b], v[a]));
    order
}

fn clip_unit(v: f64) -> f64 {
    v.clamp(-1.0, 1.0)
}

// ---------------------------------------------------------------------------------------------
// The five statistics.

/// Spearman's rank correlation rho: the Pearson correlation of the average ranks (ties share
/// the mean of the ranks they span), clipped to [−1, 1] — exactly
/// `scipy.stats.spearmanr(x, y).statistic` (which ranks with `rankdata(method="average")` and
/// takes `np.corrcoef`).
///
/// `x` = benchmark, `y` = downstream, one value per model. Dimensionless, in [−1, 1].
///
/// # Errors
/// [`RankError::LengthMismatch`], [`RankError::TooFewModels`] (n < 3), [`RankError::NonFinite`];
/// [`RankError::ConstantInput`] when `x` or `y` is constant (scipy: nan).
pub fn spearman(x: &[f64], y: &[f64]) -> Result<f64, RankError> {
    validate(x, y)?;
    check_not_constant(x, y)?;
    let rx = doubled_average_ranks(x);
    let ry = doubled_average_ranks(y);
    Ok(pearson_of_ranks(&rx, &ry))
}

/// Pearson correlation of two doubled-rank vectors (neither constant).
fn pearson_of_ranks(rx: &[i64], ry: &[i64]) -> f64 {
    let n = rx.len() as f64;
    let mx = rx.iter().sum::<i64>() as f64 / n;
    let my = ry.iter().sum::<i64>() as f64 / n;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (&a, &b) in rx.iter().zip(ry) {
        let (da, db) = (a as f64 - mx, b as f64 - my);
        sxy += da * db;
        sxx += da * da;
        syy += db * db;
    }
    clip_unit(sxy / (sxx.sqrt() * syy.sqrt()))
}

/// Kendall's tau-b: `(C − D) / sqrt((P − T_x)·(P − T_y))` over the `P = n(n−1)/2` pairs of
/// models, with `C`/`D` the concordant/discordant pairs (pairs tied in either input are neither)
/// and `T_x`/`T_y` the pairs tied in `x`/`y` (Kendall 1945) — exactly
/// `scipy.stats.kendalltau(x, y).statistic` (`variant="b"`, the default), clipped to [−1, 1] as
/// scipy does. Counted over all pairs, O(n²), in exact integers.
///
/// `x` = benchmark, `y` = downstream. Dimensionless, in [−1, 1].
///
/// # Errors
/// As [`spearman`]: [`RankError::ConstantInput`] when `x` or `y` is constant (scipy: nan).
pub fn kendall_tau_b(x: &[f64], y: &[f64]) -> Result<f64, RankError> {
    let n = validate(x, y)?;
    check_not_constant(x, y)?;
    let (mut con_minus_dis, mut x_ties, mut y_ties) = (0i64, 0i64, 0i64);
    for i in 0..n {
        for j in i + 1..n {
            let sx = cmp_f64(x[i], x[j]);
            let sy = cmp_f64(y[i], y[j]);
            if sx == Ordering::Equal {
                x_ties += 1;
            }
            if sy == Ordering::Equal {
                y_ties += 1;
            }
            if sx != Ordering::Equal && sy != Ordering::Equal {
                con_minus_dis += if sx == sy { 1 } else { -1 };
            }
        }
    }
    let total = (n * (n - 1) / 2) as i64;
    let tau =
        con_minus_dis as f64 / ((total - x_ties) as f64).sqrt() / ((total - y_ties) as f64).sqrt();
    Ok(clip_unit(tau))
}

/// Vigna's weighted tau with scipy's defaults: additive hyperbolic weighting (τ_h), averaged
/// over the two lexicographic rankings — exactly `scipy.stats.weightedtau(x, y).statistic`
/// (`rank=True`, `weigher=None`, `additive=True`).
///
/// Definition (Vigna 2015, "A weighted correlation index for rankings with ties", WWW'15; scipy's
/// `weightedtau` docstring): given an importance rank `r_i ∈ {0, …, n−1}` per model and the
/// hyperbolic weigher `w(r) = 1/(r + 1)`, a pair `{i, j}` weighs `w_ij = w(r_i) + w(r_j)`, and
///
/// `τ(x, y; r) = Σ_{i<j} w_ij·sgn(x_i − x_j)·sgn(y_i − y_j) / sqrt(Σ_{i<j, x_i≠x_j} w_ij · Σ_{i<j, y_i≠y_j} w_ij)`,
///
/// clipped to [−1, 1]. With `rank=True` scipy returns `(τ(x, y; r_xy) + τ(y, x; r_yx)) / 2`,
/// where `r_xy` is the decreasing lexicographic rank by (`x`, then `y`): rank 0 goes to the model
/// with the largest `x`, ties in `x` broken by the larger `y` (models tied in both `x` and `y`
/// are interchangeable, so their order does not matter). scipy computes this with Knight's
/// merge-sort algorithm in O(n log n); here the pairs are summed directly, O(n²), which agrees
/// to rounding (checked against scipy 1.16.3 with heavy ties).
///
/// `x` = benchmark, `y` = downstream. Dimensionless, in [−1, 1].
///
/// # Errors
/// As [`spearman`]: [`RankError::ConstantInput`] when `x` or `y` is constant (scipy: nan).
pub fn weighted_tau(x: &[f64], y: &[f64]) -> Result<f64, RankError> {
    validate(x, y)?;
    check_not_constant(x, y)?;
    Ok((weighted_tau_one(x, y) + weighted_tau_one(y, x)) / 2.0)
}

/// τ(x, y; r_xy) with the decreasing lexicographic rank by (x, y). Neither input constant.
fn weighted_tau_one(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| cmp_f64(x[b], x[a]).then(cmp_f64(y[b], y[a])));
    let mut weight = vec![0.0; n];
    for (rank, &i) in order.iter().enumerate() {
        weight[i] = 1.0 / (rank as f64 + 1.0);
    }
    let (mut num, mut dx, mut dy) = (0.0, 0.0, 0.0);
    for i in 0..n {
        for j in i + 1..n {
            let w = weight[i] + weight[j];
            let sx = cmp_f64(x[i], x[j]);
            let sy = cmp_f64(y[i], y[j]);
            if sx != Ordering::Equal {
                dx += w;
            }
            if sy != Ordering::Equal {
                dy += w;
            }
            if sx != Ordering::Equal && sy != Ordering::Equal {
                num += if sx == sy { w } else { -w };
            }
        }
    }
    clip_unit(num / dx.sqrt() / dy.sqrt())
}

/// Normalized discounted cumulative gain of the order given by `scores` against the gains
/// `relevance`, over the full list — exactly `sklearn.metrics.ndcg_score([relevance], [scores])`
/// (`k=None`, `ignore_ties=False`).
///
/// In prbench: `relevance` = downstream score, `scores` = benchmark score (so the argument order
/// is (y, x), as sklearn's (y_true, y_score)). With the discount `D_i = 1/log2(i + 2)` of 0-based
/// position `i`, `DCG = Σ_groups mean(relevance in group)·Σ_{i in group's positions} D_i` over the
/// groups of tied `scores` in decreasing order (tied models share the average gain of their
/// group: McSherry & Najork 2008, as sklearn); the ideal DCG sorts `relevance` decreasingly; NDCG
/// = DCG / ideal. Gain is the relevance itself (linear, not `2^rel − 1`). In [0, 1].
///
/// When every relevance is 0 the ideal DCG is 0 and NDCG is 0/0: we return **0.0**, as sklearn
/// does (`ndcg_score([[0, 0, 0]], …) == 0.0`).
///
/// # Errors
/// [`RankError::LengthMismatch`], [`RankError::TooFewModels`], [`RankError::NonFinite`]
/// (`relevance` is reported as [`Input::Downstream`], `scores` as [`Input::Benchmark`]);
/// [`RankError::NegativeRelevance`] when a relevance is below 0 (sklearn raises ValueError).
pub fn ndcg(relevance: &[f64], scores: &[f64]) -> Result<f64, RankError> {
    let n = validate(scores, relevance)?;
    check_relevance(relevance)?;
    // sklearn: discount = 1 / (np.log(np.arange(n) + 2) / np.log(2)).
    let discount: Vec<f64> = (0..n).map(|i| 1.0 / (((i + 2) as f64).ln() / 2f64.ln())).collect();
    let mut cumsum = Vec::with_capacity(n);
    let mut acc = 0.0;
    for d in &discount {
        acc += d;
        cumsum.push(acc);
    }
    // Tie-averaged DCG (sklearn's _tie_averaged_dcg).
    let order = order_desc(scores);
    let mut dcg = 0.0;
    let mut start = 0;
    let mut previous_cum = 0.0;
    while start < n {
        let mut end = start;
        while end + 1 < n && scores[order[end + 1]] == scores[order[start]] {
            end += 1;
        }
        let mut sum = 0.0;
        for &m in &order[start..=end] {
            sum += relevance[m];
        }
        let mean = sum / (end - start + 1) as f64;
        dcg += mean * (cumsum[end] - previous_cum);
        previous_cum = cumsum[end];
        start = end + 1;
    }
    // Ideal DCG: relevance sorted decreasingly.
    let mut ideal_order = relevance.to_vec();
    ideal_order.sort_by(|a, b| cmp_f64(*b, *a));
    let ideal: f64 = ideal_order.iter().zip(&discount).map(|(r, d)| r * d).sum();
    Ok(if ideal == 0.0 { 0.0 } else { dcg / ideal })
}

fn check_relevance(relevance: &[f64]) -> Result<(), RankError> {
    match relevance.iter().position(|&r| r < 0.0) {
        Some(index) => Err(RankError::NegativeRelevance { index, value: relevance[index] }),
        None => Ok(()),
    }
}

/// Extrapolated rank-biased overlap, RBO_EXT (Webber, Moffat & Zobel 2010, "A similarity measure
/// for indefinite rankings", ACM TOIS 28(4), eq. 32), of the model orders induced by `x` and `y`
/// — exactly `rbo.RankingSimilarity(S, T).rbo_ext(p)` of the PyPI package `rbo` 0.1.3.
///
/// `S` lists the model indices by decreasing `x` (benchmark) and `T` by decreasing `y`
/// (downstream); **ties are ordered by ascending model index** (a stable sort), so tied models
/// are not treated specially — RBO of a tied input depends on the models' input order, and a
/// constant input is compared as the order 0, 1, …, n − 1. Both lists hold the same n models, so
/// with the agreement `A_d = |S[..d] ∩ T[..d]| / d` at depth d,
///
/// `RBO_EXT = (1 − p)·Σ_{d=1..n} p^(d−1)·A_d + A_n·p^n` (with `A_n = 1`),
///
/// clamped to [0, 1] (it is in [0, 1] up to rounding). `p` is the persistence ([`DEFAULT_RBO_P`]).
///
/// # Errors
/// [`RankError::LengthMismatch`], [`RankError::TooFewModels`], [`RankError::NonFinite`];
/// [`RankError::InvalidPersistence`] unless 0 < p < 1.
pub fn rbo_ext(x: &[f64], y: &[f64], p: f64) -> Result<f64, RankError> {
    let n = validate(x, y)?;
    check_p(p)?;
    let s = order_desc(x);
    let t = order_desc(y);
    let mut in_s = vec![false; n];
    let mut in_t = vec![false; n];
    let mut overlap = 0usize;
    let mut sum = 0.0;
    let mut agreement = 0.0;
    // Depth d + 1 (0-based d), the same accumulation order as the rbo package.
    for d in 0..n {
        let (a, b) = (s[d], t[d]);
        in_s[a] = true;
        in_t[b] = true;
        if a == b {
            overlap += 1;
        } else {
            overlap += usize::from(in_t[a]) + usize::from(in_s[b]);
        }
        agreement = overlap as f64 / (d + 1) as f64;
        sum += (1.0 - p) * p.powi(d as i32) * agreement;
    }
    Ok((sum + agreement * p.powi(n as i32)).clamp(0.0, 1.0))
}

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

// ---------------------------------------------------------------------------------------------
// Permutation test of Spearman's rho.

/// A permutation test of Spearman's rho ([`spearman_permutation_p`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PermutationTest {
    /// The observed rho ([`spearman`]).
    pub rho: f64,
    /// Two-sided p-value (scipy's convention, see [`spearman_permutation_p`]), in (0, 1].
    pub p_value: f64,
    /// Whether all n! pairings were enumerated (exact) rather than sampled (Monte Carlo).
    pub exact: bool,
    /// Number of pairings evaluated: n! when exact, else the number of resamples.
    pub permutations: u64,
}

/// Two-sided permutation test of Spearman's rho: the null distribution pairs `y` with `x` in
/// every order (permuting `y` against `x`), as `scipy.stats.permutation_test((x,), rho,
/// permutation_type="pairings", alternative="two-sided", n_resamples=resamples)` with
/// `rho(x') = spearmanr(x', y).statistic`.
///
/// **p-value (scipy's convention).** With `L` = #{pairings with rho ≤ rho_obs} and `G` =
/// #{pairings with rho ≥ rho_obs} among the `M` pairings evaluated,
/// `p = min(1, 2·min(L + a, G + a) / (M + a))`, where `a = 0` when exact and `a = 1` for Monte
/// Carlo (Phipson & Smyth 2010; scipy's `adjustment`). This is not `P(|rho| ≥ |rho_obs|)`: with
/// ties the null distribution need not be symmetric about 0, and scipy doubles the smaller tail.
/// rho is an increasing function of `Σ_i 2·rank(x_i)·2·rank(y_π(i))` (means and variances of the
/// ranks do not change under permutation), an exact integer here, so "≤"/"≥" are decided exactly
/// (scipy uses a relative tolerance of 100 machine epsilons on rho for the same purpose).
///
/// **Exact or Monte Carlo.** When `n! ≤ resamples` all n! pairings are enumerated (Heap's
/// algorithm) and the p-value is exact — scipy's choice for a single permuted sample; note that
/// passing `(x, y)` to scipy makes it enumerate `(n!)²` pairings instead, with the same exact
/// p-value. Otherwise `resamples` random pairings are drawn: one `ChaCha8Rng::seed_from_u64(seed)`
/// shuffles a working copy of `y`'s ranks in place before each evaluation by Fisher–Yates,
/// `for i in (1..n).rev() { j = rng.random_range(0..=i) (rand 0.9); swap(i, j) }`. The result
/// depends only on `(x, y, resamples, seed)`.
///
/// # Errors
/// As [`spearman`] (including [`RankError::ConstantInput`]); [`RankError::NoResamples`] when
/// `resamples == 0`.
pub fn spearman_permutation_p(
    x: &[f64],
    y: &[f64],
    resamples: usize,
    seed: u64,
) -> Result<PermutationTest, RankError> {
    let rho = spearman(x, y)?;
    if resamples == 0 {
        return Err(RankError::NoResamples);
    }
    let n = x.len();
    let rx = doubled_average_ranks(x);
    let mut ry = doubled_average_ranks(y);
    let dot = |ry: &[i64]| -> i64 { rx.iter().zip(ry).map(|(a, b)| a * b).sum() };
    let observed = dot(&ry);
    let (mut le, mut ge) = (0u64, 0u64);
    let mut tally = |s: i64| {
        le += u64::from(s <= observed);
        ge += u64::from(s >= observed);
    };
    let factorial = (1..=n as u64).try_fold(1u64, |acc, k| acc.checked_mul(k));
    let (exact, m) = match factorial {
        Some(f) if f <= resamples as u64 => {
            // Heap's algorithm (iterative), updating the dot product per swap.
            let mut s = observed;
            tally(s);
            let mut c = vec![0usize; n];
            let mut i = 1;
            while i < n {
                if c[i] < i {
                    let j = if i % 2 == 0 { 0 } else { c[i] };
                    s += (rx[i] - rx[j]) * (ry[j] - ry[i]);
                    ry.swap(i, j);
                    tally(s);
                    c[i] += 1;
                    i = 1;
                } else {
                    c[i] = 0;
                    i += 1;
                }
            }
            (true, f)
        }
        _ => {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            for _ in 0..resamples {
                for i in (1..n).rev() {
                    let j = rng.random_range(0..=i);
                    ry.swap(i, j);
                }
                tally(dot(&ry));
            }
            (false, resamples as u64)
        }
    };
    let a = if exact { 0.0 } else { 1.0 };
    let tail = (le as f64 + a).min(ge as f64 + a) / (m as f64 + a);
    Ok(PermutationTest { rho, p_value: (2.0 * tail).min(1.0), exact, permutations: m })
}

// ---------------------------------------------------------------------------------------------
// Bootstrap over models.

/// The bootstrap interval of one statistic ([`bootstrap_correlations`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StatInterval {
    /// The statistic on the full sample.
    pub point: f64,
    /// Percentile interval of the resamples on which the statistic is defined; `None` when it
    /// is defined on none.
    pub ci: Option<Interval>,
    /// Resamples on which the statistic is defined (and which make the interval).
    pub defined: usize,
    /// Resamples on which it is undefined (e.g. a resample whose benchmark scores are all the
    /// same model's): skipped for this statistic only, and counted here.
    pub undefined: usize,
}

/// Seeded percentile-bootstrap intervals of the five statistics ([`bootstrap_correlations`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CorrelationBootstrap {
    /// Number of resamples drawn.
    pub resamples: usize,
    /// Seed of the `ChaCha8Rng`.
    pub seed: u64,
    /// Coverage of the intervals.
    pub level: f64,
    /// RBO persistence used.
    pub rbo_p: f64,
    /// One interval per statistic.
    pub stats: PerStatistic<StatInterval>,
}

/// Seeded percentile-bootstrap confidence intervals of all five statistics, resampling models.
///
/// Procedure (deterministic given `seed`): the point estimates are [`correlations`]`(x, y,
/// rbo_p)`. One `ChaCha8Rng::seed_from_u64(seed)` serves all resamples; resample `r = 0, …,
/// resamples − 1` draws `n` model indices with `rng.random_range(0..n)` (rand 0.9), with
/// replacement, and evaluates each statistic on the drawn models in draw order (a model drawn
/// twice appears twice; for RBO the drawn copies are distinct list items, ordered by score and
/// then by draw position). A statistic undefined on a resample (in practice: a constant input
/// for Spearman, Kendall or weighted tau) is skipped for that statistic only and counted in
/// [`StatInterval::undefined`]. Each interval is the `100·(1 − level)/2` and `100·(1 + level)/2`
/// percentiles of the statistic's defined resamples with [`percentile`] (numpy's linear method),
/// computed as in [`crate::bootstrap_ci`].
///
/// # Errors
/// Any error of [`correlations`] on the full sample (a statistic undefined on the full sample has
/// no interval); [`RankError::NoResamples`]; [`RankError::InvalidLevel`] unless 0 < level < 1.
pub fn bootstrap_correlations(
    x: &[f64],
    y: &[f64],
    rbo_p: f64,
    resamples: usize,
    seed: u64,
    level: f64,
) -> Result<CorrelationBootstrap, RankError> {
    let point = correlations(x, y, rbo_p)?;
    if resamples == 0 {
        return Err(RankError::NoResamples);
    }
    if !(level > 0.0 && level < 1.0) {
        return Err(RankError::InvalidLevel { level });
    }
    let n = x.len();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut values: PerStatistic<Vec<f64>> = PerStatistic {
        spearman: Vec::with_capacity(resamples),
        kendall_tau_b: Vec::with_capacity(resamples),
        weighted_tau: Vec::with_capacity(resamples),
        ndcg: Vec::with_capacity(resamples),
        rbo: Vec::with_capacity(resamples),
    };
    let mut undefined =
        PerStatistic { spearman: 0, kendall_tau_b: 0, weighted_tau: 0, ndcg: 0, rbo: 0 };
    let (mut xs, mut ys) = (vec![0.0; n], vec![0.0; n]);
    for _ in 0..resamples {
        for k in 0..n {
            let i = rng.random_range(0..n);
            xs[k] = x[i];
            ys[k] = y[i];
        }
        let got = each(&xs, &ys, rbo_p);
        let got = [got.spearman, got.kendall_tau_b, got.weighted_tau, got.ndcg, got.rbo];
        for ((v, u), g) in values.as_mut_array().into_iter().zip(undefined.as_mut_array()).zip(got)
        {
            match g {
                Ok(value) => v.push(value),
                Err(_) => *u += 1,
            }
        }
    }
    let stats = point.zip(values.zip(undefined)).map(|(point, (mut v, undefined))| {
        v.sort_by(f64::total_cmp);
        StatInterval { point, ci: percentile_interval(&v, level), defined: v.len(), undefined }
    });
    Ok(CorrelationBootstrap { resamples, seed, level, rbo_p, stats })
}

/// The `100·(1 − level)/2` and `100·(1 + level)/2` percentiles of `sorted` (ascending) with
/// [`percentile`], as [`crate::bootstrap_ci`] computes them; `None` when `sorted` is empty.
fn percentile_interval(sorted: &[f64], level: f64) -> Option<Interval> {
    // As bootstrap_ci: 100·(1 − level) computed as 100 − 100·level.
    let tail = (100.0 - 100.0 * level) / 2.0 / 100.0;
    match (percentile(sorted, tail), percentile(sorted, 1.0 - tail)) {
        (Some(lo), Some(hi)) => Some(Interval { lo, hi }),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Leave one model out.

/// The statistics without one model ([`leave_one_out`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeaveOneOutDrop {
    /// Index of the dropped model.
    pub dropped: usize,
    /// Each statistic on the remaining `n − 1` models, or why it is undefined there (e.g.
    /// [`RankError::TooFewModels`] when n − 1 < 3, [`RankError::ConstantInput`]).
    pub stats: PerStatistic<Result<f64, RankError>>,
}

/// The range of one statistic over the drops of [`leave_one_out`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DropRange {
    /// Smallest value over the drops where the statistic is defined; `None` if defined on none.
    pub min: Option<f64>,
    /// Largest such value; `None` if defined on none.
    pub max: Option<f64>,
    /// Drops on which the statistic is undefined.
    pub undefined: usize,
}

/// Leave-one-model-out sensitivity of the five statistics ([`leave_one_out`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeaveOneOut {
    /// One entry per model, in input order.
    pub drops: Vec<LeaveOneOutDrop>,
    /// Per statistic, the min and max over the drops (and how many drops left it undefined).
    pub range: PerStatistic<DropRange>,
}

/// For each model `i`, every statistic (as in [`correlations`]) on the other `n − 1` models
/// (input order kept), each statistic with its own error when undefined; plus the min and max of
/// each statistic over the drops where it is defined.
///
/// # Errors
/// Only for problems of the input as a whole: [`RankError::LengthMismatch`],
/// [`RankError::TooFewModels`] (n < 3), [`RankError::NonFinite`],
/// [`RankError::NegativeRelevance`] (a negative downstream score), and
/// [`RankError::InvalidPersistence`]. With n = 3 every drop leaves 2 models and every entry is
/// [`RankError::TooFewModels`].
pub fn leave_one_out(x: &[f64], y: &[f64], rbo_p: f64) -> Result<LeaveOneOut, RankError> {
    let n = validate(x, y)?;
    check_relevance(y)?;
    check_p(rbo_p)?;
    let mut drops = Vec::with_capacity(n);
    let empty = DropRange { min: None, max: None, undefined: 0 };
    let mut range = PerStatistic {
        spearman: empty,
        kendall_tau_b: empty,
        weighted_tau: empty,
        ndcg: empty,
        rbo: empty,
    };
    for dropped in 0..n {
        let xs: Vec<f64> =
            x.iter().enumerate().filter(|&(i, _)| i != dropped).map(|(_, &v)| v).collect();
        let ys: Vec<f64> =
            y.iter().enumerate().filter(|&(i, _)| i != dropped).map(|(_, &v)| v).collect();
        let stats = each(&xs, &ys, rbo_p);
        let got =
            [&stats.spearman, &stats.kendall_tau_b, &stats.weighted_tau, &stats.ndcg, &stats.rbo];
        for (r, g) in range.as_mut_array().into_iter().zip(got) {
            match g {
                Ok(v) => {
                    r.min = Some(r.min.map_or(*v, |m| m.min(*v)));
                    r.max = Some(r.max.map_or(*v, |m| m.max(*v)));
                }
                Err(_) => r.undefined += 1,
            }
        }
        drops.push(LeaveOneOutDrop { dropped, stats });
    }
    Ok(LeaveOneOut { drops, range })
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
