//! The README's main job: `eval --condition none,oracle --both-orders` with the default judge,
//! followed by a guide that says what the matrix shows and what to run next.

mod common;

use common::{prbench, sample, text};
use std::process::Command;

#[test]
fn missing_default_judge_says_to_run_setup() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("models");
    std::fs::create_dir(&empty).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_prbench"))
        .args(["eval", "--data", &sample(), "--condition", "none,oracle", "--both-orders"])
        .env("PRBENCH_MODELS", &empty)
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("Qwen2.5-Coder-1.5B-Instruct") && err.contains("run scripts/setup.sh"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "--model gguf:{}",
            empty.join("SmolLM2-135M-Instruct.Q4_1.gguf").display()
        )),
        "{err}"
    );
    assert!(!tmp.path().join("runs").exists(), "nothing is written before the model is found");
}

#[test]
fn matrix_guide_quotes_the_matrix_figures() {
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            "baseline:random",
            "--condition",
            "none,oracle",
            "--run-id",
            "g",
            "--quiet",
            "--bootstrap",
            "200",
        ],
        tmp.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let m: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("runs/g-matrix.json")).unwrap(),
    )
    .unwrap();
    // No both-orders run: the guide reads the single-order block and quotes its micro rows.
    let block = m["blocks"].as_array().unwrap().iter().find(|b| b["metric"] == "accuracy").unwrap();
    let micro = |i: usize| {
        let r = block["accuracy"][i]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["label"] == "micro")
            .unwrap()
            .clone();
        format!(
            "{:.1}% [95% CI {:.1}, {:.1}]",
            r["strict"].as_f64().unwrap() * 100.0,
            r["strict_ci"][0].as_f64().unwrap() * 100.0,
            r["strict_ci"][1].as_f64().unwrap() * 100.0
        )
    };
    let guide = &stdout[stdout.find("## What this shows").expect("guide after the matrix")..];
    assert!(
        guide.contains(&format!(
            "(`none`), the model prefers the answer written for them in {} of pairs",
            micro(0)
        )),
        "{guide}"
    );
    assert!(guide.contains(&format!("not a benchmark score) in {}", micro(1))), "{guide}");
    assert!(guide.contains("Add `--both-orders`"), "{guide}");
    assert!(
        guide.contains("## Next") && guide.contains("--condition none,profile:10,planner"),
        "{guide}"
    );
}

#[test]
fn limited_run_with_unbalanced_slots_is_warned_about() {
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            "baseline:slot-a",
            "--limit",
            "1",
            "--run-id",
            "l",
            "--quiet",
            "--bootstrap",
            "100",
        ],
        tmp.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("runs/l/summary.json")).unwrap(),
    )
    .unwrap();
    let (a, b) = (
        s["position_bias"]["n_chosen_in_a"].as_u64().unwrap(),
        s["position_bias"]["n_chosen_in_b"].as_u64().unwrap(),
    );
    let err = text(&out.stderr);
    let warned =
        err.contains(&format!("hold `chosen` in slot A {a} times and in slot B {b} times"));
    // Warned when more than one apart and one slot holds at least 60% of the items.
    assert_eq!(warned, a.abs_diff(b) > 1 && 5 * a.max(b) >= 3 * (a + b), "A {a}, B {b}: {err}");
    // The full sample is balanced per subset: no warning.
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            "baseline:slot-a",
            "--run-id",
            "f",
            "--quiet",
            "--bootstrap",
            "100",
        ],
        tmp.path(),
    );
    assert!(!text(&out.stderr).contains("hold `chosen` in slot A"), "{}", text(&out.stderr));
}
