//! Builds the conditioning matrix ([`prbench_records::matrix::Matrix`]) from the outcomes of
//! one model under several conditions: accuracy with CI per subset and overall, the gain of
//! each condition over `none` on the same items with a paired exact McNemar test, and Holm's
//! correction over every gain of a metric (PROTOCOL.md §2, §5).

use std::collections::HashMap;

use prbench_data::short_subset;
use prbench_records::matrix::{Gain, Matrix, MatrixBlock, MatrixCondition};
use prbench_stats::bootstrap::BootstrapConfig;
use prbench_stats::outcome::ItemResult;
use prbench_stats::paired::{holm, mcnemar};

use crate::condition::Condition;
use crate::outcome::Outcome;
use crate::summary::accuracy_rows;

/// One condition's finished run.
pub struct ConditionRun {
    /// The condition.
    pub condition: Condition,
    /// Its run folder name.
    pub run_id: String,
    /// Its outcomes, one per example.
    pub outcomes: Vec<Outcome>,
}

/// A per-item metric: name, meaning, and how to read it off an outcome (`None` when the
/// outcome does not carry it; such items count as errors, i.e. not correct).
struct Metric {
    name: &'static str,
    meaning: &'static str,
    read: fn(&Outcome) -> Option<ItemResult>,
}

const METRICS: [Metric; 3] = [
    Metric {
        name: "accuracy",
        meaning: "Reward models: score(chosen) > score(rejected). Judges: the verdict in the primary order picks chosen (slots drawn balanced over each full subset; a --limit run warns when its items are not).",
        read: |o| Some(o.result),
    },
    Metric {
        name: "both orders",
        meaning: "Judges judged in both orders: correct only when both verdicts pick chosen.",
        read: |o| o.both_orders_result,
    },
    Metric {
        name: "position-debiased",
        meaning: "Logprob judges in both orders: correct iff the A-vs-B log-odds margin is higher with chosen in slot A than with chosen in slot B (PROTOCOL §4).",
        read: |o| o.debiased_result,
    },
];

