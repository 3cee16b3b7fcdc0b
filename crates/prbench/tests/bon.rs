//! `prbench bon` and `prbench correlate` with the real binary: sampling with the default
//! SmolLM2 GGUF on the bundled sample, the rubric judge, a baseline as the reward model, the
//! best-of-k table checked against a brute force over all k-subsets, and correlate on CSVs.

mod common;

use common::*;
use std::collections::HashMap;
use std::path::Path;

fn model_present() -> bool {
    let p = prbench_models::gguf::default_model_path();
    if !p.is_file() {
        eprintln!("skipped: {} is missing (run scripts/fetch-models.sh)", p.display());
        return false;
    }
    true
}

fn jsonl(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn ok(out: &std::process::Output) {
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
}

/// The expected best-of-k by brute force: every k-subset, the top RM score's samples averaged.
fn brute_force(rm: &[f64], judge: &[f64], k: usize) -> f64 {
    let n = rm.len();
    let (mut total, mut count) = (0.0, 0usize);
    for mask in 0u32..(1 << n) {
        if mask.count_ones() as usize != k {
            continue;
        }
        let idx: Vec<usize> = (0..n).filter(|i| mask & (1 << i) != 0).collect();
        let top = idx.iter().map(|&i| rm[i]).fold(f64::NEG_INFINITY, f64::max);
        let tied: Vec<f64> = idx.iter().filter(|&&i| rm[i] == top).map(|&i| judge[i]).collect();
        total += tied.iter().sum::<f64>() / tied.len() as f64;
        count += 1;
    }
    total / count as f64
}

#[test]
fn sample_judge_score_report_on_the_sample() {
    if !model_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let common = ["--data", &sample(), "--n", "3", "--limit", "1", "--max-new-tokens", "24", "--quiet"];
    let mut a: Vec<&str> = vec!["bon", "sample", "--out", "b1", "--no-cache", "--batch-size", "1"];
    a.extend(common);
    ok(&prbench(&a, tmp.path()));
    // Another batch size and the cache: the same samples (seeded per example and index).
    let mut b: Vec<&str> = vec!["bon", "sample", "--out", "b2", "--cache", "c.sqlite", "--batch-size", "4"];
    b.extend(common);
    ok(&prbench(&b, tmp.path()));
    let s1 = jsonl(&tmp.path().join("b1/samples.jsonl"));
    let s2 = jsonl(&tmp.path().join("b2/samples.jsonl"));
    assert_eq!(s1.len(), 9, "3 subsets × 1 example × 3 samples");
    assert_eq!(s1, s2);
    let seeds: std::collections::HashSet<u64> = s1.iter().map(|s| s["seed"].as_u64().unwrap()).collect();
    assert_eq!(seeds.len(), 9);
    // A second run into a new folder answers from the cache.
    let mut c: Vec<&str> = vec!["bon", "sample", "--out", "b3", "--cache", "c.sqlite"];
    c.extend(common);
    let out = prbench(&c, tmp.path());
    ok(&out);
    assert!(text(&out.stderr).contains("9 hits, 0 calls"), "{}", text(&out.stderr));
    // An existing folder is refused.
    let again = prbench(&a, tmp.path());
    assert!(!again.status.success() && text(&again.stderr).contains("already holds samples"));

    ok(&prbench(&["bon", "judge", "--samples", "b1", "--name", "smol", "--quiet", "--no-cache"], tmp.path()));
    let judgements = jsonl(&tmp.path().join("b1/judgements/smol.jsonl"));
    assert_eq!(judgements.len(), 9);
    for j in &judgements {
        let scores = j["scores"].as_array().expect("logprob judgements always have scores");
        let probs = j["probabilities"].as_array().unwrap();
        assert_eq!(scores.len(), probs.len());
        for (score, p) in scores.iter().zip(probs) {
            let p: Vec<f64> = p.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
            assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9);
            // The score is the most probable of 0, 1, 2 (greedy decoding restricted to them).
            let best = (0..3).fold(0, |b, i| if p[i] > p[b] { i } else { b });
            assert_eq!(score.as_u64().unwrap() as usize, best, "{j}");
        }
    }

    let out = prbench(&["bon", "score", "--samples", "b1", "--model", "baseline:longer", "--quiet", "--no-cache"], tmp.path());
    ok(&out);
    let scores = jsonl(&tmp.path().join("b1/scores/baseline-longer.jsonl"));
    for (s, sc) in s1.iter().zip(&scores) {
        // The longer baseline scores the answer's length in characters.
        assert_eq!(sc["score"].as_f64().unwrap(), s["text"].as_str().unwrap().chars().count() as f64, "{sc}");
    }
    // The table printed after scoring, checked against a brute force from the files.
    let table: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(tmp.path().join("b1/bon-smol.json")).unwrap()).unwrap();
    let mut rm: HashMap<String, Vec<f64>> = HashMap::new();
    let mut judge: HashMap<String, Vec<f64>> = HashMap::new();
    for (sc, j) in scores.iter().zip(&judgements) {
        let id = sc["example_id"].as_str().unwrap().to_string();
        rm.entry(id.clone()).or_default().push(sc["score"].as_f64().unwrap());
        let js: Vec<f64> = j["scores"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        judge.entry(id).or_default().push(js.iter().sum::<f64>() / js.len() as f64);
    }
    let row = table["rows"].as_array().unwrap().iter().find(|r| r["name"] == "baseline-longer").unwrap();
    assert_eq!(row["spec"], "baseline:longer");
    for point in row["curve"].as_array().unwrap() {
        let k = point["k"].as_u64().unwrap() as usize;
        let expected: f64 = rm.keys().map(|id| brute_force(&rm[id], &judge[id], k)).sum::<f64>() / rm.len() as f64;
        assert!((point["overall"].as_f64().unwrap() - expected).abs() < 1e-9, "k={k}: {point} vs {expected}");
    }
    assert_eq!(table["ks"], serde_json::json!([1, 2, 3]));
    let md = std::fs::read_to_string(tmp.path().join("b1/bon-smol.md")).unwrap();
    assert!(md.contains("| `baseline-longer` | 3 |"), "{md}");
}

