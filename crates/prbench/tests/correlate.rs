//! `prbench correlate` on benchmark run folders written by hand: runs on other dataset files or
//! other items are refused (or restricted to their common items with `--common-items`, each
//! accuracy recomputed from outcomes.jsonl), and `--with-baselines` takes each control baseline
//! once per condition.

mod common;

use common::*;
use std::path::Path;

const HASH: &str = "aaaaaaaaaaaa0000000000000000000000000000000000000000000000000000";

/// One outcome: example id, result, and the position-debiased result when the run has one.
type Item<'a> = (&'a str, &'a str, Option<&'a str>);

/// A summary's accuracy row `micro`, every field `prbench eval` writes.
fn micro_row(n: usize, correct: usize, strict: f64) -> serde_json::Value {
    serde_json::json!({ "label": "micro", "n": n, "correct": correct, "wrong": n - correct, "ties": 0, "unparsed": 0, "errors": 0, "truncated": 0, "strict": strict, "strict_ci": null, "half": strict, "excluded": strict })
}

fn micro(results: &[&str]) -> serde_json::Value {
    let correct = results.iter().filter(|r| **r == "correct").count();
    serde_json::json!([micro_row(results.len(), correct, correct as f64 / results.len() as f64)])
}

/// One line of `outcomes.jsonl` of a run of `model` under `none`, every field `prbench eval`
/// writes for a reward model (no scores: only the results matter here).
fn outcome(model: &str, id: &str, result: &str, debiased: Option<&str>) -> String {
    serde_json::json!({ "example_id": id, "subset": "Art_and_Entertainment", "condition": "none", "model": model, "chosen_slot": null, "verdict": null, "swapped_verdict": null, "score_chosen": null, "score_rejected": null, "result": result, "both_orders_result": null, "debiased_result": debiased, "input_tokens": 0, "output_tokens": 0, "truncated_tokens": 0, "latency_ms": 0.0, "error": null, "posts_dropped": 0, "planner_failed": false, "empty_profile": false, "empty_rubric": false }).to_string()
}

