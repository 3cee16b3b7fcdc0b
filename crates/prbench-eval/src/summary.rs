//! Turns outcomes into the [`Summary`](prbench_records::Summary) figures (PROTOCOL.md §5): accuracy per subset, micro
//! and macro, under three tie modes, with seeded bootstrap CIs; position bias; both-orders
//! figures.
//!
//! The bootstrap resamples examples within each subset, or, when the outcomes carry user ids
//! (SynthesizeMe, PRISM), users within each subset, each drawn user bringing all their
//! examples of that subset ([`prbench_stats::bootstrap::cluster_sums`]); an outcome without a
//! user id is then a user of its own.

use prbench_data::short_subset;
use prbench_records::{AccuracyRow, BothOrders, PositionBias};
use prbench_stats::accuracy::TieMode;
use prbench_stats::bootstrap::{
    accuracy_with_cis, accuracy_with_cis_by_cluster, BootstrapConfig, Stat,
};
use prbench_stats::outcome::ItemResult;
use prbench_stats::position::{position_bias, PositionItem};
use rayon::prelude::*;

use crate::outcome::{judge_result, Outcome};

/// What [`accuracy_rows`] reads of a scored item besides its result: its subset, its user and
/// whether its input was cut to fit. [`Outcome`]s are such items; so are the control
/// baselines' items ([`crate::controls`]), which are never cut.
pub trait RowItem {
    /// Long subset name.
    fn subset(&self) -> &str;
    /// The item's user, when the dataset has user ids.
    fn user_id(&self) -> Option<&str>;
    /// Whether tokens of its input were cut to fit the context.
    fn truncated(&self) -> bool;
}

impl RowItem for Outcome {
    fn subset(&self) -> &str {
        &self.subset
    }
    fn user_id(&self) -> Option<&str> {
        self.user_id.as_deref()
    }
    fn truncated(&self) -> bool {
        self.truncated_tokens > 0
    }
}

/// Subsets in first-appearance order of `outcomes`.
fn subsets<T: RowItem>(outcomes: &[T]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for o in outcomes {
        if !seen.iter().any(|s| s == o.subset()) {
            seen.push(o.subset().to_string());
        }
    }
    seen
}

/// The number of distinct user ids among `outcomes`, or `None` when none carries one (the
/// bootstrap then resamples examples).
pub fn user_count<T: RowItem>(outcomes: &[T]) -> Option<usize> {
    let users: std::collections::HashSet<&str> =
        outcomes.iter().filter_map(|o| o.user_id()).collect();
    (!users.is_empty()).then_some(users.len())
}

/// The cluster (user) of each outcome when some outcome has a user id: equal ids share a label;
/// an outcome without one gets a label of its own. `None` when no outcome has a user id.
fn user_clusters<T: RowItem>(outcomes: &[T]) -> Option<Vec<usize>> {
    user_count(outcomes)?;
    let mut ids: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let n = outcomes.len();
    Some(
        outcomes
            .iter()
            .enumerate()
            .map(|(i, o)| match o.user_id() {
                // User labels are below n, labels of outcomes without a user from n up.
                Some(id) => {
                    let next = ids.len();
                    *ids.entry(id).or_insert(next)
                }
                None => n + i,
            })
            .collect(),
    )
}

/// One row per subset, then `micro` (stratified) and `macro` (mean of subset accuracies),
/// from per-item results `results[i]` belonging to `outcomes[i].subset`. CIs resample users
/// when the outcomes carry user ids (see the module docs), else examples.
pub fn accuracy_rows<T: RowItem>(
    outcomes: &[T],
    results: &[ItemResult],
    boot: &BootstrapConfig,
) -> Vec<AccuracyRow> {
    let clusters = user_clusters(outcomes);
    let names = subsets(outcomes);
    let strata: Vec<usize> = outcomes
        .iter()
        .map(|o| names.iter().position(|s| s == o.subset()).expect("listed"))
        .collect();
    let truncated = |keep: &dyn Fn(usize) -> bool| {
        outcomes.iter().enumerate().filter(|(i, o)| keep(*i) && o.truncated()).count()
    };
    // Subset rows are independent (each bootstrap has its own seeded stream): computed in
    // parallel. micro and macro resample the same items with the same seed, so they share one
    // pass ([`accuracy_with_cis`]). Rows come out in the fixed order subsets, micro, macro.
    type Spec = (Vec<String>, Vec<ItemResult>, Vec<usize>, Option<Vec<usize>>, Vec<Stat>, usize);
    let mut specs: Vec<Spec> = Vec::with_capacity(names.len() + 1);
    for (k, name) in names.iter().enumerate() {
        let members: Vec<usize> = (0..outcomes.len()).filter(|&i| strata[i] == k).collect();
        let sub: Vec<ItemResult> = members.iter().map(|&i| results[i]).collect();
        let sub_clusters = clusters.as_ref().map(|c| members.iter().map(|&i| c[i]).collect());
        let zeros = vec![0; sub.len()];
        specs.push((
            vec![short_subset(name).to_string()],
            sub,
            zeros,
            sub_clusters,
            vec![Stat::Micro],
            truncated(&|i| strata[i] == k),
        ));
    }
    let (labels, stats) = if names.len() > 1 {
        (vec!["micro".to_string(), "macro".to_string()], vec![Stat::Micro, Stat::Macro])
    } else {
        (vec!["micro".to_string()], vec![Stat::Micro])
    };
    specs.push((labels, results.to_vec(), strata.clone(), clusters, stats, truncated(&|_| true)));
    let rows: Vec<Vec<AccuracyRow>> = specs
        .par_iter()
        .map(|(labels, res, st, cl, stats, trunc)| {
            rows_for(labels, res, st, cl.as_deref(), stats, boot, *trunc)
        })
        .collect();
    rows.into_iter().flatten().collect()
}

