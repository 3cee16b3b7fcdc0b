//! `prbench train pal` and `prbench eval --model pal:DIR` through the real binary, on the
//! committed 3-row P-Soups fixture (crates/prbench/tests/fixtures/psoups-mini).

mod common;

use common::*;
use std::path::{Path, PathBuf};

use prbench_models::{ChatPrompt, RewardModel, RmInput, RmRequest};
use prbench_rm::embed::default_embedder_dir;
use prbench_train::pal::PalRewardModel;

fn fixture() -> String {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/psoups-mini");
    format!("psoups:{}", dir.display())
}

fn no_embedder() -> bool {
    let emb = default_embedder_dir();
    if emb.join("model.safetensors").is_file() {
        return false;
    }
    prbench_testkit::unavailable(format!(
        "MiniLM not found at {} (run scripts/setup.sh --tests)",
        emb.display()
    ));
    true
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn outcomes(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("outcomes.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn bad_flags_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(
        &[
            "train",
            "pal",
            "--variant",
            "c",
            "--data",
            &fixture(),
            "--pairs",
            "history",
            "--out",
            "m",
        ],
        tmp.path(),
    );
    assert!(
        !out.status.success() && text(&out.stderr).contains("--variant"),
        "{}",
        text(&out.stderr)
    );
    let out = prbench(
        &[
            "train",
            "pal",
            "--variant",
            "a",
            "--data",
            &fixture(),
            "--pairs",
            "history",
            "--condition",
            "profile:3",
            "--out",
            "m",
        ],
        tmp.path(),
    );
    assert!(
        text(&out.stderr).contains("`prbench train pal` trains under `none` or `oracle`"),
        "{}",
        text(&out.stderr)
    );
    let out = prbench(
        &[
            "train",
            "pal",
            "--variant",
            "a",
            "--k",
            "0",
            "--data",
            &fixture(),
            "--pairs",
            "history",
            "--out",
            "m",
        ],
        tmp.path(),
    );
    assert!(!out.status.success() && text(&out.stderr).contains("--k"), "{}", text(&out.stderr));
    let out = prbench(
        &[
            "train",
            "pal",
            "--variant",
            "a",
            "--holdout-users",
            "1",
            "--data",
            &fixture(),
            "--pairs",
            "history",
            "--out",
            "m",
        ],
        tmp.path(),
    );
    assert!(
        !out.status.success() && text(&out.stderr).contains("--holdout-users"),
        "{}",
        text(&out.stderr)
    );
    let out = prbench(
        &[
            "train",
            "pal",
            "--variant",
            "a",
            "--data",
            &sample(),
            "--pairs",
            "history",
            "--out",
            "m",
        ],
        tmp.path(),
    );
    assert!(
        text(&out.stderr)
            .contains("--pairs history needs data whose rows carry users' past preference pairs"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn trains_then_scores_known_and_adapted_users() {
    if no_embedder() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    for variant in ["a", "b"] {
        let out_dir = format!("m{variant}");
        let args = [
            "train",
            "pal",
            "--variant",
            variant,
            "--k",
            "2",
            "--data",
            &fixture(),
            "--pairs",
            "history",
            "--out",
            &out_dir,
            "--epochs",
            "3",
        ];
        let out = prbench(&args, tmp.path());
        assert!(out.status.success(), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        // 7 history pairs, 2 equal to a target pair; the pair both student_phd users share is
        // each one's own evidence, so it is kept twice: 5 pairs of 3 users.
        let want = format!(
            "pal: saved {out_dir} (PAL-{}, K 2, condition none): 3 users, 5 train pairs, 3 epochs",
            variant.to_uppercase()
        );
        assert!(stdout.starts_with(&want), "{stdout}");
        assert!(
            stdout.contains("no held-out users; 2 pairs dropped as equal to a target pair"),
            "{stdout}"
        );
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("7 history pairs built from 3 rows")
                && stderr.contains("0 exact repeats merged; 5 used"),
            "{stderr}"
        );

        let cfg = json(&tmp.path().join(&out_dir).join("pal.json"));
        assert_eq!(cfg["variant"], variant);
        assert_eq!((cfg["k"].as_u64(), cfg["dim"].as_u64()), (Some(2), Some(384)));
        assert_eq!(
            cfg["users"],
            serde_json::json!({"friendly_unfriendly-0000": 0, "student_phd-0000": 1, "student_phd-0001": 2})
        );
        assert_eq!(cfg["data"]["trained_pairs_sha256"].as_array().unwrap().len(), 4);
        assert_eq!(cfg["training"]["authors_epochs"], 1);
        assert_eq!(cfg["training"]["epochs"], 3);
        assert_eq!(cfg["training"]["history"].as_array().unwrap().len(), 3);
        assert_eq!(
            (cfg["training"]["lr_projector"].as_f64(), cfg["training"]["lr_users"].as_f64()),
            (Some(1e-4), Some(5e-3))
        );
        assert!(cfg["deviations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d.as_str().unwrap().contains("3 training epochs instead of the authors' 1")));
        assert_eq!(cfg["weights_sha256"].as_str().unwrap().len(), 64);

        // Every user known: each example scored with its trained row.
        let run = format!("k{variant}");
        let out = prbench(
            &[
                "eval",
                "--data",
                &fixture(),
                "--model",
                &format!("pal:{out_dir}"),
                "--run-id",
                &run,
                "--quiet",
            ],
            tmp.path(),
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(
            text(&out.stderr)
                .contains("PAL: 3 of the examples' users were trained on; none adapted"),
            "{}",
            text(&out.stderr)
        );
        let rows = outcomes(&tmp.path().join("runs").join(&run));
        assert_eq!(rows.len(), 3);
        let manifest = json(&tmp.path().join("runs").join(&run).join("manifest.json"));
        assert!(
            manifest.to_string().contains(&format!("candle pal-{variant} on all-MiniLM-L6-v2")),
            "{manifest}"
        );
    }

    // Trained on the student_phd users only: the friendly_unfriendly user is adapted from their
    // two history pairs at load time.
    let out = prbench(
        &[
            "train",
            "pal",
            "--variant",
            "b",
            "--data",
            &fixture(),
            "--subset",
            "student_phd",
            "--pairs",
            "history",
            "--out",
            "s",
            "--epochs",
            "2",
            "--adapt-epochs",
            "5",
            "--quiet",
        ],
        tmp.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = prbench(
        &["eval", "--data", &fixture(), "--model", "pal:s", "--run-id", "u", "--quiet"],
        tmp.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let e = text(&out.stderr);
    assert!(e.contains("PAL: 2 of the examples' users were trained on; 1 user adapted few-shot from their history (2 pairs, 5 epochs"), "{e}");
    assert_eq!(outcomes(&tmp.path().join("runs/u")).len(), 3);

    // The library gives the same scores as the run: known user, trained row.
    let model = PalRewardModel::load(&tmp.path().join("s"), &default_embedder_dir()).unwrap();
    assert!(model.knows("student_phd-0000") && !model.knows("friendly_unfriendly-0000"));
    let req = |id: &str, a: &str| RmRequest {
        input: RmInput {
            example_id: id.into(),
            question: "What is DNA?".into(),
            context: None,
            answer: a.into(),
        },
        prompt: ChatPrompt::default(),
    };
    let s = model.score(&[req("student_phd-0001", "The recipe book inside your cells.")]).unwrap();
    assert!(s[0].value.is_finite() && s[0].tokens.input_tokens > 0);
    // An unknown user without adaptation is refused, naming the example.
    let err = model.score(&[req("friendly_unfriendly-0000", "x")]).unwrap_err().to_string();
    assert!(
        err.contains("example `friendly_unfriendly-0000`") && err.contains("not among the 2 users"),
        "{err}"
    );
}

#[test]
fn refuses_its_training_pairs_and_users_without_history() {
    if no_embedder() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(
        &[
            "train",
            "pal",
            "--variant",
            "a",
            "--data",
            &sample(),
            "--pairs",
            "target",
            "--out",
            "own",
            "--quiet",
        ],
        tmp.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Each sample row is its own user with one pair.
    assert_eq!(json(&tmp.path().join("own/pal.json"))["users"].as_object().unwrap().len(), 12);
    let out = prbench(
        &["eval", "--data", &sample(), "--model", "pal:own", "--run-id", "leak"],
        tmp.path(),
    );
    assert!(!out.status.success());
    let e = text(&out.stderr);
    assert!(e.contains("12 of the 12 examples") && e.contains("its pal.json lists them"), "{e}");
    assert!(!tmp.path().join("runs/leak").exists(), "a refused run leaves no folder");
    // Never overwritten without --force.
    let again = prbench(
        &[
            "train",
            "pal",
            "--variant",
            "a",
            "--data",
            &sample(),
            "--pairs",
            "target",
            "--out",
            "own",
            "--quiet",
        ],
        tmp.path(),
    );
    assert!(!again.status.success() && text(&again.stderr).contains("--force"));

    // A P-Soups model on the sample: no user is known and the sample has no history pairs.
    let out = prbench(
        &[
            "train",
            "pal",
            "--variant",
            "a",
            "--data",
            &fixture(),
            "--pairs",
            "history",
            "--out",
            "p",
            "--quiet",
        ],
        tmp.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = prbench(
        &["eval", "--data", &sample(), "--model", "pal:p", "--run-id", "nohist"],
        tmp.path(),
    );
    let e = text(&out.stderr);
    assert!(
        e.contains("PAL: 0 of the examples' users were trained on; none adapted")
            && e.contains("12 users have no history and will not be scored"),
        "{e}"
    );
    assert!(!out.status.success(), "every item failed: {e}");
    let rows = std::fs::read_to_string(tmp.path().join("runs/nohist/outcomes.jsonl")).unwrap();
    assert!(rows.contains("is not among the 3 users"), "{rows}");
}

/// Held-out users who have too few pairs to both adapt on and test are said so, not reported as
/// "no held-out users" (psoups-mini: 3 users; a third held out by hash is one user, left with
/// 1 pair after the 2 dropped as equal to target pairs).
#[test]
fn held_out_users_without_enough_pairs_are_reported() {
    if no_embedder() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(
        &[
            "train",
            "pal",
            "--variant",
            "a",
            "--k",
            "2",
            "--data",
            &fixture(),
            "--pairs",
            "history",
            "--epochs",
            "3",
            "--holdout-users",
            "0.34",
            "--out",
            "m",
        ],
        tmp.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let cfg = json(&tmp.path().join("m/pal.json"));
    let n = cfg["training"]["n_held_out_users"].as_u64().unwrap();
    assert!(n >= 1, "{cfg}");
    let stdout = text(&out.stdout);
    assert!(!stdout.contains("no held-out users"), "{stdout}");
    let evaluated = cfg["training"]["held_out"]["users"].as_u64().unwrap_or(0);
    let want = if evaluated == 0 {
        format!("{n} held-out users, none evaluated")
    } else {
        format!("{n} held-out users, {evaluated} evaluated")
    };
    assert!(stdout.contains(&want), "want `{want}` in: {stdout}");
}
