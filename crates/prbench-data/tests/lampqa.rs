//! The `lampqa:DIR[#SPLIT]` adapter: LaMP-QA question rows in the download script's JSON layout
//! and the Hugging Face parquet layout, split selection, the documented defaults, and the
//! refusal to load LaMP-QA as benchmark pairs.

mod common;

use std::path::Path;

use common::{expected_hash, names, write_json, write_jsonl, write_parquet};
use prbench_data::error::DataError;
use prbench_data::lampqa::KIND_LAMPQA;
use prbench_data::{load, load_questions, ProfilePost, RubricAspect};
use serde_json::{json, Value};

const ART: &str = "Art_and_Entertainment";
const LIFE: &str = "Lifestyle_and_Personal_Development";
const SOC: &str = "Society_and_Culture";

/// A LaMP-QA row as the public code reads it: profile posts without `category`, no row
/// `category`, no chosen/rejected; plus an extra field that must be ignored.
fn lamp_row(id: &str) -> Value {
    json!({
        "id": id,
        "question": format!("How do I start {id}?"),
        "narrative": format!("I am new to {id} and on a budget."),
        "rubric_aspects": [
            {"aspect": "Budget", "reason": "says money is tight", "evidence": "on a budget"},
            {"aspect": "Beginner steps", "reason": "is new", "evidence": "I am new"}
        ],
        "profile": [
            {"id": format!("{id}-1"), "text": "first post"},
            {"id": format!("{id}-2"), "text": "second post"}
        ],
        "extra_field": 7,
    })
}

fn lampqa(dir: &Path, split: Option<&str>) -> String {
    match split {
        Some(s) => format!("lampqa:{}#{s}", dir.display()),
        None => format!("lampqa:{}", dir.display()),
    }
}

fn ids(ds: &prbench_data::Dataset) -> Vec<(&str, &str)> {
    ds.examples.iter().map(|e| (e.id.as_str(), e.subset.as_str())).collect()
}

#[test]
fn download_script_layout_reads_the_test_split_with_documented_defaults() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let mut with_category = lamp_row("s1");
    with_category["category"] = json!("society/history");
    with_category["profile"][0]["category"] = json!("history");
    let art = write_json(&d.join(format!("{ART}_test.json")), &[lamp_row("a1"), lamp_row("a2")]);
    let soc = write_jsonl(&d.join(format!("{SOC}_test.jsonl")), &[with_category]);
    write_json(&d.join(format!("{ART}_train.json")), &[lamp_row("t1")]);
    write_json(&d.join(format!("{LIFE}_validation.json")), &[lamp_row("v1")]);
    std::fs::write(d.join("README.md"), "notes").unwrap();

    let ds = load_questions(&lampqa(d, None), &[]).unwrap();
    assert_eq!(ds.kind, KIND_LAMPQA);
    assert_eq!(ds.source, lampqa(d, None));
    assert_eq!(ids(&ds), [("a1", ART), ("a2", ART), ("s1", SOC)]);
    let a1 = &ds.examples[0];
    assert_eq!(a1.question, "How do I start a1?");
    assert_eq!(a1.narrative, "I am new to a1 and on a budget.");
    assert_eq!(a1.category, ART, "row category defaults to the config name");
    assert_eq!(
        a1.profile,
        [
            ProfilePost { id: "a1-1".into(), category: String::new(), text: "first post".into() },
            ProfilePost { id: "a1-2".into(), category: String::new(), text: "second post".into() },
        ],
        "post category defaults to empty"
    );
    assert_eq!(
        a1.rubric_aspects[1],
        RubricAspect {
            aspect: "Beginner steps".into(),
            evidence: "I am new".into(),
            reason: "is new".into()
        }
    );
    assert_eq!((a1.chosen.as_str(), a1.rejected.as_str()), ("", ""));
    let s1 = &ds.examples[2];
    assert_eq!(s1.category, "society/history");
    assert_eq!(s1.profile[0].category, "history");
    assert_eq!(
        ds.hash,
        expected_hash(&[(&format!("{ART}_test.json"), &art), (&format!("{SOC}_test.jsonl"), &soc)])
    );
    // Subset selection by short name reads only that config.
    let only = load_questions(&lampqa(d, None), &names(&["society"])).unwrap();
    assert_eq!(ids(&only), [("s1", SOC)]);
    assert_eq!(only.hash, expected_hash(&[(&format!("{SOC}_test.jsonl"), &soc)]));
    // Other splits by `#SPLIT`.
    assert_eq!(ids(&load_questions(&lampqa(d, Some("validation")), &[]).unwrap()), [("v1", LIFE)]);
    assert_eq!(ids(&load_questions(&lampqa(d, Some("train")), &[]).unwrap()), [("t1", ART)]);
}

const LAMP_STRINGS: &[&str] = &["id", "question", "narrative"];
const LAMP_LISTS: &[(&str, &[&str])] =
    &[("profile", &["id", "text"]), ("rubric_aspects", &["aspect", "reason", "evidence"])];

