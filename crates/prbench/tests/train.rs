//! `prbench train bt` through the real binary, on the committed 3-row P-Soups fixture.

mod common;

use common::*;
use std::path::PathBuf;

use prbench_models::{ChatPrompt, RewardModel, RmInput, RmRequest};
use prbench_rm::embed::default_embedder_dir;
use prbench_train::bt::BtRewardModel;

fn fixture() -> String {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/psoups-mini");
    format!("psoups:{}", dir.display())
}

#[test]
fn history_pairs_need_history_data() {
    let tmp = tempfile::tempdir().unwrap();
    let sample = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/sample");
    let out = prbench(
        &[
            "train",
            "bt",
            "--data",
            &sample.display().to_string(),
            "--pairs",
            "history",
            "--out",
            "m",
        ],
        tmp.path(),
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--pairs history needs data whose rows carry users' past preference pairs (`psoups:DIR` or `synthesizeme:DIR[#SPLIT]`)"),
        "{}",
        text(&out.stderr)
    );
    let out = prbench(
        &[
            "train",
            "bt",
            "--data",
            &fixture(),
            "--pairs",
            "history",
            "--condition",
            "planner",
            "--out",
            "m",
        ],
        tmp.path(),
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("`planner` is not supported for training"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn trains_saves_and_loads_on_the_fixture() {
    let emb = default_embedder_dir();
    if !emb.join("model.safetensors").is_file() {
        prbench_testkit::unavailable(format!(
            "MiniLM not found at {} (run scripts/setup.sh --tests)",
            emb.display()
        ));
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let args = [
        "train",
        "bt",
        "--data",
        &fixture(),
        "--pairs",
        "history",
        "--condition",
        "oracle",
        "--out",
        "m",
        "--epochs",
        "3",
        "--hidden",
        "8",
    ];
    let out = prbench(&args, tmp.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("bt: saved m (condition oracle, hidden 8): 4 train / 1 held-out pairs"),
        "{stdout}"
    );
    assert!(
        stdout.contains("2 pairs dropped as equal to a target pair; 0 inputs truncated"),
        "{stdout}"
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("7 history pairs built from 3 rows") && stderr.contains("epoch    3"),
        "{stderr}"
    );

    let cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("m/bt.json")).unwrap())
            .unwrap();
    assert_eq!(cfg["condition"], "oracle");
    assert_eq!(cfg["data"]["dropped_target_overlap"], 2);
    assert_eq!(
        cfg["data"]["dropped_ids"],
        serde_json::json!([
            "student_phd-0000-h2 = student_phd-0001",
            "student_phd-0001-h3 = friendly_unfriendly-0000"
        ])
    );
    assert_eq!(
        (cfg["training"]["n_train"].as_u64(), cfg["training"]["n_held_out"].as_u64()),
        (Some(4), Some(1))
    );
    assert_eq!(cfg["training"]["epochs_run"], 3);
    assert_eq!(cfg["embedding"]["truncated_tokens"], 0);

    // Never overwritten without --force; the same seed gives the same head.
    let again = prbench(&args, tmp.path());
    assert!(!again.status.success() && text(&again.stderr).contains("--force"));
    let mut other = args.to_vec();
    other[9] = "m2";
    other.push("--quiet");
    let second = prbench(&other, tmp.path());
    assert!(second.status.success(), "{}", text(&second.stderr));
    // --quiet drops progress, not warnings.
    let quiet = text(&second.stderr);
    assert!(
        quiet.lines().all(|l| l.starts_with("prbench: warning: only 5 distinct training pairs")),
        "--quiet: {quiet}"
    );
    other.push("--force");
    other[9] = "m";
    assert!(prbench(&other, tmp.path()).status.success());
    assert_eq!(
        std::fs::read(tmp.path().join("m/head.safetensors")).unwrap(),
        std::fs::read(tmp.path().join("m2/head.safetensors")).unwrap()
    );

    // The saved model loads as a reward model and scores.
    let model = BtRewardModel::load(&tmp.path().join("m"), &emb).unwrap();
    assert_eq!(model.config().condition, "oracle");
    let req = |a: &str| RmRequest {
        input: RmInput {
            example_id: "e".into(),
            question: "Name a fruit.".into(),
            context: Some("likes fun".into()),
            answer: a.into(),
        },
        prompt: ChatPrompt::default(),
    };
    let s = model.score(&[req("Apple!"), req("Malus domestica.")]).unwrap();
    assert_eq!(s.len(), 2);
    assert!(s.iter().all(|x| x.value.is_finite() && x.tokens.input_tokens > 0));
}

/// A user-conditioned BT: trained under `profile:2` (each history pair with the user's other
/// pairs before the question), recorded as such, and evaluated under the same condition.
#[test]
fn user_conditioned_bt_trains_and_evaluates_under_profile_k() {
    if !default_embedder_dir().join("model.safetensors").is_file() {
        prbench_testkit::unavailable(format!(
            "MiniLM not found at {} (run scripts/setup.sh --tests)",
            default_embedder_dir().display()
        ));
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let args = [
        "train",
        "bt",
        "--data",
        &fixture(),
        "--pairs",
        "history",
        "--condition",
        "profile:2",
        "--out",
        "uc",
        "--epochs",
        "3",
        "--hidden",
        "8",
    ];
    let out = prbench(&args, tmp.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("bt: saved uc (condition profile:2, hidden 8)"),
        "{}",
        text(&out.stdout)
    );
    let cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("uc/bt.json")).unwrap())
            .unwrap();
    assert_eq!(cfg["condition"], "profile:2");
    // Conditioning changes the inputs, so more texts are embedded than under `none`
    // (each copy's profile differs), and the head differs from the `none` one.
    let none = prbench(
        &[
            "train",
            "bt",
            "--data",
            &fixture(),
            "--pairs",
            "history",
            "--out",
            "plain",
            "--epochs",
            "3",
            "--hidden",
            "8",
        ],
        tmp.path(),
    );
    assert!(none.status.success(), "{}", text(&none.stderr));
    assert_ne!(
        std::fs::read(tmp.path().join("uc/head.safetensors")).unwrap(),
        std::fs::read(tmp.path().join("plain/head.safetensors")).unwrap()
    );
    let out = prbench(
        &[
            "eval",
            "--data",
            &fixture(),
            "--model",
            "bt:uc",
            "--condition",
            "profile:2",
            "--run-id",
            "uc",
            "--quiet",
        ],
        tmp.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        !text(&out.stderr).contains("trained under"),
        "no condition note when the conditions agree: {}",
        text(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("runs/uc/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["condition"], "profile:2", "{summary}");
}

#[test]
fn a_head_is_not_scored_on_its_own_training_pairs_or_another_condition() {
    if !default_embedder_dir().join("model.safetensors").is_file() {
        prbench_testkit::unavailable(format!(
            "MiniLM not found at {} (run scripts/setup.sh --tests)",
            default_embedder_dir().display()
        ));
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let sample = sample();
    let out = prbench(
        &[
            "train", "bt", "--data", &sample, "--pairs", "target", "--out", "own", "--quiet",
            "--epochs", "5",
        ],
        tmp.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("only 12 distinct training pairs"), "{}", text(&out.stderr));
    let bt: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("own/bt.json")).unwrap())
            .unwrap();
    assert_eq!(bt["data"]["trained_pairs_sha256"].as_array().unwrap().len(), 12);
    assert_eq!(bt["head_sha256"].as_str().unwrap().len(), 64);
    // Evaluating on the training pairs is refused, naming how many and which.
    let out =
        prbench(&["eval", "--data", &sample, "--model", "bt:own", "--run-id", "leak"], tmp.path());
    assert!(!out.status.success());
    let e = text(&out.stderr);
    assert!(
        e.contains("12 of the 12 examples") && e.contains("were trained on")
            || e.contains("trained on (its bt.json"),
        "{e}"
    );
    assert!(!tmp.path().join("runs/leak").exists(), "a refused run leaves no folder");
    // So is another condition than the head was trained under.
    let out = prbench(
        &["eval", "--data", &sample, "--model", "bt:own", "--condition", "oracle"],
        tmp.path(),
    );
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("trained under condition `none`"), "{}", text(&out.stderr));
    // A head swapped under a bt.json it does not belong to is refused.
    let bytes = std::fs::read(tmp.path().join("own/head.safetensors")).unwrap();
    let mut changed = bytes.clone();
    let n = changed.len();
    changed[n - 1] ^= 1;
    std::fs::write(tmp.path().join("own/head.safetensors"), changed).unwrap();
    let e = BtRewardModel::load(&tmp.path().join("own"), &default_embedder_dir())
        .unwrap_err()
        .to_string();
    assert!(e.contains("head_sha256"), "{e}");
}

/// `oracle` on data without any rubric aspect (SynthesizeMe) is refused before training, as
/// `eval` refuses it: the inputs would be those of `none` under an upper bound's name.
#[test]
fn oracle_training_on_data_without_a_rubric_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let data = format!(
        "synthesizeme:{}",
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../prbench-data/tests/fixtures/synthesizeme")
            .display()
    );
    for model in ["bt", "pal"] {
        let mut args = vec![
            "train",
            model,
            "--data",
            &data,
            "--pairs",
            "history",
            "--condition",
            "oracle",
            "--out",
            "m",
        ];
        if model == "pal" {
            args.extend(["--variant", "a"]);
        }
        let out = prbench(&args, tmp.path());
        assert!(!out.status.success(), "{model}");
        let e = text(&out.stderr);
        assert!(
            e.contains("none of the 4 examples has rubric aspects (dataset kind `synthesizeme`)"),
            "{model}: {e}"
        );
        assert!(!tmp.path().join("m").exists(), "{model}: nothing written");
    }
}

/// `--max-length` outside what the embedder takes is refused naming the flag and the range
/// (MiniLM's `config.json` has max_position_embeddings 512; the floor is 4), for `train bt` and
/// `train pal`, which load the embedder the same way; no model is written.
#[test]
fn max_length_out_of_range_names_the_flag_and_the_range() {
    let emb = default_embedder_dir();
    if !emb.join("model.safetensors").is_file() {
        prbench_testkit::unavailable(format!(
            "MiniLM not found at {} (run scripts/setup.sh --tests)",
            emb.display()
        ));
        return;
    }
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(emb.join("config.json")).unwrap()).unwrap();
    let positions = config["max_position_embeddings"].as_u64().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let data = fixture();
    for (command, extra) in [("bt", &[][..]), ("pal", &["--variant", "a", "--k", "2"][..])] {
        for n in [3, positions + 1] {
            let n = n.to_string();
            let mut args = vec![
                "train",
                command,
                "--data",
                &data,
                "--pairs",
                "history",
                "--out",
                "m",
                "--max-length",
                &n,
                "--quiet",
            ];
            args.extend_from_slice(extra);
            let out = prbench(&args, tmp.path());
            assert!(!out.status.success(), "train {command} --max-length {n}");
            let e = text(&out.stderr);
            assert!(
                e.contains(&format!(
                    "--max-length {n} does not fit the embedder in {}: the maximum length must be between 4 and the model's max_position_embeddings ({positions}); pass a value in that range, or leave --max-length out",
                    emb.display()
                )),
                "train {command}: {e}"
            );
            assert!(!e.contains("invalid model spec"), "{e}");
            assert!(!tmp.path().join("m").exists(), "nothing written");
        }
    }
}

