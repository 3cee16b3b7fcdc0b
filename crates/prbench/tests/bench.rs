//! The benches in short mode (seconds), as CI runs them so they cannot rot. Timings are
//! printed, never asserted; what is asserted is that each bench measured what it says and
//! that its built-in checks hold.

mod common;

use common::{prbench, repo, sample, text};

/// Whether the SmolLM2 GGUF the judge benches run is absent (the skip reason printed).
fn smollm2_absent() -> bool {
    prbench_testkit::smollm2().is_none()
}

/// `bench harness` at 0.2% scale: the synthetic benchmark is written (2 + 2 + 2 rows), and the
/// workloads run as children, each with a wall time and a peak RSS of its own.
#[test]
fn bench_harness_short_mode() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path().to_str().unwrap();
    let out = prbench(
        &["bench", "harness", "--scale", "0.002", "--rounds", "1", "--work", w, "--json"],
        &repo(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    eprintln!("{}", text(&out.stdout));
    let v: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(v["rows"], 6);
    let loads = v["workloads"].as_array().unwrap();
    // load + validate, then each eval with a cold and a warm run cache.
    assert_eq!(loads.len(), 5);
    let caches: Vec<&str> = loads.iter().map(|l| l["cache"].as_str().unwrap_or("-")).collect();
    assert_eq!(caches, ["-", "cold", "warm", "cold", "warm"]);
    for l in loads {
        assert!(l["wall_s_median"].as_f64().unwrap() > 0.0);
        assert!(l["peak_rss_mib"].as_f64().unwrap() > 1.0);
    }
    // The evals wrote complete runs over all 6 examples (the last one's folder is kept).
    let outcomes =
        std::fs::read_to_string(work.path().join("harness-runs/harness-4-r0/outcomes.jsonl"))
            .unwrap();
    assert_eq!(outcomes.lines().count(), 6);
}

/// `bench judge` on two sample prompts with SmolLM2: both sides prefilled the same tokens and
/// agree on every verdict margin (same llama.cpp, same ids), and generated the same number of
/// tokens greedily. Skipped when the model is absent.
#[test]
fn bench_judge_short_mode() {
    let Some(model) = prbench_testkit::smollm2() else { return };
    let work = tempfile::tempdir().unwrap();
    let args = [
        "bench",
        "judge",
        "--models",
        model.to_str().unwrap(),
        "--data",
        &sample(),
        "--prompts",
        "2",
        "--gen-prompts",
        "1",
        "--max-new-tokens",
        "4",
        "--rounds",
        "1",
        "--work",
        work.path().to_str().unwrap(),
        "--json",
    ];
    let out = prbench(&args, &repo());
    assert!(out.status.success(), "{}", text(&out.stderr));
    eprintln!("{}", text(&out.stdout));
    let v: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    let m = &v["models"][0];
    assert_eq!(m["prompts"], 2);
    assert!(m["prefill_tokens"].as_u64().unwrap() > 100);
    assert!(m["max_abs_margin_diff"].as_f64().unwrap() < 1e-4, "{m}");
    assert_eq!(m["gen_tokens"][0], m["gen_tokens"][1]);
    for k in ["prefill_tok_s", "gen_tok_s", "peak_rss_mib"] {
        assert!(m[k][0].as_f64().unwrap() > 0.0 && m[k][1].as_f64().unwrap() > 0.0, "{k}: {m}");
    }
}

/// `bench rm-prefix` on the sample with the committed qwen2 fixture and no Python: every pair
/// and best-of-16 workload is scored by both prbench paths, the shared-prefix scores equal the
/// unshared ones within 1e-5, the groups really share a prefix, and the transformers columns
/// say why they are empty.
#[test]
fn bench_rm_prefix_short_mode_agrees_with_the_unshared_path() {
    let work = tempfile::tempdir().unwrap();
    let model = repo().join("crates/prbench-rm/tests/fixtures/seqcls/qwen2-f32");
    let args = [
        "bench",
        "rm-prefix",
        "--sets",
        "sample",
        "--conditions",
        "none,profile:10",
        "--pairs",
        "2",
        "--bon-conditions",
        "profile:10",
        "--bon-prompts",
        "1",
        "--bon-n",
        "16",
        "--rounds",
        "1",
        "--model",
        model.to_str().unwrap(),
        "--python",
        "/nonexistent/python",
        "--work",
        work.path().to_str().unwrap(),
        "--json",
    ];
    let out = prbench(&args, &repo());
    assert!(out.status.success(), "{}", text(&out.stderr));
    eprintln!("{}", text(&out.stdout));
    let v: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert!(
        v["reference"]
            .as_str()
            .unwrap()
            .starts_with("skipped: the Python interpreter `/nonexistent/python` was not found"),
        "{v}"
    );
    let rows = v["rows"].as_array().unwrap();
    let kinds: Vec<(&str, &str, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap(),
                r["condition"].as_str().unwrap(),
                r["items"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [("pairs", "none", 4), ("pairs", "profile:10", 4), ("bon16", "profile:10", 16)]
    );
    for r in rows {
        assert_eq!(r["agreement_met"], true, "{r}");
        assert!(r["max_diff_shared_unshared"].as_f64().unwrap() <= 1e-5, "{r}");
        // Each group shares at least its chat template and question.
        assert!(r["prefix_share"].as_f64().unwrap() > 0.0, "{r}");
        assert!(
            r["tok_s"][0].as_f64().unwrap() > 0.0 && r["tok_s"][1].as_f64().unwrap() > 0.0,
            "{r}"
        );
        assert!(r["tok_s"][2].is_null() && r["max_diff_transformers"].is_null(), "{r}");
        // Under profile:10 the shared path really ran each group's prefix once.
        if r["condition"] == "profile:10" {
            assert!(r["reused_share"].as_f64().unwrap() > 0.0, "{r}");
        }
    }
}

/// `bench judge-orders` on two sample examples under `profile:10` with SmolLM2: the forked
/// side really reused a prefix, its margins equal the unforked side's within 1e-5 with the
/// same verdicts, and llama.cpp decoding each prompt alone agrees. Skipped when the model is
/// absent.
#[test]
fn bench_judge_orders_short_mode() {
    if smollm2_absent() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let args = [
        "bench",
        "judge-orders",
        "--sets",
        "sample",
        "--examples",
        "2",
        "--rounds",
        "1",
        "--work",
        work.path().to_str().unwrap(),
        "--json",
    ];
    let out = prbench(&args, &repo());
    assert!(out.status.success(), "{}", text(&out.stderr));
    eprintln!("{}", text(&out.stdout));
    let v: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 1, "{v}");
    let r = &rows[0];
    assert_eq!(r["prompts"], 4);
    assert_eq!(r["condition"], "profile:10");
    assert!(
        r["prefix_share"].as_f64().unwrap() > 0.2,
        "the two orders share the system prompt, profile and question: {r}"
    );
    assert_eq!(r["agreement_met"], true, "{r}");
    assert_eq!(r["verdicts_differing"], 0, "{r}");
    assert!(r["max_margin_diff_unforked"].as_f64().unwrap() <= 1e-5, "{r}");
    assert!(r["max_margin_diff_naive"].as_f64().unwrap() < 1e-4, "{r}");
}

/// `bench generate` on four `bon sample` and four planner prompts with SmolLM2: prbench one at
/// a time, batched at 2 and 4, and llama.cpp's own server with 2 slots each generate every
/// request within the budget, with a time to the first token for each (the server's from its
/// stream) and the batched outputs compared with one at a time's.
#[test]
fn bench_generate_short_mode() {
    let Some(model) = prbench_testkit::smollm2() else { return };
    let work = tempfile::tempdir().unwrap();
    let args = [
        "bench",
        "generate",
        "--models",
        model.to_str().unwrap(),
        "--workloads",
        "bon,planner",
        "--requests",
        "4",
        "--max-new-tokens",
        "12",
        "--batches",
        "2,4",
        "--parallel",
        "2",
        "--threads",
        "2",
        "--work",
        work.path().to_str().unwrap(),
        "--json",
    ];
    let out = prbench(&args, &repo());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    eprintln!("{rows:#}");
    let rows = rows.as_array().unwrap();
    let sides: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["workload"].as_str().unwrap(), r["side"].as_str().unwrap()))
        .collect();
    let want = |w| {
        [
            (w, "prbench, one at a time, prompts whole"),
            (w, "prbench, one at a time"),
            (w, "prbench, --gen-batch 2"),
            (w, "prbench, --gen-batch 4"),
            (w, "llama.cpp server, --parallel 2"),
        ]
    };
    assert_eq!(sides, [want("bon"), want("planner")].concat());
    for r in rows {
        assert_eq!(r["requests"], 4, "{r}");
        assert_eq!(r["failed"], 0, "{r}");
        let tokens = r["gen_tokens"].as_u64().unwrap();
        assert!(tokens > 0 && tokens <= 4 * 12, "{r}");
        assert!(r["tok_s"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["peak_rss_mib"].as_f64().unwrap() > 50.0, "{r}");
        let (p50, max) = (r["ttft_p50_s"].as_f64().unwrap(), r["ttft_max_s"].as_f64().unwrap());
        assert!(p50 > 0.0 && p50 <= max && max <= r["wall_s"].as_f64().unwrap(), "{r}");
        // Batched outputs are compared with one at a time's and the differences counted
        // (they can differ, docs/perf.md); the server's sampler is another, so no count.
        let side = r["side"].as_str().unwrap();
        if side.starts_with("prbench") && side != "prbench, one at a time, prompts whole" {
            assert!(r["differ"].as_u64().unwrap() <= 4, "{r}");
        } else {
            assert!(r["differ"].is_null(), "{r}");
        }
    }
    // One at a time, the last request's first token comes after the first request finished.
    let one = &rows[0];
    assert!(one["ttft_max_s"].as_f64().unwrap() > one["ttft_p50_s"].as_f64().unwrap(), "{one}");
}

