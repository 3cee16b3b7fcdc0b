//! `load_questions`: question rows (input for `prbench build`) from every spec `load` takes,
//! without `chosen`/`rejected`, validated for a build (aspects required).

mod common;

use common::{names, question_row, row, write_json, write_jsonl, write_parquet};
use prbench_data::error::DataError;
use prbench_data::{load, load_questions, RubricAspect};
use serde_json::json;

const PRB_STRINGS: &[&str] = &["id", "question", "narrative", "category"];
const PRB_LISTS: &[(&str, &[&str])] = &[
    ("profile", &["category", "id", "text"]),
    ("rubric_aspects", &["aspect", "evidence", "reason"]),
];

fn spec(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn flat_jsonl_directory_without_pairs_loads_as_questions_and_is_refused_as_pairs() {
    let tmp = tempfile::tempdir().unwrap();
    write_jsonl(&tmp.path().join("Art.jsonl"), &[question_row("a"), question_row("b")]);
    write_jsonl(&tmp.path().join("Society.jsonl"), &[question_row("c")]);
    let ds = load_questions(spec(tmp.path()), &[]).unwrap();
    let ids: Vec<(&str, &str)> =
        ds.examples.iter().map(|e| (e.id.as_str(), e.subset.as_str())).collect();
    assert_eq!(
        ids,
        [
            ("a", "Art_and_Entertainment"),
            ("b", "Art_and_Entertainment"),
            ("c", "Society_and_Culture")
        ]
    );
    let e = &ds.examples[0];
    assert_eq!((e.chosen.as_str(), e.rejected.as_str()), ("", ""));
    assert_eq!(e.question, "question of a?");
    assert_eq!(e.profile[0].text, "first post of a");
    assert_eq!(
        e.rubric_aspects,
        [RubricAspect {
            aspect: "Brevity".into(),
            evidence: "post p1".into(),
            reason: "likes short answers".into()
        }]
    );
    assert_eq!(ds.kind, "prb");
    // Subset selection works as for `load`.
    assert_eq!(load_questions(spec(tmp.path()), &names(&["society"])).unwrap().examples.len(), 1);
    // `load` (pairs) is unchanged: the pair is required.
    let err = load(spec(tmp.path()), &[]).unwrap_err().to_string();
    assert!(err.ends_with("Art.jsonl: row 1: required field `chosen` is missing or null; add it or remove the row"), "{err}");
}

#[test]
fn json_file_with_absent_null_and_present_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let mut with_null = question_row("b");
    with_null["chosen"] = json!(null);
    let path =
        write_json(&tmp.path().join("Lifestyle.json"), &[question_row("a"), with_null, row("c")]);
    let ds = load_questions(spec(&path), &[]).unwrap();
    let answers: Vec<(&str, &str)> =
        ds.examples.iter().map(|e| (e.chosen.as_str(), e.rejected.as_str())).collect();
    assert_eq!(
        answers,
        [("", ""), ("", ""), ("short answer for c", "a very long and winding answer for c")]
    );
    assert!(ds.examples.iter().all(|e| e.subset == "Lifestyle_and_Personal_Development"));
}

#[test]
fn parquet_file_without_answer_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write_parquet(
        &tmp.path().join("Art.parquet"),
        &[question_row("a"), question_row("b")],
        PRB_STRINGS,
        PRB_LISTS,
    );
    let ds = load_questions(spec(&path), &[]).unwrap();
    assert_eq!(ds.examples.len(), 2);
    let e = &ds.examples[1];
    assert_eq!(
        (e.id.as_str(), e.subset.as_str(), e.chosen.as_str(), e.rejected.as_str()),
        ("b", "Art_and_Entertainment", "", "")
    );
    assert_eq!(e.profile.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(), ["p1", "p2"]);
    assert_eq!(e.rubric_aspects[0].aspect, "Brevity");
    assert_eq!(e.narrative, "likes short answers");
    // As pairs the missing column is named, as before.
    let err = load(spec(&path), &[]).unwrap_err();
    assert!(matches!(&err, DataError::MissingColumn { field, .. } if field == "chosen"), "{err}");
    // A present answer column is read (nulls as empty).
    let mut rows = vec![row("a"), question_row("b")];
    rows[1]["rejected"] = json!("only rejected");
    let strings: Vec<&str> = PRB_STRINGS.iter().copied().chain(["chosen", "rejected"]).collect();
    let path = write_parquet(&tmp.path().join("Society.parquet"), &rows, &strings, PRB_LISTS);
    let ds = load_questions(spec(&path), &[]).unwrap();
    assert_eq!(ds.examples[0].chosen, "short answer for a");
    assert_eq!(
        (ds.examples[1].chosen.as_str(), ds.examples[1].rejected.as_str()),
        ("", "only rejected")
    );
}

