//! Seeded, stratified percentile-bootstrap confidence intervals (PROTOCOL.md §5).
//!
//! Every item contributes a [`Ratio`] `(num, den)`; an accuracy is a ratio of sums, so the
//! three [`TieMode`]s are bootstrapped alike (an excluded item is `(0, 0)`). Items carry a
//! stratum label (the subset, e.g. Art / Lifestyle / Society); a resample redraws each stratum
//! separately, with replacement and at its own size, so every resample keeps each subset's
//! size.
//!
//! **Procedure** (all of it deterministic given [`BootstrapConfig::seed`]):
//!
//! 1. Items are grouped by stratum label; strata are visited in ascending label order and the
//!    items of a stratum keep their input order.
//! 2. One generator, `ChaCha8Rng::seed_from_u64(seed)`, serves all resamples. For resample
//!    `r = 0, 1, …, resamples − 1`, for each stratum in order, `n_s` indices are drawn with
//!    `rng.random_range(0..n_s)` (rand 0.9), where `n_s` is the stratum's size.
//! 3. The statistic ([`Stat`]) of each resample is computed; a resample on which it is
//!    undefined (a zero denominator, possible only when items are excluded) is dropped and
//!    counted in [`Distribution::dropped`].
//! 4. The interval is the percentile interval of the kept statistics: the
//!    `100·(1 − level)/2` and `100·(1 + level)/2` percentiles (2.5 and 97.5 for `level` 0.95)
//!    with [`percentile`]'s linear interpolation, i.e. `np.percentile(stats, [2.5, 97.5])`
//!    (numpy's default `method="linear"`).
//!
//! [`TieMode`]: crate::TieMode

mod draw;
mod estimate;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::accuracy::Ratio;

pub use estimate::{
    accuracy_with_ci, accuracy_with_cis, accuracy_with_cis_by_cluster, cluster_sums,
    AccuracyEstimate,
};

/// Which accuracy over several strata.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stat {
    /// Pooled over all items: `Σ num / Σ den`. Undefined when `Σ den == 0`.
    Micro,
    /// The unweighted mean over strata of each stratum's `Σ num / Σ den`. A stratum whose
    /// denominator is 0 on the full sample (every item excluded) takes no part, in the point
    /// estimate or in any resample; undefined when no stratum takes part. A resample in which
    /// a taking-part stratum has denominator 0 is undefined (and dropped).
    Macro,
}

/// The most resamples a CI may ask for. [`bootstrap_distributions`] keeps every resample's
/// statistic (8 bytes per resample per statistic, `Vec::with_capacity(resamples)` up front), and
/// `prbench eval` computes its CIs (subset rows, micro and macro, the five baselines) on every
/// core at once, so one resample costs about 16 bytes per core in flight plus time linear in
/// the item count: 1,000,000 resamples hold 16 MB per core and take seconds per CI, while the
/// 4,294,967,295 a mistyped u32 allows would hold 34 GB per statistic.
pub const MAX_RESAMPLES: usize = 1_000_000;

/// Bootstrap settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BootstrapConfig {
    /// Number of resamples (default 10,000).
    pub resamples: usize,
    /// Seed of the `ChaCha8Rng` (default 42).
    pub seed: u64,
    /// Coverage of the interval, in (0, 1) (default 0.95).
    pub level: f64,
}

impl Default for BootstrapConfig {
    fn default() -> Self {
        BootstrapConfig { resamples: 10_000, seed: 42, level: 0.95 }
    }
}

/// A closed interval `[lo, hi]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Lower end.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
}

/// The bootstrap distribution of a statistic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    /// The statistic of every kept resample, sorted ascending.
    pub values: Vec<f64>,
    /// Resamples dropped because the statistic was undefined on them.
    pub dropped: usize,
}