/// `bench all --short`: one table with a row per workload of every bench, each naming its
/// command, every agreement check passed; the transformers cells are measured when python3
/// has torch, and say why when not.
#[test]
fn bench_all_short_mode() {
    if smollm2_absent() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let out =
        prbench(&["bench", "all", "--short", "--work", work.path().to_str().unwrap()], &repo());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    eprintln!("{table}");
    assert!(table.starts_with("Machine: nproc "), "{table}");
    let rows: Vec<&str> =
        table.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| workload")).collect();
    let count = |needle: &str| rows.iter().filter(|r| r.contains(needle)).count();
    assert!(
        count("judge prefill, logprob verdict, one order") == 1
            && count("judge generate verdict, SmolLM2") == 1,
        "{table}"
    );
    assert_eq!(
        count("judge in both orders, logprob verdict, `profile:10`, sample, SmolLM2"),
        1,
        "{table}"
    );
    // And under `none` on the sample, the kept prefix's target set.
    assert_eq!(
        count("judge in both orders, logprob verdict, `none`, sample, SmolLM2"),
        1,
        "{table}"
    );
    assert_eq!(count("scalar RM, 2 chosen/rejected pairs, `none`, sample"), 1, "{table}");
    assert_eq!(count("scalar RM, 2 chosen/rejected pairs, `profile:10`, sample"), 1, "{table}");
    assert_eq!(
        count("scalar RM, 1 prompts × 16 answers (best-of-N), `profile:10`, sample"),
        1,
        "{table}"
    );
    assert_eq!(count("harness, 6 rows"), 5, "{table}");
    // Generation: 4 policy prompts at once, prbench batched vs one at a time vs the server.
    assert_eq!(
        count("generation, 4 requests at once, ≤ 8 new tokens, `bon` prompts, SmolLM2"),
        1,
        "{table}"
    );
    let minilm = count("embedder, minilm");
    assert!(minilm == 1, "{table}");
    // Every agreement check the bench grades passed.
    assert_eq!(count(": passed"), 5, "{table}");
    assert_eq!(count("FAILED"), 0, "{table}");
    assert!(
        rows.iter()
            .filter(|r| r.contains("scalar RM") || r.contains("both orders"))
            .all(|r| r.contains("not assessed") || r.contains("(no target)")),
        "{table}"
    );
    assert!(
        rows.iter().all(|r| r.ends_with("` |") && r.contains("`prbench bench ")),
        "every row names its command: {table}"
    );
}