/// One row per `(labels[i], stats[i])` over the same results and strata; the strict CI
/// resamples `clusters` (users) when given, else items.
fn rows_for(
    labels: &[String],
    results: &[ItemResult],
    strata: &[usize],
    clusters: Option<&[usize]>,
    stats: &[Stat],
    boot: &BootstrapConfig,
    truncated: usize,
) -> Vec<AccuracyRow> {
    let no_ci = BootstrapConfig { resamples: 0, ..*boot };
    let strict = match clusters {
        Some(c) => accuracy_with_cis_by_cluster(results, strata, c, TieMode::Strict, stats, boot),
        None => accuracy_with_cis(results, strata, TieMode::Strict, stats, boot),
    };
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
        let (Some(v1), Some(v2), Some(slot)) = (&o.verdict, &o.swapped_verdict, o.chosen_slot)
        else {
            continue;
        };
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

#[cfg(test)]
mod tests {
    use super::*;
    use prbench_records::outcome::OutcomeBuilder;
    use ItemResult::{Correct, Wrong};

    fn outcome(id: usize, subset: &str, user: Option<String>, result: ItemResult) -> Outcome {
        let o = OutcomeBuilder::new(format!("e{id}"), result)
            .subset(subset)
            .condition("none")
            .model("m");
        match user {
            Some(user) => o.user_id(user),
            None => o,
        }
        .build()
    }

    /// 20 users with 3 examples each (listed round-robin), 14 users right on all three, 6 wrong
    /// on all three. Resampling users, the accuracy of a resample is Binomial(20, 0.7)/20, whose
    /// 2.5% and 97.5% quantiles are 10/20 and 18/20 (scipy's binom.ppf, see
    /// tools/bootstrap_reference.py); resampling the 60 examples gives a narrower interval.
    #[test]
    fn cis_resample_users_when_outcomes_carry_user_ids() {
        let build = |with_users: bool| -> Vec<Outcome> {
            (0..60)
                .map(|i| {
                    let u = i % 20;
                    outcome(
                        i,
                        "prism",
                        with_users.then(|| format!("user{u}")),
                        if u < 14 { Correct } else { Wrong },
                    )
                })
                .collect()
        };
        let boot = BootstrapConfig::default();
        let users = build(true);
        let results: Vec<ItemResult> = users.iter().map(|o| o.result).collect();
        assert_eq!(user_count(&users), Some(20));
        let rows = accuracy_rows(&users, &results, &boot);
        assert_eq!(rows.iter().map(|r| r.label.as_str()).collect::<Vec<_>>(), ["prism", "micro"]);
        for row in &rows {
            assert_eq!(row.strict, Some(0.7));
            assert_eq!(row.strict_ci, Some([0.5, 0.9]), "{}", row.label);
        }
        let examples = build(false);
        assert_eq!(user_count(&examples), None);
        let ci = accuracy_rows(&examples, &results, &boot)[1].strict_ci.unwrap();
        assert!(ci[0] > 0.5 && ci[1] < 0.9, "{ci:?}");
    }

    #[test]
    fn an_outcome_without_a_user_is_a_user_of_its_own() {
        let o = vec![
            outcome(0, "s", Some("a".into()), Correct),
            outcome(1, "s", None, Correct),
            outcome(2, "s", Some("b".into()), Wrong),
            outcome(3, "s", Some("a".into()), Wrong),
            outcome(4, "s", None, Wrong),
        ];
        assert_eq!(user_clusters(&o), Some(vec![0, 6, 1, 0, 9]));
        assert_eq!(user_count(&o), Some(2));
    }
}