/// Items grouped by stratum label, in ascending label order.
///
/// # Panics
/// If `strata` is neither empty nor as long as `items`.
fn group(items: &[Ratio], strata: &[usize]) -> Vec<Vec<Ratio>> {
    if strata.is_empty() {
        return if items.is_empty() { Vec::new() } else { vec![items.to_vec()] };
    }
    assert_eq!(
        strata.len(),
        items.len(),
        "prbench-stats: one stratum label per item (or none at all) is required"
    );
    let mut groups: BTreeMap<usize, Vec<Ratio>> = BTreeMap::new();
    for (&s, &item) in strata.iter().zip(items) {
        groups.entry(s).or_default().push(item);
    }
    groups.into_values().collect()
}

/// The statistic from per-stratum sums `(Σ num, Σ den)`; `active[s]` tells whether stratum
/// `s` takes part in a macro average.
fn statistic(sums: &[(f64, f64)], active: &[bool], stat: Stat) -> Option<f64> {
    match stat {
        Stat::Micro => {
            let (num, den) = sums.iter().fold((0.0, 0.0), |(a, b), &(n, d)| (a + n, b + d));
            (den > 0.0).then(|| num / den)
        }
        Stat::Macro => {
            let mut total = 0.0;
            let mut count = 0usize;
            for (&(num, den), &on) in sums.iter().zip(active) {
                if on {
                    if den <= 0.0 {
                        return None;
                    }
                    total += num / den;
                    count += 1;
                }
            }
            (count > 0).then(|| total / count as f64)
        }
    }
}

fn full_sums(groups: &[Vec<Ratio>]) -> Vec<(f64, f64)> {
    groups.iter().map(|g| g.iter().fold((0.0, 0.0), |(a, b), r| (a + r.num, b + r.den))).collect()
}

/// The statistic on the full sample (the point estimate).
///
/// `strata[i]` is item `i`'s stratum label (any `usize`s); an empty `strata` puts all items
/// in one stratum. `None` when the statistic is undefined (no items, or a zero denominator;
/// see [`Stat`]).
///
/// # Panics
/// If `strata` is neither empty nor as long as `items`.
pub fn point(items: &[Ratio], strata: &[usize], stat: Stat) -> Option<f64> {
    let sums = full_sums(&group(items, strata));
    let active: Vec<bool> = sums.iter().map(|&(_, d)| d > 0.0).collect();
    statistic(&sums, &active, stat)
}

/// The bootstrap distribution of `stat` (steps 1–3 of the [module docs](self)).
///
/// `strata` as in [`point`]. With no items, or when the statistic is undefined on the full
/// sample, no resample is drawn and every resample counts as dropped.
///
/// # Panics
/// If `strata` is neither empty nor as long as `items`.
pub fn bootstrap_distribution(
    items: &[Ratio],
    strata: &[usize],
    cfg: &BootstrapConfig,
    stat: Stat,
) -> Distribution {
    bootstrap_distributions(items, strata, cfg, &[stat]).remove(0)
}

/// [`bootstrap_distribution`] of several statistics from the same resamples: one pass of the
/// seeded stream, each resample's per-stratum sums evaluated under every stat. Entry `i` is
/// exactly what [`bootstrap_distribution`] returns for `stats[i]` (the stream does not depend
/// on the stat), at the cost of one.
///
/// # Panics
/// If `strata` is neither empty nor as long as `items`.
pub fn bootstrap_distributions(
    items: &[Ratio],
    strata: &[usize],
    cfg: &BootstrapConfig,
    stats: &[Stat],
) -> Vec<Distribution> {
    let groups = group(items, strata);
    let full = full_sums(&groups);
    let active: Vec<bool> = full.iter().map(|&(_, d)| d > 0.0).collect();
    let defined: Vec<bool> =
        stats.iter().map(|&st| statistic(&full, &active, st).is_some()).collect();
    let mut out: Vec<Distribution> = stats
        .iter()
        .map(|_| Distribution { values: Vec::with_capacity(cfg.resamples), dropped: 0 })
        .collect();
    if !defined.iter().any(|&d| d) {
        return stats
            .iter()
            .map(|_| Distribution { values: Vec::new(), dropped: cfg.resamples })
            .collect();
    }
    // Step 2's draws and per-stratum sums, bit for bit those of the plain loop (`draw`).
    let mut resampler = draw::Resampler::new(&groups, cfg.seed);
    let mut sums = vec![(0.0, 0.0); groups.len()];
    for _ in 0..cfg.resamples {
        resampler.resample(&mut sums);
        for ((d, &st), &ok) in out.iter_mut().zip(stats).zip(&defined) {
            match statistic(&sums, &active, st).filter(|_| ok) {
                Some(v) => d.values.push(v),
                None => d.dropped += 1,
            }
        }
    }
    for (d, &ok) in out.iter_mut().zip(&defined) {
        if ok {
            d.values.sort_by(f64::total_cmp);
        } else {
            *d = Distribution { values: Vec::new(), dropped: cfg.resamples };
        }
    }
    out
}

