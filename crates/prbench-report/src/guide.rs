//! A reading guide printed after a conditioning matrix: what the figures show, which one to read
//! and why, and the commands a researcher runs next. Built only from the matrix's own figures,
//! so it never claims what the run did not measure.

use std::fmt::Write as _;

use crate::matrix::{Matrix, MatrixBlock};
use crate::plural::count;
use crate::summary::AccuracyRow;

/// What the guide needs besides the matrix: per condition, the share of single-order verdicts
/// that picked slot A (`None` for pointwise reward models or when no verdict parsed).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GuideInputs {
    /// `(condition, share of A verdicts in [0, 1])`, in any order.
    pub share_a: Vec<(String, Option<f64>)>,
    /// The dataset argument as the user gave it (`data/sample`, `psoups:DIR`, …), for the next
    /// commands.
    pub data_arg: String,
    /// The P-Soups dataset argument for the next commands: the spec `prbench data fetch psoups`
    /// prints (`psoups:data/psoups`), which the guide's fetch line comes before.
    pub psoups_arg: String,
}

/// The block to read: position-debiased when the runs have it (both orders, logprob verdicts),
/// else both orders, else single-order accuracy.
pub fn block_to_read(m: &Matrix) -> Option<&MatrixBlock> {
    ["position-debiased", "both orders", "accuracy"]
        .iter()
        .find_map(|name| m.blocks.iter().find(|b| b.metric == *name))
}

fn micro(rows: &[AccuracyRow]) -> Option<&AccuracyRow> {
    rows.iter().find(|r| r.label == "micro")
}

fn figure(row: &AccuracyRow) -> String {
    match (row.strict, row.strict_ci) {
        (Some(a), Some([lo, hi])) => {
            format!("{:.1}% [95% CI {:.1}, {:.1}]", a * 100.0, lo * 100.0, hi * 100.0)
        }
        (Some(a), None) => format!("{:.1}%", a * 100.0),
        _ => "no figure".into(),
    }
}

