//! The P-Soups adapter: real files at ../shared/data/alignx-psoups (skipped when absent; never
//! copied into the repo) and synthetic error cases.

use std::collections::HashSet;
use std::path::PathBuf;

use prbench_data::error::DataError;
use prbench_data::psoups::{
    history_text, load_psoups, load_psoups_with_history, HistoryPair, PERSONA_REASON,
};
use prbench_data::{load, ProfilePost};
use serde_json::json;

fn real_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/alignx-psoups");
    if dir.join("friendly_unfriendly.json").is_file() && dir.join("student_phd.json").is_file() {
        Some(dir)
    } else {
        prbench_testkit::unavailable(format!(
            "P-Soups data not found at {} (the shared data dir is absent)",
            dir.display()
        ));
        None
    }
}

#[test]
fn real_psoups_counts_and_shape() {
    let Some(dir) = real_dir() else { return };
    let spec = format!("psoups:{}", dir.display());
    let ds = load(&spec, &[]).unwrap();
    assert_eq!(ds.kind, "psoups");
    assert_eq!(ds.source, spec);
    assert_eq!(ds.examples.len(), 1200);
    let fu = ds.examples.iter().filter(|e| e.subset == "friendly_unfriendly").count();
    let sp = ds.examples.iter().filter(|e| e.subset == "student_phd").count();
    assert_eq!((fu, sp), (600, 600));
    // friendly_unfriendly first (alphabetical), rows in file order.
    assert_eq!(ds.examples[0].id, "friendly_unfriendly-0000");
    assert_eq!(ds.examples[599].id, "friendly_unfriendly-0599");
    assert_eq!(ds.examples[600].id, "student_phd-0000");
    assert!(ds.examples.iter().all(|e| e.profile.len() == 4));
    assert!(ds.examples.iter().all(|e| e.rubric_aspects.len() == 1));
    let ids: HashSet<&str> = ds.examples.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids.len(), 1200);
    // sha256 of the two files as listed in SOURCE.md, so the hash is over the known bytes.
    let file_sha = |name: &str| {
        use sha2::{Digest, Sha256};
        hex::encode(Sha256::digest(std::fs::read(dir.join(name)).unwrap()))
    };
    assert_eq!(
        file_sha("friendly_unfriendly.json"),
        "c7545cfd23cee20318934e4751474ee966812622a6304abb4170f1bf3bbc2661"
    );
    assert_eq!(
        file_sha("student_phd.json"),
        "a727a99cee6a4328d6f6aa28b36230c71b2a6d033c818a31a60ba25d31f675be"
    );
    assert_eq!(ds.hash.len(), 64);
}

#[test]
fn real_psoups_row_mapping() {
    let Some(dir) = real_dir() else { return };
    let ds = load_psoups(&dir, &["Friendly_Unfriendly".to_string()], "p").unwrap();
    assert_eq!(ds.examples.len(), 600);
    let e = &ds.examples[123];
    // Expected values computed with:
    //   python3 -c 'import json; r=json.load(open("friendly_unfriendly.json"))[123]; print(json.dumps(r, ensure_ascii=False, indent=1))'
    // and the post text as "Q: {p}\nPreferred: {c}\nNot preferred: {r}" of r["Pair-wise Comparative Feedback"][2].
    assert_eq!(e.id, "friendly_unfriendly-0123");
    assert_eq!(e.subset, "friendly_unfriendly");
    assert_eq!(e.category, "friendly_unfriendly");
    assert_eq!(
        e.question,
        "Edit the following sentence to use the word “impelling”. The urge to go was strong."
    );
    assert_eq!(
        e.chosen,
        "The impelling urge to go was strong, like a force field compelling you to the bathroom."
    );
    assert_eq!(e.rejected, "The impelling urge to go was strong.");
    let persona =
        "Generate a response that is friendly, witty, funny, and humorous, like a close friend.";
    assert_eq!(e.narrative, persona);
    assert_eq!(e.rubric_aspects[0].aspect, persona);
    assert_eq!(e.rubric_aspects[0].reason, PERSONA_REASON);
    assert!(e.rubric_aspects[0]
        .evidence
        .starts_with("High Neuroticism, High Extraversion, High Openness, Low Conscientiousness,"));
    assert!(e.rubric_aspects[0]
        .evidence
        .ends_with("Likes entertainment, Likes workplace, Likes humor"));
    assert_eq!(
        e.profile[2],
        ProfilePost {
            id: "3".into(),
            category: "friendly_unfriendly".into(),
            text: "Q: Generate a title for a book about personal growth.\nPreferred: \"Unleashing Your Inner Awesome: A Guide to Personal Growth and Chicken Dances\"\nNot preferred: \"Thrive: Unlocking Your True Potential and Creating a Purposeful Life\"".into(),
        }
    );
    let post_ids: Vec<&str> = e.profile.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(post_ids, ["1", "2", "3", "4"]);
}

fn psoups_row() -> serde_json::Value {
    json!({
        "prompt": "Name a fruit.",
        "chosen": "Apple!",
        "rejected": "Malus domestica.",
        "ground_truth_persona": "Be simple.",
        "profile": "Likes fruit",
        "Pair-wise Comparative Feedback": [{"prompt": "q", "chosen": "c", "rejected": "r"}],
    })
}

