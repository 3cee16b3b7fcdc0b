//! Several benchmarks' scores of the same models against one downstream ranking: each benchmark's
//! statistics with their bootstrap intervals, and for every two benchmarks the paired bootstrap
//! difference of every statistic (the statistics are PROTOCOL.md §8's, see the parent module).
//!
//! **One draw for all benchmarks.** Every resample draws `n` model indices once and evaluates
//! every benchmark on those same models, so
//! - each benchmark's intervals are exactly [`bootstrap_correlations`] of that benchmark alone
//!   (same seed, same models in the same order): the draw depends only on `n`, the number of
//!   resamples and the seed;
//! - the differences are **paired**: resample `r`'s difference is benchmark `a`'s statistic minus
//!   benchmark `b`'s on the same drawn models, so what the models have in common cancels, and two
//!   identical benchmarks differ by exactly 0 on every resample.
//!
//! **Undefined statistics.** A statistic undefined on a resample for one benchmark (a resample
//! whose drawn models all have the same benchmark score, say) is left out of that benchmark's
//! interval and of the interval of every difference involving it, and counted
//! ([`StatInterval::undefined`], [`PairedDifference::undefined`]); it is never replaced by a
//! value.
//!
//! The work is sequential (no threads): the result depends only on the inputs and the seed.
//!
//! [`bootstrap_correlations`]: super::bootstrap_correlations

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::{
    correlations, each, percentile_interval, CorrelationBootstrap, CorrelationSet, PerStatistic,
    RankError, StatInterval,
};
use crate::bootstrap::Interval;

/// The paired bootstrap difference of one statistic between two benchmarks `a` and `b`
/// ([`PairComparison`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PairedDifference {
    /// `a`'s statistic minus `b`'s, on the full sample.
    pub point: f64,
    /// Percentile interval of the per-resample differences over the resamples on which the
    /// statistic is defined for both benchmarks; `None` when there is no such resample.
    pub ci: Option<Interval>,
    /// Resamples on which the statistic is defined for both (and which make the interval).
    pub defined: usize,
    /// Resamples on which it is undefined for `a`, for `b` or for both: left out, counted here.
    pub undefined: usize,
}

/// The paired differences of the five statistics between benchmark `a` and benchmark `b`
/// (`a − b`), indices into the benchmarks as given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairComparison {
    /// Index of the first benchmark.
    pub a: usize,
    /// Index of the second benchmark.
    pub b: usize,
    /// `a − b`, per statistic.
    pub difference: PerStatistic<PairedDifference>,
}

/// Each benchmark's intervals and the paired differences of every two benchmarks, on given
/// resamples ([`comparison_on_resamples`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResampledComparison {
    /// Number of resamples evaluated.
    pub resamples: usize,
    /// Per benchmark, in input order: each statistic with its interval.
    pub sets: Vec<PerStatistic<StatInterval>>,
    /// Every pair `(a, b)` with `a < b`, in order (0, 1), (0, 2), …, (1, 2), …
    pub pairs: Vec<PairComparison>,
}

/// The seeded bootstrap comparison of several benchmarks against one downstream ranking
/// ([`bootstrap_comparison`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BootstrapComparison {
    /// Number of resamples drawn.
    pub resamples: usize,
    /// Seed of the `ChaCha8Rng`.
    pub seed: u64,
    /// Coverage of the intervals.
    pub level: f64,
    /// RBO persistence used.
    pub rbo_p: f64,
    /// Per benchmark, in input order: exactly what [`super::bootstrap_correlations`] returns for
    /// it alone with the same seed.
    pub sets: Vec<CorrelationBootstrap>,
    /// Every pair `(a, b)` with `a < b`: the paired differences `a − b`.
    pub pairs: Vec<PairComparison>,
}

/// The five statistics as an array, in [`PerStatistic`]'s field order.
fn to_array<T>(p: PerStatistic<T>) -> [T; 5] {
    [p.spearman, p.kendall_tau_b, p.weighted_tau, p.ndcg, p.rbo]
}

/// The inverse of [`to_array`].
fn from_array<T>([spearman, kendall_tau_b, weighted_tau, ndcg, rbo]: [T; 5]) -> PerStatistic<T> {
    PerStatistic { spearman, kendall_tau_b, weighted_tau, ndcg, rbo }
}

/// The defined values (not NaN) of `v`, sorted ascending.
fn defined_sorted(v: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut out: Vec<f64> = v.filter(|x| !x.is_nan()).collect();
    out.sort_by(f64::total_cmp);
    out
}

