//! The real `prbench` binary on the bundled sample, in a temp dir (STYLE.md habit 5).

mod common;

use common::*;
use std::path::PathBuf;

#[test]
fn baseline_eval_writes_run_files_and_prints_the_table() {
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            "baseline:longer",
            "--run-id",
            "t1",
            "--quiet",
            "--bootstrap",
            "2000",
        ],
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
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
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
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["baselines"].as_array().unwrap().len(), 5);
}

#[test]
fn slot_a_scores_the_share_of_chosen_in_a_and_oracle_is_flagged() {
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            "baseline:slot-a",
            "--condition",
            "oracle",
            "--run-id",
            "o",
            "--quiet",
            "--bootstrap",
            "500",
        ],
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
    let good =
        std::fs::read_to_string(repo().join("data/sample/Art_and_Entertainment.jsonl")).unwrap();
    let mut lines: Vec<String> = good.lines().map(String::from).collect();
    let mut row: serde_json::Value = serde_json::from_str(&lines[1]).unwrap();
    row["chosen"] = serde_json::Value::String("  ".into());
    lines[1] = row.to_string();
    let file = tmp.path().join("Art_and_Entertainment.jsonl");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let out = prbench(
        &["eval", "--data", file.to_str().unwrap(), "--model", "baseline:longer"],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("Art_and_Entertainment.jsonl: row 2: field `chosen` is empty"), "{err}");
    assert!(!tmp.path().join("runs").exists(), "nothing is written for invalid data");
}

#[test]
fn unknown_condition_and_model_are_clear_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(
        &["eval", "--data", &sample(), "--model", "baseline:longer", "--condition", "profile:0"],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("invalid condition `profile:0`"), "{}", text(&out.stderr));
    let out = prbench(
        &["eval", "--data", &sample(), "--model", "baseline:longer", "--condition", "planer"],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("`planner`"),
        "the message lists the valid names: {}",
        text(&out.stderr)
    );
    let out =
        prbench(&["eval", "--data", &sample(), "--model", "gguf:/nonexistent.gguf"], tmp.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("scripts/setup.sh"), "{}", text(&out.stderr));
}

#[test]
fn a_path_spec_starting_with_tilde_is_read_from_home_and_a_missing_gguf_names_setup() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let eval = |model: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_prbench"))
            .args(["eval", "--data", &sample(), "--model", model, "--quiet"])
            .env("HOME", &home)
            .current_dir(tmp.path())
            .output()
            .unwrap()
    };
    let out = eval("gguf:~/models/absent.gguf");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "model file `{}` not found; run `scripts/setup.sh`",
            home.join("models/absent.gguf").display()
        )),
        "{err}"
    );
    assert!(!err.contains("fetch-models"), "{err}");
    // `dir:`, `bt:` and `pal:` read from $HOME the same way: the folder named is the expanded one.
    for (kind, named) in [("dir", "is not a directory"), ("bt", ""), ("pal", "")] {
        let out = eval(&format!("{kind}:~/nothing-here"));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{kind}: {err}");
        assert!(
            err.contains(&home.join("nothing-here").display().to_string()) && err.contains(named),
            "{kind}: {err}"
        );
    }
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
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/prbench/models")
        })
        .join("SmolLM2-135M-Instruct.Q4_1.gguf");
    if !model.is_file() {
        prbench_testkit::unavailable(format!(
            "{} absent; run scripts/setup.sh --tests",
            model.display()
        ));
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            &format!("gguf:{}", model.display()),
            "--limit",
            "1",
            "--both-orders",
            "--run-id",
            "s",
            "--quiet",
            "--bootstrap",
            "200",
        ],
        tmp.path(),
    );
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("| micro | 3 |")
            && stdout.contains("## Both orders")
            && stdout.contains("Position-debiased"),
        "{stdout}"
    );
    let outcomes = std::fs::read_to_string(tmp.path().join("runs/s/outcomes.jsonl")).unwrap();
    for line in outcomes.lines() {
        let o: serde_json::Value = serde_json::from_str(line).unwrap();
        let p_a = o["verdict"]["p_a"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&p_a));
        assert!(o["swapped_verdict"]["margin"].is_number());
        assert!(o["input_tokens"].as_u64().unwrap() > 100);
    }
}

#[test]
fn run_ids_are_checked_and_runs_never_overwritten() {
    let tmp = tempfile::tempdir().unwrap();
    let args = [
        "eval",
        "--data",
        &sample(),
        "--model",
        "baseline:longer",
        "--quiet",
        "--bootstrap",
        "100",
        "--run-id",
    ];
    let first = prbench(&[&args[..], &["same"]].concat(), tmp.path());
    assert!(first.status.success(), "{}", text(&first.stderr));
    let before = std::fs::read_to_string(tmp.path().join("runs/same/outcomes.jsonl")).unwrap();
    // The same command again reuses the finished run; it never writes over it.
    let again = prbench(&[&args[..], &["same"]].concat(), tmp.path());
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert!(
        text(&again.stderr).contains("run `same` finished already with these settings; reusing it"),
        "{}",
        text(&again.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("runs/same/outcomes.jsonl")).unwrap(),
        before
    );
    for bad in ["..", "a/b", "", ".hidden"] {
        let out = prbench(&[&args[..], &[bad]].concat(), tmp.path());
        assert_eq!(out.status.code(), Some(1), "run id {bad:?}");
        assert!(text(&out.stderr).contains("plain folder name"), "{}", text(&out.stderr));
    }
}