#[test]
fn psoups_loads_as_questions_with_its_pairs() {
    let tmp = tempfile::tempdir().unwrap();
    let r = json!({
        "prompt": "Name a fruit.", "chosen": "Apple!", "rejected": "Malus domestica.",
        "ground_truth_persona": "Be simple.", "profile": "Likes fruit",
        "Pair-wise Comparative Feedback": [{"prompt": "q", "chosen": "c", "rejected": "r"}],
    });
    for stem in ["friendly_unfriendly", "student_phd"] {
        std::fs::write(tmp.path().join(format!("{stem}.json")), json!([r]).to_string()).unwrap();
    }
    let ds = load_questions(&format!("psoups:{}", spec(tmp.path())), &[]).unwrap();
    assert_eq!(ds.kind, "psoups");
    let ids: Vec<&str> = ds.examples.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["friendly_unfriendly-0000", "student_phd-0000"]);
    assert_eq!(ds.examples[0].chosen, "Apple!");
    assert_eq!(ds.examples[0].rubric_aspects[0].aspect, "Be simple.");
    // A persona that is empty leaves the aspect empty: refused for a build.
    let mut bad = r.clone();
    bad["ground_truth_persona"] = json!(" ");
    std::fs::write(tmp.path().join("student_phd.json"), json!([r, bad]).to_string()).unwrap();
    let err = load_questions(&format!("psoups:{}", spec(tmp.path())), &names(&["phd"]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("student_phd.json: row 2: field `rubric_aspects[0].aspect` is empty"),
        "{err}"
    );
}

/// Writes `rows` as `bad.jsonl` and returns the `load_questions` error message.
fn question_error(rows: &[serde_json::Value]) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let path = write_jsonl(&tmp.path().join("bad.jsonl"), rows);
    let msg = load_questions(spec(&path), &[]).unwrap_err().to_string();
    assert!(msg.starts_with(&path.display().to_string()), "{msg}");
    msg
}

#[test]
fn bad_question_rows_name_file_row_and_field() {
    let mut no_aspects = question_row("b");
    no_aspects["rubric_aspects"] = json!([]);
    let msg = question_error(&[question_row("a"), no_aspects]);
    assert!(
        msg.ends_with("bad.jsonl: row 2: field `rubric_aspects` is empty; `prbench build` needs the rubric aspects to write the chosen/rejected answers: add at least one aspect or remove the row"),
        "{msg}"
    );

    let mut empty_question = question_row("a");
    empty_question["question"] = json!("  ");
    let msg = question_error(&[empty_question]);
    assert!(msg.ends_with("bad.jsonl: row 1: field `question` is empty (or whitespace only); fill it in or remove the row"), "{msg}");

    let mut empty_id = question_row("a");
    empty_id["id"] = json!("");
    assert!(question_error(&[empty_id]).ends_with(
        "row 1: field `id` is empty (or whitespace only); fill it in or remove the row"
    ));

    let msg = question_error(&[question_row("a"), question_row("b"), question_row("a")]);
    assert!(
        msg.contains("bad.jsonl: row 3: field `id` value \"a\" duplicates ")
            && msg.contains("bad.jsonl row 1; ids must be unique across the dataset"),
        "{msg}"
    );

    let mut second_aspect_empty = question_row("a");
    second_aspect_empty["rubric_aspects"] = json!([
        {"aspect": "Brevity", "evidence": "e", "reason": "r"},
        {"aspect": "", "evidence": "e", "reason": "r"},
    ]);
    let msg = question_error(&[second_aspect_empty]);
    assert!(msg.ends_with("bad.jsonl: row 1: field `rubric_aspects[1].aspect` is empty (or whitespace only); fill it in or remove the row"), "{msg}");

    let mut numeric_chosen = question_row("a");
    numeric_chosen["chosen"] = json!(3);
    let msg = question_error(&[numeric_chosen]);
    assert!(msg.ends_with("bad.jsonl: row 1: field `chosen` must be a string but is a number (3); fix the value or remove the row"), "{msg}");

    let mut dup_post = question_row("a");
    dup_post["profile"][1]["id"] = json!("p1");
    let msg = question_error(&[dup_post]);
    assert!(
        msg.contains(
            "bad.jsonl: row 1: field `profile[1].id` value \"p1\" repeats `profile[0].id`"
        ),
        "{msg}"
    );
}

#[test]
fn the_same_rows_as_pairs_keep_the_pair_rules() {
    // Pairs shape does not require aspects (as before) but does require the pair.
    let tmp = tempfile::tempdir().unwrap();
    let mut r = row("a");
    r["rubric_aspects"] = json!([]);
    let path = write_jsonl(&tmp.path().join("Art.jsonl"), &[r.clone()]);
    assert_eq!(load(spec(&path), &[]).unwrap().examples[0].rubric_aspects, []);
    r["chosen"] = r["rejected"].clone();
    write_jsonl(&path, &[r]);
    assert!(matches!(load(spec(&path), &[]).unwrap_err(), DataError::SameAnswers { row: 1, .. }));
}
