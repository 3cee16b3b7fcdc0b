//! Turns outcomes into the [`Summary`] figures (PROTOCOL.md §5): accuracy per subset, micro
//! and macro, under three tie modes, with seeded bootstrap CIs; position bias; both-orders
//! figures.

use prbench_data::short_subset;
use prbench_report::{AccuracyRow, BothOrders, PositionBias};
use prbench_stats::accuracy::TieMode;
use prbench_stats::bootstrap::{accuracy_with_cis, BootstrapConfig, Stat};
use prbench_stats::outcome::ItemResult;
use prbench_stats::position::{position_bias, PositionItem};
use rayon::prelude::*;

use crate::outcome::{judge_result, Outcome};

/// Subsets in first-appearance order of `outcomes`.
fn subsets(outcomes: &[Outcome]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for o in outcomes {
        if !seen.contains(&o.subset) {
            seen.push(o.subset.clone());
        }
    }
    seen
}

/// One row per subset, then `micro` (stratified) and `macro` (mean of subset accuracies),
/// from per-item results `results[i]` belonging to `outcomes[i].subset`.
pub fn accuracy_rows(outcomes: &[Outcome], results: &[ItemResult], boot: &BootstrapConfig) -> Vec<AccuracyRow> {
    let names = subsets(outcomes);
    let strata: Vec<usize> = outcomes.iter().map(|o| names.iter().position(|s| *s == o.subset).expect("listed")).collect();
    let truncated = |keep: &dyn Fn(usize) -> bool| {
        outcomes.iter().enumerate().filter(|(i, o)| keep(*i) && o.truncated_tokens > 0).count()
    };
    // Subset rows are independent (each bootstrap has its own seeded stream): computed in
    // parallel. micro and macro resample the same items with the same seed, so they share one
    // pass ([`accuracy_with_cis`]). Rows come out in the fixed order subsets, micro, macro.
    let mut specs: Vec<(Vec<String>, Vec<ItemResult>, Vec<usize>, Vec<Stat>, usize)> = Vec::with_capacity(names.len() + 1);
    for (k, name) in names.iter().enumerate() {
        let sub: Vec<ItemResult> = (0..outcomes.len()).filter(|&i| strata[i] == k).map(|i| results[i]).collect();
        let zeros = vec![0; sub.len()];
        specs.push((vec![short_subset(name).to_string()], sub, zeros, vec![Stat::Micro], truncated(&|i| strata[i] == k)));
    }
    let (labels, stats) = if names.len() > 1 {
        (vec!["micro".to_string(), "macro".to_string()], vec![Stat::Micro, Stat::Macro])
    } else {
        (vec!["micro".to_string()], vec![Stat::Micro])
    };
    specs.push((labels, results.to_vec(), strata.clone(), stats, truncated(&|_| true)));
    let rows: Vec<Vec<AccuracyRow>> = specs.par_iter().map(|(labels, res, st, stats, trunc)| rows_for(labels, res, st, stats, boot, *trunc)).collect();
    rows.into_iter().flatten().collect()
}

/// One row per `(labels[i], stats[i])` over the same results and strata.
fn rows_for(labels: &[String], results: &[ItemResult], strata: &[usize], stats: &[Stat], boot: &BootstrapConfig, truncated: usize) -> Vec<AccuracyRow> {
    let no_ci = BootstrapConfig { resamples: 0, ..*boot };
    let strict = accuracy_with_cis(results, strata, TieMode::Strict, stats, boot);
    let half = accuracy_with_cis(results, strata, TieMode::Half, stats, &no_ci);
    let excluded = accuracy_with_cis(results, strata, TieMode::Excluded, stats, &no_ci);
    labels
        .iter()
        .zip(strict)
        .zip(half.into_iter().zip(excluded))
        .map(|((label, strict), (half, excluded))| AccuracyRow {
            label: label.clone(),
            tally: strict.tally,
            truncated,
            strict: strict.point,
            strict_ci: strict.ci.map(|c| [c.lo, c.hi]),
            half: half.point,
            excluded: excluded.point,
        })
        .collect()
}

/// Position-bias figures of judge outcomes (single order); `None` for reward models.
pub fn position(outcomes: &[Outcome]) -> Option<PositionBias> {
    let items: Vec<PositionItem> = outcomes
        .iter()
        .filter_map(|o| {
            let slot = o.chosen_slot?;
            let v = o.verdict.as_ref()?;
            Some(PositionItem {
                chosen_slot: slot,
                result: o.result,
                picked_a: match v.choice {
                    prbench_models::Choice::A => Some(true),
                    prbench_models::Choice::B => Some(false),
                    _ => None,
                },
            })
        })
        .collect();
    if items.is_empty() {
        return None;
    }
    let p = position_bias(&items);
    Some(PositionBias {
        n_chosen_in_a: p.chosen_in_a.n,
        accuracy_chosen_in_a: p.accuracy_chosen_in_a,
        n_chosen_in_b: p.chosen_in_b.n,
        accuracy_chosen_in_b: p.accuracy_chosen_in_b,
        share_a_verdicts: p.share_a,
    })
}

/// Both-orders figures, when the outcomes carry a swapped verdict.
pub fn both_orders(outcomes: &[Outcome], boot: &BootstrapConfig) -> Option<BothOrders> {
    let results: Option<Vec<ItemResult>> = outcomes.iter().map(|o| o.both_orders_result).collect();
    let results = results?;
    let mut parsed = 0usize;
    let mut same = 0usize;
    for o in outcomes {
        let (Some(v1), Some(v2), Some(slot)) = (&o.verdict, &o.swapped_verdict, o.chosen_slot) else { continue };
        let decided = |r: ItemResult| matches!(r, ItemResult::Correct | ItemResult::Wrong);
        let (r1, r2) = (judge_result(v1.choice, slot), judge_result(v2.choice, slot.other()));
        if decided(r1) && decided(r2) {
            parsed += 1;
            same += usize::from(r1 == r2);
        }
    }
    let debiased: Option<Vec<ItemResult>> = outcomes.iter().map(|o| o.debiased_result).collect();
    Some(BothOrders {
        rows: accuracy_rows(outcomes, &results, boot),
        consistency: (parsed > 0).then(|| same as f64 / parsed as f64),
        debiased_rows: debiased.map(|d| accuracy_rows(outcomes, &d, boot)),
    })
}
