//! Markdown rendering of a [`Summary`] (`summary.md`, and the table the CLI prints).

use std::fmt::Write;

use crate::plural::count;
use crate::summary::{AccuracyRow, Summary};

/// Formats a proportion in [0, 1] as a percentage with one decimal, or `n/a`.
pub fn pct(x: Option<f64>) -> String {
    x.map_or_else(|| "n/a".into(), |v| format!("{:.1}", v * 100.0))
}

/// Formats a CI in [0, 1] as `[lo, hi]` percentages, or `n/a`.
pub fn pct_ci(ci: Option<[f64; 2]>) -> String {
    ci.map_or_else(|| "n/a".into(), |[lo, hi]| format!("[{:.1}, {:.1}]", lo * 100.0, hi * 100.0))
}

/// The main accuracy table: one line per row with counts beside the accuracy.
pub fn accuracy_table(rows: &[AccuracyRow]) -> String {
    let mut s = String::from(
        "| subset | n | accuracy % | 95% CI | correct | wrong | ties | unparsed | errors | truncated | half-tie % | excl. % |\n\
         |---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.label,
            r.tally.n,
            pct(r.strict),
            pct_ci(r.strict_ci),
            r.tally.correct,
            r.tally.wrong,
            r.tally.ties,
            r.tally.unparsed,
            r.tally.errors,
            r.truncated,
            pct(r.half),
            pct(r.excluded)
        );
    }
    s
}

