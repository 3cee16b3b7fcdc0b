//! Accuracy estimates of per-item results: the point estimate with its item or cluster (user)
//! bootstrap interval and the counts behind it.

use serde::{Deserialize, Serialize};

#[cfg(doc)]
use super::bootstrap_ci;
use super::{bootstrap_cis, point, BootstrapConfig, Interval, Stat};
use crate::accuracy::{Ratio, Tally, TieMode};
use crate::outcome::ItemResult;

/// An accuracy with its bootstrap interval and the counts behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccuracyEstimate {
    /// The accuracy on the full sample ([`point`]); `None` when undefined.
    pub point: Option<f64>,
    /// The bootstrap interval ([`bootstrap_ci`]); `None` when undefined.
    pub ci: Option<Interval>,
    /// Counts of the results (over all strata).
    pub tally: Tally,
}

/// Accuracy of `results` under `mode` as `stat` over `strata`, with its seeded bootstrap
/// interval: [`point`] and [`bootstrap_ci`] over [`Ratio::of_all`]`(results, mode)`.
///
/// For [`Stat::Micro`] the point equals [`Tally::accuracy`]`(mode)` of the same results.
///
/// # Panics
/// If `strata` is neither empty nor as long as `results`.
pub fn accuracy_with_ci(
    results: &[ItemResult],
    strata: &[usize],
    mode: TieMode,
    stat: Stat,
    cfg: &BootstrapConfig,
) -> AccuracyEstimate {
    accuracy_with_cis(results, strata, mode, &[stat], cfg).remove(0)
}

/// [`accuracy_with_ci`] under several statistics from the same resamples (e.g. micro and
/// macro of one run); entry `i` equals `accuracy_with_ci(…, stats[i], …)`.
///
/// # Panics
/// If `strata` is neither empty nor as long as `results`.
pub fn accuracy_with_cis(
    results: &[ItemResult],
    strata: &[usize],
    mode: TieMode,
    stats: &[Stat],
    cfg: &BootstrapConfig,
) -> Vec<AccuracyEstimate> {
    let items = Ratio::of_all(results, mode);
    let tally = Tally::from_results(results);
    stats
        .iter()
        .zip(bootstrap_cis(&items, strata, cfg, stats))
        .map(|(&stat, ci)| AccuracyEstimate { point: point(&items, strata, stat), ci, tally })
        .collect()
}

/// Per-cluster sums for the cluster bootstrap (PROTOCOL.md §5: resample users where a user id
/// is known). Item `i` belongs to stratum `strata[i]` (empty `strata`: one stratum) and cluster
/// `clusters[i]` (e.g. its user); the result holds one [`Ratio`] per (stratum, cluster), the
/// sum of its items' numerators and denominators, in order of first appearance, with the
/// stratum labels (empty when `strata` is).
///
/// Every [`Stat`] is a ratio of sums, so the item bootstrap of these sums ([`bootstrap_cis`])
/// *is* the cluster bootstrap: each resample draws, within each stratum, as many clusters as the
/// stratum has, with replacement, and counts every item of each drawn cluster. The point
/// estimate is unchanged. With every item its own cluster the sums are the items themselves.
///
/// # Panics
/// If `clusters` is not as long as `items`, or `strata` is neither empty nor as long.
pub fn cluster_sums(
    items: &[Ratio],
    strata: &[usize],
    clusters: &[usize],
) -> (Vec<Ratio>, Vec<usize>) {
    assert_eq!(
        clusters.len(),
        items.len(),
        "prbench-stats: one cluster label per item is required"
    );
    assert!(
        strata.is_empty() || strata.len() == items.len(),
        "prbench-stats: one stratum label per item (or none at all) is required"
    );
    let mut index: std::collections::HashMap<(usize, usize), usize> =
        std::collections::HashMap::new();
    let mut sums: Vec<Ratio> = Vec::new();
    let mut labels: Vec<usize> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let stratum = strata.get(i).copied().unwrap_or(0);
        let k = *index.entry((stratum, clusters[i])).or_insert_with(|| {
            sums.push(Ratio { num: 0.0, den: 0.0 });
            labels.push(stratum);
            sums.len() - 1
        });
        sums[k].num += item.num;
        sums[k].den += item.den;
    }
    if strata.is_empty() {
        labels.clear();
    }
    (sums, labels)
}

/// [`accuracy_with_cis`] with the interval from the cluster bootstrap ([`cluster_sums`]):
/// `clusters[i]` is result `i`'s cluster (its user). The point estimates and the tally are those
/// of the items.
///
/// # Panics
/// As [`cluster_sums`].
pub fn accuracy_with_cis_by_cluster(
    results: &[ItemResult],
    strata: &[usize],
    clusters: &[usize],
    mode: TieMode,
    stats: &[Stat],
    cfg: &BootstrapConfig,
) -> Vec<AccuracyEstimate> {
    let items = Ratio::of_all(results, mode);
    let tally = Tally::from_results(results);
    let (sums, sum_strata) = cluster_sums(&items, strata, clusters);
    stats
        .iter()
        .zip(bootstrap_cis(&sums, &sum_strata, cfg, stats))
        .map(|(&stat, ci)| AccuracyEstimate { point: point(&items, strata, stat), ci, tally })
        .collect()
}
