//! Every schema error names the file, the row and the field, and says what to do.

mod common;

use std::path::Path;

use common::{row, write_json, write_jsonl};
use prbench_data::error::DataError;
use prbench_data::load;
use serde_json::json;

fn load_err(path: &Path) -> (DataError, String) {
    let err = load(path.to_str().unwrap(), &[]).unwrap_err();
    let msg = err.to_string();
    (err, msg)
}

/// Asserts the message names `file`, `row N` and the field in backticks.
fn names_all(msg: &str, file: &str, row: usize, field: &str) {
    assert!(msg.contains(file), "file {file} not in: {msg}");
    assert!(msg.contains(&format!("row {row}:")), "row {row} not in: {msg}");
    assert!(msg.contains(&format!("`{field}`")), "field {field} not in: {msg}");
}

#[test]
fn missing_field_jsonl() {
    let tmp = tempfile::tempdir().unwrap();
    let mut bad = row("b");
    bad.as_object_mut().unwrap().remove("chosen");
    let path = write_jsonl(&tmp.path().join("miss.jsonl"), &[row("a"), bad]);
    let (err, msg) = load_err(&path);
    assert!(matches!(err, DataError::MissingField { row: 2, .. }), "{msg}");
    names_all(&msg, "miss.jsonl", 2, "chosen");
    assert!(msg.contains("add it or remove the row"), "{msg}");
}

#[test]
fn missing_nested_field_json() {
    let tmp = tempfile::tempdir().unwrap();
    let mut bad = row("b");
    bad["rubric_aspects"][0].as_object_mut().unwrap().remove("reason");
    let path = write_json(&tmp.path().join("nested.json"), &[row("a"), row("c"), bad]);
    let (_, msg) = load_err(&path);
    names_all(&msg, "nested.json", 3, "rubric_aspects[0].reason");
}

#[test]
fn profile_as_string_is_a_type_error() {
    let tmp = tempfile::tempdir().unwrap();
    let mut bad = row("b");
    bad["profile"] = json!("I like films");
    let path = write_json(&tmp.path().join("types.json"), &[row("a"), bad]);
    let (err, msg) = load_err(&path);
    assert!(matches!(err, DataError::WrongType { row: 2, .. }), "{msg}");
    names_all(&msg, "types.json", 2, "profile");
    assert!(msg.contains("must be a list") && msg.contains("a string"), "{msg}");
}

#[test]
fn id_as_number_is_a_type_error() {
    let tmp = tempfile::tempdir().unwrap();
    let mut bad = row("b");
    bad["id"] = json!(17);
    let path = write_jsonl(&tmp.path().join("num.jsonl"), &[bad]);
    let (err, msg) = load_err(&path);
    assert!(matches!(err, DataError::WrongType { row: 1, .. }), "{msg}");
    names_all(&msg, "num.jsonl", 1, "id");
    assert!(msg.contains("a number (17)"), "{msg}");
}

#[test]
fn nested_post_text_as_number_and_row_not_an_object() {
    let tmp = tempfile::tempdir().unwrap();
    let mut bad = row("b");
    bad["profile"][1]["text"] = json!(3.5);
    let path = write_jsonl(&tmp.path().join("post.jsonl"), &[row("a"), bad]);
    let (_, msg) = load_err(&path);
    names_all(&msg, "post.jsonl", 2, "profile[1].text");

    let path = write_json(&tmp.path().join("arr.json"), &[row("a"), json!([1, 2])]);
    let (err, msg) = load_err(&path);
    assert!(matches!(err, DataError::WrongType { row: 2, .. }), "{msg}");
    names_all(&msg, "arr.json", 2, "(row)");
}

#[test]
fn empty_chosen_rejected_question_id() {
    let tmp = tempfile::tempdir().unwrap();
    for field in ["chosen", "rejected", "question", "id"] {
        let mut bad = row("b");
        bad[field] = json!(" \n\t ");
        let name = format!("empty_{field}.jsonl");
        let path = write_jsonl(&tmp.path().join(&name), &[row("a"), row("c"), bad]);
        let (err, msg) = load_err(&path);
        assert!(matches!(err, DataError::EmptyField { row: 3, .. }), "{msg}");
        names_all(&msg, &name, 3, field);
        assert!(msg.contains("fill it in or remove the row"), "{msg}");
    }
}

#[test]
fn chosen_equal_to_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    let mut bad = row("b");
    bad["rejected"] = json!(format!("{} ", bad["chosen"].as_str().unwrap()));
    let path = write_jsonl(&tmp.path().join("same.jsonl"), &[bad]);
    let (err, msg) = load_err(&path);
    assert!(matches!(err, DataError::SameAnswers { row: 1, .. }), "{msg}");
    names_all(&msg, "same.jsonl", 1, "chosen");
    assert!(msg.contains("`rejected`"), "{msg}");
}

#[test]
fn duplicate_id_within_a_file() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write_jsonl(&tmp.path().join("dup.jsonl"), &[row("a"), row("b"), row("a")]);
    let (err, msg) = load_err(&path);
    assert!(matches!(err, DataError::DuplicateId { row: 3, first_row: 1, .. }), "{msg}");
    names_all(&msg, "dup.jsonl", 3, "id");
    assert!(msg.contains("row 1") && msg.contains("\"a\""), "{msg}");
}

#[test]
fn duplicate_id_across_files_of_a_directory() {
    let tmp = tempfile::tempdir().unwrap();
    write_jsonl(&tmp.path().join("Art.jsonl"), &[row("a"), row("shared")]);
    write_json(&tmp.path().join("Society.json"), &[row("s"), row("t"), row("shared")]);
    let (err, msg) = load_err(tmp.path());
    assert!(matches!(err, DataError::DuplicateId { row: 3, first_row: 2, .. }), "{msg}");
    names_all(&msg, "Society.json", 3, "id");
    assert!(msg.contains("Art.jsonl row 2"), "{msg}");
}

