//! The real `prbench` binary on the bundled sample, in a temp dir (STYLE.md habit 5).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn prbench(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_prbench")).args(args).current_dir(cwd).output().expect("binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn sample() -> String {
    repo().join("data/sample").display().to_string()
}

#[test]
fn baseline_eval_writes_run_files_and_prints_the_table() {
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(
        &["eval", "--data", &sample(), "--model", "baseline:longer", "--run-id", "t1", "--quiet", "--bootstrap", "2000"],
        tmp.path(),
    );
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    // Chosen is longer (in characters) in 2 of 4 examples per subset: counted with Python's
    // len() over data/sample/*.jsonl.
    for label in ["Art", "Lifestyle", "Society"] {
        assert!(stdout.contains(&format!("| {label} | 4 | 50.0 | [")), "{stdout}");
    }
    assert!(stdout.contains("| micro | 12 | 50.0 | ["), "{stdout}");
    assert!(stdout.contains("| macro | 12 | 50.0 | ["), "{stdout}");
    assert!(text(&out.stderr).contains("run files in runs/t1/"), "{}", text(&out.stderr));

    let dir = tmp.path().join("runs/t1");
    let manifest: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["seed"], 42);
    assert_eq!(manifest["condition"], "none");
    assert_eq!(manifest["n_examples"], 12);
    assert_eq!(manifest["dataset_hash"].as_str().unwrap().len(), 64);
    assert_eq!(manifest["template_hash"].as_str().unwrap().len(), 64);
    assert!(manifest["code_version"].as_str().unwrap().starts_with(env!("CARGO_PKG_VERSION")));
    let outcomes = std::fs::read_to_string(dir.join("outcomes.jsonl")).unwrap();
    assert_eq!(outcomes.lines().count(), 12);
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("## Control baselines"));
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["baselines"].as_array().unwrap().len(), 5);
}

#[test]
fn slot_a_scores_the_share_of_chosen_in_a_and_oracle_is_flagged() {
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(
        &["eval", "--data", &sample(), "--model", "baseline:slot-a", "--condition", "oracle", "--run-id", "o", "--quiet", "--bootstrap", "500"],
        tmp.path(),
    );
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    // Slots are balanced per subset: 2 of 4 chosen in A.
    assert!(stdout.contains("| micro | 12 | 50.0 |"), "{stdout}");
    assert!(stdout.contains("ORACLE CONDITION"), "{stdout}");
    assert!(stdout.contains("| 6 | 100.0 | 6 | 0.0 | 100.0 |"), "position bias row: {stdout}");
}

#[test]
fn invalid_data_names_file_row_and_field_and_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(repo().join("data/sample/Art_and_Entertainment.jsonl")).unwrap();
    let mut lines: Vec<String> = good.lines().map(String::from).collect();
    let mut row: serde_json::Value = serde_json::from_str(&lines[1]).unwrap();
    row["chosen"] = serde_json::Value::String("  ".into());
    lines[1] = row.to_string();
    let file = tmp.path().join("Art_and_Entertainment.jsonl");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let out = prbench(&["eval", "--data", file.to_str().unwrap(), "--model", "baseline:longer"], tmp.path());
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("Art_and_Entertainment.jsonl: row 2: field `chosen` is empty"), "{err}");
    assert!(!tmp.path().join("runs").exists(), "nothing is written for invalid data");
}

#[test]
fn unknown_condition_and_model_are_clear_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(&["eval", "--data", &sample(), "--model", "baseline:longer", "--condition", "planner"], tmp.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("invalid condition `planner`"), "{}", text(&out.stderr));
    let out = prbench(&["eval", "--data", &sample(), "--model", "gguf:/nonexistent.gguf"], tmp.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("scripts/fetch-models.sh"), "{}", text(&out.stderr));
}

#[test]
fn data_validate_counts_the_sample() {
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(&["data", "validate", "--data", &sample()], tmp.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("ok: 12 examples (Art_and_Entertainment: 4, Lifestyle_and_Personal_Development: 4, Society_and_Culture: 4)"), "{stdout}");
}

#[test]
fn smollm2_judge_runs_on_the_sample_in_both_orders() {
    let model = std::env::var("PRBENCH_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/prbench/models"))
        .join("SmolLM2-135M-Instruct.Q4_1.gguf");
    if !model.is_file() {
        eprintln!("skipped: {} absent; run scripts/fetch-models.sh", model.display());
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(
        &["eval", "--data", &sample(), "--limit", "1", "--both-orders", "--run-id", "s", "--quiet", "--bootstrap", "200"],
        tmp.path(),
    );
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("| micro | 3 |") && stdout.contains("## Both orders") && stdout.contains("Position-debiased"), "{stdout}");
    let outcomes = std::fs::read_to_string(tmp.path().join("runs/s/outcomes.jsonl")).unwrap();
    for line in outcomes.lines() {
        let o: serde_json::Value = serde_json::from_str(line).unwrap();
        let p_a = o["verdict"]["p_a"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&p_a));
        assert!(o["swapped_verdict"]["margin"].is_number());
        assert!(o["input_tokens"].as_u64().unwrap() > 100);
    }
}
