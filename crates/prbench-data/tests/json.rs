//! JSON / JSONL loading, directory discovery and subset selection.

mod common;

use common::{expected_hash, names, row, write_json, write_jsonl};
use prbench_data::error::DataError;
use prbench_data::load;
use serde_json::json;

/// A flat directory: Art.jsonl (2 rows), society_and_culture.json (1 row), zeta.jsonl (1 row,
/// not a PRB config), plus files the loader must ignore.
fn flat_dir() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write_jsonl(&d.join("zeta.jsonl"), &[row("z1")]);
    write_jsonl(&d.join("Art.jsonl"), &[row("a1"), row("a2")]);
    write_json(&d.join("society_and_culture.json"), &[row("s1")]);
    std::fs::write(d.join("README.md"), "not data").unwrap();
    std::fs::write(d.join(".hidden.jsonl"), "garbage").unwrap();
    std::fs::create_dir(d.join("empty_subdir")).unwrap();
    tmp
}

fn ids(ds: &prbench_data::Dataset) -> Vec<&str> {
    ds.examples.iter().map(|e| e.id.as_str()).collect()
}

#[test]
fn flat_directory_orders_prb_subsets_first() {
    let tmp = flat_dir();
    let spec = tmp.path().to_str().unwrap();
    let ds = load(spec, &[]).unwrap();
    assert_eq!(ids(&ds), ["a1", "a2", "s1", "z1"]);
    let subsets: Vec<&str> = ds.examples.iter().map(|e| e.subset.as_str()).collect();
    assert_eq!(
        subsets,
        ["Art_and_Entertainment", "Art_and_Entertainment", "Society_and_Culture", "zeta"]
    );
    let e = &ds.examples[0];
    assert_eq!(e.question, "question of a1?");
    assert_eq!(e.profile[0].text, "first post of a1");
    assert_eq!(e.rubric_aspects[0].aspect, "Brevity");
    assert_eq!(e.chosen, "short answer for a1");
    let d = tmp.path();
    assert_eq!(
        ds.hash,
        expected_hash(&[
            ("Art.jsonl", &d.join("Art.jsonl")),
            ("society_and_culture.json", &d.join("society_and_culture.json")),
            ("zeta.jsonl", &d.join("zeta.jsonl")),
        ])
    );
}

#[test]
fn subset_selection_long_short_any_case() {
    let tmp = flat_dir();
    let spec = tmp.path().to_str().unwrap();
    assert_eq!(ids(&load(spec, &names(&["ART"])).unwrap()), ["a1", "a2"]);
    assert_eq!(ids(&load(spec, &names(&["art_and_entertainment"])).unwrap()), ["a1", "a2"]);
    // Result keeps load order, not request order.
    assert_eq!(ids(&load(spec, &names(&["society", "Art"])).unwrap()), ["a1", "a2", "s1"]);
    assert_eq!(ids(&load(spec, &names(&["ZETA"])).unwrap()), ["z1"]);
    let ds = load(spec, &names(&["Society_and_Culture"])).unwrap();
    let d = tmp.path();
    assert_eq!(
        ds.hash,
        expected_hash(&[("society_and_culture.json", &d.join("society_and_culture.json"))])
    );
}

#[test]
fn absent_subset_lists_the_available_ones() {
    let tmp = flat_dir();
    let err = load(tmp.path().to_str().unwrap(), &names(&["Art", "lifestyle"])).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(&err, DataError::SubsetNotFound { requested, .. } if requested == "lifestyle"),
        "{msg}"
    );
    assert!(msg.contains("Art_and_Entertainment, Society_and_Culture, zeta"), "{msg}");
}