#[test]
fn non_utf8_file() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("latin1.jsonl");
    let mut bytes = Vec::new();
    for id in ["a", "b"] {
        bytes.extend(row(id).to_string().into_bytes());
        bytes.push(b'\n');
    }
    // Line 3 holds "cafe" with the `e` as the Latin-1 byte 0xE9 (invalid in UTF-8).
    let mut line3 = row("c").to_string().replace("second post", "cafe").into_bytes();
    let at = line3.windows(4).position(|w| w == b"cafe").unwrap() + 3;
    line3[at] = 0xE9;
    bytes.extend(line3);
    bytes.push(b'\n');
    std::fs::write(&path, &bytes).unwrap();
    let (err, msg) = load_err(&path);
    assert!(matches!(err, DataError::NotUtf8 { line: 3, .. }), "{msg}");
    assert!(
        msg.contains("latin1.jsonl") && msg.contains("line 3") && msg.contains("UTF-8"),
        "{msg}"
    );
}

#[test]
fn malformed_jsonl_line() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("broken.jsonl");
    let text = format!("{}\n{{\"id\": \"b\", \"question\": \n{}\n", row("a"), row("c"));
    std::fs::write(&path, text).unwrap();
    let (err, msg) = load_err(&path);
    assert!(matches!(err, DataError::MalformedJson { line: 2, .. }), "{msg}");
    assert!(msg.contains("broken.jsonl") && msg.contains("line 2"), "{msg}");
}

#[test]
fn blank_jsonl_line() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("blank.jsonl");
    std::fs::write(&path, format!("{}\n\n{}\n", row("a"), row("b"))).unwrap();
    let (err, msg) = load_err(&path);
    assert!(matches!(err, DataError::MalformedJson { line: 2, .. }), "{msg}");
    assert!(msg.contains("blank line between rows") && msg.contains("only at the end"), "{msg}");
}

#[test]
fn trailing_blank_lines_in_jsonl_load_every_row() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, tail) in [
        ("lf.jsonl", "\n\n\n"),
        ("crlf.jsonl", "\r\n\r\n"),
        ("spaces.jsonl", "\n  \n\t\n"),
        ("none.jsonl", ""),
    ] {
        let path = tmp.path().join(name);
        let sep = if name == "crlf.jsonl" { "\r\n" } else { "\n" };
        std::fs::write(&path, format!("{}{sep}{}{tail}", row("a"), row("b"))).unwrap();
        let data = load(path.to_str().unwrap(), &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
        let ids: Vec<&str> = data.examples.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["a", "b"], "{name}");
        // The hash is of the file as it is, blank lines included.
        assert_eq!(data.hash, common::expected_hash(&[(name, &path)]), "{name}");
    }
    // A file of blank lines only holds no rows: that is still an error, not an empty dataset.
    let path = tmp.path().join("empty.jsonl");
    std::fs::write(&path, "\n\n").unwrap();
    let (err, msg) = load_err(&path);
    assert!(matches!(err, DataError::NoData { .. }), "{msg}");
}

#[test]
fn malformed_json_array_and_wrong_top_level() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("cut.json");
    let full = serde_json::to_string_pretty(&json!([row("a"), row("b")])).unwrap();
    std::fs::write(&path, &full[..full.len() - 40]).unwrap();
    let (err, msg) = load_err(&path);
    assert!(matches!(err, DataError::MalformedJson { .. }), "{msg}");
    assert!(msg.contains("cut.json"), "{msg}");

    let path = tmp.path().join("obj.json");
    std::fs::write(&path, row("a").to_string()).unwrap();
    let (err, msg) = load_err(&path);
    assert!(matches!(err, DataError::MalformedJson { line: 1, .. }), "{msg}");
    assert!(msg.contains("JSON array"), "{msg}");
}

#[test]
fn subset_field_of_wrong_type_or_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let mut bad = row("b");
    bad["subset"] = json!(["Art"]);
    let path = write_jsonl(&tmp.path().join("sub.jsonl"), &[bad]);
    let (_, msg) = load_err(&path);
    names_all(&msg, "sub.jsonl", 1, "subset");

    let mut bad = row("b");
    bad["subset"] = json!("  ");
    let path = write_jsonl(&tmp.path().join("sub2.jsonl"), &[row("a"), bad]);
    let (err, msg) = load_err(&path);
    assert!(matches!(err, DataError::EmptyField { .. }), "{msg}");
    names_all(&msg, "sub2.jsonl", 2, "subset");
}

/// A directory's files are read in parallel, but the error is still the first file's, in load
/// order (PRB config order: Art before Society), whatever file finishes first; the larger
/// Society file is read first.
#[test]
fn the_first_files_error_wins_when_several_files_are_bad() {
    let tmp = tempfile::tempdir().unwrap();
    let mut bad = row("b");
    bad.as_object_mut().unwrap().remove("chosen");
    let society: Vec<_> =
        (0..200).map(|i| if i == 150 { bad.clone() } else { row(&format!("s{i}")) }).collect();
    write_jsonl(&tmp.path().join("Society_and_Culture.jsonl"), &society);
    write_jsonl(&tmp.path().join("Art_and_Entertainment.jsonl"), &[row("a"), bad.clone()]);
    for _ in 0..5 {
        let (err, msg) = load_err(tmp.path());
        assert!(matches!(err, DataError::MissingField { row: 2, .. }), "{msg}");
        names_all(&msg, "Art_and_Entertainment.jsonl", 2, "chosen");
    }
}