#[test]
fn missing_file_unless_subset_selects_the_other() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("student_phd.json"), json!([psoups_row()]).to_string()).unwrap();
    let err = load_psoups(tmp.path(), &[], "p").unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("friendly_unfriendly.json") && msg.contains("missing"), "{msg}");
    let ds = load_psoups(tmp.path(), &["student_phd".to_string()], "p").unwrap();
    assert_eq!(ds.examples.len(), 1);
    let e = &ds.examples[0];
    assert_eq!(e.id, "student_phd-0000");
    assert_eq!(e.profile[0].text, "Q: q\nPreferred: c\nNot preferred: r");
    assert_eq!(e.rubric_aspects[0].evidence, "Likes fruit");
    // A short name selects the one subset it fits; an unknown one lists the names.
    let short = load_psoups(tmp.path(), &["phd".to_string()], "p").unwrap();
    assert_eq!(short.examples, ds.examples);
    let err = load_psoups(tmp.path(), &["kind".to_string()], "p").unwrap_err();
    assert!(matches!(err, DataError::SubsetNotFound { .. }), "{err}");
    assert!(err.to_string().contains("available: friendly_unfriendly, student_phd"), "{err}");
}

#[test]
fn missing_and_mistyped_fields() {
    let tmp = tempfile::tempdir().unwrap();
    let mut bad = psoups_row();
    bad.as_object_mut().unwrap().remove("ground_truth_persona");
    std::fs::write(tmp.path().join("student_phd.json"), json!([psoups_row(), bad]).to_string())
        .unwrap();
    let msg = load_psoups(tmp.path(), &["student_phd".to_string()], "p").unwrap_err().to_string();
    assert!(
        msg.contains("student_phd.json")
            && msg.contains("row 2:")
            && msg.contains("`ground_truth_persona`"),
        "{msg}"
    );

    let mut bad = psoups_row();
    bad["Pair-wise Comparative Feedback"][0]["chosen"] = json!(null);
    std::fs::write(tmp.path().join("student_phd.json"), json!([bad]).to_string()).unwrap();
    let msg = load_psoups(tmp.path(), &["student_phd".to_string()], "p").unwrap_err().to_string();
    assert!(
        msg.contains("row 1:")
            && msg.contains("`Pair-wise Comparative Feedback[0].chosen`")
            && msg.contains("null"),
        "{msg}"
    );
}

#[test]
fn psoups_spec_pointing_at_a_file_says_it_needs_the_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("student_phd.json");
    std::fs::write(&file, "[]").unwrap();
    let err =
        prbench_data::load(&format!("psoups:{}", file.display()), &[]).unwrap_err().to_string();
    assert!(
        err.contains("is not a directory") && err.contains("friendly_unfriendly.json"),
        "{err}"
    );
}

#[test]
fn history_pairs_match_examples_and_profile_posts() {
    let tmp = tempfile::tempdir().unwrap();
    let mut second = psoups_row();
    second["prompt"] = json!("Name a colour.");
    second["Pair-wise Comparative Feedback"] = json!([
        {"prompt": "q1", "chosen": "c1", "rejected": "r1"},
        {"prompt": "q2", "chosen": "c2", "rejected": "r2"},
    ]);
    std::fs::write(tmp.path().join("student_phd.json"), json!([psoups_row(), second]).to_string())
        .unwrap();
    std::fs::write(tmp.path().join("friendly_unfriendly.json"), json!([psoups_row()]).to_string())
        .unwrap();
    let (ds, hist) = load_psoups_with_history(tmp.path(), &[], "p").unwrap();
    let ids: Vec<&str> = hist.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["friendly_unfriendly-0000", "student_phd-0000", "student_phd-0001"]);
    for (e, h) in ds.examples.iter().zip(&hist) {
        assert_eq!(e.id, h.id);
        assert_eq!(e.profile.len(), h.pairs.len());
        for (post, p) in e.profile.iter().zip(&h.pairs) {
            assert_eq!(post.text, history_text(&p.prompt, &p.chosen, &p.rejected));
        }
    }
    assert_eq!(
        hist[2].pairs[1],
        HistoryPair { prompt: "q2".into(), chosen: "c2".into(), rejected: "r2".into() }
    );
    // The plain loader gives the same dataset.
    assert_eq!(load_psoups(tmp.path(), &[], "p").unwrap().examples, ds.examples);
}

#[test]
fn real_psoups_history_pairs() {
    let Some(dir) = real_dir() else { return };
    let (ds, hist) = load_psoups_with_history(&dir, &[], "p").unwrap();
    assert_eq!(hist.len(), 1200);
    assert!(hist.iter().all(|h| h.pairs.len() == 4));
    assert!(ds.examples.iter().zip(&hist).all(|(e, h)| e.id == h.id));
    // friendly_unfriendly.json row 123, "Pair-wise Comparative Feedback"[2] (see the mapping test).
    let p = &hist[123].pairs[2];
    assert_eq!(p.prompt, "Generate a title for a book about personal growth.");
    assert_eq!(
        p.rejected,
        "\"Thrive: Unlocking Your True Potential and Creating a Purposeful Life\""
    );
}
