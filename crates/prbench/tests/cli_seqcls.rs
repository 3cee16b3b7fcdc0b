//! The real `prbench` binary with a sequence-classification reward model (`dir:`): preflight,
//! truncation counted in outcomes and the summary, and the flags that only make sense for it.
//! The model is the tiny random Qwen2 that tools/make_seqcls_fixtures.py made with transformers,
//! copied with `max_position_embeddings` raised so the sample's answers fit (RoPE has no learned
//! position table, so the limit is only a config value).

mod common;

use common::*;
use std::path::Path;

fn model(tmp: &Path) -> String {
    common::seqcls_model(tmp)
}

/// `tokens: N of max M` from a preflight report.
fn preflight_tokens(stderr: &str) -> Vec<usize> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("tokens: "))
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect()
}

#[test]
fn preflight_prints_the_model_view_and_stops() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = model(tmp.path());
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            &spec,
            "--condition",
            "none,oracle",
            "--preflight",
        ],
        tmp.path(),
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(preflight_tokens(&stderr).len(), 2, "{stderr}");
    assert!(
        stderr.contains("condition `oracle`") && stderr.contains("<|im_start|>user"),
        "{stderr}"
    );
    assert!(stderr.contains("BOS tokens: 0"), "{stderr}");
    assert!(stderr.contains("stopping before scoring"), "{stderr}");
    assert!(!tmp.path().join("runs").exists(), "--preflight must not create run folders");
}

#[test]
fn truncated_inputs_keep_answers_and_are_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = model(tmp.path());
    let pre = prbench(
        &["eval", "--data", &sample(), "--model", &spec, "--condition", "oracle", "--preflight"],
        tmp.path(),
    );
    let full = preflight_tokens(&text(&pre.stderr))[0];
    let limit = (full - 20).to_string();
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            &spec,
            "--condition",
            "oracle",
            "--max-length",
            &limit,
            "--run-id",
            "cut",
            "--json",
            "--bootstrap",
            "200",
        ],
        tmp.path(),
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("context tokens cut from the left"), "{stderr}");
    let outcomes = std::fs::read_to_string(tmp.path().join("runs/cut/outcomes.jsonl")).unwrap();
    let rows: Vec<serde_json::Value> =
        outcomes.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 12);
    let cut: Vec<&serde_json::Value> =
        rows.iter().filter(|r| r["truncated_tokens"].as_u64().unwrap() > 0).collect();
    assert!(!cut.is_empty(), "no outcome reports truncation at --max-length {limit}");
    for r in &rows {
        assert!(r["error"].is_null(), "{r}");
        assert!(r["input_tokens"].as_u64().unwrap() <= 2 * limit.parse::<u64>().unwrap(), "{r}");
    }
    let summary: serde_json::Value =
        serde_json::from_str(text(&out.stdout).lines().next().unwrap()).unwrap();
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("runs/cut/manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        manifest["decoding"]["max_length"].as_u64().unwrap().to_string(),
        limit,
        "{manifest}"
    );
    assert_eq!(manifest["decoding"]["label_index"], 0, "{manifest}");
    assert!(
        manifest["model"]["file_hash"].as_str().unwrap().contains("config+tokenizer"),
        "{manifest}"
    );
    let micro = summary["rows"].as_array().unwrap().iter().find(|r| r["label"] == "micro").unwrap();
    assert_eq!(micro["truncated"].as_u64().unwrap() as usize, cut.len(), "{summary}");
}

#[test]
fn rm_only_flags_are_refused_elsewhere_and_multi_label_needs_an_index() {
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(
        &["eval", "--data", &sample(), "--model", "baseline:longer", "--preflight"],
        tmp.path(),
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--preflight applies to sequence-classification"),
        "{}",
        text(&out.stderr)
    );
    let two = repo().join("crates/prbench-rm/tests/fixtures/seqcls/qwen2-2labels");
    let out = prbench(
        &["eval", "--data", &sample(), "--model", &format!("dir:{}", two.display()), "--preflight"],
        tmp.path(),
    );
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("--label-index"), "{}", text(&out.stderr));
    let unsupported = repo().join("crates/prbench-rm/tests/fixtures/seqcls/unsupported");
    let out = prbench(
        &["eval", "--data", &sample(), "--model", &format!("dir:{}", unsupported.display())],
        tmp.path(),
    );
    assert!(!out.status.success());
    let e = text(&out.stderr);
    assert!(
        e.contains("GPT2ForSequenceClassification") && e.contains("Qwen3ForSequenceClassification"),
        "{e}"
    );
}

#[test]
fn failed_loads_leave_no_folder_and_an_all_error_run_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let two = repo().join("crates/prbench-rm/tests/fixtures/seqcls/qwen2-2labels");
    let spec = format!("dir:{}", two.display());
    let out =
        prbench(&["eval", "--data", &sample(), "--model", &spec, "--run-id", "r1"], tmp.path());
    assert!(!out.status.success());
    assert!(!tmp.path().join("runs/r1").exists(), "a failed load must not use up the run id");
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            &spec,
            "--label-index",
            "1",
            "--run-id",
            "r1",
            "--quiet",
            "--bootstrap",
            "200",
        ],
        tmp.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));

    // Under `none` there is no context to cut: at 10 tokens every item is an error, the run
    // files are written, and the exit status says the run failed (12 of 12 is above the 1%
    // default of --max-error-rate).
    let model = model(tmp.path());
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            &model,
            "--max-length",
            "10",
            "--run-id",
            "r2",
            "--quiet",
            "--bootstrap",
            "200",
        ],
        tmp.path(),
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--max-error-rate 0.01 allows: none: 12 of 12 (100.0%)"),
        "{}",
        text(&out.stderr)
    );
    let outcomes = std::fs::read_to_string(tmp.path().join("runs/r2/outcomes.jsonl")).unwrap();
    assert_eq!(outcomes.lines().filter(|l| l.contains("\"error\":\"")).count(), 12);
}