#[test]
fn single_file_rows_may_carry_their_subset() {
    let tmp = tempfile::tempdir().unwrap();
    let mut r1 = row("x1");
    r1["subset"] = json!("zeta");
    let mut r2 = row("x2");
    r2["subset"] = json!("society");
    let r3 = row("x3"); // no field: file stem
    let mut r4 = row("x4");
    r4["subset"] = json!("ART");
    let path = write_jsonl(&tmp.path().join("mixed.jsonl"), &[r1, r2, r3, r4]);
    let ds = load(path.to_str().unwrap(), &[]).unwrap();
    let got: Vec<(&str, &str)> =
        ds.examples.iter().map(|e| (e.id.as_str(), e.subset.as_str())).collect();
    assert_eq!(
        got,
        [
            ("x4", "Art_and_Entertainment"),
            ("x2", "Society_and_Culture"),
            ("x3", "mixed"),
            ("x1", "zeta")
        ]
    );
    assert_eq!(ds.hash, expected_hash(&[("mixed.jsonl", &path)]));
    let only = load(path.to_str().unwrap(), &names(&["mixed", "art"])).unwrap();
    assert_eq!(ids(&only), ["x4", "x3"]);
    let err = load(path.to_str().unwrap(), &names(&["Lifestyle"])).unwrap_err();
    assert!(
        err.to_string().contains("Art_and_Entertainment, Society_and_Culture, mixed, zeta"),
        "{err}"
    );
}

#[test]
fn json_array_file_and_unknown_fields() {
    let tmp = tempfile::tempdir().unwrap();
    let mut r = row("j1");
    r["extra_metadata"] = json!({"anything": [1, 2]});
    let path = write_json(&tmp.path().join("Lifestyle.json"), &[r, row("j2")]);
    let ds = load(path.to_str().unwrap(), &[]).unwrap();
    assert_eq!(ids(&ds), ["j1", "j2"]);
    assert_eq!(ds.examples[0].subset, "Lifestyle_and_Personal_Development");
}

#[test]
fn directory_row_subset_must_match_its_file() {
    let tmp = tempfile::tempdir().unwrap();
    let mut r = row("m2");
    r["subset"] = json!("Society");
    let mut ok = row("m1");
    ok["subset"] = json!("art"); // agrees with Art.jsonl
    write_jsonl(&tmp.path().join("Art.jsonl"), &[ok, r]);
    let err = load(tmp.path().to_str().unwrap(), &[]).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, DataError::SubsetMismatch { row: 2, .. }), "{msg}");
    assert!(
        msg.contains("Art.jsonl") && msg.contains("row 2") && msg.contains("`subset`"),
        "{msg}"
    );
}

#[test]
fn two_files_for_one_subset_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    write_jsonl(&tmp.path().join("Art.jsonl"), &[row("a")]);
    write_json(&tmp.path().join("Art_and_Entertainment.json"), &[row("b")]);
    let msg = load(tmp.path().to_str().unwrap(), &[]).unwrap_err().to_string();
    assert!(msg.contains("Art.jsonl") && msg.contains("Art_and_Entertainment.json"), "{msg}");
}

#[test]
fn empty_directory_missing_path_and_unknown_extension() {
    let tmp = tempfile::tempdir().unwrap();
    let err = load(tmp.path().to_str().unwrap(), &[]).unwrap_err();
    assert!(matches!(err, DataError::NoData { .. }), "{err}");

    let missing = tmp.path().join("nope");
    let err = load(missing.to_str().unwrap(), &[]).unwrap_err();
    assert!(matches!(err, DataError::BadSpec { .. }), "{err}");
    assert!(err.to_string().contains("nope"), "{err}");

    let csv = tmp.path().join("data.csv");
    std::fs::write(&csv, "a,b").unwrap();
    let err = load(csv.to_str().unwrap(), &[]).unwrap_err();
    assert!(err.to_string().contains(".jsonl"), "{err}");

    let empty = tmp.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let err = load(empty.to_str().unwrap(), &[]).unwrap_err();
    assert!(matches!(err, DataError::NoData { .. }), "{err}");
}

#[test]
fn crlf_and_bom_are_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("w.jsonl");
    let text = format!("\u{feff}{}\r\n{}\r\n", row("c1"), row("c2"));
    std::fs::write(&path, text).unwrap();
    let ds = load(path.to_str().unwrap(), &[]).unwrap();
    assert_eq!(ids(&ds), ["c1", "c2"]);
}