/// The seeded percentile-bootstrap confidence interval of `stat` (see the
/// [module docs](self) for the exact procedure).
///
/// `None` when `cfg.resamples == 0`, `cfg.level` is not strictly between 0 and 1, or no
/// resample has a defined statistic (no items, or nothing but excluded items).
///
/// # Panics
/// If `strata` is neither empty nor as long as `items`.
pub fn bootstrap_ci(
    items: &[Ratio],
    strata: &[usize],
    cfg: &BootstrapConfig,
    stat: Stat,
) -> Option<Interval> {
    bootstrap_cis(items, strata, cfg, &[stat]).remove(0)
}

/// [`bootstrap_ci`] of several statistics from the same resamples
/// ([`bootstrap_distributions`]); entry `i` equals `bootstrap_ci(…, stats[i])`.
///
/// # Panics
/// If `strata` is neither empty nor as long as `items`.
pub fn bootstrap_cis(
    items: &[Ratio],
    strata: &[usize],
    cfg: &BootstrapConfig,
    stats: &[Stat],
) -> Vec<Option<Interval>> {
    if !(cfg.level > 0.0 && cfg.level < 1.0) || cfg.resamples == 0 {
        return stats.iter().map(|_| None).collect();
    }
    // 100·(1 − level) is computed as 100 − 100·level so that level 0.95 gives exactly 2.5
    // and 97.5, the percentages one would pass to np.percentile.
    let tail_pct = (100.0 - 100.0 * cfg.level) / 2.0;
    bootstrap_distributions(items, strata, cfg, stats)
        .iter()
        .map(|dist| {
            Some(Interval {
                lo: percentile(&dist.values, tail_pct / 100.0)?,
                hi: percentile(&dist.values, (100.0 - tail_pct) / 100.0)?,
            })
        })
        .collect()
}