#[test]
fn hugging_face_parquet_layouts_and_split_selection() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let life = d.join(LIFE);
    std::fs::create_dir_all(&life).unwrap();
    let test_file = write_parquet(
        &life.join("test-00000-of-00001.parquet"),
        &[lamp_row("l1"), lamp_row("l2")],
        LAMP_STRINGS,
        LAMP_LISTS,
    );
    write_parquet(
        &life.join("validation-00000-of-00001.parquet"),
        &[lamp_row("lv")],
        LAMP_STRINGS,
        LAMP_LISTS,
    );
    write_parquet(
        &life.join("train-00000-of-00001.parquet"),
        &[lamp_row("lt")],
        LAMP_STRINGS,
        LAMP_LISTS,
    );
    // The hub's parquet-converter layout: <config>/<split>/*.parquet.
    std::fs::create_dir_all(d.join(ART).join("validation")).unwrap();
    write_parquet(
        &d.join(ART).join("validation").join("0000.parquet"),
        &[lamp_row("av")],
        LAMP_STRINGS,
        LAMP_LISTS,
    );

    let ds = load_questions(&lampqa(d, None), &[]).unwrap();
    assert_eq!(ids(&ds), [("l1", LIFE), ("l2", LIFE)]);
    let l2 = &ds.examples[1];
    assert_eq!(l2.category, LIFE);
    assert_eq!(
        l2.profile[1],
        ProfilePost { id: "l2-2".into(), category: String::new(), text: "second post".into() }
    );
    assert_eq!(
        l2.rubric_aspects[0],
        RubricAspect {
            aspect: "Budget".into(),
            evidence: "on a budget".into(),
            reason: "says money is tight".into()
        }
    );
    assert_eq!(
        ds.hash,
        expected_hash(&[(&format!("{LIFE}/test-00000-of-00001.parquet"), &test_file)])
    );

    let val = load_questions(&lampqa(d, Some("validation")), &[]).unwrap();
    assert_eq!(ids(&val), [("av", ART), ("lv", LIFE)]);
}

#[test]
fn parquet_and_json_errors_name_the_same_field_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let mut bad = lamp_row("b");
    bad["rubric_aspects"][0].as_object_mut().unwrap().remove("evidence");
    let json_path = write_json(&d.join(format!("{ART}_test.json")), &[lamp_row("a"), bad.clone()]);
    let err = load_questions(&lampqa(d, None), &[]).unwrap_err().to_string();
    assert_eq!(
        err,
        format!("{}: row 2: required field `rubric_aspects[0].evidence` is missing or null; add it or remove the row", json_path.display())
    );
    std::fs::remove_file(&json_path).unwrap();
    std::fs::create_dir(d.join(ART)).unwrap();
    let pq = write_parquet(
        &d.join(ART).join("test-00000-of-00001.parquet"),
        &[lamp_row("a"), bad],
        LAMP_STRINGS,
        LAMP_LISTS,
    );
    let err = load_questions(&lampqa(d, None), &[]).unwrap_err().to_string();
    assert_eq!(
        err,
        format!("{}: row 2: required field `rubric_aspects[0].evidence` is missing or null; add it or remove the row", pq.display())
    );
    // Question validation: an aspect-less row is refused for a build.
    let mut no_aspects = lamp_row("c");
    no_aspects["rubric_aspects"] = json!([]);
    write_parquet(&pq, &[lamp_row("a"), no_aspects], LAMP_STRINGS, LAMP_LISTS);
    let err = load_questions(&lampqa(d, None), &[]).unwrap_err();
    assert!(matches!(err, DataError::NoAspects { row: 2, .. }), "{err}");
}

#[test]
fn spec_and_layout_errors_say_what_was_expected() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let err = load_questions(&lampqa(d, Some("dev")), &[]).unwrap_err().to_string();
    assert!(
        err.contains("unknown LaMP-QA split `dev`") && err.contains("train, validation, test"),
        "{err}"
    );

    write_json(&d.join(format!("{ART}_train.json")), &[lamp_row("t1")]);
    let err = load_questions(&lampqa(d, None), &[]).unwrap_err();
    assert!(matches!(err, DataError::NoData { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("no LaMP-QA files of split `test` found: expected <config>/test-*.parquet or <config>/test/*.parquet (Hugging Face layout), or <config>_test.json / <config>_test.jsonl"),
        "{msg}"
    );

    let missing = d.join("nope");
    let err = load_questions(&lampqa(&missing, None), &[]).unwrap_err().to_string();
    assert!(err.contains("is not a directory"), "{err}");

    // One config in both layouts.
    write_json(&d.join(format!("{ART}_test.json")), &[lamp_row("a")]);
    std::fs::create_dir(d.join(ART)).unwrap();
    write_parquet(
        &d.join(ART).join("test-00000-of-00001.parquet"),
        &[lamp_row("a")],
        LAMP_STRINGS,
        LAMP_LISTS,
    );
    let err = load_questions(&lampqa(d, None), &[]).unwrap_err();
    assert!(matches!(&err, DataError::DuplicateSubset { subset, .. } if subset == ART), "{err}");
}

#[test]
fn load_as_pairs_refuses_lampqa_and_points_at_build() {
    let tmp = tempfile::tempdir().unwrap();
    write_json(&tmp.path().join(format!("{ART}_test.json")), &[lamp_row("a")]);
    let spec = lampqa(tmp.path(), None);
    let err = load(&spec, &[]).unwrap_err();
    assert!(matches!(err, DataError::BadSpec { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        format!("spec `{spec}`: LaMP-QA rows have no chosen/rejected pair to evaluate; build a benchmark from them first with `prbench build --data lampqa:DIR`")
    );
}
