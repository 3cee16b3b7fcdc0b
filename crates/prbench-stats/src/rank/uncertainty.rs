//! The uncertainty of the statistics: a permutation test of Spearman's rho, a bootstrap over
//! models, and leave one model out.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::statistics::{check_p, check_relevance, doubled_average_ranks, validate};
use super::{correlations, each, spearman, PerStatistic, RankError};
use crate::bootstrap::{percentile, Interval};

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
pub(super) fn percentile_interval(sorted: &[f64], level: f64) -> Option<Interval> {
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