/// The `q`-quantile (`q` in [0, 1]) of ascending-sorted `sorted` by linear interpolation,
/// exactly as numpy's `np.percentile(x, 100 * q)` with its default `method="linear"`:
/// with `h = (m − 1)·q`, `i = ⌊h⌋`, `g = h − i`, the value is `x[i] + g·(x[i+1] − x[i])`
/// (numpy's `_lerp`, which for `g ≥ 0.5` evaluates it as `x[i+1] − (1 − g)·(x[i+1] − x[i])`;
/// the same is done here so results match bit for bit). `None` for an empty slice or `q`
/// outside [0, 1].
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() || !(0.0..=1.0).contains(&q) {
        return None;
    }
    let m = sorted.len();
    let h = (m - 1) as f64 * q;
    let i = (h.floor() as usize).min(m - 1);
    let j = (i + 1).min(m - 1);
    let g = h - i as f64;
    let (a, b) = (sorted[i], sorted[j]);
    let diff = b - a;
    Some(if g >= 0.5 { b - diff * (1.0 - g) } else { a + diff * g })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accuracy::TieMode;
    use crate::outcome::ItemResult;
    use ItemResult::*;

    fn results(correct: usize, wrong: usize) -> Vec<ItemResult> {
        let mut v = vec![Correct; correct];
        v.extend(vec![Wrong; wrong]);
        v
    }

    /// Several stats from one pass equal each stat's own bootstrap, values and dropped
    /// counts, including resamples where a stratum has no scorable item (macro undefined).
    #[test]
    fn shared_resamples_equal_separate_bootstraps() {
        let results = [Correct, Wrong, Tie, Correct, Unparsed, Correct, Wrong, Tie, Tie, Correct];
        let strata = [0, 0, 0, 1, 1, 2, 2, 2, 2, 2];
        let cfg = BootstrapConfig { resamples: 500, seed: 9, ..BootstrapConfig::default() };
        for mode in [TieMode::Strict, TieMode::Excluded] {
            let items = Ratio::of_all(&results, mode);
            let both = bootstrap_distributions(&items, &strata, &cfg, &[Stat::Micro, Stat::Macro]);
            for (d, stat) in both.iter().zip([Stat::Micro, Stat::Macro]) {
                assert_eq!(
                    *d,
                    bootstrap_distribution(&items, &strata, &cfg, stat),
                    "{mode:?} {stat:?}"
                );
            }
            let cis = accuracy_with_cis(&results, &strata, mode, &[Stat::Micro, Stat::Macro], &cfg);
            assert_eq!(cis[1], accuracy_with_ci(&results, &strata, mode, Stat::Macro, &cfg));
        }
        let excl = bootstrap_distributions(
            &Ratio::of_all(&results, TieMode::Excluded),
            &strata,
            &cfg,
            &[Stat::Micro, Stat::Macro],
        );
        assert!(excl[1].dropped > 0, "the test must exercise an undefined macro");
    }

    fn strict(r: &[ItemResult]) -> Vec<Ratio> {
        Ratio::of_all(r, TieMode::Strict)
    }

    fn iv(lo: f64, hi: f64) -> Option<Interval> {
        Some(Interval { lo, hi })
    }

    #[test]
    fn default_config() {
        let c = BootstrapConfig::default();
        assert_eq!((c.resamples, c.seed, c.level), (10_000, 42, 0.95));
    }

    #[test]
    fn percentile_matches_numpy_linear() {
        // np.percentile([0, 1, 2, 3, 10], [0, 2.5, 50, 97.5, 100])
        //   = [0.0, 0.1, 2.0, 9.299999999999999, 10.0] (tools/bootstrap_reference.py):
        // h = 4q → 0.1 gives 0 + 0.1·1; 3.9 gives 10 − 0.1·7 = 9.3 (to rounding, matched bit
        // for bit).
        let x = [0.0, 1.0, 2.0, 3.0, 10.0];
        assert_eq!(percentile(&x, 0.0), Some(0.0));
        assert_eq!(percentile(&x, 0.025), Some(0.1));
        assert_eq!(percentile(&x, 0.5), Some(2.0));
        assert_eq!(percentile(&x, 0.975), Some(9.299999999999999));
        assert_eq!(percentile(&x, 1.0), Some(10.0));
        // np.percentile([1, 2, 3, 4], 2.5) = 1.075 (h = 0.075).
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 0.025), Some(1.075));
        assert_eq!(percentile(&[7.0], 0.3), Some(7.0));
        assert_eq!(percentile(&[], 0.5), None);
        assert_eq!(percentile(&x, 1.5), None);
    }

    /// Every item its own cluster: the cluster bootstrap is the item bootstrap, value for value.
    #[test]
    fn singleton_clusters_give_the_item_bootstrap() {
        let results = [Correct, Wrong, Tie, Correct, Unparsed, Correct, Wrong, Tie, Tie, Correct];
        let strata = [0, 0, 0, 1, 1, 2, 2, 2, 2, 2];
        let clusters: Vec<usize> = (0..results.len()).collect();
        let cfg = BootstrapConfig { resamples: 2_000, seed: 5, ..BootstrapConfig::default() };
        for mode in [TieMode::Strict, TieMode::Half, TieMode::Excluded] {
            let stats = [Stat::Micro, Stat::Macro];
            assert_eq!(
                accuracy_with_cis_by_cluster(&results, &strata, &clusters, mode, &stats, &cfg),
                accuracy_with_cis(&results, &strata, mode, &stats, &cfg),
                "{mode:?}"
            );
        }
    }

    #[test]
    fn cluster_sums_add_up_per_stratum_and_cluster() {
        let items = strict(&[Correct, Wrong, Correct, Correct, Wrong]);
        // Cluster 7 appears in two strata: two sums.
        let (sums, strata) = cluster_sums(&items, &[0, 0, 1, 0, 1], &[7, 3, 7, 7, 9]);
        let got: Vec<(f64, f64)> = sums.iter().map(|r| (r.num, r.den)).collect();
        assert_eq!(got, [(2.0, 2.0), (0.0, 1.0), (1.0, 1.0), (0.0, 1.0)]);
        assert_eq!(strata, [0, 0, 1, 1]);
        let (_, none) = cluster_sums(&items, &[], &[1, 1, 2, 2, 2]);
        assert!(none.is_empty());
    }

    /// 20 users of 3 items each, 14 users right on all three and 6 wrong on all three: resampling
    /// users, a resample's accuracy is K/20 with K ~ Binomial(20, 0.7), so the 95% interval is
    /// the binomial quantiles [10/20, 18/20] (tools/bootstrap_reference.py, scipy's binom.ppf,
    /// with every margin over 0.5 points); resampling the 60 items instead gives the narrower
    /// Binomial(60, 0.7)/60 interval. Items are listed round-robin across users, as outcomes of
    /// different conversations interleave.
    #[test]
    fn users_are_resampled_whole() {
        let mut results = Vec::new();
        let mut users = Vec::new();
        for _round in 0..3 {
            for u in 0..20 {
                results.push(if u < 14 { Correct } else { Wrong });
                users.push(u);
            }
        }
        let cfg = BootstrapConfig::default();
        let by_user = accuracy_with_cis_by_cluster(
            &results,
            &[],
            &users,
            TieMode::Strict,
            &[Stat::Micro],
            &cfg,
        )
        .remove(0);
        assert_eq!(by_user.point, Some(0.7));
        assert_eq!(by_user.ci, iv(0.5, 0.9));
        assert_eq!(by_user.tally.n, 60);
        let by_item = accuracy_with_ci(&results, &[], TieMode::Strict, Stat::Micro, &cfg);
        assert_eq!(by_item.point, Some(0.7));
        let item_ci = by_item.ci.unwrap();
        assert!(item_ci.lo > 0.5 && item_ci.hi < 0.9, "{item_ci:?}");
    }

    /// (a) All correct: every resample mean is 1.
    #[test]
    fn all_correct_gives_degenerate_interval() {
        let cfg = BootstrapConfig::default();
        let est = accuracy_with_ci(&results(12, 0), &[], TieMode::Strict, Stat::Micro, &cfg);
        assert_eq!(est.point, Some(1.0));
        assert_eq!(est.ci, iv(1.0, 1.0));
        assert_eq!(est.tally.n, 12);
    }

    /// (b) n = 2, one correct one wrong: resample means 0, 0.5, 1 with probabilities 1/4, 1/2,
    /// 1/4. About 2,500 of 10,000 sorted means are 0 and 2,500 are 1, so the 2.5th percentile
    /// (order statistics 250–251) is 0 and the 97.5th (9,750–9,751) is 1.
    #[test]
    fn two_items_one_correct() {
        let cfg = BootstrapConfig::default();
        let items = strict(&results(1, 1));
        assert_eq!(point(&items, &[], Stat::Micro), Some(0.5));
        assert_eq!(bootstrap_ci(&items, &[], &cfg, Stat::Micro), iv(0.0, 1.0));
        let d = bootstrap_distribution(&items, &[], &cfg, Stat::Micro);
        assert_eq!((d.values.len(), d.dropped), (10_000, 0));
        let share = |v: f64| d.values.iter().filter(|&&x| x == v).count() as f64 / 10_000.0;
        // sd of each share ≤ 0.005; 0.02 is 4 sd.
        assert!((share(0.0) - 0.25).abs() < 0.02, "{}", share(0.0));
        assert!((share(0.5) - 0.50).abs() < 0.02, "{}", share(0.5));
        assert!((share(1.0) - 0.25).abs() < 0.02, "{}", share(1.0));
    }

    /// (c) n = 20 with 14 correct: the resample mean is Binomial(20, 0.7)/20. Its exact 2.5%
    /// and 97.5% quantiles are 10/20 and 18/20 (tools/bootstrap_reference.py, scipy
    /// binom.ppf): CDF(9) = 0.01714, CDF(10) = 0.04796, CDF(17) = 0.96452, CDF(18) = 0.99236,
    /// each at least 0.79 percentage points (≈ 5 sd of a count out of 10,000) from 2.5% or
    /// 97.5%, so both order statistics either side of each percentile fall on the quantile.
    #[test]
    fn binomial_quantiles() {
        let items = strict(&results(14, 6));
        assert_eq!(point(&items, &[], Stat::Micro), Some(0.7));
        for seed in [42, 1, 2, 3, 2024] {
            let cfg = BootstrapConfig { seed, ..BootstrapConfig::default() };
            assert_eq!(bootstrap_ci(&items, &[], &cfg, Stat::Micro), iv(0.5, 0.9), "seed {seed}");
        }
    }

    /// (d) Two strata, one all correct (size 3), one all wrong (size 5). Stratified resampling
    /// keeps each stratum's size and content, so every resample has macro (1 + 0)/2 = 0.5 and
    /// micro 3/8.
    #[test]
    fn stratified_macro_and_micro() {
        let r = results(3, 5);
        let strata = [4, 4, 4, 9, 9, 9, 9, 9];
        let cfg = BootstrapConfig::default();
        let mac = accuracy_with_ci(&r, &strata, TieMode::Strict, Stat::Macro, &cfg);
        assert_eq!(mac.point, Some(0.5));
        assert_eq!(mac.ci, iv(0.5, 0.5));
        let mic = accuracy_with_ci(&r, &strata, TieMode::Strict, Stat::Micro, &cfg);
        assert_eq!(mic.point, Some(0.375));
        assert_eq!(mic.ci, iv(0.375, 0.375));
        // Without strata the same items vary across resamples.
        let free = accuracy_with_ci(&r, &[], TieMode::Strict, Stat::Micro, &cfg).ci.unwrap();
        assert!(free.lo < 0.375 && free.hi > 0.375, "{free:?}");
    }

    #[test]
    fn macro_is_the_unweighted_mean_of_strata() {
        // Stratum 0: 1 of 2 correct (0.5); stratum 1: 3 of 4 (0.75).
        let r = [Correct, Wrong, Correct, Correct, Correct, Wrong];
        let strata = [0, 0, 1, 1, 1, 1];
        let items = strict(&r);
        assert_eq!(point(&items, &strata, Stat::Macro), Some(0.625));
        assert_eq!(point(&items, &strata, Stat::Micro), Some(4.0 / 6.0));
    }

    /// (e) Reproducibility.
    #[test]
    fn same_seed_same_interval_different_seed_different() {
        // 1,000 items with three values (half-credit ties), so percentiles interpolate.
        let r: Vec<ItemResult> = (0..1000).map(|i| [Correct, Wrong, Tie, Correct][i % 4]).collect();
        let strata: Vec<usize> = (0..1000).map(|i| i % 3).collect();
        let items = Ratio::of_all(&r, TieMode::Half);
        let cfg = BootstrapConfig { resamples: 2_000, ..BootstrapConfig::default() };
        let a = bootstrap_ci(&items, &strata, &cfg, Stat::Macro);
        let b = bootstrap_ci(&items, &strata, &cfg, Stat::Macro);
        assert_eq!(a, b);
        let c = bootstrap_ci(&items, &strata, &BootstrapConfig { seed: 43, ..cfg }, Stat::Macro);
        assert_ne!(a, c);
        let da = bootstrap_distribution(&items, &strata, &cfg, Stat::Macro);
        let dc = bootstrap_distribution(
            &items,
            &strata,
            &BootstrapConfig { seed: 43, ..cfg },
            Stat::Macro,
        );
        assert_ne!(da.values, dc.values);
        // Sanity: the interval holds the point estimate 0.625.
        let a = a.unwrap();
        assert!(a.lo < 0.625 && 0.625 < a.hi, "{a:?}");
    }

    /// (f) Tie modes: 3 correct, 1 wrong, 2 ties, 1 unparsed, 1 error.
    #[test]
    fn tie_modes_points_and_intervals() {
        let r = [Correct, Tie, Correct, Wrong, Unparsed, Tie, Error, Correct];
        let cfg = BootstrapConfig::default();
        for (mode, want) in
            [(TieMode::Strict, 0.375), (TieMode::Half, 0.5), (TieMode::Excluded, 0.75)]
        {
            let est = accuracy_with_ci(&r, &[], mode, Stat::Micro, &cfg);
            assert_eq!(est.point, Some(want), "{mode:?}");
            assert_eq!(est.point, est.tally.accuracy(mode));
            let ci = est.ci.unwrap();
            assert!(ci.lo <= want && want <= ci.hi, "{mode:?} {ci:?}");
            assert!(0.0 <= ci.lo && ci.hi <= 1.0);
        }
        // Only excluded items: nothing to estimate.
        let est = accuracy_with_ci(&[Tie, Unparsed], &[], TieMode::Excluded, Stat::Micro, &cfg);
        assert_eq!((est.point, est.ci), (None, None));
        assert_eq!(est.tally.ties, 1);
        // Empty input.
        let est = accuracy_with_ci(&[], &[], TieMode::Strict, Stat::Macro, &cfg);
        assert_eq!((est.point, est.ci, est.tally.n), (None, None, 0));
    }

    /// Excluded mode, one correct and one tie: a resample of two ties (probability 1/4) has
    /// no denominator and is dropped; every kept resample has accuracy 1.
    #[test]
    fn undefined_resamples_are_dropped() {
        let items = Ratio::of_all(&[Correct, Tie], TieMode::Excluded);
        let cfg = BootstrapConfig::default();
        let d = bootstrap_distribution(&items, &[], &cfg, Stat::Micro);
        assert_eq!(d.values.len() + d.dropped, 10_000);
        assert!((d.dropped as f64 / 10_000.0 - 0.25).abs() < 0.02, "{}", d.dropped);
        assert_eq!(bootstrap_ci(&items, &[], &cfg, Stat::Micro), iv(1.0, 1.0));
    }

    /// A stratum with only excluded items takes no part in the macro average.
    #[test]
    fn fully_excluded_stratum_is_skipped_by_macro() {
        let r = [Correct, Wrong, Tie, Tie];
        let strata = [0, 0, 1, 1];
        let est = accuracy_with_ci(
            &r,
            &strata,
            TieMode::Excluded,
            Stat::Macro,
            &BootstrapConfig::default(),
        );
        assert_eq!(est.point, Some(0.5));
        assert_eq!(est.ci, iv(0.0, 1.0));
    }

    #[test]
    fn invalid_config_gives_no_interval() {
        let items = strict(&results(3, 3));
        let zero = BootstrapConfig { resamples: 0, ..BootstrapConfig::default() };
        assert_eq!(bootstrap_ci(&items, &[], &zero, Stat::Micro), None);
        let bad = BootstrapConfig { level: 1.0, ..BootstrapConfig::default() };
        assert_eq!(bootstrap_ci(&items, &[], &bad, Stat::Micro), None);
    }

    #[test]
    #[should_panic(expected = "one stratum label per item")]
    fn mismatched_strata_panic() {
        point(&strict(&results(2, 1)), &[0, 1], Stat::Micro);
    }
}
