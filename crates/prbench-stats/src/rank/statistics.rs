//! The five rank statistics and the input checks and rankings they share.

use std::cmp::Ordering;

use super::{Input, RankError, MIN_MODELS};

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
pub(super) fn validate(x: &[f64], y: &[f64]) -> Result<usize, RankError> {
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

pub(super) fn check_p(p: f64) -> Result<(), RankError> {
    if p > 0.0 && p < 1.0 {
        Ok(())
    } else {
        Err(RankError::InvalidPersistence { p })
    }
}

/// Twice the average (1-based) rank of every value, as `scipy.stats.rankdata(v, "average")`
/// times 2: a tie group occupying sorted positions `i..=j` (0-based) gets `(i + 1) + (j + 1)`.
/// Doubled so that it is an exact integer.
pub(super) fn doubled_average_ranks(v: &[f64]) -> Vec<i64> {
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

pub(super) fn check_relevance(relevance: &[f64]) -> Result<(), RankError> {
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
///
/// [`DEFAULT_RBO_P`]: super::DEFAULT_RBO_P
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