/// The condition a BT head was trained under goes into each run's manifest.json
/// (`model_training_condition`), summary.json and summary.md, and the leaderboard's model label,
/// so a run under another condition shows it beyond the stderr note. A run folder written
/// before the field existed still loads (reused by `eval`, listed by `leaderboard`).
#[test]
fn the_training_condition_is_recorded_and_shown() {
    if !default_embedder_dir().join("model.safetensors").is_file() {
        prbench_testkit::unavailable(format!(
            "MiniLM not found at {} (run scripts/setup.sh --tests)",
            default_embedder_dir().display()
        ));
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let data = fixture();
    let out = prbench(
        &[
            "train", "bt", "--data", &data, "--pairs", "history", "--out", "plain", "--epochs",
            "3", "--hidden", "8", "--quiet",
        ],
        tmp.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json = |p: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join(p)).unwrap()).unwrap()
    };
    let eval = |condition: &str, id: &str| {
        let out = prbench(
            &[
                "eval",
                "--data",
                &data,
                "--model",
                "bt:plain",
                "--condition",
                condition,
                "--run-id",
                id,
                "--quiet",
            ],
            tmp.path(),
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stderr)
    };
    eval("none", "same");
    let stderr = eval("profile:2", "other");
    assert!(stderr.contains("was trained under condition `none`; under `profile:2`"), "{stderr}");
    for id in ["same", "other"] {
        assert_eq!(
            json(&format!("runs/{id}/manifest.json"))["model_training_condition"],
            "none",
            "{id}"
        );
        assert_eq!(
            json(&format!("runs/{id}/summary.json"))["model_training_condition"],
            "none",
            "{id}"
        );
    }
    let md = |id: &str| {
        std::fs::read_to_string(tmp.path().join(format!("runs/{id}/summary.md"))).unwrap()
    };
    assert!(
        md("same").contains("- trained under condition `none`, the condition of this run\n"),
        "{}",
        md("same")
    );
    assert!(md("other").contains("- trained under condition `none`, not this run's `profile:2`: it scored inputs unlike its training data"), "{}", md("other"));
    let board = prbench(&["leaderboard", "runs/same", "runs/other", "--format", "csv"], tmp.path());
    assert!(board.status.success(), "{}", text(&board.stderr));
    let csv = text(&board.stdout);
    let labelled: Vec<&str> =
        csv.lines().filter(|l| l.starts_with("bt:plain (trained: none),")).collect();
    assert_eq!(labelled.len(), 2, "{csv}");
    assert!(
        labelled.iter().any(|l| l.contains(",profile:2,"))
            && labelled.iter().any(|l| l.contains(",none,")),
        "{csv}"
    );

    // A run written before the field: an unfinished one (manifest.json, no summary.json) is
    // resumed, its manifest read back; a finished one is listed without a training condition.
    let strip = |file: &str| {
        let mut v = json(&format!("runs/other/{file}"));
        v.as_object_mut().unwrap().remove("model_training_condition").expect("written before");
        std::fs::write(
            tmp.path().join("runs/other").join(file),
            serde_json::to_string_pretty(&v).unwrap(),
        )
        .unwrap();
    };
    strip("manifest.json");
    let mut killed = json("runs/other/manifest.json");
    killed["finished"] = serde_json::Value::Null;
    std::fs::write(
        tmp.path().join("runs/other/manifest.json"),
        serde_json::to_string_pretty(&killed).unwrap(),
    )
    .unwrap();
    std::fs::remove_file(tmp.path().join("runs/other/summary.json")).unwrap();
    let out = prbench(
        &[
            "eval",
            "--data",
            &data,
            "--model",
            "bt:plain",
            "--condition",
            "profile:2",
            "--run-id",
            "other",
        ],
        tmp.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("resuming unfinished run `other`"), "{}", text(&out.stderr));
    assert_eq!(json("runs/other/manifest.json")["model_training_condition"], "none");
    strip("manifest.json");
    strip("summary.json");
    let csv = text(&prbench(&["leaderboard", "runs/other", "--format", "csv"], tmp.path()).stdout);
    assert!(csv.lines().any(|l| l.starts_with("bt:plain,profile:2,")), "{csv}");
}
