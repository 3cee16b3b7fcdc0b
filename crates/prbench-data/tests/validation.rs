//! Validation before any model loads. Repeated post ids within a profile are refused (naming file,
//! row, field and id), the other JSON layout than the extension says is named as such, and empty
//! profiles and rubrics are warned about with their counts.

mod common;

use common::{row, write_json, write_jsonl};
use prbench_data::error::DataError;
use prbench_data::{dataset_warnings, load};

#[test]
fn repeated_post_ids_within_a_profile_are_refused_naming_file_row_field_and_id() {
    let tmp = tempfile::tempdir().unwrap();
    let mut bad = row("b");
    let posts = bad["profile"].as_array_mut().unwrap();
    for i in 2..8 {
        posts.push(serde_json::json!({"category": "Cat", "id": format!("p{}", i + 1), "text": format!("post {i}")}));
    }
    // profile[8] repeats profile[2]'s id `p3`.
    posts.push(serde_json::json!({"category": "Cat", "id": "p3", "text": "another text"}));
    for (path, row_no) in [
        write_jsonl(&tmp.path().join("dup.jsonl"), &[row("a"), bad.clone()]),
        write_json(&tmp.path().join("dup.json"), &[row("a"), row("c"), bad.clone()]),
    ]
    .into_iter()
    .zip([2, 3])
    {
        let err = load(path.to_str().unwrap(), &[]).unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(&err, DataError::DuplicatePostId { row, field, id, .. } if *row == row_no && field == "profile[8].id" && id == "p3"),
            "{msg}"
        );
        let file = path.file_name().unwrap().to_str().unwrap();
        assert!(msg.contains(file) && msg.contains(&format!("row {row_no}:")), "{msg}");
        assert!(msg.contains("`profile[8].id` value \"p3\" repeats `profile[2].id`"), "{msg}");
        assert!(msg.contains("give one of the two posts another id"), "{msg}");
    }
    // The same id in two different profiles is fine.
    let ok = write_jsonl(&tmp.path().join("ok.jsonl"), &[row("a"), row("b")]);
    assert_eq!(load(ok.to_str().unwrap(), &[]).unwrap().examples.len(), 2);
}

#[test]
fn a_json_array_in_a_jsonl_file_says_rename_to_json() {
    let tmp = tempfile::tempdir().unwrap();
    let arr = write_json(&tmp.path().join("rows.jsonl"), &[row("a"), row("b")]);
    let err = load(arr.to_str().unwrap(), &[]).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, DataError::WrongJsonLayout { .. }), "{msg}");
    assert!(
        msg.contains("rows.jsonl")
            && msg.contains("this looks like a JSON array")
            && msg.contains("rename the file to .json"),
        "{msg}"
    );
    // One-line arrays too.
    std::fs::write(&arr, serde_json::to_string(&vec![row("a")]).unwrap()).unwrap();
    assert!(load(arr.to_str().unwrap(), &[])
        .unwrap_err()
        .to_string()
        .contains("looks like a JSON array"));
}

#[test]
fn jsonl_in_a_json_file_says_rename_to_jsonl() {
    let tmp = tempfile::tempdir().unwrap();
    let lines = write_jsonl(&tmp.path().join("rows.json"), &[row("a"), row("b")]);
    let err = load(lines.to_str().unwrap(), &[]).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, DataError::WrongJsonLayout { .. }), "{msg}");
    assert!(
        msg.contains("rows.json")
            && msg.contains("this looks like JSONL")
            && msg.contains("rename the file to .jsonl"),
        "{msg}"
    );
    // A single object keeps its own message (top level is an object).
    std::fs::write(&lines, row("a").to_string()).unwrap();
    assert!(matches!(
        load(lines.to_str().unwrap(), &[]).unwrap_err(),
        DataError::MalformedJson { .. }
    ));
}

#[test]
fn empty_profiles_and_rubrics_are_warned_about_with_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let mut rows: Vec<serde_json::Value> = (0..12).map(|i| row(&format!("r{i}"))).collect();
    for i in [1, 4, 9] {
        rows[i]["profile"] = serde_json::json!([]);
    }
    rows[4]["rubric_aspects"] = serde_json::json!([]);
    let path = write_jsonl(&tmp.path().join("Art.jsonl"), &rows);
    let data = load(path.to_str().unwrap(), &[]).unwrap();
    assert_eq!(
        dataset_warnings(&data),
        [
            "warning: 3 of 12 examples have an empty profile (profile:k renders them as none; first: r1, r4, r9)",
            "warning: 1 of 12 examples has an empty rubric (oracle renders them as none; first: r4)",
        ]
    );
    for i in [0, 2, 3, 5] {
        rows[i]["profile"] = serde_json::json!([]);
    }
    let path = write_jsonl(&tmp.path().join("Art.jsonl"), &rows);
    let data = load(path.to_str().unwrap(), &[]).unwrap();
    assert!(dataset_warnings(&data)[0].starts_with("warning: 7 of 12 examples have an empty profile (profile:k renders them as none; first: r0, r1, r2, …)"));
    let clean = write_jsonl(&tmp.path().join("Society.jsonl"), &[row("a")]);
    assert!(dataset_warnings(&load(clean.to_str().unwrap(), &[]).unwrap()).is_empty());
}
