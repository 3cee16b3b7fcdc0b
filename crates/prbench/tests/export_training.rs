//! `prbench export` through the real binary on the bundled sample: exact rendered text for one
//! example under each condition and format (hand-written here from the data file), no hidden
//! text anywhere outside oracle rows and planner targets (every string of every row scanned, with
//! the data read as plain JSON, not through prbench), the same ranking as a `prbench retrieve`
//! file, the `planner` condition through eval's cached planner, refusals, and the Python checker
//! (tools/check_training_export.py) through the reference venv.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

const Q: &str = "How do I stop my photos of indoor basketball games from coming out blurry? The gym looks bright enough to my eye, but the players always end up smeared.";
const CHOSEN_START: &str = "Blur indoors is nearly always a slow shutter.";

/// The top 3 posts of sample-art-01 by BM25 against its question, as `prbench retrieve` ranks
/// them (p4, p2, p9; checked against a retrieve file below).
const TOP3: [(&str, &str); 3] = [
    ("parenting", "Question for other sports parents: our league plays in an old middle-school gym and parents have to stay behind a rope at the baseline, maybe 3 m from the court. Is it rude to stand for the whole game to film?"),
    ("photography", "Finally picked up the EF 50mm f/1.8 STM for $110 and I love the background blur. On my crop body it's a bit tight indoors, though."),
    ("photography", "I'm not looking to upgrade bodies any time soon. I'd rather learn to squeeze everything out of what I already have before spending more."),
];

const ASPECTS: [&str; 5] = [
    "Works with the T2i and 50mm f/1.8 already owned",
    "Realistic ISO ceiling for an older crop sensor",
    "Fixes that cost nothing",
    "Framing from the baseline spectator spot",
    "Noise cleanup in darktable",
];

fn expected_user(condition: &str) -> String {
    match condition {
        "none" => Q.to_string(),
        "profile:3" => {
            let mut ctx =
                String::from("Posts this user wrote before, most relevant to the question first:");
            for (i, (cat, text)) in TOP3.iter().enumerate() {
                ctx.push_str(&format!("\n\n[Post {} · category: {cat}]\n{text}", i + 1));
            }
            format!("### About me\n{ctx}\n\n### My question\n{Q}")
        }
        "oracle" => {
            let list: String = ASPECTS.iter().map(|a| format!("\n- {a}")).collect();
            format!("### About me\nThis user expects an answer with these qualities:{list}\n\n### My question\n{Q}")
        }
        other => panic!("no expectation for {other}"),
    }
}

/// The sample's rows as plain JSON (not through prbench's loader), by id.
fn raw_rows() -> Vec<Value> {
    let mut rows = Vec::new();
    for e in std::fs::read_dir(repo().join("data/sample")).unwrap() {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
        rows.extend(
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| serde_json::from_str::<Value>(l).unwrap()),
        );
    }
    rows
}

fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(m) => m.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

/// Hidden texts of a data row (narrative, every aspect/evidence/reason of 4+ characters) that no
/// visible text (question, answers, profile posts) contains: these may appear nowhere.
fn hidden(row: &Value) -> Vec<(String, &'static str)> {
    let mut visible = vec![
        row["question"].as_str().unwrap(),
        row["chosen"].as_str().unwrap(),
        row["rejected"].as_str().unwrap(),
    ];
    visible.extend(row["profile"].as_array().unwrap().iter().map(|p| p["text"].as_str().unwrap()));
    let mut h = vec![(row["narrative"].as_str().unwrap().trim().to_string(), "narrative")];
    for a in row["rubric_aspects"].as_array().unwrap() {
        h.push((a["aspect"].as_str().unwrap().trim().to_string(), "aspect"));
        h.push((a["evidence"].as_str().unwrap().trim().to_string(), "evidence"));
        h.push((a["reason"].as_str().unwrap().trim().to_string(), "reason"));
    }
    h.retain(|(t, _)| t.chars().count() >= 4 && !visible.iter().any(|v| v.contains(t.as_str())));
    h
}

fn export(args: &[&str], dir: &Path, name: &str) -> (PathBuf, Vec<Value>, String) {
    let out = dir.join(name);
    let mut all = vec!["export", "--quiet", "--out", out.to_str().unwrap()];
    all.extend_from_slice(args);
    let o = prbench(&all, dir);
    assert!(o.status.success(), "prbench {all:?}\nstderr: {}", text(&o.stderr));
    let rows = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (out, rows, text(&o.stderr))
}