/// Renders the guide as Markdown-flavoured plain text (a heading, bullets, a command block).
pub fn render(m: &Matrix, inputs: &GuideInputs) -> String {
    let mut s = String::from("## What this shows\n\n");
    let Some(block) = block_to_read(m) else {
        return s;
    };
    let row_of = |condition: &str| {
        m.conditions
            .iter()
            .position(|c| c.condition == condition)
            .and_then(|i| block.accuracy.get(i))
            .and_then(|rows| micro(rows))
    };
    let none = row_of("none");
    let oracle = row_of("oracle");
    match (none, oracle) {
        (Some(n), Some(o)) => {
            let _ = writeln!(
                s,
                "- Knowing nothing about the user (`none`), the model prefers the answer written for them in {} of pairs; shown the user's true rubric aspects (`oracle`: an upper bound, not a benchmark score) in {}. Chance is 50%.",
                figure(n),
                figure(o)
            );
            s.push_str("- The gap between the two is what knowing this user is worth to this model. The benchmark asks how much of it a reward model recovers from the user's past posts alone (`profile:k`, `planner`).\n");
        }
        _ => {
            for (c, rows) in m.conditions.iter().zip(&block.accuracy) {
                if let Some(r) = micro(rows) {
                    let _ = writeln!(
                        s,
                        "- `{}`{}: {}.",
                        c.condition,
                        if c.oracle { " (upper bound)" } else { "" },
                        figure(r)
                    );
                }
            }
        }
    }
    let lean = inputs
        .share_a
        .iter()
        .filter_map(|(c, v)| v.map(|v| (c, v)))
        .max_by(|a, b| (a.1 - 0.5).abs().total_cmp(&(b.1 - 0.5).abs()));
    match block.metric.as_str() {
        "position-debiased" => {
            let lean = lean.map_or(String::new(), |(c, v)| {
                let (slot, share) = if v >= 0.5 { ("A", v) } else { ("B", 1.0 - v) };
                format!(" (this one answered {slot} in {:.0}% of its single-order verdicts under `{c}`)", share * 100.0)
            });
            let _ = writeln!(
                s,
                "- Read the **position-debiased** figures. A small judge leans towards one slot{lean}, so its single-order accuracy partly measures which slot held `chosen`. With `--both-orders` each pair is judged twice, and the judge is credited when its A-vs-B log-odds margin is larger with `chosen` in A than with `chosen` in B: the lean cancels (PROTOCOL.md §4)."
            );
        }
        "both orders" => {
            s.push_str("- Read the **both orders** figures: an item is correct only when the judge picks `chosen` in both orders, so a lean towards one slot cannot score.\n");
        }
        _ => {
            s.push_str("- These are single-order figures; a judge that leans towards one slot scores by that lean. Add `--both-orders` for the position-debiased figure.\n");
        }
    }
    if let Some(r) = none.or_else(|| block.accuracy.first().and_then(|rows| micro(rows))) {
        if let Some([lo, hi]) = r.strict_ci {
            let pairs = count(m.n_examples, "pair", "pairs");
            if m.n_examples < 30 || hi - lo < 1e-9 {
                // A bootstrap over a handful of items, or over subsets whose items all agree,
                // gives a CI too narrow to mean anything: say so instead of quoting its width.
                let _ = writeln!(s, "- {pairs} per condition is too few for a confidence interval to mean much: the bootstrap resamples within each subset, so a subset whose few items all agree shows no spread. Run more pairs before you compare models.");
            } else if m.n_examples < 200 {
                let _ = writeln!(s, "- {pairs} per condition is a first look: a 95% CI here is about {:.0} points wide. Run more pairs before you compare models.", (hi - lo) * 100.0);
            }
        }
    }
    s.push_str("\n## Next\n\n```sh\n");
    let has = |c: &str| {
        m.conditions.iter().any(|x| x.condition == c || x.condition.starts_with(&format!("{c}:")))
    };
    if m.dataset_kind != "psoups" {
        let _ = writeln!(s, "prbench data fetch psoups   # real P-Soups pairs (1,200), sha256-checked; prints --data {}", inputs.psoups_arg);
        let _ = writeln!(s, "prbench eval --data {} --condition none,oracle --both-orders --limit 25 --sample   # a random 25 per subset", inputs.psoups_arg);
    }
    if !has("profile") || !has("planner") {
        let _ = writeln!(
            s,
            "prbench eval --data {} --condition none,profile:10,planner --both-orders   # what the user's posts and a planner recover",
            inputs.data_arg
        );
    }
    s.push_str("prbench eval --model openai:MODEL@http://HOST:PORT/v1 --condition none,oracle   # a real judge behind any OpenAI-compatible server (key from $OPENAI_API_KEY)\n");
    s.push_str("prbench eval --model hf:ORG/NAME --condition none,oracle   # a scalar reward model from the hub cache\n```\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::MatrixCondition;
    use prbench_stats::accuracy::Tally;

    fn row(label: &str, strict: f64, ci: [f64; 2]) -> AccuracyRow {
        AccuracyRow {
            label: label.into(),
            tally: Tally::default(),
            truncated: 0,
            strict: Some(strict),
            strict_ci: Some(ci),
            half: None,
            excluded: None,
        }
    }

    fn matrix(blocks: Vec<MatrixBlock>, kind: &str) -> Matrix {
        Matrix {
            model: "gguf:q.gguf".into(),
            dataset: "data/sample".into(),
            dataset_kind: kind.into(),
            n_examples: 12,
            seed: 42,
            bootstrap_resamples: 1000,
            conditions: vec![
                MatrixCondition { condition: "none".into(), oracle: false, run_id: "a".into() },
                MatrixCondition { condition: "oracle".into(), oracle: true, run_id: "b".into() },
            ],
            blocks,
            notes: vec![],
        }
    }

    fn block(metric: &str, none: f64, oracle: f64) -> MatrixBlock {
        MatrixBlock {
            metric: metric.into(),
            meaning: String::new(),
            accuracy: vec![
                vec![row("Art", 0.0, [0.0, 0.0]), row("micro", none, [0.2, 0.7])],
                vec![row("micro", oracle, [0.5, 0.9])],
            ],
            gains: vec![],
        }
    }

    #[test]
    fn guide_reads_the_position_debiased_block_when_present() {
        let m = matrix(
            vec![
                block("accuracy", 0.5, 0.5),
                block("both orders", 0.1, 0.2),
                block("position-debiased", 0.4167, 0.75),
            ],
            "prb",
        );
        let g = render(
            &m,
            &GuideInputs {
                share_a: vec![("none".into(), Some(0.9)), ("oracle".into(), Some(0.55))],
                data_arg: "data/sample".into(),
                psoups_arg: "psoups:/x/alignx-psoups".into(),
            },
        );
        assert!(g.contains("in 41.7% [95% CI 20.0, 70.0] of pairs"), "{g}");
        assert!(g.contains("rubric aspects (`oracle`: an upper bound, not a benchmark score) in 75.0% [95% CI 50.0, 90.0]"), "{g}");
        // The larger lean of the two conditions (0.9 is further from 0.5 than 0.55).
        assert!(g.contains("answered A in 90% of its single-order verdicts under `none`"), "{g}");
        assert!(g.contains("**position-debiased**"), "{g}");
        // 12 pairs, CI 20–70: 50 points wide.
        assert!(
            g.contains("12 pairs per condition is too few for a confidence interval to mean much"),
            "{g}"
        );
        assert!(g.contains("--data psoups:/x/alignx-psoups --condition none,oracle"), "{g}");
        let (fetch, eval) = (
            g.find("prbench data fetch psoups   #"),
            g.find("prbench eval --data psoups:/x/alignx-psoups"),
        );
        assert!(fetch.is_some() && fetch < eval, "the fetch comes first: {g}");
        assert!(g.contains("--data data/sample --condition none,profile:10,planner"), "{g}");
        assert!(g.contains("openai:"), "{g}");
    }

    #[test]
    fn guide_quotes_a_ci_width_only_when_it_can_mean_something() {
        let mut m = matrix(vec![block("position-debiased", 0.4167, 0.75)], "prb");
        m.n_examples = 60;
        let g = render(&m, &GuideInputs::default());
        // none's micro CI is [0.2, 0.7]: 50 points.
        assert!(
            g.contains(
                "60 pairs per condition is a first look: a 95% CI here is about 50 points wide"
            ),
            "{g}"
        );
        let mut zero = block("position-debiased", 0.5, 0.5);
        zero.accuracy[0][1].strict_ci = Some([0.5, 0.5]);
        let mut m = matrix(vec![zero], "prb");
        m.n_examples = 60;
        let g = render(&m, &GuideInputs::default());
        assert!(
            g.contains("too few for a confidence interval to mean much")
                && !g.contains("0 points wide"),
            "{g}"
        );
    }

    #[test]
    fn guide_names_the_slot_a_judge_leans_to() {
        let m = matrix(vec![block("position-debiased", 0.4167, 0.75)], "prb");
        let g = render(
            &m,
            &GuideInputs {
                share_a: vec![("none".into(), Some(0.0)), ("oracle".into(), Some(0.25))],
                data_arg: "d".into(),
                psoups_arg: "psoups:p".into(),
            },
        );
        assert!(g.contains("answered B in 100% of its single-order verdicts under `none`"), "{g}");
    }

    #[test]
    fn guide_without_both_orders_says_to_add_it() {
        let m = matrix(vec![block("accuracy", 0.6, 0.7)], "psoups");
        let g = render(
            &m,
            &GuideInputs {
                share_a: vec![],
                data_arg: "psoups:x".into(),
                psoups_arg: "psoups:p".into(),
            },
        );
        assert!(g.contains("Add `--both-orders`"), "{g}");
        assert!(g.contains("in 60.0% [95% CI 20.0, 70.0] of pairs"), "{g}");
        assert!(!g.contains("--data psoups:p"), "P-Soups is not suggested again: {g}");
        assert!(!g.contains("data fetch psoups"), "nor fetched again: {g}");
    }
}