/// Writes the summary.json and outcomes.jsonl of a run of `model` under `none`, made on the
/// dataset with `hash`, with `limit`, its `items`, and control baselines `(name, accuracy)`.
fn write_run(
    dir: &Path,
    model: &str,
    hash: &str,
    limit: Option<usize>,
    items: &[Item<'_>],
    baselines: &[(&str, f64)],
) {
    std::fs::create_dir_all(dir).unwrap();
    let results: Vec<&str> = items.iter().map(|i| i.1).collect();
    let debiased: Option<Vec<&str>> = items.iter().map(|i| i.2).collect();
    let summary = serde_json::json!({
        "run_id": model,
        "model": model,
        "engine": "test",
        "decoding": null,
        "condition": "none",
        "condition_meaning": "no context",
        "oracle": false,
        "dataset": "data",
        "dataset_kind": "prb",
        "dataset_hash": hash,
        "limit_per_subset": limit,
        "sample_per_subset": null,
        "seed": 42,
        "bootstrap_resamples": 1000,
        "rows": micro(&results),
        "position_bias": null,
        "both_orders": debiased.as_ref().map(|d| serde_json::json!({ "rows": micro(d), "consistency": null, "debiased_rows": micro(d) })),
        "baselines": baselines.iter().map(|(name, s)| serde_json::json!({ "name": name, "sees": "none", "rows": [micro_row(items.len(), 0, *s)] })).collect::<Vec<_>>(),
        "input_tokens": 0,
        "truncated_tokens": 0,
        "output_tokens": 0,
        "wall_seconds": 0.0,
    });
    std::fs::write(dir.join("summary.json"), summary.to_string()).unwrap();
    let lines: Vec<String> = items.iter().map(|(id, r, d)| outcome(model, id, r, *d)).collect();
    std::fs::write(dir.join("outcomes.jsonl"), lines.join("\n") + "\n").unwrap();
}

fn run(args: &[&str], cwd: &Path) -> (bool, String, String) {
    let mut all = vec!["correlate", "--bootstrap", "1000", "--permutations", "1000"];
    all.extend(args);
    let out = prbench(&all, cwd);
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn correlate_refuses_runs_on_other_items_and_common_items_recomputes_accuracy_on_the_shared_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    // A judged both orders: its position-debiased results (the figure read) differ from the
    // single-order ones. All items: 3/4 debiased; on e1, e2: 2/2.
    write_run(
        &p.join("A"),
        "m1",
        HASH,
        None,
        &[
            ("e1", "wrong", Some("correct")),
            ("e2", "wrong", Some("correct")),
            ("e3", "correct", Some("wrong")),
            ("e4", "correct", Some("correct")),
        ],
        &[],
    );
    // B is a `--limit 2` run: e1, e2 only; 1/2.
    write_run(
        &p.join("B"),
        "m2",
        HASH,
        Some(2),
        &[("e1", "wrong", None), ("e2", "correct", None)],
        &[],
    );
    // C: 2/4 on all items, 0/2 on e1, e2.
    write_run(
        &p.join("C"),
        "m3",
        HASH,
        None,
        &[
            ("e1", "wrong", None),
            ("e2", "wrong", None),
            ("e3", "correct", None),
            ("e4", "correct", None),
        ],
        &[],
    );
    std::fs::write(p.join("down.csv"), "model,score\nm1,0.9\nm2,0.1\nm3,0.5\n").unwrap();
    let (ok, _, err) = run(&["--benchmark", "A", "B", "C", "--downstream", "down.csv"], p);
    assert!(!ok);
    assert!(err.contains("`A` evaluated 4 items and `B` 2 items (--limit 2 per subset): 2 only in the first (`e3`, `e4`)"), "{err}");
    assert!(err.contains("0 only in the second") && err.contains("--common-items"), "{err}");

    let (ok, out, err) =
        run(&["--benchmark", "A", "B", "C", "--downstream", "down.csv", "--common-items"], p);
    assert!(ok, "{err}");
    // On e1, e2: A 2/2 = 1, B 1/2, C 0/2.
    assert!(
        out.contains("| `m1 (none)` | 1.0000 | 0.9000 |")
            && out.contains("| `m2 (none)` | 0.5000 | 0.1000 |")
            && out.contains("| `m3 (none)` | 0.0000 | 0.5000 |"),
        "{out}"
    );
    // Ranks 1 2 3 against 1 3 2: rho = 1 − 6·2/(3·8) = 0.5.
    assert!(out.contains("| Spearman rho | 0.5000 |"), "{out}");
    assert!(
        err.contains(
            "`A`: 2 of its 4 items kept; accuracy 0.7500 on all, 1.0000 on the common items"
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "`C`: 2 of its 4 items kept; accuracy 0.5000 on all, 0.0000 on the common items"
        ),
        "{err}"
    );
    assert!(err.contains("2 items common to all 3 runs kept (2 runs restricted)"), "{err}");
    // Baselines are over each run's own items and cannot be restricted: refused, not mixed in.
    write_run(
        &p.join("Cb"),
        "m3",
        HASH,
        None,
        &[
            ("e1", "wrong", None),
            ("e2", "wrong", None),
            ("e3", "correct", None),
            ("e4", "correct", None),
        ],
        &[("baseline:longer", 0.5)],
    );
    let (ok, _, err) = run(
        &[
            "--benchmark",
            "A",
            "B",
            "Cb",
            "--downstream",
            "down.csv",
            "--common-items",
            "--with-baselines",
        ],
        p,
    );
    assert!(!ok && err.contains("the baselines of `Cb` are over all its 4 items"), "{err}");
    // A summary whose outcomes do not add up to it is refused.
    std::fs::write(p.join("C/outcomes.jsonl"), outcome("m3", "e1", "wrong", None) + "\n").unwrap();
    let (ok, _, err) =
        run(&["--benchmark", "A", "B", "C", "--downstream", "down.csv", "--common-items"], p);
    assert!(
        !ok && err.contains("holds 1 outcome records (0 correct) but")
            && err.contains("counts 4 items (2 correct)"),
        "{err}"
    );
}

#[test]
fn correlate_refuses_runs_on_other_dataset_files_naming_both_runs_and_hashes() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    let items: [Item<'_>; 2] = [("e1", "correct", None), ("e2", "wrong", None)];
    write_run(&p.join("A"), "m1", HASH, None, &items, &[]);
    write_run(
        &p.join("B"),
        "m2",
        "bbbbbbbbbbbb1111111111111111111111111111111111111111111111111111",
        None,
        &[("e1", "correct", None), ("e2", "correct", None)],
        &[],
    );
    write_run(&p.join("C"), "m3", HASH, None, &[("e1", "wrong", None), ("e2", "wrong", None)], &[]);
    std::fs::write(p.join("down.csv"), "model,score\nm1,0.5\nm2,0.9\nm3,0.1\n").unwrap();
    let (ok, _, err) = run(&["--benchmark", "A", "B", "C", "--downstream", "down.csv"], p);
    assert!(!ok);
    assert!(err.contains("`A` (dataset sha256 aaaaaaaaaaaa…) and `B` (bbbbbbbbbbbb…) were made on different dataset files"), "{err}");
    // Opted in: the same ids are compared, with the difference said.
    let (ok, out, err) =
        run(&["--benchmark", "A", "B", "C", "--downstream", "down.csv", "--common-items"], p);
    assert!(
        ok && err.contains("note: `A` (dataset sha256 aaaaaaaaaaaa…) and `B`")
            && err.contains("matches their items by example id"),
        "{err}"
    );
    assert!(out.contains("| Spearman rho | 1.0000 |"), "{out}");
}

#[test]
fn with_baselines_takes_each_baseline_once_per_condition_and_refuses_disagreeing_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    let baselines = [("baseline:longer", 0.5), ("baseline:random", 0.25)];
    let results = [["correct", "correct"], ["correct", "wrong"], ["wrong", "wrong"]];
    for (dir, model, r) in
        [("A", "m1", results[0]), ("B", "m2", results[1]), ("C", "m3", results[2])]
    {
        write_run(
            &p.join(dir),
            model,
            HASH,
            None,
            &[("e1", r[0], None), ("e2", r[1], None)],
            &baselines,
        );
    }
    std::fs::write(
        p.join("down.csv"),
        "model,score\nm1,0.9\nm2,0.5\nm3,0.1\nbaseline:longer,0.3\nbaseline:random,0.2\n",
    )
    .unwrap();
    let (ok, out, err) =
        run(&["--benchmark", "A", "B", "C", "--downstream", "down.csv", "--with-baselines"], p);
    assert!(ok, "{err}");
    assert_eq!(out.matches("| `baseline:longer (none)` | 0.5000 | 0.3000 |").count(), 1, "{out}");
    assert_eq!(out.matches("baseline:random (none)").count(), 1, "{out}");
    assert!(out.contains("5 models"), "{out}");
    // B's random baseline disagrees (another --seed): refused, both runs named.
    write_run(
        &p.join("B"),
        "m2",
        HASH,
        None,
        &[("e1", "correct", None), ("e2", "wrong", None)],
        &[("baseline:longer", 0.5), ("baseline:random", 0.75)],
    );
    let (ok, _, err) =
        run(&["--benchmark", "A", "B", "C", "--downstream", "down.csv", "--with-baselines"], p);
    assert!(
        !ok && err.contains(
            "`baseline:random` under condition `none` has accuracy 0.25 in `A` but 0.75 in `B`"
        ),
        "{err}"
    );
}

