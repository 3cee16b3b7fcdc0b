//! The RL example (`examples/trl-grpo/`) end to end with a real trainer: TRL's GRPO (pinned by
//! `scripts/engines/requirements.lock`) trains the SmolLM2-135M policy for 2 steps against the
//! real `prbench serve-reward --model baseline:longer` on a free loopback port, on prompts that
//! `make_dataset.py` captured from `prbench bon sample` over `data/sample`.
//!
//! Checked: every reward the trainer logged is the number of characters of its completion
//! (what `baseline:longer` gives, counted here), the server's `scored` counter equals the
//! completions the trainer logged, TRL's per-step mean reward equals the mean of that step's
//! logged rewards, the checkpoint was written; and a reward call the server refuses fails
//! the run (no checkpoint, no invented reward).
//!
//! Needs `PRBENCH_ENGINES_PYTHON` and `PRBENCH_ENGINE_MODELS` (`eval "$(scripts/engines.sh
//! env)"`); without them it is skipped outside CI and fails under `CI=true`. About a minute on
//! two cores (one torch thread).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

#[path = "common/served.rs"]
mod served;
use served::Served;

fn python(py: &str, script: &str, args: &[&str], cwd: &Path) -> Output {
    Command::new(py)
        .arg(repo().join("examples/trl-grpo").join(script))
        .args(args)
        .current_dir(cwd)
        .env("PYTHONWARNINGS", "ignore")
        .output()
        .expect("python runs")
}

fn read_jsonl(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The train.py arguments of a tiny run: 2 completions per step, 12 new tokens.
fn train_args<'a>(policy: &'a str, dataset: &'a str, url: &'a str, out: &'a str) -> Vec<&'a str> {
    vec![
        "--policy",
        policy,
        "--dataset",
        dataset,
        "--reward-url",
        url,
        "--reward-condition",
        "none",
        "--out",
        out,
        "--num-generations",
        "2",
        "--batch-size",
        "2",
        "--max-completion-length",
        "12",
        "--limit",
        "4",
        "--seed",
        "3",
    ]
}

#[test]
fn grpo_trains_the_policy_against_serve_reward_and_logs_the_served_rewards() {
    let Some(py) = prbench_testkit::require_env(
        "PRBENCH_ENGINES_PYTHON",
        "`eval \"$(scripts/engines.sh env)\"` sets it after `scripts/engines.sh install`",
    ) else {
        return;
    };
    let Some(models) = prbench_testkit::require_env(
        "PRBENCH_ENGINE_MODELS",
        "`eval \"$(scripts/engines.sh env)\"` sets it",
    ) else {
        return;
    };
    let Some(policy) = prbench_testkit::require_path(
        PathBuf::from(models).join("smollm2-135m-instruct"),
        "the SmolLM2 policy (scripts/engines.sh install makes it)",
    ) else {
        return;
    };
    let policy = policy.display().to_string();
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let bin = env!("CARGO_BIN_EXE_prbench");

    let out = prbench(&["retrieve", "--data", &sample(), "--out", "ranked.jsonl", "--quiet"], t);
    assert!(out.status.success(), "retrieve: {}", text(&out.stderr));
    let out = python(
        &py,
        "make_dataset.py",
        &[
            "--prbench",
            bin,
            "--data",
            "ranked.jsonl",
            "--out",
            "ds",
            "--k",
            "2",
            "--heldout",
            "0.3",
        ],
        t,
    );
    assert!(out.status.success(), "make_dataset.py: {}", text(&out.stderr));
    let train = read_jsonl(&t.join("ds/train.jsonl"));
    let heldout = read_jsonl(&t.join("ds/heldout.jsonl"));
    assert_eq!(train.len() + heldout.len(), 12, "every sample item in one split");
    // The prompt is prbench's Best-of-N policy prompt with the top 2 posts.
    let user = train[0]["prompt"][1]["content"].as_str().unwrap();
    assert!(user.contains("[Post 2 ") && !user.contains("[Post 3 "), "{user}");
    assert!(user.trim_end().ends_with(train[0]["question"].as_str().unwrap().trim()), "{user}");

    let server = Served::start(&["--model", "baseline:longer"]);
    let url = server.url();
    let out = python(
        &py,
        "train.py",
        &{
            let mut a = train_args(&policy, "ds", &url, "run");
            a.extend(["--steps", "2"]);
            a
        },
        t,
    );
    assert!(out.status.success(), "train.py: {}", text(&out.stderr));

    // Each logged reward is what baseline:longer gives: the completion's character count.
    let calls = read_jsonl(&t.join("run/rewards.jsonl"));
    assert_eq!(calls.len(), 2, "one reward call per step");
    let mut items = 0;
    let mut step_means = Vec::new();
    for call in &calls {
        let mut sum = 0.0;
        let list = call["items"].as_array().unwrap();
        assert_eq!(list.len(), 2, "2 completions per step: {call}");
        for item in list {
            let completion = item["completion"].as_str().unwrap();
            let score = item["score"].as_f64().unwrap();
            assert_eq!(score, completion.chars().count() as f64, "{item}");
            sum += score;
            items += 1;
        }
        step_means.push(sum / list.len() as f64);
    }
    let health = server.health();
    assert_eq!(health["model"], "baseline:longer");
    assert_eq!(health["stats"]["scored"].as_u64(), Some(items), "{health}");
    // TRL's own per-step reward is the mean of the rewards the server gave that step.
    let logged: Vec<f64> = read_jsonl(&t.join("run/log.jsonl"))
        .iter()
        .filter_map(|l| l.get("reward").and_then(|r| r.as_f64()))
        .collect();
    assert_eq!(logged.len(), 2, "{logged:?}");
    for (a, b) in logged.iter().zip(&step_means) {
        assert!((a - b).abs() < 1e-3, "TRL logged {a}, the server gave {b}");
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(t.join("run/summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["completions_scored"].as_u64(), Some(items));
    let truncated: u64 = calls.iter().map(|c| c["truncated"].as_u64().unwrap()).sum();
    assert_eq!(summary["completions_truncated"].as_u64(), Some(truncated));
    let weights = t.join("run/checkpoint/model.safetensors");
    let size = std::fs::metadata(&weights).map(|m| m.len()).unwrap_or(0);
    assert!(size > 100_000_000, "{} is {size} bytes", weights.display());

    // A reward call the server refuses (its body limit is below one batch) fails the run.
    let strict = Served::start(&["--model", "baseline:longer", "--max-body-bytes", "64"]);
    let url = strict.url();
    let out = python(
        &py,
        "train.py",
        &{
            let mut a = train_args(&policy, "ds", &url, "refused");
            a.extend(["--steps", "1"]);
            a
        },
        t,
    );
    let err = text(&out.stderr);
    assert!(!out.status.success(), "a refused reward call must fail the run");
    assert!(err.contains("RewardServerError") && err.contains("HTTP 413"), "{err}");
    assert!(!t.join("refused/checkpoint").exists());
    assert_eq!(strict.health()["stats"]["scored"].as_u64(), Some(0));

    // A profile:K condition that is not the dataset's k is refused before training.
    let out = python(
        &py,
        "train.py",
        &{
            let mut a = train_args(&policy, "ds", &url, "wrong-k");
            a.extend(["--steps", "1"]);
            let at = a.iter().position(|x| *x == "none").unwrap();
            a[at] = "profile:5";
            a
        },
        t,
    );
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("k = 2 posts"), "{}", text(&out.stderr));
}