/// A `--python` the user typed is never swapped for the parity fixture: without `--model`,
/// an interpreter that cannot write the bench decoder is an error naming both ways out.
#[test]
fn bench_rm_prefix_bad_python_is_an_error_not_a_fallback() {
    let work = tempfile::tempdir().unwrap();
    let args = [
        "bench",
        "rm-prefix",
        "--sets",
        "sample",
        "--pairs",
        "1",
        "--rounds",
        "1",
        "--python",
        "/nonexistent/python",
        "--work",
        work.path().to_str().unwrap(),
    ];
    let out = prbench(&args, &repo());
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("writing the bench decoder with `/nonexistent/python`")
            && err.contains("--model DIR"),
        "{err}"
    );
    assert!(!err.contains("parity fixture"), "{err}");
    assert!(text(&out.stdout).is_empty(), "no table after the error");
}

/// `bench judge-orders` errors instead of printing an empty table when every input set was
/// skipped (P-Soups absent from a folder without `../shared`), and a prompt over
/// `--max-prompt-tokens` even without profile posts is an error naming the length needed.
#[test]
fn bench_judge_orders_refuses_empty_and_oversized_workloads() {
    if smollm2_absent() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let w = work.path().join("w");
    let cwd = work.path().join("nested");
    std::fs::create_dir_all(&cwd).unwrap();
    let out = prbench(
        &[
            "bench",
            "judge-orders",
            "--sets",
            "psoups",
            "--examples",
            "1",
            "--rounds",
            "1",
            "--work",
            w.to_str().unwrap(),
        ],
        &cwd,
    );
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("skipped input set psoups")
            && err.contains("no workloads: every input set was skipped"),
        "{err}"
    );

    let args = [
        "bench",
        "judge-orders",
        "--sets",
        "sample",
        "--examples",
        "1",
        "--rounds",
        "1",
        "--max-prompt-tokens",
        "100",
        "--work",
        w.to_str().unwrap(),
    ];
    let out = prbench(&args, &repo());
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("over --max-prompt-tokens 100: raise it to at least"), "{err}");
}