#[test]
fn correlate_on_csvs_by_hand_and_refuses_unmatched_models() {
    let tmp = tempfile::tempdir().unwrap();
    // Ranks: benchmark 1 2 3 4, downstream 1 3 2 4. rho = 1 − 6·2/(4·15) = 0.8; tau-b: 5
    // concordant, 1 discordant pair → 4/6 = 0.6667.
    std::fs::write(tmp.path().join("bench.csv"), "model,score\na,0.5\nb,0.6\nc,0.7\nd,0.8\n").unwrap();
    std::fs::write(tmp.path().join("down.csv"), "model,score\nd,1.5\nc,1.1\nb,1.2\na,1.0\n").unwrap();
    let out = prbench(&["correlate", "--benchmark", "bench.csv", "--downstream", "down.csv", "--bootstrap", "1000", "--out", "corr.md"], tmp.path());
    ok(&out);
    let md = text(&out.stdout);
    assert!(md.contains("| Spearman rho | 0.8000 |"), "{md}");
    assert!(md.contains("| Kendall tau-b | 0.6667 |"), "{md}");
    assert!(md.contains("exact over all 24 pairings"), "{md}");
    assert!(tmp.path().join("corr.json").is_file());
    // A report is never overwritten.
    let again = prbench(&["correlate", "--benchmark", "bench.csv", "--downstream", "down.csv", "--out", "corr.md"], tmp.path());
    assert!(!again.status.success() && text(&again.stderr).contains("exists"), "{}", text(&again.stderr));
    std::fs::write(tmp.path().join("down2.csv"), "model,score\nd,1.5\nc,1.1\nb,1.2\ne,1.0\n").unwrap();
    let out = prbench(&["correlate", "--benchmark", "bench.csv", "--downstream", "down2.csv"], tmp.path());
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("Only benchmark: a") && err.contains("Only downstream: e"), "{err}");
    // Flags that only apply to run summaries or BoN tables are refused on CSVs, not ignored.
    for (flag, value, says) in [("--k", Some("2"), "--k picks a column"), ("--metric", Some("debiased"), "--metric picks"), ("--with-baselines", None, "--with-baselines reads")] {
        let mut cmd = vec!["correlate", "--benchmark", "bench.csv", "--downstream", "down.csv", flag];
        cmd.extend(value);
        let out = prbench(&cmd, tmp.path());
        assert!(!out.status.success() && text(&out.stderr).contains(says), "{flag}: {}", text(&out.stderr));
    }
}