/// Each benchmark's statistics and the paired difference of every statistic between every two
/// benchmarks, on the resamples `draws` (each a list of `n` model indices; a model may appear
/// several times).
///
/// `xs[s]` holds benchmark `s`'s score of each of the `n` models, `y` their downstream scores, all
/// in the same model order. For each draw `(k_1, …, k_n)` and each benchmark `s`, the statistics
/// of [`correlations`] are evaluated on `x = (xs[s][k_1], …, xs[s][k_n])`, `y = (y[k_1], …,
/// y[k_n])` in draw order (for RBO, ties are broken by draw position), each separately so that
/// one undefined statistic does not take the others with it. Benchmark `s`'s interval of a
/// statistic is the `100·(1 − level)/2` and `100·(1 + level)/2` percentiles (numpy's linear
/// method, [`crate::percentile`]) of its values over the draws where it is defined; the
/// difference `a − b` on a draw is `value_a − value_b`, defined where both are, and its interval
/// is the same percentiles of those differences. Point values are [`correlations`] on the full
/// sample and their differences.
///
/// This is the exact computation [`bootstrap_comparison`] runs on its seeded draws; given every
/// one of the `n^n` possible draws once it is the exact (ideal) bootstrap.
///
/// # Errors
/// The first error of [`correlations`]`(xs[s], y, rbo_p)` over the benchmarks in order (check each
/// benchmark with it first to say which one is at fault); [`RankError::NoResamples`] when `draws`
/// is empty; [`RankError::InvalidLevel`] unless 0 < level < 1.
///
/// # Panics
/// If a draw does not hold exactly `n` indices, each below `n`.
pub fn comparison_on_resamples<I>(
    xs: &[&[f64]],
    y: &[f64],
    rbo_p: f64,
    draws: I,
    level: f64,
) -> Result<ResampledComparison, RankError>
where
    I: IntoIterator,
    I::Item: AsRef<[usize]>,
{
    let points: Vec<CorrelationSet> =
        xs.iter().map(|x| correlations(x, y, rbo_p)).collect::<Result<_, _>>()?;
    if !(level > 0.0 && level < 1.0) {
        return Err(RankError::InvalidLevel { level });
    }
    let n = y.len();
    // values[s][stat][r]: benchmark s's statistic on resample r, NaN where undefined (a defined
    // statistic is never NaN: the inputs are finite).
    let mut values: Vec<[Vec<f64>; 5]> = xs.iter().map(|_| Default::default()).collect();
    let (mut xr, mut yr) = (vec![0.0; n], vec![0.0; n]);
    let mut resamples = 0;
    for draw in draws {
        let draw = draw.as_ref();
        assert_eq!(draw.len(), n, "prbench-stats: a resample draws one model index per model");
        for (k, &i) in draw.iter().enumerate() {
            assert!(i < n, "prbench-stats: resample index {i} is not below the {n} models");
            yr[k] = y[i];
        }
        for (x, v) in xs.iter().zip(&mut values) {
            for (k, &i) in draw.iter().enumerate() {
                xr[k] = x[i];
            }
            for (column, got) in v.iter_mut().zip(to_array(each(&xr, &yr, rbo_p))) {
                column.push(got.unwrap_or(f64::NAN));
            }
        }
        resamples += 1;
    }
    if resamples == 0 {
        return Err(RankError::NoResamples);
    }
    let sets = points
        .iter()
        .zip(&values)
        .map(|(point, v)| {
            let stats: [StatInterval; 5] = std::array::from_fn(|t| {
                let sorted = defined_sorted(v[t].iter().copied());
                StatInterval {
                    point: to_array(*point)[t],
                    ci: percentile_interval(&sorted, level),
                    defined: sorted.len(),
                    undefined: resamples - sorted.len(),
                }
            });
            from_array(stats)
        })
        .collect();
    let mut pairs = Vec::new();
    for a in 0..xs.len() {
        for b in a + 1..xs.len() {
            let (pa, pb) = (to_array(points[a]), to_array(points[b]));
            let difference: [PairedDifference; 5] = std::array::from_fn(|t| {
                // NaN − anything is NaN: a draw undefined for either benchmark is left out.
                let sorted =
                    defined_sorted(values[a][t].iter().zip(&values[b][t]).map(|(va, vb)| va - vb));
                PairedDifference {
                    point: pa[t] - pb[t],
                    ci: percentile_interval(&sorted, level),
                    defined: sorted.len(),
                    undefined: resamples - sorted.len(),
                }
            });
            pairs.push(PairComparison { a, b, difference: from_array(difference) });
        }
    }
    Ok(ResampledComparison { resamples, sets, pairs })
}

/// The model indices of `resamples` bootstrap resamples of `n` models, drawn as
/// [`super::bootstrap_correlations`] draws them: one `ChaCha8Rng::seed_from_u64(seed)`, and for
/// each resample `n` indices `rng.random_range(0..n)` (rand 0.9), with replacement.
fn seeded_draws(n: usize, resamples: usize, seed: u64) -> impl Iterator<Item = Vec<usize>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..resamples).map(move |_| (0..n).map(|_| rng.random_range(0..n)).collect())
}

/// Seeded percentile-bootstrap comparison of several benchmarks against one downstream ranking:
/// per benchmark, the five statistics with their intervals, and for every two benchmarks the
/// paired difference of each statistic with its interval, all from **one** draw of model
/// indices per resample, shared by every benchmark (see the module docs).
///
/// The draws are [`super::bootstrap_correlations`]'s (one `ChaCha8Rng::seed_from_u64(seed)`;
/// resample `r = 0, …, resamples − 1` draws `n` indices with `rng.random_range(0..n)`, rand 0.9),
/// evaluated by [`comparison_on_resamples`]. So `sets[s]` equals
/// `bootstrap_correlations(xs[s], y, rbo_p, resamples, seed, level)` exactly.
///
/// Memory: one `f64` per resample, statistic and benchmark (10,000 resamples of 3 benchmarks:
/// 1.2 MB), plus the sorted differences of one pair and statistic at a time.
///
/// # Errors
/// As [`comparison_on_resamples`]; [`RankError::NoResamples`] when `resamples == 0`.
pub fn bootstrap_comparison(
    xs: &[&[f64]],
    y: &[f64],
    rbo_p: f64,
    resamples: usize,
    seed: u64,
    level: f64,
) -> Result<BootstrapComparison, RankError> {
    let got = comparison_on_resamples(xs, y, rbo_p, seeded_draws(y.len(), resamples, seed), level)?;
    let sets = got
        .sets
        .into_iter()
        .map(|stats| CorrelationBootstrap { resamples, seed, level, rbo_p, stats })
        .collect();
    Ok(BootstrapComparison { resamples, seed, level, rbo_p, sets, pairs: got.pairs })
}