/// A row's keys, sorted.
fn keys(row: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = row.as_object().unwrap().keys().map(String::as_str).collect();
    k.sort_unstable();
    k
}

fn contents(v: &Value) -> Vec<(&str, &str)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|m| (m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
        .collect()
}

#[path = "../../prbench-data/tests/common/pyref.rs"]
mod pyref;

/// Runs the Python checker on `file` through the reference venv, if installed.
fn python_check(file: &Path, rows: usize) {
    let Some(python) = pyref::pyref_or_skip() else { return };
    let out = std::process::Command::new(&python)
        .arg(repo().join("tools/check_training_export.py"))
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "check_training_export.py {}: {}",
        file.display(),
        text(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["rows"], rows);
    assert!(v["checked"].to_string().contains("pyarrow"), "{v}");
}

#[test]
fn reward_exports_hold_eval_text_and_no_hidden_text_outside_oracle() {
    let tmp = tempfile::tempdir().unwrap();
    let data = raw_rows();
    for format in ["trl-reward", "openrlhf-reward"] {
        for condition in ["none", "profile:3", "oracle"] {
            let name = format!("{format}-{}.jsonl", condition.replace(':', ""));
            let (file, rows, stderr) = export(
                &["--data", &sample(), "--format", format, "--condition", condition],
                tmp.path(),
                &name,
            );
            assert_eq!(rows.len(), 12, "{name}");
            assert!(
                stderr.contains(&format!(
                    "prbench: wrote 12 rows to {} (format {format}, condition {condition}",
                    file.display()
                )),
                "{stderr}"
            );
            assert!(
                stderr.contains("0 examples left out") && stderr.contains("prbench: manifest: "),
                "{stderr}"
            );
            for row in &rows {
                let id = row["id"].as_str().unwrap();
                let src = data
                    .iter()
                    .find(|r| r["id"] == id)
                    .unwrap_or_else(|| panic!("{name}: unknown id {id}"));
                assert_eq!(row["condition"], condition);
                assert!(row.get("user_id").is_none(), "the sample has no user ids");
                // The keys the guide's export table lists (the sample has no user ids).
                let want: &[&str] = if format == "trl-reward" {
                    &["chosen", "condition", "id", "rejected", "subset"]
                } else {
                    &["chosen", "condition", "id", "prompt", "rejected", "subset"]
                };
                assert_eq!(keys(row), want, "{name}");
                let (user, chosen, rejected) = match format {
                    "trl-reward" => {
                        let (c, r) = (contents(&row["chosen"]), contents(&row["rejected"]));
                        assert_eq!(
                            (c[0].0, c[1].0, r[0].0, r[1].0),
                            ("user", "assistant", "user", "assistant")
                        );
                        assert_eq!(c[0].1, r[0].1);
                        assert!(row.get("prompt").is_none());
                        (c[0].1.to_string(), c[1].1.to_string(), r[1].1.to_string())
                    }
                    _ => {
                        let (p, c, r) = (
                            contents(&row["prompt"]),
                            contents(&row["chosen"]),
                            contents(&row["rejected"]),
                        );
                        assert_eq!(
                            (p.len(), p[0].0, c.len(), c[0].0, r.len(), r[0].0),
                            (1, "user", 1, "assistant", 1, "assistant")
                        );
                        (p[0].1.to_string(), c[0].1.to_string(), r[0].1.to_string())
                    }
                };
                assert_eq!(chosen, src["chosen"].as_str().unwrap());
                assert_eq!(rejected, src["rejected"].as_str().unwrap());
                assert!(user.ends_with(src["question"].as_str().unwrap().trim()), "{name} {id}");
                if id == "sample-art-01" {
                    assert_eq!(user, expected_user(condition), "{name}");
                    assert!(chosen.starts_with(CHOSEN_START));
                }
                // Every string of the row, ids and all.
                let mut all = Vec::new();
                strings(row, &mut all);
                let all = all.join("\n");
                for (h, field) in hidden(src) {
                    // Oracle rows show the aspect titles, and nothing else hidden.
                    let allowed = condition == "oracle" && field == "aspect";
                    assert_eq!(all.contains(&h), allowed, "{name} {id}: hidden {field} `{h}`");
                }
            }
            let manifest: Value = serde_json::from_str(
                &std::fs::read_to_string(tmp.path().join(name.replace(".jsonl", ".manifest.json")))
                    .unwrap(),
            )
            .unwrap();
            assert_eq!(manifest["format"], format);
            assert_eq!(manifest["condition"], condition);
            assert_eq!(manifest["oracle"], condition == "oracle");
            assert_eq!(manifest["counts"]["rows"], 12);
            assert_eq!(manifest["dataset_hash"].as_str().unwrap().len(), 64);
            assert!(manifest["code_version"]
                .as_str()
                .unwrap()
                .starts_with(env!("CARGO_PKG_VERSION")));
            python_check(&file, 12);
        }
    }
}