#[test]
fn unmatched_models_message_says_no_model_for_an_empty_side() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("bench.csv"), "model,score\na,0.5\nb,0.6\nc,0.7\n").unwrap();
    std::fs::write(tmp.path().join("down.csv"), "model,score\na,1.5\nb,1.1\nc,1.2\ne,1.0\n")
        .unwrap();
    let (ok, _, err) = run(&["--benchmark", "bench.csv", "--downstream", "down.csv"], tmp.path());
    assert!(!ok && err.contains("Only benchmark: (no model). Only downstream: e."), "{err}");
}

/// `--benchmark-set` through the real binary on CSVs: benchmark A ranks four models exactly as
/// the downstream does and B exactly reversed, so on every resample where they are defined A's
/// rho, tau-b and weighted tau are 1, B's −1 and A − B is 2; RBO of the reversal of 4 with
/// p = 0.9: agreements 0, 0, 2/3, 1 → 0.1·(0.81·2/3 + 0.729) + 0.9⁴ = 0.783. A third set
/// lacking a model leaves it out of every set, said on stderr.
#[test]
fn benchmark_sets_side_by_side_in_the_papers_table() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    std::fs::write(p.join("down.csv"), "model,score\na,1.0\nb,1.1\nc,1.2\nd,1.5\n").unwrap();
    std::fs::write(p.join("a.csv"), "model,score\na,0.5\nb,0.6\nc,0.7\nd,0.8\n").unwrap();
    std::fs::write(p.join("b.csv"), "model,score\na,0.8\nb,0.7\nc,0.6\nd,0.5\n").unwrap();
    let (ok, out, err) = run(
        &[
            "--benchmark-set",
            "A=a.csv",
            "--benchmark-set",
            "B=b.csv",
            "--downstream",
            "down.csv",
            "--downstream-name",
            "BoN",
            "--out",
            "cmp.md",
        ],
        p,
    );
    assert!(ok, "{err}");
    let one = "1.000 [1.00, 1.00]";
    assert!(
        out.contains("| benchmark | downstream | NDCG | weighted tau | rho | tau-b | RBO |"),
        "{out}"
    );
    assert!(out.contains(&format!("| A | BoN | {one} | {one} | {one} | {one} | {one} |")), "{out}");
    let minus = "-1.000 [-1.00, -1.00]";
    assert!(out.contains(&format!("| {minus} | {minus} | {minus} | 0.783 [")), "{out}");
    let two = "+2.000 [2.00, 2.00]";
    assert!(
        out.contains("| A − B | +") && out.contains(&format!("| {two} | {two} | {two} | +0.217 [")),
        "{out}"
    );
    // Resamples drawing one model four times leave rho, tau-b and weighted tau undefined for
    // both sets (and their difference): counted in a table, not dropped silently.
    assert!(out.contains("Resamples (of 1000) on which a statistic is undefined"), "{out}");
    assert!(out.contains("on the 4 models that every set and the downstream score"), "{out}");
    let md = std::fs::read_to_string(p.join("cmp.md")).unwrap();
    assert_eq!(md.trim_end(), out.trim_end());
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p.join("cmp.json")).unwrap()).unwrap();
    assert_eq!(json["kind"], "benchmark comparison");
    let ci = &json["pairs"][0]["difference"]["spearman"]["ci"];
    assert!(
        (ci["lo"].as_f64().unwrap() - 2.0).abs() < 1e-12
            && (ci["hi"].as_f64().unwrap() - 2.0).abs() < 1e-12,
        "{ci}"
    );
    let undefined = json["pairs"][0]["difference"]["spearman"]["undefined"].as_u64().unwrap();
    assert!(
        undefined > 0
            && undefined
                == json["sets"][0]["correlation"]["bootstrap"]["stats"]["spearman"]["undefined"]
                    .as_u64()
                    .unwrap()
    );
    // The report reads it.
    let report = prbench(&["report", "cmp.json", "--out", "r.html"], p);
    assert!(report.status.success(), "{}", text(&report.stderr));
    let html = std::fs::read_to_string(p.join("r.html")).unwrap();
    assert!(
        html.contains(&format!("<td>{one}</td>")) && html.contains("comparison-differences"),
        "the report shows the comparison"
    );

    // A set lacking model d: the comparison uses a, b, c, and says so.
    std::fs::write(p.join("c.csv"), "model,score\na,0.1\nc,0.3\nb,0.2\n").unwrap();
    let (ok, out, err) = run(
        &[
            "--benchmark-set",
            "A=a.csv",
            "--benchmark-set",
            "B=b.csv",
            "--benchmark-set",
            "C=c.csv",
            "--downstream",
            "down.csv",
        ],
        p,
    );
    assert!(ok, "{err}");
    assert!(
        err.contains("benchmark set `C` has no score for 1 of the downstream's 4 models (d)"),
        "{err}"
    );
    assert!(out.contains("on the 3 models that every set") && out.contains("| B − C | "), "{out}");
    assert!(out.contains("against the downstream ranking `down.csv`"), "{out}");

    // Refused: both forms at once, a set without a name, --downstream-name alone, a name twice.
    let (ok, _, err) =
        run(&["--benchmark", "a.csv", "--benchmark-set", "B=b.csv", "--downstream", "down.csv"], p);
    assert!(!ok && err.contains("cannot be used with"), "{err}");
    let (ok, _, err) = run(&["--benchmark-set", "b.csv", "--downstream", "down.csv"], p);
    assert!(!ok && err.contains("expected NAME=PATH[,PATH...]"), "{err}");
    let (ok, _, err) =
        run(&["--benchmark", "a.csv", "--downstream", "down.csv", "--downstream-name", "BoN"], p);
    assert!(!ok && err.contains("--benchmark-set"), "{err}");
    let (ok, _, err) = run(
        &["--benchmark-set", "A=a.csv", "--benchmark-set", "A=b.csv", "--downstream", "down.csv"],
        p,
    );
    assert!(!ok && err.contains("the name `A` is given twice"), "{err}");
    // A set's error names the set.
    let (ok, _, err) = run(
        &[
            "--benchmark-set",
            "A=a.csv",
            "--benchmark-set",
            "B=nope.csv",
            "--downstream",
            "down.csv",
        ],
        p,
    );
    assert!(!ok && err.contains("error: benchmark set `B`") && err.contains("nope.csv"), "{err}");
}
