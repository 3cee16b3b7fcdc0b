//! The optional `user_id` of the PRB schema: PRB data has none (`None` on every example, and the
//! export writes PRB's columns only), other data may carry one per row in JSON, JSONL and
//! parquet, and it survives the export and a load.

mod common;

use common::{fixture, row, tricky_examples, write_json, write_jsonl, write_parquet};
use prbench_data::{load, write_hf_layout};
use serde_json::{json, Value};

const STRINGS: [&str; 6] = ["id", "question", "narrative", "category", "chosen", "rejected"];
const LISTS: [(&str, &[&str]); 2] = [
    ("profile", &["category", "id", "text"]),
    ("rubric_aspects", &["aspect", "evidence", "reason"]),
];

fn with_user(id: &str, user: Value) -> Value {
    let mut r = row(id);
    r.as_object_mut().unwrap().insert("user_id".into(), user);
    r
}

#[test]
fn prb_data_has_no_user_id() {
    let data = load(fixture("prb_hf").to_str().unwrap(), &[]).unwrap();
    assert!(!data.examples.is_empty());
    assert!(data.examples.iter().all(|e| e.user_id.is_none()));
}

#[test]
fn json_and_jsonl_rows_may_carry_a_user_id() {
    let tmp = tempfile::tempdir().unwrap();
    let rows = [with_user("a", json!("user7")), row("b"), with_user("c", Value::Null)];
    for path in [
        write_jsonl(&tmp.path().join("x.jsonl"), &rows),
        write_json(&tmp.path().join("y.json"), &rows),
    ] {
        let data = load(path.to_str().unwrap(), &[]).unwrap();
        let ids: Vec<Option<&str>> = data.examples.iter().map(|e| e.user_id.as_deref()).collect();
        assert_eq!(ids, [Some("user7"), None, None], "{}", path.display());
    }
}

#[test]
fn a_bad_user_id_is_named_with_file_row_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write_jsonl(&tmp.path().join("x.jsonl"), &[row("a"), with_user("b", json!(7))]);
    let err = load(path.to_str().unwrap(), &[]).unwrap_err().to_string();
    assert_eq!(
        err,
        format!("{}: row 2: field `user_id` must be a string but is a number (7); fix the value or remove the row", path.display())
    );
    let path = write_jsonl(&tmp.path().join("y.jsonl"), &[with_user("a", json!("  "))]);
    let err = load(path.to_str().unwrap(), &[]).unwrap_err().to_string();
    assert_eq!(
        err,
        format!("{}: row 1: field `user_id` is empty (or whitespace only); fill it in or remove the row", path.display())
    );
}

#[test]
fn parquet_reads_an_optional_user_id_column() {
    let tmp = tempfile::tempdir().unwrap();
    let rows = [with_user("a", json!("u1")), row("b")];
    let mut strings = STRINGS.to_vec();
    strings.push("user_id");
    let path = write_parquet(&tmp.path().join("x.parquet"), &rows, &strings, &LISTS);
    let data = load(path.to_str().unwrap(), &[]).unwrap();
    let ids: Vec<Option<&str>> = data.examples.iter().map(|e| e.user_id.as_deref()).collect();
    assert_eq!(ids, [Some("u1"), None], "a null value is no user id");

    let path = write_parquet(
        &tmp.path().join("y.parquet"),
        &[row("a"), with_user("b", json!(""))],
        &strings,
        &LISTS,
    );
    let err = load(path.to_str().unwrap(), &[]).unwrap_err().to_string();
    assert_eq!(
        err,
        format!("{}: row 2: field `user_id` is empty (or whitespace only); fill it in or remove the row", path.display())
    );
}

#[test]
fn user_ids_survive_the_export_and_prb_exports_have_no_user_id_column() {
    let tmp = tempfile::tempdir().unwrap();
    let configs = write_hf_layout(&tmp.path().join("prb"), &tricky_examples()).unwrap();
    assert!(configs.iter().all(|c| !c.user_id_column), "PRB data keeps PRB's columns");

    let mut examples = tricky_examples();
    examples[1].user_id = Some("user584".into());
    examples[2].user_id = Some("ü".into());
    let dir = tmp.path().join("with_users");
    let configs = write_hf_layout(&dir, &examples).unwrap();
    assert!(configs.iter().all(|c| c.user_id_column), "each config has one example with a user id");
    let back = load(dir.to_str().unwrap(), &[]).unwrap();
    let got: Vec<(&str, Option<&str>)> =
        back.examples.iter().map(|e| (e.id.as_str(), e.user_id.as_deref())).collect();
    assert_eq!(
        got,
        [("art-001", Some("user584")), ("art-002", None), ("pf-001", None), ("pf-002", Some("ü"))]
    );
}