#[test]
fn planner_sft_rows_are_eval_planner_prompts_with_the_rubric_as_target() {
    let tmp = tempfile::tempdir().unwrap();
    let data = raw_rows();
    let (file, rows, stderr) = export(
        &["--data", &sample(), "--format", "trl-sft-planner", "--planner-k", "3"],
        tmp.path(),
        "planner.jsonl",
    );
    assert_eq!(rows.len(), 12);
    // The closing summary on stderr: rows, left-out count, manifest path.
    assert!(
        stderr.contains(&format!(
            "prbench: wrote 12 rows to {} (format trl-sft-planner); 0 examples left out",
            file.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "prbench: manifest: {}",
            tmp.path().join("planner.manifest.json").display()
        )),
        "{stderr}"
    );
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("planner.manifest.json")).unwrap(),
    )
    .unwrap();
    assert!(manifest["condition"].is_null());
    let system = std::fs::read_to_string(repo().join("prompts/planner-system.txt")).unwrap();
    for row in &rows {
        let id = row["id"].as_str().unwrap();
        let src = data.iter().find(|r| r["id"] == id).unwrap();
        // As the guide's export table says: no `condition` (the input is the planner's prompt).
        assert_eq!(keys(row), ["completion", "id", "prompt", "subset"], "{id}");
        let (p, c) = (contents(&row["prompt"]), contents(&row["completion"]));
        assert_eq!(
            (p.len(), p[0].0, p[1].0, c.len(), c[0].0),
            (2, "system", "user", 1, "assistant")
        );
        assert_eq!(p[0].1, system.trim());
        let titles: Vec<String> = src["rubric_aspects"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| format!("- {}", a["aspect"].as_str().unwrap().trim()))
            .collect();
        assert_eq!(c[0].1, titles.join("\n"), "{id}");
        // The target parses back to exactly the titles with eval's planner parser.
        let back = prbench_eval::planner::parse_plan(c[0].1).unwrap();
        assert_eq!(back, titles.iter().map(|t| t[2..].to_string()).collect::<Vec<_>>());
        if id == "sample-art-01" {
            let mut user = String::from("Here are some past posts by a user, most relevant first:");
            for (i, (cat, text)) in TOP3.iter().enumerate() {
                user.push_str(&format!("\n\n[Post {} | category: {cat}]\n{text}", i + 1));
            }
            user.push_str(&format!("\n\nThe user now asks:\n{Q}\n\nWhat kind of answer would this user like? Describe the content and style they expect in 3 to 6 short points, one per line, each starting with \"- \"."));
            assert_eq!(p[1].1, user);
            assert_eq!(
                c[0].1,
                ASPECTS.iter().map(|a| format!("- {a}")).collect::<Vec<_>>().join("\n")
            );
        }
        // The input (everything but the target) holds no hidden text.
        let mut input = Vec::new();
        strings(&row["prompt"], &mut input);
        input.push(id.to_string());
        let input = input.join("\n");
        for (h, field) in hidden(src) {
            assert!(!input.contains(&h), "{id}: hidden {field} `{h}` in the planner input");
        }
    }
    python_check(&file, 12);
    // The checker holds planner rows to the guide's keys: a `condition` key is refused.
    if let Some(python) = pyref::pyref_or_skip() {
        let mut first = rows[0].clone();
        first["condition"] = Value::from("none");
        let mut text_rows = serde_json::to_string(&first).unwrap() + "\n";
        for r in &rows[1..] {
            text_rows += &(serde_json::to_string(r).unwrap() + "\n");
        }
        let bad = tmp.path().join("bad.jsonl");
        std::fs::write(&bad, &text_rows).unwrap();
        let mut manifest: Value = serde_json::from_str(
            &std::fs::read_to_string(tmp.path().join("planner.manifest.json")).unwrap(),
        )
        .unwrap();
        manifest["rows_sha256"] = Value::from(sha256_hex(text_rows.as_bytes()));
        std::fs::write(tmp.path().join("bad.manifest.json"), manifest.to_string()).unwrap();
        let out = std::process::Command::new(&python)
            .arg(repo().join("tools/check_training_export.py"))
            .arg(&bad)
            .output()
            .unwrap();
        assert!(
            !out.status.success()
                && text(&out.stderr).contains("trl-sft-planner rows carry no `condition`"),
            "{}",
            text(&out.stderr)
        );
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(bytes))
}

