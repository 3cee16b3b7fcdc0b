//! Ranked dataset files: write → load gives the same examples with profiles in ranked order and
//! `Dataset::profile_ranking` set; edited rankings are refused with the file, row and field.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use prbench_data::load::load;
use prbench_data::Dataset;
use prbench_eval::retrieve::bm25::Bm25Retriever;
use prbench_eval::retrieve::ranked::write_ranked_jsonl;
use prbench_eval::retrieve::Retriever;
use serde_json::Value;

fn sample_dir() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/sample").display().to_string()
}

fn rows(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn write_rows(path: &Path, rows: &[Value]) {
    let text: String = rows.iter().map(|r| r.to_string() + "\n").collect();
    std::fs::write(path, text).unwrap();
}

fn ranked_sample(dir: &Path) -> (Dataset, PathBuf, String) {
    let data = load(&sample_dir(), &[]).unwrap();
    let retriever = Bm25Retriever::default();
    let rankings = retriever.rank_all(&data.examples).unwrap();
    let out = dir.join("ranked.jsonl");
    write_ranked_jsonl(&out, &data, &rankings, &retriever.describe()).unwrap();
    (data, out, retriever.describe())
}

#[test]
fn round_trip_keeps_examples_and_reorders_profiles() {
    let tmp = tempfile::tempdir().unwrap();
    let (orig, out, describe) = ranked_sample(tmp.path());
    let back = load(out.to_str().unwrap(), &[]).unwrap();
    assert_eq!(back.profile_ranking.as_deref(), Some(describe.as_str()));
    assert_eq!(back.kind, "prb");
    assert!(orig.profile_ranking.is_none());
    assert_eq!(back.examples.len(), orig.examples.len());
    let raw = rows(&out);
    let mut reordered = 0;
    for ((a, b), row) in orig.examples.iter().zip(&back.examples).zip(&raw) {
        // Everything but the profile order is unchanged, subset included.
        let mut b_sorted = b.clone();
        let pos: HashMap<&str, usize> =
            a.profile.iter().enumerate().map(|(i, p)| (p.id.as_str(), i)).collect();
        b_sorted.profile.sort_by_key(|p| pos[p.id.as_str()]);
        assert_eq!(&b_sorted, a);
        // The profile is in the file's ranking order, each id on its own text.
        let ids: Vec<&str> = row["profile_ranking"]["post_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(b.profile.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(), ids);
        let by_id: HashMap<&str, &str> =
            a.profile.iter().map(|p| (p.id.as_str(), p.text.as_str())).collect();
        assert!(b.profile.iter().all(|p| by_id[p.id.as_str()] == p.text));
        // Scores are best first and match BM25 recomputed on the loaded (ranked) profile.
        let scores: Vec<f64> = row["profile_ranking"]["scores"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert!(scores.windows(2).all(|w| w[0] >= w[1]));
        let texts: Vec<&str> = b.profile.iter().map(|p| p.text.as_str()).collect();
        let again = Bm25Retriever::default().score_posts(&b.question, &texts);
        for (x, y) in scores.iter().zip(&again) {
            assert!((x - y).abs() < 1e-6);
        }
        assert_eq!(row["dataset_kind"], "prb");
        assert_eq!(row["subset"], a.subset.as_str());
        if ids != a.profile.iter().map(|p| p.id.as_str()).collect::<Vec<_>>() {
            reordered += 1;
        }
    }
    assert!(reordered >= 6, "BM25 reordered only {reordered} of 12 sample profiles");
}

#[test]
fn tampered_post_ids_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, out, _) = ranked_sample(tmp.path());
    let good = rows(&out);

    // The ids re-attached in another order than the profile (defect 10).
    let mut bad = good.clone();
    bad[2]["profile_ranking"]["post_ids"].as_array_mut().unwrap().swap(0, 1);
    let f = tmp.path().join("swapped.jsonl");
    write_rows(&f, &bad);
    let e = load(f.to_str().unwrap(), &[]).unwrap_err().to_string();
    assert!(
        e.contains("swapped.jsonl")
            && e.contains("row 3")
            && e.contains("profile_ranking.post_ids")
            && e.contains("position 0"),
        "{e}"
    );

    // A post dropped from the ranking.
    let mut bad = good.clone();
    bad[0]["profile_ranking"]["post_ids"].as_array_mut().unwrap().pop();
    write_rows(&f, &bad);
    let e = load(f.to_str().unwrap(), &[]).unwrap_err().to_string();
    assert!(e.contains("row 1") && e.contains("profile_ranking.post_ids"), "{e}");

    // Scores not best first.
    let mut bad = good.clone();
    bad[1]["profile_ranking"]["scores"].as_array_mut().unwrap().reverse();
    write_rows(&f, &bad);
    let e = load(f.to_str().unwrap(), &[]).unwrap_err().to_string();
    assert!(
        e.contains("row 2") && e.contains("profile_ranking.scores") && e.contains("best first"),
        "{e}"
    );

    // Some rows ranked, others not.
    let mut bad = good.clone();
    bad[4].as_object_mut().unwrap().remove("profile_ranking");
    write_rows(&f, &bad);
    let e = load(f.to_str().unwrap(), &[]).unwrap_err().to_string();
    assert!(
        e.contains("row 5")
            && e.contains("`profile_ranking` is missing")
            && e.contains("row 1 has it"),
        "{e}"
    );

    // Two retrievers in one file.
    let mut bad = good.clone();
    bad[7]["profile_ranking"]["retriever"] = Value::String("other".into());
    write_rows(&f, &bad);
    let e = load(f.to_str().unwrap(), &[]).unwrap_err().to_string();
    assert!(e.contains("row 8") && e.contains("\"other\""), "{e}");

    // dataset_kind sets Dataset::kind (adapted data stays marked as such).
    let mut kinded = good.clone();
    for r in &mut kinded {
        r["dataset_kind"] = Value::String("psoups".into());
    }
    write_rows(&f, &kinded);
    assert_eq!(load(f.to_str().unwrap(), &[]).unwrap().kind, "psoups");
}