/// The whole `summary.md`.
pub fn render(sum: &Summary) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# prbench run `{}`\n", sum.run_id);
    if sum.oracle {
        s.push_str("> **ORACLE CONDITION — upper bound.** The model was shown the ground-truth rubric aspects; this is not a benchmark score.\n\n");
    }
    if sum.dataset_kind != "prb" {
        let _ = writeln!(
            s,
            "> Data converted from `{}`, not Personalized-RewardBench: figures are not comparable with the paper's.\n",
            sum.dataset_kind
        );
    }
    let _ = writeln!(s, "- model: `{}` ({})", sum.model, sum.engine);
    if let Some(trained) = &sum.model_training_condition {
        let _ = if *trained == sum.condition {
            writeln!(s, "- trained under condition `{trained}`, the condition of this run")
        } else {
            writeln!(
                s,
                "- trained under condition `{trained}`, not this run's `{}`: it scored inputs unlike its training data (as an off-the-shelf reward model would)",
                sum.condition
            )
        };
    }
    if !sum.decoding.is_null() {
        let _ = writeln!(s, "- decoding: `{}`", sum.decoding);
    }
    let _ = writeln!(s, "- condition: `{}`: {}", sum.condition, sum.condition_meaning);
    if let Some(limit) = sum.limit_per_subset {
        let _ = writeln!(
            s,
            "- limited to the first {} of each subset (a quick look, not a full run)",
            count(limit, "example", "examples")
        );
    }
    if let Some(n) = sum.sample_per_subset {
        let _ = writeln!(s, "- limited to a random sample of {n} examples per subset, seed {} (the {n} with the smallest sha256(seed, id); a quick look, not a full run)", sum.seed);
    }
    let _ = writeln!(
        s,
        "- dataset: `{}` ({}), sha256 `{}`",
        sum.dataset,
        sum.dataset_kind,
        short_hash(&sum.dataset_hash)
    );
    let generated = if sum.output_tokens > 0 {
        format!(", {} generated", sum.output_tokens)
    } else {
        String::new()
    };
    // A server that counts no tokens leaves every item's count at 0: say unknown, not 0.
    let tokens = if sum.remote.is_some_and(|r| r.prompt_tokens.is_none()) {
        "input tokens unknown (the server does not count them)".to_string()
    } else {
        format!(
            "{}, {} of them cut by truncation",
            count(sum.input_tokens, "input token", "input tokens"),
            sum.truncated_tokens
        )
    };
    let _ = writeln!(
        s,
        "- seed {}, bootstrap {}; {tokens}{generated}; model wall time {:.1} s",
        sum.seed,
        count(sum.bootstrap_resamples, "resample", "resamples"),
        sum.wall_seconds
    );
    if let Some(c) = &sum.cache {
        let failed = if c.write_errors > 0 {
            format!(
                ", {} not stored (first: {})",
                c.write_errors,
                c.first_error.as_deref().unwrap_or("")
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "- cache `{}`: {}, {}{failed}",
            c.path,
            count(c.hits, "hit", "hits"),
            count(c.calls, "call", "calls")
        );
    }
    if let Some(r) = &sum.remote {
        let _ = writeln!(
            s,
            "- remote: {} requests ({} retries), {}; server-reported usage {}",
            r.requests,
            r.retries,
            count(r.failures, "call failed", "calls failed"),
            r.usage_text()
        );
    }
    if let Some(p) = &sum.profile {
        let _ = writeln!(s, "- profile: {}", p.line());
    }
    if let Some(n) = sum.empty_rubric.filter(|&n| n > 0) {
        let _ = writeln!(
            s,
            "- oracle: ground-truth rubric shown{}",
            crate::summary::empty_line(n, "an empty rubric")
        );
    }
    if let Some(p) = &sum.planner {
        let _ = writeln!(s, "- planner {}", p.line());
    }
    s.push('\n');
    if let Some(p) = sum.planner.as_ref().filter(|p| p.failed > 0) {
        let _ = writeln!(s, "> **The planner's reply held no usable list for {} of {} examples**: they were scored with no context (see planner.jsonl and `planner_failed` in outcomes.jsonl).\n", p.failed, p.examples);
    }
    if let Some(micro) = sum.rows.iter().find(|r| r.label == "micro") {
        let (errors, unparsed, n) = (micro.tally.errors, micro.tally.unparsed, micro.tally.n);
        if errors > 0 {
            let _ = writeln!(s, "> **{errors} of {} failed in the backend** (after any retries): they count as not correct here and are listed with their error in outcomes.jsonl.\n", count(n, "item", "items"));
        }
        if unparsed > 0 {
            let _ = writeln!(s, "> **{unparsed} of {} could not be parsed** ({}): they count as not correct, never as a choice.\n", count(n, "verdict", "verdicts"), unparsed_reason(&sum.decoding));
        }
    }
    s.push_str("## Accuracy\n\n");
    let unit = match sum.bootstrap_users {
        Some(n) => format!(
            "resampling users ({}, each with all their examples) within each subset",
            count(n, "user", "users")
        ),
        None => "resampling examples within each subset".to_string(),
    };
    let _ = writeln!(s, "Strict accuracy counts ties, unparsed verdicts and errors as not correct (the paper's rule); half-tie gives ties half credit; excl. drops ties, unparsed and errors from the denominator. CIs: seeded percentile bootstrap, {unit}.\n");
    s.push_str(&accuracy_table(&sum.rows));
    if let Some(pb) = &sum.position_bias {
        s.push_str("\n## Position bias\n\n| chosen in A: n | accuracy % | chosen in B: n | accuracy % | share of A verdicts % |\n|---:|---:|---:|---:|---:|\n");
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            pb.n_chosen_in_a,
            pct(pb.accuracy_chosen_in_a),
            pb.n_chosen_in_b,
            pct(pb.accuracy_chosen_in_b),
            pct(pb.share_a_verdicts)
        );
    }
    if let Some(bo) = &sum.both_orders {
        s.push_str("\n## Both orders\n\nCorrect only when the verdicts with chosen in A and with chosen in B both pick it.\n\n");
        s.push_str(&accuracy_table(&bo.rows));
        let _ = writeln!(
            s,
            "\nConsistency (both verdicts pick the same answer): {} %",
            pct(bo.consistency)
        );
        if let Some(rows) = &bo.debiased_rows {
            s.push_str(
                "\nPosition-debiased (margin with chosen in A > margin with chosen in B):\n\n",
            );
            s.push_str(&accuracy_table(rows));
        }
    }
    if !sum.baselines.is_empty() {
        s.push_str("\n## Control baselines (same items)\n\n");
        let labels: Vec<&str> = sum.baselines[0].rows.iter().map(|r| r.label.as_str()).collect();
        let _ = writeln!(s, "| baseline | sees | {} | micro 95% CI | ties |", labels.join(" | "));
        let _ = writeln!(s, "|---|---|{}---|---:|", "---:|".repeat(labels.len()));
        for b in &sum.baselines {
            let cells: Vec<String> = b.rows.iter().map(|r| pct(r.strict)).collect();
            let micro = b.rows.iter().find(|r| r.label == "micro");
            let _ = writeln!(
                s,
                "| `{}` | {} | {} | {} | {} |",
                b.name,
                b.sees,
                cells.join(" | "),
                pct_ci(micro.and_then(|r| r.strict_ci)),
                micro.map_or(0, |r| r.tally.ties)
            );
        }
    }
    s
}

