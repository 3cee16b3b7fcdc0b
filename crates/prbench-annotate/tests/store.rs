//! The store: resuming, refusing other data or settings, tokens kept only as hashes, and the
//! export's rows and labels.

mod common;

use common::{examples, new_store};
use prbench_annotate::export::{self, Format};
use prbench_annotate::{AnnotateError, AnswerRating, Opened, Store, StoreSpec, Submission};

fn answer(s: u8, comment: &str) -> AnswerRating {
    AnswerRating {
        factuality: s,
        relevance: s,
        helpfulness: s,
        rubric_fit: s,
        comment: comment.into(),
    }
}

#[test]
fn a_reopened_folder_resumes_and_other_settings_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ex = examples(4);
    let (store, _) = new_store(dir.path(), &ex, &["ann", "bob"], 2);
    let sub = Submission { answers: [answer(5, "a"), answer(2, "b")], better: 1 };
    store.submit("ann", 1, &sub).unwrap().unwrap();
    drop(store);

    let names: Vec<String> = vec!["ann".into(), "bob".into()];
    let same = StoreSpec {
        examples: &ex,
        source: "test",
        dataset_hash: "hash-1",
        annotators: &names,
        per_item: 2,
        seed: 7,
        selection: "all items",
    };
    let (store, opened) = Store::open_or_create(dir.path(), &same).unwrap();
    assert!(matches!(opened, Opened::Resumed));
    assert_eq!(store.progress("ann").unwrap().next, Some(2));
    assert_eq!(store.ratings().unwrap()[0].submission, sub);
    drop(store);

    let other_names: Vec<String> = vec!["ann".into(), "cat".into()];
    let cases: Vec<(StoreSpec, &str)> = vec![
        (StoreSpec { dataset_hash: "hash-2", ..same.clone() }, "sha256 hash-1"),
        (
            StoreSpec { annotators: &other_names, ..same.clone() },
            "--annotators ann,bob, not ann,cat",
        ),
        (StoreSpec { per_item: 1, ..same.clone() }, "--per-item 2, not 1"),
        (StoreSpec { seed: 8, ..same.clone() }, "--seed 7, not 8"),
        (StoreSpec { selection: "--limit 1", ..same.clone() }, "all items, not --limit 1"),
    ];
    // While a server holds the folder, a second one is refused.
    let (held, _) = Store::open_or_create(dir.path(), &same).unwrap();
    let e = Store::open_or_create(dir.path(), &same).unwrap_err();
    assert!(
        e.to_string().contains("another `prbench annotate serve` is serving this folder"),
        "{e}"
    );
    drop(held);
    for (spec, want) in cases {
        let e = Store::open_or_create(dir.path(), &spec).unwrap_err();
        assert!(matches!(e, AnnotateError::Mismatch { .. }), "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains(want) && msg.contains("annotate.sqlite") && msg.contains("--out"),
            "{msg}"
        );
    }
}

#[test]
fn tokens_are_128_bit_and_only_their_hashes_are_stored() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, tokens) = new_store(dir.path(), &examples(2), &["ann", "bob"], 1);
    let mut distinct = std::collections::HashSet::new();
    for (name, t) in &tokens {
        assert_eq!(t.len(), 32, "128 bits as hex");
        assert!(t.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(store.annotator_for_token(t), Some(name.as_str()));
        distinct.insert(t.clone());
    }
    assert_eq!(distinct.len(), 2);
    assert_eq!(store.annotator_for_token(&"f".repeat(32)), None);
    assert_eq!(store.annotator_for_token(""), None);
    let bytes = std::fs::read(store.path()).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    for (_, t) in &tokens {
        assert!(!text.contains(t.as_str()), "a token is stored in clear");
    }
    let new = store.reissue_tokens().unwrap();
    assert_eq!(store.annotator_for_token(&tokens[0].1), None, "an old link stops working");
    assert_eq!(store.annotator_for_token(&new[0].1), Some("ann"));
}

#[test]
fn export_has_one_row_per_annotator_item_answer_dimension_with_the_true_label() {
    let dir = tempfile::tempdir().unwrap();
    let ex = examples(2);
    let (store, _) = new_store(dir.path(), &ex, &["ann"], 1);
    // Answer 1 gets 5s, answer 2 gets 2s; the rater picks answer 2.
    let v = store.item("ann", 1).unwrap().unwrap();
    store
        .submit(
            "ann",
            1,
            &Submission { answers: [answer(5, "one, \"quoted\""), answer(2, "")], better: 2 },
        )
        .unwrap();
    let ratings = store.ratings().unwrap();
    let rows = export::rows(&ratings);
    assert_eq!(rows.len(), 8);
    let e = ex.iter().find(|e| e.id == v.item_id).unwrap();
    let chosen_first = v.answers[0] == e.chosen;
    for r in &rows {
        let is_answer_1 = r.shown_as == 1;
        assert_eq!(r.label == "chosen", is_answer_1 == chosen_first, "{r:?}");
        assert_eq!(r.score, if is_answer_1 { 5 } else { 2 });
        assert_eq!(r.preferred, u8::from(!is_answer_1));
        assert_eq!(r.unit, format!("{}/{}", v.item_id, r.label));
    }
    let mut csv = Vec::new();
    export::write(&rows, Format::Csv, &mut csv, std::path::Path::new("x.csv")).unwrap();
    let csv = String::from_utf8(csv).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("annotator,unit,dimension,score,item_id,subset,label,shown_as,preferred,comment,revision,updated_at")
    );
    let first = lines.next().unwrap();
    // Rows come chosen first: this is the chosen answer's factuality.
    assert!(first.starts_with(&format!("ann,{}/chosen,factuality,", v.item_id)), "{first}");
    if chosen_first {
        assert!(first.contains(",5,") && first.contains("\"one, \"\"quoted\"\"\""), "{first}");
    } else {
        assert!(first.contains(",2,") && first.contains(",1,"), "{first}");
    }
    let mut jsonl = Vec::new();
    export::write(&rows, Format::Jsonl, &mut jsonl, std::path::Path::new("x.jsonl")).unwrap();
    let parsed: Vec<serde_json::Value> = String::from_utf8(jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(parsed.len(), 8);
    assert_eq!(parsed[0]["dimension"], "factuality");
}