#[test]
fn a_retrieve_file_gives_the_same_rows_as_ranking_on_the_fly() {
    let tmp = tempfile::tempdir().unwrap();
    let ranked = tmp.path().join("ranked.jsonl");
    let o = prbench(
        &[
            "retrieve",
            "--data",
            &sample(),
            "--retriever",
            "bm25",
            "--out",
            ranked.to_str().unwrap(),
            "--quiet",
        ],
        tmp.path(),
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let (_, a, _) = export(
        &["--data", &sample(), "--format", "trl-reward", "--condition", "profile:3"],
        tmp.path(),
        "a.jsonl",
    );
    let (_, b, _) = export(
        &["--data", ranked.to_str().unwrap(), "--format", "trl-reward", "--condition", "profile:3"],
        tmp.path(),
        "b.jsonl",
    );
    assert_eq!(a, b);
}

#[test]
fn bad_flags_and_taken_files_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let s = sample();
    let run = |args: &[&str]| {
        let mut all = vec!["export", "--data", s.as_str()];
        all.extend_from_slice(args);
        let o = prbench(&all, tmp.path());
        assert!(!o.status.success(), "{args:?} should fail");
        text(&o.stderr)
    };
    assert!(run(&["--format", "trl-sft-planner", "--condition", "none", "--out", "p.jsonl"])
        .contains("--condition applies to the reward formats"));
    assert!(run(&["--format", "trl-reward", "--out", "x.json"]).contains("must be a .jsonl file"));
    assert!(run(&["--format", "trl-reward", "--retriever", "bm25", "--out", "x.jsonl"])
        .contains("--retriever applies"));
    assert!(run(&["--format", "trl-reward", "--planner", "gguf:x", "--out", "x.jsonl"])
        .contains("--planner applies"));
    assert!(run(&["--format", "trl-reward", "--condition", "profile:0", "--out", "x.jsonl"])
        .contains("at least 1"));
    // One condition per file: a list or a k sweep is refused with the forms export takes.
    for list in ["none,oracle", "profile:k=1,3,5"] {
        let err = run(&["--format", "trl-reward", "--condition", list, "--out", "x.jsonl"]);
        assert!(
            err.contains(&format!("--condition `{list}`: export takes one condition")),
            "{err}"
        );
        assert!(err.contains("it accepts `none` (default), `profile` (k = 10), `profile:K`, `planner` or `oracle`") && !err.contains("(a sweep)"), "{err}");
    }
    let err = run(&["--format", "trl-reward", "--condition", "bogus", "--out", "x.jsonl"]);
    assert!(err.contains("--condition: invalid condition `bogus`: expected one of `none`, `profile` (k = 10), `profile:K`, `planner` or `oracle`") && !err.contains("sweep"), "{err}");
    // A missing --out folder is refused, naming it, and not created.
    let missing = tmp.path().join("no-such-dir/sub");
    let err = run(&["--format", "trl-reward", "--out", missing.join("x.jsonl").to_str().unwrap()]);
    assert!(
        err.contains(&format!("--out: folder `{}` does not exist", missing.display())),
        "{err}"
    );
    assert!(!tmp.path().join("no-such-dir").exists(), "the folder was created");
    // Remote settings are export's own planner flags; eval's sampling and template flags are not
    // export flags at all.
    assert!(run(&["--format", "trl-reward", "--timeout", "3", "--out", "x.jsonl"])
        .contains("--timeout applies to a remote planner (`--planner openai:…`"));
    for flag in ["--chat-template", "--temperature", "--top-p", "--request-extra"] {
        let err = run(&["--format", "trl-reward", flag, "1", "--out", "x.jsonl"]);
        assert!(err.contains(&format!("unexpected argument '{flag}'")), "{flag}: {err}");
    }
    export(&["--data", &sample(), "--format", "trl-reward"], tmp.path(), "taken.jsonl");
    let err = run(&["--format", "openrlhf-reward", "--out", "taken.jsonl"]);
    assert!(err.contains("already exists") && err.contains("never overwritten"), "{err}");
    std::fs::remove_file(tmp.path().join("taken.jsonl")).unwrap();
    let err = run(&["--format", "openrlhf-reward", "--out", "taken.jsonl"]);
    assert!(err.contains("taken.manifest.json") && err.contains("already exists"), "{err}");
}