fn short_hash(h: &str) -> &str {
    &h[..h.len().min(16)]
}

/// Why a verdict of a run with this decoding record (a summary's or manifest's `decoding`) is
/// unparsed, in the words of its verdict format: prbench's `Result:` line, or the reader of the
/// judge recipe the record names (`reader`; `verdict: rating` for pointwise recipes).
pub fn unparsed_reason(decoding: &serde_json::Value) -> &'static str {
    if decoding["verdict"] == "rating" {
        return "no readable `Rating: N` in one of the two replies";
    }
    if decoding["verdict"] == "next-token-logprob" {
        return "a candidate letter missing from the server's top log-probabilities at the verdict token";
    }
    match decoding["reader"].as_str() {
        Some("brackets") => "no `[[A]]` or `[[B]]` verdict",
        Some("answer-tag") => "no `<answer>A|B</answer>` verdict",
        Some("boxed") => "no `\\boxed{A|B}` verdict",
        Some("regex") => "no match of the recipe's pattern holding A, B or tie",
        _ => "no `Result: A|B` line",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::{BaselineRow, PositionBias};
    use prbench_stats::Tally;

    fn row(label: &str, correct: usize, wrong: usize, ties: usize) -> AccuracyRow {
        let n = correct + wrong + ties;
        AccuracyRow {
            label: label.into(),
            tally: Tally { n, correct, wrong, ties, unparsed: 0, errors: 0 },
            truncated: 0,
            strict: Some(correct as f64 / n as f64),
            strict_ci: Some([0.25, 0.875]),
            half: Some((correct as f64 + 0.5 * ties as f64) / n as f64),
            excluded: Some(correct as f64 / (correct + wrong) as f64),
        }
    }

    fn summary(oracle: bool, kind: &str) -> Summary {
        Summary {
            run_id: "r1".into(),
            model: "baseline:longer".into(),
            model_training_condition: None,
            engine: "baseline".into(),
            decoding: serde_json::Value::Null,
            condition: if oracle { "oracle" } else { "none" }.into(),
            condition_meaning: "what it sees".into(),
            oracle,
            dataset: "data/sample".into(),
            dataset_kind: kind.into(),
            dataset_hash: "ab".repeat(32),
            limit_per_subset: None,
            sample_per_subset: None,
            seed: 42,
            bootstrap_resamples: 100,
            bootstrap_users: None,
            rows: vec![row("Art", 5, 2, 1), row("micro", 5, 2, 1)],
            position_bias: Some(PositionBias {
                n_chosen_in_a: 4,
                accuracy_chosen_in_a: Some(1.0),
                n_chosen_in_b: 4,
                accuracy_chosen_in_b: Some(0.25),
                share_a_verdicts: Some(0.875),
            }),
            both_orders: None,
            baselines: vec![BaselineRow {
                name: "baseline:shorter".into(),
                sees: "answer only".into(),
                rows: vec![row("Art", 3, 5, 0), row("micro", 3, 5, 0)],
            }],
            input_tokens: 10,
            truncated_tokens: 0,
            profile: None,
            planner: None,
            empty_rubric: None,
            output_tokens: 0,
            wall_seconds: 1.25,
            cache: None,
            remote: None,
        }
    }

    #[test]
    fn rows_show_counts_beside_accuracy() {
        // 5 correct, 2 wrong, 1 tie of 8: strict 62.5, half 68.75 -> 68.8, excluded 5/7 = 71.4.
        let md = accuracy_table(&[row("Art", 5, 2, 1)]);
        assert!(
            md.ends_with(
                "| Art | 8 | 62.5 | [25.0, 87.5] | 5 | 2 | 1 | 0 | 0 | 0 | 68.8 | 71.4 |\n"
            ),
            "{md}"
        );
    }

    #[test]
    fn banners_flag_oracle_and_converted_data_only() {
        let plain = render(&summary(false, "prb"));
        assert!(!plain.contains("ORACLE") && !plain.contains("not Personalized-RewardBench"));
        assert!(!plain.contains("decoding"), "a null decoding is not printed");
        let flagged = render(&summary(true, "psoups"));
        assert!(flagged.contains("ORACLE CONDITION — upper bound"));
        assert!(flagged.contains("Data converted from `psoups`"));
        assert!(flagged.contains("| 4 | 100.0 | 4 | 25.0 | 87.5 |"), "{flagged}");
        assert!(
            flagged
                .contains("| `baseline:shorter` | answer only | 37.5 | 37.5 | [25.0, 87.5] | 0 |"),
            "{flagged}"
        );
    }

    #[test]
    fn token_counts_a_server_did_not_report_read_unknown_never_0() {
        let with = |prompt_tokens: Option<u64>, completion_tokens: Option<u64>| {
            let remote = crate::summary::RemoteCalls {
                requests: 26,
                retries: 2,
                failures: 0,
                prompt_tokens,
                completion_tokens,
            };
            render(&Summary { remote: Some(remote), input_tokens: 0, ..summary(false, "prb") })
        };
        // An OpenRLHF-style server: no prompt counts, and a reward model generates nothing.
        let md = with(None, Some(0));
        assert!(md.contains("- remote: 26 requests (2 retries), 0 calls failed; server-reported usage unknown prompt + 0 completion tokens\n"), "{md}");
        assert!(
            md.contains("; input tokens unknown (the server does not count them); model wall time"),
            "{md}"
        );
        assert!(!md.contains("0 input tokens"), "{md}");
        let md = with(Some(1234), Some(56));
        assert!(md.contains("server-reported usage 1234 prompt + 56 completion tokens\n"), "{md}");
        assert!(
            md.contains("; 0 input tokens, 0 of them cut by truncation; model wall time"),
            "{md}"
        );
        // Summaries written before the counts could be unknown still read.
        let old: crate::summary::RemoteCalls = serde_json::from_str(
            r#"{"requests":1,"retries":0,"failures":0,"prompt_tokens":7,"completion_tokens":0}"#,
        )
        .unwrap();
        assert_eq!((old.prompt_tokens, old.completion_tokens), (Some(7), Some(0)));
    }

    #[test]
    fn a_trained_models_condition_is_shown_and_a_mismatch_said() {
        assert!(
            !render(&summary(false, "prb")).contains("trained under"),
            "only for models prbench trained"
        );
        let trained = |condition: &str, oracle: bool| Summary {
            model_training_condition: Some(condition.into()),
            ..summary(oracle, "prb")
        };
        let same = render(&trained("none", false));
        assert!(same.contains("- model: `baseline:longer` (baseline)\n- trained under condition `none`, the condition of this run\n"), "{same}");
        let other = render(&trained("none", true));
        assert!(
            other.contains("- trained under condition `none`, not this run's `oracle`: it scored inputs unlike its training data"),
            "{other}"
        );
    }
}
