//! Dataset checks through the real binary: dataset warnings and refusals come before any model
//! loads, `--limit N --sample`, and `data stats --tokenizer dir:PATH`.

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// The bundled Art subset as JSONL lines (12 rows across the sample; this file holds 4).
fn art_rows() -> Vec<serde_json::Value> {
    let text =
        std::fs::read_to_string(repo().join("data/sample/Art_and_Entertainment.jsonl")).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn write_rows(dir: &Path, name: &str, rows: &[serde_json::Value]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, rows.iter().map(|r| format!("{r}\n")).collect::<String>()).unwrap();
    path.display().to_string()
}

const NO_MODEL: &str = "gguf:/nonexistent/prbench-no-such-model.gguf";

#[test]
fn empty_profiles_are_warned_about_by_data_validate_and_before_eval_loads_a_model() {
    let tmp = tempfile::tempdir().unwrap();
    let mut rows = art_rows();
    rows[1]["profile"] = serde_json::json!([]);
    rows[3]["profile"] = serde_json::json!([]);
    rows[3]["rubric_aspects"] = serde_json::json!([]);
    let data = write_rows(tmp.path(), "Art.jsonl", &rows);
    let (id1, id3) = (rows[1]["id"].as_str().unwrap(), rows[3]["id"].as_str().unwrap());
    let profile_warning = format!("prbench: warning: 2 of 4 examples have an empty profile (profile:k renders them as none; first: {id1}, {id3})");
    let rubric_warning = format!("prbench: warning: 1 of 4 examples has an empty rubric (oracle renders them as none; first: {id3})");

    let out = prbench(&["data", "validate", "--data", &data], tmp.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains(&profile_warning) && stderr.contains(&rubric_warning), "{stderr}");

    // eval prints the warnings, then fails on the missing model: they came first.
    let out = prbench(
        &["eval", "--data", &data, "--model", NO_MODEL, "--condition", "profile:3", "--quiet"],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    let (warned, failed) = (stderr.find(&profile_warning), stderr.find("not found"));
    assert!(warned.is_some() && failed.is_some() && warned < failed, "{stderr}");
}

#[test]
fn repeated_post_ids_stop_eval_and_retrieve_before_any_model_loads() {
    let tmp = tempfile::tempdir().unwrap();
    let mut rows = art_rows();
    let profile = rows[2]["profile"].as_array_mut().unwrap();
    assert!(profile.len() >= 2);
    let first_id = profile[0]["id"].clone();
    let last = profile.len() - 1;
    profile[last]["id"] = first_id.clone();
    let data = write_rows(tmp.path(), "Art.jsonl", &rows);
    let field = format!("`profile[{last}].id` value {first_id} repeats `profile[0].id`");
    for args in [
        vec!["eval", "--data", &data, "--model", NO_MODEL, "--condition", "profile:3", "--quiet"],
        vec![
            "retrieve",
            "--data",
            &data,
            "--retriever",
            "dense:/nonexistent/embedder",
            "--out",
            "ranked.jsonl",
            "--quiet",
        ],
        vec!["data", "validate", "--data", &data],
    ] {
        let out = prbench(&args, tmp.path());
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("Art.jsonl: row 3:") && stderr.contains(&field),
            "{args:?}: {stderr}"
        );
        assert!(
            !stderr.contains("nonexistent"),
            "the data error comes before any model or embedder: {stderr}"
        );
    }
}

#[test]
fn sample_needs_limit_and_a_sampled_run_records_its_draw() {
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(
        &["eval", "--data", &sample(), "--model", "baseline:longer", "--sample", "--quiet"],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(
            "--sample draws a seeded random sample of N examples per subset and needs --limit N"
        ),
        "{}",
        text(&out.stderr)
    );

    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            "baseline:longer",
            "--limit",
            "2",
            "--sample",
            "--seed",
            "7",
            "--run-id",
            "s",
            "--quiet",
            "--bootstrap",
            "100",
        ],
        tmp.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let dir = tmp.path().join("runs/s");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["sample_per_subset"], 2);
    assert!(manifest["limit_per_subset"].is_null());
    assert_eq!(manifest["n_examples"], 6);
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("- limited to a random sample of 2 examples per subset, seed 7"), "{md}");
    assert!(!md.contains("limited to the first"), "{md}");
    let got: Vec<String> = std::fs::read_to_string(dir.join("outcomes.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["example_id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let data = prbench_data::load(&sample(), &[]).unwrap();
    let want: Vec<String> = prbench_eval::run::sample_per_subset(&data.examples, 2, 7)
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(got, want);
}

/// `(mean, min, max)` of the independently counted tokens of each example's `field`.
fn independent(dir: &Path, field: &str) -> (f64, u64, u64) {
    let mut tok = tokenizers::Tokenizer::from_file(dir.join("tokenizer.json")).unwrap();
    tok.set_encode_special_tokens(true);
    tok.with_truncation(None).unwrap();
    tok.with_padding(None);
    let data = prbench_data::load(&sample(), &[]).unwrap();
    let counts: Vec<u64> = data
        .examples
        .iter()
        .map(|e| {
            let text = match field {
                "question" => &e.question,
                "chosen" => &e.chosen,
                _ => unreachable!(),
            };
            tok.encode(text.as_str(), false).unwrap().len() as u64
        })
        .collect();
    (
        counts.iter().sum::<u64>() as f64 / counts.len() as f64,
        *counts.iter().min().unwrap(),
        *counts.iter().max().unwrap(),
    )
}

#[test]
fn data_stats_counts_tokens_with_a_reward_models_tokenizer_json() {
    let tmp = tempfile::tempdir().unwrap();
    let minilm = std::env::var("PRBENCH_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/prbench/models")
        })
        .join("all-MiniLM-L6-v2");
    let mut dirs = vec![repo().join("crates/prbench-rm/tests/fixtures/seqcls/qwen2-f32")];
    if minilm.join("tokenizer.json").is_file() {
        // Its tokenizer.json truncates and pads to 128: counts must ignore both.
        dirs.push(minilm);
    } else {
        prbench_testkit::unavailable(format!(
            "the MiniLM part: {} absent; run scripts/setup.sh --tests",
            minilm.display()
        ));
    }
    for dir in dirs {
        let spec = format!("dir:{}", dir.display());
        let out = prbench(
            &["data", "stats", "--data", &sample(), "--tokenizer", &spec, "--json"],
            tmp.path(),
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        let stats: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
        assert_eq!(stats["unit"], "tokens");
        for field in ["question", "chosen"] {
            let (mean, min, max) = independent(&dir, field);
            let got = &stats["overall"][format!("{field}_length")];
            assert!(
                (got["mean"].as_f64().unwrap() - mean).abs() < 1e-9,
                "{spec} {field}: {got} vs mean {mean}"
            );
            assert_eq!(
                (got["min"].as_u64().unwrap(), got["max"].as_u64().unwrap()),
                (min, max),
                "{spec} {field}"
            );
        }
    }
    let out = prbench(
        &["data", "stats", "--data", &sample(), "--tokenizer", "baseline:longer"],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr)
            .contains("--tokenizer takes `gguf:PATH`, `dir:PATH` or `hf:ORG/NAME[@REV]`"),
        "{}",
        text(&out.stderr)
    );
    let out = prbench(
        &[
            "data",
            "stats",
            "--data",
            &sample(),
            "--tokenizer",
            &format!("dir:{}", tmp.path().display()),
        ],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("tokenizer.json"), "{}", text(&out.stderr));
}
