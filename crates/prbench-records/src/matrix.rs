//! The conditioning matrix (`matrix.json`, `matrix.md`): one model under several conditions on
//! the same items — accuracy with CI per subset and overall, and each condition's gain over
//! `none` with a paired exact McNemar test and Holm-corrected p-values (PROTOCOL.md §2, §5).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::summary::AccuracyRow;

/// One condition's run, as the matrix lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixCondition {
    /// Condition name (`none`, `profile:10`, `planner`, `oracle`).
    pub condition: String,
    /// True for `oracle`: an upper bound, never a benchmark score.
    pub oracle: bool,
    /// The run folder holding its outcomes.
    pub run_id: String,
}

/// One condition's gain over `none` in one scope (a subset or all items).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gain {
    /// Condition compared with `none`.
    pub condition: String,
    /// Short subset name, or `all`.
    pub scope: String,
    /// Items present under both conditions (paired by example id).
    pub n_paired: usize,
    /// Accuracy under the condition minus accuracy under `none`, on the paired items, in [-1, 1].
    pub gain: f64,
    /// Paired items right under the condition only.
    pub only_condition: u64,
    /// Paired items right under `none` only.
    pub only_none: u64,
    /// Two-sided exact McNemar p-value.
    pub p_value: f64,
    /// Holm-adjusted p-value within this block's family (every gain the block lists).
    pub p_holm: f64,
}

/// The matrix for one per-item metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixBlock {
    /// Metric name: `accuracy` (single order for judges), `both orders`, `position-debiased`.
    pub metric: String,
    /// What an item counts as correct under this metric.
    pub meaning: String,
    /// Per condition (in [`Matrix::conditions`] order): rows per subset, then `micro` (all).
    pub accuracy: Vec<Vec<AccuracyRow>>,
    /// Gains over `none`, condition-major, subsets then `all`; empty without a `none` run.
    pub gains: Vec<Gain>,
}

/// Everything `matrix.json` and `matrix.md` report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Matrix {
    /// Model spec.
    pub model: String,
    /// Dataset source.
    pub dataset: String,
    /// Dataset kind (`prb`, `psoups`, …).
    pub dataset_kind: String,
    /// Items per condition.
    pub n_examples: usize,
    /// Run seed.
    pub seed: u64,
    /// Bootstrap resamples behind every CI.
    pub bootstrap_resamples: usize,
    /// Conditions in command-line order.
    pub conditions: Vec<MatrixCondition>,
    /// One block per metric the runs support.
    pub blocks: Vec<MatrixBlock>,
    /// Notes the tables need (profile drops, planner failures and quality, …).
    pub notes: Vec<String>,
}

fn pct(v: Option<f64>) -> String {
    v.map_or("—".into(), |v| format!("{:.1}", v * 100.0))
}

fn p_text(p: f64) -> String {
    if p < 1e-4 {
        format!("{p:.1e}")
    } else {
        format!("{p:.4}")
    }
}

/// Renders `matrix.md`.
pub fn render(m: &Matrix) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Conditioning matrix: `{}`\n", m.model);
    if m.conditions.iter().any(|c| c.oracle) {
        s.push_str("> **`oracle` is an upper bound**: the model was shown the ground-truth rubric aspects. It is not a benchmark score.\n\n");
    }
    if m.dataset_kind != "prb" {
        let _ = writeln!(s, "> Data converted from `{}`, not Personalized-RewardBench: figures are not comparable with the paper's.\n", m.dataset_kind);
    }
    let _ = writeln!(
        s,
        "- dataset: `{}` ({}), {} items per condition; seed {}, bootstrap {} resamples",
        m.dataset, m.dataset_kind, m.n_examples, m.seed, m.bootstrap_resamples
    );
    for c in &m.conditions {
        let _ = writeln!(
            s,
            "- `{}`{}: run `{}`",
            c.condition,
            if c.oracle { " (upper bound)" } else { "" },
            c.run_id
        );
    }
    for n in &m.notes {
        let _ = writeln!(s, "- {n}");
    }
    s.push_str("\nStrict accuracy (ties, unparsed and errors are not correct), %, with seeded bootstrap 95% CIs.");
    if m.blocks.iter().any(|b| !b.gains.is_empty()) {
        s.push_str(" Gain: accuracy minus `none`'s on the same items, percentage points; p: two-sided exact McNemar test on the discordant items; Holm: Holm-adjusted over every gain in the block.");
    }
    s.push('\n');
    for b in &m.blocks {
        let _ = writeln!(s, "\n## {}\n\n{}\n", b.metric, b.meaning);
        let scopes: Vec<String> = b
            .accuracy
            .first()
            .map(|rows| rows.iter().map(|r| scope_name(&r.label)).collect())
            .unwrap_or_default();
        s.push_str("| condition |");
        for sc in &scopes {
            let _ = write!(s, " {sc} % [95% CI] |");
        }
        s.push_str("\n|---|");
        s.push_str(&"---:|".repeat(scopes.len()));
        s.push('\n');
        for (c, rows) in m.conditions.iter().zip(&b.accuracy) {
            let label = if c.oracle {
                format!("`{}` (upper bound)", c.condition)
            } else {
                format!("`{}`", c.condition)
            };
            let _ = write!(s, "| {label} |");
            for r in rows {
                let ci = r.strict_ci.map_or(String::new(), |[lo, hi]| {
                    format!(" [{:.1}, {:.1}]", lo * 100.0, hi * 100.0)
                });
                let _ = write!(s, " {}{ci} |", pct(r.strict));
            }
            s.push('\n');
        }
        if b.gains.is_empty() {
            continue;
        }
        s.push_str("\nGain over `none` (pp; only-condition / only-none items; p; Holm p):\n\n| condition |");
        for sc in &scopes {
            let _ = write!(s, " {sc} |");
        }
        s.push_str("\n|---|");
        s.push_str(&"---:|".repeat(scopes.len()));
        s.push('\n');
        for c in m.conditions.iter().filter(|c| c.condition != "none") {
            let _ =
                write!(s, "| `{}`{} |", c.condition, if c.oracle { " (upper bound)" } else { "" });
            for sc in &scopes {
                match b.gains.iter().find(|g| g.condition == c.condition && &g.scope == sc) {
                    Some(g) => {
                        let _ = write!(
                            s,
                            " {:+.1} ({}/{}; p {}; Holm {}) |",
                            g.gain * 100.0,
                            g.only_condition,
                            g.only_none,
                            p_text(g.p_value),
                            p_text(g.p_holm)
                        );
                    }
                    None => s.push_str(" — |"),
                }
            }
            s.push('\n');
        }
    }
    s
}

/// `micro` is shown as `all`.
pub fn scope_name(label: &str) -> String {
    if label == "micro" {
        "all".into()
    } else {
        label.to_string()
    }
}