#[test]
fn json_prints_one_summary_line_per_condition() {
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            "baseline:shorter",
            "--condition",
            "none,oracle",
            "--json",
            "--quiet",
            "--bootstrap",
            "100",
        ],
        tmp.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["condition"], "none");
    assert_eq!(lines[1]["condition"], "oracle");
    assert_eq!(lines[1]["oracle"], true);
}

#[test]
fn profile_overlap_as_the_model_reads_the_profile_like_its_baseline_row() {
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            "baseline:profile-overlap",
            "--quiet",
            "--bootstrap",
            "100",
        ],
        tmp.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    // tools/check_sample.py computes the same rule in Python: right on 6 of 12, no ties.
    assert!(text(&out.stdout).contains("| micro | 12 | 50.0 | ["), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("| 6 | 6 | 0 | 0 | 0 | 0 |"), "{}", text(&out.stdout));
}

#[test]
fn limit_keeps_each_examples_full_dataset_slot_and_is_recorded() {
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
    let outcomes = std::fs::read_to_string(tmp.path().join("runs/l/outcomes.jsonl")).unwrap();
    let slots: Vec<(String, String)> = outcomes
        .lines()
        .map(|l| {
            let o: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                o["example_id"].as_str().unwrap().to_string(),
                o["chosen_slot"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    // The full-dataset assignment (see crates/prbench-eval/tests/slots.rs): the first example of
    // each subset has chosen in B.
    assert_eq!(
        slots,
        [("sample-art-01", "B"), ("sample-life-01", "B"), ("sample-soc-01", "B")]
            .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("runs/l/manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["limit_per_subset"], 1);
    assert_eq!(manifest["n_examples"], 3);
    assert_eq!(manifest["dataset_examples"], 12);
    assert!(manifest["finished"].is_string());
}

#[test]
fn flags_that_would_be_ignored_are_errors() {
    let tmp = tempfile::tempdir().unwrap();
    for (args, msg) in [
        (
            vec!["--model", "baseline:longer", "--both-orders"],
            "--both-orders applies to pairwise judges",
        ),
        (vec!["--model", "baseline:longer", "--verdict", "generate"], "--verdict generate applies"),
        (vec!["--model", "baseline:longer", "--condition", "none,none"], "`none` is listed twice"),
        (
            vec!["--model", "baseline:longer", "--condition", "none,3"],
            "a bare number continues a k sweep",
        ),
        (
            vec!["--model", "baseline:longer", "--retriever", "dense"],
            "--retriever applies to the `profile` and `planner` conditions",
        ),
        (
            vec![
                "--model",
                "baseline:longer",
                "--condition",
                "profile",
                "--planner",
                "gguf:x.gguf",
            ],
            "--planner applies to the `planner` condition",
        ),
        (
            vec!["--model", "baseline:longer", "--condition", "profile", "--retriever", "sparse"],
            "unknown retriever `sparse`",
        ),
    ] {
        let out = prbench(&[&["eval", "--data", &sample()][..], &args[..]].concat(), tmp.path());
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(text(&out.stderr).contains(msg), "{args:?}: {}", text(&out.stderr));
    }
    let out = prbench(
        &["eval", "--data", &sample(), "--model", "baseline:longer", "--batch-size", "0"],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(2), "clap rejects a zero batch size");
    // Ranges are checked while the flags are parsed (a usage error, exit 2).
    let out = prbench(
        &["eval", "--data", &sample(), "--model", "baseline:longer", "--limit", "0"],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains(
            "'--limit <LIMIT>': 0 is out of range: it takes a whole number from 1 to 1000000"
        ),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_condition_list_writes_one_run_each_and_the_matrix() {
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            "baseline:longer",
            "--condition",
            "none,profile:k=1,3,oracle",
            "--run-id",
            "m",
            "--quiet",
            "--bootstrap",
            "200",
        ],
        tmp.path(),
    );
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let runs = tmp.path().join("runs");
    for dir in ["m-none", "m-profile-k1", "m-profile-k3", "m-oracle"] {
        assert!(runs.join(dir).join("summary.json").is_file(), "{dir}");
    }
    let p3: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(runs.join("m-profile-k3/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(p3["condition"], "profile:3");
    assert_eq!(p3["profile"]["k"], 3);
    // Every sample profile has 8 to 10 posts (counted over data/sample/*.jsonl), and a baseline
    // cannot overflow: 3 shown, none dropped.
    assert_eq!(p3["profile"]["mean_posts_shown"], 3.0);
    assert_eq!(p3["profile"]["posts_dropped"], 0);
    assert!(p3["profile"]["retriever"].as_str().unwrap().starts_with("bm25"));
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(runs.join("m-profile-k3/manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["condition_inputs"]["k"], 3);

    let matrix: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(runs.join("m-matrix.json")).unwrap())
            .unwrap();
    let conditions: Vec<&str> = matrix["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["condition"].as_str().unwrap())
        .collect();
    assert_eq!(conditions, ["none", "profile:1", "profile:3", "oracle"]);
    let block = &matrix["blocks"][0];
    assert_eq!(block["metric"], "accuracy");
    // `longer` reads only the answers, so every condition scores the same items the same way:
    // each gain is 0 with no discordant item and p = 1 (3 conditions x (3 subsets + all)).
    let gains = block["gains"].as_array().unwrap();
    assert_eq!(gains.len(), 12);
    for g in gains {
        assert_eq!(
            (
                g["gain"].as_f64(),
                g["only_condition"].as_u64(),
                g["only_none"].as_u64(),
                g["p_value"].as_f64()
            ),
            (Some(0.0), Some(0), Some(0), Some(1.0)),
            "{g}"
        );
        assert_eq!(g["n_paired"], if g["scope"] == "all" { 12 } else { 4 });
    }
    let md = std::fs::read_to_string(runs.join("m-matrix.md")).unwrap();
    assert!(md.contains("`oracle` (upper bound)"), "{md}");
    assert!(text(&out.stdout).contains("# Conditioning matrix"), "the matrix is printed");
}

#[test]
fn a_multi_condition_run_continues_after_a_kill_and_reruns_reuse_finished_conditions() {
    let tmp = tempfile::tempdir().unwrap();
    let args = [
        "eval",
        "--data",
        &sample(),
        "--model",
        "baseline:shorter",
        "--condition",
        "none,oracle",
        "--run-id",
        "r",
        "--quiet",
        "--bootstrap",
        "100",
    ];
    let first = prbench(&args, tmp.path());
    assert!(first.status.success(), "stderr: {}", text(&first.stderr));
    let runs = tmp.path().join("runs");
    let matrix = std::fs::read_to_string(runs.join("r-matrix.json")).unwrap();
    // What a kill during `none` used to leave: a later condition's folder with nothing in it.
    std::fs::remove_dir_all(runs.join("r-oracle")).unwrap();
    std::fs::create_dir(runs.join("r-oracle")).unwrap();
    let again = prbench(&args, tmp.path());
    assert!(again.status.success(), "stderr: {}", text(&again.stderr));
    let err = text(&again.stderr);
    assert!(err.contains("run `r-none` finished already with these settings; reusing it"), "{err}");
    assert!(runs.join("r-oracle/summary.json").is_file());
    assert_eq!(
        std::fs::read_to_string(runs.join("r-matrix.json")).unwrap(),
        matrix,
        "same runs, same matrix"
    );
    // Everything finished: the same command only rewrites the matrix.
    let third = prbench(&args, tmp.path());
    assert!(third.status.success(), "stderr: {}", text(&third.stderr));
    // Another model under the same id is refused: first by the matrix file, and without it by
    // the finished runs' settings.
    let other = [
        "eval",
        "--data",
        &sample(),
        "--model",
        "baseline:longer",
        "--condition",
        "none,oracle",
        "--run-id",
        "r",
        "--quiet",
        "--bootstrap",
        "100",
    ];
    let out = prbench(&other, tmp.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("holds the matrix of another command (model `baseline:shorter`"),
        "{}",
        text(&out.stderr)
    );
    std::fs::rename(runs.join("r-matrix.json"), tmp.path().join("kept.json")).unwrap();
    let out = prbench(&other, tmp.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("a finished run with another `model`"),
        "{}",
        text(&out.stderr)
    );
    std::fs::rename(tmp.path().join("kept.json"), runs.join("r-matrix.json")).unwrap();
    // Other conditions under the same id would replace its matrix: refused before anything runs.
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            "baseline:shorter",
            "--condition",
            "none,profile:2",
            "--run-id",
            "r",
            "--quiet",
        ],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("holds the matrix of another command"),
        "{}",
        text(&out.stderr)
    );
    assert!(!runs.join("r-profile-k2").exists());
}

#[test]
fn an_unreachable_openai_planner_fails_at_load() {
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            "baseline:longer",
            "--condition",
            "none,planner",
            "--planner",
            "openai:m@http://127.0.0.1:9/v1",
            "--max-retries",
            "0",
            "--quiet",
        ],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("connecting to planner `openai:m@http://127.0.0.1:9/v1`"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        !tmp.path().join("runs").exists()
            || std::fs::read_dir(tmp.path().join("runs"))
                .unwrap()
                .all(|e| e.unwrap().file_name() == "cache.sqlite")
    );
}