/// The matrix of `runs` (in command-line order). A metric gets a block when some outcome
/// carries it; gains are computed when one run is `none`, pairing items by example id.
/// Holm's family is every gain of a block (each non-`none` condition × each subset and `all`).
pub fn build(
    runs: &[ConditionRun],
    model: &str,
    dataset: &str,
    dataset_kind: &str,
    seed: u64,
    boot: &BootstrapConfig,
    mut notes: Vec<String>,
) -> Matrix {
    let baseline = runs.iter().position(|r| r.condition == Condition::None);
    if baseline.is_none() {
        notes.push(
            "no `none` run in this command, so no gains are computed (add `none` to --condition)"
                .into(),
        );
    }
    let mut blocks = Vec::new();
    for metric in &METRICS {
        if !runs.iter().any(|r| r.outcomes.iter().any(|o| (metric.read)(o).is_some())) {
            continue;
        }
        let results: Vec<Vec<ItemResult>> = runs
            .iter()
            .map(|r| {
                r.outcomes.iter().map(|o| (metric.read)(o).unwrap_or(ItemResult::Error)).collect()
            })
            .collect();
        let accuracy = runs
            .iter()
            .zip(&results)
            .map(|(r, res)| {
                accuracy_rows(&r.outcomes, res, boot)
                    .into_iter()
                    .filter(|row| row.label != "macro")
                    .collect()
            })
            .collect();
        let mut gains = Vec::new();
        if let Some(b) = baseline {
            let reference: HashMap<&str, (ItemResult, &str)> = runs[b]
                .outcomes
                .iter()
                .zip(&results[b])
                .map(|(o, r)| (o.example_id.as_str(), (*r, o.subset.as_str())))
                .collect();
            for (i, run) in runs.iter().enumerate().filter(|(i, _)| *i != b) {
                let mut subsets: Vec<&str> = Vec::new();
                for o in &run.outcomes {
                    if !subsets.contains(&o.subset.as_str()) {
                        subsets.push(&o.subset);
                    }
                }
                let scopes = subsets.iter().map(|s| Some(*s)).chain([None]);
                for scope in scopes {
                    let (mut cond, mut none) = (Vec::new(), Vec::new());
                    for (o, r) in run.outcomes.iter().zip(&results[i]) {
                        if scope.is_some_and(|s| s != o.subset) {
                            continue;
                        }
                        if let Some((rn, _)) = reference.get(o.example_id.as_str()) {
                            cond.push(*r);
                            none.push(*rn);
                        }
                    }
                    let t = mcnemar(&cond, &none);
                    let n = cond.len();
                    let right = |v: &[ItemResult]| {
                        v.iter().filter(|r| **r == ItemResult::Correct).count() as f64
                    };
                    gains.push(Gain {
                        condition: run.condition.to_string(),
                        scope: scope.map_or("all".to_string(), |s| short_subset(s).to_string()),
                        n_paired: n,
                        gain: if n == 0 { 0.0 } else { (right(&cond) - right(&none)) / n as f64 },
                        only_condition: t.only_first,
                        only_none: t.only_second,
                        p_value: t.p_value,
                        p_holm: f64::NAN,
                    });
                }
            }
            let adjusted = holm(&gains.iter().map(|g| g.p_value).collect::<Vec<_>>());
            for (g, p) in gains.iter_mut().zip(adjusted) {
                g.p_holm = p;
            }
        }
        blocks.push(MatrixBlock {
            metric: metric.name.into(),
            meaning: metric.meaning.into(),
            accuracy,
            gains,
        });
    }
    Matrix {
        model: model.into(),
        dataset: dataset.into(),
        dataset_kind: dataset_kind.into(),
        n_examples: runs.first().map_or(0, |r| r.outcomes.len()),
        seed,
        bootstrap_resamples: boot.resamples,
        conditions: runs
            .iter()
            .map(|r| MatrixCondition {
                condition: r.condition.to_string(),
                oracle: r.condition.is_oracle(),
                run_id: r.run_id.clone(),
            })
            .collect(),
        blocks,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prbench_records::outcome::OutcomeBuilder;
    use ItemResult::{Correct, Wrong};

    fn outcome(id: &str, subset: &str, condition: Condition, result: ItemResult) -> Outcome {
        OutcomeBuilder::new(id, result)
            .subset(subset)
            .condition(condition.to_string())
            .model("m")
            .build()
    }

    fn run(condition: Condition, results: &[(&str, &str, ItemResult)]) -> ConditionRun {
        ConditionRun {
            condition,
            run_id: format!("r-{condition}"),
            outcomes: results.iter().map(|(id, s, r)| outcome(id, s, condition, *r)).collect(),
        }
    }

    #[test]
    fn gains_pair_items_by_id_and_holm_covers_the_block() {
        // `none`: x1..x4 in Art, y1..y2 in Society; `oracle` lists the same items in another
        // order (pairing is by id, not position).
        let none = run(
            Condition::None,
            &[
                ("x1", "Art", Wrong),
                ("x2", "Art", Wrong),
                ("x3", "Art", Correct),
                ("x4", "Art", Wrong),
                ("y1", "Society", Correct),
                ("y2", "Society", Wrong),
            ],
        );
        let oracle = run(
            Condition::Oracle,
            &[
                ("y2", "Society", Correct),
                ("x4", "Art", Correct),
                ("x3", "Art", Correct),
                ("x2", "Art", Correct),
                ("x1", "Art", Correct),
                ("y1", "Society", Wrong),
            ],
        );
        let boot = BootstrapConfig { resamples: 100, ..BootstrapConfig::default() };
        let m = build(&[none, oracle], "m", "d", "prb", 42, &boot, vec![]);
        assert_eq!(m.blocks.len(), 1, "only the primary metric is carried");
        let b = &m.blocks[0];
        // Hand counts. Art: oracle-only right x1, x2, x4 (b = 3), none-only 0 → gain 3/4;
        // p = 2·P(X ≤ 0 | n = 3) = 2/8 = 0.25.
        // Society: oracle-only y2, none-only y1 → gain 0, p = 1.
        // All: b = 4, c = 1 → gain 3/6, p = 2·(1 + 5)/32 = 0.375.
        let g = |scope: &str| b.gains.iter().find(|g| g.scope == scope).unwrap();
        assert_eq!((g("Art").only_condition, g("Art").only_none, g("Art").n_paired), (3, 0, 4));
        assert!((g("Art").gain - 0.75).abs() < 1e-12);
        assert!((g("Art").p_value - 0.25).abs() < 1e-12);
        assert_eq!((g("Society").only_condition, g("Society").only_none), (1, 1));
        assert_eq!(g("Society").p_value, 1.0);
        assert!((g("all").gain - 0.5).abs() < 1e-12);
        assert!((g("all").p_value - 0.375).abs() < 1e-12);
        // Holm over the three: sorted 0.25, 0.375, 1 → 0.75, max(0.75, 0.75) = 0.75, 1.
        assert!((g("Art").p_holm - 0.75).abs() < 1e-12);
        assert!((g("all").p_holm - 0.75).abs() < 1e-12);
        assert_eq!(g("Society").p_holm, 1.0);
        // Accuracy rows: subsets then `all` (micro), no macro.
        let labels: Vec<&str> = b.accuracy[1].iter().map(|r| r.label.as_str()).collect();
        assert_eq!(
            labels,
            ["Society", "Art", "micro"],
            "subsets in first-appearance order, then all"
        );
        assert_eq!(b.accuracy[0].last().unwrap().strict, Some(2.0 / 6.0));
        assert_eq!(b.accuracy[1].last().unwrap().strict, Some(5.0 / 6.0));
        assert!(m.conditions[1].oracle);
        let md = prbench_records::matrix::render(&m);
        assert!(md.contains("upper bound"));
        assert!(md.contains("+75.0 (3/0; p 0.2500; Holm 0.7500)"), "{md}");
    }

    #[test]
    fn no_gains_without_a_none_run() {
        let a = run(Condition::Oracle, &[("x", "Art", Correct)]);
        let b = run(Condition::Planner, &[("x", "Art", Wrong)]);
        let m = build(
            &[a, b],
            "m",
            "d",
            "prb",
            42,
            &BootstrapConfig { resamples: 100, ..BootstrapConfig::default() },
            vec![],
        );
        assert!(m.blocks[0].gains.is_empty());
    }
}