/// `--condition planner`: the export runs the planner through the same cache as `eval`, so after
/// an eval run its rows show exactly the aspects that run's planner.jsonl holds.
#[test]
fn planner_condition_reuses_eval_planner_replies() {
    let Some(gguf) = prbench_testkit::smollm2() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let planner = format!("gguf:{}", gguf.display());
    let o = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            "baseline:longer",
            "--condition",
            "planner",
            "--planner",
            &planner,
            "--planner-k",
            "3",
            "--limit",
            "1",
            "--run-id",
            "p",
            "--quiet",
            "--no-report",
            "--bootstrap",
            "100",
        ],
        tmp.path(),
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let plans: Vec<Value> = std::fs::read_to_string(tmp.path().join("runs/p/planner.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(plans.len(), 3);
    let (file, rows, stderr) = export(
        &[
            "--data",
            &sample(),
            "--format",
            "trl-reward",
            "--condition",
            "planner",
            "--planner",
            &planner,
            "--planner-k",
            "3",
            "--limit",
            "1",
        ],
        tmp.path(),
        "planner-rm.jsonl",
    );
    assert_eq!(rows.len(), 3);
    assert!(
        stderr.contains("3 hits, 0 calls"),
        "the export's planner replies come from eval's cache: {stderr}"
    );
    let data = raw_rows();
    for row in &rows {
        let id = row["id"].as_str().unwrap();
        let plan = plans.iter().find(|p| p["example_id"] == id).unwrap();
        let aspects: Vec<&str> =
            plan["aspects"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
        let src = data.iter().find(|r| r["id"] == id).unwrap();
        let q = src["question"].as_str().unwrap().trim();
        let want = if aspects.is_empty() {
            q.to_string()
        } else {
            let list: String = aspects.iter().map(|a| format!("\n- {}", a.trim())).collect();
            format!("### About me\nThis user likely expects an answer with these qualities (inferred from their past posts):{list}\n\n### My question\n{q}")
        };
        assert_eq!(contents(&row["chosen"])[0].1, want, "{id}");
    }
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("planner-rm.manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["condition"], "planner");
    assert_eq!(manifest["condition_inputs"]["planner"]["k"], 3);
    python_check(&file, 3);
}

/// Every flag of `prbench export --help` describes what it does in export: no text borrowed from
/// `eval`, `bon` or `build` about judges, reward-model servers or sampling.
#[test]
fn help_describes_export_flags_only() {
    let tmp = tempfile::tempdir().unwrap();
    let o = prbench(&["export", "--help"], tmp.path());
    assert!(o.status.success());
    let help = text(&o.stdout);
    for foreign in [
        "sglang",
        "tei:",
        "openrlhf:",
        "judges",
        "bon",
        "`build`",
        "--chat-template",
        "--temperature",
        "--top-p",
        "--request-extra",
        "Remote engines",
        "for `build` also",
        "lampqa",
    ] {
        assert!(!help.contains(foreign), "`{foreign}` in export's help:\n{help}");
    }
    for flag in ["--concurrency", "--timeout", "--max-retries", "--api-key-env"] {
        let at = help.find(&format!("{flag} <")).unwrap_or_else(|| panic!("{flag} missing"));
        assert!(
            help[at..]
                .lines()
                .nth(1)
                .unwrap()
                .trim_start()
                .starts_with("`--planner openai:…` only"),
            "{flag}: {help}"
        );
    }
    assert!(help.contains("One condition per file: no lists or k sweeps"), "{help}");
    assert!(help.contains("in an existing folder"), "{help}");
}
